"""Debiasing, variances, normal quantiles and the FrequencyEstimate record."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from frameldp.core.estimation import (
    FrequencyEstimate,
    debias_direct_counts,
    debias_unary_counts,
    direct_variance,
    normal_quantile,
    unary_variance,
)
from frameldp.errors import ParameterError


@pytest.mark.parametrize("level", [1e-6, 0.1, 0.5, 0.68, 0.9, 0.95, 0.99, 0.999])
def test_normal_quantile_against_scipy_and_mpmath(level: float) -> None:
    """Against sqrt(2) erfinv(level) to 30 digits and scipy's norm.isf. The tolerance is that
    of the argument: 0.5 + level / 2 is rounded by up to 1.1e-16, which moves z by at most
    1.1e-16 / (φ(z) z) < 2e-14 relative for level <= 0.999 (z <= 3.3)."""
    z = normal_quantile(level)
    with mpmath.workdps(30):
        exact = float(mpmath.sqrt(2) * mpmath.erfinv(mpmath.mpf(level)))
    assert z == pytest.approx(exact, rel=1e-13)
    assert z == pytest.approx(float(stats.norm.isf((1 - level) / 2)), rel=1e-13)


@pytest.mark.parametrize(
    "level", [0, 0.0, 1, 1.0, -0.1, 1.5, math.nan, math.inf, True, "0.95", None]
)
def test_normal_quantile_rejects_bad_levels(level: object) -> None:
    with pytest.raises(ParameterError, match=f"level must be in \\(0, 1\\), got {level!r}"):
        normal_quantile(level)  # type: ignore[arg-type]


def test_unary_variance_closed_form() -> None:
    for n, q in [(1, 0.25), (1000, 0.1), (12345, 0.49), (7, 0.0)]:
        exact = n * Fraction(q) * (1 - Fraction(q)) / (1 - 2 * Fraction(q)) ** 2
        assert unary_variance(n, q) == pytest.approx(float(exact), rel=1e-15)


def test_debias_unary_counts_inverts_the_expectation() -> None:
    """Feeding the expected bit sums (1 - 2q) c + n q returns c exactly (up to rounding)."""
    n, q = 1000, 0.25
    truth = np.array([600.0, 300.0, 100.0, 0.0])
    expected_sums = (1 - 2 * q) * truth + n * q
    estimate = debias_unary_counts(expected_sums, n, q)  # type: ignore[arg-type]
    np.testing.assert_allclose(estimate.counts, truth, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(estimate.variances, np.full(4, unary_variance(n, q)))
    assert estimate.n == n


def test_debias_unary_counts_without_noise_is_identity() -> None:
    estimate = debias_unary_counts(np.array([3, 0, 7]), 10, 0.0)
    np.testing.assert_array_equal(estimate.counts, [3.0, 0.0, 7.0])
    np.testing.assert_array_equal(estimate.variances, [0.0, 0.0, 0.0])


@pytest.mark.parametrize("n", [0, -1])
def test_debias_on_no_reports_raises(n: int) -> None:
    with pytest.raises(ParameterError, match=f"cannot estimate from n={n} reports"):
        debias_unary_counts(np.zeros(3, dtype=np.int64), n, 0.25)
    with pytest.raises(ParameterError, match=f"cannot estimate from n={n} reports"):
        debias_direct_counts(np.zeros(3, dtype=np.int64), n, 0.6, 0.2)


@pytest.mark.parametrize("q", [0.5, 0.7, -0.1])
def test_debias_unary_rejects_uninformative_flip_probability(q: float) -> None:
    with pytest.raises(ParameterError, match=f"flip probability must be in \\[0, 0.5\\) .*got {q}"):
        debias_unary_counts(np.zeros(3, dtype=np.int64), 10, q)


@pytest.mark.parametrize(("keep", "other"), [(0.2, 0.4), (1 / 3, 1 / 3)])
def test_debias_direct_rejects_keep_not_above_other(keep: float, other: float) -> None:
    with pytest.raises(ParameterError, match=r"keep probability .* must exceed"):
        debias_direct_counts(np.zeros(3, dtype=np.int64), 10, keep, other)


def test_direct_variance_against_fractions() -> None:
    n, keep, other = 500, 0.6, 0.2
    counts = [300, 150, 50, 0, 500]
    got = direct_variance(np.array(counts, dtype=np.float64), n, keep, other)
    p, q = Fraction(keep), Fraction(other)
    exact = [float((c * p * (1 - p) + (n - c) * q * (1 - q)) / (p - q) ** 2) for c in counts]
    np.testing.assert_allclose(got, exact, rtol=1e-14)


def test_debias_direct_inverts_the_expectation_and_plugs_in_clipped_counts() -> None:
    n, keep, other = 1000, 0.7, 0.1
    truth = np.array([700.0, 200.0, 100.0, 0.0])
    expected_reports = (keep - other) * truth + n * other
    estimate = debias_direct_counts(expected_reports, n, keep, other)  # type: ignore[arg-type]
    np.testing.assert_allclose(estimate.counts, truth, rtol=0, atol=1e-9)
    skewed = debias_direct_counts(np.array([0, 0, 1000]), n, keep, other)
    assert skewed.counts[0] < 0
    assert skewed.counts[2] > n
    np.testing.assert_array_equal(  # ... but the plug-in variance uses clipped counts
        skewed.variances, direct_variance(np.clip(skewed.counts, 0, n), n, keep, other)
    )


def test_frequency_estimate_properties() -> None:
    estimate = FrequencyEstimate(np.array([30.0, 70.0]), np.array([4.0, 9.0]), 100)
    np.testing.assert_array_equal(estimate.std_errors, [2.0, 3.0])
    np.testing.assert_array_equal(estimate.frequencies, [0.3, 0.7])
    np.testing.assert_array_equal(estimate.frequency_std_errors, [0.02, 0.03])
    low, high = estimate.interval(0.95)
    z = normal_quantile(0.95)
    np.testing.assert_array_equal(low, [30.0 - 2.0 * z, 70.0 - 3.0 * z])
    np.testing.assert_array_equal(high, [30.0 + 2.0 * z, 70.0 + 3.0 * z])
    low99, high99 = estimate.interval(0.99)
    assert np.all(low99 < low)
    assert np.all(high99 > high)
    with pytest.raises(ParameterError, match="level must be in"):
        estimate.interval(95)
    empty = FrequencyEstimate(np.zeros(2), np.zeros(2), 0)
    np.testing.assert_array_equal(empty.frequencies, [0.0, 0.0])
