"""Debiasing reports: finding the mechanism, the FrequencyTable, composition, accuracy."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import polars.testing
import pytest

import frameldp
from frameldp import ldp
from frameldp.results.table import TABLE_COLUMNS

from .conftest import BACKENDS, CARRIERS, ORIGINS, Backend, bonferroni_z, small_data

MECHANISMS: dict[str, Callable[[], Any]] = {
    "rappor": lambda: frameldp.Rappor(epsilon=1.0, domain=CARRIERS),
    "krr": lambda: frameldp.RandomizedResponse(1.0, domain=CARRIERS),
}


@pytest.fixture(params=list(MECHANISMS))
def mechanism(request: pytest.FixtureRequest) -> Any:
    """A RAPPOR or a k-RR mechanism over ``CARRIERS``."""
    return MECHANISMS[request.param]()


def _counts(table: frameldp.FrequencyTable) -> list[float]:
    return table.to_polars()["count"].to_list()


def test_debias_finds_the_mechanism_privatize_recorded(backend: Backend, mechanism: Any) -> None:
    native = backend.make(small_data())
    reports = ldp(native).privatize({"carrier": mechanism}, seed=8)

    table = ldp(reports).debias("carrier")

    assert isinstance(table, frameldp.FrequencyTable)
    assert table.mechanism == mechanism
    assert table.column == "carrier"
    assert table.n == 64
    assert table.privacy == mechanism.privacy.insecure()  # seed=: marked INSECURE
    assert table.privacy.epsilon == mechanism.privacy.epsilon
    assert type(table.frame) is backend.table_type()
    assert list(table.frame.columns) == list(TABLE_COLUMNS)
    assert backend.column_values(table.frame, "category") == list(CARRIERS)


def test_frequency_table_converts_to_both_libraries(backend: Backend, mechanism: Any) -> None:
    reports = ldp(backend.make(small_data())).privatize({"carrier": mechanism}, seed=8)
    table = ldp(reports).debias("carrier", level=0.9)

    as_pandas, as_polars = table.to_pandas(), table.to_polars()

    assert type(as_pandas) is pd.DataFrame
    assert type(as_polars) is pl.DataFrame
    assert list(as_pandas.columns) == list(as_polars.columns) == list(TABLE_COLUMNS)
    native = table.frame if isinstance(table.frame, pl.DataFrame) else pl.from_pandas(table.frame)
    polars.testing.assert_frame_equal(as_polars, native)
    polars.testing.assert_frame_equal(pl.from_pandas(as_pandas), native)
    estimate = table.estimate
    np.testing.assert_array_equal(as_polars["count"].to_numpy(), estimate.counts)
    np.testing.assert_array_equal(as_polars["frequency"].to_numpy(), estimate.counts / 64)
    np.testing.assert_array_equal(as_polars["std_error"].to_numpy(), estimate.std_errors)
    low, high = estimate.interval(0.9)
    np.testing.assert_array_equal(as_polars["ci_low"].to_numpy(), low)
    np.testing.assert_array_equal(as_polars["ci_high"].to_numpy(), high)


def test_debias_takes_an_explicit_mechanism_on_a_hand_built_frame(
    backend: Backend, mechanism: Any
) -> None:
    """A frame rebuilt from the report values carries no record: the mechanism must be passed."""
    reports = ldp(backend.make(small_data())).privatize({"carrier": mechanism}, seed=8)
    rebuilt = backend.make({"carrier": backend.column_values(reports, "carrier")})

    with pytest.raises(frameldp.MechanismNotFoundError, match=r"column 'carrier'.*explicitly"):
        ldp(rebuilt).debias("carrier")
    table = ldp(rebuilt).debias("carrier", mechanism)

    assert table.mechanism == mechanism
    assert table.n == 64
    assert _counts(table) == _counts(ldp(reports).debias("carrier"))


def test_debias_of_a_slice_of_the_reports(backend: Backend, mechanism: Any) -> None:
    """A sliced report column (Arrow offset into the buffers) is read from its own rows."""
    reports = ldp(backend.make(small_data())).privatize({"carrier": mechanism}, seed=8)
    window = backend.slice(reports, 10, 25)
    rows = backend.column_values(reports, "carrier")[10:35]

    table = ldp(window).debias("carrier", mechanism)

    assert table.n == 25
    rebuilt = ldp(backend.make({"carrier": rows})).debias("carrier", mechanism)
    assert _counts(table) == _counts(rebuilt)


def test_debias_names_the_recorded_columns_when_asked_for_another(backend: Backend) -> None:
    reports = ldp(backend.make(small_data())).krr("carrier", epsilon=1.0, domain=CARRIERS, seed=1)

    with pytest.raises(frameldp.MechanismNotFoundError, match=r"'origin'.*\['carrier'\]"):
        ldp(reports).debias("origin")


DERIVATIONS: dict[str, Callable[[Any], Any]] = {
    "clone": lambda frame: frame.clone(),
    "with_columns": lambda frame: frame.with_columns(pl.lit(1).alias("one")),
    "select": lambda frame: frame.select("carrier"),
    "filter": lambda frame: frame.filter(pl.col("carrier").ext.storage().is_not_null()),
    "concat": lambda frame: pl.concat([frame, frame.clear()]),
    "rename": lambda frame: frame.rename({"carrier": "renamed"}).rename({"renamed": "carrier"}),
}


@pytest.mark.parametrize("derive", list(DERIVATIONS))
@pytest.mark.parametrize("backend_id", ["polars-eager", "polars-lazy"])
def test_polars_derived_frame_keeps_the_mechanism(backend_id: str, derive: str) -> None:
    """The report column's type carries its mechanism: a derived frame (cloned, with more
    columns, selected, filtered, concatenated, renamed) is debiased without it."""
    backend = BACKENDS[backend_id]
    mechanism = frameldp.Rappor(epsilon=1.0, domain=CARRIERS)
    reports = ldp(backend.make(small_data())).privatize({"carrier": mechanism}, seed=8)
    derived = DERIVATIONS[derive](reports)

    assert ldp(derived).mechanisms == {"carrier": mechanism}
    assert _counts(ldp(derived).debias("carrier")) == _counts(ldp(reports).debias("carrier"))


@pytest.mark.parametrize(
    "derive", [lambda f: f.copy(), lambda f: f[["carrier"]], lambda f: f.reset_index()]
)
def test_pandas_derived_frame_keeps_the_record(pandas_backend: Backend, derive: Any) -> None:
    """The report column's type survives copies, column selection and a new index."""
    mechanism = frameldp.RandomizedResponse(1.0, domain=CARRIERS)
    reports = ldp(pandas_backend.make(small_data())).privatize({"carrier": mechanism}, seed=8)

    table = ldp(derive(reports)).debias("carrier")

    assert table.mechanism == mechanism
    assert _counts(table) == _counts(ldp(reports).debias("carrier"))


def test_privacy_composes_every_privatized_column(backend: Backend) -> None:
    """``.ldp.privacy`` is the basic composition (sum of epsilons, rounded up) of all columns,
    whether privatized in one call or in chained calls."""
    native = backend.make(small_data())
    rappor = frameldp.Rappor(epsilon=0.5, domain=CARRIERS)
    krr = frameldp.RandomizedResponse(1.5, domain=ORIGINS)
    exact = math.fsum([rappor.privacy.epsilon, krr.privacy.epsilon])

    at_once = ldp(native).privatize({"carrier": rappor, "origin": krr}, seed=1)
    chained = ldp(ldp(native).privatize({"carrier": rappor}, seed=1)).privatize(
        {"origin": krr}, seed=2
    )

    assert ldp(native).privacy is None
    for reports in (at_once, chained):
        privacy = ldp(reports).privacy
        assert exact <= privacy.epsilon <= exact * (1 + 1e-12)
        assert privacy.delta == 0.0
        assert sorted(p.epsilon for p in privacy.parts) == sorted(
            [rappor.privacy.epsilon, krr.privacy.epsilon]
        )


# --- accuracy -------------------------------------------------------------------------------

PLANTED_ROWS = 200_000
PLANTED_DOMAIN = tuple(f"c{j:02d}" for j in range(20))


def _planted_counts() -> np.ndarray:
    """True counts: one dominant bucket, a geometric tail, and one bucket that never occurs."""
    weights = np.array([0.3, *(0.7 * 0.8**j for j in range(18)), 0.0])
    counts = np.floor(PLANTED_ROWS * weights / weights.sum()).astype(np.int64)
    counts[0] += PLANTED_ROWS - counts.sum()
    return counts


def _planted_values() -> list[str]:
    codes = np.repeat(np.arange(len(PLANTED_DOMAIN)), _planted_counts())
    np.random.default_rng(0).shuffle(codes)  # fixed order; the noise comes from frameldp's key
    return np.array(PLANTED_DOMAIN, dtype=object)[codes].tolist()


PLANTED_VALUES = _planted_values()
PLANTED_MECHANISMS: dict[str, Callable[[float], Any]] = {
    "rappor": lambda eps: frameldp.Rappor(epsilon=eps, domain=PLANTED_DOMAIN),
    "krr": lambda eps: frameldp.RandomizedResponse(eps, domain=PLANTED_DOMAIN),
}


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("kind", list(PLANTED_MECHANISMS))
def test_estimates_are_within_the_bonferroni_bound(
    backend: Backend, kind: str, epsilon: float
) -> None:
    """Every bucket's estimate lies within z standard errors of the planted count.

    z = norm.isf(P_FAIL / (2k)) (about 5.45 for k = 20, Bonferroni over the buckets), so a
    correct implementation fails with probability below P_FAIL = 1e-6 (fixed seed: never in
    CI). Power: a bias of (z + 2) standard errors in a bucket is caught with probability above
    97%; at epsilon = 2 that is 1.6% of n for RAPPOR and 1.3% of n for an empty k-RR bucket
    (at epsilon = 8: 0.23% and 0.03%). The standard errors themselves are checked against the
    analytic variance below, so they cannot be inflated to pass.
    """
    mechanism = PLANTED_MECHANISMS[kind](epsilon)
    reports = ldp(backend.make({"item": PLANTED_VALUES})).privatize({"item": mechanism}, seed=7)

    table = ldp(reports).debias("item").to_polars()

    truth = _planted_counts()
    z_scores = np.abs(table["count"].to_numpy() - truth) / table["std_error"].to_numpy()
    assert table["std_error"].min() > 0
    assert z_scores.max() < bonferroni_z(len(PLANTED_DOMAIN)), z_scores


@pytest.mark.parametrize("epsilon", [0.5, 8.0])
def test_krr_counts_sum_to_n_exactly(backend: Backend, epsilon: float) -> None:
    """Sum over j of (Y_j - n q) / (p - q) = (n - k n q) / (p - q) = n, because p + (k-1) q = 1.

    Exact in arithmetic; the tolerance is floating-point rounding of 20 terms of size <= n / (p
    - q), far below one report.
    """
    mechanism = frameldp.RandomizedResponse(epsilon, domain=PLANTED_DOMAIN)
    reports = ldp(backend.make({"item": PLANTED_VALUES})).privatize({"item": mechanism}, seed=7)

    table = ldp(reports).debias("item").to_polars()

    assert table["count"].sum() == pytest.approx(PLANTED_ROWS, rel=1e-9)
    assert table["frequency"].sum() == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("epsilon", [0.5, 8.0])
def test_rappor_counts_sum_to_n_within_its_standard_error(backend: Backend, epsilon: float) -> None:
    """RAPPOR bits are debiased independently, so the counts do not sum to n exactly.

    Each row's k bits sum to 1 before noise and the k flips are independent, so the sum of the
    debiased counts has mean n and variance k * Var(bucket): |sum - n| < norm.isf(P_FAIL / 2)
    * sqrt(k) * std_error, at P_FAIL = 1e-6.
    """
    mechanism = frameldp.Rappor(epsilon=epsilon, domain=PLANTED_DOMAIN)
    reports = ldp(backend.make({"item": PLANTED_VALUES})).privatize({"item": mechanism}, seed=7)

    table = ldp(reports).debias("item").to_polars()

    total_se = math.sqrt(len(PLANTED_DOMAIN)) * table["std_error"][0]
    assert table["count"].sum() != PLANTED_ROWS
    assert abs(table["count"].sum() - PLANTED_ROWS) < bonferroni_z(1) * total_se


@pytest.mark.parametrize("kind", list(PLANTED_MECHANISMS))
def test_std_errors_are_the_analytic_ones(backend: Backend, kind: str) -> None:
    """RAPPOR: Var = n q (1 - q) / (1 - 2q)^2 with q = f/2 (the same for every bucket).
    k-RR: Var = (c p (1 - p) + (n - c) q (1 - q)) / (p - q)^2 with c the estimate clipped to
    [0, n] (plug-in). Computed here from the realized probabilities only."""
    mechanism = PLANTED_MECHANISMS[kind](2.0)
    reports = ldp(backend.make({"item": PLANTED_VALUES})).privatize({"item": mechanism}, seed=7)

    table = ldp(reports).debias("item").to_polars()

    n = PLANTED_ROWS
    if kind == "rappor":
        q = mechanism.flip_probability
        variance = np.full(len(PLANTED_DOMAIN), n * q * (1 - q) / (1 - 2 * q) ** 2)
    else:
        p, q = mechanism.keep_probability, mechanism.other_probability
        c = np.clip(table["count"].to_numpy(), 0, n)
        variance = (c * p * (1 - p) + (n - c) * q * (1 - q)) / (p - q) ** 2
    np.testing.assert_allclose(table["std_error"].to_numpy(), np.sqrt(variance), rtol=1e-12)
