"""Which columns of a Spark frame hold frameldp reports, of which release, and the check that
each of their rows belongs to that release.

Spark has no Arrow extension types, so a report column's
:class:`~frameldp.frames.report_type.ReportMetadata` is found in one of two places:

* its ``StructField`` metadata (``"frameldp.reports"``), set by ``sdf.ldp.privatize`` and kept by
  Spark through projections, renames and its own Parquet files;
* the footers of Parquet files written elsewhere (pandas, polars, the command line), whose Arrow
  schema records the extension types that Spark drops when it reads them.

Neither can be taken at face value: the metadata decides which guarantee a table claims and
whether it is marked seeded, and a wrong answer understates it. Spark metadata belongs to a
column, not to its rows, and many operations hand a column's metadata to rows it never described:
a ``union`` keeps its first input's, an ``insertInto`` a table's, a reused schema the files'
it reads, a checkpoint whatever it was given. So:

1. **Release tags (Spark releases).** ``privatize`` adds one column per release,
   ``frameldp_release_<nonce>``, holding a random 63-bit nonce in every row, and records
   ``{"tag": column, "nonce": nonce}`` (``"frameldp.release"``) in each report column's
   metadata. Every pass that reads reports (``debias``, ``decode``, ``discover``) checks, in the
   same task, that every row's tag equals the nonce: rows of another release, or raw rows, make
   it fail, whatever plan or file brought them. A report column whose tag column was dropped is
   refused, and so is schema metadata without a tag (set by hand).
2. **Footers (files written outside Spark).** They carry no tags, so their metadata is trusted
   only where the plan shows that the column is read from those files: every file of every
   Parquet relation is read through Spark's own Hadoop filesystem (any store Spark reads, any
   file name); one relation's files must record the same reports; the metadata goes to that
   relation's own attributes (by expression id; partition columns excluded) and only when every
   node of the plan is a projection, filter, join, sort, limit, sample, aggregate or union of
   them. A column renamed or rebuilt, or read through anything else, is not taken for reports
   (pass ``mechanism=`` to assert it); a raw column given a report column's name never is.
3. **Unions.** At every ``Union`` (and recursive ``UnionLoop``), each column must record the same
   release in every input, or none in all of them: refused before any job runs.
4. **Names.** Two columns of one name (a join) are refused: Spark keeps one field's metadata.

``sdf.ldp.specs`` and ``privacy`` read the metadata only; the tables verify the rows. A Spark
Connect frame's plan is on the client only as far as DataFrame operations built it: its report
columns are read from its schema's field metadata, every one with its release tag, which the
tables check row by row; every union in the client plan is checked as above (by position, or
by name for ``unionByName``), and report columns that come through SQL text (``spark.sql``,
analyzed on the server) are refused. Parquet footers written elsewhere are not trusted.

What the tags cannot see: a value moved to another column *within* a release's own rows
(a positional ``insertInto`` of another column, ``DataFrame.to(schema)``,
``createDataFrame(..., schema=release.schema)``, ``withMetadata``) keeps the metadata, since
every row still holds the release's nonce; and the nonce is public (it is in the schema), so
the tags guard against mistakes, not against a deliberate forgery. Rows repeated (a union of a
release with itself, a join that repeats people) are copies of reports: the stated guarantee
holds (post-processing), but ``n`` counts the copies and the intervals are too narrow.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import json
import secrets
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame as SparkDataFrame
from pyspark.sql import types as spark_types

from frameldp.errors import ParameterError, shown
from frameldp.frames.report_type import EXTENSION_NAME, ReportMetadata, metadata_of

__all__ = [
    "METADATA_KEY",
    "RELEASE_KEY",
    "ReleaseTag",
    "SparkReports",
    "check_tags",
    "is_connect",
    "recorded_reports",
]

METADATA_KEY = EXTENSION_NAME
"""The ``StructField`` metadata entry holding a report column's metadata (JSON)."""
RELEASE_KEY = "frameldp.release"
"""The ``StructField`` metadata entry naming a report column's release tag (JSON)."""

_ARROW_SCHEMA = "ARROW:schema"
_SPARK_ROW_METADATA = "org.apache.spark.sql.parquet.row.metadata"
_UNIONS = {"Union", "UnionLoop"}
_FOOTER_SAFE = {
    "Union",
    "Aggregate",
    "Deduplicate",
    "Distinct",
    "Filter",
    "GlobalLimit",
    "Join",
    "LocalLimit",
    "LogicalRelation",
    "Project",
    "Repartition",
    "RepartitionByExpression",
    "Sample",
    "Sort",
    "SubqueryAlias",
}
"""Plan nodes that pass a relation's attributes on (or drop them), never hand them to other rows
(a union's inputs are compared)."""


@dataclasses.dataclass(frozen=True)
class ReleaseTag:
    """One Spark release's tag: the column whose every row holds ``nonce``."""

    column: str
    nonce: int

    @classmethod
    def fresh(cls) -> ReleaseTag:
        """A new release's tag (63 random bits: Spark's ``long`` is signed)."""
        nonce = secrets.randbits(63)
        return cls(f"frameldp_release_{nonce:016x}", nonce)

    def to_json(self) -> str:
        return json.dumps({"tag": self.column, "nonce": self.nonce})

    @classmethod
    def from_json(cls, text: str) -> ReleaseTag:
        try:
            data = json.loads(text)
            return cls(str(data["tag"]), int(data["nonce"]))
        except (ValueError, TypeError, KeyError):
            raise ParameterError(f"a {RELEASE_KEY} entry is not valid: {shown(text, 80)}") from None


@dataclasses.dataclass(frozen=True)
class Found:
    """A column's report metadata, its release tag, and whether it came from the schema."""

    metadata: ReportMetadata
    tag: ReleaseTag | None
    in_schema: bool

    def release(self) -> tuple[ReportMetadata, ReleaseTag | None]:
        return self.metadata, self.tag


@dataclasses.dataclass(frozen=True)
class SparkReports:
    """A Spark frame's report columns and, for those of Spark releases, their tags."""

    metadata: dict[str, ReportMetadata]
    tags: dict[str, ReleaseTag]


def is_connect(frame: SparkDataFrame) -> bool:
    """Whether ``frame`` is a Spark Connect frame (a plan sent to a server: no JVM here)."""
    return type(frame).__module__.startswith("pyspark.sql.connect")


def recorded_reports(frame: SparkDataFrame) -> SparkReports:
    """The frame's report columns, checked against its plan (module docstring); a
    :class:`~frameldp.errors.ParameterError` where they cannot be trusted."""
    counts = collections.Counter(frame.columns)
    twice = [name for name, count in counts.items() if count > 1]
    if twice:
        raise ParameterError(
            f"column {shown(twice[0])}: the frame has {counts[twice[0]]} columns of this name "
            "(a join?); rename or drop all but one first"
        )
    if is_connect(frame):
        return _schema_reports(frame, counts)
    plan = _analyzed(frame)
    nodes = list(_nodes(plan))
    trusted_files = all(_kind(node) in _FOOTER_SAFE for node in nodes)
    from_files = _footer_metadata(nodes, frame.sparkSession._jvm) if trusted_files else {}

    def recorded(attribute: Any) -> Found | None:
        own = _attribute_metadata(attribute)
        in_file = from_files.get(attribute.exprId().id())
        if own is not None and in_file is not None and own.release() != in_file.release():
            raise ParameterError(
                f"column {shown(attribute.name())}: its schema and its Parquet files record "
                "different releases; debias each release on its own"
            )
        return own or in_file

    for node in nodes:
        if _kind(node) in _UNIONS:
            _check_union(node, recorded)
    out = SparkReports({}, {})
    for attribute in _seq(plan.output()):
        found = recorded(attribute)
        if found is None:
            continue
        name = str(attribute.name())
        if found.tag is None and found.in_schema:
            raise ParameterError(
                f"column {shown(name)}: its schema records frameldp reports without a release "
                "tag (metadata set by hand?), so its rows cannot be checked to be one release; "
                "drop the metadata and pass mechanism= to debias it"
            )
        if found.tag is not None:
            if found.tag.column not in counts:
                raise ParameterError(
                    f"column {shown(name)}: its release tag column {shown(found.tag.column)} is "
                    "missing (dropped by a select?); keep it beside the reports: every table "
                    "checks with it that the rows are of one release"
                )
            out.tags[name] = found.tag
        out.metadata[name] = found.metadata
    return out


def _schema_reports(frame: SparkDataFrame, counts: Mapping[str, int]) -> SparkReports:
    """A Spark Connect frame's report columns: from its schema's field metadata only, each with
    its release tag (checked row by row by every table). A Connect frame shows no plan, so
    Parquet footers written elsewhere are not trusted (name the mechanism) and unions are
    caught by the tags, when a table reads the rows."""
    out = SparkReports({}, {})
    fields = frame.schema.fields
    if any(_field_found(field) for field in fields):
        _check_connect_plan(frame)
    for field in fields:
        found = _field_found(field)
        if found is None:
            continue
        if found.tag is None:
            raise ParameterError(
                f"column {shown(field.name)}: its schema records frameldp reports without a "
                "release tag (metadata set by hand?), so its rows cannot be checked to be one "
                "release; drop the metadata and pass mechanism= to debias it"
            )
        if found.tag.column not in counts:
            raise ParameterError(
                f"column {shown(field.name)}: its release tag column {shown(found.tag.column)} "
                "is missing (dropped by a select?); keep it beside the reports: every table "
                "checks with it that the rows are of one release"
            )
        out.tags[field.name] = found.tag
        out.metadata[field.name] = found.metadata
    return out


def _field_found(field: spark_types.StructField) -> Found | None:
    metadata = field.metadata or {}
    return _found(metadata.get(METADATA_KEY), metadata.get(RELEASE_KEY), in_schema=True)


def _check_connect_plan(frame: SparkDataFrame) -> None:
    """Walk a Connect frame's client-side plan: every union's inputs record one release (or
    none) per column, by position (or by name for ``unionByName``), as classic Spark checks on
    its analyzed plan; SQL text, whose plan the client does not hold, is refused (tags catch
    rows of another release, not a column's values put under another column)."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

    session: Any = frame.sparkSession  # a Connect session
    pending = [getattr(frame, "_plan", None)]
    while pending:
        node = pending.pop()
        if node is None:
            continue
        kind = type(node).__name__
        if kind in ("SQL", "CachedRelation"):  # spark.sql(...): analyzed on the server
            raise ParameterError(
                "the frame's report columns come through SQL text, whose plan a Spark Connect "
                "client cannot see (a union there could put one column's values under another "
                "column's release); read the release with spark.read or spark.table and "
                "DataFrame operations, or make the columns plain and pass mechanism="
            )
        children = [getattr(node, name, None) for name in ("_child", "other", "left", "right")]
        pending.extend(child for child in children if child is not None)
        if kind == "SetOperation" and getattr(node, "set_op", "") == "union":
            left = ConnectFrame(node._child, session).schema.fields
            right = ConnectFrame(node.other, session).schema.fields
            if getattr(node, "by_name", False):
                named = {field.name: field for field in right}
                pairs = [(field, named.get(field.name)) for field in left]
            else:
                pairs = list(zip(left, right, strict=False))
            for first, other in pairs:
                mine = _field_found(first)
                theirs = _field_found(other) if other is not None else None
                if (mine and mine.release()) != (theirs and theirs.release()):
                    raise ParameterError(
                        f"column {shown(first.name)}: the frame is a union of different "
                        "releases or columns (or of reports and other data), and Spark keeps "
                        "the first input's metadata only; debias each release on its own"
                    )


def check_tags(
    batch: Mapping[str, pa.Array | pa.ChunkedArray], tags: Mapping[str, ReleaseTag]
) -> None:
    """Every row of ``batch`` holds each report column's release nonce (in a task)."""
    for column, tag in tags.items():
        values = batch[tag.column]
        if not pa.types.is_integer(values.type):
            raise ParameterError(
                f"column {shown(column)}: its release tag column {shown(tag.column)} holds "
                f"{values.type}, not the release's integer nonce (cast?); keep it as written",
                column=column,
            )
        if values.null_count or not pc.all(pc.equal(values, tag.nonce)).as_py():
            raise ParameterError(
                f"column {shown(column)}: some rows are not of the release its metadata records "
                f"(their {tag.column} differs: a union, an insert into a table or a reused "
                "schema?); debias each release on its own",
                column=column,
            )


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
    """Every node of a logical plan, through its children. Subqueries are expressions: their
    rows reach the output only through a ``LateralJoin`` (not in ``_FOOTER_SAFE``) or as values
    of a new, untyped column; tags check the rows of Spark releases whatever brought them."""
    stack = [plan]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(_seq(node.children()))


def _kind(java_object: Any) -> str:
    return str(java_object.getClass().getSimpleName())


def _found(text: str | None, tag: str | None, *, in_schema: bool) -> Found | None:
    """A column's report metadata and release tag from their metadata entries (JSON)."""
    if text is None:
        return None
    release = None if tag is None else ReleaseTag.from_json(tag)
    return Found(ReportMetadata.from_json(text), release, in_schema)


def _attribute_metadata(attribute: Any) -> Found | None:
    metadata = attribute.metadata()

    def entry(key: str) -> str | None:
        return str(metadata.getString(key)) if metadata.contains(key) else None

    return _found(entry(METADATA_KEY), entry(RELEASE_KEY), in_schema=True)


def _footer_schema_reports(schema: spark_types.StructType) -> dict[str, Found]:
    """Report columns of the Spark schema in a file's footer."""
    out: dict[str, Found] = {}
    for field in schema.fields:
        metadata = field.metadata or {}
        found = _found(metadata.get(METADATA_KEY), metadata.get(RELEASE_KEY), in_schema=False)
        if found is not None:
            out[field.name] = found
    return out


def _check_union(node: Any, recorded: Callable[[Any], Found | None]) -> None:
    """Every column of a union records one release (or none) in all its inputs."""
    inputs = [_seq(child.output()) for child in _seq(node.children())]
    for position, attribute in enumerate(inputs[0]):
        first = recorded(attribute)
        for columns in inputs[1:]:
            other = recorded(columns[position])
            if (first and first.release()) != (other and other.release()):
                raise ParameterError(
                    f"column {shown(attribute.name())}: the frame is a union of different "
                    "releases (or of reports and other data), and Spark keeps the first one's "
                    "metadata only; debias each release on its own"
                )


# -- Parquet footers ---------------------------------------------------------------------------


def _footer_metadata(nodes: list[Any], jvm: Any) -> dict[int, Found]:
    """``{expression id: found}`` of the attributes read from Parquet files whose footers record
    report columns (a partition column's values come from directory names: never)."""
    out: dict[int, Found] = {}
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
        partitioned = {str(name) for name in relation.partitionSchema().fieldNames()}
        for attribute in _seq(node.output()):
            found = recorded.get(str(attribute.name()))
            if found is not None and str(attribute.name()) not in partitioned:
                out[attribute.exprId().id()] = found
    return out


def _relation_reports(relation: Any, jvm: Any) -> dict[str, Found]:
    """The report columns all files of one Parquet relation record (they must agree)."""
    conf = relation.sparkSession().sessionState().newHadoopConfWithOptions(relation.options())
    found: dict[str, Found] | None = None
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


def _file_reports(key_values: dict[str, str]) -> dict[str, Found]:
    """Report columns one file's footer records: Arrow extension types in its Arrow schema
    (pandas, polars, the command line; no tags) or field metadata in Spark's schema (Spark)."""
    out: dict[str, Found] = {}
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
                out[field.name] = Found(meta, None, False)
    spark_schema = key_values.get(_SPARK_ROW_METADATA)
    if spark_schema is not None:
        try:
            parsed = spark_types.StructType.fromJson(json.loads(spark_schema))
        except (ValueError, TypeError, KeyError):
            raise ParameterError(
                f"a Parquet file's Spark schema cannot be read: {shown(spark_schema, 40)}"
            ) from None
        out.update(_footer_schema_reports(parsed))
    return out
