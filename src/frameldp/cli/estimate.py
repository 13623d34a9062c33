"""``frameldp estimate``: debiased frequency tables from a stored, self-describing report file.

The file's metadata names the mechanism of every report column (see :mod:`frameldp.cli._files`),
so nothing has to be passed again. The file is read in batches and each column's additive
statistic (bit sums, label counts, per-cohort Bloom counts) is summed, so memory does not grow
with the file; the estimate equals that of ``reports.ldp.debias`` on the whole column. The
tables of a file drawn from a ``--seed`` (or shuffled with one) carry a guarantee marked
``seeded``: printed as INSECURE.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pandas as pd

from frameldp._atomic import atomic, check_target
from frameldp.cli._files import ReportFile, file_kind, read_report_file, sidecar
from frameldp.cli._progress import rows_progress
from frameldp.core.mechanisms import (
    Capability,
    Decoder,
    Mechanism,
    Statistic,
    mechanism_from_spec,
)
from frameldp.errors import ParameterError, shown
from frameldp.frames.batches import counts_of_batch
from frameldp.frames.inputs import require_column
from frameldp.frames.lookup import report_names
from frameldp.frames.shuffling import shuffled_privacy
from frameldp.frames.table import FrequencyTable

__all__ = ["Estimates", "check_out", "estimate_file", "long_table", "write_table"]


@dataclass(frozen=True)
class Estimates:
    """The tables of one report file, and how many reports it holds."""

    reports: ReportFile
    tables: list[FrequencyTable]
    rows: int


def _columns(
    reports: ReportFile, columns: Sequence[str], candidates: list[str] | None
) -> list[str]:
    """The report columns to estimate: those named, else every recorded one (Bloom columns
    only with candidates, which their decoding needs)."""
    recorded = list(reports.specs)
    if columns:
        for column in columns:
            require_column(recorded, column)
        return list(columns)
    chosen = [
        c
        for c in recorded
        if candidates is not None or not _decoded(mechanism_from_spec(reports.specs[c]))
    ]
    if not chosen:
        raise ParameterError(
            f"reports {str(reports.path)!r}: only Bloom RAPPOR columns are recorded "
            f"({', '.join(recorded)}); pass --candidates-file to decode them"
        )
    return chosen


def _decoded(mechanism: Mechanism) -> bool:
    """Whether the mechanism's reports are decoded against candidates (not debiased)."""
    return Capability.CANDIDATES in mechanism.capabilities


def estimate_file(
    path: Path,
    columns: Sequence[str] = (),
    *,
    level: float = 0.95,
    candidates: list[str] | None = None,
    chunk_rows: int = 1_000_000,
    progress: bool = False,
) -> Estimates:
    """Debiased tables of the report columns of ``path`` (see the module docstring)."""
    reports = read_report_file(path)
    chosen = _columns(reports, columns, candidates)
    mechanisms = {c: mechanism_from_spec(reports.specs[c]) for c in chosen}
    for column, mechanism in mechanisms.items():
        if _decoded(mechanism) and candidates is None:
            raise ParameterError(
                f"column {shown(column)}: {mechanism.title} reports are decoded against candidate "
                "strings: pass --candidates-file"
            )
    names = {c: report_names(c, m, reports.specs[c]) for c, m in mechanisms.items()}
    read = list(dict.fromkeys(name for listed in names.values() for name in listed))
    sums: dict[str, Statistic] = {}
    rows = 0
    with rows_progress("estimating", reports.rows, show=progress) as advance:
        for batch in reports.batches(read, chunk_rows=chunk_rows):  # at least one batch
            rows += batch.num_rows
            for column, mechanism in mechanisms.items():
                statistic = counts_of_batch(batch, column, mechanism, names[column])
                sums[column] = sums[column] + statistic if column in sums else statistic
            advance(batch.num_rows)
    tables = [
        _table(reports, column, mechanism, sums[column], rows, level, candidates)
        for column, mechanism in mechanisms.items()
    ]
    return Estimates(reports, tables, rows)


def _table(
    reports: ReportFile,
    column: str,
    mechanism: Any,
    statistic: Statistic,
    rows: int,
    level: float,
    candidates: list[str] | None,
) -> FrequencyTable:
    """The table of one column; a seeded file's table is marked insecure."""
    if _decoded(mechanism):
        table = FrequencyTable.decoded(
            cast(Decoder, mechanism),
            statistic,
            candidates or [],
            memo=reports.specs[column].get("memo"),
            column=column,
            level=level,
            backend="pandas",
        )
    else:
        estimate = mechanism.debias(statistic)
        shuffled = reports.shuffled
        privacy = shuffled_privacy(reports.specs, shuffled, rows) if shuffled else None
        table = FrequencyTable.build(
            estimate, mechanism, column=column, level=level, backend="pandas", privacy=privacy
        )
    if reports.seeded and not table.privacy.seeded:
        return dataclasses.replace(table, privacy=table.privacy.insecure())
    return table


def long_table(tables: Sequence[FrequencyTable]) -> pd.DataFrame:
    """Every table stacked, with a ``column`` column; categories as text (one type)."""
    frames = []
    for table in tables:
        frame = table.to_pandas()
        labels = frame["category"].map(lambda v: None if v is None else str(v))
        frames.append(frame.assign(category=labels.astype("string")).assign(column=table.column))
    stacked = pd.concat(frames, ignore_index=True)
    return stacked[["column", *(c for c in stacked.columns if c != "column")]]


def check_out(target: Path, reports: Path | None = None) -> str:
    """The kind of an ``--out`` file, refused before any work when it cannot be written or
    would replace the report file it is estimated from (or that file's CSV sidecar)."""
    kind = file_kind(target, "--out")
    if reports is not None and target.resolve() in (
        reports.resolve(),
        sidecar(reports.resolve()),
    ):
        raise ParameterError(f"--out {str(target)!r} would overwrite the reports it estimates")
    if not target.parent.is_dir():
        raise ParameterError(f"--out {str(target)!r}: directory {str(target.parent)!r} not found")
    check_target(target, "--out")
    return kind


def write_table(tables: Sequence[FrequencyTable], target: Path) -> None:
    """Write the stacked tables to CSV or Parquet, atomically."""
    kind = check_out(target)
    frame = long_table(tables)
    with atomic(target) as temporary:
        if kind == "parquet":
            frame.to_parquet(temporary, index=False)
        else:
            frame.to_csv(temporary, index=False)
