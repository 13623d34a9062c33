"""The release schema: only report columns (and allowed passthrough columns), each with the
dtype, width and labels its mechanism produces; nothing raw left behind."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pandera.pandas
import pandera.polars
import polars as pl
import pyarrow as pa
import pytest

import frameldp
from frameldp import BloomRappor, Domain, RandomizedResponse, Rappor
from frameldp.schemas import release_schema, validate_release
from frameldp.schemas._declare import MAX_LISTED

from .conftest import Backend, checks, failures

CARRIERS = ("AA", "DL", "UA", "WN")
ORIGINS = ("ATL", "BOS", "DEN", "JFK", "LAX")  # 5 buckets: 1 byte, 3 padding bits
KRR = RandomizedResponse(1.0, domain=CARRIERS)
RAPPOR = Rappor(1.0, domain=ORIGINS)
BLOOM = BloomRappor(f=0.5, p=0.25, q=0.75, num_bits=16, num_hashes=2, num_cohorts=4)
MECHANISMS: dict[str, Any] = {"carrier": KRR, "origin": RAPPOR, "url": BLOOM}


def _data(n: int = 24) -> dict[str, list[Any]]:
    return {
        "carrier": [CARRIERS[i % 3] for i in range(n)],
        "origin": [ORIGINS[i % 5] for i in range(n)],
        "url": [f"site{i % 4}.com" for i in range(n)],
        "user": [f"u{i}" for i in range(n)],
        "fare": [i / 4 for i in range(n)],
    }


def _with(backend: Backend, frame: Any, **columns: list[Any]) -> Any:
    """``frame`` with columns added or replaced (Python values, the library's own dtypes)."""
    if backend.library == "pandas":
        return frame.assign(
            **{
                name: pd.Series(values, dtype=object) if _bytes(values) else values
                for name, values in columns.items()
            }
        )
    series = [pl.Series(name, values) for name, values in columns.items()]
    return frame.with_columns(series)


def _bytes(values: list[Any]) -> bool:
    return any(isinstance(v, bytes) for v in values)


def _reports(backend: Backend) -> Any:
    frame = backend.make(_data())
    return frame.ldp.privatize(MECHANISMS, seed=1, user="user")


def test_a_privatized_frame_passes_its_release_schema(backend: Backend) -> None:
    reports = _reports(backend)
    passthrough = ["fare", "user"]
    before = backend.snapshot(reports)
    assert validate_release(reports, MECHANISMS, passthrough=passthrough) is reports
    specs = reports.ldp.specs  # the recorded specs (Bloom: cohort column and memo)
    assert validate_release(reports, specs, passthrough=passthrough, lazy=False) is reports
    assert reports.ldp.validate(passthrough=passthrough) is reports
    backend.assert_unchanged(before, reports)


def test_reserved_buckets_are_report_labels(backend: Backend) -> None:
    domain = Domain(CARRIERS, unknown="other", nulls="category")
    mechanism = RandomizedResponse(1.0, domain=domain)
    frame = backend.make({"carrier": ["AA", "XX", None] * 20})
    reports = frame.ldp.privatize({"carrier": mechanism}, seed=3)
    values = set(backend.column_values(reports, "carrier"))
    assert {frameldp.OTHER, None} <= values
    assert validate_release(reports, {"carrier": mechanism}) is reports


def test_a_raw_column_kept_under_another_name_fails(backend: Backend) -> None:
    reports = _reports(backend)
    leaked = _with(backend, reports, carrier_raw=_data()["carrier"])
    error = failures(lambda: validate_release(leaked, MECHANISMS, passthrough=["fare", "user"]))
    assert error.failures == [
        {
            "schema": "release",
            "column": "carrier_raw",
            "check": "column_in_schema",
            "value": "carrier_raw",
            "row": None,
        }
    ]
    assert "column 'carrier_raw', check column_in_schema" in str(error)


def test_columns_not_allowed_are_all_named(backend: Backend) -> None:
    error = failures(lambda: validate_release(_reports(backend), MECHANISMS))
    assert checks(error) == {("fare", "column_in_schema"), ("user", "column_in_schema")}


def test_an_unprivatized_frame_fails(backend: Backend) -> None:
    frame = backend.make(_data())
    error = failures(lambda: validate_release(frame, MECHANISMS, passthrough=["fare", "user"]))
    assert checks(error) == {
        ("origin", "binary"),
        ("url", "binary"),
        ("url_cohort", "column_in_dataframe"),
    }
    for failure in error.failures:
        if failure["check"] == "binary":  # the value of a whole-column failure is the dtype
            assert failure["row"] is None
            assert failure["value"] == str(backend.dtype(frame, failure["column"]))


def test_passthrough_columns_may_be_absent(backend: Backend) -> None:
    reports = _reports(backend)
    allowed = ["fare", "user", "not_there"]
    assert validate_release(reports, MECHANISMS, passthrough=allowed) is reports


@pytest.mark.parametrize("name", ["carrier", "url_cohort"])
def test_a_passthrough_report_column_is_a_parameter_error(name: str) -> None:
    with pytest.raises(frameldp.ParameterError, match=f"passthrough column {name!r}"):
        release_schema(MECHANISMS, passthrough=[name])


def test_rappor_reports_width_padding_and_nulls(backend: Backend) -> None:
    # 5 buckets: one byte, of which the last 3 bits are padding. \xff\xff is not UTF-8.
    frame = backend.make({"origin": [b"\x80", b"\xff\xff", b"\x01", None, b"\x08"]})
    error = failures(lambda: validate_release(frame, {"origin": RAPPOR}))
    found = [(f["check"], f["value"], f["row"]) for f in error.failures]
    assert found == [
        ("not_nullable", None, 3),
        ("packed_width", b"\xff\xff", 1),
        ("padding_bits", b"\x01", 2),
    ]


def test_reports_of_another_width(backend: Backend) -> None:
    other = Rappor(1.0, domain=[f"v{i}" for i in range(12)])  # two bytes
    frame = backend.make({"origin": [f"v{i % 12}" for i in range(30)]})
    reports = frame.ldp.privatize({"origin": other}, seed=2)
    assert validate_release(reports, {"origin": other}) is reports
    error = failures(lambda: validate_release(reports, {"origin": RAPPOR}))
    assert checks(error) == {("origin", "packed_width")}
    assert len(error.failures) == 30  # every row is two bytes wide
    assert all(len(f["value"]) == 2 for f in error.failures)
    assert [f["row"] for f in error.failures] == list(range(30))


def test_krr_reports_are_labels(backend: Backend) -> None:
    frame = backend.make({"carrier": ["AA", "XX", None, "DL"]})
    error = failures(lambda: validate_release(frame, {"carrier": KRR}))
    found = [(f["check"], f["value"], f["row"]) for f in error.failures]
    assert found == [("not_nullable", None, 2), ("in_labels", "XX", 1)]


def test_bloom_cohorts(backend: Backend) -> None:
    reports = [b"\x00\x01", b"\x80\x00", b"\x00\x00"]
    frame = backend.make({"url": reports, "url_cohort": [0, 4, -1]})
    error = failures(lambda: validate_release(frame, {"url": BLOOM}))
    found = [(f["column"], f["check"], f["value"], f["row"]) for f in error.failures]
    assert found == [("url_cohort", "cohort_range", 4, 1), ("url_cohort", "cohort_range", -1, 2)]
    floats = backend.make({"url": reports, "url_cohort": [0.0, 1.0, 2.5]})
    error = failures(lambda: validate_release(floats, {"url": BLOOM}))
    assert [(f["check"], f["row"]) for f in error.failures] == [("integer", None)]
    assert "float" in str(error.failures[0]["value"]).lower()


def test_the_recorded_cohort_column_is_used(backend: Backend) -> None:
    frame = backend.make({"url": [b"\x00\x01"], "cohorts": [1]})
    spec = {**BLOOM.to_spec(), "cohort_column": "cohorts"}
    assert validate_release(frame, {"url": spec}) is frame


def test_balcer_cheu_messages_pass(backend: Backend) -> None:
    frame = backend.make({"carrier": [CARRIERS[i % 4] for i in range(1000)]})
    messages = frame.ldp.balcer_cheu("carrier", 2.0, 1e-3, domain=CARRIERS, seed=1)
    assert messages.ldp.validate() is messages


def test_lazy_collects_failures_across_columns(backend: Backend) -> None:
    reports = _reports(backend)
    broken = _with(
        backend,
        reports,
        origin=[b"\x80\x00"] + [b"\x80"] * 23,
        url_cohort=[9] + [0] * 23,
        carrier_raw=_data()["carrier"],
    )
    before = backend.snapshot(broken)
    error = failures(lambda: validate_release(broken, MECHANISMS, passthrough=["fare", "user"]))
    assert checks(error) == {
        ("carrier_raw", "column_in_schema"),
        ("origin", "packed_width"),
        ("url_cohort", "cohort_range"),
    }
    message = str(error)
    assert message.startswith("release schema: 3 failures in 3 check(s)")
    for part in ("column 'origin', check packed_width", "b'\\x80\\x00' at row 0", "9 at row 0"):
        assert part in message
    first = failures(lambda: validate_release(broken, MECHANISMS, lazy=False))
    assert len(first.failures) == 1
    backend.assert_unchanged(before, broken)


def test_many_failures_are_counted_and_the_first_ones_listed(backend: Backend) -> None:
    frame = backend.make({"carrier": ["XX"] * 250})
    error = failures(lambda: validate_release(frame, {"carrier": KRR}))
    assert len(error.failures) == MAX_LISTED
    assert [f["row"] for f in error.failures] == list(range(MAX_LISTED))
    assert "release schema: 250 failures in 1 check(s)" in str(error)
    assert "(250 in all)" in str(error)


def test_pandera_release_schema_objects() -> None:
    schema = release_schema(MECHANISMS, passthrough="fare")
    assert isinstance(schema, pandera.pandas.DataFrameSchema)
    assert schema.strict
    assert list(schema.columns) == ["carrier", "origin", "url", "url_cohort", "fare"]
    assert not schema.columns["fare"].required
    assert not schema.columns["origin"].nullable
    polars_schema = release_schema({"carrier": KRR}, backend="polars")
    assert isinstance(polars_schema, pandera.polars.DataFrameSchema)
    reports = pl.DataFrame({"carrier": ["AA"]}).ldp.privatize({"carrier": KRR}, seed=1)
    assert polars_schema.validate(reports).equals(reports)


def test_fixed_size_reports_with_padding_bits_set() -> None:
    reports = pd.arrays.ArrowExtensionArray(pa.array([b"\x80", b"\x81", None], pa.binary(1)))
    frame = pd.DataFrame({"origin": reports}, index=[10, 11, 12])
    error = failures(lambda: validate_release(frame, {"origin": RAPPOR}))
    found = [(f["check"], f["value"], f["row"]) for f in error.failures]
    assert found == [("not_nullable", None, 12), ("padding_bits", b"\x81", 11)]


def test_variable_width_binary_reports() -> None:
    arrow = pd.Series([b"\x80", b"\x08\x00"], dtype=pd.ArrowDtype(pa.large_binary()))
    frame = pd.DataFrame({"origin": arrow})
    error = failures(lambda: validate_release(frame, {"origin": RAPPOR}))
    assert [(f["check"], f["row"]) for f in error.failures] == [("packed_width", 1)]
    polars_frame = pl.from_pandas(frame)
    assert polars_frame.schema["origin"] == pl.Binary
    error = failures(lambda: validate_release(polars_frame, {"origin": RAPPOR}))
    assert [(f["check"], f["row"]) for f in error.failures] == [("packed_width", 1)]
