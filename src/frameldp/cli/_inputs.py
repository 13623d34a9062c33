"""The command line's input files: suffixes, option files (keys, text), and CSV or Parquet
files read batch by batch in bounded memory. Errors name the option and the file, never a key's
bytes or a CSV row (it may hold private values)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from frameldp._atomic import check_target
from frameldp.core.randomness import KEY_BYTES, MEMO_KEY_PREFIX
from frameldp.errors import FrameLDPError, ParameterError, shown
from frameldp.frames.inputs import require_column

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
    """The 32-byte secret key held in ``key_file`` (None when no file is given); for
    ``--memo-key-file`` also a key of ``frameldp.new_memo_key()``. Errors name the option and
    the file, never the file's contents."""
    if key_file is None:
        return None
    try:
        key = key_file.read_bytes()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ParameterError(f"{option} {str(key_file)!r}: cannot read it: {reason}") from None
    if option == "--memo-key-file" and key.startswith(MEMO_KEY_PREFIX):
        if len(key) != len(MEMO_KEY_PREFIX) + KEY_BYTES:
            raise ParameterError(
                f"{option} {str(key_file)!r}: a key of frameldp.new_memo_key() is "
                f"{len(MEMO_KEY_PREFIX) + KEY_BYTES} bytes, got {len(key)}"
            )
        return key
    if len(key) != KEY_BYTES:
        also = ""
        if option == "--memo-key-file":
            also = f" (or {len(MEMO_KEY_PREFIX) + KEY_BYTES} from frameldp memo-key)"
        raise ParameterError(
            f"{option} {str(key_file)!r}: a key is {KEY_BYTES} bytes{also}, got {len(key)} "
            "(raw bytes, no newline)"
        )
    return key


def read_fake_prior(path: Path) -> dict[str, Any]:
    """``--fake-prior``: each column's law of fake values, ``{column: {category: weight}}``
    (string categories) or ``{column: [[category, weight], ...]}`` (any JSON category, ``null``
    for the null bucket); the weights are checked against the column's buckets later."""
    where = f"--fake-prior {str(path)!r}"
    try:
        given = json.loads(read_text(path, where))
    except json.JSONDecodeError as error:
        raise ParameterError(f"{where}: not JSON ({error.msg} at line {error.lineno})") from None
    except RecursionError:
        raise ParameterError(f"{where}: nested too deeply to be a prior") from None
    if not isinstance(given, dict):
        raise ParameterError(f"{where}: expected an object {{column: law}}, got {shown(given)}")
    laws: dict[str, Any] = {}
    for column, law in given.items():
        if isinstance(law, list):
            pairs = [
                p
                for p in law
                if isinstance(p, list)
                and len(p) == 2
                and (p[0] is None or isinstance(p[0], str | int | float | bool))
            ]
            if len(pairs) != len(law):
                raise ParameterError(
                    f"{where}: column {shown(column)}: expected [[category, weight], ...], got "
                    f"{shown(law)}"
                )
            law = {category: weight for category, weight in pairs}
        laws[column] = law
    return laws


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


def csv_header(path: Path) -> list[str]:
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
    numbers: Sequence[str] = (),
) -> Iterator[pacsv.CSVStreamingReader]:
    """A streaming CSV reader; columns in ``strings`` (``None``: every column but ``numbers``)
    are text, those in ``numbers`` float64."""
    textual = [c for c in (csv_header(path) if strings is None else strings) if c not in numbers]
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=block_size),
        parse_options=pacsv.ParseOptions(ignore_empty_lines=not keep_empty_lines),
        convert_options=pacsv.ConvertOptions(
            include_columns=list(columns) if columns is not None else None,
            column_types={
                **dict.fromkeys(textual, pa.string()),
                **dict.fromkeys(numbers, pa.float64()),
            },
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
    numbers: Sequence[str] = (),
) -> Iterator[pa.RecordBatch]:
    """The ``columns`` of a file, at most ``chunk_rows`` rows at a time.

    Memory is bounded by one batch (and, for Parquet, one row group of the named columns).
    CSV columns in ``strings`` (default: all of them but ``numbers``) are read as text, and those
    in ``numbers`` (the columns of numeric mechanisms) as float64, so a column's type never
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
    with _csv_reader(
        path, columns, strings, block, keep_empty_lines=keep_empty_lines, numbers=numbers
    ) as reader:
        # Blocks of at least 1 MiB hold more rows than chunk_rows when rows are narrow: slice.
        chunks = (
            batch.select(list(columns)).slice(start, chunk_rows)
            for batch in reader
            for start in range(0, batch.num_rows, chunk_rows)
        )
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
