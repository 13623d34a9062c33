"""Joint frequency tables of two columns privatized independently, and the one-column
alternative over their product domain.

Two columns ``X`` and ``Y`` of the same people, each privatized on its own by a frequency
oracle (any two: k-RR, RAPPOR, OUE, local hashing, subset selection, Hadamard or projective
geometry response), give
their joint counts ``N_ab = #{i : x_i = a, y_i = b}`` without bias. A report ``r`` of ``X``
supports bucket ``a`` (``s_a(r) = 1``) with probability ``p`` when ``x = a`` and ``q``
otherwise, so ``e_a(r) = (s_a(r) - q) / (p - q)`` has expectation ``[x = a]``. The two columns'
noise is independent (frameldp never shares noise between columns), so the product
``e_a(r) e_b(r')`` of one row's two reports has expectation ``[x = a][y = b]``, and::

    N̂_ab = sum_i e_a(r_i) e_b(r'_i)
         = (C_ab - q' S_a - q S'_b + n q q') / ((p - q)(p' - q'))

where ``C_ab`` counts the rows whose first report supports ``a`` and second supports ``b``
and ``S``, ``S'`` are the two columns' support counts. For k-RR x k-RR this is exactly the
inverse of the Kronecker product of the two transition matrices applied to the joint histogram
of the reports (k-RR's inverse is ``(I - q J) / (p - q)``); for bit-vector mechanisms ``C`` is
the matrix of per-row bit pairs, ``S^T S'``.

Variance. With ``v1 = p (1 - p) / (p - q)^2``, ``v0 = q (1 - q) / (p - q)^2`` (the variance
of ``e_a`` when ``x = a`` and when not), ``E[e_a^2] = v1 + 1`` or ``v0``, and the rows are
independent, so with ``A = N_a.``, ``B = N_.b``, ``J = N_ab``::

    Var N̂_ab = J ((v1 + 1)(v1' + 1) - 1) + (A - J)(v1 + 1) v0'
              + (B - J) v0 (v1' + 1) + (n - A - B + J) v0 v0'

(plug-in estimates of ``A``, ``B``, ``J``, clipped to what counts can be). Its leading term
``n v0 v0'`` is the *product* of the two columns' per-report variances: it grows with both
domains (for k-RR, ``v0 ~ (e^eps + k - 2) / (e^eps - 1)^2``) and explodes at small epsilon.
Privatizing the pair as one column over the product domain (:func:`product_domain`) at the
summed epsilon costs the same budget and has the variance of one frequency oracle over
``k k'`` buckets, which is smaller for every setting where one is defined
(:func:`mean_joint_variance` against :func:`~frameldp.core.mechanisms.choice.compare_mechanisms`
over the product domain); two columns are the choice when they already exist, when each
column's own table must be as accurate as it can be, or when the product domain is too large
to enumerate.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
   Frequency Estimation", USENIX Security 2017 (the support-count estimator).
.. [2] G. Fanti, V. Pihur, Ú. Erlingsson, "Building a RAPPOR with the Unknown:
   Privacy-Preserving Learning of Associations and Data Dictionaries", PoPETs 2016 (joint
   distributions of two independently privatized RAPPOR variables).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.encoding import Domain
from frameldp.core.estimation import FloatArray, FrequencyEstimate
from frameldp.core.group_statistics import statistics_by_group
from frameldp.core.mechanisms.protocol import FrequencyOracle, Statistic
from frameldp.errors import ParameterError, shown

__all__ = [
    "JointStatistic",
    "debias_joint",
    "joint_statistic",
    "joint_statistics_by_group",
    "joint_variance",
    "mean_joint_variance",
    "product_domain",
]

# Support entries held per column per chunk of rows (4 Mi bytes of 0/1); a chunk never
# reaches 2**24 rows, so its float32 product of 0/1 matrices is exact.
_CELLS: Final = 1 << 22
_MAX_CHUNK: Final = 1 << 20


@dataclass(frozen=True)
class JointStatistic:
    """The additive statistic of a run of rows of two report columns.

    ``co_supports[a, b]`` counts the rows whose first report supports ``a`` and second
    supports ``b``; ``first_supports`` and ``second_supports`` are each column's support
    counts; ``first`` and ``second`` each column's own statistic (its marginal table).
    Statistics of disjoint runs of rows add up.
    """

    co_supports: NDArray[np.int64]
    first_supports: NDArray[np.int64]
    second_supports: NDArray[np.int64]
    first: Statistic
    second: Statistic

    @property
    def rows(self) -> int:
        """Number of rows (pairs of reports)."""
        return self.first.rows

    def __add__(self, other: JointStatistic) -> JointStatistic:
        if other.co_supports.shape != self.co_supports.shape:
            raise ParameterError("joint statistics of different domains do not add up")
        return JointStatistic(
            self.co_supports + other.co_supports,
            self.first_supports + other.first_supports,
            self.second_supports + other.second_supports,
            self.first + other.first,
            self.second + other.second,
        )

    def repeated(self, times: int) -> JointStatistic:
        """The statistic of ``times`` runs of these same pairs of reports (additivity)."""
        return JointStatistic(
            self.co_supports * times,
            self.first_supports * times,
            self.second_supports * times,
            self.first.repeated(times),
            self.second.repeated(times),
        )


def _sliced(reports: Mapping[str, pa.Array], start: int, length: int) -> dict[str, pa.Array]:
    return {name: array.slice(start, length) for name, array in reports.items()}


def joint_statistic(
    first: FrequencyOracle,
    first_reports: Mapping[str, pa.Array],
    second: FrequencyOracle,
    second_reports: Mapping[str, pa.Array],
    *,
    columns: tuple[str, str],
) -> JointStatistic:
    """The joint statistic of one batch of two report columns (rows aligned).

    Each column's reports are checked by its own statistic first (errors name the column and
    the row); the co-support counts are then accumulated in chunks of rows, so memory is
    bounded by ``O(k k' + chunk (k + k'))`` whatever the number of rows.
    """
    first_column, second_column = columns
    first_statistic = first.statistic(first_reports, column=first_column)
    second_statistic = second.statistic(second_reports, column=second_column)
    rows = first_statistic.rows
    if second_statistic.rows != rows:
        raise ParameterError(
            f"columns {shown(first_column)} and {shown(second_column)} hold {rows} and "
            f"{second_statistic.rows} reports; a joint table needs one pair per row"
        )
    k1, k2 = len(first.categories), len(second.categories)
    co_supports = np.zeros((k1, k2), dtype=np.int64)
    first_supports = np.zeros(k1, dtype=np.int64)
    second_supports = np.zeros(k2, dtype=np.int64)
    chunk = min(_MAX_CHUNK, max(1, _CELLS // max(k1, k2, 1)))
    for start in range(0, rows, chunk):
        a = first.supports(_sliced(first_reports, start, chunk), column=first_column)
        b = second.supports(_sliced(second_reports, start, chunk), column=second_column)
        first_supports += a.sum(axis=0, dtype=np.int64)
        second_supports += b.sum(axis=0, dtype=np.int64)
        # Exact: every entry counts at most `chunk` < 2**24 rows.
        product = a.T.astype(np.float32) @ b.astype(np.float32)
        co_supports += product.astype(np.int64)
    return JointStatistic(
        co_supports, first_supports, second_supports, first_statistic, second_statistic
    )


def joint_statistics_by_group(
    first: FrequencyOracle,
    first_reports: Mapping[str, pa.Array],
    second: FrequencyOracle,
    second_reports: Mapping[str, pa.Array],
    groups: NDArray[np.int64],
    num_groups: int,
    *,
    columns: tuple[str, str],
) -> list[JointStatistic]:
    """The joint statistic of each group ``g`` in ``[0, num_groups)`` of the rows with
    ``groups == g`` (every group holds a row), in one pass over the rows.

    Each column's statistics by group come first (reports checked, errors naming the column);
    the rows are then ordered by group and taken a chunk at a time: each group's run of rows
    in a chunk adds its support counts and the sum of its rows' outer products ``s_a s'_b``
    (``numpy.add.reduceat``), so memory is ``O(groups k k' + chunk k k')``."""
    first_column, second_column = columns
    firsts = statistics_by_group(first, first_reports, groups, num_groups, column=first_column)
    seconds = statistics_by_group(second, second_reports, groups, num_groups, column=second_column)
    if not np.array_equal(firsts.rows, seconds.rows):
        raise ParameterError(
            f"columns {shown(first_column)} and {shown(second_column)} hold "
            f"{int(firsts.rows.sum())} and {int(seconds.rows.sum())} reports; a joint table "
            "needs one pair per row"
        )
    k1, k2 = len(first.categories), len(second.categories)
    co_supports = np.zeros((num_groups, k1, k2), dtype=np.int64)
    first_supports = np.zeros((num_groups, k1), dtype=np.int64)
    second_supports = np.zeros((num_groups, k2), dtype=np.int64)
    order = np.argsort(groups, kind="stable")
    ordered = groups[order]
    chunk = min(_MAX_CHUNK, max(1, _CELLS // max(k1 * k2, 1)))
    for start in range(0, groups.size, chunk):
        rows = pa.array(order[start : start + chunk])
        a = first.supports(_taken(first_reports, rows), column=first_column)
        b = second.supports(_taken(second_reports, rows), column=second_column)
        keys = ordered[start : start + chunk]
        runs = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        chosen = keys[runs]  # distinct: the rows are sorted by group
        first_supports[chosen] += np.add.reduceat(a, runs, axis=0, dtype=np.int64)
        second_supports[chosen] += np.add.reduceat(b, runs, axis=0, dtype=np.int64)
        pairs = a[:, :, None] & b[:, None, :]
        co_supports[chosen] += np.add.reduceat(pairs, runs, axis=0, dtype=np.int64)
    return [
        JointStatistic(co_supports[g], first_supports[g], second_supports[g], firsts[g], seconds[g])
        for g in range(num_groups)
    ]


def _taken(reports: Mapping[str, pa.Array], rows: pa.Array) -> dict[str, pa.Array]:
    return {name: array.take(rows) for name, array in reports.items()}


def _per_report_variances(mechanism: FrequencyOracle) -> tuple[float, float]:
    """``(v1, v0)``: the variance of ``e_a`` for a report of ``a`` and of another value."""
    p, q = mechanism.support_probabilities
    spread = (p - q) ** 2
    return p * (1 - p) / spread, q * (1 - q) / spread


def joint_variance(
    joint: FloatArray,
    first_counts: FloatArray,
    second_counts: FloatArray,
    n: int,
    first: FrequencyOracle,
    second: FrequencyOracle,
) -> FloatArray:
    """Exact variance of every debiased joint count given the true joint counts ``J`` and
    marginal counts ``A`` (rows) and ``B`` (columns) of ``n`` rows (module docstring)."""
    v1, v0 = _per_report_variances(first)
    w1, w0 = _per_report_variances(second)
    a = np.asarray(first_counts, dtype=np.float64)[:, None]
    b = np.asarray(second_counts, dtype=np.float64)[None, :]
    j = np.asarray(joint, dtype=np.float64)
    variance = (
        j * ((v1 + 1) * (w1 + 1) - 1)
        + (a - j) * (v1 + 1) * w0
        + (b - j) * v0 * (w1 + 1)
        + (n - a - b + j) * v0 * w0
    )
    return np.asarray(variance, dtype=np.float64)


def debias_joint(
    first: FrequencyOracle, second: FrequencyOracle, statistic: JointStatistic
) -> FrequencyEstimate:
    """Unbiased joint counts over the product domain, first column's buckets major (cell
    ``a * k' + b``), with plug-in variances (module docstring)."""
    n = statistic.rows
    if n < 1:
        raise ParameterError(f"cannot estimate from n={n} reports; need at least one")
    p1, q1 = first.support_probabilities
    p2, q2 = second.support_probabilities
    s1 = statistic.first_supports.astype(np.float64)
    s2 = statistic.second_supports.astype(np.float64)
    co = statistic.co_supports.astype(np.float64)
    counts = (co - q2 * s1[:, None] - q1 * s2[None, :] + n * q1 * q2) / ((p1 - q1) * (p2 - q2))
    first_estimate = first.debias(statistic.first)
    second_estimate = second.debias(statistic.second)
    a = np.clip(first_estimate.counts, 0.0, float(n))
    b = np.clip(second_estimate.counts, 0.0, float(n))
    low = np.maximum(0.0, a[:, None] + b[None, :] - n)
    high = np.minimum(a[:, None], b[None, :])
    plug_in = np.clip(counts, low, np.maximum(low, high))
    variances = joint_variance(plug_in, a, b, n, first, second)
    items = first_estimate.items_per_report * second_estimate.items_per_report
    return FrequencyEstimate(counts.ravel(), variances.ravel(), n, items_per_report=items)


def joint_labels(first: FrequencyOracle, second: FrequencyOracle) -> list[tuple[Any, Any]]:
    """The product domain's cells ``(a, b)`` in the order of :func:`debias_joint`."""
    return [(a, b) for a in first.categories for b in second.categories]


def mean_joint_variance(first: FrequencyOracle, second: FrequencyOracle, n: int = 1) -> float:
    """The variance of a debiased joint count averaged over the ``k k'`` cells, for ``n`` rows
    of one value in each column: exact for every joint distribution (the true counts drop out
    of the sum over cells, as in :func:`~frameldp.core.mechanisms.choice.mean_variance`)."""
    v1, v0 = _per_report_variances(first)
    w1, w0 = _per_report_variances(second)
    k1, k2 = len(first.categories), len(second.categories)
    total = (
        ((v1 + 1) * (w1 + 1) - 1)
        + (k2 - 1) * (v1 + 1) * w0
        + (k1 - 1) * v0 * (w1 + 1)
        + (k1 - 1) * (k2 - 1) * v0 * w0
    )
    return float(n * total / (k1 * k2))


def product_domain(
    first: Domain | Sequence[Hashable] | Any,
    second: Domain | Sequence[Hashable] | Any,
    *,
    separator: str = "|",
) -> list[str]:
    """The labels ``"a|b"`` of every pair of values of two public domains, first major: the
    domain of one column that holds a pair (privatize it at the summed epsilon instead of two
    columns; module docstring says when that is better).

    A separator that occurs in a label is refused (the pair could not be split back).

    >>> product_domain(["AA", "DL"], ["ATL", "BOS"])
    ['AA|ATL', 'AA|BOS', 'DL|ATL', 'DL|BOS']
    """
    if not isinstance(separator, str) or not separator:
        raise ParameterError(f"separator must be a non-empty string, got {shown(separator)}")
    labels = []
    for domain in (first, second):
        values = [str(value) for value in Domain.coerce(domain).labels]
        clash = next((value for value in values if separator in value), None)
        if clash is not None:
            raise ParameterError(
                f"product_domain: separator {shown(separator)} occurs in the label "
                f"{shown(clash)}; choose another separator"
            )
        labels.append(values)
    return [f"{a}{separator}{b}" for a in labels[0] for b in labels[1]]
