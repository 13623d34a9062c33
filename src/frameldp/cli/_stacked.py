"""Several report files estimated as one collection: ``frameldp estimate a.parquet b.parquet
--releases compose``.

Each file is a release with its own release id. Rows of several releases are never read as one
release, whose guarantee would understate what a person holding a report in each lost: without
``--releases compose`` the command refuses, naming the releases. With it, the files are read one
after the other and each column's guarantee is that of the stacked releases
(:func:`frameldp.frames.releases.stacked_types`): one mechanism per column, each person's rows
per release added up. Plumbing only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from frameldp.cli._report_file import ReportFile, read_report_file
from frameldp.errors import ParameterError, shown
from frameldp.frames.releases import stacked_types
from frameldp.frames.report_type import ReportMetadata, release_ids

__all__ = ["RELEASES", "StackedReports", "read_releases"]

RELEASES = ("compose",)
"""What ``--releases`` takes: how the releases of several files are read together."""


@dataclass(frozen=True)
class StackedReports(ReportFile):
    """The report files of several releases read one after the other."""

    parts: tuple[ReportFile, ...] = ()
    types: dict[str, ReportMetadata] = field(default_factory=dict)

    @property
    def rows(self) -> int | None:
        """Number of reports of every file, when each says it without being read."""
        counts = [part.rows for part in self.parts]
        return None if any(n is None for n in counts) else sum(n or 0 for n in counts)

    @property
    def names(self) -> list[str]:
        """Every column of the files (the same in each)."""
        return self.parts[0].names

    @property
    def seeded(self) -> bool:
        """Whether any file's reports (or order) came from a seed."""
        return any(part.seeded for part in self.parts)

    def report_type(self, column: str) -> ReportMetadata:
        """The stacked type of ``column``: every release id, the rows per person summed."""
        return self.types[column]

    def batches(
        self, columns: Sequence[str], *, chunk_rows: int, text: Sequence[str] = ()
    ) -> Iterator[pa.RecordBatch]:
        """Each file's batches in turn."""
        for part in self.parts:
            yield from part.batches(columns, chunk_rows=chunk_rows, text=text)


def read_releases(paths: Sequence[Path], releases: str | None) -> ReportFile:
    """One report file, or several stacked with ``releases="compose"`` (refused otherwise,
    naming the releases)."""
    if not paths:
        raise ParameterError("estimate needs at least one report file")
    if releases is not None and releases not in RELEASES:
        raise ParameterError(f"--releases must be one of {RELEASES}, got {shown(releases)}")
    files = [read_report_file(path) for path in paths]
    if len(files) == 1:
        return files[0]
    named = ", ".join(repr(str(part.path)) for part in files)
    ids = sorted({i for part in files for spec in part.specs.values() for i in release_ids(spec)})
    if releases is None:
        raise ParameterError(
            f"reports {named}: {len(files)} files of {len(ids) or 'unrecorded'} releases "
            f"({', '.join(i[:8] for i in ids)}); a table over them as one release would "
            "understate what a person holding a report in each lost. Pass --releases compose "
            "(each person's reports in every file compose), or estimate each file on its own"
        )
    for part in files[1:]:
        if part.names != files[0].names:
            raise ParameterError(
                f"reports {named}: the files hold other columns ({shown(files[0].names)} and "
                f"{shown(part.names)})"
            )
    if any(part.shuffled for part in files):
        raise ParameterError(
            f"reports {named}: a shuffled file's amplification holds for its own rows only; "
            "estimate it on its own"
        )
    types = stacked_types([{c: part.report_type(c) for c in part.specs} for part in files])
    first = files[0]
    specs = {column: dict(meta.spec) for column, meta in types.items()}
    return StackedReports(
        first.path, first.kind, specs, None, (), {}, parts=tuple(files), types=types
    )
