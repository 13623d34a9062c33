"""A person is the unit on every backend, for every frequency oracle (issue 36, deliverable 8).

For each mechanism, fresh and memoized, a release with ``user=`` of people holding three rows
each states, tables and charges the same per-person epsilon on pandas, polars (eager and lazy)
and Dask: for fresh noise exactly three compositions of one report; for memoized reports the
bound that ``test_person_unit.py`` audits against exact enumeration, which is at least the
loss of one report. Spark runs the same table in ``tests/frames/test_spark.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import frameldp
from _persons import FRESH, MEMOIZED, ROWS_PER_PERSON, people, table_of

from ._frames import FRAMES

KEY = bytes(range(32))
MEMO_KEY = bytes(range(64, 96))
BACKENDS = ["pandas", "polars-eager", "polars-lazy", "dask"]

pytestmark = pytest.mark.usefixtures("quiet")


def _statements(frame: Any, mechanism: Any, **memo: Any) -> tuple[float, float, float]:
    """The release's, its table's and the ledger's epsilon."""
    ledger = frameldp.Ledger(":memory:")
    ledger.set_budget("b", epsilon=1000.0)
    released = frame.ldp.privatize(
        {"value": mechanism}, user="user", key=KEY, ledger=ledger, budget="b", **memo
    )
    stated = released.ldp.privacy.epsilon
    table = table_of(released, mechanism).privacy.epsilon
    return stated, table, ledger.spent("b")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("make", FRESH.values(), ids=FRESH.keys())
def test_fresh_reports_of_a_person_compose(make: Callable[[], Any], backend: str) -> None:
    mechanism = make()
    one = mechanism.privacy.epsilon  # as realized
    stated, table, charged = _statements(FRAMES[backend](people()), mechanism)
    assert stated == table == pytest.approx(charged)
    assert stated == pytest.approx(ROWS_PER_PERSON * one, rel=1e-12)
    assert stated >= ROWS_PER_PERSON * one * (1 - 1e-12)


@pytest.mark.parametrize("backend", BACKENDS[1:])
@pytest.mark.parametrize("make", MEMOIZED.values(), ids=MEMOIZED.keys())
def test_memoized_reports_of_a_person_are_stated_as_on_pandas(
    make: Callable[[], Any], backend: str
) -> None:
    mechanism = make()
    expected = _statements(FRAMES["pandas"](people()), mechanism, memo_key=MEMO_KEY)
    assert expected[0] > mechanism.privacy.epsilon  # three reports cost more than one
    found = _statements(FRAMES[backend](people()), mechanism, memo_key=MEMO_KEY)
    assert found == pytest.approx(expected, rel=1e-12)
