"""The text form of bit-vector reports: ``"b"`` and one ``0``/``1`` character per bit.

Bit-vector reports (RAPPOR, Bloom RAPPOR, OUE, subset selection, prefix extending) are stored as
packed bytes, which text formats (CSV, JSON, a terminal) cannot hold: pandas would write a
Python ``b'...'`` literal that no reader turns back into bytes. Their text form spells the bits
out, bit ``j`` (the report's bucket ``j``) as the ``j``-th character after the prefix:
``"b0100"`` is a report of 4 bits with bucket 1 set. The ``b`` keeps CSV readers from taking
the text for a number, which would drop its leading zeros: pandas, polars, Spark and DuckDB all
read it as text (DuckDB reads ``0b0100`` as a binary integer literal, so that prefix would not).

Both directions are vectorized over the Arrow buffers; a value of another width (nothing
frameldp writes) is shown as ``"0x"`` and its hex, and is refused on the way back. No formula
lives here, and no dataframe library is imported.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.encoding import packed_width, padding_mask
from frameldp.errors import DomainError, shown

__all__ = ["BITS_PREFIX", "fixed_width_rows", "is_text", "packed_from_text", "text_of_bits"]

BITS_PREFIX: Final = "b"
"""What starts the text form of a bit-vector report."""

_PREFIX = np.frombuffer(BITS_PREFIX.encode(), dtype=np.uint8)
_ZERO, _ONE = ord("0"), ord("1")


def is_text(kind: pa.DataType) -> bool:
    """Whether reports of Arrow type ``kind`` are text (read back by :func:`packed_from_text`)."""
    return bool(
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    )


def text_of_bits(array: pa.Array, num_bits: int) -> pa.Array:
    """Packed reports of ``num_bits`` bits (a binary column, nulls kept) as ``large_string``
    text ``"b0100..."``; a value that is not ``packed_width(num_bits)`` bytes long is shown
    as ``"0x"`` and its hex."""
    width = packed_width(num_bits)
    data = array.cast(pa.large_binary())
    filled = pc.fill_null(data, pa.scalar(bytes(width), pa.large_binary()))
    lengths = pc.binary_length(filled).to_numpy(zero_copy_only=False)
    rows = len(filled)
    packed = np.zeros((0, width), dtype=np.uint8)
    if not lengths.size or (lengths.min() == width and lengths.max() == width):
        packed = fixed_width_rows(filled, width)
    padding = padding_mask(num_bits)
    if packed.shape[0] != rows or (padding and (packed[:, -1] & padding).any()):
        # Another width, or padding bits set: nothing frameldp wrote; shown as hex, refused back.
        return pa.array(
            [None if v is None else _text_of(v, num_bits, width) for v in data.to_pylist()],
            type=pa.large_string(),
        )
    bits = np.unpackbits(packed, axis=1, count=num_bits)
    chars = np.empty((rows, num_bits + _PREFIX.size), dtype=np.uint8)
    chars[:, : _PREFIX.size] = _PREFIX
    np.add(bits, _ZERO, out=chars[:, _PREFIX.size :])
    step = num_bits + _PREFIX.size
    starts = np.arange(rows + 1, dtype=np.int64) * step
    text = pa.LargeStringArray.from_buffers(rows, pa.py_buffer(starts), pa.py_buffer(chars))
    if not data.null_count:
        return text
    return pc.if_else(pc.is_valid(data), text, pa.scalar(None, pa.large_string()))


def _text_of(value: bytes, num_bits: int, width: int) -> str:
    if len(value) != width or value[-1] & padding_mask(num_bits):
        return "0x" + value.hex()
    bits = np.unpackbits(np.frombuffer(value, dtype=np.uint8), count=num_bits)
    return BITS_PREFIX + (bits + _ZERO).tobytes().decode()


def packed_from_text(array: pa.Array, num_bits: int, column: str, owner: str) -> NDArray[np.uint8]:
    """The packed ``(n, packed_width(num_bits))`` bits of reports in their text form (no nulls:
    the caller refuses them); any other text is refused, naming the column."""
    text = array.cast(pa.large_string())
    step = num_bits + _PREFIX.size
    lengths = pc.utf8_length(text).to_numpy(zero_copy_only=False)
    if lengths.size and (lengths.min() != step or lengths.max() != step):
        wrong = np.flatnonzero(lengths != step)
    else:
        chars = fixed_width_rows(text, step)
        wrong = np.flatnonzero(
            (chars[:, : _PREFIX.size] != _PREFIX).any(axis=1)
            | ((chars[:, _PREFIX.size :] != _ZERO) & (chars[:, _PREFIX.size :] != _ONE)).any(axis=1)
        )
    if wrong.size:
        # No row or value named: a partition of a Dask frame would number its own rows.
        raise DomainError(
            f"column {shown(column)}: expected binary {owner} reports, or their text form "
            f"{BITS_PREFIX!r} and {num_bits} characters 0 or 1; got other text (reports of "
            "another mechanism, or another domain?)"
        )
    return np.packbits(chars[:, _PREFIX.size :] - _ZERO, axis=1)


def fixed_width_rows(array: pa.Array, width: int) -> NDArray[np.uint8]:
    """The ``(n, width)`` bytes of a ``large_binary`` or ``large_string`` array whose ``n``
    values are ``width`` bytes each (the caller checks the lengths): a view of its buffer."""
    rows = len(array)
    if not rows:
        return np.empty((0, width), dtype=np.uint8)
    start = int(np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset])
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8)
    return data[start : start + rows * width].reshape(rows, width)
