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
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from frameldp.accounting.accountant import Accountant, check_delta
from frameldp.accounting.events import check_positive
from frameldp.accounting.guarantee import PrivacyGuarantee
from frameldp.errors import BudgetExceededError, ParameterError, UnknownBudgetError

__all__ = ["BudgetStatus", "Ledger", "Spend", "check_budget"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    name        TEXT PRIMARY KEY,
    epsilon     REAL NOT NULL CHECK (epsilon > 0),
    delta       REAL NOT NULL DEFAULT 0 CHECK (delta >= 0 AND delta < 1),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS spends (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    budget        TEXT NOT NULL REFERENCES budgets(name),
    at            TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    epsilon       REAL NOT NULL,
    total_epsilon REAL NOT NULL,
    method        TEXT NOT NULL,
    guarantee     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS spends_by_budget ON spends (budget, id);
"""
_SCHEMA_VERSION = 1


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


@dataclass(frozen=True)
class BudgetStatus:
    """A budget's cap and what has been spent of it."""

    name: str
    epsilon: float
    delta: float
    spent: float
    method: str
    releases: int

    @property
    def remaining(self) -> float:
        """``epsilon - spent`` (never negative)."""
        return max(0.0, self.epsilon - self.spent)

    def __str__(self) -> str:
        at = f" at δ = {self.delta:.3g}" if self.delta else " (pure)"
        return (
            f"{self.name}: spent ε = {self.spent:.6g} of {self.epsilon:.6g}{at} "
            f"over {self.releases} release(s) [{self.method}]"
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(f"budget name must be a non-empty string, got {name!r}")
    return name


def check_budget(name: Any, epsilon: Any, delta: Any) -> tuple[str, float, float]:
    """Validate a budget's name, epsilon cap and optional delta (0.0 when None)."""
    name = _check_name(name)
    cap = check_positive(f"budget {name!r}", "epsilon", epsilon)
    return name, cap, 0.0 if delta is None else check_delta(delta)


def _total(accountant: Accountant, delta: float) -> tuple[float, str]:
    """Spent epsilon of a budget: tightest at its delta, basic when it is pure."""
    if not accountant.entries:
        return 0.0, "none"
    if delta == 0.0:
        return accountant.pure_epsilon, "basic"
    best = accountant.explain(delta).best
    return best.epsilon, best.method


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
        self._writing = False
        if self.path == ":memory:":
            self._memory = self._connect()
        elif not Path(self.path).parent.exists():
            raise ParameterError(f"ledger: directory of {self.path!r} does not exist")
        with self._transaction() as connection:
            self._check_foreign(connection)
            # executescript would commit the transaction; run the statements one by one.
            for statement in filter(str.strip, _SCHEMA.split(";")):
                connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    def _check_foreign(self, connection: sqlite3.Connection) -> None:
        """Refuse a SQLite database that belongs to something else (never write into it)."""
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if version not in (0, _SCHEMA_VERSION) or (tables and not {"budgets", "spends"} <= tables):
            raise ParameterError(
                f"ledger: {self.path!r} is a SQLite database but not a frameldp ledger "
                f"(user_version {version}, tables {sorted(tables)})"
            )

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"

    # ------------------------------------------------------------------ connections

    def _connect(self) -> sqlite3.Connection:
        # Autocommit mode: every transaction below is opened explicitly with BEGIN IMMEDIATE.
        return sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)

    @contextmanager
    def _transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """A transaction; a write one holds the database's write lock from start to commit."""
        if write and self._writing:
            # A second write from inside charge() would wait for this very ledger's lock.
            raise ParameterError(
                f"ledger {self.path!r}: cannot spend or set a budget inside charge() of the "
                "same ledger; do it after the block"
            )
        if self._memory is not None and self._memory.in_transaction:
            yield self._memory  # a read inside charge() of a ":memory:" ledger: same connection
            return
        connection = self._memory or self._connect()
        if write:
            self._writing = True
        try:
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        finally:
            if write:
                self._writing = False
            if connection is not self._memory:
                connection.close()

    # ------------------------------------------------------------------ budgets

    def set_budget(self, name: str, *, epsilon: float, delta: float | None = None) -> None:
        """Create or change a budget: an epsilon cap and, optionally, a delta.

        With a delta the spent total is the tightest (epsilon, delta) composition at that delta;
        without one it is the sum of pure epsilons.
        """
        name, epsilon, delta_value = check_budget(name, epsilon, delta)
        now = _now()
        with self._transaction() as connection:
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
            raise UnknownBudgetError(f"budget {name!r} is not set in {self.path}; known: {known}")
        return float(row[0]), float(row[1])

    def _accountant(self, connection: sqlite3.Connection, name: str) -> tuple[Accountant, int]:
        # Nightly pipelines repeat the same release: parse each distinct guarantee once.
        accountant, releases = Accountant(), 0
        rows = connection.execute(
            "SELECT guarantee, COUNT(*) FROM spends WHERE budget = ? "
            "GROUP BY guarantee ORDER BY MIN(id)",
            (name,),
        ).fetchall()
        for text, count in rows:
            accountant = accountant.compose(PrivacyGuarantee.from_json(text), count=count)
            releases += count
        return accountant, releases

    # ------------------------------------------------------------------ spending

    @contextmanager
    def charge(
        self, name: str, guarantee: PrivacyGuarantee, *, description: str = ""
    ) -> Iterator[Spend]:
        """Check and record a release around the code that produces it.

        Raises :class:`BudgetExceededError` before the block runs when the release does not fit;
        otherwise the entry is committed when the block finishes and rolled back if it raises.
        The ledger stays locked for other writers meanwhile.
        """
        if not isinstance(guarantee, PrivacyGuarantee):
            raise ParameterError(
                f"budget {name!r}: spend needs a PrivacyGuarantee, got {type(guarantee).__name__}"
            )
        with self._transaction() as connection:
            cap, delta = self._budget(connection, name)
            before, releases = self._accountant(connection, name)
            after = before.compose(guarantee)
            total, method = _total(after, delta)
            if total > cap:
                spent, _ = _total(before, delta)
                at = f" at delta {delta:g}" if delta else ""
                # Six digits unless they would make the total look equal to the cap.
                shown = f"{total:.6g}" if f"{total:.6g}" != f"{cap:.6g}" else repr(total)
                raise BudgetExceededError(
                    f"budget {name!r}: this release would raise the spent epsilon from "
                    f"{spent:.6g} to {shown}{at}, over its cap of {cap!r} "
                    f"({releases} release(s) so far); nothing was recorded"
                )
            at_time = _now()
            cursor = connection.execute(
                "INSERT INTO spends (budget, at, description, epsilon, total_epsilon, method, "
                "guarantee) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, at_time, description, guarantee.epsilon, total, method, guarantee.to_json()),
            )
            assert cursor.lastrowid is not None
            yield Spend(
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
        """Cap, delta, spent total and number of releases of one budget."""
        with self._transaction(write=False) as connection:
            cap, delta = self._budget(connection, name)
            accountant, releases = self._accountant(connection, name)
        spent, method = _total(accountant, delta)
        return BudgetStatus(name, cap, delta, spent, method, releases)

    def spent(self, name: str) -> float:
        """The spent epsilon of a budget (at its delta; pure when it has none)."""
        return self.status(name).spent

    def remaining(self, name: str) -> float:
        """What is left of a budget's cap."""
        return self.status(name).remaining

    def accountant(self, name: str) -> Accountant:
        """Every release recorded against a budget, as an accountant."""
        with self._transaction(write=False) as connection:
            self._budget(connection, name)
            return self._accountant(connection, name)[0]

    def budgets(self) -> list[BudgetStatus]:
        """Status of every budget, by name."""
        with self._transaction(write=False) as connection:
            names = [row[0] for row in connection.execute("SELECT name FROM budgets ORDER BY name")]
        return [self.status(name) for name in names]

    def history(self, name: str) -> list[Spend]:
        """Every release recorded against a budget, oldest first."""
        with self._transaction(write=False) as connection:
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
