"""Closed-form curves shared by several events: k-ary randomized response's Rényi curve and
cumulant [1]_, and pure epsilon's tight zCDP rho [2]_ (references in the package docstring).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from frameldp.accounting._orders import minimize_over_orders
from frameldp.accounting.rounding import pad_up

__all__ = ["kary_rho", "pure_rho", "rr_cumulant", "rr_rdp", "sup_over_orders"]


def rr_cumulant(t: float, epsilon: float, k: float) -> float:
    """``ln E_P[e^{t L}]`` of k-ary RR, without cancellation for any ``t > 0``.

    ``k`` may be any real ``>= 2``: the three-atom losses (``+eps``, ``-eps``, 0 in proportions
    ``e^eps : 1 : k - 2``) of optimized unary encoding, subset selection and Hadamard response
    have the same cumulant with a non-integer ``k`` (:mod:`.ternary`).

    ``E_P[e^{tL}] - 1 = (e^eps expm1(t eps) + expm1(-t eps)) / (e^eps + k - 1)``
    ``= expm1(t eps) e^{-t eps} expm1(eps + t eps) / (e^eps + k - 1)``: a product of positive
    factors, evaluated in log space.
    """
    if epsilon == 0.0:
        return 0.0
    d = t * epsilon
    log_x = (
        _log_one_minus_exp_neg(d, t, epsilon)
        + (epsilon + d)
        + _log_one_minus_exp_neg(epsilon + d, t + 1.0, epsilon)
        - (epsilon + math.log1p((k - 1) * math.exp(-epsilon)))
    )
    return float(np.logaddexp(0.0, log_x))


def _log_one_minus_exp_neg(d: float, t: float, epsilon: float) -> float:
    """``ln(1 - e^-d)`` for ``d = t * epsilon > 0``. Where the product is below the smallest
    normal float (subnormal or 0: epsilon = 1e-320), ``ln d = ln t + ln epsilon`` in its
    place: ``1 - e^-d <= d``, so the cumulant is bounded from above, on the safe side."""
    if d >= sys.float_info.min:
        return math.log(-math.expm1(-d))
    return math.log(t) + math.log(epsilon)


def rr_rdp(order: float, epsilon: float, k: float) -> float:
    if math.isinf(order):
        return epsilon
    return rr_cumulant(order - 1.0, epsilon, k) / (order - 1.0)


def sup_over_orders(curve: Callable[[float], float], limit_at_one: float) -> float:
    """``sup_{a > 1} curve(a) / a``, never below its limit at ``a -> 1``.

    Padded up by a relative 1e-9, which covers the distance between the located maximum and the
    true supremum of these smooth unimodal ratios.
    """
    value, _ = minimize_over_orders(lambda a: -curve(a) / a)
    return pad_up(max(-value, limit_at_one), 1e-9)


def pure_rho(epsilon: float) -> float:
    """Steinke's tight conversion: pure epsilon-DP implies ``eps tanh(eps / 2)``-zCDP."""
    return pad_up(epsilon * math.tanh(epsilon / 2.0))


@lru_cache(maxsize=1024)
def kary_rho(epsilon: float, k: float) -> float:
    kl = epsilon * math.expm1(epsilon) / (math.exp(epsilon) + k - 1)
    value = sup_over_orders(lambda a: rr_rdp(a, epsilon, k), kl)
    return min(value, pure_rho(epsilon))
