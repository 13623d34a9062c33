"""Argument checks: every parameter check of the mechanisms, the encoders and the privacy
events, in one order, ``check_x(owner, name, value, ...)``.

Each returns the value in its checked type, or raises a
:class:`~frameldp.errors.ParameterError` that names the owner (``"Rappor"``,
``"compare_mechanisms"``), the parameter and a short, truncated form of the value. Numbers are
Python and numpy integers and floats, ``Fraction`` and ``Decimal``; ``bool``, strings and
anything else are refused, and a number beyond the float range (``10**400``) is ``±inf``, never
an ``OverflowError``. A mechanism may take a ``Fraction`` or ``Decimal`` epsilon
(:func:`check_epsilon`): it states the guarantee its rounded probabilities realize, never the
one asked for. A privacy event, a bound or a budget may not (:func:`check_positive`): it states
what it is given. Imports nothing but numpy and the errors (core and accounting use it). The
accounting's checks of delta and of a ledger's budget, whose messages say more, stay beside
them.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from numbers import Real
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from frameldp.errors import ParameterError, shown

__all__ = [
    "MAX_EXACT",
    "check_codes",
    "check_count",
    "check_epsilon",
    "check_number",
    "check_order",
    "check_positive",
    "check_probability",
    "check_size",
]


def check_number(owner: str, name: str, value: object) -> float:
    """``value`` as a float (``±inf`` beyond the float range; callers refuse non-finite
    values where they must)."""
    if isinstance(value, bool) or not isinstance(value, Real | Decimal):
        raise ParameterError(
            f"{owner}: {name} must be a number, got {shown(value)}", parameter=name
        )
    try:
        return float(value)
    except OverflowError:  # an int or Fraction too large for a float
        return math.inf if cast(Any, value) > 0 else -math.inf
    except ValueError:  # Decimal('sNaN')
        return math.nan


def check_epsilon(owner: str, name: str, value: object) -> float:
    """A privacy parameter: a number ``> 0`` and finite."""
    number = check_number(owner, name, value)
    if not (number > 0 and math.isfinite(number)):
        beyond = " (beyond the float range)" if number == math.inf and value != number else ""
        raise ParameterError(
            f"{owner}: {name} must be > 0 and finite, got {shown(value)}{beyond}", parameter=name
        )
    return number


def check_positive(owner: str, name: str, value: object, *, allow_zero: bool = False) -> float:
    """A finite number ``> 0`` (``>= 0`` with ``allow_zero``): a Python or numpy integer or
    float. A ``Fraction`` or ``Decimal`` is refused: its nearest float may lie on either side of
    it, and a privacy parameter (an epsilon, a scale, a budget) must not be rounded toward less
    loss than the caller stated."""
    if isinstance(value, Fraction | Decimal):
        raise ParameterError(
            f"{owner}: {name} must be an int or a float (a Fraction or Decimal would be rounded "
            f"to the nearest float, possibly toward less privacy loss), got {shown(value)}",
            parameter=name,
        )
    number = check_number(owner, name, value)
    low_ok = number >= 0.0 if allow_zero else number > 0.0
    if not (low_ok and math.isfinite(number)):
        bound = ">= 0" if allow_zero else "> 0"
        raise ParameterError(
            f"{owner}: {name} must be finite and {bound}, got {shown(value)}", parameter=name
        )
    return number


def check_probability(owner: str, name: str, value: object, *, low_open: bool = False) -> float:
    """A probability in ``[0, 1]`` (``(0, 1]`` with ``low_open``)."""
    number = check_number(owner, name, value)
    bound = "(0, 1]" if low_open else "[0, 1]"
    if not math.isfinite(number):
        raise ParameterError(
            f"{owner}: {name} must be a number, got {shown(value)}", parameter=name
        )
    if not (number > 0.0 if low_open else number >= 0.0) or number > 1.0:
        raise ParameterError(
            f"{owner}: {name} must be in {bound}, got {shown(value)}", parameter=name
        )
    return number


MAX_COUNT = 2**1023
"""The largest count an argument may be by default: it converts to a finite float."""

MAX_EXACT = 2**53
"""The largest count of repetitions (compositions, people) an argument may be: every integer up
to it is exact as a float, and the accounting's float arithmetic stays finite."""


def check_count(
    owner: str, name: str, value: object, minimum: int, maximum: int = MAX_COUNT
) -> int:
    """An integer in ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ParameterError(
            f"{owner}: {name} must be an integer >= {minimum}, got {shown(value)}", parameter=name
        )
    return check_size(owner, name, value, minimum, maximum)


def check_size(owner: str, name: str, value: object, low: int, high: int) -> int:
    """An integer in ``[low, high]``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | np.integer)
        or not low <= value <= high
    ):
        raise ParameterError(
            f"{owner}: {name} must be an integer in [{low}, {high}], got {shown(value)}",
            parameter=name,
        )
    return int(value)


def check_order(owner: str, name: str, value: object) -> float:
    """A Rényi order ``alpha > 1`` (``inf`` allowed: the max divergence; an order beyond the
    float range is ``inf``)."""
    if isinstance(value, bool) or not isinstance(value, Real | Decimal):
        raise ParameterError(
            f"{owner}: {name} (Rényi alpha) must be a number > 1, got {shown(value)}",
            parameter=name,
        )
    order = check_number(owner, name, value)
    if not order > 1.0:  # nan too
        raise ParameterError(
            f"{owner}: {name} (Rényi alpha) must be > 1, got {order!r}", parameter=name
        )
    return order


def check_codes(owner: str, name: str, value: object, k: int) -> NDArray[np.int64]:
    """A one-dimensional int64 array of buckets in ``[0, k)``; the error names the first code
    outside and its position. Codes are integers: floats (``1.7``) and anything else are
    refused, never truncated."""
    try:
        given = np.asarray(value)
    except (ValueError, TypeError):  # ragged nesting
        given = np.asarray(None)
    empty = given.size == 0 and given.dtype.kind == "f"  # [] is float64 to numpy
    if given.dtype.kind not in "iu" and not empty:
        raise ParameterError(
            f"{owner}: {name} must be integers, got {shown(value)}", parameter=name
        )
    if given.dtype.kind == "u" and given.size and given.max() > np.iinfo(np.int64).max:
        raise ParameterError(
            f"{owner}: {name} must be in [0, {k}), got {shown(int(given.max()))}", parameter=name
        )
    array = given.astype(np.int64)
    if array.ndim != 1:
        raise ParameterError(
            f"{owner}: {name} must be one-dimensional, got shape {array.shape}", parameter=name
        )
    if array.size and (array.min() < 0 or array.max() >= k):
        outside = (array < 0) | (array >= k)
        first = int(np.flatnonzero(outside)[0])
        raise ParameterError(
            f"{owner}: {name} must be in [0, {k}), got {int(array[first])} at position {first}",
            parameter=name,
        )
    return array
