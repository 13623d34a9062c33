"""RAPPOR bit-vector randomized response: parameters, realized privacy, noise law, estimator.

Distributional tests use 2e5 rows (1e5 for k-RAPPOR) and, for the variance, 400 independent
runs of 500 rows; each randomizes in milliseconds. Power statements are for power 0.99 at the
declared false-failure probability (see ``_stats``).
"""

from __future__ import annotations

import datetime
import doctest
import json
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import frameldp.core.mechanisms.rappor as rappor_module
from _stats import (
    P_FAIL,
    assert_binomial,
    assert_independent,
    assert_unbiased,
    assert_variance,
)
from frameldp.core import Domain, RandomSource, Rappor, mechanism_from_spec
from frameldp.core.randomness import PRECISION_BITS
from frameldp.errors import DomainError, FrameLDPError, ParameterError

ONE = 1 << PRECISION_BITS
DOMAIN5 = ["a", "b", "c", "d", "e"]
SEED = 314


def _domain(k: int) -> list[str]:
    return [f"v{j}" for j in range(k)]


def _codes(counts: list[int]) -> np.ndarray:
    """Rows holding value j exactly counts[j] times, interleaved (fixed, no randomness)."""
    codes = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return codes[np.argsort(np.arange(codes.size) * 7919 % codes.size, kind="stable")]


def _unary_variance(n: int, q: Fraction) -> float:
    return float(n * q * (1 - q) / (1 - 2 * q) ** 2)


def _realized_q(mech: Rappor) -> Fraction:
    return Fraction(mech._flip_numerator, ONE)


# --- parameters ----------------------------------------------------------------------------------


def test_exactly_one_of_epsilon_and_f() -> None:
    with pytest.raises(ParameterError, match="exactly one of epsilon and f, got epsilon=None"):
        Rappor(domain=DOMAIN5)
    with pytest.raises(
        ParameterError, match=r"exactly one of epsilon and f, got epsilon=1\.0, f=0\.5"
    ):
        Rappor(1.0, f=0.5, domain=DOMAIN5)


@pytest.mark.parametrize(
    ("epsilon", "message"),
    [
        (0, "epsilon must be > 0 and finite, got 0"),
        (0.0, "epsilon must be > 0 and finite, got 0.0"),
        (-1.0, "epsilon must be > 0 and finite, got -1.0"),
        (math.nan, "epsilon must be > 0 and finite, got nan"),
        (math.inf, "epsilon must be > 0 and finite, got inf"),
        (-math.inf, "epsilon must be > 0 and finite, got -inf"),
        (True, "epsilon must be a number, got True"),
        ("1.0", "epsilon must be a number, got '1.0'"),
        (1j, "epsilon must be a number, got 1j"),
    ],
)
def test_bad_epsilon_raises_naming_it(epsilon: object, message: str) -> None:
    with pytest.raises(ParameterError, match=f"Rappor: {message}"):
        Rappor(epsilon, domain=DOMAIN5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("f", "shown"),
    [
        (0, "0"),
        (0.0, "0.0"),
        (-0.5, "-0.5"),
        (1.0000001, "1.0000001"),
        (2, "2"),
        (math.nan, "nan"),
        (math.inf, "inf"),
        (True, "True"),
        ("0.5", "'0.5'"),
    ],
)
def test_bad_f_raises_naming_it(f: object, shown: str) -> None:
    with pytest.raises(ParameterError, match=f"Rappor: f must be in \\(0, 1\\], got {shown}"):
        Rappor(f=f, domain=DOMAIN5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("max_weight", "message"),
    [
        (0, "max_weight must be an integer >= 1, got 0"),
        (-2, "max_weight must be an integer >= 1, got -2"),
        (True, "max_weight must be an integer >= 1, got True"),
        (1.0, "max_weight must be an integer >= 1, got 1.0"),
        ("2", "max_weight must be an integer >= 1, got '2'"),
        (6, "max_weight must be at most the domain size 5, got 6"),
    ],
)
def test_bad_max_weight_raises_naming_it(max_weight: object, message: str) -> None:
    with pytest.raises(ParameterError, match=f"Rappor: {message}"):
        Rappor(1.0, domain=DOMAIN5, max_weight=max_weight)  # type: ignore[arg-type]


def test_bad_domain_raises_domain_error() -> None:
    with pytest.raises(DomainError, match="at least 2 buckets"):
        Rappor(1.0, domain=["only"])


def test_numpy_parameters_are_accepted() -> None:
    mech = Rappor(np.float64(1.0), domain=DOMAIN5, max_weight=np.int64(2))
    assert mech == Rappor(1.0, domain=DOMAIN5, max_weight=2)
    assert type(mech.epsilon) is float
    assert type(mech.max_weight) is int


# --- realized privacy ----------------------------------------------------------------------------


@pytest.mark.parametrize("max_weight", [1, 2, 3])
@pytest.mark.parametrize("epsilon", [0.05, 0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0])
def test_realized_epsilon_is_at_most_requested_and_close(epsilon: float, max_weight: int) -> None:
    """The realized flip probability is rounded toward more noise, so the reported epsilon
    never exceeds the request; in this range the rounding costs less than 1e-9 relative."""
    mech = Rappor(epsilon, domain=DOMAIN5, max_weight=max_weight)
    assert mech.privacy.epsilon <= epsilon
    assert (epsilon - mech.privacy.epsilon) / epsilon < 1e-9
    assert mech.epsilon == epsilon


@pytest.mark.parametrize("max_weight", [1, 3])
@pytest.mark.parametrize("epsilon", [1e-10, 1e-6, 1e-3, 50.0, 88.0, 200.0, 1e4, 1e300])
def test_realized_epsilon_never_exceeds_requested_at_extremes(
    epsilon: float, max_weight: int
) -> None:
    mech = Rappor(epsilon, domain=DOMAIN5, max_weight=max_weight)
    assert 0 <= mech.privacy.epsilon <= epsilon
    assert 1 <= mech._flip_numerator <= ONE // 2


def _mp_epsilon(mech: Rappor) -> mpmath.mpf:
    """2m ln((1 - q) / q) at the realized q = N / 2**64, to 50 digits."""
    n = mech._flip_numerator
    with mpmath.workdps(50):
        return 2 * mech.max_weight * (mpmath.log(ONE - n) - mpmath.log(n))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 1.0},
        {"epsilon": 0.01, "max_weight": 3},
        {"epsilon": 7.5, "max_weight": 2},
        {"epsilon": 1e4},
        {"f": 0.5},
        {"f": 0.1, "max_weight": 4},
        {"f": 1e-30},
        {"f": 0.999999},
    ],
    ids=str,
)
def test_privacy_epsilon_against_mpmath(kwargs: dict[str, float]) -> None:
    mech = Rappor(domain=DOMAIN5, **kwargs)  # type: ignore[arg-type]
    exact = _mp_epsilon(mech)
    reported = mech.privacy.epsilon
    assert mpmath.mpf(reported) >= exact
    with mpmath.workdps(50):
        assert (mpmath.mpf(reported) - exact) / math.ulp(reported) <= 8
    # The float property is the realized dyadic probability exactly.
    assert Fraction(mech.flip_probability) == _realized_q(mech)
    assert mech.privacy.mechanism == "rappor"
    assert mech.privacy.parameters["flip_probability"] == mech.flip_probability
    assert mech.privacy.delta == 0.0


def test_f_is_rounded_toward_more_noise() -> None:
    for f in (0.1, 1 / 3, 0.755, 1e-30):
        mech = Rappor(f=f, domain=DOMAIN5)
        assert _realized_q(mech) >= Fraction(f) / 2
        assert _realized_q(mech) - Fraction(f) / 2 < Fraction(1, ONE)
        assert mech.f == f  # the request is kept as given


@pytest.mark.parametrize(("epsilon", "max_weight"), [(0.01, 1), (1.0, 1), (1.0, 3), (20.0, 2)])
def test_epsilon_realizes_the_keep_probability_rounded_toward_noise(
    epsilon: float, max_weight: int
) -> None:
    """q = 1 / (1 + e^{epsilon / (2m)}) (mpmath), realized at or above it (more noise) by at
    most the documented relative float margin 2**-40 plus one grid step 2**-64."""
    mech = Rappor(epsilon, domain=DOMAIN5, max_weight=max_weight)
    q = _realized_q(mech)
    with mpmath.workdps(50):
        exact = 1 / (1 + mpmath.exp(mpmath.mpf(epsilon) / (2 * max_weight)))
        realized = mpmath.mpf(q.numerator) / q.denominator
        assert realized >= exact
        assert realized <= exact * (1 + mpmath.mpf(2) ** -39) + mpmath.mpf(2) ** -64
    assert mech.f == 2 * mech.flip_probability


def test_f_one_is_uniform_noise_with_epsilon_zero() -> None:
    mech = Rappor(f=1.0, domain=DOMAIN5)
    assert mech.flip_probability == 0.5
    assert mech.privacy.epsilon == 0.0
    reports = mech.randomize(mech.encode(np.arange(5)), source=RandomSource.from_seed(1), label="x")
    with pytest.raises(
        ParameterError, match=r"flip probability must be in \[0, 0\.5\) .* got 0\.5"
    ):
        mech.estimate(reports)


@pytest.mark.parametrize("kwargs", [{"f": 1.0}, {"epsilon": 1e-9}], ids=str)
def test_epsilon_to_zero_is_uniform_and_independent_of_input(kwargs: dict[str, float]) -> None:
    """Report bits are Bernoulli(1/2) whatever the input: binomial test of the ones among
    2e6 report bits and a 2x2 independence test of (input bit, report bit), P_FAIL / 2 each.
    For epsilon = 1e-9 the true bit probability differs from 1/2 by 1.25e-10, which moves the
    binomial statistic by 3.5e-7 standard errors: negligible against the bound of 5.0.

    Power 0.99 against a bit probability off 1/2 by 2.6e-3, or a dependence on the input of
    correlation 5.2e-3 (non-centrality 54.1 for 1 df)."""
    mech = Rappor(domain=_domain(10), **kwargs)  # type: ignore[arg-type]
    n, k = 200_000, 10
    codes = np.arange(n, dtype=np.int64) % k
    inputs = np.unpackbits(mech.encode(codes), axis=1, count=k)
    reports = mech.randomize(mech.encode(codes), source=RandomSource.from_seed(SEED), label="u")
    bits = np.unpackbits(reports, axis=1, count=k)
    assert_binomial(bits.sum(), n * k, 0.5, p_fail=P_FAIL / 2)
    assert_independent(inputs, bits, p_fail=P_FAIL / 2)


@pytest.mark.parametrize("max_weight", [1, 3])
@pytest.mark.parametrize("epsilon", [1e-13, 1e-12])
def test_epsilon_too_small_to_realize_raises(epsilon: float, max_weight: int) -> None:
    """An epsilon whose flip probability rounds (toward more noise) to exactly 1/2 is refused
    up front, as RandomizedResponse does, instead of silently becoming f = 1."""
    with pytest.raises(
        ParameterError,
        match=f"Rappor: epsilon={epsilon!r} is too small to realize with max_weight={max_weight};",
    ):
        Rappor(epsilon, domain=DOMAIN5, max_weight=max_weight)


@pytest.mark.parametrize("epsilon", [1e4, 1e300])
def test_huge_epsilon_is_identity(epsilon: float) -> None:
    """The flip probability is the smallest positive dyadic, 2**-64: all 1.3e6 bits survive
    except with probability 1.3e6 * 2**-64 < 1e-13 < P_FAIL."""
    mech = Rappor(epsilon, domain=_domain(13))
    assert mech._flip_numerator == 1
    codes = np.arange(100_000, dtype=np.int64) % 13
    bits = mech.encode(codes)
    reports = mech.randomize(bits, source=RandomSource.from_seed(SEED), label="id")
    np.testing.assert_array_equal(reports, bits)
    np.testing.assert_array_equal(mech.estimate(reports).counts, np.bincount(codes))


# --- noise law and estimator ---------------------------------------------------------------------


def test_report_bits_flip_with_the_realized_probability() -> None:
    """P[report bit = 1 | input bit 1] = 1 - q and P[report bit = 1 | input bit 0] = q, by exact
    binomial tests on 2e5 set and 1.8e6 unset bits (eps = 1, q = 0.3775; Bonferroni, P_FAIL / 2
    each). Power 0.99 against |Δ| >= 8.0e-3 on set bits and 2.7e-3 on unset bits, e.g. a
    sampler flipping with probability f instead of the f/2 the estimator and accountant use."""
    k, n = 10, 200_000
    mech = Rappor(1.0, domain=_domain(k))
    q = float(_realized_q(mech))
    codes = np.arange(n, dtype=np.int64) % k
    inputs = np.unpackbits(mech.encode(codes), axis=1, count=k).astype(bool)
    reports = mech.randomize(mech.encode(codes), source=RandomSource.from_seed(SEED), label="law")
    bits = np.unpackbits(reports, axis=1, count=k).astype(bool)
    assert_binomial(bits[inputs].sum(), inputs.sum(), 1 - q, p_fail=P_FAIL / 2)
    assert_binomial(bits[~inputs].sum(), (~inputs).sum(), q, p_fail=P_FAIL / 2)


TRUE_COUNTS = [60_000, 40_000, 30_000, 20_000, 20_000, 10_000, 10_000, 6_000, 3_000, 1_000]


@pytest.mark.parametrize("kwargs", [{"epsilon": 2.0}, {"f": 0.3}], ids=str)
def test_estimate_is_unbiased_per_bucket(kwargs: dict[str, float]) -> None:
    """|ĉ_j - c_j| / σ < z for each of k = 10 buckets, σ² = n q (1 - q) / (1 - 2q)² at the
    realized q; Bonferroni over the buckets (P_FAIL / 10 each, z = 5.33). n = 2e5 rows.
    Power 0.99 against a bias of 7.7 σ per bucket: 3.3e3 counts (1.6% of n) at eps = 2,
    1.7e3 at f = 0.3 — e.g. debiasing with f instead of f/2."""
    k = len(TRUE_COUNTS)
    mech = Rappor(domain=_domain(k), **kwargs)  # type: ignore[arg-type]
    codes = _codes(TRUE_COUNTS)
    n = codes.size
    reports = mech.randomize(mech.encode(codes), source=RandomSource.from_seed(SEED), label="ub")
    estimate = mech.estimate(reports)
    variance = _unary_variance(n, _realized_q(mech))
    # The reported variance is the analytic one (up to float evaluation order).
    np.testing.assert_allclose(estimate.variances, variance, rtol=1e-14)
    assert estimate.n == n
    assert_unbiased(estimate.counts, TRUE_COUNTS, variance, p_fail=P_FAIL / k)


def test_estimate_variance_over_independent_runs() -> None:
    """400 runs under different labels (independent streams), 500 rows, k = 20, eps = 1
    (q = 0.3775, σ² = 1959 per bucket): the 8000 standardized errors (ĉ - c)² / σ² about the
    true counts sum to a chi-square with 8000 df (bucket estimates are independent, each a sum
    of 500 independent bits: normal up to an excess kurtosis of 0.004). Two-sided at P_FAIL.
    Power 0.99 against a true variance 12% above or 11% below n q (1 - q) / (1 - 2q)² — for
    instance the naive n q (1 - q) (16x smaller) or noise shared between buckets."""
    k, n, runs = 20, 500, 400
    mech = Rappor(1.0, domain=_domain(k))
    codes = np.arange(n, dtype=np.int64) % k
    truth = np.bincount(codes, minlength=k)
    bits = mech.encode(codes)
    source = RandomSource.from_seed(SEED)
    errors = np.empty((runs, k))
    for run in range(runs):
        reports = mech.randomize(bits, source=source, label=f"run{run}")
        errors[run] = mech.estimate(reports).counts - truth
    assert_variance(errors, _unary_variance(n, _realized_q(mech)), p_fail=P_FAIL)


def test_k_rappor_is_unbiased() -> None:
    """Sets of up to max_weight = 3 of k = 12 values (duplicates counted once), eps = 2 split
    over 2m = 6 bits (q = 0.4174): ĉ_j is unbiased for the number of rows holding j.
    Bonferroni over 12 buckets (P_FAIL / 12 each, z = 5.36), n = 1e5. Power 0.99 against a
    bias of 7.7 σ = 7.3e3 counts per bucket, e.g. from randomizing and debiasing with flip
    probabilities 0.012 apart, or from an encoding that drops repeated or third items."""
    k, m, n = 12, 3, 100_000
    mech = Rappor(2.0, domain=_domain(k), max_weight=m)
    rows = np.arange(n, dtype=np.int64)
    cells = [rows % k, (rows * 5 + 1) % k, (rows * rows) % 7]  # repeats within a row happen
    lengths = rows % 4  # 0..3 items per row
    items = [[int(cells[i][r]) for i in range(lengths[r])] for r in range(0, n)]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    codes = np.array([c for cell in items for c in cell], dtype=np.int64)
    truth = np.zeros(k, dtype=np.int64)
    for cell in items:
        for value in set(cell):
            truth[value] += 1
    bits = mech.encode_sets(offsets, codes)
    np.testing.assert_array_equal(np.unpackbits(bits, axis=1, count=k).sum(0), truth)
    reports = mech.randomize(bits, source=RandomSource.from_seed(SEED), label="sets")
    estimate = mech.estimate(reports)
    q = _realized_q(mech)
    with mpmath.workdps(30):
        expected_q = 1 / (1 + mpmath.exp(mpmath.mpf(2) / (2 * m)))
        assert mpmath.mpf(q.numerator) / q.denominator >= expected_q
    assert_unbiased(estimate.counts, truth, _unary_variance(n, q), p_fail=P_FAIL / k)


def test_encode_sets_rejects_too_many_items() -> None:
    mech = Rappor(1.0, domain=_domain(6), max_weight=2)
    with pytest.raises(DomainError, match="column 'tags': row 1 holds 3 distinct items"):
        mech.encode_sets(np.array([0, 1, 4]), np.array([0, 1, 2, 3]), column="tags")


# --- reproducibility -----------------------------------------------------------------------------


@pytest.mark.parametrize("k", [5, 13, 64])
def test_randomize_chunk_invariance(k: int) -> None:
    mech = Rappor(1.0, domain=_domain(k))
    codes = (np.arange(5001, dtype=np.int64) * 31) % k
    bits = mech.encode(codes)
    source = RandomSource.from_seed(SEED)
    whole = mech.randomize(bits, source=source, label="col")
    for cut in (1, 1233, 4999):
        first = mech.randomize(bits[:cut], source=source, label="col")
        second = mech.randomize(bits[cut:], source=source, label="col", row_start=cut)
        np.testing.assert_array_equal(np.concatenate([first, second]), whole)
    middle = mech.randomize(bits[17:2021], source=source, label="col", row_start=17)
    np.testing.assert_array_equal(middle, whole[17:2021])


def test_same_key_same_reports_and_different_labels_keys_or_specs_differ() -> None:
    mech = Rappor(1.0, domain=_domain(16))
    bits = mech.encode(np.arange(2000, dtype=np.int64) % 16)
    key = bytes(range(32))
    base = mech.randomize(bits, source=RandomSource.from_key(key), label="col")
    again = mech.randomize(bits, source=RandomSource.from_key(key), label="col")
    np.testing.assert_array_equal(base, again)
    variants = [
        mech.randomize(bits, source=RandomSource.from_key(key), label="col2"),
        mech.randomize(bits, source=RandomSource.from_key(bytes(32)), label="col"),
        Rappor(1.0 + 1e-12, domain=_domain(16)).randomize(
            bits, source=RandomSource.from_key(key), label="col"
        ),
    ]
    # Two independent runs agree on all 32000 bits with probability (q² + (1-q)²)**32000.
    for other in variants:
        assert not np.array_equal(other, base)


def test_randomize_rejects_wrong_shape_and_does_not_modify_input() -> None:
    mech = Rappor(1.0, domain=_domain(13))
    source = RandomSource.from_seed(1)
    with pytest.raises(ParameterError, match="bits must have shape \\(n, 2\\), got \\(4, 3\\)"):
        mech.randomize(np.zeros((4, 3), dtype=np.uint8), source=source, label="x")
    bits = mech.encode(np.arange(13, dtype=np.int64))
    before = bits.copy()
    mech.randomize(bits, source=source, label="x")
    np.testing.assert_array_equal(bits, before)
    with pytest.raises(ParameterError, match="reports must have shape"):
        mech.estimate(np.zeros((4, 3), dtype=np.uint8))


@pytest.mark.parametrize(
    "mech",
    [
        Rappor(1.0, domain=DOMAIN5),
        Rappor(f=0.3, domain=DOMAIN5, max_weight=2),
        Rappor(3.0, domain=Domain((1, 2.5, 7), unknown="other", nulls="category"), max_weight=3),
    ],
    ids=["epsilon", "f", "policies"],
)
def test_spec_round_trip_realizes_identical_reports(mech: Rappor) -> None:
    text = json.dumps(mech.to_spec())
    for rebuilt in (mechanism_from_spec(text), mechanism_from_spec(json.loads(text))):
        assert isinstance(rebuilt, Rappor)
        assert rebuilt == mech
        assert rebuilt.privacy == mech.privacy
        assert rebuilt.flip_probability == mech.flip_probability
        bits = mech.encode(np.arange(3000, dtype=np.int64) % mech.num_bits)
        source = RandomSource.from_seed(SEED)
        np.testing.assert_array_equal(
            rebuilt.randomize(bits, source=source, label="c"),
            mech.randomize(bits, source=source, label="c"),
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 1.0, "domain": list(np.arange(3))},
        {"f": Fraction(1, 2), "domain": DOMAIN5},
        {"f": np.float32(0.5), "domain": DOMAIN5},
        {"f": np.float64(0.5), "domain": DOMAIN5},
        {"epsilon": 1.0, "domain": np.array(["a", "b"])},
    ],
    ids=[
        "numpy-int-categories",
        "fraction-f",
        "float32-f",
        "float64-f",
        "numpy-str-categories",
    ],
)
def test_accepted_parameters_can_randomize(kwargs: dict[str, object]) -> None:
    """A mechanism that constructs without error randomizes without error (rejecting the
    parameters up front with a frameldp error would also satisfy this)."""
    try:
        mech = Rappor(**kwargs)  # type: ignore[arg-type]
    except FrameLDPError:
        return
    bits = mech.encode(np.arange(mech.num_bits, dtype=np.int64))
    reports = mech.randomize(bits, source=RandomSource.from_seed(1), label="x")
    assert reports.shape == bits.shape


def test_non_json_scalar_categories_raise_at_construction_naming_the_type() -> None:
    with pytest.raises(
        DomainError,
        match=r"domain categories must be str, int, float or bool .*got "
        r"datetime\.date\(2024, 1, 1\) of type date at position 0$",
    ):
        Rappor(1.0, domain=[datetime.date(2024, 1, d) for d in (1, 2)])


def test_numpy_integer_categories_become_python_ints() -> None:
    mech = Rappor(1.0, domain=list(np.arange(3)))
    assert mech.domain.categories == (0, 1, 2)
    assert all(type(c) is int for c in mech.domain.categories)
    assert json.loads(json.dumps(mech.to_spec()))["domain"]["categories"] == [0, 1, 2]


@pytest.mark.parametrize("f", [Fraction(1, 2), np.float32(0.5), np.float64(0.5)], ids=repr)
def test_real_f_is_stored_as_a_float(f: object) -> None:
    mech = Rappor(f=f, domain=DOMAIN5)  # type: ignore[arg-type]
    assert type(mech.f) is float
    assert mech.f == 0.5
    assert mech.flip_probability == 0.25
    assert mech.to_spec()["f"] == 0.5


def test_unknown_mechanism_in_spec_raises() -> None:
    with pytest.raises(ParameterError, match="unknown mechanism in spec: 'laplace'"):
        mechanism_from_spec({"mechanism": "laplace"})


def test_module_has_doctests() -> None:
    """The examples run as doctests in CI (--doctest-modules); here only their presence."""
    tests = doctest.DocTestFinder().find(rappor_module)
    assert sum(len(test.examples) for test in tests) >= 2
