"""A ledger file that is damaged, read-only, locked, full or another program's database.

Every failure is a :class:`~frameldp.errors.LedgerError` naming the file and the problem (never a
sqlite3 exception), reads never write, and a failed charge records nothing. Everything is real:
SQLite files under ``tmp_path``; files and directories made unwritable by the operating system
(``chmod``, plus ``chattr +i`` when the tests run as root, whom file modes do not stop); a full
database from SQLite's own page limit; I/O errors from a file-size limit (``RLIMIT_FSIZE``) in a
child process; a crash mid-write from a child process that exits without committing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from frameldp import Ledger, PrivacyGuarantee, PureDP, UnknownBudgetError
from frameldp.errors import LedgerError, ParameterError

BUDGET = "b"
PADDING = 50_000  # characters: a release whose guarantee needs new pages in the file


def _exact(epsilon: float, **parameters: Any) -> PrivacyGuarantee:
    return PrivacyGuarantee(epsilon, "test", parameters, events=((PureDP(epsilon), 1),))


def _ledger(path: Path, releases: int = 3) -> Ledger:
    """A ledger with budget ``b`` (cap 1000) and ``releases`` releases of epsilon 1."""
    ledger = Ledger(path)
    ledger.set_budget(BUDGET, epsilon=1000.0)
    for i in range(releases):
        ledger.spend(BUDGET, _exact(1.0), description=f"release {i} " + "x" * 200)
    return ledger


def _files(directory: Path) -> dict[str, bytes]:
    """Every file in ``directory`` and its bytes: a journal left behind shows up too."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _writable(path: Path) -> bool:
    probe = path / ".probe" if path.is_dir() else path
    try:
        descriptor = os.open(probe, os.O_WRONLY | (os.O_CREAT if path.is_dir() else 0))
    except PermissionError:
        return False
    os.close(descriptor)
    if path.is_dir():
        probe.unlink()
    return True


@contextlib.contextmanager
def unwritable(*paths: Path) -> Iterator[None]:
    """Make files and directories unwritable for the duration, in a way that holds for root too.

    ``chmod`` stops other users; root ignores file modes, so as root the paths are also made
    immutable (``chattr +i``). Skips when neither works here (root on a file system without
    immutable files), since a test that could still write would prove nothing.
    """
    modes = {path: path.stat().st_mode for path in paths}
    root = os.geteuid() == 0
    try:
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        if root:
            subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, check=False)
        if any(_writable(path) for path in paths):
            pytest.skip("cannot make a file read-only here (root without chattr +i)")
        yield
    finally:
        if root:
            subprocess.run(["chattr", "-i", *map(str, paths)], capture_output=True, check=False)
        for path, mode in modes.items():
            path.chmod(mode)


def _charge(ledger: Ledger, guarantee: PrivacyGuarantee) -> bool:
    """Charge ``guarantee`` around a block; whether the block ran."""
    ran = False
    with ledger.charge(BUDGET, guarantee):
        ran = True
    return ran


def _assert_names(error: pytest.ExceptionInfo[LedgerError], path: Path, *fragments: str) -> None:
    message = str(error.value)
    assert f"ledger {str(path)!r}: " in message
    for fragment in fragments:
        assert fragment in message
    assert "cannot rollback" not in message


# --- reading never writes ----------------------------------------------------------------------


@pytest.mark.parametrize("what", ["file", "directory", "both"])
def test_a_read_only_ledger_can_be_read_and_is_left_unchanged(tmp_path: Path, what: str) -> None:
    """Before: opening wrote the schema, so every read of a read-only ledger failed."""
    path = tmp_path / "ledger" / "budget.sqlite"
    path.parent.mkdir()
    ledger = _ledger(path)
    expected = (ledger.budgets(), ledger.history(BUDGET), ledger.accountant(BUDGET))
    before = _files(path.parent)
    locked = {"file": [path], "directory": [path.parent], "both": [path, path.parent]}[what]

    with unwritable(*locked):
        reader = Ledger(path)
        assert (reader.budgets(), reader.history(BUDGET), reader.accountant(BUDGET)) == expected
        assert reader.status(BUDGET) == expected[0][0]
        assert reader.spent(BUDGET) == ledger.spent(BUDGET)

    assert _files(path.parent) == before


WRITES: dict[str, Callable[[Ledger], object]] = {
    "set_budget": lambda ledger: ledger.set_budget("new", epsilon=1.0),
    "spend": lambda ledger: ledger.spend(BUDGET, _exact(1.0)),
    "charge": lambda ledger: _charge(ledger, _exact(1.0)),
}


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize(
    ("what", "problem"),
    [("file", "the file or its directory is read-only"), ("directory", "journal")],
)
def test_writing_a_read_only_ledger_is_a_ledger_error_and_records_nothing(
    tmp_path: Path, write: str, what: str, problem: str
) -> None:
    path = tmp_path / "ledger" / "budget.sqlite"
    path.parent.mkdir()
    ledger = _ledger(path)
    budgets, history = ledger.budgets(), ledger.history(BUDGET)
    before = _files(path.parent)

    with unwritable(path if what == "file" else path.parent), pytest.raises(LedgerError) as error:
        WRITES[write](ledger)

    _assert_names(error, path, problem, "nothing was recorded")
    assert _files(path.parent) == before
    assert (ledger.budgets(), ledger.history(BUDGET)) == (budgets, history)
    ledger.spend(BUDGET, _exact(1.0))  # writable again: the failure left nothing open
    assert len(ledger.history(BUDGET)) == len(history) + 1


def test_a_ledger_file_that_does_not_exist_reads_as_empty_and_is_not_created(
    tmp_path: Path,
) -> None:
    """Reads and charges of a missing file create nothing; ``set_budget`` creates the file."""
    path = tmp_path / "new.sqlite"
    ledger = Ledger(path)

    assert ledger.budgets() == []
    for call in (
        lambda: ledger.status(BUDGET),
        lambda: ledger.history(BUDGET),
        lambda: ledger.accountant(BUDGET),
        lambda: ledger.spend(BUDGET, _exact(1.0)),
        lambda: _charge(ledger, _exact(1.0)),
    ):
        with pytest.raises(UnknownBudgetError, match=f"budget '{BUDGET}' is not set"):
            call()
    assert list(tmp_path.iterdir()) == []

    ledger.set_budget(BUDGET, epsilon=1.0)
    assert path.is_file()
    assert ledger.status(BUDGET).releases == 0


def test_an_empty_file_reads_as_an_empty_ledger_and_becomes_one_on_the_first_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "touched.sqlite"
    path.touch()  # SQLite reads a file of 0 bytes as an empty database

    assert Ledger(path).budgets() == []
    assert path.read_bytes() == b""
    Ledger(path).set_budget(BUDGET, epsilon=2.0)
    assert Ledger(path).status(BUDGET).epsilon == 2.0


# --- damaged files and other programs' databases -----------------------------------------------


def _garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 16)


def _truncated(path: Path) -> None:
    _ledger(path, releases=40)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_page(path: Path) -> None:
    """The last page (the latest releases) overwritten, its 8-byte page header kept."""
    _ledger(path, releases=40)
    data = bytearray(path.read_bytes())
    page = 4096 * (len(data) // 4096 - 1)
    data[page + 8 : page + 4096] = b"\xff" * (4096 - 8)
    path.write_bytes(bytes(data))


def _directory(path: Path) -> None:
    path.mkdir()


def _sqlite(path: Path, *statements: str) -> None:
    connection = sqlite3.connect(path)
    with connection:
        for statement in statements:
            connection.execute(statement)
    connection.close()


def _other_program(path: Path) -> None:
    _sqlite(path, "CREATE TABLE customers (id INTEGER PRIMARY KEY)", "PRAGMA user_version = 7")


def _stamped_by_other_program(path: Path) -> None:
    _sqlite(path, "PRAGMA user_version = 7")  # no tables, but not a new ledger either


def _newer_frameldp(path: Path) -> None:
    _ledger(path)
    _sqlite(path, "PRAGMA user_version = 99")


# name -> (how the file is made, what the error says)
DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "not-sqlite": (_garbage, "the file is not a SQLite database (file is not a database"),
    "truncated": (_truncated, "corrupt or truncated (database disk image is malformed"),
    "corrupt-page": (_corrupt_page, "corrupt or truncated (database disk image is malformed"),
    "directory": (_directory, "is a directory, not a ledger file"),
    "other-program": (
        _other_program,
        "not a frameldp ledger (user_version 7, tables ['customers']",
    ),
    "stamped": (_stamped_by_other_program, "not a frameldp ledger (user_version 7, tables []"),
    "newer": (_newer_frameldp, "newer frameldp (ledger schema version 99"),
}


def _state(path: Path) -> object:
    return _files(path) if path.is_dir() else path.read_bytes()


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_or_foreign_file_is_a_ledger_error_and_is_left_alone(
    tmp_path: Path, damage: str
) -> None:
    make, fragment = DAMAGE[damage]
    path = tmp_path / "budget.sqlite"
    make(path)
    before = _state(path)

    for call in (
        lambda: Ledger(path).history(BUDGET),
        lambda: Ledger(path).spend(BUDGET, _exact(1.0)),
    ):
        with pytest.raises(LedgerError) as error:
            call()
        _assert_names(error, path, fragment)

    assert _state(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["budget.sqlite"]


CALLS: dict[str, Callable[[Ledger], object]] = {
    **WRITES,
    "status": lambda ledger: ledger.status(BUDGET),
    "budgets": lambda ledger: ledger.budgets(),
    "history": lambda ledger: ledger.history(BUDGET),
    "accountant": lambda ledger: ledger.accountant(BUDGET),
}


@pytest.mark.parametrize("call", CALLS)
def test_every_call_on_a_file_damaged_after_opening_is_a_ledger_error(
    tmp_path: Path, call: str
) -> None:
    path = tmp_path / "budget.sqlite"
    ledger = _ledger(path)
    _garbage(path)
    before = path.read_bytes()

    with pytest.raises(LedgerError) as error:
        CALLS[call](ledger)

    writing = call in WRITES
    _assert_names(error, path, "not a SQLite database", *["nothing was recorded"] * writing)
    assert path.read_bytes() == before


# --- a full disk, I/O errors and crashes during a write ----------------------------------------


class _FullDisk(Ledger):
    """A ledger whose connections may not grow the file: SQLite's real SQLITE_FULL path.

    ``PRAGMA max_page_count`` is a limit of a connection, so it is set on each one the ledger
    opens (the signature takes whatever the ledger passes).
    """

    def _connect(self, *args: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = super()._connect(*args)  # type: ignore[misc]
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {max(pages, 1)}")
        return connection


def test_a_full_disk_is_a_ledger_error_and_the_charge_records_nothing(tmp_path: Path) -> None:
    """Before: SQLite had already rolled back, and the second ROLLBACK's "cannot rollback - no
    transaction is active" replaced "database or disk is full"."""
    path = tmp_path / "budget.sqlite"
    ledger = _ledger(path)
    history = ledger.history(BUDGET)
    big = _exact(1.0, padding="x" * PADDING)

    with pytest.raises(LedgerError) as error:
        _charge(_FullDisk(path), big)  # the block never runs: the insert already fails

    _assert_names(error, path, "the disk is full (database or disk is full", "nothing was recorded")
    assert Ledger(path).history(BUDGET) == history
    assert sorted(p.name for p in tmp_path.iterdir()) == ["budget.sqlite"]
    ledger.spend(BUDGET, big)  # with room again, the same release goes through
    assert Ledger(path).history(BUDGET)[:-1] == history


_LIMITED = """
import json, resource, signal, sys
import frameldp
from frameldp.errors import LedgerError

path, limit, padding = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ledger = frameldp.Ledger(path)
big = frameldp.PrivacyGuarantee(1.0, "test", {"padding": "x" * padding})
# Writes at or past `limit` bytes fail with EFBIG: the disk fails in the middle of the charge.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
ran = False
try:
    with ledger.charge("b", big, description="the disk fails"):
        ran = True
except Exception as error:
    print(json.dumps({"type": type(error).__name__, "message": str(error), "ran": ran}))
else:
    print(json.dumps({"type": None, "message": "", "ran": ran}))
"""


def _limited(path: Path, limit: int) -> dict[str, Any]:
    """Charge a big release in a child process that cannot write past ``limit`` bytes."""
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED, str(path), str(limit), str(PADDING)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize(
    ("where", "ran"),
    # journal: the journal's first page cannot be written, the insert fails before the block;
    # database: the journal is written, the file's new pages are not, the commit fails after it.
    [("journal", False), ("database", True)],
)
def test_an_io_error_during_a_charge_is_a_ledger_error_and_records_nothing(
    tmp_path: Path, where: str, ran: bool
) -> None:
    path = tmp_path / "budget.sqlite"
    ledger = _ledger(path)
    history = ledger.history(BUDGET)
    limit = 1024 if where == "journal" else path.stat().st_size

    result = _limited(path, limit)

    assert result["type"] == "LedgerError", result
    assert result["ran"] is ran
    message = result["message"]
    assert f"ledger {str(path)!r}: the disk reported an I/O error (disk I/O error" in message
    assert "nothing was recorded" in message
    assert "cannot rollback" not in message
    assert Ledger(path).history(BUDGET) == history  # all or nothing: nothing
    ledger.spend(BUDGET, _exact(1.0))
    assert len(ledger.history(BUDGET)) == len(history) + 1


_CRASH = """
import os, sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("PRAGMA cache_size = 1")  # spill changed pages into the file before commit
connection.execute("BEGIN IMMEDIATE")
connection.execute("UPDATE spends SET description = 'half-written'")
os._exit(0)  # a crash: no commit, no rollback; the journal stays behind
"""


def test_a_write_interrupted_by_a_crash_is_rolled_back_before_anything_is_read(
    tmp_path: Path,
) -> None:
    """A read-only reader cannot roll the journal back: LedgerError. A reader that may write
    rolls it back (as SQLite requires), and sees the ledger as it was before the crash."""
    path = tmp_path / "budget.sqlite"
    history = _ledger(path, releases=40).history(BUDGET)
    subprocess.run([sys.executable, "-c", _CRASH, str(path)], check=True, timeout=60)
    journal = tmp_path / "budget.sqlite-journal"
    assert journal.stat().st_size > 0  # the premise: a hot journal

    with unwritable(path, tmp_path), pytest.raises(LedgerError) as error:
        Ledger(path).history(BUDGET)
    _assert_names(error, path, "an interrupted write left a journal", "read-only")

    assert Ledger(path).history(BUDGET) == history
    assert not journal.exists() or journal.stat().st_size == 0


def test_a_ledger_locked_past_the_timeout_is_a_ledger_error(tmp_path: Path) -> None:
    path = tmp_path / "budget.sqlite"
    ledger = _ledger(path)
    other = Ledger(path, timeout=0.05)

    with ledger.charge(BUDGET, _exact(1.0)), pytest.raises(LedgerError) as error:
        other.set_budget("other", epsilon=1.0)

    _assert_names(error, path, "locked for more than 0.05 s", "nothing was recorded")
    assert [status.name for status in ledger.budgets()] == [BUDGET]


# --- concurrency of the lazily created file ----------------------------------------------------

_CREATOR = """
import sys, time
from pathlib import Path
import frameldp

path, name, ready, go = sys.argv[1:]
Path(ready).touch()
while not Path(go).exists():
    time.sleep(0.002)
ledger = frameldp.Ledger(path)
ledger.set_budget(name, epsilon=1.0)
ledger.spend(name, frameldp.PrivacyGuarantee(0.5, "test"))
"""


def test_processes_creating_one_ledger_at_once_lose_nothing(tmp_path: Path) -> None:
    """The tables are created by the first write: writers racing on a new file queue on its lock,
    and every budget and release is kept."""
    path, go = tmp_path / "budget.sqlite", tmp_path / "go"
    names = [f"team{i}" for i in range(4)]
    ready = [tmp_path / f"{name}.ready" for name in names]
    workers = [
        subprocess.Popen([sys.executable, "-c", _CREATOR, str(path), name, str(flag), str(go)])
        for name, flag in zip(names, ready, strict=True)
    ]
    while not all(flag.exists() for flag in ready):  # every worker imported, none has opened
        assert all(worker.poll() is None for worker in workers), "a worker died at start"
        time.sleep(0.01)
    go.touch()
    for worker in workers:
        assert worker.wait(timeout=120) == 0

    statuses = Ledger(path).budgets()
    assert [status.name for status in statuses] == names
    assert [status.releases for status in statuses] == [1] * len(names)


@pytest.mark.parametrize(
    "data",
    [{"epsilon": "x", "mechanism": "krr"}, {"mechanism": "krr"}, {"epsilon": 1.0}, [1, 2]],
    ids=["epsilon-text", "no-epsilon", "no-mechanism", "a-list"],
)
def test_a_guarantee_that_is_not_one_raises_a_parameter_error(data: object) -> None:
    """``PrivacyGuarantee.from_dict`` of anything else raised a bare ValueError / KeyError
    (issue 13, defect 15)."""
    with pytest.raises(ParameterError, match="not a frameldp privacy guarantee"):
        PrivacyGuarantee.from_dict(data)  # type: ignore[arg-type]
