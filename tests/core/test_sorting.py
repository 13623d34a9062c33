"""``sorted_distinct`` is ``np.unique`` of a 1-D integer array."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from frameldp.core.sorting import sorted_distinct

VALUES = st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 3)  # mostly distinct, or repeated


@given(arrays(np.int64, st.integers(0, 200), elements=VALUES))
def test_sorted_distinct_is_numpys_unique(values: np.ndarray) -> None:
    assert np.array_equal(sorted_distinct(values), np.unique(values))


def test_sorted_distinct_keeps_the_dtype_of_an_empty_array() -> None:
    assert sorted_distinct(np.array([], dtype=np.uint8)).dtype == np.uint8
