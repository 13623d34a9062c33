"""Argument checks shared by privacy events and amplification bounds (each names its owner,
parameter and value in a :class:`~frameldp.errors.ParameterError`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from frameldp.errors import ParameterError, shown

__all__ = ["check_count", "check_order", "check_positive"]


def check_order(order: float) -> float:
    """Validate a Rényi order ``alpha > 1`` (``inf`` allowed: the max divergence)."""
    if isinstance(order, bool) or not isinstance(order, (int, float)):
        raise ParameterError(
            f"order (Rényi alpha) must be a number > 1, got {shown(order)}", parameter="order"
        )
    order = float(order)
    if not order > 1.0:
        raise ParameterError(f"order (Rényi alpha) must be > 1, got {order!r}", parameter="order")
    return order


def check_positive(owner: str, name: str, value: Any, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ParameterError(
            f"{owner}: {name} must be a number, got {shown(value)}", parameter=name
        )
    number = float(value)
    low_ok = number >= 0.0 if allow_zero else number > 0.0
    if not (low_ok and math.isfinite(number)):
        bound = ">= 0" if allow_zero else "> 0"
        raise ParameterError(
            f"{owner}: {name} must be finite and {bound}, got {value!r}", parameter=name
        )
    return number


def check_count(owner: str, name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ParameterError(
            f"{owner}: {name} must be an integer >= {minimum}, got {shown(value)}", parameter=name
        )
    return int(value)
