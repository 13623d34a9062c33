"""The ``.ldp`` namespace on polars DataFrame, LazyFrame and Expr.

Plumbing only. Which rows may share noise (see :mod:`frameldp.core.randomness`):

* **DataFrame**: one key per call; rows are addressed by their position in the frame.
* **LazyFrame**: the privatized plan is a Python scan (``register_io_source``) over the input
  plan. Its run (``collect``, ``sink_*``) draws a fresh key (unless ``key=``/``seed=`` was
  given), streams the input batch by batch, numbers the rows itself (global positions,
  whatever the batch sizes), randomizes them and charges the ledger once, when the first
  reports are about to leave the scan. A fresh-key plan is one release and runs once: a second
  run (a second collect, a plan used twice in one query) is refused there
  (:mod:`frameldp.frames.executions`); a keyed plan may run again and gives the same reports
  for the same rows. A caller's key is held by reference
  (:class:`~frameldp.core.randomness.RandomSource` pickles as a handle): ``pickle.dumps`` or
  ``LazyFrame.serialize`` of the plan never contains it.
* **Expr**: an expression is one release, evaluated once over a whole column with a fresh key
  (and charged, when a ledger is given); polars would evaluate it again per group or window
  (``group_by().agg``, ``over``), with row positions restarting in each, and in every later
  query: those evaluations are refused. ``key=``/``seed=`` are refused, since no global row
  position is known there.

Report columns are of the polars extension dtype :class:`ReportsDtype` (``frameldp.reports``,
the Arrow extension type of :mod:`frameldp.frames.report_type`), which carries the mechanism
through ``collect``, ``with_columns``, ``filter``, ``concat``, ``group_by`` and Parquet files.
polars marks its extension-type API unstable: ``tests/frames/test_report_type.py`` pins what is
relied on here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any, cast

import numpy as np
import polars as pl
import pyarrow as pa
from numpy.typing import NDArray
from polars.io.plugins import register_io_source

from frameldp.core.mechanisms import Mechanism
from frameldp.core.randomness import (
    RandomSource,
    resolve_source,
)
from frameldp.errors import DomainError, ParameterError, shown
from frameldp.frames.adapters import register_adapter
from frameldp.frames.engine import Gather, LocalFrame, Privatization, register_engine
from frameldp.frames.executions import SingleExecution
from frameldp.frames.fingerprint import Fingerprint
from frameldp.frames.grouping import Grouped, Reduction
from frameldp.frames.in_memory import InMemoryEngine
from frameldp.frames.inputs import check_columns, require_column
from frameldp.frames.lookup import unpack_reports
from frameldp.frames.methods import FrameMethods, ValueShortcuts
from frameldp.frames.persons import People, refuse_sampling, rows_per_user, stated_people
from frameldp.frames.pipeline import privatize_columns, privatize_frame
from frameldp.frames.release import (
    LedgerLike,
    ReleasePlan,
    charging,
    check_budget,
    companion_columns,
    memo_user_type,
    new_release_id,
    plan_release,
    recorded_spec,
)
from frameldp.frames.report_type import (
    EXTENSION_NAME,
    ReportMetadata,
    ReportType,
    binary_text_bits,
    empty_reports,
    recorded_shuffle,
    refuse_reports,
    report_types,
    storage_of,
    text_of,
)
from frameldp.results.native import Backend

__all__ = [
    "LazyEngine",
    "LazyFrameAdapter",
    "PolarsAdapter",
    "PolarsExprNamespace",
    "PolarsFrameNamespace",
    "PolarsLazyFrameNamespace",
    "ReportsDtype",
]


class ReportsDtype(pl.BaseExtension):
    """The polars dtype of a report column: extension ``frameldp.reports``, its metadata the
    JSON of :class:`~frameldp.frames.report_type.ReportMetadata` (shown as the mechanism's
    name in frame headers)."""

    def _string_repr(self) -> str:
        try:
            return str(self.metadata.spec.get("mechanism", "reports"))[:12]
        except Exception:  # called by polars while it displays or hashes: never raise
            return "reports"

    def __repr__(self) -> str:
        # Short: polars quotes dtypes in its error messages (the metadata is a whole spec).
        return f"ReportsDtype({self._string_repr()!r}, {self.ext_storage()!r})"

    @property
    def metadata(self) -> ReportMetadata:
        """The recorded spec and column."""
        return ReportMetadata.from_json(self.ext_metadata() or "")


pl.register_extension_type(EXTENSION_NAME, ReportsDtype)


def _metadata_of(dtype: pl.DataType) -> ReportMetadata | None:
    """The report metadata of a column of ``dtype`` (None: no report column)."""
    if isinstance(dtype, pl.BaseExtension) and dtype.ext_name() == EXTENSION_NAME:
        return ReportMetadata.from_json(dtype.ext_metadata() or "")
    return None


def _report_columns(schema: Mapping[str, pl.DataType]) -> dict[str, ReportMetadata]:
    """``{name: metadata}`` of the report columns of a frame of ``schema``."""
    found = {name: _metadata_of(dtype) for name, dtype in schema.items()}
    return {name: meta for name, meta in found.items() if meta is not None}


def _storage_view(
    frame: pl.DataFrame | pl.LazyFrame, text: bool = False
) -> pl.DataFrame | pl.LazyFrame:
    """``frame`` with each report column holding its storage values (``text``: bit vectors in
    their text form); lazily for a LazyFrame."""
    schema = frame.collect_schema()
    typed = _report_columns(schema)
    if not typed:
        return frame
    return frame.with_columns(
        _plain(name, schema[name], meta, text) for name, meta in typed.items()
    )


def _plain(name: str, dtype: pl.DataType, meta: ReportMetadata, text: bool) -> pl.Expr:
    """The expression of report column ``name``'s storage values (or text form)."""
    storage = pl.col(name).ext.storage()
    binary = isinstance(dtype, pl.BaseExtension) and dtype.ext_storage() == pl.Binary
    if not text or not binary or binary_text_bits(meta) is None:
        return storage
    kind = ReportType(pa.large_binary(), meta)  # polars stores bit vectors as Binary
    return storage.map_batches(
        lambda values: pl.Series(values.name, text_of(values.to_arrow(), kind)),
        return_dtype=pl.String,
    )


def _arrow_of(series: pl.Series, column: str) -> pa.Array | pa.ChunkedArray:
    """The column as Arrow; a polars type Arrow cannot take (``Int128``, ``Object``) raises a
    :class:`DomainError` naming the column. (polars hands an ``Object`` column to Arrow as
    8-byte pointers: it is refused rather than read as values.)"""
    try:
        if series.dtype == pl.Object:
            raise pa.ArrowInvalid("Python objects have no Arrow type")
        return series.to_arrow()
    except (pa.ArrowException, pl.exceptions.PolarsError, UnicodeEncodeError) as error:
        raise DomainError(
            f"column {shown(column)}: polars type {series.dtype} cannot be read as Arrow "
            f"({shown(str(error), 120)}); cast it to a 64-bit integer, float or string first"
        ) from None


def _dtype_of(kind: ReportType) -> pl.DataType:
    """The polars dtype of a report column of Arrow type ``kind``."""
    return pl.Series(empty_reports(kind)).dtype


def _native(array: pa.Array, name: str) -> pl.Series:
    """The polars Series of an Arrow report column."""
    return pl.Series(name, array)


def _frame_of(columns: Mapping[Any, pa.Array]) -> pl.DataFrame:
    """A DataFrame of Arrow columns."""
    return pl.DataFrame([_native(array, name) for name, array in columns.items()])


def _privatized_scan(
    frame: pl.LazyFrame,
    mechanisms: Mapping[str, Mechanism],
    *,
    keyed: RandomSource | None,
    release: ReleasePlan,
    user: str | None,
    people: People | None,
    ledger: LedgerLike | None,
    budget: str | None,
) -> pl.LazyFrame:
    """A LazyFrame whose run privatizes ``frame`` (see the module docstring): a fresh key,
    and a single run, unless ``keyed``; rows numbered by the scan; one ledger charge per
    run. With ``user``, the run reads the ids ``people`` counted, or stops
    (:class:`~frameldp.frames.persons.People`): before it draws (one more read of the user
    column), before a batch that holds more rows than were counted, and once its input is read
    (an input that changes while it is read)."""
    privatize = partial(privatize_frame, specs=release.specs, user=user, memo=release.memo)
    empty = frame.clear().collect()
    schema = privatize(
        empty, mechanisms=mechanisms, source=RandomSource.fresh(), row_start=0
    ).schema
    inputs = empty.columns
    once = None if keyed is not None else SingleExecution(release.release, "the LazyFrame")

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
        # The columns of a sampled collection are drawn together (which one a row reports).
        if any(getattr(m, "collection", None) for m in chosen.values()):
            chosen |= {c: m for c, m in mechanisms.items() if getattr(m, "collection", None)}
        if user is not None:
            wanted.add(user)
        read = [column for column in inputs if column in wanted or column in chosen]
        row, charged = 0, False
        # The first n_rows rows are rows 0 .. n_rows - 1 of the whole input: a limit read
        # there changes no row's number, and polars stops reading after them.
        rows = frame.select(read) if n_rows is None else frame.select(read).head(n_rows)
        batches: Iterator[pl.DataFrame] = rows.collect_batches(chunk_size=batch_size)
        if people is not None:
            # The ids as they are now, before any report is drawn: a log that grew since the
            # plan counted its people is refused whatever this run reads (a head, a stream).
            now = frame.select(people.user).collect(engine="streaming").to_arrow().column(0)
            people.refuse_other_ids(Fingerprint.of([now]))
            # And while it reads (an input changing under the run): a prefix is no whole input.
            batches = people.checked(
                batches,
                lambda batch: batch.get_column(people.user).to_arrow(),
                whole=n_rows is None,
            )
        for batch in batches:
            if batch.height == 0:
                continue
            if once is not None and not charged:
                once.refuse_if_ran()  # a refused run draws (and records) no reports
            out = privatize(batch, mechanisms=chosen, source=source, row_start=row)
            row += batch.height
            if not charged:
                if once is not None:  # refused before any report of a second run leaves
                    once.claim()
                with charging(ledger, budget, release):
                    charged = True  # recorded now: the first reports leave the scan next
            if predicate is not None:
                out = out.filter(predicate)
            yield out if with_columns is None else out.select(with_columns)
        if not charged:
            with charging(ledger, budget, release):
                pass

    return register_io_source(scan, schema=schema, explain_name="frameldp privatize")


def _collected(frame: pl.LazyFrame, names: list[str], column: str) -> pl.DataFrame:
    """The report columns ``names`` of a plan, collected (streaming). A scan of files that
    hold different releases (whose types differ from the plan's, taken from the first file)
    is refused by polars: a frameldp error names the column."""
    try:
        return frame.select(names).collect(engine="streaming")
    except pl.exceptions.SchemaError as error:
        raise ParameterError(
            f"column {shown(column)}: the plan's files hold reports of different releases "
            f"({shown(str(error).splitlines()[0], 120)}); debias each release on its own"
        ) from None


@register_adapter(pl.DataFrame)
class PolarsAdapter:
    """polars DataFrames to and from Arrow. Report columns are of :class:`ReportsDtype`."""

    backend: Backend = "polars"
    in_memory = True

    def columns(self, frame: pl.DataFrame) -> list[Any]:
        return frame.columns

    def report_columns(self, frame: pl.DataFrame) -> dict[Any, ReportMetadata]:
        return _report_columns(frame.schema)

    def num_rows(self, frame: pl.DataFrame) -> int:
        return frame.height

    def to_arrow(self, frame: pl.DataFrame, column: Any) -> pa.Array | pa.ChunkedArray:
        require_column(frame.columns, column)
        return _arrow_of(frame[column], column)

    def from_arrow(self, columns: Mapping[Any, pa.Array]) -> pl.DataFrame:
        return _frame_of(columns)

    def storage_view(
        self, frame: pl.DataFrame | pl.LazyFrame, *, text: bool = False
    ) -> pl.DataFrame | pl.LazyFrame:
        return _storage_view(frame, text)

    def with_arrow(self, frame: pl.DataFrame, columns: Mapping[Any, pa.Array]) -> pl.DataFrame:
        return frame.with_columns([_native(array, name) for name, array in columns.items()])

    def take(
        self, frame: pl.DataFrame, columns: Sequence[Any], order: NDArray[np.int64]
    ) -> pl.DataFrame:
        return frame.select(columns)[order]

    def recorded_shuffle(self, frame: pl.DataFrame) -> dict[str, Any]:
        return recorded_shuffle(self.report_columns(frame))

    def unpack(self, frame: pl.DataFrame, column: Any, mechanism: Mechanism) -> pl.DataFrame:
        bits, names = unpack_reports(frame[column].to_arrow(), mechanism, column)
        return pl.DataFrame(bits, schema=names, orient="row")


@register_adapter(pl.LazyFrame)
class LazyFrameAdapter:
    """polars LazyFrames: their schema's columns and report types; a column is collected
    (streaming) when it is read. Their batches are privatized by :class:`PolarsAdapter`."""

    backend: Backend = "polars"
    in_memory = False

    def columns(self, frame: pl.LazyFrame) -> list[Any]:
        return frame.collect_schema().names()

    def report_columns(self, frame: pl.LazyFrame) -> dict[Any, ReportMetadata]:
        return _report_columns(frame.collect_schema())

    def num_rows(self, frame: pl.LazyFrame) -> int:
        return int(frame.select(pl.len()).collect(engine="streaming").item())

    def to_arrow(self, frame: pl.LazyFrame, column: Any) -> pa.Array | pa.ChunkedArray:
        require_column(self.columns(frame), column)
        return _arrow_of(frame.select(column).collect(engine="streaming").to_series(), column)

    def from_arrow(self, columns: Mapping[Any, pa.Array]) -> pl.LazyFrame:
        return _frame_of(columns).lazy()

    def storage_view(
        self, frame: pl.DataFrame | pl.LazyFrame, *, text: bool = False
    ) -> pl.DataFrame | pl.LazyFrame:
        return _storage_view(frame, text)


@pl.api.register_dataframe_namespace("ldp")
class PolarsFrameNamespace(FrameMethods):
    """``df.ldp`` on a polars DataFrame (its engine:
    :class:`~frameldp.frames.in_memory.InMemoryEngine` over :class:`PolarsAdapter`)."""


@register_engine(pl.LazyFrame)
class LazyEngine:
    """A polars LazyFrame: lazy and streaming; a privatized plan is one release, run once
    (unless ``key=``, whose runs give the same reports). Its batches, and the columns it
    collects, are served by :class:`PolarsAdapter`."""

    backend: Backend = "polars"
    one_machine: str | None = None

    def __init__(self, frame: pl.LazyFrame) -> None:
        self.frame = frame

    def columns(self) -> list[Any]:
        return self.frame.collect_schema().names()

    def report_columns(self) -> dict[Any, ReportMetadata]:
        return _report_columns(self.frame.collect_schema())

    def recorded_shuffle(self) -> dict[str, Any]:
        return recorded_shuffle(self.report_columns())

    def num_rows(self) -> int:
        return int(self.frame.select(pl.len()).collect(engine="streaming").item())

    def distinct(self, column: Any) -> pa.Array | pa.ChunkedArray:
        return LazyFrameAdapter().to_arrow(self.frame, column)

    def gather(self, columns: list[Any]) -> LocalFrame:
        """The columns collected with the streaming engine (a privatized plan runs now)."""
        return LocalFrame(self.frame.select(columns).collect(engine="streaming"), PolarsAdapter())

    def returned(self, frame: pl.DataFrame) -> pl.LazyFrame:
        return frame.lazy()

    def plain(self, *, text: bool) -> pl.LazyFrame:
        return cast(pl.LazyFrame, _storage_view(self.frame, text))

    def unpack(self, column: str, mechanism: Mechanism) -> pl.DataFrame:
        """Collect ``column`` (streaming) as one 0/1 ``uint8`` column per bucket."""
        return PolarsAdapter().unpack(_collected(self.frame, [column], column), column, mechanism)

    def reduce(self, reduction: Reduction, by: tuple[str, ...]) -> Grouped:
        """Collect only the report and group columns (streaming), then reduce them."""
        names = list(dict.fromkeys((*reduction.names, *by)))
        frame = _collected(self.frame, names, reduction.label)
        return InMemoryEngine(frame, PolarsAdapter()).reduce(reduction, by)

    def gatherer(self, names: tuple[str, ...], column: str) -> Gather:
        """The report columns collected once: every pass reads the same reports."""
        frame = _collected(self.frame, list(names), column)
        return InMemoryEngine(frame, PolarsAdapter()).gatherer(names, column)

    def privatize(self, request: Privatization) -> pl.LazyFrame:
        """A plan that privatizes this one when it runs (see the module docstring).

        Without ``key=``/``seed=`` the plan is one release: its run draws a fresh key, and a
        second run (collect, sink) is refused before it draws anything
        (:mod:`frameldp.frames.executions`). With ``key=`` every run gives the same reports for
        the same rows (a row whose value changed gets independent noise). With ``ledger`` and
        ``budget``, each run is checked and charged once, when its first reports are about to
        be released (a collect that fails later stays charged: the ledger errs on the side of
        spending). Nothing is read now, except with ``user=``: the user column is
        collected once to count each person's rows (the release states the loss of the person
        holding the most, or of ``max_rows_per_user``; see ``DataFrame.ldp.privatize``).
        """
        user = request.user
        refuse_sampling(
            request.contributions, user, request.max_rows_per_user, "a polars LazyFrame"
        )
        schema = self.frame.collect_schema()
        check_columns(schema.names(), request.mechanisms, reports=self.report_columns())
        key, seed = request.key, request.seed
        keyed = None if key is None and seed is None else resolve_source(key, seed)
        people = None if user is None else People(user)
        counted = stated_people(
            user,
            request.max_rows_per_user,
            schema.names(),
            lambda: rows_per_user(
                [self.frame.select(user).collect(engine="streaming").to_arrow().column(0)],
                user,
                people=people,
            ),
        )
        release = plan_release(
            schema.names(),
            request.mechanisms,
            source=keyed or RandomSource.fresh(),
            user=user,
            memo_key=request.memo_key,
            rows_per_user=counted,
            fresh_keys=("on a LazyFrame", "each collect"),
            user_type=memo_user_type(
                request.mechanisms,
                user,
                schema.names(),
                lambda name: pl.Series([], dtype=schema[name]).to_arrow().type,
            ),
        )
        check_budget(request.ledger, request.budget, release)
        return _privatized_scan(
            self.frame,
            dict(request.mechanisms),
            keyed=keyed,
            release=release,
            user=user,
            people=people,
            ledger=request.ledger,
            budget=request.budget,
        )


@pl.api.register_lazyframe_namespace("ldp")
class PolarsLazyFrameNamespace(FrameMethods):
    """``lf.ldp`` on a polars LazyFrame (its engine: :class:`LazyEngine`)."""


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
        """Reports of this expression under ``mechanism``: one release, with a fresh key.

        The expression is one release with its own release id, and polars may evaluate it
        once: in one query, over the whole column. A second evaluation (a second query, or
        ``group_by().agg`` / ``over``, which evaluate it per group with row positions
        restarting in each) is refused before its reports leave (see
        :mod:`frameldp.frames.executions`); build a new expression for each release.
        ``key=``/``seed=`` are refused (no global row position is known here: use
        ``df.ldp.privatize`` or ``lf.ldp.privatize``). With ``ledger`` and ``budget`` the
        evaluation is charged.
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
                f"column {shown(name)}: {given} is refused on an expression: polars may evaluate "
                "it per group, window or frame with row positions restarting in each, so one key "
                "would give different people the same noise. Use df.ldp.privatize(...) or "
                "lf.ldp.privatize(...) with key= (global row positions), or drop key= for "
                "fresh noise per evaluation"
            )
        check_budget(ledger, budget, {name: mechanism})
        release = new_release_id()
        spec = {**recorded_spec(mechanism, RandomSource.fresh()), "release": release}
        dtype = _dtype_of(report_types(mechanism, name, spec)[name])
        evaluate = partial(
            _evaluate_expression,
            once=SingleExecution(release, "the expression (one query, whole column)"),
            mechanism=mechanism,
            column=name,
            spec=spec,
            ledger=ledger,
            budget=budget,
        )
        # The batches are typed after map_batches: polars 2.1 panics on a function that returns
        # an extension dtype inside group_by().agg or over().
        storage = dtype.ext_storage()  # type: ignore[attr-defined]
        return self._expr.map_batches(evaluate, return_dtype=storage).ext.to(dtype).alias(name)


def _evaluate_expression(
    values: pl.Series,
    *,
    once: SingleExecution,
    mechanism: Mechanism,
    column: str,
    spec: dict[str, Any],
    ledger: LedgerLike | None,
    budget: str | None,
) -> pl.Series:
    """The one evaluation of a privatizing expression: a fresh key, charged before it is used."""
    held = _metadata_of(values.dtype)
    if held is not None:
        refuse_reports(column, held)
    once.refuse_if_ran()  # a refused evaluation draws (and records) no reports
    with charging(ledger, budget, {column: mechanism}):
        produced = privatize_columns(
            {column: _arrow_of(values, column)},
            {column: mechanism},
            specs={column: spec},
            source=RandomSource.fresh(),
        )
        once.claim()  # its reports leave next: no other evaluation may release these rows
    return _native(storage_of(produced[column]), values.name)
