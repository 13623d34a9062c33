"""The ``.ldp`` namespace on polars DataFrame, LazyFrame and Expr.

Plumbing only. A LazyFrame stays lazy: the plan gains a row index and one ``map_batches`` per
report column, elementwise, so it runs under the streaming engine in bounded memory. Noise is
addressed by row index under a key fixed when the plan is built, so collecting the plan twice
gives identical reports (never fresh noise, which would spend the budget twice).

polars frames cannot carry metadata: the mechanisms are recorded for the very frame ``privatize``
returned (by identity); on a frame derived from it, pass the mechanism to ``debias``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from frameldp.core.mechanisms import BloomRappor, Rappor
from frameldp.core.randomness import (
    KeyedStream,
    RandomSource,
    permutation,
    resolve_source,
    sort_keys,
)
from frameldp.errors import ParameterError
from frameldp.frames._arrow import (
    bloom_counts,
    bloom_privatize,
    estimate_reports,
    privatize_array,
    rappor_array,
)
from frameldp.frames._common import (
    Applicable,
    Estimable,
    FrameMethods,
    IdentityRegistry,
    LedgerLike,
    Release,
    Supported,
    ValueShortcuts,
    charging,
    check_columns,
    cohort_column,
    column_context,
    find_bloom,
    find_mechanism,
    labels_without_null,
    plan_release,
    plan_shuffle,
    require_column,
    shuffle_stream,
    unpack_reports,
)
from frameldp.frames.table import FrequencyTable

__all__ = ["PolarsExprNamespace", "PolarsFrameNamespace", "PolarsLazyFrameNamespace"]

_RECORDED = IdentityRegistry()
_SHUFFLED = IdentityRegistry()  # what shuffle() recorded for the frames it returned
_ROW = "__frameldp_row__"
_KEY = "__frameldp_key__"
_KEY_DTYPE = pl.Struct({"hi": pl.UInt64(), "lo": pl.UInt64()})
_BLOOM = "__frameldp_bloom__"


def _report_dtype(mechanism: Supported, original: pl.DataType | None) -> pl.DataType | None:
    """Binary for RAPPOR; for k-RR an Enum of the labels (or the input's own dtype)."""
    if isinstance(mechanism, Rappor):
        return pl.Binary()
    labels = labels_without_null(mechanism.domain)
    if all(isinstance(label, str) for label in labels):
        if isinstance(original, pl.Enum) and original.categories.to_list() == labels:
            return original
        return pl.Enum(labels)
    return original


def _report_series(
    reports: np.ndarray[Any, Any], mechanism: Supported, name: str, dtype: pl.DataType | None
) -> pl.Series:
    if isinstance(mechanism, Rappor):
        series = pl.Series(name, rappor_array(reports))
        return series.cast(pl.Binary)
    labels = pl.Series(name, list(mechanism.domain.labels), dtype=dtype, strict=False)
    return labels.gather(reports)


def _privatize(
    values: pl.Series,
    mechanism: Supported,
    column: str,
    source: RandomSource,
    row_start: int,
    dtype: pl.DataType | None,
) -> pl.Series:
    with column_context(column):
        reports = privatize_array(
            values.to_arrow(), mechanism, column=column, source=source, row_start=row_start
        )
    return _report_series(reports, mechanism, values.name, dtype)


def _privatize_batch(
    batch: pl.Series,
    mechanism: Supported,
    column: str,
    source: RandomSource,
    dtype: pl.DataType | None,
) -> pl.Series:
    """One streaming batch of ``struct(row, value)``: randomize each contiguous run of rows."""
    rows = batch.struct.field("row").to_numpy().astype(np.int64)
    values = batch.struct.field("value").alias(column)
    if rows.size == 0:
        return _privatize(values, mechanism, column, source, 0, dtype)
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = np.concatenate([[0], breaks]).astype(int)
    stops = np.concatenate([breaks, [rows.size]]).astype(int)
    pieces = [
        _privatize(values.slice(a, b - a), mechanism, column, source, int(rows[a]), dtype)
        for a, b in zip(starts, stops, strict=True)
    ]
    return pl.concat(pieces)


_BLOOM_DTYPE = pl.Struct({"report": pl.Binary(), "cohort": pl.Int64()})


def _bloom(
    values: pl.Series,
    users: pl.Series | None,
    mechanism: BloomRappor,
    column: str,
    source: RandomSource,
    memo: RandomSource | None,
    row_start: int,
) -> tuple[pl.Series, pl.Series]:
    """Bloom RAPPOR reports and cohorts of a run of rows starting at ``row_start``."""
    with column_context(column):
        packed, cohorts = bloom_privatize(
            values.to_arrow(),
            None if users is None else users.to_arrow(),
            mechanism,
            column=column,
            user_column=None if users is None else users.name,
            source=source,
            memo=memo,
            row_start=row_start,
        )
    reports = pl.Series(column, rappor_array(packed)).cast(pl.Binary)
    return reports, pl.Series(cohort_column(column), cohorts, dtype=pl.Int64)


def _bloom_batch(
    batch: pl.Series,
    mechanism: BloomRappor,
    column: str,
    source: RandomSource,
    memo: RandomSource | None,
    user: str | None,
) -> pl.Series:
    """One streaming batch of ``struct(row, value[, user])`` -> ``struct(report, cohort)``."""
    rows = batch.struct.field("row").to_numpy().astype(np.int64)
    values = batch.struct.field("value")
    users = batch.struct.field("user").alias(user) if user is not None else None
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = np.concatenate([[0], breaks]).astype(int)
    stops = np.concatenate([breaks, [rows.size]]).astype(int)
    pieces = []
    for a, b in zip(starts, stops, strict=True):
        run_users = None if users is None else users.slice(a, b - a)
        start = int(rows[a]) if rows.size else 0
        reports, cohorts = _bloom(
            values.slice(a, b - a), run_users, mechanism, column, source, memo, start
        )
        pieces.append(pl.struct(reports.alias("report"), cohorts.alias("cohort"), eager=True))
    return pl.concat(pieces)


def _decode(
    frame: pl.DataFrame,
    column: str | None,
    candidates: Sequence[object],
    mechanism: BloomRappor | None,
    recorded: dict[str, Any],
    significance: float,
    level: float,
) -> FrequencyTable:
    column, found, cohorts, memo = find_bloom(column, mechanism, recorded)
    require_column(frame.columns, column)
    require_column(frame.columns, cohorts)
    with column_context(column):
        counts, sizes = bloom_counts(
            frame[column].to_arrow(), frame[cohorts].to_arrow(), found, column
        )
        return FrequencyTable.decoded(
            found,
            counts,
            sizes,
            candidates,
            memo=memo,
            significance=significance,
            column=column,
            level=level,
            backend="polars",
        )


def _debias(
    frame: pl.DataFrame,
    column: str,
    mechanism: Estimable | None,
    recorded: dict[str, Any],
    level: float,
    namespace: FrameMethods,
) -> FrequencyTable:
    require_column(frame.columns, column)
    found = find_mechanism(column, mechanism, recorded)
    with column_context(column):
        estimate = estimate_reports(frame[column].to_arrow(), found, column=column)
        return FrequencyTable.build(
            estimate,
            found,
            column=column,
            level=level,
            backend="polars",
            privacy=namespace._table_privacy(found),
        )


def _key_batch(rows: pl.Series, stream: KeyedStream) -> pl.Series:
    """The 128-bit shuffle keys of a batch of row indices (row-addressed: batch-invariant)."""
    keys = sort_keys(stream, rows.to_numpy().astype(np.int64))
    return pl.DataFrame({"hi": keys[:, 0], "lo": keys[:, 1]}).to_struct(_KEY)


def _messages(
    frame: pl.DataFrame | pl.LazyFrame, column: str, messages: Any, mechanism: Any
) -> pl.DataFrame:
    dtype = _report_dtype(mechanism, frame.collect_schema()[column])
    return pl.DataFrame([_report_series(messages, mechanism, column, dtype)])


def _bloom_expression(
    column: str, mechanism: BloomRappor, source: RandomSource, release: Release, user: str | None
) -> pl.Expr:
    """``struct(report, cohort)`` of a Bloom RAPPOR column, computed batch by batch."""
    fields = [pl.col(_ROW).alias("row"), pl.col(column).alias("value")]
    if user is not None:
        fields.append(pl.col(user).alias("user"))
    batch = partial(
        _bloom_batch,
        mechanism=mechanism,
        column=column,
        source=source,
        memo=release.memo,
        user=user,
    )
    return (
        pl.struct(fields)
        .map_batches(batch, return_dtype=_BLOOM_DTYPE, is_elementwise=True)
        .alias(_BLOOM + column)
    )


@pl.api.register_dataframe_namespace("ldp")
class PolarsFrameNamespace(FrameMethods):
    """``df.ldp`` on a polars DataFrame."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self._frame = frame

    def _specs(self) -> dict[str, Any]:
        return _RECORDED.get(self._frame)

    def _shuffled(self) -> dict[str, Any]:
        return _SHUFFLED.get(self._frame)

    def _num_rows(self) -> int:
        return self._frame.height

    def shuffle(
        self, *, keep: Sequence[str] | str = (), key: bytes | None = None, seed: int | None = None
    ) -> pl.DataFrame:
        """The report columns only, rows in a keyed uniformly random order (see the pandas
        accessor's ``shuffle``; the same key gives the same order on every backend)."""
        specs = _RECORDED.get(self._frame)
        columns, record = plan_shuffle(self._frame.columns, specs, keep, self._frame.height)
        order = permutation(shuffle_stream(key, seed), self._frame.height)
        out = self._frame.select(columns)[order]
        _RECORDED.put(out, specs)
        _SHUFFLED.put(out, record)
        return out

    def _messages_frame(self, column: str, messages: Any, mechanism: Any) -> pl.DataFrame:
        out = _messages(self._frame, column, messages, mechanism)
        _RECORDED.put(out, {column: mechanism.to_spec()})
        return out

    def _column_arrow(self, column: str) -> pa.Array | pa.ChunkedArray:
        return self._frame[column].to_arrow()

    def _columns(self) -> list[str]:
        return self._frame.columns

    def privatize(
        self,
        mechanisms: Mapping[str, Applicable],
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
        user: str | None = None,
        memo_key: bytes | None = None,
    ) -> pl.DataFrame:
        """Replace each column by its reports; one fresh key for the call unless given.

        With ``ledger`` and ``budget``, the release is checked against the budget first and
        recorded once the reports exist. Bloom RAPPOR columns also get a ``{column}_cohort``
        column (see :meth:`rappor` for ``user`` and ``memo_key``).
        """
        check_columns(self._frame.columns, mechanisms)
        source = resolve_source(key, seed)
        release = plan_release(
            self._frame.columns, mechanisms, source=source, user=user, memo_key=memo_key
        )
        with charging(ledger, budget, release):
            reports: list[pl.Series] = []
            for column, mechanism in mechanisms.items():
                if isinstance(mechanism, BloomRappor):
                    users = None if user is None else self._frame[user]
                    reports.extend(
                        _bloom(
                            self._frame[column], users, mechanism, column, source, release.memo, 0
                        )
                    )
                else:
                    dtype = _report_dtype(mechanism, self._frame.schema[column])
                    reports.append(
                        _privatize(self._frame[column], mechanism, column, source, 0, dtype)
                    )
        out = self._frame.with_columns(reports)
        _RECORDED.put(out, {**_RECORDED.get(self._frame), **release.specs})
        return out

    def decode(
        self,
        column: str | None = None,
        *,
        candidates: Sequence[object],
        mechanism: BloomRappor | None = None,
        significance: float = 0.05,
        level: float = 0.95,
    ) -> FrequencyTable:
        """Decode Bloom RAPPOR reports against candidate strings (as the pandas accessor)."""
        return _decode(
            self._frame,
            column,
            candidates,
            mechanism,
            _RECORDED.get(self._frame),
            significance,
            level,
        )

    def debias(
        self, column: str, mechanism: Estimable | None = None, *, level: float = 0.95
    ) -> FrequencyTable:
        """Debiased frequency table of a report column."""
        return _debias(self._frame, column, mechanism, _RECORDED.get(self._frame), level, self)

    def unpack(self, column: str, mechanism: Rappor | None = None) -> pl.DataFrame:
        """RAPPOR reports as one 0/1 ``uint8`` column per bucket, named ``column=label``."""
        found = find_mechanism(column, mechanism, _RECORDED.get(self._frame))
        bits, names = unpack_reports(self._frame[column].to_arrow(), found, column)
        return pl.DataFrame(bits, schema=names, orient="row")


@pl.api.register_lazyframe_namespace("ldp")
class PolarsLazyFrameNamespace(FrameMethods):
    """``lf.ldp`` on a polars LazyFrame: lazy, streaming, identical on every collect."""

    def __init__(self, frame: pl.LazyFrame) -> None:
        self._frame = frame

    def _specs(self) -> dict[str, Any]:
        return _RECORDED.get(self._frame)

    def _column_arrow(self, column: str) -> pa.Array | pa.ChunkedArray:
        return self._frame.select(column).collect(engine="streaming").to_series().to_arrow()

    def _shuffled(self) -> dict[str, Any]:
        return _SHUFFLED.get(self._frame)

    def _num_rows(self) -> int:
        return int(self._frame.select(pl.len()).collect(engine="streaming").item())

    def shuffle(
        self, *, keep: Sequence[str] | str = (), key: bytes | None = None, seed: int | None = None
    ) -> pl.LazyFrame:
        """Lazily: the report columns only, sorted by keyed 128-bit per-row keys (a uniformly
        random order, the same as the eager and pandas ``shuffle`` for the same key). The keys
        are addressed by row index, so the plan collects to the same order every time."""
        specs = _RECORDED.get(self._frame)
        columns, record = plan_shuffle(self._columns(), specs, keep, None)
        keys = pl.col(_ROW).map_batches(
            partial(_key_batch, stream=shuffle_stream(key, seed)),
            return_dtype=_KEY_DTYPE,
            is_elementwise=True,
        )
        out = (
            self._frame.select(columns)
            .with_row_index(_ROW)
            .with_columns(keys.alias(_KEY))
            .sort(
                pl.col(_KEY).struct.field("hi"),
                pl.col(_KEY).struct.field("lo"),
                maintain_order=True,
            )
            .drop(_ROW, _KEY)
        )
        _RECORDED.put(out, specs)
        _SHUFFLED.put(out, record)
        return out

    def _messages_frame(self, column: str, messages: Any, mechanism: Any) -> pl.LazyFrame:
        # The messages of all people are permuted together: there is nothing to stream.
        out = _messages(self._frame, column, messages, mechanism).lazy()
        _RECORDED.put(out, {column: mechanism.to_spec()})
        return out

    def _columns(self) -> list[str]:
        return self._frame.collect_schema().names()

    def privatize(
        self,
        mechanisms: Mapping[str, Applicable],
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
        user: str | None = None,
        memo_key: bytes | None = None,
    ) -> pl.LazyFrame:
        """Add the randomization to the plan; the key is drawn now, so every collect agrees.

        With ``ledger`` and ``budget`` the release is charged now, when the plan is built: its
        reports are fixed by the key drawn here, however many times the plan is collected.
        """
        schema = self._frame.collect_schema()
        check_columns(schema.names(), mechanisms)
        source = resolve_source(key, seed)
        release = plan_release(
            schema.names(), mechanisms, source=source, user=user, memo_key=memo_key
        )
        with charging(ledger, budget, release):
            expressions, blooms = [], []
            for column, mechanism in mechanisms.items():
                if isinstance(mechanism, BloomRappor):
                    blooms.append(column)
                    expressions.append(_bloom_expression(column, mechanism, source, release, user))
                    continue
                dtype = _report_dtype(mechanism, schema[column])
                batch = partial(
                    _privatize_batch, mechanism=mechanism, column=column, source=source, dtype=dtype
                )
                expressions.append(
                    pl.struct(pl.col(_ROW).alias("row"), pl.col(column).alias("value"))
                    .map_batches(batch, return_dtype=dtype, is_elementwise=True)
                    .alias(column)
                )
            out = self._frame.with_row_index(_ROW).with_columns(expressions)
            unpacked = [
                field
                for column in blooms
                for field in (
                    pl.col(_BLOOM + column).struct.field("report").alias(column),
                    pl.col(_BLOOM + column).struct.field("cohort").alias(cohort_column(column)),
                )
            ]
            out = out.with_columns(unpacked).drop(_ROW, *(_BLOOM + c for c in blooms))
        _RECORDED.put(out, {**_RECORDED.get(self._frame), **release.specs})
        return out

    def decode(
        self,
        column: str | None = None,
        *,
        candidates: Sequence[object],
        mechanism: BloomRappor | None = None,
        significance: float = 0.05,
        level: float = 0.95,
    ) -> FrequencyTable:
        """Collect the report and cohort columns (streaming) and decode them."""
        recorded = _RECORDED.get(self._frame)
        column, found, cohorts, _ = find_bloom(column, mechanism, recorded)
        require_column(self._columns(), column)
        require_column(self._columns(), cohorts)
        frame = self._frame.select(column, cohorts).collect(engine="streaming")
        return _decode(frame, column, candidates, found, recorded, significance, level)

    def debias(
        self, column: str, mechanism: Estimable | None = None, *, level: float = 0.95
    ) -> FrequencyTable:
        """Collect only ``column`` (streaming) and debias it."""
        require_column(self._columns(), column)
        recorded = _RECORDED.get(self._frame)
        found = find_mechanism(column, mechanism, recorded)
        frame = self._frame.select(column).collect(engine="streaming")
        return _debias(frame, column, found, recorded, level, self)

    def unpack(self, column: str, mechanism: Rappor | None = None) -> pl.DataFrame:
        """Collect ``column`` (streaming) as one 0/1 ``uint8`` column per bucket."""
        require_column(self._columns(), column)
        found = find_mechanism(column, mechanism, _RECORDED.get(self._frame))
        frame = self._frame.select(column).collect(engine="streaming")
        return PolarsFrameNamespace(frame).unpack(column, found)  # type: ignore[arg-type]


@pl.api.register_expr_namespace("ldp")
class PolarsExprNamespace(ValueShortcuts):
    """``pl.col(c).ldp`` : reports as an expression, for ``select`` / ``with_columns``.

    Rows are addressed by their position in the evaluated column.
    """

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    @property
    def _name(self) -> str:
        return self._expr.meta.output_name(raise_if_undetermined=False) or "reports"

    def _values_arrow(self) -> pa.Array | pa.ChunkedArray:
        raise ParameterError(
            f"column {self._name!r}: domain='infer' needs the data; an expression has none. "
            "Pass the public domain, or use df.ldp.rappor / df.ldp.krr"
        )

    def privatize(
        self,
        mechanism: Supported,
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> pl.Expr:
        """Reports of this expression under ``mechanism``.

        With ``ledger`` and ``budget`` the release is charged when the expression is built (its
        key is drawn here, so every evaluation gives the same reports).
        """
        name = self._name
        check_columns([name], {name: mechanism}, frame=False)
        source = resolve_source(key, seed)
        dtype = _report_dtype(mechanism, None)
        batch = partial(
            _privatize_batch, mechanism=mechanism, column=name, source=source, dtype=dtype
        )
        rows = pl.int_range(pl.len(), dtype=pl.Int64).alias("row")
        with charging(ledger, budget, {name: mechanism}):
            return (
                pl.struct(rows, self._expr.alias("value"))
                .map_batches(batch, return_dtype=dtype)
                .alias(name)
            )
