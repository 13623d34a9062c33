"""Privatizing a column that already holds reports is refused (issue 13, defect 7).

Re-running a notebook cell ``r2 = ldp(r1).krr("carrier", ...)`` randomized the reports again:
``debias`` then estimated the distribution of the reports, not of the values (max |z| 17.7),
and the column was released twice. Every backend and the Series accessor refuse it, name the
column and its recorded mechanism, charge nothing and leave the input as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import frameldp
from frameldp import ldp

from .conftest import BACKENDS, CARRIERS, ORIGINS, Backend, small_data


@pytest.mark.parametrize("method", ["krr", "rappor"])
def test_privatizing_reports_again_is_refused(
    backend: Backend, method: str, tmp_path: Path
) -> None:
    ledger = frameldp.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("b", epsilon=10.0)
    reports = getattr(ldp(backend.make(small_data())), method)(
        "carrier", 1.0, domain=CARRIERS, seed=1
    )
    before = backend.snapshot(reports)

    with pytest.raises(
        frameldp.ParameterError, match=r"column 'carrier': already holds frameldp reports"
    ):
        ldp(reports).krr("carrier", 1.0, domain=CARRIERS, ledger=ledger, budget="b")

    assert ledger.history("b") == []
    backend.assert_unchanged(before, reports)
    # Another column of the same frame may still be privatized.
    other = ldp(reports).krr("origin", 1.0, domain=ORIGINS)
    assert backend.num_rows(other) == 64


def test_the_series_accessor_refuses_reports_too() -> None:
    frame = BACKENDS["pandas-pyarrow"].make(small_data())
    reports = ldp(frame).krr("carrier", 1.0, domain=CARRIERS)

    with pytest.raises(frameldp.ParameterError, match=r"already holds frameldp reports"):
        ldp(reports["carrier"]).rappor(1.0, domain=CARRIERS)
