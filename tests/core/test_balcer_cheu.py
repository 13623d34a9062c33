"""Balcer–Cheu shuffle-model histograms and keyed permutations: parameters against mpmath, the
message law, the estimators, the privacy record, reproducibility and uniform shuffles."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import frameldp.core.mechanisms.balcer_cheu as bc_module
from _stats import P_FAIL, assert_binomial, assert_chisquare, assert_unbiased, assert_variance
from frameldp.accounting import BinomialCountsEvent
from frameldp.core import Domain, RandomSource, mechanism_from_spec
from frameldp.core.mechanisms import Statistic
from frameldp.core.mechanisms._noise import FLOAT_MARGIN
from frameldp.core.mechanisms.balcer_cheu import (
    BalcerCheu,
    binary_sum_analyze,
    binary_sum_gamma,
)
from frameldp.core.randomness import (
    PRECISION_BITS,
    permutation,
    permutation_from_keys,
    sort_keys,
)
from frameldp.errors import ParameterError

ONE = 1 << PRECISION_BITS
SEED = 1911_06879
UNIT = Fraction(1, 2**53)  # unit roundoff of float64
# A float evaluation of 50 ln(2 / delta) / (epsilon^2 n) rounds 2 / delta, log (<= 1 ulp), the
# square and two products/quotients: at most 8 unit roundoffs in all (the log's argument error
# is divided by ln(2 / delta) >= ln 2 > 2/3 when it becomes relative).
GAMMA_FLOAT_ERROR = 8 * UNIT

# (epsilon, delta) pairs; n is set from Balcer and Cheu's condition where a test needs it.
PAIRS = [(2.0, 0.5), (2.0, 1e-9), (1.5, 1e-4), (1.0, 1e-6), (0.5, 1e-3), (0.1, 0.3)]


def _statistic(counts: np.ndarray) -> Statistic:
    """The statistic of messages with these per-bucket counts."""
    return Statistic((np.asarray(counts, dtype=np.int64),), int(np.sum(counts)))


def _domain(k: int) -> list[str]:
    return [f"v{j}" for j in range(k)]


def _codes(n: int, k: int) -> np.ndarray:
    """A skewed, deterministic column: quadratic residues mod k (many buckets empty)."""
    return (np.arange(n, dtype=np.int64) ** 2) % k


def _per_bucket(epsilon: float, delta: float) -> tuple[mpmath.mpf, mpmath.mpf]:
    """Each bucket's (epsilon', delta') = (epsilon / 2, delta / 2), exact in binary."""
    return mpmath.mpf(epsilon) / 2, mpmath.mpf(delta) / 2


def _exact_gamma(epsilon: float, delta: float, n: int) -> mpmath.mpf:
    """Balcer & Cheu's gamma = 50 ln(2 / delta') / (epsilon'^2 n) at the per-bucket parameters."""
    eps_b, delta_b = _per_bucket(epsilon, delta)
    return 50 * mpmath.log(2 / delta_b) / (eps_b**2 * n)


def _exact_needed(epsilon: float, delta: float) -> mpmath.mpf:
    """Balcer & Cheu's validity condition: n >= 100 ln(2 / delta') / epsilon'^2."""
    eps_b, delta_b = _per_bucket(epsilon, delta)
    return 100 * mpmath.log(2 / delta_b) / eps_b**2


def _boundary_n(epsilon: float, delta: float) -> int:
    """The smallest valid n; the test pairs keep the exact bound far from an integer, so the
    mechanism's float evaluation of it has the same ceiling."""
    needed = _exact_needed(epsilon, delta)
    assert abs(needed - mpmath.nint(needed)) > mpmath.mpf(2) ** -20 * needed
    return int(mpmath.ceil(needed))


def _realized_gamma(mech: BalcerCheu) -> Fraction:
    return Fraction(mech._absent_numerator, ONE)


def _binomial_pvalues(successes: np.ndarray, trials: int, probability: float) -> np.ndarray:
    """Two-sided exact binomial p-values ``min(1, 2 min(P(X <= x), P(X >= x)))`` (valid:
    each is <= a with probability <= a under the null)."""
    x = np.asarray(successes, dtype=np.float64)
    lower = stats.binom.cdf(x, trials, probability)
    upper = stats.binom.sf(x - 1, trials, probability)
    return np.minimum(1.0, 2 * np.minimum(lower, upper))


@pytest.fixture(autouse=True)
def _high_precision() -> Iterator[None]:
    with mpmath.workdps(60):
        yield


# --- parameters, exactly as Balcer & Cheu state them -----------------------------------------


@pytest.mark.parametrize(("epsilon", "delta"), PAIRS)
@pytest.mark.parametrize("scale", [1, 3, 1000])
def test_gamma_matches_paper_and_is_realized_at_or_above_it(
    epsilon: float, delta: float, scale: int
) -> None:
    """gamma = 50 ln(2/delta') / (epsilon'^2 n) with (epsilon', delta') = (epsilon/2, delta/2)
    (60-digit mpmath). The realized gamma is a multiple of 2**-64 never below it (more noise)
    and above it by at most the library's float margin FLOAT_MARGIN = 2**-40 (relative), the
    float error of the formula and one grid step."""
    n = _boundary_n(epsilon, delta) * scale
    mech = BalcerCheu(epsilon, delta, n=n, domain=["a", "b", "c"])
    gamma = _exact_gamma(epsilon, delta, n)
    realized = mpmath.mpf(mech._absent_numerator) / ONE  # exact at 60 digits
    assert realized >= gamma
    ceiling = gamma * (1 + mpmath.mpf(FLOAT_MARGIN)) * (1 + mpmath.mpf(GAMMA_FLOAT_ERROR))
    assert realized <= ceiling + mpmath.mpf(2) ** -PRECISION_BITS
    # The float views of the realized probabilities.
    assert mpmath.mpf(mech.absent_probability) >= gamma
    assert abs(Fraction(mech.absent_probability) - _realized_gamma(mech)) <= UNIT * Fraction(
        mech.absent_probability
    )
    # p is rounded up to a float (the side of less noise): at most one ulp above the realized p.
    assert 0 <= Fraction(mech.noise_probability) - (1 - _realized_gamma(mech)) <= UNIT
    assert mech.messages_per_person == 1.0 + 3 * mech.noise_probability


@pytest.mark.parametrize(("epsilon", "delta"), PAIRS)
def test_binary_sum_gamma_against_mpmath(epsilon: float, delta: float) -> None:
    """The per-count helper at (epsilon', delta') is the paper's gamma up to float rounding."""
    n = _boundary_n(epsilon, delta)
    value = binary_sum_gamma(epsilon / 2, delta / 2, n)
    gamma = _exact_gamma(epsilon, delta, n)
    assert abs(mpmath.mpf(value) - gamma) <= mpmath.mpf(GAMMA_FLOAT_ERROR) * gamma


@pytest.mark.parametrize(("epsilon", "delta"), PAIRS)
def test_validity_condition_boundary(epsilon: float, delta: float) -> None:
    """n >= 100 ln(2/delta') / epsilon'^2 (Theorem 3.1 at the per-bucket parameters): the
    boundary n passes with gamma <= 1/2; n - 1 raises naming n, both per-bucket parameters and
    the required n."""
    n = _boundary_n(epsilon, delta)
    mech = BalcerCheu(epsilon, delta, n=n, domain=["a", "b"])
    assert 2 * mech._absent_numerator <= ONE
    message = (
        re.escape(
            f"BalcerCheu: n={n - 1} people are too few for per-count (epsilon, delta) = "
            f"({epsilon / 2:g}, {delta / 2:g})"
        )
        + ".*"
        + re.escape(f"needs n >= 100 ln(2/delta) / epsilon^2 = {n}")
        + "$"
    )
    with pytest.raises(ParameterError, match=message):
        BalcerCheu(epsilon, delta, n=n - 1, domain=["a", "b"])


def test_binary_sum_gamma_closed_interval_boundary() -> None:
    """Per-count epsilon = delta = 1 is allowed; n >= 100 ln 2 = 69.3 there."""
    assert binary_sum_gamma(1.0, 1.0, 70) == 50 * math.log(2.0) / 70
    with pytest.raises(ParameterError, match=re.escape("n=69 people are too few")):
        binary_sum_gamma(1.0, 1.0, 69)


@pytest.mark.parametrize("name", ["epsilon", "delta"])
@pytest.mark.parametrize("value", [1.5, math.nextafter(1.0, 2.0), 0.0, -1.0, math.nan])
def test_binary_sum_gamma_outside_unit_interval_raises(name: str, value: float) -> None:
    arguments = {"epsilon": 1.0, "delta": 1e-3, name: value}
    message = re.escape(f"Balcer–Cheu: per-count {name} must be in (0, 1], got {value!r}")
    with pytest.raises(ParameterError, match=message):
        binary_sum_gamma(arguments["epsilon"], arguments["delta"], 10**9)


@pytest.mark.parametrize("epsilon", [0, -1, 2.5, math.nan, math.inf])
def test_epsilon_outside_range_raises_naming_it(epsilon: float) -> None:
    message = (
        re.escape("BalcerCheu: epsilon must be in (0, 2]") + ".*" + re.escape(f"got {epsilon!r}")
    )
    with pytest.raises(ParameterError, match=message):
        BalcerCheu(epsilon, 0.5, n=10**6, domain=["a", "b"])


@pytest.mark.parametrize("epsilon", [True, "1", None])
def test_epsilon_not_a_number_raises_naming_it(epsilon: object) -> None:
    message = re.escape(f"BalcerCheu: epsilon must be a number, got {epsilon!r}")
    with pytest.raises(ParameterError, match=message):
        BalcerCheu(epsilon, 0.5, n=10**6, domain=["a", "b"])  # type: ignore[arg-type]


@pytest.mark.parametrize("delta", [0, 1, -0.1, math.nan, 1.5, math.inf])
def test_delta_outside_range_raises_naming_it(delta: float) -> None:
    message = re.escape(f"BalcerCheu: delta must be in (0, 1), got {delta!r}")
    with pytest.raises(ParameterError, match=message):
        BalcerCheu(1.0, delta, n=10**6, domain=["a", "b"])


@pytest.mark.parametrize("delta", [True, "0.1"])
def test_delta_not_a_number_raises_naming_it(delta: object) -> None:
    message = re.escape(f"BalcerCheu: delta must be a number, got {delta!r}")
    with pytest.raises(ParameterError, match=message):
        BalcerCheu(1.0, delta, n=10**6, domain=["a", "b"])  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [0, -5, 2.5, True, "1000", None])
def test_bad_n_raises_naming_it(n: object) -> None:
    message = re.escape(f"BalcerCheu: n must be an integer >= 1, got {n!r}")
    with pytest.raises(ParameterError, match=message):
        BalcerCheu(2.0, 0.5, n=n, domain=["a", "b"])  # type: ignore[arg-type]


def test_range_edges_are_accepted_and_inputs_normalized() -> None:
    """epsilon = 2 (each bucket at epsilon' = 1) and delta just below 1 are valid; an int
    epsilon and a numpy n are stored as float and int (so specs are JSON and equal)."""
    mech = BalcerCheu(2, 0.999, n=np.int64(1000), domain=["a", "b"])
    assert (type(mech.epsilon), type(mech.n)) == (float, int)
    assert mech == BalcerCheu(2.0, 0.999, n=1000, domain=["a", "b"])
    json.dumps(mech.to_spec())


# --- randomize and message_counts: one keyed draw, addressed by row ----------------------------

SMALL = (2.0, 0.5, 300)  # n just above the boundary 208: gamma ~ 0.35, both kinds of bits


@pytest.mark.parametrize("k", [2, 3, 8, 13, 64])
def test_message_counts_is_bincount_of_randomize(k: int) -> None:
    epsilon, delta, n = SMALL
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(k))
    codes, source = _codes(n, k), RandomSource.from_seed(SEED)
    messages = mech.randomize(codes, source=source, label="col")
    counts = mech.message_counts(codes, source=source, label="col")
    assert messages.dtype == np.int64
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(messages, minlength=k), counts)
    noise = counts - np.bincount(codes, minlength=k)
    assert noise.min() >= 0
    assert noise.max() <= n
    assert messages.size == n + int(noise.sum())


@pytest.mark.parametrize("k", [3, 13])
def test_each_person_sends_own_bucket_once_plus_at_most_one_per_bucket(k: int) -> None:
    """Person by person (row_start = i addresses row i): the per-person messages are sorted,
    hold the person's own bucket once or twice and every other bucket at most once, and
    concatenate to the full run; row_start = a on codes[a:] gives the tail of the full run."""
    epsilon, delta, n = SMALL
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(k))
    codes, source = _codes(n, k), RandomSource.from_seed(SEED)
    full = mech.randomize(codes, source=source, label="col")
    people = [
        mech.randomize(codes[i : i + 1], source=source, label="col", row_start=i) for i in range(n)
    ]
    np.testing.assert_array_equal(np.concatenate(people), full)
    for code, sent in zip(codes, people, strict=True):
        assert np.all(np.diff(sent) >= 0)
        noise = np.bincount(sent, minlength=k)
        noise[code] -= 1
        assert noise.min() >= 0
        assert noise.max() <= 1
    for start in (1, 97, n - 1):
        tail = mech.randomize(codes[start:], source=source, label="col", row_start=start)
        np.testing.assert_array_equal(tail, np.concatenate(people[start:]))


@pytest.mark.parametrize("split", [0, 1, 150, 299, 300])
def test_message_counts_add_over_row_ranges(split: int) -> None:
    epsilon, delta, n = SMALL
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(5))
    codes, source = _codes(n, 5), RandomSource.from_seed(SEED)
    whole = mech.message_counts(codes, source=source, label="col")
    first = mech.message_counts(codes[:split], source=source, label="col")
    second = mech.message_counts(codes[split:], source=source, label="col", row_start=split)
    np.testing.assert_array_equal(whole, first + second)


@pytest.mark.parametrize("k", [3, 20])
def test_chunk_size_does_not_change_messages(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 1 (k = 20) or 5 (k = 3) rows instead of one chunk: identical output."""
    epsilon, delta, n = SMALL
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(k))
    codes, source = _codes(n, k), RandomSource.from_seed(SEED)
    messages = mech.randomize(codes, source=source, label="col")
    counts = mech.message_counts(codes, source=source, label="col")
    monkeypatch.setattr(bc_module, "_CHUNK_BITS", 16)
    np.testing.assert_array_equal(mech.randomize(codes, source=source, label="col"), messages)
    np.testing.assert_array_equal(mech.message_counts(codes, source=source, label="col"), counts)


def test_same_seed_same_messages_and_seeds_labels_specs_separate_noise() -> None:
    epsilon, delta, n = SMALL
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(4))
    codes = _codes(n, 4)

    def run(m: BalcerCheu = mech, seed: int = SEED, label: str = "col") -> bytes:
        messages = m.randomize(codes, source=RandomSource.from_seed(seed), label=label)
        return messages.tobytes()

    assert run() == run()
    others = {
        run(),
        run(seed=SEED + 1),
        run(label="col2"),
        run(m=BalcerCheu(epsilon, delta, n=n + 1, domain=_domain(4))),
        run(m=BalcerCheu(epsilon, 0.4, n=n, domain=_domain(4))),
        run(m=BalcerCheu(epsilon, delta, n=n, domain=["v1", "v0", "v2", "v3"])),
    }
    assert len(others) == 6


def test_randomize_leaves_input_unchanged_and_handles_empty() -> None:
    epsilon, delta, n = SMALL
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(3))
    codes = _codes(n, 3)
    before = codes.copy()
    mech.randomize(codes, source=RandomSource.from_seed(SEED), label="col")
    np.testing.assert_array_equal(codes, before)
    empty = np.zeros(0, dtype=np.int64)
    source = RandomSource.from_seed(SEED)
    assert mech.randomize(empty, source=source, label="col").shape == (0,)
    np.testing.assert_array_equal(
        mech.message_counts(empty, source=source, label="col"), np.zeros(3, dtype=np.int64)
    )


@pytest.mark.parametrize(
    ("codes", "message"),
    [
        ([0, 3, 1], "codes must be in [0, 3), got 3 at position 1"),
        ([0, -1], "codes must be in [0, 3), got -1 at position 1"),
        ([[0, 1]], "codes must be one-dimensional, got shape (1, 2)"),
    ],
)
def test_codes_outside_domain_or_not_1d_raise(codes: list[object], message: str) -> None:
    epsilon, delta, n = SMALL
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(3))
    source = RandomSource.from_seed(SEED)
    for method in (mech.randomize, mech.message_counts):
        with pytest.raises(ParameterError, match=re.escape(message)):
            method(np.asarray(codes), source=source, label="col")


# --- the law of the messages (statistical, fixed seeds) ---------------------------------------

# (epsilon, delta, n, k): gamma ~ 0.130 with many buckets, and gamma ~ 0.030 (p near 1).
NOISE_CASES = {
    "gamma=0.130,k=5000": (2.0, 0.5, 800, 5000),
    "gamma=0.030,k=200": (1.0, 1e-6, 100_000, 200),
}


@pytest.fixture(scope="module", params=list(NOISE_CASES))
def noise_run(request: pytest.FixtureRequest) -> tuple[BalcerCheu, np.ndarray]:
    """Noise messages per bucket, M_j - s_j, of one keyed run: independent Bin(n, p)."""
    epsilon, delta, n, k = NOISE_CASES[request.param]
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(k))
    codes = _codes(n, k)
    counts = mech.message_counts(codes, source=RandomSource.from_seed(SEED), label="noise")
    return mech, counts - np.bincount(codes, minlength=k)


def test_total_noise_messages_are_binomial_n_k_p(noise_run: tuple[BalcerCheu, np.ndarray]) -> None:
    """Exact binomial test of all n k noise bits at the realized p. Power 0.99 against an
    absolute shift of gamma by 1.2e-3 (0.93% of gamma = 0.130; 4e6 bits) or 2.8e-4 (0.91% of
    gamma = 0.030; 2e7 bits)."""
    mech, noise = noise_run
    assert_binomial(noise.sum(), mech.n * mech.num_buckets, mech.noise_probability, p_fail=P_FAIL)


def test_noise_messages_per_bucket_are_binomial_n_p(
    noise_run: tuple[BalcerCheu, np.ndarray],
) -> None:
    """Exact two-sided binomial test of every bucket at P_FAIL / k (Bonferroni). Power 0.99
    against any one bucket's mean off by 8.7 (k = 5000) or 8.2 (k = 200) standard deviations
    sqrt(n p gamma), e.g. the own-bucket message counted as noise or a bucket left without noise."""
    mech, noise = noise_run
    pvalues = _binomial_pvalues(noise, mech.n, mech.noise_probability)
    worst = int(np.argmin(pvalues))
    assert pvalues[worst] > P_FAIL / mech.num_buckets, (
        f"bucket {worst}: {int(noise[worst])} noise messages, p-value {pvalues[worst]:.3g}"
    )


def test_noise_message_variance_is_n_p_gamma(noise_run: tuple[BalcerCheu, np.ndarray]) -> None:
    """Two-sided chi-square test of sum((noise_j - n p)^2 / (n p gamma)) over the k buckets.
    Power 0.99 against a variance ratio above 1.15 or below 0.86 (k = 5000), above 2.0 or below
    0.47 (k = 200): e.g. noise bits shared between buckets."""
    mech, noise = noise_run
    p, gamma = mech.noise_probability, mech.absent_probability
    assert_variance(noise - mech.n * p, mech.n * p * gamma, p_fail=P_FAIL)


# (epsilon, delta, n, k) for the estimator
ESTIMATE_CASES = [(1.0, 1e-6, 200_000, 20), (2.0, 0.5, 800, 50)]


@pytest.mark.parametrize(("epsilon", "delta", "n", "k"), ESTIMATE_CASES)
def test_estimate_is_unbiased_per_bucket(epsilon: float, delta: float, n: int, k: int) -> None:
    """|ĉ_j - c_j| / σ < norm.isf(P_FAIL / (2k)) for every bucket, from randomize() through
    estimate(), with σ² = n p gamma. Power 0.99 against a bias of 7.8 σ (426 counts, 0.2% of
    n = 2e5) or 7.9 σ (75 counts of n = 800) in any one bucket, e.g. subtracting n p computed
    from the requested rather than the realized p at small n."""
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(k))
    codes = _codes(n, k)
    messages = mech.randomize(codes, source=RandomSource.from_seed(SEED), label="est")
    estimate = mech.estimate(messages)
    assert estimate.n == n
    truth = np.bincount(codes, minlength=k)
    assert_unbiased(estimate.counts, truth, estimate.variances, p_fail=P_FAIL / k)


@pytest.mark.parametrize(("epsilon", "delta"), PAIRS)
def test_std_errors_are_sqrt_n_p_gamma_for_every_bucket(epsilon: float, delta: float) -> None:
    """Variance n p (1 - p) at the realized p, the same in every bucket: equal to the exact
    rational value up to four float roundings (two conversions, two products)."""
    n, k = _boundary_n(epsilon, delta) * 2, 7
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(k))
    estimate = mech.debias(_statistic(np.arange(k) + n))
    p, gamma = mech.noise_probability, mech.absent_probability
    np.testing.assert_array_equal(estimate.std_errors, np.full(k, math.sqrt(n * p * gamma)))
    exact = n * (1 - _realized_gamma(mech)) * _realized_gamma(mech)
    assert abs(Fraction(float(estimate.variances[0])) - exact) <= 5 * UNIT * exact


def test_debias_subtracts_n_p_exactly() -> None:
    """n = 1024 (a power of two) and counts within [n p / 2, 2 n p]: M - n p is exact in
    floating point, so debias equals the rational M - n p."""
    n = 1024
    mech = BalcerCheu(2.0, 0.5, n=n, domain=_domain(4))
    p = Fraction(mech.noise_probability)
    counts = np.array([math.ceil(n * p / 2), 700, n, math.floor(2 * n * p)])
    assert all(n * p / 2 <= c <= 2 * n * p for c in counts)
    result = mech.debias(_statistic(counts)).counts
    assert [Fraction(float(value)) for value in result] == [c - n * p for c in counts]


def test_debias_rejects_wrong_shape() -> None:
    mech = BalcerCheu(2.0, 0.5, n=1000, domain=_domain(3))
    with pytest.raises(ParameterError, match=re.escape("must have shape (3,), got (4,)")):
        mech.debias(_statistic(np.zeros(4, dtype=np.int64)))


# --- the paper's zero-sum analyzer ---------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "delta", "n", "k"), ESTIMATE_CASES)
def test_zero_sum_is_exactly_zero_on_every_empty_bucket(
    epsilon: float, delta: float, n: int, k: int
) -> None:
    """A bucket nobody holds receives at most n messages (one noise bit per person), so the
    analyzer returns exactly 0 there: not a statistical statement."""
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(k))
    codes = _codes(n, k)
    counts = mech.message_counts(codes, source=RandomSource.from_seed(SEED), label="zs")
    empty = np.bincount(codes, minlength=k) == 0
    assert empty.any()
    assert (~empty).any()
    assert np.all(counts[empty] <= n)
    result = mech.zero_sum(counts)
    assert np.all(result[empty] == 0.0)
    above = counts > n
    np.testing.assert_array_equal(result[above], mech.debias(_statistic(counts)).counts[above])


def test_zero_sum_threshold_is_strictly_above_n() -> None:
    n = 1024
    mech = BalcerCheu(2.0, 0.5, n=n, domain=_domain(5))
    p = Fraction(mech.noise_probability)
    top = math.floor(2 * n * p)  # M - n p is exact for M in [n p / 2, 2 n p] (n = 2**10)
    counts = np.array([0, n - 1, n, n + 1, top])
    result = mech.zero_sum(counts)
    expected = [0, 0, 0, n + 1 - n * p, top - n * p]
    assert [Fraction(float(value)) for value in result] == expected
    shares = [binary_sum_analyze(int(c), n, mech.noise_probability) for c in counts]
    assert [share == 0.0 for share in shares] == [value == 0.0 for value in result]


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (0, Fraction(0)),
        (1023, Fraction(0)),
        (1024, Fraction(0)),  # share exactly 1: not above 1
        (1025, Fraction(1025, 1024) - Fraction(3, 4)),
        (2048, Fraction(5, 4)),
        (1536, Fraction(3, 4)),
    ],
)
def test_binary_sum_analyze_returns_share_minus_p_above_one(count: int, expected: Fraction) -> None:
    """A^zsum with n = 1024 and p = 3/4 (exact in binary): c* - p if c* = count / n > 1, else 0."""
    assert Fraction(binary_sum_analyze(count, 1024, 0.75)) == expected


# --- privacy record and specs --------------------------------------------------------------------

PRIVACY_PAIRS = [(2.0, 0.5), (2.0, 1e-9), (1.5, 1e-4), (1.0, 1e-6)]


@pytest.mark.parametrize(("epsilon", "delta"), PRIVACY_PAIRS)
@pytest.mark.parametrize("scale", [1, 4])
def test_privacy_meets_the_request(epsilon: float, delta: float, scale: int) -> None:
    """Theorem 3.1 (two buckets per person): the exact PLD of the released counts gives at most
    the requested epsilon at the requested delta, at the smallest valid n too."""
    n = _boundary_n(epsilon, delta) * scale
    mech = BalcerCheu(epsilon, delta, n=n, domain=_domain(3))
    guarantee = mech.privacy
    assert guarantee.model == "shuffle"
    assert guarantee.shuffled
    assert guarantee.epsilon == math.inf
    assert guarantee.events == ((BinomialCountsEvent(n, mech.noise_probability, bins=2), 1),)
    assert guarantee.parameters["reports"] == n
    assert guarantee.epsilon_at(delta) <= epsilon


def test_accounted_noise_probability_is_never_noisier_than_realized() -> None:
    """eps = 2, delta = 0.5, n = 212: one of the n where the rounding goes the unsafe way."""
    mech = BalcerCheu(2.0, 0.5, n=212, domain=_domain(2))
    ((event, _),) = mech.privacy.events
    assert Fraction(event.noise_probability) >= 1 - _realized_gamma(mech)


@pytest.mark.parametrize(
    "domain",
    [
        ["a", "b", "c"],
        Domain([1, 2, 3.5], unknown="other", nulls="category"),
    ],
)
def test_spec_round_trip_realizes_identical_messages(domain: object) -> None:
    mech = BalcerCheu(1.5, 1e-4, n=2500, domain=domain)
    spec = mech.to_spec()
    assert spec["mechanism"] == "balcer_cheu"
    rebuilt = [
        BalcerCheu.from_spec(spec),
        mechanism_from_spec(spec),
        mechanism_from_spec(json.dumps(spec)),
        mechanism_from_spec(json.loads(json.dumps(spec))),
    ]
    codes = _codes(mech.n, mech.num_buckets)

    def messages(m: BalcerCheu) -> np.ndarray:
        return m.randomize(codes, source=RandomSource.from_seed(SEED), label="col")

    for other in rebuilt:
        assert isinstance(other, BalcerCheu)
        assert other == mech
        assert other.to_spec() == spec
        assert other._absent_numerator == mech._absent_numerator
        np.testing.assert_array_equal(messages(other), messages(mech))


def test_int_epsilon_gives_the_same_noise_as_float() -> None:
    codes = _codes(400, 3)
    source = RandomSource.from_seed(SEED)
    a = BalcerCheu(2, 0.5, n=400, domain=_domain(3)).randomize(codes, source=source, label="c")
    b = BalcerCheu(2.0, 0.5, n=400, domain=_domain(3)).randomize(codes, source=source, label="c")
    np.testing.assert_array_equal(a, b)


# --- keyed permutations --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
def test_permutation_is_a_permutation_and_reproducible(n: int) -> None:
    source = RandomSource.from_seed(SEED)
    order = permutation(source.stream("x"), n)
    assert order.dtype == np.int64
    assert order.shape == (n,)
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    np.testing.assert_array_equal(permutation(source.stream("x"), n), order)
    np.testing.assert_array_equal(permutation(RandomSource.from_seed(SEED).stream("x"), n), order)


def test_permutation_differs_across_seeds_and_labels() -> None:
    orders = {
        permutation(RandomSource.from_seed(SEED).stream("x"), 100).tobytes(),
        permutation(RandomSource.from_seed(SEED + 1).stream("x"), 100).tobytes(),
        permutation(RandomSource.from_seed(SEED).stream("y"), 100).tobytes(),
    }
    assert len(orders) == 3


@pytest.mark.parametrize("n", [-1, 2.5, True, "3", None])
def test_permutation_bad_n_raises(n: object) -> None:
    with pytest.raises(ParameterError, match=re.escape(f"n must be an integer >= 0, got {n!r}")):
        permutation(RandomSource.from_seed(SEED).stream("x"), n)  # type: ignore[arg-type]


def test_sort_keys_are_the_ctr_keystream_blocks_of_lane_one() -> None:
    """Row r's key is the big-endian 128-bit block r of lane 1, as the CTR-mode path (an
    independent code path from the ECB one sort_keys uses) produces it."""
    stream = RandomSource.from_seed(SEED).stream("x")
    rows = np.array([0, 1, 5, 2**40 + 3], dtype=np.int64)
    keys = sort_keys(stream, rows)
    assert keys.dtype == np.uint64
    assert keys.shape == (4, 2)
    for row, (high, low) in zip(rows, keys, strict=True):
        block = stream.contiguous(1, 16 * int(row), 16).tobytes()
        assert (int(high) << 64) | int(low) == int.from_bytes(block, "big")


def test_sort_keys_batch_invariance() -> None:
    """Any subset of rows, in any order and any batch, gets the keys the full frame gets."""
    stream = RandomSource.from_seed(SEED).stream("x")
    n = 500
    full = sort_keys(stream, np.arange(n, dtype=np.int64))
    for rows in (np.arange(100, 250), np.arange(n)[::-1], np.array([7, 7, 3, 499]), np.arange(0)):
        np.testing.assert_array_equal(sort_keys(stream, rows.astype(np.int64)), full[rows])
    batches = [sort_keys(stream, np.arange(a, min(a + 64, n))) for a in range(0, n, 64)]
    np.testing.assert_array_equal(np.concatenate(batches), full)
    np.testing.assert_array_equal(permutation(stream, n), permutation_from_keys(full))


def test_permutation_from_keys_sorts_by_unsigned_high_then_low_word() -> None:
    top = np.uint64(2**64 - 1)
    keys = np.array([[2**63, 0], [1, 5], [top, 0], [1, 3], [2**63, top], [0, top]], dtype=np.uint64)
    np.testing.assert_array_equal(permutation_from_keys(keys), [5, 3, 1, 0, 4, 2])


def test_permutations_of_four_are_uniform() -> None:
    """24000 keyed streams (seeds 0..23999, label "x"), n = 4: chi-square over the 24 orders.
    Power 0.99 against one order with probability 1/24 ± 0.0122 (29% off), the rest equal."""
    index = {order: i for i, order in enumerate(itertools.permutations(range(4)))}
    counts = np.zeros(24, dtype=np.int64)
    for seed in range(24_000):
        counts[index[tuple(permutation(RandomSource.from_seed(seed).stream("x"), 4))]] += 1
    assert_chisquare(counts, np.full(24, 1 / 24), p_fail=P_FAIL)
