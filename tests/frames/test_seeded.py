"""Seeded runs are marked insecure wherever they show, and keys never travel with a plan
(issue 13, defects 4 and 5).

``seed=`` is for tests and simulations: anyone who knows the seed can remove the noise. A
seeded release warns (:class:`~frameldp.InsecureSeedWarning`) and its guarantee, the frame's
``ldp.privacy``, its tables and a Parquet file written from it all say INSECURE; a release from a
fresh or caller's key says nothing of the kind. A caller's key is never written into a pickled
or serialized polars plan (it is held by a process-local handle).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import frameldp
from _releases import as_one_release
from frameldp import ldp

from .conftest import CARRIERS, Backend, small_data

KEY = bytes(range(100, 132))


@pytest.mark.parametrize("method", ["krr", "rappor"])
def test_a_seeded_release_warns_and_is_marked_everywhere(backend: Backend, method: str) -> None:
    native = backend.make(small_data())

    with pytest.warns(frameldp.InsecureSeedWarning, match="INSECURE"):
        reports = getattr(ldp(native), method)("carrier", 1.0, domain=CARRIERS, seed=7)

    assert ldp(reports).privacy.seeded
    assert "INSECURE" in str(ldp(reports).privacy)
    table = ldp(reports).debias("carrier")
    assert table.privacy.seeded
    assert "INSECURE" in str(table.privacy)
    keyed = getattr(ldp(native), method)("carrier", 1.0, domain=CARRIERS, key=KEY)
    assert not ldp(keyed).privacy.seeded
    assert "INSECURE" not in str(ldp(keyed).debias("carrier").privacy)


def test_a_seeded_pandas_release_keeps_its_mark_in_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame(small_data())
    reports = ldp(frame).krr("carrier", 1.0, domain=CARRIERS, seed=7)
    path = tmp_path / "reports.parquet"

    reports.to_parquet(path)

    assert ldp(pd.read_parquet(path)).privacy.seeded


def test_a_seeded_ledger_entry_is_marked(tmp_path: Path) -> None:
    ledger = frameldp.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("b", epsilon=10.0)
    frame = pd.DataFrame(small_data())

    ldp(frame).krr("carrier", 1.0, domain=CARRIERS, seed=7, ledger=ledger, budget="b")
    ldp(frame).krr("carrier", 1.0, domain=CARRIERS, ledger=ledger, budget="b")

    assert [entry.guarantee.seeded for entry in ledger.history("b")] == [True, False]
    assert ledger.status("b").seeded == 1


def test_a_caller_key_is_never_in_a_pickled_or_serialized_plan() -> None:
    """The plan pickles and serializes (the key by a handle valid in this process only), and
    the unpickled plan still gives the keyed reports."""
    lazy = pl.LazyFrame(small_data())
    plan = ldp(lazy).krr("carrier", 1.0, domain=CARRIERS, key=KEY)

    pickled = pickle.dumps(plan)
    serialized = plan.serialize()

    assert KEY not in pickled
    assert KEY not in serialized
    expected = pl.DataFrame(small_data()).ldp.krr("carrier", 1.0, domain=CARRIERS, key=KEY)
    assert as_one_release(pickle.loads(pickled).collect()).equals(as_one_release(expected))


def test_a_fresh_key_cannot_be_pickled() -> None:
    with pytest.raises(frameldp.NoiseReuseError):
        pickle.dumps(frameldp.RandomSource.fresh())


def test_seeded_series_and_bloom_tables_are_marked(backend: Backend) -> None:
    native = backend.make(small_data())
    reports = ldp(native).rappor(
        "origin", 2.0, encoding="bloom", epsilon_infinity=4.0, num_bits=16, seed=3
    )

    table = ldp(reports).decode("origin", candidates=["ATL", "BOS", "DEN", "JFK", "LAX"])

    assert table.privacy.seeded
    if backend.library == "pandas" and not backend.dask and not backend.arrow:
        series = ldp(native["carrier"]).krr(1.0, domain=CARRIERS, seed=3)
        assert ldp(series).debias().privacy.seeded
        assert not ldp(ldp(native["carrier"]).krr(1.0, domain=CARRIERS)).debias().privacy.seeded
