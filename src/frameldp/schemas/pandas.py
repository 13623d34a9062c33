"""The schemas as ``pandera.pandas`` schemas, and how frameldp runs them on pandas frames.

Checks look at the columns through Arrow, as ``privatize`` does (zero-copy for Arrow-backed and
categorical columns), so a value passes the input schema exactly when ``privatize`` accepts it.
Every check is vectorized and returns one boolean per row, or one boolean for the whole column
(its dtype); nulls pass every check but ``not_nullable``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pandera_pandas
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray
from pandera.config import ValidationDepth, config_context
from pandera.errors import SchemaError, SchemaErrorReason, SchemaErrors

from frameldp.core.sorting import sorted_distinct
from frameldp.frames.adapters import adapter_for
from frameldp.schemas._declare import (
    MAX_LISTED,
    STRUCTURAL,
    Absent,
    Between,
    Binary,
    Failure,
    InDomain,
    InLabels,
    InRange,
    Integer,
    MaxWeight,
    Number,
    PackedWidth,
    PaddingBits,
    ReportRange,
    Rule,
    SchemaDeclaration,
    Strings,
    held_numbers,
)
from frameldp.schemas._runner import run_piecewise

__all__ = ["build_schema", "run_schema"]

_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


# ------------------------------------------------------------------------- Arrow helpers


def _arrow(series: pd.Series) -> pa.Array:
    """The column as one Arrow array (NaN is null), as ``privatize`` reads it."""
    array = pa.Array.from_pandas(series)
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _is_list(kind: pa.DataType) -> bool:
    return bool(pa.types.is_list(kind) or pa.types.is_large_list(kind))


def _nulls(array: pa.Array) -> NDArray[np.bool_]:
    return np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _member(array: pa.Array, values: tuple[Hashable, ...]) -> NDArray[np.bool_]:
    """Whether each value is one of ``values`` (nulls: False).

    ``values`` that the column's type cannot represent match nothing, as in ``privatize``.
    """
    if pa.types.is_dictionary(array.type):
        lookup = np.append(_member(array.dictionary, values), False)
        indices = array.indices.fill_null(len(array.dictionary))
        return np.asarray(lookup[indices.to_numpy(zero_copy_only=False).astype(np.int64)])
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        held = held_numbers(values, array.type.to_pandas_dtype())
        found = pc.is_in(array, value_set=pa.array(held, type=array.type)).fill_null(False)
        return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)
    try:
        value_set = pa.array(list(values), type=array.type)
    except (*_ARROW_ERRORS, OverflowError):
        return np.zeros(len(array), dtype=bool)
    found = pc.is_in(array, value_set=value_set).fill_null(False)
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


def _items(array: pa.Array) -> tuple[pa.Array, NDArray[np.int64]]:
    """Items of the non-null cells of a list column, and the row of each item.

    A null list slot may still span items (polars produces such slots): they are not the
    row's value and are dropped, as in ``privatize``.
    """
    offsets = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    values = array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    lengths = np.diff(offsets)
    null_rows = _nulls(array)
    if null_rows.any():
        values = values.filter(pa.array(np.repeat(~null_rows, lengths)))
        lengths = np.where(null_rows, 0, lengths)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values, np.repeat(np.arange(len(array), dtype=np.int64), lengths)


def _mixed_member(series: pd.Series, values: tuple[Hashable, ...]) -> NDArray[np.bool_]:
    """Membership in an object column Arrow cannot type (mixed values): pandas' hash lookup,
    then, if cells are unhashable (lists among scalars), one lookup per cell."""
    try:
        return np.asarray(series.isin(list(values)), dtype=bool)
    except TypeError:
        allowed = set(values)

        def member(value: object) -> bool:
            try:
                return value in allowed
            except TypeError:
                return False

        return np.fromiter(map(member, series.array), dtype=bool, count=len(series))


def _rows(series: pd.Series, ok: NDArray[np.bool_]) -> pd.Series:
    return pd.Series(ok, index=series.index, dtype=bool)


# ---------------------------------------------------------------------------- the checks


def _in_domain(rule: InDomain) -> Callable[[pd.Series], Any]:
    def check(series: pd.Series) -> pd.Series | bool:
        try:
            array = _arrow(series)
        except _ARROW_ERRORS:
            if rule.open:
                return True
            return _rows(series, _mixed_member(series, rule.categories) | series.isna().to_numpy())
        nulls = _nulls(array)
        if _is_list(array.type):
            if not rule.sets:
                return _rows(series, nulls)  # one value per row: a list is not a value
            values, rows = _items(array)
            item_nulls = _nulls(values)
            known = (~item_nulls if rule.open else _member(values, rule.categories)) | (
                item_nulls & rule.null_items
            )
            bad = np.bincount(rows[~known], minlength=len(array)) > 0
            return _rows(series, ~bad)
        if rule.open:
            return True
        return _rows(series, _member(array, rule.categories) | nulls)

    return check


def _may_hold_lists(series: pd.Series) -> bool:
    """Whether cells may be lists, without converting the column (lists are "mixed")."""
    dtype = series.dtype
    if isinstance(dtype, pd.ArrowDtype):
        return _is_list(dtype.pyarrow_dtype)
    return bool(
        pd.api.types.is_object_dtype(dtype)
        and pd.api.types.infer_dtype(series, skipna=True) == "mixed"
    )


def _max_weight(rule: MaxWeight) -> Callable[[pd.Series], Any]:
    def check(series: pd.Series) -> pd.Series | bool:
        if not _may_hold_lists(series):
            return True
        try:
            array = _arrow(series)
        except _ARROW_ERRORS:
            return True
        if not _is_list(array.type):
            return True
        values, rows = _items(array)
        size = len(rule.categories)
        codes = np.full(len(values), size + 1, dtype=np.int64)  # outside: the OTHER bucket
        try:
            value_set = pa.array(list(rule.categories), type=values.type)
            found = pc.index_in(values, value_set=value_set).fill_null(-1)
            found_codes = found.to_numpy(zero_copy_only=False).astype(np.int64)
            codes = np.where(found_codes >= 0, found_codes, codes)
        except (*_ARROW_ERRORS, OverflowError):
            pass
        codes[_nulls(values)] = size  # the null bucket
        keys = sorted_distinct(rows * (size + 2) + codes)
        weights = np.bincount(keys // (size + 2), minlength=len(array))
        return _rows(series, weights <= rule.max_weight)

    return check


def _string_categories(categories: pd.Index) -> bool:
    return pd.api.types.infer_dtype(categories, skipna=True) in ("string", "empty")


def _strings(series: pd.Series) -> bool:
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _string_categories(dtype.categories)
    if isinstance(dtype, pd.StringDtype):
        return True
    if isinstance(dtype, pd.ArrowDtype):
        kind = dtype.pyarrow_dtype
        return bool(
            pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_string_view(kind)
        )
    if pd.api.types.is_object_dtype(dtype):
        # Not "empty": privatize cannot tell the type of an object column without a value.
        return bool(pd.api.types.infer_dtype(series, skipna=True) == "string")
    return False


def _binary_type(series: pd.Series) -> pa.DataType | None:
    """The Arrow binary type of a column of bytes, or None when it does not hold bytes."""
    dtype = series.dtype
    if isinstance(dtype, pd.ArrowDtype):
        kind = dtype.pyarrow_dtype
        binary = (
            pa.types.is_fixed_size_binary(kind)
            or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind)
            or pa.types.is_binary_view(kind)
        )
        return kind if binary else None
    bytes_like = ("bytes", "empty")
    if (
        pd.api.types.is_object_dtype(dtype)
        and pd.api.types.infer_dtype(series, skipna=True) in bytes_like
    ):
        return pa.binary()
    return None


def _binary(series: pd.Series) -> bool:
    return _binary_type(series) is not None


def _packed_width(rule: PackedWidth) -> Callable[[pd.Series], Any]:
    def check(series: pd.Series) -> pd.Series | bool:
        kind = _binary_type(series)
        if kind is None:
            return True  # the binary check reports it
        if pa.types.is_fixed_size_binary(kind):
            return bool(kind.byte_width == rule.width)
        array = _arrow(series)
        lengths = pc.binary_length(array).fill_null(rule.width)
        return _rows(series, lengths.to_numpy(zero_copy_only=False) == rule.width)

    return check


def _last_bytes(array: pa.Array, width: int) -> tuple[NDArray[np.uint8], NDArray[np.bool_]]:
    """The last byte of every value exactly ``width`` bytes long, and which values are."""
    n = len(array)
    if pa.types.is_fixed_size_binary(array.type):
        if array.type.byte_width != width:
            return np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=bool)
        start = array.offset * width
        data = np.frombuffer(array.buffers()[1], dtype=np.uint8)[start : start + n * width]
        return data.reshape(n, width)[:, -1], ~_nulls(array)
    large = array.cast(pa.large_binary())
    offsets = np.frombuffer(large.buffers()[1], dtype=np.int64)[large.offset : large.offset + n + 1]
    full = (np.diff(offsets) == width) & ~_nulls(large)
    last = np.zeros(n, dtype=np.uint8)
    if full.any():
        data = np.frombuffer(large.buffers()[2], dtype=np.uint8)
        last[full] = data[offsets[1:][full] - 1]
    return last, full


def _padding_bits(rule: PaddingBits) -> Callable[[pd.Series], Any]:
    def check(series: pd.Series) -> pd.Series | bool:
        if _binary_type(series) is None:
            return True
        last, full = _last_bytes(_arrow(series), rule.width)
        return _rows(series, ~full | ((last & rule.mask) == 0))

    return check


def _in_labels(rule: InLabels) -> Callable[[pd.Series], Any]:
    def check(series: pd.Series) -> pd.Series | bool:
        try:
            array = _arrow(series)
        except _ARROW_ERRORS:
            return _rows(series, _mixed_member(series, rule.labels) | series.isna().to_numpy())
        return _rows(series, _member(array, rule.labels) | _nulls(array))

    return check


def _integer(series: pd.Series) -> bool:
    return bool(pd.api.types.is_integer_dtype(series.dtype))


def _in_range(rule: InRange) -> Callable[[pd.Series], Any]:
    def check(series: pd.Series) -> pd.Series | bool:
        if not _integer(series):
            return True
        array = _arrow(series)
        inside = pc.and_(pc.greater_equal(array, rule.low), pc.less(array, rule.high)).fill_null(
            True
        )
        return _rows(series, np.asarray(inside.to_numpy(zero_copy_only=False), dtype=bool))

    return check


def _number(series: pd.Series) -> bool:
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return False
    if pd.api.types.is_numeric_dtype(dtype):
        return True
    try:
        kind = _arrow(series).type
    except _ARROW_ERRORS:
        return False
    return bool(pa.types.is_decimal(kind))


def _between(rule: Between) -> Callable[[pd.Series], Any]:
    def check(series: pd.Series) -> pd.Series | bool:
        if not _number(series):
            return True
        array = pc.cast(_arrow(series), pa.float64())
        inside = pc.and_(pc.greater_equal(array, rule.low), pc.less_equal(array, rule.high))
        return _rows(
            series, np.asarray(inside.fill_null(True).to_numpy(zero_copy_only=False), bool)
        )

    return check


def _absent(series: pd.Series) -> bool:
    return False


_FUNCTIONS: dict[type[Rule], Callable[[Any], Callable[[pd.Series], Any]]] = {
    InDomain: _in_domain,
    MaxWeight: _max_weight,
    Strings: lambda _: _strings,
    Absent: lambda _: _absent,
    Binary: lambda _: _binary,
    PackedWidth: _packed_width,
    PaddingBits: _padding_bits,
    InLabels: _in_labels,
    Integer: lambda _: _integer,
    InRange: _in_range,
    ReportRange: _in_range,
    Number: lambda _: _number,
    Between: _between,
}
"""Each rule's vectorized check: a boolean per row, or one for the whole column."""


def _function(rule: Rule) -> Callable[[pd.Series], Any]:
    check = _FUNCTIONS[type(rule)](rule)
    return lambda series: check(adapter_for(series).storage_view(series))


def _check(rule: Rule) -> pandera_pandas.Check:
    # Nulls are judged by not_nullable alone: the checks see every row (no dropna copy).
    # pandera formats every failure case into its message: keep the first MAX_LISTED (the
    # total is counted again, see _recount).
    return pandera_pandas.Check(
        _function(rule), name=rule.name, ignore_na=False, n_failure_cases=MAX_LISTED
    )


def build_schema(declaration: SchemaDeclaration) -> pandera_pandas.DataFrameSchema:
    """The ``pandera.pandas`` schema of a declaration."""
    columns = {
        column.name: pandera_pandas.Column(
            nullable=column.nullable,
            required=column.required,
            checks=[_check(rule) for rule in column.rules],
            description=f"{column.role}" + (f" ({column.mechanism})" if column.mechanism else ""),
        )
        for column in declaration.columns
    }
    return pandera_pandas.DataFrameSchema(
        columns, strict=declaration.strict, name=declaration.title
    )


# -------------------------------------------------------------------------------- running


def _whole_column_value(frame: pd.DataFrame, column: Any, check: str) -> object:
    if check in (*STRUCTURAL, Absent.name):
        return column
    return str(frame[column].dtype) if column in frame.columns else None


def _recount(
    failures: list[Failure], frame: pd.DataFrame, declaration: SchemaDeclaration
) -> list[Failure]:
    """Exact counts for checks that listed as many failures as pandera was let report."""
    rules = {(c.name, rule.name): rule for c in declaration.columns for rule in c.rules}
    for failure in failures:
        rule = rules.get((failure.column, failure.check))
        if rule is not None and failure.count >= MAX_LISTED:
            result = _function(rule)(frame[failure.column])
            if isinstance(result, pd.Series):
                failure.count = int((~result.to_numpy(dtype=bool)).sum())
    return failures


def _failures_from_table(table: pd.DataFrame, frame: pd.DataFrame) -> list[Failure]:
    """pandera's lazy failure-case table, grouped by column and check (in pandera's order)."""
    structural = table["check"].isin(STRUCTURAL)
    table = table.assign(column=table["column"].where(~structural, table["failure_case"]))
    failures: list[Failure] = []
    for (column, check), group in table.groupby(["column", "check"], sort=False, dropna=False):
        cases: list[tuple[object, object]] = []
        head = group.head(MAX_LISTED)
        for value, row in zip(head["failure_case"], head["index"], strict=True):
            if check in STRUCTURAL:
                cases.append((column, None))
            elif _missing(row) and isinstance(value, bool | np.bool_):
                cases.append((_whole_column_value(frame, column, str(check)), None))
            else:
                cases.append((_plain(value), None if _missing(row) else _plain(row)))
        failures.append(Failure(column, str(check), len(group), cases))
    return failures


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA


def _plain(value: object) -> object:
    """numpy scalars as Python scalars; pandas' missing markers as None."""
    if isinstance(value, float) and np.isnan(value):
        return None  # pandas' null in float and object columns
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, np.ndarray):
        return value.tolist()
    return None if value is pd.NA or value is pd.NaT else value


def _check_name(error: SchemaError) -> str:
    check = error.check
    if check is None:
        return str(error.reason_code.name).lower() if error.reason_code else "schema"
    return check if isinstance(check, str) else str(check.name or check)


def _failure_from_error(error: SchemaError, frame: pd.DataFrame) -> Failure:
    """The one failure a non-lazy run stops at."""
    check = _check_name(error)
    cases = error.failure_cases
    column = error.column_name
    if isinstance(cases, pd.DataFrame) and "failure_case" in cases.columns:
        rows = cases["index"] if "index" in cases.columns else [None] * len(cases)
        listed = [
            (_plain(value), None if _missing(row) else _plain(row))
            for value, row in zip(cases["failure_case"].head(MAX_LISTED), rows, strict=False)
        ]
        return Failure(column, check, len(cases), listed)
    if check in STRUCTURAL:
        return Failure(cases, check, 1, [(cases, None)])
    if error.reason_code == SchemaErrorReason.CHECK_ERROR:  # the check raised: fail closed
        return Failure(column, check, 1, [(str(cases), None)])
    return Failure(column, check, 1, [(_whole_column_value(frame, column, check), None)])


def _validate(frame: pd.DataFrame, schema: pandera_pandas.DataFrameSchema, lazy: bool) -> None:
    # Validation must not be switched off by PANDERA_VALIDATION_* variables: a release that
    # skipped its checks would look validated. inplace=True: nothing is coerced, so nothing
    # is written, and the frame is not copied.
    with config_context(validation_enabled=True, validation_depth=ValidationDepth.SCHEMA_AND_DATA):
        schema.validate(frame, lazy=lazy, inplace=True)


def _run(frame: pd.DataFrame, declaration: SchemaDeclaration, lazy: bool) -> list[Failure]:
    try:
        _validate(frame, build_schema(declaration), lazy)
    except SchemaErrors as errors:
        return _recount(_failures_from_table(errors.failure_cases, frame), frame, declaration)
    except SchemaError as error:
        return _recount([_failure_from_error(error, frame)], frame, declaration)
    return []


def run_schema(frame: pd.DataFrame, declaration: SchemaDeclaration, *, lazy: bool) -> list[Failure]:
    """Every failure of ``frame`` against the declaration (the first one when not ``lazy``).

    Report columns are checked on their storage values (Arrow has no kernels for extension
    types); the frame itself is not modified."""
    frame = adapter_for(frame).storage_view(frame)
    try:
        return _run(frame, declaration, lazy)
    except Exception:  # pandera could not build its report: run the checks one at a time
        return run_piecewise(
            declaration,
            lambda piece, piece_lazy: _run(frame, piece, piece_lazy),
            present=set(frame.columns),
            lazy=lazy,
        )
