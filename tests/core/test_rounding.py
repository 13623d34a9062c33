"""Directed rounding of privacy parameters, against 50-digit mpmath values."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest

from frameldp.accounting import PrivacyGuarantee, compose
from frameldp.accounting.rounding import log_upper, round_up

MAX_ULPS_ABOVE = 8  # log_upper adds 4 ulps to a result accurate to about 2


def _mp_log(ratio: Fraction) -> mpmath.mpf:
    with mpmath.workdps(50):
        return mpmath.log(mpmath.mpf(ratio.numerator)) - mpmath.log(mpmath.mpf(ratio.denominator))


def _ulps_above(value: float, exact: mpmath.mpf) -> float:
    with mpmath.workdps(50):
        return float((mpmath.mpf(value) - exact) / math.ulp(value))


RATIOS = [
    Fraction(2**60 + 1, 2**60),  # 1 + 2**-60
    1 + Fraction(1, 10**12),
    1 + Fraction(1, 3 * 10**7),
    Fraction(3, 2),
    Fraction(2**64 - 1, 2**63),  # just below 2: log1p branch
    Fraction(2),
    Fraction(2**64 + 1, 2**63),  # just above 2: log branch
    Fraction(271828182845904523536, 10**20),
    Fraction(10**6, 7),
    Fraction(2**64 - 1, 1),
    Fraction(2**200, 3),
    Fraction(2**999 * 3, 2),
    Fraction(10**400 + 1, 10**100),
]


@pytest.mark.parametrize("ratio", RATIOS, ids=lambda r: f"{float(r):.17g}")
def test_log_upper_is_a_tight_upper_bound(ratio: Fraction) -> None:
    exact = _mp_log(ratio)
    value = log_upper(ratio)
    assert mpmath.mpf(value) >= exact
    assert _ulps_above(value, exact) <= MAX_ULPS_ABOVE


def test_log_upper_is_an_upper_bound_for_huge_numerator_and_denominator() -> None:
    ratio = Fraction(2**100_000 + 12_345, 2**99_000 - 1)  # about 2**1000
    assert mpmath.mpf(log_upper(ratio)) >= _mp_log(ratio)


def test_log_upper_of_one_is_zero_and_below_one_raises() -> None:
    assert log_upper(Fraction(1)) == 0.0
    with pytest.raises(ValueError, match="ratio must be >= 1"):
        log_upper(Fraction(999, 1000))


@pytest.mark.parametrize("value", [0.0, 1e-300, 5e-324, 0.5, 1.0, 44.3, 1e300, -1.0])
def test_round_up_moves_up_by_whole_ulps(value: float) -> None:
    assert round_up(value, 0) == value
    once = round_up(value, 1)
    assert once > value
    assert once == math.nextafter(value, math.inf)
    assert round_up(value, 3) == round_up(round_up(once, 1), 1)
    assert round_up(value) > value


def test_guarantee_rejects_negative_or_non_finite_epsilon() -> None:
    for epsilon in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="epsilon must be finite and >= 0"):
            PrivacyGuarantee(epsilon, "rappor")
    assert PrivacyGuarantee(0.0, "rappor").delta == 0.0


def test_compose_rounds_the_sum_up() -> None:
    parts = [PrivacyGuarantee(0.1, "rappor"), PrivacyGuarantee(0.2, "randomized_response")]
    total = compose(parts)
    exact = Fraction(0.1) + Fraction(0.2)
    assert Fraction(total.epsilon) >= exact
    assert total.parts == tuple(parts)
    assert compose(parts[:1]) is parts[0]
    with pytest.raises(ValueError, match="at least one"):
        compose([])
