"""Group keys of tables by public columns: one value per ``by`` column, ``None`` for a null."""

from __future__ import annotations

from typing import Any

__all__ = ["GroupKey", "canonical_key"]

GroupKey = tuple[Any, ...]

_NAN: Any = float("nan")
"""The one NaN every NaN key becomes (NaN != NaN, but a dict finds the same object)."""


def canonical_key(key: GroupKey) -> GroupKey:
    """``key`` with every NaN replaced by one NaN object and -0.0 by 0.0, so that equal keys
    find each other in a dict."""
    return tuple(
        (_NAN if value != value else value + 0.0) if isinstance(value, float) else value
        for value in key
    )
