"""Exact Bernoulli bytes by the interval algorithm: eight Bernoulli(q) bits from 16 keystream bits.

Eight independent Bernoulli(``q``) bits, ``q = Q / 2**64``, form one byte ``v`` with
probability ``P(v) = Q**|v| (2**64 - Q)**(8 - |v|) / 2**512`` (``|v|`` its number of ones).
Laying the 256 outcomes end to end on ``[0, 1)`` gives boundaries ``C_v = sum(P(u), u < v)``,
all exact multiples of ``2**-512``; a uniform ``U`` falls in ``[C_v, C_(v+1))`` with probability
exactly ``P(v)``, so the byte of the interval holding ``U`` *is* eight independent exact
Bernoulli(``q``) bits. This is the interval algorithm of Han and Hoshi [1]_ for one fixed block
of outcomes.

The draw reads as few bits of ``U`` as decide it:

* The first 16 bits pick one of 65,536 cells of width ``2**-16``. A cell that no boundary cuts
  lies inside one interval: its byte is looked up in a table (one gather per output byte, two
  keystream bytes per eight output bits, against twelve bit-sliced planes before).
* At most 255 cells are cut by a boundary (probability at most ``255 / 2**16``, under 0.4%).
  Those positions read 64 more bits of ``U`` from their own tail block and count the
  boundaries below ``U``; a tie there (probability ``2**-64`` per boundary) reads the rest of
  ``U``, 496 bits in all, and compares exact integers.

The keystream word is mapped to its cell by a fixed permutation that puts the cut cells last,
so "is this position cut?" is one comparison of the word with a threshold. Any bijection of
16-bit words keeps the cell uniform, so the draw stays exact.

Layout (fresh keys only; their noise is never reproduced, so it may change between versions):
output byte ``g`` of a positional stream takes keystream bytes ``2g, 2g + 1`` of lane
:data:`WORD_LANE` as a little-endian 16-bit word, and, if its cell is cut, block ``g`` of lanes
``TAIL_LANE, TAIL_LANE + 1, ...`` as the following bits of ``U``, most significant first.

References
----------
.. [1] T. S. Han and M. Hoshi, "Interval Algorithm for Random Number Generation", IEEE
   Transactions on Information Theory 43(2), 1997.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

if TYPE_CHECKING:
    from frameldp.core.randomness import KeyedStream

__all__ = ["TAIL_LANE", "WORD_LANE", "ByteTable", "bernoulli_bytes", "byte_table"]

WORD_LANE: Final = 0x100
TAIL_LANE: Final = 0x101
"""Lanes of the cell words and of the tail blocks; apart from every other sampler's lanes."""

_PRECISION: Final = 64  # q = Q / 2**64
_OUTCOME_BITS: Final = 8 * _PRECISION  # P(v) is a multiple of 2**-512
_CELL_BITS: Final = 16
_CELLS: Final = 1 << _CELL_BITS
_OFFSET_BITS: Final = _OUTCOME_BITS - _CELL_BITS  # bits of U inside a cell: 496
_BLOCK_BITS: Final = 128
_TAIL_BLOCKS: Final = -(-_OFFSET_BITS // _BLOCK_BITS)  # blocks that hold all 496 bits: 4
_HIGH_SHIFT: Final = _OFFSET_BITS - 64  # the first 64 bits of an offset: offset >> 432
_CHUNK_BYTES: Final = 1 << 20  # output bytes per gather: 3 MB of temporaries (words, outcomes)


@dataclass(frozen=True, eq=False)
class ByteTable:
    """The cells of one numerator ``Q``: what every keystream word decides.

    ``outcome[w]`` is the byte of word ``w``'s cell if no boundary cuts it, else the outcome
    at the cell's start. Words ``>= first_tied`` are the cut cells, in order: cut cell ``i``
    (word ``first_tied + i``) is cell ``tied_cells[i]`` and holds the boundaries
    ``bound_high[bound_start[i]:bound_start[i + 1]]`` (the first 64 bits of each one's offset
    in the cell, ascending). ``boundaries`` are the exact ``C_0, ..., C_256``.
    """

    numerator: int
    outcome: NDArray[np.uint8]
    first_tied: int
    tied_cells: NDArray[np.int64]
    bound_start: NDArray[np.int64]
    bound_high: NDArray[np.uint64]
    boundaries: tuple[int, ...]


@functools.lru_cache(maxsize=64)
def byte_table(numerator: int) -> ByteTable:
    """The :class:`ByteTable` of ``Q = numerator`` (``0 <= Q <= 2**64``), built exactly."""
    one, zero = numerator, (1 << _PRECISION) - numerator
    boundaries = [0]
    for v in range(256):
        ones = v.bit_count()
        boundaries.append(boundaries[-1] + one**ones * zero ** (8 - ones))
    assert boundaries[-1] == 1 << _OUTCOME_BITS  # (Q + (2**64 - Q)) ** 8
    inner = boundaries[1:256]  # C_1 .. C_255: where the outcome changes
    cell_of = np.array([c >> _OFFSET_BITS for c in inner], dtype=np.int64)
    cut = np.array([c & ((1 << _OFFSET_BITS) - 1) != 0 for c in inner], dtype=bool)
    # C_j <= start of cell c  iff  cell_of[j] <= c (boundary on the cell's edge), or
    # cell_of[j] < c (boundary inside an earlier cell).
    first_cell_at_or_after = cell_of + cut
    low = np.searchsorted(first_cell_at_or_after, np.arange(_CELLS), side="right")
    inside_cells = cell_of[cut]  # ascending, like the boundaries
    tied = np.unique(inside_cells)
    is_tied = np.zeros(_CELLS, dtype=bool)
    is_tied[tied] = True
    cell_of_word = np.concatenate([np.flatnonzero(~is_tied), tied])
    inside = [c for c, is_cut in zip(inner, cut.tolist(), strict=True) if is_cut]
    return ByteTable(
        numerator=numerator,
        outcome=low[cell_of_word].astype(np.uint8),
        first_tied=_CELLS - tied.size,
        tied_cells=tied.astype(np.int64),
        bound_start=np.append(np.searchsorted(inside_cells, tied), inside_cells.size),
        bound_high=np.array([(c >> _HIGH_SHIFT) & ((1 << 64) - 1) for c in inside], np.uint64),
        boundaries=tuple(boundaries),
    )


def bernoulli_bytes(
    stream: KeyedStream, numerator: int, byte_start: int, out: NDArray[np.uint8]
) -> None:
    """Fill ``out`` with bytes ``byte_start, byte_start + 1, ...`` of the stream's Bernoulli
    bytes: each bit independent and exactly Bernoulli(``numerator / 2**64``), byte ``g`` a
    function of (stream, ``g``) only, whatever the range asked for."""
    numerator = int(numerator)  # numpy integers overflow in the exact arithmetic
    if numerator in (0, 1 << _PRECISION):  # a constant: no keystream to read
        out.fill(0 if numerator == 0 else 0xFF)
        return
    table = byte_table(numerator)
    # Arrow gathers by the 16-bit words themselves; numpy would first widen each to an intp, a
    # pass as long as the gather (Arrow's gather plus the copy cost half of numpy's two).
    outcome = pa.array(table.outcome)
    tied_at: list[NDArray[np.int64]] = []
    tied_cells: list[NDArray[np.uint16]] = []
    for offset in range(0, out.size, _CHUNK_BYTES):
        part = out[offset : offset + _CHUNK_BYTES]
        keystream = stream.contiguous(WORD_LANE, 2 * (byte_start + offset), 2 * part.size)
        words: NDArray[np.uint16] = keystream.view("<u2")
        np.copyto(part, pc.take(outcome, pa.array(words)).to_numpy())
        if table.first_tied < _CELLS:
            tied = np.flatnonzero(words >= table.first_tied)
            tied_at.append(tied + offset)
            tied_cells.append(words[tied])
    # The cut cells of the whole range at once: few numpy calls, so threads rarely wait on
    # each other for the interpreter.
    tied = np.concatenate(tied_at) if tied_at else np.empty(0, dtype=np.int64)
    if tied.size:
        positions = (byte_start + tied).astype(np.uint64)
        high = stream.blocks_at(TAIL_LANE, positions)[:, :8].copy().view(">u8").ravel()
        out[tied] += resolve_cut_cells(
            table,
            np.concatenate(tied_cells).astype(np.int64) - table.first_tied,
            high.astype(np.uint64),
            functools.partial(_offsets, stream, positions),
        )


def resolve_cut_cells(
    table: ByteTable,
    cut: NDArray[np.int64],
    high: NDArray[np.uint64],
    offsets: Callable[[NDArray[np.int64]], list[int]],
) -> NDArray[np.uint8]:
    """How many boundaries of cut cell ``cut[i]`` lie at or below ``U``, for each position.

    ``high[i]`` is the first 64 bits of ``U``'s offset in its cell. A boundary whose first 64
    bits differ from it is decided by them; an equal one (probability ``2**-64``) by the
    exact 496-bit offsets that ``offsets(positions)`` reads.
    """
    starts = table.bound_start[cut]
    counts = table.bound_start[cut + 1] - starts
    below = np.zeros(cut.size, dtype=np.uint8)
    undecided = np.zeros(cut.size, dtype=bool)
    active = np.arange(cut.size)
    rank = 0
    while True:
        active = active[counts[active] > rank]
        if active.size == 0:
            break
        bound = table.bound_high[starts[active] + rank]
        below[active] += high[active] > bound
        undecided[active] |= high[active] == bound
        rank += 1
    tie = np.flatnonzero(undecided)
    if tie.size:
        for i, offset in zip(tie, offsets(tie), strict=True):
            cell = int(table.tied_cells[cut[i]])
            u = cell << _OFFSET_BITS | offset
            exact = bisect.bisect_right(table.boundaries, u) - 1
            below[i] = exact - int(table.outcome[table.first_tied + cut[i]])
    return below


def _offsets(
    stream: KeyedStream, positions: NDArray[np.uint64], which: NDArray[np.int64]
) -> list[int]:
    """The exact 496-bit offsets of ``U`` in its cell at output bytes ``positions[which]``."""
    blocks = [stream.blocks_at(TAIL_LANE + b, positions[which]) for b in range(_TAIL_BLOCKS)]
    joined = np.concatenate(blocks, axis=1)
    spare = _TAIL_BLOCKS * _BLOCK_BITS - _OFFSET_BITS
    return [int.from_bytes(row.tobytes(), "big") >> spare for row in joined]
