"""Commands of the ``frameldp`` command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from frameldp.cli.budget import budget_app
from frameldp.cli.demo import run_demo
from frameldp.cli.shuffle import run_shuffle

app = typer.Typer(
    name="frameldp",
    help="Local differential privacy for dataframe columns.",
    no_args_is_help=True,
    add_completion=False,
)


app.add_typer(budget_app)


@app.callback()
def _root() -> None:
    """Local differential privacy for dataframe columns."""


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
    run_shuffle(source, target, columns or [], keep or [], seed, key_file, delta)
