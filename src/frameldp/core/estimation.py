"""Debiased frequency estimates, their variances and confidence intervals.

Randomized reports are biased toward uniform; because every randomizer here is a fixed linear
(affine) map in expectation, the aggregate histogram of reports is debiased by inverting that map,
bucket by bucket [2]_ [3]_.

Unary encoding (RAPPOR, every bit flipped with probability ``q = f/2``)
    ``E[Y_j] = (1 - 2q) c_j + n q``, so ``ĉ_j = (Y_j - n q) / (1 - 2q)`` with
    ``Var ĉ_j = n q (1 - q) / (1 - 2q)^2`` exactly: it does not depend on the true counts
    because the flip is symmetric [1]_ (Thm. 3.4: ``n (f/2)(1 - f/2) / (1 - f)^2``).

Direct encoding (k-ary randomized response, report bucket ``j`` with probability ``p`` if the
value is ``j`` and ``q`` otherwise)
    ``E[Y_j] = (p - q) c_j + n q``, so ``ĉ_j = (Y_j - n q) / (p - q)`` with
    ``Var ĉ_j = (c_j p (1 - p) + (n - c_j) q (1 - q)) / (p - q)^2``. It depends on the unknown
    count; the reported standard error plugs in ``ĉ_j`` clipped to ``[0, n]``.

Intervals are normal approximations, ``ĉ ± z σ``; estimates are not clipped (clipping biases
them), so a count may be negative when the true count is small.

References
----------
.. [1] A. Gentle, "Proof of make_randomized_response_bitvec", OpenDP, 2024.
.. [2] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response", CCS 2014.
.. [3] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
   Frequency Estimation", USENIX Security 2017, Sec. 4.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from frameldp.errors import ParameterError

__all__ = [
    "FrequencyEstimate",
    "debias_direct_counts",
    "debias_unary_counts",
    "direct_variance",
    "normal_quantile",
    "unary_variance",
]

FloatArray = NDArray[np.float64]


def normal_quantile(level: float) -> float:
    """The two-sided standard normal quantile ``z`` with ``P(|Z| <= z) = level``."""
    if not (isinstance(level, float | int) and 0 < level < 1):
        raise ParameterError(f"level must be in (0, 1), got {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2)


@dataclass(frozen=True)
class FrequencyEstimate:
    """Debiased counts of ``n`` reports, with variances, per bucket.

    Attributes
    ----------
    counts
        Unbiased estimates of the true count of every bucket.
    variances
        Variance of each estimate (exact, or plug-in where it depends on the truth).
    n
        Number of reports.
    """

    counts: FloatArray
    variances: FloatArray
    n: int

    @property
    def std_errors(self) -> FloatArray:
        """Standard error of each count."""
        return np.sqrt(self.variances)

    @property
    def frequencies(self) -> FloatArray:
        """Estimated share of each bucket (counts / n)."""
        return self.counts / max(self.n, 1)

    @property
    def frequency_std_errors(self) -> FloatArray:
        """Standard error of each frequency."""
        return self.std_errors / max(self.n, 1)

    def interval(self, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
        """Normal confidence interval ``(low, high)`` of each count at ``level``."""
        z = normal_quantile(level)
        half = z * self.std_errors
        return self.counts - half, self.counts + half


def _check_n(n: int) -> None:
    if n < 1:
        raise ParameterError(f"cannot estimate from n={n} reports; need at least one")


def unary_variance(n: int, flip_probability: float) -> float:
    """Exact variance ``n q (1 - q) / (1 - 2q)^2`` of a debiased RAPPOR bucket count."""
    q = flip_probability
    return n * q * (1 - q) / (1 - 2 * q) ** 2


def debias_unary_counts(
    bit_sums: NDArray[np.int64], n: int, flip_probability: float
) -> FrequencyEstimate:
    """Debias the per-bit sums of ``n`` unary-encoded reports whose bits flip with ``q``."""
    _check_n(n)
    q = flip_probability
    if not 0 <= q < 0.5:
        raise ParameterError(
            f"flip probability must be in [0, 0.5) to debias, got {q} "
            "(at 0.5 the reports carry no information)"
        )
    counts = (np.asarray(bit_sums, dtype=np.float64) - n * q) / (1 - 2 * q)
    variances = np.full(counts.shape, unary_variance(n, q))
    return FrequencyEstimate(counts, variances, n)


def direct_variance(
    true_counts: NDArray[np.float64], n: int, keep: float, other: float
) -> FloatArray:
    """Exact variance of a debiased k-RR count, given the true counts."""
    c = np.asarray(true_counts, dtype=np.float64)
    spread = keep - other
    return (c * keep * (1 - keep) + (n - c) * other * (1 - other)) / spread**2


def debias_direct_counts(
    report_counts: NDArray[np.int64], n: int, keep: float, other: float
) -> FrequencyEstimate:
    """Debias the histogram of ``n`` k-RR reports (``keep`` = P[report j | j], ``other`` else)."""
    _check_n(n)
    if not keep > other:
        raise ParameterError(
            f"keep probability ({keep}) must exceed the other-bucket probability ({other}) "
            "to debias; the reports carry no information"
        )
    counts = (np.asarray(report_counts, dtype=np.float64) - n * other) / (keep - other)
    plug_in = np.clip(counts, 0.0, float(n))
    return FrequencyEstimate(counts, direct_variance(plug_in, n, keep, other), n)
