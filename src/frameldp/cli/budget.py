"""``frameldp budget``: show, set and inspect the budgets of a ledger file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from frameldp.cli._errors import fail, user_errors
from frameldp.errors import FrameLDPError

if TYPE_CHECKING:  # imported by the commands that use them: --help needs neither numpy nor scipy
    from frameldp.accounting import Ledger
    from frameldp.accounting.ledger import BudgetStatus

budget_app = typer.Typer(
    name="budget",
    help="Privacy budgets of a ledger (SQLite file): show, set, history.",
    no_args_is_help=True,
    add_completion=False,
)

LedgerOption = Annotated[
    Path,
    typer.Option(
        "--ledger",
        envvar="FRAMELDP_LEDGER",
        help="Ledger file (SQLite). Also read from $FRAMELDP_LEDGER.",
    ),
]


def _open(path: Path, *, create: bool = False) -> Ledger:
    # Reading commands refuse a missing file (most likely a mistyped path); the library would
    # read it as an empty ledger. Opening never writes: `show` works on a read-only ledger.
    if not create and not path.exists():
        raise fail(f"ledger file {str(path)!r} does not exist (create it with `budget set`)")
    from frameldp.accounting import Ledger

    try:
        return Ledger(path)
    except FrameLDPError as error:  # LedgerError: damaged, not a ledger, a directory, ...
        raise fail(str(error)) from None


def _warn_if_seeded(console: Console, seeded: bool) -> None:
    """Say under a table what its INSECURE marks mean."""
    if seeded:
        from frameldp.accounting.guarantee import INSECURE

        console.print(escape(INSECURE))


def _posterior(status: BudgetStatus) -> str:
    """The posterior an attacker who gave 1% to a fact about a person reaches from everything
    spent (at the budget's delta), as the "1% →" column shows it."""
    if status.accountant is None or not status.accountant.entries:
        return "1%"
    from frameldp.accounting.risk import percent

    profile = status.accountant.profile
    used = profile.failure_probability(status.delta)
    return percent(profile.posterior(0.01, used)) + ("*" if used else "")


@budget_app.command("set")
def set_budget(
    name: Annotated[str, typer.Argument(help="Budget name (a dataset or population).")],
    epsilon: Annotated[float, typer.Option(help="Epsilon cap.")],
    ledger: LedgerOption,
    delta: Annotated[
        float | None,
        typer.Option(help="Delta at which the spent epsilon is measured (default: pure)."),
    ] = None,
) -> None:
    """Create or change a budget."""
    from frameldp.accounting.ledger import check_budget

    with user_errors():
        check_budget(name, epsilon, delta)  # before the file is created: a refusal writes nothing
    book = _open(ledger, create=True)
    with user_errors():
        book.set_budget(name, epsilon=epsilon, delta=delta)
        print(book.status(name))


@budget_app.command("show")
def show(
    ledger: LedgerOption,
    name: Annotated[str | None, typer.Argument(help="One budget (default: all).")] = None,
) -> None:
    """Caps, spent totals (tightest composition) and remaining budget."""
    book = _open(ledger)
    with user_errors():
        statuses = [book.status(name)] if name is not None else book.budgets()
    seeded = any(status.seeded for status in statuses)
    table = Table(title=escape(f"Budgets in {ledger}"))
    columns = ("budget", "cap ε", "δ", "spent ε", "remaining ε", "releases", "method", "1% →")
    for column in (*columns, "warning") if seeded else columns:
        table.add_column(
            column, justify="left" if column in ("budget", "method", "warning") else "right"
        )
    for status in statuses:
        cells = [
            escape(status.name),
            f"{status.epsilon:.6g}",
            f"{status.delta:.3g}" if status.delta else "pure",
            f"{status.spent:.6g}",
            f"{status.remaining:.6g}",
            str(status.releases),
            status.method,
            _posterior(status),
        ]
        if seeded:
            cells.append(f"INSECURE ({status.seeded} seeded)" if status.seeded else "")
        table.add_row(*cells)
    console = Console()
    console.print(table)
    starred = any(_posterior(status).endswith("*") for status in statuses)
    console.print(
        "1% →: the most an attacker who gave 1% to a fact about one person (their value) "
        "believes after every release spent"
        + (" (*: a bound that may fail on reports of total probability δ)" if starred else "")
    )
    _warn_if_seeded(console, seeded)


@budget_app.command("history")
def history(
    name: Annotated[str, typer.Argument(help="Budget name.")],
    ledger: LedgerOption,
) -> None:
    """Every release recorded against a budget, oldest first, with the running total."""
    book = _open(ledger)
    with user_errors():
        entries = book.history(name)
    seeded = any(entry.seeded for entry in entries)
    table = Table(title=escape(f"History of {name!r}"))
    columns = ("id", "at (UTC)", "description", "release ε", "total ε", "method")
    for column in (*columns, "warning") if seeded else columns:
        right = "ε" in column or column == "id"
        table.add_column(column, justify="right" if right else "left", no_wrap=column == "at (UTC)")
    for entry in entries:
        cells = [
            str(entry.id),
            entry.at[:19],  # to the second: the stored value keeps microseconds
            escape(entry.description),
            f"{entry.epsilon:.6g}",
            f"{entry.total_epsilon:.6g}",
            entry.method,
        ]
        if seeded:
            cells.append("INSECURE (seeded)" if entry.seeded else "")
        table.add_row(*cells)
    console = Console()
    console.print(table)
    _warn_if_seeded(console, seeded)
