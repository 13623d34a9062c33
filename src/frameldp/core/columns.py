"""Arrow columns <-> the integer codes and packed bits the mechanisms work on.

Every frame library hands its columns over as Arrow arrays (zero-copy where the data already is
Arrow), so mapping values to domain codes, set-valued cells to CSR codes, strings to distinct
codes, and packed report bits to and from binary columns is done once, here, for every
mechanism. No formula lives in this module, and no dataframe library is imported: pyarrow is a
memory format.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable
from decimal import Decimal
from typing import Any, Final, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.encoding import OTHER, Domain, packed_width
from frameldp.core.parallel import map_ranges
from frameldp.core.report_text import fixed_width_rows, is_text, packed_from_text
from frameldp.errors import DomainError, ParameterError, shown

__all__ = [
    "FUSED_ROWS",
    "bits_array",
    "check_report_labels",
    "combined",
    "dictionary_lookup",
    "distinct_codes",
    "integer_reports",
    "label_array",
    "label_type",
    "map_code_runs",
    "packed_bits",
    "report_labels",
    "set_codes",
    "value_codes",
]


FUSED_ROWS: Final = 1 << 17
"""Rows a fused pass (:func:`map_code_runs`) handles at a time: its int64 temporaries (1 MB
each) stay in cache, and a run's fixed costs are a small part of it."""


def combined(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def value_codes(
    array: pa.Array,
    domain: Domain,
    column: str,
    row_of: Callable[[int], int] | None = None,
    *,
    lookup: NDArray[np.int64] | None = None,
) -> NDArray[np.int64]:
    """Codes of a flat Arrow array against the domain, with the domain's policies applied.

    ``row_of(i)`` names the frame row of value ``i`` in error messages (default: ``i``). For a
    dictionary array, ``lookup`` may give :func:`dictionary_lookup` of its dictionary, computed
    once for many slices of one array.
    """
    if pa.types.is_dictionary(array.type):
        if lookup is None:
            lookup = dictionary_lookup(array.dictionary, domain, column)
        indices = array.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.intp)
        if not array.null_count and lookup[:-1].min(initial=0) >= 0:
            codes: NDArray[np.int64] = lookup[indices]
            return codes  # every entry is a category: no policy to apply
        null_mask = array.is_null().to_numpy(zero_copy_only=False)
        raw = lookup[np.where(null_mask, lookup.size - 1, indices)]
    else:
        null_mask = array.is_null().to_numpy(zero_copy_only=False)
        raw = _codes_of_values(array, domain, column)
    return domain.resolve(
        raw, null_mask, column=column, value_at=lambda i: array[i].as_py(), row_of=row_of
    )


def dictionary_lookup(dictionary: pa.Array, domain: Domain, column: str) -> NDArray[np.int64]:
    """The code of each dictionary entry (-1: not a category), then a final -1 that null slots
    (and every slot of an all-null column, whose dictionary may be empty) are pointed at."""
    return np.append(_codes_of_values(dictionary, domain, column), -1)


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


def set_codes(
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

    codes = value_codes(values, domain, column, row_of)
    if not null_rows.any():
        return starts, codes
    # Each null cell becomes a one-item set holding the null bucket.
    lengths = np.where(null_rows, 1, lengths)
    with_nulls = np.full(int(lengths.sum()), domain.null_code, dtype=np.int64)
    with_nulls[np.repeat(~null_rows, lengths)] = codes
    return np.concatenate([[0], np.cumsum(lengths)]), with_nulls


def check_report_labels(domain: Domain, column: object) -> None:
    """k-RR reports are labels of the domain, written as one Arrow column: the labels must form
    one (not an integer beyond ``2**53`` beside a float, say); with ``unknown='other'`` they
    must be strings (the :data:`OTHER` label is written into the report column)."""
    if domain.has_other and not all(isinstance(c, str) for c in domain.categories):
        raise ParameterError(
            f"column {shown(column)}: unknown='other' with k-ary randomized response needs "
            f"string categories (the {OTHER!r} label is written into the report column); "
            "cast the column and the domain to strings first"
        )
    try:
        pa.array(report_labels(domain))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ParameterError(
            f"column {shown(column)}: k-ary randomized response writes the domain's labels "
            f"as one column, and these do not form one ({shown(reason, 100)}); give labels of "
            "one type",
            column=column,
            parameter="domain",
        ) from None


def bits_array(packed: NDArray[np.uint8]) -> pa.FixedSizeBinaryArray:
    """Packed report bits as a fixed-size binary Arrow column (zero-copy)."""
    rows, width = packed.shape
    buffer = pa.py_buffer(np.ascontiguousarray(packed))
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), rows, [None, buffer])


def packed_bits(
    array: pa.Array | pa.ChunkedArray, num_bits: int, column: str, owner: str = "RAPPOR"
) -> NDArray[np.uint8]:
    """Packed ``(n, ceil(k/8))`` bits of a binary report column (fixed or variable width, or
    the text form of :mod:`frameldp.core.report_text`, as a CSV file holds it); errors name the
    column and the mechanism (``owner``)."""
    array = combined(array)
    width = packed_width(num_bits)
    if array.null_count:
        raise DomainError(
            f"column {shown(column)}: {owner} reports contain {array.null_count} nulls"
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
    if is_text(array.type):
        return packed_from_text(array, num_bits, column, owner)
    if not (
        pa.types.is_binary(array.type)
        or pa.types.is_large_binary(array.type)
        or pa.types.is_binary_view(array.type)
    ):
        raise DomainError(
            f"column {shown(column)}: expected binary {owner} reports, got {array.type}"
        )
    large = array.cast(pa.large_binary())
    lengths = pc.binary_length(large).to_numpy(zero_copy_only=False)
    if lengths.size and (lengths.min() != width or lengths.max() != width):
        raise DomainError(
            f"column {shown(column)}: reports must all be {width} bytes for {num_bits} bits, got "
            f"lengths in [{lengths.min()}, {lengths.max()}]"
        )
    return fixed_width_rows(large, width)


def integer_reports(
    array: pa.Array | pa.ChunkedArray, high: int, column: str, owner: str
) -> NDArray[np.int64]:
    """A report column of integers in ``[0, high)`` (local hashing, Hadamard response) as
    int64; nulls, other types and values outside are refused, naming the column, the
    mechanism (``owner``) and the first row outside."""
    array = combined(array)
    if array.null_count or not pa.types.is_integer(array.type):
        raise DomainError(
            f"column {shown(column)}: expected {owner} reports (integers without nulls), got "
            f"{array.type} with {array.null_count} nulls"
        )
    # uint64 values from 2**63 wrap to negative int64: refused as outside below.
    values = np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.int64)
    outside = (values < 0) | (values >= high)
    if outside.any():
        first = int(np.flatnonzero(outside)[0])
        raise DomainError(
            f"column {shown(column)}: report {int(values[first])} at row {first} is outside "
            f"[0, {high}) (wrong mechanism or domain?)"
        )
    return values


def distinct_codes(
    array: pa.Array | pa.ChunkedArray, column: str, what: str, row_start: int
) -> tuple[NDArray[np.int64], list[Any]]:
    """Row codes into the distinct values of a column (nulls refused, named by frame row)."""
    array = combined(array)
    if pa.types.is_dictionary(array.type):  # first: a null in the dictionary is a null id
        array = array.dictionary_decode()
    if array.null_count:
        first = int(np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False))[0])
        raise DomainError(
            f"column {shown(column)}: null {what} at row {row_start + first} ({array.null_count} "
            "in this batch of rows); drop or fill them first"
        )
    try:
        encoded = pc.dictionary_encode(array)
    except pa.ArrowNotImplementedError:
        raise DomainError(
            f"column {shown(column)}: each {what} must be a string, bytes or an integer, got a "
            f"column of {array.type}"
        ) from None
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    try:
        return codes, encoded.dictionary.to_pylist()
    except UnicodeDecodeError:  # a string column holding bytes that are not UTF-8
        raise DomainError(
            f"column {shown(column)}: a {what} is not valid UTF-8 text; fix the encoding of "
            "the column first"
        ) from None


def distinct_strings(
    values: pa.Array | pa.ChunkedArray, column: str, row_start: int, what: str
) -> tuple[NDArray[np.int64], list[Any]]:
    """Row codes into the distinct strings of a string column (:func:`distinct_codes`); any
    other column is refused, saying that ``what`` (``"Bloom encoding hashes"``) strings."""
    array = combined(values)
    kind = array.type.value_type if pa.types.is_dictionary(array.type) else array.type
    if not (
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    ):
        raise DomainError(
            f"column {shown(column)}: {what} strings, got a column of {array.type}; cast it to "
            "strings first"
        )
    return distinct_codes(array, column, "value", row_start)


def report_labels(domain: Domain) -> list[Hashable]:
    """Report categories: every bucket label except the null bucket (shown as null)."""
    return [
        label
        for code, label in enumerate(domain.labels)
        if not (domain.has_null and code == domain.null_code)
    ]


def label_type(domain: Domain) -> pa.DataType:
    """The Arrow type of a column of reported labels (:func:`label_array`)."""
    return pa.dictionary(pa.int32(), pa.array(report_labels(domain)).type)


def label_array(codes: NDArray[np.integer[Any]], domain: Domain) -> pa.DictionaryArray:
    """Report codes as a dictionary column of the reported labels (null bucket: null).

    Every batch gets the same dictionary (all labels, in domain order), so the batches of a file
    concatenate and a reader sees one categorical column.
    """
    null = (codes == domain.null_code) if domain.has_null else None
    indices = pa.array(np.asarray(codes, dtype=np.int32), type=pa.int32(), mask=null)
    # Mechanisms report codes in [0, k) by construction: Arrow's bounds check of every index
    # (a pass as long as the rest of k-RR's output) is skipped.
    return pa.DictionaryArray.from_arrays(indices, pa.array(report_labels(domain)), safe=False)


def is_list(array: pa.Array) -> bool:
    """Whether ``array`` holds set-valued cells (an Arrow list column)."""
    return bool(pa.types.is_list(array.type) or pa.types.is_large_list(array.type))


def single_codes(
    values: pa.Array | pa.ChunkedArray, domain: Domain, column: str, row_start: int, owner: str
) -> NDArray[np.int64]:
    """Codes of a column of one value per row (rows numbered from ``row_start`` in errors);
    a list column is refused, naming ``owner``."""
    array = _single_valued(values, column, owner)
    return value_codes(array, domain, column, lambda row: row_start + row)


def map_code_runs(
    values: pa.Array | pa.ChunkedArray,
    domain: Domain,
    column: str,
    row_start: int,
    owner: str,
    work: Callable[[int, int, NDArray[np.int64]], None],
) -> None:
    """:func:`single_codes` fused with their use: ``work(start, stop, codes)`` for runs of
    :data:`FUSED_ROWS` rows ``[start, stop)`` of ``values``, on the threads of
    :func:`~frameldp.core.parallel.thread_count`. A run's temporaries stay in cache; a bad value
    raises the error a single pass over every row raises (the first bad row, every row's
    counts)."""
    array = _single_valued(values, column, owner)
    if not pa.types.is_dictionary(array.type):
        # One hash pass over the rows; each run then only gathers the codes of its indices
        # (matching the domain once per distinct value, not once per run).
        with contextlib.suppress(pa.ArrowNotImplementedError):  # types without a hash kernel
            array = pc.dictionary_encode(array)
    lookup = None
    if pa.types.is_dictionary(array.type):
        lookup = dictionary_lookup(array.dictionary, domain, column)

    def run(start: int, stop: int) -> None:
        part = array.slice(start, stop - start)
        try:
            codes = value_codes(
                part, domain, column, lambda row: row_start + start + row, lookup=lookup
            )
        except DomainError:  # the error of a single pass over every row (its counts)
            value_codes(array, domain, column, lambda row: row_start + row, lookup=lookup)
            raise
        work(start, stop, codes)

    map_ranges(len(array), FUSED_ROWS, run)


def _single_valued(values: pa.Array | pa.ChunkedArray, column: str, owner: str) -> pa.Array:
    array = combined(values)
    if is_list(array):
        raise ParameterError(
            f"column {shown(column)}: {owner} takes one value per row; use "
            "rappor(..., max_weight=m) for set-valued cells"
        )
    return array


def label_counts(
    reports: pa.Array | pa.ChunkedArray, domain: Domain, column: str
) -> NDArray[np.int64]:
    """Reports per bucket of a column of reported labels (categories, :data:`OTHER`, and null
    for the null bucket)."""
    codes = value_codes(combined(reports), domain.as_reported(), column)
    return np.bincount(codes, minlength=domain.size).astype(np.int64)
