"""Statistical assertions shared by the core tests, each at a declared false-failure probability.

Every helper takes ``p_fail``: the probability that the assertion fails although the code under
test is correct. Tests pass :data:`P_FAIL`, divided by the number of simultaneous assertions
(Bonferroni) where one test checks many buckets at once. Power statements in the tests' docstrings
are for power 0.99 at that ``p_fail``, computed with ``scipy.stats`` (normal and non-central
chi-square laws); :func:`detectable_shift` and :func:`detectable_noncentrality` reproduce them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

P_FAIL = 1e-6  # chance this assertion fails when the code is correct
POWER = 0.99  # probability with which the shifts named in the docstrings are detected


def z_bound(p_fail: float) -> float:
    """Two-sided standard normal bound ``z`` with ``P(|Z| > z) = p_fail``."""
    return float(stats.norm.isf(p_fail / 2))


def detectable_shift(p_fail: float, power: float = POWER) -> float:
    """Shift, in standard errors, that a two-sided z test at ``p_fail`` detects with ``power``."""
    return z_bound(p_fail) + float(stats.norm.isf(1 - power))


def detectable_noncentrality(df: int, p_fail: float, power: float = POWER) -> float:
    """Non-centrality a chi-square test with ``df`` degrees of freedom detects with ``power``."""
    critical = stats.chi2.isf(p_fail, df)
    low, high = 0.0, 1e5
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if stats.ncx2.sf(critical, df, middle) < power else (low, middle)
    return high


def assert_binomial(successes: Any, trials: Any, probability: float, *, p_fail: float) -> None:
    """Exact two-sided binomial test of ``successes`` out of ``trials`` at ``probability``."""
    result = stats.binomtest(int(successes), int(trials), probability)
    assert result.pvalue > p_fail, (
        f"{int(successes)} of {int(trials)} is not Binomial(n, {probability}): "
        f"p-value {result.pvalue:.3g} <= {p_fail:.3g}"
    )


def assert_chisquare(counts: ArrayLike, probabilities: ArrayLike, *, p_fail: float) -> None:
    """Pearson goodness-of-fit test of ``counts`` against cell ``probabilities``."""
    observed = np.asarray(counts, dtype=np.float64)
    expected = observed.sum() * np.asarray(probabilities, dtype=np.float64)
    pvalue = stats.chisquare(observed, expected).pvalue
    assert pvalue > p_fail, f"counts do not fit: chi-square p-value {pvalue:.3g} <= {p_fail:.3g}"


def assert_independent(x: ArrayLike, y: ArrayLike, *, p_fail: float) -> None:
    """Chi-square test of independence of two 0/1 samples (2x2 contingency table)."""
    a = np.asarray(x, dtype=np.int64).ravel()
    b = np.asarray(y, dtype=np.int64).ravel()
    table = np.bincount(2 * a + b, minlength=4).reshape(2, 2)
    pvalue = stats.chi2_contingency(table, correction=False).pvalue
    assert pvalue > p_fail, f"bits are dependent: table {table.tolist()}, p-value {pvalue:.3g}"


def assert_unbiased(
    estimates: ArrayLike, truth: ArrayLike, variances: ArrayLike, *, p_fail: float
) -> None:
    """Every ``|estimate - truth| / sqrt(variance)`` is below ``z_bound(p_fail)``.

    ``p_fail`` applies to each entry: callers checking ``k`` entries pass ``P_FAIL / k``.
    """
    error = np.asarray(estimates, dtype=np.float64) - np.asarray(truth, dtype=np.float64)
    standardized = np.abs(error) / np.sqrt(np.asarray(variances, dtype=np.float64))
    bound = z_bound(p_fail)
    worst = int(np.argmax(standardized))
    assert standardized.max() < bound, (
        f"bucket {worst} is {standardized[worst]:.2f} standard errors off (bound {bound:.2f})"
    )


def assert_variance(errors: ArrayLike, variances: ArrayLike, *, p_fail: float) -> None:
    """Two-sided chi-square test that independent ``errors`` (about a known mean) have
    ``variances``: ``sum(errors**2 / variances)`` is chi-square with ``errors.size`` degrees of
    freedom when the errors are normal."""
    error = np.asarray(errors, dtype=np.float64).ravel()
    variance = np.broadcast_to(np.asarray(variances, dtype=np.float64), error.shape)
    statistic = float(np.sum(error**2 / variance))
    df = error.size
    low, high = stats.chi2.cdf(statistic, df), stats.chi2.sf(statistic, df)
    assert min(low, high) > p_fail / 2, (
        f"variance ratio {statistic / df:.4f} over {df} draws: "
        f"two-sided p-value {2 * min(low, high):.3g} <= {p_fail:.3g}"
    )
