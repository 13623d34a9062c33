"""Additive statistics of report columns, flat or by the values of public columns.

A :class:`Reduction` says which report columns one table reads and how a batch of them
reduces to an additive statistic (one column's :class:`~frameldp.core.mechanisms.Statistic`,
or the :class:`~frameldp.core.joint.JointStatistic` of two), and the statistics of every group
of a batch at once. :func:`grouped_statistics` codes the rows by their group key once and
reduces every group in one pass (:mod:`frameldp.core.group_statistics`: a histogram of
``(group, code)`` pairs or per-bit sums by group, where the mechanism can). Statistics of
batches (file chunks, Dask partitions) merge with :func:`merge_grouped`. Plumbing only: the
formulas live in the mechanisms and :mod:`frameldp.core.joint`.

Group keys are public: the group sizes are released as they are. A null key is a group of
its own (``None``); groups with no rows do not appear.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.columns import combined
from frameldp.core.group_statistics import each_group, statistics_by_group
from frameldp.core.joint import JointStatistic, joint_statistic, joint_statistics_by_group
from frameldp.core.mechanisms import (
    Capability,
    FrequencyOracle,
    GroupStatistics,
    Mechanism,
    Statistic,
)
from frameldp.errors import ParameterError, shown
from frameldp.frames.inputs import require_column
from frameldp.frames.lookup import mechanism_spec
from frameldp.frames.pipeline import add_statistics, column_context, named_reports, statistic_of
from frameldp.frames.report_type import ReportMetadata, described, release_ids, storage_of
from frameldp.results.keys import GroupKey, canonical_key
from frameldp.results.table import TABLE_COLUMNS

__all__ = [
    "AnyStatistic",
    "GroupKey",
    "Grouped",
    "Reduction",
    "StatisticList",
    "canonical_key",
    "check_group_columns",
    "check_independent_reports",
    "flat_reduction",
    "grouped_statistics",
    "joint_reduction",
    "merge_grouped",
    "sorted_order",
]

AnyStatistic = Statistic | JointStatistic


@dataclass(frozen=True)
class StatisticList:
    """Statistics of groups ``0, 1, ...`` held one object per group (joint statistics, or a
    reduction with no whole-batch form): the interface of
    :class:`~frameldp.core.mechanisms.GroupStatistics`, group by group."""

    items: tuple[AnyStatistic, ...]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, group: int) -> AnyStatistic:
        return self.items[group]

    def total(self) -> AnyStatistic:
        """The statistic of all the groups' rows together."""
        return add_statistics(*self.items)

    def take(self, groups: NDArray[np.int64]) -> StatisticList:
        """The statistics of ``groups``, in that order."""
        return StatisticList(tuple(self.items[int(g)] for g in groups))

    def concatenated(self, *others: StatisticList) -> StatisticList:
        """These groups, then each of ``others``'."""
        return StatisticList(sum((other.items for other in others), self.items))

    def summed_by(self, positions: NDArray[np.int64], size: int) -> StatisticList:
        """``size`` groups, group ``g`` the sum of these groups ``i`` with
        ``positions[i] == g`` (every group receives one at least)."""
        sums: list[Any] = [None] * size
        for position, statistic in zip(positions.tolist(), self.items, strict=True):
            found = sums[position]
            sums[position] = statistic if found is None else found + statistic
        return StatisticList(tuple(sums))

    def repeated(self, times: NDArray[np.int64]) -> StatisticList:
        """Group ``g`` as ``times[g]`` runs of its reports."""
        return StatisticList(
            tuple(s.repeated(int(t)) for s, t in zip(self.items, times, strict=True))
        )


Stack = GroupStatistics | StatisticList
"""The statistics of groups ``0, 1, ...`` of rows."""


def stacked(statistics: Sequence[AnyStatistic]) -> Stack:
    """Statistics of groups ``0, 1, ...`` (at least one), stacked into arrays where they are
    one column's."""
    if all(isinstance(s, Statistic) for s in statistics):
        return GroupStatistics.stack(cast(Sequence[Statistic], statistics))
    return StatisticList(tuple(statistics))


@dataclass(frozen=True)
class Reduction:
    """The report columns a table reads (``names``, in frame order), the function that
    reduces one batch of them (``{name: array}``) to an additive statistic, and the one that
    reduces every group of a batch at once (``by_group(arrays, groups, num_groups)``, row
    ``i`` in group ``groups[i]``; group by group with ``reduce`` when not given)."""

    names: tuple[str, ...]
    reduce: Callable[[Mapping[str, pa.Array]], AnyStatistic]
    label: str
    """What errors name (the report column, or ``"a, b"`` for a joint table)."""
    by_group: Callable[[Mapping[str, pa.Array], NDArray[np.int64], int], Stack] | None = None

    def reduce_groups(
        self, arrays: Mapping[str, pa.Array], groups: NDArray[np.int64], num_groups: int
    ) -> Stack:
        """The statistic of each group ``g`` in ``[0, num_groups)`` of ``arrays``' rows."""
        if self.by_group is not None:
            return self.by_group(arrays, groups, num_groups)
        return stacked(each_group(self.reduce, arrays, groups, num_groups))


def _flat(
    arrays: Mapping[str, pa.Array], *, mechanism: Mechanism, column: str, names: tuple[str, ...]
) -> Statistic:
    with column_context(column):
        return statistic_of([arrays[name] for name in names], mechanism, column)


def _flat_groups(
    arrays: Mapping[str, pa.Array],
    groups: NDArray[np.int64],
    num_groups: int,
    *,
    mechanism: Mechanism,
    column: str,
    names: tuple[str, ...],
) -> GroupStatistics:
    reports = named_reports([arrays[name] for name in names], mechanism, column)
    with column_context(column):
        return statistics_by_group(mechanism, reports, groups, num_groups, column=column)


def flat_reduction(column: str, names: Sequence[str], mechanism: Mechanism) -> Reduction:
    """One column's statistic; ``names`` are its report columns as the frame or file names
    them, in the order of ``mechanism.report_columns(column)``."""
    chosen = tuple(names)
    reduce = functools.partial(_flat, mechanism=mechanism, column=column, names=chosen)
    by_group = functools.partial(_flat_groups, mechanism=mechanism, column=column, names=chosen)
    return Reduction(chosen, reduce, column, by_group)


def _joint(
    arrays: Mapping[str, pa.Array],
    *,
    mechanisms: tuple[FrequencyOracle, FrequencyOracle],
    columns: tuple[str, str],
    names: tuple[tuple[str, ...], tuple[str, ...]],
) -> JointStatistic:
    reports = _named_reports(arrays, mechanisms, columns, names)
    with column_context(f"{columns[0]}, {columns[1]}"):
        return joint_statistic(
            mechanisms[0], reports[0], mechanisms[1], reports[1], columns=columns
        )


def _named_reports(
    arrays: Mapping[str, pa.Array],
    mechanisms: tuple[FrequencyOracle, FrequencyOracle],
    columns: tuple[str, str],
    names: tuple[tuple[str, ...], tuple[str, ...]],
) -> list[dict[str, pa.Array]]:
    """Each column's report arrays under the names its mechanism gives them."""
    return [
        named_reports([arrays[name] for name in given], mechanism, column)
        for mechanism, column, given in zip(mechanisms, columns, names, strict=True)
    ]


def _joint_groups(
    arrays: Mapping[str, pa.Array],
    groups: NDArray[np.int64],
    num_groups: int,
    *,
    mechanisms: tuple[FrequencyOracle, FrequencyOracle],
    columns: tuple[str, str],
    names: tuple[tuple[str, ...], tuple[str, ...]],
) -> StatisticList:
    reports = _named_reports(arrays, mechanisms, columns, names)
    with column_context(f"{columns[0]}, {columns[1]}"):
        statistics = joint_statistics_by_group(
            mechanisms[0],
            reports[0],
            mechanisms[1],
            reports[1],
            groups,
            num_groups,
            columns=columns,
        )
    return StatisticList(tuple(statistics))


def check_independent_reports(
    columns: tuple[Any, Any], recorded: tuple[ReportMetadata | None, ReportMetadata | None]
) -> None:
    """Refuse a joint table of two report columns that share noise: one column twice, or two
    columns whose types (``recorded``) name the same privatized column under the same spec. A
    copy, a rename or an expression of a report column (pandas ``df["b"] = df["a"]``, polars
    ``pl.col("a").alias("b")``) keeps its type, so it is recognised here.

    The estimator of :mod:`frameldp.core.joint` multiplies one row's two unbiased indicators,
    which is an unbiased indicator of the pair only when the two reports' noise is independent.
    Of one report with itself, ``E[e_a e_b]`` is not 0 for ``a != b``, and the table is off by
    dozens of standard errors (docs/tables.md). Two releases of one column (two nights joined
    on the user) are independent, unless they share memoized permanent responses (one memo
    name): those are refused too. Two columns of one privatized column and mechanism share
    noise when they hold rows of a common release (stacked by ``concat_releases`` or not), or
    when either records no release (a file of an earlier frameldp).
    """
    first, second = recorded
    memo = first.spec.get("memo") if first else None
    if columns[0] == columns[1]:
        why = "one column twice"
    elif first and second and _same_release_of_one_column(first, second):
        why = f"both hold the reports of column {shown(first.column)} ({described(first.spec)})"
    elif memo and second and second.spec.get("memo") == memo:
        why = f"both share the memoized permanent responses {shown(memo)}"
    else:
        return
    raise ParameterError(
        f"columns {shown(columns[0])} and {shown(columns[1])}: a joint table needs two "
        f"independently privatized columns, and these share noise ({why}): the joint estimator "
        "assumes independent reports. Privatize the two columns separately, or the pair as one "
        "column (frameldp.product_domain)"
    )


def _same_release_of_one_column(first: ReportMetadata, second: ReportMetadata) -> bool:
    same_column = (first.column, first.part) == (second.column, second.part)
    if not same_column or mechanism_spec(first.spec) != mechanism_spec(second.spec):
        return False
    ours, theirs = release_ids(first.spec), release_ids(second.spec)
    return not ours or not theirs or bool(set(ours) & set(theirs))


def joint_reduction(
    columns: tuple[str, str],
    names: tuple[Sequence[str], Sequence[str]],
    mechanisms: tuple[Mechanism, Mechanism],
    recorded: tuple[ReportMetadata | None, ReportMetadata | None],
) -> Reduction:
    """The joint statistic of two report columns (:mod:`frameldp.core.joint`); each must hold
    a frequency oracle's reports, and the two must not share noise (``recorded``: their report
    types, see :func:`check_independent_reports`)."""
    check_independent_reports(columns, recorded)
    for column, mechanism in zip(columns, mechanisms, strict=True):
        collection = getattr(mechanism, "collection", None)
        if collection is not None:
            raise ParameterError(
                f"column {shown(column)}: a joint table needs both columns from each person, "
                f"and collect={collection.strategy!r} had each person report one of "
                f"{list(collection.columns)}",
                column=column,
            )
        if Capability.FREQUENCY_ORACLE not in mechanism.capabilities:
            raise ParameterError(
                f"column {shown(column)}: a joint table needs frequency-oracle reports "
                f"(k-RR, RAPPOR, OUE, local hashing, subset selection, Hadamard or projective "
                f"geometry response), "
                f"not {mechanism.title}",
                column=column,
            )
    oracles = cast(tuple[FrequencyOracle, FrequencyOracle], mechanisms)
    chosen = (tuple(names[0]), tuple(names[1]))
    reduce = functools.partial(_joint, mechanisms=oracles, columns=columns, names=chosen)
    by_group = functools.partial(_joint_groups, mechanisms=oracles, columns=columns, names=chosen)
    read = tuple(dict.fromkeys((*chosen[0], *chosen[1])))
    return Reduction(read, reduce, f"{columns[0]}, {columns[1]}", by_group)


@dataclass
class Grouped:
    """Statistics by group: ``keys[g]`` is group ``g``'s key (``()`` alone for an ungrouped
    table) and ``statistics[g]`` its statistic; ``types`` the Arrow type of each key column
    (``null`` until a batch holds a non-null key). No keys: no batch was reduced."""

    keys: list[GroupKey] = field(default_factory=list)
    statistics: Stack | None = None
    types: tuple[pa.DataType, ...] = ()

    def only(self) -> AnyStatistic:
        """The statistic of an ungrouped table."""
        if self.keys != [()] or self.statistics is None:
            raise ParameterError("an ungrouped table has one statistic")  # pragma: no cover
        return self.statistics[0]


def _key_codes(array: pa.Array, name: str) -> tuple[NDArray[np.int64], pa.Array]:
    """Row codes into the distinct values of a key column (null its own value)."""
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    try:
        encoded = pc.dictionary_encode(array, null_encoding="encode")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise ParameterError(
            f"by={shown(name)}: cannot group by values of type {array.type}", column=name
        ) from error
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return codes, encoded.dictionary


def _row_groups(
    keys: Sequence[pa.Array], names: Sequence[str]
) -> tuple[NDArray[np.int64], int, list[GroupKey]]:
    """``(groups, num_groups, keys)``: each row's group in ``[0, num_groups)`` and each
    group's key (canonical: ``0.0`` and ``-0.0`` are one key, their rows one group)."""
    encoded = [_key_codes(array, name) for array, name in zip(keys, names, strict=True)]
    groups, first_dictionary = encoded[0]  # dictionary codes: dense in [0, distinct values)
    members = [np.arange(len(first_dictionary), dtype=np.int64)]  # each group's codes
    for codes, dictionary in encoded[1:]:
        # Kept dense after every column, so that many key columns cannot overflow int64.
        width = max(len(dictionary), 1)
        pairs, inverse = np.unique(groups * width + codes, return_inverse=True)
        members = [*(member[pairs // width] for member in members), pairs % width]
        groups = inverse.astype(np.int64, copy=False).ravel()
    values = [
        dictionary.take(pa.array(member)).to_pylist()
        for member, (_, dictionary) in zip(members, encoded, strict=True)
    ]
    found = list(zip(*values, strict=True))
    if any(pa.types.is_floating(dictionary.type) for _, dictionary in encoded):
        found = [canonical_key(key) for key in found]
    # Distinct Arrow values may be one Python value (a time64[ns] with nanoseconds, a date64
    # with a time of day): their rows are one group, whatever the batches.
    unique = list(dict.fromkeys(found))
    if len(unique) < len(found):
        index = {key: position for position, key in enumerate(unique)}
        groups = np.array([index[key] for key in found], dtype=np.int64)[groups]
    return groups, len(unique), unique


def check_group_columns(
    by: str | Sequence[str] | None,
    columns: Sequence[Any],
    reported: Iterable[Any],
    debiased: Sequence[Any],
) -> tuple[str, ...]:
    """The public group columns named by ``by``: present among ``columns``, distinct, not a
    report column or companion (``reported``) nor a debiased one, and not a name the table
    uses for its own columns."""
    if by is None:
        return ()
    # One name: a string, bytes, a non-iterable, or a tuple that is itself a column's name.
    single = (
        isinstance(by, str | bytes)
        or not isinstance(by, Iterable)
        or (isinstance(by, tuple) and by in columns)
    )
    names: tuple[Any, ...] = (by,) if single else tuple(by)
    private = set(reported) | set(debiased)
    present = list(columns)
    seen: set[Any] = set()
    for name in names:
        require_column(present, name)
        if name in private:
            raise ParameterError(
                f"by={shown(name)}: {shown(name)} holds privatized reports; groups must be "
                "public columns (their sizes are released as they are)",
                column=name,
            )
        if name in seen:
            raise ParameterError(f"by={shown(name)}: named twice", column=name)
        if name in TABLE_COLUMNS:
            raise ParameterError(
                f"by={shown(name)}: the table has a column of that name; rename the group column",
                column=name,
            )
        seen.add(name)
    return names


def grouped_statistics(
    arrays: Mapping[str, pa.Array | pa.ChunkedArray],
    reduction: Reduction,
    by: Sequence[str] = (),
) -> Grouped:
    """The statistic of every group of rows of one batch (``arrays`` holds the report columns
    and the ``by`` columns), in one pass over the reports."""
    reports = {name: combined(storage_of(arrays[name])) for name in reduction.names}
    if not by:
        return Grouped([()], stacked([reduction.reduce(reports)]), ())
    keys = [combined(arrays[name]) for name in by]
    types = tuple(
        key.type.value_type if pa.types.is_dictionary(key.type) else key.type for key in keys
    )
    if len(keys[0]) == 0:
        return Grouped([], None, types)
    groups, num_groups, group_keys = _row_groups(keys, by)
    return Grouped(group_keys, reduction.reduce_groups(reports, groups, num_groups), types)


def merge_grouped(*parts: Grouped) -> Grouped:
    """The statistics of the union of disjoint batches (a group's statistics add up)."""
    keys: list[GroupKey] = []
    index: dict[GroupKey, int] = {}
    positions: list[NDArray[np.int64]] = []
    stacks: list[Any] = []
    types: tuple[pa.DataType, ...] = ()
    for part in parts:
        if part.statistics is not None:  # keys are canonical already
            for key in part.keys:
                if key not in index:
                    index[key] = len(keys)
                    keys.append(key)
            positions.append(np.array([index[key] for key in part.keys], dtype=np.int64))
            stacks.append(part.statistics)
        if not types or any(pa.types.is_null(t) for t in types):
            types = tuple(
                new if not types or pa.types.is_null(old) else old
                for old, new in zip(types or part.types, part.types, strict=True)
            )
    if not stacks:
        return Grouped([], None, types)
    merged = stacks[0].concatenated(*stacks[1:]).summed_by(np.concatenate(positions), len(keys))
    return Grouped(keys, merged, types)


def sorted_order(keys: Sequence[GroupKey], types: Sequence[pa.DataType] = ()) -> NDArray[np.int64]:
    """The positions of ``keys`` in ascending order of the keys, a null key after every
    value (in order of appearance where values do not compare: mixed types). ``types`` are
    the key columns' Arrow types, when known: the keys are then sorted by Arrow."""
    if keys and len(types) == len(keys[0]):
        try:
            columns = {
                str(i): pa.array([key[i] for key in keys], type=kind)
                for i, kind in enumerate(types)
            }
            order = pc.sort_indices(
                pa.table(columns),
                sort_keys=[(name, "ascending", "at_end") for name in columns],
            )
            return np.asarray(order.to_numpy(), dtype=np.int64)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass  # keys that are not of their column's type: compared in Python

    def rank(position: int) -> tuple[tuple[bool, Any], ...]:
        return tuple((value is None, 0 if value is None else value) for value in keys[position])

    try:
        return np.array(sorted(range(len(keys)), key=rank), dtype=np.int64)
    except TypeError:
        return np.arange(len(keys), dtype=np.int64)
