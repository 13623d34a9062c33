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

import contextlib
import functools
import json
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar, cast

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from frameldp.core.mechanisms import Mechanism
from frameldp.core.report_memory import check_report_memory
from frameldp.errors import FrameLDPError, ParameterError, shown
from frameldp.frames._arrow import ArrowAdapter, StreamRelease
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
from frameldp.results.native import Backend

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


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _duckdb_errors(method: _Method) -> _Method:
    """A DuckDB error while the relation runs (a missing file, a closed connection, a value it
    cannot cast), also as pyarrow hands it on from DuckDB's stream, becomes a frameldp error."""

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except (duckdb.Error, OSError, pa.ArrowException) as error:
            text = str(error).strip() or type(error).__name__
            raise ParameterError(
                f"DuckDB could not run the relation: {shown(text.splitlines()[0], 160)}"
            ) from None

    return cast(_Method, run)


@register_engine(duckdb.DuckDBPyRelation)
class DuckDBEngine:
    """A DuckDB relation (see the module docstring)."""

    backend: Backend = "pandas"
    one_machine: str | None = None

    def __init__(self, relation: duckdb.DuckDBPyRelation) -> None:
        self._relation = relation

    @_duckdb_errors
    def columns(self) -> list[Any]:
        columns = list(self._relation.columns)
        for i, name in enumerate(columns):
            if name in columns[:i]:
                raise ParameterError(
                    f"column {shown(name)}: the relation has {columns.count(name)} columns of "
                    "that name; rename them first",
                    column=name,
                )
        return columns

    @functools.cached_property
    def _reports(self) -> dict[Any, ReportMetadata]:
        return _file_reports(self._relation)

    @_duckdb_errors
    def report_columns(self) -> dict[Any, ReportMetadata]:
        return dict(self._reports)

    def recorded_shuffle(self) -> dict[str, Any]:
        return recorded_shuffle(self.report_columns())

    @_duckdb_errors
    def num_rows(self) -> int:
        return int(self._relation.aggregate("count(*)").fetchall()[0][0])

    @_duckdb_errors
    def distinct(self, column: Any) -> pa.Array | pa.ChunkedArray:
        require_column(self.columns(), column)
        return self._relation.select(_quoted(column)).distinct().to_arrow_table().column(0)

    def _selected(self, names: Sequence[Any]) -> duckdb.DuckDBPyRelation:
        for name in names:
            require_column(self.columns(), name)
        return self._relation.select(*(_quoted(n) for n in names))

    def _typed(self, batch: pa.Table | pa.RecordBatch) -> pa.Table:
        """A batch of the relation with its report columns typed by their metadata."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        reports = self.report_columns()
        for i, name in enumerate(table.column_names):
            if name in reports:
                meta = reports[name]
                chunks = [as_reports(chunk, meta) for chunk in table.column(i).chunks]
                kind = as_reports(pa.array([], table.schema.field(i).type), meta).type
                table = table.set_column(i, name, pa.chunked_array(chunks, kind))
        return table

    def _read(self, names: Sequence[Any]) -> pa.Table:
        """``names`` of every row, report columns typed."""
        return self._typed(self._selected(names).to_arrow_table())

    @_duckdb_errors
    def gather(self, columns: list[Any]) -> LocalFrame:
        return LocalFrame(self._read(columns), ArrowAdapter())

    def returned(self, frame: pa.Table) -> pa.Table:
        return frame

    @_duckdb_errors
    def plain(self, *, text: bool) -> pa.Table:
        """An Arrow table: DuckDB holds the storage values already; ``text`` writes bit
        vectors in their text form."""
        return ArrowAdapter().storage_view(self._read(self.columns()), text=text)

    @_duckdb_errors
    def unpack(self, column: str, mechanism: Mechanism) -> pa.Table:
        return ArrowAdapter().unpack(self._read([column]), column, mechanism)

    @_duckdb_errors
    def gatherer(self, names: tuple[str, ...], column: str) -> Gather:
        return InMemoryEngine(self._read(list(names)), ArrowAdapter()).gatherer(names, column)

    def _batches(self, names: Sequence[Any]) -> Generator[pa.RecordBatch, None, None]:
        """The relation's batches of ``names``, report columns typed, read to the end (DuckDB
        runs one query per connection at a time). Closing the generator early (an error in a
        batch) closes the reader, which frees the connection for the next query."""
        reader = self._selected(names).to_arrow_reader(BATCH_ROWS)
        try:
            for batch in reader:
                yield from self._typed(batch).to_batches()
        finally:
            reader.close()

    def _schema(self, names: Sequence[Any]) -> pa.Schema:
        return self._typed(self._selected(names).limit(0).to_arrow_table()).schema

    @_duckdb_errors
    def reduce(self, reduction: Reduction, by: tuple[str, ...]) -> Grouped:
        """A ``GROUP BY`` count of the distinct reports where there are few; Arrow batches
        otherwise (see the module docstring)."""
        read = list(dict.fromkeys((*reduction.names, *by)))
        pushed = self._pushed_down(reduction, by, read)
        if pushed is not None:
            return pushed
        total = Grouped()
        with contextlib.closing(self._batches(read)) as batches:
            for batch in batches:
                arrays = {name: batch.column(name) for name in read}
                total = merge_grouped(total, grouped_statistics(arrays, reduction, by))
        if not by and not total.keys:  # no rows at all: the empty statistic
            empty = self._schema(read).empty_table()
            total = grouped_statistics({n: empty.column(n) for n in read}, reduction, by)
        return total

    def _pushed_down(
        self, reduction: Reduction, by: tuple[str, ...], read: list[Any]
    ) -> Grouped | None:
        """The grouped statistics from DuckDB's count of each distinct (reports, keys) row;
        None when the reports are not stored as few distinct values, or hold a value the
        mechanism refuses (the batch path then names its row)."""
        schema = self._selected(read).limit(0).to_arrow_table().schema
        if not all(_low_cardinality(schema.field(n).type) for n in reduction.names):
            return None
        listed = ", ".join(_quoted(n) for n in read)
        counted = self._relation.aggregate(f"{listed}, count(*) AS {_COUNT}", listed)
        rows = counted.limit(PUSHDOWN_ROWS + 1).to_arrow_table()
        if not rows.num_rows or rows.num_rows > PUSHDOWN_ROWS:
            return None
        counts = rows.column(_COUNT).to_numpy()
        arrays: dict[str, Any] = {name: rows.column(name) for name in read}
        arrays[_ROW] = pa.array(range(rows.num_rows), pa.int64())
        try:
            each = grouped_statistics(arrays, reduction, (*by, _ROW))  # one row per group
        except FrameLDPError:
            return None
        assert each.statistics is not None  # rows were counted
        distinct = [int(key[-1]) for key in each.keys]
        repeated = each.statistics.repeated(np.asarray(counts, dtype=np.int64)[distinct])
        keys = list(dict.fromkeys(key[:-1] for key in each.keys))
        index = {key: position for position, key in enumerate(keys)}
        positions = np.array([index[key[:-1]] for key in each.keys], dtype=np.int64)
        return Grouped(keys, repeated.summed_by(positions, len(keys)), each.types[:-1])

    @_duckdb_errors
    def privatize(self, request: Privatization) -> pa.Table:
        """The reports as a pyarrow Table, charged once they all exist (see the module
        docstring)."""
        columns = self.columns()
        # Every batch's reports are held at once in the returned table: all rows must fit.
        check_report_memory(request.mechanisms, self.num_rows())
        if request.user is not None:  # each person's rows are counted over every row first
            table = self._read(columns)
            return cast(pa.Table, InMemoryEngine(table, ArrowAdapter()).privatize(request))
        with contextlib.closing(self._batches(columns)) as batches:
            stream = StreamRelease(self._schema(columns), batches, request)
            table = pa.Table.from_batches(list(stream.batches(charge=False)), stream.schema)
        with stream.charged():
            return table


def _file_reports(relation: duckdb.DuckDBPyRelation) -> dict[Any, ReportMetadata]:
    """The report columns the relation's Parquet files record in their Arrow schema, when the
    relation is a scan of those files and nothing else (see :func:`_bare_scan`); every file
    must record the same. Any other relation records none (its mechanism is named)."""
    columns = list(relation.columns)
    if "filename" in columns or not _bare_scan(relation):
        return {}
    try:
        files = [row[0] for row in relation.select("filename").distinct().fetchall()]
    except duckdb.Error:  # SQL text: its scan's filename column is not reachable
        return {}
    found: dict[Any, ReportMetadata] = {}
    for i, path in enumerate(sorted(str(f) for f in files)):
        schema = pq.read_schema(path)
        recorded = {
            field.name: meta
            for field in schema
            if field.name in columns and (meta := metadata_of(field.type, field.metadata))
        }
        if i and recorded != found:
            differ = sorted(
                str(name) for name in {*recorded, *found} if recorded.get(name) != found.get(name)
            )
            raise ParameterError(
                f"the relation reads files of different releases ({shown(path, 80)} records "
                f"another release of column {shown(differ[0])} than the first file); debias "
                "each release on its own"
            )
        found = recorded
    return found


_SCANS = {"parquet_scan", "read_parquet"}


def _bare_scan(relation: duckdb.DuckDBPyRelation) -> bool:
    """Whether the relation is ``SELECT *`` of one Parquet scan, with a ``WHERE`` filter at
    most (DuckDB's own parser says): then each column holds the values of the file's column
    of that name, and the file's metadata describes them. A projection may rename or rebuild
    a column, a join or union bring other rows, a grouping other values: none is trusted."""
    try:
        text = relation.sql_query()
        parsed = duckdb.execute("SELECT json_serialize_sql(?)", [text]).fetchall()[0][0]
        node = json.loads(parsed)["statements"][0]["node"]
    except (duckdb.Error, ValueError, KeyError, IndexError, TypeError):
        return False
    (star, *others) = node.get("select_list") or [{}]
    plain_star = (
        star.get("class") == "STAR"
        and not others
        and not star.get("columns")
        and star.get("expr") is None
        and not any(star.get(k) for k in ("exclude_list", "replace_list", "rename_list"))
        and not star.get("qualified_exclude_list")
    )
    source = node.get("from_table") or {}
    function = (source.get("function") or {}).get("function_name")
    return bool(
        node.get("type") == "SELECT_NODE"
        and plain_star
        and source.get("type") == "TABLE_FUNCTION"
        and function in _SCANS
        and not node.get("modifiers")
        and not (node.get("cte_map") or {}).get("map")
        and not node.get("group_expressions")
        and not node.get("group_sets")
        and node.get("having") is None
        and node.get("sample") is None
        and node.get("qualify") is None
    )
