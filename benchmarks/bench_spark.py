"""Every engine on one Parquet file: pandas, pyarrow, DuckDB, Dask, Spark and Spark Connect.

**Input.** ``bench_etl.py``'s generated flights file (row groups of 1,000,000 rows): ``dest``
(256 airports, Zipf(1.1)), ``carrier`` (12) and ``origin`` (30) as strings.

**Job.** Read the three columns, privatize them (RAPPOR epsilon 1 over ``dest``, k-RR epsilon 2
over ``carrier`` and ``origin``), write the release as Parquet, then debias ``dest`` from the
release (a tree reduction of per-partition counts on Dask and Spark). Times are wall clock, end
to end:

``pandas``
    ``pd.read_parquet`` -> ``df.ldp.privatize`` (both cores by default) -> ``to_parquet``;
``dask``
    ``dd.read_parquet(split_row_groups=True)`` -> ``ldp.privatize`` -> ``persist`` (one
    release) -> ``to_parquet`` on a ``distributed.LocalCluster`` of 2 worker processes, one
    thread each (workers import frameldp before the clock starts);
``arrow``
    ``pq.ParquetFile.iter_batches`` as a RecordBatchReader -> ``frameldp.ldp(reader).privatize``
    -> ``ParquetWriter``, batch by batch (memory bounded by a batch);
``duckdb``
    ``connection.read_parquet`` -> ``frameldp.ldp(relation).privatize`` (a typed Arrow table)
    -> ``pq.write_table``; debiased from a DuckDB relation over the release (a ``GROUP BY``
    pushdown for the k-RR columns; ``dest``'s RAPPOR bit vectors are reduced from batches);
``spark``
    ``spark.read.parquet`` -> ``sdf.ldp.privatize`` (eager: input checkpoint, counting pass,
    ``mapInArrow``, output checkpoint) -> ``write.parquet`` on ``local[2]``; the session is
    started, and one small job run, before the clock starts (the ``start s`` column);
``spark-connect``
    the same job through a local Spark Connect server (``remote("local[2]")``, started before
    the clock).

Usage::

    python benchmarks/bench_spark.py               # 3,000,000 rows
    python benchmarks/bench_spark.py --rows 10000000
    python benchmarks/bench_spark.py --quick       # 200,000 rows (smoke run)
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_etl import CARRIERS, DESTS, ORIGINS, make_input

COLUMNS = ["dest", "carrier", "origin"]


def _mechanisms() -> dict[str, Any]:
    import frameldp

    return {
        "dest": frameldp.Rappor(1.0, domain=DESTS),
        "carrier": frameldp.RandomizedResponse(2.0, domain=CARRIERS),
        "origin": frameldp.RandomizedResponse(2.0, domain=ORIGINS),
    }


def _timed(step: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = step()
    return time.perf_counter() - started, result


def run_pandas(source: Path, target: Path) -> dict[str, Any]:
    import pandas as pd

    import frameldp  # noqa: F401  (registers .ldp)

    def privatize() -> Any:
        release = pd.read_parquet(source, columns=COLUMNS).ldp.privatize(_mechanisms())
        release.to_parquet(target, index=False)
        return release

    seconds, release = _timed(privatize)
    debias_s, table = _timed(lambda: release.ldp.debias("dest"))
    return {"start_s": 0.0, "seconds": seconds, "debias_s": debias_s, "n": table.n}


def run_dask(source: Path, target: Path) -> dict[str, Any]:
    import dask
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import frameldp  # noqa: F401

    started = time.perf_counter()
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
        dask.config.set(scheduler=client),
    ):
        client.run(importlib.import_module, "frameldp")
        start_s = time.perf_counter() - started

        def privatize() -> Any:
            frame = dd.read_parquet(source, columns=COLUMNS, split_row_groups=True)
            release = frame.ldp.privatize(_mechanisms()).persist()  # one release
            release.to_parquet(target, write_index=False)
            return release

        seconds, release = _timed(privatize)
        debias_s, table = _timed(lambda: release.ldp.debias("dest"))
    return {"start_s": start_s, "seconds": seconds, "debias_s": debias_s, "n": table.n}


def run_spark(source: Path, target: Path, session: Any = None) -> dict[str, Any]:
    """The Spark run, on ``session`` if given (left running), else on a new ``local[2]`` one."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import frameldp  # noqa: F401

    started = time.perf_counter()
    spark = session or (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    if session is None:
        spark.sparkContext.setLogLevel("ERROR")
    try:
        warm = spark.createDataFrame([("AA",)], "carrier string")
        warm.ldp.krr("carrier", 1.0, domain=CARRIERS).count()  # workers import frameldp
        start_s = time.perf_counter() - started

        def privatize() -> Any:
            frame = spark.read.parquet(str(source)).select(*COLUMNS)
            release = frame.ldp.privatize(_mechanisms())  # eager, checkpointed
            release.write.parquet(str(target))
            return release

        seconds, release = _timed(privatize)
        debias_s, table = _timed(lambda: release.ldp.debias("dest"))
    finally:
        if session is None:
            spark.stop()
    return {"start_s": start_s, "seconds": seconds, "debias_s": debias_s, "n": table.n}


def run_arrow(source: Path, target: Path) -> dict[str, Any]:
    """A pyarrow RecordBatchReader over the file, privatized batch by batch as it is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import frameldp

    def privatize() -> Any:
        file = pq.ParquetFile(source)
        schema = pa.schema([file.schema_arrow.field(name) for name in COLUMNS])
        batches = file.iter_batches(batch_size=500_000, columns=COLUMNS)
        reader = pa.RecordBatchReader.from_batches(schema, batches)
        released = frameldp.ldp(reader).privatize(_mechanisms())
        with pq.ParquetWriter(target, released.schema) as writer:
            for batch in released:
                writer.write_batch(batch)

    seconds, _ = _timed(privatize)
    debias_s, table = _timed(lambda: frameldp.ldp(pq.read_table(target)).debias("dest"))
    return {"start_s": 0.0, "seconds": seconds, "debias_s": debias_s, "n": table.n}


def run_duckdb(source: Path, target: Path) -> dict[str, Any]:
    """A DuckDB relation over the file; the release (a typed Arrow table) written by pyarrow,
    and debiased from a DuckDB relation over that file."""
    import duckdb
    import pyarrow.parquet as pq

    import frameldp

    connection = duckdb.connect()

    def privatize() -> Any:
        relation = connection.read_parquet(str(source)).select(*COLUMNS)
        pq.write_table(frameldp.ldp(relation).privatize(_mechanisms()), target)

    seconds, _ = _timed(privatize)
    released = connection.read_parquet(str(target))
    debias_s, table = _timed(lambda: frameldp.ldp(released).debias("dest"))
    return {"start_s": 0.0, "seconds": seconds, "debias_s": debias_s, "n": table.n}


def run_spark_connect(source: Path, target: Path) -> dict[str, Any]:
    """A local Spark Connect server (``remote("local[2]")``), started before the clock."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import frameldp  # noqa: F401

    started = time.perf_counter()
    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    try:
        warm = spark.createDataFrame([("AA",)], "carrier string")
        warm.ldp.krr("carrier", 1.0, domain=CARRIERS).count()
        start_s = time.perf_counter() - started

        def privatize() -> Any:
            frame = spark.read.parquet(str(source)).select(*COLUMNS)
            release = frame.ldp.privatize(_mechanisms())
            release.write.parquet(str(target))
            return release

        seconds, release = _timed(privatize)
        debias_s, table = _timed(lambda: release.ldp.debias("dest"))
    finally:
        spark.stop()
        server = SparkSession._instantiatedSession
        if server is not None:
            server.stop()
    return {"start_s": start_s, "seconds": seconds, "debias_s": debias_s, "n": table.n}


RUNS = {
    "pandas": run_pandas,
    "arrow": run_arrow,
    "duckdb": run_duckdb,
    "dask": run_dask,
    "spark": run_spark,
    "spark-connect": run_spark_connect,
}


def run(rows: int, backends: list[str], session: Any = None) -> list[dict[str, Any]]:
    """The rows of the table; Spark runs on ``session`` if one is given (the test suite's)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="frameldp-bench-spark-") as folder:
        source = Path(folder) / "flights.parquet"
        make_input(source, rows)
        megabytes = source.stat().st_size / 2**20
        for backend in backends:
            target = Path(folder) / f"release-{backend}"
            if backend == "spark":
                row = run_spark(source, target, session)
            else:
                row = RUNS[backend](source, target)
            if row["n"] != rows:
                raise RuntimeError(f"{backend}: debiased {row['n']} reports of {rows}")
            out.append(
                {
                    "backend": backend,
                    "rows": rows,
                    "input_mb": megabytes,
                    **row,
                    "rows_per_s": rows / row["seconds"],
                }
            )
    return out


def _print(rows: list[dict[str, Any]]) -> None:
    print("Privatize + write one Parquet file, then debias dest (wall seconds)")
    print(
        f"{'backend':<13} {'rows':>11} {'input MB':>9} {'start s':>8} {'privatize s':>12} "
        f"{'rows/s':>11} {'debias s':>9}"
    )
    for row in rows:
        print(
            f"{row['backend']:<13} {row['rows']:>11,} {row['input_mb']:9.1f} {row['start_s']:8.2f} "
            f"{row['seconds']:12.2f} {row['rows_per_s']:11,.0f} {row['debias_s']:9.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000, help="input rows")
    parser.add_argument("--quick", action="store_true", help="200,000 rows (smoke run)")
    parser.add_argument("--backends", nargs="+", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    arguments = parser.parse_args()
    warnings.simplefilter("ignore", FutureWarning)  # pyspark 4 on pandas 3
    rows = run(200_000 if arguments.quick else arguments.rows, arguments.backends)
    _print(rows)
    if arguments.json:
        arguments.json.write_text(json.dumps({"rows": rows}, indent=2))


if __name__ == "__main__":
    main()
