"""``frameldp budget set / show / history``, through typer's CliRunner and the installed command.

The main paths run twice (the ``cli`` fixture): in process through :class:`typer.testing.CliRunner`
and as a user runs it, the console script in a subprocess. Long parametrizations run in process
only (``typer_cli``; a subprocess costs a second), with one case of each kind of mistake repeated
through the console script. Ledgers are real SQLite files in ``tmp_path`` (the working directory,
so paths in messages stay short). Expected numbers come from an independent
:class:`frameldp.Accountant` over the same guarantees.
"""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

import frameldp
from accounting.test_ledger_damaged import unwritable  # tests/accounting, beside this file
from frameldp.accounting.guarantee import INSECURE
from frameldp.accounting.risk import percent
from frameldp.cli import app

DELTA = 1e-6
KRR = frameldp.RandomizedResponse(1.0, domain=["AA", "DL", "UA"]).privacy
RAPPOR = frameldp.Rappor(epsilon=2.0, domain=["ATL", "BOS", "DEN", "JFK"]).privacy

# Variables that would change what the commands print or which ledger they open.
UNSET = ("FRAMELDP_LEDGER", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
WIDE = "200"  # columns: wide enough that no table cell is cut


@dataclass(frozen=True)
class Run:
    """What one command did."""

    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = None


Cli = Callable[..., Run]


def _script() -> str:
    command = shutil.which("frameldp", path=str(Path(sys.executable).parent))
    assert command is not None, "the frameldp console script is not installed"
    return command


def _typer_runner() -> Cli:
    def run(*args: str, env: dict[str, str] | None = None) -> Run:
        variables: dict[str, str | None] = {name: None for name in UNSET}
        variables.update({"COLUMNS": WIDE, **(env or {})})
        result = CliRunner().invoke(app, list(args), env=variables)
        exception = None if isinstance(result.exception, SystemExit) else result.exception
        return Run(result.exit_code, result.stdout, result.stderr, exception)

    return run


def _script_runner(cwd: Path) -> Cli:
    def run(*args: str, env: dict[str, str] | None = None) -> Run:
        variables = {k: v for k, v in os.environ.items() if k not in UNSET}
        variables.update({"COLUMNS": WIDE, "PYTHONIOENCODING": "utf-8", **(env or {})})
        done = subprocess.run(
            [_script(), *args],
            capture_output=True,
            encoding="utf-8",
            cwd=cwd,
            env=variables,
            timeout=120,
            check=False,
        )
        return Run(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture(params=["typer", "script"])
def cli(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Run ``frameldp *args`` in ``tmp_path``, in process and as the installed command; ``env``
    adds variables (COLUMNS is 200 unless given)."""
    monkeypatch.chdir(tmp_path)
    return _typer_runner() if request.param == "typer" else _script_runner(tmp_path)


@pytest.fixture
def typer_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Like ``cli``, in process only: for long parametrizations (a subprocess takes a second)."""
    monkeypatch.chdir(tmp_path)
    return _typer_runner()


def _rows(output: str) -> dict[str, list[str]]:
    """Body rows of a rich table, keyed by their first cell."""
    rows = {}
    for line in output.splitlines():
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.strip("│").split("│")]
            rows[cells[0]] = cells[1:]
    return rows


def _assert_user_error(run: Run, *fragments: str) -> None:
    """Exit code 1, nothing on stdout, and one line ``error: ...`` holding every fragment."""
    assert run.exception is None, run.exception
    assert run.exit_code == 1, (run.stdout, run.stderr)
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0]


def _ledger_with_releases(path: Path) -> None:
    """``flights`` (cap 10 at delta 1e-6): two releases; ``nightly`` (pure cap 3): one."""
    ledger = frameldp.Ledger(path)
    ledger.set_budget("flights", epsilon=10.0, delta=DELTA)
    ledger.set_budget("nightly", epsilon=3.0)
    ledger.spend("flights", KRR, description="privatize carrier")
    ledger.spend("flights", RAPPOR, description="privatize origin")
    ledger.spend("nightly", KRR, description="privatize carrier")


# ---------------------------------------------------------------------------- what is printed


def test_set_creates_the_ledger_and_prints_the_status(cli: Cli, tmp_path: Path) -> None:
    run = cli("budget", "set", "flights", "--epsilon", "10", "--delta", "1e-6", "--ledger", "b.db")

    assert run.exit_code == 0, run.stderr
    assert run.stdout.strip() == "flights: spent ε = 0 of 10 at δ = 1e-06 over 0 release(s) [none]"
    status = frameldp.Ledger(tmp_path / "b.db").status("flights")
    assert (status.epsilon, status.delta, status.releases) == (10.0, DELTA, 0)

    run = cli("budget", "set", "flights", "--epsilon", "4", "--ledger", "b.db")

    assert run.exit_code == 0, run.stderr
    assert "flights: spent ε = 0 of 4 (pure)" in run.stdout
    assert frameldp.Ledger(tmp_path / "b.db").status("flights").delta == 0.0


def test_show_lists_caps_spent_totals_releases_and_methods(cli: Cli, tmp_path: Path) -> None:
    _ledger_with_releases(tmp_path / "b.db")
    composed = frameldp.Accountant().compose(KRR).compose(RAPPOR)
    best = composed.explain(DELTA).best
    pure = frameldp.Accountant().compose(KRR).pure_epsilon

    run = cli("budget", "show", "--ledger", "b.db")

    assert run.exit_code == 0, run.stderr
    assert "Budgets in b.db" in run.stdout
    rows = _rows(run.stdout)
    profile = composed.profile
    used = profile.failure_probability(DELTA)
    assert rows["flights"] == [
        "10",
        "1e-06",
        f"{best.epsilon:.6g}",
        f"{10 - best.epsilon:.6g}",
        "2",
        best.method,
        percent(profile.posterior(0.01, used)) + ("*" if used else ""),
    ]
    # A pure budget: the posterior of an attacker who gave 1%, from its pure epsilon.
    odds = 0.01 / 0.99 * math.exp(pure)
    assert rows["nightly"] == [
        "3",
        "pure",
        f"{pure:.6g}",
        f"{3 - pure:.6g}",
        "1",
        "basic",
        percent(odds / (1 + odds)),
    ]
    assert "1% →: the most an attacker who gave 1%" in run.stdout
    assert best.epsilon < KRR.epsilon + RAPPOR.epsilon  # the delta budget is not summed

    run = cli("budget", "show", "nightly", "--ledger", "b.db")

    assert run.exit_code == 0, run.stderr
    assert list(_rows(run.stdout)) == ["nightly"]


def test_history_lists_every_release_with_its_running_total(cli: Cli, tmp_path: Path) -> None:
    _ledger_with_releases(tmp_path / "b.db")
    first = frameldp.Accountant().compose(KRR).explain(DELTA).best
    second = frameldp.Accountant().compose(KRR).compose(RAPPOR).explain(DELTA).best

    run = cli("budget", "history", "flights", "--ledger", "b.db")

    assert run.exit_code == 0, run.stderr
    assert "History of 'flights'" in run.stdout
    rows = _rows(run.stdout)
    assert list(rows) == ["1", "2"]
    entries = frameldp.Ledger(tmp_path / "b.db").history("flights")
    assert rows["1"] == [
        entries[0].at[:19],  # shown to the second; the ledger keeps microseconds
        "privatize carrier",
        f"{KRR.epsilon:.6g}",
        f"{first.epsilon:.6g}",
        first.method,
    ]
    assert rows["2"][1:] == [
        "privatize origin",
        f"{RAPPOR.epsilon:.6g}",
        f"{second.epsilon:.6g}",
        second.method,
    ]


def test_the_ledger_may_come_from_the_environment(cli: Cli, tmp_path: Path) -> None:
    """``FRAMELDP_LEDGER`` stands in for ``--ledger`` in every command."""
    env = {"FRAMELDP_LEDGER": str(tmp_path / "env.db")}

    run = cli("budget", "set", "flights", "--epsilon", "2", env=env)
    assert run.exit_code == 0, run.stderr
    frameldp.Ledger(tmp_path / "env.db").spend("flights", KRR, description="privatize carrier")

    run = cli("budget", "show", env=env)
    assert run.exit_code == 0, run.stderr
    assert _rows(run.stdout)["flights"][:2] == ["2", "pure"]
    assert _rows(run.stdout)["flights"][4] == "1"

    run = cli("budget", "history", "flights", env=env)
    assert run.exit_code == 0, run.stderr
    assert _rows(run.stdout)["1"][1] == "privatize carrier"


def test_an_explicit_ledger_wins_over_the_environment(cli: Cli, tmp_path: Path) -> None:
    frameldp.Ledger(tmp_path / "b.db").set_budget("flights", epsilon=1.0)

    run = cli("budget", "show", "--ledger", "b.db", env={"FRAMELDP_LEDGER": "missing.db"})

    assert run.exit_code == 0, run.stderr
    assert list(_rows(run.stdout)) == ["flights"]


# ---------------------------------------------------------------------------- user mistakes


@pytest.mark.parametrize("command", ["show", "history"])
def test_a_missing_ledger_file_is_an_error_and_is_not_created(
    typer_cli: Cli, tmp_path: Path, command: str
) -> None:
    args = ["budget", command, *(["flights"] if command == "history" else [])]

    run = typer_cli(*args, "--ledger", "missing.db")

    _assert_user_error(run, "'missing.db' does not exist", "budget set")
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize("command", ["show", "history"])
def test_an_unknown_budget_is_an_error(typer_cli: Cli, tmp_path: Path, command: str) -> None:
    _ledger_with_releases(tmp_path / "b.db")

    run = typer_cli("budget", command, "nope", "--ledger", "b.db")

    _assert_user_error(run, "budget 'nope' is not set", "flights", "nightly")


@pytest.mark.parametrize("epsilon", ["-1", "0", "inf", "nan"])
def test_set_refuses_a_bad_epsilon(typer_cli: Cli, tmp_path: Path, epsilon: str) -> None:
    frameldp.Ledger(tmp_path / "b.db").set_budget("flights", epsilon=5.0)

    run = typer_cli("budget", "set", "flights", "--epsilon", epsilon, "--ledger", "b.db")

    _assert_user_error(run, "budget 'flights'", "epsilon must be finite and > 0")
    assert frameldp.Ledger(tmp_path / "b.db").status("flights").epsilon == 5.0


@pytest.mark.parametrize("delta", ["0", "1", "1.5", "-1e-6"])
def test_set_refuses_a_delta_outside_0_1(typer_cli: Cli, tmp_path: Path, delta: str) -> None:
    frameldp.Ledger(tmp_path / "b.db").set_budget("flights", epsilon=5.0, delta=DELTA)

    run = typer_cli(
        "budget", "set", "flights", "--epsilon", "1", "--delta", delta, "--ledger", "b.db"
    )

    _assert_user_error(run, "delta must be in (0, 1)", f"got {float(delta)!r}")
    status = frameldp.Ledger(tmp_path / "b.db").status("flights")
    assert (status.epsilon, status.delta) == (5.0, DELTA)


@pytest.mark.parametrize(
    "args",
    [
        ["show"],
        ["show", "flights"],
        ["history", "flights"],
        ["set", "flights", "--epsilon", "1"],
    ],
    ids=["show", "show-name", "history", "set"],
)
def test_a_file_that_is_not_sqlite_is_an_error_and_is_left_alone(
    typer_cli: Cli, tmp_path: Path, args: list[str]
) -> None:
    garbage = bytes(range(256)) * 16
    (tmp_path / "notes.db").write_bytes(garbage)

    run = typer_cli("budget", *args, "--ledger", "notes.db")

    _assert_user_error(run, "ledger 'notes.db'", "not a SQLite database")
    assert (tmp_path / "notes.db").read_bytes() == garbage


def test_set_in_a_missing_directory_is_an_error(typer_cli: Cli, tmp_path: Path) -> None:
    run = typer_cli("budget", "set", "flights", "--epsilon", "1", "--ledger", "nodir/b.db")

    _assert_user_error(run, "directory of 'nodir/b.db' does not exist")
    assert not (tmp_path / "nodir").exists()


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00garbage" * 100)


def _truncated(path: Path) -> None:
    _ledger_with_releases(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _one_budget(path: Path) -> None:
    frameldp.Ledger(path).set_budget("flights", epsilon=5.0)


# name -> (what b.db is, the command, fragments of the error line)
SCRIPT_MISTAKES: dict[str, tuple[Callable[[Path], None], list[str], list[str]]] = {
    "missing-file": (lambda path: None, ["show"], ["'b.db' does not exist"]),
    "unknown-budget": (_ledger_with_releases, ["history", "nope"], ["'nope' is not set"]),
    "epsilon": (_one_budget, ["set", "flights", "--epsilon", "-1"], ["> 0, got -1.0"]),
    "delta": (_one_budget, ["set", "x", "--epsilon", "1", "--delta", "1.5"], ["got 1.5"]),
    "not-sqlite": (_garbage, ["show"], ["ledger 'b.db'", "not a SQLite database"]),
    "truncated": (_truncated, ["show"], ["ledger 'b.db'", "corrupt or truncated"]),
    "directory": (Path.mkdir, ["history", "flights"], ["ledger 'b.db'", "is a directory"]),
}


@pytest.mark.parametrize("mistake", list(SCRIPT_MISTAKES))
def test_mistakes_through_the_installed_command(tmp_path: Path, mistake: str) -> None:
    """The in-process checks above, as a user sees them: one ``error:`` line on real stderr."""
    prepare, args, fragments = SCRIPT_MISTAKES[mistake]
    prepare(tmp_path / "b.db")
    before = sorted(tmp_path.iterdir())

    run = _script_runner(tmp_path)("budget", *args, "--ledger", "b.db")

    _assert_user_error(run, *fragments)
    assert sorted(tmp_path.iterdir()) == before


# ---------------------------------------------------------------------------- damaged ledgers


@pytest.mark.parametrize("command", [["show"], ["show", "flights"], ["history", "flights"]])
def test_a_read_only_ledger_is_shown_and_left_unchanged(
    typer_cli: Cli, tmp_path: Path, command: list[str]
) -> None:
    """Before: opening a ledger wrote its schema, so ``show`` failed on a read-only ledger."""
    _ledger_with_releases(tmp_path / "b.db")
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}

    with unwritable(tmp_path / "b.db", tmp_path):
        run = typer_cli("budget", *command, "--ledger", "b.db")

    assert run.exit_code == 0, run.stderr
    assert "flights" in run.stdout
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_set_on_a_read_only_ledger_is_an_error_and_records_nothing(
    typer_cli: Cli, tmp_path: Path
) -> None:
    _ledger_with_releases(tmp_path / "b.db")
    before = (tmp_path / "b.db").read_bytes()

    with unwritable(tmp_path / "b.db"):
        run = typer_cli("budget", "set", "flights", "--epsilon", "99", "--ledger", "b.db")

    _assert_user_error(run, "ledger 'b.db'", "read-only", "nothing was recorded")
    assert (tmp_path / "b.db").read_bytes() == before


def test_seeded_releases_are_marked_insecure(cli: Cli, tmp_path: Path) -> None:
    ledger = frameldp.Ledger(tmp_path / "b.db")
    ledger.set_budget("flights", epsilon=10.0)
    ledger.set_budget("nightly", epsilon=3.0)
    ledger.spend("flights", KRR, description="privatize carrier")
    ledger.spend("flights", KRR.insecure(), description="test run, seed=3")
    ledger.spend("nightly", KRR, description="privatize carrier")

    show = cli("budget", "show", "--ledger", "b.db")
    history = cli("budget", "history", "flights", "--ledger", "b.db")

    assert show.exit_code == 0, show.stderr
    assert _rows(show.stdout)["flights"][-3:-2] == ["basic"]
    assert _rows(show.stdout)["flights"][-1] == "INSECURE (1 seeded)"
    assert _rows(show.stdout)["nightly"][-3:-2] == ["basic"]
    assert _rows(show.stdout)["nightly"][-1] == ""
    assert INSECURE in show.stdout
    assert history.exit_code == 0, history.stderr
    assert [row[-1] for row in _rows(history.stdout).values()] == ["", "INSECURE (seeded)"]
    assert INSECURE in history.stdout
    assert "INSECURE" not in cli("budget", "history", "nightly", "--ledger", "b.db").stdout


# ---------------------------------------------------------------------------- known bugs


def test_show_refuses_another_applications_database_and_leaves_it_alone(
    typer_cli: Cli, tmp_path: Path
) -> None:
    with sqlite3.connect(tmp_path / "app.db") as connection:
        connection.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
        connection.execute("PRAGMA user_version = 7")
    connection.close()

    run = typer_cli("budget", "show", "--ledger", "app.db")

    with sqlite3.connect(tmp_path / "app.db") as connection:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master")]
    connection.close()
    assert (version, tables) == (7, ["users"])
    _assert_user_error(run, "app.db")


@pytest.mark.parametrize(
    "options", [["--epsilon", "-1"], ["--epsilon", "1", "--delta", "2"]], ids=["epsilon", "delta"]
)
def test_a_refused_set_creates_no_ledger_file(
    typer_cli: Cli, tmp_path: Path, options: list[str]
) -> None:
    run = typer_cli("budget", "set", "flights", *options, "--ledger", "new.db")

    _assert_user_error(run, "got")
    assert not (tmp_path / "new.db").exists()


def test_a_long_error_message_stays_on_one_line_at_80_columns(
    typer_cli: Cli, tmp_path: Path
) -> None:
    deep = tmp_path / "pipelines" / "nightly-flights-release" / "state"
    deep.mkdir(parents=True)
    _ledger_with_releases(deep / "budget.sqlite")

    run = typer_cli(
        "budget", "show", "nope", "--ledger", str(deep / "budget.sqlite"), env={"COLUMNS": "80"}
    )

    _assert_user_error(run, "budget 'nope' is not set", str(deep / "budget.sqlite"), "nightly")


@pytest.mark.parametrize("name", ["team[prod]", "a[/b]"], ids=["style-tag", "closing-tag"])
def test_error_messages_show_brackets_verbatim(typer_cli: Cli, tmp_path: Path, name: str) -> None:
    _ledger_with_releases(tmp_path / "b.db")

    run = typer_cli("budget", "show", name, "--ledger", "b.db")

    _assert_user_error(run, f"budget {name!r} is not set")


def test_tables_show_brackets_verbatim(typer_cli: Cli, tmp_path: Path) -> None:
    ledger = frameldp.Ledger(tmp_path / "b.db")
    ledger.set_budget("flights[eu]", epsilon=5.0)
    ledger.spend("flights[eu]", KRR, description="privatize fare[usd]")

    shown = typer_cli("budget", "show", "--ledger", "b.db")
    history = typer_cli("budget", "history", "flights[eu]", "--ledger", "b.db")

    assert list(_rows(shown.stdout)) == ["flights[eu]"]
    assert _rows(history.stdout)["1"][1] == "privatize fare[usd]"


def test_history_keeps_the_timestamp_at_80_columns(typer_cli: Cli, tmp_path: Path) -> None:
    _ledger_with_releases(tmp_path / "b.db")
    [entry, _] = frameldp.Ledger(tmp_path / "b.db").history("flights")

    run = typer_cli("budget", "history", "flights", "--ledger", "b.db", env={"COLUMNS": "80"})

    assert run.exit_code == 0, run.stderr
    assert entry.at[:19] in run.stdout  # to the second, never cut
