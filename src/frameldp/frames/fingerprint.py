"""The fingerprint of a release's rows: which reports it holds, in any order.

A shuffle's guarantee is amplified over its reports as one per person, so a shuffle must see
exactly the rows one release produced: a row repeated (and another dropped, keeping the count)
would count one person's copies as other people. An in-memory release records the fingerprint
of each column's report rows in its type (``"fingerprint"`` in the spec), and a shuffle
recomputes it over the rows it is given.

The fingerprint of a multiset of rows is ``(n, sum h(row), sum g(row)) mod 2^64``, where ``h``
is the 64-bit mix of a weighted sum of the hashes of the row's cells (all parts of the column:
a Bloom report and its cohort are one row), each the mix of a weighted sum of its 64-bit words,
and ``g(row) = h (h | 1)``, a second, nonlinear function of ``h``. Sums do not depend on the
order or the chunking, and batches add up. Two different multisets collide with probability
about ``2^-64`` for rows that were not chosen to collide: this guards against mistakes (a
concatenation, a join that repeats rows, a resample), not against someone forging reports, who
could do worse anyway.

Cells are hashed by value, not by storage type, so pandas, polars and Arrow copies of one
release agree (fixed-size and variable binary, 32- and 64-bit integers, text of any offset
width). Plumbing only: no formula lives here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.columns import combined
from frameldp.frames.report_type import storage_of

__all__ = ["Fingerprint", "fingerprint_of"]

_MASK = 0xFFFFFFFFFFFFFFFF
_NULL = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The splitmix64 finalizer, elementwise (a bijection of 64-bit words)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _blake(tag: bytes, value: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(tag + value, digest_size=8).digest(), "little")


def _multiplier(j: int) -> np.uint64:
    """An odd 64-bit constant for the ``j``-th word of a cell."""
    return np.uint64(_mix(np.array([j + 1], dtype=np.uint64))[0] | np.uint64(1))


def _words_hash(tag: int, rows: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """One hash per row of bytes of one width: the mix of a weighted sum of its 64-bit words
    and of its tag (kind and width)."""
    count, width = rows.shape
    if width % 8 == 0 and rows.flags.c_contiguous:
        words = rows.view("<u8")
    else:
        padded = np.zeros((count, -(-width // 8) * 8), dtype=np.uint8)
        padded[:, :width] = rows
        words = padded.view("<u8")
    total = np.full(count, (tag * int(_multiplier(0))) & _MASK, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            total += words[:, j] * _multiplier(j + 1)
    return _mix(total)


def _bytes_hash(array: pa.Array, kind: bytes) -> NDArray[np.uint64]:
    """One hash per row of a text or binary column (any offset width, fixed or not), by its
    bytes: rows are grouped by width, each group hashed as one block of words."""
    if pa.types.is_fixed_size_binary(array.type):
        width = array.type.byte_width
        data = np.frombuffer(array.buffers()[1], dtype=np.uint8)
        start = array.offset * width
        rows = data[start : start + len(array) * width].reshape(len(array), width)
        return _words_hash(_blake(kind, width.to_bytes(8, "little")), rows)
    large = pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64 if large else np.int32)
    offsets = offsets[array.offset : array.offset + len(array) + 1].astype(np.int64)
    data = np.frombuffer(array.buffers()[2] or b"", dtype=np.uint8)
    widths = np.diff(offsets)
    if not len(array) or (widths == widths[0]).all():  # one width: the bytes as they lie
        width = int(widths[0]) if len(array) else 0
        rows = data[int(offsets[0]) : int(offsets[0]) + len(array) * width]
        return _words_hash(
            _blake(kind, width.to_bytes(8, "little")), rows.reshape(len(array), width)
        )
    out = np.empty(len(array), dtype=np.uint64)
    for width in np.flatnonzero(np.bincount(widths)):
        chosen = np.flatnonzero(widths == width)
        starts = np.asarray(offsets[:-1][chosen], dtype=np.int64)
        rows = data[starts[:, None] + np.arange(int(width), dtype=np.int64)]
        out[chosen] = _words_hash(_blake(kind, int(width).to_bytes(8, "little")), rows)
    return out


def _cell_hash(array: pa.Array) -> NDArray[np.uint64]:
    """One hash per row naming the cell of one (storage) column by its value (nulls: one
    constant)."""
    kind = array.type
    if pa.types.is_dictionary(kind):
        return _cell_hash(array.dictionary_decode())
    if pa.types.is_integer(kind):
        values = pc.cast(array, pa.int64(), safe=False) if kind != pa.uint64() else array
        words = values.fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
        with np.errstate(over="ignore"):
            hashed = _mix(words * _multiplier(1) + np.uint64(_blake(b"i", b"")))
    elif (
        pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
    ):
        hashed = _bytes_hash(array, b"b")
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        hashed = _bytes_hash(array, b"s")
    else:  # no report is stored so; by its text, tagged
        hashed = _bytes_hash(pc.cast(array, pa.large_string()), b"r")
    if array.null_count:
        hashed = np.where(array.is_valid().to_numpy(zero_copy_only=False), hashed, _NULL)
    return hashed


def _row_hashes(arrays: list[pa.Array]) -> NDArray[np.uint64]:
    """One 64-bit hash per row of the cells of ``arrays`` (one chunk each, equal lengths):
    the cell's own hash for one column, else the mix of their weighted sum."""
    if len(arrays) == 1:
        return _cell_hash(storage_of(arrays[0]))
    total = np.zeros(len(arrays[0]) if arrays else 0, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j, array in enumerate(arrays):
            total += _cell_hash(storage_of(array)) * _multiplier(j)
    return _mix(total)


class Fingerprint:
    """The running fingerprint of report rows added batch by batch (see the module)."""

    def __init__(self) -> None:
        self.rows = 0
        self._first = 0
        self._second = 0

    def add(self, arrays: Iterable[pa.Array | pa.ChunkedArray]) -> None:
        """Add the rows of ``arrays`` (the parts of one report column, equal lengths)."""
        whole = [combined(array) for array in arrays]
        if not whole or len(whole[0]) == 0:
            return
        hashes = _row_hashes(whole)
        with np.errstate(over="ignore"):
            first = hashes.sum(dtype=np.uint64)
            second = (hashes * (hashes | np.uint64(1))).sum(dtype=np.uint64)
        self._first = (self._first + int(first)) & _MASK
        self._second = (self._second + int(second)) & _MASK
        self.rows += len(hashes)

    def hexdigest(self) -> str:
        """``rows:first:second``, the first two in hexadecimal."""
        return f"{self.rows}:{self._first:016x}:{self._second:016x}"


def fingerprint_of(arrays: Iterable[pa.Array | pa.ChunkedArray]) -> str:
    """The fingerprint of the rows of one report column's parts."""
    found = Fingerprint()
    found.add(arrays)
    return found.hexdigest()
