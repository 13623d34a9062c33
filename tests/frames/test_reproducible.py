"""Keyed randomness: the same key or seed gives the same reports on every backend.

Each test compares a backend's reports with those of plain pandas (object strings) for the same
data and key, so all five backends agree with each other. The "differ" assertions use 64 rows:
two independent RAPPOR columns (4 bits, flip ~0.38) coincide with probability below 1e-60, two
k-RR columns (k = 4, epsilon = 1) below 1e-30.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from frameldp import ldp

from .conftest import CARRIERS, Backend, reference_reports, small_data

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


def _rappor(**source: Any) -> Callable[[Any], Any]:
    return lambda frame: ldp(frame).rappor("carrier", epsilon=1.0, domain=CARRIERS, **source)


def _krr(**source: Any) -> Callable[[Any], Any]:
    return lambda frame: ldp(frame).krr("carrier", epsilon=1.0, domain=CARRIERS, **source)


MECHANISMS = {"rappor": _rappor, "krr": _krr}


@pytest.fixture(params=list(MECHANISMS))
def call(request: pytest.FixtureRequest) -> Callable[..., Callable[[Any], Any]]:
    """A privatization of ``carrier`` for given ``key=`` / ``seed=`` arguments."""
    return MECHANISMS[request.param]


def test_same_seed_same_reports_on_every_backend(backend: Backend, call: Any) -> None:
    data = small_data()
    reports = call(seed=1234)(backend.make(data))

    expected = reference_reports(data, call(seed=1234), "carrier")
    assert backend.column_values(reports, "carrier") == expected


def test_same_key_same_reports_on_every_backend(backend: Backend, call: Any) -> None:
    data = small_data()
    native = backend.make(data)

    first = backend.column_values(call(key=KEY)(native), "carrier")
    second = backend.column_values(call(key=KEY)(native), "carrier")

    assert first == second
    assert first == reference_reports(data, call(key=KEY), "carrier")


def test_different_key_or_seed_gives_different_reports(backend: Backend, call: Any) -> None:
    native = backend.make(small_data())

    with_key = backend.column_values(call(key=KEY)(native), "carrier")
    with_other_key = backend.column_values(call(key=OTHER_KEY)(native), "carrier")
    with_seed = backend.column_values(call(seed=1)(native), "carrier")
    with_other_seed = backend.column_values(call(seed=2)(native), "carrier")

    assert with_key != with_other_key
    assert with_seed != with_other_seed
    assert with_key != with_seed


def test_without_key_or_seed_each_call_draws_a_fresh_key(backend: Backend, call: Any) -> None:
    native = backend.make(small_data())

    first = backend.column_values(call()(native), "carrier")
    second = backend.column_values(call()(native), "carrier")

    assert first != second


def test_a_frame_of_several_chunks_gives_the_same_reports(backend: Backend, call: Any) -> None:
    """Rows are addressed by position in the frame, whatever its chunking."""
    data = small_data()
    halves = [
        backend.make({name: list(values[:20]) for name, values in data.items()}),
        backend.make({name: list(values[20:]) for name, values in data.items()}),
    ]

    reports = call(seed=3)(backend.concat(halves))

    assert backend.column_values(reports, "carrier") == reference_reports(
        data, call(seed=3), "carrier"
    )
