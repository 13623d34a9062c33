"""The ``.ldp`` accessor on Spark DataFrames (``pyspark.sql.DataFrame``).

Plumbing only: every task hands its Arrow record batches to the one batch pipeline
(:func:`~frameldp.frames.pipeline.privatize_columns`, the mechanism's ``statistic``) inside
``mapInArrow``; this module decides which rows a task holds, when reports are drawn and how
partial counts are added up.

**Privatizing is eager, and a release is read once.** Spark recomputes a DataFrame's lineage
for every action, and a lost block of a cached frame is recomputed silently: a lazily
privatized frame would draw new reports (under fresh keys) at every action, each a release of
its own that no ledger saw. So ``privatize`` runs when it is called:

1. the input is pinned with ``localCheckpoint(eager=True)``: its partitions are fixed blocks
   from here on (a repartition or a non-deterministic source could otherwise give another row
   order to the next pass); with ``user=``, each person's rows are counted on the pinned input,
   so a source that changes afterwards (a log that grows) cannot hold more rows of a person
   than the release states;
2. a counting pass over the pinned partitions gives the global row of each partition's first
   row, ``start[i] = rows[0] + ... + rows[i - 1]``;
3. ``mapInArrow`` privatizes every batch with ``row_start = start[partition] + offset``: a
   report's noise is a pure function of (key, stream label, global row), so with ``key=`` the
   reports equal those of the pandas accessor on the pinned frame (``sdf.toPandas()``) for the
   same key, and no two rows ever share a row id;
4. the reports are checkpointed the same way (``localCheckpoint(eager=True)``) and the ledger is
   charged once, on the driver, before the frame is returned.

Every later action reads the checkpointed reports. A lost checkpoint block (an executor gone)
fails the action instead of drawing the reports again: write a release to storage before
relying on it.

**Keys.** Without ``key=``/``seed=`` each task draws its own fresh key on its executor when it
runs; the key never leaves that process (a retried task draws another, and only one attempt's
reports are kept). A caller's key travels to the executors inside the task closure, as the raw
data does. ``user=`` needs ``memo_key=`` or ``key=``: a person's permanent responses must be the
same in every task.

**Report types** travel in the schema: Spark has no Arrow extension types, so every report
column's :class:`~frameldp.frames.report_type.ReportMetadata` is the ``"frameldp.reports"``
entry of its ``StructField`` metadata, which Spark keeps through projections, renames and its own
Parquet files; Parquet files written by frameldp elsewhere record it in their footers. A release
also adds a tag column (``frameldp_release_<nonce>``) that every table checks row by row, so rows
of another release are refused whatever brought them; :mod:`frameldp.frames._spark_reports`
also checks the metadata against the frame's plan (unions of different releases, renamed raw
columns and datasets of several releases are refused).

**Housekeeping.** The pinned input's blocks are removed once the reports are checkpointed (and
the reports' blocks too when the release fails). With ``spark.speculation`` on, a task could run
twice and store two versions of its rows' reports: ``privatize`` refuses.

**Aggregation** runs ``mapInArrow`` to one additive statistic per partition (per-bit or
per-label counts, by group), pickled, and sums them with ``treeAggregate``; report columns are
never collected on one machine, and debiasing the sums gives exactly the pandas estimate.
``shuffle`` and ``balcer_cheu`` permute every report together and need one machine: they raise.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame as SparkDataFrame
from pyspark.sql import functions as spark_functions
from pyspark.sql import types as spark_types
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type

from frameldp import errors
from frameldp.core.encoding import packed_width, padding_mask
from frameldp.core.mechanisms import Mechanism, Statistic, mechanism_from_spec
from frameldp.core.parallel import threads
from frameldp.core.report_text import BITS_PREFIX
from frameldp.errors import FrameLDPError, NoiseReuseError, ParameterError, shown
from frameldp.frames._spark_reports import (
    METADATA_KEY,
    RELEASE_KEY,
    ReleaseTag,
    SparkReports,
    check_tags,
    is_connect,
    recorded_reports,
)
from frameldp.frames.engine import Gather, Privatization, register_engine
from frameldp.frames.grouping import Grouped, Reduction, grouped_statistics, merge_grouped
from frameldp.frames.lookup import unpack_reports
from frameldp.frames.methods import FrameMethods
from frameldp.frames.persons import counted_rows, refuse_sampling
from frameldp.frames.pipeline import privatize_columns
from frameldp.frames.release import (
    ShippedSource,
    charging,
    check_budget,
    plan_shipped_release,
)
from frameldp.frames.report_type import (
    ReportMetadata,
    binary_text_bits,
    recorded_shuffle,
    report_types,
    storage_of,
)
from frameldp.results.native import Backend

__all__ = ["METADATA_KEY", "SparkEngine", "SparkFrameAccessor"]

_SIGNED = {pa.uint8(): pa.int8(), pa.uint16(): pa.int16(), pa.uint32(): pa.int32()}
_SIGNED[pa.uint64()] = pa.int64()
_ERROR_MARK = "frameldp-error:"


# -- errors from the executors -----------------------------------------------------------------


def _carried(error: FrameLDPError) -> RuntimeError:
    """A frameldp error as an executor raises it: Spark returns only the worker's traceback
    text to the driver, so the error's class name, message, column and parameter travel as
    JSON inside the message (never a pickle: that text may quote data values)."""
    fields = {
        "type": type(error).__name__,
        "message": str(error.args[0]) if error.args else "",
        "column": error.column if isinstance(error.column, str | int) else None,
        "parameter": error.parameter,
    }
    encoded = base64.b64encode(json.dumps(fields).encode()).decode()
    return RuntimeError(_ERROR_MARK + encoded + "|")


def _carried_back(text: str) -> FrameLDPError | None:
    """The frameldp error a task's error text carries, or None. Only the class names of
    :mod:`frameldp.errors` are rebuilt, from plain JSON, so a data value that imitates the
    mark yields at most a frameldp error with its text."""
    start = text.find(_ERROR_MARK)
    stop = text.find("|", start + len(_ERROR_MARK))
    if start < 0 or stop < 0:
        return None
    try:
        fields = json.loads(base64.b64decode(text[start + len(_ERROR_MARK) : stop]))
        kind = getattr(errors, str(fields["type"]), None)
        if not (isinstance(kind, type) and issubclass(kind, FrameLDPError)):
            return None
        column, parameter = fields.get("column"), fields.get("parameter")
        return kind(
            str(fields["message"]),
            column=column if isinstance(column, str | int) else None,
            parameter=parameter if isinstance(parameter, str) else None,
        )
    except (ValueError, TypeError, KeyError):  # binascii.Error and JSON errors included
        return None


def _running(action: Callable[[], Any]) -> Any:
    """Run a Spark action; a frameldp error raised in a task is raised again as itself."""
    try:
        return action()
    except FrameLDPError:
        raise
    except Exception as error:  # pyspark's PythonException, Py4JJavaError, ...
        carried = _carried_back(str(error))
        if carried is None:
            raise
        raise carried from None


def _frameldp_errors(task: Callable[..., Iterator[pa.RecordBatch]]) -> Callable[..., Any]:
    """Wrap a ``mapInArrow`` function so that its frameldp errors reach the driver whole."""

    @functools.wraps(task)
    def wrapped(batches: Iterator[pa.RecordBatch], *args: Any, **kwargs: Any) -> Any:
        try:
            yield from task(batches, *args, **kwargs)
        except FrameLDPError as error:
            raise _carried(error) from None

    return wrapped


# -- report storage in Spark's types -----------------------------------------------------------


def _to_spark(array: pa.Array) -> pa.Array:
    """Spark has no unsigned integers: unsigned reports (local hashing, Hadamard response) are
    kept in the signed type of their width, bits unchanged."""
    signed = _SIGNED.get(array.type)
    return array if signed is None else array.view(signed)


def _from_spark(array: pa.Array | pa.ChunkedArray, kind: pa.DataType | None) -> Any:
    """A report column read from Spark in its storage type ``kind``: the signed view of an
    unsigned type, or Spark's reading of a Parquet ``UINT_64`` (a decimal), converted exactly."""
    if kind is None or array.type == kind or not pa.types.is_integer(kind):
        return array
    if _SIGNED.get(kind) == array.type:
        return array.view(kind)
    return array.cast(kind)


def _storage_types(reports: Mapping[Any, ReportMetadata]) -> dict[Any, pa.DataType]:
    """The storage type of every report column, from its recorded mechanism."""
    out = {}
    for name, meta in reports.items():
        mechanism = mechanism_from_spec(meta.spec)
        kinds = list(report_types(mechanism, meta.column, meta.spec).values())
        if meta.part < len(kinds):
            out[name] = kinds[meta.part].storage_type
    return out


# -- report metadata ---------------------------------------------------------------------------


def _quoted(name: str) -> Any:
    """A top-level column by its exact name (dots and backticks included)."""
    return spark_functions.col("`" + name.replace("`", "``") + "`")


def _positional(frame: SparkDataFrame, names: Sequence[str]) -> SparkDataFrame:
    """``names`` renamed ``_0``, ``_1``, ...: ``mapInArrow`` resolves its input's names again,
    and fails on a name holding a dot; tasks give the names back by position (``_named``)."""
    return frame.select(*(_quoted(name).alias(f"_{i}") for i, name in enumerate(names)))


def _named(batch: pa.RecordBatch, names: Sequence[str]) -> dict[str, pa.Array]:
    """A positional batch's columns under their own names."""
    return {name: batch.column(i) for i, name in enumerate(names)}


# -- what runs in each task --------------------------------------------------------------------


def _partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:  # pragma: no cover - only called inside Spark tasks
        raise RuntimeError("not inside a Spark task")
    return int(context.partitionId())


def _count_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``(partition, rows)`` of one partition."""
    rows = sum(batch.num_rows for batch in batches)
    yield pa.RecordBatch.from_arrays(
        [pa.array([_partition_id()], pa.int32()), pa.array([rows], pa.int64())],
        names=["partition", "rows"],
    )


@_frameldp_errors
def _privatize_task(
    batches: Iterator[pa.RecordBatch],
    *,
    starts: Sequence[int],
    mechanisms: Mapping[str, Mechanism],
    specs: Mapping[str, Mapping[str, Any]],
    shipped: ShippedSource,
    memo: ShippedSource,
    user: str | None,
    inputs: Sequence[str],
    names: Sequence[str],
    tag: ReleaseTag,
) -> Iterator[pa.RecordBatch]:
    """The reports of one partition, addressed by global row (module docstring), and the
    release's tag column. A partition must hold the rows the counting pass found in it
    (``starts[i] .. starts[i + 1]``): else the task fails, and the release with it, rather than
    give a row id to two rows."""
    partition = _partition_id()
    row, end = starts[partition], starts[partition + 1]
    source = shipped.source()  # a fresh key is drawn here, and never sent anywhere
    with threads(1):  # Spark already runs one task per core
        for batch in batches:
            columns = _named(batch, inputs)
            produced = privatize_columns(
                columns,
                mechanisms,
                specs=specs,
                source=source,
                row_start=row,
                user=user,
                memo=memo.optional(),
            )
            row += batch.num_rows
            if row > end:
                raise _miscounted(partition, end - starts[partition])
            produced[tag.column] = pa.array(np.full(batch.num_rows, tag.nonce, np.int64))
            arrays = [
                _to_spark(storage_of(produced[name])) if name in produced else columns[name]
                for name in names
            ]
            yield pa.RecordBatch.from_arrays(arrays, names=list(names))
    if row != end:
        raise _miscounted(partition, end - starts[partition])


def _miscounted(partition: int, counted: int) -> NoiseReuseError:
    return NoiseReuseError(
        f"partition {partition} of the pinned input no longer holds the {counted} rows counted "
        "in it: its rows would take row ids of others; nothing was released"
    )


@_frameldp_errors
def _statistics_task(
    batches: Iterator[pa.RecordBatch],
    *,
    reduction: Reduction,
    by: tuple[str, ...],
    kinds: Mapping[str, pa.DataType],
    tags: Mapping[str, ReleaseTag],
    names: Sequence[str],
) -> Iterator[pa.RecordBatch]:
    """One partition's statistics (by group), pickled into one row, once every row is checked
    to be of the release its metadata records."""
    total = Grouped()
    with threads(1):
        for batch in batches:
            arrays = {
                name: _from_spark(array, kinds.get(name))
                for name, array in _named(batch, names).items()
            }
            check_tags(arrays, tags)
            total = merge_grouped(total, grouped_statistics(arrays, reduction, by))
    yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(total)], pa.binary())], ["partial"])


@_frameldp_errors
def _unpack_task(
    batches: Iterator[pa.RecordBatch], *, mechanism: Mechanism, column: str, names: list[str]
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        bits, _ = unpack_reports(batch.column(0), mechanism, column)
        arrays = [pa.array(bits[:, j].astype(np.int8)) for j in range(len(names))]
        yield pa.RecordBatch.from_arrays(arrays, names=names)


def _unpickled(row: Any) -> Grouped:
    return cast(Grouped, pickle.loads(row[0]))


# -- the engine and the accessor ---------------------------------------------------------------


def _conf_of(frame: SparkDataFrame) -> Any:
    """The Spark configuration ``frame`` runs under (a Connect session's runtime conf)."""
    session = frame.sparkSession
    return session.conf if is_connect(frame) else session.sparkContext.getConf()


def _refuse_speculation(conf: Any) -> None:
    """Speculative execution runs a slow task twice, and each attempt of a fresh-key task
    draws its own reports: two versions of one row's report could be stored (``conf``: a
    ``SparkConf`` or a session's runtime conf)."""
    if str(conf.get("spark.speculation", "false")).strip().lower() == "true":
        raise ParameterError(
            "spark.speculation is on: a speculative copy of a task would draw a second set of "
            "reports for its rows; privatize in a session with spark.speculation=false"
        )


# Spark starts its Python workers with PYSPARK_PYTHON (else "python3" from the PATH), which is
# not this interpreter when a virtualenv's python runs without the virtualenv activated: the
# workers then cannot import frameldp, and fail inside a Java stack trace. Sessions created
# after frameldp met pyspark run this interpreter unless the user chose another.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@functools.lru_cache(maxsize=8)
def _imports_frameldp(python: str) -> bool:
    """Whether the interpreter ``python`` can import frameldp (asked once per path)."""
    found = shutil.which(python) or python
    if os.path.realpath(found) == os.path.realpath(sys.executable):
        return True
    try:
        done = subprocess.run(
            [found, "-c", "import frameldp"], capture_output=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _refuse_workers_without_frameldp(frame: SparkDataFrame) -> None:
    """A local session whose Python workers cannot import frameldp is refused with the fix,
    before a task fails in them (a cluster's workers cannot be checked from the driver, nor a
    Connect server's: its workers fail with a frameldp error naming the fix)."""
    if is_connect(frame):
        return
    context = frame.sparkSession.sparkContext
    python = str(getattr(context, "pythonExec", "") or "")
    if not str(context.master).startswith("local") or not python or _imports_frameldp(python):
        return
    raise ParameterError(
        f"Spark runs its Python workers with {shown(python, 120)}, which cannot import "
        f"frameldp: create the SparkSession with PYSPARK_PYTHON={sys.executable} in the "
        "environment (or the Spark conf spark.pyspark.python), or install frameldp there"
    )


def _refuse_streaming(frame: SparkDataFrame) -> None:
    """A streaming frame has no global row positions to address noise by, and Spark runs it
    only through ``writeStream``: refused before any query runs."""
    if frame.isStreaming:
        raise ParameterError(
            "a streaming Spark DataFrame (spark.readStream) is not supported: frameldp "
            "privatizes and debiases batch frames (spark.read)"
        )


class _PinnedInput:
    """A frame pinned with ``localCheckpoint(eager=True)`` when first asked for, once."""

    def __init__(self, frame: SparkDataFrame) -> None:
        self._frame = frame
        self._pinned: SparkDataFrame | None = None

    def __call__(self) -> SparkDataFrame:
        if self._pinned is None:
            self._pinned = _running(lambda: self._frame.localCheckpoint(eager=True))
        return self._pinned

    def drop(self) -> None:
        """Remove the pinned blocks (if pinned)."""
        _drop_checkpoint(self._pinned)


def _rows_per_user(frame: SparkDataFrame, user: str) -> int:
    """The most rows one user id holds in ``frame`` (one Spark job over the user column)."""
    column = spark_functions.col
    quoted = "`" + user.replace("`", "``") + "`"
    counts = frame.select(column(quoted).alias("id")).groupBy("id").count()
    row = counts.agg(
        spark_functions.max(spark_functions.when(column("id").isNotNull(), column("count"))).alias(
            "largest"
        ),
        spark_functions.sum(spark_functions.when(column("id").isNull(), column("count"))).alias(
            "nulls"
        ),
    ).first()
    return 1 if row is None else counted_rows(row["largest"], row["nulls"], user)


def _drop_checkpoint(frame: SparkDataFrame | None) -> None:
    """Remove a local checkpoint's blocks from the executors (best effort: an executor may be
    gone already, and then so are its blocks)."""
    if frame is None:
        return
    if is_connect(frame):
        _release_cached_relation(frame)
        return
    from py4j.protocol import Py4JError

    with contextlib.suppress(Py4JError):
        frame._jdf.queryExecution().analyzed().rdd().unpersist(False)


def _release_cached_relation(frame: SparkDataFrame) -> None:
    """Release a Connect checkpoint now, rather than from its finalizer.

    pyspark's ``CachedRemoteRelation.__del__`` opens a gRPC call, which starts a thread and
    waits for it. Run by the garbage collector in the middle of another thread's start (which
    holds ``threading``'s limbo lock), it waits forever for a thread that needs that lock: a
    test worker hung so with pyspark 4.3. Released here, at a point that holds no lock, the
    finalizer later finds no relation id and does nothing."""
    plan: Any = getattr(frame, "_plan", None)
    if type(plan).__name__ != "CachedRemoteRelation" or getattr(plan, "_relation_id", None) is None:
        return
    release = getattr(type(plan), "__del__", None)
    if release is not None:
        release(plan)  # logs, never raises, when the server refuses
    plan._relation_id = None


@register_engine(SparkDataFrame)
class SparkEngine:
    """A Spark DataFrame: privatized eagerly (see the module docstring), its reports debiased
    with tree aggregations (the reports equal the pandas accessor's for the same key). Nothing
    here gathers a column on the driver."""

    backend: Backend = "pandas"
    one_machine: str | None = "sdf.toPandas()"

    def __init__(self, frame: SparkDataFrame) -> None:
        self._frame = frame

    @functools.cached_property
    def _recorded(self) -> SparkReports:
        _refuse_streaming(self._frame)
        return recorded_reports(self._frame)  # the plan and footers are read once per accessor

    def columns(self) -> list[Any]:
        _refuse_streaming(self._frame)
        _refuse_workers_without_frameldp(self._frame)
        return list(self._frame.columns)

    def report_columns(self) -> dict[Any, ReportMetadata]:
        return dict(self._recorded.metadata)

    def recorded_shuffle(self) -> dict[str, Any]:
        return recorded_shuffle(self.report_columns())

    def num_rows(self) -> int:
        return int(_running(self._frame.count))

    def distinct(self, column: Any) -> pa.Array | pa.ChunkedArray:
        """The distinct values of ``column`` (all ``domain="infer"`` reads), computed by Spark."""
        _refuse_streaming(self._frame)
        values = _quoted(column)
        kind = self._frame.schema[column].dataType
        if isinstance(kind, spark_types.MapType | spark_types.StructType):
            raise ParameterError(
                f"column {shown(column)}: holds {kind.simpleString()[:60]} values; frameldp "
                "privatizes categories (strings, integers, booleans) and arrays of them",
                column=column,
                parameter="domain",
            )
        if isinstance(kind, spark_types.ArrayType):
            values = spark_functions.explode(values)
        distinct = self._frame.select(values.alias("value")).distinct()
        array = _running(distinct.toArrow).column(0)
        return pc.unique(array.drop_null()) if len(array) else array

    def privatize(self, request: Privatization) -> SparkDataFrame:
        """Replace each column by its reports, now (see the module docstring).

        Returns a checkpointed Spark DataFrame whose reports are addressed by global row: with
        ``key=`` exactly the pandas accessor's reports on ``sdf.toPandas()`` for the same key;
        without, each task draws a fresh key on its executor. Every later action reads the same
        reports. Values outside the domain raise their :class:`~frameldp.DomainError` here;
        with ``ledger`` and ``budget`` the release is charged once, after its reports exist.
        Bloom RAPPOR columns also get a ``{column}_cohort`` column; ``user=`` needs
        ``memo_key=`` or ``key=`` (see :meth:`rappor`); it counts each person's rows first (see
        ``DataFrame.ldp.privatize``).
        """
        mechanisms, user, ledger, budget = (
            request.mechanisms,
            request.user,
            request.ledger,
            request.budget,
        )
        refuse_sampling(request.contributions, user, request.max_rows_per_user, "a Spark DataFrame")
        pinned_input = _PinnedInput(self._frame)  # people are counted on the rows privatized
        try:
            shipped, release = plan_shipped_release(
                self.columns(),
                mechanisms,
                reports=self.report_columns(),
                key=request.key,
                seed=request.seed,
                user=user,
                memo_key=request.memo_key,
                fresh_keys=("on Spark", "each task"),
                max_rows_per_user=request.max_rows_per_user,
                count_rows=lambda name: _rows_per_user(pinned_input(), name),
                user_kind=lambda name: to_arrow_type(self._frame.schema[name].dataType),
            )
            check_budget(ledger, budget, release)
            _refuse_speculation(_conf_of(self._frame))
            tag = ReleaseTag.fresh()
            schema = self._release_schema(mechanisms, release.specs, tag)
            out = None
            try:
                with charging(ledger, budget, release):
                    pinned = pinned_input()
                    positional = _positional(pinned, pinned.columns)
                    counts = _running(
                        lambda: positional.mapInArrow(
                            _count_rows, "partition int, rows long"
                        ).collect()
                    )
                    rows = dict(sorted((int(r["partition"]), int(r["rows"])) for r in counts))
                    starts = np.concatenate([[0], np.cumsum([rows[i] for i in range(len(rows))])])
                    task = functools.partial(
                        _privatize_task,
                        starts=[int(start) for start in starts],
                        mechanisms=dict(mechanisms),
                        specs=release.specs,
                        shipped=shipped,
                        memo=ShippedSource(release.memo),
                        user=user,
                        inputs=pinned.columns,
                        names=schema.fieldNames(),
                        tag=tag,
                    )
                    released = positional.mapInArrow(task, schema)
                    out = _running(lambda: released.localCheckpoint(eager=True))
            except BaseException:
                _drop_checkpoint(out)  # reports of a failed release are never read
                raise
            return cast(SparkDataFrame, out)
        finally:
            pinned_input.drop()  # the reports no longer read the input

    def _release_schema(
        self,
        mechanisms: Mapping[str, Mechanism],
        specs: Mapping[str, Mapping[str, Any]],
        tag: ReleaseTag,
    ) -> spark_types.StructType:
        """The input's fields, each privatized column replaced by its report columns (typed by
        their storage, recording their metadata and release tag), and the tag column."""
        fields = []
        for field in self._frame.schema.fields:
            if field.name not in mechanisms:
                fields.append(field)
                continue
            kinds = report_types(mechanisms[field.name], field.name, specs[field.name])
            for name, kind in kinds.items():
                metadata = {METADATA_KEY: kind.metadata.to_json(), RELEASE_KEY: tag.to_json()}
                spark_kind = from_arrow_type(_SIGNED.get(kind.storage_type, kind.storage_type))
                fields.append(spark_types.StructField(name, spark_kind, True, metadata))
        fields.append(spark_types.StructField(tag.column, spark_types.LongType(), False))
        return spark_types.StructType(fields)

    def reduce(self, reduction: Reduction, by: tuple[str, ...]) -> Grouped:
        """Per-partition statistics (by group) summed by ``treeAggregate`` (report columns
        never meet on one machine); debiasing the sums gives exactly the pandas estimates."""
        tagged = self._recorded.tags
        tags = {name: tagged[name] for name in reduction.names if name in tagged}
        read = list(dict.fromkeys((*reduction.names, *by, *(t.column for t in tags.values()))))
        kinds = _storage_types(self.report_columns())
        task = functools.partial(
            _statistics_task, reduction=reduction, by=by, kinds=kinds, tags=tags, names=read
        )
        partials = _positional(self._frame, read).mapInArrow(task, "partial binary")
        if is_connect(self._frame):  # no RDDs: one partial per partition, merged here
            rows = _running(partials.collect)
            grouped = merge_grouped(Grouped(), *(_unpickled(row) for row in rows))
        else:
            grouped = cast(
                Grouped,
                _running(
                    lambda: partials.rdd.map(_unpickled).treeAggregate(
                        Grouped(), merge_grouped, merge_grouped
                    )
                ),
            )
        if not by and not grouped.keys:  # no rows at all: the empty statistic
            schema = self._frame.schema
            empty = {
                name: _from_spark(
                    pa.array([], to_arrow_type(schema[name].dataType)), kinds.get(name)
                )
                for name in reduction.names
            }
            grouped = grouped_statistics(empty, reduction, ())
        return grouped

    def gatherer(self, names: tuple[str, ...], column: str) -> Gather:
        """Each pass of a search reads the same reports: a release privatized here is
        checkpointed, and files do not change under a read."""

        def gather(reduce: Callable[[Mapping[str, pa.Array]], Statistic]) -> Statistic:
            grouped = self.reduce(Reduction(names, reduce, column), ())
            return cast(Statistic, grouped.only())

        return gather

    def plain(self, *, text: bool) -> SparkDataFrame:
        """The report columns without their recorded release (Spark columns hold the storage
        values already); with ``text``, bit-vector reports as their text form, computed by
        Spark (its CSV writer takes no binary column)."""
        reports = self.report_columns()
        columns = []
        for name in self.columns():
            column = spark_functions.col(f"`{name}`")
            if name in reports:
                binary = isinstance(self._frame.schema[name].dataType, spark_types.BinaryType)
                bits = binary_text_bits(reports[name]) if text and binary else None
                if bits is not None:
                    column = _bits_text(column, bits)
                column = column.alias(name, metadata={})
            columns.append(column)
        return self._frame.select(columns)

    def unpack(self, column: str, mechanism: Mechanism) -> SparkDataFrame:
        """As ``tinyint`` columns (Spark has no unsigned bytes)."""
        found = mechanism
        empty = pa.array([], type=found.report_columns(column)[column])
        _, names = unpack_reports(empty, found, column)  # refuses reports that are no bit vectors
        schema = spark_types.StructType(
            [spark_types.StructField(name, spark_types.ByteType(), False) for name in names]
        )
        task = functools.partial(_unpack_task, mechanism=found, column=column, names=names)
        return _positional(self._frame, [column]).mapInArrow(task, schema)


def _bits_text(column: Any, num_bits: int) -> Any:
    """Spark's expression of the text form of packed bit reports (``"b"``, then each byte's 8
    bits, most significant first, cut to ``num_bits``; see :mod:`frameldp.core.report_text`).
    A value of another width or with padding bits set is no report: ``"0x"`` and its hex, as
    the Python codec shows it, which ``debias`` refuses."""
    f = spark_functions
    width = packed_width(num_bits)
    bytes_ = [
        f.lpad(f.conv(f.hex(f.substring(column, i + 1, 1)), 16, 2), 8, "0") for i in range(width)
    ]
    text = f.concat(f.lit(BITS_PREFIX), f.substring(f.concat(*bytes_), 1, num_bits))
    last = f.conv(f.hex(f.substring(column, width, 1)), 16, 10).cast("int")
    valid = (f.length(column) == width) & (last.bitwiseAND(padding_mask(num_bits)) == 0)
    return f.when(valid, text).otherwise(f.concat(f.lit("0x"), f.lower(f.hex(column))))


class SparkFrameAccessor(FrameMethods):
    """``sdf.ldp`` on a Spark DataFrame (its engine: :class:`SparkEngine`)."""


def _accessor(frame: SparkDataFrame) -> SparkFrameAccessor:
    return SparkFrameAccessor(frame)


SparkDataFrame.ldp = property(_accessor, doc="The frameldp accessor (``sdf.ldp``).")  # type: ignore[attr-defined]
