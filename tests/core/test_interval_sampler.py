"""The interval sampler of exact Bernoulli bytes, the positional flags, and thread invariance.

The table of every cell is checked exactly (integer masses against ``Q**|v| (2**64 - Q)**(8 -
|v|)``); the stream layout against a plain re-implementation of the documented draw; the
byte law by a chi-square test on 2**21 bytes (power stated in its docstring); the exact
resolution of a 64-bit tie by forcing one.
"""

from __future__ import annotations

import bisect
import itertools
import math
import threading

import numpy as np
import pytest

from _stats import P_FAIL, assert_binomial, assert_chisquare, detectable_noncentrality
from frameldp.core import parallel
from frameldp.core.interval_sampler import (
    TAIL_LANE,
    WORD_LANE,
    bernoulli_bytes,
    byte_table,
    resolve_cut_cells,
)
from frameldp.core.parallel import map_ranges, thread_count, threads
from frameldp.core.randomness import (
    PRECISION_BITS,
    KeyedStream,
    RandomSource,
    bernoulli_flags,
    bernoulli_packed,
    bernoulli_packed_at,
    code_bytes,
    dyadic_at_least,
)
from frameldp.core.randomness.samplers import _WORK_BYTES
from frameldp.errors import FrameLDPWarning, ParameterError

ONE = 1 << PRECISION_BITS
CELL_SHIFT = 8 * PRECISION_BITS - 16  # a cell is 2**-16 of [0, 1): U's offset has 496 bits
NUMERATORS = [
    dyadic_at_least(0.3660254037844386),
    dyadic_at_least(1 / (1 + math.exp(0.5))),  # RAPPOR's flip at epsilon = 1
    3,
    (1 << 63) + 1,
    1 << 62,  # q = 1/4: every boundary on a cell edge, nothing cut
    ONE - 3,
    dyadic_at_least(1e-9),  # every inner boundary in the last cell
]


def _stream(label: str, seed: int = 2026) -> KeyedStream:
    return RandomSource.from_seed(seed).stream(label)


def _masses(numerator: int) -> list[int]:
    """``P(v) * 2**512`` of each byte ``v``: eight independent Bernoulli(Q / 2**64) bits."""
    one, zero = numerator, ONE - numerator
    return [one ** v.bit_count() * zero ** (8 - v.bit_count()) for v in range(256)]


@pytest.mark.parametrize("numerator", [0, 1, *NUMERATORS, ONE - 1, ONE])
def test_table_gives_every_byte_its_exact_mass(numerator: int) -> None:
    """Summing the table's cells (whole cells, and the pieces of cut cells between their
    boundaries) gives each byte exactly its mass, and each cut cell's stored 64-bit boundary
    prefixes are those of the exact boundaries inside it."""
    table = byte_table(numerator)
    width = 1 << CELL_SHIFT
    got = [0] * 256
    for byte, count in enumerate(np.bincount(table.outcome[: table.first_tied], minlength=256)):
        got[byte] += int(count) * width
    for i, cell in enumerate(table.tied_cells.tolist()):
        low, high = cell * width, (cell + 1) * width
        inside = [c for c in table.boundaries if low < c < high]
        assert inside, f"cut cell {cell} holds no boundary"
        prefixes = table.bound_high[table.bound_start[i] : table.bound_start[i + 1]].tolist()
        assert prefixes == [(c - low) >> (CELL_SHIFT - 64) for c in inside]
        edges = [low, *inside, high]
        first = int(table.outcome[table.first_tied + i])
        for rank, (a, b) in enumerate(itertools.pairwise(edges)):
            got[first + rank] += b - a
    assert got == _masses(numerator)


def _reference_bytes(stream: KeyedStream, numerator: int, start: int, count: int) -> np.ndarray:
    """The documented draw, written plainly with exact integers: byte ``g`` takes the 16-bit
    little-endian word at keystream bytes ``2g, 2g + 1`` of lane 0x100; the word names a cell
    (cells no boundary cuts first, in order, then the cut cells, in order); ``U`` is the cell
    followed by the first 496 bits of blocks ``g`` of lanes 0x101..0x104; the byte is the
    ``v`` with ``C_v <= U < C_(v+1)``."""
    bounds = [0]
    for mass in _masses(numerator):
        bounds.append(bounds[-1] + mass)
    cut = sorted({c >> CELL_SHIFT for c in bounds[1:256] if c % (1 << CELL_SHIFT)})
    cut_set = set(cut)
    cells = [c for c in range(1 << 16) if c not in cut_set] + cut
    words = stream.contiguous(WORD_LANE, 2 * start, 2 * count).view("<u2")
    positions = np.arange(start, start + count, dtype=np.uint64)
    tails = np.concatenate([stream.blocks_at(TAIL_LANE + b, positions) for b in range(4)], axis=1)
    out = np.empty(count, dtype=np.uint8)
    for g in range(count):
        offset = int.from_bytes(tails[g].tobytes(), "big") >> 16
        u = cells[int(words[g])] << CELL_SHIFT | offset
        out[g] = bisect.bisect_right(bounds, u) - 1
    return out


@pytest.mark.parametrize("numerator", NUMERATORS)
def test_bytes_match_the_documented_draw(numerator: int) -> None:
    """A pin of the stream layout and a check of the fast path (table, cut cells, 64-bit
    tails) against exact integer arithmetic on every one of 3000 bytes."""
    stream = _stream("reference")
    got = np.empty(3000, dtype=np.uint8)
    bernoulli_bytes(stream, numerator, 777, got)
    np.testing.assert_array_equal(got, _reference_bytes(stream, numerator, 777, 3000))


def test_a_tie_in_the_first_64_bits_is_resolved_exactly() -> None:
    """Force the probability-2**-64 case: U's first 64 offset bits equal a boundary's. The
    exact offsets then decide: one below the boundary does not pass it, the boundary itself
    and one above do."""
    numerator = NUMERATORS[0]
    table = byte_table(numerator)
    i = int(np.argmax(np.diff(table.bound_start) >= 1))
    cell = int(table.tied_cells[i])
    exact = next(c for c in table.boundaries if c >> CELL_SHIFT == cell and c % (1 << CELL_SHIFT))
    offset = exact - (cell << CELL_SHIFT)
    prefix = np.uint64(offset >> (CELL_SHIFT - 64))
    cut = np.array([i, i, i], dtype=np.int64)
    high = np.array([prefix] * 3, dtype=np.uint64)
    below = resolve_cut_cells(table, cut, high, lambda which: [offset - 1, offset, offset + 1])
    assert below.tolist() == [0, 1, 1]


def test_byte_law_is_exact() -> None:
    """Chi-square of 2**21 bytes over the 256 outcomes against P(v) at P_FAIL (255 df): the
    joint law of eight bits, not only each bit's frequency. Power 0.99 against a divergence
    2**21 * chi2(P', P) >= 437, e.g. one outcome of probability 1e-2 off by 1.44e-3 (14% of
    it), or every outcome off by 1.2% of its probability."""
    numerator = NUMERATORS[0]
    out = np.empty(1 << 21, dtype=np.uint8)
    bernoulli_bytes(_stream("law"), numerator, 0, out)
    probabilities = np.array(_masses(numerator), dtype=np.float64) / 2.0**512
    assert detectable_noncentrality(255, P_FAIL) < 440
    assert_chisquare(np.bincount(out, minlength=256), probabilities, p_fail=P_FAIL)


@pytest.mark.parametrize("numerator", [NUMERATORS[1], 3])
def test_bytes_are_a_function_of_position_only(numerator: int) -> None:
    """Any range of bytes, on any number of threads, equals the same bytes of a longer range
    (ranges straddle the sampler's internal chunks and thread ranges)."""
    stream = _stream("ranges")
    total = 3 * _WORK_BYTES + 12_345
    whole = np.empty(total, dtype=np.uint8)
    bernoulli_bytes(stream, numerator, 0, whole)
    for start, stop in [(1, 2), (7, 70_001), (_WORK_BYTES - 5, 2 * _WORK_BYTES + 9), (3, total)]:
        part = np.empty(stop - start, dtype=np.uint8)
        bernoulli_bytes(stream, numerator, start, part)
        np.testing.assert_array_equal(part, whole[start:stop], err_msg=f"[{start}, {stop})")
    for count in (1, 2, 3):
        with threads(count):
            packed = bernoulli_packed(
                stream, numerator, row_start=0, num_rows=total // 128, bits_per_row=1024
            )
        np.testing.assert_array_equal(packed.ravel(), whole[: total // 128 * 128])


def test_flags_are_bits_of_the_byte_stream() -> None:
    """Row r's flag is bit r of the stream's Bernoulli bytes: any odd range of rows equals
    the same rows of a longer one, on any number of threads."""
    stream = _stream("flags")
    numerator = NUMERATORS[0]
    rows = 8 * _WORK_BYTES + 1001
    with threads(1):
        whole = bernoulli_flags(stream, numerator, row_start=0, num_rows=rows)
    assert whole.dtype == np.bool_
    assert whole.shape == (rows,)
    raw = np.empty(-(-rows // 8), dtype=np.uint8)
    bernoulli_bytes(stream, numerator, 0, raw)
    np.testing.assert_array_equal(whole, np.unpackbits(raw, count=rows).astype(bool))
    for start, stop in [(0, 1), (3, 11), (5, 8 * _WORK_BYTES + 3), (rows - 7, rows)]:
        with threads(2):
            part = bernoulli_flags(stream, numerator, row_start=start, num_rows=stop - start)
        np.testing.assert_array_equal(part, whole[start:stop], err_msg=f"[{start}, {stop})")
    assert bernoulli_flags(stream, numerator, row_start=9, num_rows=0).shape == (0,)


def test_flag_frequency_is_exact() -> None:
    """Binomial test of 4e6 flags at P_FAIL; power 0.99 against |Δp| >= 1.7e-3 at p = 0.366."""
    numerator = NUMERATORS[0]
    flags = bernoulli_flags(_stream("flag-frequency"), numerator, row_start=5, num_rows=4_000_000)
    assert_binomial(int(flags.sum()), flags.size, numerator / ONE, p_fail=P_FAIL)


def test_keyed_flags_are_the_frozen_comparison_sampler() -> None:
    """Under an address (a caller's key, a seed, a memo key) a flag is a one-bit row of the
    comparison sampler, whose layout is frozen: keyed re-runs and memoized responses keep
    their reports across versions (``tests/core/test_addressing.py`` pins its values)."""
    source = RandomSource.from_seed(5)
    codes = np.arange(1000, dtype=np.int64) % 7
    rows = source.rows(["c", "spec"], 40, codes.size, lambda: code_bytes(codes))
    numerator = NUMERATORS[1]
    packed = bernoulli_packed_at(
        source.stream("c", "spec", "move"), numerator, rows._addresses, bits_per_row=1
    )
    np.testing.assert_array_equal(rows.flags("move", numerator), packed.ravel() != 0)


# --- threads -------------------------------------------------------------------------------


def test_thread_settings_and_scopes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FRAMELDP_THREADS", raising=False)  # make test sets it to 1
    monkeypatch.setattr(parallel, "_default", None)  # an in-process CLI test may have set it
    default = thread_count()
    assert default == parallel.available_cores()
    parallel.set_threads(3)
    try:
        assert thread_count() == 3
        with threads(1):
            assert thread_count() == 1
        assert thread_count() == 3
    finally:
        parallel.set_threads(None)
    assert thread_count() == default


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", 10_000])
def test_bad_thread_counts_are_refused(bad: object) -> None:
    with pytest.raises(ParameterError, match="threads must be an integer in"):
        parallel.set_threads(bad)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="threads must be an integer in"), threads(bad):  # type: ignore[arg-type]
        pass


def test_map_ranges_covers_every_range_once_on_several_threads() -> None:
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def work(start: int, stop: int) -> None:
        with lock:
            seen.append((start, stop))
        assert thread_count() == 1  # nested work runs serially

    with threads(4):
        map_ranges(1000, 7, work)
    assert sorted(seen) == [(s, min(s + 7, 1000)) for s in range(0, 1000, 7)]


def test_map_ranges_raises_the_first_failing_range_in_row_order() -> None:
    """Whatever thread fails first, the error raised is the one of the lowest failing range:
    what a serial run raises."""

    def work(start: int, stop: int) -> None:
        if start >= 30:
            raise ValueError(f"range {start}")

    for count in (1, 2, 4):
        with threads(count), pytest.raises(ValueError, match=r"^range 30$"):
            map_ranges(100, 10, work)


# --- writing into a preallocated output ----------------------------------------------------


def test_reports_written_into_a_reused_buffer_are_the_reports() -> None:
    """``out=`` gives the same reports as a new array, batch after batch in one buffer, under
    a seed (compared report for report) and under a fresh key (shape, padding, identity)."""
    from frameldp.core import Rappor

    mechanism = Rappor(1.0, domain=range(13))
    codes = (np.arange(3000) * 5) % 13
    whole = mechanism.randomize_codes(codes, source=RandomSource.from_seed(3), label="c")
    buffer = np.full((1000, 2), 0xFF, dtype=np.uint8)
    source = RandomSource.from_seed(3)
    for start in range(0, 3000, 1000):
        got = mechanism.randomize_codes(
            codes[start : start + 1000], source=source, label="c", row_start=start, out=buffer
        )
        assert got is buffer
        np.testing.assert_array_equal(buffer, whole[start : start + 1000])
    fresh = mechanism.randomize_codes(
        codes[:1000], source=RandomSource.fresh(), label="c", out=buffer
    )
    assert fresh is buffer
    assert not np.any(buffer[:, 1] & 0x07)  # 13 bits: the 3 padding bits are clear


def test_bernoulli_into_out_equals_a_new_array() -> None:
    stream = _stream("out")
    numerator = NUMERATORS[1]
    expected = bernoulli_packed(stream, numerator, row_start=9, num_rows=500, bits_per_row=20)
    out = np.full((500, 3), 0xFF, dtype=np.uint8)
    got = bernoulli_packed(stream, numerator, row_start=9, num_rows=500, bits_per_row=20, out=out)
    assert got is out
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    "out",
    [
        np.zeros((500, 2), dtype=np.uint8),
        np.zeros((500, 3), dtype=np.int8),
        np.zeros((3, 500), dtype=np.uint8).T,
        [[0] * 3] * 500,
    ],
    ids=["shape", "dtype", "not-contiguous", "list"],
)
def test_a_wrong_out_is_refused(out: object) -> None:
    with pytest.raises(ParameterError, match=r"out must be a writable C-contiguous uint8 array"):
        bernoulli_packed(
            _stream("out"),
            3,
            row_start=0,
            num_rows=500,
            bits_per_row=20,
            out=out,  # type: ignore[arg-type]
        )


@pytest.mark.parametrize("kind", [np.uint64, np.int64, int])
def test_numpy_integer_numerators_are_accepted(kind: type) -> None:
    """A numerator may be a numpy integer: the same bits as the Python int."""
    numerator = NUMERATORS[1]
    stream = _stream("numpy-int")
    expected = bernoulli_packed(stream, numerator, row_start=0, num_rows=300, bits_per_row=64)
    got = bernoulli_packed(stream, kind(numerator), row_start=0, num_rows=300, bits_per_row=64)
    np.testing.assert_array_equal(got, expected)
    flags = bernoulli_flags(stream, kind(numerator), row_start=3, num_rows=50)
    same = bernoulli_flags(stream, numerator, row_start=3, num_rows=50)
    np.testing.assert_array_equal(flags, same)


def test_a_short_cipher_write_is_refused() -> None:
    """If AES ever wrote fewer bytes than asked (a short input buffer), the rest of the
    keystream would be zeros, and zeros draw no noise: the keystream refuses to return it."""
    from frameldp.core.randomness import streams

    streams.check_written(32, 32)
    with pytest.raises(RuntimeError, match="no noise released"):
        streams.check_written(16, 32)
    assert len(streams.zeros(16)) == 16
    assert not any(streams.zeros(1 << 20).tobytes())


def test_the_environment_sets_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_default", None)  # an in-process CLI test may have set it
    monkeypatch.setenv("FRAMELDP_THREADS", "3")
    assert thread_count() == 3
    with threads(2):
        assert thread_count() == 2
    for bad in ("many", "0", "1000"):
        monkeypatch.setenv("FRAMELDP_THREADS", bad)
        with pytest.warns(FrameLDPWarning, match="FRAMELDP_THREADS must be an integer"):
            assert thread_count() == parallel.available_cores()
    monkeypatch.delenv("FRAMELDP_THREADS")
    assert thread_count() == parallel.available_cores()


def test_prefaulted_arrays_are_new_writable_arrays_of_the_shape_on_any_number_of_threads() -> None:
    for count in (1, 2):
        with threads(count):
            out = parallel.prefaulted_empty((40_000, 1_000), np.uint8)  # 40 MB: several ranges
        assert out.shape == (40_000, 1_000)
        assert out.dtype == np.uint8
        assert out.flags.c_contiguous
        assert out.flags.writeable
    assert parallel.prefaulted_empty((0, 3), np.int64).shape == (0, 3)
