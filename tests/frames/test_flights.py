"""End to end on the demo dataset: privatize three columns at once, debias each, compare with
the true counts."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

import frameldp
from frameldp import ldp
from frameldp.datasets import FLIGHTS_DOMAINS

from .conftest import BACKENDS, Backend, bonferroni_z

MECHANISMS = {
    "dest": frameldp.Rappor(epsilon=4.0, domain=FLIGHTS_DOMAINS["dest"]),
    "carrier": frameldp.RandomizedResponse(2.0, domain=FLIGHTS_DOMAINS["carrier"]),
    "services": frameldp.Rappor(epsilon=6.0, domain=FLIGHTS_DOMAINS["services"], max_weight=3),
}


def _true_counts(backend: Backend, native: object, column: str) -> list[int]:
    values = backend.column_values(native, column)
    if column == "services":  # a row counts once for each distinct item it holds
        counts = Counter(item for cell in values for item in set(cell))
    else:
        counts = Counter(values)
    return [counts[label] for label in FLIGHTS_DOMAINS[column]]


# The statistics once per frame family: every backend draws these very reports (the next test).
@pytest.mark.parametrize("backend", ["pandas-categorical", "polars-lazy"], indirect=True)
def test_flights_end_to_end(backend: Backend) -> None:
    """Every bucket of every column is within its Bonferroni bound of the true count.

    Per column, z = norm.isf(P_FAIL / (2k)) over its k buckets (P_FAIL = 1e-6 per column, fixed
    seed). At n = 120,000 the bound (z standard errors) is about 0.7% of n for dest (RAPPOR,
    epsilon 4, k = 100), 1.0-1.2% for carrier (k-RR, epsilon 2, k = 12) and 1.4% for services
    (k-hot RAPPOR, epsilon 6 over at most 3 items); a systematic error of that size in one
    bucket fails the test.
    """
    native = backend.flights()
    before = backend.snapshot(native)
    n = backend.num_rows(native)

    reports = ldp(native).privatize(MECHANISMS, seed=2024)

    assert backend.is_native(reports)
    assert backend.column_values(reports, "passenger_id") == backend.column_values(
        native, "passenger_id"
    )
    exact = math.fsum(m.privacy.epsilon for m in MECHANISMS.values())
    assert exact <= ldp(reports).privacy.epsilon <= exact * (1 + 1e-12)
    for column, mechanism in MECHANISMS.items():
        table = ldp(reports).debias(column)
        assert table.n == n
        assert table.mechanism == mechanism
        frame = table.to_polars()
        assert frame["category"].to_list() == list(FLIGHTS_DOMAINS[column])
        truth = np.array(_true_counts(backend, native, column))
        z_scores = np.abs(frame["count"].to_numpy() - truth) / frame["std_error"].to_numpy()
        assert z_scores.max() < bonferroni_z(len(truth)), (column, z_scores.max())
    backend.assert_unchanged(before, native)


def test_flights_reports_agree_across_backends(backend: Backend) -> None:
    """The same seed on the same dataset gives the same report bytes and labels everywhere."""
    reference = BACKENDS["polars-eager"]
    expected = ldp(reference.flights()).privatize(MECHANISMS, seed=7)

    reports = ldp(backend.flights()).privatize(MECHANISMS, seed=7)

    for column in MECHANISMS:
        assert backend.column_values(reports, column) == reference.column_values(expected, column)
