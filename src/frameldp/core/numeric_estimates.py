"""Estimates of numeric columns: a mean with its standard error.

A mean mechanism's report ``y`` of a value ``x`` (both in the mechanism's normalized units) is
unbiased after an affine map: ``E[(y - shift) / scale] = x`` (``shift = 0``, ``scale = 1`` for
the mechanisms whose reports are themselves unbiased). The additive statistic of ``n`` reports
is ``(sum y, sum y^2)``. The mean of the debiased reports is unbiased for the mean of the
values, and its standard error is estimated from their sample variance, which estimates the
average conditional variance plus the spread of the values about their mean: the interval is
that of the population mean of the people reported (a conservative one for the mean of these
``n`` values). The sample variance of few or skewed reports can be far below the truth (30
reports of a value at a bound may all be equal), so the standard error is never below the
mechanism's exact standard deviation at the estimated mean (clamped into the interval) over
``sqrt(n)``: a floor that holds exactly for a column of equal values, and is conservative for
the mechanisms whose variance is convex in the value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frameldp.core.estimation import normal_quantile
from frameldp.core.mechanisms.protocol import Statistic
from frameldp.errors import ParameterError

__all__ = ["Mean", "mean_of"]


@dataclass(frozen=True)
class Mean:
    """An unbiased mean of ``n`` reports of a column on ``[lo, hi]``, in the column's units.

    ``std_error`` is estimated from the reports (``n >= 2``); ``worst_std_error`` is the
    mechanism's largest standard deviation over the interval divided by ``sqrt(n)``, a bound
    that holds whatever the values.
    """

    mean: float
    std_error: float
    worst_std_error: float
    n: int
    lo: float
    hi: float

    @property
    def sum(self) -> float:
        """The estimated sum: ``n`` times the mean."""
        return self.mean * self.n

    @property
    def sum_std_error(self) -> float:
        """The standard error of :attr:`sum`."""
        return self.std_error * self.n

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The normal-approximation interval of the mean at ``level``, cut to ``[lo, hi]``
        (where the mean lies whatever the values); an estimate outside the bounds is first
        moved to the nearer bound, so the interval is never empty."""
        half = normal_quantile(level) * self.std_error
        centre = min(self.hi, max(self.lo, self.mean))
        return max(self.lo, centre - half), min(self.hi, centre + half)


def mean_of(
    statistic: Statistic,
    *,
    shift: float,
    scale: float,
    worst_variance: float,
    lo: float,
    hi: float,
    variance: Callable[[float], float] | None = None,
) -> Mean:
    """The mean of ``statistic`` (normalized ``(sum y, sum y^2)`` of reports on ``[-1, 1]``
    units of ``[lo, hi]``), debiased by ``(y - shift) / scale``; ``worst_variance`` is one
    debiased report's largest variance in normalized units, ``variance(t)`` its exact variance
    at input ``t`` (the floor of the standard error, see the module docstring)."""
    (sums,) = statistic.parts
    n = statistic.rows
    if n == 0:
        raise ParameterError("no reports to estimate a mean from")
    total, squares = float(sums[0]), float(sums[1])
    mean_y = total / n
    half = (hi - lo) / 2
    centre = (hi + lo) / 2
    worst = half * math.sqrt(worst_variance / n)
    estimate = (mean_y - shift) / scale
    floor = worst
    if variance is not None:
        floor = half * math.sqrt(max(0.0, variance(min(1.0, max(-1.0, estimate)))) / n)
    if n >= 2:
        spread = max(0.0, (squares - n * mean_y * mean_y) / (n - 1))
        std_error = max(floor, half * math.sqrt(spread / n) / abs(scale))
    else:
        std_error = worst
    mean = centre + half * estimate
    return Mean(float(mean), float(std_error), float(worst), n, lo, hi)


def normalized_sums(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """``[sum y, sum y^2]`` of normalized reports, as float64."""
    y = np.asarray(values, dtype=np.float64)
    return np.array([y.sum(), np.dot(y, y)], dtype=np.float64)
