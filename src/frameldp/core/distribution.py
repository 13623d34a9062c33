"""Distributions of numeric columns: expectation-maximization with smoothing (EMS), and what a
distribution answers (histogram, CDF, quantiles, mean, range counts).

A Square Wave report's law is a known mixture over the input buckets: ``P[output bucket j |
input in bucket i] = K[j, i]`` (:func:`square_wave_kernel`). Given the counts ``c_j`` of the
reports per output bucket, EMS [1]_ alternates the EM step of the maximum-likelihood estimate
of the input distribution ``x`` (``x_i <- x_i sum_j c_j K[j, i] / sum_k K[j, k] x_k``) with a
smoothing step (``x <- S x``, the binomial kernel ``(1, 2, 1) / 4``, renormalized at the ends),
and stops when the log-likelihood improves by less than ``1e-3`` (Li et al.'s ``1e-3 e^epsilon``
stops too early at large epsilon) or after ``MAX_ITERATIONS``. Smoothing trades a small bias for
far less variance than plain EM; the estimate is a post-processing of the reports, so it costs
no privacy.

References
----------
.. [1] Z. Li, T. Wang, M. Lopuhaä-Zwakenberg, N. Li, B. Škoric, "Estimating Numerical
   Distributions under Local Differential Privacy", SIGMOD 2020, Sec. 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from frameldp.arguments import check_number
from frameldp.errors import ParameterError, shown

__all__ = ["Distribution", "check_share", "ems", "square_wave_kernel"]

MAX_ITERATIONS: Final = 10_000
_TOLERANCE: Final = 1e-3
"""EMS stops when the log-likelihood improves by less than this. Li et al. scale it by
``e^epsilon``, which at epsilon 8 stops after a few iterations, far from converged."""


@dataclass(frozen=True)
class Distribution:
    """The estimated distribution of ``n`` values on ``[lo, hi]``, over equal buckets.

    ``frequencies[i]`` is the share of values in bucket ``i`` (``edges[i]`` to
    ``edges[i + 1]``), summing to 1; values are taken as uniform within a bucket for the CDF,
    quantiles, the mean and range counts. ``replicates`` (rows of frequencies) are
    parametric-bootstrap re-estimates: EMS run again on reports drawn from the law the estimate
    implies. A standard error is the root mean square of the replicates' answers about the
    estimate's own: it counts the noise of the reports and the bias EMS's smoothing adds to a
    distribution like the estimate (Efron and Tibshirani's bootstrap estimate of mean squared
    error), not the part of the bias that the smoothing has already erased from the estimate.
    """

    edges: NDArray[np.float64]
    frequencies: NDArray[np.float64]
    n: int
    replicates: NDArray[np.float64]

    @property
    def lo(self) -> float:
        """The interval's lower end."""
        return float(self.edges[0])

    @property
    def hi(self) -> float:
        """The interval's upper end."""
        return float(self.edges[-1])

    @property
    def counts(self) -> NDArray[np.float64]:
        """Estimated values per bucket: ``n`` times the frequencies."""
        return self.frequencies * self.n

    def cdf(self, value: float | None = None) -> NDArray[np.float64] | float:
        """The share of values at most ``value`` (all bucket ends when None)."""
        return _cdf(self.edges, self.frequencies, value)

    def quantile(self, q: float) -> float:
        """The value below which a share ``q`` of the values lies (linear within a bucket)."""
        return _quantile(self.edges, self.frequencies, check_share("quantile", q))

    def mean(self) -> float:
        """The mean of the distribution (bucket centres weighted by frequency)."""
        centres = (self.edges[1:] + self.edges[:-1]) / 2
        return float(np.dot(centres, self.frequencies))

    def range_share(self, low: float, high: float) -> float:
        """The share of values in ``[low, high]`` (linear within a bucket)."""
        return _range_share(self.edges, self.frequencies, low, high)

    # -- standard errors from the bootstrap replicates -------------------------------------

    def _spread(self, values: NDArray[np.float64], point: Any) -> Any:
        """The root mean square of the replicates' ``values`` about ``point`` (per column)."""
        if self.replicates.shape[0] < 2:
            return np.full(np.shape(point), np.nan) if np.ndim(point) else math.nan
        spread = np.sqrt(np.mean(np.square(values - point), axis=0))
        return spread if np.ndim(point) else float(spread)

    @property
    def frequency_std_errors(self) -> NDArray[np.float64]:
        """Per-bucket standard errors of the frequencies."""
        return np.asarray(self._spread(self.replicates, self.frequencies), dtype=np.float64)

    @property
    def cdf_std_errors(self) -> NDArray[np.float64]:
        """Standard errors of the CDF at the bucket ends."""
        zeros = np.zeros((self.replicates.shape[0], 1))
        curves = np.concatenate([zeros, np.cumsum(self.replicates, axis=1)], axis=1)
        point = np.concatenate([[0.0], np.cumsum(self.frequencies)])
        return np.asarray(self._spread(curves, point), dtype=np.float64)

    def quantile_std_error(self, q: float) -> float:
        """The standard error of :meth:`quantile`."""
        share = check_share("quantile", q)
        values = np.array([_quantile(self.edges, row, share) for row in self.replicates])
        return float(self._spread(values, self.quantile(share)))

    def mean_std_error(self) -> float:
        """The standard error of :meth:`mean`."""
        centres = (self.edges[1:] + self.edges[:-1]) / 2
        return float(self._spread(self.replicates @ centres, self.mean()))

    def range_share_std_error(self, low: float, high: float) -> float:
        """The standard error of :meth:`range_share`."""
        values = np.array([_range_share(self.edges, row, low, high) for row in self.replicates])
        return float(self._spread(values, self.range_share(low, high)))


def check_share(name: str, q: object) -> float:
    """A share ``q`` in ``[0, 1]`` (a Python or numpy number)."""
    if isinstance(q, bool | np.bool_) or not isinstance(q, int | float | np.number):
        raise ParameterError(f"{name}: q must be a number in [0, 1], got {shown(q)}")
    value = float(q)  # type: ignore[arg-type,unused-ignore]
    if not 0.0 <= value <= 1.0:
        raise ParameterError(f"{name}: q must be a number in [0, 1], got {shown(q)}")
    return value


def _cdf(
    edges: NDArray[np.float64], frequencies: NDArray[np.float64], value: float | None
) -> NDArray[np.float64] | float:
    curve = np.concatenate([[0.0], np.cumsum(frequencies)])
    if value is None:
        return curve
    return float(np.interp(value, edges, curve))


def _quantile(edges: NDArray[np.float64], frequencies: NDArray[np.float64], q: float) -> float:
    curve = np.concatenate([[0.0], np.cumsum(frequencies)])
    curve /= curve[-1]
    # the inverse of a non-decreasing piecewise-linear CDF: the first point reaching q
    index = int(np.searchsorted(curve, q, side="left"))
    if index == 0:
        return float(edges[0])
    if index >= curve.size:
        return float(edges[-1])
    below, above = curve[index - 1], curve[index]
    share = 0.0 if above == below else (q - below) / (above - below)
    return float(edges[index - 1] + share * (edges[index] - edges[index - 1]))


def _range_share(
    edges: NDArray[np.float64], frequencies: NDArray[np.float64], low: float, high: float
) -> float:
    low = check_number("range_count", "low", low)
    high = check_number("range_count", "high", high)
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ParameterError(
            f"range_count: need finite low <= high, got {shown((low, high))}", parameter="low"
        )
    curve = np.concatenate([[0.0], np.cumsum(frequencies)])
    return float(np.interp(high, edges, curve) - np.interp(low, edges, curve))


def _box_integral(z: NDArray[np.float64], half: float) -> NDArray[np.float64]:
    """``G(z) = int_{-inf}^{z} (z - w) 1[|w| <= half] dw``: the double integral of a box."""
    inside = np.clip(z + half, 0.0, 2 * half)
    return np.where(z <= half, inside**2 / 2, 2 * half * z)


def square_wave_kernel(
    buckets: int, outputs: int, half: float, high: float, low: float
) -> NDArray[np.float64]:
    """``K[j, i]``: the probability that a report lands in output bucket ``j`` of ``[-half,
    1 + half]`` (``outputs`` equal buckets) for an input uniform in bucket ``i`` of ``[0, 1]``
    (``buckets`` equal buckets), when the report's density is ``high`` on ``[v - half, v +
    half]`` and ``low`` elsewhere (exact: overlaps of intervals integrated in closed form)."""
    inputs = np.linspace(0.0, 1.0, buckets + 1)
    out = np.linspace(-half, 1.0 + half, outputs + 1)
    x0, x1 = out[:-1, None], out[1:, None]
    c0, c1 = inputs[None, :-1], inputs[None, 1:]
    overlap = (
        _box_integral(x1 - c0, half)
        - _box_integral(x1 - c1, half)
        - _box_integral(x0 - c0, half)
        + _box_integral(x0 - c1, half)
    ) / (c1 - c0)  # the mean overlap of the window with output bucket j
    kernel = low * (x1 - x0) + (high - low) * overlap
    return np.asarray(kernel / kernel.sum(axis=0, keepdims=True), dtype=np.float64)


def _smooth(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The binomial kernel ``(1, 2, 1) / 4`` along the first axis, renormalized at the ends."""
    if x.shape[0] < 3:
        return x
    out = 2 * x
    out[1:] += x[:-1]
    out[:-1] += x[1:]
    weights = np.full(x.shape[0], 4.0)
    weights[0] = weights[-1] = 3.0
    return np.asarray(out / weights.reshape((-1,) + (1,) * (x.ndim - 1)), dtype=np.float64)


def ems(counts: NDArray[Any], kernel: NDArray[np.float64], epsilon: float) -> NDArray[np.float64]:
    """The EMS estimate of the input distribution from output-bucket ``counts`` (see the module
    docstring); a uniform distribution when there are no reports.

    ``counts`` may be a matrix, one row of counts per estimate (a bootstrap's replicates): the
    rows are estimated together, each stopping on its own, with the same result as one by one
    and matrix products instead of one matrix-vector product per row and iteration.
    """
    counts = np.asarray(counts, dtype=np.float64)
    rows = np.atleast_2d(counts).T  # (outputs, estimates)
    buckets = kernel.shape[1]
    x = np.full((buckets, rows.shape[1]), 1.0 / buckets)
    active = np.flatnonzero(rows.sum(axis=0) > 0)  # no reports: the uniform start
    estimate, c = x[:, active], rows[:, active]
    previous = np.full(active.size, -math.inf)
    predicted = np.maximum(kernel @ estimate, 1e-300)
    for _ in range(MAX_ITERATIONS):
        if active.size == 0:
            break
        estimate = estimate * (kernel.T @ (c / predicted))
        estimate = _smooth(estimate / estimate.sum(axis=0))
        estimate /= estimate.sum(axis=0)
        predicted = np.maximum(kernel @ estimate, 1e-300)
        likelihood = (c * np.log(predicted)).sum(axis=0)
        going = likelihood - previous >= _TOLERANCE
        previous = likelihood
        if not going.all():  # these estimates have converged: keep them, go on with the rest
            x[:, active] = estimate
            active, estimate, c = active[going], estimate[:, going], c[:, going]
            predicted, previous = predicted[:, going], previous[going]
    return np.asarray(x.T.reshape((*counts.shape[:-1], buckets)), dtype=np.float64)
