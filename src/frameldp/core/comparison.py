"""Differences between two debiased tables: "did this change between January and February?".

Two tables estimated from *different rows* (two groups of one table, two nights, two files)
have independent noise (frameldp never shares noise between rows), so given the true values
the two estimates are independent and, bucket by bucket::

    d̂_j = ĉ_j / n - ĉ'_j / n'        Var d̂_j = Var ĉ_j / n^2 + Var ĉ'_j / n'^2

for shares (``on="frequency"``, the sizes ``n``, ``n'`` are public), or ``ĉ_j - ĉ'_j`` with
``Var ĉ_j + Var ĉ'_j`` for counts. ``d̂_j`` is unbiased for the difference of the true shares
of the two sets of rows; the test of "no difference" is the two-sided normal (Wald) test
``z = d̂_j / σ_j``, with Holm's step-down adjustment across buckets for the family-wise error
rate when every bucket is tested at once [1]_.

The two tables may come from the same people (two nights of one panel): the difference is
still unbiased and its variance still the sum, because the noise of different reports is
independent whatever the true values are; the privacy cost of both releases is their
composition.

References
----------
.. [1] S. Holm, "A Simple Sequentially Rejective Multiple Test Procedure", Scandinavian
   Journal of Statistics 6(2), 1979.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from frameldp._scipy import special
from frameldp.core.estimation import FloatArray, FrequencyEstimate, normal_quantile
from frameldp.errors import ParameterError, shown

__all__ = ["Difference", "Scale", "difference_of", "holm_adjusted"]

Scale = Literal["frequency", "count"]


@dataclass(frozen=True)
class Difference:
    """Bucket-by-bucket differences ``first - second`` with standard errors and tests."""

    first: FloatArray
    second: FloatArray
    difference: FloatArray
    std_error: FloatArray
    scale: Scale

    @property
    def z(self) -> FloatArray:
        """The Wald statistic ``difference / std_error`` (NaN where the error is not finite
        or zero)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            z = self.difference / self.std_error
        return np.where(np.isfinite(self.std_error) & (self.std_error > 0), z, np.nan)

    @property
    def p_value(self) -> FloatArray:
        """Two-sided p-value of "no difference" in each bucket: ``erfc(|z| / sqrt 2)``."""
        return np.asarray(special.erfc(np.abs(self.z) / np.sqrt(2.0)), dtype=np.float64)

    @property
    def p_holm(self) -> FloatArray:
        """The p-values adjusted by Holm's step-down method (family-wise over the buckets)."""
        return holm_adjusted(self.p_value)

    def interval(self, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
        """Normal confidence interval ``(low, high)`` of each difference at ``level``."""
        half = normal_quantile(level) * self.std_error
        return self.difference - half, self.difference + half


def difference_of(
    first: FrequencyEstimate, second: FrequencyEstimate, *, scale: Scale = "frequency"
) -> Difference:
    """The differences of two estimates over the same buckets from different reports (module
    docstring)."""
    if scale not in ("frequency", "count"):
        raise ParameterError(f"on must be 'frequency' or 'count', got {shown(scale)}")
    if first.counts.shape != second.counts.shape:
        raise ParameterError(
            f"cannot compare tables of {first.counts.size} and {second.counts.size} buckets"
        )
    if scale == "frequency":
        a, b = first.frequencies, second.frequencies
        variance = first.variances / max(first.n, 1) ** 2 + second.variances / max(second.n, 1) ** 2
    else:
        a, b = first.counts, second.counts
        variance = first.variances + second.variances
    return Difference(
        np.asarray(a, dtype=np.float64),
        np.asarray(b, dtype=np.float64),
        np.asarray(a - b, dtype=np.float64),
        np.sqrt(np.asarray(variance, dtype=np.float64)),
        scale,
    )


def holm_adjusted(p_values: FloatArray) -> FloatArray:
    """Holm's step-down adjusted p-values (NaN stays NaN and is not counted)."""
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = tested.size
    if m == 0:
        return adjusted
    order = tested[np.argsort(p[tested], kind="stable")]
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(steps)
    return adjusted
