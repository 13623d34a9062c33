"""Longitudinal RAPPOR (one-hot, k-hot), OUE, local hashing and subset selection: a memoized
permanent response, a fresh instantaneous one, an end-to-end channel of the mechanism's own
family; epsilon_1 and epsilon_inf against mpmath, the channel and the estimator at P_FAIL, the
reuse of permanent responses and their redraw, and the ledger over many nights.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import frameldp
from _stats import P_FAIL, assert_binomial, assert_chisquare, assert_unbiased
from frameldp.core.randomness import RandomSource

K = 6
MEMO, OTHER_MEMO = bytes(range(32)), bytes(range(1, 33))
_ONE = mpmath.mpf(2) ** 64

Build = Callable[[float, float | None], Any]
MECHANISMS: dict[str, Build] = {
    "rappor": lambda e, inf: frameldp.Rappor(e, domain=list(range(K)), epsilon_infinity=inf),
    "k_hot_rappor": lambda e, inf: frameldp.Rappor(
        e, domain=list(range(K)), max_weight=2, epsilon_infinity=inf
    ),
    "optimized_unary_encoding": lambda e, inf: frameldp.OptimizedUnaryEncoding(
        e, domain=list(range(K)), epsilon_infinity=inf
    ),
    "local_hashing": lambda e, inf: frameldp.LocalHashing(
        e, domain=list(range(K)), epsilon_infinity=inf
    ),
    "binary_local_hashing": lambda e, inf: frameldp.LocalHashing(
        e, domain=list(range(K)), num_buckets=2, epsilon_infinity=inf
    ),
    "subset_selection": lambda e, inf: frameldp.SubsetSelection(
        e, domain=list(range(K)), epsilon_infinity=inf
    ),
    "subset_selection_d4": lambda e, inf: frameldp.SubsetSelection(
        e, domain=list(range(K)), subset_size=4, epsilon_infinity=inf
    ),
}


def _exact(mech: Any) -> tuple[mpmath.mpf, mpmath.mpf, mpmath.mpf, mpmath.mpf]:
    """(epsilon_1, epsilon_inf, p, q) of the end-to-end channel at 50 digits, from the realized
    numerators of the two stages (the module docstrings' chains, computed independently)."""
    mpmath.mp.dps = 50
    if isinstance(mech, frameldp.Rappor):
        # A bit flipped with phi_1, then phi_2: flipped with phi_1 (1 - phi_2) + phi_2 (1 - phi_1).
        f1 = mech._permanent_numerator / _ONE
        f2 = mech._flip_numerator / _ONE
        flip = f1 * (1 - f2) + f2 * (1 - f1)
        m = 2 * mech.max_weight
        return m * mpmath.log((1 - flip) / flip), m * mpmath.log((1 - f1) / f1), 1 - flip, flip
    if isinstance(mech, frameldp.OptimizedUnaryEncoding):
        q1, r = mech._zero_numerator / _ONE, mech._flip_numerator / _ONE
        one = mpmath.mpf(1) / 2 * (1 - r) + mpmath.mpf(1) / 2 * r
        q = q1 * (1 - r) + (1 - q1) * r
        ratio = one * (1 - q) / (q * (1 - one))
        return mpmath.log(ratio), mpmath.log((1 - q1) / q1), one, q
    if isinstance(mech, frameldp.LocalHashing):
        g = mech.num_buckets
        m1, m2 = mech._permanent_numerator / _ONE, mech._move_numerator / _ONE
        keep = (1 - m1) * (1 - m2) + m1 * m2 / (g - 1)
        eps = mpmath.log(keep * (g - 1) / (1 - keep))
        return eps, mpmath.log((1 - m1) * (g - 1) / m1), keep, mpmath.mpf(1) / g
    assert isinstance(mech, frameldp.SubsetSelection)
    k, d = mech.num_bits, mech.subset_size
    p1 = 1 - mech._out_numerator / _ONE
    r = mech._redraw_numerator / _ONE
    p = (1 - r) * p1 + r * mpmath.mpf(d) / k
    q = (p * (d - 1) + (1 - p) * d) / (k - 1)

    def eps(inclusion: Any) -> Any:
        return mpmath.log(inclusion * (k - d) / ((1 - inclusion) * d))

    return eps(p), eps(p1), p, q


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize(("epsilon", "infinity"), [(1.0, 3.0), (0.5, 0.5), (2.0, 8.0), (0.2, 40.0)])
def test_epsilon_one_and_infinity_are_exact_and_never_below(
    name: str, epsilon: float, infinity: float
) -> None:
    """The guarantee's epsilon_1 and epsilon_inf are the exact epsilons of the realized stages
    (50 digits), rounded up by at most 1e-12 relative, and never above the requested ones by more
    than the float margin; the support probabilities are the end-to-end ones."""
    mech = MECHANISMS[name](epsilon, infinity)
    one, permanent, p, q = _exact(mech)
    parameters = mech.guarantee("memo").parameters
    assert float(one) <= parameters["epsilon_1"] <= float(one) * (1 + 1e-12)
    assert float(permanent) <= parameters["epsilon_infinity"] <= float(permanent) * (1 + 1e-12)
    assert parameters["epsilon_1"] <= epsilon * (1 + 1e-9)
    assert parameters["epsilon_infinity"] <= infinity * (1 + 1e-9)
    assert mech.privacy.epsilon == parameters["epsilon_1"]
    assert mech.support_probabilities == pytest.approx((float(p), float(q)), rel=1e-14)
    # The end-to-end channel at epsilon is no more accurate than the one-stage mechanism there.
    single = MECHANISMS[name](epsilon, None)
    assert single.privacy.epsilon >= parameters["epsilon_1"] * (1 - 1e-9)


def _values(name: str, codes: np.ndarray) -> pa.Array:
    if name == "k_hot_rappor":  # the set {code, code + 1}
        return pa.array([[int(c), int(c + 1) % K] for c in codes])
    return pa.array(codes.tolist())


def _reports(
    mech: Any,
    name: str,
    codes: np.ndarray,
    users: list[str],
    *,
    key: bytes = bytes(32),
    memo: bytes | None = MEMO,
    column: str = "c",
) -> pa.Array:
    """Reports of ``codes`` held by ``users`` through the mechanism's column entry point."""
    return mech.privatize_column(
        _values(name, codes),
        column=column,
        source=RandomSource.from_key(key),
        users=pa.array(users),
        user_column="uid",
        memo=None if memo is None else RandomSource.from_memo_key(memo),
    )[column]


def _supports(mech: Any, reports: pa.Array) -> np.ndarray:
    return np.asarray(mech.supports({"c": reports}, column="c"), dtype=np.int64)


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize("with_users", [True, False])
def test_reports_follow_the_end_to_end_channel(name: str, with_users: bool) -> None:
    """40,000 users (one report each) holding value 0 (k-hot: {0, 1}), epsilon 1 and
    epsilon_inf 3, permanent responses memoized per user or drawn per row: every bucket is
    supported at the end-to-end ``p`` (its own) or ``q`` (another), exact binomial tests at
    P_FAIL / k (power: a shift of p by 0.025 is 5 sigma). Shared permanent noise between users
    would make the counts all-or-nothing."""
    mech = MECHANISMS[name](1.0, 3.0)
    n = 40_000
    codes = np.zeros(n, dtype=np.int64)
    users = [f"u{i}" for i in range(n)]
    if with_users:
        reports = _reports(mech, name, codes, users)
    else:
        reports = mech.privatize_column(
            _values(name, codes), column="c", source=RandomSource.from_seed(4)
        )["c"]
    counts = _supports(mech, reports).sum(axis=0)
    p, q = mech.support_probabilities
    own = {0, 1} if name == "k_hot_rappor" else {0}
    for bucket in range(K):
        expected = p if bucket in own else q
        assert_binomial(counts[bucket], n, expected, p_fail=P_FAIL / K)


@pytest.mark.parametrize("name", MECHANISMS)
def test_memoized_estimates_are_unbiased(name: str) -> None:
    """30,000 users over a skewed distribution, epsilon 1, epsilon_inf 4: every debiased count
    within its standard error bound of the truth at P_FAIL / k."""
    mech = MECHANISMS[name](1.0, 4.0)
    n = 30_000
    rng = np.random.default_rng(11)
    codes = rng.choice(K, size=n, p=[0.35, 0.25, 0.15, 0.1, 0.1, 0.05])
    reports = _reports(mech, name, codes, [f"u{i}" for i in range(n)])
    estimate = mech.debias(mech.statistic({"c": reports}, column="c"))
    truth = np.bincount(codes, minlength=K)
    if name == "k_hot_rappor":
        truth = truth + np.roll(truth, 1)
    assert_unbiased(estimate.counts, truth, estimate.variances, p_fail=P_FAIL / K)


@pytest.mark.parametrize("name", MECHANISMS)
def test_a_user_keeps_the_permanent_response_of_a_value_and_redraws_it_for_a_new_one(
    name: str,
) -> None:
    """With epsilon = epsilon_inf the instantaneous response adds nothing, so the reports *are*
    the permanent responses of 2,000 users:

    * another key, rows in reverse order, the same memo key: equal, user by user;
    * another memo key, another value, another column: not the same (each report agrees by
      chance with probability below 0.6, so more than 70% agreement has probability below
      1e-20).
    """
    mech = MECHANISMS[name](1.0, 1.0)
    n = 2000
    users = [f"u{i}" for i in range(n)]
    codes = np.arange(n, dtype=np.int64) % K
    first = _reports(mech, name, codes, users).to_pylist()
    reverse = slice(None, None, -1)
    again = _reports(mech, name, codes[reverse], users[reverse], key=bytes([9] * 32)).to_pylist()
    assert again[reverse] == first

    def agreement(other: list[Any]) -> float:
        return float(np.mean([a == b for a, b in zip(first, other, strict=True)]))

    assert agreement(_reports(mech, name, codes, users, memo=OTHER_MEMO).to_pylist()) < 0.7
    assert agreement(_reports(mech, name, (codes + 1) % K, users).to_pylist()) < 0.7
    assert agreement(_reports(mech, name, codes, users, column="d").to_pylist()) < 0.7


def test_local_hashing_keeps_one_seed_per_user_whatever_the_value() -> None:
    """LOLOHA: a user's hash function (seed) is the same for every value and key under one memo
    key, so a changed value does not show in it; different users' seeds are uniform over the
    family (chi-square at P_FAIL, 20,000 users over 9 seeds)."""
    mech = frameldp.LocalHashing(1.0, domain=list(range(K)), epsilon_infinity=2.0)
    g, n = mech.num_buckets, 20_000
    users = [f"u{i}" for i in range(n)]
    codes = np.arange(n, dtype=np.int64) % K

    def seeds(values: np.ndarray, key: bytes, memo: bytes = MEMO) -> np.ndarray:
        reports = _reports(mech, "local_hashing", values, users, key=key, memo=memo)
        return np.asarray(reports.to_numpy(), dtype=np.int64) // g

    first = seeds(codes, bytes(32))
    np.testing.assert_array_equal(seeds((codes + 1) % K, bytes([3] * 32)), first)
    assert np.mean(seeds(codes, bytes(32), OTHER_MEMO) == first) < 0.3
    counts = np.bincount(first, minlength=mech.num_seeds)
    assert_chisquare(counts, np.full(mech.num_seeds, 1 / mech.num_seeds), p_fail=P_FAIL)


def test_a_k_hot_set_is_one_value_whatever_its_order() -> None:
    """k-hot RAPPOR memoizes per (user, set): {0, 1} listed either way is one value."""
    mech = MECHANISMS["k_hot_rappor"](1.0, 1.0)
    users = pa.array([f"u{i}" for i in range(200)])

    def reports(cells: list[list[int]]) -> list[Any]:
        return mech.privatize_column(
            pa.array(cells),
            column="c",
            source=RandomSource.from_seed(1),
            users=users,
            user_column="uid",
            memo=RandomSource.from_key(MEMO),
        )["c"].to_pylist()

    assert reports([[0, 1]] * 200) == reports([[1, 0]] * 200)


@pytest.mark.parametrize("name", MECHANISMS)
def test_the_spec_rebuilds_the_same_two_stages(name: str) -> None:
    mech = MECHANISMS[name](1.0, 3.0)
    spec = mech.to_spec()
    assert spec["epsilon_infinity"] == 3.0
    rebuilt = frameldp.core.mechanisms.mechanism_from_spec(spec)
    assert rebuilt == mech
    assert rebuilt.to_spec() == spec
    assert rebuilt.support_probabilities == mech.support_probabilities
    assert "epsilon_infinity" not in MECHANISMS[name](1.0, None).to_spec()


@pytest.mark.parametrize("name", MECHANISMS)
def test_bad_longitudinal_parameters_are_refused(name: str) -> None:
    for epsilon, infinity in [(2.0, 1.0), (1.0, math.nan), (1.0, -1.0), (1.0, True), (1.0, "3")]:
        with pytest.raises(frameldp.ParameterError, match="epsilon_infinity"):
            MECHANISMS[name](epsilon, infinity)
    one_stage = MECHANISMS[name](1.0, None)
    with pytest.raises(frameldp.ParameterError, match="epsilon_infinity"):
        _reports(one_stage, name, np.zeros(3, dtype=np.int64), ["a", "b", "c"])


def test_rappor_epsilon_infinity_needs_epsilon_not_f() -> None:
    with pytest.raises(frameldp.ParameterError, match="epsilon_infinity needs epsilon"):
        frameldp.Rappor(f=0.5, domain=list(range(K)), epsilon_infinity=3.0)


@pytest.mark.parametrize("name", MECHANISMS)
def test_many_nights_are_charged_each_persons_loss(name: str) -> None:
    """30 nightly releases of the same people (one row each): memoized, the ledger charges one
    person's 30 reports sharing permanent responses, 30 uses of the instantaneous response
    (each bit of it for the bit vectors), whatever their values; for the unary encodings, the
    exact loss of three reports (tests/accounting/test_unary_memo.py) and 27 uses, which is
    less; without memoization, 30 x epsilon_1. Neither is below what a person whose value
    changes loses; epsilon_inf bounds only the reports of one unchanged value
    (tests/privacy/test_person_unit.py)."""
    frame = pd.DataFrame({"uid": range(40), "c": [i % K for i in range(40)]})
    if name == "k_hot_rappor":
        frame["c"] = [[i % K] for i in range(40)]
    mech, fresh = MECHANISMS[name](1.0, 3.0), MECHANISMS[name](1.0, None)
    memoized_book, fresh_book = frameldp.Ledger(":memory:"), frameldp.Ledger(":memory:")
    for book in (memoized_book, fresh_book):
        book.set_budget("nightly", epsilon=1e6)
    for _ in range(30):
        frame.ldp.privatize(
            {"c": mech}, user="uid", memo_key=MEMO, ledger=memoized_book, budget="nightly"
        )
        frame.ldp.privatize({"c": fresh}, ledger=fresh_book, budget="nightly")
    instant, uses = mech._instant_event()
    assert instant is not None
    expected = 30 * uses * instant.pure_epsilon
    exact = mech._exact_person_losses()
    if exact:
        assert len(exact) == 3
        expected = exact[2] + 27 * uses * instant.pure_epsilon
    assert memoized_book.spent("nightly") == pytest.approx(expected, rel=1e-9)
    assert fresh_book.spent("nightly") == pytest.approx(30 * fresh.privacy.epsilon, rel=1e-9)
    assert memoized_book.spent("nightly") >= fresh_book.spent("nightly") * (1 - 1e-12)


def test_a_huge_epsilon_infinity_still_draws_noise() -> None:
    """RAPPOR's permanent flip probability never rounds to 0: at epsilon_inf = 1500 it is
    2**-64, and the realized epsilon_inf (88.7) is what the guarantee states."""
    mech = frameldp.Rappor(1.0, domain=list(range(K)), epsilon_infinity=1500.0)
    assert mech._permanent_numerator == 1
    infinity = mech.guarantee("m").parameters["epsilon_infinity"]
    assert infinity == pytest.approx(2 * math.log(2.0**64 - 1), rel=1e-12)


def test_the_automatic_choice_checks_epsilon_infinity_first() -> None:
    with pytest.raises(frameldp.ParameterError, match="at most epsilon_infinity"):
        frameldp.choose_mechanism(3.0, domain=list(range(8)), epsilon_infinity=1.0)
    chosen = frameldp.choose_mechanism(1.0, domain=list(range(64)), epsilon_infinity=3.0)
    assert chosen.longitudinal
    assert chosen.guarantee("m").parameters["epsilon_infinity"] <= 3.0


MEMOIZING: dict[str, Build] = {
    **MECHANISMS,
    "randomized_response": lambda e, inf: frameldp.RandomizedResponse(
        e, domain=list(range(K)), epsilon_infinity=inf
    ),
    "projective_geometry": lambda e, inf: frameldp.ProjectiveGeometryResponse(
        e, domain=list(range(K)), epsilon_infinity=inf
    ),
}


@pytest.mark.parametrize("name", MEMOIZING)
@pytest.mark.parametrize("scheme", [2, 3])
def test_a_memoized_release_drawn_in_runs_is_the_release_drawn_at_once(
    name: str, scheme: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memoized release digests its users and draws its reports a run of rows at a time, on
    every thread: permanent responses are addressed by (user, value) and instantaneous ones by
    row position, so runs of 7 rows on two threads give the reports of one run over all 300
    rows (120 people holding several rows each), under either memo scheme."""
    from frameldp.core import parallel
    from frameldp.core.mechanisms import _memo

    mech = MEMOIZING[name](1.0, 3.0)
    memo = MEMO if scheme == 2 else frameldp.core.randomness.MEMO_KEY_PREFIX + MEMO
    users = [f"person {i % 120}" for i in range(300)]
    codes = (np.arange(300, dtype=np.int64) * 7) % K
    once = MEMOIZING[name](1.0, 3.0)  # a fresh instance: no cached state shared
    expected = _reports(once, name, codes, users, memo=memo)
    monkeypatch.setattr(_memo, "MEMO_ROWS", 7)
    with parallel.threads(2):
        got = _reports(mech, name, codes, users, memo=memo)
    assert got.equals(expected)


def test_dense_permanent_subsets_under_a_scheme_3_memo_key_are_memoized_and_named_apart() -> None:
    """Under a scheme-3 memo key, dense permanent subsets (k = 64, d = 17) come from the frozen
    fast sampler: with epsilon = epsilon_inf the reports are the permanent subsets, the same per
    (person, value) for rows reversed and another call key, different under another memo key
    (2,000 people, each subset of 17 of 63 equal by chance with probability far below 0.5:
    agreement above 30% has probability below 1e-20); each holds exactly d values, its own
    value with the end-to-end probability (binomial at P_FAIL). Their memo name differs from
    the Floyd-drawn one, so a ledger composes the two."""
    from frameldp.core.mechanisms._memo import memo_name
    from frameldp.core.randomness import MEMO_KEY_PREFIX

    domain = list(range(64))
    mech = frameldp.SubsetSelection(1.0, domain=domain, epsilon_infinity=1.0)
    memo, other = MEMO_KEY_PREFIX + MEMO, MEMO_KEY_PREFIX + OTHER_MEMO
    assert mech._fast_permanent(RandomSource.from_memo_key(memo))
    n = 2000
    users = [f"u{i}" for i in range(n)]
    codes = (np.arange(n, dtype=np.int64) * 5) % 64

    def reports(values: np.ndarray, ids: list[str], key: bytes, memo_key: bytes) -> np.ndarray:
        column = mech.privatize_column(
            pa.array(values.tolist()),
            column="c",
            source=RandomSource.from_key(key),
            users=pa.array(ids),
            user_column="uid",
            memo=RandomSource.from_memo_key(memo_key),
        )["c"]
        return np.asarray(mech.supports({"c": column}, column="c"), dtype=np.int64)

    first = reports(codes, users, bytes(32), memo)
    again = reports(codes[::-1], users[::-1], bytes([9] * 32), memo)
    np.testing.assert_array_equal(again[::-1], first)
    assert (first.sum(axis=1) == mech.subset_size).all()
    assert np.mean((reports(codes, users, bytes(32), other) == first).all(axis=1)) < 0.3
    held = int(first[np.arange(n), codes].sum())
    p, _ = mech.support_probabilities
    assert_binomial(held, n, p, p_fail=P_FAIL)
    scheme_3 = RandomSource.from_memo_key(memo)
    named = mech.memo_id(scheme_3, "c", user_type="text")
    assert named != memo_name(scheme_3, ("c", mech._stream_suffix, "text"))
    scheme_2 = RandomSource.from_memo_key(MEMO)
    assert mech.memo_id(scheme_2, "c", user_type="text") == memo_name(
        scheme_2, ("c", mech._stream_suffix, "text")
    )


@pytest.mark.parametrize("scheme", [2, 3])
def test_user_ids_that_do_not_match_the_rows_are_refused(scheme: int) -> None:
    """(Attack review) A memoized column refuses fewer (or more) user ids than values, and a
    dictionary user column whose rows point at a null entry of its dictionary (a null id the
    array does not count as null), naming the row: never a report without its person, never
    an IndexError."""
    from frameldp.core.randomness import MEMO_KEY_PREFIX

    memo = RandomSource.from_memo_key(MEMO if scheme == 2 else MEMO_KEY_PREFIX + MEMO)
    for build in (MECHANISMS["optimized_unary_encoding"], MEMOIZING["randomized_response"]):
        mech = build(1.0, 3.0)
        for ids in (70, 130):
            with pytest.raises(frameldp.FrameLDPError, match="users must be one"):
                mech.privatize_column(
                    pa.array(np.arange(100) % K),
                    column="c",
                    source=RandomSource.from_key(bytes(32)),
                    users=pa.array([f"u{i}" for i in range(ids)]),
                    user_column="u",
                    memo=memo,
                )
        holes = pa.DictionaryArray.from_arrays(
            pa.array([0, 1, 2, 1], pa.int32()), pa.array(["a", None, "c"])
        )
        with pytest.raises(frameldp.FrameLDPError, match=r"null user id .* at row 1"):
            mech.privatize_column(
                pa.array([0, 1, 2, 3]),
                column="c",
                source=RandomSource.from_key(bytes(32)),
                users=holes,
                user_column="u",
                memo=memo,
            )
