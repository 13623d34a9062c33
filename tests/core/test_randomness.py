"""Keyed streams: reproducibility, separation of keys/seeds/labels, and the CTR counter layout."""

from __future__ import annotations

import hashlib
import hmac

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from frameldp.core.randomness import KEY_BYTES, RandomSource, Rows, resolve_source
from frameldp.errors import ParameterError

KEY = bytes(range(KEY_BYTES))


def _bytes(source: RandomSource, label: str = "col", lane: int = 1, n: int = 64) -> bytes:
    return source.stream(label).contiguous(lane, 0, n).tobytes()


def test_same_seed_gives_same_bytes() -> None:
    assert _bytes(RandomSource.from_seed(7)) == _bytes(RandomSource.from_seed(7))


def test_same_key_gives_same_bytes() -> None:
    assert _bytes(RandomSource.from_key(KEY)) == _bytes(RandomSource.from_key(bytearray(KEY)))
    assert _bytes(resolve_source(key=KEY)) == _bytes(RandomSource.from_key(memoryview(KEY)))


def test_resolve_source_seed_matches_from_seed() -> None:
    assert _bytes(resolve_source(seed=3)) == _bytes(RandomSource.from_seed(3))
    assert resolve_source(seed=3).seeded
    assert not resolve_source(key=KEY).seeded


@pytest.mark.parametrize(
    "seeds",
    [[0, 1, -1, 127, 128, -128, -129, 255, 256, -256, 2**64, -(2**64), 2**200]],
)
def test_different_seeds_give_different_keys_and_bytes(seeds: list[int]) -> None:
    sources = [RandomSource.from_seed(seed) for seed in seeds]
    assert len({source.key for source in sources}) == len(seeds)
    assert len({_bytes(source) for source in sources}) == len(seeds)


def test_different_keys_labels_and_lanes_differ() -> None:
    other_key = bytes([1]) + KEY[1:]
    source = RandomSource.from_key(KEY)
    outputs = {
        _bytes(source),
        _bytes(RandomSource.from_key(other_key)),
        _bytes(source, label="col2"),
        _bytes(source, label="Col"),
        _bytes(source, label=""),
        _bytes(source, lane=2),
        _bytes(source, lane=0),
    }
    assert len(outputs) == 7


def test_fresh_sources_differ_and_are_secret() -> None:
    first, second = RandomSource.fresh(), resolve_source()
    assert first.key != second.key
    assert not first.seeded
    assert not second.seeded


def test_stream_is_aes_ctr_under_hmac_subkey() -> None:
    """The documented derivation: AES-256 under HMAC-SHA256(key, "frameldp.v2" || label),
    the label's parts each tagged with their type and length, on big-endian counters
    ``lane (32 bits) || 0 (32 bits) || block (64 bits)``. Pinning it keeps stored reports
    reproducible from their key across versions."""
    encoded = b"s" + (7).to_bytes(8, "big") + b"carrier" + b"i" + (1).to_bytes(8, "big") + b"5"
    subkey = hmac.new(KEY, b"frameldp.v2" + encoded, hashlib.sha256).digest()
    lane, blocks = 5, [0, 1, 2, 2**32 + 9]
    counters = b"".join((lane << 96 | block).to_bytes(16, "big") for block in blocks)
    encryptor = Cipher(algorithms.AES(subkey), modes.ECB()).encryptor()
    expected = np.frombuffer(encryptor.update(counters) + encryptor.finalize(), dtype=np.uint8)
    stream = RandomSource.from_key(KEY).stream("carrier", 5)
    got = stream.blocks_at(lane, np.array(blocks, dtype=np.uint64))
    assert got.tobytes() == expected.tobytes()
    assert stream.contiguous(lane, 0, 48).tobytes() == expected[:48].tobytes()


@pytest.mark.parametrize(
    ("start", "length"),
    [(0, 1), (1, 1), (3, 17), (15, 1), (15, 2), (16, 16), (17, 333), (31, 2000), (4095, 1)],
)
def test_contiguous_subrange_equals_slice_of_larger_range(start: int, length: int) -> None:
    stream = RandomSource.from_seed(11).stream("slice")
    whole = stream.contiguous(3, 0, 4096 + 64)
    part = stream.contiguous(3, start, length)
    assert part.shape == (length,)
    np.testing.assert_array_equal(part, whole[start : start + length])


@pytest.mark.parametrize("first_block", [0, 1, 12345, 2**32 - 2, 2**40 + 3])
def test_contiguous_equals_blocks_at_for_same_counters(first_block: int) -> None:
    """CTR output at consecutive counters equals ECB of those counters, including across the
    2**32 boundary of the 64-bit block field (a 32-bit counter would wrap there)."""
    stream = RandomSource.from_seed(12).stream("ctr")
    blocks = np.arange(first_block, first_block + 5, dtype=np.uint64)
    scattered = stream.blocks_at(4, blocks)
    run = stream.contiguous(4, 16 * first_block, 16 * 5).reshape(5, 16)
    np.testing.assert_array_equal(run, scattered)
    # An unaligned range over the same counters is the matching slice of those blocks.
    unaligned = stream.contiguous(4, 16 * first_block + 7, 50)
    np.testing.assert_array_equal(unaligned, scattered.ravel()[7:57])


def test_blocks_at_scattered_order_is_preserved() -> None:
    stream = RandomSource.from_seed(13).stream("scatter")
    blocks = np.array([9, 2, 9, 0], dtype=np.uint64)
    got = stream.blocks_at(1, blocks)
    whole = stream.contiguous(1, 0, 16 * 10).reshape(10, 16)
    np.testing.assert_array_equal(got, whole[[9, 2, 9, 0]])


@pytest.mark.parametrize("length", [0, 16, 31, 33, 64])
def test_keys_of_wrong_length_raise_naming_the_length(length: int) -> None:
    with pytest.raises(ParameterError, match=f"key must be 32 bytes, got {length} bytes"):
        RandomSource.from_key(b"\x00" * length)


@pytest.mark.parametrize("key", ["k" * 32, None, 12, [0] * 32])
def test_keys_that_are_not_bytes_raise(key: object) -> None:
    with pytest.raises(ParameterError, match="key must be 32 bytes"):
        RandomSource.from_key(key)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="key must be 32 bytes"):
        RandomSource(key)  # type: ignore[arg-type]


def test_bad_key_error_does_not_echo_the_secret() -> None:
    secret = "0123456789abcdef" * 4
    with pytest.raises(ParameterError, match=r"key must be 32 bytes, got a str$") as info:
        RandomSource.from_key(secret)  # type: ignore[arg-type]
    assert secret not in str(info.value)


@pytest.mark.parametrize("seed", [True, False, 1.0, 0.5, "1", None, b"1"])
def test_bad_seeds_raise_parameter_error(seed: object) -> None:
    with pytest.raises(ParameterError, match=f"seed must be an int, got {seed!r}"):
        RandomSource.from_seed(seed)  # type: ignore[arg-type]


def test_resolve_source_refuses_key_and_seed_together() -> None:
    with pytest.raises(ParameterError, match="at most one of key= and seed="):
        resolve_source(key=KEY, seed=1)
    with pytest.raises(ParameterError, match="seed must be an int"):
        resolve_source(seed=True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "source", [RandomSource.from_key(KEY), RandomSource.from_seed(1), RandomSource.fresh()]
)
def test_repr_does_not_reveal_the_key(source: RandomSource) -> None:
    for text in (repr(source), str(source), f"{source!r}"):
        assert source.key.hex() not in text
        assert repr(source.key) not in text
        assert str(list(source.key)) not in text
    assert ("insecure" in repr(source)) == source.seeded


@pytest.mark.parametrize("count", [1, 2, 3, 8])
@pytest.mark.parametrize("kind", ["fresh", "seed"])
def test_words_of_some_rows_are_those_rows_of_the_whole_run(count: int, kind: str) -> None:
    """``Rows.words_of`` (the rows a step still needs) gives exactly ``words()[indices]``, for
    odd and even word counts, under position and value addressing, from any ``row_start``."""
    key = bytes(range(32))
    values = np.arange(1000, dtype=np.uint8)[:, None]
    indices = np.array([999, 0, 3, 500, 7, 8, 3])

    def run() -> Rows:
        source = RandomSource(key, kind="fresh") if kind == "fresh" else RandomSource.from_seed(2)
        return source.rows(("words",), 5, 1000, lambda: values)

    assert (run().words_of("p", count, indices) == run().words("p", count)[indices]).all()
