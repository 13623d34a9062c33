"""frameldp.arguments: every argument check in one order, (owner, name, value, ...), each
error naming the owner, the parameter and a short form of the value."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from frameldp.arguments import (
    MAX_EXACT,
    check_codes,
    check_count,
    check_epsilon,
    check_number,
    check_order,
    check_positive,
    check_probability,
    check_size,
)
from frameldp.errors import ParameterError


@pytest.mark.parametrize("value", [2, 2.0, np.int32(2), np.float32(2.0), Fraction(2), Decimal("2")])
def test_every_kind_of_number_is_a_number(value):
    assert check_number("Owner", "x", value) == 2.0


@pytest.mark.parametrize("value", [True, "2", None, [2], b"2"])
def test_what_is_not_a_number_is_refused_naming_owner_parameter_and_value(value):
    with pytest.raises(ParameterError, match=r"^Owner: x must be a number, got ") as error:
        check_number("Owner", "x", value)
    assert error.value.parameter == "x"


def test_a_number_beyond_the_float_range_is_infinite_never_an_overflow():
    assert check_number("Owner", "x", 10**400) == math.inf
    assert check_number("Owner", "x", -(10**400)) == -math.inf
    with pytest.raises(ParameterError, match="beyond the float range"):
        check_epsilon("Owner", "epsilon", 10**400)


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (lambda v: check_epsilon("O", "epsilon", v), 0, "epsilon must be > 0 and finite, got 0"),
        (lambda v: check_positive("O", "n", v), -1.0, "n must be finite and > 0, got -1.0"),
        (lambda v: check_positive("O", "n", v, allow_zero=True), math.nan, "n must be finite"),
        (lambda v: check_probability("O", "p", v), 1.5, r"p must be in \[0, 1\], got 1.5"),
        (lambda v: check_probability("O", "f", v, low_open=True), 0, r"f must be in \(0, 1\]"),
        (lambda v: check_probability("O", "p", v), math.nan, "p must be a number, got nan"),
        (lambda v: check_count("O", "n", v, 1), 0, "n must be an integer >= 1, got 0"),
        (lambda v: check_count("O", "n", v, 1), 2.0, "n must be an integer >= 1, got 2.0"),
        (lambda v: check_size("O", "k", v, 1, 8), 9, r"k must be an integer in \[1, 8\], got 9"),
        (lambda v: check_order("O", "order", v), 1, r"order \(Rényi alpha\) must be > 1"),
        (lambda v: check_codes("O", "codes", v, 3), [0, 3], r"codes must be in \[0, 3\), got 3"),
    ],
)
def test_each_check_names_its_owner_parameter_and_value(check, value, message):
    with pytest.raises(ParameterError, match=rf"^O: {message}"):
        check(value)


def test_checks_return_the_checked_type():
    assert check_count("O", "n", np.int64(3), 1) == 3
    assert type(check_count("O", "n", np.int64(3), 1)) is int
    assert check_probability("O", "p", Fraction(1, 4)) == 0.25
    assert check_order("O", "order", math.inf) == math.inf
    assert check_codes("O", "codes", [0, 2], 3).dtype == np.int64


# -- the attack review's cases -------------------------------------------------------------------


@pytest.mark.parametrize("value", [Fraction(1, 3), Decimal("0.99999999999999999999")])
def test_a_privacy_parameter_is_never_rounded_toward_less_loss(value):
    """A Fraction or Decimal epsilon, scale or budget is refused: its nearest float may lie
    below it (1/3 -> 0.333...33, below 1/3), which would state less loss than asked."""
    with pytest.raises(ParameterError, match="Fraction or Decimal"):
        check_positive("PureDP", "epsilon", value)


@pytest.mark.parametrize("value", [10**400, 2**64])
def test_counts_beyond_the_exact_float_range_are_refused(value):
    with pytest.raises(
        ParameterError, match=r"count must be an integer in \[1, 9007199254740992\]"
    ):
        check_count("Accountant.compose", "count", value, 1, MAX_EXACT)
    with pytest.raises(ParameterError, match="num_buckets must be an integer in"):
        check_count("RandomizedResponseEvent", "num_buckets", 10**400, 2)


def test_an_order_beyond_the_float_range_is_the_max_divergence():
    assert check_order("rdp", "order", 10**400) == math.inf
    assert check_order("rdp", "order", Fraction(3, 2)) == 1.5
    with pytest.raises(ParameterError, match="must be > 1"):
        check_order("rdp", "order", math.nan)


@pytest.mark.parametrize(
    "codes", [["a"], [math.nan], [1.7], [2**63], [[0, 1], [2]], None, [True, False]]
)
def test_codes_that_are_not_integers_are_refused_never_truncated(codes):
    with pytest.raises(ParameterError, match=r"^RR: codes must be"):
        check_codes("RR", "codes", codes, 3)


def test_a_privacy_events_probability_is_never_rounded_either():
    from frameldp.accounting.events.bloom import BloomRapporEvent

    with pytest.raises(ParameterError, match="Fraction or Decimal"):
        BloomRapporEvent(2, Fraction(1, 3), 0.75, 0.5)
    assert BloomRapporEvent(2, 0.25, 0.75, 0.5).flip_probability == 0.25
