"""Memoized stochastic rounding (L-GRR over the levels): one (user, value), one permanent report.

Statistical claims (each at ``P_FAIL / 3``): with ``epsilon_infinity = epsilon`` (no
instantaneous noise), the reports of other people, or of the same person holding another value,
agree with a first night's reports as often as independent draws of the law would
(two-sided binomial on ``ROWS`` rows); the reports of many people, one row each, follow the
end-to-end law (rounding, then k-RR at the end-to-end probabilities; Pearson chi-square).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pyarrow as pa
import pytest

import frameldp
from _stats import P_FAIL, assert_binomial, assert_chisquare
from frameldp.accounting import MemoizedEvent
from frameldp.core import RandomSource, StochasticRounding

BOUNDS: Final = (0.0, 100.0)
ROWS: Final = 20_000
LEVELS: Final = 8
MEMO: Final = RandomSource.from_key(bytes(range(32)))


def _levels(mechanism: StochasticRounding, values: pa.Array, users: pa.Array) -> np.ndarray:
    """Level indices reported for one night (a fresh key, the shared memo key)."""
    out = mechanism.privatize_column(
        values, column="x", source=RandomSource.fresh(), users=users, user_column="u", memo=MEMO
    )["x"].to_numpy()
    return np.rint(out / 100.0 * (LEVELS - 1)).astype(np.int64)


def _law(mechanism: StochasticRounding) -> np.ndarray:
    """The end-to-end law of one report of the value 50 (between levels 3 and 4, even odds)."""
    keep, other = mechanism._rr.support_probabilities
    law = np.full(LEVELS, other)
    law[3] = law[4] = 0.5 * keep + 0.5 * other
    return law


def test_one_value_of_one_person_gets_one_permanent_report_and_others_are_independent() -> None:
    mechanism = StochasticRounding(2.0, bounds=BOUNDS, levels=LEVELS, epsilon_infinity=2.0)
    values = pa.array(np.full(ROWS, 50.0))
    people = pa.array(np.arange(ROWS))
    first = _levels(mechanism, values, people)
    np.testing.assert_array_equal(_levels(mechanism, values, people), first)  # night two
    law = _law(mechanism)
    agree = float(np.sum(law**2))  # two independent reports of the value 50
    others = _levels(mechanism, values, pa.array(np.arange(ROWS) + ROWS))
    assert_binomial(int(np.sum(others == first)), ROWS, agree, p_fail=P_FAIL / 3)
    moved = _levels(mechanism, pa.array(np.full(ROWS, 50.0 + 1e-9)), people)
    assert_binomial(int(np.sum(moved == first)), ROWS, agree, p_fail=P_FAIL / 3)


def test_memoized_reports_follow_the_end_to_end_law_and_state_the_memo() -> None:
    mechanism = StochasticRounding(1.0, bounds=BOUNDS, levels=LEVELS, epsilon_infinity=3.0)
    levels = _levels(mechanism, pa.array(np.full(ROWS, 50.0)), pa.array(np.arange(ROWS)))
    assert_chisquare(np.bincount(levels, minlength=LEVELS), _law(mechanism), p_fail=P_FAIL / 3)
    ((event, _),) = mechanism.guarantee("night-memo").events
    assert isinstance(event, MemoizedEvent)
    assert mechanism.privacy.epsilon <= 1.0 < event.permanent.pure_epsilon <= 3.0 + 1e-9
    assert frameldp.mechanism_from_spec(mechanism.to_spec()) == mechanism
    assert "epsilon_infinity" not in StochasticRounding(1.0, bounds=BOUNDS).to_spec()


def test_memoizing_needs_epsilon_infinity_and_auto_picks_rounding() -> None:
    one_stage = StochasticRounding(1.0, bounds=BOUNDS)
    with pytest.raises(frameldp.ParameterError, match="needs epsilon_infinity"):
        one_stage.privatize_column(
            pa.array([1.0]), column="x", source=RandomSource.fresh(), users=pa.array([1])
        )
    with pytest.raises(frameldp.ParameterError, match="epsilon_infinity"):
        StochasticRounding(2.0, bounds=BOUNDS, epsilon_infinity=1.0)
    chosen = frameldp.choose_mechanism(1.0, bounds=BOUNDS, epsilon_infinity=4.0)
    assert isinstance(chosen, StochasticRounding)
    assert chosen.epsilon_infinity == 4.0


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_two_level_rounding_is_duchis_mechanism(epsilon: float) -> None:
    """Stochastic rounding to two levels reports the upper level with Duchi et al.'s
    probability of ``+C`` (to 1e-12: both laws are realized on integers), which is why
    docs/numeric.md memoizes Duchi's mechanism as ``levels=2``."""
    rounding = StochasticRounding(epsilon, bounds=BOUNDS, levels=2)
    duchi = frameldp.DuchiMechanism(epsilon, bounds=BOUNDS)
    keep, other = rounding._rr.support_probabilities
    for t in (-1.0, -0.3, 0.0, 0.8, 1.0):
        up = (1 + t) / 2
        assert up * keep + (1 - up) * other == pytest.approx(duchi.plus_probability(t), abs=1e-12)
