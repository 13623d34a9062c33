"""The ``.ldp`` namespace on polars DataFrame, LazyFrame and Expr.

Plumbing only. Which rows may share noise (see :mod:`frameldp.core.randomness`):

* **DataFrame**: one key per call; rows are addressed by their position in the frame.
* **LazyFrame**: the privatized plan is a Python scan (``register_io_source``) over the input
  plan. Every execution (``collect``, ``sink_*``, a plan used twice) runs the scan once: it
  draws a fresh key (unless ``key=``/``seed=`` was given), streams the input batch by batch,
  numbers the rows itself (global positions, whatever the batch sizes), randomizes them and
  charges the ledger once, when the first reports are about to leave the scan. A plan collected
  twice therefore releases twice, with independent noise, and is charged twice. A caller's key
  is held by reference (:class:`~frameldp.core.randomness.RandomSource` pickles as a handle):
  ``pickle.dumps`` or ``LazyFrame.serialize`` of the plan never contains it.
* **Expr**: polars may evaluate an expression once per frame, group or window, and its row
  positions restart in each: every evaluation draws a fresh key (and is charged, when a ledger
  is given). ``key=``/``seed=`` are refused, since no global row position is known there.

polars frames cannot carry metadata: the mechanisms are recorded for the very frame ``privatize``
returned (by identity); on a frame derived from it, pass the mechanism to ``debias``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from polars.io.plugins import register_io_source

from frameldp.core.columns import check_report_labels, report_labels
from frameldp.core.mechanisms import Mechanism
from frameldp.core.randomness import (
    RandomSource,
    resolve_source,
)
from frameldp.errors import DomainError, ParameterError, shown
from frameldp.frames._arrow import estimate_reports, privatize_values, statistic_of
from frameldp.frames._common import (
    FrameMethods,
    IdentityRegistry,
    LedgerLike,
    ReleasePlan,
    ValueShortcuts,
    charging,
    check_budget,
    check_columns,
    column_context,
    companion_columns,
    find_decoder,
    find_mechanism,
    is_seeded,
    mechanisms_of,
    memoizes,
    plan_release,
    plan_shuffle,
    report_names,
    require_column,
    shuffle_keys,
    shuffle_order,
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


_KIND_DTYPES: dict[str | None, pl.DataType] = {
    "int": pl.Int64(),
    "float": pl.Float64(),
    "bool": pl.Boolean(),
    None: pl.Null(),
}


def _arrow_of(series: pl.Series, column: str) -> pa.Array | pa.ChunkedArray:
    """The column as Arrow; a polars type Arrow cannot take (``Int128``, ``Object``) raises a
    :class:`DomainError` naming the column."""
    try:
        return series.to_arrow()
    except (pa.ArrowException, pl.exceptions.PolarsError, UnicodeEncodeError) as error:
        raise DomainError(
            f"column {shown(column)}: polars type {series.dtype} cannot be read as Arrow "
            f"({shown(str(error), 120)}); cast it to a 64-bit integer, float or string first"
        ) from None


def _report_dtype(mechanism: Mechanism, original: pl.DataType | None, column: str) -> pl.DataType:
    """The polars dtype of a report column (from its Arrow storage type): Binary for bit
    vectors; for reported labels an Enum of string labels (the input's own Enum when it has
    exactly those categories), else the dtype that holds every label exactly (a report moved
    to 1.5 reads 1.5 even on an integer column)."""
    kind = mechanism.report_columns(column)[column]
    if pa.types.is_fixed_size_binary(kind) or pa.types.is_binary(kind):
        return pl.Binary()
    if not pa.types.is_dictionary(kind):
        return _dtype_of(kind)
    domain = mechanism.domain  # type: ignore[attr-defined]
    check_report_labels(domain, column)
    if pa.types.is_string(kind.value_type):
        labels = report_labels(domain)
        if isinstance(original, pl.Enum) and original.categories.to_list() == labels:
            return original
        return pl.Enum(labels)
    return _KIND_DTYPES[domain.kind]


def _dtype_of(kind: pa.DataType) -> pl.DataType:
    """The polars dtype of a column of Arrow type ``kind``."""
    return pl.from_arrow(pa.array([], type=kind)).dtype  # type: ignore[union-attr]


def _report_dtypes(
    mechanisms: Mapping[str, Mechanism], schema: Mapping[str, pl.DataType]
) -> dict[str, pl.DataType]:
    """The dtype of every report column, the companion columns' included."""
    dtypes: dict[str, pl.DataType] = {}
    for column, mechanism in mechanisms.items():
        dtypes[column] = _report_dtype(mechanism, schema[column], column)
        for name, kind in list(mechanism.report_columns(column).items())[1:]:
            dtypes[name] = _dtype_of(kind)
    return dtypes


def _native(array: pa.Array, name: str, dtype: pl.DataType) -> pl.Series:
    """The polars Series of an Arrow report column, of ``dtype``."""
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_fixed_size_binary(array.type):
        array = array.cast(pa.binary())
    return pl.Series(name, array).cast(dtype, strict=True)


def _privatize_frame(
    frame: pl.DataFrame,
    mechanisms: Mapping[str, Mechanism],
    *,
    source: RandomSource,
    release: ReleasePlan,
    user: str | None,
    row_start: int,
    dtypes: Mapping[str, pl.DataType],
) -> pl.DataFrame:
    """``frame`` (rows ``row_start, ...`` of the whole input) with each column replaced by its
    report columns. Every column is randomized before anything is assembled."""
    reports: list[pl.Series] = []
    for column, mechanism in mechanisms.items():
        users = _arrow_of(frame[user], user) if user is not None and memoizes(mechanism) else None
        with column_context(column):
            produced = privatize_values(
                _arrow_of(frame[column], column),
                mechanism,
                column=column,
                source=source,
                row_start=row_start,
                users=users,
                user_column=user,
                memo=release.memo,
            )
        reports += [_native(array, name, dtypes[name]) for name, array in produced.items()]
    return frame.with_columns(reports)


def _privatized_scan(
    frame: pl.LazyFrame,
    mechanisms: Mapping[str, Mechanism],
    *,
    keyed: RandomSource | None,
    release: ReleasePlan,
    user: str | None,
    dtypes: Mapping[str, pl.DataType],
    ledger: LedgerLike | None,
    budget: str | None,
) -> pl.LazyFrame:
    """A LazyFrame whose every execution privatizes ``frame`` afresh (see the module
    docstring): a fresh key per execution unless ``keyed``, rows numbered by the scan, one
    ledger charge per execution."""
    privatize = partial(_privatize_frame, release=release, user=user, dtypes=dtypes)
    empty = frame.clear().collect()
    schema = privatize(
        empty, mechanisms=mechanisms, source=RandomSource.fresh(), row_start=0
    ).schema
    inputs = empty.columns

    def scan(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        source = keyed or RandomSource.fresh()
        # Read and randomize only the columns asked for (a report's noise depends on its own
        # column, row and value only); the whole release is charged all the same.
        wanted = set(schema.names() if with_columns is None else with_columns)
        if predicate is not None:
            wanted.update(predicate.meta.root_names())
        chosen = {
            column: mechanism
            for column, mechanism in mechanisms.items()
            if column in wanted or set(companion_columns(column, mechanism)) & wanted
        }
        if user is not None and any(memoizes(m) for m in chosen.values()):
            wanted.add(user)
        read = [column for column in inputs if column in wanted or column in chosen]
        row, charged = 0, False
        # The first n_rows rows are rows 0 .. n_rows - 1 of the whole input: a limit read
        # there changes no row's number, and polars stops reading after them.
        rows = frame.select(read) if n_rows is None else frame.select(read).head(n_rows)
        for batch in rows.collect_batches(chunk_size=batch_size):
            if batch.height == 0:
                continue
            out = privatize(batch, mechanisms=chosen, source=source, row_start=row)
            row += batch.height
            if not charged:
                with charging(ledger, budget, release):
                    charged = True  # recorded now: the first reports leave the scan next
            if predicate is not None:
                out = out.filter(predicate)
            yield out if with_columns is None else out.select(with_columns)
        if not charged:
            with charging(ledger, budget, release):
                pass

    return register_io_source(scan, schema=schema, explain_name="frameldp privatize")


def _decode(
    frame: pl.DataFrame,
    column: str | None,
    candidates: Sequence[object],
    mechanism: Mechanism | None,
    recorded: dict[str, Any],
    significance: float,
    level: float,
) -> FrequencyTable:
    column, found, names, memo = find_decoder(column, mechanism, recorded)
    with column_context(column):
        statistic = statistic_of(_reports(frame, names), found, column)
        return FrequencyTable.decoded(
            found,
            statistic,
            candidates,
            memo=memo,
            significance=significance,
            column=column,
            level=level,
            backend="polars",
            seeded=is_seeded(recorded, column),
        )


def _reports(frame: pl.DataFrame, names: list[str]) -> list[pa.Array | pa.ChunkedArray]:
    for name in names:
        require_column(frame.columns, name)
    return [frame[name].to_arrow() for name in names]


def _debias(
    frame: pl.DataFrame,
    column: str,
    mechanism: Mechanism | None,
    recorded: dict[str, Any],
    level: float,
    namespace: FrameMethods,
) -> FrequencyTable:
    require_column(frame.columns, column)
    found = find_mechanism(column, mechanism, recorded)
    names = report_names(column, found, recorded.get(column))
    with column_context(column):
        estimate = estimate_reports(_reports(frame, names), found, column=column)
        return FrequencyTable.build(
            estimate,
            found,
            column=column,
            level=level,
            backend="polars",
            privacy=namespace._table_privacy(found, column),
        )


def _key_batch(batch: pl.Series, keyed: RandomSource | None) -> pl.Series:
    """The 128-bit shuffle keys of a batch (a struct of the row index and the shuffled
    columns): under a caller's key bound to each row's position and content
    (batch-invariant, the eager frames' keys); otherwise from a fresh key per batch
    (independent keys sort into a uniformly random order just as well)."""
    frame = batch.struct.unnest()
    stream = (keyed or RandomSource.fresh()).stream("shuffle")
    rows = frame[_ROW].to_numpy().astype(np.int64)
    content = [series.to_arrow() for series in frame.drop(_ROW).get_columns()]
    keys = shuffle_keys(stream, rows, content)
    return pl.DataFrame({"hi": keys[:, 0], "lo": keys[:, 1]}).to_struct(_KEY)


def _messages(
    frame: pl.DataFrame | pl.LazyFrame, column: str, messages: pa.Array, mechanism: Mechanism
) -> pl.DataFrame:
    dtype = _report_dtype(mechanism, frame.collect_schema()[column], column)
    return pl.DataFrame([_native(messages, column, dtype)])


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
        columns, record = plan_shuffle(
            self._frame.columns, specs, keep, self._frame.height, seed=seed
        )
        selected = self._frame.select(columns)
        arrays = [series.to_arrow() for series in selected.get_columns()]
        order = shuffle_order(arrays, selected.height, key, seed)
        out = selected[order]
        _RECORDED.put(out, specs)
        _SHUFFLED.put(out, record)
        return out

    def _messages_frame(
        self, column: str, messages: pa.Array, specs: dict[str, dict[str, Any]]
    ) -> pl.DataFrame:
        out = _messages(self._frame, column, messages, mechanisms_of(specs)[column])
        _RECORDED.put(out, specs)
        return out

    def _column_arrow(self, column: str) -> pa.Array | pa.ChunkedArray:
        return self._frame[column].to_arrow()

    def _columns(self) -> list[str]:
        return self._frame.columns

    def privatize(
        self,
        mechanisms: Mapping[str, Mechanism],
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
        check_columns(self._frame.columns, mechanisms, recorded=self._specs())
        source = resolve_source(key, seed)
        release = plan_release(
            self._frame.columns, mechanisms, source=source, user=user, memo_key=memo_key
        )
        dtypes = _report_dtypes(mechanisms, self._frame.schema)
        with charging(ledger, budget, release):
            out = _privatize_frame(
                self._frame,
                mechanisms,
                source=source,
                release=release,
                user=user,
                row_start=0,
                dtypes=dtypes,
            )
        _RECORDED.put(out, {**_RECORDED.get(self._frame), **release.specs})
        return out

    def decode(
        self,
        column: str | None = None,
        *,
        candidates: Sequence[object],
        mechanism: Mechanism | None = None,
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
        self, column: str, mechanism: Mechanism | None = None, *, level: float = 0.95
    ) -> FrequencyTable:
        """Debiased frequency table of a report column."""
        return _debias(self._frame, column, mechanism, _RECORDED.get(self._frame), level, self)

    def unpack(self, column: str, mechanism: Mechanism | None = None) -> pl.DataFrame:
        """RAPPOR reports as one 0/1 ``uint8`` column per bucket, named ``column=label``."""
        found = find_mechanism(column, mechanism, _RECORDED.get(self._frame))
        bits, names = unpack_reports(self._frame[column].to_arrow(), found, column)
        return pl.DataFrame(bits, schema=names, orient="row")


@pl.api.register_lazyframe_namespace("ldp")
class PolarsLazyFrameNamespace(FrameMethods):
    """``lf.ldp`` on a polars LazyFrame: lazy and streaming; each collect of a privatized plan
    is a release of its own (fresh noise unless ``key=``)."""

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
        random order, the same as the eager and pandas ``shuffle`` for the same key). Without
        ``key``/``seed`` each collect draws its own order; with one, every collect gives the
        same order (the keys are bound to each row's position and content)."""
        specs = _RECORDED.get(self._frame)
        columns, record = plan_shuffle(self._columns(), specs, keep, None, seed=seed)
        keys = pl.struct(_ROW, *columns).map_batches(
            partial(
                _key_batch,
                keyed=None if key is None and seed is None else resolve_source(key, seed),
            ),
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

    def _messages_frame(
        self, column: str, messages: pa.Array, specs: dict[str, dict[str, Any]]
    ) -> pl.LazyFrame:
        # The messages of all people are permuted together: there is nothing to stream.
        out = _messages(self._frame, column, messages, mechanisms_of(specs)[column]).lazy()
        _RECORDED.put(out, specs)
        return out

    def _columns(self) -> list[str]:
        return self._frame.collect_schema().names()

    def privatize(
        self,
        mechanisms: Mapping[str, Mechanism],
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
        user: str | None = None,
        memo_key: bytes | None = None,
    ) -> pl.LazyFrame:
        """A plan that privatizes this one each time it is executed (see the module docstring).

        Without ``key=``/``seed=`` every execution draws a fresh key: collecting twice releases
        twice, with independent noise. With ``key=`` every execution gives the same reports for
        the same rows (a row whose value changed gets independent noise). With ``ledger`` and
        ``budget``, each execution is checked and charged once, when its first reports are
        about to be released (a collect that fails later stays charged: the ledger errs on the
        side of spending). Nothing is read now.
        """
        schema = self._frame.collect_schema()
        check_columns(schema.names(), mechanisms, recorded=self._specs())
        keyed = None if key is None and seed is None else resolve_source(key, seed)
        release = plan_release(
            schema.names(),
            mechanisms,
            source=keyed or RandomSource.fresh(),
            user=user,
            memo_key=memo_key,
            fresh_keys=("on a LazyFrame", "each collect"),
        )
        check_budget(ledger, budget, release)
        out = _privatized_scan(
            self._frame,
            dict(mechanisms),
            keyed=keyed,
            release=release,
            user=user,
            dtypes=_report_dtypes(mechanisms, schema),
            ledger=ledger,
            budget=budget,
        )
        _RECORDED.put(out, {**_RECORDED.get(self._frame), **release.specs})
        return out

    def decode(
        self,
        column: str | None = None,
        *,
        candidates: Sequence[object],
        mechanism: Mechanism | None = None,
        significance: float = 0.05,
        level: float = 0.95,
    ) -> FrequencyTable:
        """Collect the report and cohort columns (streaming) and decode them."""
        recorded = _RECORDED.get(self._frame)
        column, found, names, _ = find_decoder(column, mechanism, recorded)
        for name in names:
            require_column(self._columns(), name)
        frame = self._frame.select(names).collect(engine="streaming")
        return _decode(frame, column, candidates, found, recorded, significance, level)

    def debias(
        self, column: str, mechanism: Mechanism | None = None, *, level: float = 0.95
    ) -> FrequencyTable:
        """Collect only ``column`` (streaming) and debias it."""
        require_column(self._columns(), column)
        recorded = _RECORDED.get(self._frame)
        found = find_mechanism(column, mechanism, recorded)
        names = report_names(column, found, recorded.get(column))
        for name in names:
            require_column(self._columns(), name)
        frame = self._frame.select(names).collect(engine="streaming")
        return _debias(frame, column, found, recorded, level, self)

    def unpack(self, column: str, mechanism: Mechanism | None = None) -> pl.DataFrame:
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
        name = self._expr.meta.output_name(raise_if_undetermined=False)
        return "reports" if name is None else name

    def _values_arrow(self) -> pa.Array | pa.ChunkedArray:
        raise ParameterError(
            f"column {self._name!r}: domain='infer' needs the data; an expression has none. "
            "Pass the public domain, or use df.ldp.rappor / df.ldp.krr"
        )

    def privatize(
        self,
        mechanism: Mechanism,
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> pl.Expr:
        """Reports of this expression under ``mechanism``, with a fresh key per evaluation.

        polars evaluates an expression once per frame, group (``group_by().agg``) or window
        (``over``), with row positions restarting in each, so every evaluation draws its own
        fresh key; ``key=``/``seed=`` are refused (no global row position is known here: use
        ``df.ldp.privatize`` or ``lf.ldp.privatize``). With ``ledger`` and ``budget`` every
        evaluation is charged (once per group in a ``group_by``: the ledger cannot tell that
        groups hold different people, so it errs on the side of spending).
        """
        name = self._name
        if self._expr.meta.has_multiple_outputs():
            raise ParameterError(
                f"expression {shown(str(self._expr))}: privatize one column per expression "
                "(pl.col('a').ldp..., pl.col('b').ldp...), or use df.ldp.privatize({...})"
            )
        check_columns([name], {name: mechanism}, frame=False)
        if key is not None or seed is not None:
            given = "key=" if key is not None else f"seed={shown(seed)}"
            raise ParameterError(
                f"column {name!r}: {given} is refused on an expression: polars may evaluate it "
                "per group, window or frame with row positions restarting in each, so one key "
                "would give different people the same noise. Use df.ldp.privatize(...) or "
                "lf.ldp.privatize(...) with key= (global row positions), or drop key= for "
                "fresh noise per evaluation"
            )
        check_budget(ledger, budget, {name: mechanism})
        dtype = _report_dtype(mechanism, None, name)
        evaluate = partial(
            _evaluate_expression,
            mechanism=mechanism,
            column=name,
            dtype=dtype,
            ledger=ledger,
            budget=budget,
        )
        return self._expr.map_batches(evaluate, return_dtype=dtype).alias(name)


def _evaluate_expression(
    values: pl.Series,
    *,
    mechanism: Mechanism,
    column: str,
    dtype: pl.DataType,
    ledger: LedgerLike | None,
    budget: str | None,
) -> pl.Series:
    """One evaluation of a privatizing expression: a fresh key, charged before it is used."""
    with charging(ledger, budget, {column: mechanism}), column_context(column):
        produced = privatize_values(
            _arrow_of(values, column), mechanism, column=column, source=RandomSource.fresh()
        )
    return _native(produced[column], values.name, dtype)
