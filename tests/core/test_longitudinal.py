"""Longitudinal k-ary randomized response (L-GRR): a memoized permanent response, a fresh
instantaneous one, epsilon_1 and epsilon_inf against mpmath, and the folding of memoized reports
in accountants and the ledger.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

import frameldp
from _stats import P_FAIL
from frameldp.accounting import Accountant, MemoizedEvent, RandomizedResponseEvent
from frameldp.accounting.events import event_from_dict
from frameldp.core.mechanisms._memo import row_digests
from frameldp.core.randomness import RandomSource

DOMAIN = ["AA", "DL", "UA", "WN", "B6"]
MEMO, OTHER_MEMO = bytes(range(32)), bytes(range(1, 33))
_ONE = 1 << 64


def _users(count: int, repeats: int = 1) -> np.ndarray:
    ids = pa.array([f"u{i // repeats}" for i in range(count)])
    return row_digests(ids, "c", "uid", 0, RandomSource.from_key(MEMO))


@pytest.mark.parametrize(
    ("epsilon", "infinity", "k"), [(1.0, 3.0, 5), (0.5, 0.5, 2), (2.0, 8.0, 100), (0.1, 5.0, 3)]
)
def test_epsilon_one_and_infinity_are_exact_and_never_below(
    epsilon: float, infinity: float, k: int
) -> None:
    """The end-to-end channel of two k-RR stages is k-RR with keep probability
    ``(1 - m1)(1 - m2) + m1 m2 / (k - 1)``; its epsilon and the permanent one, computed at 50
    digits from the realized numerators, are what the guarantee reports, rounded up by at most
    1e-12 relative, and never above the requested epsilons by more than the float margin."""
    mech = frameldp.RandomizedResponse(epsilon, domain=list(range(k)), epsilon_infinity=infinity)
    mpmath.mp.dps = 50
    m1 = mpmath.mpf(mech._permanent_numerator) / _ONE
    m2 = mpmath.mpf(mech._move_numerator) / _ONE
    keep = (1 - m1) * (1 - m2) + m1 * m2 / (k - 1)
    exact_one = float(mpmath.log(keep * (k - 1) / (1 - keep)))
    exact_infinity = float(mpmath.log((1 - m1) * (k - 1) / m1))
    parameters = mech.guarantee("memo").parameters
    assert exact_one <= parameters["epsilon_1"] <= exact_one * (1 + 1e-12)
    assert exact_infinity <= parameters["epsilon_infinity"] <= exact_infinity * (1 + 1e-12)
    assert parameters["epsilon_1"] <= epsilon * (1 + 1e-9)
    assert parameters["epsilon_infinity"] <= infinity * (1 + 1e-9)
    assert mech.privacy.epsilon == parameters["epsilon_1"]
    assert mech.keep_probability == pytest.approx(float(keep), rel=1e-15)


def test_reports_follow_the_end_to_end_channel() -> None:
    """One report each of 60,000 users holding bucket 0 (k = 5, epsilon 1, epsilon_inf 3):
    the report histogram against ``(p, q, q, q, q)`` of the end-to-end channel, chi-square at
    P_FAIL (power: a 2% shift of p is 7 sigma)."""
    mech = frameldp.RandomizedResponse(1.0, domain=DOMAIN, epsilon_infinity=3.0)
    n = 60_000
    reports = mech.randomize(
        np.zeros(n, dtype=np.int64),
        source=RandomSource.from_seed(3),
        label="c",
        users=_users(n),
        memo=RandomSource.from_key(MEMO),
    )
    p, q = mech.support_probabilities
    counts = np.bincount(reports, minlength=5)
    assert stats.chisquare(counts, n * np.array([p, q, q, q, q])).pvalue > P_FAIL


def test_a_user_keeps_the_permanent_response_of_a_value_and_redraws_it_for_a_new_one() -> None:
    """With epsilon = epsilon_inf the instantaneous response keeps the permanent one, so the
    reports *are* the permanent responses:

    * two calls with different keys, rows in another order, same memo key: equal per (user,
      value);
    * another memo key: different (2,000 users, each equal with probability
      ``p^2 + 4 q^2 < 0.6`` at epsilon 1, all equal below 1e-400);
    * the same users with another value: the permanent response is redrawn, independent of the
      first (agreement of the two reports at the ``p q + q p + 3 q^2`` rate, not 1);
    * different users with the same value: independent (chi-square against k-RR at P_FAIL).
    """
    mech = frameldp.RandomizedResponse(1.0, domain=DOMAIN, epsilon_infinity=1.0)
    assert mech._move_numerator == 0
    n = 2000
    users, codes = _users(n), np.zeros(n, dtype=np.int64)

    def run(key: bytes, memo: bytes, order: np.ndarray, values: np.ndarray) -> np.ndarray:
        out = np.empty(n, dtype=np.int64)
        out[order] = mech.randomize(
            values[order],
            source=RandomSource.from_key(key),
            label="c",
            users=users[order],
            memo=RandomSource.from_key(memo),
        )
        return out

    identity = np.arange(n)
    first = run(bytes(32), MEMO, identity, codes)
    # Different users holding the same value are unlinked: their permanent responses follow
    # the k-RR histogram (shared noise would make them all equal).
    p, q = mech.support_probabilities
    expected = n * np.array([p, q, q, q, q])
    assert stats.chisquare(np.bincount(first, minlength=5), expected).pvalue > P_FAIL
    again = run(bytes([7] * 32), MEMO, identity[::-1], codes)
    np.testing.assert_array_equal(first, again)
    assert np.mean(run(bytes(32), OTHER_MEMO, identity, codes) == first) < 0.7
    moved = run(bytes(32), MEMO, identity, codes + 1)
    agree = 2 * p * q + 3 * q * q
    low, high = stats.binom.interval(1 - P_FAIL, n, agree)
    assert low <= np.sum(moved == first) <= high


def test_the_memoized_event_charges_one_report_then_the_instantaneous_responses() -> None:
    """One report costs epsilon_1; r >= 2 of one person sharing the memo cost r uses of the
    instantaneous response, whatever their values (the r compositions of epsilon_1 do not bound
    them, nor does epsilon_inf once values change: tests/privacy/test_person_unit.py). An event
    recorded before the instantaneous response was (a ledger of an earlier frameldp) keeps
    its per-value bound, epsilon_inf."""
    one = RandomizedResponseEvent(1.0, 5)
    permanent = RandomizedResponseEvent(3.0, 5)
    instant = RandomizedResponseEvent(1.2, 5)
    event = MemoizedEvent(one, permanent, 1, "m", instant)
    assert event_from_dict(event.to_dict()) == event
    assert Accountant.of([(event, 1)]).pure_epsilon == 1.0
    assert Accountant.of([(event, 2)]).pure_epsilon == pytest.approx(2.4)
    assert Accountant.of([(event, 365)]).pure_epsilon == pytest.approx(365 * 1.2)
    doubled = MemoizedEvent(one, permanent, 2, "m", instant)
    for order in (1.5, 2.0, 8.0, 64.0):
        assert doubled.rdp(order) == pytest.approx(2 * instant.rdp(order))
        assert event.rdp(order) == one.rdp(order)
    unmemoized = Accountant.of([(MemoizedEvent(one, permanent, instant=instant), 365)])
    assert unmemoized.pure_epsilon == pytest.approx(365.0)
    legacy = MemoizedEvent(one, permanent, 1, "m")
    assert event_from_dict(legacy.to_dict()) == legacy
    assert Accountant.of([(legacy, 365)]).pure_epsilon == 3.0
    silent = MemoizedEvent(one, permanent, 1, "m", None, 0)
    assert event_from_dict(silent.to_dict()) == silent
    assert Accountant.of([(silent, 1)]).pure_epsilon == 1.0
    with pytest.raises(frameldp.ParameterError, match="no noise"):
        Accountant.of([(silent, 2)]).pure_epsilon  # noqa: B018
    with pytest.raises(frameldp.ParameterError, match="permanent"):
        MemoizedEvent(permanent, one)


def test_bad_longitudinal_parameters_are_refused() -> None:
    with pytest.raises(frameldp.ParameterError, match="epsilon_infinity"):
        frameldp.RandomizedResponse(2.0, domain=DOMAIN, epsilon_infinity=1.0)
    with pytest.raises(frameldp.ParameterError, match="epsilon_infinity"):
        frameldp.RandomizedResponse(1.0, domain=DOMAIN, epsilon_infinity=math.nan)
    mech = frameldp.RandomizedResponse(1.0, domain=DOMAIN)
    with pytest.raises(frameldp.ParameterError, match="epsilon_infinity"):
        mech.randomize(
            np.zeros(3, np.int64), source=RandomSource.from_seed(1), label="c", users=_users(3)
        )


def test_a_year_of_nightly_collections_is_charged_each_persons_loss() -> None:
    """365 nightly k-RR releases of the same people. Memoized: a person whose value changes
    between nights is not protected by epsilon_inf (tests/privacy/test_person_unit.py), so
    the ledger charges 365 instantaneous responses (1.0946 each here), no less than 365 fresh
    reports (365 x 1). Before issue 36 it charged epsilon_inf = 3, RAPPOR's bound for one
    unchanged value, which the guarantee still states as epsilon_infinity."""
    import pandas as pd

    frame = pd.DataFrame({"uid": range(50), "carrier": [DOMAIN[i % 5] for i in range(50)]})
    memoized, fresh = frameldp.Ledger(":memory:"), frameldp.Ledger(":memory:")
    for book in (memoized, fresh):
        book.set_budget("nightly", epsilon=1000.0)
    mechanism = frameldp.RandomizedResponse(1.0, domain=DOMAIN, epsilon_infinity=3.0)
    for _ in range(365):
        frame.ldp.privatize(
            {"carrier": mechanism}, user="uid", memo_key=MEMO, ledger=memoized, budget="nightly"
        )
        frame.ldp.krr("carrier", 1.0, domain=DOMAIN, ledger=fresh, budget="nightly")
    instant, uses = mechanism._instant_event()
    assert instant is not None
    assert memoized.spent("nightly") == pytest.approx(365 * uses * instant.epsilon, rel=1e-9)
    assert fresh.spent("nightly") == pytest.approx(365.0, rel=1e-9)
    assert memoized.spent("nightly") >= fresh.spent("nightly")
    assert mechanism.guarantee("m").epsilon_infinity == pytest.approx(3.0, rel=1e-9)
