"""End-to-end ETL: the command line and Dask on a large Parquet file.

**Input.** A Parquet file of ``rows`` flights (row groups of 1,000,000 rows), generated here with
a fixed seed: ``passenger_id`` (int64, an identifier, dropped from the release), ``dest`` (256
airports, Zipf(1.1)), ``carrier`` (12 carriers) and ``origin`` (30 airports), as plain string
columns.

**Command line.** ``frameldp privatize IN OUT`` with RAPPOR (epsilon 1, k = 256) on ``dest`` and
k-RR (epsilon 2) on ``carrier`` and ``origin``, default ``--chunk-rows`` (500,000), run as a
subprocess of the installed command. It is timed by wall clock, and its peak resident memory is
the child's ``ru_maxrss`` from ``wait4``, which includes the interpreter and the pandas, polars,
pyarrow and pandera imports. The rows are: the default run (pandera validation of every input and
release batch), a ``--no-validate`` run, and the default run at every size, to show that memory
does not grow with the file.

**Dask.** ``dd.read_parquet(IN, split_row_groups=True).ldp.privatize(...)`` (one partition per
row group) with the same mechanisms, written with ``to_parquet``, on a
``distributed.LocalCluster`` of 1 and then 2 worker processes (one thread each; the workers
import frameldp before the clock starts). Row offsets are computed in the same graph as the
reports, so the input is read once. The speed-up is the ratio of the two times.

Usage::

    python benchmarks/bench_etl.py                  # 1M, 3M and 10M rows, Dask at 10M
    python benchmarks/bench_etl.py --quick          # 20k rows, one of each run (smoke run)
    python benchmarks/bench_etl.py --json out.json
    python benchmarks/bench_etl.py --sizes 100000000 --dask-rows 0   # 10^8 rows, command line
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP = 1_000_000
DESTS = [f"D{i:03d}" for i in range(256)]
CARRIERS = ["AA", "AS", "B6", "DL", "F9", "G4", "HA", "MX", "NK", "SY", "UA", "WN"]
ORIGINS = [f"O{i:02d}" for i in range(30)]


def make_input(path: Path, rows: int, seed: int = 2026) -> None:
    """Write the benchmark's input file, one row group at a time (bounded memory)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(DESTS) + 1) ** 1.1
    weights /= weights.sum()
    schema = pa.schema(
        [
            ("passenger_id", pa.int64()),
            ("dest", pa.string()),
            ("carrier", pa.string()),
            ("origin", pa.string()),
        ]
    )
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, ROW_GROUP):
            size = min(ROW_GROUP, rows - start)
            columns = {
                "passenger_id": pa.array(np.arange(start, start + size, dtype=np.int64)),
                "dest": pa.array(np.asarray(DESTS)[rng.choice(len(DESTS), size, p=weights)]),
                "carrier": pa.array(np.asarray(CARRIERS)[rng.integers(0, len(CARRIERS), size)]),
                "origin": pa.array(np.asarray(ORIGINS)[rng.integers(0, len(ORIGINS), size)]),
            }
            writer.write_table(pa.table(columns, schema=schema))


def _command() -> str:
    found = Path(sys.executable).with_name("frameldp")
    return str(found) if found.exists() else shutil.which("frameldp") or "frameldp"


def _domains(folder: Path) -> list[str]:
    options = []
    for column, values, mechanism, epsilon in (
        ("dest", DESTS, "rappor", "1"),
        ("carrier", CARRIERS, "krr", "2"),
        ("origin", ORIGINS, "krr", "2"),
    ):
        domain = folder / f"{column}.txt"
        domain.write_text("\n".join(values))
        options += ["--column", column, "--mechanism", mechanism, "--epsilon", epsilon]
        options += ["--domain-file", str(domain)]
    return options


def run_cli(source: Path, folder: Path, *extra: str) -> dict[str, Any]:
    """Time one ``frameldp privatize`` run; its peak resident memory from ``wait4``."""
    target = folder / "release.parquet"
    arguments = [_command(), "privatize", str(source), str(target), *_domains(folder), *extra]
    started = time.perf_counter()
    child = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    stderr = child.stderr.read().decode() if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"frameldp privatize failed: {stderr}")
    rows = pq.read_metadata(target).num_rows
    return {
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "peak_mb": usage.ru_maxrss / 1024,  # Linux: kilobytes
        "output_mb": target.stat().st_size / 2**20,
    }


def run_dask(source: Path, folder: Path, workers: int) -> dict[str, Any]:
    """Privatize with Dask on a local cluster of ``workers`` processes; seconds end to end."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import frameldp

    mechanisms = {
        "dest": frameldp.Rappor(1.0, domain=DESTS),
        "carrier": frameldp.RandomizedResponse(2.0, domain=CARRIERS),
        "origin": frameldp.RandomizedResponse(2.0, domain=ORIGINS),
    }
    target = folder / f"dask-{workers}"
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        client.run(importlib.import_module, "frameldp")  # workers import it once, untimed
        started = time.perf_counter()
        frame = dd.read_parquet(
            source, columns=["dest", "carrier", "origin"], split_row_groups=True
        )
        frame.ldp.privatize(mechanisms).to_parquet(target, write_index=False)
        seconds = time.perf_counter() - started
    rows = sum(pq.read_metadata(part).num_rows for part in target.glob("*.parquet"))
    return {"seconds": seconds, "rows_per_s": rows / seconds, "rows": rows}


def run(sizes: list[int], dask_rows: int, quick: bool = False) -> list[dict[str, Any]]:
    """Every row of the table (``quick``: the default command line run and one Dask cluster of
    two workers, a smoke run of each path)."""
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for rows in sizes:
            source = folder / f"flights-{rows}.parquet"
            make_input(source, rows)
            size_mb = source.stat().st_size / 2**20
            runs = [("cli", ())]
            if rows == max(sizes) and not quick:
                runs.append(("cli --no-validate", ("--no-validate",)))
            for case, extra in runs:
                measured = run_cli(source, folder, *extra)
                out.append({"case": case, "rows": rows, "input_mb": size_mb, **measured})
            if rows == dask_rows:
                for workers in (2,) if quick else (1, 2):
                    measured = run_dask(source, folder, workers)
                    out.append(
                        {"case": f"dask {workers} worker(s)", "input_mb": size_mb, **measured}
                    )
            source.unlink()
    one = next((r for r in out if r["case"] == "dask 1 worker(s)"), None)
    two = next((r for r in out if r["case"] == "dask 2 worker(s)"), None)
    if one and two:
        two["speedup"] = one["seconds"] / two["seconds"]
    return out


def _print(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'case':<20} {'rows':>11} {'input MB':>9} {'seconds':>8} {'rows/s':>11} "
        f"{'peak MB':>8} {'speed-up':>8}"
    )
    for row in rows:
        peak = f"{row['peak_mb']:8.0f}" if "peak_mb" in row else f"{'':>8}"
        speedup = f"{row['speedup']:8.2f}" if "speedup" in row else f"{'':>8}"
        print(
            f"{row['case']:<20} {row['rows']:>11,} {row['input_mb']:9.1f} {row['seconds']:8.2f} "
            f"{row['rows_per_s']:11,.0f} {peak} {speedup}"
        )


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k rows (a smoke run)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    parser.add_argument(
        "--sizes", type=int, nargs="+", metavar="ROWS", help="input sizes (command line runs)"
    )
    parser.add_argument(
        "--dask-rows", type=int, metavar="ROWS", help="the size Dask runs at (0: no Dask run)"
    )
    arguments = parser.parse_args()
    sizes = [20_000] if arguments.quick else [1_000_000, 3_000_000, 10_000_000]
    sizes = arguments.sizes or sizes
    dask_rows = sizes[-1] if arguments.dask_rows is None else arguments.dask_rows
    rows = run(sizes, dask_rows=dask_rows, quick=arguments.quick)
    _print(rows)
    if arguments.json:
        arguments.json.write_text(json.dumps({"rows": rows}, indent=2))


if __name__ == "__main__":
    main()
