"""A stored report file (:class:`ReportFile`): its specs, guarantee, hex columns and shuffle
as its metadata records them (:mod:`frameldp.cli._metadata`), and its report columns read back
batch by batch (CSV hex strings turned back into binary reports)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from frameldp.accounting import PrivacyGuarantee
from frameldp.cli._inputs import batches, csv_header, file_kind, sidecar
from frameldp.cli._metadata import read_metadata
from frameldp.core.mechanisms import Capability, mechanism_from_spec
from frameldp.errors import ParameterError
from frameldp.frames.batches import from_hex, hex_width
from frameldp.frames.report_type import (
    ReportMetadata,
    metadata_of,
)
from frameldp.frames.shuffling import SHUFFLED_KEY


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
        return csv_header(self.path)

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
                    array,
                    8 * (hex_width(mechanism_from_spec(self.specs[name]), name) or 0),
                    name,
                    nullable=self.specs[name].get("collection", {}).get("strategy") == "sample",
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
