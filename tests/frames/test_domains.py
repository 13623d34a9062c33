"""Public domains: accepted forms, inference, out-of-domain values and nulls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest

import frameldp
from frameldp import ldp

from .conftest import (
    CARRIERS,
    NEAR_IDENTITY_EPSILON,
    Backend,
    reference_reports,
    small_data,
    unpacked,
)

DOMAIN_FORMS: dict[str, Callable[[], Any]] = {
    "list": lambda: list(CARRIERS),
    "tuple": lambda: tuple(CARRIERS),
    "numpy-strings": lambda: np.array(CARRIERS),
    "pandas-categorical-dtype": lambda: pd.CategoricalDtype(list(CARRIERS)),
    "polars-enum": lambda: pl.Enum(CARRIERS),
    "frameldp-domain": lambda: frameldp.Domain(CARRIERS),
}


def _privatizer(method: str, **kwargs: Any) -> Callable[[Any], Any]:
    """``frame -> ldp(frame).<method>("carrier", epsilon, **kwargs)``."""
    return lambda frame: getattr(ldp(frame), method)("carrier", epsilon=2.0, **kwargs)


@pytest.fixture(params=["rappor", "krr"])
def method(request: pytest.FixtureRequest) -> str:
    """The frame method under test."""
    return request.param


@pytest.mark.parametrize("form", list(DOMAIN_FORMS))
def test_every_domain_form_gives_the_same_reports(backend: Backend, method: str, form: str) -> None:
    """A list, a numpy array, a pandas CategoricalDtype, a polars Enum or a Domain are the same
    public domain: the same mechanism, hence the same reports for the same seed."""
    data = small_data()
    native = backend.make(data)

    reports = _privatizer(method, domain=DOMAIN_FORMS[form](), seed=4)(native)

    assert backend.is_native(reports)
    assert ldp(reports).mechanisms["carrier"].domain.categories == CARRIERS
    expected = reference_reports(
        data, _privatizer(method, domain=list(CARRIERS), seed=4), "carrier"
    )
    assert backend.column_values(reports, "carrier") == expected


def test_inferred_domain_warns_and_uses_the_sorted_values(backend: Backend, method: str) -> None:
    data = {"carrier": ["UA", "AA", "DL"] * 10}
    native = backend.make(data)

    with pytest.warns(frameldp.DomainInferenceWarning, match="'carrier'"):
        reports = _privatizer(method, domain="infer", seed=4)(native)

    assert ldp(reports).mechanisms["carrier"].domain.categories == ("AA", "DL", "UA")
    explicit = _privatizer(method, domain=["AA", "DL", "UA"], seed=4)
    assert backend.column_values(reports, "carrier") == reference_reports(data, explicit, "carrier")


@pytest.mark.parametrize(
    ("domain", "message"),
    [
        ("AA,DL", "the string 'AA,DL'"),
        ("", "the string ''"),
        (None, "domain must be given"),
        (["AA"], "at least 2 buckets"),
        (["AA", "DL", "AA"], "'AA' twice"),
        (["AA", None], "null at position 1"),
    ],
)
def test_invalid_domain_raises(backend: Backend, method: str, domain: Any, message: str) -> None:
    native = backend.make(small_data())
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match=f"column 'carrier'.*{message}"):
        backend.collect(_privatizer(method, domain=domain)(native))
    backend.assert_unchanged(before, native)


def test_missing_domain_is_an_error(backend: Backend, method: str) -> None:
    """k-RR needs the keyword; RAPPOR's is optional (Bloom encoding has none) but required for
    one-hot encoding."""
    native = backend.make(small_data())

    with pytest.raises((TypeError, frameldp.DomainError), match="domain"):
        _privatizer(method)(native)


def test_value_outside_the_domain_raises_naming_column_value_and_row(
    backend: Backend, method: str
) -> None:
    data = small_data()
    data["carrier"][63] = "ZZ"
    native = backend.make(data)
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match=r"column 'carrier': value 'ZZ' at row 63 "):
        backend.collect(_privatizer(method, domain=CARRIERS, seed=1)(native))
    backend.assert_unchanged(before, native)


def test_unknown_other_maps_outside_values_to_the_other_bucket(backend: Backend) -> None:
    """Near-identity k-RR: the report of an out-of-domain value is ``OTHER``, and the table has
    an ``OTHER`` bucket whose count is the number of such rows (up to n * 2**-60 of noise)."""
    data = small_data()
    for row in (5, 9, 13):
        data["carrier"][row] = f"X{row}"
    native = backend.make(data)
    before = backend.snapshot(native)

    reports = ldp(native).krr(
        "carrier", epsilon=NEAR_IDENTITY_EPSILON, domain=CARRIERS, unknown="other", seed=1
    )

    expected = [frameldp.OTHER if v.startswith("X") else v for v in data["carrier"]]
    assert backend.column_values(reports, "carrier") == expected
    assert backend.report_storage(reports, "carrier") == backend.krr_storage(
        [*CARRIERS, frameldp.OTHER]
    )
    table = ldp(reports).debias("carrier")
    assert backend.column_values(table.frame, "category") == [*CARRIERS, frameldp.OTHER]
    truth = [expected.count(label) for label in (*CARRIERS, frameldp.OTHER)]
    np.testing.assert_allclose(
        backend.column_values(table.frame, "count"), truth, rtol=0, atol=64 * 2.0**-60
    )
    backend.assert_unchanged(before, native)


@pytest.mark.filterwarnings("error::frameldp.UnknownValuesWarning")
def test_a_wrong_domain_under_unknown_other_warns_naming_the_values(backend: Backend) -> None:
    """unknown='other' with a domain that misses most values (lowercase codes here) put every
    row in <other> silently; above 5% of a batch's rows it warns, naming the most frequent
    values outside the domain, at the caller's line. At 5% or less it says nothing."""
    data = small_data()
    native = backend.make({**data, "carrier": [c.lower() for c in data["carrier"]]})
    with pytest.warns(frameldp.UnknownValuesWarning, match=r"column 'carrier': .* 100% ") as seen:
        backend.collect(ldp(native).krr("carrier", 1.0, domain=CARRIERS, unknown="other"))
    top = sorted(set(data["carrier"]), key=data["carrier"].count, reverse=True)[0].lower()
    assert repr(top) in str(seen[0].message)
    if isinstance(native, pd.DataFrame):  # an eager call: the warning names its line
        assert seen[0].filename == __file__
    few = {**data, "carrier": ["zz", *data["carrier"][1:]]}  # one row in 64
    backend.collect(ldp(backend.make(few)).krr("carrier", 1.0, domain=CARRIERS, unknown="other"))


def test_unknown_other_adds_a_rappor_bit(backend: Backend) -> None:
    data = small_data()
    data["carrier"][7] = "ZZ"
    native = backend.make(data)

    reports = ldp(native).rappor(
        "carrier", epsilon=NEAR_IDENTITY_EPSILON, domain=CARRIERS, unknown="other", seed=1
    )

    bits = unpacked(backend.column_values(reports, "carrier"), len(CARRIERS) + 1)
    assert bits[:, -1].tolist() == [int(row == 7) for row in range(64)]
    table = ldp(reports).debias("carrier")
    assert backend.column_values(table.frame, "category") == [*CARRIERS, frameldp.OTHER]
    assert backend.column_values(table.frame, "count")[-1] == 1.0


def test_null_raises_naming_the_column_and_row(backend: Backend, method: str) -> None:
    data = small_data()
    data["carrier"][63] = None
    native = backend.make(data)
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match=r"column 'carrier': null at row 63 "):
        backend.collect(_privatizer(method, domain=CARRIERS, seed=1)(native))
    backend.assert_unchanged(before, native)


def test_nulls_category_gives_nulls_their_own_bucket(backend: Backend, method: str) -> None:
    """Near identity: the null bucket's count is the number of null rows; its label is null."""
    data = small_data()
    for row in (3, 30):
        data["carrier"][row] = None
    native = backend.make(data)
    before = backend.snapshot(native)

    reports = getattr(ldp(native), method)(
        "carrier", epsilon=NEAR_IDENTITY_EPSILON, domain=CARRIERS, nulls="category", seed=1
    )

    table = ldp(reports).debias("carrier")
    assert backend.column_values(table.frame, "category") == [*CARRIERS, None]
    truth = [data["carrier"].count(label) for label in (*CARRIERS, None)]
    assert truth[-1] == 2
    np.testing.assert_allclose(
        backend.column_values(table.frame, "count"), truth, rtol=0, atol=64 * 2.0**-60
    )
    backend.assert_unchanged(before, native)


def test_krr_reports_the_null_bucket_as_null(backend: Backend) -> None:
    data = small_data()
    data["carrier"][3] = None
    native = backend.make(data)

    reports = ldp(native).krr(
        "carrier", epsilon=NEAR_IDENTITY_EPSILON, domain=CARRIERS, nulls="category", seed=1
    )

    assert backend.column_values(reports, "carrier") == data["carrier"]
    assert backend.report_storage(reports, "carrier") == backend.krr_storage(CARRIERS)


def test_other_and_null_buckets_together(backend: Backend, method: str) -> None:
    data = small_data()
    data["carrier"][3] = None
    data["carrier"][4] = "ZZ"
    native = backend.make(data)

    reports = _privatizer(method, domain=CARRIERS, unknown="other", nulls="category", seed=1)(
        native
    )

    table = ldp(reports).debias("carrier")
    assert backend.column_values(table.frame, "category") == [*CARRIERS, frameldp.OTHER, None]
    assert table.mechanism.domain.size == len(CARRIERS) + 2


def test_krr_other_bucket_over_an_integer_domain_raises(backend: Backend) -> None:
    """The ``OTHER`` label cannot be written into a non-string report column: refused with a
    frameldp error naming the column, before any report is produced."""
    native = backend.make({"code": [1, 2, 3, 9] * 8})
    before = backend.snapshot(native)

    with pytest.raises(
        frameldp.ParameterError,
        match=r"column 'code': unknown='other' with k-ary randomized response needs string "
        r"categories \(the '<other>' label",
    ):
        backend.collect(
            ldp(native).krr(
                "code", epsilon=NEAR_IDENTITY_EPSILON, domain=[1, 2, 3], unknown="other", seed=1
            )
        )
    backend.assert_unchanged(before, native)


def test_rappor_other_bucket_over_an_integer_domain(backend: Backend) -> None:
    """RAPPOR reports are bit vectors, so an ``OTHER`` bucket over integers is fine; near
    identity, its count is the number of out-of-domain rows."""
    native = backend.make({"code": [1, 2, 3, 9] * 8})

    reports = ldp(native).rappor(
        "code", epsilon=NEAR_IDENTITY_EPSILON, domain=[1, 2, 3], unknown="other", seed=1
    )

    table = ldp(reports).debias("code")
    assert backend.column_values(table.frame, "category") == [1, 2, 3, frameldp.OTHER]
    np.testing.assert_allclose(
        backend.column_values(table.frame, "count"), [8, 8, 8, 8], rtol=0, atol=32 * 2.0**-60
    )


def test_numpy_integer_domain_is_accepted(backend: Backend, method: str) -> None:
    data = {"code": [1, 2, 3, 1] * 8}
    native = backend.make(data)

    reports = getattr(ldp(native), method)("code", epsilon=2.0, domain=np.array([1, 2, 3]), seed=1)

    expected = reference_reports(
        data,
        lambda f: getattr(ldp(f), method)("code", epsilon=2.0, domain=[1, 2, 3], seed=1),
        "code",
    )
    assert backend.column_values(reports, "code") == expected
