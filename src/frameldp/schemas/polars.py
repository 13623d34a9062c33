"""The schemas as ``pandera.polars`` schemas, and how frameldp runs them on polars frames.

Checks are polars expressions (vectorized, one boolean per row) or a boolean for the whole
column (its dtype). frameldp runs the schema one check at a time (see
:mod:`frameldp.schemas._runner`): pandera's lazy report cannot hold the random bytes of failing
RAPPOR reports. A LazyFrame is validated on its schema (column names and dtypes) and on the
checked columns only, collected with the streaming engine.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

import pandera.polars as pandera_polars
import polars as pl
from pandera.api.polars.types import PolarsData
from pandera.config import ValidationDepth, config_context
from pandera.constants import CHECK_OUTPUT_KEY
from pandera.errors import SchemaError, SchemaErrorReason, SchemaErrors
from polars.datatypes import DataTypeClass

from frameldp.frames.adapters import adapter_for
from frameldp.schemas._declare import (
    MAX_LISTED,
    STRUCTURAL,
    Absent,
    Between,
    Binary,
    ColumnDeclaration,
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

Outcome = pl.LazyFrame | bool
Dtype = pl.DataType | DataTypeClass


# ------------------------------------------------------------------------------- helpers


def _dtype(data: PolarsData) -> pl.DataType:
    return data.lazyframe.collect_schema()[data.key]


def _is_string(dtype: Dtype) -> bool:
    return dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum)


def _typed(values: tuple[Hashable, ...], dtype: Dtype) -> pl.Series:
    """``values`` as a Series of ``dtype``: those the dtype cannot hold are left out (they
    match nothing, as in ``privatize``, which looks values up in the column's own type)."""
    if _is_string(dtype):
        kept: list[Any] = [v for v in values if isinstance(v, str)]
    elif dtype.is_integer() or dtype.is_float():
        numpy_dtype = pl.Series([], dtype=dtype).to_numpy().dtype
        return pl.Series(held_numbers(values, numpy_dtype), dtype=dtype)
    elif dtype == pl.Boolean:
        kept = [v for v in values if isinstance(v, bool)]
    elif dtype == pl.Binary:
        kept = [
            v.encode() if isinstance(v, str) else v for v in values if isinstance(v, str | bytes)
        ]
    else:
        kept = list(values)
    try:
        return pl.Series(kept, strict=False).cast(dtype, strict=False).drop_nulls()
    except (pl.exceptions.PolarsError, TypeError, ValueError):
        return pl.Series([], dtype=dtype)


def _member(expression: pl.Expr, values: tuple[Hashable, ...], dtype: Dtype) -> pl.Expr:
    return expression.is_in(_typed(values, dtype).implode())


# ---------------------------------------------------------------------------- the checks


def _in_domain(rule: InDomain) -> Callable[[PolarsData], Outcome]:
    def check(data: PolarsData) -> Outcome:
        dtype, column = _dtype(data), pl.col(data.key)
        if isinstance(dtype, pl.List):
            if not rule.sets:
                return data.lazyframe.select(column.is_null())  # a list is not a value
            item = pl.element()
            known = item.is_not_null() if rule.open else _member(item, rule.categories, dtype.inner)
            if rule.null_items:
                known = known | item.is_null()
            return data.lazyframe.select(column.list.eval(known.fill_null(False)).list.all())
        if rule.open:
            return True
        return data.lazyframe.select(_member(column, rule.categories, dtype) | column.is_null())

    return check


def _max_weight(rule: MaxWeight) -> Callable[[PolarsData], Outcome]:
    def check(data: PolarsData) -> Outcome:
        dtype, column = _dtype(data), pl.col(data.key)
        if not isinstance(dtype, pl.List):
            return True
        if rule.open:
            # Distinct known items (null counts once, as the null bucket), plus one OTHER
            # bucket for all items outside the domain.
            item = pl.element()
            known = _member(item, rule.categories, dtype.inner).fill_null(True)
            weights = column.list.eval(
                item.filter(known).n_unique() + (~known).any().cast(pl.UInt32)
            ).list.first()
        else:
            weights = column.list.n_unique()
        return data.lazyframe.select((weights <= rule.max_weight) | column.is_null())

    return check


def _strings(data: PolarsData) -> Outcome:
    return _is_string(_dtype(data))


def _absent(data: PolarsData) -> Outcome:
    return False


def _binary(data: PolarsData) -> Outcome:
    return _dtype(data) == pl.Binary


def _packed_width(rule: PackedWidth) -> Callable[[PolarsData], Outcome]:
    def check(data: PolarsData) -> Outcome:
        if _dtype(data) != pl.Binary:
            return True  # the binary check reports it
        column = pl.col(data.key)
        return data.lazyframe.select((column.bin.size() == rule.width) | column.is_null())

    return check


def _padding_bits(rule: PaddingBits) -> Callable[[PolarsData], Outcome]:
    def check(data: PolarsData) -> Outcome:
        if _dtype(data) != pl.Binary:
            return True
        column = pl.col(data.key)
        last = column.bin.get(rule.width - 1, null_on_oob=True)
        clean = (last & rule.mask) == 0
        return data.lazyframe.select((column.bin.size() != rule.width) | clean.fill_null(True))

    return check


def _in_labels(rule: InLabels) -> Callable[[PolarsData], Outcome]:
    def check(data: PolarsData) -> Outcome:
        dtype, column = _dtype(data), pl.col(data.key)
        return data.lazyframe.select(_member(column, rule.labels, dtype) | column.is_null())

    return check


def _integer(data: PolarsData) -> Outcome:
    return _dtype(data).is_integer()


def _in_range(rule: InRange) -> Callable[[PolarsData], Outcome]:
    def check(data: PolarsData) -> Outcome:
        if not _dtype(data).is_integer():
            return True
        column = pl.col(data.key)
        inside = (column >= rule.low) & (column < rule.high)
        return data.lazyframe.select(inside.fill_null(True))

    return check


def _number(data: PolarsData) -> Outcome:
    dtype = _dtype(data)
    return dtype.is_numeric() and dtype != pl.Boolean


def _between(rule: Between) -> Callable[[PolarsData], Outcome]:
    def check(data: PolarsData) -> Outcome:
        dtype = _dtype(data)
        if not (dtype.is_numeric() and dtype != pl.Boolean):
            return True
        column = pl.col(data.key).cast(pl.Float64)
        # polars orders NaN above every number: refuse it apart
        inside = (column >= rule.low) & (column <= rule.high) & ~column.is_nan()
        return data.lazyframe.select(inside.fill_null(True))

    return check


_FUNCTIONS: dict[type[Rule], Callable[[Any], Callable[[PolarsData], Outcome]]] = {
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


def _function(rule: Rule) -> Callable[[PolarsData], Outcome]:
    check = _FUNCTIONS[type(rule)](rule)
    return lambda data: check(PolarsData(_storage_view(data.lazyframe).lazy(), data.key))


def _check(rule: Rule) -> pandera_polars.Check:
    # Failures are counted from the check's output (see _failure): pandera need keep no more
    # cases than are listed.
    return pandera_polars.Check(_function(rule), name=rule.name, n_failure_cases=MAX_LISTED)


def build_schema(declaration: SchemaDeclaration) -> pandera_polars.DataFrameSchema:
    """The ``pandera.polars`` schema of a declaration."""
    columns = {
        column.name: pandera_polars.Column(
            nullable=column.nullable,
            required=column.required,
            checks=[_check(rule) for rule in column.rules],
            description=f"{column.role}" + (f" ({column.mechanism})" if column.mechanism else ""),
        )
        for column in declaration.columns
    }
    return pandera_polars.DataFrameSchema(
        columns, strict=declaration.strict, name=declaration.title
    )


# -------------------------------------------------------------------------------- running


def _check_name(error: SchemaError) -> str:
    check = error.check
    if check is None:
        return str(error.reason_code.name).lower() if error.reason_code else "schema"
    return check if isinstance(check, str) else str(check.name or check)


def _failure(error: SchemaError, frame: pl.DataFrame, schema: pl.Schema) -> Failure:
    check = _check_name(error)
    column = error.column_name
    cases = error.failure_cases
    if check in STRUCTURAL:
        return Failure(cases, check, 1, [(cases, None)])
    if error.reason_code == SchemaErrorReason.CHECK_ERROR:  # the check raised: fail closed
        return Failure(column, check, 1, [(str(cases), None)])
    if not isinstance(cases, pl.DataFrame):  # a whole-column result
        value: object = column if check == Absent.name else str(schema.get(column, ""))
        return Failure(column, check, 1, [(value, None)])
    if check == "not_nullable":
        rows = frame.get_column(column).is_null().arg_true()
    elif isinstance(error.check_output, pl.DataFrame):
        rows = error.check_output.get_column(CHECK_OUTPUT_KEY).not_().arg_true()
    else:
        rows = pl.Series([None] * cases.height)
    values = cases.to_series(0).head(MAX_LISTED).to_list()
    listed = list(zip(values, rows.head(MAX_LISTED).to_list(), strict=False))
    return Failure(column, check, max(len(rows), cases.height), listed)


def _run(
    frame: pl.DataFrame, schema: pl.Schema, declaration: SchemaDeclaration, lazy: bool
) -> list[Failure]:
    # Validation must not be switched off by PANDERA_VALIDATION_* variables: a release that
    # skipped its checks would look validated.
    with config_context(validation_enabled=True, validation_depth=ValidationDepth.SCHEMA_AND_DATA):
        try:
            build_schema(declaration).validate(frame, lazy=lazy)
        except SchemaErrors as errors:
            return [_failure(error, frame, schema) for error in errors.schema_errors]
        except SchemaError as error:
            return [_failure(error, frame, schema)]
    return []


def _storage_view(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """``frame`` with its report columns as their storage values (polars cannot compare
    extension values); lazily for a LazyFrame."""
    view: pl.DataFrame | pl.LazyFrame = adapter_for(frame).storage_view(frame)
    return view


def run_schema(
    frame: pl.DataFrame | pl.LazyFrame, declaration: SchemaDeclaration, *, lazy: bool
) -> list[Failure]:
    """Every failure of ``frame`` against the declaration (the first one when not ``lazy``).

    A LazyFrame's column names are checked on its schema; the checked columns are collected
    (streaming) for the checks on values. Unchecked columns are never read.
    """
    frame = _storage_view(frame)
    if isinstance(frame, pl.LazyFrame):
        schema = frame.collect_schema()
        checked = [
            c.name for c in declaration.columns if c.name in schema and (c.rules or not c.nullable)
        ]
        data = frame.select(checked).collect(engine="streaming")
        names = pl.DataFrame(schema=schema)  # no rows: enough for the column names
    else:
        schema, data, names = frame.schema, frame, frame
    present = set(schema.names())

    def run(piece: SchemaDeclaration, piece_lazy: bool) -> list[Failure]:
        if any(c.rules or not c.nullable for c in piece.columns):
            return _run(data, schema, piece, piece_lazy)
        failures = _run(names, schema, piece, piece_lazy)
        # pandera's polars backend names one column outside a strict schema at a time: allow
        # it and look again, until every such column is named.
        extra = [f.column for f in failures if f.check == "column_in_schema"]
        while piece_lazy and extra:
            allowed = tuple(ColumnDeclaration(c, "passthrough", required=False) for c in extra)
            piece = replace(piece, columns=piece.columns + allowed)
            found = [f for f in _run(names, schema, piece, piece_lazy) if f.check in STRUCTURAL]
            extra = [f.column for f in found if f.check == "column_in_schema"]
            failures += [f for f in found if f.check == "column_in_schema"]
        return failures

    return run_piecewise(declaration, run, present=present, lazy=lazy)
