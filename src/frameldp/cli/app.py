"""Commands of the ``frameldp`` command line."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

try:  # typer >= 0.25 carries its own copy of click
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - older typer uses click
    from click.exceptions import (  # type: ignore[assignment]
        NoArgsIsHelpError,
        UsageError,
    )

from frameldp.cli._errors import brief, fail, user_errors, warnings_as_lines
from frameldp.cli.budget import budget_app

# Each command imports what it runs when it runs (numpy, pandas, pyarrow, polars): the help and a
# usage error answer without them.


class _OneLineErrors(TyperGroup):
    """A command line whose usage errors (``--epsilon one``, an unknown option, a missing
    argument) are one line, ``error: ...``, exit status 1, like every other user mistake."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:  # the root's own options (--threads 0)
            return list(super().parse_args(ctx, args))
        except NoArgsIsHelpError:
            raise
        except UsageError as error:
            raise _one_line(error) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except NoArgsIsHelpError:
            raise
        except UsageError as error:
            raise _one_line(error) from None


def _one_line(error: UsageError) -> BaseException:
    command = error.ctx.command_path if error.ctx is not None else "frameldp"
    message = error.format_message().rstrip(".")
    return fail(f"{brief(message)} (see {command} --help)")


app = typer.Typer(
    name="frameldp",
    help="Local differential privacy for dataframe columns.",
    no_args_is_help=True,
    add_completion=False,
    cls=_OneLineErrors,
)


app.add_typer(budget_app)


@app.callback()
def _root(
    threads: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=256,  # frameldp.core.parallel.MAX_THREADS (not imported: --help stays light)
            help="Threads that draw the noise and count reports (default: $FRAMELDP_THREADS, "
            "else every core); the output is the same for any number.",
        ),
    ] = None,
) -> None:
    """Local differential privacy for dataframe columns."""
    if threads is not None:
        # Read by frameldp.core.parallel when noise is drawn; setting it here imports nothing
        # (a command's --help stays light).
        os.environ["FRAMELDP_THREADS"] = str(threads)


def _check_threads() -> None:
    """A ``FRAMELDP_THREADS`` that is no thread count is refused by the commands that run on
    threads, before anything runs; ``--help``, ``plan`` and ``budget`` never read it."""
    with user_errors():
        from frameldp.core.parallel import environment_threads

        environment_threads()


@app.command()
def demo(
    seed: Annotated[
        int | None,
        typer.Option(help="Reproducible (insecure) noise; default: a fresh secret key."),
    ] = None,
    epsilons: Annotated[
        list[float] | None,
        typer.Option("--epsilon", help="Epsilons to run (repeatable). Default: 0.5 1 2."),
    ] = None,
    top: Annotated[int, typer.Option(help="Rows of each table to show.")] = 8,
) -> None:
    """Privatize the embedded flights data and compare estimates with the truth."""
    _check_threads()
    with warnings_as_lines():  # a seed's warning is in the demo's first line
        from frameldp.cli.demo import run_demo

        run_demo(seed=seed, epsilons=tuple(epsilons or (0.5, 1.0, 2.0)), top=top)


@app.command()
def shuffle(
    source: Annotated[
        Path, typer.Argument(help="Reports: .parquet (written by frameldp) or .csv.")
    ],
    target: Annotated[Path, typer.Argument(help="Output: .parquet or .csv (written atomically).")],
    columns: Annotated[
        list[str] | None,
        typer.Option("--column", help="Report column to keep (repeatable; needed for CSV)."),
    ] = None,
    keep: Annotated[
        list[str] | None,
        typer.Option(help="Also keep this column: voids the shuffle guarantee (repeatable)."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Reproducible (insecure) order; default: a fresh key.")
    ] = None,
    key_file: Annotated[
        Path | None, typer.Option(help="File holding a 32-byte secret key for the order.")
    ] = None,
    delta: Annotated[float, typer.Option(help="Delta at which to report the epsilon.")] = 1e-6,
) -> None:
    """Drop identifying columns and permute the rows of a report file (the shuffler)."""
    _check_threads()
    from frameldp.cli.shuffle import run_shuffle

    run_shuffle(source, target, columns or [], keep or [], seed, key_file, delta)


@app.command()
def privatize(
    source: Annotated[Path, typer.Argument(help="Input: .csv or .parquet.")],
    target: Annotated[Path, typer.Argument(help="Release: .parquet or .csv (written atomically).")],
    columns: Annotated[
        list[str] | None, typer.Option("--column", help="Column to privatize (repeatable).")
    ] = None,
    mechanisms: Annotated[
        list[str] | None,
        typer.Option(
            "--mechanism",
            help="auto (smallest variance), rappor, krr, optimized_unary_encoding, local_hashing, "
            "subset_selection, hadamard_response, projective_geometry_response, bloom, pem "
            "(prefix extending), or for numbers "
            "(with --bounds) duchi, piecewise, hybrid, rounding or squarewave: once for all "
            "columns, or once per column.",
        ),
    ] = None,
    epsilons: Annotated[
        list[float] | None,
        typer.Option("--epsilon", help="Epsilon per report: once, or once per column."),
    ] = None,
    domain_files: Annotated[
        list[Path] | None,
        typer.Option(
            "--domain-file",
            help="Public domain, one value per line or a JSON list: once, or once per column "
            "that takes a domain.",
        ),
    ] = None,
    spec: Annotated[
        Path | None,
        typer.Option(help="JSON file {column: {mechanism, epsilon, domain_file, ...}}."),
    ] = None,
    keep: Annotated[
        list[str] | None,
        typer.Option(help="Pass this column through unchanged (repeatable); others are dropped."),
    ] = None,
    unknown: Annotated[
        str | None, typer.Option(help="Values outside the domain: raise (default) or other.")
    ] = None,
    nulls: Annotated[
        str | None, typer.Option(help="Nulls: raise (default) or category (their own bucket).")
    ] = None,
    max_weight: Annotated[
        int | None, typer.Option(help="RAPPOR: most values per cell (sets); default 1.")
    ] = None,
    epsilon_infinity: Annotated[
        float | None,
        typer.Option(
            help="Bloom RAPPOR; with --user also rappor, krr, optimized_unary_encoding, "
            "local_hashing, subset_selection, rounding (numbers), auto: epsilon of the "
            "permanent response "
            "(longitudinal: any number of releases reveal at most this about one unchanged "
            "value; a person's charge still grows with the releases)."
        ),
    ] = None,
    num_bits: Annotated[
        int | None, typer.Option(help="Bloom RAPPOR: bits per report; default 128.")
    ] = None,
    num_hashes: Annotated[
        int | None, typer.Option(help="Bloom RAPPOR: hash functions; default 2.")
    ] = None,
    num_cohorts: Annotated[
        int | None, typer.Option(help="Bloom RAPPOR: cohorts; default 64.")
    ] = None,
    max_length: Annotated[
        int | None,
        typer.Option(help="pem (prefix extending): UTF-8 bytes kept per string; default 16."),
    ] = None,
    bounds: Annotated[
        str | None,
        typer.Option(
            help="Numeric mechanisms (duchi, piecewise, hybrid, rounding, squarewave; auto "
            "then picks the mean mechanism): the public interval LO,HI of the values."
        ),
    ] = None,
    clip: Annotated[
        bool,
        typer.Option("--clip", help="Numeric mechanisms: clip values outside --bounds into them."),
    ] = False,
    levels: Annotated[
        int | None, typer.Option(help="rounding: levels of stochastic rounding; default: best.")
    ] = None,
    buckets: Annotated[
        int | None, typer.Option(help="squarewave: buckets of the distribution; default 256.")
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            help="Column identifying people (not released): a person is then the privacy unit, "
            "charged for the most rows one person holds. Needed by Bloom RAPPOR and "
            "--epsilon-infinity (memoized permanent responses)."
        ),
    ] = None,
    max_rows_per_user: Annotated[
        int | None,
        typer.Option(
            help="With --user: state and charge this many rows per person; refuse a person "
            "holding more."
        ),
    ] = None,
    memo_key_file: Annotated[
        Path | None,
        typer.Option(
            help="Bloom RAPPOR, or any mechanism with --epsilon-infinity: 32-byte persistent "
            "secret for permanent responses."
        ),
    ] = None,
    collect: Annotated[
        str,
        typer.Option(
            help="How the columns share a person's budget: split (every column reported; a "
            "person loses their composition), sample (one column per row, chosen at random, "
            "the others null; a person loses the largest epsilon), sample+fake (as sample, "
            "the others holding reports of random values) or auto (split or sample, whichever "
            "has the smaller total variance at split's guarantee)."
        ),
    ] = "split",
    fake_prior: Annotated[
        Path | None,
        typer.Option(
            help="With --collect sample+fake: a JSON file of each column's public law of fake "
            'values, {"column": {"category": weight, ...}}, or for categories that are not '
            'strings {"column": \\[\\[category, weight], ...]} (RS+RFD); default: uniform over '
            "the column's buckets."
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Reproducible (insecure) noise; default: a fresh key.")
    ] = None,
    key_file: Annotated[
        Path | None, typer.Option(help="File holding the 32-byte secret key of the noise.")
    ] = None,
    ledger: Annotated[
        Path | None,
        typer.Option(envvar="FRAMELDP_LEDGER", help="Ledger file to charge (with --budget)."),
    ] = None,
    budget: Annotated[str | None, typer.Option(help="Budget of the ledger to charge.")] = None,
    chunk_rows: Annotated[int, typer.Option(help="Rows per batch (bounds memory).")] = 500_000,
    validate: Annotated[
        bool, typer.Option(help="Validate the input and the release with pandera.")
    ] = True,
    delta: Annotated[float, typer.Option(help="Delta at which to report epsilon.")] = 1e-6,
) -> None:
    """Privatize columns of a file into a self-describing release, streaming in batches."""
    _check_threads()
    from frameldp.cli.commands import run_privatize

    run_privatize(
        source,
        target,
        columns=columns or [],
        mechanisms=mechanisms or [],
        epsilons=epsilons or [],
        domain_files=domain_files or [],
        spec=spec,
        keep=keep or [],
        shared={
            "unknown": unknown,
            "nulls": nulls,
            "max_weight": max_weight,
            "epsilon_infinity": epsilon_infinity,
            "num_bits": num_bits,
            "num_hashes": num_hashes,
            "num_cohorts": num_cohorts,
            "max_length": max_length,
            "bounds": bounds,
            "clip": True if clip else None,
            "levels": levels,
            "buckets": buckets,
        },
        user=user,
        max_rows_per_user=max_rows_per_user,
        memo_key_file=memo_key_file,
        collect=collect,
        fake_prior=fake_prior,
        seed=seed,
        key_file=key_file,
        ledger=ledger,
        budget=budget,
        chunk_rows=chunk_rows,
        validate=validate,
        delta=delta,
    )


@app.command()
def estimate(
    reports: Annotated[
        list[Path],
        typer.Argument(help="Report file(s) written by frameldp privatize (several: --releases)."),
    ],
    columns: Annotated[
        list[str] | None,
        typer.Option("--column", help="Report column (repeatable); default: all recorded."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write the tables to this .csv or .parquet file.")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(help="Plot estimates with intervals to this image (.png).")
    ] = None,
    level: Annotated[float, typer.Option(help="Confidence level of the intervals.")] = 0.95,
    candidates_file: Annotated[
        Path | None,
        typer.Option(help="Bloom RAPPOR: candidate strings, one per line, to decode against."),
    ] = None,
    top: Annotated[
        int | None, typer.Option(help="Rows of each table to print (largest counts first).")
    ] = None,
    delta: Annotated[float, typer.Option(help="Delta at which to report epsilon.")] = 1e-6,
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            help="Public column to group by (repeatable): one table per group. Group sizes are "
            "released as they are.",
        ),
    ] = None,
    joint: Annotated[
        list[str] | None,
        typer.Option(
            "--joint",
            help="Two report columns, 'a,b': their joint table over both domains (repeatable).",
        ),
    ] = None,
    means: Annotated[
        list[str] | None,
        typer.Option(
            "--mean",
            help="Numeric report column whose mean to print (repeatable; Square Wave columns: "
            "from the distribution).",
        ),
    ] = None,
    quantiles: Annotated[
        list[str] | None,
        typer.Option(
            "--quantiles",
            help="COLUMN:q1,q2,...: quantiles with standard errors of a Square Wave column "
            "(repeatable).",
        ),
    ] = None,
    releases: Annotated[
        str | None,
        typer.Option(
            help="Several files are several releases: 'compose' estimates them as one "
            "collection, each person's reports in every file composed."
        ),
    ] = None,
) -> None:
    """Debiased frequency tables (numeric columns: means and distributions), with standard
    errors and intervals, from report files."""
    _check_threads()
    from frameldp.cli.commands import run_estimate

    run_estimate(
        reports,
        columns=columns or [],
        by=by or [],
        joint=joint or [],
        out=out,
        plot=plot,
        level=level,
        candidates_file=candidates_file,
        top=top,
        delta=delta,
        releases=releases,
        means=means or [],
        quantiles=quantiles or [],
    )


@app.command()
def discover(
    reports: Annotated[Path, typer.Argument(help="Report file written by frameldp privatize.")],
    column: Annotated[
        str | None,
        typer.Option(help="Prefix-extending report column; default: the only one recorded."),
    ] = None,
    top: Annotated[int, typer.Option(help="Most strings to discover.")] = 20,
    width: Annotated[
        int | None, typer.Option(help="Prefixes kept at each level; default 2 * top.")
    ] = None,
    significance: Annotated[
        float, typer.Option(help="Family-wise chance of listing a string nobody holds.")
    ] = 0.05,
    out: Annotated[
        Path | None, typer.Option(help="Write the table to this .csv or .parquet file.")
    ] = None,
    level: Annotated[float, typer.Option(help="Confidence level of the intervals.")] = 0.95,
    delta: Annotated[float, typer.Option(help="Delta at which to report epsilon.")] = 1e-6,
) -> None:
    """Frequent strings of a prefix-extending report column, found without candidates."""
    _check_threads()
    from frameldp.cli.commands import run_discover

    run_discover(
        reports,
        column=column,
        top=top,
        width=width,
        significance=significance,
        out=out,
        level=level,
        delta=delta,
    )


@app.command()
def plan(
    n: Annotated[int, typer.Option("--n", help="Number of reports (people).")],
    domain_size: Annotated[
        int | None, typer.Option(help="Number of categories (or give --domain-file).")
    ] = None,
    domain_file: Annotated[
        Path | None, typer.Option(help="The public domain: one category per line.")
    ] = None,
    epsilon: Annotated[
        float | None, typer.Option(help="The budget: report the standard error it buys.")
    ] = None,
    std_error: Annotated[
        float | None,
        typer.Option(
            help="Target standard error of a frequency per bucket (0.005 = half a point): "
            "report the smallest epsilon that reaches it."
        ),
    ] = None,
    max_posterior: Annotated[
        float | None,
        typer.Option(
            help="Risk target: the largest epsilon at which an attacker who gave a fact about "
            "a person --prior believes it at most this after the release."
        ),
    ] = None,
    prior: Annotated[
        float | None, typer.Option(help="The attacker's prior for --max-posterior (0.01).")
    ] = None,
    max_tpr: Annotated[
        float | None,
        typer.Option(
            help="Risk target: the largest epsilon at which a test that wrongly flags --fpr of "
            "people flags at most this share of those it looks for."
        ),
    ] = None,
    fpr: Annotated[
        float | None, typer.Option(help="The test's false-positive rate for --max-tpr (0.01).")
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(help="Plot standard error against epsilon (or the risk) to this image."),
    ] = None,
) -> None:
    """Which mechanism and which epsilon: the standard error a budget buys, the budget a
    standard error needs, or the largest budget within a risk to one person, for every
    frequency oracle; and what the plan lets an attacker learn."""
    from frameldp.cli.commands import run_plan

    run_plan(
        n=n,
        domain_size=domain_size,
        domain_file=domain_file,
        epsilon=epsilon,
        std_error=std_error,
        plot=plot,
        max_posterior=max_posterior,
        prior=prior,
        max_tpr=max_tpr,
        fpr=fpr,
    )


@app.command("memo-key")
def memo_key(
    path: Annotated[Path, typer.Argument(help="The file to create (it must not exist).")],
) -> None:
    """Write a new memo key (scheme 3: memoized releases at a few times the cost of one-stage
    ones) to a new file readable by its owner only. Keep it as a persistent secret and pass it
    as --memo-key-file to every collection of the same people."""
    from frameldp.cli.commands import run_memo_key

    run_memo_key(path)
