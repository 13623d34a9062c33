"""The carry-save bit counter equals the plain unpack-and-sum, for every block size and thread
count (exact integers: these tests are deterministic)."""

from __future__ import annotations

import numpy as np
import pytest

from frameldp.core import bit_counting
from frameldp.core.bit_counting import count_packed_bits
from frameldp.core.parallel import threads


def _plain(packed: np.ndarray) -> np.ndarray:
    return np.unpackbits(packed, axis=1).sum(axis=0, dtype=np.int64)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of a few dozen rows, so that small inputs cross many blocks and thread ranges."""
    monkeypatch.setattr(bit_counting, "_BLOCK_BYTES", 96)
    monkeypatch.setattr(bit_counting, "_MIN_BLOCK_ROWS", 20)


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize(("n", "width"), [(0, 4), (1, 1), (7, 2), (8, 3), (61, 1), (1000, 5)])
def test_equals_unpack_and_sum_for_every_block_and_thread_count(
    small_blocks: None, n: int, width: int, count: int
) -> None:
    packed = np.random.default_rng(n).integers(0, 256, size=(n, width), dtype=np.uint8)
    with threads(count):
        got = count_packed_bits(packed, 8 * width)
    np.testing.assert_array_equal(got, _plain(packed))
    assert got.dtype == np.int64


@pytest.mark.parametrize("n", [3**7, 3**7 + 2, 2**16 + 1, 100_000])
def test_all_ones_rows_carry_through_every_weight(n: int) -> None:
    """Every carry chain is taken: n ones in every column must total n, not n mod 2^j."""
    packed = np.full((n, 3), 0xFF, dtype=np.uint8)
    np.testing.assert_array_equal(count_packed_bits(packed, 24), np.full(24, n))


def test_returns_only_the_requested_bits_and_reads_strided_rows_unchanged() -> None:
    wide = np.random.default_rng(7).integers(0, 256, size=(5_000, 9), dtype=np.uint8)
    rows = wide[::-2, 2:7]  # neither contiguous nor starting at a row boundary
    before = rows.copy()
    got = count_packed_bits(rows, 37)
    np.testing.assert_array_equal(got, _plain(np.ascontiguousarray(rows))[:37])
    np.testing.assert_array_equal(rows, before)
