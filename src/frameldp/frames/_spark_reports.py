"""Which columns of a Spark frame hold frameldp reports, and of which release.

Spark has no Arrow extension types, so a report column's
:class:`~frameldp.frames.report_type.ReportMetadata` is found in one of two places:

* its ``StructField`` metadata (``"frameldp.reports"``), set by ``sdf.ldp.privatize`` and kept by
  Spark through projections, renames and its own Parquet files;
* the footers of Parquet files written elsewhere (pandas, polars, the command line), whose Arrow
  schema records the extension types that Spark drops when it reads them.

Neither can be taken at face value: the metadata decides which guarantee a table claims and
whether it is marked seeded, and a wrong answer understates it. Spark's ``union`` keeps the field
metadata of its first input only (a seeded release unioned after a fresh one loses its mark, a
higher epsilon is hidden); a footer names a column, and a raw column renamed to that name is no
report. So this module reads the frame's analyzed logical plan:

1. **Footers.** Every file of every Parquet relation in the plan is read, through Spark's own
   Hadoop filesystem (any store Spark reads: ``s3a://``, ``abfss://``, ``hdfs://``), whatever its
   name. The files of one relation must record the same reports (a dataset of several releases is
   refused), and a footer's metadata belongs only to that relation's own attributes (by
   expression id): a column derived from one, rebuilt or renamed is not taken for reports (pass
   ``mechanism=`` to assert it), and a raw column given a report column's name never is.
2. **Unions.** At every ``Union`` in the plan, each column must record the same release in every
   input (or none in all of them); otherwise the frame is refused.
3. **Names.** Two columns of one name (a join) are refused: Spark would keep one field's metadata.

Spark Connect frames do not expose their plan; they are refused.
"""

from __future__ import annotations

import base64
import collections
import json
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame as SparkDataFrame
from pyspark.sql import types as spark_types

from frameldp.errors import ParameterError, shown
from frameldp.frames.report_type import EXTENSION_NAME, ReportMetadata, metadata_of

__all__ = ["METADATA_KEY", "recorded_reports", "schema_reports"]

METADATA_KEY = EXTENSION_NAME
"""The ``StructField`` metadata entry holding a report column's metadata (JSON)."""

_ARROW_SCHEMA = "ARROW:schema"
_SPARK_ROW_METADATA = "org.apache.spark.sql.parquet.row.metadata"

Recorded = Callable[[Any], ReportMetadata | None]


def recorded_reports(frame: SparkDataFrame) -> dict[str, ReportMetadata]:
    """``{column: metadata}`` of the frame's report columns, checked against its plan (module
    docstring); a :class:`~frameldp.errors.ParameterError` where they cannot be trusted."""
    counts = collections.Counter(frame.columns)
    twice = [name for name, count in counts.items() if count > 1]
    if twice:
        raise ParameterError(
            f"column {shown(twice[0])}: the frame has {counts[twice[0]]} columns of this name "
            "(a join?); rename or drop all but one first"
        )
    plan = _analyzed(frame)
    nodes = list(_nodes(plan))
    from_files = _footer_metadata(nodes, frame.sparkSession._jvm)

    def recorded(attribute: Any) -> ReportMetadata | None:
        own = _attribute_metadata(attribute)
        in_file = from_files.get(attribute.exprId().id())
        if own is not None and in_file is not None and own != in_file:
            raise ParameterError(
                f"column {shown(attribute.name())}: its schema and its Parquet files record "
                "different releases; debias each release on its own"
            )
        return own or in_file

    for node in nodes:
        if _kind(node) == "Union":
            _check_union(node, recorded)
    out = {}
    for attribute in _seq(plan.output()):
        meta = recorded(attribute)
        if meta is not None:
            out[str(attribute.name())] = meta
    return out


def schema_reports(schema: spark_types.StructType) -> dict[str, ReportMetadata]:
    """Report columns recorded in a schema's ``StructField`` metadata."""
    out: dict[str, ReportMetadata] = {}
    for field in schema.fields:
        text = (field.metadata or {}).get(METADATA_KEY)
        if text is not None:
            out[field.name] = ReportMetadata.from_json(text)
    return out


# -- the plan ----------------------------------------------------------------------------------


def _analyzed(frame: SparkDataFrame) -> Any:
    jdf = getattr(frame, "_jdf", None)
    if jdf is None:
        raise ParameterError(
            "a Spark Connect frame does not expose its plan, so frameldp cannot check which "
            "release its columns hold; use a classic Spark session"
        )
    return jdf.queryExecution().analyzed()


def _seq(sequence: Any) -> list[Any]:
    """A Scala sequence as a list (through py4j)."""
    return [sequence.apply(i) for i in range(sequence.size())]


def _nodes(plan: Any) -> Iterator[Any]:
    """Every node of a logical plan (its children, not its subqueries: they add no rows)."""
    stack = [plan]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(_seq(node.children()))


def _kind(java_object: Any) -> str:
    return str(java_object.getClass().getSimpleName())


def _attribute_metadata(attribute: Any) -> ReportMetadata | None:
    metadata = attribute.metadata()
    if not metadata.contains(METADATA_KEY):
        return None
    return ReportMetadata.from_json(str(metadata.getString(METADATA_KEY)))


def _check_union(node: Any, recorded: Recorded) -> None:
    """Every column of a union records one release (or none) in all its inputs."""
    inputs = [_seq(child.output()) for child in _seq(node.children())]
    for position, attribute in enumerate(inputs[0]):
        first = recorded(attribute)
        if any(recorded(columns[position]) != first for columns in inputs[1:]):
            raise ParameterError(
                f"column {shown(attribute.name())}: the frame is a union of different releases "
                "(or of reports and other data), and Spark keeps the first one's metadata only; "
                "debias each release on its own"
            )


# -- Parquet footers ---------------------------------------------------------------------------


def _footer_metadata(nodes: list[Any], jvm: Any) -> dict[int, ReportMetadata]:
    """``{expression id: metadata}`` of the attributes read from Parquet files whose footers
    record report columns."""
    out: dict[int, ReportMetadata] = {}
    for node in nodes:
        if _kind(node) == "DataSourceV2Relation" and "Parquet" in _kind(node.table()):
            raise ParameterError(
                "the frame reads Parquet through Spark's DataSource V2, whose plan does not name "
                "its files; add parquet to spark.sql.sources.useV1SourceList (Spark's default)"
            )
        if _kind(node) != "LogicalRelation":
            continue
        relation = node.relation()
        if _kind(relation) != "HadoopFsRelation" or _kind(relation.fileFormat()) != (
            "ParquetFileFormat"
        ):
            continue
        recorded = _relation_reports(relation, jvm)
        for attribute in _seq(node.output()):
            meta = recorded.get(str(attribute.name()))
            if meta is not None:
                out[attribute.exprId().id()] = meta
    return out


def _relation_reports(relation: Any, jvm: Any) -> dict[str, ReportMetadata]:
    """The report columns all files of one Parquet relation record (they must agree)."""
    conf = relation.sparkSession().sessionState().newHadoopConfWithOptions(relation.options())
    found: dict[str, ReportMetadata] | None = None
    for path in sorted(str(path) for path in relation.location().inputFiles()):
        here = _file_reports(_key_values(jvm, conf, path))
        if found is not None and here != found:
            differing = sorted({*here, *found} - {n for n in here if here[n] == found.get(n)})
            raise ParameterError(
                f"column {shown(differing[0] if differing else '?')}: the frame's Parquet files "
                "record different releases (a dataset of several releases?); debias each "
                "release on its own"
            )
        found = here
    return found or {}


def _key_values(jvm: Any, conf: Any, path: str) -> dict[str, str]:
    """The key-value metadata of one Parquet file's footer, read by Spark's Parquet reader."""
    from py4j.protocol import Py4JJavaError

    try:
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        opened = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(hadoop_path, conf)
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(opened)
        try:
            return dict(reader.getFooter().getFileMetaData().getKeyValueMetaData())
        finally:
            reader.close()
    except Py4JJavaError as error:
        cause = _kind(error.java_exception)
        raise ParameterError(
            f"file {shown(path, 120)}: its Parquet footer cannot be read ({cause}), so which "
            "release it holds cannot be checked; nothing was read"
        ) from None


def _file_reports(key_values: dict[str, str]) -> dict[str, ReportMetadata]:
    """Report columns one file's footer records: Arrow extension types in its Arrow schema
    (pandas, polars, the command line) or field metadata in Spark's schema (Spark)."""
    out: dict[str, ReportMetadata] = {}
    arrow = key_values.get(_ARROW_SCHEMA)
    if arrow is not None:
        try:
            schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(arrow)))
        except (ValueError, pa.ArrowException):  # binascii.Error is a ValueError
            raise ParameterError(
                f"a Parquet file's Arrow schema cannot be read: {shown(arrow, 40)}"
            ) from None
        for field in schema:
            meta = metadata_of(field.type, field.metadata)
            if meta is not None:
                out[field.name] = meta
    spark_schema = key_values.get(_SPARK_ROW_METADATA)
    if spark_schema is not None:
        try:
            parsed = spark_types.StructType.fromJson(json.loads(spark_schema))
        except (ValueError, TypeError, KeyError):
            raise ParameterError(
                f"a Parquet file's Spark schema cannot be read: {shown(spark_schema, 40)}"
            ) from None
        out.update(schema_reports(parsed))
    return out
