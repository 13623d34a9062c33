"""Ordinary operations on a report column against the same operations on a plain column of its
storage type (issue 37: no operation may cost more than 1.5x the plain one). For bit reports,
``astype(str)`` and ``to_csv`` write the text form where the plain column writes ``b'...'``.

pandas and polars: 10^6 rows of k-RR reports (``large_string`` labels, k = 20) and of RAPPOR
reports (``large_binary``, k = 20 bits), each beside ``ldp.plain()`` of the same frame, which
holds the storage values in a plain column (polars: the operations its engine runs on extension
columns; a filter compares ``pl.col(c).ext.storage()``). Each operation is timed as the best of
``--repeat`` runs (CPU seconds of this process); the table shows both and their ratio.

    .venv/bin/python benchmarks/bench_report_ops.py            # about a minute
    .venv/bin/python benchmarks/bench_report_ops.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import io
import json
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl

import frameldp

DOMAIN = [f"c{i:02d}" for i in range(20)]
OPERATIONS: dict[str, Callable[[pd.DataFrame, Any], Any]] = {
    "== value": lambda f, v: f["c"] == v,
    "isin": lambda f, v: f["c"].isin([v]),
    "filter": lambda f, v: f[f["c"] == v],
    "unique": lambda f, v: f["c"].unique(),
    "value_counts": lambda f, v: f["c"].value_counts(),
    "nunique": lambda f, v: f["c"].nunique(),
    "factorize": lambda f, v: pd.factorize(f["c"]),
    "groupby size": lambda f, v: f.groupby("c").size(),
    "sort_values": lambda f, v: f.sort_values("c"),
    "drop_duplicates": lambda f, v: f.drop_duplicates("c"),
    "merge key": lambda f, v: f.merge(f[["c"]].drop_duplicates().assign(y=1), on="c"),
    "concat": lambda f, v: pd.concat([f, f]),
    "take": lambda f, v: f.take(np.arange(0, len(f), 2)),
}
TEXT_OPERATIONS: dict[str, Callable[[pd.DataFrame, Any], Any]] = {
    "astype(str)": lambda f, v: f["c"].astype(str),
    "to_csv": lambda f, v: f.head(100_000).to_csv(io.StringIO(), index=False),
}


POLARS_OPERATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "filter on storage": lambda f, v: (
        f.filter(pl.col("c").ext.storage() == v)
        if isinstance(f.schema["c"], pl.BaseExtension)
        else f.filter(pl.col("c") == v)
    ),
    "unique": lambda f, v: f.select(pl.col("c").unique()),
    "n_unique": lambda f, v: f.select(pl.col("c").n_unique()),
    "value_counts": lambda f, v: f.select(pl.col("c").value_counts()),
    "group_by len": lambda f, v: f.group_by("c").len(),
    "sort": lambda f, v: f.sort("c"),
    "join on column": lambda f, v: f.join(f.select("c").unique(), on="c"),
    "concat": lambda f, v: pl.concat([f, f]),
}


def _cpu(operation: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        operation()
        best = min(best, time.process_time() - start)
    return best


def run(rows: int, repeat: int) -> list[dict[str, Any]]:
    warnings.simplefilter("ignore", frameldp.InsecureSeedWarning)  # seeded: test data
    rng = np.random.default_rng(1)
    data = pd.DataFrame({"c": rng.choice(DOMAIN, size=rows), "x": np.arange(rows)})
    out = []
    for kind, mechanism in (
        ("krr", frameldp.RandomizedResponse(1.0, domain=DOMAIN)),
        ("rappor", frameldp.Rappor(1.0, domain=DOMAIN)),
    ):
        reports = data.ldp.privatize({"c": mechanism}, seed=2)
        value = reports["c"].iloc[0]
        # A plain column of the storage type: for bit reports, Python bytes, which astype(str)
        # and to_csv turn into b'...' literals where the report column writes its text form.
        plain = reports.ldp.plain()
        for name, operation in {**OPERATIONS, **TEXT_OPERATIONS}.items():
            report_s = _cpu(lambda op=operation, f=reports, v=value: op(f, v), repeat)
            try:
                plain_s: float | None = _cpu(
                    lambda op=operation, f=plain, v=value: op(f, v), repeat
                )
            except UnicodeDecodeError:  # pandas cannot make text of arbitrary bytes
                plain_s = None
            out.append(
                {
                    "library": "pandas",
                    "reports": kind,
                    "operation": name,
                    "report_s": report_s,
                    "plain_s": plain_s,
                    "ratio": report_s / plain_s if plain_s else None,
                }
            )
        polars_reports = pl.from_pandas(reports)
        polars_plain = polars_reports.ldp.plain()
        for name, operation in POLARS_OPERATIONS.items():
            report_s = _cpu(lambda op=operation, f=polars_reports, v=value: op(f, v), repeat)
            plain_s = _cpu(lambda op=operation, f=polars_plain, v=value: op(f, v), repeat)
            out.append(
                {
                    "library": "polars",
                    "reports": kind,
                    "operation": name,
                    "report_s": report_s,
                    "plain_s": plain_s,
                    "ratio": report_s / plain_s if plain_s else None,
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a smoke run (10^4 rows, once)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    rows, repeat = (10_000, 1) if args.quick else (args.rows, args.repeat)
    results = run(rows, repeat)
    print(f"{rows:,} rows; CPU seconds, best of {repeat}")
    print(
        f"{'library':8} {'reports':8} {'operation':18} {'report col':>11} {'plain col':>11} "
        f"{'ratio':>7}"
    )
    for row in results:
        plain = "fails" if row["plain_s"] is None else f"{row['plain_s']:.4f}"
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        print(
            f"{row['library']:8} {row['reports']:8} {row['operation']:18} "
            f"{row['report_s']:11.4f} {plain:>11} {ratio:>7}"
        )
    if args.json:
        args.json.write_text(json.dumps({"rows": results}, indent=1))


if __name__ == "__main__":
    main()
