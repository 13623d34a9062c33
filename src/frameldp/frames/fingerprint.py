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
width).

A release produced batch by batch (a polars LazyFrame, a Dask graph, a polars expression, the
command line) fixes its types before its rows exist, so its types cannot hold the fingerprint.
Each batch it draws in this process is recorded under its release id, column and input rows
(:func:`record_drawn`), and :func:`drawn_fingerprint` sums the batches: the fingerprint of every
row it drew here, each input row once (a keyed re-run of a batch replaces it; a batch of other
input rows overlapping it replaces it too, so no input row is counted twice). A release drawn in
another process (a cluster's workers) has no record here. The command line writes the
fingerprint of its file into the file when it is complete. Plumbing only: no formula lives here.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.byte_words import kept_bytes, words_at
from frameldp.core.columns import combined
from frameldp.frames.report_type import RELEASE_SEPARATOR, storage_of

__all__ = [
    "Fingerprint",
    "cell_hashes",
    "drawn_fingerprint",
    "fingerprint_of",
    "record_drawn",
    "recorded_fingerprint",
    "summed",
]

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


def _words_hash(tag: int | NDArray[np.uint64], rows: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """One hash per row of bytes of one width: the mix of a weighted sum of its 64-bit words
    and of its tag (kind and width: one for every row, or one per row)."""
    count, width = rows.shape
    if width % 8 == 0 and rows.flags.c_contiguous:
        words = rows.view("<u8")
    else:
        padded = np.zeros((count, -(-width // 8) * 8), dtype=np.uint8)
        padded[:, :width] = rows
        words = padded.view("<u8")
    total = np.empty(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.multiply(tag, _multiplier(0), out=total, casting="unsafe")
        for j in range(words.shape[1]):
            total += words[:, j] * _multiplier(j + 1)
    return _mix(total)


# Rows of at most this many 64-bit words are hashed from words read at their offsets, every
# width at once, a run of rows at a time (temporaries in cache); longer ones (rare for ids)
# width by width.
_SHORT_WORDS = 4
_SHORT_ROWS = 1 << 16


def _bytes_hash(array: pa.Array, kind: bytes) -> NDArray[np.uint64]:
    """One hash per row of a text or binary column (any offset width, fixed or not): its
    bytes zero-padded to whole 64-bit words (:func:`_words_hash`), tagged by its kind and
    width."""
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
    present = np.flatnonzero(np.bincount(widths))
    tags = np.zeros(int(present[-1]) + 1, dtype=np.uint64)
    tags[present] = [_blake(kind, int(width).to_bytes(8, "little")) for width in present]
    out = np.empty(len(array), dtype=np.uint64)
    # Word j of a row: the eight data bytes at its offset + 8 j (unaligned reads of a padded
    # copy), those past its width cleared: the row's own words, zero-padded.
    used = -(-min(int(widths.max()), 8 * _SHORT_WORDS) // 8)
    at = words_at(data, 8 * used)
    # kept[j][w]: the bytes of word j a row of width w keeps (past its width: none); a long
    # row (its width capped here) is hashed again below.
    kept = [kept_bytes(8 * used, 8 * j) for j in range(used)]
    long = np.flatnonzero(widths > 8 * _SHORT_WORDS)
    for begin in range(0, len(array), _SHORT_ROWS):
        starts = offsets[begin : begin + _SHORT_ROWS + 1]
        width = np.diff(starts)
        capped = np.minimum(width, 8 * used)
        total = np.empty(width.size, dtype=np.uint64)
        with np.errstate(over="ignore"):
            np.multiply(tags[width], _multiplier(0), out=total)
            for j in range(used):
                word = at[starts[:-1] + 8 * j]
                word &= kept[j][capped]
                word *= _multiplier(j + 1)
                total += word
        out[begin : begin + width.size] = _mix(total)
    for width in np.unique(widths[long]):  # long rows: width by width
        chosen = long[widths[long] == width]
        rows = data[offsets[:-1][chosen][:, None] + np.arange(int(width), dtype=np.int64)]
        out[chosen] = _words_hash(tags[width], rows)
    return out


def cell_hashes(array: pa.Array) -> NDArray[np.uint64]:
    """One hash per row naming the cell of one (storage) column by its value (nulls: one
    constant)."""
    kind = array.type
    if pa.types.is_dictionary(kind):
        return cell_hashes(array.dictionary_decode())
    if pa.types.is_string_view(kind) or pa.types.is_binary_view(kind):  # polars' own layout
        wide = pa.large_string() if pa.types.is_string_view(kind) else pa.large_binary()
        return cell_hashes(array.cast(wide))
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


def _by_value(kind: pa.DataType) -> bool:
    """Whether a column of this type is fingerprinted by its distinct values (labels: text or
    a dictionary, of few distinct values and widths), not row by row (bit vectors: one width,
    many distinct values, faster row by row)."""
    return bool(
        pa.types.is_dictionary(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_string_view(kind)
    )


def _row_hashes(arrays: list[pa.Array]) -> NDArray[np.uint64]:
    """One 64-bit hash per row of the cells of ``arrays`` (one chunk each, equal lengths):
    the cell's own hash for one column, else the mix of their weighted sum."""
    if len(arrays) == 1:
        return cell_hashes(storage_of(arrays[0]))
    total = np.zeros(len(arrays[0]) if arrays else 0, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j, array in enumerate(arrays):
            total += cell_hashes(storage_of(array)) * _multiplier(j)
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
        if len(whole) == 1 and _by_value(storage_of(whole[0]).type):
            # Labels (k-RR): each distinct value hashed once, weighted by its count; the same
            # sums as hashing every row, eight times faster for text of several widths.
            counted = pc.value_counts(storage_of(whole[0]))
            hashes = cell_hashes(counted.field("values"))
            weights = counted.field("counts").to_numpy(zero_copy_only=False).astype(np.uint64)
        else:
            hashes = _row_hashes(whole)
            weights = np.ones(len(hashes), dtype=np.uint64)
        with np.errstate(over="ignore"):
            first = (hashes * weights).sum(dtype=np.uint64)
            second = (hashes * (hashes | np.uint64(1)) * weights).sum(dtype=np.uint64)
        self._first = (self._first + int(first)) & _MASK
        self._second = (self._second + int(second)) & _MASK
        self.rows += len(whole[0])

    @classmethod
    def of(cls, arrays: Iterable[pa.Array | pa.ChunkedArray]) -> Fingerprint:
        """The fingerprint of the rows of ``arrays`` (see :meth:`add`)."""
        found = cls()
        found.add(arrays)
        return found

    def merge(self, other: Fingerprint) -> None:
        """Add the rows ``other`` holds (a multiset union)."""
        self.rows += other.rows
        self._first = (self._first + other._first) & _MASK
        self._second = (self._second + other._second) & _MASK

    def hexdigest(self) -> str:
        """``rows:first:second``, the first two in hexadecimal."""
        return f"{self.rows}:{self._first:016x}:{self._second:016x}"

    @classmethod
    def from_hexdigest(cls, digest: str) -> Fingerprint:
        """The fingerprint :meth:`hexdigest` wrote (``ValueError`` for anything else)."""
        rows, first, second = str(digest).split(":")
        found = cls()
        found.rows, found._first, found._second = int(rows), int(first, 16), int(second, 16)
        if found.rows < 0 or max(found._first, found._second) > _MASK:
            raise ValueError(f"not a fingerprint: {digest!r}")
        return found


def fingerprint_of(arrays: Iterable[pa.Array | pa.ChunkedArray]) -> str:
    """The fingerprint of the rows of one report column's parts."""
    return Fingerprint.of(arrays).hexdigest()


def summed(digests: Iterable[str]) -> str:
    """The fingerprint of the rows of several fingerprinted multisets together."""
    total = Fingerprint()
    for digest in digests:
        total.merge(Fingerprint.from_hexdigest(digest))
    return total.hexdigest()


# -- batches drawn in this process -------------------------------------------------------------

_DRAWN: dict[tuple[str, str], dict[int, tuple[int, Fingerprint]]] = {}
_DRAWN_LOCK = threading.Lock()


def record_drawn(
    release: str, column: str, row_start: int, input_rows: int, arrays: Iterable[Any]
) -> None:
    """Record the reports ``arrays`` (the parts of one report column) that release ``release``
    drew for its input rows ``row_start .. row_start + input_rows - 1`` in this process: a batch
    recorded before over any of those rows is replaced (a keyed re-run draws the same reports)."""
    found = Fingerprint.of(arrays)
    stop = row_start + input_rows
    with _DRAWN_LOCK:
        batches = _DRAWN.setdefault((release, column), {})
        for start, (end, _) in list(batches.items()):
            if start < stop and row_start < end:
                del batches[start]
        batches[row_start] = (stop, found)


def drawn_fingerprint(release: str, column: str) -> str | None:
    """The fingerprint of the rows of ``column`` that release ``release`` drew batch by batch in
    this process (None: it drew none here)."""
    with _DRAWN_LOCK:
        batches = _DRAWN.get((release, column))
        if not batches:
            return None
        total = Fingerprint()
        for _, found in batches.values():
            total.merge(found)
    return total.hexdigest()


def recorded_fingerprint(spec: Mapping[str, Any], column: str) -> str | None:
    """The fingerprint of the rows a column's release holds: recorded in its spec (an in-memory
    release, a file of the command line), else drawn batch by batch in this process by its one
    release; None when neither is known or the record is malformed (the caller refuses)."""
    recorded = spec.get("fingerprint")
    if recorded is not None:
        try:  # a file's record, read back: only a well-formed one is a fingerprint
            return Fingerprint.from_hexdigest(str(recorded)).hexdigest()
        except ValueError:
            return None
    release = spec.get("release")
    if not release or RELEASE_SEPARATOR in str(release):
        return None
    return drawn_fingerprint(str(release), str(column))
