"""k-ary randomized response: parameters, realized privacy, report law, estimator."""

from __future__ import annotations

import doctest
import json
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import frameldp.core.mechanisms.randomized_response as rr_module
from _stats import P_FAIL, assert_chisquare, assert_unbiased, assert_variance
from frameldp.core import Domain, RandomizedResponse, RandomSource, mechanism_from_spec
from frameldp.core.estimation import direct_variance
from frameldp.core.randomness import PRECISION_BITS
from frameldp.errors import DomainError, ParameterError

ONE = 1 << PRECISION_BITS
SEED = 2718


def _domain(k: int) -> list[str]:
    return [f"v{j}" for j in range(k)]


def _realized(mech: RandomizedResponse) -> tuple[Fraction, Fraction]:
    """Exact realized (p, q): keep the value, report one given other value."""
    move = Fraction(mech._move_numerator, ONE)
    return 1 - move, move / (mech.num_buckets - 1)


def _codes(counts: list[int]) -> np.ndarray:
    codes = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return codes[np.argsort(np.arange(codes.size) * 7919 % codes.size, kind="stable")]


# --- parameters ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "message"),
    [
        (0, "epsilon must be > 0 and finite, got 0"),
        (-0.5, "epsilon must be > 0 and finite, got -0.5"),
        (math.nan, "epsilon must be > 0 and finite, got nan"),
        (math.inf, "epsilon must be > 0 and finite, got inf"),
        (True, "epsilon must be a number, got True"),
        ("2", "epsilon must be a number, got '2'"),
        (None, "epsilon must be a number, got None"),
    ],
)
def test_bad_epsilon_raises_naming_it(epsilon: object, message: str) -> None:
    with pytest.raises(ParameterError, match=f"RandomizedResponse: {message}"):
        RandomizedResponse(epsilon, domain=_domain(3))  # type: ignore[arg-type]


def test_bad_domain_raises_domain_error() -> None:
    with pytest.raises(DomainError, match="twice"):
        RandomizedResponse(1.0, domain=["a", "a"])


@pytest.mark.parametrize("k", [2, 3, 7, 8, 1000])
@pytest.mark.parametrize("epsilon", [1e-30, 1e-20])
def test_epsilon_too_small_to_realize_raises(k: int, epsilon: float) -> None:
    """Rounded toward more noise, the move probability would reach (k - 1) / k (uniform
    reports) for every k, a power of 2 or not: an error, never a less noisy cap."""
    with pytest.raises(
        ParameterError, match=f"epsilon={epsilon!r} is too small to realize for k={k};"
    ):
        RandomizedResponse(epsilon, domain=_domain(k))


@pytest.mark.parametrize(
    ("k", "epsilon"),
    [
        (k, epsilon)
        for k in (2, 3, 7, 1000)
        for epsilon in (1e-9, 1e-6, 0.01, 0.5, 1.0, 3.0, 10.0, 40.0)
    ],
)
def test_realized_epsilon_at_most_requested_and_equal_to_mpmath(k: int, epsilon: float) -> None:
    """privacy.epsilon is ln(p / q) of the realized dyadic probabilities (50-digit mpmath),
    rounded up by a few ulps, and never above the request."""
    mech = RandomizedResponse(epsilon, domain=_domain(k))
    p, q = _realized(mech)
    with mpmath.workdps(50):
        exact = mpmath.log(mpmath.mpf(p.numerator) * q.denominator) - mpmath.log(
            mpmath.mpf(q.numerator) * p.denominator
        )
        reported = mech.privacy.epsilon
        assert mpmath.mpf(reported) >= exact
        assert (mpmath.mpf(reported) - exact) / math.ulp(reported) <= 8
    assert reported <= epsilon
    assert mech.privacy.mechanism == "randomized_response"
    assert mech.privacy.parameters == {"num_buckets": k, "keep_probability": mech.keep_probability}


@pytest.mark.parametrize(("k", "epsilon"), [(2, 1.0), (3, 0.5), (1000, 5.0), (7, 20.0)])
def test_keep_probability_against_mpmath(k: int, epsilon: float) -> None:
    """p = e^eps / (e^eps + k - 1), realized at or below it (more noise) by at most the
    relative float margin 2**-40 on the move probability plus one grid step."""
    mech = RandomizedResponse(epsilon, domain=_domain(k))
    p, q = _realized(mech)
    assert p + (k - 1) * q == 1
    with mpmath.workdps(50):
        e = mpmath.exp(mpmath.mpf(epsilon))
        exact_move = (k - 1) / (e + k - 1)
        move = mpmath.mpf(mech._move_numerator) / ONE
        assert move >= exact_move
        assert move <= exact_move * (1 + mpmath.mpf(2) ** -39) + mpmath.mpf(2) ** -64
    assert mech.keep_probability == float(p)
    assert abs(Fraction(mech.other_probability) - q) <= Fraction(math.ulp(float(q)))


# --- report law and estimator --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "epsilon", "value"),
    [(2, 1.0, 0), (2, 1.0, 1), (7, 1.5, 3), (7, 1.5, 6), (1000, 5.0, 0), (1000, 5.0, 999)],
)
def test_report_given_true_value_is_p_then_q(k: int, epsilon: float, value: int) -> None:
    """Chi-square over the k outcomes of 2e5 reports of one true value: the value itself with
    the realized p, each other with q (P_FAIL). Power 0.99 against 2e5 * χ²-divergence >= λ
    (λ = 52.1, 66.6, 360 for k = 2, 7, 1000): p off by 7.2e-3 (k=2, p=0.73), 9.0e-3 (k=7,
    p=0.43) or 1.4e-2 (k=1000, p=0.13), the others compensating; for k = 1000 a single other
    value must be off by 1.4 times its q = 8.7e-4. Moving to u instead of u + (u >= value)
    (the true value reported (1 - p) / (k - 1) too often, one other value never) is caught."""
    n = 200_000
    mech = RandomizedResponse(epsilon, domain=_domain(k))
    p, q = _realized(mech)
    codes = np.full(n, value, dtype=np.int64)
    reports = mech.randomize(codes, source=RandomSource.from_seed(SEED), label=f"law{value}")
    assert reports.dtype == np.int64
    assert reports.min() >= 0
    assert reports.max() < k
    probabilities = np.full(k, float(q))
    probabilities[value] = float(p)
    assert_chisquare(np.bincount(reports, minlength=k), probabilities, p_fail=P_FAIL)


@pytest.mark.parametrize(
    ("counts", "epsilon"),
    [
        ([150_000, 50_000], 0.5),
        ([80_000, 50_000, 30_000, 20_000, 10_000, 7_000, 3_000], 1.0),
        ([200] * 1000, 5.0),
    ],
    ids=["k2", "k7", "k1000"],
)
def test_estimate_is_unbiased_per_bucket(counts: list[int], epsilon: float) -> None:
    """|ĉ_j - c_j| / σ_j < z for every bucket, σ_j² = (c_j p(1-p) + (n - c_j) q(1-q)) / (p-q)²
    at the true counts and realized p, q; Bonferroni over the k buckets (P_FAIL / k each:
    z = 5.03, 5.26, 6.11 for k = 2, 7, 1000). n = 2e5. Power 0.99 against a bias in one bucket
    of 7.4 σ = 6.5e3 counts (k=2, eps=0.5), 7.6 σ = 5.5e3 to 6.6e3 (k=7), 8.4 σ = 920 (k=1000,
    0.5% of n) — e.g. debiasing with the requested instead of the realized p, q at a coarser
    grid, or the unary estimator (Y - n q) / (1 - 2q)."""
    k, n = len(counts), sum(counts)
    mech = RandomizedResponse(epsilon, domain=_domain(k))
    p, q = _realized(mech)
    truth = np.array(counts)
    reports = mech.randomize(_codes(counts), source=RandomSource.from_seed(SEED), label="ub")
    estimate = mech.estimate(reports)
    variance = [float((c * p * (1 - p) + (n - c) * q * (1 - q)) / (p - q) ** 2) for c in counts]
    np.testing.assert_allclose(
        direct_variance(truth, n, mech.keep_probability, mech.other_probability),
        variance,
        rtol=1e-12,  # float evaluation of the same closed form; p - q loses <= 3 digits
    )
    assert estimate.n == n
    assert_unbiased(estimate.counts, truth, variance, p_fail=P_FAIL / k)


def test_direct_variance_matches_independent_runs() -> None:
    """2000 runs under different labels, 500 rows, k = 3, eps = 1, true counts (300, 150, 50).
    For each bucket, sum over runs of (ĉ - c)² / direct_variance(c) is chi-square with 2000 df
    (runs are independent; each ĉ is a sum of 500 independent rows, normal up to an excess
    kurtosis below 0.01). Two-sided, Bonferroni over the 3 buckets (P_FAIL / 3 each).
    Power 0.99 against a true variance 26% above or 21% below the formula."""
    counts, n, runs = [300, 150, 50], 500, 2000
    mech = RandomizedResponse(1.0, domain=_domain(3))
    codes = _codes(counts)
    truth = np.array(counts, dtype=np.float64)
    source = RandomSource.from_seed(SEED)
    errors = np.empty((runs, 3))
    for run in range(runs):
        reports = mech.randomize(codes, source=source, label=f"run{run}")
        errors[run] = mech.estimate(reports).counts - truth
    variances = direct_variance(truth, n, mech.keep_probability, mech.other_probability)
    for bucket in range(3):
        assert_variance(errors[:, bucket], variances[bucket], p_fail=P_FAIL / 3)


def test_reported_variance_is_plug_in_of_clipped_estimate() -> None:
    mech = RandomizedResponse(1.0, domain=_domain(3))
    reports = mech.randomize(
        np.zeros(50, dtype=np.int64), source=RandomSource.from_seed(1), label="plug"
    )
    estimate = mech.estimate(reports)
    clipped = np.clip(estimate.counts, 0, 50)
    np.testing.assert_array_equal(
        estimate.variances,
        direct_variance(clipped, 50, mech.keep_probability, mech.other_probability),
    )


def test_epsilon_to_zero_is_near_uniform() -> None:
    """eps = 1e-6, k = 7: every report value has probability 1/7 up to 1.3e-7, which moves the
    chi-square statistic of 2e5 reports by ~1e-7: the test against exactly uniform keeps its
    P_FAIL. Power 0.99 against one value off by 6.4e-3 (4.5% of 1/7)."""
    mech = RandomizedResponse(1e-6, domain=_domain(7))
    codes = np.zeros(200_000, dtype=np.int64)
    reports = mech.randomize(codes, source=RandomSource.from_seed(SEED), label="flat")
    assert_chisquare(np.bincount(reports, minlength=7), np.full(7, 1 / 7), p_fail=P_FAIL)


@pytest.mark.parametrize("k", [2, 7, 1000])
def test_huge_epsilon_is_identity(k: int) -> None:
    """Move probability 2**-64: 1e5 rows all keep their value except with probability
    1e5 * 2**-64 < P_FAIL."""
    mech = RandomizedResponse(1e4, domain=_domain(k))
    assert mech._move_numerator == 1
    codes = np.arange(100_000, dtype=np.int64) % k
    reports = mech.randomize(codes, source=RandomSource.from_seed(SEED), label="id")
    np.testing.assert_array_equal(reports, codes)


# --- reproducibility and input checks ------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 7, 1000])
def test_randomize_chunk_invariance(k: int) -> None:
    mech = RandomizedResponse(1.0, domain=_domain(k))
    codes = (np.arange(7001, dtype=np.int64) * 13) % k
    source = RandomSource.from_seed(SEED)
    whole = mech.randomize(codes, source=source, label="col")
    for cut in (1, 2049, 6999):
        first = mech.randomize(codes[:cut], source=source, label="col")
        second = mech.randomize(codes[cut:], source=source, label="col", row_start=cut)
        np.testing.assert_array_equal(np.concatenate([first, second]), whole)
    middle = mech.randomize(codes[33:4097], source=source, label="col", row_start=33)
    np.testing.assert_array_equal(middle, whole[33:4097])


def test_labels_keys_and_specs_separate_noise() -> None:
    mech = RandomizedResponse(0.5, domain=_domain(5))
    codes = np.arange(3000, dtype=np.int64) % 5
    key = bytes(range(32))
    base = mech.randomize(codes, source=RandomSource.from_key(key), label="col")
    np.testing.assert_array_equal(
        base, mech.randomize(codes, source=RandomSource.from_key(key), label="col")
    )
    # Independent runs agree on all 3000 rows with probability below 0.7**3000.
    for other in (
        mech.randomize(codes, source=RandomSource.from_key(key), label="col2"),
        mech.randomize(codes, source=RandomSource.from_key(bytes(32)), label="col"),
        RandomizedResponse(0.5, domain=[*_domain(5), "x"]).randomize(
            codes, source=RandomSource.from_key(key), label="col"
        ),
    ):
        assert not np.array_equal(other, base)


@pytest.mark.parametrize(
    ("codes", "message"),
    [
        ([0, -1], r"codes must be in \[0, 5\), got -1 at position 1$"),
        ([0, 5], r"codes must be in \[0, 5\), got 5 at position 1$"),
        ([7], r"codes must be in \[0, 5\), got 7 at position 0$"),
        ([[0, 1]], r"codes must be one-dimensional, got shape \(1, 2\)$"),
    ],
)
def test_codes_outside_domain_or_not_1d_raise(codes: list[object], message: str) -> None:
    mech = RandomizedResponse(1.0, domain=_domain(5))
    with pytest.raises(ParameterError, match=message):
        mech.randomize(np.array(codes), source=RandomSource.from_seed(1), label="x")


def test_randomize_does_not_modify_input_and_handles_empty() -> None:
    mech = RandomizedResponse(1.0, domain=_domain(4))
    codes = np.arange(40, dtype=np.int64) % 4
    before = codes.copy()
    mech.randomize(codes, source=RandomSource.from_seed(1), label="x")
    np.testing.assert_array_equal(codes, before)
    empty = mech.randomize(
        np.array([], dtype=np.int64), source=RandomSource.from_seed(1), label="x"
    )
    assert empty.shape == (0,)
    with pytest.raises(ParameterError, match="n=0"):
        mech.estimate(empty)


@pytest.mark.parametrize(
    "mech",
    [
        RandomizedResponse(2.0, domain=["AA", "DL", "UA"]),
        RandomizedResponse(0.7, domain=Domain((1, 2.5), unknown="other", nulls="category")),
        RandomizedResponse(1.0, domain=[True, False]),
    ],
    ids=["plain", "policies", "bool-categories"],
)
def test_spec_round_trip_realizes_identical_reports(mech: RandomizedResponse) -> None:
    text = json.dumps(mech.to_spec())
    rebuilt = mechanism_from_spec(text)
    assert isinstance(rebuilt, RandomizedResponse)
    assert rebuilt == mech
    assert rebuilt.privacy == mech.privacy
    codes = np.arange(2000, dtype=np.int64) % mech.num_buckets
    source = RandomSource.from_seed(SEED)
    np.testing.assert_array_equal(
        rebuilt.randomize(codes, source=source, label="c"),
        mech.randomize(codes, source=source, label="c"),
    )


def test_numpy_integer_domain_can_randomize() -> None:
    mech = RandomizedResponse(1.0, domain=list(np.arange(3)))
    assert mech.domain.categories == (0, 1, 2)
    assert all(type(c) is int for c in mech.domain.categories)  # numpy scalars converted
    codes = np.arange(3, dtype=np.int64)
    assert mech.randomize(codes, source=RandomSource.from_seed(1), label="x").shape == (3,)


def test_module_has_doctests() -> None:
    """The examples run as doctests in CI (--doctest-modules); here only their presence."""
    tests = doctest.DocTestFinder().find(rr_module)
    assert sum(len(test.examples) for test in tests) >= 2
