"""What one privatize call releases: its specs, its guarantees, and its ledger charge.

Plumbing only: no formula lives here.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from frameldp.accounting import Ledger, PrivacyGuarantee, compose, per_person
from frameldp.accounting.guarantee import INSECURE, sampled
from frameldp.core.mechanisms import (
    Mechanism,
    Memoizing,
    mechanism_from_spec,
    memoizes,
)
from frameldp.core.randomness import (
    RandomSource,
    resolve_source,
)
from frameldp.errors import (
    FrameLDPWarning,
    InsecureSeedWarning,
    ParameterError,
    caller_stacklevel,
    shown,
)
from frameldp.frames.inputs import (
    check_columns,
    require_column,
    user_id_type,
)
from frameldp.frames.persons import stated_people
from frameldp.frames.pipeline import column_context

__all__ = [
    "LedgerLike",
    "ReleasePlan",
    "ShippedSource",
    "charging",
    "check_budget",
    "companion_columns",
    "guarantee_of",
    "is_seeded",
    "memo_user_type",
    "memoizes",
    "new_release_id",
    "plan_release",
    "plan_shipped_release",
    "recorded_rows_per_user",
    "recorded_spec",
]


LedgerLike = Ledger | str | os.PathLike[str]
"""A :class:`~frameldp.Ledger` or the path of its SQLite file."""


def companion_columns(column: str, mechanism: Mechanism) -> list[str]:
    """The columns a mechanism writes beside the report column of ``column`` (Bloom RAPPOR:
    its cohort column)."""
    return list(mechanism.report_columns(column))[1:]


@dataclass(frozen=True)
class ReleasePlan:
    """What one ``privatize`` call will write: specs to record and guarantees to charge."""

    specs: dict[str, dict[str, Any]]
    guarantees: dict[str, PrivacyGuarantee]
    memo: RandomSource | None

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Per-person guarantee of the whole release."""
        return _person_guarantee(self.specs, self.guarantees)

    @property
    def release(self) -> str:
        """The release id every column records (:func:`new_release_id`)."""
        return str(next(iter(self.specs.values()))["release"]) if self.specs else ""


def plan_release(
    columns: list[Any],
    mechanisms: Mapping[str, Mechanism],
    *,
    source: RandomSource,
    user: str | None,
    memo_key: bytes | None,
    rows_per_user: int | None = None,
    num_rows: int | None = None,
    fresh_keys: tuple[str, str] | None = None,
    user_type: str | None = None,
) -> ReleasePlan:
    """Validate the user column and memo key; the specs and guarantees of the release.

    With ``user``, a person is the privacy unit: ``rows_per_user`` is the largest number of
    rows one person holds in the release (counted by the caller, :func:`rows_per_user` of
    :mod:`frameldp.frames.persons`), recorded in every spec, and each column's guarantee is
    that person's loss (:func:`per_person`). A mechanism with a permanent response (Bloom
    RAPPOR; any with ``epsilon_infinity``) memoizes its permanent responses per (user, value)
    under ``memo_key`` (a persistent secret); without one, under this call's key, which
    protects only within it. ``fresh_keys`` = (where, unit) names a backend that draws a fresh
    key per unit (``("on Dask", "each partition")``): there a user's permanent responses would
    differ between units (and the ledger, which folds them under one memo, would undercharge),
    so ``user=`` with a memoizing mechanism needs ``memo_key=`` or a caller's key.
    ``num_rows`` (when known before the release: an in-memory frame) is recorded, so that
    rows repeated later are not taken for other people (:mod:`frameldp.frames.shuffling`).
    ``user_type`` is the canonical type of the user ids
    (:func:`~frameldp.frames.inputs.user_id_type`), given with ``user``: it is part of the
    memo's name.
    """
    blooms = [c for c, m in mechanisms.items() if memoizes(m)]
    if user is not None:
        require_column(columns, user)
        if user in mechanisms:
            raise ParameterError(f"user column {user!r} cannot also be privatized in this call")
        if rows_per_user is None:
            raise ParameterError(f"user={shown(user)}: the rows of each person were not counted")
    elif memo_key is not None:
        named = ", ".join(f"column {c!r}" for c in blooms or mechanisms)
        raise ParameterError(f"{named}: memo_key= needs user= (the column that identifies users)")
    if memo_key is not None and not blooms:
        named = ", ".join(f"column {shown(c)}" for c in mechanisms)
        raise ParameterError(
            f"{named}: memo_key= is only used by mechanisms with a memoized permanent response "
            "(Bloom RAPPOR, encoding='bloom'; any mechanism with epsilon_infinity=); no column "
            "here has one"
        )
    for column, mechanism in mechanisms.items():
        for companion in companion_columns(column, mechanism):
            if companion in columns and companion not in mechanisms:
                raise ParameterError(
                    f"column {shown(column)}: its column {companion!r} (written beside the "
                    "reports) already exists; rename it first"
                )
    memoized = user is not None and bool(blooms)
    if fresh_keys is not None and memoized and memo_key is None and source.is_fresh:
        where, unit = fresh_keys
        raise ParameterError(
            f"user={shown(user)} {where} needs memo_key= (or key=): {unit} draws its own fresh "
            "key, and a person's memoized permanent responses must be the same in all of them"
        )
    memo = RandomSource.from_memo_key(memo_key) if memo_key is not None else None
    if memoized and memo is None and not source.seeded:
        warnings.warn(
            "permanent responses are memoized under this call's key only; pass "
            "memo_key= (a persistent secret) so that later collections reuse them "
            "(longitudinal protection)",
            FrameLDPWarning,
            stacklevel=caller_stacklevel(),
        )
    specs: dict[str, dict[str, Any]] = {}
    guarantees: dict[str, PrivacyGuarantee] = {}
    release = new_release_id()
    for column, mechanism in mechanisms.items():
        spec = {**recorded_spec(mechanism, source), "release": release}
        if memoizes(mechanism):
            memoizing = cast(Memoizing, mechanism)
            if user is not None and user_type is None:
                raise ParameterError(f"user column {shown(user)}: its id type is not known")
            memo_id = (
                None
                if user is None or user_type is None
                else memoizing.memo_id(memo or source, column, user_type=user_type)
            )
            spec = {**spec, "memo": memo_id}
        companions = companion_columns(column, mechanism)
        if companions:  # read back by earlier releases, which named the cohort column so
            spec = {**spec, "cohort_column": companions[0]}
        if user is not None:
            spec = {**spec, "rows_per_user": int(cast(int, rows_per_user))}
        if num_rows is not None:  # a shuffle refuses more rows of this release than this
            spec = {**spec, "rows": int(num_rows)}
        with column_context(column):
            guarantees[column] = _guarantee_of_spec(spec)
        specs[column] = spec
    return ReleasePlan(specs, guarantees, memo)


def new_release_id() -> str:
    """A release id: 128 random bits from the operating system, never derived from a key, so
    that rows of two releases (two nights, two collects, two files) are never read as one:
    their report types differ."""
    return secrets.token_hex(16)


def memo_user_type(
    mechanisms: Mapping[str, Mechanism],
    user: str | None,
    columns: list[Any],
    kind: Callable[[str], Any],
) -> str | None:
    """The canonical type of the user ids (part of a memo's name), when a column memoizes
    permanent responses: ``kind(user)`` gives the user column's Arrow type."""
    if user is None or user not in columns or not any(map(memoizes, mechanisms.values())):
        return None
    return user_id_type(kind(user), user)


def recorded_spec(mechanism: Any, source: RandomSource) -> dict[str, Any]:
    """The spec recorded for reports of ``mechanism`` drawn from ``source``: a seeded run is
    marked (``"seeded": true``) wherever the spec goes (frames, files, guarantees), and warned
    about once per call."""
    spec: dict[str, Any] = mechanism.to_spec()
    if not source.seeded:
        return spec
    warnings.warn(
        f"reports drawn from seed=: {INSECURE}. Use seed= for tests and simulations only",
        InsecureSeedWarning,
        stacklevel=caller_stacklevel(),
    )
    return {**spec, "seeded": True}


def is_seeded(specs: Mapping[Any, Any] | None, column: Any) -> bool:
    """Whether the recorded reports of ``column`` were drawn from a seed."""
    return bool((specs or {}).get(column, {}).get("seeded"))


def _marked(mechanism: Any, spec: Mapping[str, Any]) -> PrivacyGuarantee:
    guarantee: PrivacyGuarantee = mechanism.privacy
    return guarantee.insecure() if spec.get("seeded") else guarantee


class _DryRunError(Exception):
    """Raised inside a ledger transaction to roll it back after the checks passed."""


def check_budget(
    ledger: LedgerLike | None, budget: str | None, release: ReleasePlan | Mapping[str, Mechanism]
) -> None:
    """Raise now what :func:`charging` would raise for ``release`` (ledger without budget,
    unknown budget, over the cap), recording nothing: a lazy plan is charged at each
    execution, but a plan that could not run is refused when it is built."""
    try:
        with charging(ledger, budget, release):
            raise _DryRunError
    except _DryRunError:
        pass


def charging(
    ledger: LedgerLike | None, budget: str | None, release: ReleasePlan | Mapping[str, Mechanism]
) -> contextlib.AbstractContextManager[object]:
    """Check a release against ``budget`` before producing it; record it once produced.

    Entered before any report is drawn (an over-budget release raises
    :class:`~frameldp.errors.BudgetExceededError` and produces nothing) and left after the
    reports exist (a failure in between records nothing). A no-op without a ledger.
    """
    if ledger is None and budget is None:
        return contextlib.nullcontext()
    if ledger is None or budget is None:
        raise ParameterError(
            f"ledger= and budget= go together; got ledger={ledger!r}, budget={budget!r}"
        )
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    if isinstance(release, ReleasePlan):
        guarantee, columns = release.guarantee, list(release.guarantees)
    else:
        guarantee, columns = compose(m.privacy for m in release.values()), list(release)
    return book.charge(budget, guarantee, description="privatize " + ", ".join(map(str, columns)))


def _guarantee(mechanism: Mechanism, memo: str | None) -> PrivacyGuarantee:
    """One report's guarantee; a memoizing mechanism's names its memoized permanent
    responses."""
    if memoizes(mechanism):
        return cast(Memoizing, mechanism).guarantee(memo)
    return mechanism.privacy


def _guarantee_of_spec(spec: Mapping[str, Any]) -> PrivacyGuarantee:
    """The guarantee of a recorded spec: one person's, holding ``rows_per_user`` reports."""
    return per_person(_one_report(spec), _rows_per_user(spec))


def _one_report(spec: Mapping[str, Any]) -> PrivacyGuarantee:
    """The guarantee of one report of a recorded spec (marked when seeded)."""
    one = _guarantee(mechanism_from_spec(dict(spec)), spec.get("memo"))
    return one.insecure() if spec.get("seeded") else one


def _person_guarantee(
    specs: Mapping[str, Mapping[str, Any]], guarantees: Mapping[str, PrivacyGuarantee]
) -> PrivacyGuarantee:
    """The composition of the columns' guarantees, where the columns of one sampled
    collection (``collect="sample"`` or ``"sample+fake"``) are one report per row of one of its
    ``d`` columns, chosen at random (:func:`~frameldp.accounting.sampled`). Each collected
    column counts once, by the column it was privatized as (a copy under another name adds
    nothing), and a column of the collection the frame does not hold reveals nothing (a
    component that loses 0): the weights stay ``1 / d``."""
    parts: list[PrivacyGuarantee] = []
    collections: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for column, spec in specs.items():
        collection = spec.get("collection")
        if collection is None:
            parts.append(guarantees[column])
            continue
        shared = {k: v for k, v in collection.items() if k != "column"}
        key = (str(spec.get("release")), json.dumps(shared, sort_keys=True))
        collections.setdefault(key, {})[str(collection.get("column"))] = spec
    for (_, text), held in collections.items():
        names = json.loads(text)["columns"]
        absent = PrivacyGuarantee(0.0, "column not read")
        one = sampled(_one_report(held[name]) if name in held else absent for name in names)
        parts.append(per_person(one, max(_rows_per_user(spec) for spec in held.values())))
    return compose(parts)


def recorded_rows_per_user(specs: Iterable[Mapping[str, Any]]) -> int:
    """The most rows one person holds in the releases of these recorded specs (1: none
    recorded)."""
    return max((_rows_per_user(spec) for spec in specs), default=1)


def _rows_per_user(spec: Mapping[str, Any]) -> int:
    rows = spec.get("rows_per_user", 1)
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ParameterError(f"recorded rows_per_user must be an integer >= 1, got {shown(rows)}")
    return rows


def guarantee_of(specs: Mapping[str, Any] | None) -> PrivacyGuarantee | None:
    """Composition of the guarantees of every recorded report column (None if none)."""
    if not specs:
        return None
    guarantees = {column: _guarantee_of_spec(spec) for column, spec in specs.items()}
    return _person_guarantee(specs, guarantees)


class ShippedSource:
    """A caller's key sent to other processes with the tasks (Dask workers, Spark executors):
    it pickles the key itself, unlike a :class:`RandomSource`, which never does. ``None``: a
    fresh key per task, drawn in the process that runs it."""

    def __init__(self, source: RandomSource | None) -> None:
        self.key = None if source is None else source.key
        self.kind = None if source is None else source.kind

    def source(self) -> RandomSource:
        """The caller's source, or a fresh key for this task."""
        return self.optional() or RandomSource.fresh()

    def optional(self) -> RandomSource | None:
        """The caller's source, or None."""
        return None if self.key is None else RandomSource(self.key, kind=self.kind)


def plan_shipped_release(
    columns: list[Any],
    mechanisms: Mapping[str, Mechanism],
    *,
    reports: Mapping[Any, Any],
    key: bytes | None,
    seed: int | None,
    user: str | None,
    memo_key: bytes | None,
    fresh_keys: tuple[str, str],
    max_rows_per_user: int | None,
    count_rows: Callable[[str], int],
    user_kind: Callable[[str], Any],
) -> tuple[ShippedSource, ReleasePlan]:
    """Check the columns and plan a release whose reports are drawn in other processes (Dask
    workers, Spark executors): the caller's key to send with the tasks (none: a fresh key per
    task, where and per what ``fresh_keys`` names; see :func:`plan_release`) and the plan.
    ``count_rows(user)`` counts the most rows one user id holds (a pass over the user column,
    made only with ``user=``); ``user_kind(user)`` is the user column's Arrow type (asked only
    where a column memoizes: :func:`memo_user_type`)."""
    check_columns(columns, mechanisms, reports=reports)
    keyed = None if key is None and seed is None else resolve_source(key, seed)
    counted = stated_people(user, max_rows_per_user, columns, lambda: count_rows(str(user)))
    release = plan_release(
        columns,
        mechanisms,
        source=keyed or RandomSource.fresh(),
        user=user,
        memo_key=memo_key,
        rows_per_user=counted,
        fresh_keys=fresh_keys,
        user_type=memo_user_type(mechanisms, user, columns, user_kind),
    )
    return ShippedSource(keyed), release
