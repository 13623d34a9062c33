"""DuckDB relations, through ``frameldp.ldp(relation)``.

DuckDB is a single-machine SQL engine; a relation is a query, run when it is read. DuckDB has
no column type that could carry a mechanism (it reads Arrow extension types as their storage
and writes Parquet without them), so:

* **privatize** streams the relation's Arrow batches through the stream engine
  (:class:`~frameldp.frames._arrow.ArrowStreamEngine`: rows numbered across batches, one
  fresh key per run, the ledger charged once before the first reports exist) and returns the
  reports as a pyarrow **Table**, whose report columns keep their type. DuckDB queries such a
  table in place (``duckdb.sql("select ... from reports")``), and pyarrow writes it to
  Parquet with its types (``pq.write_table``), which relations read from that file find
  again. Rows are numbered in the relation's result order: DuckDB keeps the order of its
  sources for scans, filters and projections; with ``key=``, give a relation that joins or
  aggregates an ``ORDER BY``, so that a re-run numbers the same rows alike. With ``user=``
  the relation is read into memory, as each person's rows are counted first.
* **The mechanism of a report column** is read from the Arrow schema of the Parquet files the
  relation reads (found with DuckDB's ``filename`` column), where a library that keeps Arrow
  extension types wrote it; every file must record the same release. Otherwise it is named:
  ``debias(column, mechanism)``.
* **debias** pushes the additive reduction down to DuckDB where the report storage allows:
  for reports held as integers or labels (k-RR, Hadamard response), one ``GROUP BY`` count of
  the distinct reports (and group keys) is read, and each distinct report's statistic is
  counted that many times (:meth:`~frameldp.core.mechanisms.Statistic.repeated`). Reports of
  many distinct values (bit vectors, local hashing's seeded pairs) are reduced from the
  relation's Arrow batches, batch by batch.

Plumbing only: no formula lives here.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any, cast

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from frameldp.core.mechanisms import Mechanism
from frameldp.errors import ParameterError, shown
from frameldp.frames._arrow import ArrowAdapter, ArrowStreamEngine
from frameldp.frames.engine import Gather, LocalFrame, Privatization, register_engine
from frameldp.frames.grouping import Grouped, Reduction, grouped_statistics, merge_grouped
from frameldp.frames.in_memory import InMemoryEngine
from frameldp.frames.inputs import require_column
from frameldp.frames.report_type import (
    ReportMetadata,
    as_reports,
    metadata_of,
    recorded_shuffle,
)
from frameldp.frames.table import Backend

__all__ = ["PUSHDOWN_ROWS", "DuckDBEngine"]

BATCH_ROWS = 1 << 17
"""Rows of each Arrow batch read from a relation."""

PUSHDOWN_ROWS = 1 << 14
"""The most distinct (report, group) rows a ``GROUP BY`` pushdown reads; a reduction with
more is read as Arrow batches instead."""

_COUNT = "__frameldp_count"
_ROW = "__frameldp_row"


def _quoted(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _low_cardinality(kind: pa.DataType) -> bool:
    """Report storage whose distinct values are few (a domain's labels or indices)."""
    return bool(
        pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)
    )


@register_engine(duckdb.DuckDBPyRelation)
class DuckDBEngine:
    """A DuckDB relation (see the module docstring)."""

    backend: Backend = "pandas"
    one_machine: str | None = None

    def __init__(self, relation: duckdb.DuckDBPyRelation) -> None:
        self._relation = relation

    def _query(self, action: Any) -> Any:
        """Run a DuckDB action; a DuckDB error becomes a frameldp error (the relation's own
        query failed: a missing file, a type it cannot read)."""
        try:
            return action()
        except duckdb.Error as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
            raise ParameterError(
                f"DuckDB could not run the relation: {shown(first, 160)}"
            ) from None

    def columns(self) -> list[Any]:
        return list(self._relation.columns)

    @functools.cached_property
    def _reports(self) -> dict[Any, ReportMetadata]:
        return _file_reports(self._relation)

    def report_columns(self) -> dict[Any, ReportMetadata]:
        return dict(self._reports)

    def recorded_shuffle(self) -> dict[str, Any]:
        return recorded_shuffle(self.report_columns())

    def num_rows(self) -> int:
        return int(self._query(lambda: self._relation.aggregate("count(*)").fetchall())[0][0])

    def distinct(self, column: Any) -> pa.Array | pa.ChunkedArray:
        require_column(self.columns(), column)
        values = self._relation.select(_quoted(column)).distinct()
        return cast(pa.Table, self._query(values.to_arrow_table)).column(0)

    def _typed(self, names: Sequence[Any]) -> pa.Table:
        """``names`` of every row as an Arrow table, report columns typed by their metadata."""
        for name in names:
            require_column(self.columns(), name)
        chosen = self._relation.select(*(_quoted(n) for n in names)) if names else self._relation
        table = cast(pa.Table, self._query(chosen.to_arrow_table))
        reports = self.report_columns()
        for i, name in enumerate(table.column_names):
            if name in reports:
                typed = [as_reports(chunk, reports[name]) for chunk in table.column(i).chunks]
                kind = typed[0].type if typed else as_reports(pa.array([]), reports[name]).type
                table = table.set_column(i, name, pa.chunked_array(typed, kind))
        return table

    def gather(self, columns: list[Any]) -> LocalFrame:
        return LocalFrame(self._typed(columns), ArrowAdapter())

    def returned(self, frame: pa.Table) -> pa.Table:
        return frame

    def plain(self, *, text: bool) -> pa.Table:
        """An Arrow table: DuckDB holds the storage values already; ``text`` writes bit
        vectors in their text form."""
        return ArrowAdapter().storage_view(self._typed(self.columns()), text=text)

    def unpack(self, column: str, mechanism: Mechanism) -> pa.Table:
        return ArrowAdapter().unpack(self._typed([column]), column, mechanism)

    def gatherer(self, names: tuple[str, ...], column: str) -> Gather:
        return InMemoryEngine(self._typed(list(names)), ArrowAdapter()).gatherer(names, column)

    def _batches(self, names: Sequence[Any]) -> Iterator[pa.RecordBatch]:
        """The relation's batches of ``names``, read to the end (DuckDB runs one query per
        connection at a time)."""
        chosen = self._relation.select(*(_quoted(n) for n in names))
        reader = self._query(lambda: chosen.to_arrow_reader(BATCH_ROWS))
        while True:
            try:
                batch = self._query(reader.read_next_batch)
            except StopIteration:
                return
            yield batch

    def reduce(self, reduction: Reduction, by: tuple[str, ...]) -> Grouped:
        """A ``GROUP BY`` count of the distinct reports where there are few; Arrow batches
        otherwise (see the module docstring)."""
        read = list(dict.fromkeys((*reduction.names, *by)))
        for name in read:
            require_column(self.columns(), name)
        pushed = self._pushed_down(reduction, by, read)
        if pushed is not None:
            return pushed
        total = Grouped()
        for batch in self._batches(read):
            arrays = {name: batch.column(name) for name in read}
            total = merge_grouped(total, grouped_statistics(arrays, reduction, by))
        if not by and () not in total.statistics:  # no rows at all: the empty statistic
            empty = self._relation.select(*(_quoted(n) for n in read)).limit(0)
            table = cast(pa.Table, self._query(empty.to_arrow_table))
            total = grouped_statistics({n: table.column(n) for n in read}, reduction, by)
        return total

    def _pushed_down(
        self, reduction: Reduction, by: tuple[str, ...], read: list[Any]
    ) -> Grouped | None:
        """The grouped statistics from DuckDB's count of each distinct (reports, keys) row;
        None when the reports are not stored as few distinct values."""
        empty = cast(
            pa.Table,
            self._query(self._relation.select(*(_quoted(n) for n in read)).limit(0).to_arrow_table),
        )
        if not all(_low_cardinality(empty.schema.field(n).type) for n in reduction.names):
            return None
        listed = ", ".join(_quoted(n) for n in read)
        counted = self._relation.aggregate(f"{listed}, count(*) AS {_COUNT}", listed)
        rows = cast(pa.Table, self._query(counted.limit(PUSHDOWN_ROWS + 1).to_arrow_table))
        if rows.num_rows > PUSHDOWN_ROWS:
            return None
        if rows.num_rows == 0:
            return grouped_statistics({n: empty.column(n) for n in read}, reduction, by)
        counts = rows.column(_COUNT).to_numpy()
        arrays: dict[str, Any] = {name: rows.column(name) for name in read}
        arrays[_ROW] = pa.array(range(rows.num_rows), pa.int64())
        each = grouped_statistics(arrays, reduction, (*by, _ROW))  # one row per group
        statistics: dict[Any, Any] = {}
        for key, statistic in each.statistics.items():
            repeated = cast(Any, statistic).repeated(int(counts[key[-1]]))
            found = statistics.get(key[:-1])
            statistics[key[:-1]] = repeated if found is None else found + repeated
        return Grouped(statistics, each.types[:-1])

    def privatize(self, request: Privatization) -> pa.Table:
        """The reports as a pyarrow Table (see the module docstring)."""
        if request.user is not None:  # each person's rows are counted over every row first
            table = self._typed(self.columns())
            return cast(pa.Table, InMemoryEngine(table, ArrowAdapter()).privatize(request))
        schema = cast(pa.Table, self._query(self._relation.limit(0).to_arrow_table)).schema
        reader = pa.RecordBatchReader.from_batches(schema, self._batches(self.columns()))
        released = ArrowStreamEngine(reader).privatize(request)
        return released.read_all()


def _file_reports(relation: duckdb.DuckDBPyRelation) -> dict[Any, ReportMetadata]:
    """The report columns the relation's Parquet files record in their Arrow schema, for the
    relation's columns of those names; every file must record the same. A relation that reads
    no Parquet file (or has a column named ``filename`` of its own) records none."""
    columns = list(relation.columns)
    if "filename" in columns:
        return {}
    try:
        files = [row[0] for row in relation.select("filename").distinct().fetchall()]
    except duckdb.Error:  # no file scan under this relation
        return {}
    found: dict[Any, ReportMetadata] = {}
    for i, path in enumerate(sorted(str(f) for f in files if f is not None)):
        try:
            schema = pq.read_schema(path)
        except (OSError, pa.ArrowException):
            return {}  # not a Parquet file (a CSV scan): nothing is recorded
        recorded = {
            field.name: meta
            for field in schema
            if field.name in columns and (meta := metadata_of(field.type, field.metadata))
        }
        if i and recorded != found:
            raise ParameterError(
                f"the relation reads files of different releases ({shown(path, 80)} records "
                "other report columns than the first file); debias each release on its own"
            )
        found = recorded
    return found
