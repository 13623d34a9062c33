"""The statistics and estimates of many groups of rows at once.

A table by public groups (``reports.ldp.debias(column, by=...)``) needs one additive statistic
per group and one estimate per group. Computed group by group, that is a Python call per group
(10^5 groups: seconds of interpreter overhead for microseconds of arithmetic). The statistics of
the frequency oracles are histograms of integer codes or per-bit sums of packed reports, so the
statistics of every group come from one pass over the rows: a histogram of ``(group, code)``
pairs, or per-bit sums of the rows sorted by group (:mod:`frameldp.core.group_counting`);
their debiasing is the same formula over a ``(groups, k)`` array.

A mechanism opts in with :class:`~frameldp.core.mechanisms.protocol.GroupEstimator`;
:func:`statistics_by_group` and :func:`estimates_by_group` fall back to one call per group
otherwise, so every mechanism gets the same tables. Memory is ``O(groups x k)`` besides the
reports: a block of unpacked rows at a time for bit reports.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.columns import combined
from frameldp.core.estimation import GroupEstimates
from frameldp.core.mechanisms.protocol import Estimate, GroupStatistics, Mechanism

__all__ = ["each_group", "estimates_by_group", "statistics_by_group"]

T = TypeVar("T")


def _own(mechanism: Mechanism, method: str) -> Any:
    """``method`` of ``mechanism`` when its class defines it (not forwarded by a wrapper)."""
    function = getattr(type(mechanism), method, None)
    return None if function is None else function.__get__(mechanism)


def statistics_by_group(
    mechanism: Mechanism,
    reports: Mapping[str, pa.Array | pa.ChunkedArray],
    groups: NDArray[np.int64],
    num_groups: int,
    *,
    column: str,
) -> GroupStatistics:
    """The statistic of each group ``g`` in ``[0, num_groups)`` of the rows whose
    ``groups`` code is ``g`` (every group must hold a row), in one pass where the mechanism
    can (:class:`~frameldp.core.mechanisms.protocol.GroupEstimator`), else group by group."""
    arrays = {name: combined(array) for name, array in reports.items()}
    vectorized = _own(mechanism, "statistics_by_group")
    if vectorized is not None:
        statistics: GroupStatistics = vectorized(arrays, groups, num_groups, column=column)
        return statistics
    each = each_group(
        lambda batch: mechanism.statistic(batch, column=column), arrays, groups, num_groups
    )
    return GroupStatistics.stack(each)


def each_group(
    reduce: Callable[[Mapping[str, pa.Array]], T],
    arrays: Mapping[str, pa.Array],
    groups: NDArray[np.int64],
    num_groups: int,
) -> list[T]:
    """``reduce`` of the rows of each group ``g`` in ``[0, num_groups)``, one call per group
    (the rows reordered by group once, each group a zero-copy slice)."""
    order = np.argsort(groups, kind="stable")
    bounds = np.searchsorted(groups[order], np.arange(num_groups + 1))
    taken = {name: array.take(pa.array(order)) for name, array in arrays.items()}
    return [
        reduce({name: array.slice(int(start), int(stop - start)) for name, array in taken.items()})
        for start, stop in itertools.pairwise(bounds)
    ]


def estimates_by_group(mechanism: Mechanism, statistics: GroupStatistics) -> Sequence[Estimate]:
    """:meth:`~frameldp.core.mechanisms.protocol.Estimator.finish` of every group's
    statistic: as whole arrays where the mechanism can, else group by group."""
    vectorized = _own(mechanism, "estimates_by_group")
    if vectorized is not None:
        estimates: GroupEstimates = vectorized(statistics)
        return estimates
    return [mechanism.finish(statistics[group]) for group in range(len(statistics))]
