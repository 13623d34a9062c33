"""Files of the command line: streaming readers, atomic writers, self-describing report files.

A report file says how it was made. Parquet holds it in its key-value metadata:

* ``frameldp``: JSON ``{"format": 1, "mechanisms": {column: spec}, "guarantee": {...},
  "hex": [...]}``: the mechanism specs (enough to debias every report column) and the
  per-person guarantee of the release (marked ``"seeded"`` for a ``--seed`` run); a shuffled
  file adds ``"shuffled"`` (:func:`frameldp.frames.shuffling.shuffle_record`);
* ``PANDAS_ATTRS``: ``{"frameldp": {"mechanisms": ..., "shuffled": ...}}``, so that
  ``pd.read_parquet`` gives a frame whose ``.ldp`` knows its mechanisms.

A CSV file cannot hold metadata: the same JSON is written beside it, in ``OUT.frameldp.json``
(the *sidecar*), and its RAPPOR reports are hex strings (listed under ``"hex"``). The sidecar is
bound to its CSV: it records the CSV's size and SHA-256 (``"csv"``), and readers refuse a CSV
whose sidecar describes other bytes, so a CSV is never read with another run's metadata.
:class:`StagedOutput` replaces a pair so that every state a reader can meet is consistent.

Outputs are written to temporary files in the target's directory (:mod:`frameldp._atomic`) and
renamed once complete, so a failed or interrupted run leaves no partial output.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from frameldp._atomic import atomic, check_target, replace, temporary
from frameldp.accounting import PrivacyGuarantee
from frameldp.core.mechanisms import Capability, mechanism_from_spec
from frameldp.core.randomness import KEY_BYTES
from frameldp.errors import FrameLDPError, ParameterError, shown
from frameldp.frames.batches import from_hex, hex_width, to_hex
from frameldp.frames.inputs import METADATA_KEY, require_column
from frameldp.frames.lookup import report_names
from frameldp.frames.report_type import (
    ReportMetadata,
    ReportType,
    as_reports,
    legacy_report_columns,
    metadata_of,
    recorded_shuffle,
    recorded_specs,
    storage_of,
)
from frameldp.frames.shuffling import SHUFFLED_KEY

__all__ = [
    "FORMAT",
    "ReportFile",
    "ReportWriter",
    "StagedOutput",
    "arrow_message",
    "batches",
    "check_output",
    "file_digest",
    "find_report_file",
    "read_key",
    "read_report_file",
    "report_metadata",
    "sidecar",
    "staged_output",
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


def read_key(key_file: Path | None, option: str = "--key-file") -> bytes | None:
    """The 32-byte secret key held in ``key_file`` (None when no file is given). Errors name
    the option and the file, never the file's contents."""
    if key_file is None:
        return None
    try:
        key = key_file.read_bytes()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ParameterError(f"{option} {str(key_file)!r}: cannot read it: {reason}") from None
    if len(key) != KEY_BYTES:
        raise ParameterError(
            f"{option} {str(key_file)!r}: a key is {KEY_BYTES} bytes, got {len(key)}"
        )
    return key


def check_output(target: Path) -> str:
    """The kind of an output file (``"csv"`` or ``"parquet"``), refused before any work when
    it cannot be written: a wrong suffix, a missing directory, a directory in the way of the
    file or of its sidecar."""
    kind = file_kind(target, "output")
    if not target.parent.is_dir():
        raise ParameterError(f"output {str(target)!r}: directory {str(target.parent)!r} not found")
    check_target(target)
    if kind == "csv":
        check_target(sidecar(target), "metadata file")
    return kind


def read_text(
    path: Path, where: str, *, hint: str = "", error: type[FrameLDPError] = ParameterError
) -> str:
    """The UTF-8 text of an option's file. Errors name ``where`` (the option and the file),
    never the file's bytes; a file that is not text raises ``error`` with ``hint`` appended."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as failure:
        reason = failure.strerror or type(failure).__name__
        raise ParameterError(f"{where}: cannot read it: {reason}") from None
    except UnicodeDecodeError:
        raise error(f"{where}: not UTF-8 text{hint}") from None


def require_input_column(names: Sequence[str], column: str, path: Path) -> None:
    """``column`` is a column of the input file. The file's column names are listed only when
    it is larger than a key file: a 32-byte key given as the input by mistake would otherwise
    be quoted as its own "header"."""
    if column in names:
        return
    size = path.stat().st_size if path.is_file() else 0
    if size <= 2 * KEY_BYTES + 2:  # raw, or hex-encoded, with a newline
        raise ParameterError(
            f"input {str(path)!r}: column {shown(column)} not found; the file holds only "
            f"{size} bytes (is it a key file?)"
        )
    require_column(list(names), column)


def arrow_message(error: BaseException) -> str:
    """A reader's error on one line, without the row of data a CSV parse error quotes (it may
    hold private values)."""
    message = " ".join(str(error).split())
    return re.sub(r"(Expected \d+ columns?, got \d+)[^:]*: .*", r"\1 (row not shown)", message)


def file_digest(path: Path) -> dict[str, Any]:
    """Size and SHA-256 of a file: what binds a CSV release to its sidecar."""
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    return {"bytes": path.stat().st_size, "sha256": digest}


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
        message = arrow_message(error)
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
            # Only an empty unquoted cell is null: "NA" and "null" are labels like any other,
            # and a quoted "" (how the writer spells the empty string) is the empty string.
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
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
        # pre_buffer caches what it reads ahead for the file's lifetime: about 1 MB more held
        # per batch, 200 MB over 10^8 rows (pyarrow 26). Without it memory stays flat.
        parquet = pq.ParquetFile(path, pre_buffer=False)
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
    specs: Mapping[str, Any],
    guarantee: PrivacyGuarantee | None,
    hex_columns: Sequence[str] = (),
    shuffled: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON a report file carries (see the module docstring)."""
    data: dict[str, Any] = {
        "format": FORMAT,
        "mechanisms": dict(specs),
        "guarantee": None if guarantee is None else guarantee.to_dict(),
        "hex": list(hex_columns),
    }
    if shuffled:
        data[SHUFFLED_KEY] = dict(shuffled)
    return data


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

    _schema: pa.Schema | None = field(default=None, repr=False)

    def write(self, batch: pa.RecordBatch) -> None:
        """Append one batch of the release."""
        batch = self._as_text(batch) if self.kind == "csv" else self._typed(batch)
        if self._writer is None:
            self._writer = self._open(batch.schema)
            self._schema = batch.schema
        self._writer.write_batch(batch)
        self.rows += batch.num_rows

    @cached_property
    def _report_types(self) -> dict[str, ReportMetadata]:
        """What each report column's type records (its spec and the shuffle), by column name:
        the same for every batch."""
        shuffled = self.metadata.get(SHUFFLED_KEY) or {}
        types: dict[str, ReportMetadata] = {}
        for column, spec in self.metadata["mechanisms"].items():
            names = report_names(column, mechanism_from_spec(spec), spec)
            for part, name in enumerate(names):
                types[name] = ReportMetadata(dict(spec), column, part, dict(shuffled))
        return types

    def _typed(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Parquet columns: every report column of the report type, whatever the batch was
        read from."""
        types = self._report_types
        arrays = [
            as_reports(array, types[name]) if name in types else array
            for name, array in zip(batch.schema.names, batch.columns, strict=True)
        ]
        return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)

    def _as_text(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """CSV cells: RAPPOR reports as hex, k-RR labels as their values."""
        arrays = []
        for name, array in zip(batch.schema.names, batch.columns, strict=True):
            array = storage_of(array)
            if name in self.metadata["hex"]:
                if not pa.types.is_fixed_size_binary(array.type):  # written by pandas
                    mechanism = mechanism_from_spec(self.metadata["mechanisms"][name])
                    array = array.cast(pa.binary(hex_width(mechanism, name) or 0))
                array = to_hex(array)
            elif pa.types.is_dictionary(array.type):
                array = array.dictionary_decode()
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)

    def _open(self, schema: pa.Schema) -> Any:
        if self.kind == "csv":
            return pacsv.CSVWriter(self.path, schema)
        schema = schema.with_metadata({METADATA_KEY.encode(): json.dumps(self.metadata).encode()})
        return pq.ParquetWriter(self.path, schema)

    def close(self, records: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """Finish the file (every input gives at least one batch, maybe empty: see
        :func:`batches`). ``records`` adds to the specs of ``metadata`` what is known only
        now, when every row is written (a release's row count and fingerprint, so that a
        shuffle of the file can check that it gets the release's rows, each once); a Parquet
        file records them in its footer, in its ``frameldp`` key and in its report types."""
        mechanisms = self.metadata["mechanisms"]
        for column, record in (records or {}).items():
            mechanisms[column] = {**mechanisms[column], **record}
        if self.kind == "parquet" and records and self._schema is not None:
            self.__dict__.pop("_report_types", None)  # the types now hold the records
            types = self._report_types
            fields = [
                pa.field(f.name, ReportType(f.type.storage_type, types[f.name]))
                if f.name in types
                else f
                for f in self._schema
            ]
            described = json.dumps(self.metadata)
            final = pa.schema(fields, metadata={METADATA_KEY: described})
            self._writer.add_key_value_metadata(
                {
                    METADATA_KEY: described,
                    # The Arrow schema a reader rebuilds the columns from (its report types).
                    "ARROW:schema": base64.b64encode(final.serialize().to_pybytes()).decode(),
                }
            )
        self._writer.close()


@dataclass
class StagedOutput:
    """A report file being written: its temporary file(s), renamed into place by :meth:`commit`.

    A Parquet file holds its metadata: one rename. A CSV file and its sidecar are two renames,
    so the sidecar is bound to the CSV's bytes (``"csv"``: size and SHA-256) and the pair is
    replaced in an order where every intermediate state reads as one consistent release:

    1. the new sidecar describes the new CSV, and also (under ``"replacing"``) the old CSV that
       is still in place, when the old sidecar described it;
    2. it is renamed onto the old sidecar: the old CSV still reads with its own metadata;
    3. the new CSV is renamed onto the old CSV: it reads with the new metadata;
    4. the sidecar is rewritten without ``"replacing"`` (tidying only: states 2 and 3 are
       already consistent).

    A failure or a kill at any step leaves either the old release or the new one, never a CSV
    read with another run's metadata: readers pick the entry whose ``"csv"`` matches the file
    and refuse a CSV that none matches.
    """

    target: Path
    kind: str
    data: Path
    beside: Path | None
    _replacing: dict[str, Any] | None = field(default=None, repr=False)
    _metadata: dict[str, Any] | None = field(default=None, repr=False)

    def seal(self, metadata: dict[str, Any]) -> None:
        """The data file is complete: bind the sidecar to it (CSV; Parquet holds its own)."""
        if self.beside is None:
            return
        self._metadata = {**metadata, "csv": file_digest(self.data)}
        self._replacing = _described_entry(self.target)
        content = dict(self._metadata)
        if self._replacing is not None:
            content["replacing"] = self._replacing
        self.beside.write_text(json.dumps(content, indent=1))

    def commit(self) -> None:
        """Rename the temporary file(s) into place (see the class docstring for the order)."""
        if self.beside is None:
            replace(self.data, self.target)
            return
        if self._metadata is None:
            raise RuntimeError("StagedOutput.commit before seal")  # a bug, not a user mistake
        replace(self.beside, sidecar(self.target))
        replace(self.data, self.target)
        if self._replacing is not None:
            # Best effort: the pair is consistent with or without the old entry.
            with contextlib.suppress(OSError), atomic(sidecar(self.target)) as tidy:
                tidy.write_text(json.dumps(self._metadata, indent=1))


@contextlib.contextmanager
def staged_output(target: Path, kind: str) -> Iterator[StagedOutput]:
    """Temporary files for ``target`` (and its sidecar, for CSV), removed when the block ends
    unless committed."""
    with contextlib.ExitStack() as stack:
        data = stack.enter_context(temporary(target))
        beside = stack.enter_context(temporary(sidecar(target))) if kind == "csv" else None
        yield StagedOutput(target, kind, data, beside)


def _entries(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The releases a sidecar describes: its own, and the one it is replacing (if any)."""
    entries = [{k: v for k, v in data.items() if k != "replacing"}]
    if isinstance(data.get("replacing"), dict):
        entries.append(dict(data["replacing"]))
    return [entry for entry in entries if isinstance(entry.get("csv"), dict)]


def _matching(path: Path, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The entry whose recorded size and SHA-256 are those of ``path`` (None if none)."""
    size = path.stat().st_size
    candidates = [entry for entry in entries if entry["csv"].get("bytes") == size]
    if not candidates:
        return None
    digest = file_digest(path)
    return next((entry for entry in candidates if entry["csv"] == digest), None)


def _described_entry(target: Path) -> dict[str, Any] | None:
    """The metadata of the CSV release now at ``target`` when its sidecar describes it."""
    beside = sidecar(target)
    if not (target.is_file() and beside.is_file()):
        return None
    try:
        data = json.loads(beside.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return _matching(target, _entries(data)) if isinstance(data, dict) else None


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

    @property
    def names(self) -> list[str]:
        """Every column of the file."""
        if self.kind == "parquet":
            return list(pq.read_schema(self.path).names)
        return _csv_header(self.path)

    @property
    def seeded(self) -> bool:
        """Whether the reports (or the order of a shuffled file) came from a seed: the
        guarantee, any recorded spec (a file written from a seeded frame) or the shuffle say
        so."""
        guarantee_seeded = self.guarantee is not None and self.guarantee.seeded
        specs_seeded = any(spec.get("seeded") for spec in self.specs.values())
        return guarantee_seeded or specs_seeded or bool(self.shuffled.get("seeded"))

    def report_type(self, column: str) -> ReportMetadata:
        """What ``column``'s report type records (which privatized column it holds, under which
        spec): a Parquet file written from a frame keeps it through copies and renames; a
        column without one holds the reports of the column it is named after."""
        if self.kind == "parquet":
            found = pq.read_schema(self.path).field(column)
            meta = metadata_of(found.type, found.metadata)
            if meta is not None:
                return meta
        return ReportMetadata(dict(self.specs[column]), column)

    def _hex_width(self, column: str) -> int:
        return hex_width(mechanism_from_spec(self.specs[column]), column) or 0

    def batches(
        self, columns: Sequence[str], *, chunk_rows: int, text: Sequence[str] = ()
    ) -> Iterator[pa.RecordBatch]:
        """Batches of ``columns``, RAPPOR hex strings (CSV) turned back into binary reports;
        CSV columns in ``text`` are read as text too."""
        strings = [c for c in columns if self.kind == "csv" and (c in text or self._textual(c))]
        chunks = batches(
            self.path, columns, chunk_rows=chunk_rows, strings=strings, keep_empty_lines=True
        )
        for batch in chunks:
            if not self.hex_columns:
                yield batch
                continue
            arrays = [
                from_hex(
                    array, 8 * (hex_width(mechanism_from_spec(self.specs[name]), name) or 0), name
                )
                if name in self.hex_columns
                else array
                for name, array in zip(batch.schema.names, batch.columns, strict=True)
            ]
            yield pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)

    def _textual(self, column: str) -> bool:
        """Whether a CSV column holds text: hex reports, cohorts and integer reports no, labels
        when the domain's categories are strings (other domains are read as the values CSV
        parsing gives)."""
        if column in self.hex_columns:
            return True
        spec = self.specs.get(column)
        if spec is not None:
            capabilities = mechanism_from_spec(spec).capabilities
            if Capability.INTEGER_REPORTS in capabilities:  # numbers, whatever the domain
                return False
        categories = self.specs.get(column, {}).get("domain", {}).get("categories")
        return categories is not None and all(isinstance(c, str) for c in categories)


def read_report_file(path: Path) -> ReportFile:
    """Open a report file and read its metadata (Parquet key-value metadata, or the sidecar of
    a CSV file, which must describe this CSV). A Parquet file written by pandas from a
    privatized frame also works."""
    found = find_report_file(path)
    if found is None:
        kind = file_kind(path, "reports")
        where = "metadata" if kind == "parquet" else f"metadata file {str(sidecar(path))!r}"
        raise ParameterError(
            f"reports {str(path)!r}: no frameldp {where}; write report files with "
            "`frameldp privatize` (or from a privatized frame with to_parquet)"
        )
    return found


def find_report_file(path: Path) -> ReportFile | None:
    """:func:`read_report_file`, or None for a file that records no mechanisms."""
    data = read_metadata(path)
    return None if data is None else _report_file(path, file_kind(path, "reports"), data)


def read_metadata(path: Path) -> dict[str, Any] | None:
    """What a report file records about itself; None when it records no mechanisms (a plain
    file). Unreadable files, unreadable or newer metadata and a sidecar that describes another
    CSV are errors naming the file."""
    kind = file_kind(path, "reports")
    if not path.is_file():
        raise ParameterError(f"reports {str(path)!r}: no such file")
    data = _parquet_metadata(path) if kind == "parquet" else _csv_metadata(path)
    if data is None:
        return None
    if data.get("format", FORMAT) > FORMAT:
        raise ParameterError(
            f"reports {str(path)!r}: written by a newer frameldp (metadata format "
            f"{shown(data['format'])}); upgrade frameldp to read it"
        )
    return data if data.get("mechanisms") else None


def _parquet_metadata(path: Path) -> dict[str, Any] | None:
    """The CLI's key-value metadata; else, for a file written by pandas, polars, Dask or any
    library that keeps Arrow extension types, what its report column types record; else the
    ``attrs`` pandas wrote in files of earlier releases."""
    try:
        schema = pq.read_schema(path)
        metadata = schema.metadata or {}
        attrs = json.loads(metadata.get(b"PANDAS_ATTRS", b"{}")).get(METADATA_KEY, {})
        typed = {
            f.name: meta for f in schema if (meta := metadata_of(f.type, f.metadata)) is not None
        }
        if METADATA_KEY.encode() in metadata:
            data = json.loads(metadata[METADATA_KEY.encode()])
            if typed and isinstance(data, dict) and recorded_specs(typed) != data.get("mechanisms"):
                raise ParameterError(
                    "its report columns' types and its frameldp metadata record different "
                    "mechanisms (columns replaced after it was written?); write the release again"
                )
        elif typed:
            data = {"mechanisms": recorded_specs(typed), SHUFFLED_KEY: recorded_shuffle(typed)}
        else:
            legacy = legacy_report_columns(attrs, list(schema.names))
            data = {"mechanisms": recorded_specs(legacy)}
    except (OSError, pa.ArrowException) as error:
        raise ParameterError(
            f"reports {str(path)!r}: cannot read it as parquet: {arrow_message(error)}"
        ) from None
    except FrameLDPError as error:
        raise ParameterError(f"reports {str(path)!r}: {error}") from None
    except (ValueError, AttributeError, OverflowError):
        raise ParameterError(f"reports {str(path)!r}: its frameldp metadata is not valid") from None
    if not isinstance(data, dict):
        raise ParameterError(f"reports {str(path)!r}: its frameldp metadata is not valid")
    data.setdefault(SHUFFLED_KEY, attrs.get(SHUFFLED_KEY) or {})
    return data


def _csv_metadata(path: Path) -> dict[str, Any] | None:
    beside = sidecar(path)
    if not beside.is_file():
        return None
    where = f"reports {str(path)!r}: metadata file {str(beside)!r}"
    try:
        data = json.loads(beside.read_text(encoding="utf-8"))
    except OSError as error:
        raise ParameterError(f"{where}: cannot read it: {error.strerror}") from None
    except ValueError:
        raise ParameterError(f"{where}: not valid JSON") from None
    if not isinstance(data, dict):
        raise ParameterError(f"{where}: expected a JSON object")
    entries = _entries(data)
    if not entries:
        raise ParameterError(
            f"{where} does not record which CSV file it describes (size and SHA-256); it was "
            "not written by this frameldp: write the release again"
        )
    entry = _matching(path, entries)
    if entry is None:
        raise ParameterError(
            f"{where} describes another CSV file (size or SHA-256 differ): the CSV was changed "
            "or replaced without its metadata, and is not read with another release's metadata"
        )
    return entry


def _report_file(path: Path, kind: str, data: dict[str, Any]) -> ReportFile:
    specs = data.get("mechanisms") or {}
    try:
        guarantee = PrivacyGuarantee.from_dict(data["guarantee"]) if data.get("guarantee") else None
    except (KeyError, TypeError, ValueError):
        raise ParameterError(
            f"reports {str(path)!r}: its recorded guarantee is not valid"
        ) from None
    shuffled = data.get(SHUFFLED_KEY) or {}
    return ReportFile(path, kind, specs, guarantee, tuple(data.get("hex", ())), shuffled)
