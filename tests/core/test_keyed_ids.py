"""Memo scheme 3: user ids digested by a CBC-MAC keyed by the memo key, over whole columns.

The digests are checked against a reference written here from the module docstring (the
length-prefixed, tagged message, zero-padded, chained block by block through the stream's
AES), for ids of every kind and length class. Scheme 2 (a 32-byte memo key) is unchanged:
its frozen digests are in ``test_frozen_keyed_noise.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import frameldp
from frameldp.core.mechanisms._memo import memo_name, row_digests, user_digests
from frameldp.core.randomness import MEMO_KEY_PREFIX, RandomSource, new_memo_key
from frameldp.core.randomness.keyed_ids import STREAM

MEMO = MEMO_KEY_PREFIX + bytes(range(32))


def _reference(source: RandomSource, item: object) -> bytes:
    """The digest of one id, block by block (module docstring of ``keyed_ids``)."""
    if isinstance(item, str):
        message = b"s" + item.encode("utf-8")
    elif isinstance(item, bytes):
        message = b"b" + item
    else:
        message = b"i" + str(int(item)).encode("ascii")  # type: ignore[call-overload]
    length = len(message)
    header = bytes([length]) if length < 255 else bytes([255]) + length.to_bytes(8, "big")
    padded = header + message
    padded += bytes(-len(padded) % 16)
    stream = source.stream(*STREAM)
    state = np.zeros(16, dtype=np.uint8)
    for start in range(0, len(padded), 16):
        block = np.frombuffer(padded[start : start + 16], dtype=np.uint8)
        state = stream.encrypt((state ^ block)[None, :])[0]
    return state.tobytes()


STRINGS = [
    "",
    "a",
    "user-1",
    "x" * 13,
    "x" * 14,
    "x" * 15,
    "é" * 7,
    "名前",
    "y" * 253,
    "y" * 254,
    "y" * 255,
    "z" * 1000,
]
INTEGERS = [0, 1, -1, 7919, -(2**63), 2**63 - 1]


def _check(array: pa.Array | pa.ChunkedArray, ids: list[object]) -> None:
    memo = RandomSource.from_memo_key(MEMO)
    got = row_digests(array, "c", "user", 0, memo)
    assert [bytes(row) for row in got] == [_reference(memo, item) for item in ids]
    listed = user_digests(ids, memo)
    np.testing.assert_array_equal(listed, got)


@pytest.mark.parametrize(
    "kind",
    [pa.string(), pa.large_string(), pa.string_view(), pa.dictionary(pa.int8(), pa.string())],
)
def test_string_ids_of_every_length_class_match_the_reference(kind: pa.DataType) -> None:
    _check(pa.array(STRINGS).cast(kind), list(STRINGS))


@pytest.mark.parametrize("kind", [pa.int64(), pa.int32(), pa.uint64(), pa.int8()])
def test_integer_ids_are_their_decimal_text(kind: pa.DataType) -> None:
    ids = [i for i in INTEGERS if pa.scalar(i).type == pa.int64()]
    fitting = [i for i in ids if _fits(i, kind)]
    _check(pa.array(fitting).cast(kind), list(fitting))
    if kind == pa.uint64():
        _check(pa.array([2**64 - 1, 5], pa.uint64()), [2**64 - 1, 5])


def _fits(value: int, kind: pa.DataType) -> bool:
    try:
        pa.array([value]).cast(kind)
    except (pa.ArrowInvalid, OverflowError):
        return False
    return True


def test_binary_sliced_and_chunked_ids_match_the_reference() -> None:
    _check(pa.array([b"", b"\x00", b"ab" * 40], pa.binary()), [b"", b"\x00", b"ab" * 40])
    _check(pa.array(STRINGS).slice(3, 5), STRINGS[3:8])
    chunked = pa.chunked_array([pa.array(STRINGS[:4]), pa.array(STRINGS[4:])])
    _check(chunked, list(STRINGS))


def test_the_types_of_ids_differ_and_distinct_ids_get_distinct_digests() -> None:
    memo = RandomSource.from_memo_key(MEMO)
    digests = user_digests(["1", 1, b"1", "2", "user-10", "user-1"], memo)
    assert len({bytes(row) for row in digests}) == 6


def test_bad_ids_are_refused_naming_the_column() -> None:
    memo = RandomSource.from_memo_key(MEMO)
    with pytest.raises(frameldp.DomainError, match=r"null user id .* at row 12"):
        row_digests(pa.array(["a", None]), "c", "user", 11, memo)
    with pytest.raises(frameldp.DomainError, match="must be a string, bytes or an integer"):
        row_digests(pa.array([1.5, 2.5]), "c", "user", 0, memo)
    invalid = pa.Array.from_buffers(
        pa.string(), 1, [None, pa.py_buffer(np.array([0, 2], np.int32)), pa.py_buffer(b"\xff\xfe")]
    )
    with pytest.raises(frameldp.DomainError, match="not valid UTF-8"):
        row_digests(invalid, "c", "user", 0, memo)
    with pytest.raises(frameldp.ParameterError, match="identifiers must be"):
        user_digests([1.5], memo)


def test_memo_keys_name_their_scheme_and_never_show_the_key() -> None:
    assert RandomSource.from_memo_key(bytes(32)).memo_scheme == 2
    fresh = new_memo_key()
    assert fresh.startswith(MEMO_KEY_PREFIX)
    assert RandomSource.from_memo_key(fresh).memo_scheme == 3
    assert new_memo_key() != fresh
    secret = MEMO_KEY_PREFIX + b"S3CR3T" * 5
    for bad in (bytes(31), secret, "text", MEMO_KEY_PREFIX + bytes(33)):
        with pytest.raises(frameldp.ParameterError, match="memo_key") as raised:
            RandomSource.from_memo_key(bad)  # type: ignore[arg-type]
        assert "S3CR3T" not in str(raised.value)
    # The same 32 bytes under the two schemes: independent responses, so distinct memo names.
    raw, prefixed = (
        RandomSource.from_memo_key(bytes(32)),
        RandomSource.from_memo_key(MEMO_KEY_PREFIX + bytes(32)),
    )
    assert memo_name(raw, ("c",)) != memo_name(prefixed, ("c",))


def test_a_scheme_3_memo_key_gives_a_person_the_same_permanent_responses_every_time() -> None:
    """k-RR at epsilon = epsilon_infinity has no instantaneous noise: its reports are the
    permanent responses. Two releases under fresh keys and one memo key agree row for row
    (also when the rows come in another order); a scheme-2 key of the same bytes, or another
    memo key, gives other responses (the chance that 2,000 rows of k-RR over 8 values agree
    is below 0.6**2000)."""
    domain = list("abcdefgh")
    users = [f"u{i}" for i in range(2000)]
    values = [domain[i % 8] for i in range(2000)]
    frame = pd.DataFrame({"user": users, "v": values})
    mech = frameldp.RandomizedResponse(1.0, domain=domain, epsilon_infinity=1.0)

    def reports(memo_key: bytes, rows: pd.DataFrame = frame) -> pd.Series:
        released = rows.ldp.privatize({"v": mech}, user="user", memo_key=memo_key)
        return released.set_index("user")["v"].astype(str).sort_index()

    first = reports(MEMO)
    pd.testing.assert_series_equal(first, reports(MEMO))
    pd.testing.assert_series_equal(first, reports(MEMO, frame.iloc[::-1]))
    assert (first != reports(MEMO[len(MEMO_KEY_PREFIX) :])).any()
    assert (first != reports(new_memo_key())).any()


def test_a_scheme_3_memo_source_prints_without_its_key() -> None:
    """(Attack review) ``repr`` of a scheme-3 memo source raised KeyError."""
    source = RandomSource.from_memo_key(MEMO)
    assert repr(source) == "RandomSource(<memo key, scheme 3>)"
    assert bytes(range(32)).hex() not in repr(source)


def test_rows_per_person_are_counted_alike_in_every_batch_type() -> None:
    """Text ids are counted by a 64-bit hash of their value, integers by value: one person
    whose id comes as string, large_string, dictionary or string_view, or as 32-bit, 64-bit and
    unsigned integers, in different batches, is one person with all their rows. Integers in one
    batch and text in another are refused (frameldp cannot tell whether "7" is 7)."""
    from frameldp.frames.persons import rows_per_user

    text = [
        pa.array(["p", "q"]),
        pa.array(["p"], pa.large_string()),
        pa.array(["p", "q"]).dictionary_encode(),
        pa.array(["p"], pa.string_view()),
    ]
    assert rows_per_user(text, "user") == 4
    numbers = [pa.array([7, 8], pa.int32()), pa.array([7], pa.int64()), pa.array([7], pa.uint8())]
    assert rows_per_user(numbers, "user") == 3
    with pytest.raises(frameldp.DomainError, match="different kinds"):
        rows_per_user([pa.array([7]), pa.array(["7"])], "user")
