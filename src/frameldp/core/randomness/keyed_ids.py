r"""Keyed digests of user ids (memo scheme 3): a CBC-MAC under the memo key, in batches.

Memoization addresses a person's permanent responses by a digest of their id. Scheme 2 (a
memo key of 32 bytes) digests each distinct id with BLAKE2b in Python, about 1.5 us an id;
those digests are frozen, since changing them would draw a second, independent permanent
response for every person. Scheme 3 (a memo key from :func:`new_memo_key`) digests the ids
with a pseudorandom function keyed by the memo key, computed over whole Arrow columns with
AES-256 in numpy batches, about 50 ns an id.

The message of an id is the same tagged encoding as scheme 2's: ``b"s"`` and the UTF-8 text
of a string, ``b"i"`` and the decimal text of an integer, ``b"b"`` and the bytes of a binary
value. It is prefixed with its length (one byte below 255, else 255 and eight bytes
big-endian), zero-padded to whole 16-byte blocks, and the digest is its CBC-MAC under the
stream ``("user digest",)`` of the memo key: ``s_0 = 0``, ``s_j = AES(s_{j-1} XOR m_j)``.
Length-prefixed messages are prefix-free, and CBC-MAC on a prefix-free set is a secure PRF
[1]_: without the key, distinct ids get independent-looking digests, and no one can choose an
id that collides with another's (which BLAKE2b gives scheme 2 without a key).

References
----------
.. [1] M. Bellare, J. Kilian, P. Rogaway, "The Security of the Cipher Block Chaining Message
   Authentication Code", JCSS 61(3), 2000 (Sec. 5: prefix-free messages).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.byte_words import kept_bytes, words_at
from frameldp.core.randomness.streams import BLOCK, KeyedStream
from frameldp.errors import DomainError, ParameterError, shown

__all__ = ["id_messages", "keyed_digests", "keyed_digests_of"]

_TAGS: Final = {"string": ord("s"), "integer": ord("i"), "binary": ord("b")}
_COLUMNS: Final = 128  # messages of up to this many bytes are laid out a column at a time
_LONG: Final = 255  # the length byte of a message of 255 bytes or more (then 8 bytes follow)
STREAM: Final = ("user digest",)


def _kind(kind: pa.DataType) -> str | None:
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return "string"
    if pa.types.is_integer(kind):
        return "integer"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
        return "binary"
    if pa.types.is_fixed_size_binary(kind):
        return "binary"
    return None


def id_messages(
    array: pa.Array, column: str, what: str, row_start: int
) -> tuple[int, NDArray[np.uint8], NDArray[np.int64]]:
    """The tag and the bodies of each id of ``array`` (one chunk, no nulls): a flat byte
    buffer and ``n + 1`` offsets into it. Integers are written as their decimal text; a
    dictionary column is decoded; a column of any other type, or string ids that are not
    valid UTF-8, are refused naming the column."""
    if pa.types.is_dictionary(array.type):  # first: a null in the dictionary is a null id
        array = array.dictionary_decode()
    if array.null_count:
        first = int(np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False))[0])
        raise DomainError(
            f"column {shown(column)}: null {what} at row {row_start + first} ({array.null_count} "
            "in this batch of rows); drop or fill them first"
        )
    kind = _kind(array.type)
    if kind is None:
        raise DomainError(
            f"column {shown(column)}: each {what} must be a string, bytes or an integer, got a "
            f"column of {array.type}"
        )
    if kind == "integer":
        array = pc.cast(array, pa.large_string())
    elif kind == "string":
        array = pc.cast(array, pa.large_string())
        try:
            array.validate(full=True)
        except pa.ArrowInvalid:
            raise DomainError(
                f"column {shown(column)}: a {what} is not valid UTF-8 text; fix the encoding of "
                "the column first"
            ) from None
    else:
        array = pc.cast(array, pa.large_binary())
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[
        array.offset : array.offset + len(array) + 1
    ]
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None
        else np.zeros(0, dtype=np.uint8)
    )
    return _TAGS[kind], data, offsets.astype(np.int64)


def keyed_digests(
    stream: KeyedStream, tag: int, data: NDArray[np.uint8], offsets: NDArray[np.int64]
) -> NDArray[np.uint8]:
    """``(n, 16)``: the CBC-MAC under ``stream`` of each length-prefixed message ``tag`` +
    ``data[offsets[i]:offsets[i + 1]]`` (module docstring). Messages of one block count are
    laid out together, one column of bytes at a time."""
    n = offsets.size - 1
    body = np.diff(offsets)
    header = np.where(body + 1 >= _LONG, 9, 1)
    blocks = -(-(header + body + 1) // BLOCK)
    if n and blocks.min() == blocks.max():  # the common case: one layout for every id
        return _mac(stream, _padded(tag, data, offsets[:-1], body, int(header[0]), int(blocks[0])))
    out = np.zeros((n, BLOCK), dtype=np.uint8)
    for count in np.unique(blocks):
        rows = np.flatnonzero(blocks == count)
        padded = _padded(tag, data, offsets[rows], body[rows], int(header[rows[0]]), int(count))
        out[rows] = _mac(stream, padded)
    return out


def _mac(stream: KeyedStream, padded: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """CBC-MAC of each row of ``padded`` (whole blocks)."""
    state = stream.encrypt(padded[:, :BLOCK])
    for j in range(1, padded.shape[1] // BLOCK):
        state = stream.encrypt(state ^ padded[:, j * BLOCK : (j + 1) * BLOCK])
    return state


def _padded(
    tag: int,
    data: NDArray[np.uint8],
    starts: NDArray[np.int64],
    body: NDArray[np.int64],
    header: int,
    count: int,
) -> NDArray[np.uint8]:
    """``(m, 16 count)``: each message's length header, tag and body, zero-padded (every row
    of one header size and block count)."""
    if header == 1:
        return _padded_short(tag, data, starts, body, count)
    m, width = starts.size, BLOCK * count
    padded = np.zeros((m, width), dtype=np.uint8)
    length = body + 1
    if header == 1:
        padded[:, 0] = length
    else:
        padded[:, 0] = _LONG
        for byte in range(8):
            padded[:, 1 + byte] = (length >> (8 * (7 - byte))) & 0xFF
    padded[:, header] = tag
    room = width - header - 1  # the body's bytes fit in the rest
    if data.size and m:
        if room <= _COLUMNS:  # one window of the data per row, then the bytes past its body cleared
            tail = np.concatenate([data, np.zeros(room, dtype=np.uint8)])
            windows = np.lib.stride_tricks.sliding_window_view(tail, room)[starts]
            np.multiply(windows, np.arange(room) < body[:, None], out=padded[:, header + 1 :])
        else:  # long messages: row by row
            for i in range(m):
                padded[i, header + 1 : header + 1 + body[i]] = data[starts[i] : starts[i] + body[i]]
    return padded


def _padded_short(
    tag: int,
    data: NDArray[np.uint8],
    starts: NDArray[np.int64],
    body: NDArray[np.int64],
    count: int,
) -> NDArray[np.uint8]:
    """:func:`_padded` of messages with a one-byte header, built as little-endian 64-bit
    words: word ``j`` holds message bytes ``8j`` to ``8j + 7``, read from the data eight bytes
    at a time at any byte offset, the bytes past each body cleared."""
    m = starts.size
    words = np.empty((m, 2 * count), dtype="<u8")
    at = words_at(data, 16 * count)
    longest = int(body.max()) if m else 0
    first = at[starts] & kept_bytes(longest, 0, most=6)[body]  # after the header and tag
    words[:, 0] = (body + 1).astype(np.uint64) | np.uint64(tag << 8) | (first << np.uint64(16))
    for j in range(1, 2 * count):
        offset = 8 * j - 2  # the body byte at the start of word j
        words[:, j] = at[starts + offset] & kept_bytes(longest, offset)[body]
    return words.view(np.uint8)


def keyed_digests_of(stream: KeyedStream, items: Sequence[object]) -> NDArray[np.uint8]:
    """:func:`keyed_digests` of Python ids (strings, bytes or integers): the same digest as
    the id in an Arrow column gets."""
    groups: dict[str, tuple[list[int], list[bytes]]] = {}
    for i, item in enumerate(items):
        if isinstance(item, str):
            kind, body = "string", item.encode("utf-8")
        elif isinstance(item, bytes):
            kind, body = "binary", item
        elif isinstance(item, int | np.integer) and not isinstance(item, bool):
            kind, body = "integer", str(int(item)).encode("ascii")
        else:
            raise ParameterError(
                f"identifiers must be strings, bytes or integers, got {shown(item)} of type "
                f"{type(item).__name__}"
            )
        rows, bodies = groups.setdefault(kind, ([], []))
        rows.append(i)
        bodies.append(body)
    out = np.zeros((len(items), BLOCK), dtype=np.uint8)
    for kind, (rows, bodies) in groups.items():
        offsets = np.zeros(len(bodies) + 1, dtype=np.int64)
        np.cumsum([len(body) for body in bodies], out=offsets[1:])
        data = np.frombuffer(b"".join(bodies), dtype=np.uint8)
        out[rows] = keyed_digests(stream, _TAGS[kind], data, offsets)
    return out
