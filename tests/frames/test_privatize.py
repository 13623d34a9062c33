"""Privatizing columns: native frame back, other columns and the input untouched, report dtypes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import frameldp
from frameldp import ldp

from .conftest import CARRIERS, ORIGINS, Backend, small_data, unpacked


@pytest.mark.parametrize("num_bits", [2, 8, 9, 20])
def test_rappor_reports_are_fixed_width_bytes(backend: Backend, num_bits: int) -> None:
    """RAPPOR reports: ceil(k/8) bytes per row, zero padding bits, the rest of the frame as is."""
    domain = [f"v{j:02d}" for j in range(num_bits)]
    data = {"item": [domain[i % num_bits] for i in range(40)], **small_data(40)}
    native = backend.make(data)
    before = backend.snapshot(native)

    reports = ldp(native).rappor("item", epsilon=1.0, domain=domain, seed=11)

    assert backend.is_native(reports)
    assert reports is not native
    assert backend.report_storage(reports, "item") == backend.rappor_storage(num_bits)
    values = backend.column_values(reports, "item")
    width = -(-num_bits // 8)
    assert len(values) == 40
    assert all(isinstance(v, bytes) and len(v) == width for v in values)
    packed = np.frombuffer(b"".join(values), dtype=np.uint8).reshape(40, width)
    assert not np.unpackbits(packed, axis=1)[:, num_bits:].any()  # padding bits stay zero
    assert backend.names(reports) == list(data)
    for other in ("carrier", "origin", "fare"):
        assert backend.column_values(reports, other) == list(data[other])
    backend.assert_unchanged(before, native)


def test_krr_reports_are_categorical_over_the_domain(backend: Backend) -> None:
    """k-RR reports: the library's categorical type whose categories are exactly the domain."""
    data = small_data()
    native = backend.make(data)
    before = backend.snapshot(native)

    reports = ldp(native).krr("carrier", epsilon=1.0, domain=CARRIERS, seed=11)

    assert backend.is_native(reports)
    assert backend.report_storage(reports, "carrier") == backend.krr_storage(CARRIERS)
    labels = backend.column_values(reports, "carrier")
    assert len(labels) == len(data["carrier"])
    assert set(labels) <= set(CARRIERS)
    assert labels != data["carrier"]  # noise was applied (64 rows at epsilon=1: P[equal] < 1e-20)
    assert backend.names(reports) == list(data)
    assert backend.column_values(reports, "origin") == data["origin"]
    assert backend.column_values(reports, "fare") == data["fare"]
    backend.assert_unchanged(before, native)


def test_krr_reports_of_a_categorical_column_are_its_labels(backend: Backend) -> None:
    """An ordered pandas Categorical / a polars Enum over the domain gives k-RR reports that
    read as its labels (stored as text: the report type records the domain)."""
    if backend.arrow:
        pytest.skip("an Arrow dictionary type does not hold its categories: pass the domain")
    values = [CARRIERS[i % 4] for i in range(32)]
    native = backend.make_categorical("carrier", values, CARRIERS)
    dtype = backend.dtype(native, "carrier")
    before = backend.snapshot(native)

    reports = ldp(native).krr("carrier", epsilon=1.0, domain=dtype, seed=3)

    assert backend.is_native(reports)
    assert backend.report_storage(reports, "carrier") == pa.large_string()
    assert set(backend.column_values(reports, "carrier")) <= set(CARRIERS)
    assert ldp(reports).mechanisms == {"carrier": frameldp.RandomizedResponse(1.0, domain=CARRIERS)}
    backend.assert_unchanged(before, native)


def test_privatize_applies_each_mechanism_to_its_column(backend: Backend) -> None:
    """``privatize({col: Rappor, col2: RandomizedResponse})`` equals the one-column shortcuts."""
    data = small_data()
    native = backend.make(data)
    before = backend.snapshot(native)
    mechanisms = {
        "carrier": frameldp.Rappor(epsilon=1.0, domain=CARRIERS),
        "origin": frameldp.RandomizedResponse(2.0, domain=ORIGINS),
    }

    reports = ldp(native).privatize(mechanisms, seed=21)

    assert backend.is_native(reports)
    assert backend.report_storage(reports, "carrier") == backend.rappor_storage(len(CARRIERS))
    assert backend.report_storage(reports, "origin") == backend.krr_storage(ORIGINS)
    assert backend.column_values(reports, "fare") == data["fare"]
    assert ldp(reports).mechanisms == mechanisms
    # The shortcuts are privatize with one entry: same key, same reports.
    rappor = ldp(native).rappor("carrier", epsilon=1.0, domain=CARRIERS, seed=21)
    krr = ldp(native).krr("origin", epsilon=2.0, domain=ORIGINS, seed=21)
    assert backend.column_values(reports, "carrier") == backend.column_values(rappor, "carrier")
    assert backend.column_values(reports, "origin") == backend.column_values(krr, "origin")
    backend.assert_unchanged(before, native)


def test_privatize_gives_identical_columns_independent_noise(backend: Backend) -> None:
    """Two columns with the same data and mechanism get different noise in one call.

    Shared noise across columns would void basic composition. With 64 rows of 4 bits flipped
    with probability ~0.38, identical reports would have probability below 1e-60.
    """
    carriers = small_data()["carrier"]
    native = backend.make({"a": carriers, "b": carriers})
    mechanism = frameldp.Rappor(epsilon=1.0, domain=CARRIERS)

    reports = ldp(native).privatize({"a": mechanism, "b": mechanism}, seed=5)

    assert backend.column_values(reports, "a") != backend.column_values(reports, "b")


def test_rappor_near_identity_is_one_hot(backend: Backend) -> None:
    """With noise of 2**-64 per bit, bit j of a report is set exactly when the value is j."""
    data = small_data()
    native = backend.make(data)

    reports = ldp(native).rappor("origin", epsilon=90.0, domain=ORIGINS, seed=1)

    bits = unpacked(backend.column_values(reports, "origin"), len(ORIGINS))
    expected = np.array([[int(v == o) for o in ORIGINS] for v in data["origin"]], dtype=np.uint8)
    np.testing.assert_array_equal(bits, expected)


def test_krr_near_identity_reports_the_value(backend: Backend) -> None:
    """With a move probability of 2**-64 every report is the true value."""
    data = small_data()
    native = backend.make(data)

    reports = ldp(native).krr("origin", epsilon=90.0, domain=ORIGINS, seed=1)

    assert backend.column_values(reports, "origin") == data["origin"]
