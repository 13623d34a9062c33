"""Arrow record batches: the chunked path that streams a file through the mechanisms.

The command line reads a file batch by batch and hands every batch here. A batch's first row is
row ``row_start`` of the whole file and its reports are addressed by that global row, so the
file gets exactly the reports that the in-memory ``df.ldp.privatize`` gives for the same key,
whatever the batch size. Plumbing only: no formula lives in this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.encoding import packed_width
from frameldp.core.mechanisms import BalcerCheu, BloomRappor, RandomizedResponse, Rappor
from frameldp.core.randomness import RandomSource
from frameldp.errors import DomainError, shown
from frameldp.frames._arrow import (
    bloom_counts,
    bloom_privatize,
    privatize_array,
    rappor_array,
    report_counts,
)
from frameldp.frames._common import (
    Applicable,
    Release,
    cohort_column,
    column_context,
    labels_without_null,
)

__all__ = [
    "counts_of_batch",
    "from_hex",
    "label_array",
    "privatize_batch",
    "release_columns",
    "to_hex",
]

Counted = Rappor | RandomizedResponse | BalcerCheu


def release_columns(
    columns: Sequence[str], mechanisms: Mapping[str, Applicable], keep: Sequence[str]
) -> list[str]:
    """The columns a release holds, in input order: each report column (a Bloom column followed
    by its cohort column) and the kept pass-through columns; everything else is dropped."""
    out: list[str] = []
    for column in columns:
        if column in mechanisms:
            out.append(column)
            if isinstance(mechanisms[column], BloomRappor):
                out.append(cohort_column(column))
        elif column in keep:
            out.append(column)
    return out


def label_array(codes: NDArray[np.int64], mechanism: RandomizedResponse) -> pa.DictionaryArray:
    """k-RR report codes as a dictionary column of the reported labels (null bucket: null).

    Every batch gets the same dictionary (all labels, in domain order), so the batches of a file
    concatenate and a reader sees one categorical column.
    """
    domain = mechanism.domain
    labels = labels_without_null(domain)
    null = (codes == domain.null_code) if domain.has_null else None
    indices = pa.array(codes.astype(np.int32), type=pa.int32(), mask=null)
    return pa.DictionaryArray.from_arrays(indices, pa.array(labels))


def privatize_batch(
    batch: pa.RecordBatch,
    mechanisms: Mapping[str, Applicable],
    *,
    source: RandomSource,
    release: Release,
    keep: Sequence[str] = (),
    user: str | None = None,
    row_start: int = 0,
) -> pa.RecordBatch:
    """The release of one batch: report columns in place of the privatized ones, the kept
    columns as they are, nothing else."""
    produced: dict[str, pa.Array] = {}
    for column, mechanism in mechanisms.items():
        values = batch.column(column)
        if isinstance(mechanism, BloomRappor):
            users = None if user is None else batch.column(user)
            with column_context(column):
                packed, cohorts = bloom_privatize(
                    values,
                    users,
                    mechanism,
                    column=column,
                    user_column=user,
                    source=source,
                    memo=release.memo,
                    row_start=row_start,
                )
            produced[column] = rappor_array(packed)
            produced[cohort_column(column)] = pa.array(cohorts, type=pa.int64())
            continue
        with column_context(column):
            reports = privatize_array(
                values, mechanism, column=column, source=source, row_start=row_start
            )
        if isinstance(mechanism, Rappor):
            produced[column] = rappor_array(reports)
        else:
            produced[column] = label_array(reports, mechanism)
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
    return pa.StringArray.from_buffers(
        len(array), pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())
    )


_NIBBLES = np.full(256, 255, dtype=np.uint8)
_NIBBLES[np.frombuffer(b"0123456789", dtype=np.uint8)] = np.arange(10)
_NIBBLES[np.frombuffer(b"abcdef", dtype=np.uint8)] = np.arange(10, 16)
_NIBBLES[np.frombuffer(b"ABCDEF", dtype=np.uint8)] = np.arange(10, 16)


def from_hex(array: pa.Array | pa.ChunkedArray, num_bits: int, column: str) -> pa.Array:
    """Hex strings written by :func:`to_hex` back to fixed-width binary reports."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    width = packed_width(num_bits)
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
    return rappor_array(np.ascontiguousarray(packed, dtype=np.uint8))


def counts_of_batch(
    batch: pa.RecordBatch, column: str, mechanism: Counted | BloomRappor, cohorts: str | None
) -> tuple[NDArray[np.int64], Any]:
    """The additive statistic of one batch of reports: ``(counts, rows)``, or for Bloom RAPPOR
    ``(per-cohort bit counts, cohort sizes)``."""
    if isinstance(mechanism, BloomRappor):
        assert cohorts is not None
        with column_context(column):
            return bloom_counts(batch.column(column), batch.column(cohorts), mechanism, column)
    with column_context(column):
        return report_counts(batch.column(column), mechanism, column=column)
