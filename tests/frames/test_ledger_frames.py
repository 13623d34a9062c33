"""The ``ledger=`` / ``budget=`` keywords of the accessors, on real SQLite files and real frames.

A release is checked against its budget before any report is drawn and recorded exactly once,
after the reports exist, with the composed guarantee of its mechanisms. What is recorded is
compared with :func:`frameldp.compose` of the mechanisms' own guarantees, computed independently
of the frame. A polars LazyFrame, a Dask frame or a polars expression is charged at each
execution (each draws fresh noise); one that could not be charged is refused when it is built,
as docs/privacy.md documents.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import frameldp
from frameldp import ldp

from .conftest import BACKENDS, CARRIERS, ORIGINS, Backend, small_data

BUDGET = "flights"
CAP = 10.0
DELTA = 1e-6

KRR = frameldp.RandomizedResponse(1.0, domain=CARRIERS)
RAPPOR = frameldp.Rappor(epsilon=0.5, domain=ORIGINS)

Call = Callable[..., Any]

# name -> (call taking the frame and the ledger keywords, the mechanisms it applies)
RELEASES: dict[str, tuple[Call, dict[str, frameldp.RandomizedResponse | frameldp.Rappor]]] = {
    "krr": (
        lambda frame, **kw: ldp(frame).krr("carrier", 1.0, domain=CARRIERS, **kw),
        {"carrier": KRR},
    ),
    "rappor": (
        lambda frame, **kw: ldp(frame).rappor("origin", 0.5, domain=ORIGINS, **kw),
        {"origin": RAPPOR},
    ),
    "privatize": (
        lambda frame, **kw: ldp(frame).privatize({"carrier": KRR, "origin": RAPPOR}, **kw),
        {"carrier": KRR, "origin": RAPPOR},
    ),
}


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    """A ledger file holding one pure budget, ``flights``, capped at epsilon 10."""
    path = tmp_path / "budget.sqlite"
    frameldp.Ledger(path).set_budget(BUDGET, epsilon=CAP)
    return path


@pytest.fixture
def ledger(ledger_path: Path) -> frameldp.Ledger:
    return frameldp.Ledger(ledger_path)


@pytest.fixture(params=[b for b in BACKENDS if not BACKENDS[b].lazy])
def eager_backend(request: pytest.FixtureRequest) -> Backend:
    """Every backend that randomizes when called (all but the polars LazyFrame)."""
    return BACKENDS[request.param]


@pytest.fixture(params=[b for b in BACKENDS if b.startswith("polars")])
def polars_backend(request: pytest.FixtureRequest) -> Backend:
    """polars eager and lazy (for the expression namespace)."""
    return BACKENDS[request.param]


def _released(backend: Backend, reports: Any) -> Any:
    """The reports, executed once if the backend is lazy (that execution is the release)."""
    return backend.collect(reports) if backend.lazy else reports


def _expected(mechanisms: dict[str, Any]) -> frameldp.PrivacyGuarantee:
    return frameldp.compose([m.privacy for m in mechanisms.values()])


def _assert_one_release(
    ledger: frameldp.Ledger, mechanisms: dict[str, Any], *, name: str = BUDGET, count: int = 1
) -> None:
    """The ledger holds exactly ``count`` releases, each the composition of ``mechanisms``,
    named by them."""
    expected = _expected(mechanisms)
    entries = ledger.history(name)
    assert len(entries) == count
    for entry in entries:
        assert entry.guarantee.epsilon == expected.epsilon
        assert entry.guarantee.events == expected.events
        assert entry.epsilon == expected.epsilon
        assert entry.description == "privatize " + ", ".join(mechanisms)
    accountant = frameldp.Accountant().compose(expected, count=count)
    assert ledger.spent(name) == accountant.pure_epsilon
    assert ledger.status(name).releases == count


# ---------------------------------------------------------------------------- recording


@pytest.mark.parametrize("release", list(RELEASES))
def test_a_release_is_recorded_once_with_its_composed_guarantee(
    backend: Backend, ledger: frameldp.Ledger, release: str
) -> None:
    """One release, one entry: epsilon and events of ``compose(mechanism.privacy ...)``. An
    eager frame is released by the call (looking at it again records nothing more); a lazy one
    by each execution (with seed=, the same reports each time, charged each time)."""
    call, mechanisms = RELEASES[release]
    native = backend.make(small_data())
    before = backend.snapshot(native)

    reports = call(native, ledger=ledger, budget=BUDGET, seed=3)

    assert backend.is_native(reports)
    assert len(ledger.history(BUDGET)) == (0 if backend.lazy else 1)
    assert backend.collect(reports).equals(backend.collect(reports))
    _assert_one_release(ledger, mechanisms, count=2 if backend.lazy else 1)
    backend.assert_unchanged(before, native)


@pytest.mark.parametrize("as_path", [str, Path], ids=["str", "pathlike"])
def test_ledger_may_be_given_as_a_path(
    backend: Backend, ledger_path: Path, as_path: Callable[[Path], str | os.PathLike[str]]
) -> None:
    call, mechanisms = RELEASES["privatize"]

    reports = _released(
        backend, call(backend.make(small_data()), ledger=as_path(ledger_path), budget=BUDGET)
    )

    assert backend.num_rows(reports) == 64
    _assert_one_release(frameldp.Ledger(ledger_path), mechanisms)


def test_releases_accumulate_at_the_budget_delta(backend: Backend, tmp_path: Path) -> None:
    """With a delta the spent total is the tightest composition of every release at that delta,
    and each entry's running total and method are those of an independent Accountant."""
    ledger = frameldp.Ledger(tmp_path / "delta.sqlite")
    ledger.set_budget(BUDGET, epsilon=CAP, delta=DELTA)
    native = backend.make(small_data())

    for release in ("krr", "rappor", "privatize"):
        call, _ = RELEASES[release]
        _released(backend, call(native, ledger=ledger, budget=BUDGET))

    accountant = frameldp.Accountant()
    history = ledger.history(BUDGET)
    assert [entry.description for entry in history] == [
        "privatize carrier",
        "privatize origin",
        "privatize carrier, origin",
    ]
    for entry, release in zip(history, ("krr", "rappor", "privatize"), strict=True):
        accountant = accountant.compose(_expected(RELEASES[release][1]))
        best = accountant.explain(DELTA).best
        assert entry.total_epsilon == best.epsilon
        assert entry.method == best.method
    assert ledger.spent(BUDGET) == accountant.epsilon(DELTA)
    assert ledger.spent(BUDGET) < accountant.pure_epsilon


# ---------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("release", list(RELEASES))
def test_over_budget_raises_and_records_nothing(
    backend: Backend, tmp_path: Path, release: str
) -> None:
    """A release that does not fit raises BudgetExceededError: no frame, no entry, input as is."""
    call, mechanisms = RELEASES[release]
    ledger = frameldp.Ledger(tmp_path / "small.sqlite")
    cap = _expected(mechanisms).epsilon * 0.75
    ledger.set_budget(BUDGET, epsilon=cap)
    native = backend.make(small_data())
    before = backend.snapshot(native)

    with pytest.raises(frameldp.BudgetExceededError, match=rf"budget '{BUDGET}'.*nothing"):
        call(native, ledger=ledger, budget=BUDGET)

    assert ledger.history(BUDGET) == []
    assert ledger.spent(BUDGET) == 0.0
    backend.assert_unchanged(before, native)


def test_a_release_that_would_pass_the_cap_keeps_the_earlier_ones(
    backend: Backend, tmp_path: Path
) -> None:
    """Three releases at epsilon 1 under a cap of 2.5: the third is refused, two stay recorded."""
    ledger = frameldp.Ledger(tmp_path / "cap.sqlite")
    ledger.set_budget(BUDGET, epsilon=2.5)
    call, mechanisms = RELEASES["krr"]
    native = backend.make(small_data())
    _released(backend, call(native, ledger=ledger, budget=BUDGET))
    _released(backend, call(native, ledger=ledger, budget=BUDGET))
    spent = ledger.spent(BUDGET)

    with pytest.raises(frameldp.BudgetExceededError):
        call(native, ledger=ledger, budget=BUDGET)

    assert ledger.spent(BUDGET) == spent
    assert spent == frameldp.Accountant().compose(_expected(mechanisms), count=2).pure_epsilon
    assert len(ledger.history(BUDGET)) == 2


@pytest.mark.parametrize(
    "release",
    [
        "krr",
        # The second column fails after the first was randomized: still nothing recorded.
        "privatize",
    ],
)
def test_a_failed_randomization_records_nothing(
    eager_backend: Backend, ledger: frameldp.Ledger, release: str
) -> None:
    """'UA' lies outside the domain (unknown='raise'): DomainError, and the ledger is unchanged."""
    backend = eager_backend
    narrow = ["AA", "DL"]
    calls: dict[str, Call] = {
        "krr": lambda frame, **kw: ldp(frame).krr("carrier", 1.0, domain=narrow, **kw),
        "privatize": lambda frame, **kw: ldp(frame).privatize(
            {"origin": RAPPOR, "carrier": frameldp.RandomizedResponse(1.0, domain=narrow)}, **kw
        ),
    }
    native = backend.make(small_data())
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match=r"column 'carrier'.*'UA'"):
        calls[release](native, ledger=ledger, budget=BUDGET)

    assert ledger.history(BUDGET) == []
    assert ledger.spent(BUDGET) == 0.0
    backend.assert_unchanged(before, native)


@pytest.mark.parametrize("name", ["polars-lazy", "dask"])
def test_a_lazy_frame_is_charged_when_it_runs(ledger: frameldp.Ledger, name: str) -> None:
    """Documented: building the plan charges nothing; its one run draws fresh noise and is
    charged before its reports leave it. A Dask computation is charged by its first task, so a
    domain error found in a partition leaves it charged (the ledger errs on the side of
    spending) and the run spent; the polars scan charges (and spends its run) once its first
    batch is randomized, so an error in that batch records nothing."""
    backend = BACKENDS[name]
    native = backend.make(small_data())

    reports = ldp(native).krr("carrier", 1.0, domain=["AA", "DL"], ledger=ledger, budget=BUDGET)

    assert backend.is_native(reports)
    assert ledger.history(BUDGET) == []
    narrow = {"carrier": frameldp.RandomizedResponse(1.0, domain=["AA", "DL"])}
    with pytest.raises(frameldp.DomainError, match=r"column 'carrier'.*'UA'"):
        backend.collect(reports)
    if name == "dask":  # charged, and its one run is spent
        _assert_one_release(ledger, narrow, count=1)
        with pytest.raises(frameldp.ParameterError, match="ran already"):
            backend.collect(reports)
        _assert_one_release(ledger, narrow, count=1)
    else:  # nothing left the scan: no charge, and the plan may run
        assert ledger.history(BUDGET) == []
        with pytest.raises(frameldp.DomainError, match=r"column 'carrier'.*'UA'"):
            backend.collect(reports)
        assert ledger.history(BUDGET) == []


@pytest.mark.parametrize("given", ["ledger", "budget"])
@pytest.mark.parametrize("release", list(RELEASES))
def test_ledger_and_budget_go_together(
    backend: Backend, ledger: frameldp.Ledger, release: str, given: str
) -> None:
    call, _ = RELEASES[release]
    keywords: dict[str, Any] = {"ledger": ledger} if given == "ledger" else {"budget": BUDGET}
    native = backend.make(small_data())
    before = backend.snapshot(native)

    with pytest.raises(frameldp.ParameterError, match=r"ledger= and budget= go together"):
        call(native, **keywords)

    assert ledger.history(BUDGET) == []
    backend.assert_unchanged(before, native)


@pytest.mark.parametrize("release", list(RELEASES))
def test_an_unknown_budget_raises_and_produces_nothing(
    backend: Backend, ledger: frameldp.Ledger, release: str
) -> None:
    call, _ = RELEASES[release]
    native = backend.make(small_data())
    before = backend.snapshot(native)

    with pytest.raises(frameldp.UnknownBudgetError, match=r"budget 'nightly' is not set.*flights"):
        call(native, ledger=ledger, budget="nightly")

    assert [status.name for status in ledger.budgets()] == [BUDGET]
    assert ledger.history(BUDGET) == []
    backend.assert_unchanged(before, native)


def test_non_string_pandas_column_labels_are_charged(
    pandas_backend: Backend, ledger: frameldp.Ledger
) -> None:
    """Integer labels work without a ledger; with one the release must be charged the same."""
    native = pandas_backend.make(small_data()).set_axis([0, 1, 2], axis="columns")
    before = pandas_backend.snapshot(native)
    assert ldp(ldp(native).krr(0, 1.0, domain=CARRIERS)).debias(0).privacy == KRR.privacy

    reports = ldp(native).krr(0, 1.0, domain=CARRIERS, ledger=ledger, budget=BUDGET)

    assert ldp(reports).debias(0).privacy == KRR.privacy
    [entry] = ledger.history(BUDGET)
    assert entry.description == "privatize 0"
    pandas_backend.assert_unchanged(before, native)


# ---------------------------------------------------------------------------- column APIs


@pytest.mark.parametrize("method", ["krr", "rappor"])
def test_the_column_api_charges_too(backend: Backend, ledger: frameldp.Ledger, method: str) -> None:
    """pandas ``ldp(df[c]).<method>`` and polars ``pl.col(c).ldp.<method>`` record one release."""
    native = backend.make(small_data())
    before = backend.snapshot(native)
    mechanism = {"krr": KRR, "rappor": frameldp.Rappor(epsilon=1.0, domain=CARRIERS)}[method]

    reports = backend.privatize_column(
        native, "carrier", method, epsilon=1.0, domain=CARRIERS, ledger=ledger, budget=BUDGET
    )

    assert len(reports) == 64
    _assert_one_release(ledger, {"carrier": mechanism})
    backend.assert_unchanged(before, native)


def test_a_failed_series_randomization_records_nothing(
    pandas_backend: Backend, ledger: frameldp.Ledger
) -> None:
    series = pandas_backend.make(small_data())["carrier"]

    with pytest.raises(frameldp.DomainError, match=r"'UA'"):
        ldp(series).krr(1.0, domain=["AA", "DL"], ledger=ledger, budget=BUDGET)

    assert ledger.history(BUDGET) == []


def test_an_over_budget_series_or_expression_is_refused(backend: Backend, tmp_path: Path) -> None:
    ledger = frameldp.Ledger(tmp_path / "tiny.sqlite")
    ledger.set_budget(BUDGET, epsilon=0.5)
    native = backend.make(small_data())

    with pytest.raises(frameldp.BudgetExceededError):
        backend.privatize_column(
            native, "carrier", "krr", epsilon=1.0, domain=CARRIERS, ledger=ledger, budget=BUDGET
        )

    assert ledger.history(BUDGET) == []


def test_a_polars_expression_is_charged_when_evaluated(
    polars_backend: Backend, ledger: frameldp.Ledger
) -> None:
    """Documented: building the expression charges nothing (an unknown or exhausted budget is
    refused then); its one evaluation draws fresh noise and is charged; a second evaluation is
    refused, uncharged. A failed evaluation is not charged and releases nothing."""
    native = polars_backend.make(small_data())
    good = pl.col("carrier").ldp.krr(1.0, domain=CARRIERS, ledger=ledger, budget=BUDGET)
    assert ledger.history(BUDGET) == []

    polars_backend.collect(native.select(good))
    with pytest.raises(frameldp.ParameterError, match="ran already"):
        polars_backend.collect(native.select(good))

    _assert_one_release(ledger, {"carrier": KRR}, count=1)
    bad = pl.col("carrier").ldp.krr(1.0, domain=["AA", "DL"], ledger=ledger, budget=BUDGET)
    for _ in range(2):
        with pytest.raises(frameldp.DomainError, match=r"'UA'"):
            polars_backend.collect(native.select(bad))
    assert len(ledger.history(BUDGET)) == 1
    with pytest.raises(frameldp.UnknownBudgetError):
        pl.col("carrier").ldp.krr(1.0, domain=CARRIERS, ledger=ledger, budget="nightly")


# ---------------------------------------------------------------------------- guarantees


def test_frame_privacy_composes_its_report_columns(backend: Backend) -> None:
    """``ldp(reports).privacy`` of two privatized columns is ``compose`` of their mechanisms'
    guarantees, answering every question of docs/privacy.md; ``table.privacy`` is one column's."""
    native = backend.make(small_data())
    reports = ldp(ldp(native).krr("carrier", 1.0, domain=CARRIERS, seed=1)).rappor(
        "origin", 0.5, domain=ORIGINS, seed=2
    )
    expected = frameldp.compose([KRR.privacy, RAPPOR.privacy])

    privacy = ldp(reports).privacy

    assert isinstance(privacy, frameldp.PrivacyGuarantee)
    assert privacy.epsilon == expected.epsilon
    assert privacy.delta == 0.0
    for order in (1.5, 2.0, 8.0, 64.0):
        assert privacy.rdp(order) == expected.rdp(order)
        assert 0.0 < privacy.rdp(order) <= privacy.epsilon
    assert privacy.rho == expected.rho
    assert privacy.epsilon_at(DELTA) == expected.epsilon_at(DELTA)
    assert privacy.epsilon_at(DELTA) <= privacy.epsilon
    assert privacy.delta_at(1.0) == expected.delta_at(1.0)
    assert 0.0 < privacy.delta_at(1.0) < 1.0
    assert privacy.delta_at(privacy.epsilon) == 0.0
    # Drawn with seed=: the tables are marked INSECURE.
    assert ldp(reports).debias("carrier").privacy == KRR.privacy.insecure()
    assert ldp(reports).debias("origin").privacy == RAPPOR.privacy.insecure()


@pytest.mark.parametrize("where", ["file", ":memory:"])
def test_charges_from_other_threads_share_one_ledger_object(tmp_path: Path, where: str) -> None:
    """polars evaluates a streaming query's expressions, and runs a LazyFrame's scan, on its own
    threads: one Ledger object (a ":memory:" one too) takes every charge, one per expression
    and one per collect, instead of failing on SQLite's thread check or on a charge 'inside
    charge()' of another thread."""
    ledger = frameldp.Ledger(tmp_path / "l.sqlite" if where == "file" else ":memory:")
    ledger.set_budget(BUDGET, epsilon=CAP * 10)
    frame = pl.DataFrame({"g": [i % 8 for i in range(4000)], "carrier": list(CARRIERS) * 1000})

    for _ in range(3):
        expression = pl.col("carrier").ldp.krr(1.0, domain=CARRIERS, ledger=ledger, budget=BUDGET)
        frame.lazy().select(expression).collect(engine="streaming")
    ldp(frame.lazy()).krr("carrier", 1.0, domain=CARRIERS, ledger=ledger, budget=BUDGET).collect()

    _assert_one_release(ledger, {"carrier": KRR}, count=3 + 1)
