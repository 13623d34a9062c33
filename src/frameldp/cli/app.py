"""Commands of the ``frameldp`` command line."""

from __future__ import annotations

from typing import Annotated

import typer

from frameldp.cli.budget import budget_app
from frameldp.cli.demo import run_demo

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
