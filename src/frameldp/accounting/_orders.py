"""Optimizing over Rényi orders ``a > 1``: a log grid over ``a - 1``, then Brent's method.

The grid starts at ``a - 1`` in ``[e^-12, e^12]`` and is extended upward while the best point sits
at its upper edge: the optimal order grows like ``1/epsilon`` for a small epsilon, and like
``sqrt(ln(1/delta) / rho)`` in a zCDP conversion, so no fixed range is wide enough.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from frameldp._scipy import optimize

__all__ = ["minimize_over_orders"]

_STEP = 0.125  # grid spacing in ln(a - 1)
_LOW, _HIGH, _LIMIT = -12.0, 12.0, 700.0  # e^700 ~ 1e304: the largest order tried


def minimize_over_orders(objective: Callable[[float], float]) -> tuple[float, float]:
    """``min_a objective(a)`` over ``a > 1``; returns (value, order). ``inf`` values are skipped."""

    def in_x(x: float) -> float:
        value = objective(1.0 + math.exp(x))
        return value if math.isfinite(value) else math.inf

    xs = list(np.arange(_LOW, _HIGH + _STEP / 2, _STEP))
    values = [in_x(float(x)) for x in xs]
    best = int(np.argmin(values))
    while best == len(xs) - 1 and xs[-1] < _LIMIT:
        more = np.arange(xs[-1] + _STEP, min(xs[-1] + 24.0, _LIMIT) + _STEP / 2, _STEP)
        xs.extend(more)
        values.extend(in_x(float(x)) for x in more)
        best = int(np.argmin(values))
    value, x_best = values[best], float(xs[best])
    if math.isfinite(value) and 0 < best < len(xs) - 1:
        found = optimize.minimize_scalar(
            in_x,
            bounds=(float(xs[best - 1]), float(xs[best + 1])),
            method="bounded",
            options={"xatol": 1e-10},
        )
        if float(found.fun) < value:
            value, x_best = float(found.fun), float(found.x)
    return value, 1.0 + math.exp(x_best)
