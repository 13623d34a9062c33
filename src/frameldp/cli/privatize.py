"""``frameldp privatize``: stream a file through the mechanisms into a self-describing release.

The input (CSV or Parquet) is read in batches of ``--chunk-rows`` rows, so memory is bounded by
one batch whatever the file size. Each batch is validated against the input schema, privatized
(reports addressed by their global row, so the file gets exactly the reports of the in-memory
``df.ldp.privatize`` with the same key) and validated against the release schema before it is
written. The release holds the report columns and the ``--keep`` columns only. It is written to
a temporary file and renamed once complete (a CSV file and its sidecar as a bound pair, see
:class:`~frameldp.cli._writing.StagedOutput`); with ``--ledger``/``--budget`` the release is
checked against the budget before any report is drawn and recorded just before the rename.
From the ledger commit on, SIGTERM and Ctrl-C no longer stop the run (see
:mod:`frameldp.cli._signals`): a committed release exits 0. Only SIGKILL between the ledger
commit and the rename can separate them, and then the ledger over-counts (a charge without a
release), never under-counts.

A ``--seed`` run is insecure (anyone who knows the seed can remove the noise): its guarantee is
marked ``seeded`` in the file's metadata, the ledger and the command's output.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from frameldp.accounting import Ledger, PrivacyGuarantee
from frameldp.cli._inputs import batches, check_output, open_source, require_input_column
from frameldp.cli._progress import rows_progress
from frameldp.cli._signals import committing, pause_at
from frameldp.cli._specs import AUTOMATIC, ColumnSpec, build_mechanism
from frameldp.cli._user_ids import read_user_type, with_user_type
from frameldp.cli._writing import ReportWriter, report_metadata, staged_output
from frameldp.core.collected import collect_columns
from frameldp.core.mechanisms import Mechanism, memoizes
from frameldp.core.randomness import RandomSource, resolve_source
from frameldp.errors import ParameterError, ValidationError, shown
from frameldp.frames.batches import hex_width, privatize_batch, release_columns
from frameldp.frames.fingerprint import drawn_fingerprint
from frameldp.frames.persons import People, rows_per_user, stated_people
from frameldp.frames.release import ReleasePlan, charging, plan_release
from frameldp.schemas import validate_input, validate_release

__all__ = ["Privatized", "privatize_file"]

MAX_CHUNK_ROWS = 2**63 - 1
"""Most rows per batch: the largest batch size pyarrow's Parquet reader takes (a C int64)."""

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
    chosen: dict[str, str] = dataclasses.field(default_factory=dict)
    """The mechanism ``auto`` chose per column (its title)."""
    collected: str = "split"
    """How the columns shared a person's budget (``--collect auto`` resolved)."""


def privatize_file(
    source: Path,
    target: Path,
    specs: Sequence[ColumnSpec],
    *,
    keep: Sequence[str] = (),
    user: str | None = None,
    max_rows_per_user: int | None = None,
    collect: str = "split",
    fake_prior: Mapping[str, Any] | None = None,
    key: bytes | None = None,
    seed: int | None = None,
    memo_key: bytes | None = None,
    ledger: Path | None = None,
    budget: str | None = None,
    chunk_rows: int = 500_000,
    validate: bool = True,
    progress: bool = False,
    on_start: Callable[[], None] | None = None,
) -> Privatized:
    """Privatize ``source`` into ``target`` (see the module docstring). ``on_start`` is called
    once every check has passed, as the first report is about to be drawn."""
    started = time.perf_counter()
    out_kind = check_output(target)
    if not 1 <= chunk_rows <= MAX_CHUNK_ROWS:
        raise ParameterError(
            f"--chunk-rows must be between 1 and 2**63 - 1, got {shown(chunk_rows)}",
            parameter="chunk_rows",
        )
    if target.resolve() == source.resolve():
        raise ParameterError(f"output {str(target)!r} would overwrite the input")
    columns = [spec.column for spec in specs]
    input_file = open_source(source)
    names = input_file.schema.names
    for column in [*columns, *keep, *([user] if user else [])]:
        require_input_column(names, column, source)
    clash = sorted(set(keep) & set(columns))
    if clash:
        raise ParameterError(
            f"--keep {clash[0]!r} is a privatized column: its raw values cannot be released"
        )
    built = {
        spec.column: build_mechanism(spec, input_file.schema.field(spec.column).type)
        for spec in specs
    }
    mechanisms = collect_columns(built, collect, fake_prior)
    randomness = resolve_source(key, seed)
    # A first pass over the user column: a person is the privacy unit.
    people = None if user is None else People(user)
    counted = stated_people(
        user,
        max_rows_per_user,
        names,
        lambda: rows_per_user(
            (batch.column(0) for batch in batches(source, [str(user)], chunk_rows=chunk_rows)),
            user,
            people=people,
        ),
    )
    user_type = None
    if user is not None and any(memoizes(m) for m in mechanisms.values()):
        given = input_file.schema.field(user).type
        user_type = read_user_type(
            given, user, mechanisms, memo_key=memo_key, ledger=ledger, budget=budget
        )
    release = plan_release(
        names,
        mechanisms,
        source=randomness,
        user=user,
        memo_key=memo_key,
        rows_per_user=counted,
        user_type=user_type,
    )
    if seed is not None:
        release = _insecure(release)
    if ledger is not None and not ledger.is_file():
        raise ParameterError(
            f"ledger file {str(ledger)!r} does not exist (create it with `frameldp budget set`)"
        )
    read = [c for c in names if c in {*columns, *keep, *([user] if user else [])}]
    hex_columns = (
        [c for c, m in mechanisms.items() if hex_width(m, c) is not None]
        if out_kind == "csv"
        else []
    )
    metadata = report_metadata(release.specs, release.guarantee, hex_columns)
    job = _Job(mechanisms, release, randomness, list(keep), user, validate)
    with staged_output(target, out_kind) as staged, committing() as commit:
        book = None if ledger is None else Ledger(ledger)
        with (
            charging(book, budget, release),
            rows_progress("privatizing", input_file.rows, show=progress) as advance,
        ):
            if on_start is not None:
                on_start()
            pause_at("start")
            writer = ReportWriter(staged.data, out_kind, metadata)
            numbers = [spec.column for spec in specs if spec.numeric]
            chunks = batches(source, read, chunk_rows=chunk_rows, numbers=numbers)
            if people is not None:  # the ids counted by the first pass, or nothing is written
                chunks = people.checked(chunks)
            if user is not None and user_type is not None:
                chunks = with_user_type(chunks, user, user_type)
            job.run(chunks, writer, advance)
            writer.close(_drawn_records(release.specs, writer.rows))
            staged.seal(metadata)
            commit.begin()  # the ledger commit (leaving this block) and the renames complete
        pause_at("charged")
        staged.commit()
    pause_at("committed")
    names = release_columns(read, mechanisms, keep)
    chosen = {s.column: built[s.column].title for s in specs if s.mechanism == AUTOMATIC}
    seconds = time.perf_counter() - started
    collected = (
        "sample" if any(getattr(m, "collection", None) for m in mechanisms.values()) else "split"
    )
    return Privatized(target, writer.rows, names, release.guarantee, seconds, chosen, collected)


def _drawn_records(specs: Mapping[str, Mapping[str, Any]], rows: int) -> dict[str, dict[str, Any]]:
    """What each column's spec records once its file is complete: its row count and the
    fingerprint of the reports this process drew for it (every batch was written)."""
    records: dict[str, dict[str, Any]] = {}
    for column, spec in specs.items():
        found = drawn_fingerprint(str(spec.get("release")), column)
        if found is not None and int(found.split(":")[0]) == rows:
            records[column] = {"rows": rows, "fingerprint": found}
    return records


def _insecure(release: ReleasePlan) -> ReleasePlan:
    """A release whose guarantees say they were drawn from a seed (if not already)."""
    guarantees = {
        column: guarantee if guarantee.seeded else guarantee.insecure()
        for column, guarantee in release.guarantees.items()
    }
    return dataclasses.replace(release, guarantees=guarantees)


@dataclass
class _Job:
    """One run's mechanisms and key, applied batch after batch."""

    mechanisms: dict[str, Mechanism]
    release: ReleasePlan
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
                if row == 0:
                    pause_at("batch")
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
            {**f, "row": row + row_start} if isinstance(row := f.get("row"), int) else f
            for f in error.failures
        ]
        raise ValidationError(str(error), failures, error.total) from None


def _summary(schema: str, failures: list[dict[str, object]], total: int) -> str:
    columns = sorted({str(f.get("column")) for f in failures})
    return (
        f"{schema} validation failed: {total} failure(s) in column(s) {', '.join(columns)}; "
        "nothing was written"
    )
