"""The ``.ldp`` accessor on Spark DataFrames, on a ``local[2]`` session.

The oracle is the pandas accessor with the same key on the rows in the order Spark pinned them
(the privatized frame carries an ``id`` column, so its rows name their input rows): Spark must
give exactly those reports, whatever the partitioning (one partition, a round-robin
repartition), and exactly the pandas tables. Reports are compared exactly, so no statistical
test is needed here: the estimators are tested on their own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameldp
from _persons import FRESH, MEMOIZED, ROWS_PER_PERSON, people, table_of
from _releases import without_release_records
from frameldp.frames.report_type import storage_of

from .conftest import CARRIERS, ORIGINS

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip(
        "Spark needs Java 17 or later (no java on PATH, no JAVA_HOME)", allow_module_level=True
    )

from pyspark.sql import DataFrame as SparkDataFrame
from pyspark.sql import SparkSession

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("pyspark_quiet"),
]  # a Spark session takes seconds to start: start it first

KEY = bytes(range(32))
MEMO = bytes(range(100, 132))
SERVICES = ("wifi", "meal", "lounge", "checked_bag")
URLS = ("/home", "/search", "/cart", "/help")
BLOOM = {"num_bits": 16, "num_hashes": 2, "num_cohorts": 4, "f": 0.5, "p": 0.5, "q": 0.75}

Call = Callable[[Any], Any]


def table(n: int = 120) -> pa.Table:
    """Strings over public domains, set-valued cells, URLs and their users, a float under a
    dotted name, a row id."""
    rows = np.arange(n)
    services = [[SERVICES[i % 4], SERVICES[(i // 4) % 4]] if i % 5 else [] for i in rows]
    return pa.table(
        {
            "id": pa.array(rows, pa.int64()),
            "carrier": np.array(CARRIERS[:3])[rows % 3],
            "origin": np.array(ORIGINS)[(7 * rows) % 5],
            "services": pa.array(services, pa.list_(pa.string())),
            "url": np.array(URLS)[(rows * rows + rows // 3) % 4],
            "user_id": [f"user{i // 2:04d}" for i in rows],  # two rows per user
            "fare.usd": rows / 4,  # a dot: Spark resolves it as a field unless quoted
        }
    )


def spark_frame(spark: SparkSession, partitions: int = 3) -> SparkDataFrame:
    """The table in ``partitions`` partitions dealt round-robin (an order Spark may change on
    recomputation: privatize must pin it)."""
    frame = spark.createDataFrame(table())
    return frame.repartition(partitions) if partitions > 1 else frame.coalesce(1)


CALLS: dict[str, Call] = {
    "krr": lambda f: f.ldp.krr("carrier", 1.0, domain=CARRIERS, key=KEY),
    "rappor": lambda f: f.ldp.rappor("origin", 1.0, domain=ORIGINS, key=KEY),
    "rappor-sets": lambda f: f.ldp.rappor("services", 2.0, domain=SERVICES, max_weight=2, key=KEY),
    "bloom-user": lambda f: f.ldp.rappor(
        "url", encoding="bloom", user="user_id", memo_key=MEMO, key=KEY, **BLOOM
    ),
    "oracles": lambda f: f.ldp.privatize(
        {
            "carrier": frameldp.OptimizedUnaryEncoding(1.0, domain=CARRIERS),
            "origin": frameldp.LocalHashing(2.0, domain=ORIGINS),
            "url": frameldp.SubsetSelection(1.0, domain=URLS),
            "user_id": frameldp.HadamardResponse(1.0, domain=[f"user{i:04d}" for i in range(60)]),
        },
        key=KEY,
    ),
    "krr-memoized": lambda f: f.ldp.krr(
        "carrier",
        1.0,
        domain=CARRIERS,
        epsilon_infinity=3.0,
        user="user_id",
        memo_key=MEMO,
        key=KEY,
    ),
    "prefix-seeded": lambda f: f.ldp.privatize(
        {"url": frameldp.PrefixExtending(4.0, max_length=8)}, seed=7
    ),
}


def pinned_pandas(out: SparkDataFrame) -> pd.DataFrame:
    """The input rows in the order Spark privatized them."""
    ids = out.select("id").toArrow().column(0).to_numpy()
    return table().take(pa.array(ids)).to_pandas(types_mapper=pd.ArrowDtype)


def values(frame: SparkDataFrame | pd.DataFrame) -> dict[str, list[Any]]:
    """Every column's storage values (reports as bytes or labels), release tags left out."""
    arrow = frame.toArrow() if isinstance(frame, SparkDataFrame) else pa.Table.from_pandas(frame)
    return {
        name: storage_of(arrow.column(name)).to_pylist()
        for name in arrow.column_names
        if not name.startswith("frameldp_release_")
    }


# ---------------------------------------------------------------------------- row addressing


@pytest.mark.parametrize(("call", "partitions"), [*((call, 3) for call in CALLS), ("krr", 1)])
def test_reports_equal_the_pandas_reports(spark: SparkSession, call: str, partitions: int) -> None:
    out = CALLS[call](spark_frame(spark, partitions))
    first = values(out)
    expected = CALLS[call](pinned_pandas(out))  # another read of the same (checkpointed) reports

    assert first == values(expected)
    assert without_release_records(out.ldp.specs) == without_release_records(expected.ldp.specs)
    assert sorted(first["id"]) == list(range(120))


def test_memoized_reports_follow_the_person(spark: SparkSession) -> None:
    """With a memo key, a person's permanent response is the same in every task: one row of
    each user, released twice in different partitionings, gives equal reports at epsilon_inf
    with no instantaneous noise (epsilon_1 = epsilon_inf). (Two rows of one person in one
    release without instantaneous noise are refused: tests/privacy/test_person_unit.py.)"""
    firsts = spark.createDataFrame(table().to_pandas().iloc[::2])  # a row of each user

    def release(partitions: int) -> pd.DataFrame:
        frame = firsts.repartition(partitions)
        out = frame.ldp.krr(
            "carrier", 3.0, domain=CARRIERS, epsilon_infinity=3.0, user="user_id", memo_key=MEMO
        )
        got = values(out)
        return pd.DataFrame({"id": got["id"], "report": got["carrier"]}).set_index("id")

    assert release(3).sort_index().equals(release(2).sort_index())


def test_a_person_is_the_unit_on_spark(spark: SparkSession) -> None:
    """Two rows per user: the release states two reports' loss, as pandas does; a row without
    a user id is refused."""
    frame = spark_frame(spark, 3)
    out = frame.ldp.krr("carrier", 1.0, domain=CARRIERS, user="user_id", key=KEY)
    pandas = table().to_pandas().ldp.krr("carrier", 1.0, domain=CARRIERS, user="user_id", key=KEY)
    assert out.ldp.privacy == pandas.ldp.privacy
    assert out.ldp.privacy.parameters["rows_per_user"] == 2
    nulls = spark.createDataFrame(pd.DataFrame({"user_id": ["a", None], "carrier": ["AA", "AA"]}))
    with pytest.raises(frameldp.DomainError, match="null user id"):
        nulls.ldp.krr("carrier", 1.0, domain=CARRIERS, user="user_id")


def test_every_oracle_states_a_persons_loss_on_spark_as_on_pandas(spark: SparkSession) -> None:
    """The person-level audit of tests/privacy/test_person_backends.py on Spark: every
    frequency oracle, fresh and memoized (one release of a column per mechanism for each),
    with three rows per person: each column's table, the release and the ledger state exactly
    what pandas states (fresh: three compositions of one report per column)."""
    rows = people()
    for made, memo in ((FRESH, {}), (MEMOIZED, {"memo_key": MEMO})):
        mechanisms = {name: make() for name, make in made.items()}
        data = pd.DataFrame({"user": rows["user"], **dict.fromkeys(mechanisms, rows["value"])})
        statements = []
        for frame in (spark.createDataFrame(data).repartition(2), data):
            ledger = frameldp.Ledger(":memory:")
            ledger.set_budget("b", epsilon=1e4)
            out = frame.ldp.privatize(
                mechanisms, user="user", key=KEY, ledger=ledger, budget="b", **memo
            )
            tables = [table_of(out, m, name).privacy.epsilon for name, m in mechanisms.items()]
            statements.append((out.ldp.privacy.epsilon, ledger.spent("b"), *tables))
        assert statements[0] == pytest.approx(statements[1], rel=1e-12)
        if not memo:
            ones = [ROWS_PER_PERSON * m.privacy.epsilon for m in mechanisms.values()]
            assert statements[0][2:] == pytest.approx(ones, rel=1e-12)


def test_fresh_keys_give_new_reports_each_call_but_one_release_reads_the_same(
    spark: SparkSession,
) -> None:
    frame = spark_frame(spark, 3)
    domain = [f"v{i}" for i in range(64)]
    wide = frame.selectExpr("id", "concat('v', cast(id % 64 as string)) as value")

    first = wide.ldp.krr("value", 0.5, domain=domain)
    second = wide.ldp.krr("value", 0.5, domain=domain)

    by_id = [dict(zip(v["id"], v["value"], strict=True)) for v in (values(first), values(second))]
    assert values(first) == values(first)
    # 120 rows of 64 values at epsilon 0.5: two independent releases agree on a row with
    # probability about 0.02; all 120 equal would need the same key.
    assert sum(by_id[0][i] == by_id[1][i] for i in range(120)) < 60


# ---------------------------------------------------------------------------- estimation


ESTIMATED: dict[str, tuple[Any, Call, dict[str, Any]]] = {
    "krr-by": ("carrier", CALLS["krr"], {"by": "origin"}),
    "rappor-sets": ("services", CALLS["rappor-sets"], {}),
    "oracles-joint": (["carrier", "origin"], CALLS["oracles"], {}),
    "oracles-by": ("url", CALLS["oracles"], {"by": ["origin", "carrier"]}),
}


@pytest.mark.parametrize("kind", list(ESTIMATED))
def test_debias_equals_the_pandas_debias(spark: SparkSession, kind: str) -> None:
    column, call, options = ESTIMATED[kind]
    if kind == "oracles-by":  # group by raw columns: privatize url only
        reports = spark_frame(spark, 3).ldp.krr("url", 1.0, domain=URLS, key=KEY)
    else:
        reports = call(spark_frame(spark, 3))
    pinned = pinned_pandas(reports)
    expected_reports = (
        pinned.ldp.krr("url", 1.0, domain=URLS, key=KEY) if kind == "oracles-by" else call(pinned)
    )

    got = reports.ldp.debias(column, level=0.9, **options)
    expected = expected_reports.ldp.debias(column, level=0.9, **options)

    pd.testing.assert_frame_equal(got.frame, expected.frame, check_exact=True)
    assert (got.n, got.level, got.privacy) == (expected.n, 0.9, expected.privacy)


def test_a_joint_table_refuses_a_copy_of_a_report_column(spark: SparkSession) -> None:
    """A copy of a report column shares its noise: its joint table with the column is refused
    (as on pandas and polars, tests/frames/test_tables.py)."""
    reports = CALLS["krr"](spark_frame(spark, 3))
    copied = reports.withColumn("copy", reports["carrier"])
    with pytest.raises(frameldp.FrameLDPError, match="share noise"):
        copied.ldp.debias(["carrier", "copy"])
    with pytest.raises(frameldp.FrameLDPError, match="share noise"):
        copied.ldp.debias(["carrier", "carrier"])


def test_decode_discover_and_unpack_equal_pandas(spark: SparkSession) -> None:
    frame = spark_frame(spark, 3)
    bloom = CALLS["bloom-user"](frame)
    prefix = CALLS["prefix-seeded"](frame)
    rappor = CALLS["rappor"](frame)

    decoded = bloom.ldp.decode("url", candidates=list(URLS))
    pd.testing.assert_frame_equal(
        decoded.frame,
        CALLS["bloom-user"](pinned_pandas(bloom)).ldp.decode("url", candidates=list(URLS)).frame,
    )
    discovered = prefix.ldp.discover("url", top=3)
    pd.testing.assert_frame_equal(
        discovered.frame, CALLS["prefix-seeded"](pinned_pandas(prefix)).ldp.discover(top=3).frame
    )
    unpacked = rappor.ldp.unpack("origin").toPandas()
    expected = CALLS["rappor"](pinned_pandas(rappor)).ldp.unpack("origin")
    assert list(unpacked.columns) == list(expected.columns)
    assert np.array_equal(unpacked.to_numpy(), expected.to_numpy())


def test_inferred_domain_warns_and_matches_pandas(spark: SparkSession) -> None:
    frame = spark_frame(spark, 3)
    with pytest.warns(frameldp.DomainInferenceWarning):
        out = frame.ldp.rappor("services", 1.0, domain="infer", max_weight=2, key=KEY)
    assert list(out.ldp.mechanisms["services"].categories) == sorted(SERVICES)


# ---------------------------------------------------------------------------- files


def test_parquet_written_by_spark_keeps_the_mechanism(spark: SparkSession, tmp_path: Path) -> None:
    reports = CALLS["krr"](spark_frame(spark, 3))
    reports.write.parquet(str(tmp_path / "krr"))

    back = spark.read.parquet(str(tmp_path / "krr"))

    assert back.ldp.specs == reports.ldp.specs
    pd.testing.assert_frame_equal(
        back.ldp.debias("carrier").frame, reports.ldp.debias("carrier").frame
    )


def test_parquet_written_by_pandas_is_read_with_its_report_types(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Spark drops Arrow extension types; the files' footers still record them."""
    reports = (
        table()
        .to_pandas(types_mapper=pd.ArrowDtype)
        .ldp.rappor("origin", 1.0, domain=ORIGINS, key=KEY)
    )
    reports.to_parquet(tmp_path / "part-0.parquet")

    back = spark.read.parquet(str(tmp_path))

    assert back.ldp.specs == reports.ldp.specs
    pd.testing.assert_frame_equal(
        back.ldp.debias("origin").frame, reports.ldp.debias("origin").frame
    )


def test_a_dataset_of_two_releases_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    """Every file is read, whatever its name (not only ``*.parquet``)."""
    data = table().to_pandas(types_mapper=pd.ArrowDtype)
    for epsilon, name in ((1.0, "a.parquet"), (2.0, "b.bin")):
        reports = data.ldp.krr("carrier", epsilon, domain=CARRIERS)
        pq.write_table(pa.Table.from_pandas(reports), tmp_path / name)

    with pytest.raises(frameldp.ParameterError, match="different releases"):
        spark.read.parquet(str(tmp_path)).ldp.debias("carrier")


def test_a_raw_column_renamed_to_a_report_column_is_not_taken_for_reports(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Footers name columns; only the attributes read from the file itself hold its reports."""
    data = table().to_pandas(types_mapper=pd.ArrowDtype)
    data.ldp.krr("carrier", 1.0, domain=CARRIERS).to_parquet(tmp_path / "release.bin")
    read = spark.read.parquet(str(tmp_path))
    renamed = read.drop("carrier").withColumnRenamed("origin", "carrier")

    assert "carrier" in read.filter("id > 3").select("carrier", "origin").ldp.specs
    assert renamed.ldp.specs == {}
    with pytest.raises(frameldp.MechanismNotFoundError, match="'carrier': no mechanism recorded"):
        renamed.ldp.debias("carrier")


def test_a_union_of_different_releases_is_refused(spark: SparkSession) -> None:
    """Spark's union keeps the first input's field metadata: a seeded or stronger-noise release
    after it would be debiased under the first one's guarantee."""
    frame = spark_frame(spark, 1)
    seeded = frame.ldp.krr("carrier", 1.0, domain=CARRIERS, seed=3)
    fresh = frame.ldp.krr("carrier", 1.0, domain=CARRIERS)
    raw = seeded.withColumn("carrier", seeded["origin"])  # raw strings, no metadata

    assert seeded.union(seeded.filter("id > 3")).ldp.specs == seeded.ldp.specs
    by_name = fresh.unionByName(seeded, allowMissingColumns=True)
    for union in (fresh.union(seeded), by_name, seeded.union(raw)):
        with pytest.raises(frameldp.ParameterError, match="union of different releases"):
            union.ldp.debias("carrier")


def test_rows_of_another_release_are_refused_whatever_brought_them(spark: SparkSession) -> None:
    """A checkpoint hides a union from the plan; the release tag in every row still tells."""
    frame = spark_frame(spark, 1)
    fresh = frame.ldp.krr("carrier", 1.0, domain=CARRIERS)
    seeded = frame.ldp.krr("carrier", 1.0, domain=CARRIERS, seed=3)
    hidden = fresh.union(seeded).localCheckpoint()
    assert hidden.ldp.specs == fresh.ldp.specs  # the metadata alone cannot tell

    with pytest.raises(frameldp.ParameterError, match="some rows are not of the release"):
        hidden.ldp.debias("carrier")
    with pytest.raises(frameldp.ParameterError, match=r"release tag column .* is missing"):
        fresh.select("carrier").ldp.debias("carrier")


def test_a_join_with_two_columns_of_one_name_is_refused(spark: SparkSession) -> None:
    reports = CALLS["krr"](spark_frame(spark, 1))
    joined = reports.join(reports.select("id", "carrier"), "id")

    with pytest.raises(frameldp.ParameterError, match="'carrier': the frame has 2 columns"):
        joined.ldp.debias("carrier")


def test_speculative_execution_is_refused() -> None:
    from pyspark import SparkConf

    from frameldp.frames import _spark

    _spark._refuse_speculation(SparkConf(loadDefaults=False))
    with pytest.raises(frameldp.ParameterError, match=r"spark\.speculation is on"):
        _spark._refuse_speculation(SparkConf(loadDefaults=False).set("spark.speculation", "true"))


def stored_rdds(spark: SparkSession) -> set[int]:
    """Ids of the RDDs with blocks in storage (Spark may drop those of collected frames)."""
    return {info.id() for info in spark.sparkContext._jsc.sc().getRDDStorageInfo()}


def test_a_release_keeps_only_its_reports_in_storage(spark: SparkSession) -> None:
    """The pinned input is removed once the reports are checkpointed; a failed release leaves
    no blocks behind."""
    frame = spark_frame(spark, 3)
    before = stored_rdds(spark)

    reports = CALLS["krr"](frame)
    after = stored_rdds(spark)
    assert after - before == {reports._jdf.queryExecution().analyzed().rdd().id()}
    with pytest.raises(frameldp.DomainError):
        frame.ldp.krr("carrier", 1.0, domain=["AA", "DL"])
    assert stored_rdds(spark) - after == set()
    assert reports.count() == 120


# ---------------------------------------------------------------------------- ledger, errors


@pytest.fixture
def ledger(tmp_path: Path) -> frameldp.Ledger:
    book = frameldp.Ledger(tmp_path / "budget.sqlite")
    book.set_budget("nightly", epsilon=2.5)
    return book


def test_a_release_is_charged_once(spark: SparkSession, ledger: frameldp.Ledger) -> None:
    reports = spark_frame(spark, 3).ldp.krr(
        "carrier", 1.0, domain=CARRIERS, ledger=ledger, budget="nightly"
    )
    [entry] = ledger.history("nightly")
    assert entry.description == "privatize carrier"

    reports.ldp.debias("carrier")
    reports.count()
    assert len(ledger.history("nightly")) == 1


def test_over_budget_and_bad_values_charge_nothing(
    spark: SparkSession, ledger: frameldp.Ledger
) -> None:
    frame = spark_frame(spark, 3)
    with pytest.raises(frameldp.DomainError, match=r"column 'carrier': value 'UA' at row \d+"):
        frame.ldp.krr("carrier", 1.0, domain=["AA", "DL"], ledger=ledger, budget="nightly")
    assert ledger.history("nightly") == []

    with pytest.raises(frameldp.BudgetExceededError, match="nightly"):
        frame.ldp.krr("carrier", 3.0, domain=CARRIERS, ledger=ledger, budget="nightly")
    assert ledger.history("nightly") == []


ERRORS: dict[str, tuple[Call, type[Exception], str]] = {
    "missing column": (
        lambda f: f.ldp.krr("nope", 1.0, domain=CARRIERS),
        frameldp.ParameterError,
        "nope",
    ),
    "user without memo key": (
        lambda f: f.ldp.rappor("url", encoding="bloom", user="user_id", **BLOOM),
        frameldp.ParameterError,
        "memo_key",
    ),
    "a report column again": (
        lambda f: CALLS["krr"](CALLS["krr"](f)),
        frameldp.ParameterError,
        "already holds frameldp reports",
    ),
    "shuffle": (lambda f: CALLS["krr"](f).ldp.shuffle(), frameldp.ParameterError, "one machine"),
    "balcer_cheu": (
        lambda f: f.ldp.balcer_cheu("carrier", 1.0, 1e-6, domain=CARRIERS),
        frameldp.ParameterError,
        "one machine",
    ),
    "a map column": (
        lambda f: f.selectExpr("map(carrier, origin) AS pair").ldp.krr("pair", 1.0, domain="infer"),
        frameldp.ParameterError,
        "'pair': holds map<string,string> values",
    ),
    "validate": (
        lambda f: f.ldp.validate({"carrier": frameldp.RandomizedResponse(1.0, domain=CARRIERS)}),
        frameldp.ParameterError,
        "of a Spark frame: a collected sample",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_raises_a_frameldp_error(spark: SparkSession, case: str) -> None:
    call, kind, message = ERRORS[case]
    with pytest.raises(kind, match=message):
        call(spark_frame(spark, 3))


@pytest.mark.parametrize("rows", [3, 5], ids=["fewer", "more"])
def test_a_partition_holding_other_rows_than_counted_is_refused(
    monkeypatch: pytest.MonkeyPatch, rows: int
) -> None:
    """Partition 1 was counted with rows 3..6 (4 rows); if it held 3 or 5 when privatized, its
    rows would take ids of partition 0's or 2's rows: the task fails, whole."""
    from frameldp.frames import _spark
    from frameldp.frames._spark_reports import ReleaseTag
    from frameldp.frames.release import ShippedSource

    monkeypatch.setattr(_spark, "_partition_id", lambda: 1)
    mechanism = frameldp.RandomizedResponse(1.0, domain=CARRIERS)
    task = _spark._privatize_task(
        iter([pa.record_batch({"carrier": pa.array(["AA"] * rows)})]),
        starts=[0, 3, 7, 9],
        mechanisms={"carrier": mechanism},
        specs={"carrier": mechanism.to_spec()},
        shipped=ShippedSource(None),
        memo=ShippedSource(None),
        user=None,
        inputs=["carrier"],
        names=["carrier", "tag"],
        tag=ReleaseTag("tag", 1),
    )

    with pytest.raises(frameldp.NoiseReuseError, match="no longer holds the 4 rows"):
        _spark._running(lambda: list(task))


def test_error_text_from_a_task_is_never_unpickled() -> None:
    """Spark errors may quote data values, so a value imitating the error mark must not run
    code on the driver: only frameldp.errors classes are rebuilt, from JSON."""
    import base64
    import pickle

    from frameldp.frames import _spark

    class Boom:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, ("touch /tmp/frameldp-pwned",))

    forged = "frameldp-error:" + base64.b64encode(pickle.dumps(Boom())).decode() + "|"
    assert _spark._carried_back(f"CAST_INVALID_INPUT: '{forged}'") is None
    assert (
        _spark._carried_back(
            "frameldp-error:"
            + base64.b64encode(b'{"type": "Exception", "message": "x"}').decode()
            + "|"
        )
        is None
    )

    carried = str(_spark._carried(frameldp.DomainError("value 'UA' at row 3", column="carrier")))
    error = _spark._carried_back(carried)
    assert isinstance(error, frameldp.DomainError)
    assert (error.column, str(error)) == ("carrier", "column 'carrier': value 'UA' at row 3")


def test_the_spark_benchmark_runs_on_this_session(spark: SparkSession) -> None:
    """A smoke run of ``benchmarks/bench_spark.py`` (pandas, pyarrow, DuckDB and Spark) on this
    module's session: no second JVM (no timing asserted; Spark Connect would start one)."""
    import importlib

    benchmarks = str(Path(__file__).resolve().parents[2] / "benchmarks")
    sys.path.insert(0, benchmarks)  # bench_spark imports its sibling bench_etl
    try:
        bench_spark = importlib.import_module("bench_spark")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # pyspark 4 on pandas 3
            rows = bench_spark.run(20_000, ["pandas", "arrow", "duckdb", "spark"], session=spark)
    finally:
        sys.path.remove(benchmarks)
    assert [row["backend"] for row in rows] == ["pandas", "arrow", "duckdb", "spark"]
    for row in rows:
        assert row["rows"] == row["n"] == 20_000
        assert row["rows_per_s"] > 0
    assert not spark.sparkContext._jsc.sc().isStopped()  # the session is the caller's


def test_a_streaming_frame_is_refused_before_anything_runs(spark: SparkSession) -> None:
    """(Issue 36: pyspark's AnalysisException, "queries with streaming sources must be executed
    with writeStream.start()".)"""
    stream = spark.readStream.format("rate").load().selectExpr("CAST(value % 3 AS STRING) AS c")
    domain = ["0", "1", "2"]
    calls = [
        lambda: stream.ldp.krr("c", 1.0, domain=domain, key=KEY),
        lambda: stream.ldp.krr("c", 1.0, domain="infer", key=KEY),
        lambda: stream.ldp.rappor("c", 1.0, domain=domain),
        lambda: stream.ldp.privatize({"c": frameldp.RandomizedResponse(1.0, domain=domain)}),
        lambda: stream.ldp.debias("c", frameldp.RandomizedResponse(1.0, domain=domain)),
    ]
    for call in calls:
        with pytest.raises(frameldp.ParameterError, match="streaming Spark DataFrame"):
            call()


# ---------------------------------------------------------------------------- ordinary operations


SPARK_OPS: dict[str, Callable[[SparkDataFrame, Any], SparkDataFrame]] = {
    "filter ==": lambda f, v: f.where(f["carrier"] == v),
    "isin": lambda f, v: f.where(f["carrier"].isin([v])),
    "groupBy count": lambda f, v: f.groupBy("carrier").count(),
    "join": lambda f, v: f.join(f.select("carrier").distinct(), on="carrier"),
    "distinct": lambda f, v: f.select("carrier").distinct(),
    "orderBy": lambda f, v: f.orderBy("carrier", "id"),
    "cast string": lambda f, v: f.select(f["carrier"].cast("string").alias("text")),
}


@pytest.mark.parametrize("kind", ["krr", "oracles"])
def test_ordinary_operations_on_spark_report_columns(spark: SparkSession, kind: str) -> None:
    """Issue 37, item 4: Spark report columns are plain Spark columns whose metadata records the
    release; every operation gives what it gives on the plain columns (``ldp.plain()``), and a
    selection of rows keeps the record. (``oracles``: OUE bit reports under ``carrier``.)"""
    reports = CALLS[kind](spark_frame(spark, 3))
    plain = reports.ldp.plain()
    value = plain.select("carrier").first()[0]
    assert plain.ldp.specs == {}

    for name, operation in SPARK_OPS.items():
        got = sorted(map(tuple, operation(reports, value).collect()), key=repr)
        assert got == sorted(map(tuple, operation(plain, value).collect()), key=repr), name
    assert "carrier" in SPARK_OPS["filter =="](reports, value).ldp.specs


def test_spark_writes_bit_reports_as_text_that_debiases_back(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Spark's CSV writer takes no binary column: ``plain(text=True)`` writes the text form,
    the same text pandas writes, which ``read_csv`` then ``debias(column, mechanism)`` reads."""
    reports = CALLS["rappor"](spark_frame(spark, 3))
    reports.ldp.plain(text=True).select("id", "origin").write.csv(
        str(tmp_path / "csv"), header=True
    )

    back = pd.concat(pd.read_csv(path) for path in sorted((tmp_path / "csv").glob("*.csv")))
    mechanism = frameldp.Rappor(1.0, domain=ORIGINS)
    pd.testing.assert_frame_equal(
        back.ldp.debias("origin", mechanism).frame, reports.ldp.debias("origin").frame
    )
    pandas = reports.toPandas()[["id", "origin"]].sort_values("id")
    texts = pandas.assign(origin=pandas["origin"].map(lambda v: bytes(v))).set_index("id")
    for _, row in back.sort_values("id").head(20).iterrows():
        bits = np.unpackbits(np.frombuffer(texts.loc[row["id"], "origin"], np.uint8))
        assert row["origin"] == "b" + "".join(map(str, bits[: len(ORIGINS)]))


def test_a_spark_release_file_reads_without_frameldp(spark: SparkSession, tmp_path: Path) -> None:
    """Issue 37, item 3: Spark's Parquet files read with plain pandas, pyarrow, polars and
    DuckDB in a process that never imported frameldp."""
    reports = CALLS["rappor"](spark_frame(spark, 3))
    reports.write.parquet(str(tmp_path / "spark"))
    script = (
        "import sys, duckdb, pandas as pd, polars as pl, pyarrow.parquet as pq\n"
        "p = sys.argv[1]\n"
        "n = {len(pd.read_parquet(p)), pq.read_table(p).num_rows,"
        " pl.read_parquet(p + '/*.parquet').height,"
        " duckdb.sql(f\"select count(*) from read_parquet('{p}/*.parquet')\").fetchall()[0][0],"
        " len(pd.read_parquet(p, columns=['id']))}\n"
        "assert not any(m.startswith('frameldp') for m in sys.modules)\n"
        "print(sorted(n))\n"
    )
    run = subprocess.run(
        [sys.executable, "-I", "-c", script, str(tmp_path / "spark")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == f"[{reports.count()}]"


def test_spark_text_form_equals_the_python_codec(spark: SparkSession) -> None:
    """Spark's text form (SQL) equals the Python codec's on valid reports, and shows values of
    another width or with padding bits set as hex, which debias refuses (attack review)."""
    from frameldp.core.report_text import text_of_bits
    from frameldp.frames._spark import _bits_text

    values = [b"\x80", b"\x40", b"\xe0", b"\x00", b"\xff", b"\x20\x00", b"", None]
    frame = spark.createDataFrame([(v,) for v in values], "r binary")
    got = [row[0] for row in frame.select(_bits_text(frame["r"], 3)).collect()]
    expected = text_of_bits(pa.array(values, pa.large_binary()), 3).to_pylist()
    assert got[:4] == ["b100", "b010", "b111", "b000"]
    assert got == expected


# ---------------------------------------------------------------------------- worker python


def test_spark_workers_run_this_interpreter_unless_told_otherwise() -> None:
    """Issue 38: a virtualenv's python run without activating the virtualenv started Spark
    workers with the PATH's python3, which cannot import frameldp."""
    script = (
        "import os, sys\n"
        "import frameldp, pyspark.sql\n"
        "print(os.environ['PYSPARK_PYTHON'] == sys.executable)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"
    env["PYSPARK_PYTHON"] = "/opt/their/python"  # the user's choice stands
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.stdout.strip() == "False"


def test_a_session_whose_workers_cannot_import_frameldp_is_refused(spark: SparkSession) -> None:
    context = spark.sparkContext
    python = context.pythonExec
    context.pythonExec = "/nonexistent/python3"  # a session created with another interpreter
    try:
        with pytest.raises(frameldp.FrameLDPError, match="PYSPARK_PYTHON="):
            CALLS["krr"](spark_frame(spark, 3))
    finally:
        context.pythonExec = python
    assert CALLS["krr"](spark_frame(spark, 3)).ldp.specs
