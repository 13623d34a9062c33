"""Set-valued cells (list columns): k-hot RAPPOR with ``max_weight``."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import frameldp
from frameldp import ldp
from frameldp.datasets import FLIGHTS_DOMAINS

from .conftest import NEAR_IDENTITY_EPSILON, Backend, unpacked

SERVICES = FLIGHTS_DOMAINS["services"]
MAX_WEIGHT = 3
# Near identity for k-hot: epsilon / (2 m) = 90 per bit, i.e. a flip probability of 2**-64.
SET_EPSILON = NEAR_IDENTITY_EPSILON * MAX_WEIGHT

CELLS: list[list[str]] = [
    ["wifi"],
    [],
    ["meal", "wifi", "wifi", "meal"],  # duplicates count once: 2 distinct items
    ["lounge", "checked_bag", "priority_boarding"],
    ["extra_legroom"],
    [],
    ["wifi", "lounge"],
]


def _cells(n: int = 35) -> list[list[str]]:
    return [list(CELLS[i % len(CELLS)]) for i in range(n)]


def _k_hot(cells: list[list[str]]) -> np.ndarray:
    return np.array([[int(s in cell) for s in SERVICES] for cell in cells], dtype=np.uint8)


def test_set_valued_cells_are_k_hot_encoded(backend: Backend) -> None:
    cells = _cells()
    data: dict[str, Any] = {"services": cells, "fare": [float(i) for i in range(len(cells))]}
    native = backend.make(data)
    before = backend.snapshot(native)

    reports = ldp(native).rappor(
        "services", epsilon=SET_EPSILON, domain=SERVICES, max_weight=MAX_WEIGHT, seed=2
    )

    assert backend.is_native(reports)
    assert backend.report_storage(reports, "services") == backend.rappor_storage(len(SERVICES))
    bits = unpacked(backend.column_values(reports, "services"), len(SERVICES))
    np.testing.assert_array_equal(bits, _k_hot(cells))
    assert backend.column_values(reports, "fare") == data["fare"]
    backend.assert_unchanged(before, native)


def test_set_valued_debias_counts_rows_holding_each_item(backend: Backend) -> None:
    cells = _cells()
    native = backend.make({"services": cells})

    reports = ldp(native).rappor(
        "services", epsilon=SET_EPSILON, domain=SERVICES, max_weight=MAX_WEIGHT, seed=2
    )
    table = ldp(reports).debias("services")

    assert backend.column_values(table.frame, "category") == list(SERVICES)
    assert backend.column_values(table.frame, "count") == _k_hot(cells).sum(axis=0).tolist()
    expected = frameldp.Rappor(epsilon=SET_EPSILON, domain=SERVICES, max_weight=MAX_WEIGHT)
    assert table.mechanism == expected
    assert table.privacy.epsilon == expected.privacy.epsilon


def test_set_valued_reports_are_noisy_and_reproducible(backend: Backend) -> None:
    cells = _cells()
    native = backend.make({"services": cells})

    def privatize(seed: int) -> list[bytes]:
        reports = ldp(native).rappor(
            "services", epsilon=1.0, domain=SERVICES, max_weight=MAX_WEIGHT, seed=seed
        )
        return backend.column_values(reports, "services")

    assert privatize(5) == privatize(5)
    assert privatize(5) != privatize(6)
    # 35 rows x 6 bits flipped with probability ~0.46 each: never all equal to the truth.
    assert not np.array_equal(unpacked(privatize(5), len(SERVICES)), _k_hot(cells))


def test_only_empty_cells(backend: Backend) -> None:
    native = backend.make({"services": [[], [], []], "fare": [1.0, 2.0, 3.0]})

    reports = ldp(native).rappor(
        "services", epsilon=SET_EPSILON, domain=SERVICES, max_weight=MAX_WEIGHT, seed=2
    )

    assert backend.column_values(reports, "services") == [b"\x00"] * 3


def test_cell_with_more_items_than_max_weight_raises_naming_the_row(backend: Backend) -> None:
    cells = _cells(10)
    cells[9] = ["wifi", "meal", "lounge", "checked_bag"]
    native = backend.make({"services": cells})
    before = backend.snapshot(native)

    with pytest.raises(
        frameldp.DomainError, match=r"column 'services': row 9 holds 4 distinct items.*max_weight=3"
    ):
        backend.collect(
            ldp(native).rappor("services", epsilon=1.0, domain=SERVICES, max_weight=MAX_WEIGHT)
        )
    backend.assert_unchanged(before, native)


@pytest.mark.parametrize(
    ("item", "message"), [("spa", "value 'spa' at row 9 "), (None, "null at row 9 ")]
)
def test_bad_item_in_a_cell_names_its_row(backend: Backend, item: Any, message: str) -> None:
    cells = _cells(10)
    cells[9] = ["wifi", item]
    native = backend.make({"services": cells})

    with pytest.raises(frameldp.DomainError, match=f"column 'services': {message}"):
        backend.collect(
            ldp(native).rappor("services", epsilon=1.0, domain=SERVICES, max_weight=MAX_WEIGHT)
        )


def test_null_cell_raises_naming_the_row(backend: Backend) -> None:
    cells: list[Any] = _cells(10)
    cells[9] = None
    native = backend.make({"services": cells})
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match=r"column 'services': null cell at row 9"):
        backend.collect(
            ldp(native).rappor("services", epsilon=1.0, domain=SERVICES, max_weight=MAX_WEIGHT)
        )
    backend.assert_unchanged(before, native)


def test_null_cell_with_nulls_category_sets_the_null_bit(backend: Backend) -> None:
    cells: list[Any] = _cells(10)
    cells[6] = None
    native = backend.make({"services": cells})

    reports = ldp(native).rappor(
        "services",
        epsilon=SET_EPSILON,
        domain=SERVICES,
        max_weight=MAX_WEIGHT,
        nulls="category",
        seed=1,
    )

    bits = unpacked(backend.column_values(reports, "services"), len(SERVICES) + 1)
    assert bits[:, -1].tolist() == [int(row == 6) for row in range(10)]
    assert bits[6].sum() == 1


def test_krr_on_a_list_column_raises(backend: Backend) -> None:
    native = backend.make({"services": _cells(10)})
    before = backend.snapshot(native)

    with pytest.raises(frameldp.ParameterError, match=r"column 'services'.*rappor"):
        backend.collect(ldp(native).krr("services", epsilon=1.0, domain=SERVICES, seed=1))
    backend.assert_unchanged(before, native)


@pytest.mark.parametrize("lazy", [False, True], ids=["polars-eager", "polars-lazy"])
def test_masked_null_cell_with_nulls_category(lazy: bool) -> None:
    frame = pl.DataFrame(
        {"services": [["wifi"], ["meal", "wifi"], ["lounge"]], "keep": [True, False, True]}
    ).select(pl.when(pl.col("keep")).then(pl.col("services")).alias("services"))
    native = frame.lazy() if lazy else frame

    reports = ldp(native).rappor(
        "services",
        epsilon=SET_EPSILON,
        domain=SERVICES,
        max_weight=MAX_WEIGHT,
        nulls="category",
        seed=1,
    )

    values = reports.collect()["services"] if lazy else reports["services"]
    bits = unpacked(values.to_list(), len(SERVICES) + 1)
    assert bits[:, -1].tolist() == [0, 1, 0]
