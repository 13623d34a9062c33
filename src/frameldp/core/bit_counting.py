"""Per-bit totals of packed report rows by a carry-save adder tree, on every core.

The server side of every bit-vector mechanism (RAPPOR, OUE, subset selection, Bloom RAPPOR)
starts from one statistic: for each bit position, how many reports set it. Unpacking the rows to
one byte per bit and summing is simple, but ``numpy.unpackbits`` holds the interpreter lock, so
threads only take turns at it.

Here the rows stay packed. Three rows ``x, y, z`` of weight ``w`` are replaced by their sum
``x ^ y ^ z`` (weight ``w``) and their carry ``maj(x, y, z)`` (weight ``2 w``), bit by bit for
every column at once: a full adder, the carry-save adder of multiplier trees (Wallace 1964). Each
pass leaves a third of the rows at weight ``w`` and adds a third at ``2 w``, so the whole tree
costs about five bitwise operations per input byte, all numpy ufuncs over whole arrays, which
release the interpreter lock. The few rows each weight is left with are unpacked and added once.
Blocks of rows are counted independently and their integer totals added, so the result is
exactly the same for every block size and thread count.

References
----------
Wallace, C. S. (1964). A suggestion for a fast multiplier. IEEE Transactions on Electronic
Computers EC-13(1), 14-17.
"""

from __future__ import annotations

import threading
from typing import Final

import numpy as np
from numpy.typing import NDArray

from frameldp.core.parallel import map_ranges

__all__ = ["count_packed_bits"]

# Rows per block: 8 MB of reports, or 64 rows where rows are wider than 128 KB. Each thread's
# scratch holds 1.42 blocks (sums and a scratch row per third, carries for a half and a quarter).
_BLOCK_BYTES: Final = 1 << 23
_MIN_BLOCK_ROWS: Final = 64
# Pools smaller than this are unpacked instead of reduced further: a pass over a few rows costs
# more in interpreter overhead (which holds the lock) than unpacking them.
_UNPACK_BELOW: Final = 8


def count_packed_bits(packed: NDArray[np.uint8], num_bits: int) -> NDArray[np.int64]:
    """Totals of bits ``0 .. num_bits - 1`` (``numpy.unpackbits`` order) over the rows of a
    ``(n, width)`` packed bit matrix, on :func:`~frameldp.core.parallel.thread_count` threads.

    The caller checks the shape and padding; memory is bounded by the block size per thread.
    """
    rows, width = packed.shape
    block = max(_MIN_BLOCK_ROWS, _BLOCK_BYTES // max(1, width))
    totals = np.zeros(8 * width, dtype=np.int64)
    lock = threading.Lock()

    def work(start: int, stop: int) -> None:
        counted = _CarrySaveCounter(min(block, stop - start), width).count(packed[start:stop])
        with lock:  # integer sums: the same in any order
            np.add(totals, counted, out=totals)

    map_ranges(rows, block, work)
    return totals[:num_bits]


class _CarrySaveCounter:
    """Scratch buffers for counting one block of at most ``rows`` rows."""

    def __init__(self, rows: int, width: int) -> None:
        third = rows // 3 + 1
        self._sums = np.empty((third, width), dtype=np.uint8)
        self._scratch = np.empty((third, width), dtype=np.uint8)
        # Carries of weight 2w are read while those of weight 4w are written: two buffers, the
        # second half the size (each pool's carries number under half its rows).
        self._carries = (
            np.empty((rows // 2 + 1, width), dtype=np.uint8),
            np.empty((rows // 4 + 1, width), dtype=np.uint8),
        )

    def count(self, block: NDArray[np.uint8]) -> NDArray[np.int64]:
        """Per-bit totals of ``block`` (not modified)."""
        totals = np.zeros(8 * block.shape[1], dtype=np.int64)
        pool, weight, which = block, 1, 0
        while pool.shape[0]:
            carries = self._carries[which]
            filled = 0
            # Rows a pass leaves over (at most two) lie past every row later passes of this
            # weight write, so they are read, as views, once the weight is done.
            left = []
            while pool.shape[0] >= _UNPACK_BELOW:
                third = pool.shape[0] // 3
                x, y, z = pool[:third], pool[third : 2 * third], pool[2 * third : 3 * third]
                left.append(pool[3 * third :])
                carry = carries[filled : filled + third]
                filled += third
                half = self._scratch[:third]
                total = self._sums[:third]  # may be x itself: x is not read after `half`
                np.bitwise_xor(x, y, out=half)
                np.bitwise_and(x, y, out=carry)
                np.bitwise_xor(half, z, out=total)
                np.bitwise_and(half, z, out=half)
                np.bitwise_or(carry, half, out=carry)
                pool = total
            left.append(pool)
            bits = np.unpackbits(np.concatenate(left), axis=1)
            totals += weight * bits.sum(axis=0, dtype=np.int64)
            pool, weight, which = carries[:filled], 2 * weight, 1 - which
        return totals
