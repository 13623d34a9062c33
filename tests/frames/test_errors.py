"""Bad input raises a frameldp error naming the column, the parameter and the value, and loses
nothing: the input frame is unchanged."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import polars as pl
import pytest

import frameldp
from frameldp import ldp

from .conftest import CARRIERS, Backend, small_data, untyped

Call = Callable[[Any], Any]
RAPPOR = frameldp.Rappor(epsilon=1.0, domain=CARRIERS)
KRR = frameldp.RandomizedResponse(1.0, domain=CARRIERS)


def _rappor(**kwargs: Any) -> Call:
    kwargs.setdefault("domain", CARRIERS)
    return lambda frame: ldp(frame).rappor("carrier", **kwargs)


def _krr(**kwargs: Any) -> Call:
    kwargs.setdefault("domain", CARRIERS)
    return lambda frame: ldp(frame).krr("carrier", **kwargs)


def _plain(privatize: Call) -> Call:
    """The reports as plain values (type dropped): only the explicit mechanism describes them."""
    return lambda frame: untyped(privatize(frame), "carrier")


def _debias(privatize: Call, *args: Any, **kwargs: Any) -> Call:
    return lambda frame: ldp(privatize(frame)).debias("carrier", *args, **kwargs)


# (call, error class, substrings the message must contain)
CASES: dict[str, tuple[Call, type[frameldp.FrameLDPError], list[str]]] = {
    "missing-column-rappor": (
        lambda f: ldp(f).rappor("nope", epsilon=1.0, domain=CARRIERS),
        frameldp.ParameterError,
        ["column 'nope' not found", "carrier"],
    ),
    "missing-column-krr": (
        lambda f: ldp(f).krr("nope", epsilon=1.0, domain=CARRIERS),
        frameldp.ParameterError,
        ["column 'nope' not found"],
    ),
    "missing-column-privatize": (
        lambda f: ldp(f).privatize({"nope": RAPPOR}),
        frameldp.ParameterError,
        ["column 'nope' not found"],
    ),
    "missing-column-debias": (
        lambda f: ldp(f).debias("nope", RAPPOR),
        frameldp.ParameterError,
        ["column 'nope' not found"],
    ),
    **{
        f"{name}-epsilon-{value}": (
            call(epsilon=value),
            frameldp.ParameterError,
            ["column 'carrier'", "epsilon must be > 0", f"got {value!r}"],
        )
        for name, call in (("rappor", _rappor), ("krr", _krr))
        for value in (0.0, -1.0, math.nan, math.inf)
    },
    "krr-epsilon-string": (
        _krr(epsilon="1"),
        frameldp.ParameterError,
        ["column 'carrier'", "epsilon must be a number", "got '1'"],
    ),
    "rappor-epsilon-none": (
        _rappor(epsilon=None),
        frameldp.ParameterError,
        ["column 'carrier'", "exactly one of epsilon and f", "epsilon=None", "f=None"],
    ),
    **{
        f"rappor-f-{value}": (
            _rappor(f=value),
            frameldp.ParameterError,
            ["column 'carrier'", "f must be in (0, 1]", f"got {value!r}"],
        )
        for value in (0.0, -0.5, 1.5, math.nan)
    },
    "rappor-epsilon-and-f": (
        _rappor(epsilon=1.0, f=0.5),
        frameldp.ParameterError,
        ["column 'carrier'", "exactly one of epsilon and f", "epsilon=1.0", "f=0.5"],
    ),
    "rappor-max-weight-above-k": (
        _rappor(epsilon=1.0, max_weight=5),
        frameldp.ParameterError,
        ["column 'carrier'", "max_weight", "domain size 4", "got 5"],
    ),
    "rappor-max-weight-zero": (
        _rappor(epsilon=1.0, max_weight=0),
        frameldp.ParameterError,
        ["column 'carrier'", "max_weight must be an integer >= 1", "got 0"],
    ),
    "unknown-policy": (
        _krr(epsilon=1.0, unknown="drop"),
        frameldp.ParameterError,
        ["column 'carrier'", "unknown must be", "got 'drop'"],
    ),
    "nulls-policy": (
        _rappor(epsilon=1.0, nulls="drop"),
        frameldp.ParameterError,
        ["column 'carrier'", "nulls must be", "got 'drop'"],
    ),
    "privatize-not-a-mechanism": (
        lambda f: ldp(f).privatize({"carrier": "rappor"}),
        frameldp.ParameterError,
        ["column 'carrier'", "mechanism", "got str"],
    ),
    "privatize-mechanism-class": (
        lambda f: ldp(f).privatize({"carrier": frameldp.Rappor}),
        frameldp.ParameterError,
        ["column 'carrier'", "mechanism", "got type"],
    ),
    "privatize-empty-mapping": (
        lambda f: ldp(f).privatize({}),
        frameldp.ParameterError,
        ["privatize needs at least one", "mechanism"],
    ),
    "key-length": (
        _rappor(epsilon=1.0, key=b"short"),
        frameldp.ParameterError,
        ["key must be 32 bytes", "got 5 bytes"],
    ),
    "key-and-seed": (
        _krr(epsilon=1.0, key=bytes(32), seed=1),
        frameldp.ParameterError,
        ["key=", "seed=", "got both"],
    ),
    "seed-not-int": (
        _krr(epsilon=1.0, seed="1"),
        frameldp.ParameterError,
        ["seed must be an int", "got '1'"],
    ),
    "debias-not-a-mechanism": (
        _debias(_krr(epsilon=1.0, seed=1), "krr"),
        frameldp.ParameterError,
        ["column 'carrier'", "mechanism", "got str"],
    ),
    "debias-level": (
        _debias(_krr(epsilon=1.0, seed=1), level=1.5),
        frameldp.ParameterError,
        ["column 'carrier'", "level must be in (0, 1)", "got 1.5"],
    ),
    "debias-another-mechanism-than-the-recorded-one": (
        _debias(_krr(epsilon=1.0, seed=1), RAPPOR),
        frameldp.ParameterError,
        ["column 'carrier'", "holds reports of randomized_response", "rappor"],
    ),
    "debias-plain-rappor-reports-of-another-width": (
        _debias(
            _plain(_rappor(epsilon=1.0, seed=1)),
            frameldp.Rappor(epsilon=1.0, domain=[f"v{j}" for j in range(9)]),
        ),
        frameldp.DomainError,
        ["column 'carrier'", "9 bits", "2"],
    ),
    "debias-plain-krr-reports-as-rappor": (
        _debias(_plain(_krr(epsilon=1.0, seed=1)), RAPPOR),
        frameldp.DomainError,
        ["column 'carrier'", "binary"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_raises_a_clear_frameldp_error(backend: Backend, case: str) -> None:
    call, error, substrings = CASES[case]
    native = backend.make(small_data())
    before = backend.snapshot(native)

    with pytest.raises(frameldp.FrameLDPError) as raised:
        backend.collect(call(native))

    assert type(raised.value) is error
    message = str(raised.value)
    for part in substrings:
        assert part in message, (part, message)
    backend.assert_unchanged(before, native)


def test_a_bad_column_produces_no_output_for_the_good_ones(backend: Backend) -> None:
    """privatize randomizes every column before assembling: one bad column, nothing returned,
    no mechanism recorded on the input."""
    data = small_data()
    data["origin"][0] = "nowhere"
    native = backend.make(data)
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match="'origin'"):
        backend.collect(
            ldp(native).privatize(
                {"carrier": RAPPOR, "origin": frameldp.RandomizedResponse(1.0, domain=["x", "y"])},
                seed=1,
            )
        )
    backend.assert_unchanged(before, native)
    assert ldp(native).privacy is None


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda: pd.DataFrame({"c": pd.period_range("2020-01", periods=3, freq="M")}), "period"),
        (lambda: pd.DataFrame({"c": pd.interval_range(0, 3)}), "interval"),
        (lambda: pl.DataFrame({"c": [{"a": 1}, {"a": 2}, None]}), "struct<a: int64>"),
        (lambda: pl.LazyFrame({"c": [{"a": 1}, {"a": 2}, None]}), "struct<a: int64>"),
    ],
    ids=["pandas-period", "pandas-interval", "polars-struct", "polars-lazy-struct"],
)
@pytest.mark.parametrize("method", ["krr", "rappor"])
def test_inferring_the_domain_of_values_that_are_no_categories_is_a_domain_error(
    make: Callable[[], Any], kind: str, method: str
) -> None:
    """(Issue 36: pyarrow's ArrowNotImplementedError from its unique kernel.)"""
    frame = make()
    before = (
        frame.collect()
        if isinstance(frame, pl.LazyFrame)
        else frame.copy()
        if isinstance(frame, pd.DataFrame)
        else frame.clone()
    )
    with pytest.raises(frameldp.DomainError, match="domain='infer'") as raised:
        getattr(ldp(frame), method)("c", 1.0, domain="infer")  # lazy too: the domain is needed now
    message = str(raised.value)
    assert message.startswith("column 'c': "), message
    assert kind in message, message
    assert raised.value.parameter == "domain"
    after = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    assert after.equals(before)
