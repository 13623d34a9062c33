"""Row addresses: the pseudorandom 16-byte address of a (position, value) pair, which binds a
caller's key's noise to the row and its value. See :mod:`frameldp.core.randomness`.

References
----------
.. [3] M. Bellare, J. Kilian, P. Rogaway, "The Security of the Cipher Block Chaining Message
   Authentication Code", JCSS 61(3), 2000 (CBC-MAC of length-prefixed messages is a PRF).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from frameldp.core.randomness.streams import BLOCK, KeyedStream

__all__ = ["code_bytes", "row_addresses"]


def code_bytes(codes: NDArray[np.int64]) -> NDArray[np.uint8]:
    """Integer codes as canonical value bytes for :meth:`RandomSource.rows` (8, big-endian)."""
    return np.asarray(codes, dtype=">i8").view(np.uint8).reshape(-1, 8)


def row_addresses(
    stream: KeyedStream, rows: NDArray[np.int64], values: NDArray[np.uint8]
) -> NDArray[np.uint8]:
    """16-byte addresses ``CBC-MAC(row || len(value), value)`` of ``(row, value)`` pairs.

    ``values`` holds one row of bytes per row (zero-padded to whole blocks). The first block
    carries the position and the value's length, so messages of different lengths are
    prefix-free and CBC-MAC is a PRF on them [3]_: distinct ``(row, value)`` pairs get
    independent pseudorandom addresses.
    """
    values = np.ascontiguousarray(values, dtype=np.uint8)
    n, length = values.shape
    header = np.zeros((n, 2), dtype=">u8")
    header[:, 0] = np.asarray(rows, dtype=np.int64).astype(np.uint64)
    header[:, 1] = length
    state = stream.encrypt(header.view(np.uint8).reshape(n, BLOCK))
    blocks = -(-length // BLOCK)
    if blocks:
        padded = np.zeros((n, blocks * BLOCK), dtype=np.uint8)
        padded[:, :length] = values
        for b in range(blocks):
            state = stream.encrypt(state ^ padded[:, b * BLOCK : (b + 1) * BLOCK])
    return state
