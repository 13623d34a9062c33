"""The budget ledger: a persistent, atomic record of what each population has spent.

A nightly pipeline privatizes the same people again and again; the ledger makes sure the total
never passes a cap. Budgets are named (one per dataset or population) with an epsilon cap and an
optional delta. The spent total is the tightest composition of every recorded release
(:class:`~frameldp.accounting.Accountant`): at the budget's delta when it has one, else the sum of
pure epsilons (the only valid statement at delta = 0).

Storage is SQLite (a file, or ``":memory:"``). :meth:`Ledger.spend` runs in one
``BEGIN IMMEDIATE`` transaction: it takes the database's write lock, recomputes the total with the
new release, and either records it or raises :class:`~frameldp.errors.BudgetExceededError`
having recorded nothing. Concurrent processes queue on the lock, so the cap holds exactly and no
entry is lost. :meth:`Ledger.charge` holds the same transaction open while the reports are being
produced: they are recorded if and only if they were produced.

Reading never writes: reads open the file read-only (a read-only file or directory is fine), and
a file that does not exist yet reads as an empty ledger and is not created. The tables are created
by the first :meth:`Ledger.set_budget`, and an older ledger is upgraded by its first write. A file
that cannot be used (damaged, truncated, not a ledger, a directory, read-only for a write, locked
past the timeout, a full disk or an I/O error) raises :class:`~frameldp.errors.LedgerError` naming
the file and the problem; a failed write has recorded nothing.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from frameldp._lazy import on_first_use
from frameldp.accounting.accountant import Accountant, check_delta
from frameldp.accounting.events import check_positive
from frameldp.accounting.guarantee import INSECURE, PrivacyGuarantee
from frameldp.errors import (
    BudgetExceededError,
    LedgerError,
    ParameterError,
    UnknownBudgetError,
    shown,
)

if TYPE_CHECKING:
    import sqlite3
else:
    sqlite3 = on_first_use("sqlite3")  # a ledger's first use imports it (a light import)

__all__ = ["BudgetStatus", "Ledger", "Spend", "check_budget"]

_SCHEMA = """
CREATE TABLE budgets (
    name        TEXT PRIMARY KEY,
    epsilon     REAL NOT NULL CHECK (epsilon > 0),
    delta       REAL NOT NULL DEFAULT 0 CHECK (delta >= 0 AND delta < 1),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE spends (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    budget        TEXT NOT NULL REFERENCES budgets(name),
    at            TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    epsilon       REAL NOT NULL,
    total_epsilon REAL NOT NULL,
    method        TEXT NOT NULL,
    guarantee     TEXT NOT NULL,
    seeded        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX spends_by_budget ON spends (budget, id);
"""
_SCHEMA_VERSION = 2
"""Version 1 had no ``seeded`` column; its ledgers are read as they are and upgraded by the first
write (the column is filled in from the stored guarantees)."""

# What a SQLite result code means for a ledger file (https://sqlite.org/rescode.html).
# The primary codes, fixed by SQLite's C API (sqlite3.h): SQLITE_FULL, SQLITE_IOERR, ...
_PROBLEMS = {
    13: "the disk is full",  # SQLITE_FULL
    10: "the disk reported an I/O error",  # SQLITE_IOERR
    26: "the file is not a SQLite database",  # SQLITE_NOTADB
    11: "the file is corrupt or truncated",  # SQLITE_CORRUPT
    8: "the file or its directory is read-only",  # SQLITE_READONLY
    14: "cannot open the file, or create its journal beside it",  # SQLITE_CANTOPEN
    3: "permission denied",  # SQLITE_PERM
}


@dataclass(frozen=True)
class Spend:
    """One recorded release."""

    id: int
    budget: str
    at: str
    description: str
    epsilon: float
    total_epsilon: float
    method: str
    guarantee: PrivacyGuarantee

    @property
    def seeded(self) -> bool:
        """True when the release was drawn from a seed (insecure: see ``INSECURE``)."""
        return self.guarantee.seeded


@dataclass(frozen=True)
class BudgetStatus:
    """A budget's cap and what has been spent of it.

    ``seeded`` counts the releases drawn from an integer seed: their noise can be removed by
    anyone who knows the seed, so they are marked ``INSECURE`` wherever the status is shown.
    """

    name: str
    epsilon: float
    delta: float
    spent: float
    method: str
    releases: int
    seeded: int = 0
    accountant: Accountant | None = field(default=None, compare=False, repr=False)
    """The releases spent, whose profile gives :attr:`risk_sentence` (None: not kept)."""

    @property
    def risk_sentence(self) -> str:
        """What everything spent lets an attacker learn about one person (the posterior from
        a prior of 1%; at the budget's delta, pure when it has none), in words."""
        if self.accountant is None or not self.accountant.entries:
            return "nothing spent"
        return self.accountant.profile.headline(0.01, self.delta)

    @property
    def remaining(self) -> float:
        """``epsilon - spent`` (never negative)."""
        return max(0.0, self.epsilon - self.spent)

    def __str__(self) -> str:
        at = f" at δ = {self.delta:.3g}" if self.delta else " (pure)"
        text = (
            f"{self.name}: spent ε = {self.spent:.6g} of {self.epsilon:.6g}{at} "
            f"over {self.releases} release(s) [{self.method}]"
        )
        if self.releases:
            text = f"{text}; {self.risk_sentence}"
        return f"{text}, {self.seeded} seeded [{INSECURE}]" if self.seeded else text


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(f"budget name must be a non-empty string, got {shown(name)}")
    return name


def check_budget(name: Any, epsilon: Any, delta: Any) -> tuple[str, float, float]:
    """Validate a budget's name, epsilon cap and optional delta (0.0 when None)."""
    name = _check_name(name)
    cap = check_positive(f"budget {shown(name)}", "epsilon", epsilon)
    return name, cap, 0.0 if delta is None else check_delta(delta)


def _total(accountant: Accountant, delta: float) -> tuple[float, str]:
    """Spent epsilon of a budget: tightest at its delta, basic when it is pure."""
    if not accountant.entries:
        return 0.0, "none"
    if delta == 0.0:
        return accountant.pure_epsilon, "basic"
    best = accountant.explain(delta).best
    return best.epsilon, best.method


def _create(connection: sqlite3.Connection) -> None:
    # executescript would commit the transaction; run the statements one by one.
    for statement in filter(str.strip, _SCHEMA.split(";")):
        connection.execute(statement)
    connection.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")


def _empty() -> sqlite3.Connection:
    """An empty ledger in memory, inside a transaction: what a file not written yet reads as."""
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("BEGIN")
    _create(connection)
    return connection


def _rollback(connection: sqlite3.Connection) -> None:
    """Roll back what is still open, keeping the error being raised as the one reported.

    After a full disk or an I/O error SQLite may have rolled the transaction back itself; a
    second ROLLBACK would fail with "no transaction is active" and hide the real cause. Closing
    the connection rolls back whatever a failed ROLLBACK left.
    """
    if connection.in_transaction:
        with suppress(sqlite3.Error):
            connection.execute("ROLLBACK")


class Ledger:
    """Named privacy budgets in a SQLite database.

    >>> import frameldp
    >>> ledger = frameldp.Ledger(":memory:")
    >>> ledger.set_budget("flights", epsilon=3.0)
    >>> g = frameldp.RandomizedResponse(1.0, domain=["a", "b", "c"]).privacy
    >>> ledger.spend("flights", g, description="nightly carrier release") <= 1.0
    True
    >>> ledger.spend("flights", g) <= 2.0
    True
    >>> ledger.spend("flights", frameldp.compose([g, g]))
    Traceback (most recent call last):
    ...
    frameldp.errors.BudgetExceededError: budget 'flights': this release would raise ...
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 600.0) -> None:
        self.path = str(path)
        self._timeout = timeout
        self._memory: sqlite3.Connection | None = None
        # Which thread is inside charge() (a lazy plan, a Dask graph or a polars group_by may
        # charge from other threads); the one ":memory:" connection is used by one at a time.
        self._local = threading.local()
        self._memory_lock = threading.RLock()
        if self.path == ":memory:":
            self._memory = sqlite3.connect(
                ":memory:", isolation_level=None, check_same_thread=False
            )
            _create(self._memory)
            return
        if not Path(self.path).parent.exists():
            raise ParameterError(f"ledger: directory of {self.path!r} does not exist")
        with self._transaction(write=False):
            pass  # refuse a file that is no usable ledger at once, without writing to it

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"

    def __reduce__(self) -> tuple[Callable[[str, float], Ledger], tuple[str, float]]:
        """A ledger file travels by its path (to a Dask worker that charges a computation); a
        ``":memory:"`` ledger lives in this process only."""
        if self._memory is not None:
            raise ParameterError(
                "a Ledger(':memory:') cannot be sent to another process (a Dask worker, say); "
                "give the ledger a file path"
            )
        return (_reopened, (self.path, self._timeout))

    # ------------------------------------------------------------------ connections

    def _problem(self, error: sqlite3.Error, *, writing: bool) -> LedgerError:
        """A LedgerError naming the file and what went wrong, from a SQLite error."""
        code = getattr(error, "sqlite_errorcode", None)  # extended; its low byte is the primary
        name = getattr(error, "sqlite_errorname", None)
        if code == sqlite3.SQLITE_READONLY_ROLLBACK:
            problem = (
                f"an interrupted write left a journal ({self.path}-journal) to roll back, and the "
                "file or its directory is read-only"
            )
        elif code is not None and (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            problem = f"another writer kept it locked for more than {self._timeout:g} s"
        elif code is not None and (code & 0xFF) in _PROBLEMS:
            problem = _PROBLEMS[code & 0xFF]
        else:
            problem = "SQLite failed"
        detail = f"{error}; {name}" if name else str(error)
        nothing = "; nothing was recorded" if writing else ""
        return LedgerError(f"ledger {self.path!r}: {problem} ({detail}){nothing}")

    @contextmanager
    def _failures(self, *, writing: bool) -> Iterator[None]:
        """Raise a SQLite error of the statements inside as a :class:`LedgerError`."""
        try:
            yield
        except sqlite3.Error as error:
            raise self._problem(error, writing=writing) from error

    def _connect(self, mode: str) -> sqlite3.Connection:
        # mode=ro never writes, rw never creates the file, rwc may (https://sqlite.org/uri.html).
        # Autocommit mode: every transaction below is opened explicitly (BEGIN [IMMEDIATE]).
        uri = f"{Path(self.path).absolute().as_uri()}?mode={mode}"
        return sqlite3.connect(uri, uri=True, timeout=self._timeout, isolation_level=None)

    def _check(self, connection: sqlite3.Connection) -> tuple[int, set[str]]:
        """Schema version and tables; refuse a database of another program or a newer frameldp
        (never writing into it)."""
        version = int(connection.execute("PRAGMA user_version").fetchone()[0])
        tables = {
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        # A new ledger is an empty database at version 0; ours has both tables.
        if (tables and not {"budgets", "spends"} <= tables) or (not tables and version != 0):
            raise LedgerError(
                f"ledger {self.path!r}: a SQLite database but not a frameldp ledger "
                f"(user_version {version}, tables {sorted(tables)}); left unchanged"
            )
        if version > _SCHEMA_VERSION:
            raise LedgerError(
                f"ledger {self.path!r}: written by a newer frameldp (ledger schema version "
                f"{version}, this one knows up to {_SCHEMA_VERSION}); upgrade frameldp"
            )
        return version, tables

    def _upgrade(self, connection: sqlite3.Connection, version: int, tables: set[str]) -> None:
        """Create the tables of a new file, or bring an older ledger to the current schema."""
        if not tables:
            _create(connection)
        elif version < _SCHEMA_VERSION:
            connection.execute("ALTER TABLE spends ADD COLUMN seeded INTEGER NOT NULL DEFAULT 0")
            seeded = [
                (text,)
                for (text,) in connection.execute("SELECT DISTINCT guarantee FROM spends")
                if json.loads(text).get("seeded")
            ]
            connection.executemany("UPDATE spends SET seeded = 1 WHERE guarantee = ?", seeded)
            connection.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    def _begin(self, mode: str, *, write: bool) -> sqlite3.Connection:
        """A connection to the file inside a transaction, schema checked (created when writing);
        an empty in-memory ledger when reading a file without tables."""
        connection = self._connect(mode)
        try:
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            version, tables = self._check(connection)
            if write:
                self._upgrade(connection, version, tables)
            elif not tables:
                connection.close()
                return _empty()
            return connection
        except BaseException:
            connection.close()
            raise

    def _open(self, *, write: bool, create: bool) -> sqlite3.Connection:
        if Path(self.path).is_dir():
            raise LedgerError(f"ledger {self.path!r}: is a directory, not a ledger file")
        if not create and not Path(self.path).exists():
            # Nothing to read yet, and nothing is created: reads see no budgets, and a charge
            # fails with UnknownBudgetError (this empty ledger can hold no budget to charge).
            return _empty()
        if write:
            return self._begin("rwc" if create else "rw", write=True)
        try:
            return self._begin("ro", write=False)
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode != sqlite3.SQLITE_READONLY_ROLLBACK:
                raise
            # A write was interrupted (crash, full disk) and left a hot journal, which any
            # reader must roll back first; SQLite opens a write-protected file read-only anyway.
            return self._begin("rw", write=False)

    @contextmanager
    def _transaction(
        self, *, write: bool = True, create: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """A transaction; a write one holds the database's write lock from start to commit.

        ``create``: the file and its tables may be created (set_budget); other writes need an
        existing ledger. SQLite errors of opening, beginning and committing are LedgerErrors;
        the caller maps those of its own statements (:meth:`_failures`), never the user's.
        """
        if write and getattr(self._local, "writing", False):
            # A second write from inside charge() would wait for this very ledger's lock.
            raise ParameterError(
                f"ledger {self.path!r}: cannot spend or set a budget inside charge() of the "
                "same ledger; do it after the block"
            )
        if self._memory is None:
            with self._transaction_on(write=write, create=create) as connection:
                yield connection
            return
        with self._memory_lock:  # other threads wait; this one may read inside its charge()
            if self._memory.in_transaction:
                yield self._memory  # a read inside charge() of a ":memory:" ledger
                return
            with self._transaction_on(write=write, create=create) as connection:
                yield connection

    @contextmanager
    def _transaction_on(self, *, write: bool, create: bool) -> Iterator[sqlite3.Connection]:
        """The transaction of :meth:`_transaction` once it may begin."""
        with self._failures(writing=write):
            if self._memory is not None:
                connection = self._memory
                connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            else:
                connection = self._open(write=write, create=create)
        if write:
            self._local.writing = True
        try:
            try:
                yield connection
            except BaseException:
                _rollback(connection)
                raise
            with self._failures(writing=write):
                try:
                    connection.execute("COMMIT")
                except sqlite3.Error:
                    _rollback(connection)
                    raise
        finally:
            if write:
                self._local.writing = False
            if connection is not self._memory:
                connection.close()

    # ------------------------------------------------------------------ budgets

    def set_budget(self, name: str, *, epsilon: float, delta: float | None = None) -> None:
        """Create or change a budget: an epsilon cap and, optionally, a delta.

        With a delta the spent total is the tightest (epsilon, delta) composition at that delta;
        without one it is the sum of pure epsilons. Creates the ledger file when it does not
        exist yet.
        """
        name, epsilon, delta_value = check_budget(name, epsilon, delta)
        now = _now()
        with self._transaction(create=True) as connection, self._failures(writing=True):
            connection.execute(
                "INSERT INTO budgets (name, epsilon, delta, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                "epsilon = excluded.epsilon, delta = excluded.delta, "
                "updated_at = excluded.updated_at",
                (name, epsilon, delta_value, now, now),
            )

    def _budget(self, connection: sqlite3.Connection, name: str) -> tuple[float, float]:
        row = connection.execute(
            "SELECT epsilon, delta FROM budgets WHERE name = ?", (_check_name(name),)
        ).fetchone()
        if row is None:
            known = [r[0] for r in connection.execute("SELECT name FROM budgets ORDER BY name")]
            raise UnknownBudgetError(
                f"budget {shown(name)} is not set in {self.path}; known: {shown(known, 200)}"
            )
        return float(row[0]), float(row[1])

    def _accountant(self, connection: sqlite3.Connection, name: str) -> tuple[Accountant, int, int]:
        """Every release of a budget composed, how many there are, and how many were seeded."""
        # Nightly pipelines repeat the same release: parse each distinct guarantee once.
        releases, seeded = 0, 0
        rows = connection.execute(
            "SELECT guarantee, COUNT(*) FROM spends WHERE budget = ? "
            "GROUP BY guarantee ORDER BY MIN(id)",
            (name,),
        ).fetchall()
        guarantees = []
        for text, count in rows:
            guarantee = PrivacyGuarantee.from_json(text)
            guarantees.append((guarantee, count))
            releases += count
            seeded += count if guarantee.seeded else 0
        return Accountant.of(guarantees), releases, seeded

    # ------------------------------------------------------------------ spending

    @contextmanager
    def charge(
        self, name: str, guarantee: PrivacyGuarantee, *, description: str = ""
    ) -> Iterator[Spend]:
        """Check and record a release around the code that produces it.

        Raises :class:`BudgetExceededError` before the block runs when the release does not fit;
        otherwise the entry is committed when the block finishes and rolled back if it raises.
        The ledger stays locked for other writers meanwhile. A :class:`LedgerError` (full disk,
        I/O error, read-only file, ...) means nothing was recorded.
        """
        if not isinstance(guarantee, PrivacyGuarantee):
            raise ParameterError(
                f"budget {shown(name)}: spend needs a PrivacyGuarantee, got "
                f"{type(guarantee).__name__}"
            )
        with self._transaction() as connection:
            with self._failures(writing=True):
                entry = self._record(connection, name, guarantee, description)
            yield entry  # the caller's block: its errors are its own, never a LedgerError

    def _record(
        self,
        connection: sqlite3.Connection,
        name: str,
        guarantee: PrivacyGuarantee,
        description: str,
    ) -> Spend:
        cap, delta = self._budget(connection, name)
        before, releases, _ = self._accountant(connection, name)
        after = before.compose(guarantee)
        total, method = _total(after, delta)
        if total > cap:
            spent, _ = _total(before, delta)
            at = f" at delta {delta:g}" if delta else ""
            # Six digits unless they would make the total look equal to the cap.
            new_total = f"{total:.6g}" if f"{total:.6g}" != f"{cap:.6g}" else repr(total)
            raise BudgetExceededError(
                f"budget {shown(name)}: this release would raise the spent epsilon from "
                f"{spent:.6g} to {new_total}{at}, over its cap of {cap!r} "
                f"({releases} release(s) so far); nothing was recorded"
            )
        at_time = _now()
        cursor = connection.execute(
            "INSERT INTO spends (budget, at, description, epsilon, total_epsilon, method, "
            "guarantee, seeded) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                name,
                at_time,
                description,
                guarantee.epsilon,
                total,
                method,
                guarantee.to_json(),
                int(guarantee.seeded),
            ),
        )
        assert cursor.lastrowid is not None
        return Spend(
            cursor.lastrowid,
            name,
            at_time,
            description,
            guarantee.epsilon,
            total,
            method,
            guarantee,
        )

    def spend(self, name: str, guarantee: PrivacyGuarantee, *, description: str = "") -> float:
        """Record a release atomically and return the new spent total.

        Raises :class:`BudgetExceededError` (and records nothing) when the total would pass the
        cap, :class:`UnknownBudgetError` when the budget was never set.
        """
        with self.charge(name, guarantee, description=description) as entry:
            return entry.total_epsilon

    # ------------------------------------------------------------------ reading

    def status(self, name: str) -> BudgetStatus:
        """Cap, delta, spent total and number of releases (and seeded ones) of one budget."""
        with self._transaction(write=False) as connection, self._failures(writing=False):
            cap, delta = self._budget(connection, name)
            accountant, releases, seeded = self._accountant(connection, name)
        spent, method = _total(accountant, delta)
        return BudgetStatus(name, cap, delta, spent, method, releases, seeded, accountant)

    def spent(self, name: str) -> float:
        """The spent epsilon of a budget (at its delta; pure when it has none)."""
        return self.status(name).spent

    def remaining(self, name: str) -> float:
        """What is left of a budget's cap."""
        return self.status(name).remaining

    def accountant(self, name: str) -> Accountant:
        """Every release recorded against a budget, as an accountant."""
        with self._transaction(write=False) as connection, self._failures(writing=False):
            self._budget(connection, name)
            return self._accountant(connection, name)[0]

    def budgets(self) -> list[BudgetStatus]:
        """Status of every budget, by name."""
        with self._transaction(write=False) as connection, self._failures(writing=False):
            names = [row[0] for row in connection.execute("SELECT name FROM budgets ORDER BY name")]
        return [self.status(name) for name in names]

    def history(self, name: str) -> list[Spend]:
        """Every release recorded against a budget, oldest first."""
        with self._transaction(write=False) as connection, self._failures(writing=False):
            self._budget(connection, name)
            rows = connection.execute(
                "SELECT id, budget, at, description, epsilon, total_epsilon, method, guarantee "
                "FROM spends WHERE budget = ? ORDER BY id",
                (name,),
            ).fetchall()
        return [
            Spend(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                row[6],
                PrivacyGuarantee.from_dict(json.loads(row[7])),
            )
            for row in rows
        ]


def _reopened(path: str, timeout: float) -> Ledger:
    """The ledger file at ``path``, opened again (how a pickled :class:`Ledger` is loaded)."""
    return Ledger(path, timeout=timeout)
