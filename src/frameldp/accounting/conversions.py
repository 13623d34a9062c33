"""Conversions from Rényi DP and zCDP to (epsilon, delta)-DP.

Improved RDP conversion (Canonne–Kamath–Steinke 2020, Prop. 12; Balle et al. 2020, Thm. 21):
a mechanism that is ``(a, r)``-RDP is ``(epsilon, delta)``-DP for

    delta = exp((a - 1)(r - epsilon)) / a * (1 - 1/a)^(a - 1),   equivalently
    epsilon = r + ln(1 - 1/a) - (ln delta + ln a) / (a - 1).

Every order ``a > 1`` gives a valid statement; the order is optimized continuously (a log grid
over ``a - 1``, extended while the optimum lies beyond it, then Brent's method on the best
bracket), so the result is valid whatever the optimizer finds and as tight as the curve allows.

A rho-zCDP mechanism is ``(a, a rho)``-RDP for every ``a`` (Bun–Steinke 2016, Def. 1.1), so the
same conversion applied to the line ``a rho`` is the Canonne–Kamath–Steinke zCDP conversion
(Cor. 13), tighter than Bun–Steinke Prop. 1.3, ``epsilon = rho + 2 sqrt(rho ln(1/delta))``,
which is kept for comparison.

References
----------
.. [1] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
   NeurIPS 2020 (Prop. 12, Cor. 13).
.. [2] B. Balle, G. Barthe, M. Gaboardi, J. Hsu, T. Sato, "Hypothesis Testing Interpretations and
   Rényi Differential Privacy", AISTATS 2020 (Thm. 21).
.. [3] M. Bun, T. Steinke, "Concentrated Differential Privacy", TCC 2016 (Prop. 1.3).
.. [4] I. Mironov, "Rényi Differential Privacy", CSF 2017 (Prop. 3).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from frameldp.accounting._orders import minimize_over_orders
from frameldp.accounting.rounding import pad_up

__all__ = [
    "rdp_to_delta",
    "rdp_to_epsilon",
    "zcdp_to_epsilon_bun_steinke",
]

Curve = Callable[[float], float]


def rdp_to_epsilon(curve: Curve, delta: float) -> tuple[float, float]:
    """Smallest epsilon at ``delta`` over all orders; returns (epsilon, optimal order).

    ``curve(a)`` must be a valid Rényi bound at every order ``a > 1`` (``inf`` where none).
    """
    log_delta = math.log(delta)

    def epsilon_at(order: float) -> float:
        return (
            curve(order) + math.log1p(-1.0 / order) - (log_delta + math.log(order)) / (order - 1.0)
        )

    value, order = minimize_over_orders(epsilon_at)
    return pad_up(max(value, 0.0)), order


def rdp_to_delta(curve: Curve, epsilon: float) -> tuple[float, float]:
    """Smallest delta at ``epsilon`` over all orders; returns (delta, optimal order)."""

    def log_delta_at(order: float) -> float:
        t = order - 1.0
        return t * (curve(order) - epsilon) - math.log(order) + t * math.log1p(-1.0 / order)

    value, order = minimize_over_orders(log_delta_at)
    if value == -math.inf:
        return 0.0, order
    # A positive delta below the smallest float is still positive: never report pure DP.
    return min(1.0, max(pad_up(math.exp(value)), 5e-324)), order


def zcdp_to_epsilon_bun_steinke(rho: float, delta: float) -> float:
    """Bun–Steinke Prop. 1.3: ``rho + 2 sqrt(rho ln(1/delta))`` (looser; for comparison)."""
    return pad_up(rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)))
