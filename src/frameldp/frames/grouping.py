"""Additive statistics of report columns, flat or by the values of public columns.

A :class:`Reduction` says which report columns one table reads and how a batch of them
reduces to an additive statistic (one column's :class:`~frameldp.core.mechanisms.Statistic`,
or the :class:`~frameldp.core.joint.JointStatistic` of two). :func:`grouped_statistics` applies
it to every group of rows of a batch in one pass: the rows are ordered by their group key
once, and each group is a zero-copy slice of the reordered reports. Statistics of batches
(file chunks, Dask partitions) merge with :func:`merge_grouped`. Plumbing only: the formulas
live in the mechanisms and :mod:`frameldp.core.joint`.

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
from frameldp.core.joint import JointStatistic, joint_statistic
from frameldp.core.mechanisms import Capability, FrequencyOracle, Mechanism, Statistic
from frameldp.errors import ParameterError, shown
from frameldp.frames.inputs import require_column
from frameldp.frames.lookup import mechanism_spec
from frameldp.frames.pipeline import column_context, statistic_of
from frameldp.frames.report_type import ReportMetadata, described, release_ids, storage_of
from frameldp.results.keys import GroupKey, canonical_key
from frameldp.results.table import TABLE_COLUMNS

__all__ = [
    "AnyStatistic",
    "GroupKey",
    "Grouped",
    "Reduction",
    "canonical_key",
    "check_group_columns",
    "check_independent_reports",
    "flat_reduction",
    "grouped_statistics",
    "joint_reduction",
    "merge_grouped",
    "sorted_keys",
]

AnyStatistic = Statistic | JointStatistic


@dataclass(frozen=True)
class Reduction:
    """The report columns a table reads (``names``, in frame order) and the function that
    reduces one batch of them (``{name: array}``) to an additive statistic."""

    names: tuple[str, ...]
    reduce: Callable[[Mapping[str, pa.Array]], AnyStatistic]
    label: str
    """What errors name (the report column, or ``"a, b"`` for a joint table)."""


def _flat(
    arrays: Mapping[str, pa.Array], *, mechanism: Mechanism, column: str, names: tuple[str, ...]
) -> Statistic:
    with column_context(column):
        return statistic_of([arrays[name] for name in names], mechanism, column)


def flat_reduction(column: str, names: Sequence[str], mechanism: Mechanism) -> Reduction:
    """One column's statistic; ``names`` are its report columns as the frame or file names
    them, in the order of ``mechanism.report_columns(column)``."""
    chosen = tuple(names)
    reduce = functools.partial(_flat, mechanism=mechanism, column=column, names=chosen)
    return Reduction(chosen, reduce, column)


def _joint(
    arrays: Mapping[str, pa.Array],
    *,
    mechanisms: tuple[FrequencyOracle, FrequencyOracle],
    columns: tuple[str, str],
    names: tuple[tuple[str, ...], tuple[str, ...]],
) -> JointStatistic:
    reports = []
    for mechanism, column, given in zip(mechanisms, columns, names, strict=True):
        own = mechanism.report_columns(column)
        reports.append(
            {name: arrays[frame_name] for name, frame_name in zip(own, given, strict=True)}
        )
    with column_context(f"{columns[0]}, {columns[1]}"):
        return joint_statistic(
            mechanisms[0], reports[0], mechanisms[1], reports[1], columns=columns
        )


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
                f"(k-RR, RAPPOR, OUE, local hashing, subset selection, Hadamard response), "
                f"not {mechanism.title}",
                column=column,
            )
    oracles = cast(tuple[FrequencyOracle, FrequencyOracle], mechanisms)
    chosen = (tuple(names[0]), tuple(names[1]))
    reduce = functools.partial(_joint, mechanisms=oracles, columns=columns, names=chosen)
    read = tuple(dict.fromkeys((*chosen[0], *chosen[1])))
    return Reduction(read, reduce, f"{columns[0]}, {columns[1]}")


@dataclass
class Grouped:
    """Statistics by group key (``()`` for an ungrouped table) and the Arrow type of each
    key column (``null`` until a batch holds a non-null key)."""

    statistics: dict[GroupKey, AnyStatistic] = field(default_factory=dict)
    types: tuple[pa.DataType, ...] = ()


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
    keys: Sequence[pa.Array], names: Sequence[str], num_rows: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], list[GroupKey]]:
    """``(order, starts, keys)``: the rows ordered by group (stable), where each group starts
    in that order, and each group's key values (``num_rows`` > 0)."""
    encoded = [_key_codes(array, name) for array, name in zip(keys, names, strict=True)]
    group_codes = encoded[0][0]  # dictionary codes: dense in [0, distinct values)
    for codes, dictionary in encoded[1:]:
        # Kept dense after every column, so that many key columns cannot overflow int64.
        pair = group_codes * max(len(dictionary), 1) + codes
        _, inverse = np.unique(pair, return_inverse=True)
        group_codes = inverse.astype(np.int64, copy=False).ravel()
    order = np.argsort(group_codes, kind="stable")
    starts = np.concatenate([[0], np.flatnonzero(np.diff(group_codes[order])) + 1])
    first_rows = order[starts]
    values = [
        dictionary.take(pa.array(codes[first_rows])).to_pylist() for codes, dictionary in encoded
    ]
    return order, starts.astype(np.int64), list(zip(*values, strict=True))


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
        return Grouped({(): reduction.reduce(reports)}, ())
    keys = [combined(arrays[name]) for name in by]
    num_rows = len(keys[0])
    types = tuple(
        key.type.value_type if pa.types.is_dictionary(key.type) else key.type for key in keys
    )
    if num_rows == 0:
        return Grouped({}, types)
    order, starts, group_keys = _row_groups(keys, by, num_rows)
    taken = {name: array.take(pa.array(order)) for name, array in reports.items()}
    ends = np.append(starts[1:], num_rows)
    statistics: dict[GroupKey, AnyStatistic] = {}
    for key, start, end in zip(group_keys, starts, ends, strict=True):
        batch = {name: array.slice(int(start), int(end - start)) for name, array in taken.items()}
        # 0.0 and -0.0 are two values to Arrow and one key to Python: their rows add up.
        _accumulate(statistics, canonical_key(key), reduction.reduce(batch))
    return Grouped(statistics, types)


def _accumulate(
    statistics: dict[GroupKey, AnyStatistic], key: GroupKey, statistic: AnyStatistic
) -> None:
    """Add ``statistic`` to the group ``key`` (its first one starts the group)."""
    found = statistics.get(key)
    statistics[key] = statistic if found is None else cast(Any, found) + statistic


def merge_grouped(*parts: Grouped) -> Grouped:
    """The statistics of the union of disjoint batches (a group's statistics add up)."""
    statistics: dict[GroupKey, AnyStatistic] = {}
    types: tuple[pa.DataType, ...] = ()
    for part in parts:
        for key, statistic in part.statistics.items():  # keys are canonical already
            _accumulate(statistics, key, statistic)
        if not types or any(pa.types.is_null(t) for t in types):
            types = tuple(
                new if not types or pa.types.is_null(old) else old
                for old, new in zip(types or part.types, part.types, strict=True)
            )
    return Grouped(statistics, types)


def sorted_keys(keys: Sequence[GroupKey]) -> list[GroupKey]:
    """Group keys in ascending order, a null key after every value."""

    def rank(key: GroupKey) -> tuple[tuple[bool, Any], ...]:
        return tuple((value is None, 0 if value is None else value) for value in key)

    try:
        return sorted(keys, key=rank)
    except TypeError:  # values that do not compare (mixed types): in order of appearance
        return list(keys)
