"""The input schema: privatized columns exist and hold values of the public domain, with the
null and unknown policies honoured; it accepts exactly what ``privatize`` accepts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas
import pandera.polars
import polars as pl
import pytest

import frameldp
from frameldp import Domain, RandomizedResponse, Rappor
from frameldp.schemas import input_schema, validate_input

from .conftest import Backend, checks, failures

CARRIERS = ("AA", "DL", "UA", "WN")
KRR = RandomizedResponse(1.0, domain=CARRIERS)
RAPPOR = Rappor(1.0, domain=CARRIERS)
BLOOM = frameldp.BloomRappor(f=0.5, p=0.25, q=0.75, num_bits=16, num_hashes=2, num_cohorts=4)


def test_valid_input_passes_and_is_returned_unchanged(backend: Backend) -> None:
    frame = backend.make({"carrier": ["AA", "DL", "UA"] * 4, "fare": [1.0, 2.0, 3.0] * 4})
    before = backend.snapshot(frame)
    assert validate_input(frame, {"carrier": KRR}) is frame
    assert validate_input(frame, {"carrier": RAPPOR}, lazy=False) is frame
    backend.assert_unchanged(before, frame)


def test_value_outside_the_domain_fails_with_column_check_value_and_row(backend: Backend) -> None:
    frame = backend.make({"carrier": ["AA", "XX", "DL", "XX"]})
    before = backend.snapshot(frame)
    error = failures(lambda: validate_input(frame, {"carrier": KRR}))
    assert error.failures == [
        {"schema": "input", "column": "carrier", "check": "in_domain", "value": "XX", "row": 1},
        {"schema": "input", "column": "carrier", "check": "in_domain", "value": "XX", "row": 3},
    ]
    message = str(error)
    assert message.startswith("input schema: 2 failures in 1 check(s)")
    for part in ("column 'carrier'", "check in_domain", "'XX' at row 1", "(2 in all)"):
        assert part in message
    backend.assert_unchanged(before, frame)


def test_unknown_other_accepts_any_value(backend: Backend) -> None:
    frame = backend.make({"carrier": ["AA", "XX", "??"]})
    domain = Domain(CARRIERS, unknown="other")
    for mechanism in (RandomizedResponse(1.0, domain=domain), Rappor(1.0, domain=domain)):
        assert validate_input(frame, {"carrier": mechanism}) is frame


@pytest.mark.parametrize("mechanism", [KRR, RAPPOR], ids=["krr", "rappor"])
def test_nulls_fail_unless_they_have_a_bucket(backend: Backend, mechanism: Any) -> None:
    frame = backend.make({"carrier": ["AA", None, "DL"]})
    error = failures(lambda: validate_input(frame, {"carrier": mechanism}))
    assert error.failures == [
        {"schema": "input", "column": "carrier", "check": "not_nullable", "value": None, "row": 1}
    ]
    with_nulls = type(mechanism).from_spec(
        {**mechanism.to_spec(), "domain": {**mechanism.domain.to_json(), "nulls": "category"}}
    )
    assert validate_input(frame, {"carrier": with_nulls}) is frame


def test_integer_domains(backend: Backend) -> None:
    frame = backend.make({"stops": [0, 1, 2, 7]})
    mechanism = RandomizedResponse(1.0, domain=[0, 1, 2])
    error = failures(lambda: validate_input(frame, {"stops": mechanism}))
    assert [(f["check"], f["value"], f["row"]) for f in error.failures] == [("in_domain", 7, 3)]
    assert validate_input(frame, {"stops": RandomizedResponse(1.0, domain=[0, 1, 2, 7])}) is frame
    # A domain of strings does not match integers (privatize refuses them too).
    strings = RandomizedResponse(1.0, domain=["0", "1", "2", "7"])
    assert len(failures(lambda: validate_input(frame, {"stops": strings})).failures) == 4


def test_categorical_input_is_judged_by_its_values_not_its_categories(backend: Backend) -> None:
    frame = backend.make_categorical("carrier", ["AA", "DL"], ["AA", "DL", "ZZ"])
    assert validate_input(frame, {"carrier": KRR}) is frame
    bad = backend.make_categorical("carrier", ["AA", "ZZ"], ["AA", "DL", "ZZ"])
    error = failures(lambda: validate_input(bad, {"carrier": KRR}))
    assert [(f["value"], f["row"]) for f in error.failures] == [("ZZ", 1)]


SETS = Rappor(1.0, domain=CARRIERS, max_weight=2)


def test_set_valued_cells(backend: Backend) -> None:
    frame = backend.make({"carriers": [["AA"], ["AA", "DL"], ["UA", "UA", "WN"], []]})
    assert validate_input(frame, {"carriers": SETS}) is frame  # repeats count once


def test_set_items_outside_the_domain_and_heavy_sets_fail(backend: Backend) -> None:
    frame = backend.make({"carriers": [["AA", "XX"], ["AA", "DL", "UA"], ["DL"]]})
    error = failures(lambda: validate_input(frame, {"carriers": SETS}))
    assert [(f["check"], f["value"], f["row"]) for f in error.failures] == [
        ("in_domain", ["AA", "XX"], 0),
        ("max_weight", ["AA", "DL", "UA"], 1),
    ]


def test_sets_with_reserved_buckets_count_buckets(backend: Backend) -> None:
    domain = Domain(CARRIERS, unknown="other", nulls="category")
    mechanism = Rappor(1.0, domain=domain, max_weight=2)
    # Items outside the domain share one OTHER bucket; a null item is the null bucket.
    good = backend.make({"c": [["AA", "XX", "YY"], [None, "AA"], ["XX", "YY", "ZZ"], None]})
    assert validate_input(good, {"c": mechanism}) is good
    heavy = backend.make({"c": [["AA", "DL", "XX"], ["AA", None, "XX"], ["AA"]]})
    error = failures(lambda: validate_input(heavy, {"c": mechanism}))
    found = [(f["check"], f["row"]) for f in error.failures]
    assert found == [("max_weight", 0), ("max_weight", 1)]


def test_null_items_need_a_null_bucket(backend: Backend) -> None:
    frame = backend.make({"c": [["AA", None], ["DL"]]})
    error = failures(lambda: validate_input(frame, {"c": SETS}))
    assert [(f["check"], f["value"], f["row"]) for f in error.failures] == [
        ("in_domain", ["AA", None], 0)
    ]


def test_krr_refuses_set_valued_cells(backend: Backend) -> None:
    frame = backend.make({"carrier": [["AA"], ["DL"]]})
    error = failures(lambda: validate_input(frame, {"carrier": KRR}))
    assert checks(error) == {("carrier", "in_domain")}
    assert [f["value"] for f in error.failures] == [["AA"], ["DL"]]


def test_missing_column(backend: Backend) -> None:
    frame = backend.make({"carrier": ["AA"]})
    error = failures(lambda: validate_input(frame, {"origin": KRR}))
    assert error.failures == [
        {
            "schema": "input",
            "column": "origin",
            "check": "column_in_dataframe",
            "value": "origin",
            "row": None,
        }
    ]
    assert "column 'origin', check column_in_dataframe (column missing)" in str(error)


def test_bloom_input(backend: Backend) -> None:
    frame = backend.make({"url": ["a.com", "b.org"], "user": ["u1", "u2"]})
    assert validate_input(frame, {"url": BLOOM}) is frame
    assert validate_input(frame, {"url": BLOOM}, user="user") is frame
    nulls = backend.make({"url": ["a.com", None], "user": ["u1", None]})
    error = failures(lambda: validate_input(nulls, {"url": BLOOM}, user="user"))
    assert checks(error) == {("url", "not_nullable"), ("user", "not_nullable")}
    error = failures(lambda: validate_input(frame, {"url": BLOOM}, user="account"))
    assert checks(error) == {("account", "column_in_dataframe")}


def test_bloom_input_must_be_strings(backend: Backend) -> None:
    frame = backend.make({"url": [1, 2]})
    error = failures(lambda: validate_input(frame, {"url": BLOOM}))
    found = [(f["column"], f["check"], f["row"]) for f in error.failures]
    assert found == [("url", "strings", None)]
    assert "int" in str(error.failures[0]["value"]).lower()  # the column's dtype


def test_bloom_cohort_column_must_not_exist_yet(backend: Backend) -> None:
    frame = backend.make({"url": ["a.com"], "url_cohort": [3]})
    error = failures(lambda: validate_input(frame, {"url": BLOOM}))
    assert error.failures == [
        {
            "schema": "input",
            "column": "url_cohort",
            "check": "absent",
            "value": "url_cohort",
            "row": None,
        }
    ]


def test_lazy_collects_failures_across_columns_and_lazy_false_stops_at_the_first(
    backend: Backend,
) -> None:
    frame = backend.make(
        {"carrier": ["AA", "XX", None], "origin": ["JFK", "BOS", "???"], "url": ["a", "b", None]}
    )
    mechanisms = {
        "carrier": KRR,
        "origin": Rappor(1.0, domain=["BOS", "JFK"]),
        "url": BLOOM,
        "dest": KRR,
    }
    before = backend.snapshot(frame)
    error = failures(lambda: validate_input(frame, mechanisms))
    assert checks(error) == {
        ("dest", "column_in_dataframe"),
        ("carrier", "not_nullable"),
        ("carrier", "in_domain"),
        ("origin", "in_domain"),
        ("url", "not_nullable"),
    }
    assert str(error).startswith("input schema: 5 failures in 5 check(s)")
    first = failures(lambda: validate_input(frame, mechanisms, lazy=False))
    assert len(first.failures) == 1
    assert str(first).startswith("input schema: 1 failure in 1 check(s)")
    backend.assert_unchanged(before, frame)


# -- the input schema accepts exactly what privatize accepts --------------------------------

WITH_NULLS = Domain(CARRIERS, nulls="category")
WITH_OTHER = Domain(CARRIERS, unknown="other")
AGREEMENT: dict[str, tuple[dict[str, list[Any]], dict[str, Any]]] = {
    "valid": ({"c": ["AA", "DL"]}, {"c": KRR}),
    "outside": ({"c": ["AA", "XX"]}, {"c": KRR}),
    "outside-rappor": ({"c": ["AA", "XX"]}, {"c": RAPPOR}),
    "null": ({"c": ["AA", None]}, {"c": RAPPOR}),
    "null-bucket": ({"c": ["AA", None]}, {"c": Rappor(1.0, domain=WITH_NULLS)}),
    "other": ({"c": ["AA", "XX"]}, {"c": RandomizedResponse(1.0, domain=WITH_OTHER)}),
    "ints": ({"c": [1, 5]}, {"c": RandomizedResponse(1.0, domain=[1, 2])}),
    "ints-valid": ({"c": [1, 2]}, {"c": RandomizedResponse(1.0, domain=[1, 2])}),
    "sets": ({"c": [["AA", "DL"], []]}, {"c": SETS}),
    "sets-heavy": ({"c": [["AA", "DL", "UA"]]}, {"c": SETS}),
    "sets-outside": ({"c": [["XX"]]}, {"c": SETS}),
    "sets-krr": ({"c": [["AA"]]}, {"c": KRR}),
    "bloom": ({"c": ["a", "b"]}, {"c": BLOOM}),
    "bloom-null": ({"c": ["a", None]}, {"c": BLOOM}),
    "bloom-ints": ({"c": [1, 2]}, {"c": BLOOM}),
}


@pytest.mark.parametrize("case", list(AGREEMENT))
def test_validate_input_agrees_with_privatize(backend: Backend, case: str) -> None:
    data, mechanisms = AGREEMENT[case]
    frame = backend.make(data)
    try:
        backend.collect(frame.ldp.privatize(mechanisms, seed=1))
    except frameldp.FrameLDPError:
        accepted = False
    else:
        accepted = True
    try:
        validate_input(frame, mechanisms)
    except frameldp.ValidationError:
        valid = False
    else:
        valid = True
    assert valid == accepted


def test_privatize_mixed_object_column_raises_a_frameldp_error() -> None:
    frame = pd.DataFrame({"c": pd.Series(["AA", 1], dtype=object)})
    error = failures(lambda: validate_input(frame, {"c": KRR}))  # the schema catches it
    assert [(f["check"], f["value"]) for f in error.failures] == [("in_domain", 1)]
    with pytest.raises(frameldp.FrameLDPError, match="column 'c'"):
        frame.ldp.privatize({"c": KRR}, seed=1)


# -- parameters ------------------------------------------------------------------------------


def test_pandera_schema_objects() -> None:
    schema = input_schema({"carrier": KRR, "url": BLOOM}, user="user")
    assert isinstance(schema, pandera.pandas.DataFrameSchema)
    assert not schema.strict
    assert set(schema.columns) == {"carrier", "url", "url_cohort", "user"}
    assert not schema.columns["user"].nullable
    assert not schema.columns["url_cohort"].required
    polars_schema = input_schema({"carrier": KRR}, backend="polars")
    assert isinstance(polars_schema, pandera.polars.DataFrameSchema)
    frame = pl.DataFrame({"carrier": ["AA", "DL"], "other": [1, 2]})
    assert polars_schema.validate(frame).equals(frame)
    valid = pd.DataFrame({"carrier": ["AA"], "url": ["a"], "user": ["u"]})
    assert schema.validate(valid) is not None


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: input_schema({"c": KRR}, backend="dask"), "backend must be 'pandas' or 'polars'"),
        (lambda: input_schema({}), "at least one"),
        (lambda: input_schema(["c"]), "mapping"),  # type: ignore[arg-type]
        (lambda: input_schema({"c": "not a spec"}), "column 'c': invalid mechanism spec"),
        (lambda: input_schema({"c": {"mechanism": "nope"}}), "unknown mechanism"),
        (lambda: input_schema({"c": 3}), "column 'c': expected a frameldp mechanism"),
        (lambda: input_schema({"c": BLOOM}, user="c"), "cannot also be privatized"),
        (
            lambda: input_schema(
                {"c": RandomizedResponse(1.0, domain=Domain([1, 2], unknown="other"))}
            ),
            "needs string categories",
        ),
        (lambda: validate_input([1, 2], {"c": KRR}), "pandas DataFrame or a polars"),
    ],
)
def test_bad_parameters_raise_parameter_errors(call: Any, match: str) -> None:
    with pytest.raises(frameldp.ParameterError, match=match):
        call()


def test_specs_are_accepted_in_place_of_mechanisms(backend: Backend) -> None:
    frame = backend.make({"carrier": ["AA", "XX"]})
    for spec in (KRR.to_spec(), frameldp.core.mechanisms._spec.canonical_json(KRR.to_spec())):
        error = failures(lambda spec=spec: validate_input(frame, {"carrier": spec}))
        assert checks(error) == {("carrier", "in_domain")}


def test_every_failure_is_counted_beyond_those_listed(backend: Backend) -> None:
    frame = backend.make({"carrier": ["XX"] * 250 + [None] * 10 + ["AA"] * 5})
    error = failures(lambda: validate_input(frame, {"carrier": KRR}))
    assert str(error).splitlines()[0] == "input schema: 260 failures in 2 check(s)"
    listed = [f["check"] for f in error.failures]
    assert listed.count("in_domain") == 100
    assert listed.count("not_nullable") == 10
    first = failures(lambda: validate_input(frame, {"carrier": KRR}, lazy=False))
    assert str(first).splitlines()[0] == "input schema: 10 failures in 1 check(s)"  # nulls first
    assert [f["check"] for f in first.failures] == ["not_nullable"] * 10


@pytest.mark.parametrize("library", ["pandas", "polars"])
@pytest.mark.parametrize(
    ("values", "dtype", "domain", "failing"),
    [
        # 2.5 is not coerced to 2 (privatize would not match 2 to it either)
        ([1, 2], "int64", [1, 2.5], [2]),
        # 0.1 is not a float32 value: float32(0.1) is outside the domain [0.1, 0.5]
        ([0.1, 0.5], "float32", [0.1, 0.5], [0.1]),
        # 1.0 is the integer 1 exactly
        ([1, 3], "int64", [1.0, 3.0], []),
    ],
)
def test_numeric_domains_match_exactly_as_privatize_does(
    library: str, values: list[float], dtype: str, domain: list[float], failing: list[float]
) -> None:
    """A domain entry is never coerced to the column's type (issue 13, defect 8): validation
    accepts exactly the values privatize accepts."""
    mechanism = frameldp.RandomizedResponse(1.0, domain=domain)
    frame: Any = pd.DataFrame({"v": np.array(values, dtype=dtype)})
    if library == "polars":
        frame = pl.from_pandas(frame)
    if not failing:
        validate_input(frame, {"v": mechanism})
        frame.ldp.privatize({"v": mechanism}, seed=1)
        return
    with pytest.raises(frameldp.ValidationError, match="in_domain"):
        validate_input(frame, {"v": mechanism})
    with pytest.raises(frameldp.DomainError):
        frame.ldp.privatize({"v": mechanism}, seed=1)
