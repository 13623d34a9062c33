"""Files of the reference RAPPOR client (google/rappor): report CSVs and params CSVs.

* **params CSV**: a header ``k,h,m,p,q,f`` and one row: Bloom bits, hashes, cohorts and the
  probabilities ``p``, ``q``, ``f`` (``client/python/rappor.py``, ``Params.from_csv``).
* **report CSV**: columns ``client,cohort,bloom``, where ``bloom`` is the report as a bit string
  of length ``k``, most significant bit first (bit ``j`` of a report has weight ``2**j``, so the
  string's last character is bit 0). The reference simulator writes ``client,cohort,bloom,prr,irr``
  instead, where ``irr`` is the report and ``bloom`` and ``prr`` are the *unprivatized* Bloom
  filter and permanent response: then ``irr`` is read and the other two are dropped.

Reports read here decode with ``reports.ldp.decode(candidates=...)`` exactly like reports
produced by ``df.ldp.rappor(..., encoding="bloom", hash_scheme="rappor")``; the frame knows
its mechanism (``hash_scheme="rappor"``, the params) and carries the guarantee of one report.
Files are written atomically: to a temporary file in the same directory, then renamed.
"""

from __future__ import annotations

import csv
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
from numpy.typing import NDArray

from frameldp._atomic import atomic
from frameldp.core.columns import bits_array, packed_bits
from frameldp.core.mechanisms import BloomRappor
from frameldp.errors import DomainError, FrameLDPWarning, ParameterError, shown
from frameldp.frames.lookup import find_decoder
from frameldp.frames.report_type import ReportMetadata, as_reports, storage_of

__all__ = [
    "read_rappor_params",
    "read_rappor_reports",
    "write_rappor_params",
    "write_rappor_reports",
]

PathLike = str | os.PathLike[str]
_PARAMS_HEADER = ["k", "h", "m", "p", "q", "f"]


def read_rappor_params(path: PathLike) -> BloomRappor:
    """The :class:`BloomRappor` (``hash_scheme="rappor"``) described by a reference params CSV."""
    rows = _read_rows(path)
    if not rows or [cell.strip() for cell in rows[0]] != _PARAMS_HEADER:
        raise ParameterError(
            f"params file {path}: header must be k,h,m,p,q,f, got {_described(rows)}"
        )
    if len(rows) != 2 or len(rows[1]) != len(_PARAMS_HEADER):
        raise ParameterError(
            f"params file {path}: expected one row of 6 values after the header, got "
            f"{len(rows) - 1} row(s) of {[len(row) for row in rows[1:]]} value(s)"
        )
    try:
        k, h, m = (int(cell) for cell in rows[1][:3])
        p, q, f = (float(cell) for cell in rows[1][3:])
    except ValueError as error:
        raise ParameterError(f"params file {path}: {error}") from None
    try:
        return BloomRappor(
            f=f, p=p, q=q, num_bits=k, num_hashes=h, num_cohorts=m, hash_scheme="rappor"
        )
    except ParameterError as error:
        raise ParameterError(f"params file {path}: {error}") from None


def _described(rows: list[list[str]]) -> str:
    """The first line of a file that is not a params file, quoted only when it is shaped like a
    header (6 cells): the file may be something else given by mistake, a key file say."""
    if not rows:
        return "an empty file"
    if len(rows[0]) != len(_PARAMS_HEADER):
        return f"a first line of {len(rows[0])} cell(s)"
    return ",".join(shown(cell, 12) for cell in rows[0])


def write_rappor_params(mechanism: BloomRappor, path: PathLike) -> None:
    """Write ``mechanism``'s realized parameters as a reference params CSV (atomically)."""
    if not isinstance(mechanism, BloomRappor):
        raise ParameterError(f"expected a BloomRappor, got {type(mechanism).__name__}")
    _check_reference_hash(mechanism, "params files")
    values = [
        mechanism.num_bits,
        mechanism.num_hashes,
        mechanism.num_cohorts,
        repr(mechanism.zero_probability),
        repr(mechanism.one_probability),
        repr(2 * mechanism.flip_probability),
    ]
    with _atomic(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(_PARAMS_HEADER)
        writer.writerow(values)


def read_rappor_reports(path: PathLike, *, params: PathLike | BloomRappor) -> pd.DataFrame:
    """A pandas frame of reference-client reports that knows its mechanism.

    Columns: ``client`` (string), ``cohort`` (int64) and the reports (``bloom``, or ``irr``
    for files of the reference simulator), packed as fixed-size binary in frameldp's bit order.
    Malformed rows (wrong length, characters other than 0 and 1, cohorts out of range) raise a
    :class:`~frameldp.errors.DomainError` naming the row.
    """
    mechanism = params if isinstance(params, BloomRappor) else read_rappor_params(params)
    try:
        table = pacsv.read_csv(
            path,
            convert_options=pacsv.ConvertOptions(
                column_types={
                    "client": pa.string(),
                    "cohort": pa.int64(),
                    "bloom": pa.string(),
                    "prr": pa.string(),
                    "irr": pa.string(),
                }
            ),
        )
    except (pa.ArrowInvalid, OSError) as error:
        raise ParameterError(f"report file {path}: {error}") from None
    names = table.column_names
    missing = {"client", "cohort", "bloom"} - set(names)
    if missing:
        raise ParameterError(
            f"report file {path}: columns must include client, cohort, bloom; missing "
            f"{sorted(missing)} (found {names})"
        )
    column = "irr" if "irr" in names else "bloom"
    if column == "irr":
        warnings.warn(
            f"report file {path}: reading the reports from 'irr'; the 'bloom' and 'prr' columns "
            "hold unprivatized data and were dropped",
            FrameLDPWarning,
            stacklevel=2,
        )
    cohorts = table["cohort"]
    if cohorts.null_count:
        raise DomainError(f"report file {path}: {cohorts.null_count} rows have no cohort")
    cohort_values = cohorts.to_numpy().astype(np.int64)
    outside = (cohort_values < 0) | (cohort_values >= mechanism.num_cohorts)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise DomainError(
            f"report file {path}: cohort {int(cohort_values[row])} at row {row} is outside "
            f"[0, {mechanism.num_cohorts}) (num_cohorts from the params)"
        )
    packed = _packed_from_bit_strings(table[column], mechanism.num_bits, f"report file {path}")
    spec = {**mechanism.to_spec(), "cohort_column": "cohort", "memo": None}
    reports = as_reports(bits_array(packed), ReportMetadata(spec, column, 0))
    cohorts = as_reports(pa.array(cohort_values), ReportMetadata(spec, column, 1))
    return pd.DataFrame(
        {
            "client": pd.Series(table["client"].to_pylist(), dtype="string"),
            "cohort": cohorts.to_pandas(),
            column: reports.to_pandas(),
        }
    )


def write_rappor_reports(
    reports: pd.DataFrame,
    path: PathLike,
    *,
    column: str | None = None,
    client: str | None = None,
) -> None:
    """Write Bloom RAPPOR reports of a pandas frame as a reference report CSV (atomically).

    ``client`` names the column written as ``client`` (default: the row position); the cohort
    column and the mechanism are the ones recorded for ``column``.
    """
    if not isinstance(reports, pd.DataFrame):
        raise ParameterError(f"expected a pandas DataFrame, got {type(reports).__name__}")
    recorded = reports.ldp.specs
    column, decoder, names, _ = find_decoder(column, None, recorded)
    mechanism = cast(BloomRappor, decoder)  # the reference format is Bloom RAPPOR's
    cohort_name = names[1]
    _check_reference_hash(mechanism, f"column {shown(column)}: report files")
    for name in (column, cohort_name, client):
        if name is not None and name not in reports.columns:
            raise ParameterError(
                f"column {shown(name)} not found; columns are {shown(list(reports.columns))}"
            )
    packed = packed_bits(
        storage_of(pa.Array.from_pandas(reports[column])), mechanism.num_bits, column
    )
    strings = _bit_strings(packed, mechanism.num_bits)
    clients = reports[client].astype(str).tolist() if client is not None else range(len(reports))
    cohorts = storage_of(pa.Array.from_pandas(reports[cohort_name])).to_pylist()
    with _atomic(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["client", "cohort", "bloom"])
        writer.writerows(zip(clients, cohorts, strings, strict=True))


def _check_reference_hash(mechanism: BloomRappor, what: str) -> None:
    """The reference formats cannot say which hashes were used: only MD5 can be written."""
    if mechanism.hash_scheme != "rappor":
        raise ParameterError(
            f"{what} are read as the reference client's MD5 hashes, but this mechanism has "
            f"hash_scheme={mechanism.hash_scheme!r}; privatize with hash_scheme='rappor' to "
            "exchange reports with it"
        )


def _read_rows(path: PathLike) -> list[list[str]]:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return [row for row in csv.reader(handle) if row]
    except OSError as error:
        raise ParameterError(f"cannot read {path}: {error}") from None
    except UnicodeDecodeError:  # the error would quote a byte of the file (a key, maybe)
        raise ParameterError(f"cannot read {path}: not UTF-8 text") from None


def _packed_from_bit_strings(
    column: pa.ChunkedArray, num_bits: int, where: str
) -> NDArray[np.uint8]:
    """Bit strings (most significant bit first) as packed rows in frameldp's order."""
    if column.null_count:
        raise DomainError(f"{where}: {column.null_count} reports are empty")
    strings = column.combine_chunks().cast(pa.large_string())
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)[: len(strings) + 1]
    lengths = np.diff(offsets)
    if lengths.size and (lengths != num_bits).any():
        row = int(np.flatnonzero(lengths != num_bits)[0])
        raise DomainError(
            f"{where}: report at row {row} has {int(lengths[row])} bits, expected {num_bits} "
            "(k from the params)"
        )
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)[
        offsets[0] : offsets[0] + num_bits * len(strings)
    ]
    digits = data.reshape(len(strings), num_bits) - ord("0")
    if digits.size and digits.max(initial=0) > 1:
        row = int(np.flatnonzero((digits > 1).any(axis=1))[0])
        raise DomainError(f"{where}: report at row {row} holds characters other than 0 and 1")
    # The string's character t is bit k - 1 - t.
    return np.packbits(digits[:, ::-1].astype(np.uint8), axis=1)


def _bit_strings(packed: NDArray[np.uint8], num_bits: int) -> list[str]:
    bits = np.unpackbits(packed, axis=1, count=num_bits)[:, ::-1]
    text = (bits + ord("0")).astype(np.uint8)
    return [row.tobytes().decode("ascii") for row in text]


@contextmanager
def _atomic(path: PathLike) -> Iterator[IO[Any]]:
    """A text file at ``path`` that appears only once completely written."""
    with atomic(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
        yield handle
