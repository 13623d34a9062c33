"""``frameldp privatize``: stream a file through the mechanisms into a self-describing release.

The input (CSV or Parquet) is read in batches of ``--chunk-rows`` rows, so memory is bounded by
one batch whatever the file size. Each batch is validated against the input schema, privatized
(reports addressed by their global row, so the file gets exactly the reports of the in-memory
``df.ldp.privatize`` with the same key) and validated against the release schema before it is
written. The release holds the report columns and the ``--keep`` columns only. It is written to
a temporary file and renamed once complete; with ``--ledger``/``--budget`` the release is
checked against the budget before any report is drawn and recorded before the rename (a crash
in between over-counts, never under-counts).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import polars as pl
import pyarrow as pa

from frameldp._atomic import atomic
from frameldp.accounting import Ledger, PrivacyGuarantee
from frameldp.cli._files import (
    ReportWriter,
    batches,
    file_kind,
    open_source,
    report_metadata,
    sidecar,
)
from frameldp.cli._progress import rows_progress
from frameldp.cli._specs import ColumnSpec, build_mechanism
from frameldp.core.mechanisms import BloomRappor, Rappor
from frameldp.core.randomness import RandomSource, resolve_source
from frameldp.errors import ParameterError, ValidationError
from frameldp.frames._batches import privatize_batch, release_columns
from frameldp.frames._common import (
    Applicable,
    Release,
    charging,
    plan_release,
    require_column,
)
from frameldp.schemas import validate_input, validate_release

__all__ = ["Privatized", "privatize_file"]

MAX_FAILURES = 1000
"""Validation failures kept (and counted beyond) while the rest of the input is checked."""


@dataclass(frozen=True)
class Privatized:
    """What a run wrote."""

    target: Path
    rows: int
    columns: list[str]
    guarantee: PrivacyGuarantee
    seconds: float


def privatize_file(
    source: Path,
    target: Path,
    specs: Sequence[ColumnSpec],
    *,
    keep: Sequence[str] = (),
    user: str | None = None,
    key: bytes | None = None,
    seed: int | None = None,
    memo_key: bytes | None = None,
    ledger: Path | None = None,
    budget: str | None = None,
    chunk_rows: int = 500_000,
    validate: bool = True,
    progress: bool = False,
) -> Privatized:
    """Privatize ``source`` into ``target`` (see the module docstring)."""
    started = time.perf_counter()
    out_kind = file_kind(target, "output")
    if chunk_rows < 1:
        raise ParameterError(f"--chunk-rows must be >= 1, got {chunk_rows}")
    if target.resolve() == source.resolve():
        raise ParameterError(f"output {str(target)!r} would overwrite the input")
    if not target.parent.is_dir():
        raise ParameterError(f"output {str(target)!r}: directory {str(target.parent)!r} not found")
    columns = [spec.column for spec in specs]
    input_file = open_source(source)
    names = input_file.schema.names
    for column in [*columns, *keep, *([user] if user else [])]:
        require_column(names, column)
    clash = sorted(set(keep) & set(columns))
    if clash:
        raise ParameterError(
            f"--keep {clash[0]!r} is a privatized column: its raw values cannot be released"
        )
    mechanisms = {
        spec.column: build_mechanism(spec, input_file.schema.field(spec.column).type)
        for spec in specs
    }
    randomness = resolve_source(key, seed)
    release = plan_release(names, mechanisms, source=randomness, user=user, memo_key=memo_key)
    if ledger is not None and not ledger.is_file():
        raise ParameterError(
            f"ledger file {str(ledger)!r} does not exist (create it with `frameldp budget set`)"
        )
    read = [c for c in names if c in {*columns, *keep, *([user] if user else [])}]
    hex_columns = (
        [c for c, m in mechanisms.items() if isinstance(m, Rappor | BloomRappor)]
        if out_kind == "csv"
        else []
    )
    metadata = report_metadata(release.specs, release.guarantee, hex_columns)
    job = _Job(mechanisms, release, randomness, list(keep), user, validate)
    with contextlib.ExitStack() as files:
        temporary = files.enter_context(atomic(target))
        if out_kind == "csv":
            beside = files.enter_context(atomic(sidecar(target)))
        book = None if ledger is None else Ledger(ledger)
        with (
            charging(book, budget, release),
            rows_progress("privatizing", input_file.rows, show=progress) as advance,
        ):
            writer = ReportWriter(temporary, out_kind, metadata)
            job.run(batches(source, read, chunk_rows=chunk_rows), writer, advance)
            writer.close()
        if out_kind == "csv":
            beside.write_text(json.dumps(metadata, indent=1))
    names = release_columns(read, mechanisms, keep)
    return Privatized(target, writer.rows, names, release.guarantee, time.perf_counter() - started)


@dataclass
class _Job:
    """One run's mechanisms and key, applied batch after batch."""

    mechanisms: dict[str, Applicable]
    release: Release
    randomness: RandomSource
    keep: list[str]
    user: str | None
    validate: bool

    def release_of(self, batch: pa.RecordBatch, row_start: int) -> pa.RecordBatch:
        """The validated release of one batch whose first row is ``row_start``."""
        out = privatize_batch(
            batch,
            self.mechanisms,
            source=self.randomness,
            release=self.release,
            keep=self.keep,
            user=self.user,
            row_start=row_start,
        )
        if self.validate:
            _check(
                row_start,
                validate_release,
                pl.from_arrow(out),
                self.release.specs,
                passthrough=self.keep,
            )
        return out

    def run(
        self,
        chunks: Iterator[pa.RecordBatch],
        writer: ReportWriter,
        advance: Callable[[int], None],
    ) -> None:
        """Validate every batch; privatize and write them while all are valid. After the first
        invalid batch the rest are only validated, so every failure is reported at once."""
        failures: list[dict[str, object]] = []
        total = 0
        row = 0
        for batch in chunks:
            if self.validate:
                try:
                    _check(
                        row, validate_input, pl.from_arrow(batch), self.mechanisms, user=self.user
                    )
                except ValidationError as error:
                    total += error.total
                    failures += error.failures[: MAX_FAILURES - len(failures)]
            if not failures:
                writer.write(self.release_of(batch, row))
            row += batch.num_rows
            advance(batch.num_rows)
        if failures:
            raise ValidationError(_summary("input", failures, total), failures, total)


def _check(row_start: int, check: Callable[..., object], *args: Any, **options: Any) -> None:
    """Run a schema check (collecting every failure); failures name rows of the whole file."""
    try:
        check(*args, lazy=True, **options)
    except ValidationError as error:
        failures = [
            {**f, "row": f["row"] + row_start} if isinstance(f.get("row"), int) else f
            for f in error.failures
        ]
        raise ValidationError(str(error), failures, error.total) from None


def _summary(schema: str, failures: list[dict[str, object]], total: int) -> str:
    columns = sorted({str(f.get("column")) for f in failures})
    return (
        f"{schema} validation failed: {total} failure(s) in column(s) {', '.join(columns)}; "
        "nothing was written"
    )


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """SIGTERM (a scheduler stopping the job) exits through Python, so the temporary output is
    removed and the ledger transaction rolled back, as on Ctrl-C."""

    def stop(signum: int, frame: FrameType | None) -> Any:
        sys.exit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
