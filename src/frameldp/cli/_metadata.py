"""What a report file records about itself, and where: the metadata carriers.

A report file says how it was made, in one of four carriers, read in this order:

1. the command line's Parquet key-value metadata ``frameldp``: JSON ``{"format": 1,
   "mechanisms": {column: spec}, "guarantee": {...}, "hex": [...]}``: the mechanism specs
   (enough to debias every report column) and the per-person guarantee of the release (marked
   ``"seeded"`` for a ``--seed`` run); a shuffled file adds ``"shuffled"``
   (:func:`frameldp.frames.shuffling.shuffle_record`);
2. the report columns' own types (``frameldp.reports``, or their field metadata), which a
   Parquet file written by pandas, polars, Dask, pyarrow or Spark keeps; where the file has
   carrier 1 too, both must record the same mechanisms;
3. ``PANDAS_ATTRS`` ``{"frameldp": {"mechanisms": ..., "shuffled": ...}}``: what pandas
   restores as ``attrs``, written by earlier releases and by ``frameldp shuffle`` for a file
   whose shuffle is recorded nowhere else;
4. for a CSV file, which cannot hold metadata, carrier 1's JSON written beside it in
   ``OUT.frameldp.json`` (the *sidecar*); its RAPPOR reports are hex strings (listed under
   ``"hex"``). The sidecar is bound to its CSV: it records the CSV's size and SHA-256
   (``"csv"``), and readers refuse a CSV whose sidecar describes other bytes, so a CSV is never
   read with another run's metadata (the writer: :class:`frameldp.cli._writing.StagedOutput`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from frameldp.cli._inputs import arrow_message, file_digest, file_kind, sidecar
from frameldp.errors import FrameLDPError, ParameterError, shown
from frameldp.frames.inputs import METADATA_KEY
from frameldp.frames.report_type import (
    ReportMetadata,
    legacy_report_columns,
    metadata_of,
    recorded_shuffle,
    recorded_specs,
)
from frameldp.frames.shuffling import SHUFFLED_KEY

FORMAT = 1
"""Version of the ``frameldp`` metadata written into report files."""


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


def described_entry(target: Path) -> dict[str, Any] | None:
    """The metadata of the CSV release now at ``target`` when its sidecar describes it."""
    beside = sidecar(target)
    if not (target.is_file() and beside.is_file()):
        return None
    try:
        data = json.loads(beside.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return _matching(target, _entries(data)) if isinstance(data, dict) else None


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
    """What a Parquet file records, from the first carrier it has (:func:`_reconciled`)."""
    try:
        schema = pq.read_schema(path)
        metadata = schema.metadata or {}
        attrs = _pandas_attrs(metadata)
        data = _reconciled(_written(metadata), _typed(schema), attrs, list(schema.names))
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


def _written(metadata: Mapping[bytes, bytes]) -> Any:
    """Carrier 1: the command line's ``frameldp`` key-value metadata (None when absent)."""
    found = metadata.get(METADATA_KEY.encode())
    return None if found is None else json.loads(found)


def _typed(schema: pa.Schema) -> dict[str, ReportMetadata]:
    """Carrier 2: what the report columns' types record (the ``frameldp.reports`` extension
    type, or its field metadata where a writer keeps only that): files written by pandas,
    polars, Dask, pyarrow or Spark."""
    return {f.name: meta for f in schema if (meta := metadata_of(f.type, f.metadata)) is not None}


def _pandas_attrs(metadata: Mapping[bytes, bytes]) -> dict[str, Any]:
    """Carrier 3: the ``attrs`` pandas restores (``PANDAS_ATTRS``)."""
    attrs: dict[str, Any] = json.loads(metadata.get(b"PANDAS_ATTRS", b"{}")).get(METADATA_KEY, {})
    return attrs


def _reconciled(
    written: Any, typed: dict[str, ReportMetadata], attrs: dict[str, Any], names: list[str]
) -> Any:
    """The written metadata (whose mechanisms must be those the column types record, if any
    do), else the typed columns', else the legacy attrs'. (Carrier 4 is a CSV's sidecar,
    :func:`_csv_metadata`.)"""
    if written is not None:
        if (
            typed
            and isinstance(written, dict)
            and recorded_specs(typed) != written.get("mechanisms")
        ):
            raise ParameterError(
                "its report columns' types and its frameldp metadata record different "
                "mechanisms (columns replaced after it was written?); write the release again"
            )
        return written
    if typed:
        return {"mechanisms": recorded_specs(typed), SHUFFLED_KEY: recorded_shuffle(typed)}
    return {"mechanisms": recorded_specs(legacy_report_columns(attrs, names))}


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
