"""Files of the command line: streaming readers, atomic writers, self-describing report files.

A report file says how it was made. Parquet holds it in its key-value metadata:

* ``frameldp``: JSON ``{"format": 1, "mechanisms": {column: spec}, "guarantee": {...},
  "hex": [...]}``, the mechanism specs (enough to debias every report column) and the
  per-person guarantee of the release;
* ``PANDAS_ATTRS``: ``{"frameldp": {"mechanisms": ...}}``, so that ``pd.read_parquet`` gives a
  frame whose ``.ldp`` knows its mechanisms.

A CSV file cannot hold metadata: the same JSON is written beside it, in ``OUT.frameldp.json``,
and its RAPPOR reports are hex strings (listed under ``"hex"``). Outputs are written to a
temporary file in the target's directory and renamed once complete, so a failed or interrupted
run leaves no partial output.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from frameldp.accounting import PrivacyGuarantee
from frameldp.core.mechanisms import mechanism_from_spec
from frameldp.core.randomness import KEY_BYTES
from frameldp.errors import ParameterError
from frameldp.frames._batches import from_hex, to_hex
from frameldp.frames._common import METADATA_KEY, SHUFFLED_KEY

__all__ = [
    "FORMAT",
    "ReportFile",
    "ReportWriter",
    "batches",
    "read_key",
    "read_report_file",
    "sidecar",
]

FORMAT = 1
"""Version of the ``frameldp`` metadata written into report files."""

SUFFIXES = (".csv", ".parquet")


def file_kind(path: Path, role: str) -> str:
    """``"csv"`` or ``"parquet"`` from the suffix, else a clear error."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ParameterError(f"{role} {str(path)!r}: expected a .csv or .parquet file")
    return suffix[1:]


def sidecar(path: Path) -> Path:
    """Where the metadata of a CSV report file lives."""
    return path.with_name(path.name + ".frameldp.json")


def read_key(key_file: Path | None) -> bytes | None:
    """The 32-byte secret key held in ``key_file`` (None when no file is given)."""
    if key_file is None:
        return None
    key = key_file.read_bytes()
    if len(key) != KEY_BYTES:
        raise ParameterError(f"--key-file {key_file}: a key is {KEY_BYTES} bytes, got {len(key)}")
    return key


# ------------------------------------------------------------------------------------- reading


@dataclass
class Source:
    """An input file read batch by batch: its schema, its row count when the file says it."""

    path: Path
    schema: pa.Schema
    rows: int | None


def open_source(path: Path, *, strings: Sequence[str] | None = None) -> Source:
    """The schema (and, for Parquet, the row count) of an input file, read cheaply."""
    kind = file_kind(path, "input")
    if not path.is_file():
        raise ParameterError(f"input {str(path)!r}: no such file")
    try:
        if kind == "parquet":
            metadata = pq.read_metadata(path)
            return Source(path, metadata.schema.to_arrow_schema(), metadata.num_rows)
        with _csv_reader(path, None, strings, 1 << 16) as reader:
            return Source(path, reader.schema, None)
    except (OSError, pa.ArrowException) as error:
        message = " ".join(str(error).split())
        raise ParameterError(f"input {str(path)!r}: cannot read it as {kind}: {message}") from None


def _csv_header(path: Path) -> list[str]:
    """Column names of a CSV file (its first line)."""
    options = pacsv.ReadOptions(block_size=1 << 16)
    with pacsv.open_csv(path, read_options=options) as reader:
        return list(reader.schema.names)


@contextlib.contextmanager
def _csv_reader(
    path: Path,
    columns: Sequence[str] | None,
    strings: Sequence[str] | None,
    block_size: int,
    *,
    keep_empty_lines: bool = False,
) -> Iterator[pacsv.CSVStreamingReader]:
    """A streaming CSV reader; columns in ``strings`` (``None``: every column) are text."""
    textual = _csv_header(path) if strings is None else strings
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=block_size),
        parse_options=pacsv.ParseOptions(ignore_empty_lines=not keep_empty_lines),
        convert_options=pacsv.ConvertOptions(
            include_columns=list(columns) if columns is not None else None,
            column_types=dict.fromkeys(textual, pa.string()),
            strings_can_be_null=True,
        ),
    )
    try:
        yield reader
    finally:
        reader.close()


def batches(
    path: Path,
    columns: Sequence[str],
    *,
    chunk_rows: int,
    strings: Sequence[str] | None = None,
    keep_empty_lines: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The ``columns`` of a file, ``chunk_rows`` rows at a time (CSV: about as many).

    Memory is bounded by one batch (and, for Parquet, one row group of the named columns).
    CSV columns in ``strings`` (default: all of them) are read as text, so a column's type never
    depends on where a batch starts. A report file's lone null cell is an empty line:
    ``keep_empty_lines`` reads it as a row. A file without rows gives one empty batch, so every
    reader sees the columns' types.
    """
    if file_kind(path, "input") == "parquet":
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        chunks = parquet.iter_batches(batch_size=chunk_rows, columns=list(columns))
        yield from _at_least_one(chunks, schema, columns)
        return
    # pyarrow's CSV reader reads blocks of bytes: aim at chunk_rows rows of about 64 bytes.
    block = max(1 << 20, min(chunk_rows * 64, 1 << 30))
    with _csv_reader(path, columns, strings, block, keep_empty_lines=keep_empty_lines) as reader:
        chunks = (batch.select(list(columns)) for batch in reader)
        yield from _at_least_one(chunks, reader.schema, columns)


def _at_least_one(
    chunks: Iterator[pa.RecordBatch], schema: pa.Schema, columns: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """``chunks``, or one empty batch of ``columns`` when there are none."""
    empty = True
    for batch in chunks:
        empty = False
        yield batch
    if empty:
        selected = pa.schema([schema.field(column) for column in columns])
        yield pa.RecordBatch.from_pylist([], schema=selected)


# ------------------------------------------------------------------------------------- writing


def report_metadata(
    specs: Mapping[str, Any], guarantee: PrivacyGuarantee, hex_columns: Sequence[str] = ()
) -> dict[str, Any]:
    """The JSON a report file carries (see the module docstring)."""
    return {
        "format": FORMAT,
        "mechanisms": dict(specs),
        "guarantee": guarantee.to_dict(),
        "hex": list(hex_columns),
    }


@dataclass
class ReportWriter:
    """Writes release batches to a temporary file (Parquet or CSV) with the report metadata.

    RAPPOR reports are fixed-width binary in Parquet and hex strings in CSV.
    """

    path: Path
    kind: str
    metadata: dict[str, Any]
    rows: int = 0
    _writer: Any = field(default=None, repr=False)

    def write(self, batch: pa.RecordBatch) -> None:
        """Append one batch of the release."""
        if self.kind == "csv":
            batch = self._as_text(batch)
        if self._writer is None:
            self._writer = self._open(batch.schema)
        self._writer.write_batch(batch)
        self.rows += batch.num_rows

    def _as_text(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """CSV cells: RAPPOR reports as hex, k-RR labels decoded from their dictionary."""
        arrays = []
        for name, array in zip(batch.schema.names, batch.columns, strict=True):
            if name in self.metadata["hex"]:
                array = to_hex(array)
            elif pa.types.is_dictionary(array.type):
                array = array.dictionary_decode()
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)

    def _open(self, schema: pa.Schema) -> Any:
        if self.kind == "csv":
            return pacsv.CSVWriter(self.path, schema)
        attrs = {METADATA_KEY: {"mechanisms": self.metadata["mechanisms"]}}
        schema = schema.with_metadata(
            {
                METADATA_KEY.encode(): json.dumps(self.metadata).encode(),
                b"PANDAS_ATTRS": json.dumps(attrs).encode(),
            }
        )
        return pq.ParquetWriter(self.path, schema)

    def close(self) -> None:
        """Finish the file (every input gives at least one batch, maybe empty: see
        :func:`batches`)."""
        self._writer.close()


# ------------------------------------------------------------------------------ report files


@dataclass(frozen=True)
class ReportFile:
    """A stored report file and what it says about itself."""

    path: Path
    kind: str
    specs: dict[str, dict[str, Any]]
    guarantee: PrivacyGuarantee | None
    hex_columns: tuple[str, ...]
    shuffled: dict[str, Any]

    @property
    def rows(self) -> int | None:
        """Number of reports, when the file says it (Parquet) without being read."""
        return pq.read_metadata(self.path).num_rows if self.kind == "parquet" else None

    def batches(self, columns: Sequence[str], *, chunk_rows: int) -> Iterator[pa.RecordBatch]:
        """Batches of ``columns``, RAPPOR hex strings (CSV) turned back into binary reports."""
        strings = [c for c in columns if self.kind == "csv" and self._textual(c)]
        chunks = batches(
            self.path, columns, chunk_rows=chunk_rows, strings=strings, keep_empty_lines=True
        )
        for batch in chunks:
            if not self.hex_columns:
                yield batch
                continue
            arrays = [
                from_hex(array, mechanism_from_spec(self.specs[name]).num_bits, name)
                if name in self.hex_columns
                else array
                for name, array in zip(batch.schema.names, batch.columns, strict=True)
            ]
            yield pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)

    def _textual(self, column: str) -> bool:
        """Whether a CSV column holds text: hex reports, cohorts no, labels when the domain's
        categories are strings (other domains are read as the values CSV parsing gives)."""
        if column in self.hex_columns:
            return True
        categories = self.specs.get(column, {}).get("domain", {}).get("categories")
        return categories is not None and all(isinstance(c, str) for c in categories)


def read_report_file(path: Path) -> ReportFile:
    """Open a report file and read its metadata (Parquet key-value metadata, or the JSON beside
    a CSV file). A Parquet file written by pandas from a privatized frame also works."""
    kind = file_kind(path, "reports")
    if not path.is_file():
        raise ParameterError(f"reports {str(path)!r}: no such file")
    if kind == "parquet":
        metadata = pq.read_schema(path).metadata or {}
        # Written by pandas (to_parquet of a privatized or shuffled frame): its attrs.
        attrs = json.loads(metadata.get(b"PANDAS_ATTRS", b"{}")).get(METADATA_KEY, {})
        if METADATA_KEY.encode() in metadata:
            data = json.loads(metadata[METADATA_KEY.encode()])
        else:
            data = {"mechanisms": attrs.get("mechanisms", {})}
        data["shuffled"] = attrs.get(SHUFFLED_KEY, {})
    else:
        beside = sidecar(path)
        data = json.loads(beside.read_text()) if beside.is_file() else {}
    if data.get("format", FORMAT) > FORMAT:
        raise ParameterError(
            f"reports {str(path)!r}: written by a newer frameldp (metadata format "
            f"{data['format']}); upgrade frameldp to read it"
        )
    specs = data.get("mechanisms") or {}
    if not specs:
        where = "metadata" if kind == "parquet" else f"metadata file {str(sidecar(path))!r}"
        raise ParameterError(
            f"reports {str(path)!r}: no frameldp {where}; write report files with "
            "`frameldp privatize` (or from a privatized frame with to_parquet)"
        )
    guarantee = PrivacyGuarantee.from_dict(data["guarantee"]) if data.get("guarantee") else None
    shuffled = data.get("shuffled") or {}
    return ReportFile(path, kind, specs, guarantee, tuple(data.get("hex", ())), shuffled)
