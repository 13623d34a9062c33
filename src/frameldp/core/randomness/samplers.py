"""Samplers: exact Bernoulli bits, uniform integers and permutations from keystreams. See
:mod:`frameldp.core.randomness` (Samplers).

References
----------
.. [2] D. Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS 29(1), 2019.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

import numpy as np
from numpy.typing import NDArray

from frameldp.core.interval_sampler import bernoulli_bytes
from frameldp.core.parallel import map_ranges, prefaulted_empty
from frameldp.core.randomness.addresses import row_addresses
from frameldp.core.randomness.streams import BLOCK, KeyedStream
from frameldp.errors import ParameterError, shown

__all__ = [
    "PLANES",
    "PRECISION_BITS",
    "bernoulli_flags",
    "bernoulli_packed",
    "bernoulli_packed_at",
    "checked_out",
    "content_sort_keys",
    "dyadic_at_least",
    "dyadic_at_most",
    "is_int",
    "permutation",
    "permutation_from_keys",
    "sort_keys",
    "uniform_integers",
    "uniform_integers_at",
    "uniform_words",
    "uniform_words_at",
]


PRECISION_BITS: Final = 64
"""Realized probabilities are multiples of ``2**-PRECISION_BITS``."""
PLANES: Final = 12
"""Leading comparison bits drawn as whole bit-sliced keystream planes."""
_WORK_BYTES: Final = 1 << 20  # bytes of output per bit-sliced step: stays in L2 cache
_TAIL_LANE: Final = 0xFFFF_FFFF
_PLANE_LANE: Final = 1
_UNIFORM_LANE: Final = 2
_DIRECT_LANE: Final = 3
_WORDS_LANE: Final = 4
_DIRECT_BITS: Final = 8  # rows of at most this many bits compare whole 64-bit uniforms


def is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def dyadic_at_least(probability: float | Fraction) -> int:
    """Numerator of the smallest multiple of ``2**-64`` that is >= ``probability``."""
    scaled = Fraction(probability) * (1 << PRECISION_BITS)
    return -((-scaled.numerator) // scaled.denominator)


def dyadic_at_most(probability: float | Fraction) -> int:
    """Numerator of the largest multiple of ``2**-64`` that is <= ``probability``."""
    scaled = Fraction(probability) * (1 << PRECISION_BITS)
    return scaled.numerator // scaled.denominator


def bernoulli_packed(
    stream: KeyedStream,
    numerator: int,
    *,
    row_start: int,
    num_rows: int,
    bits_per_row: int,
    out: NDArray[np.uint8] | None = None,
) -> NDArray[np.uint8]:
    """Independent Bernoulli(``numerator / 2**64``) bits, packed ``(num_rows, ceil(bits/8))``,
    written into ``out`` if given (a preallocated array reused across batches: no new pages).

    Bits are packed most significant first (``numpy.packbits`` order); padding bits of the last
    byte of each row are zero. Row ``i`` is the run of bytes ``i * width ...`` of the stream's
    exact Bernoulli bytes (:func:`~frameldp.core.interval_sampler.bernoulli_bytes`, the interval
    algorithm: two keystream bytes per eight bits), so it depends only on (stream, ``i``) and
    any range of rows equals the same rows of a longer range. Ranges of bytes are filled on
    :func:`~frameldp.core.parallel.thread_count` threads with identical results.
    """
    numerator = _check_numerator(numerator)
    width = -(-bits_per_row // 8)
    if out is None:
        out = prefaulted_empty((num_rows, width), np.uint8)
    _fill_bernoulli(
        stream, numerator, row_start * width, checked_out(out, (num_rows, width)).reshape(-1)
    )
    return _clear_padding(out, bits_per_row)


def _fill_bernoulli(
    stream: KeyedStream, numerator: int, byte_start: int, out: NDArray[np.uint8]
) -> None:
    """Bytes ``byte_start, ...`` of the stream's exact Bernoulli bytes into the flat ``out``,
    in ranges of :data:`_WORK_BYTES` on :func:`~frameldp.core.parallel.thread_count` threads
    (the same bytes for any thread count)."""

    def fill(start: int, stop: int) -> None:
        bernoulli_bytes(stream, numerator, byte_start + start, out[start:stop])

    map_ranges(out.size, _WORK_BYTES, fill)


def checked_out(out: NDArray[np.uint8], shape: tuple[int, ...]) -> NDArray[np.uint8]:
    """``out`` if it can hold packed rows of ``shape`` in place, else a ParameterError."""
    if (
        not isinstance(out, np.ndarray)
        or out.dtype != np.uint8
        or out.shape != shape
        or not out.flags.c_contiguous
        or not out.flags.writeable
    ):
        found = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise ParameterError(
            f"out must be a writable C-contiguous uint8 array of shape {shape}, got {found}"
        )
    return out


def bernoulli_flags(
    stream: KeyedStream, numerator: int, *, row_start: int, num_rows: int
) -> NDArray[np.bool_]:
    """One Bernoulli(``numerator / 2**64``) flag per row: bit ``r`` of the stream's exact
    Bernoulli bytes is row ``r``'s flag (eight rows per byte, a quarter keystream byte a row)."""
    numerator = _check_numerator(numerator)
    first, last = row_start // 8, -(-(row_start + num_rows) // 8)
    packed = np.empty(last - first, dtype=np.uint8)
    _fill_bernoulli(stream, numerator, first, packed)
    skip = row_start - 8 * first
    return np.unpackbits(packed, count=skip + num_rows)[skip:].view(np.bool_)


def bernoulli_packed_at(
    stream: KeyedStream,
    numerator: int,
    addresses: NDArray[np.uint8],
    *,
    bits_per_row: int,
) -> NDArray[np.uint8]:
    """Like :func:`bernoulli_packed`, but row ``i`` is addressed by a 16-byte ``addresses[i]``.

    The bits of a row are a function of (stream, address) only, wherever the row sits: equal
    addresses give equal bits (re-runs, memoization), distinct addresses independent ones.
    Addresses must be outputs of a PRF (:func:`row_addresses`, :meth:`KeyedStream.prf`), so
    that they never collide in practice. A row's comparison planes are laid out one after the
    other in its own keystream, each plane rounded up to whole 64-bit words, block ``b`` being
    AES of the address XOR the tweak ``(1, b)``; the positions still undecided after the
    planes use the tweak ``(TAIL, bit)``. Rows of at most 8 bits instead compare each bit's own
    uniform 64-bit word (word ``j`` of the blocks with tweaks ``(3, b)``) with the threshold.
    """
    numerator = _check_numerator(numerator)
    addresses = np.ascontiguousarray(addresses, dtype=np.uint8).reshape(-1, BLOCK)
    num_rows = addresses.shape[0]
    width = -(-bits_per_row // 8)
    out = np.zeros((num_rows, width), dtype=np.uint8)
    if numerator == 1 << PRECISION_BITS:
        out[:] = 0xFF
    elif numerator > 0 and num_rows and bits_per_row <= _DIRECT_BITS:
        # A few bits per row: compare whole 64-bit uniforms, one per bit (fewer bytes than
        # planes rounded up to words).
        draws = _tweaked(stream, addresses, _DIRECT_LANE, -(-bits_per_row // 2))
        uniforms = draws.reshape(num_rows, -1).view(">u8")[:, :bits_per_row]
        out = np.packbits(uniforms < np.uint64(numerator), axis=1)
    elif numerator > 0 and num_rows:
        # Planes after the threshold's last 1 bit are never read.
        planes = min(PLANES, PRECISION_BITS - _trailing_zeros(numerator))
        words = -(-width // 8)
        step = max(1, _WORK_BYTES // width)  # as many output bytes per step as bernoulli_packed
        for first in range(0, num_rows, step):
            chunk = addresses[first : first + step]
            if words == 1:  # narrow rows: most are decided after a few planes
                decided = _compare_rows_at(numerator, stream, chunk, planes, bits_per_row)
            else:
                keystream = _tweaked(stream, chunk, _PLANE_LANE, -(-planes * words // 2))
                keystream_words = keystream.view(np.uint64).reshape(chunk.shape[0], -1)
                decided = _compare_rows(
                    numerator, keystream_words[:, : planes * words].reshape(-1, planes, words)
                )
            result = decided[0].view(np.uint8)
            _decide_rows_tail(decided, result, bits_per_row, stream, chunk)
            out[first : first + chunk.shape[0]] = result[:, :width]
    return _clear_padding(out, bits_per_row)


def _compare_rows(
    numerator: int, planes: NDArray[np.uint64]
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], int]:
    """The bit-sliced comparison of :func:`_bit_sliced` on ``(rows, planes, words)``: the
    decided-true words, the still-tied words and the threshold bits left after the planes."""
    rows, count, words = planes.shape
    decided = np.zeros((rows, words), dtype=np.uint64)
    undecided = np.full((rows, words), np.iinfo(np.uint64).max, dtype=np.uint64)
    newly = np.empty_like(decided)
    remainder = numerator
    for t in range(count):
        remainder = _compare_plane(numerator, t, planes[:, t, :], decided, undecided, newly)
    return decided, undecided, remainder


def _compare_rows_at(
    numerator: int,
    stream: KeyedStream,
    addresses: NDArray[np.uint8],
    planes: int,
    bits_per_row: int,
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], int]:
    """:func:`_compare_rows` on the plane layout of :func:`bernoulli_packed_at` for rows of at
    most 64 bits (one word a plane, two planes a block): the first ``log2(bits) + 2`` planes
    of every row at once, the others only for the rows still undecided (about one in five),
    compared plane by plane over contiguous words. A row's padding bits start decided, so
    they are never read. The same keystream words wherever they are read, so the same
    bits."""
    rows = addresses.shape[0]
    used = np.zeros(8, dtype=np.uint8)  # the row's bits in its word (bytes little-endian)
    used[: bits_per_row // 8] = 0xFF
    if bits_per_row % 8:
        used[bits_per_row // 8] = (0xFF << (8 - bits_per_row % 8)) & 0xFF
    decided = np.zeros((rows, 1), dtype=np.uint64)
    undecided = np.full((rows, 1), used.view("<u8")[0], dtype=np.uint64)
    remainder = numerator

    def compare(begin: int, end: int, which: NDArray[np.int64] | None) -> int:
        """Planes ``[begin, end)`` of the rows ``which`` (None: every row), in place."""
        chosen = addresses if which is None else np.take(addresses, which, axis=0)
        count = -(-(end - begin) // 2)
        # Block-major: plane begin + 2j + h is word h of every row's block j.
        keystream = _tweaked_by_block(stream, chosen, _PLANE_LANE, count, begin // 2)
        words = keystream.view(np.uint64).reshape(count, chosen.shape[0], 2)
        done, left = (decided, undecided) if which is None else (decided[which], undecided[which])
        newly = np.empty_like(done)
        rest = numerator
        for t in range(begin, end):
            plane = words[(t - begin) // 2, :, (t - begin) % 2]
            rest = _compare_plane(numerator, t, plane[:, None], done, left, newly)
        if which is not None:
            decided[which], undecided[which] = done, left
        return rest

    # Each plane decides half the undecided bits: after log2(bits) + 2 planes a row has an
    # undecided bit with probability about 1 - exp(-1/4) (a fifth). Whole blocks: an even
    # count, so the late planes start on a block.
    early = (bits_per_row - 1).bit_length() + 2
    first = min(planes, early + early % 2)
    remainder = compare(0, first, None) if rows else _remainder_after(numerator, first)
    if planes > first:
        late = np.flatnonzero(undecided[:, 0])
        remainder = (
            compare(first, planes, late) if late.size else _remainder_after(numerator, planes)
        )
    return decided, undecided, remainder


def _remainder_after(numerator: int, planes: int) -> int:
    """The threshold bits still to compare after ``planes`` planes."""
    return numerator & ((1 << (PRECISION_BITS - planes)) - 1)


def _compare_plane(
    numerator: int,
    t: int,
    zero_bit_of_u: NDArray[np.uint64],
    decided: NDArray[np.uint64],
    undecided: NDArray[np.uint64],
    newly: NDArray[np.uint64],
) -> int:
    """Compare bit ``t`` of every uniform ``U`` with bit ``t`` of the threshold, in place; the
    threshold bits still to compare afterwards.

    A keystream bit of 1 stands for a 0 bit of U (a uniform bit either way), which saves a
    negation per plane.
    """
    if (numerator >> (PRECISION_BITS - 1 - t)) & 1:
        # U has 0 where the threshold has 1: U < q is decided true there.
        np.bitwise_and(undecided, zero_bit_of_u, out=newly)
        decided |= newly
        undecided ^= newly
    else:
        # U has 1 where the threshold has 0: U > q is decided false there.
        undecided &= zero_bit_of_u
    return numerator & ((1 << (PRECISION_BITS - 1 - t)) - 1)


def _decide_rows_tail(
    compared: tuple[NDArray[np.uint64], NDArray[np.uint64], int],
    result: NDArray[np.uint8],
    bits_per_row: int,
    stream: KeyedStream,
    addresses: NDArray[np.uint8],
) -> None:
    """Finish the tied comparisons of :func:`_compare_rows`, one block per (row, bit)."""
    _, undecided, remainder = compared
    if not remainder:
        return
    word_rows, word_cols = np.nonzero(undecided)
    if word_rows.size == 0:
        return
    bits = np.unpackbits(undecided[word_rows, word_cols].view(np.uint8).reshape(-1, 8), axis=1)
    which, offset = np.nonzero(bits)
    row = word_rows[which]
    bit = word_cols[which] * 64 + offset
    keep = bit < bits_per_row
    row, bit = row[keep], bit[keep]
    tweaks = np.zeros((row.size, 2), dtype=">u8")
    tweaks[:, 0] = np.uint64(_TAIL_LANE) << np.uint64(32)
    tweaks[:, 1] = bit.astype(np.uint64)
    draws = stream.encrypt(addresses[row] ^ tweaks.view(np.uint8).reshape(-1, BLOCK))
    rest = draws[:, :8].copy().view(">u8").ravel() >> np.uint64(PLANES)
    hit = rest < np.uint64(remainder)
    np.bitwise_or.at(result, (row[hit], bit[hit] // 8), (0x80 >> (bit[hit] % 8)).astype(np.uint8))


def _trailing_zeros(numerator: int) -> int:
    return (numerator & -numerator).bit_length() - 1


def _tweaked(
    stream: KeyedStream, addresses: NDArray[np.uint8], lane: int, count: int, start: int = 0
) -> NDArray[np.uint8]:
    """``AES(address XOR (lane || b))`` for ``start <= b < start + count`` of every address:
    ``(n, count, 16)``."""
    tweaks = _tweaks(lane, count, start)
    # One 16-byte element per block (complex128 is only a carrier of 16 bytes): a broadcast
    # copy of each address, then one XOR with the tiled tweaks.
    inputs = np.empty((addresses.shape[0], count), dtype=np.complex128)
    inputs[:] = addresses.view(np.complex128)
    words = inputs.view(np.uint64).reshape(addresses.shape[0], 2 * count)
    words ^= tweaks.ravel()
    return stream.encrypt(inputs.view(np.uint8).reshape(-1, BLOCK)).reshape(-1, count, BLOCK)


def _tweaks(lane: int, count: int, start: int) -> NDArray[np.uint64]:
    """The tweaks ``(lane || b)`` for ``start <= b < start + count``, 16 bytes big-endian each,
    as the two native 64-bit words that XOR into an address: ``(count, 2)``."""
    tweaks = np.zeros((count, 2), dtype=">u8")
    tweaks[:, 0] = np.uint64(lane) << np.uint64(32)
    tweaks[:, 1] = np.arange(start, start + count, dtype=np.uint64)
    return tweaks.view(np.uint8).view(np.uint64).reshape(count, 2)


def _tweaked_by_block(
    stream: KeyedStream, addresses: NDArray[np.uint8], lane: int, count: int, start: int = 0
) -> NDArray[np.uint8]:
    """:func:`_tweaked` laid out block by block: ``(count, n, 16)``, the same AES outputs
    (ECB encrypts each block alone), so that one block of every row is contiguous."""
    rows = addresses.shape[0]
    inputs = np.empty((count, rows), dtype=np.complex128)  # 16-byte carriers, as _tweaked
    inputs[:] = np.ascontiguousarray(addresses).view(np.complex128)[:, 0]
    words = inputs.view(np.uint64).reshape(count, rows, 2)
    for block, (high, low) in enumerate(_tweaks(lane, count, start)):
        words[block, :, 0] ^= high
        words[block, :, 1] ^= low
    return stream.encrypt(inputs.view(np.uint8).reshape(-1, BLOCK)).reshape(count, rows, BLOCK)


def uniform_integers_at(
    stream: KeyedStream, k: int, addresses: NDArray[np.uint8]
) -> NDArray[np.int64]:
    """Like :func:`uniform_integers`, but row ``i`` is addressed by ``addresses[i]``.

    Round ``r`` of a row is the block ``AES(address XOR (2 || r))``, four 32-bit words tried in
    order; the first below the largest multiple of ``k`` not exceeding ``2**32`` gives
    ``w mod k`` (rejection keeps every value equally likely).
    """
    if not is_int(k) or not 1 <= k <= 1 << 32:
        raise ParameterError(f"k must be an integer in [1, 2**32], got {shown(k)}")
    addresses = np.ascontiguousarray(addresses, dtype=np.uint8).reshape(-1, BLOCK)
    limit = (1 << 32) - (1 << 32) % k
    # Round 0 for every row at once: its first word decides all but a fraction k / 2**32.
    tweak = np.zeros((1, 2), dtype=">u8")
    tweak[0, 0] = np.uint64(_UNIFORM_LANE) << np.uint64(32)
    words = stream.encrypt(addresses ^ tweak.view(np.uint8)).view("<u4")
    first_word = words[:, 0].astype(np.int64)
    result = first_word % k
    if limit == 1 << 32:  # k divides 2**32: every word is accepted
        return result
    pending = np.flatnonzero(first_word >= limit)
    result[pending] = 0
    round_ = 0
    while pending.size:
        tweak = np.zeros((1, 2), dtype=">u8")
        tweak[0, 0] = np.uint64(_UNIFORM_LANE) << np.uint64(32)
        tweak[0, 1] = round_
        words = stream.encrypt(addresses[pending] ^ tweak.view(np.uint8)).view("<u4")
        words = words.astype(np.int64)
        accepted = words < limit
        found = accepted.any(axis=1)
        first = accepted.argmax(axis=1)
        chosen = words[np.arange(pending.size), first]
        result[pending[found]] = chosen[found] % k
        pending = pending[~found]
        round_ += 1
    return result


def _check_numerator(numerator: int) -> int:
    """``numerator`` as a Python int in ``[0, 2**64]`` (numpy integers included)."""
    if not is_int(numerator) or not 0 <= numerator <= 1 << PRECISION_BITS:
        raise ParameterError(f"numerator must be an integer in [0, 2**64], got {shown(numerator)}")
    return int(numerator)


def _clear_padding(packed: NDArray[np.uint8], bits_per_row: int) -> NDArray[np.uint8]:
    if bits_per_row % 8:
        packed[:, -1] &= np.uint8((0xFF << (8 - bits_per_row % 8)) & 0xFF)
    return packed


def sort_keys(stream: KeyedStream, rows: NDArray[np.int64]) -> NDArray[np.uint64]:
    """One 128-bit pseudorandom key per row, as ``(len(rows), 2)`` unsigned words (high, low).

    Row ``r`` takes the 16-byte block ``r`` of lane 1, so a row's key depends only on (stream,
    its global position): batches of a frame get the keys the whole frame would.
    """
    blocks = stream.blocks_at(1, np.asarray(rows, dtype=np.uint64))
    return blocks.view(">u8").reshape(-1, 2).astype(np.uint64)


def content_sort_keys(
    stream: KeyedStream, rows: NDArray[np.int64], content: NDArray[np.uint8]
) -> NDArray[np.uint64]:
    """Like :func:`sort_keys`, but row ``r``'s key is the address of (its position, its
    content): ``row_addresses(stream, rows, content)`` as (high, low) words.

    Under a reused key, two frames whose rows differ are ordered independently (the same
    key never gives two different frames the same permutation, which would let anyone who
    knows one frame's order undo the other's shuffle); the same frame gets the same order.
    """
    addresses = row_addresses(stream, np.asarray(rows, dtype=np.int64), content)
    return addresses.view(">u8").reshape(-1, 2).astype(np.uint64)


def permutation_from_keys(keys: NDArray[np.uint64]) -> NDArray[np.int64]:
    """The order that sorts rows by their keys (:func:`sort_keys`): a uniformly random
    permutation, given that no two of ``n`` independent 128-bit keys collide (probability at
    most ``n^2 / 2^129``)."""
    return np.lexsort((keys[:, 1], keys[:, 0])).astype(np.int64)


def permutation(stream: KeyedStream, n: int) -> NDArray[np.int64]:
    """A keyed uniformly random permutation of ``range(n)``: sort by per-row 128-bit keys."""
    if not is_int(n) or n < 0:
        raise ParameterError(f"n must be an integer >= 0, got {shown(n)}")
    return permutation_from_keys(sort_keys(stream, np.arange(n, dtype=np.int64)))


def uniform_integers(
    stream: KeyedStream, k: int, *, row_start: int, num_rows: int
) -> NDArray[np.int64]:
    """One exactly uniform integer in ``[0, k)`` per row, for ``1 <= k <= 2**32``.

    Row ``i`` takes the 32-bit word ``w`` at position ``i`` of lane 1 and accepts ``w mod k`` if
    ``w`` is below the largest multiple of ``k`` not exceeding ``2**32``; otherwise round ``r``
    retries with block ``i`` of lane ``1 + r``. Rejection keeps every value equally likely.
    """
    if not is_int(k) or not 1 <= k <= 1 << 32:
        raise ParameterError(f"k must be an integer in [1, 2**32], got {shown(k)}")
    words = stream.contiguous(1, 4 * row_start, 4 * num_rows).view("<u4")
    limit = (1 << 32) - (1 << 32) % k
    if k == 1 << 32:
        result = words.astype(np.int64)
    else:  # 32-bit division, then widen: half the memory traffic of 64-bit words
        result = np.remainder(words, np.uint32(k)).astype(np.int64)
    pending = np.flatnonzero(words >= limit) if limit < 1 << 32 else np.empty(0, np.int64)
    lane = 2
    while pending.size:
        draws = stream.blocks_at(lane, (row_start + pending).astype(np.uint64))
        retry = draws[:, :4].copy().view("<u4").ravel().astype(np.int64)
        accepted = retry < limit
        result[pending[accepted]] = retry[accepted] % k
        pending = pending[~accepted]
        lane += 1
    return result


def uniform_words(
    stream: KeyedStream, *, row_start: int, num_rows: int, count: int
) -> NDArray[np.uint64]:
    """``count`` exactly uniform 64-bit words per row, ``(num_rows, count)``: row ``i`` takes
    keystream words ``count (row_start + i), ...`` of lane :data:`_WORDS_LANE` (AES-CTR)."""
    width = 8 * count
    stream_bytes = stream.contiguous(_WORDS_LANE, width * row_start, width * num_rows)
    return stream_bytes.view("<u8").reshape(num_rows, count)


def uniform_words_of(
    stream: KeyedStream, rows: NDArray[np.int64], count: int
) -> NDArray[np.uint64]:
    """The rows ``rows`` (global positions, any order) of :func:`uniform_words`: the same
    words, computed for those rows only (AES of their blocks, ECB)."""
    rows = np.asarray(rows).astype(np.uint64)
    blocks_per_row = -(-count // 2)
    if count % 2:  # rows do not start on block boundaries: read each row's two spans
        first = (rows * np.uint64(count)) // np.uint64(2)
    else:
        first = rows * np.uint64(blocks_per_row)
    spans = blocks_per_row + (count % 2)
    blocks = np.asarray(first[:, None] + np.arange(spans, dtype=np.uint64), dtype=np.uint64)
    blocks = blocks.reshape(-1)
    raw = stream.blocks_at(_WORDS_LANE, blocks).reshape(rows.size, spans * BLOCK)
    if count % 2 == 0:  # every row starts on a block boundary: its blocks are its words
        return raw.view("<u8").astype(np.uint64, copy=False)
    skip = ((rows * np.uint64(count)) % np.uint64(2)).astype(np.int64) * 8
    words = np.empty((rows.size, count), dtype=np.uint64)
    for parity in np.unique(skip):
        chosen = skip == parity
        picked = raw[chosen, parity : parity + 8 * count]
        words[chosen] = np.ascontiguousarray(picked).view("<u8").reshape(-1, count)
    return words


def uniform_words_at(
    stream: KeyedStream, addresses: NDArray[np.uint8], count: int
) -> NDArray[np.uint64]:
    """Like :func:`uniform_words`, but row ``i`` is addressed by ``addresses[i]``: its words
    are the blocks ``AES(address XOR (lane || b))``, two words a block."""
    addresses = np.ascontiguousarray(addresses, dtype=np.uint8).reshape(-1, BLOCK)
    blocks_per_row = -(-count // 2)
    blocks = _tweaked(stream, addresses, _WORDS_LANE, blocks_per_row)
    flat = blocks.reshape(addresses.shape[0], blocks_per_row * BLOCK)
    words: NDArray[np.uint64] = flat.view("<u8")[:, :count]
    return np.ascontiguousarray(words)
