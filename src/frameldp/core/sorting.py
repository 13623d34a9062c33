"""Distinct integers by sorting.

numpy 2.3 and later answer a bare ``np.unique(a)`` with a hash table that is 10-20x slower
than a sort when most values are distinct (1.3 s against 0.07 s for 1.3 million int64 here);
the returning variants (``return_counts=`` and friends) still sort.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["sorted_distinct"]


def sorted_distinct(values: NDArray[Any]) -> NDArray[Any]:
    """The distinct values of a 1-D integer array, ascending (``np.unique(values)``)."""
    ordered = np.sort(values, kind="stable")
    if ordered.size == 0:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
