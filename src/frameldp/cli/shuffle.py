"""``frameldp shuffle``: the shuffler of the shuffle model, for a file of reports.

A report file that records its mechanisms (a ``frameldp privatize`` release, Parquet or CSV
with its sidecar; a Parquet file written from a privatized pandas frame) keeps its report
columns only (Bloom cohorts included) plus the ``--keep`` and ``--column`` ones, which void the
shuffle guarantee. A file that records none shuffles the ``--column`` columns, as text for CSV.
The rows are permuted with the keyed CSPRNG, bound to their content (the permutation of
``reports.ldp.shuffle`` of the same reports with the same key or seed; CSV holds RAPPOR
reports as hex text, so its order differs from Parquet's), and the output is a report file like
the input: Parquet metadata, or a CSV with its bound sidecar
(:class:`~frameldp.cli._writing.StagedOutput`), both recording the shuffle
(:func:`~frameldp.frames.shuffling.shuffle_record`), so ``frameldp estimate`` reports the
amplified (central) guarantee.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import typer

from frameldp._atomic import atomic
from frameldp.accounting import PrivacyGuarantee
from frameldp.accounting.guarantee import INSECURE
from frameldp.cli._errors import user_errors, warnings_as_lines
from frameldp.cli._inputs import (
    arrow_message,
    batches,
    check_output,
    file_kind,
    open_source,
    read_key,
    require_input_column,
)
from frameldp.cli._report_file import ReportFile, find_report_file
from frameldp.cli._signals import committing, terminate_cleanly
from frameldp.cli._writing import ReportWriter, report_metadata, staged_output
from frameldp.core.mechanisms import mechanism_from_spec
from frameldp.errors import ParameterError
from frameldp.frames.batches import hex_width
from frameldp.frames.inputs import METADATA_KEY
from frameldp.frames.shuffling import (
    SHUFFLED_KEY,
    plan_shuffle,
    refuse_other_rows,
    refuse_repeated_rows,
    shuffle_order,
    shuffle_record,
    shuffled_privacy,
)

__all__ = ["Shuffled", "run_shuffle", "shuffle_file"]


@dataclass(frozen=True)
class Shuffled:
    """What a shuffle wrote, and the guarantee its analyst gets (None without mechanisms)."""

    rows: int
    columns: list[str]
    guarantee: PrivacyGuarantee | None


def shuffle_file(
    source: Path,
    target: Path,
    *,
    columns: list[str],
    keep: list[str],
    seed: int | None,
    key_file: Path | None,
) -> Shuffled:
    """Shuffle ``source`` into ``target`` (see the module docstring)."""
    kind = check_output(target)
    file_kind(source, "input")
    if not source.is_file():
        raise ParameterError(f"input {str(source)!r}: no such file")
    if target.resolve() == source.resolve():
        raise ParameterError(f"output {str(target)!r} would overwrite the input")
    if seed is not None and key_file is not None:
        raise ParameterError("pass --seed or --key-file, not both")
    key = read_key(key_file, "--key-file")
    reports = find_report_file(source)
    if reports is None:
        return _shuffle_plain(source, target, kind, columns, keep, key, seed)
    extra = keep + [c for c in columns if c not in keep]
    kept, record = plan_shuffle(reports.names, reports.specs, extra, None)
    table = _read_all(reports, kept, text=[c for c in kept if c in extra])
    # A shuffle counts every row as another person: the file must hold its release's rows,
    # each once (a file of repeated or other rows is refused, as by reports.ldp.shuffle).
    refuse_repeated_rows(reports.specs, table.num_rows)
    refuse_other_rows(reports.specs, table.column)
    order = shuffle_order(table.columns, table.num_rows, key, seed)
    shuffled = table.take(pa.array(order))
    # The count of shuffled reports, and whether a seed (known to others) ordered them.
    record = {**record, "reports": table.num_rows, **({"seeded": True} if seed is not None else {})}
    guarantee = reports.guarantee
    if seed is not None and guarantee is not None and not guarantee.seeded:
        guarantee = guarantee.insecure()
    hex_columns = [
        c
        for c in reports.specs
        if kind == "csv" and hex_width(mechanism_from_spec(reports.specs[c]), c) is not None
    ]
    metadata = report_metadata(reports.specs, guarantee, hex_columns, record)
    central = shuffled_privacy(reports.specs, record, table.num_rows)  # may refuse: write after
    _write(target, kind, shuffled, metadata)
    if central is not None and (seed is not None or reports.seeded) and not central.seeded:
        central = central.insecure()
    return Shuffled(table.num_rows, list(shuffled.column_names), central)


def _read_all(reports: ReportFile, columns: list[str], text: list[str]) -> pa.Table:
    """The ``columns`` of a report file, whole (a shuffle needs every row); the CSV columns in
    ``text`` are read as text (their type then never depends on where a block starts)."""
    try:
        chunks = list(reports.batches(columns, chunk_rows=1 << 20, text=text))
    except (OSError, pa.ArrowException) as error:
        raise ParameterError(
            f"input {str(reports.path)!r}: cannot read it: {arrow_message(error)}"
        ) from None
    return pa.Table.from_batches(chunks).combine_chunks()


def _write(target: Path, kind: str, table: pa.Table, metadata: dict[str, Any]) -> None:
    """Write a shuffled report file (and its sidecar) atomically."""
    with staged_output(target, kind) as staged, committing() as commit:
        writer = ReportWriter(staged.data, kind, metadata)
        for batch in table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]:
            writer.write(batch)
        writer.close()
        staged.seal(metadata)
        commit.begin()
        staged.commit()


def _shuffle_plain(
    source: Path,
    target: Path,
    kind: str,
    columns: list[str],
    keep: list[str],
    key: bytes | None,
    seed: int | None,
) -> Shuffled:
    """A file that records no mechanisms: the named columns, shuffled (CSV cells as text)."""
    if not columns:
        where = "metadata" if source.suffix.lower() == ".parquet" else "metadata file"
        raise ParameterError(
            f"input {str(source)!r}: no report columns are recorded in this file (no frameldp "
            f"{where}); name them with --column"
        )
    names = open_source(source).schema.names
    chosen = [*columns, *(c for c in keep if c not in columns)]
    for column in chosen:
        require_input_column(list(names), column, source)
    try:
        table = pa.Table.from_batches(list(batches(source, chosen, chunk_rows=1 << 20)))
    except (OSError, pa.ArrowException) as error:
        raise ParameterError(
            f"input {str(source)!r}: cannot read it: {arrow_message(error)}"
        ) from None
    order = shuffle_order(table.columns, table.num_rows, key, seed)
    shuffled = table.take(pa.array(order)).combine_chunks()
    record = shuffle_record(keep, table.num_rows)
    with atomic(target) as temporary:
        if kind == "parquet":
            attrs = {METADATA_KEY: {SHUFFLED_KEY: record}}
            metadata = {b"PANDAS_ATTRS": json.dumps(attrs).encode()}
            pq.write_table(shuffled.replace_schema_metadata(metadata), temporary)
        else:
            pacsv.write_csv(shuffled, temporary)
    return Shuffled(table.num_rows, list(shuffled.column_names), None)


def run_shuffle(
    source: Path,
    target: Path,
    columns: list[str],
    keep: list[str],
    seed: int | None,
    key_file: Path | None,
    delta: float,
) -> None:
    """The command: shuffle, then report what the analyst of ``target`` can learn."""
    with terminate_cleanly():
        with user_errors(), warnings_as_lines():
            if not 0.0 < delta < 1.0:
                raise ParameterError(f"--delta must be in (0, 1), got {delta}")
            if seed is not None:
                typer.echo(
                    f"warning: --seed: {INSECURE} (here: the order of the rows, which undoes the "
                    "shuffle); for tests only",
                    err=True,
                )
            done = shuffle_file(
                source, target, columns=columns, keep=keep, seed=seed, key_file=key_file
            )
        typer.echo(f"wrote {done.rows} shuffled rows, columns {done.columns}, to {target}")
        guarantee = done.guarantee
        mark = f" [{INSECURE}]" if guarantee is not None and guarantee.seeded else ""
        if guarantee is not None and guarantee.shuffled:
            local = guarantee.parameters["local_epsilon"]
            people = int(guarantee.parameters["reports"])
            hidden = (
                f"{done.rows} reports, one per person"
                if people == done.rows
                else f"the {done.rows} reports of at least {people} people"
            )
            typer.echo(
                f"central ε = {guarantee.epsilon_at(delta):.6g} at δ = {delta:g} "
                f"(local ε0 = {local:.6g} per person, amplified by shuffling {hidden}){mark}"
            )
            typer.echo(f"for one person: {guarantee.accountant.profile.summary(delta)}{mark}")
        elif guarantee is not None:
            typer.echo(
                f"privacy per person: ε = {guarantee.epsilon:.6g} (local: no amplification, "
                f"the kept columns travel with each report){mark}"
            )
