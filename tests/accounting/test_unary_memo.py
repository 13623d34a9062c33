"""The exact pure loss of one person's memoized unary-encoding reports
(:mod:`frameldp.accounting.unary_memo`), against an independent enumeration: every pair of
inputs, every permanent vector of every distinct value and every report, with exact fractions.
The module's per-bit decomposition must give the same number (rounded up by its small margin).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pandas as pd
import pytest

import frameldp
from frameldp.accounting import MemoizedEvent, RandomizedResponseEvent, event_from_dict
from frameldp.accounting.unary_memo import unary_memo_losses
from frameldp.errors import ParameterError


def _reports_law(
    values: tuple[int, ...], bits: int, one: Fraction, zero: Fraction, flip: Fraction
) -> dict[tuple[int, ...], Fraction]:
    """The exact law of a person's reports (all bits of all reports, flattened), summing over
    the permanent vector of each distinct value."""
    distinct = sorted(set(values))
    law: dict[tuple[int, ...], Fraction] = {}
    vectors = list(itertools.product((0, 1), repeat=bits))
    for held in itertools.product(vectors, repeat=len(distinct)):
        weight = Fraction(1)
        for value, vector in zip(distinct, held, strict=True):
            for j, bit in enumerate(vector):
                start = one if j == value else zero  # the empty set (value -1) sets no bit
                weight *= start if bit else 1 - start
        permanent = dict(zip(distinct, held, strict=True))
        for reports in itertools.product(vectors, repeat=len(values)):
            chance = weight
            for value, report in zip(values, reports, strict=True):
                for bit, sent in zip(permanent[value], report, strict=True):
                    chance *= 1 - flip if bit == sent else flip
            key = tuple(b for report in reports for b in report)
            law[key] = law.get(key, Fraction(0)) + chance
    return law


def _enumerated_loss(
    bits: int, reports: int, one: Fraction, zero: Fraction, flip: Fraction, empty: bool = False
) -> mpmath.mpf:
    values = [*range(bits), *([-1] if empty else [])]
    inputs = list(itertools.product(values, repeat=reports))
    laws = {x: _reports_law(x, bits, one, zero, flip) for x in inputs}
    worst = max(laws[a][y] / laws[b][y] for a in inputs for b in inputs for y in laws[a])
    with mpmath.workdps(40):
        return mpmath.log(mpmath.mpf(worst.numerator) / worst.denominator)


CASES = [
    # bits, reports, permanent_one, permanent_zero, flip: L-SUE (symmetric) and L-OUE (1/2, q)
    (3, 2, Fraction(7, 8), Fraction(1, 8), Fraction(1, 4)),
    (3, 2, Fraction(1, 2), Fraction(1, 5), Fraction(1, 3)),
    (2, 3, Fraction(3, 4), Fraction(1, 4), Fraction(1, 8)),
    (2, 3, Fraction(1, 2), Fraction(1, 10), Fraction(1, 5)),
]


@pytest.mark.parametrize(("bits", "reports", "one", "zero", "flip"), CASES)
def test_the_per_bit_sum_is_the_enumerated_exact_loss(
    bits: int, reports: int, one: Fraction, zero: Fraction, flip: Fraction
) -> None:
    exact = _enumerated_loss(bits, reports, one, zero, flip)
    found = unary_memo_losses(bits, one, zero, flip, reports)[reports - 1]
    assert found >= exact
    assert found <= exact + 1e-7


@pytest.mark.parametrize(("bits", "reports", "one", "zero", "flip"), CASES[::2])
def test_an_empty_set_among_the_inputs_is_enumerated_too(
    bits: int, reports: int, one: Fraction, zero: Fraction, flip: Fraction
) -> None:
    """RAPPOR takes set-valued cells of at most one value, so an input may be the empty set
    (the zero vector): without it, epsilon 4 / epsilon_inf 6 over two values stated 9.72 for
    three reports where a person whose cells are {a}, {}, {b} loses 10.08 (found by the attack
    review of issue 36)."""
    exact = _enumerated_loss(bits, reports, one, zero, flip, empty=True)
    found = unary_memo_losses(bits, one, zero, flip, reports, empty=True)[reports - 1]
    assert found >= exact
    assert found <= exact + 1e-7


def test_rappor_over_sets_states_at_least_a_loss_with_an_empty_cell() -> None:
    mechanism = frameldp.Rappor(4.0, domain=["a", "b"], epsilon_infinity=6.0)
    frame = pd.DataFrame({"user": [1, 1, 1], "value": [["a"], [], ["b"]]})
    reports = frame.ldp.privatize({"value": mechanism}, user="user", memo_key=bytes(32))
    assert reports.ldp.privacy.epsilon >= 10.0807


def test_one_report_is_the_end_to_end_channel() -> None:
    """One report of a memoized RAPPOR costs its end-to-end epsilon_1 (the mechanism's)."""
    mechanism = frameldp.Rappor(1.0, domain=list(range(9)), epsilon_infinity=3.0)
    losses = mechanism._exact_person_losses()
    assert losses[0] == pytest.approx(mechanism.privacy.epsilon, abs=1e-7)
    assert losses[0] >= mechanism.privacy.epsilon


def test_a_person_with_two_rows_is_charged_the_exact_loss() -> None:
    """One-hot RAPPOR over 9 values at epsilon_1 = 1, epsilon_inf = 3, two rows per person:
    3.0346 stated, where two uses of the instantaneous response on every bit gave 14.6."""
    mechanism = frameldp.Rappor(1.0, domain=list(range(9)), epsilon_infinity=3.0)
    frame = pd.DataFrame({"user": [0, 0, 1, 1], "value": [0, 3, 5, 5]})
    reports = frame.ldp.privatize({"value": mechanism}, user="user", memo_key=bytes(32))
    stated = reports.ldp.privacy.epsilon
    assert stated == pytest.approx(3.0346, abs=1e-4)
    instant, uses = mechanism._instant_event()
    assert instant is not None
    assert 2 * uses * instant.pure_epsilon == pytest.approx(14.64, abs=0.01)


def test_the_exact_losses_travel_with_the_event_and_are_checked() -> None:
    """A ledger or a file holds the event's exact losses; malformed ones are refused."""
    one = RandomizedResponseEvent(1.0, 2)
    event = MemoizedEvent(one, RandomizedResponseEvent(3.0, 2), 2, "m", one, 4, (1.0, 2.5))
    assert event_from_dict(event.to_dict()) == event
    assert event.pure_epsilon == pytest.approx(2.5)
    assert event.repeated(3)[0].pure_epsilon == pytest.approx(2.5 + 4 * 4 * 1.0)
    for bad in ((2.0, 1.0), (-1.0,), ("x",), "1.0", (float("inf"),)):
        with pytest.raises(ParameterError, match="exact"):
            MemoizedEvent(one, RandomizedResponseEvent(3.0, 2), 2, "m", one, 4, bad)
