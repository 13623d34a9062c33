"""Bloom filters of strings (``BloomEncoder``) and the content-addressed randomness of Bloom RAPPOR.

* ``hash_scheme="rappor"`` is checked bit for bit against the reference client's hash,
  recomputed here with :mod:`hashlib` (google/rappor ``client/python/rappor.py``,
  ``get_bloom_bits``): hash ``i`` of ``v`` in cohort ``c`` is byte ``i`` of
  ``MD5(c as 4 bytes big-endian || UTF-8 of v)`` modulo ``num_bits``.
* ``hash_scheme="fast"`` is pinned to the formula of its docstring, recomputed in plain Python
  integers, and tested for uniformity and for independence across hashes and cohorts.
* :func:`bernoulli_packed_at`, :func:`digests` and :meth:`KeyedStream.prf` are the memoization
  machinery: exact Bernoulli bits addressed by a PRF of (user, value).

Statistical assertions hold at the declared false-failure probability ``P_FAIL`` (see ``_stats``);
the hash tests are over a fixed list of strings, so their "randomness" is the choice of the hash
function, and they fail with probability ``P_FAIL`` over that choice.
"""

from __future__ import annotations

import hashlib
import hmac
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import frameldp.core.encoding as encoding_module
from _stats import P_FAIL, assert_binomial, assert_chisquare, assert_independent
from frameldp.core import BloomEncoder
from frameldp.core.encoding import HASH_SCHEMES
from frameldp.core.randomness import (
    KEY_BYTES,
    PLANES,
    PRECISION_BITS,
    KeyedStream,
    RandomSource,
    bernoulli_packed_at,
    digests,
    dyadic_at_least,
    label_bytes,
)
from frameldp.core.randomness.samplers import _TAIL_LANE
from frameldp.errors import DomainError, ParameterError

ONE = 1 << PRECISION_BITS
MASK64 = ONE - 1
KEY = bytes(range(KEY_BYTES))

STRINGS = [
    "",
    "a",
    "abc",
    "https://example.com/path?q=1",
    "Grüße, Zoë",  # Latin-1 range: UTF-8, not Latin-1, is hashed
    "日本語のテキスト",
    "emoji 🎉 outside the BMP",
    "nul\x00inside",
    "x" * 300,
]
COHORTS = [0, 1, 2, 7, 63, 255, 256, 65_537, 2**31 + 5, 2**32 - 2]


# --- independent oracles -------------------------------------------------------------------------


def _md5_positions(value: str, cohort: int, num_hashes: int, num_bits: int) -> list[int]:
    """The reference client's ``get_bloom_bits``: bytes of MD5(4-byte big-endian cohort || v)."""
    digest = hashlib.md5(cohort.to_bytes(4, "big") + value.encode("utf-8")).digest()
    return [digest[i] % num_bits for i in range(num_hashes)]


def _mix64(x: int) -> int:
    """SplitMix64's finalizer on Python integers."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def _fast_positions(value: str, cohort: int, num_hashes: int, num_bits: int) -> list[int]:
    """``H_i(c, v) = mix(d(v) XOR mix(c * 2**16 + i)) mod k`` for i = 1..h (the docstring), with
    ``d(v)`` the 8-byte personalized BLAKE2b digest read little-endian. Pinned: the analyst
    recomputes these hashes to decode stored reports, so they may never change."""
    raw = hashlib.blake2b(value.encode("utf-8"), digest_size=8, person=b"frameldp.bloom1")
    d = int.from_bytes(raw.digest(), "little")
    return [_mix64(d ^ _mix64(cohort * 2**16 + i)) % num_bits for i in range(1, num_hashes + 1)]


ORACLES: dict[str, Callable[[str, int, int, int], list[int]]] = {
    "rappor": _md5_positions,
    "fast": _fast_positions,
}


def _pack(rows: list[list[int]], num_bits: int) -> np.ndarray:
    """Packed rows with the given bits set: bit j is bit 7 - j % 8 of byte j // 8."""
    packed = np.zeros((len(rows), -(-num_bits // 8)), dtype=np.uint8)
    for r, positions in enumerate(rows):
        for j in positions:
            packed[r, j // 8] |= 0x80 >> (j % 8)
    return packed


# --- reference hash vectors ----------------------------------------------------------------------

SIZES = [
    (num_bits, num_hashes)
    for num_bits in (8, 16, 100, 256)
    for num_hashes in (1, 2, 5, 8, 16)
    if num_hashes <= num_bits
]


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
@pytest.mark.parametrize(("num_bits", "num_hashes"), SIZES)
def test_positions_match_the_reference_hash(
    hash_scheme: str, num_bits: int, num_hashes: int
) -> None:
    encoder = BloomEncoder(num_bits, num_hashes, 2**32 - 1, hash_scheme)  # type: ignore[arg-type]
    oracle = ORACLES[hash_scheme]
    values = [v for v in STRINGS for _ in COHORTS]
    cohorts = np.array(COHORTS * len(STRINGS), dtype=np.int64)
    got = encoder.positions(values, cohorts)
    expected = [
        oracle(v, int(c), num_hashes, num_bits) for v, c in zip(values, cohorts, strict=True)
    ]
    assert got.shape == (len(values), num_hashes)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.int64))


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
@pytest.mark.parametrize(("num_bits", "num_hashes"), [(8, 3), (16, 2), (100, 16), (256, 16)])
def test_signatures_are_the_positions_in_every_cohort(
    hash_scheme: str, num_bits: int, num_hashes: int
) -> None:
    num_cohorts = 6
    encoder = BloomEncoder(num_bits, num_hashes, num_cohorts, hash_scheme)  # type: ignore[arg-type]
    got = encoder.signatures(STRINGS)
    assert got.shape == (len(STRINGS), num_cohorts, num_hashes)
    oracle = ORACLES[hash_scheme]
    expected = [[oracle(v, c, num_hashes, num_bits) for c in range(num_cohorts)] for v in STRINGS]
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.int64))


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
@pytest.mark.parametrize(("num_bits", "num_hashes"), [(8, 2), (16, 5), (100, 16), (256, 16)])
def test_encode_packs_the_reference_bits(hash_scheme: str, num_bits: int, num_hashes: int) -> None:
    """Rows hold ``values[codes[i]]`` in cohort ``cohorts[i]``, codes repeated and out of order;
    colliding hashes set one bit; padding bits are zero."""
    num_cohorts = 300
    encoder = BloomEncoder(num_bits, num_hashes, num_cohorts, hash_scheme)  # type: ignore[arg-type]
    rows = np.arange(500, dtype=np.int64)
    codes = (rows * 7) % len(STRINGS)
    cohorts = (rows * rows + 3) % num_cohorts
    got = encoder.encode(codes, STRINGS, cohorts)
    oracle = ORACLES[hash_scheme]
    expected = _pack(
        [
            oracle(STRINGS[v], c, num_hashes, num_bits)
            for v, c in zip(codes, cohorts.tolist(), strict=True)
        ],
        num_bits,
    )
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, expected)
    # The same bits from the public positions (what the analyst recomputes).
    values = [STRINGS[v] for v in codes]
    np.testing.assert_array_equal(_pack(encoder.positions(values, cohorts).tolist(), num_bits), got)


def test_bytes_values_hash_as_their_utf8_text() -> None:
    for hash_scheme in HASH_SCHEMES:
        encoder = BloomEncoder(64, 4, 8, hash_scheme)
        cohorts = np.arange(8, dtype=np.int64)
        text = ["Zoë"] * 8
        np.testing.assert_array_equal(
            encoder.positions(text, cohorts), encoder.positions([v.encode() for v in text], cohorts)
        )


def test_empty_inputs() -> None:
    for hash_scheme in HASH_SCHEMES:
        encoder = BloomEncoder(13, 2, 4, hash_scheme)
        empty = np.array([], dtype=np.int64)
        assert encoder.encode(empty, [], empty).shape == (0, 2)
        assert encoder.positions([], empty).shape == (0, 2)
        assert encoder.signatures([""]).shape == (1, 4, 2)


# --- the fast scheme -----------------------------------------------------------------------------

MANY = [f"https://example.org/item/{i}?ref={i * 7919 % 1000}" for i in range(20_000)]


def test_fast_positions_are_deterministic() -> None:
    first = BloomEncoder(1000, 8, 4).positions(MANY[:500], np.arange(500) % 4)
    second = BloomEncoder(1000, 8, 4).positions(list(MANY[:500]), np.arange(500) % 4)
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("num_bits", [100, 128, 1000])
def test_fast_positions_are_uniform_over_bits(num_bits: int) -> None:
    """Chi-square over the k bits of 20,000 strings x 4 hashes (8e4 positions; fixed strings,
    so the randomness is that of the hash function) at P_FAIL. Power 0.99 against a chi-square
    divergence of 1.8e-3 (k = 100), 1.9e-3 (128), 4.5e-3 (1000): e.g. one bit of 100 hit with
    probability 0.0142 instead of 0.01, or a reduction that never reaches some bits."""
    encoder = BloomEncoder(num_bits, 4, 1)
    positions = encoder.positions(MANY, np.zeros(len(MANY), dtype=np.int64))
    assert positions.min() >= 0
    assert positions.max() < num_bits
    counts = np.bincount(positions.ravel(), minlength=num_bits)
    assert_chisquare(counts, np.full(num_bits, 1 / num_bits), p_fail=P_FAIL)


def test_fast_hashes_of_one_string_are_independent() -> None:
    """The pair (H_1, H_2) of 20,000 strings is uniform on the 16 x 16 cells (chi-square, 255 df,
    at P_FAIL): the hashes are not copies or shifts of each other. Power 0.99 against a
    chi-square divergence of 0.010, e.g. H_2 = H_1 for 2.6% of the strings."""
    encoder = BloomEncoder(16, 2, 1)
    positions = encoder.positions(MANY, np.zeros(len(MANY), dtype=np.int64))
    cells = np.bincount(positions[:, 0] * 16 + positions[:, 1], minlength=256)
    assert_chisquare(cells, np.full(256, 1 / 256), p_fail=P_FAIL)


def test_fast_hash_functions_differ_per_cohort() -> None:
    """Each cohort has its own hash functions: H_i(c, v) and H_i(c', v) agree with probability
    1/k for independent uniform hashes. Binomial test on 2e4 strings x 4 hashes x 3 cohort pairs
    (2.4e5 comparisons) at P_FAIL / 2, k = 64: power 0.99 against an agreement rate off 1/64 by
    1.9e-3 (ignoring the cohort gives 1; one hash of h = 4 shared by all cohorts, 0.26).

    Also a chi-square test at P_FAIL / 2 that (H_1 in cohort 0, H_1 in cohort 1) is uniform on
    the 8 x 8 cells (63 df, power 0.99 against a chi-square divergence of 6.2e-3)."""
    num_bits, num_hashes = 64, 4
    encoder = BloomEncoder(num_bits, num_hashes, 2**20)
    per_cohort = [
        encoder.positions(MANY, np.full(len(MANY), c, dtype=np.int64))
        for c in (0, 1, 2**16, 999_999)
    ]
    agree = sum(int((per_cohort[0] == other).sum()) for other in per_cohort[1:])
    assert_binomial(agree, 3 * len(MANY) * num_hashes, 1 / num_bits, p_fail=P_FAIL / 2)
    small = BloomEncoder(8, 1, 2)
    first = small.positions(MANY, np.zeros(len(MANY), dtype=np.int64))[:, 0]
    second = small.positions(MANY, np.ones(len(MANY), dtype=np.int64))[:, 0]
    assert_chisquare(
        np.bincount(first * 8 + second, minlength=64), np.full(64, 1 / 64), p_fail=P_FAIL / 2
    )


def test_fast_encode_equals_packing_the_positions() -> None:
    encoder = BloomEncoder(1000, 7, 32)
    rows = np.arange(3000, dtype=np.int64)
    values = MANY[:40]
    codes = (rows * 13) % len(values)
    cohorts = rows % 32
    got = encoder.encode(codes, values, cohorts)
    assert got.shape == (3000, 125)
    positions = encoder.positions([values[c] for c in codes], cohorts)
    np.testing.assert_array_equal(got, _pack(positions.tolist(), 1000))
    bits = np.unpackbits(got, axis=1)
    # At most h bits per row, fewer exactly when two hashes collide.
    distinct = [len(set(row)) for row in positions.tolist()]
    np.testing.assert_array_equal(bits.sum(axis=1), distinct)


class _CountingHashlib(types.SimpleNamespace):
    """Stands for :mod:`hashlib` inside the encoding module and counts digests."""

    def __init__(self) -> None:
        super().__init__(calls=0)

    def md5(self, data: bytes) -> Any:
        self.calls += 1
        return hashlib.md5(data)

    def blake2b(self, data: bytes, **kwargs: Any) -> Any:
        self.calls += 1
        return hashlib.blake2b(data, **kwargs)


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
def test_encode_hashes_each_distinct_value_once(
    hash_scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fast``: one digest per distinct string; ``rappor``: one per distinct (string, cohort)
    pair, however many rows hold them. Rows with the same code and cohort are identical and
    equal to the positions of that value."""
    encoder = BloomEncoder(64, 3, 4, hash_scheme)  # type: ignore[arg-type]
    values = ["alpha", "beta", "gamma"]
    codes = np.array([2, 0, 2, 2, 0, 2, 1, 2] * 50, dtype=np.int64)
    cohorts = np.array([1, 1, 1, 3, 1, 1, 0, 3] * 50, dtype=np.int64)
    counting = _CountingHashlib()
    monkeypatch.setattr(encoding_module, "hashlib", counting)
    got = encoder.encode(codes, values, cohorts)
    distinct_pairs = len(set(zip(codes.tolist(), cohorts.tolist(), strict=True)))
    assert counting.calls == (len(values) if hash_scheme == "fast" else distinct_pairs)
    monkeypatch.undo()
    for code, cohort in set(zip(codes.tolist(), cohorts.tolist(), strict=True)):
        rows = got[(codes == code) & (cohorts == cohort)]
        expected = _pack(encoder.positions([values[code]], np.array([cohort])).tolist(), 64)
        np.testing.assert_array_equal(rows, np.repeat(expected, len(rows), axis=0))


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_bits": 0}, r"num_bits must be an integer in \[1, 1048576\], got 0$"),
        ({"num_bits": -8}, r"num_bits must be an integer in \[1, 1048576\], got -8$"),
        ({"num_bits": 2**20 + 1}, r"num_bits must be an integer in \[1, 1048576\], got 1048577$"),
        ({"num_bits": 8.0}, r"num_bits must be an integer in \[1, 1048576\], got 8\.0$"),
        ({"num_bits": True}, r"num_bits must be an integer in \[1, 1048576\], got True$"),
        ({"num_bits": "16"}, r"num_bits must be an integer in \[1, 1048576\], got '16'$"),
        ({"num_bits": None}, r"num_bits must be an integer in \[1, 1048576\], got None$"),
        ({"num_hashes": 0}, r"num_hashes must be an integer in \[1, 64\], got 0$"),
        (
            {"num_hashes": 65, "num_bits": 128},
            r"num_hashes must be an integer in \[1, 64\], got 65$",
        ),
        ({"num_hashes": 2.0}, r"num_hashes must be an integer in \[1, 64\], got 2\.0$"),
        ({"num_hashes": False}, r"num_hashes must be an integer in \[1, 64\], got False$"),
        ({"num_cohorts": 0}, r"num_cohorts must be an integer in \[1, 4294967295\], got 0$"),
        (
            {"num_cohorts": 2**32},
            r"num_cohorts must be an integer in \[1, 4294967295\], got 4294967296$",
        ),
        ({"num_cohorts": 4.0}, r"num_cohorts must be an integer in \[1, 4294967295\], got 4\.0$"),
        ({"num_cohorts": True}, r"num_cohorts must be an integer in \[1, 4294967295\], got True$"),
        (
            {"num_bits": 257, "hash_scheme": "rappor"},
            r"num_bits must be an integer in \[1, 256\], got 257$",
        ),
        (
            {"num_bits": 64, "num_hashes": 17, "hash_scheme": "rappor"},
            r"num_hashes must be an integer in \[1, 16\], got 17$",
        ),
        ({"num_bits": 4, "num_hashes": 5}, r"num_hashes must be at most num_bits=4, got 5$"),
        ({"num_bits": 1, "num_hashes": 2}, r"num_hashes must be at most num_bits=1, got 2$"),
        ({"hash_scheme": "md5"}, r"hash_scheme must be one of \('fast', 'rappor'\), got 'md5'$"),
        (
            {"hash_scheme": "RAPPOR"},
            r"hash_scheme must be one of \('fast', 'rappor'\), got 'RAPPOR'$",
        ),
        ({"hash_scheme": None}, r"hash_scheme must be one of \('fast', 'rappor'\), got None$"),
    ],
    ids=str,
)
def test_bad_encoder_parameters_raise_naming_them(kwargs: dict[str, Any], message: str) -> None:
    arguments = {"num_bits": 16, **kwargs}
    with pytest.raises(ParameterError, match=f"^BloomEncoder: {message}"):
        BloomEncoder(**arguments)


def test_encoder_limits_are_inclusive_and_numpy_integers_accepted() -> None:
    assert BloomEncoder(256, 16, 2**32 - 1, "rappor").num_bits == 256
    assert BloomEncoder(2**20, 64).num_hashes == 64
    assert BloomEncoder(1, 1).num_bits == 1
    encoder = BloomEncoder(np.int64(64), np.int32(3), np.uint16(8))  # type: ignore[arg-type]
    assert encoder == BloomEncoder(64, 3, 8)
    assert (type(encoder.num_bits), type(encoder.num_hashes), type(encoder.num_cohorts)) == (
        int,
        int,
        int,
    )
    assert encoder.to_json() == {"num_bits": 64, "num_hashes": 3, "num_cohorts": 8, "hash": "fast"}


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
def test_cohorts_out_of_range_raise(hash_scheme: str) -> None:
    encoder = BloomEncoder(16, 2, 4, hash_scheme)  # type: ignore[arg-type]
    with pytest.raises(DomainError, match=r"cohorts must be in \[0, 4\), got values in \[0, 4\]"):
        encoder.positions(["a", "b"], np.array([0, 4]))
    with pytest.raises(DomainError, match=r"cohorts must be in \[0, 4\), got values in \[-1, 2\]"):
        encoder.encode(np.array([0, 0]), ["a"], np.array([2, -1]))
    with pytest.raises(ParameterError, match=r"cohorts must have one entry per value \(1\)"):
        encoder.positions(["a"], np.array([0, 1]))
    with pytest.raises(ParameterError, match="codes and cohorts must be one-dimensional"):
        encoder.encode(np.array([0, 0]), ["a"], np.array([0]))
    with pytest.raises(ParameterError, match="codes must index the 2 distinct values"):
        encoder.encode(np.array([0, 2]), ["a", "b"], np.array([0, 0]))


@pytest.mark.parametrize("hash_scheme", HASH_SCHEMES)
@pytest.mark.parametrize(
    ("bad", "shown"),
    [(1, "1 of type int"), (None, "None of type NoneType"), (1.5, "1.5 of type float")],
)
def test_non_string_values_raise_domain_error(hash_scheme: str, bad: object, shown: str) -> None:
    encoder = BloomEncoder(16, 2, 4, hash_scheme)  # type: ignore[arg-type]
    message = f"Bloom encoding hashes strings; got {shown}"
    with pytest.raises(DomainError, match=message):
        encoder.positions(["a", bad], np.array([0, 1]))  # type: ignore[list-item]
    with pytest.raises(DomainError, match=message):
        encoder.encode(np.array([0, 1]), ["a", bad], np.array([0, 1]))  # type: ignore[list-item]
    with pytest.raises(DomainError, match=message):
        encoder.signatures([bad])  # type: ignore[list-item]


# --- bernoulli_packed_at -------------------------------------------------------------------------

TAIL_ONLY = (1 << (PRECISION_BITS - PLANES)) - 1  # first PLANES bits 0: every one is decided late
NUMERATORS = {
    "0.3": dyadic_at_least(0.3),  # 0.3 has bits beyond the 12th: the tail is exercised
    "1/3": dyadic_at_least(1 / 3),
    "half+": (1 << 63) + 1,
    "tail-only": TAIL_ONLY,
    "1e-5": dyadic_at_least(1e-5),
    "tiny": 3,
    "almost-one": ONE - 3,
}


def _addresses(n: int, seed: int = 99) -> np.ndarray:
    """PRF outputs, as BloomRappor makes them: E(E(user) XOR value)."""
    users = digests(list(range(n)))
    values = digests([f"value{i % 7}" for i in range(n)])
    return RandomSource.from_seed(seed).stream("addresses").prf(users, values)


def _stream(label: str) -> KeyedStream:
    return RandomSource.from_seed(2025).stream(label)


def _reference_bernoulli_at(
    stream: KeyedStream, numerator: int, addresses: np.ndarray, bits_per_row: int
) -> np.ndarray:
    """The documented layout written plainly. Tweaks are two big-endian 64-bit words, the first
    holding the lane shifted by 32, XORed into the row's address before AES.

    * At most 8 bits a row: bit j is [U_j < N / 2**64], U_j the big-endian 64-bit word j of
      the concatenated blocks AES(address XOR (3, b)).
    * More: the row's keystream is the concatenation of AES(address XOR (1, b)); plane t is its
      bytes [8 W t, 8 W (t + 1)) with W = ceil(bytes per row / 8) words, and bit t < PLANES of
      U_j is the complement of bit j of plane t; the remaining bits are the top 64 - PLANES bits
      of the first 8 bytes, big-endian, of AES(address XOR (TAIL, j)).
    """
    rows = addresses.shape[0]

    def keystream(lane: int, blocks: int) -> np.ndarray:
        tweak = np.zeros((blocks, 2), dtype=">u8")
        tweak[:, 0] = lane << 32
        tweak[:, 1] = np.arange(blocks)
        inputs = addresses[:, None, :] ^ tweak.view(np.uint8).reshape(1, blocks, 16)
        return stream.encrypt(inputs.reshape(-1, 16)).reshape(rows, blocks * 16)

    if bits_per_row <= 8:
        words = keystream(3, -(-bits_per_row // 2)).copy().view(">u8")[:, :bits_per_row]
        return np.packbits((words < np.uint64(numerator)).astype(np.uint8), axis=1)
    words = -(-bits_per_row // 64)
    planes = keystream(1, -(-PLANES * words // 2))
    u = np.zeros((rows, bits_per_row), dtype=np.uint64)
    for t in range(PLANES):
        plane = planes[:, 8 * words * t : 8 * words * (t + 1)]
        plane_bits = np.unpackbits(plane, axis=1)[:, :bits_per_row]
        u |= (1 - plane_bits).astype(np.uint64) << np.uint64(PRECISION_BITS - 1 - t)
    tail = keystream(_TAIL_LANE, bits_per_row).reshape(rows, bits_per_row, 16)[:, :, :8]
    u |= tail.copy().view(">u8").reshape(rows, bits_per_row) >> np.uint64(PLANES)
    return np.packbits((u < np.uint64(numerator)).astype(np.uint8), axis=1)


@pytest.mark.parametrize("numerator", list(NUMERATORS.values()), ids=list(NUMERATORS))
@pytest.mark.parametrize("bits_per_row", [1, 13, 128, 150])
def test_bernoulli_at_matches_documented_comparison(numerator: int, bits_per_row: int) -> None:
    """Exact, and a pin of the layout (stored memo keys must keep giving the same permanent
    responses): every bit is the plain comparison of its 64-bit uniform with the threshold."""
    stream = _stream("reference")
    addresses = _addresses(200)
    got = bernoulli_packed_at(stream, numerator, addresses, bits_per_row=bits_per_row)
    expected = _reference_bernoulli_at(stream, numerator, addresses, bits_per_row)
    np.testing.assert_array_equal(got, expected)


def test_bernoulli_at_is_a_function_of_the_address_only() -> None:
    """Equal addresses give equal bits wherever the row sits (alone, repeated, or among others);
    the same addresses under another stream give other bits."""
    stream = _stream("memo")
    addresses = _addresses(50)
    numerator = NUMERATORS["0.3"]
    base = bernoulli_packed_at(stream, numerator, addresses, bits_per_row=77)
    picks = np.array([49, 3, 3, 0, 17, 49, 49, 8, 3] * 7, dtype=np.int64)
    shuffled = bernoulli_packed_at(stream, numerator, addresses[picks], bits_per_row=77)
    np.testing.assert_array_equal(shuffled, base[picks])
    for row in (0, 17, 49):
        alone = bernoulli_packed_at(stream, numerator, addresses[row : row + 1], bits_per_row=77)
        np.testing.assert_array_equal(alone, base[row : row + 1])
    # Flat (n * 16,) addresses are read as rows of 16 bytes.
    flat = bernoulli_packed_at(stream, numerator, addresses.ravel(), bits_per_row=77)
    np.testing.assert_array_equal(flat, base)
    other = bernoulli_packed_at(_stream("memo2"), numerator, addresses, bits_per_row=77)
    # 50 x 77 Bernoulli(0.3) bits agree with independent ones with probability 0.58 each:
    # all 3850 agreeing has probability 0.58**3850, far below P_FAIL.
    assert not np.array_equal(other, base)


@pytest.mark.parametrize(
    "numerator", [NUMERATORS["0.3"], NUMERATORS["tail-only"]], ids=["0.3", "tail"]
)
def test_bernoulli_at_distinct_addresses_are_independent(numerator: int) -> None:
    """2x2 chi-square tests of independence (1 df) between bit j of rows i and i + 1 (distinct
    addresses, 1.3e6 pairs) and between adjacent bits of a row (1.2e6 pairs, crossing byte
    boundaries); P_FAIL / 2 each. Power 0.99 against a correlation of 6.6e-3 between neighbours
    (non-centrality 52.1 for 1 df), e.g. rows sharing a keystream block for 1% of pairs."""
    rows, bits_per_row = 100_000, 13
    packed = bernoulli_packed_at(_stream("pairs"), numerator, _addresses(rows), bits_per_row=13)
    bits = np.unpackbits(packed, axis=1, count=bits_per_row)
    assert_independent(bits[:-1], bits[1:], p_fail=P_FAIL / 2)
    assert_independent(bits[:, :-1], bits[:, 1:], p_fail=P_FAIL / 2)


@pytest.mark.parametrize("numerator", list(NUMERATORS.values()), ids=list(NUMERATORS))
def test_bernoulli_at_frequency_is_exact(numerator: int) -> None:
    """The ones among 20,000 rows x 100 bits (2e6 bits) pass an exact two-sided binomial test at
    numerator / 2**64 at P_FAIL. Power 0.99 against |Δp| >= 7.2 sqrt(p(1-p) / 2e6): 2.3e-3 at
    p = 0.3, 0.33 p for the tail-only p = 2**-12 - 2**-64 (each of its ones is decided by the
    tail comparison), 1.6 p at 1e-5 (52 ones instead of the 20 expected); for p = 3 * 2**-64
    and 1 - 3 * 2**-64 a single wrong bit fails the test."""
    packed = bernoulli_packed_at(
        _stream(f"freq{numerator}"), numerator, _addresses(20_000), bits_per_row=100
    )
    ones = int(np.unpackbits(packed, axis=1, count=100).sum())
    assert_binomial(ones, 20_000 * 100, numerator / ONE, p_fail=P_FAIL)


@pytest.mark.parametrize("bits_per_row", [1, 3, 7, 9, 13, 100, 130])
def test_bernoulli_at_extremes_and_padding(bits_per_row: int) -> None:
    """numerator 0 gives zeros, 2**64 ones; padding bits of the last byte are always zero."""
    addresses = _addresses(300)
    stream = _stream("padding")
    width = -(-bits_per_row // 8)
    full = np.packbits(np.ones((300, bits_per_row), dtype=np.uint8), axis=1)
    zero = bernoulli_packed_at(stream, 0, addresses, bits_per_row=bits_per_row)
    ones = bernoulli_packed_at(stream, ONE, addresses, bits_per_row=bits_per_row)
    assert zero.shape == ones.shape == (300, width)
    assert zero.dtype == ones.dtype == np.uint8
    np.testing.assert_array_equal(zero, np.zeros_like(full))
    np.testing.assert_array_equal(ones, full)
    noisy = bernoulli_packed_at(stream, NUMERATORS["half+"], addresses, bits_per_row=bits_per_row)
    if bits_per_row % 8:
        assert not np.any(noisy[:, -1] & ((1 << (8 - bits_per_row % 8)) - 1))
    empty = bernoulli_packed_at(stream, NUMERATORS["0.3"], addresses[:0], bits_per_row=bits_per_row)
    assert empty.shape == (0, width)


def test_bernoulli_at_is_monotone_in_the_numerator() -> None:
    """One uniform per (address, bit): a larger numerator only turns zeros into ones, including
    numerators that differ beyond the first PLANES bits (decided in the tail)."""
    stream, addresses = _stream("monotone"), _addresses(5000)
    low = 1 << (PRECISION_BITS - PLANES)
    previous = np.zeros((5000, 2), dtype=np.uint8)
    for numerator in sorted(
        {1, low - 1, low, low + 1, NUMERATORS["0.3"], NUMERATORS["0.3"] + 1, 1 << 63, ONE - 1}
    ):
        bits = bernoulli_packed_at(stream, numerator, addresses, bits_per_row=13)
        assert not np.any(previous & ~bits), f"a one at a smaller numerator vanished at {numerator}"
        previous = bits


@pytest.mark.parametrize("numerator", [-1, ONE + 1, 0.5, 1.0, True])
def test_bernoulli_at_rejects_bad_numerators(numerator: object) -> None:
    with pytest.raises(
        ParameterError, match=r"numerator must be an integer in \[0, 2\*\*64\], got"
    ):
        bernoulli_packed_at(_stream("bad"), numerator, _addresses(2), bits_per_row=8)  # type: ignore[arg-type]


# --- digests and the PRF -------------------------------------------------------------------------


def _blake(message: bytes) -> bytes:
    return hashlib.blake2b(message, digest_size=16, person=b"frameldp.v1.msg").digest()


def test_digests_are_type_tagged_and_deterministic() -> None:
    items: list[object] = ["1", 1, b"1", "", b"", 0, "0", -1, "-1", "s1", "i1", b"s1", 2**70]
    got = digests(items)
    assert got.shape == (len(items), 16)
    assert got.dtype == np.uint8
    assert len({row.tobytes() for row in got}) == len(items)
    np.testing.assert_array_equal(digests(items), got)
    # numpy integers are the integers they hold; numpy strings the strings.
    np.testing.assert_array_equal(digests([np.int64(1), np.uint8(0), np.str_("1")]), got[[1, 5, 0]])
    # The documented tagging, pinned (memoized responses are addressed by these digests).
    assert got[0].tobytes() == _blake(b"s1")
    assert got[1].tobytes() == _blake(b"i1")
    assert got[2].tobytes() == _blake(b"b1")
    assert got[7].tobytes() == _blake(b"i-1")
    assert digests([]).shape == (0, 16)


@pytest.mark.parametrize(
    ("item", "shown"),
    [
        (1.0, "1.0 of type float"),
        (None, "None of type NoneType"),
        (True, "True of type bool"),
        (np.float64(2.5), "of type float64"),
        ((1,), r"\(1,\) of type tuple"),
    ],
)
def test_digests_reject_other_types(item: object, shown: str) -> None:
    with pytest.raises(
        ParameterError, match=f"identifiers must be strings, bytes or integers, got .*{shown}"
    ):
        digests(["ok", item])


def _aes(label: str) -> Any:
    subkey = hmac.new(KEY, b"frameldp.v2" + label_bytes([label]), hashlib.sha256).digest()
    return Cipher(algorithms.AES(subkey), modes.ECB())


def test_encrypt_is_aes_ecb_and_prf_is_two_block_cbc_mac() -> None:
    """``encrypt`` is AES-256 of each block under the stream's HMAC subkey; ``prf(x, y)`` is
    ``E(E(x) XOR y)`` (CBC-MAC of the two-block message), checked with ``cryptography``."""
    stream = RandomSource.from_key(KEY).stream("memo\x1fspec")
    pairs = np.stack([digests(["alice", "bob", 7]), digests(["x", "y", "x"])], axis=1)
    encryptor = _aes("memo\x1fspec").encryptor()
    first = encryptor.update(pairs[:, 0].tobytes())
    np.testing.assert_array_equal(
        stream.encrypt(pairs[:, 0]).ravel(), np.frombuffer(first, np.uint8)
    )
    chained = bytes(a ^ b for a, b in zip(first, pairs[:, 1].tobytes(), strict=True))
    expected = _aes("memo\x1fspec").encryptor().update(chained)
    got = stream.prf(pairs[:, 0], pairs[:, 1])
    assert got.shape == (3, 16)
    assert got.tobytes() == expected
    # Order matters, and other keys give other outputs.
    assert stream.prf(pairs[:, 1], pairs[:, 0]).tobytes() != got.tobytes()
    other = RandomSource.from_key(bytes(32)).stream("memo\x1fspec").prf(pairs[:, 0], pairs[:, 1])
    assert other.tobytes() != got.tobytes()
