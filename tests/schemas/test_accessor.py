"""``df.ldp.validate``: input before randomizing, release after; the frame comes back."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pytest

import frameldp
from frameldp import BloomRappor, RandomizedResponse, Rappor

from .conftest import Backend, checks, failures

CARRIERS = ("AA", "DL", "UA", "WN")
MECHANISMS = {
    "carrier": RandomizedResponse(1.0, domain=CARRIERS),
    "origin": Rappor(1.0, domain=["ATL", "BOS", "DEN"]),
}


def _frame(backend: Backend) -> object:
    return backend.make(
        {
            "carrier": ["AA", "DL", "UA"] * 8,
            "origin": ["ATL", "BOS", "DEN", "BOS"] * 6,
            "fare": [float(i) for i in range(24)],
        }
    )


def test_validate_returns_the_frame_and_chains_into_privatize(backend: Backend) -> None:
    frame = _frame(backend)
    before = backend.snapshot(frame)
    assert frame.ldp.validate(MECHANISMS) is frame
    chained = frame.ldp.validate(MECHANISMS).ldp.privatize(MECHANISMS, seed=4)
    direct = frame.ldp.privatize(MECHANISMS, seed=4)
    assert backend.is_native(chained)
    for column in ("carrier", "origin"):
        assert backend.column_values(chained, column) == backend.column_values(direct, column)
    backend.assert_unchanged(before, frame)


def test_a_frame_of_reports_validates_its_release_from_the_recorded_mechanisms(
    backend: Backend,
) -> None:
    reports = _frame(backend).ldp.privatize(MECHANISMS, seed=1)
    assert reports.ldp.validate(passthrough=["fare"]) is reports
    assert reports.ldp.validate(MECHANISMS, release=True, passthrough="fare") is reports
    error = failures(lambda: reports.ldp.validate())
    assert checks(error) == {("fare", "column_in_schema")}
    assert reports.ldp.validate(release=True, passthrough=["fare"]) is reports


def test_validate_input_failures(backend: Backend) -> None:
    frame = backend.make({"carrier": ["AA", "XX"], "origin": ["ATL", None]})
    error = failures(lambda: frame.ldp.validate(MECHANISMS))
    assert checks(error) == {("carrier", "in_domain"), ("origin", "not_nullable")}
    assert len(failures(lambda: frame.ldp.validate(MECHANISMS, lazy=False)).failures) == 1


def test_validate_the_user_column_of_bloom_rappor(backend: Backend) -> None:
    bloom = BloomRappor(f=0.5, p=0.25, q=0.75, num_bits=16, num_cohorts=4)
    frame = backend.make({"url": ["a.com", "b.org"], "user": ["u1", None]})
    error = failures(lambda: frame.ldp.validate({"url": bloom}, user="user"))
    assert checks(error) == {("user", "not_nullable")}


def test_a_lazy_frame_stays_lazy_and_only_checked_columns_are_read() -> None:
    def unreadable(series: pl.Series) -> pl.Series:
        raise AssertionError("validate read a column it does not check")

    lazy = pl.LazyFrame({"carrier": ["AA", "DL"], "fare": [1.0, 2.0]}).with_columns(
        pl.col("fare").map_batches(unreadable, return_dtype=pl.Float64)
    )
    mechanisms = {"carrier": MECHANISMS["carrier"]}
    assert lazy.ldp.validate(mechanisms) is lazy
    reports = lazy.ldp.privatize(mechanisms, seed=1)
    assert isinstance(reports, pl.LazyFrame)
    assert reports.ldp.validate(passthrough=["fare"]) is reports


def test_no_mechanisms_known() -> None:
    frame = pd.DataFrame({"carrier": ["AA"]})
    with pytest.raises(frameldp.MechanismNotFoundError, match="validate needs mechanisms="):
        frame.ldp.validate()
    with pytest.raises(frameldp.MechanismNotFoundError):
        pl.DataFrame({"carrier": ["AA"]}).ldp.validate(release=True)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mechanisms": MECHANISMS, "passthrough": ["fare"]}, "passthrough= applies to a release"),
        ({"mechanisms": MECHANISMS, "release": True, "user": "u"}, "applies to an input"),
        ({"user": "u"}, "applies to an input"),
        ({"mechanisms": {"carrier": "nope"}}, "invalid mechanism spec"),
    ],
)
def test_bad_arguments(backend: Backend, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(frameldp.ParameterError, match=match):
        _frame(backend).ldp.validate(**kwargs)
