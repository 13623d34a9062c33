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

Bloom-filter RAPPOR (report bit is 1 with probability ``q*`` where the true Bloom bit is 1 and
``p*`` where it is 0; cohort ``c`` holds ``N_c`` reports)
    ``t̂_cj = (Y_cj - N_c p*) / (q* - p*)`` estimates the number of true bits ``t_cj`` without
    bias, with variance ``(t q*(1 - q*) + (N_c - t) p*(1 - p*)) / (q* - p*)^2`` [2]_. Candidate
    strings are decoded by regression of ``t̂`` on their Bloom signatures (:func:`decode_bloom`).

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

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import sparse, special
from frameldp.core._lasso import nonnegative_lasso
from frameldp.core.encoding import BloomEncoder
from frameldp.core.sorting import sorted_distinct
from frameldp.errors import DomainError, FrameLDPWarning, ParameterError, caller_stacklevel

__all__ = [
    "BloomDecoding",
    "FrequencyEstimate",
    "GroupEstimates",
    "debias_bloom_counts",
    "debias_direct_counts",
    "debias_direct_groups",
    "debias_unary_counts",
    "debias_unary_groups",
    "decode_bloom",
    "direct_variance",
    "mean_direct_variance",
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
    support
        For frequency oracles, ``(P[a report supports bucket j | the value is j],
        P[... | it is another])``: the channel iterative Bayesian update inverts
        (:func:`~frameldp.core.consistency.consistent_counts`); None for other estimates.
    items_per_report
        The most buckets one report's true value may hold (RAPPOR's ``max_weight`` for
        set-valued cells): the counts add up to at most ``items_per_report * n``.
    reporters
        How many of the ``n`` rows reported the column, when not all did (a column of a
        ``collect="sample"`` release, :mod:`frameldp.core.collected`): the counts are scaled
        from theirs to all ``n``. None: every row reported.
    """

    counts: FloatArray
    variances: FloatArray
    n: int
    support: tuple[float, float] | None = None
    items_per_report: int = 1
    reporters: int | None = None

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


@dataclass(frozen=True)
class GroupEstimates(Sequence[FrequencyEstimate]):
    """The :class:`FrequencyEstimate` of each of ``len(n)`` groups, stacked: ``counts[g]``,
    ``variances[g]`` and ``n[g]`` are group ``g``'s; ``support`` and ``items_per_report`` are
    shared (every row reported: a sampled column's groups are estimated one by one). A table
    by 10^5 groups keeps its estimates as these few arrays, and builds a group's estimate when
    it is asked for."""

    counts: FloatArray
    variances: FloatArray
    n: NDArray[np.int64]
    support: tuple[float, float] | None = None
    items_per_report: int = 1

    def __len__(self) -> int:
        return int(self.n.size)

    @overload
    def __getitem__(self, group: int) -> FrequencyEstimate: ...

    @overload
    def __getitem__(self, group: slice) -> list[FrequencyEstimate]: ...

    def __getitem__(self, group: int | slice) -> FrequencyEstimate | list[FrequencyEstimate]:
        if isinstance(group, slice):
            return [self[g] for g in range(*group.indices(len(self)))]
        return FrequencyEstimate(
            self.counts[group],
            self.variances[group],
            int(self.n[group]),
            self.support,
            self.items_per_report,
        )


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
    counts, variances = _unary(bit_sums, n, flip_probability)
    q = flip_probability
    return FrequencyEstimate(counts, variances, n, (1 - q, q))


def debias_unary_groups(
    bit_sums: NDArray[np.int64], rows: NDArray[np.int64], flip_probability: float
) -> GroupEstimates:
    """:func:`debias_unary_counts` of every group at once: ``bit_sums[g]`` of ``rows[g]``
    reports (each at least one)."""
    counts, variances = _unary(bit_sums, rows[:, None], flip_probability)
    q = flip_probability
    return GroupEstimates(counts, variances, rows, support=(1 - q, q))


def _unary(bit_sums: NDArray[np.int64], n: Any, q: float) -> tuple[FloatArray, FloatArray]:
    """Debiased counts and their variances (``n`` a number, or a column of them)."""
    if not 0 <= q < 0.5:
        raise ParameterError(
            f"flip probability must be in [0, 0.5) to debias, got {q} "
            "(at 0.5 the reports carry no information)"
        )
    counts = (np.asarray(bit_sums, dtype=np.float64) - n * q) / (1 - 2 * q)
    variances = np.broadcast_to(unary_variance(n, q), counts.shape).astype(np.float64)
    return counts, variances


def direct_variance(
    true_counts: NDArray[np.float64], n: int, keep: float, other: float
) -> FloatArray:
    """Exact variance of a debiased k-RR count, given the true counts."""
    c = np.asarray(true_counts, dtype=np.float64)
    spread = keep - other
    # (c keep (1 - keep) + (n - c) other (1 - other)) / spread^2, operation by operation in
    # that order, with two temporaries of the counts' size (a table by 10^5 groups).
    variance = c * keep
    variance *= 1 - keep
    rest = np.subtract(n, c, dtype=np.float64)
    rest *= other
    rest *= 1 - other
    variance += rest
    variance /= spread**2
    return variance


def mean_direct_variance(keep: Any, other: Any, k: int, n: int = 1) -> Any:
    """The variance of a debiased support count averaged over the ``k`` buckets, for ``n``
    reports: ``n (keep (1 - keep) + (k - 1) other (1 - other)) / (k (keep - other)^2)``.

    :func:`direct_variance` summed over buckets whose true counts add up to ``n``, so it is
    exact for every distribution. Plain arithmetic: ``keep`` and ``other`` may be arrays.
    """
    return n * (keep * (1 - keep) + (k - 1) * other * (1 - other)) / (k * (keep - other) ** 2)


def debias_direct_counts(
    report_counts: NDArray[np.int64], n: int, keep: float, other: float
) -> FrequencyEstimate:
    """Debias the support counts of ``n`` reports: ``report_counts[j]`` reports support bucket
    ``j``, each with probability ``keep`` when the value is ``j`` and ``other`` when it is not
    (for k-RR, the report histogram; for OUE, subset selection, local hashing and Hadamard
    response, the number of reports whose set holds ``j``) [1]_.

    ``ĉ_j = (C_j - n other) / (keep - other)``, with variance
    ``(c_j keep (1 - keep) + (n - c_j) other (1 - other)) / (keep - other)^2`` (plug-in ``c_j``).

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017 (Thm. 2, "pure" protocols).
    """
    _check_n(n)
    counts, variances = _direct(report_counts, n, keep, other)
    return FrequencyEstimate(counts, variances, n, (float(keep), float(other)))


def debias_direct_groups(
    report_counts: NDArray[np.int64], rows: NDArray[np.int64], keep: float, other: float
) -> GroupEstimates:
    """:func:`debias_direct_counts` of every group at once: ``report_counts[g]`` of
    ``rows[g]`` reports (each at least one)."""
    counts, variances = _direct(report_counts, rows[:, None].astype(np.float64), keep, other)
    return GroupEstimates(counts, variances, rows, support=(float(keep), float(other)))


def _direct(
    report_counts: NDArray[np.int64], n: Any, keep: float, other: float
) -> tuple[FloatArray, FloatArray]:
    """Debiased support counts and their plug-in variances (``n`` a number, or a column of
    them: the same arithmetic, element by element)."""
    if not keep > other:
        raise ParameterError(
            f"keep probability ({keep}) must exceed the other-bucket probability ({other}) "
            "to debias; the reports carry no information"
        )
    # (C - n other) / (keep - other), in place: the same operations in the same order.
    counts = np.array(report_counts, dtype=np.float64)
    counts -= n * other
    counts /= keep - other
    plug_in = np.clip(counts, 0.0, np.asarray(n, dtype=np.float64))
    return counts, direct_variance(plug_in, n, keep, other)


# ---------------------------------------------------------------------- Bloom-filter RAPPOR


def debias_bloom_counts(
    counts: NDArray[np.int64], sizes: NDArray[np.int64], one: float, zero: float
) -> tuple[FloatArray, FloatArray]:
    """Unbiased true-bit counts ``t̂`` per cohort and bit, and their (plug-in) variances.

    ``counts[c, j]`` is the number of reports of cohort ``c`` with bit ``j`` set, ``sizes[c]``
    the reports of cohort ``c``; ``one = q*`` and ``zero = p*`` are a report bit's probability
    of being 1 when the true bit is 1 and 0.
    """
    if not one != zero:
        raise ParameterError(
            f"P[1 | bit 1] ({one}) must differ from P[1 | bit 0] ({zero}) to debias; the reports "
            "carry no information"
        )
    counts = np.asarray(counts, dtype=np.float64)
    n_c = np.asarray(sizes, dtype=np.float64)[:, None]
    spread = one - zero
    debiased = (counts - n_c * zero) / spread
    truth = np.clip(debiased, 0.0, n_c)
    variances = (truth * one * (1 - one) + (n_c - truth) * zero * (1 - zero)) / spread**2
    return np.asarray(debiased, dtype=np.float64), np.asarray(variances, dtype=np.float64)


@dataclass(frozen=True)
class BloomDecoding:
    """Candidate strings found in Bloom-filter RAPPOR reports.

    Attributes
    ----------
    candidates
        The candidate strings decoded against (duplicates removed, first kept).
    detected
        Indices into ``candidates`` of the detected strings, by decreasing count.
    counts, std_errors, p_values
        Least-squares count of each detected string, its standard error, and the one-sided
        p-value of "count = 0" (detection needs ``p < significance / len(candidates)``).
    n
        Number of reports.
    significance
        Family-wise probability of detecting at least one string that is absent.
    selected
        How many candidates the Lasso selected before the significance filter.
    unexplained, unexplained_std_error
        Share of the reports (and its standard error) whose bits no detected string explains:
        the mass of strings that are not among the candidates or too rare to detect.
    """

    candidates: tuple[str | bytes, ...]
    detected: NDArray[np.int64]
    counts: FloatArray
    std_errors: FloatArray
    p_values: FloatArray
    n: int
    significance: float
    selected: int
    unexplained: float
    unexplained_std_error: float

    @property
    def labels(self) -> list[str | bytes]:
        """The detected strings, by decreasing count."""
        return [self.candidates[i] for i in self.detected.tolist()]

    @property
    def estimate(self) -> FrequencyEstimate:
        """The detected strings' counts as a :class:`FrequencyEstimate`."""
        return FrequencyEstimate(self.counts, self.std_errors**2, self.n)

    def table_columns(self) -> dict[str, FloatArray]:
        """Columns a frequency table adds after its estimates."""
        return {"p_value": np.asarray(self.p_values, dtype=np.float64)}


def _unique_candidates(candidates: Sequence[object]) -> tuple[str | bytes, ...]:
    if isinstance(candidates, str | bytes) or not isinstance(candidates, Sequence):
        raise ParameterError(
            f"candidates must be a list of strings, got {type(candidates).__name__}"
        )
    # Keyed by the bytes that are hashed: "x" and b"x" are the same Bloom filter.
    seen: dict[bytes, str | bytes] = {}
    for position, value in enumerate(candidates):
        if not isinstance(value, str | bytes):
            raise DomainError(
                f"candidates must be strings; got {value!r} of type {type(value).__name__} at "
                f"position {position}"
            )
        seen.setdefault(value.encode("utf-8") if isinstance(value, str) else value, value)
    if not seen:
        raise ParameterError("candidates must hold at least one string, got none")
    if len(seen) < len(candidates):
        warnings.warn(
            f"{len(candidates) - len(seen)} duplicate candidate(s) ignored (first kept)",
            FrameLDPWarning,
            stacklevel=caller_stacklevel(),
        )
    return tuple(seen.values())


def decode_bloom(
    debiased: FloatArray,
    variances: FloatArray,
    sizes: NDArray[np.int64],
    candidates: Sequence[object],
    encoder: BloomEncoder,
    *,
    significance: float = 0.05,
) -> BloomDecoding:
    """Which candidate strings occur, and how often: RAPPOR's decoding [2]_ (Sec. 4).

    With ``N`` reports and ``N_c`` in cohort ``c``, the expected true-bit count of cell
    ``(c, j)`` is ``sum_v x_v (N_c / N) B_v(c, j) + g N_c / N``: ``x_v`` reports hold candidate
    ``v``, whose Bloom filter in cohort ``c`` is ``B_v(c, .)``, and ``g`` absorbs the bits of
    strings outside the candidates (spread evenly by the hashes). Cells are weighted by the
    inverse of their standard error.

    1. A non-negative Lasso selects candidates; each is penalized by its standard normal score
       at ``1 / M`` (``M`` candidates), so that about one absent candidate enters by chance.
    2. Least squares on the selected ones (plus ``g``) gives counts and standard errors, the
       variance scaled up by the residual variance when it exceeds 1 (model misfit); candidates
       whose one-sided p-value is not below ``significance / M`` (Bonferroni) are dropped and
       the rest refitted, until every remaining one is significant.
    3. The unexplained share is ``g k / (N E[bits set])``.

    Decoding assumes cohorts were assigned independently of the values, so that every cohort
    sees the same distribution.
    """
    if not (isinstance(significance, float | int) and 0 < significance < 1):
        raise ParameterError(f"significance must be in (0, 1), got {significance!r}")
    names = _unique_candidates(candidates)
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    if n < 1:
        raise ParameterError("cannot decode from n=0 reports; need at least one")
    k, m = encoder.num_bits, encoder.num_cohorts
    if debiased.shape != (m, k) or variances.shape != (m, k) or sizes.shape != (m,):
        raise ParameterError(
            f"bit counts must have shape ({m}, {k}) and cohort sizes ({m},), got "
            f"{debiased.shape}, {variances.shape} and {sizes.shape}"
        )
    # Cells of empty cohorts carry no information; zero-variance cells cannot be weighted.
    share = np.repeat(sizes / n, k)
    sigma = np.sqrt(variances.ravel())
    usable = (share > 0) & (sigma > 0)
    weight = np.where(usable, share / np.where(usable, sigma, 1.0), 0.0)
    target = np.where(usable, debiased.ravel() / np.where(usable, sigma, 1.0), 0.0)

    design = _design(encoder.signatures(names), k, weight)
    background = weight[:, None]  # the unexplained bits: the same rate in every cell
    count = len(names)
    z_select = float(NormalDist().inv_cdf(1.0 - min(0.5, 1.0 / count)))
    penalties = z_select * np.sqrt(np.asarray(design.multiply(design).sum(axis=0)).ravel())
    full = sparse.hstack([design, sparse.csr_matrix(background)], format="csr")
    coefficients = nonnegative_lasso(full, target, np.append(penalties, 0.0))
    chosen = np.flatnonzero(coefficients[:-1] > 0)
    selected = int(chosen.size)

    threshold = significance / count
    while True:
        fit, errors = _least_squares(design[:, chosen].toarray(), background, target)
        z = fit[:-1] / np.where(errors[:-1] > 0, errors[:-1], np.inf)
        p_values = special.ndtr(-z)
        keep = p_values < threshold
        if keep.all():
            break
        chosen = chosen[keep]
    order = np.argsort(-fit[:-1], kind="stable")
    expected_bits = k * -np.expm1(encoder.num_hashes * np.log1p(-1.0 / k))
    scale = k / (n * expected_bits)
    return BloomDecoding(
        candidates=names,
        detected=chosen[order],
        counts=fit[:-1][order],
        std_errors=errors[:-1][order],
        p_values=p_values[order],
        n=n,
        significance=float(significance),
        selected=selected,
        unexplained=float(fit[-1] * scale),
        unexplained_std_error=float(errors[-1] * scale),
    )


def _design(signatures: NDArray[np.int64], num_bits: int, weight: FloatArray) -> Any:
    """Sparse weighted design matrix: cell ``(c, j)`` x candidate, 1 where ``j`` is set."""
    count, cohorts, hashes = signatures.shape
    cells = (np.arange(cohorts, dtype=np.int64)[None, :, None] * num_bits + signatures).reshape(
        count, -1
    )
    columns = np.repeat(np.arange(count, dtype=np.int64), cohorts * hashes)
    # Two hashes of one string may set the same bit: count it once.
    keys = sorted_distinct(columns * (cohorts * num_bits) + cells.ravel())
    columns, rows = np.divmod(keys, cohorts * num_bits)
    matrix = sparse.csc_matrix((weight[rows], (rows, columns)), shape=(cohorts * num_bits, count))
    matrix.eliminate_zeros()
    return matrix


def _least_squares(
    chosen: FloatArray, background: FloatArray, target: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Coefficients and standard errors of ``target ~ [chosen, background]``.

    Rows are already scaled to unit variance, so the covariance is ``(X'X)^-1``, scaled by the
    residual variance when that exceeds 1.
    """
    design = np.hstack([chosen, background])
    rows, columns = design.shape
    fit, _, rank, _ = np.linalg.lstsq(design, target, rcond=None)
    residual = target - design @ fit
    freedom = max(rows - columns, 1)
    scale = max(1.0, float(residual @ residual) / freedom)
    if rank < columns:
        covariance = np.linalg.pinv(design.T @ design)
    else:
        covariance = np.linalg.inv(design.T @ design)
    errors = np.sqrt(np.clip(np.diag(covariance) * scale, 0.0, None))
    return np.asarray(fit, dtype=np.float64), np.asarray(errors, dtype=np.float64)
