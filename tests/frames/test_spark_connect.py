"""Spark Connect frames (PySpark 4's remote mode) through ``sdf.ldp``.

A local Connect server is started on a free port (the default port would collide between test
workers). A Connect frame has no JVM object, RDD or plan on the client: its report columns are
read from its schema's field metadata, each with its release tag, which every table checks row
by row; the reports equal pandas' for the same key.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import frameldp

pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")

from pyspark.sql import SparkSession

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("pyspark_quiet"),
]  # a Connect server takes seconds to start: start it first

KEY = bytes(range(32))
CARRIERS = ("AA", "DL", "UA")


@pytest.fixture
def connect(spark_connect: SparkSession) -> SparkSession:
    """The process's Spark Connect session (``tests/_spark.py``)."""
    return spark_connect


def _data(n: int = 600) -> pd.DataFrame:
    return pd.DataFrame(
        {"carrier": [CARRIERS[i % 3] for i in range(n)], "g": [i % 4 for i in range(n)]}
    )


def test_a_connect_frame_gets_the_pandas_reports_and_tables(connect: SparkSession) -> None:
    frame = connect.createDataFrame(_data())  # rows in pandas' order, in two partitions
    assert type(frame).__module__.startswith("pyspark.sql.connect")
    reports = frame.ldp.krr("carrier", 2.0, domain=CARRIERS, key=KEY)
    expected = _data().ldp.krr("carrier", 2.0, domain=CARRIERS, key=KEY)
    ours = reports.toPandas()
    assert list(ours["carrier"]) == [str(v) for v in expected["carrier"]]
    assert reports.ldp.privacy == expected.ldp.privacy
    for by in (None, "g"):
        pd.testing.assert_frame_equal(
            reports.ldp.debias("carrier", by=by).frame, expected.ldp.debias("carrier", by=by).frame
        )
    bits = frame.ldp.rappor("carrier", 2.0, domain=CARRIERS, key=KEY)
    unpacked = bits.ldp.unpack("carrier").toPandas()
    pandas_bits = _data().ldp.rappor("carrier", 2.0, domain=CARRIERS, key=KEY).ldp.unpack("carrier")
    assert (unpacked.to_numpy() == pandas_bits.to_numpy()).all()


def test_rows_of_another_release_are_refused_by_their_tags(connect: SparkSession) -> None:
    frame = connect.createDataFrame(_data())
    first = frame.ldp.krr("carrier", 2.0, domain=CARRIERS)
    second = frame.ldp.krr("carrier", 2.0, domain=CARRIERS)
    with pytest.raises(frameldp.ParameterError, match="union of different releases"):
        first.union(second).ldp.debias("carrier")  # the plan shows it (the tags would, too)
    with pytest.raises(frameldp.ParameterError, match="release tag column"):
        first.select("carrier").ldp.debias("carrier")


def test_a_connect_release_is_charged_once_and_task_errors_come_back(
    connect: SparkSession, tmp_path: Path
) -> None:
    ledger = frameldp.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("etl", epsilon=3.0)
    frame = connect.createDataFrame(_data())
    frame.ldp.krr("carrier", 2.0, domain=CARRIERS, ledger=ledger, budget="etl")
    assert ledger.spent("etl") == pytest.approx(2.0)
    with pytest.raises(frameldp.BudgetExceededError):
        frame.ldp.krr("carrier", 2.0, domain=CARRIERS, ledger=ledger, budget="etl")
    with pytest.raises(frameldp.DomainError, match="'UA'"):
        frame.ldp.krr("carrier", 1.0, domain=["AA", "DL"], ledger=ledger, budget="etl")
    assert ledger.spent("etl") == pytest.approx(2.0)


def test_files_written_elsewhere_need_their_mechanism_named(
    connect: SparkSession, tmp_path: Path
) -> None:
    """A Connect frame shows no plan, so a footer cannot be tied to the rows read."""
    reports = _data().ldp.krr("carrier", 2.0, domain=CARRIERS, key=KEY)
    reports.to_parquet(tmp_path / "reports.parquet")
    frame = connect.read.parquet(str(tmp_path / "reports.parquet"))
    assert frame.ldp.specs == {}
    mechanism = frameldp.RandomizedResponse(2.0, domain=CARRIERS)
    table = frame.ldp.debias("carrier", mechanism)
    pd.testing.assert_frame_equal(table.frame, reports.ldp.debias("carrier").frame)


def test_a_union_that_puts_one_columns_values_under_another_is_refused(
    connect: SparkSession,
) -> None:
    """(Attack review: every row of a positional union of two columns of one release carries
    the right tag, so only the client plan shows that ε = 8 reports landed under an ε = 0.5
    column.)"""
    data = _data().assign(dest="AA", raw="UA")
    release = connect.createDataFrame(data).ldp.privatize(
        {
            "carrier": frameldp.RandomizedResponse(0.5, domain=CARRIERS),
            "dest": frameldp.RandomizedResponse(8.0, domain=CARRIERS),
        },
        key=KEY,
    )
    tag = next(c for c in release.columns if c.startswith("frameldp_release_"))
    swapped = release.select("carrier", "dest", tag).union(release.select("dest", "carrier", tag))
    with pytest.raises(frameldp.ParameterError, match="union of different releases or columns"):
        swapped.ldp.debias("carrier")
    raw = release.select("carrier", "raw", tag).union(release.select("raw", "carrier", tag))
    with pytest.raises(frameldp.ParameterError, match="union of different releases or columns"):
        raw.ldp.privacy  # noqa: B018
    same = release.unionByName(release)  # copies of one release: post-processing
    assert same.ldp.debias("carrier").n == 2 * len(data)
    release.createOrReplaceTempView("release")
    with pytest.raises(frameldp.ParameterError, match="SQL text"):
        connect.sql("select * from release").ldp.debias("carrier")
    cast = release.withColumn(tag, release[tag].cast("string"))
    with pytest.raises(frameldp.ParameterError, match="release tag column"):
        cast.ldp.debias("carrier")
