"""``frameldp estimate``: debiased frequency tables (and numeric columns' means and
distributions) from a stored, self-describing report file.

The file's metadata names the mechanism of every report column (see :mod:`frameldp.cli._metadata`),
so nothing has to be passed again. The file is read in batches and each column's additive
statistic (bit sums, label counts, per-cohort Bloom counts) is summed, so memory does not grow
with the file; the estimate equals that of ``reports.ldp.debias`` on the whole column. The
tables of a file drawn from a ``--seed`` (or shuffled with one) carry a guarantee marked
``seeded``: printed as INSECURE.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pyarrow as pa

from frameldp._atomic import atomic, check_target
from frameldp.cli._inputs import file_kind, sidecar
from frameldp.cli._progress import rows_progress
from frameldp.cli._report_file import ReportFile, read_report_file
from frameldp.cli._stacked import read_releases
from frameldp.core.mechanisms import (
    Capability,
    Decoder,
    Mechanism,
    Statistic,
    mechanism_from_spec,
)
from frameldp.errors import ParameterError, shown
from frameldp.frames.grouping import (
    Grouped,
    Reduction,
    check_group_columns,
    grouped_statistics,
    merge_grouped,
)
from frameldp.frames.inputs import require_column
from frameldp.frames.lookup import find_discoverer, report_names
from frameldp.frames.pipeline import column_context
from frameldp.frames.query import Query, flat_query, joint_query
from frameldp.frames.release import guarantee_of
from frameldp.frames.shuffling import shuffled_privacy
from frameldp.results.distribution import DistributionTable
from frameldp.results.mean import MeanEstimate
from frameldp.results.table import FrequencyTable

__all__ = ["Estimates", "check_out", "discover_file", "estimate_file", "long_table", "write_table"]


@dataclass(frozen=True)
class Estimates:
    """The tables of one report file, and how many reports it holds."""

    reports: ReportFile
    tables: list[Any]
    """A :class:`~frameldp.results.table.FrequencyTable` per categorical column or pair, a
    :class:`~frameldp.results.mean.MeanEstimate` or
    :class:`~frameldp.results.distribution.DistributionTable` per numeric column."""
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
        if (candidates is not None or not _decoded(mechanism_from_spec(reports.specs[c])))
        and not _discovered(mechanism_from_spec(reports.specs[c]))
    ]
    if not chosen:
        raise ParameterError(
            f"reports {str(reports.path)!r}: only open-domain columns are recorded "
            f"({', '.join(recorded)}); pass --candidates-file to decode Bloom RAPPOR columns, "
            "and find the strings of prefix-extending columns with frameldp discover"
        )
    return chosen


def _decoded(mechanism: Mechanism) -> bool:
    """Whether the mechanism's reports are decoded against candidates (not debiased)."""
    return Capability.CANDIDATES in mechanism.capabilities


def _discovered(mechanism: Mechanism) -> bool:
    """Whether the mechanism's reports are searched for frequent strings (``discover``)."""
    return Capability.DISCOVERY in mechanism.capabilities


def discover_file(
    path: Path,
    column: str | None = None,
    *,
    top: int = 20,
    width: int | None = None,
    significance: float = 0.05,
    level: float = 0.95,
    chunk_rows: int = 1_000_000,
) -> FrequencyTable:
    """The frequent strings of a prefix-extending report column of ``path``: the file is read
    in batches once per level (memory does not grow with it), and the table equals that of
    ``reports.ldp.discover`` on the whole column."""
    reports = read_report_file(path)
    column, mechanism, names = find_discoverer(column, None, reports.specs)

    def gather(reduce: Callable[[Mapping[str, pa.Array]], Statistic]) -> Statistic:
        reduction = Reduction(tuple(names), reduce, column)
        total = Grouped()
        for batch in reports.batches(names, chunk_rows=chunk_rows):
            arrays = {name: batch.column(name) for name in names}
            total = merge_grouped(total, grouped_statistics(arrays, reduction, ()))
        return cast(Statistic, total.only())

    with column_context(column):
        discovery = mechanism.discover(
            gather, column=column, top=top, width=width, significance=significance
        )
    seeded = reports.seeded or bool(reports.specs[column].get("seeded"))
    return FrequencyTable.discovered(
        mechanism, discovery, column=column, level=level, backend="pandas", seeded=seeded
    )


def estimate_file(
    path: Path | Sequence[Path],
    columns: Sequence[str] = (),
    *,
    releases: str | None = None,
    by: Sequence[str] = (),
    joint: Sequence[tuple[str, str]] = (),
    level: float = 0.95,
    candidates: list[str] | None = None,
    chunk_rows: int = 1_000_000,
    progress: bool = False,
) -> Estimates:
    """Debiased tables of the report columns of ``path`` (see the module docstring): one per
    column (by the public ``by`` columns when given), and one joint table per pair of
    ``joint`` columns (then only the columns named with ``columns`` get their own table).
    Several files are several releases: refused unless ``releases="compose"``
    (:mod:`frameldp.cli._stacked`)."""
    reports = read_releases([path] if isinstance(path, Path) else list(path), releases)
    chosen = [] if joint and not columns else _columns(reports, columns, candidates)
    paired = [column for pair in joint for column in pair]
    for column in paired:
        require_column(list(reports.specs), column)
    mechanisms = {c: mechanism_from_spec(reports.specs[c]) for c in dict.fromkeys(chosen + paired)}
    for column, mechanism in mechanisms.items():
        if _discovered(mechanism):
            raise ParameterError(
                f"column {shown(column)}: {mechanism.title} reports have an open domain: find "
                "their frequent strings with frameldp discover"
            )
        if _decoded(mechanism) and candidates is None and column in chosen:
            raise ParameterError(
                f"column {shown(column)}: {mechanism.title} reports are decoded against candidate "
                "strings: pass --candidates-file"
            )
    names = {c: report_names(c, m, reports.specs[c]) for c, m in mechanisms.items()}
    # Every recorded report column and its companions (a Bloom cohort column) is private.
    reported = {
        name
        for column, spec in reports.specs.items()
        for name in report_names(column, mechanism_from_spec(spec), spec)
    }
    keys = check_group_columns(list(by) or None, reports.names, reported, chosen + paired)
    if "column" in keys:
        raise ParameterError("--by 'column': the written table has a column of that name")
    if keys and any(_decoded(mechanisms[c]) for c in chosen):
        raise ParameterError("--by: Bloom RAPPOR reports are decoded as a whole, not by group")
    plans = [flat_query(c, mechanisms[c], names[c], keys) for c in chosen]
    plans += [_joint(reports, pair, mechanisms, names, keys) for pair in joint]
    read = list(dict.fromkeys([*(n for plan in plans for n in plan.reduction.names), *keys]))
    sums = [Grouped() for _ in plans]
    rows = 0
    with rows_progress("estimating", reports.rows, show=progress) as advance:
        for batch in reports.batches(read, chunk_rows=chunk_rows, text=keys):  # >= one batch
            rows += batch.num_rows
            arrays = {name: batch.column(name) for name in read}
            for i, plan in enumerate(plans):
                part = grouped_statistics(arrays, plan.reduction, keys)
                sums[i] = merge_grouped(sums[i], part)
            advance(batch.num_rows)
    tables = [
        _table(reports, plan, grouped, rows, level, candidates)
        for plan, grouped in zip(plans, sums, strict=True)
    ]
    return Estimates(reports, tables, rows)


def _joint(
    reports: ReportFile,
    pair: tuple[str, str],
    mechanisms: dict[str, Mechanism],
    names: dict[str, list[str]],
    by: tuple[str, ...],
) -> Query:
    types = (reports.report_type(pair[0]), reports.report_type(pair[1]))
    found = (mechanisms[pair[0]], mechanisms[pair[1]])
    return joint_query(pair, found, (names[pair[0]], names[pair[1]]), types, by)


def _table(
    reports: ReportFile,
    plan: Query,
    grouped: Grouped,
    rows: int,
    level: float,
    candidates: list[str] | None,
) -> FrequencyTable:
    """The table of one column or pair; a seeded file's table is marked insecure."""
    if isinstance(plan.column, str) and _decoded(cast(Mechanism, plan.mechanism)):
        table = FrequencyTable.decoded(
            cast(Decoder, plan.mechanism),
            cast(Statistic, grouped.only()),
            candidates or [],
            memo=reports.specs[plan.column].get("memo"),
            column=plan.column,
            level=level,
            backend="pandas",
        )
    else:
        shuffled = reports.shuffled
        privacy = (
            shuffled_privacy(reports.specs, shuffled, rows)
            if shuffled
            else _recorded_privacy(reports, plan.column)
        )
        table = plan.finish(grouped, level=level, privacy=privacy, backend="pandas")
        if not isinstance(table, FrequencyTable | MeanEstimate | DistributionTable):
            raise ParameterError(
                f"column {shown(plan.reduction.label)}: frameldp estimate writes frequency "
                f"tables, means and distributions; these reports estimate a "
                f"{type(table).__name__}"
            )
    if reports.seeded and not table.privacy.seeded:
        return dataclasses.replace(table, privacy=table.privacy.insecure())
    return table


def _recorded_privacy(reports: ReportFile, column: str | tuple[str, str]) -> Any:
    """The guarantee of a column (or of a joint table's two columns, composed) as its release
    recorded it, where that says more than the mechanisms' own (one person's rows, a memo, the
    releases of several files); None for plain one-report-per-person columns."""
    specs = {
        name: reports.specs[name] for name in ((column,) if isinstance(column, str) else column)
    }
    if any(spec.get("rows_per_user", 1) > 1 or spec.get("memo") for spec in specs.values()):
        return guarantee_of(specs)
    return None


def long_table(tables: Sequence[Any]) -> pd.DataFrame:
    """Every table stacked, with a ``column`` column (``"a,b"`` for a joint table) and the
    group columns of grouped tables; categories as text (one type: ``"x|y"`` for a pair).
    Means and distributions of numeric columns bring their own columns (empty elsewhere)."""
    frames = []
    for table in tables:
        if not isinstance(table, FrequencyTable):
            frames.append(table.to_pandas().assign(column=str(table.column)))
            continue
        frame = table.to_pandas()
        if table.joint:
            labels = pd.Series(["|".join(str(v) for v in label) for label in table.labels])
            frame = frame.drop(columns=list(table.label_columns))
            frame.insert(len(table.by), "category", labels.iloc[frame.index % len(labels)].array)
        labels = frame["category"].map(lambda v: None if v is None else str(v))
        name = ",".join(table.column) if isinstance(table.column, tuple) else table.column
        frames.append(frame.assign(category=labels.astype("string")).assign(column=name))
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


def write_table(tables: Sequence[Any], target: Path) -> None:
    """Write the stacked tables to CSV or Parquet, atomically."""
    kind = check_out(target)
    frame = long_table(tables)
    with atomic(target) as temporary:
        if kind == "parquet":
            frame.to_parquet(temporary, index=False)
        else:
            frame.to_csv(temporary, index=False)
