"""``unpack``, the pandas Series accessor and the polars expression namespace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import polars.testing
import pyarrow as pa
import pytest

import frameldp
from _releases import assert_series_equal
from frameldp import ldp

from .conftest import CARRIERS, Backend, small_data


def test_unpack_gives_one_0_1_column_per_bucket(backend: Backend) -> None:
    """``unpack`` equals ``numpy.unpackbits`` of the report bytes (12 buckets: two bytes)."""
    domain = [f"v{j:02d}" for j in range(11)]
    native = backend.make({"x": [domain[(3 * i) % 11] for i in range(40)]})
    reports = ldp(native).rappor("x", epsilon=1.0, domain=domain, unknown="other", seed=3)

    bits = backend.collect(ldp(reports).unpack("x"))

    labels = [*domain, frameldp.OTHER]
    assert backend.names(bits) == [f"x={label}" for label in labels]
    raw = b"".join(backend.column_values(reports, "x"))
    expected = np.unpackbits(np.frombuffer(raw, dtype=np.uint8).reshape(40, 2), axis=1)[:, :12]
    assert expected.any()
    assert not expected.all()
    for j, label in enumerate(labels):
        assert backend.column_values(bits, f"x={label}") == expected[:, j].tolist()
        assert backend.dtype(bits, f"x={label}") == backend.uint8_dtype()


def test_unpack_refuses_krr_reports(backend: Backend) -> None:
    reports = ldp(backend.make(small_data())).krr("carrier", epsilon=1.0, domain=CARRIERS, seed=3)

    with pytest.raises(frameldp.ParameterError, match=r"column 'carrier'.*bit vectors"):
        ldp(reports).unpack("carrier")


@pytest.mark.parametrize("method", ["rappor", "krr"])
def test_column_api_equals_the_frame_api(backend: Backend, method: str) -> None:
    """pandas ``ldp(df[c]).<method>`` gives the reports of ``ldp(df).<method>(c)`` for the same
    seed. A polars expression has no global row positions, so it refuses ``seed=``/``key=``
    and draws a fresh key per evaluation: its reports have the frame API's type and length."""
    native = backend.make(small_data())
    before = backend.snapshot(native)
    kwargs: dict[str, Any] = {"epsilon": 1.0, "domain": CARRIERS, "seed": 17}
    frame_reports = getattr(ldp(native), method)("carrier", **kwargs)

    if backend.library == "polars":
        with pytest.raises(frameldp.ParameterError, match=r"column 'carrier': seed=17 is refused"):
            backend.privatize_column(native, "carrier", method, **kwargs)
        del kwargs["seed"]
        column_reports = backend.privatize_column(native, "carrier", method, **kwargs)
        expected = backend.column_values(frame_reports, "carrier")
        assert len(column_reports) == len(expected)
        assert {type(value) for value in column_reports} == {type(value) for value in expected}
    else:
        column_reports = backend.privatize_column(native, "carrier", method, **kwargs)
        assert column_reports == backend.column_values(frame_reports, "carrier")
    backend.assert_unchanged(before, native)


def test_pandas_series_accessor(pandas_backend: Backend) -> None:
    backend = pandas_backend
    native = backend.make(small_data())
    native.index = pd.RangeIndex(100, 164)
    series = native["carrier"]
    before = series.copy(deep=True)
    mechanism = frameldp.Rappor(epsilon=1.0, domain=CARRIERS)

    reports = ldp(series).rappor(epsilon=1.0, domain=CARRIERS, seed=2)

    assert type(reports) is pd.Series
    assert reports.name == "carrier"
    assert reports.index.equals(series.index)
    assert backend.report_storage(reports.to_frame(), "carrier") == pa.large_binary()
    pd.testing.assert_series_equal(series, before)
    table = ldp(reports).debias()
    assert table.mechanism == mechanism
    assert table.n == 64
    frame_table = ldp(ldp(native).rappor("carrier", epsilon=1.0, domain=CARRIERS, seed=2)).debias(
        "carrier"
    )
    pd.testing.assert_frame_equal(table.frame, frame_table.frame)
    assert ldp(reports).privacy == mechanism.privacy.insecure()  # drawn from seed=2
    bits = ldp(reports).unpack()
    assert bits.index.equals(series.index)
    assert backend.names(bits) == [f"carrier={c}" for c in CARRIERS]


def test_pandas_series_accessor_krr_and_series_of_a_report_frame(pandas_backend: Backend) -> None:
    native = pandas_backend.make(small_data())
    mechanism = frameldp.RandomizedResponse(1.0, domain=CARRIERS)

    reports = ldp(native["carrier"]).krr(epsilon=1.0, domain=CARRIERS, seed=2)
    column_of_frame = ldp(native).privatize({"carrier": mechanism}, seed=2)["carrier"]

    assert pandas_backend.report_storage(reports.to_frame(), "carrier") == pa.large_string()
    assert ldp(reports).debias().mechanism == mechanism
    # A column taken from the privatized frame carries the record too.
    assert ldp(column_of_frame).debias().mechanism == mechanism
    assert_series_equal(reports, column_of_frame, check_flags=False)


@pytest.mark.parametrize("lazy", [False, True], ids=["polars-eager", "polars-lazy"])
def test_polars_expressions_keep_the_other_columns(lazy: bool) -> None:
    data = small_data()
    frame = pl.DataFrame(data)
    native = frame.lazy() if lazy else frame

    out = native.with_columns(
        pl.col("carrier").ldp.rappor(epsilon=1.0, domain=CARRIERS),
        pl.col("origin").ldp.krr(epsilon=1.0, domain=sorted(set(data["origin"]))),
    )

    collected = out.collect(engine="streaming") if lazy else out
    expected = ldp(ldp(frame).rappor("carrier", epsilon=1.0, domain=CARRIERS, seed=5)).krr(
        "origin", epsilon=1.0, domain=sorted(set(data["origin"])), seed=5
    )
    assert collected.columns == expected.columns
    # The same mechanisms, recorded in the same types (the keyed frame's also say "seeded").
    assert ldp(collected).mechanisms == ldp(expected).mechanisms
    for name in ("carrier", "origin"):
        assert collected.schema[name].ext_storage() == expected.schema[name].ext_storage()
    others = [c for c in frame.columns if c not in ("carrier", "origin")]
    polars.testing.assert_frame_equal(collected.select(others), frame.select(others))


def test_polars_expression_refuses_to_infer_the_domain() -> None:
    with pytest.raises(frameldp.ParameterError, match=r"'carrier'.*infer.*needs the data"):
        pl.col("carrier").ldp.krr(epsilon=1.0, domain="infer")


def test_a_series_of_reports_states_its_releases_guarantee() -> None:
    """A pandas Series of reports debiases with the guarantee its frame states: memoized reports
    of two rows per person, and a shuffle (the Series had its own path, which stated one
    report's epsilon: 1 where a person lost 2.32)."""
    frame = pd.DataFrame({"c": ["a", "b", "c", "a"] * 25, "u": [f"u{i // 2}" for i in range(100)]})
    memoized = ldp(frame).krr(
        "c", 1.0, domain=["a", "b", "c"], epsilon_infinity=3.0, user="u", memo_key=bytes(32)
    )
    shuffled = ldp(ldp(frame).krr("c", 1.0, domain=["a", "b", "c"])).shuffle()
    for reports in (memoized, shuffled):
        stated = ldp(reports).debias("c").privacy
        assert ldp(reports["c"]).debias().privacy == stated
        assert ldp(reports["c"]).privacy == ldp(reports).privacy
    assert ldp(memoized["c"]).debias().privacy.epsilon > 2.0
