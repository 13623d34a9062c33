"""Bloom-filter RAPPOR: parameters, realized privacy, memoization, noise law, debiasing, decoding.

Privacy closed forms are recomputed with mpmath at the realized probabilities (Erlingsson et al.
2014, Thm. 1 and 2). Memoization is tested with p = 0, q = 1, where the instantaneous response
is the identity and the reports *are* the permanent responses. Distributional assertions hold
at the declared false-failure probability ``P_FAIL`` (see ``_stats``); sample sizes are 1e5 to
2e5 reports, each randomized in a few tens of milliseconds.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest

from _stats import (
    P_FAIL,
    assert_binomial,
    assert_chisquare,
    assert_independent,
    assert_unbiased,
    assert_variance,
    z_bound,
)
from frameldp.core import BloomDecoding, BloomRappor, RandomSource, mechanism_from_spec
from frameldp.core.encoding import HASH_SCHEMES
from frameldp.core.estimation import debias_bloom_counts
from frameldp.errors import DomainError, FrameLDPWarning, ParameterError

GRID = 2**-52  # realized probabilities are multiples of 2**-52
SEED = 271
KEY_1 = bytes(range(32))
KEY_2 = bytes(range(1, 33))


def _realized(mech: BloomRappor) -> tuple[Fraction, Fraction, Fraction]:
    """Realized (f/2, p, q) as exact fractions."""
    return (
        Fraction(mech.flip_probability),
        Fraction(mech.zero_probability),
        Fraction(mech.one_probability),
    )


def _report_probabilities(mech: BloomRappor) -> tuple[Fraction, Fraction]:
    """(q*, p*) = ((1 - f/2) q + (f/2) p, (f/2) q + (1 - f/2) p), exactly (paper, Sec. 3)."""
    flip, p, q = _realized(mech)
    return (1 - flip) * q + flip * p, flip * q + (1 - flip) * p


def _mp_epsilons(mech: BloomRappor) -> tuple[mpmath.mpf, mpmath.mpf]:
    """epsilon_1 = h ln(q*(1 - p*) / (p*(1 - q*))) (|.| for q* < p*) and
    epsilon_inf = 2h ln((1 - f/2) / (f/2)) at the realized probabilities, to 50 digits."""
    one, zero = _report_probabilities(mech)
    flip = _realized(mech)[0]
    h = mech.num_hashes
    with mpmath.workdps(50):

        def mp(x: Fraction) -> mpmath.mpf:
            return mpmath.mpf(x.numerator) / x.denominator

        epsilon_1 = h * abs(mpmath.log(mp(one * (1 - zero)) / mp(zero * (1 - one))))
        epsilon_inf = 2 * h * mpmath.log(mp((1 - flip) / flip))
    return epsilon_1, epsilon_inf


# --- parameters ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("f", "p", "q"),
    [
        (0.5, 0.5, 0.75),
        (0.3, 0.1, 0.8),
        (0.1, 0.25, 0.75),
        (1 / 3, 1 / 7, 5 / 7),
        (0.2, 0.0, 1.0),
        (1e-9, 0.3, 0.31),
        (0.7, 0.75, 0.25),  # q < p: the roles swap, rounding still moves them together
        (1.0, 0.2, 0.6),
    ],
)
def test_probabilities_are_rounded_toward_more_noise(f: float, p: float, q: float) -> None:
    mech = BloomRappor(f=f, p=p, q=q)
    flip, zero, one = _realized(mech)
    assert Fraction(f) / 2 <= flip < Fraction(f) / 2 + Fraction(GRID)
    assert flip <= Fraction(1, 2)
    if p < q:
        assert Fraction(p) <= zero < Fraction(p) + Fraction(GRID)
        assert Fraction(q) - Fraction(GRID) < one <= Fraction(q)
    else:
        assert Fraction(p) - Fraction(GRID) < zero <= Fraction(p)
        assert Fraction(q) <= one < Fraction(q) + Fraction(GRID)
    for value in (flip, zero, one):
        assert (value / Fraction(GRID)).denominator == 1
    assert (mech.f, mech.p, mech.q) == (f, p, q)  # the request is kept as given
    assert mech.epsilon is None
    assert mech.epsilon_infinity is None


def test_paper_example_needs_no_rounding() -> None:
    mech = BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=128, num_hashes=2, num_cohorts=64)
    assert (mech.flip_probability, mech.zero_probability, mech.one_probability) == (0.25, 0.5, 0.75)
    assert mech.report_probabilities == (0.6875, 0.5625)


EPSILON_PAIRS = [
    (0.1, 1.0),
    (0.5, 0.5),
    (1.0, 2.0),
    (1.0, 4.0),
    (2.0, 8.0),
    (3.0, 3.0),
    (4.0, 16.0),
]


@pytest.mark.parametrize("num_hashes", [1, 2, 4])
@pytest.mark.parametrize(("epsilon", "epsilon_infinity"), EPSILON_PAIRS)
def test_epsilon_form_realizes_at_most_the_request_and_close(
    epsilon: float, epsilon_infinity: float, num_hashes: int
) -> None:
    """Realized epsilons never exceed the request; the rounding (a relative margin of 2**-40 on
    each probability, then the 2**-52 grid) costs less than 1e-9 relative in this range."""
    mech = BloomRappor(epsilon, epsilon_infinity=epsilon_infinity, num_hashes=num_hashes)
    guarantee = mech.privacy
    assert guarantee.epsilon <= epsilon
    assert guarantee.epsilon_infinity is not None
    assert guarantee.epsilon_infinity <= epsilon_infinity
    assert (epsilon - guarantee.epsilon) / epsilon < 1e-9
    assert (epsilon_infinity - guarantee.epsilon_infinity) / epsilon_infinity < 1e-9
    assert (mech.epsilon, mech.epsilon_infinity) == (epsilon, epsilon_infinity)
    flip, zero, one = _realized(mech)
    assert zero + one == 1  # symmetric instantaneous response p = 1 - q
    with mpmath.workdps(50):
        h2 = 2 * num_hashes
        assert mpmath.mpf(flip) >= 1 / (1 + mpmath.exp(mpmath.mpf(epsilon_infinity) / h2))
        zero_star = _report_probabilities(mech)[1]
        assert mpmath.mpf(zero_star) >= 1 / (1 + mpmath.exp(mpmath.mpf(epsilon) / h2))


@pytest.mark.parametrize("num_hashes", [1, 8, 16])
@pytest.mark.parametrize(
    ("epsilon", "epsilon_infinity"), [(1e-6, 1e-3), (0.01, 0.1), (8.0, 40.0), (20.0, 50.0)]
)
def test_epsilon_form_never_exceeds_request_at_extremes(
    epsilon: float, epsilon_infinity: float, num_hashes: int
) -> None:
    mech = BloomRappor(epsilon, epsilon_infinity=epsilon_infinity, num_hashes=num_hashes)
    epsilon_1, epsilon_inf = _mp_epsilons(mech)
    assert epsilon_1 <= epsilon
    assert epsilon_inf <= epsilon_infinity
    assert mech.privacy.epsilon <= epsilon
    assert mech.privacy.epsilon_infinity is not None
    assert mech.privacy.epsilon_infinity <= epsilon_infinity


MIXED = "pass either epsilon and epsilon_infinity, or all of f, p and q; got "


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, MIXED + "epsilon=None, epsilon_infinity=None, f=None, p=None, q=None"),
        ({"epsilon": 1.0}, MIXED + "epsilon=1.0, epsilon_infinity=None"),
        ({"epsilon_infinity": 2.0}, MIXED + "epsilon=None, epsilon_infinity=2.0"),
        ({"f": 0.5, "p": 0.1}, MIXED + r".*f=0\.5, p=0\.1, q=None"),
        ({"p": 0.1, "q": 0.9}, MIXED + r".*f=None, p=0\.1, q=0\.9"),
        (
            {"epsilon": 1.0, "epsilon_infinity": 2.0, "f": 0.5, "p": 0.1, "q": 0.9},
            MIXED + r"epsilon=1\.0, epsilon_infinity=2\.0, f=0\.5, p=0\.1, q=0\.9",
        ),
        ({"epsilon": 1.0, "f": 0.5, "p": 0.1, "q": 0.9}, MIXED + r"epsilon=1\.0"),
        ({"f": 0.5, "p": 0.5, "q": 0.5}, r"p and q must differ \(p = q = 0\.5"),
        (
            {"f": 0.5, "p": 0.5, "q": 0.5 + 2**-53},
            r"p=0\.5 and q=0\.5000000000000001 are too close",
        ),
        ({"f": 0, "p": 0.1, "q": 0.9}, r"f must be in \(0, 1\], got 0$"),
        ({"f": 0.0, "p": 0.1, "q": 0.9}, r"f must be in \(0, 1\], got 0\.0$"),
        ({"f": -0.5, "p": 0.1, "q": 0.9}, r"f must be in \(0, 1\], got -0\.5$"),
        ({"f": 1.5, "p": 0.1, "q": 0.9}, r"f must be in \(0, 1\], got 1\.5$"),
        ({"f": math.nan, "p": 0.1, "q": 0.9}, "f must be a number, got nan$"),
        ({"f": math.inf, "p": 0.1, "q": 0.9}, "f must be a number, got inf$"),
        ({"f": True, "p": 0.1, "q": 0.9}, "f must be a number, got True$"),
        ({"f": "0.5", "p": 0.1, "q": 0.9}, "f must be a number, got '0.5'$"),
        ({"f": 0.5, "p": -0.1, "q": 0.9}, r"p must be in \[0, 1\], got -0\.1$"),
        ({"f": 0.5, "p": 1.1, "q": 0.9}, r"p must be in \[0, 1\], got 1\.1$"),
        ({"f": 0.5, "p": math.nan, "q": 0.9}, "p must be a number, got nan$"),
        ({"f": 0.5, "p": False, "q": 0.9}, "p must be a number, got False$"),
        ({"f": 0.5, "p": 0.1, "q": 1.5}, r"q must be in \[0, 1\], got 1\.5$"),
        ({"f": 0.5, "p": 0.1, "q": -math.inf}, "q must be a number, got -inf$"),
        ({"f": 0.5, "p": 0.1, "q": True}, "q must be a number, got True$"),
        (
            {"epsilon": 2.0, "epsilon_infinity": 1.0},
            r"epsilon \(one report\) must be at most epsilon_infinity=1\.0, got 2\.0",
        ),
        ({"epsilon": 0.0, "epsilon_infinity": 1.0}, "epsilon must be > 0 and finite, got 0.0$"),
        ({"epsilon": -1.0, "epsilon_infinity": 1.0}, "epsilon must be > 0 and finite, got -1.0$"),
        (
            {"epsilon": math.nan, "epsilon_infinity": 1.0},
            "epsilon must be > 0 and finite, got nan$",
        ),
        (
            {"epsilon": math.inf, "epsilon_infinity": 1.0},
            "epsilon must be > 0 and finite, got inf$",
        ),
        ({"epsilon": True, "epsilon_infinity": 1.0}, "epsilon must be a number, got True$"),
        ({"epsilon": "1", "epsilon_infinity": 1.0}, "epsilon must be a number, got '1'$"),
        (
            {"epsilon": 1e-12, "epsilon_infinity": 1.0, "num_hashes": 2},
            "epsilon=1e-12 with epsilon_infinity=1.0 is too small to realize with num_hashes=2",
        ),
    ],
    ids=str,
)
def test_bad_parameters_raise_naming_them(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=f"^BloomRappor: {message}"):
        BloomRappor(**kwargs)


@pytest.mark.parametrize(
    ("epsilon_infinity", "shown"),
    [(-2.0, "-2.0"), (0.0, "0.0"), (math.nan, "nan"), (math.inf, "inf"), (True, "True")],
)
def test_bad_epsilon_infinity_raises_naming_it(epsilon_infinity: object, shown: str) -> None:
    with pytest.raises(ParameterError, match=f"^BloomRappor: epsilon_infinity must be .*{shown}"):
        BloomRappor(1.0, epsilon_infinity=epsilon_infinity)  # type: ignore[arg-type]


def test_bad_encoder_parameters_raise_through_the_mechanism() -> None:
    with pytest.raises(ParameterError, match="BloomEncoder: num_bits must be an integer"):
        BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=300, hash_scheme="rappor")
    with pytest.raises(ParameterError, match="BloomEncoder: num_hashes must be at most"):
        BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=2, num_hashes=3)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"f": 0.5, "p": 0.5, "q": 0.75, "num_bits": 16, "num_cohorts": 4, "hash_scheme": "rappor"},
        {"epsilon": 1.0, "epsilon_infinity": 3.0, "num_hashes": 3},
    ],
    ids=str,
)
def test_spec_round_trip_gives_the_same_mechanism_and_reports(kwargs: dict[str, Any]) -> None:
    mech = BloomRappor(**kwargs)
    rebuilt = mechanism_from_spec(mech.to_spec())
    assert rebuilt == mech
    assert rebuilt.privacy.epsilon == mech.privacy.epsilon
    codes = np.arange(300, dtype=np.int64) % 3
    first = mech.randomize(codes, ["a", "b", "c"], source=RandomSource.from_seed(1), label="s")
    second = rebuilt.randomize(codes, ["a", "b", "c"], source=RandomSource.from_seed(1), label="s")
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


# --- privacy closed forms ------------------------------------------------------------------------


def test_paper_example_epsilons() -> None:
    """RAPPOR's example (f = 0.5, p = 0.5, q = 0.75, h = 2): epsilon_1 = 2 ln(5 * 7 / (3 * 9))
    since q* = 11/16, p* = 9/16; epsilon_inf = 4 ln 3."""
    guarantee = BloomRappor(f=0.5, p=0.5, q=0.75, num_hashes=2).privacy
    assert round(guarantee.epsilon, 4) == 1.0743
    assert guarantee.epsilon_infinity is not None
    assert round(guarantee.epsilon_infinity, 4) == 4.3944
    with mpmath.workdps(50):
        exact_1 = 2 * mpmath.log(mpmath.mpf(11 * 7) / (9 * 5))
        exact_inf = 4 * mpmath.log(3)
        assert exact_1 <= guarantee.epsilon <= exact_1 * (1 + mpmath.mpf(1e-12))
        assert exact_inf <= guarantee.epsilon_infinity <= exact_inf * (1 + mpmath.mpf(1e-12))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"f": 0.5, "p": 0.5, "q": 0.75, "num_hashes": 2},
        {"f": 0.3, "p": 0.1, "q": 0.8, "num_hashes": 4},
        {"f": 0.1, "p": 0.25, "q": 0.75, "num_hashes": 1},
        {"f": 1 / 3, "p": 1 / 7, "q": 5 / 7, "num_hashes": 16, "num_bits": 256},
        {"f": 0.05, "p": 0.0, "q": 1.0, "num_hashes": 3},  # epsilon_1 = epsilon_inf
        {"f": 0.7, "p": 0.75, "q": 0.25, "num_hashes": 2},  # q < p
        {"f": 1e-6, "p": 0.4, "q": 0.6, "num_hashes": 2},
        {"epsilon": 1.0, "epsilon_infinity": 4.0, "num_hashes": 2},
        {"epsilon": 0.3, "epsilon_infinity": 5.0, "num_hashes": 8},
    ],
    ids=str,
)
def test_privacy_against_mpmath(kwargs: dict[str, Any]) -> None:
    """The guarantee holds the closed forms at the realized probabilities, rounded up: never
    below the exact value and within 1e-12 relative of it."""
    mech = BloomRappor(**kwargs)
    exact_1, exact_inf = _mp_epsilons(mech)
    guarantee = mech.privacy
    assert guarantee.epsilon_infinity is not None
    with mpmath.workdps(50):
        assert exact_1 <= guarantee.epsilon <= exact_1 * (1 + mpmath.mpf(1e-12))
        assert exact_inf <= guarantee.epsilon_infinity <= exact_inf * (1 + mpmath.mpf(1e-12))
    assert guarantee.mechanism == "bloom_rappor"
    assert guarantee.delta == 0.0
    assert guarantee.parameters["f"] == 2 * mech.flip_probability
    assert guarantee.parameters["p"] == mech.zero_probability
    assert guarantee.parameters["q"] == mech.one_probability


def test_f_one_is_pure_noise_with_epsilon_zero() -> None:
    mech = BloomRappor(f=1.0, p=0.2, q=0.9)
    assert mech.flip_probability == 0.5
    assert mech.privacy.epsilon == 0.0
    assert mech.privacy.epsilon_infinity == 0.0
    one, zero = mech.report_probabilities
    with pytest.raises(ParameterError, match="must differ from"):
        debias_bloom_counts(np.zeros((2, 3), dtype=np.int64), np.array([5, 5]), one, zero)


# --- memoization ---------------------------------------------------------------------------------

NUM_BITS, NUM_COHORTS = 64, 16
USERS: list[object] = [f"user-{i}" for i in range(150)] + list(range(150)) + [b"raw", "7"]
VALUES = ["https://a.example/", "https://b.example/x", "", "日本"]


def _permanent_only(hash_scheme: str = "fast") -> BloomRappor:
    """p = 0, q = 1: no instantaneous noise, so every report is its permanent response."""
    mech = BloomRappor(
        f=0.5,
        p=0.0,
        q=1.0,
        num_bits=NUM_BITS,
        num_hashes=2,
        num_cohorts=NUM_COHORTS,
        hash_scheme=hash_scheme,  # type: ignore[arg-type]
    )
    assert (mech.zero_probability, mech.one_probability) == (0.0, 1.0)
    return mech


def _all_pairs() -> tuple[np.ndarray, np.ndarray]:
    """Rows holding every (user, value) pair once: (value codes, user codes)."""
    users = np.repeat(np.arange(len(USERS), dtype=np.int64), len(VALUES))
    codes = np.tile(np.arange(len(VALUES), dtype=np.int64), len(USERS))
    return codes, users


def _memoized(
    mech: BloomRappor,
    codes: np.ndarray,
    user_codes: np.ndarray,
    *,
    seed: int,
    memo: bytes | None,
    user_ids: list[object] = USERS,
    row_start: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    return mech.randomize(
        codes,
        VALUES,
        user_codes=user_codes,
        user_ids=user_ids,
        source=RandomSource.from_seed(seed),
        memo=None if memo is None else RandomSource.from_key(memo),
        label="url",
        row_start=row_start,
    )


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
def test_memoized_report_is_a_function_of_key_user_and_value(hash_scheme: str) -> None:
    """Same memo key: the same (user, value) gets the same permanent response and the same user
    the same cohort, whatever the source seed, the row position, the row start, the repetition
    of the pair, or the code the user id has in ``user_ids``."""
    mech = _permanent_only(hash_scheme)
    codes, users = _all_pairs()
    reports, cohorts = _memoized(mech, codes, users, seed=1, memo=KEY_1)
    assert reports.shape == (codes.size, NUM_BITS // 8)
    # Cohorts belong to users: one per user, across all of that user's values.
    per_user = cohorts.reshape(len(USERS), len(VALUES))
    np.testing.assert_array_equal(per_user, per_user[:, :1].repeat(len(VALUES), axis=1))
    # Another collection: other seed, rows reordered and repeated, ids listed in another order.
    picks = (np.arange(3000, dtype=np.int64) * 7919) % codes.size
    order = np.arange(len(USERS))[::-1]
    relisted = [USERS[i] for i in order]
    new_user_codes = np.argsort(order)[users[picks]]
    again, again_cohorts = _memoized(
        mech, codes[picks], new_user_codes, seed=2, memo=KEY_1, user_ids=relisted, row_start=999
    )
    np.testing.assert_array_equal(again, reports[picks])
    np.testing.assert_array_equal(again_cohorts, cohorts[picks])
    # Without instantaneous noise the report is the Bloom filter with some bits flipped.
    assert np.any(reports != mech.encoder.encode(codes, VALUES, cohorts))


def test_memo_defaults_to_the_source_key() -> None:
    mech = _permanent_only()
    codes, users = _all_pairs()
    with_memo = _memoized(mech, codes, users, seed=1, memo=RandomSource.from_seed(5).key)
    source_only = _memoized(mech, codes, users, seed=5, memo=None)
    np.testing.assert_array_equal(with_memo[0], source_only[0])
    np.testing.assert_array_equal(with_memo[1], source_only[1])


def test_different_memo_keys_give_independent_permanent_responses_and_cohorts() -> None:
    """Under two memo keys a user's cohorts agree with probability 1/16: binomial test over the
    302 users at P_FAIL / 2 (power 0.99 against an agreement rate of 0.165 instead of 0.0625;
    the same cohort for every user would give 1). No report row is equal: each of the 64 bits of
    two independent permanent responses agrees with probability at most 0.625 (f/2 = 0.25), so
    one of the 1208 rows agrees with probability at most 1208 * 0.625**64 = 1.1e-10."""
    mech = _permanent_only()
    codes, users = _all_pairs()
    first, first_cohorts = _memoized(mech, codes, users, seed=1, memo=KEY_1)
    second, second_cohorts = _memoized(mech, codes, users, seed=1, memo=KEY_2)
    assert not np.any(np.all(first == second, axis=1))
    per_user = slice(None, None, len(VALUES))
    agree = int((first_cohorts[per_user] == second_cohorts[per_user]).sum())
    assert_binomial(agree, len(USERS), 1 / NUM_COHORTS, p_fail=P_FAIL / 2)


def test_memoized_permanent_response_law_across_users_and_values() -> None:
    """2000 users holding two values each, p = 0, q = 1: the flips F = report XOR Bloom filter
    are Bernoulli(f/2 = 1/4) (exact binomial test on 256,000 bits), independent between users
    holding the same value (2x2 chi-square, user i vs i + 1) and between the two values of one
    user (2x2 chi-square); P_FAIL / 4 each. Per-user cohorts are uniform over the 16 cohorts
    (chi-square, P_FAIL / 4). Power 0.99 against a flip rate off by 6.4e-3, a correlation of
    0.021 between users or values, or one cohort drawn with probability 0.11 instead of 1/16.

    Also every report of the first value is distinct: two users agree on all 64 bits with
    probability at most 0.625**64, so some pair of the 2000 does with probability below
    2e6 * 8.7e-14 = 1.7e-7."""
    mech = _permanent_only()
    n_users = 2000
    user_ids: list[object] = [f"u{i}" for i in range(n_users)]
    users = np.repeat(np.arange(n_users, dtype=np.int64), 2)
    codes = np.tile(np.array([0, 1], dtype=np.int64), n_users)
    reports, cohorts = mech.randomize(
        codes,
        VALUES,
        user_codes=users,
        user_ids=user_ids,
        source=RandomSource.from_seed(SEED),
        memo=RandomSource.from_key(KEY_1),
        label="url",
    )
    blooms = mech.encoder.encode(codes, VALUES, cohorts)
    flips = np.unpackbits(reports ^ blooms, axis=1).reshape(n_users, 2, NUM_BITS)
    assert_binomial(flips.sum(), flips.size, 0.25, p_fail=P_FAIL / 4)
    assert_independent(flips[:-1, 0], flips[1:, 0], p_fail=P_FAIL / 4)
    assert_independent(flips[:, 0], flips[:, 1], p_fail=P_FAIL / 4)
    assert_chisquare(
        np.bincount(cohorts[::2], minlength=NUM_COHORTS),
        np.full(NUM_COHORTS, 1 / NUM_COHORTS),
        p_fail=P_FAIL / 4,
    )
    first_value = reports[::2]
    assert len({row.tobytes() for row in first_value}) == n_users


def test_without_users_cohorts_and_permanent_responses_are_drawn_per_row() -> None:
    """One value in 20,000 rows, no user ids, p = 0, q = 1: cohorts are uniform per row
    (chi-square at P_FAIL / 4); flips F = report XOR Bloom filter are Bernoulli(1/4) (binomial,
    P_FAIL / 4) and independent between adjacent rows (chi-square, P_FAIL / 4); a different
    seed draws other cohorts: rows agree with probability 1/16 (binomial, P_FAIL / 4). The memo
    key plays no part. Power 0.99 against a flip rate off by 2.9e-3, a row-to-row correlation
    of 6.6e-3 (e.g. rows of one value sharing their permanent response), or a cohort agreement
    rate off 1/16 by 0.013."""
    mech = _permanent_only()
    n = 20_000
    codes = np.zeros(n, dtype=np.int64)

    def run(seed: int, memo: RandomSource | None = None) -> tuple[np.ndarray, np.ndarray]:
        source = RandomSource.from_seed(seed)
        return mech.randomize(codes, VALUES, source=source, memo=memo, label="url")

    reports, cohorts = run(SEED)
    assert_chisquare(
        np.bincount(cohorts, minlength=NUM_COHORTS),
        np.full(NUM_COHORTS, 1 / NUM_COHORTS),
        p_fail=P_FAIL / 4,
    )
    flips = np.unpackbits(reports ^ mech.encoder.encode(codes, VALUES, cohorts), axis=1)
    assert_binomial(flips.sum(), flips.size, 0.25, p_fail=P_FAIL / 4)
    assert_independent(flips[:-1], flips[1:], p_fail=P_FAIL / 4)
    _, other_cohorts = run(SEED + 1)
    assert_binomial(int((cohorts == other_cohorts).sum()), n, 1 / NUM_COHORTS, p_fail=P_FAIL / 4)
    with_memo = run(SEED, RandomSource.from_key(KEY_1))
    np.testing.assert_array_equal(with_memo[0], reports)
    np.testing.assert_array_equal(with_memo[1], cohorts)


def test_users_must_come_with_their_ids() -> None:
    mech = _permanent_only()
    codes, users = _all_pairs()
    source = RandomSource.from_seed(1)
    with pytest.raises(ParameterError, match="pass both user_codes and user_ids, or neither"):
        mech.randomize(codes, VALUES, user_codes=users, source=source, label="url")
    with pytest.raises(ParameterError, match="pass both user_codes and user_ids, or neither"):
        mech.randomize(codes, VALUES, user_ids=USERS, source=source, label="url")
    with pytest.raises(
        ParameterError, match=r"user_codes must have one entry per row \(1208\), got shape \(5,\)"
    ):
        mech.randomize(
            codes, VALUES, user_codes=users[:5], user_ids=USERS, source=source, label="url"
        )
    with pytest.raises(ParameterError, match="identifiers must be strings, bytes or integers"):
        mech.randomize(
            codes[:2],
            VALUES,
            user_codes=np.array([0, 1]),
            user_ids=["a", 1.5],
            source=source,
            label="url",
        )


@pytest.mark.parametrize("bad", [-1, 3])
def test_user_codes_out_of_range_raise(bad: int) -> None:
    mech = _permanent_only()
    with pytest.raises(ParameterError, match="user_codes"):
        mech.randomize(
            np.array([0, 0]),
            VALUES,
            user_codes=np.array([0, bad]),
            user_ids=["a", "b", "c"],
            source=RandomSource.from_seed(1),
            label="url",
        )


# --- reproducibility -----------------------------------------------------------------------------


def _noisy(hash_scheme: str = "fast") -> BloomRappor:
    return BloomRappor(
        f=0.5,
        p=0.5,
        q=0.75,
        num_bits=100,
        num_hashes=3,
        num_cohorts=8,
        hash_scheme=hash_scheme,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("with_users", [False, True], ids=["rows", "users"])
def test_same_source_same_reports_other_labels_or_keys_differ(with_users: bool) -> None:
    """Equal keys give equal reports and cohorts. Other labels or keys give other reports: with
    p = 0.5, q = 0.75 and f/2 = 0.25 every report bit is 1 with probability in [0.5625, 0.6875]
    independently of the other run, so 2000 x 100 bits agree with probability below
    0.57**200000."""
    mech = _noisy()
    n = 2000
    codes = np.arange(n, dtype=np.int64) % len(VALUES)
    users = {"user_codes": np.arange(n) // 3, "user_ids": list(range(n))} if with_users else {}

    def run(key: bytes, label: str) -> tuple[np.ndarray, np.ndarray]:
        source = RandomSource.from_key(key)
        return mech.randomize(codes, VALUES, source=source, label=label, **users)  # type: ignore[arg-type]

    reports, cohorts = run(KEY_1, "url")
    again = run(KEY_1, "url")
    np.testing.assert_array_equal(again[0], reports)
    np.testing.assert_array_equal(again[1], cohorts)
    assert not np.array_equal(run(KEY_1, "url2")[0], reports)
    assert not np.array_equal(run(KEY_2, "url")[0], reports)


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
@pytest.mark.parametrize("with_users", [False, True], ids=["rows", "users"])
def test_randomize_chunk_invariance(hash_scheme: str, with_users: bool) -> None:
    """Rows [a, b) randomized alone with row_start = a equal the slice of randomizing all rows."""
    mech = _noisy(hash_scheme)
    n = 3001
    codes = (np.arange(n, dtype=np.int64) * 31) % len(VALUES)
    user_codes = (np.arange(n, dtype=np.int64) * 17) % 500
    user_ids: list[object] = [f"u{i}" for i in range(500)]
    source, memo = RandomSource.from_seed(SEED), RandomSource.from_key(KEY_1)

    def run(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        users: dict[str, Any] = (
            {"user_codes": user_codes[start:stop], "user_ids": user_ids, "memo": memo}
            if with_users
            else {}
        )
        return mech.randomize(
            codes[start:stop], VALUES, source=source, label="url", row_start=start, **users
        )

    whole, whole_cohorts = run(0, n)
    for cut in (1, 1233, n - 1):
        first, second = run(0, cut), run(cut, n)
        np.testing.assert_array_equal(np.concatenate([first[0], second[0]]), whole)
        np.testing.assert_array_equal(np.concatenate([first[1], second[1]]), whole_cohorts)
    middle = run(17, 2021)
    np.testing.assert_array_equal(middle[0], whole[17:2021])
    np.testing.assert_array_equal(middle[1], whole_cohorts[17:2021])
    # Padding bits (100 bits in 13 bytes) are zero.
    assert not np.any(whole[:, -1] & 0x0F)


# --- noise law -----------------------------------------------------------------------------------


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
@pytest.mark.parametrize("with_users", [False, True], ids=["rows", "users"])
def test_report_bits_follow_q_star_and_p_star(hash_scheme: str, with_users: bool) -> None:
    """f = 0.3, p = 0.2, q = 0.7 (q* = 0.625, p* = 0.275), 1e5 rows of 5 values, k = 20, h = 3:
    where the row's true Bloom bit is 1 the report bit is 1 with probability q*, where it is 0
    with probability p* (exact binomial tests on about 2.9e5 and 1.7e6 bits, P_FAIL / 2 each).
    With users (one per row) the permanent response is memoized; the law is the same.
    Power 0.99 against |Δ| >= 6.7e-3 on set bits and 2.5e-3 on unset bits, e.g. a permanent
    flip with probability f instead of f/2 (q* = 0.55), or p and q swapped."""
    mech = BloomRappor(
        f=0.3,
        p=0.2,
        q=0.7,
        num_bits=20,
        num_hashes=3,
        num_cohorts=8,
        hash_scheme=hash_scheme,  # type: ignore[arg-type]
    )
    one, zero = _report_probabilities(mech)
    np.testing.assert_allclose(mech.report_probabilities, (float(one), float(zero)), rtol=1e-14)
    n = 100_000
    codes = np.arange(n, dtype=np.int64) % 5
    values = ["alpha", "beta", "gamma", "delta", "epsilon"]
    users: dict[str, Any] = (
        {
            "user_codes": np.arange(n),
            "user_ids": list(range(n)),
            "memo": RandomSource.from_key(KEY_2),
        }
        if with_users
        else {}
    )
    reports, cohorts = mech.randomize(
        codes, values, source=RandomSource.from_seed(SEED), label="law", **users
    )
    truth = np.unpackbits(mech.encoder.encode(codes, values, cohorts), axis=1, count=20).astype(
        bool
    )
    bits = np.unpackbits(reports, axis=1, count=20).astype(bool)
    assert_binomial(bits[truth].sum(), truth.sum(), float(one), p_fail=P_FAIL / 2)
    assert_binomial(bits[~truth].sum(), (~truth).sum(), float(zero), p_fail=P_FAIL / 2)


# --- debiasing -----------------------------------------------------------------------------------

FREQUENCIES = [0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02]


def _rows(n: int, frequencies: list[float]) -> np.ndarray:
    """Value codes with exact counts round(n * frequency), interleaved (no randomness)."""
    counts = [round(n * f) for f in frequencies]
    codes = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return codes[np.argsort(np.arange(codes.size) * 7919 % codes.size, kind="stable")]


def test_debiased_bit_counts_are_unbiased_with_the_stated_variance() -> None:
    """1e5 reports without users, 16 cohorts x 32 bits = 512 cells, f = 0.3, p = 0.2, q = 0.7.
    Given the cohorts, the report sums of the cells are independent sums of Bernoulli(q*) and
    Bernoulli(p*) bits, so each t̂ has mean t (the true bit count) and variance
    (t q*(1 - q*) + (N_c - t) p*(1 - p*)) / (q* - p*)^2, computed here at the true t:

    * per cell, |t̂ - t| / σ < z at P_FAIL / 1536 (Bonferroni over 512 cells, P_FAIL / 3 in all);
    * the total, |Σ (t̂ - t)| / sqrt(Σ σ²) < z at P_FAIL / 3;
    * Σ (t̂ - t)² / σ² is chi-square with 512 df (normal sums of about 6250 bits), two-sided at
      P_FAIL / 3.

    Power 0.99 against a bias of 8.5 σ (about 850 counts) in one cell, or of 0.33 σ in every
    cell (e.g. debiasing with a p* off by 2e-3); and against a true variance 57% above or
    38% below the stated one (e.g. the binomial variance without the 1 / (q* - p*)² factor,
    8x too small).

    The variances returned are the same formula at the plug-in t̂ clipped to [0, N_c]."""
    mech = BloomRappor(f=0.3, p=0.2, q=0.7, num_bits=32, num_hashes=2, num_cohorts=16)
    values = [f"https://site{i}.example/" for i in range(len(FREQUENCIES))]
    codes = _rows(100_000, FREQUENCIES)
    reports, cohorts = mech.randomize(codes, values, source=RandomSource.from_seed(SEED), label="d")
    counts, sizes = mech.bit_counts(reports, cohorts)
    one, zero = (float(x) for x in _report_probabilities(mech))
    debiased, variances = debias_bloom_counts(counts, sizes, one, zero)
    truth_bits = np.unpackbits(mech.encoder.encode(codes, values, cohorts), axis=1, count=32)
    truth = np.zeros((16, 32))
    np.add.at(truth, cohorts, truth_bits)
    n_c = sizes[:, None].astype(np.float64)
    exact = (truth * one * (1 - one) + (n_c - truth) * zero * (1 - zero)) / (one - zero) ** 2
    assert_unbiased(debiased, truth, exact, p_fail=P_FAIL / 1536)
    assert_unbiased((debiased - truth).sum(), 0.0, exact.sum(), p_fail=P_FAIL / 3)
    assert_variance((debiased - truth).ravel(), exact.ravel(), p_fail=P_FAIL / 3)
    plug_in = np.clip(debiased, 0, n_c)
    expected = (plug_in * one * (1 - one) + (n_c - plug_in) * zero * (1 - zero)) / (one - zero) ** 2
    np.testing.assert_allclose(variances, expected, rtol=1e-12)
    np.testing.assert_allclose(debiased, (counts - n_c * zero) / (one - zero), rtol=1e-12)


def test_bit_counts_sum_reports_per_cohort() -> None:
    mech = _noisy()
    codes = np.arange(999, dtype=np.int64) % len(VALUES)
    reports, cohorts = mech.randomize(codes, VALUES, source=RandomSource.from_seed(3), label="c")
    counts, sizes = mech.bit_counts(reports, cohorts)
    assert counts.shape == (8, 100)
    np.testing.assert_array_equal(sizes, np.bincount(cohorts, minlength=8))
    bits = np.unpackbits(reports, axis=1, count=100)
    for cohort in range(8):
        np.testing.assert_array_equal(counts[cohort], bits[cohorts == cohort].sum(axis=0))
    empty_counts, empty_sizes = mech.bit_counts(reports[:0], cohorts[:0])
    assert not empty_counts.any()
    assert not empty_sizes.any()


@pytest.mark.parametrize(
    ("reports_shape", "cohorts", "message"),
    [
        ((10, 12), np.zeros(10, dtype=np.int64), r"reports must have shape \(n, 13\)"),
        ((10, 14), np.zeros(10, dtype=np.int64), r"reports must have shape \(n, 13\)"),
        ((13,), np.zeros(13, dtype=np.int64), r"got \(13,\) and \(13,\)"),
        ((10, 13), np.zeros(9, dtype=np.int64), r"cohorts shape \(n,\), got \(10, 13\) and \(9,\)"),
        ((3, 13), np.array([0, 8, 1]), r"cohorts must be in \[0, 8\), got values in \[0, 8\]"),
        ((3, 13), np.array([0, -1, 7]), r"cohorts must be in \[0, 8\), got values in \[-1, 7\]"),
    ],
)
def test_bit_counts_validation(
    reports_shape: tuple[int, ...], cohorts: np.ndarray, message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        _noisy().bit_counts(np.zeros(reports_shape, dtype=np.uint8), cohorts)


# --- decoding ------------------------------------------------------------------------------------

CANDIDATES = [f"https://example.com/page/{i}" for i in range(30)]
PLANTED = {3: 0.35, 17: 0.25, 0: 0.2, 29: 0.15, 11: 0.05}  # candidate index: frequency (sum 1)
ELSEWHERE = [f"https://elsewhere.example/{j}" for j in range(200)]  # never candidates


def _decoder(hash_scheme: str = "fast") -> BloomRappor:
    return BloomRappor(
        f=0.2,
        p=0.25,
        q=0.75,
        num_bits=128,
        num_hashes=2,
        num_cohorts=32,
        hash_scheme=hash_scheme,  # type: ignore[arg-type]
    )


def _collect(
    mech: BloomRappor, planted: dict[int, float], n: int, seed: int, *, extra: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bit counts, cohort sizes and true counts of n rows holding the planted candidates, plus
    ``extra`` rows spread evenly over 200 strings that are not candidates."""
    values = CANDIDATES + ELSEWHERE
    true = np.zeros(len(CANDIDATES), dtype=np.int64)
    for index, frequency in planted.items():
        true[index] = round(n * frequency)
    codes = np.concatenate(
        [np.repeat(np.arange(len(CANDIDATES)), true), len(CANDIDATES) + np.arange(extra) % 200]
    )
    reports, cohorts = mech.randomize(
        codes, values, source=RandomSource.from_seed(seed), label="url"
    )
    counts, sizes = mech.bit_counts(reports, cohorts)
    return counts, sizes, true


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
def test_decode_finds_planted_frequencies(hash_scheme: str) -> None:
    """2e5 reports of 5 of the 30 candidates (frequencies 0.35, 0.25, 0.2, 0.15, 0.05), k = 128,
    h = 2, 32 cohorts, f = 0.2, p = 0.25, q = 0.75, decoded at significance P_FAIL / 4:

    * no absent candidate is detected: family-wise probability P_FAIL / 4 (Bonferroni over the
      30 candidates, on the normal approximation of the least-squares estimates);
    * each planted count satisfies |count - true| / std_error < z at P_FAIL / 20 (Bonferroni
      over 5 values, P_FAIL / 4 in all);
    * the unexplained share is 0 within z(P_FAIL / 4) standard errors;
    * all 5 are detected: the smallest (1e4 reports) has a standard error of about 370, so its
      z-score of about 27 misses the detection bound of 5.6 with probability far below 1e-50.

    Total false-failure probability below P_FAIL. Power 0.99 against a bias of 7.8 standard
    errors (about 2.9e3 reports, 1.4% of n) in any count, e.g. debiasing with f instead of f/2,
    and against an unexplained share of 0.11 (7.6 of its standard errors of 0.015)."""
    mech = _decoder(hash_scheme)
    counts, sizes, true = _collect(mech, PLANTED, 200_000, SEED)
    decoding = mech.decode(counts, sizes, CANDIDATES, significance=P_FAIL / 4)
    assert isinstance(decoding, BloomDecoding)
    assert decoding.candidates == tuple(CANDIDATES)
    assert decoding.n == 200_000
    assert decoding.significance == P_FAIL / 4
    assert sorted(decoding.detected.tolist()) == sorted(PLANTED)
    assert decoding.labels == [CANDIDATES[i] for i in decoding.detected.tolist()]
    assert np.all(np.diff(decoding.counts) <= 0)  # by decreasing count
    assert np.all(decoding.p_values < decoding.significance / len(CANDIDATES))
    assert decoding.selected >= len(PLANTED)
    assert_unbiased(
        decoding.counts, true[decoding.detected], decoding.std_errors**2, p_fail=P_FAIL / 20
    )
    assert abs(decoding.unexplained) / decoding.unexplained_std_error < z_bound(P_FAIL / 4)
    estimate = decoding.estimate
    np.testing.assert_array_equal(estimate.counts, decoding.counts)
    assert estimate.n == 200_000


def test_decode_measures_mass_outside_the_candidates() -> None:
    """As above, with 5e4 more reports (20% of 2.5e5) spread evenly over 200 strings that are not
    candidates: the 5 planted ones are detected (z about 27 against a bound of 5.6) and nothing
    else (family-wise P_FAIL / 3); the unexplained share is 0.2 within z(P_FAIL / 3) standard
    errors (about 0.014), and the counts stay unbiased (P_FAIL / 15 each). Power 0.99 against
    an unexplained share off by 0.10 (half of it)."""
    mech = _decoder()
    counts, sizes, true = _collect(mech, PLANTED, 200_000, SEED + 1, extra=50_000)
    decoding = mech.decode(counts, sizes, CANDIDATES, significance=P_FAIL / 3)
    assert sorted(decoding.detected.tolist()) == sorted(PLANTED)
    assert_unbiased(
        decoding.counts, true[decoding.detected], decoding.std_errors**2, p_fail=P_FAIL / 15
    )
    deviation = abs(decoding.unexplained - 0.2) / decoding.unexplained_std_error
    assert deviation < z_bound(P_FAIL / 3)


def test_candidates_never_reported_are_not_detected() -> None:
    """1e5 reports of 200 strings none of which is a candidate: no candidate is detected
    (family-wise P_FAIL / 2) and the unexplained share is 1 within z(P_FAIL / 2) standard
    errors (about 0.022). Power 0.99 against an unexplained share off by 0.16."""
    mech = _decoder()
    counts, sizes, _ = _collect(mech, {}, 0, SEED, extra=100_000)
    decoding = mech.decode(counts, sizes, CANDIDATES, significance=P_FAIL / 2)
    assert decoding.detected.size == 0
    assert decoding.counts.size == decoding.std_errors.size == decoding.p_values.size == 0
    assert decoding.labels == []
    assert abs(decoding.unexplained - 1) / decoding.unexplained_std_error < z_bound(P_FAIL / 2)


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
def test_empty_string_is_a_candidate_like_any_other(hash_scheme: str) -> None:
    """ "" planted at 0.3 of 1e5 reports (with "a" at 0.5 and "b" at 0.2) is detected with an
    unbiased count; the absent "c", "d" are not (significance P_FAIL / 2, counts at P_FAIL / 6
    each). Standard errors are about 260, so each planted z-score exceeds 75."""
    mech = _decoder(hash_scheme)
    values = ["", "a", "b"]
    true = {"": 30_000, "a": 50_000, "b": 20_000}
    codes = np.repeat(np.arange(3, dtype=np.int64), [true[v] for v in values])
    reports, cohorts = mech.randomize(codes, values, source=RandomSource.from_seed(SEED), label="e")
    counts, sizes = mech.bit_counts(reports, cohorts)
    decoding = mech.decode(counts, sizes, ["c", "", "a", "d", "b"], significance=P_FAIL / 2)
    assert sorted(decoding.labels) == ["", "a", "b"]
    expected = [true[label] for label in decoding.labels]  # type: ignore[index]
    assert_unbiased(decoding.counts, expected, decoding.std_errors**2, p_fail=P_FAIL / 6)


@pytest.fixture(scope="module")
def small_counts() -> tuple[BloomRappor, np.ndarray, np.ndarray]:
    mech = _decoder()
    counts, sizes, _ = _collect(mech, {0: 0.6, 1: 0.4}, 20_000, SEED)
    return mech, counts, sizes


def _same_decoding(first: BloomDecoding, second: BloomDecoding) -> None:
    assert first.candidates == second.candidates
    np.testing.assert_array_equal(first.detected, second.detected)
    np.testing.assert_array_equal(first.counts, second.counts)
    np.testing.assert_array_equal(first.std_errors, second.std_errors)
    assert (first.unexplained, first.selected) == (second.unexplained, second.selected)


def test_duplicate_candidates_are_ignored_with_a_warning(
    small_counts: tuple[BloomRappor, np.ndarray, np.ndarray],
) -> None:
    mech, counts, sizes = small_counts
    listed = [CANDIDATES[2], CANDIDATES[0], CANDIDATES[1], CANDIDATES[2], CANDIDATES[0]]
    with pytest.warns(FrameLDPWarning, match=r"2 duplicate candidate\(s\) ignored \(first kept\)"):
        decoded = mech.decode(counts, sizes, listed)
    assert decoded.candidates == (CANDIDATES[2], CANDIDATES[0], CANDIDATES[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unique = mech.decode(counts, sizes, listed[:3])
    _same_decoding(decoded, unique)


def test_text_and_its_utf8_bytes_are_one_candidate(
    small_counts: tuple[BloomRappor, np.ndarray, np.ndarray],
) -> None:
    """The encoder hashes ``"x"`` and ``b"x"`` identically, so as candidates they cannot be told
    apart: they are duplicates (warning, first kept). Today both are detected with half of the
    count each and a standard error half the true one, so each estimate is about 100 standard
    errors from the truth."""
    mech, counts, sizes = small_counts
    listed = [CANDIDATES[0], CANDIDATES[0].encode(), CANDIDATES[1], CANDIDATES[2]]
    with pytest.warns(FrameLDPWarning, match="duplicate"):
        decoded = mech.decode(counts, sizes, listed)
    _same_decoding(decoded, mech.decode(counts, sizes, [CANDIDATES[0], *CANDIDATES[1:3]]))


def test_duplicate_candidate_warning_points_at_the_caller(
    small_counts: tuple[BloomRappor, np.ndarray, np.ndarray],
) -> None:
    mech, counts, sizes = small_counts
    with pytest.warns(FrameLDPWarning) as record:
        mech.decode(counts, sizes, ["a", "a"])
    assert record[0].filename == __file__


def test_candidates_may_be_any_sequence_of_strings(
    small_counts: tuple[BloomRappor, np.ndarray, np.ndarray],
) -> None:
    mech, counts, sizes = small_counts
    _same_decoding(
        mech.decode(counts, sizes, tuple(CANDIDATES[:4])),
        mech.decode(counts, sizes, CANDIDATES[:4]),
    )


@pytest.mark.parametrize(
    ("candidates", "error", "message"),
    [
        (["a", 1], DomainError, "candidates must be strings; got 1 of type int at position 1"),
        (
            ["a", "b", None],
            DomainError,
            "candidates must be strings; got None of type NoneType at position 2",
        ),
        ([1.5], DomainError, "candidates must be strings; got 1.5 of type float at position 0"),
        ([], ParameterError, "candidates must hold at least one string, got none"),
        ("abc", ParameterError, "candidates must be a list of strings, got str"),
        (None, ParameterError, "candidates must be a list of strings, got NoneType"),
        ({"a", "b"}, ParameterError, "candidates must be a list of strings, got set"),
    ],
    # Sorted: a set's text changes from process to process, and pytest-xdist's workers must
    # collect the same test ids.
    ids=lambda value: str(sorted(value)) if isinstance(value, set) else str(value),
)
def test_bad_candidates_raise(
    small_counts: tuple[BloomRappor, np.ndarray, np.ndarray],
    candidates: object,
    error: type[Exception],
    message: str,
) -> None:
    mech, counts, sizes = small_counts
    with pytest.raises(error, match=f"^{message}"):
        mech.decode(counts, sizes, candidates)  # type: ignore[arg-type]


@pytest.mark.parametrize("significance", [0, 0.0, 1, 1.5, -0.1, math.nan, True, "0.05"])
def test_bad_significance_raises(
    small_counts: tuple[BloomRappor, np.ndarray, np.ndarray], significance: object
) -> None:
    mech, counts, sizes = small_counts
    with pytest.raises(ParameterError, match="significance must be in"):
        mech.decode(counts, sizes, CANDIDATES, significance=significance)  # type: ignore[arg-type]


def test_decode_rejects_mismatched_counts(
    small_counts: tuple[BloomRappor, np.ndarray, np.ndarray],
) -> None:
    mech, counts, sizes = small_counts
    with pytest.raises(ParameterError, match=r"bit counts must have shape \(32, 128\)"):
        mech.decode(counts[:, :64], sizes, CANDIDATES)
    with pytest.raises(ParameterError, match="cannot decode from n=0 reports"):
        mech.decode(np.zeros_like(counts), np.zeros_like(sizes), CANDIDATES)
