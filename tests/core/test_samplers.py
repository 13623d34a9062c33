"""Exact samplers: Bernoulli bits at dyadic probabilities, uniform integers, dyadic rounding.

Sample sizes: 4e6 bits per Bernoulli law, 1e6 draws per uniform law; every generation takes a few
milliseconds, so the sizes are set by the power wanted, stated in each docstring (power 0.99 at
the declared false-failure probability, see ``_stats``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from _stats import P_FAIL, assert_binomial, assert_chisquare, assert_independent
from frameldp.core.interval_sampler import bernoulli_bytes
from frameldp.core.randomness import (
    PLANES,
    PRECISION_BITS,
    KeyedStream,
    RandomSource,
    bernoulli_packed,
    bernoulli_packed_at,
    dyadic_at_least,
    dyadic_at_most,
    uniform_integers,
)
from frameldp.core.randomness.samplers import _WORK_BYTES
from frameldp.errors import ParameterError

ONE = 1 << PRECISION_BITS
SQRT3_HALF = dyadic_at_least(0.3660254037844386)  # (sqrt(3) - 1) / 2: bits beyond the 8th
# For the keyed comparison sampler: every 1 decided in the tail (first PLANES bits 0), and a
# third of the mass decided there. For the fresh-key interval sampler: odd numerators whose
# outcomes cut many cells.
TAIL_ONLY = (1 << (PRECISION_BITS - PLANES)) - 1
TAIL_HALF = 3 << (PRECISION_BITS - PLANES - 1)


def _stream(label: str, seed: int = 2024) -> KeyedStream:
    return RandomSource.from_seed(seed).stream(label)


def _bits(packed: np.ndarray, bits_per_row: int) -> np.ndarray:
    return np.unpackbits(packed, axis=1, count=bits_per_row)


def _rows_spanning_two_work_steps(width: int) -> int:
    """An odd number of rows whose packed size exceeds the sampler's internal work size, so
    that sub-ranges straddle its internal chunk boundaries."""
    rows = -(-(_WORK_BYTES + _WORK_BYTES // 4) // width)
    return rows | 1


# --- bernoulli_packed: layout and chunk invariance -------------------------------------------


@pytest.mark.parametrize("numerator", [SQRT3_HALF, TAIL_ONLY], ids=["sqrt3", "tail-only"])
@pytest.mark.parametrize("bits_per_row", [1, 7, 13, 100, 1024])
def test_bernoulli_chunk_invariance(bits_per_row: int, numerator: int) -> None:
    """Rows [a, b) generated alone equal the slice of generating every row, for odd a and b,
    including ranges that straddle the sampler's internal work chunks."""
    stream = _stream("chunks")
    width = -(-bits_per_row // 8)
    rows = _rows_spanning_two_work_steps(width)
    whole = bernoulli_packed(
        stream, numerator, row_start=0, num_rows=rows, bits_per_row=bits_per_row
    )
    assert whole.shape == (rows, width)
    step = max(1, _WORK_BYTES // width)
    ranges = [(1, 3), (3, 9), (5, 1001), (step - 1, step + 1), (step - 3, rows), (1, rows - 2)]
    for start, stop in ranges:
        part = bernoulli_packed(
            stream, numerator, row_start=start, num_rows=stop - start, bits_per_row=bits_per_row
        )
        np.testing.assert_array_equal(part, whole[start:stop], err_msg=f"rows [{start}, {stop})")


def test_bernoulli_rows_are_runs_of_the_byte_stream() -> None:
    """Row i of a packed report is bytes [i * width, (i + 1) * width) of the stream's exact
    Bernoulli bytes (``tests/core/test_interval_sampler.py`` pins their draw), padding
    cleared."""
    stream = _stream("reference")
    rows, bits_per_row, width = 600, 13, 2
    got = bernoulli_packed(
        stream, SQRT3_HALF, row_start=7, num_rows=rows, bits_per_row=bits_per_row
    )
    raw = np.empty(rows * width, dtype=np.uint8)
    bernoulli_bytes(stream, SQRT3_HALF, 7 * width, raw)
    raw = raw.reshape(rows, width)
    raw[:, -1] &= 0xF8
    np.testing.assert_array_equal(got, raw)


def test_keyed_bernoulli_is_monotone_in_the_numerator() -> None:
    """Layout-free exactness check of the comparison sampler (keyed rows): every bit is
    [U < N / 2**64] for one U per position, so on the same addresses a larger numerator can
    only turn zeros into ones. Numerators that differ only beyond the first PLANES bits, or
    by 1, probe the tail comparison."""
    stream = _stream("monotone")
    addresses = stream.blocks_at(9, np.arange(50_000, dtype=np.uint64))
    low_bits = 1 << (PRECISION_BITS - PLANES)
    numerators = sorted(
        {
            1,
            3,
            low_bits - 1,
            low_bits,
            low_bits + 1,
            SQRT3_HALF - 1,
            SQRT3_HALF,
            SQRT3_HALF + low_bits // 3,
            SQRT3_HALF + low_bits - 1,
            SQRT3_HALF + low_bits,
            1 << 63,
            (1 << 63) + 1,
            ONE - 1,
        }
    )
    previous = np.zeros((50_000, 2), dtype=np.uint8)
    for numerator in numerators:
        bits = bernoulli_packed_at(stream, numerator, addresses, bits_per_row=13)
        assert not np.any(previous & ~bits), f"a one at N-1 became a zero at N={numerator}"
        previous = bits


@pytest.mark.parametrize("bits_per_row", [1, 3, 7, 9, 13, 100, 1023])
def test_bernoulli_padding_bits_are_zero_and_extremes_are_constant(bits_per_row: int) -> None:
    """numerator 0 gives all zeros, 2**64 all ones, and padding bits stay zero. For 2**64 - 1 a
    zero data bit has probability 2**-64 per bit, so the all-ones assertion on at most 1.1e6
    bits fails with probability below 1.1e6 * 2**-64 < 1e-13 < P_FAIL when the code is
    correct."""
    stream = _stream("padding")
    rows = 1000
    width = -(-bits_per_row // 8)
    full_rows = np.packbits(np.ones((rows, bits_per_row), dtype=np.uint8), axis=1)
    for numerator, expected in [
        (0, np.zeros_like(full_rows)),
        (ONE, full_rows),
        (ONE - 1, full_rows),
    ]:
        got = bernoulli_packed(
            stream, numerator, row_start=5, num_rows=rows, bits_per_row=bits_per_row
        )
        assert got.shape == (rows, width)
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, expected, err_msg=f"numerator {numerator}")
    if bits_per_row % 8:
        noisy = bernoulli_packed(
            stream, SQRT3_HALF, row_start=0, num_rows=rows, bits_per_row=bits_per_row
        )
        padding_mask = (1 << (8 - bits_per_row % 8)) - 1
        assert not np.any(noisy[:, -1] & padding_mask)


def test_bernoulli_empty_range() -> None:
    got = bernoulli_packed(_stream("empty"), SQRT3_HALF, row_start=9, num_rows=0, bits_per_row=13)
    assert got.shape == (0, 2)


@pytest.mark.parametrize(
    "numerator",
    [SQRT3_HALF, TAIL_ONLY, TAIL_HALF, 3, (1 << 63) + 1, (1 << 62) | 12345, ONE - 3],
    ids=["sqrt3", "tail-only", "tail-half", "tiny", "half+", "quarter+", "almost-one"],
)
def test_bernoulli_frequency_is_exact(numerator: int) -> None:
    """The count of ones in 4e6 bits passes a two-sided exact binomial test at P_FAIL.

    The numerators span the interval sampler's cases: boundaries inside many cells ("sqrt3",
    "quarter+"), odd numerators whose mass sits in one cut cell at either end ("tiny",
    "almost-one", "tail-only"), and "half+", one 2**-64 off a table without cut cells.

    Power 0.99 against |Δp| >= 7.2 sqrt(p(1-p) / 4e6): 1.7e-3 at p = 0.366, and 0.23 p for
    p = 2**-PLANES - 2**-64 ("tail-only", PLANES = 12), 0.19 p for "tail-half"; for
    p = 3 * 2**-64 and 1 - 3 * 2**-64 a single wrong bit fails the test.
    """
    rows, bits_per_row = 4000, 1000
    packed = bernoulli_packed(
        _stream(f"freq{numerator}"),
        numerator,
        row_start=0,
        num_rows=rows,
        bits_per_row=bits_per_row,
    )
    ones = int(np.unpackbits(packed).sum())
    assert_binomial(ones, rows * bits_per_row, numerator / ONE, p_fail=P_FAIL)


@pytest.mark.parametrize("numerator", [SQRT3_HALF, TAIL_HALF], ids=["sqrt3", "tail-half"])
def test_bernoulli_neighbouring_bits_are_independent(numerator: int) -> None:
    """2x2 chi-square tests of independence (1 df) on pairs of adjacent bits of a row
    (1.2e6 pairs, crossing byte and 64-bit word boundaries since rows are 13 bits) and on bit j
    of rows i and i + 1 (1.3e6 pairs); Bonferroni over the 2 tests (P_FAIL / 2 each).

    Power 0.99 against a correlation |ρ| >= sqrt(54.1 / n_pairs) ≈ 0.0067 between neighbours
    (non-centrality 54.1 for 1 df at P_FAIL / 2).
    """
    rows, bits_per_row = 100_000, 13
    bits = _bits(
        bernoulli_packed(
            _stream("pairs"), numerator, row_start=0, num_rows=rows, bits_per_row=bits_per_row
        ),
        bits_per_row,
    )
    assert_independent(bits[:, :-1], bits[:, 1:], p_fail=P_FAIL / 2)
    assert_independent(bits[:-1, :], bits[1:, :], p_fail=P_FAIL / 2)


@pytest.mark.parametrize("numerator", [-1, ONE + 1, -(2**70), 2**80])
def test_bernoulli_rejects_numerator_out_of_range(numerator: int) -> None:
    with pytest.raises(
        ParameterError,
        match=f"numerator must be an integer in \\[0, 2\\*\\*64\\], got {numerator}$",
    ):
        bernoulli_packed(_stream("bad"), numerator, row_start=0, num_rows=1, bits_per_row=8)


@pytest.mark.parametrize("numerator", [0.5, 0.0])
def test_bernoulli_rejects_non_integer_numerator(numerator: float) -> None:
    with pytest.raises(
        ParameterError,
        match=f"numerator must be an integer in \\[0, 2\\*\\*64\\], got {numerator!r}$",
    ):
        bernoulli_packed(_stream("bad"), numerator, row_start=0, num_rows=1, bits_per_row=8)  # type: ignore[arg-type]


# --- uniform_integers ------------------------------------------------------------------------

HALF_REJECTING = (1 << 31) + 1  # largest multiple below 2**32 is k itself: rejection ~1/2
MODULO_BIASED = 3 << 30  # w % k without rejection would favour [0, 2**30) twice over


def _reference_uniform(stream: KeyedStream, k: int, row_start: int, num_rows: int) -> np.ndarray:
    """The documented rejection sampler, one row at a time: word ``row_start + i`` of lane 1,
    then block ``row_start + i`` of lanes 2, 3, ... until a word below the largest multiple of k
    not exceeding 2**32."""
    limit = (1 << 32) - (1 << 32) % k
    words = stream.contiguous(1, 4 * row_start, 4 * num_rows).view("<u4")
    out = np.empty(num_rows, dtype=np.int64)
    for i in range(num_rows):
        word, lane = int(words[i]), 2
        while word >= limit:
            block = stream.blocks_at(lane, np.array([row_start + i], dtype=np.uint64))
            word, lane = int(block[0, :4].copy().view("<u4")[0]), lane + 1
        out[i] = word % k
    return out


@pytest.mark.parametrize(
    ("k", "row_start"), [(7, 0), (HALF_REJECTING, 3), (MODULO_BIASED, 11), (2**32, 5)]
)
def test_uniform_matches_reference_rejection(k: int, row_start: int) -> None:
    stream = _stream("uniform-ref")
    got = uniform_integers(stream, k, row_start=row_start, num_rows=1500)
    np.testing.assert_array_equal(got, _reference_uniform(stream, k, row_start, 1500))


@pytest.mark.parametrize("k", [2, 7, HALF_REJECTING, 2**32])
def test_uniform_chunk_invariance(k: int) -> None:
    stream = _stream("uniform-chunks")
    whole = uniform_integers(stream, k, row_start=0, num_rows=20_001)
    assert whole.dtype == np.int64
    for start, stop in [(1, 2), (3, 10), (7, 5001), (4999, 20_001), (1, 20_000)]:
        part = uniform_integers(stream, k, row_start=start, num_rows=stop - start)
        np.testing.assert_array_equal(part, whole[start:stop], err_msg=f"rows [{start}, {stop})")


@pytest.mark.parametrize("k", [2, 3, 7, 1000])
def test_uniform_small_k_chi_square(k: int) -> None:
    """Chi-square over the k values of 1e6 draws at P_FAIL.

    Power 0.99 against alternatives with 1e6 * sum((p_i - 1/k)**2 * k) >= λ (λ = 52.1, 56.3,
    66.6, 360 for k = 2, 3, 7, 1000): e.g. one value's probability off by 3.6e-3 (k=2),
    2.9e-3 (k=7), or 6e-4, i.e. 0.6 of its 1e-3 (k=1000).
    """
    values = uniform_integers(_stream(f"uniform{k}"), k, row_start=0, num_rows=1_000_000)
    assert values.min() >= 0
    assert values.max() < k
    assert_chisquare(np.bincount(values, minlength=k), np.full(k, 1 / k), p_fail=P_FAIL)


def _bin_probabilities(k: int, width: int) -> np.ndarray:
    """Exact probabilities of value // width for a uniform value in [0, k)."""
    edges = np.minimum(np.arange(0, k + width, width, dtype=np.float64), k)
    return np.diff(edges)[: -(-k // width)] / k


@pytest.mark.parametrize("k", [HALF_REJECTING, MODULO_BIASED])
def test_uniform_large_k_is_uniform(k: int) -> None:
    """Uniformity for k too large to histogram, on 1e6 draws, Bonferroni over 3 tests
    (P_FAIL / 3 each):

    * value // ceil(k / 64) in 64 bins (exact bin sizes; for 2**31 + 1 the last bin is smaller),
      chi-square with 63 df: power 0.99 against 1e6 * χ²-divergence >= 127, e.g. one bin off by
      1.4e-3 in probability, or the modulo bias ``word % k`` would have without rejection for
      k = 3 * 2**30 (values below 2**30 twice as likely: a third of the bins at 0.023 instead of
      0.016, divergence 0.125);
    * value mod 3 (3 divides both k, so exactly 1/3 each; 2 df): low-bit bias;
    * the 64-bin test on the rows whose lane-1 word was rejected alone (5e5 rows for 2**31 + 1,
      2.5e5 for 3 * 2**30): the retry lanes are uniform on their own (one bin off by 2e-3 resp.
      2.8e-3 is detected).
    k = 2**31 + 1 rejects a word with probability (2**31 - 1) / 2**32 ≈ 1/2, so half of the rows
    use retry lanes and a quarter at least two; k = 3 * 2**30 rejects with probability 1/4.
    """
    n = 1_000_000
    stream = _stream(f"large-k{k}")
    values = uniform_integers(stream, k, row_start=0, num_rows=n)
    assert values.min() >= 0
    assert values.max() < k
    width = -(-k // 64)
    probabilities = _bin_probabilities(k, width)
    assert_chisquare(np.bincount(values // width, minlength=64), probabilities, p_fail=P_FAIL / 3)
    assert_chisquare(np.bincount(values % 3, minlength=3), np.full(3, 1 / 3), p_fail=P_FAIL / 3)
    limit = (1 << 32) - (1 << 32) % k
    first_words = stream.contiguous(1, 0, 4 * n).view("<u4").astype(np.int64)
    retried = first_words >= limit
    assert_chisquare(
        np.bincount(values[retried] // width, minlength=64), probabilities, p_fail=P_FAIL / 3
    )


def test_uniform_half_rejecting_k_retry_rate() -> None:
    """The lane-1 word of a row is rejected with probability exactly (2**31 - 1) / 2**32:
    binomial test on 1e6 rows at P_FAIL (power 0.99 against a shift of 3.6e-3)."""
    k, n = HALF_REJECTING, 1_000_000
    stream = _stream("half-rejecting")
    first_words = stream.contiguous(1, 0, 4 * n).view("<u4").astype(np.int64)
    values = uniform_integers(stream, k, row_start=0, num_rows=n)
    accepted = first_words < k
    # Accepted rows keep their first word; the rest come from the retry lanes.
    np.testing.assert_array_equal(values[accepted], first_words[accepted])
    assert_binomial(n - accepted.sum(), n, ((1 << 31) - 1) / 2**32, p_fail=P_FAIL)


def test_uniform_full_range_and_trivial_range() -> None:
    stream = _stream("edges")
    words = stream.contiguous(1, 4 * 17, 4 * 5000).view("<u4").astype(np.int64)
    full = uniform_integers(stream, 2**32, row_start=17, num_rows=5000)
    np.testing.assert_array_equal(full, words)  # nothing is rejected when k = 2**32
    assert full.max() >= 2**31  # 5000 draws all below 2**31 has probability 2**-5000
    trivial = uniform_integers(stream, 1, row_start=17, num_rows=5000)
    np.testing.assert_array_equal(trivial, np.zeros(5000, dtype=np.int64))
    assert uniform_integers(stream, 5, row_start=0, num_rows=0).shape == (0,)


@pytest.mark.parametrize("k", [0, -1, 2**32 + 1, 2**40])
def test_uniform_rejects_k_out_of_range(k: int) -> None:
    with pytest.raises(
        ParameterError, match=f"k must be an integer in \\[1, 2\\*\\*32\\], got {k}$"
    ):
        uniform_integers(_stream("bad"), k, row_start=0, num_rows=1)


def test_uniform_rejects_non_integer_k() -> None:
    with pytest.raises(ParameterError, match=r"k must be an integer in \[1, 2\*\*32\], got 2\.5$"):
        uniform_integers(_stream("bad"), 2.5, row_start=0, num_rows=3)  # type: ignore[arg-type]


# --- dyadic rounding ----------------------------------------------------------------------------

PROBABILITIES = [
    0.0,
    1.0,
    0.5,
    0.1,
    1 / 3,
    0.3660254037844386,
    math.pi / 4,
    1 - 2**-53,
    2.0**-64,
    2.0**-65,
    2.0**-70,
    5e-324,
    Fraction(1, 3),
    Fraction(2, 3),
    Fraction(10**30 + 1, 10**31),
    Fraction(1, 2**64 + 1),
    Fraction(2**64 - 1, 2**64),
]


@pytest.mark.parametrize("probability", PROBABILITIES, ids=str)
def test_dyadic_rounding_against_fractions(probability: float | Fraction) -> None:
    exact = Fraction(probability)
    up, down = dyadic_at_least(probability), dyadic_at_most(probability)
    assert isinstance(up, int)
    assert isinstance(down, int)
    assert Fraction(up, ONE) >= exact > Fraction(up - 1, ONE)
    assert Fraction(down, ONE) <= exact < Fraction(down + 1, ONE)
    on_grid = (exact * ONE).denominator == 1
    assert up - down == (0 if on_grid else 1)


@pytest.mark.parametrize("bits", [9, 16, 20, 33, 64])
def test_addressed_narrow_rows_read_late_planes_only_when_undecided_and_draw_the_same_bits(
    bits: int,
) -> None:
    """Rows of at most 64 bits compute their late planes only while a bit is undecided: the
    bits equal those of every plane computed at once (the layout frozen for keyed and
    memoized noise), for thresholds of every shape."""
    from frameldp.core.randomness import samplers
    from frameldp.core.randomness.streams import KeyedStream

    stream = KeyedStream(bytes(range(32)))
    rng = np.random.default_rng(bits)
    addresses = rng.integers(0, 256, (3000, 16), dtype=np.uint8)
    for numerator in (1, 3, 1 << 60, (1 << 63) + 12345, (1 << 64) - 7, 4961947078051289661):
        lazy = samplers.bernoulli_packed_at(stream, numerator, addresses, bits_per_row=bits)
        planes = min(samplers.PLANES, 64 - samplers._trailing_zeros(numerator))
        keystream = samplers._tweaked(stream, addresses, samplers._PLANE_LANE, -(-planes // 2))
        words = keystream.view(np.uint64).reshape(addresses.shape[0], -1)[:, :planes]
        compared = samplers._compare_rows(numerator, words.reshape(-1, planes, 1))
        eager = compared[0].view(np.uint8)
        samplers._decide_rows_tail(compared, eager, bits, stream, addresses)
        expected = samplers._clear_padding(eager[:, : -(-bits // 8)].copy(), bits)
        np.testing.assert_array_equal(lazy, expected)
