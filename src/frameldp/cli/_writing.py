"""Writing report files: the metadata they carry (:func:`report_metadata`), typed or hex
batches (:class:`ReportWriter`), and a staged CSV + sidecar pair or Parquet file replaced
atomically (:class:`StagedOutput`): a failed or interrupted run leaves no partial output, and
every state a reader can meet is consistent (the format: :mod:`frameldp.cli._metadata`)."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from frameldp._atomic import atomic, replace, temporary
from frameldp.accounting import PrivacyGuarantee
from frameldp.cli._inputs import file_digest, sidecar
from frameldp.cli._metadata import FORMAT, described_entry
from frameldp.core.mechanisms import mechanism_from_spec
from frameldp.frames.batches import hex_width, to_hex
from frameldp.frames.inputs import METADATA_KEY
from frameldp.frames.lookup import report_names
from frameldp.frames.report_type import (
    ReportMetadata,
    ReportType,
    as_reports,
    storage_of,
)
from frameldp.frames.shuffling import SHUFFLED_KEY


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
        self._replacing = described_entry(self.target)
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
