"""Plumbing shared by every frame library: Arrow columns in, the mechanism protocol, Arrow out.

pandas, polars and Dask all hand their columns over as Arrow arrays (zero-copy where the data is
already Arrow); every mechanism is called through :mod:`frameldp.core.mechanisms.protocol`
only. No formula lives in this module.
"""

from __future__ import annotations

import contextlib
import hashlib
import warnings
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.collected import CollectedBatch
from frameldp.core.columns import combined
from frameldp.core.mechanisms import Mechanism, Statistic, memoizes
from frameldp.core.randomness import RandomSource, label_bytes
from frameldp.core.report_memory import check_report_memory
from frameldp.errors import (
    DomainError,
    DomainInferenceWarning,
    FrameLDPError,
    ParameterError,
    caller_stacklevel,
    shown,
)
from frameldp.frames.adapters import in_memory_adapter_for
from frameldp.frames.fingerprint import fingerprint_of, record_drawn
from frameldp.frames.report_type import (
    ReportMetadata,
    as_reports,
    metadata_of,
    refuse_reports,
    storage_of,
)

__all__ = [
    "add_statistics",
    "column_context",
    "infer_domain",
    "named_reports",
    "privatize_columns",
    "privatize_frame",
    "row_content",
    "statistic_of",
]

_Additive = TypeVar("_Additive", bound=Any)


@contextlib.contextmanager
def column_context(column: Any) -> Iterator[None]:
    """Name ``column`` on a frameldp error raised for it (its ``column``, and so its message's
    ``column '...':`` prefix) unless the error names a column already."""
    try:
        yield
    except FrameLDPError as error:
        if error.column is None:
            error.column = column  # its message then starts with "column '...':" (once)
        raise


def infer_domain(array: pa.Array | pa.ChunkedArray, column: str) -> tuple[Hashable, ...]:
    """Sorted distinct non-null values, with a warning that this reveals which values occur."""
    array = combined(array)
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        array = pc.list_flatten(array)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    try:
        values = pc.unique(array.drop_null()).sort()
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # structs, periods, intervals
        kind = getattr(array.type, "extension_name", None) or str(array.type)
        raise DomainError(
            f"domain='infer' cannot list values of type {shown(kind)}: domain "
            "categories must be str, int, float or bool; convert the column (to strings, for "
            "example) and pass its public domain",
            column=column,
            parameter="domain",
        ) from None
    warnings.warn(
        f"column {shown(column)}: domain inferred from the data ({len(values)} values). The list "
        "of values that occur is released without any privacy protection; pass the public domain "
        "instead.",
        DomainInferenceWarning,
        stacklevel=caller_stacklevel(),
    )
    return tuple(values.to_pylist())


_DIGEST_BYTES = 16


def _value_digest(value: object) -> bytes:
    """16 bytes naming one cell value canonically (type-tagged, as stream labels are)."""
    try:
        body = label_bytes([value])
    except ParameterError:  # dates, decimals, lists of kept columns: by type and repr
        body = b"r" + type(value).__name__.encode() + b":" + repr(value).encode()
    return hashlib.blake2b(body, digest_size=_DIGEST_BYTES).digest()


def row_content(columns: list[pa.Array | pa.ChunkedArray], num_rows: int) -> NDArray[np.uint8]:
    """One row of bytes per row naming its cells: 16 bytes per column, a digest of the cell's
    type-tagged value (nulls and dictionary-encoded, categorical or Enum columns included, so
    pandas, polars and Arrow frames of equal values give equal bytes)."""
    parts = [np.zeros((num_rows, 0), dtype=np.uint8)]
    for array in columns:
        array = combined(storage_of(array))
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        try:
            encoded = pc.dictionary_encode(array)
        except pa.ArrowNotImplementedError:  # lists, structs (kept columns): cell by cell
            cells = b"".join(map(_value_digest, array.to_pylist()))
            parts.append(np.frombuffer(cells, dtype=np.uint8).reshape(-1, _DIGEST_BYTES))
            continue
        distinct = encoded.dictionary.to_pylist()
        table = np.frombuffer(
            b"".join(map(_value_digest, [*distinct, None])), dtype=np.uint8
        ).reshape(-1, _DIGEST_BYTES)
        indices = encoded.indices.fill_null(len(distinct)).to_numpy(zero_copy_only=False)
        parts.append(table[indices.astype(np.int64)])
    return np.ascontiguousarray(np.concatenate(parts, axis=1))


def privatize_columns(
    columns: Mapping[Any, pa.Array | pa.ChunkedArray],
    mechanisms: Mapping[Any, Mechanism],
    *,
    specs: Mapping[Any, Mapping[str, Any]],
    source: RandomSource,
    row_start: int = 0,
    user: Any = None,
    memo: RandomSource | None = None,
) -> dict[Any, pa.ExtensionArray]:
    """The one privatize pipeline: the report columns of one batch of rows.

    ``columns`` holds the batch's columns by name (the privatized ones, and ``user`` when a
    memoizing mechanism needs it), its first row being row ``row_start`` of the whole input: a
    report's randomness is addressed by that global row, so any batching of the input gives the
    same reports. Every frame library calls this, converting its columns to Arrow and the
    result back and nothing else. Each mechanism writes its report columns
    (``mechanism.report_columns``), typed :class:`~frameldp.frames.report_type.ReportType` with
    ``specs[column]`` recorded. Every column is randomized before anything is returned; a
    column of the batch that already holds reports is refused (whatever its frame's schema
    said: a dataset can mix raw and privatized files).
    """
    out: dict[Any, pa.ExtensionArray] = {}
    for column in mechanisms:
        held = metadata_of(columns[column].type)
        if held is not None:  # a batch of reports (a file of a dataset, a Dask partition)
            refuse_reports(column, held)
    if mechanisms:  # reports that cannot fit are refused before any is drawn
        check_report_memory(mechanisms, len(columns[next(iter(mechanisms))]))
    batch = _collected_batch(columns, mechanisms, source, row_start)
    for column, mechanism in mechanisms.items():
        users = None
        if user is not None and memoizes(mechanism):
            users = combined(storage_of(columns[user]))
        with column_context(column):
            produced = mechanism.privatize_column(
                combined(storage_of(columns[column])),
                column=column,
                source=source,
                row_start=row_start,
                users=users,
                user_column=user,
                memo=memo,
            )
        if batch is not None and getattr(mechanism, "collection", None) is not None:
            produced = batch.reports(mechanism, str(column), produced)  # type: ignore[arg-type]
        spec = dict(specs[column])
        if "rows" in spec:  # a whole in-memory release: record which rows it holds
            spec["fingerprint"] = fingerprint_of(list(produced.values()))
        elif spec.get("release"):  # a batch of a release: recorded in this process
            rows = len(columns[column])
            record_drawn(str(spec["release"]), str(column), row_start, rows, produced.values())
        for part, (name, array) in enumerate(produced.items()):
            out[name] = as_reports(array, ReportMetadata(spec, str(column), part))
    return out


def _collected_batch(
    columns: Mapping[Any, pa.Array | pa.ChunkedArray],
    mechanisms: Mapping[Any, Mechanism],
    source: RandomSource,
    row_start: int,
) -> CollectedBatch | None:
    """The batch's draws of its collection (which column each row reports, and the fakes),
    None without one."""
    if not any(getattr(m, "collection", None) for m in mechanisms.values()):
        return None
    num_rows = len(next(iter(columns.values())))
    return CollectedBatch.draw(
        mechanisms,
        source,
        row_start,
        num_rows,
        lambda names: row_content([columns[name] for name in names], num_rows),
    )


def privatize_frame(
    frame: Any,
    mechanisms: Mapping[Any, Mechanism],
    *,
    specs: Mapping[Any, Mapping[str, Any]],
    source: RandomSource,
    row_start: int = 0,
    user: Any = None,
    memo: RandomSource | None = None,
    user_ids: pa.Array | None = None,
) -> Any:
    """:func:`privatize_columns` on an in-memory frame of any library: ``frame`` (rows
    ``row_start, ...`` of the whole input) with each privatized column replaced by its report
    columns. pandas and polars frames, every polars LazyFrame batch and every Dask partition go
    through here; their adapters (:mod:`frameldp.frames.adapters`) convert, nothing else.
    ``user_ids``: the user column as the caller already read it (the very array its people
    were counted and digested from)."""
    adapter = in_memory_adapter_for(frame)
    needed = [*mechanisms, *([] if user is None or user_ids is not None else [user])]
    arrays = {column: adapter.to_arrow(frame, column) for column in needed}
    if user is not None and user_ids is not None:
        arrays[user] = user_ids
    produced = privatize_columns(
        arrays,
        mechanisms,
        specs=specs,
        source=source,
        row_start=row_start,
        user=user,
        memo=memo,
    )
    return adapter.with_arrow(frame, produced)


def statistic_of(
    reports: Sequence[pa.Array | pa.ChunkedArray], mechanism: Mechanism, column: str
) -> Statistic:
    """The additive statistic of one batch of the report columns of ``column``, given in the
    order of ``mechanism.report_columns(column)`` (whatever the frame or file names them)."""
    return mechanism.statistic(named_reports(reports, mechanism, column), column=column)


def named_reports(
    reports: Sequence[pa.Array | pa.ChunkedArray], mechanism: Mechanism, column: str
) -> dict[str, pa.Array]:
    """The report columns of ``column`` (given in the order of
    ``mechanism.report_columns(column)``) under the names the mechanism reads, as storage."""
    names = mechanism.report_columns(column)
    return {name: combined(storage_of(array)) for name, array in zip(names, reports, strict=True)}


def add_statistics(*partials: _Additive) -> _Additive:
    """The statistic of the union of disjoint runs of rows (one column's or a joint one)."""
    total = partials[0]
    for partial in partials[1:]:
        total = total + partial
    return total
