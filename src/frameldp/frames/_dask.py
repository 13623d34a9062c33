"""The ``.ldp`` accessor on Dask DataFrames.

Plumbing only: every partition is a pandas frame and goes through the one pipeline
(:func:`~frameldp.frames.pipeline.privatize_frame` with the pandas adapter, and the mechanism's
``statistic``); this module only decides which rows a partition holds and how partial counts
are added up.

**Rows are addressed globally.** A report's noise is a pure function of (key, stream label,
global row id), the row id being the row's position in the whole frame (``ddf.compute()``), so
the reports equal those of the pandas accessor on the computed frame for the same key, whatever
the scheduler, the number of workers or partitions, and however often the graph is computed.
Giving one row id to two rows would give two people the same noise, so the ids must come from
the very partitions that are privatized. dask-expr's optimizer may change partitioning between
two graphs built from one frame (e.g. it fuses Parquet partitions after a column projection), so
partition numbers from ``map_partitions(partition_info=...)``, or lengths computed from another
graph, are not trusted. Instead :func:`_pinned` lowers the frame once
(``frame.optimize().to_delayed()``: the partitions as they will run), and :func:`_row_addressed`
builds one task graph over those keys in which

    start[0] = 0,  start[i] = start[i - 1] + len(part[i - 1]),
    out[i] = privatize_frame(part[i], row_start=start[i]).

Lengths and reports come from the same task (the same key) of one graph, so the row ids are the
exact prefix sums of the partitions actually privatized, in every computation; nothing is read
when ``privatize`` is called, and each computation reads the input once. (Computing the lengths
first, when ``privatize`` is called, would read the input one more time and could go stale: a
file appended between that pass and a computation would shift every later row.) The only ordering
constraint is that ``out[i]`` waits until the partitions before ``i`` are loaded (the additions
are tiny). The graph is handed to dask-expr with ``from_delayed`` and the divisions of the
lowered frame (they describe exactly these partitions); later projections or filters act on
the privatized partitions and cannot reach back into the row addressing.

**Keys.** Without ``key=``/``seed=`` no key is in the graph: every partition task draws a fresh
key on its worker when it runs (a fresh key never leaves the process that uses it), and the
graph is one release that computes once: its first task and every partition task claim their
run, and a second computation is refused (:mod:`frameldp.frames.executions`; ``persist()`` a
release to read it several times). With ``key=`` the
same rows give the same reports in every computation; the noise of a row is bound to its global
position and its value, so a row whose value changed between two computations gets independent
noise. A caller's key travels to the workers inside the task messages (``ShippedSource``), as
the raw data does; task names are random, never derived from it. With a ledger, every
computation is charged once, by the graph's first task (before any partition is privatized),
in the process that runs it; a release that could not be charged is refused already when the
graph is built. (With ``key=`` a recomputation releases nothing new, and is charged all the
same: the ledger errs on the side of spending.)

**Aggregation is a tree reduction** of per-partition additive statistics (the mechanism's
:class:`~frameldp.core.mechanisms.Statistic`: per-bit or per-label counts, per-cohort bit sums),
``SPLIT_EVERY`` at a time;
report columns are never collected on one machine. Debiasing the summed counts gives exactly the
pandas estimate.

Report columns carry their mechanism in their type (as on pandas), in the frame's meta and in
every partition, so derived frames and Parquet datasets are debiased without ``mechanism=``; a
partition whose types differ from the meta's (a dataset of several releases) is refused.
``shuffle`` and ``balcer_cheu`` permute every report together and need one machine:
they raise, asking to compute the frame to pandas first.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import uuid
from collections.abc import Callable, Mapping
from typing import Any, cast

import dask
import dask.base
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from dask.delayed import Delayed, delayed
from dask.highlevelgraph import HighLevelGraph
from dask.task_spec import Task, TaskRef

from frameldp.core.mechanisms import Capability, Mechanism, Statistic
from frameldp.core.parallel import threads
from frameldp.errors import ParameterError, shown
from frameldp.frames._pandas import PandasAdapter, _unpack, report_columns_of
from frameldp.frames._pandas_reports import ReportArray, ReportDtype
from frameldp.frames.adapters import adapter_for
from frameldp.frames.engine import Gather, Privatization, register_engine
from frameldp.frames.executions import SingleExecution
from frameldp.frames.fingerprint import Fingerprint, fingerprint_of
from frameldp.frames.grouping import Grouped, Reduction, grouped_statistics, merge_grouped
from frameldp.frames.lookup import unpack_reports
from frameldp.frames.methods import FrameMethods
from frameldp.frames.persons import counted_rows, refuse_other_ids, refuse_sampling
from frameldp.frames.pipeline import privatize_frame
from frameldp.frames.release import (
    LedgerLike,
    ReleasePlan,
    ShippedSource,
    charging,
    check_budget,
    plan_shipped_release,
)
from frameldp.frames.report_type import ReportMetadata, recorded_shuffle
from frameldp.results.native import Backend

__all__ = ["SPLIT_EVERY", "DaskEngine", "DaskFrameAccessor"]

SPLIT_EVERY = 8
"""Partial results combined per task of a tree reduction."""


# -- graphs over pinned partitions -------------------------------------------------------------


def _pinned(frame: dd.DataFrame | dd.Series) -> tuple[list[Delayed], tuple[Any, ...]]:
    """The partitions of ``frame`` as they will run (lowered and fused once), and their
    divisions (unknown when the lowered frame does not describe them one to one)."""
    lowered = frame.optimize()
    parts = lowered.to_delayed(optimize_graph=False)
    divisions = tuple(lowered.divisions)
    if len(divisions) != len(parts) + 1:
        divisions = (None,) * (len(parts) + 1)
    return parts, divisions


def _graph(name: str, tasks: dict[Any, Any], parts: list[Delayed]) -> HighLevelGraph:
    """One layer of ``tasks`` on top of the graph(s) the pinned ``parts`` come from."""
    graphs = {id(part.dask): part for part in parts}  # the parts of one frame share one graph
    dependencies: list[Any] = list(graphs.values())
    return HighLevelGraph.from_collections(name, tasks, dependencies=dependencies)


def _row_addressed(
    parts: list[Delayed],
    privatize: Callable[..., pd.DataFrame],
    first_row: Callable[[], int],
) -> list[Delayed]:
    """``privatize(part, start, part=i)`` of every part ``i``, ``start`` being the global row
    of its first row (prefix sums of the lengths of the very same parts, in the same graph).
    ``first_row()`` runs once per computation before any part is privatized (it charges the
    ledger) and returns 0."""
    name = f"frameldp-privatize-{uuid.uuid4().hex}"  # random: never a hash of the key
    length, start = f"{name}-length", f"{name}-start"
    tasks: dict[Any, Any] = {(start, 0): Task((start, 0), first_row)}
    for i, part in enumerate(parts):
        if i:
            tasks[(length, i - 1)] = Task((length, i - 1), len, TaskRef(parts[i - 1].key))
            tasks[(start, i)] = Task(
                (start, i), operator.add, TaskRef((start, i - 1)), TaskRef((length, i - 1))
            )
        tasks[(name, i)] = Task(
            (name, i), privatize, TaskRef(part.key), TaskRef((start, i)), part=i
        )
    graph = _graph(name, tasks, parts)
    return [Delayed((name, i), graph, layer=name) for i in range(len(parts))]


def _tree_reduce(
    parts: list[Delayed], chunk: Callable[[Any], Any], combine: Callable[..., Any]
) -> Any:
    """``combine`` of ``chunk(part)`` over every part, ``SPLIT_EVERY`` at a time, computed."""
    name = f"frameldp-reduce-{uuid.uuid4().hex}"
    tasks: dict[Any, Any] = {}
    keys = []
    for i, part in enumerate(parts):
        key = (f"{name}-0", i)
        tasks[key] = Task(key, chunk, TaskRef(part.key))
        keys.append(key)
    depth = 0
    while len(keys) > 1:
        depth += 1
        combined = []
        for j in range(0, len(keys), SPLIT_EVERY):
            group = keys[j : j + SPLIT_EVERY]
            if len(group) == 1:  # a lone partial result moves up a level as it is
                combined.extend(group)
                continue
            key = (f"{name}-{depth}", j // SPLIT_EVERY)
            tasks[key] = Task(key, combine, *(TaskRef(k) for k in group))
            combined.append(key)
        keys = combined
    (result,) = dask.base.compute(Delayed(keys[0], _graph(name, tasks, parts), layer=name))
    return result


# -- what runs on each partition ---------------------------------------------------------------


def _charged_first_row(
    ledger: LedgerLike | None,
    budget: str | None,
    release: ReleasePlan,
    once: SingleExecution | None,
) -> int:
    """Admit and charge one computation of a privatized frame (before any of its reports
    exist): a fresh-key release computes once (``once``, see
    :mod:`frameldp.frames.executions`)."""
    if once is not None:
        once.claim()
    with charging(ledger, budget, release):
        return 0


def _first_null(ids: pd.Series) -> pd.Series:
    """A partition's size and the position of its first null (-1: none)."""
    missing = ids.isna().to_numpy()
    first = int(np.argmax(missing)) if missing.any() else -1
    return pd.Series([(len(ids), first)], dtype=object)


def _ids_fingerprints(ids: pd.Series | pd.DataFrame, user: str) -> pd.Series:
    """The fingerprint of a partition's user ids (its user column ``user``), as a Series of
    one."""
    frame = ids.to_frame(user) if isinstance(ids, pd.Series) else ids
    return pd.Series([fingerprint_of([adapter_for(frame).to_arrow(frame, user)])], dtype=object)


def _privatize_partition(
    frame: pd.DataFrame,
    row_start: int,
    *,
    once: SingleExecution | None = None,
    part: int | None = None,
    mechanisms: Mapping[str, Mechanism],
    shipped: ShippedSource,
    memo: ShippedSource,
    specs: Mapping[str, Mapping[str, Any]],
    user: str | None,
    counted_ids: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """The reports of one partition, whose first row is row ``row_start`` of the frame; a
    fresh-key release's partition ``part`` is privatized once (``once``); with ``user``, only
    if its user ids are the ones counted when the release was planned (``counted_ids``)."""
    if counted_ids is not None and part is not None and user is not None:
        found = Fingerprint.of([adapter_for(frame).to_arrow(frame, user)])
        refuse_other_ids(user, counted_ids[part], found)
    if once is not None and part is not None:
        once.claim(part)
    with threads(1):  # Dask's scheduler already runs one task per core
        out: pd.DataFrame = privatize_frame(
            frame,
            mechanisms,
            specs=specs,
            source=shipped.source(),
            row_start=int(row_start),
            user=user,
            memo=memo.optional(),
        )
    return out


def _grouped_partition(
    frame: pd.DataFrame,
    *,
    reduction: Reduction,
    by: tuple[str, ...],
    expected: Mapping[str, ReportMetadata],
) -> Grouped:
    """The statistics of one partition (by group), whose report columns' types must be the
    frame's (``expected``, from its meta): a Parquet dataset whose files hold different
    releases gives partitions of other types, which are refused rather than debiased (and
    their guarantee stated) as the first file's."""
    adapter = adapter_for(frame)
    names = list(reduction.names)
    found = adapter.report_columns(frame[names])
    if any(found.get(name) != expected.get(name) for name in names):
        raise ParameterError(
            f"column {shown(reduction.label)}: a partition holds reports of another release "
            "than the frame's first one (a dataset of several releases?); debias each release "
            "on its own"
        )
    read = dict.fromkeys((*names, *by))
    with threads(1):  # Dask's scheduler already runs one task per core
        return grouped_statistics(
            {name: adapter.to_arrow(frame, name) for name in read}, reduction, by
        )


def _distinct(series: pd.Series) -> pa.Array:
    """Distinct non-null values of a partition (items of set-valued cells)."""
    array = adapter_for(series).to_arrow(series, series.name)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        array = pc.list_flatten(array)
    return pc.unique(array.drop_null())


def _union(*arrays: pa.Array) -> pa.Array:
    # A partition of nulls only (or an empty object partition) gives an array of type null.
    kind = next((a.type for a in arrays if not pa.types.is_null(a.type)), arrays[0].type)
    return pc.unique(pa.concat_arrays([a.cast(kind) for a in arrays]))


def _meta_input(meta: pd.DataFrame, mechanisms: Mapping[str, Mechanism]) -> pd.DataFrame:
    """The empty frame whose privatization is the output's meta.

    An empty object column has no Arrow type: a Bloom column's is read as strings (it is
    replaced by reports, so its input dtype never reaches the output)."""
    meta = meta.copy()
    for column, mechanism in mechanisms.items():
        if Capability.CANDIDATES in mechanism.capabilities and meta[column].dtype == object:
            meta[column] = pd.Series([], dtype="str", index=meta.index)
    return meta


@dd.extensions.make_array_nonempty.register(ReportDtype)  # type: ignore[untyped-decorator]
def _nonempty_reports(dtype: ReportDtype) -> ReportArray:
    """Dask's stand-in values of a report column (its ``meta_nonempty``): two nulls, since no
    value may be made into a report."""
    nulls = pa.nulls(2, dtype.pyarrow_dtype.storage_type)
    return ReportArray._of(pa.chunked_array([nulls]), dtype)


@register_engine(dd.DataFrame)
class DaskEngine:
    """A Dask DataFrame: privatized lazily, partition by partition, with global row addressing;
    its reports debiased with tree reductions (the reports equal the pandas accessor's for the
    same key). Its meta gives the columns and report types (the first partition's, for a
    dataset read from files; every partition is checked against them when its reports are
    read). Nothing here gathers a column on one machine."""

    backend: Backend = "pandas"
    one_machine: str | None = "ddf.compute()"

    def __init__(self, frame: dd.DataFrame) -> None:
        self._frame = frame

    def columns(self) -> list[Any]:
        return list(self._frame.columns)

    def report_columns(self) -> dict[Any, ReportMetadata]:
        return report_columns_of(self._frame._meta)

    def recorded_shuffle(self) -> dict[str, Any]:
        return recorded_shuffle(self.report_columns())

    def num_rows(self) -> int:
        return len(self._frame)

    def _typed(self, names: list[str]) -> dict[str, ReportMetadata]:
        reports = self.report_columns()
        return {name: reports[name] for name in names if name in reports}

    def plain(self, *, text: bool) -> dd.DataFrame:
        """Each partition's report columns as plain columns."""
        view = functools.partial(PandasAdapter().storage_view, text=text)
        plain: dd.DataFrame = self._frame.map_partitions(view, meta=view(self._frame._meta))
        return plain

    def distinct(self, column: Any) -> pa.Array | pa.ChunkedArray:
        """The distinct values of ``column`` (all ``domain="infer"`` reads), by tree union."""
        parts, _ = _pinned(self._frame[column])
        return _tree_reduce(parts, _distinct, _union)

    def privatize(self, request: Privatization) -> dd.DataFrame:
        """Replace each column by its reports, lazily.

        Returns a Dask DataFrame whose partitions are privatized with global row addressing
        (see the module docstring). With ``key=`` it computes to exactly the pandas accessor's
        reports for the same key, every time; without, its one computation draws fresh keys
        on the workers, and a second is refused (``persist()`` it to read it again). Nothing
        is read now; values outside the domain raise their :class:`~frameldp.DomainError`
        when the frame is computed. With ``ledger`` and ``budget`` every computation is
        charged, once, before its first partition is privatized (a release that could not be
        charged now is refused here). Bloom RAPPOR columns
        also get a ``{column}_cohort`` column (see :meth:`rappor` for ``user`` and
        ``memo_key``); on Dask, ``user=`` needs ``memo_key=`` or ``key=`` (a person's permanent
        responses must be the same on every worker). With ``user=``, the user column is computed
        once now to count each person's rows (see ``DataFrame.ldp.privatize``).
        """
        mechanisms, user, key = request.mechanisms, request.user, request.key
        refuse_sampling(request.contributions, user, request.max_rows_per_user, "a Dask DataFrame")
        ledger, budget = request.ledger, request.budget
        parts, divisions = _pinned(self._frame)
        counted_ids: list[str] = []  # each partition's user ids, as counted
        shipped, release = plan_shipped_release(
            self.columns(),
            mechanisms,
            reports=self.report_columns(),
            key=key,
            seed=request.seed,
            user=user,
            memo_key=request.memo_key,
            fresh_keys=("on Dask", "each partition"),
            max_rows_per_user=request.max_rows_per_user,
            count_rows=lambda name: self._rows_per_user(name, len(parts), counted_ids),
            user_kind=lambda name: (
                adapter_for(self._frame._meta).to_arrow(self._frame._meta, name).type
            ),
        )
        once = None if shipped.key is not None else SingleExecution(release.release, "Dask")
        privatize = functools.partial(
            _privatize_partition,
            once=once,
            mechanisms=dict(mechanisms),
            shipped=shipped,
            memo=ShippedSource(release.memo),
            specs=release.specs,
            user=user,
            counted_ids=tuple(counted_ids) or None,
        )
        check_budget(ledger, budget, release)
        first_row = functools.partial(
            _charged_first_row, ledger, budget, dataclasses.replace(release, memo=None), once
        )
        meta = privatize(_meta_input(self._frame._meta, mechanisms), 0)
        outputs = _row_addressed(parts, privatize, first_row)
        # Keep every column's dtype as privatize_frame made it (no object -> string cast).
        with dask.config.set({"dataframe.convert-string": False}):
            out: dd.DataFrame = dd.from_delayed(
                outputs, meta=meta, divisions=divisions, verify_meta=False
            )
        return out

    def _rows_per_user(self, user: str, partitions: int, counted_ids: list[str]) -> int:
        """The most rows one user id holds (one computation of the user column), and into
        ``counted_ids`` the fingerprint of each of the ``partitions`` partitions' ids, which
        its privatizing task checks (:mod:`frameldp.frames.persons`)."""
        ids = self._frame[user]
        prints = ids.map_partitions(_ids_fingerprints, user, meta=(None, object))
        largest, nulls, found = dask.base.compute(
            ids.value_counts().max(), ids.isna().sum(), prints
        )
        if len(found) != partitions:  # the user column alone partitioned otherwise: read all
            parts = _pinned(self._frame)[0]
            found = dask.base.compute(*[delayed(_ids_fingerprints)(p, user) for p in parts])
            found = pd.concat(found)
        counted_ids.extend(found)
        if nulls:  # name the first row without an id, as the pandas accessor does
            found = ids.map_partitions(_first_null, meta=(None, object)).compute()
            sizes, firsts = zip(*found, strict=True)
            starts = np.concatenate([[0], np.cumsum(sizes)])[:-1]
            row = next(
                int(start + first)
                for start, first in zip(starts, firsts, strict=True)
                if first >= 0
            )
            return counted_rows(largest, nulls, user, first_null=row)
        return counted_rows(largest, nulls, user)

    def reduce(self, reduction: Reduction, by: tuple[str, ...]) -> Grouped:
        """Per-partition statistics (by group) merged in a tree (report columns never meet on
        one machine); debiasing the sums gives exactly the pandas estimates."""
        parts, _ = _pinned(self._frame[list(dict.fromkeys((*reduction.names, *by)))])
        chunk = functools.partial(
            _grouped_partition,
            reduction=reduction,
            by=by,
            expected=self._typed(list(reduction.names)),
        )
        grouped: Grouped = _tree_reduce(parts, chunk, merge_grouped)
        return grouped

    def gatherer(self, names: tuple[str, ...], column: str) -> Gather:
        """The report columns persisted once (each pass of a search reads the same reports:
        a graph recomputed per pass would draw new ones under a fresh key), then tree-reduced
        per pass as :meth:`reduce` does."""
        persisted = DaskEngine(self._frame[list(names)].persist())

        def gather(reduce: Callable[[Mapping[str, pa.Array]], Statistic]) -> Statistic:
            grouped = persisted.reduce(Reduction(names, reduce, column), ())
            return cast(Statistic, grouped.only())

        return gather

    def unpack(self, column: str, mechanism: Mechanism) -> dd.DataFrame:
        """Lazily, partition by partition."""
        found = mechanism
        empty = pa.array([], type=found.report_columns(column)[column])
        _, names = unpack_reports(empty, found, column)  # refuses reports that are no bit vectors
        index = self._frame._meta.index
        meta = pd.DataFrame({name: pd.Series([], dtype=np.uint8) for name in names}, index=index)
        unpacked: dd.DataFrame = self._frame[column].map_partitions(
            _unpack, found, column, meta=meta
        )
        return unpacked


@dd.extensions.register_dataframe_accessor("ldp")
class DaskFrameAccessor(FrameMethods):
    """``ddf.ldp`` on a Dask DataFrame (its engine: :class:`DaskEngine`)."""
