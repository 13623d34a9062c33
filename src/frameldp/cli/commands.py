"""What ``frameldp privatize`` and ``frameldp estimate`` print (their errors: ``_errors``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from frameldp._atomic import check_target
from frameldp.accounting.guarantee import INSECURE, PrivacyGuarantee
from frameldp.cli._errors import user_errors, warnings_as_lines
from frameldp.cli._inputs import read_fake_prior, read_key, read_text
from frameldp.cli._signals import terminate_cleanly
from frameldp.cli._specs import memoized_where_used, specs_from_file, specs_from_options
from frameldp.cli.estimate import check_out, discover_file, estimate_file, write_table
from frameldp.cli.privatize import privatize_file
from frameldp.core.estimation import normal_quantile
from frameldp.errors import ParameterError, shown
from frameldp.results.distribution import DistributionTable
from frameldp.results.mean import MeanEstimate
from frameldp.results.table import FrequencyTable

__all__ = ["insecure_mark", "run_discover", "run_estimate", "run_privatize", "warn_seeded"]

SEED_WARNING = (
    f"--seed: {INSECURE}. Use it for tests and simulations only, never to release real "
    "people's data"
)


def insecure_mark(guarantee: PrivacyGuarantee | None) -> str:
    """`` [INSECURE: ...]`` for a seeded guarantee, else nothing."""
    return f" [{INSECURE}]" if guarantee is not None and guarantee.seeded else ""


def run_privatize(
    source: Path,
    target: Path,
    *,
    columns: list[str],
    mechanisms: list[str],
    epsilons: list[float],
    domain_files: list[Path],
    spec: Path | None,
    keep: list[str],
    shared: dict[str, Any],
    user: str | None,
    max_rows_per_user: int | None,
    memo_key_file: Path | None,
    seed: int | None,
    collect: str = "split",
    fake_prior: Path | None = None,
    key_file: Path | None,
    ledger: Path | None,
    budget: str | None,
    chunk_rows: int,
    validate: bool,
    delta: float,
) -> None:
    """The ``privatize`` command."""
    with terminate_cleanly():
        with user_errors(), warnings_as_lines():
            _check_delta(delta)
            if spec is not None:
                given = [f"--{name.replace('_', '-')}" for name, value in shared.items() if value]
                if columns or mechanisms or epsilons or domain_files or given:
                    also = ", ".join(given) or "--column, --mechanism, --epsilon or --domain-file"
                    raise ParameterError(
                        f"--spec describes every column: give its options there, not {also}"
                    )
                specs = specs_from_file(spec)
            else:
                specs = specs_from_options(columns, mechanisms, epsilons, domain_files, **shared)
                specs = memoized_where_used(specs, user)
            if seed is not None and key_file is not None:
                raise ParameterError("pass --seed or --key-file, not both")
            if (ledger is None) != (budget is None):
                raise ParameterError(
                    f"--ledger and --budget go together; got --ledger {ledger}, --budget {budget}"
                )
            done = privatize_file(
                source,
                target,
                specs,
                keep=keep,
                user=user,
                max_rows_per_user=max_rows_per_user,
                collect=collect,
                fake_prior=None if fake_prior is None else read_fake_prior(fake_prior),
                key=read_key(key_file, "--key-file"),
                seed=seed,
                memo_key=read_key(memo_key_file, "--memo-key-file"),
                ledger=ledger,
                budget=budget,
                chunk_rows=chunk_rows,
                validate=validate,
                progress=True,
                on_start=warn_seeded if seed is not None else None,
            )
        # Committed: signals are ignored from here on, and no error can undo the release.
        rate = done.rows / done.seconds if done.seconds > 0 else float("inf")
        typer.echo(
            f"wrote {done.rows} rows, columns {done.columns}, to {target} "
            f"({done.seconds:.1f} s, {rate:,.0f} rows/s)"
        )
        for column, title in done.chosen.items():
            typer.echo(f"{column}: {title} (chosen by auto: the smallest variance)")
        if collect == "auto":
            typer.echo(f"--collect auto: {done.collected} (the smaller total variance)")
        elif collect == "sample":
            typer.echo("--collect sample: one column per row, chosen at random; the others null")
        elif collect == "sample+fake":
            fakes = "a public prior" if fake_prior is not None else "uniform values"
            typer.echo(
                "--collect sample+fake: one column per row real, chosen at random; the others "
                f"fake reports of {fakes}"
            )
        g = done.guarantee
        typer.echo(
            f"privacy per person: ε = {g.epsilon:.6g} (pure, local); "
            f"ε = {g.epsilon_at(delta):.6g} at δ = {delta:g}{insecure_mark(g)}"
        )
        typer.echo(f"for one person: {g.accountant.profile.summary(delta)}{insecure_mark(g)}")
        if budget is not None:
            typer.echo(f"charged to budget {budget!r} of ledger {ledger}")


def _named(mechanism: Any) -> str:
    """A mechanism's name in a table's title (a sampled column's says so)."""
    return str(getattr(mechanism, "label", None) or type(mechanism).__name__)


def warn_seeded() -> None:
    """The warning of a ``--seed`` run, on standard error as the run starts."""
    typer.echo(f"warning: {SEED_WARNING}", err=True)


def run_estimate(
    reports: list[Path],
    *,
    columns: list[str],
    by: list[str] | None = None,
    joint: list[str] | None = None,
    out: Path | None,
    plot: Path | None,
    level: float,
    candidates_file: Path | None,
    top: int | None,
    delta: float,
    releases: str | None = None,
    means: list[str] | None = None,
    quantiles: list[str] | None = None,
) -> None:
    """The ``estimate`` command (``means``: numeric columns whose mean is printed, a Square
    Wave column's from its distribution; ``quantiles``: ``COLUMN:q1,q2,...`` of Square Wave
    columns)."""
    with terminate_cleanly(), user_errors():
        _check_delta(delta)
        normal_quantile(level)  # --level is refused before any work
        if out is not None:
            for path in reports:
                check_out(out, path)
        if plot is not None:
            _check_plot(plot)
        candidates = None
        if candidates_file is not None:
            candidates = _read_candidates(candidates_file)
        pairs = [_pair(text) for text in joint or []]
        asked = [_quantiles(text) for text in quantiles or []]
        if asked and by:
            raise ParameterError("--quantiles is of a whole column: it does not take --by")
        shown_columns = [*columns, *(means or [])]  # --quantiles alone prints its quantiles
        if columns or means or asked:  # the columns named, else every recorded one
            columns = list(dict.fromkeys([*columns, *(means or []), *(c for c, _ in asked)]))
        found = estimate_file(
            reports,
            columns,
            releases=releases,
            by=by or [],
            joint=pairs,
            level=level,
            candidates=candidates,
            progress=True,
        )
        quantile_frames = [
            (column, _quantile_frame(found.tables, column, qs)) for column, qs in asked
        ]
        for table in found.tables:
            if table.column in (means or []) and isinstance(table, FrequencyTable):
                raise ParameterError(
                    f"--mean {shown(table.column)}: its reports estimate frequencies, not a "
                    "mean (a numeric mechanism's column has one)"
                )
        tables = [
            table.mean()
            if isinstance(table, DistributionTable) and table.column in (means or [])
            else table
            for table in found.tables
            if not asked
            or table.column in shown_columns
            or not any(table.column == column for column, _ in asked)
        ]
        if plot is not None:
            _plot(tables, plot)
        if out is not None:
            write_table([*tables, *(_Quantiles(c, f) for c, f in quantile_frames)], out)
    console = Console(soft_wrap=True)
    for table in tables:
        if isinstance(table, FrequencyTable):
            console.print(_rich_table(table, top, delta))
        else:
            console.print(_rich_numeric(table, delta, top))
    for column, frame in quantile_frames:
        console.print(_rich_frame(f"quantiles of {column}", frame))
    if out is not None:
        written = sum(len(t.to_pandas()) for t in tables) + sum(len(f) for _, f in quantile_frames)
        typer.echo(f"wrote {written} rows to {out}")
    if plot is not None:
        typer.echo(f"wrote the plot to {plot}")


def run_discover(
    reports: Path,
    *,
    column: str | None,
    top: int,
    width: int | None,
    significance: float,
    out: Path | None,
    level: float,
    delta: float,
) -> None:
    """The ``discover`` command."""
    with terminate_cleanly(), user_errors():
        _check_delta(delta)
        if out is not None:
            check_out(out, reports)
        table = discover_file(
            reports, column, top=top, width=width, significance=significance, level=level
        )
        if out is not None:
            write_table([table], out)
    Console(soft_wrap=True).print(_rich_table(table, None, delta))
    if out is not None:
        typer.echo(f"wrote {len(table.to_pandas())} rows to {out}")


def _quantiles(text: str) -> tuple[str, list[float]]:
    """``--quantiles COLUMN:0.1,0.5,0.9`` as the column and its shares."""
    column, colon, shares = text.rpartition(":")
    try:
        values = [float(part) for part in shares.split(",")] if colon and column else []
    except ValueError:
        values = []
    if not values or not all(0.0 <= value <= 1.0 for value in values):
        raise ParameterError(
            f"--quantiles {shown(text)}: expected COLUMN:q1,q2,... with each q in [0, 1]"
        )
    return column, values


def _quantile_frame(tables: list[Any], column: str, shares: list[float]) -> Any:
    """The quantiles (with standard errors) of a Square Wave column's distribution."""
    for table in tables:
        if isinstance(table, DistributionTable) and table.column == column:
            return table.quantiles(shares)
    raise ParameterError(
        f"--quantiles: column {shown(column)} holds no Square Wave reports (quantiles come "
        "from a distribution: privatize it with --mechanism squarewave)"
    )


@dataclass(frozen=True)
class _Quantiles:
    """Quantiles of one column, written by ``--out`` beside the tables."""

    column: str
    frame: Any

    def to_pandas(self) -> Any:
        return self.frame


def _rich_numeric(result: Any, delta: float, top: int | None = None) -> Table:
    """A mean or a distribution as a rich table, titled with its guarantee."""
    g = result.privacy
    what = "mean" if isinstance(result, MeanEstimate) else "distribution"
    grouped = f" by {', '.join(result.by)}" if result.by else ""
    title = (
        f"{what} of {escape(str(result.column) + grouped)}: {_named(result.mechanism)}, "
        f"n = {result.n}, ε = {g.epsilon_at(delta):.4g} at δ = {delta:g} ({g.model} model)"
        f"{escape(insecure_mark(g))}"
    )
    frame = result.to_pandas()
    return _rich_frame(title, frame if top is None else frame.head(top))


def _rich_frame(title: str, frame: Any) -> Table:
    out = Table(title=title, title_justify="left")
    for name in frame.columns:
        numeric = frame[name].dtype.kind in "fiu"
        out.add_column(escape(str(name)), justify="right" if numeric else "left")
    for record in frame.to_dict("records"):
        out.add_row(
            *(
                _figure(value) if isinstance(value, float) else escape(_text(value))
                for value in record.values()
            )
        )
    return out


def _figure(value: float) -> str:
    """A float for a table: four significant digits, large ones whole with separators."""
    return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


def _pair(text: str) -> tuple[str, str]:
    """``--joint a,b`` as the pair of column names."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ParameterError(f"--joint {shown(text)}: expected two report columns, 'a,b'")
    return parts[0], parts[1]


def _read_candidates(path: Path) -> list[str]:
    """Candidate strings, one per line; errors name the option and the file, not its bytes."""
    text = read_text(path, f"--candidates-file {str(path)!r}")
    return [line for line in text.splitlines() if line.strip()]


def _check_delta(delta: float) -> None:
    if not 0.0 < delta < 1.0:
        raise ParameterError(f"--delta must be in (0, 1), got {delta}")


def _check_plot(plot: Path) -> None:
    """Refuse a ``--plot`` target that cannot be written, before any work."""
    if not plot.parent.is_dir():
        raise ParameterError(f"--plot {str(plot)!r}: directory {str(plot.parent)!r} not found")
    if plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ParameterError(f"--plot {str(plot)!r}: expected a .png, .svg or .pdf file")
    check_target(plot, "--plot")


def _plot(tables: list[Any], target: Path) -> None:
    numeric = [table for table in tables if not isinstance(table, FrequencyTable)]
    if numeric and len(tables) > 1:
        raise ParameterError(
            "--plot draws frequency tables together, or one mean or distribution: name one "
            "numeric column"
        )
    import matplotlib

    matplotlib.use("Agg")
    from frameldp.plot import plot_frequencies

    _save(numeric[0].plot() if numeric else plot_frequencies(tables), target)


def _plan_figure(chosen: Any) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from frameldp.plot import plot_plan

    return plot_plan(chosen)


def _save(figure: Any, target: Path) -> None:
    """Write a figure to ``target`` (its type from the suffix) and close it."""
    try:
        figure.savefig(target, dpi=120)
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)


def _rich_table(table: FrequencyTable, top: int | None, delta: float) -> Table:
    g = table.privacy
    if isinstance(table.mechanism, tuple):
        mechanism = " × ".join(type(m).__name__ for m in table.mechanism)
        what = " × ".join(table.label_columns)
    else:
        mechanism, what = _named(table.mechanism), str(table.column)
    grouped = f" by {', '.join(table.by)}" if table.by else ""
    title = (
        f"{escape(what + grouped)}: {mechanism}, n = {table.n}, ε = {g.epsilon_at(delta):.4g} "
        f"at δ = {delta:g} ({g.model} model){escape(insecure_mark(g))}"
    )
    out = Table(title=title, title_justify="left")
    labels = [*table.by, *table.label_columns]
    for name in labels:
        out.add_column(escape(str(name)))
    for name in ("count", "frequency", "std_error", f"ci_low ({table.level:.0%})", "ci_high"):
        out.add_column(name, justify="right")
    frame = table.to_pandas()
    cut = "truncated" in frame.columns  # discovered strings: say which were cut
    if cut:
        out.add_column("truncated")
    sort = [*table.by, "count"]
    ascending = [True] * len(table.by) + [False]
    frame = frame.sort_values(sort, ascending=ascending, kind="stable", na_position="last")
    if top is None:
        shown = frame
    elif table.by:
        shown = frame.groupby(list(table.by), dropna=False, sort=False).head(top)
    else:
        shown = frame.head(top)
    for record in shown.to_dict("records"):
        out.add_row(
            *(escape(_text(record[name])) for name in labels),
            f"{record['count']:,.1f}",
            f"{record['frequency']:.4f}",
            f"{record['std_error']:,.1f}",
            f"{record['ci_low']:,.1f}",
            f"{record['ci_high']:,.1f}",
            *(["yes" if record["truncated"] else ""] if cut else []),
        )
    if len(shown) < len(frame):
        out.caption = f"{len(frame) - len(shown)} more rows (--out writes them all)"
    return out


def _text(value: Any) -> str:
    """A label or group key as printed (a missing one as ``null``)."""
    import pandas as pd

    return (
        "null" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    )


def run_plan(
    *,
    n: int,
    domain_size: int | None,
    domain_file: Path | None,
    epsilon: float | None,
    std_error: float | None,
    plot: Path | None,
    max_posterior: float | None = None,
    prior: float | None = None,
    max_tpr: float | None = None,
    fpr: float | None = None,
) -> None:
    """The ``plan`` command."""
    with user_errors():
        if (domain_size is None) == (domain_file is None):
            raise ParameterError("give the domain as --domain-size or --domain-file (one of them)")
        targets = (epsilon, std_error, max_posterior, max_tpr)
        if sum(target is not None for target in targets) != 1:
            raise ParameterError(
                "give exactly one of --epsilon, --std-error, --max-posterior and --max-tpr"
            )
        if prior is not None and max_posterior is None:
            raise ParameterError("--prior goes with --max-posterior")
        if fpr is not None and max_tpr is None:
            raise ParameterError("--fpr goes with --max-tpr")
        if plot is not None:
            _check_plot(plot)
        import frameldp

        domain: Any = domain_size
        if domain_file is not None:
            text = read_text(domain_file, f"--domain-file {str(domain_file)!r}")
            domain = [line for line in text.splitlines() if line.strip()]
        risk: dict[str, Any] = (
            {"max_posterior": max_posterior, "prior": prior}
            if max_posterior is not None
            else {"max_tpr": max_tpr, "fpr": fpr}
            if max_tpr is not None
            else {}
        )
        chosen = frameldp.plan(domain=domain, n=n, epsilon=epsilon, std_error=std_error, **risk)
        if plot is not None:
            _save(_plan_figure(chosen), plot)
    typer.echo(repr(chosen))
    typer.echo(str(chosen.risk))
    if plot is not None:
        typer.echo(f"wrote the plot to {plot}")


def run_memo_key(path: Path) -> None:
    """The ``memo-key`` command: a key of :func:`frameldp.core.randomness.new_memo_key`
    written to a new file (mode 0600), whole or not at all: it is written and synced under a
    temporary name beside ``path``, then linked to ``path``, which fails if ``path`` exists (an
    existing file is never overwritten: it may hold the memo key of years of collections)."""
    import secrets

    from frameldp.core.randomness import new_memo_key

    with user_errors():
        if path.exists() or path.is_symlink():
            raise ParameterError(
                f"memo-key {str(path)!r}: the file exists; a memo key is never overwritten "
                "(the people it collected keep their permanent responses under it)"
            )
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.partial")
        try:
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise ParameterError(f"memo-key {str(path)!r}: cannot create it: {reason}") from None
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(new_memo_key())
                file.flush()
                os.fsync(file.fileno())
            try:
                os.link(temporary, path)  # atomic, and refuses an existing path
            except FileExistsError:
                raise ParameterError(
                    f"memo-key {str(path)!r}: the file exists; a memo key is never overwritten"
                ) from None
            except OSError as error:
                reason = error.strerror or type(error).__name__
                raise ParameterError(
                    f"memo-key {str(path)!r}: cannot create it: {reason}"
                ) from None
        finally:
            temporary.unlink(missing_ok=True)
        typer.echo(f"wrote a new memo key (scheme 3) to {path}; keep it secret and keep it")
