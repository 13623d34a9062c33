"""Rows of bytes read as little-endian 64-bit words, eight bytes at any byte offset: how user
ids and text cells are hashed and digested a whole column at a time, without one gather per
byte. Plumbing only: no formula lives here."""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

__all__ = ["kept_bytes", "words_at"]

_LOW_BYTES: Final = np.array([(1 << (8 * b)) - 1 for b in range(9)], dtype=np.uint64)
"""``_LOW_BYTES[b]``: the mask of the low ``b`` bytes of a little-endian 64-bit word."""


def words_at(data: NDArray[np.uint8], padding: int) -> NDArray[np.uint64]:
    """``words[i]``: the eight bytes of ``data`` from byte ``i`` on (little-endian), read from a
    copy followed by ``padding`` zero bytes (at least 8), so that offsets up to
    ``data.size + padding - 8`` read zeros past the data (unaligned reads, no gather per
    byte)."""
    tail = np.concatenate([data, np.zeros(max(padding, 8), dtype=np.uint8)])
    return np.ndarray(buffer=tail, dtype="<u8", shape=(tail.size - 7,), strides=(1,))


def kept_bytes(longest: int, offset: int, most: int = 8) -> NDArray[np.uint64]:
    """``kept[w]`` for every width ``w`` in ``[0, longest]``: the mask of the bytes of a word
    read at byte ``offset`` of a row of ``w`` bytes that lie inside the row (at most
    ``most``), the bytes past it cleared."""
    return _LOW_BYTES[np.clip(np.arange(longest + 1) - offset, 0, most)]
