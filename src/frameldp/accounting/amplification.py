"""Amplification by shuffling: the central (epsilon, delta) of n shuffled eps0-LDP reports.

If each of ``n`` people sends one report of an ``eps0``-LDP randomizer and the reports are
anonymized and uniformly permuted, the multiset the analyst sees is far more private than any
one report. Feldman, McMillan and Talwar [1]_ show that, for every pair of neighbouring inputs,
the shuffled output is a post-processing of one pair of distributions on two counts. With
``p = e^eps0 / (e^eps0 + 1)`` and a *clone probability* ``q``::

    C ~ Bin(n - 1, q),   A ~ Bin(C, 1/2),   Delta ~ Bernoulli(p)
    P0 = (A + Delta, C - A + 1 - Delta),   P1 = (A + 1 - Delta, C - A + Delta)

so the shuffled reports are ``(epsilon, delta)``-DP whenever the hockey-stick divergence
``D_{e^epsilon}(P0 || P1) <= delta`` (the pair is symmetric, so one direction suffices).

* ``q = e^-eps0`` (**clones**) holds for every ``eps0``-LDP randomizer, even chosen adaptively
  [1]_ (Thm. 3.1 and Sec. 4, the numerical method).
* ``q = 2 / (e^eps0 + 1)`` (**stronger clones**) is the improved reduction of [2]_. Its erratum
  restricts it: the proof holds when every report distribution dominates the clone mixture,
  ``R(x)(y) >= (R(x0)(y) + R(x1)(y)) / (e^eps0 + 1)`` for all inputs ``x, x0, x1`` and outputs
  ``y``. k-ary randomized response meets this (an output is the true value with probability
  ``e^eps0 / Z`` and each other value with ``1 / Z``, and the inequality reduces to
  ``1 >= 1``), so frameldp uses stronger clones for k-RR only. RAPPOR's bit vectors do not
  meet it (an output with two wrong ones violates it), and they get clones.

The divergence is computed exactly, without the closed-form bounds (which are 3-5 times larger
at n = 10^4..10^6): conditioned on ``C = c`` (which both outputs reveal), the likelihood ratio
``P0(a) / P1(a)`` is increasing in the first count ``a``, so the optimal set is a tail
``{a >= a*}`` with ``a* = floor((c + 1)(e^{eps + eps0} - 1) / ((e^eps0 - 1)(e^eps + 1))) + 1``,
and ::

    D_c = (p - e^eps (1 - p)) S_c(a* - 1) - (e^eps p - (1 - p)) S_c(a*),

with ``S_c(k) = P[Bin(c, 1/2) >= k]`` (regularized incomplete beta). The weights
``P[C = c]`` are binomial probabilities in log space; the window of ``c`` outside which they are
below ``e^-745`` is dropped and its mass (bounded geometrically: the binomial is log-concave)
is added to delta in full. ``epsilon(delta)`` is the root of the decreasing ``delta(eps)``
(Brent's method on ``log delta``, stepped up until the bound holds).

The privacy unit is one report per person: the guarantee assumes the ``n`` shuffled rows come
from ``n`` different people.

References
----------
.. [1] V. Feldman, A. McMillan, K. Talwar, "Hiding Among the Clones: A Simple and Nearly
   Optimal Analysis of Privacy Amplification by Shuffling", FOCS 2021 (arXiv:2012.12803).
.. [2] V. Feldman, A. McMillan, K. Talwar, "Stronger Privacy Amplification by Shuffling for
   Rényi and Approximate Differential Privacy", SODA 2023 (arXiv:2208.04591, with erratum).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import optimize, special
from frameldp.accounting._binomial import (
    HALF_TAIL_ERROR,
    LOG_TINY,
    binomial_window,
    half_tail,
    log_binomial_pmf,
)
from frameldp.accounting.rounding import round_up
from frameldp.arguments import MAX_EXACT, check_count, check_positive
from frameldp.errors import ParameterError

__all__ = [
    "CLONES",
    "Clones",
    "binary_rr_shuffle_delta",
    "check_local",
    "clone_delta",
    "clone_epsilon",
    "closed_form_epsilon",
]

Clones = Literal["clones", "stronger_clones"]
CLONES: tuple[Clones, ...] = ("clones", "stronger_clones")

# Relative padding of every computed delta: the float error of the sums and weights (the
# incomplete beta values' error is added term by term, see _raw_delta).
_DELTA_PAD = 2.0**-30
# Above this many counts of clones (n beyond about 10^7) the counts are taken in bands of this
# relative width (each at its smallest count: an upper bound): about 2^-15 relative in epsilon.
_MAX_COUNTS = 1 << 14
_COUNT_BAND = 2.0**-14
# Above this local epsilon no amplification is claimed (the float evaluation of the clone pair
# is only verified below it, and the clones are then rarer than e^-15 anyway).
MAX_EPSILON0 = 15.0
# Root finding stops when the bracket is this small relative to eps0.
_BISECTION_TOLERANCE = 1e-12


def check_local(epsilon0: Any, n: Any) -> tuple[float, int]:
    """``eps0`` and ``n`` of an amplification by shuffling, checked."""
    epsilon0 = check_positive("amplification by shuffling", "epsilon0", epsilon0)
    n = check_count("amplification by shuffling", "n", n, 1, MAX_EXACT)
    return epsilon0, n


def clone_probability(epsilon0: float, clones: Clones) -> float:
    """``e^-eps0`` (clones) or ``2 / (e^eps0 + 1)`` (stronger clones)."""
    if clones == "clones":
        return math.exp(-epsilon0)
    if clones == "stronger_clones":
        return 2.0 / (math.exp(epsilon0) + 1.0)
    raise ParameterError(f"clones must be one of {CLONES}, got {clones!r}")


@lru_cache(maxsize=256)
def _clone_weights(
    n: int, q: float, log_cutoff: float = LOG_TINY
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """The values ``c`` of ``C ~ Bin(n - 1, q)`` above probability ``e^log_cutoff``, their
    probabilities, and a bound on the total probability of all other values."""
    if n == 1:
        return np.zeros(1), np.ones(1), 0.0
    c, log_w, lost = binomial_window(n - 1, q, log_cutoff)
    weights = np.exp(log_w)
    if c.size > _MAX_COUNTS:
        # One more clone is a post-processing, so D_c does not increase with c: bands of
        # counts 2^-14 wide (relative) may each use their smallest count.
        starts = [0]
        while starts[-1] < c.size:
            starts.append(starts[-1] + max(1, int(c[starts[-1]] * _COUNT_BAND)))
        index = np.asarray(starts[:-1])
        return c[index], np.add.reduceat(weights, index), lost
    return c, weights, lost


def _tail(k: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
    """``P[Bin(c, 1/2) >= k]`` (1 for ``k <= 0``, 0 for ``k > c``): :func:`half_tail`."""
    return half_tail(k, c)


def clone_delta(epsilon: float, epsilon0: float, n: int, clones: Clones = "clones") -> float:
    """Upper bound on ``D_{e^epsilon}(P0 || P1)`` of the clone pair for ``n`` reports."""
    epsilon0, n = check_local(epsilon0, n)
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise ParameterError(f"epsilon must be a number, got {epsilon!r}")
    if not (epsilon >= 0.0 and math.isfinite(epsilon)):
        raise ParameterError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    if epsilon >= epsilon0:
        return 0.0
    if epsilon0 > MAX_EPSILON0:
        return 1.0
    q = clone_probability(epsilon0, clones)
    c, weights, lost = _clone_weights(n, q)
    return min(1.0, _raw_delta(epsilon, epsilon0, c, weights) * (1.0 + _DELTA_PAD) + lost)


def _raw_delta(
    epsilon: float, epsilon0: float, c: NDArray[np.float64], weights: NDArray[np.float64]
) -> float:
    p = 1.0 / (1.0 + math.exp(-epsilon0))
    e = math.exp(epsilon)
    slope = math.expm1(epsilon + epsilon0) / (math.expm1(epsilon0) * (e + 1.0))
    start = np.floor((c + 1.0) * slope) + 1.0
    # Both coefficients without cancellation: p - e (1 - p) = -expm1(eps - eps0) p and
    # e p - (1 - p) = expm1(eps + eps0) / (1 + e^eps0).
    first = -math.expm1(epsilon - epsilon0) * p
    second = math.expm1(epsilon + epsilon0) / (1.0 + math.exp(epsilon0))
    # D_c is a hockey-stick divergence, >= 0; clip the float noise of the difference. The
    # threshold is a floor of a float: where it sits within ulps of an integer it may be off by
    # one. Every threshold gives the divergence over a tail set, a lower bound of D_c, and the
    # right one gives D_c itself: the largest of the three neighbours is exact.
    # Each tail is good to HALF_TAIL_ERROR relative; the difference is bounded with both
    # terms' errors (it cancels by up to sqrt(c)).
    d = np.maximum.reduce(
        [
            np.maximum(upper - lower, 0.0) + HALF_TAIL_ERROR * (upper + lower)
            for upper, lower in (
                (first * _tail(s - 1.0, c), second * _tail(s, c))
                for s in (start - 1.0, start, start + 1.0)
            )
        ]
    )
    return float(np.dot(weights, d))


def clone_epsilon(delta: float, epsilon0: float, n: int, clones: Clones = "clones") -> float:
    """Smallest epsilon (rounded up) with ``clone_delta(epsilon) <= delta``; at most ``eps0``."""
    epsilon0, n = check_local(epsilon0, n)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < delta < 1.0:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    if epsilon0 > MAX_EPSILON0:
        return epsilon0
    q = clone_probability(epsilon0, clones)
    # Weights far below delta cannot matter: drop those under delta * e^-40 (their mass is
    # still added to delta in full).
    c, weights, lost = _clone_weights(n, q, max(LOG_TINY, math.log(delta) - 40.0))
    target = (delta - lost) / (1.0 + _DELTA_PAD)
    if target <= 0.0:
        return epsilon0

    return smallest_epsilon(
        lambda epsilon: _raw_delta(epsilon, epsilon0, c, weights), target, epsilon0
    )


def smallest_epsilon(delta_of: Callable[[float], float], target: float, epsilon0: float) -> float:
    """Smallest epsilon (rounded up, at most ``eps0``) with ``delta_of(epsilon) <= target``.

    ``delta_of`` decreases and is 0 at ``eps0``: the root in ``(0, eps0)`` is found by Brent's
    method on ``log delta``, then stepped up until the bound provably holds.
    """
    log_target = math.log(target)

    def excess(epsilon: float) -> float:
        value = delta_of(epsilon)
        return (math.log(value) if value > 0.0 else -math.inf) - log_target

    if excess(0.0) <= 0.0:
        return 0.0
    if excess(epsilon0) > 0.0:  # the error terms alone pass a tiny target: eps0 holds
        return epsilon0
    high = optimize.brentq(excess, 0.0, epsilon0, xtol=_BISECTION_TOLERANCE * epsilon0)
    step = _BISECTION_TOLERANCE * epsilon0
    while high < epsilon0 and excess(high) > 0.0:
        high += step
        step *= 2.0
    return min(epsilon0, round_up(high))


def closed_form_epsilon(delta: float, epsilon0: float, n: int) -> float | None:
    """The closed-form bound of [1]_ Thm. 3.1 (for comparison; None outside its conditions).

    ``log(1 + (e^eps0 - 1)/(e^eps0 + 1) (8 sqrt(e^eps0 log(4/delta)) / sqrt(n) + 8 e^eps0 / n))``
    for ``eps0 <= log(n / (16 log(2/delta)))``.
    """
    epsilon0, n = check_local(epsilon0, n)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < delta < 1.0:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    if epsilon0 > math.log(n / (16.0 * math.log(2.0 / delta))):
        return None
    e0 = math.exp(epsilon0)
    inner = 8.0 * math.sqrt(e0 * math.log(4.0 / delta)) / math.sqrt(n) + 8.0 * e0 / n
    return math.log1p(math.tanh(epsilon0 / 2.0) * inner)


def binary_rr_shuffle_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """Exact ``delta(epsilon)`` of shuffled binary randomized response at ``eps0`` for one pair.

    The pair: every other person holds 0, and the one who changes holds 0 or 1; the analyst sees
    the number of ones, ``Bin(n, r)`` against ``Bernoulli(1 - r) + Bin(n - 1, r)`` with
    ``r = 1 / (e^eps0 + 1)``. Any valid bound for all ``eps0``-LDP randomizers is at least this
    (a *lower* bound on what amplification can prove).
    """
    epsilon0, n = check_local(epsilon0, n)
    r = 1.0 / (math.exp(epsilon0) + 1.0)
    k = np.arange(n + 1, dtype=np.float64)
    log_b = np.full(n + 2, -np.inf)  # log P[Bin(n - 1, r) = k - 1] at index k
    log_b[1 : n + 1] = log_binomial_pmf(k[:-1], n - 1, r) if n > 1 else 0.0
    shifted, same = log_b[: n + 1], log_b[1 : n + 2]  # P[B = k - 1], P[B = k]
    log_p0 = np.logaddexp(math.log(r) + shifted, math.log1p(-r) + same)
    log_p1 = np.logaddexp(math.log1p(-r) + shifted, math.log(r) + same)
    worst = 0.0
    for first, second in ((log_p0, log_p1), (log_p1, log_p0)):
        excess = first - (second + epsilon)
        above = excess > 0
        terms = first[above] + np.log(-np.expm1(-excess[above]))
        if terms.size:
            worst = max(worst, float(np.exp(special.logsumexp(terms))))
    return worst
