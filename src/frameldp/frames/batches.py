"""Arrow record batches: the chunked path that streams a file through the mechanisms.

The command line reads a file batch by batch and hands every batch here. A batch's first row is
row ``row_start`` of the whole file and its reports are addressed by that global row, so the
file gets exactly the reports that the in-memory ``df.ldp.privatize`` gives for the same key,
whatever the batch size. Plumbing only: no formula lives in this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from frameldp.core.columns import bits_array, combined
from frameldp.core.encoding import packed_width
from frameldp.core.mechanisms import Mechanism
from frameldp.core.randomness import RandomSource
from frameldp.errors import DomainError, shown
from frameldp.frames.pipeline import privatize_columns
from frameldp.frames.release import ReleasePlan
from frameldp.frames.report_type import storage_of

__all__ = [
    "from_hex",
    "hex_width",
    "privatize_batch",
    "release_columns",
    "to_hex",
]


def release_columns(
    columns: Sequence[str], mechanisms: Mapping[str, Mechanism], keep: Sequence[str]
) -> list[str]:
    """The columns a release holds, in input order: the report columns of each privatized
    column (a Bloom column followed by its cohort column) and the kept pass-through columns;
    everything else is dropped."""
    out: list[str] = []
    for column in columns:
        if column in mechanisms:
            out.extend(mechanisms[column].report_columns(column))
        elif column in keep:
            out.append(column)
    return out


def privatize_batch(
    batch: pa.RecordBatch,
    mechanisms: Mapping[str, Mechanism],
    *,
    source: RandomSource,
    release: ReleasePlan,
    keep: Sequence[str] = (),
    user: str | None = None,
    row_start: int = 0,
) -> pa.RecordBatch:
    """The release of one batch: report columns in place of the privatized ones, the kept
    columns as they are, nothing else."""
    produced = privatize_columns(
        {name: batch.column(name) for name in batch.schema.names},
        mechanisms,
        specs=release.specs,
        source=source,
        row_start=row_start,
        user=user,
        memo=release.memo,
    )
    names = release_columns(batch.schema.names, mechanisms, keep)
    arrays = [produced[name] if name in produced else batch.column(name) for name in names]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def to_hex(array: pa.FixedSizeBinaryArray) -> pa.StringArray:
    """Fixed-width binary reports as lowercase hex strings (RAPPOR reports in a CSV file)."""
    width = array.type.byte_width
    data = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    data = data[array.offset * width : (array.offset + len(array)) * width]
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    chars = np.empty((len(array), 2 * width), dtype=np.uint8)
    chars[:, 0::2] = digits[data.reshape(-1, width) >> 4]
    chars[:, 1::2] = digits[data.reshape(-1, width) & 0x0F]
    offsets = np.arange(len(array) + 1, dtype=np.int32) * (2 * width)
    text = pa.StringArray.from_buffers(
        len(array), pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())
    )
    if array.null_count:  # a row without a report (collect="sample") stays null
        text = pc.if_else(array.is_valid(), text, pa.scalar(None, pa.string()))
    return text


_NIBBLES = np.full(256, 255, dtype=np.uint8)
_NIBBLES[np.frombuffer(b"0123456789", dtype=np.uint8)] = np.arange(10)
_NIBBLES[np.frombuffer(b"abcdef", dtype=np.uint8)] = np.arange(10, 16)
_NIBBLES[np.frombuffer(b"ABCDEF", dtype=np.uint8)] = np.arange(10, 16)


def hex_width(mechanism: Mechanism, column: str) -> int | None:
    """Bytes of one report of ``mechanism`` when its report column is fixed-width binary (a CSV
    file holds those as hex strings), else None."""
    kind = mechanism.report_columns(column)[column]
    return kind.byte_width if pa.types.is_fixed_size_binary(kind) else None


def from_hex(
    array: pa.Array | pa.ChunkedArray, num_bits: int, column: str, *, nullable: bool = False
) -> pa.Array:
    """Hex strings written by :func:`to_hex` back to fixed-width binary reports; nulls (rows
    without a report of a sampled collection) stay null when ``nullable``."""
    array = combined(storage_of(array))
    width = packed_width(num_bits)
    if array.null_count and nullable:
        valid = array.is_valid()
        decoded = from_hex(array.filter(valid), num_bits, column)
        present = valid.to_numpy(zero_copy_only=False)
        positions = np.cumsum(present) - 1
        return decoded.take(pa.array(positions, mask=~present))
    if array.null_count:
        raise DomainError(
            f"column {shown(column)}: RAPPOR reports contain {array.null_count} nulls"
        )
    strings = array.cast(pa.large_string())
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)
    offsets = offsets[strings.offset : strings.offset + len(strings) + 1]
    lengths = np.diff(offsets)
    if lengths.size and (lengths.min() != 2 * width or lengths.max() != 2 * width):
        raise DomainError(
            f"column {shown(column)}: hex reports must be {2 * width} characters for {num_bits} "
            f"bits, got lengths in [{lengths.min()}, {lengths.max()}]"
        )
    first = int(offsets[0]) if offsets.size else 0
    chars = np.frombuffer(strings.buffers()[2], dtype=np.uint8)[
        first : first + len(strings) * 2 * width
    ]
    nibbles = _NIBBLES[chars].reshape(-1, 2 * width)
    if (nibbles == 255).any():
        row = int(np.flatnonzero((nibbles == 255).any(axis=1))[0])
        raise DomainError(
            f"column {shown(column)}: row {row} is not a hex report: {strings[row].as_py()!r}"
        )
    packed = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
    return bits_array(np.ascontiguousarray(packed, dtype=np.uint8))
