"""Plumbing shared by every frame library: Arrow columns <-> integer codes and packed bits.

pandas and polars both hand their columns over as Arrow arrays (zero-copy where the data is
already Arrow), so value -> code mapping, set-valued cells and report columns are handled once,
here. No formula lives in this module: it only moves data between Arrow and ``frameldp.core``.
"""

from __future__ import annotations

import contextlib
import hashlib
import warnings
from collections.abc import Callable, Hashable
from decimal import Decimal
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.encoding import OTHER, Domain, count_bits, packed_width
from frameldp.core.estimation import FrequencyEstimate
from frameldp.core.mechanisms import BalcerCheu, BloomRappor, RandomizedResponse, Rappor
from frameldp.core.randomness import RandomSource, label_bytes, permutation
from frameldp.errors import (
    DomainError,
    DomainInferenceWarning,
    ParameterError,
    caller_stacklevel,
    shown,
)

__all__ = [
    "add_counts",
    "balcer_cheu_messages",
    "bloom_counts",
    "bloom_privatize",
    "check_report_labels",
    "estimate_from_counts",
    "estimate_reports",
    "infer_domain",
    "packed_from_arrow",
    "privatize_array",
    "rappor_array",
    "report_counts",
    "row_content",
]


def _combined(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def infer_domain(array: pa.Array | pa.ChunkedArray, column: str) -> tuple[Hashable, ...]:
    """Sorted distinct non-null values, with a warning that this reveals which values occur."""
    array = _combined(array)
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        array = pc.list_flatten(array)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    values = pc.unique(array.drop_null()).sort()
    warnings.warn(
        f"column {shown(column)}: domain inferred from the data ({len(values)} values). The list "
        "of values that occur is released without any privacy protection; pass the public domain "
        "instead.",
        DomainInferenceWarning,
        stacklevel=caller_stacklevel(),
    )
    return tuple(values.to_pylist())


def _codes(
    array: pa.Array, domain: Domain, column: str, row_of: Callable[[int], int] | None = None
) -> NDArray[np.int64]:
    """Codes of a flat Arrow array against the domain, with the domain's policies applied.

    ``row_of(i)`` names the frame row of value ``i`` in error messages (default: ``i``).
    """
    null_mask = array.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_dictionary(array.type):
        # Null slots (and every slot of an all-null column, whose dictionary may be empty)
        # point past the dictionary's codes, at a final -1.
        lookup = np.append(_codes_of_values(array.dictionary, domain, column), -1)
        indices = array.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        raw = lookup[np.where(null_mask, lookup.size - 1, indices)]
    else:
        raw = _codes_of_values(array, domain, column)
    return domain.resolve(
        raw, null_mask, column=column, value_at=lambda i: array[i].as_py(), row_of=row_of
    )


def _codes_of_values(array: pa.Array, domain: Domain, column: str) -> NDArray[np.int64]:
    """Position of each value among the domain's categories; -1 for nulls and values not listed.

    Matching is exact, and neither side is converted to the other's type: a string column
    matches string categories, a boolean column boolean ones, and a numeric column the numbers
    its type holds exactly (an ``int64`` 2 matches 2 or 2.0, never 2.5). Any other pairing
    could match nothing, and is refused rather than sending every value to ``unknown``.
    """
    if array.null_count == len(array) or domain.kind is None:  # no value, or no category
        return np.full(len(array), -1, dtype=np.int64)
    # index_in has no kernel for these types: widen them, exactly.
    if pa.types.is_float16(array.type):
        array = array.cast(pa.float32())
    elif pa.types.is_string_view(array.type):
        array = array.cast(pa.large_string())
    kind = array.type
    text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
    numeric = domain.kind in ("int", "float")
    codes: NDArray[np.int64] = np.arange(len(domain.categories), dtype=np.int64)
    if (domain.kind == "str" and text) or (domain.kind == "bool" and pa.types.is_boolean(kind)):
        value_set = pa.array(domain.categories, type=kind)
    elif numeric and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        held, codes = domain.held_by(np.dtype(kind.to_pandas_dtype()))
        value_set = pa.array(held, type=kind)
    elif numeric and pa.types.is_decimal(kind):
        exact = []  # Arrow refuses a Decimal its scale or precision would round
        for code, category in enumerate(domain.categories):
            with contextlib.suppress(pa.ArrowInvalid):  # Decimal(0.1) is the float's exact value
                exact.append((code, pa.scalar(Decimal(cast(float, category)), type=kind)))
        codes = np.array([code for code, _ in exact], dtype=np.int64)
        value_set = pa.array([value for _, value in exact], type=kind)
    else:
        raise DomainError(
            f"column {shown(column)}: its values ({kind}) can never equal the domain's "
            f"{domain.kind} "
            "categories, and categories are not converted to the column's type; cast the "
            "column, or give categories of its type"
        )
    found = pc.index_in(array, value_set=value_set).fill_null(len(codes))
    positions: NDArray[np.int64] = found.to_numpy(zero_copy_only=False).astype(np.int64)
    return np.append(codes, -1)[positions]


def _set_codes(
    array: pa.Array, domain: Domain, column: str, row_start: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """CSR offsets (from 0) and item codes of a list column; a null cell is the null bucket.

    Arrow lets a null list slot still span items (polars produces such slots): those items
    are not the row's value and are dropped before they are looked up.
    """
    offsets = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    values = array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    lengths = np.diff(offsets)
    null_rows = array.is_null().to_numpy(zero_copy_only=False)
    if null_rows.any():
        if not domain.has_null:
            row = row_start + int(np.flatnonzero(null_rows)[0])
            raise DomainError(
                f"column {shown(column)}: null cell at row {row}; pass nulls='category' to give "
                "nulls their own bucket, or drop them first"
            )
        values = values.filter(pa.array(np.repeat(~null_rows, lengths)))
        lengths = np.where(null_rows, 0, lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)])

    def row_of(item: int) -> int:
        return row_start + int(np.searchsorted(starts, item, side="right") - 1)

    codes = _codes(values, domain, column, row_of)
    if not null_rows.any():
        return starts, codes
    # Each null cell becomes a one-item set holding the null bucket.
    lengths = np.where(null_rows, 1, lengths)
    with_nulls = np.full(int(lengths.sum()), domain.null_code, dtype=np.int64)
    with_nulls[np.repeat(~null_rows, lengths)] = codes
    return np.concatenate([[0], np.cumsum(lengths)]), with_nulls


_DIGEST_BYTES = 16


def _value_digest(value: object) -> bytes:
    """16 bytes naming one cell value canonically (type-tagged, as stream labels are)."""
    try:
        body = label_bytes([value])
    except ParameterError:  # dates, decimals, lists of kept columns: by type and repr
        body = b"r" + type(value).__name__.encode() + b":" + repr(value).encode()
    return hashlib.blake2b(body, digest_size=_DIGEST_BYTES).digest()


def row_content(columns: list[pa.Array | pa.ChunkedArray], num_rows: int) -> NDArray[np.uint8]:
    """One row of bytes per row naming its cells: 16 bytes per column, a digest of the cell's
    type-tagged value (nulls and dictionary-encoded, categorical or Enum columns included, so
    pandas, polars and Arrow frames of equal values give equal bytes)."""
    parts = [np.zeros((num_rows, 0), dtype=np.uint8)]
    for array in columns:
        array = _combined(array)
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        try:
            encoded = pc.dictionary_encode(array)
        except pa.ArrowNotImplementedError:  # lists, structs (kept columns): cell by cell
            cells = b"".join(map(_value_digest, array.to_pylist()))
            parts.append(np.frombuffer(cells, dtype=np.uint8).reshape(-1, _DIGEST_BYTES))
            continue
        distinct = encoded.dictionary.to_pylist()
        table = np.frombuffer(
            b"".join(map(_value_digest, [*distinct, None])), dtype=np.uint8
        ).reshape(-1, _DIGEST_BYTES)
        indices = encoded.indices.fill_null(len(distinct)).to_numpy(zero_copy_only=False)
        parts.append(table[indices.astype(np.int64)])
    return np.ascontiguousarray(np.concatenate(parts, axis=1))


def check_report_labels(domain: Domain, column: object) -> None:
    """k-RR reports are labels of the domain: with ``unknown='other'`` they must be strings
    (the :data:`OTHER` label is written into the report column)."""
    if domain.has_other and not all(isinstance(c, str) for c in domain.categories):
        raise ParameterError(
            f"column {shown(column)}: unknown='other' with k-ary randomized response needs "
            f"string categories (the {OTHER!r} label is written into the report column); "
            "cast the column and the domain to strings first"
        )


def privatize_array(
    array: pa.Array | pa.ChunkedArray,
    mechanism: Rappor | RandomizedResponse,
    *,
    column: str,
    source: RandomSource,
    row_start: int = 0,
) -> NDArray[Any]:
    """Randomize one column: report codes (k-RR) or packed report bits (RAPPOR)."""
    array = _combined(array)
    is_list = pa.types.is_list(array.type) or pa.types.is_large_list(array.type)

    def row_of(value: int) -> int:
        return row_start + value

    if isinstance(mechanism, RandomizedResponse):
        if is_list:
            raise ParameterError(
                f"column {shown(column)}: k-ary randomized response takes one value per row; "
                "use rappor(..., max_weight=m) for set-valued cells"
            )
        domain = mechanism.domain
        check_report_labels(domain, column)
        codes = _codes(array, domain, column, row_of)
        return mechanism.randomize(codes, source=source, label=column, row_start=row_start)
    if is_list:
        offsets, codes = _set_codes(array, mechanism.domain, column, row_start)
        bits = mechanism.encode_sets(offsets, codes, column=column, row_offset=row_start)
        return mechanism.randomize(bits, source=source, label=column, row_start=row_start)
    codes = _codes(array, mechanism.domain, column, row_of)
    return mechanism.randomize_codes(codes, source=source, label=column, row_start=row_start)


def rappor_array(packed: NDArray[np.uint8]) -> pa.FixedSizeBinaryArray:
    """Packed report bits as a fixed-size binary Arrow column (zero-copy)."""
    rows, width = packed.shape
    buffer = pa.py_buffer(np.ascontiguousarray(packed))
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), rows, [None, buffer])


def packed_from_arrow(
    array: pa.Array | pa.ChunkedArray, num_bits: int, column: str
) -> NDArray[np.uint8]:
    """Packed ``(n, ceil(k/8))`` bits of a binary report column (fixed or variable width)."""
    array = _combined(array)
    width = packed_width(num_bits)
    if array.null_count:
        raise DomainError(
            f"column {shown(column)}: RAPPOR reports contain {array.null_count} nulls"
        )
    if pa.types.is_fixed_size_binary(array.type):
        if array.type.byte_width != width:
            raise DomainError(
                f"column {shown(column)}: reports are {array.type.byte_width} bytes wide, expected "
                f"{width} for {num_bits} bits"
            )
        start = array.offset * width
        data = np.frombuffer(array.buffers()[1], dtype=np.uint8)[start : start + len(array) * width]
        return data.reshape(len(array), width)
    if not (
        pa.types.is_binary(array.type)
        or pa.types.is_large_binary(array.type)
        or pa.types.is_binary_view(array.type)
    ):
        raise DomainError(
            f"column {shown(column)}: expected binary RAPPOR reports, got {array.type}"
        )
    large = array.cast(pa.large_binary())
    lengths = pc.binary_length(large).to_numpy(zero_copy_only=False)
    if lengths.size and (lengths.min() != width or lengths.max() != width):
        raise DomainError(
            f"column {shown(column)}: reports must all be {width} bytes for {num_bits} bits, got "
            f"lengths in [{lengths.min()}, {lengths.max()}]"
        )
    offsets = np.frombuffer(large.buffers()[1], dtype=np.int64)[large.offset : large.offset + 1]
    first = int(offsets[0]) if offsets.size else 0
    data = np.frombuffer(large.buffers()[2], dtype=np.uint8)[first : first + len(large) * width]
    return data.reshape(len(large), width)


def balcer_cheu_messages(
    array: pa.Array | pa.ChunkedArray,
    mechanism: BalcerCheu,
    *,
    column: str,
    source: RandomSource,
) -> NDArray[np.int64]:
    """The shuffler's output for one column: every person's messages, keyed-permuted."""
    codes = _codes(_combined(array), mechanism.domain, column, lambda row: row)
    messages = mechanism.randomize(codes, source=source, label=column)
    return messages[permutation(source.stream(column, "shuffle"), messages.size)]


def report_counts(
    array: pa.Array | pa.ChunkedArray,
    mechanism: Rappor | RandomizedResponse | BalcerCheu,
    *,
    column: str,
) -> tuple[NDArray[np.int64], int]:
    """The sufficient statistic of a run of report rows: ``(counts, rows)``.

    Per-bit sums (RAPPOR) or per-label counts (k-RR reports, Balcer–Cheu messages). Counts of
    disjoint runs add up, so a chunked file or a Dask tree reduction estimates exactly what the
    in-memory column does (:func:`estimate_from_counts`).
    """
    if isinstance(mechanism, Rappor):
        packed = packed_from_arrow(array, mechanism.num_bits, column)
        return count_bits(packed, mechanism.num_bits).astype(np.int64), packed.shape[0]
    # k-RR reports and Balcer–Cheu messages are labels: categories, OTHER, and null for the
    # null bucket.
    codes = _codes(_combined(array), mechanism.domain.as_reported(), column)
    return np.bincount(codes, minlength=mechanism.domain.size).astype(np.int64), codes.size


def add_counts(*partials: tuple[Any, ...]) -> tuple[Any, ...]:
    """Element-wise sum of additive statistics of disjoint runs of rows: ``(counts, rows)`` of
    :func:`report_counts`, ``(bit sums, cohort sizes)`` of :func:`bloom_counts`."""
    return tuple(sum(values[1:], values[0]) for values in zip(*partials, strict=True))


def estimate_from_counts(
    counts: NDArray[np.int64], rows: int, mechanism: Rappor | RandomizedResponse | BalcerCheu
) -> FrequencyEstimate:
    """Debiased estimate from the summed :func:`report_counts` of ``rows`` reports."""
    if isinstance(mechanism, BalcerCheu):
        return mechanism.debias(counts)
    return mechanism.debias(counts, rows)


def estimate_reports(
    array: pa.Array | pa.ChunkedArray,
    mechanism: Rappor | RandomizedResponse | BalcerCheu,
    *,
    column: str,
) -> FrequencyEstimate:
    """Debiased estimate from a report column produced by :func:`privatize_array`."""
    counts, rows = report_counts(array, mechanism, column=column)
    return estimate_from_counts(counts, rows, mechanism)


def _distinct(
    array: pa.Array | pa.ChunkedArray, column: str, what: str, row_start: int
) -> tuple[NDArray[np.int64], list[Any]]:
    """Row codes into the distinct values of a column (nulls refused, named by frame row)."""
    array = _combined(array)
    if array.null_count:
        first = int(np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False))[0])
        raise DomainError(
            f"column {shown(column)}: null {what} at row {row_start + first} ({array.null_count} "
            "in this batch of rows); drop or fill them first"
        )
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    try:
        encoded = pc.dictionary_encode(array)
    except pa.ArrowNotImplementedError:
        raise DomainError(
            f"column {shown(column)}: each {what} must be a string, bytes or an integer, got a "
            f"column of {array.type}"
        ) from None
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, encoded.dictionary.to_pylist()


def bloom_privatize(
    values: pa.Array | pa.ChunkedArray,
    users: pa.Array | pa.ChunkedArray | None,
    mechanism: BloomRappor,
    *,
    column: str,
    user_column: str | None = None,
    source: RandomSource,
    memo: RandomSource | None,
    row_start: int = 0,
) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """Bloom RAPPOR reports and cohorts of a string column (each distinct string hashed once).

    ``users`` are the ids of ``user_column``; ``row_start`` is the frame row of the first value
    (for error messages and the row-addressed noise).
    """
    values = _combined(values)
    kind = values.type.value_type if pa.types.is_dictionary(values.type) else values.type
    if not (
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    ):
        raise DomainError(
            f"column {shown(column)}: Bloom encoding hashes strings, got a column of "
            f"{values.type}; cast it to strings first"
        )
    codes, distinct = _distinct(values, column, "value", row_start)
    user_codes, user_ids = (
        (None, None)
        if users is None
        else _distinct(users, column, f"user id (user column {shown(user_column)})", row_start)
    )
    return mechanism.randomize(
        codes,
        distinct,
        user_codes=user_codes,
        user_ids=user_ids,
        source=source,
        memo=memo,
        label=column,
        row_start=row_start,
    )


def bloom_counts(
    reports: pa.Array | pa.ChunkedArray,
    cohorts: pa.Array | pa.ChunkedArray,
    mechanism: BloomRappor,
    column: str,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per-cohort bit sums and cohort sizes of a Bloom report column and its cohort column."""
    packed = packed_from_arrow(reports, mechanism.num_bits, column)
    cohort_array = _combined(cohorts)
    if cohort_array.null_count or not pa.types.is_integer(cohort_array.type):
        raise DomainError(
            f"column {shown(column)}: the cohort column must hold integers without nulls, got "
            f"{cohort_array.type} with {cohort_array.null_count} nulls"
        )
    codes = cohort_array.to_numpy(zero_copy_only=False).astype(np.int64)
    return mechanism.bit_counts(packed, codes)
