"""Consistent distributions: non-negative counts summing to n, the raw table kept.

Properties (hypothesis, bounded examples): every method returns non-negative counts summing to
``n`` for any finite estimates; the projections are idempotent on a valid distribution and are
the exact minimizers they claim to be (checked against scipy's constrained solver); IBU is the
maximum-likelihood estimate of k-RR (checked against a direct maximization) and reaches a fixed
point on a valid distribution.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

import frameldp
from frameldp.core.consistency import _IbuChannel, consistent_counts, project_to_simplex

finite = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False)
estimates = st.lists(finite, min_size=1, max_size=40).map(np.array)
positive = st.floats(min_value=0.1, max_value=1e3)


@settings(max_examples=200, deadline=None)
@given(estimates, st.integers(min_value=1, max_value=10**6), st.sampled_from(["norm_sub", "ibu"]))
def test_counts_are_non_negative_and_sum_to_n(values: np.ndarray, n: int, method: str) -> None:
    result = consistent_counts(values, n, method, support=(0.7, 0.1))
    assert result.shape == values.shape
    assert (result >= 0).all()
    assert result.sum() == pytest.approx(n, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_simplex_weighs_by_the_variances(data: st.DataObject) -> None:
    values = data.draw(estimates)
    variances = np.array(data.draw(st.lists(positive, min_size=values.size, max_size=values.size)))
    n = data.draw(st.integers(min_value=1, max_value=10**5))
    result = consistent_counts(values, n, "simplex", variances=variances)
    assert (result >= 0).all()
    assert result.sum() == pytest.approx(n, rel=1e-9)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(min_value=0, max_value=1e3, allow_subnormal=False), min_size=2, max_size=30)
)
def test_projections_are_idempotent_on_a_valid_distribution(values: list[float]) -> None:
    counts = np.array(values)
    if counts.sum() <= 0:
        counts[0] = 1.0
    n = counts.sum()
    for method in ("norm_sub", "simplex"):
        again = consistent_counts(counts, n, method, variances=np.linspace(1, 3, counts.size))
        np.testing.assert_allclose(again, counts, rtol=1e-9, atol=1e-9 * n)


def test_ibu_reaches_a_fixed_point_on_a_valid_distribution() -> None:
    counts = np.array([500.0, 300.0, 150.0, 40.0, 10.0])  # interior: EM converges linearly
    again = consistent_counts(counts, 1000, "ibu", support=(0.6, 0.1))
    np.testing.assert_allclose(again, counts, atol=1e-6)


def test_the_projection_is_the_constrained_least_squares_minimizer() -> None:
    """Against scipy's SLSQP on random weighted problems (an independent solver)."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        k = int(rng.integers(2, 12))
        values = rng.normal(50, 80, k)
        weights = rng.uniform(0.2, 5.0, k)
        mine = project_to_simplex(values, 300.0, weights)
        solved = _slsqp(values, weights, 300.0)
        assert (
            _objective(mine, values, weights)
            <= _objective(solved, values, weights) * (1 + 1e-7) + 1e-7
        )


def _objective(c: np.ndarray, values: np.ndarray, weights: np.ndarray) -> float:
    return float(np.sum(weights * (c - values) ** 2))


def _slsqp(values: np.ndarray, weights: np.ndarray, total: float) -> np.ndarray:
    k = values.size
    return np.asarray(
        optimize.minimize(
            _objective,
            np.full(k, total / k),
            args=(values, weights),
            bounds=[(0, None)] * k,
            constraints=[{"type": "eq", "fun": lambda c: c.sum() - total}],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 1000},
        ).x
    )


def test_ibu_is_the_maximum_likelihood_estimate_of_krr() -> None:
    """For k-RR the support counts are a multinomial histogram; IBU maximizes its likelihood
    over the simplex (compared with a direct maximization by scipy)."""
    p, q, n = 0.5, 0.125, 1000
    histogram = np.array([420.0, 300.0, 140.0, 90.0, 50.0])
    raw = (histogram - n * q) / (p - q)
    theta = consistent_counts(raw, n, "ibu", support=(p, q)) / n

    def negative_log_likelihood(z: np.ndarray) -> float:
        t = np.exp(z) / np.exp(z).sum()
        return -float(np.sum(histogram * np.log((p - q) * t + q)))

    best = optimize.minimize(
        negative_log_likelihood,
        np.zeros(5),
        method="Nelder-Mead",
        options={"xatol": 1e-12, "fatol": 1e-12, "maxiter": 20000},
    ).x
    mle = np.exp(best) / np.exp(best).sum()
    assert (
        negative_log_likelihood(np.log(theta + 1e-300))
        <= negative_log_likelihood(np.log(mle)) + 1e-8
    )


def test_bad_methods_and_missing_channels_are_refused() -> None:
    with pytest.raises(frameldp.ParameterError, match="norm_sub, simplex, ibu"):
        consistent_counts(np.ones(3), 3, "clip")
    with pytest.raises(frameldp.ParameterError, match="channel"):
        consistent_counts(np.ones(3), 3, "ibu")
    with pytest.raises(frameldp.ParameterError, match="variances"):
        consistent_counts(np.ones(3), 3, "simplex")
    with pytest.raises(frameldp.ParameterError, match="finite"):
        consistent_counts(np.array([1.0, np.nan]), 3, "norm_sub")


def test_a_table_keeps_its_raw_counts_and_refuses_a_second_pass() -> None:
    import pandas as pd

    domain = [f"v{i}" for i in range(30)]
    frame = pd.DataFrame({"c": [domain[i % 3] for i in range(600)]})
    table = frame.ldp.privatize(
        {"c": frameldp.OptimizedUnaryEncoding(1.0, domain=domain)}, seed=2
    ).ldp.debias("c")
    raw = table.estimate.counts.copy()
    assert raw.min() < 0  # 27 empty buckets: some unbiased estimates are negative
    for method in ("norm_sub", "simplex", "ibu"):
        consistent = table.consistent(method)
        assert consistent.consistency == method
        assert (consistent.frame["count"] >= 0).all()
        assert consistent.frame["count"].sum() == pytest.approx(600)
        assert consistent.frame["std_error"].isna().all()
        with pytest.raises(frameldp.ParameterError, match="already consistent"):
            consistent.consistent(method)
    np.testing.assert_array_equal(table.estimate.counts, raw)
    assert "consistent (ibu)" in repr(table.consistent("ibu"))


def test_set_valued_tables_keep_their_total_and_refuse_ibu() -> None:
    """Sets of at most ``m`` values: counts add up to at most ``m n``, not ``n``."""
    import pandas as pd

    services = ["wifi", "meal", "bag", "seat"]
    frame = pd.DataFrame({"s": [["wifi", "meal", "bag"]] * 4000})
    table = frame.ldp.privatize(
        {"s": frameldp.Rappor(4.0, domain=services, max_weight=3)}, seed=4
    ).ldp.debias("s")
    for method in ("norm_sub", "simplex"):
        counts = table.consistent(method).estimate.counts
        assert (counts >= 0).all()
        assert counts.sum() <= 3 * 4000 * (1 + 1e-12)
        assert counts[:3].min() > 3000  # not shrunk to a total of n
    with pytest.raises(frameldp.ParameterError, match="set-valued"):
        table.consistent("ibu")


def test_degenerate_inputs_are_refused() -> None:
    for counts, n in ((np.array([]), 3), (np.ones((2, 2)), 3), (np.ones(3), 0), (np.ones(3), True)):
        with pytest.raises(frameldp.ParameterError):
            consistent_counts(counts, n, "norm_sub")
    with pytest.raises(frameldp.ParameterError, match="finite"):
        consistent_counts(np.array([1e308, 1e308]), 3, "norm_sub")


def test_ibu_reaches_the_fixed_point_when_the_maximum_has_empty_buckets() -> None:
    """Half of the buckets are empty and the support counts are exactly their expectation, so
    the maximum is the truth, on the simplex's boundary. Plain EM moves the empty buckets like
    1/t and stopped at its 100,000-step cap (an EM step still moved an entry by 4e-10, the
    estimate 4.5e-5 from the truth); the accelerated steps reach the fixed point."""
    k, epsilon, n = 20, 1.0, 20_000
    p = np.exp(epsilon) / (np.exp(epsilon) + k - 1)
    q = 1.0 / (np.exp(epsilon) + k - 1)
    truth = np.r_[np.arange(10.0, 0.0, -1.0), np.zeros(10)]
    truth /= truth.sum()
    supports = n * ((p - q) * truth + q)
    theta = consistent_counts((supports - n * q) / (p - q), n, "ibu", support=(p, q)) / n
    channel = _IbuChannel(supports, p, q)
    assert np.max(np.abs(channel.em_step(theta) - theta)) < 1e-11
    assert np.max(np.abs(theta - truth)) < 1e-5
