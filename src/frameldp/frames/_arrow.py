"""pyarrow: Tables and RecordBatchReaders, through ``frameldp.ldp(obj)``.

pyarrow has no accessor API, so its objects are reached with ``frameldp.ldp(table)``, which
gives the same methods as ``df.ldp``. Report columns are Arrow columns of the
``frameldp.reports`` extension type (:mod:`frameldp.frames.report_type`), which Parquet files
written by pyarrow keep.

* **Table**: an in-memory frame. :class:`ArrowAdapter` is all it needs; the in-memory engine
  (:class:`~frameldp.frames.in_memory.InMemoryEngine`) privatizes and reduces it as it does a
  pandas or polars frame, with the same reports for the same key.
* **RecordBatchReader**: a stream, read once. ``privatize`` returns a reader that privatizes
  each batch as it is read (rows numbered across batches, memory bounded by a batch), charges
  the ledger once before its first reports leave, and draws its fresh key when it starts (a
  caller's ``key=`` or ``seed=`` is refused: frameldp cannot tell whether the caller read part
  of the reader before, which would number its rows from another row than the first); with
  ``user=`` (whose rows per person are counted first) the stream is read into a table.
  ``debias`` and ``decode`` reduce it batch by batch. Anything else that needs every row
  (``shuffle``, ``discover``, ``unpack``, domain inference) reads it into a table first. A
  reader frameldp has read is refused afterwards, rather than read as empty.

Plumbing only: no formula lives here.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.mechanisms import Mechanism
from frameldp.core.randomness import RandomSource, resolve_source
from frameldp.errors import ParameterError, shown
from frameldp.frames.adapters import register_adapter
from frameldp.frames.engine import Gather, LocalFrame, Privatization, register_engine
from frameldp.frames.executions import SingleExecution
from frameldp.frames.grouping import Grouped, Reduction, grouped_statistics, merge_grouped
from frameldp.frames.in_memory import InMemoryEngine
from frameldp.frames.inputs import check_columns, require_column
from frameldp.frames.lookup import unpack_reports
from frameldp.frames.persons import check_max_rows, refuse_sampling
from frameldp.frames.pipeline import privatize_frame
from frameldp.frames.release import charging, check_budget, plan_release
from frameldp.frames.report_type import (
    ReportMetadata,
    ReportType,
    metadata_of,
    recorded_shuffle,
    storage_of,
    text_of,
)
from frameldp.results.native import Backend

__all__ = ["ArrowAdapter", "ArrowStreamEngine", "StreamRelease"]


def _report_columns(schema: pa.Schema) -> dict[Any, ReportMetadata]:
    found = {field.name: metadata_of(field.type, field.metadata) for field in schema}
    return {name: meta for name, meta in found.items() if meta is not None}


def _plain(array: pa.ChunkedArray, text: bool) -> pa.ChunkedArray:
    """A report column's storage values (``text``: bit vectors in their text form)."""
    storage = storage_of(array)
    if not text or not isinstance(array.type, ReportType):
        return storage
    kind = array.type
    return pa.chunked_array([text_of(chunk, kind) for chunk in storage.chunks])


@register_adapter(pa.Table)
class ArrowAdapter:
    """pyarrow Tables: columns are Arrow already; report columns are of their report type."""

    backend: Backend = "pandas"
    in_memory = True

    def columns(self, frame: pa.Table) -> list[Any]:
        return list(frame.column_names)

    def report_columns(self, frame: pa.Table) -> dict[Any, ReportMetadata]:
        return _report_columns(frame.schema)

    def num_rows(self, frame: pa.Table) -> int:
        return int(frame.num_rows)

    def to_arrow(self, frame: pa.Table, column: Any) -> pa.ChunkedArray:
        names = frame.column_names
        require_column(names, column)
        if names.count(column) > 1:
            raise ParameterError(
                f"column {shown(column)}: the table has {names.count(column)} columns of that "
                "name; rename them first",
                column=column,
            )
        return frame.column(column)

    def from_arrow(self, columns: Mapping[Any, pa.Array]) -> pa.Table:
        return pa.table(dict(columns))

    def storage_view(self, frame: pa.Table, *, text: bool = False) -> pa.Table:
        reports = self.report_columns(frame)
        if not reports:
            return frame
        return self.with_arrow(frame, {name: _plain(frame.column(name), text) for name in reports})

    def with_arrow(self, frame: pa.Table, columns: Mapping[Any, pa.Array]) -> pa.Table:
        out = frame
        for name, array in columns.items():
            if name in out.column_names:
                out = out.set_column(out.column_names.index(name), name, array)
            else:
                out = out.append_column(name, array)
        return out

    def take(self, frame: pa.Table, columns: Sequence[Any], order: NDArray[np.int64]) -> pa.Table:
        return frame.select(list(columns)).take(pa.array(order, pa.int64()))

    def recorded_shuffle(self, frame: pa.Table) -> dict[str, Any]:
        return recorded_shuffle(self.report_columns(frame))

    def unpack(self, frame: pa.Table, column: Any, mechanism: Mechanism) -> pa.Table:
        bits, names = unpack_reports(self.to_arrow(frame, column), mechanism, column)
        return pa.table({name: pa.array(bits[:, i]) for i, name in enumerate(names)})


_READ: weakref.WeakSet[pa.RecordBatchReader] = weakref.WeakSet()
"""Readers frameldp has read (a reader streams once)."""


@register_engine(pa.RecordBatchReader)
class ArrowStreamEngine:
    """A RecordBatchReader: streamed once (see the module docstring)."""

    backend: Backend = "pandas"
    one_machine: str | None = None

    def __init__(self, reader: pa.RecordBatchReader) -> None:
        self._reader = reader
        self._table: pa.Table | None = None

    def _batches(self) -> Iterator[pa.RecordBatch]:
        """The reader's batches, once (from the table read before, if any); a reader read
        before is refused."""
        if self._table is not None:
            return iter(self._table.to_batches())
        if self._reader in _READ:
            raise ParameterError(
                "this RecordBatchReader was read already (a reader streams its batches once); "
                "open the source again, or read it into a table (reader.read_all())"
            )
        _READ.add(self._reader)
        return iter(self._reader)

    def _all(self) -> InMemoryEngine:
        """Every row, read into a table once."""
        if self._table is None:
            batches = list(self._batches())
            self._table = pa.Table.from_batches(batches, schema=self._reader.schema)
        return InMemoryEngine(self._table, ArrowAdapter())

    def columns(self) -> list[Any]:
        return list(self._reader.schema.names)

    def report_columns(self) -> dict[Any, ReportMetadata]:
        return _report_columns(self._reader.schema)

    def recorded_shuffle(self) -> dict[str, Any]:
        return recorded_shuffle(self.report_columns())

    def num_rows(self) -> int:
        return self._all().num_rows()

    def distinct(self, column: Any) -> pa.Array | pa.ChunkedArray:
        return self._all().distinct(column)

    def gather(self, columns: list[Any]) -> LocalFrame:
        return self._all().gather(columns)

    def returned(self, frame: pa.Table) -> pa.RecordBatchReader:
        return frame.to_reader()

    def plain(self, *, text: bool) -> pa.RecordBatchReader:
        adapter = ArrowAdapter()
        empty = self._reader.schema.empty_table()
        schema = adapter.storage_view(empty, text=text).schema
        batches = (
            adapter.storage_view(pa.Table.from_batches([batch]), text=text).to_batches()
            for batch in self._batches()
        )
        return pa.RecordBatchReader.from_batches(schema, (b for part in batches for b in part))

    def unpack(self, column: str, mechanism: Mechanism) -> pa.Table:
        return self._all().unpack(column, mechanism)

    def gatherer(self, names: tuple[str, ...], column: str) -> Gather:
        return self._all().gatherer(names, column)

    def reduce(self, reduction: Reduction, by: tuple[str, ...]) -> Grouped:
        """Batch by batch: memory is bounded by a batch and the statistics."""
        read = list(dict.fromkeys((*reduction.names, *by)))
        for name in read:
            require_column(self.columns(), name)
        total = Grouped()
        empty = True
        for batch in self._batches():
            arrays = {name: batch.column(name) for name in read}
            total = merge_grouped(total, grouped_statistics(arrays, reduction, by))
            empty = False
        if empty and not by:  # no rows at all: the empty statistic
            table = self._reader.schema.empty_table()
            total = grouped_statistics({n: table.column(n) for n in read}, reduction, by)
        return total

    def privatize(self, request: Privatization) -> pa.RecordBatchReader:
        """A reader that privatizes each batch as it is read (see the module docstring).
        ``key=`` and ``seed=`` are refused: the reader may have been read in part before, and
        its rows would then be numbered from another row than the input's first, giving
        other people's rows the noise a full run gives these."""
        if request.key is not None or request.seed is not None:
            raise ParameterError(
                "key= and seed= need rows numbered from the input's first row, and a "
                "RecordBatchReader may have been read in part already: privatize it with a "
                "fresh key (the default), or privatize a Table or a DuckDB relation with the key"
            )
        if request.user is not None:  # people are counted over every row first
            return self._all().privatize(request).to_reader()
        stream = StreamRelease(self._reader.schema, self._batches(), request)
        holder: list[pa.RecordBatchReader] = []

        def privatized() -> Iterator[pa.RecordBatch]:
            _READ.add(holder[0])  # once the caller reads it, frameldp reads it no more
            yield from stream.batches(charge=True)

        holder.append(pa.RecordBatchReader.from_batches(stream.schema, privatized()))
        return holder[0]


class StreamRelease:
    """One release over a stream of Arrow batches: checked and planned now, drawn when its
    batches are read (rows numbered across batches; a fresh key drawn when reading starts, or
    the caller's; a fresh-key stream read once)."""

    def __init__(
        self, schema: pa.Schema, batches: Iterator[pa.RecordBatch], request: Privatization
    ) -> None:
        refuse_sampling(request.contributions, None, request.max_rows_per_user, "a stream")
        check_max_rows(request.max_rows_per_user, None)  # a bound without people: refused
        self.request = request
        self.mechanisms = dict(request.mechanisms)
        columns = list(schema.names)
        check_columns(columns, self.mechanisms, reports=_report_columns(schema))
        key, seed = request.key, request.seed
        self._keyed = None if key is None and seed is None else resolve_source(key, seed)
        self.release = plan_release(
            columns,
            self.mechanisms,
            source=self._keyed or RandomSource.fresh(),
            user=None,
            memo_key=request.memo_key,
            fresh_keys=("on a stream", "its read"),
        )
        check_budget(request.ledger, request.budget, self.release)
        empty = schema.empty_table()
        self.schema = privatize_frame(
            empty, self.mechanisms, specs=self.release.specs, source=RandomSource.fresh()
        ).schema
        self._once = (
            None if self._keyed is not None else SingleExecution(self.release.release, "a stream")
        )
        self._input = batches

    def charged(self) -> Any:
        """The ledger charge of this release (a context manager)."""
        return charging(self.request.ledger, self.request.budget, self.release)

    def batches(self, *, charge: bool) -> Iterator[pa.RecordBatch]:
        """The privatized batches; with ``charge``, the ledger is charged before the first
        reports leave (an empty stream is charged at its end)."""
        source = self._keyed or RandomSource.fresh()  # drawn when the stream starts
        row, started = 0, False
        for batch in self._input:
            if not batch.num_rows:
                continue
            if self._once is not None and not started:
                self._once.claim()
            table = pa.Table.from_batches([batch])
            out = privatize_frame(
                table, self.mechanisms, specs=self.release.specs, source=source, row_start=row
            )
            row += batch.num_rows
            if charge and not started:
                with self.charged():
                    pass  # recorded now: the first reports leave next
            started = True
            yield from out.to_batches()
        if charge and not started:
            with self.charged():
                pass
