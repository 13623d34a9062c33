"""Tables by public groups and joint tables: accuracy against the truth on the embedded flights
data, and how long grouped and joint debiasing take on large frames.

Accuracy: the flights data (120,000 rows) gets a public ``month`` (rows in 12 consecutive blocks;
the data has no dates). ``dest`` (100 values) is privatized with the automatic choice at each
epsilon and debiased by month; ``carrier`` (12) and ``origin`` (30) are privatized at epsilon/2
each and debiased jointly, beside the alternative of one column over their 360 pairs at epsilon.
Each row: the root mean squared error of a cell's share against the truth, the mean stated
standard error, and the share of 95% intervals that hold the truth (averaged over ``--seeds``).

Speed: ``debias(..., by=...)`` over 10^6 rows (k = 100) with 12 and 10,000 groups, and a joint
table of 10^6 rows (12 x 30 buckets), flat and by 12 groups, CPU and wall seconds, pandas. Then
a k-RR column (k = 64, 10^6 rows) by 10^3, 10^4 and 10^5 public groups beside pandas' groupby
value_counts of the same reports: every group's statistic comes from one pass over the rows.

    .venv/bin/python benchmarks/bench_tables.py            # about a minute
    .venv/bin/python benchmarks/bench_tables.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import frameldp
from frameldp.datasets import FLIGHTS_DOMAINS, load_flights


def _flights(rows: int | None) -> pd.DataFrame:
    frame = load_flights("pandas")
    if rows is not None:
        frame = frame.head(rows)
    month = 1 + np.arange(len(frame)) * 12 // len(frame)
    return frame.assign(month=month)


def _score(table: Any, truth: np.ndarray, sizes: np.ndarray) -> tuple[float, float, float]:
    """RMSE of the shares, mean stated standard error of a share, 95% coverage."""
    counts = np.concatenate([g.estimate.counts for g in table.groups] or [table.estimate.counts])
    errors = np.concatenate(
        [g.estimate.std_errors for g in table.groups] or [table.estimate.std_errors]
    )
    shares = (counts - truth) / sizes
    covered = np.abs(counts - truth) <= 1.96 * errors
    return float(np.sqrt(np.mean(shares**2))), float(np.mean(errors / sizes)), float(covered.mean())


def accuracy(epsilons: list[float], seeds: int, rows: int | None) -> list[dict[str, Any]]:
    frame = _flights(rows)
    dests, carriers, origins = (FLIGHTS_DOMAINS[c] for c in ("dest", "carrier", "origin"))
    by_month = pd.crosstab(frame["month"], frame["dest"]).reindex(columns=dests, fill_value=0)
    month_sizes = np.repeat(by_month.sum(axis=1).to_numpy(), len(dests))
    pairs = pd.crosstab(frame["carrier"], frame["origin"]).reindex(
        index=carriers, columns=origins, fill_value=0
    )
    pair_truth = pairs.to_numpy().ravel()
    product = frameldp.product_domain(carriers, origins)
    pair_column = frame["carrier"].astype(str) + "|" + frame["origin"].astype(str)
    rows_out = []
    for epsilon in epsilons:
        scores: dict[str, list[tuple[float, float, float]]] = {}
        for seed in range(seeds):
            mech = frameldp.choose_mechanism(epsilon, domain=dests)
            reports = frame.ldp.privatize({"dest": mech}, seed=seed)
            table = reports.ldp.debias("dest", by="month")
            scores.setdefault(f"dest by month ({mech.name})", []).append(
                _score(table, by_month.to_numpy().ravel(), month_sizes)
            )
            half = epsilon / 2
            first = frameldp.choose_mechanism(half, domain=carriers)
            second = frameldp.choose_mechanism(half, domain=origins)
            joint = frame.ldp.privatize({"carrier": first, "origin": second}, seed=seed)
            table = joint.ldp.debias(["carrier", "origin"])
            scores.setdefault("carrier x origin, two columns", []).append(
                _score(table, pair_truth, np.full(pair_truth.size, len(frame)))
            )
            single = frameldp.choose_mechanism(epsilon, domain=product)
            paired = pd.DataFrame({"pair": pair_column}).ldp.privatize({"pair": single}, seed=seed)
            table = paired.ldp.debias("pair")
            scores.setdefault(f"carrier x origin, one column ({single.name})", []).append(
                _score(table, pair_truth, np.full(pair_truth.size, len(frame)))
            )
        for name, values in scores.items():
            rmse, stated, coverage = np.mean(values, axis=0)
            rows_out.append(
                {
                    "table": name,
                    "epsilon": epsilon,
                    "rmse_share": rmse,
                    "stated_std_error": stated,
                    "coverage_95": coverage,
                }
            )
    return rows_out


def _timed(call: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.process_time() - cpu, time.perf_counter() - wall


def speed(n: int, precincts: int = 10_000) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    domain = [f"d{i}" for i in range(100)]
    frame = pd.DataFrame(
        {
            "dest": pd.Categorical.from_codes(rng.integers(0, 100, n), categories=domain),
            "carrier": pd.Categorical.from_codes(
                rng.integers(0, 12, n), categories=FLIGHTS_DOMAINS["carrier"]
            ),
            "origin": pd.Categorical.from_codes(
                rng.integers(0, 30, n), categories=FLIGHTS_DOMAINS["origin"]
            ),
            "month": rng.integers(1, 13, n),
            "precinct": rng.integers(0, precincts, n),
        }
    )
    reports = frame.ldp.privatize(
        {
            "dest": frameldp.OptimizedUnaryEncoding(2.0, domain=domain),
            "carrier": frameldp.RandomizedResponse(1.0, domain=FLIGHTS_DOMAINS["carrier"]),
            "origin": frameldp.OptimizedUnaryEncoding(1.0, domain=FLIGHTS_DOMAINS["origin"]),
        }
    )
    cases = {
        "debias dest (flat)": lambda: reports.ldp.debias("dest"),
        "debias dest by month (12 groups)": lambda: reports.ldp.debias("dest", by="month"),
        f"debias dest by precinct ({precincts:,} groups)": lambda: reports.ldp.debias(
            "dest", by="precinct"
        ),
        "joint carrier x origin": lambda: reports.ldp.debias(["carrier", "origin"]),
        "joint carrier x origin by month": lambda: reports.ldp.debias(
            ["carrier", "origin"], by="month"
        ),
    }
    out = []
    for name, call in cases.items():
        call()  # warm
        cpu, wall = _timed(call)
        out.append({"case": name, "n": n, "cpu_s": cpu, "wall_s": wall})
    return out


def _value_counts(reports: pd.DataFrame) -> Any:
    return reports.groupby("group")["value"].value_counts()


def against_pandas(n: int, group_counts: list[int], repeats: int) -> list[dict[str, Any]]:
    """A k-RR column (k = 64) debiased by many public groups, beside pandas' ``groupby``
    ``value_counts`` of the same reports (the median of ``repeats`` runs of each)."""
    rng = np.random.default_rng(1)
    domain = [f"v{i}" for i in range(64)]
    values = pd.Categorical.from_codes(rng.integers(0, 64, n), categories=domain)
    out = []
    for groups in group_counts:
        frame = pd.DataFrame({"value": values, "group": rng.integers(0, groups, n)})
        mechanism = frameldp.RandomizedResponse(1.0, domain=domain)
        reports = frame.ldp.privatize({"value": mechanism})
        ours, theirs = [], []
        counted = functools.partial(_value_counts, reports)
        debiased = functools.partial(reports.ldp.debias, "value", by="group")
        for _ in range(repeats):
            theirs.append(_timed(counted)[0])
            ours.append(_timed(debiased)[0])
        cpu, baseline = float(np.median(ours)), float(np.median(theirs))
        out.append(
            {"groups": groups, "n": n, "cpu_s": cpu, "pandas_s": baseline, "ratio": cpu / baseline}
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run on small inputs")
    parser.add_argument("--seeds", type=int, default=5, help="runs averaged per accuracy row")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args()
    epsilons = [2.0] if args.quick else [1.0, 2.0, 4.0]
    seeds = 1 if args.quick else args.seeds
    rows = 6_000 if args.quick else None
    scored = accuracy(epsilons, seeds, rows)
    print("Accuracy on the flights data (shares of a cell; RMSE and errors in percentage points)")
    print(f"{'table':<52} {'eps':>5} {'RMSE':>8} {'stated se':>10} {'95% cover':>10}")
    for r in scored:
        print(
            f"{r['table']:<52} {r['epsilon']:>5g} {100 * r['rmse_share']:>8.3f} "
            f"{100 * r['stated_std_error']:>10.3f} {r['coverage_95']:>10.3f}"
        )
    timed = speed(20_000, 500) if args.quick else speed(1_000_000)
    print()
    print(f"{'case':<44} {'n':>9} {'CPU s':>8} {'wall s':>8}")
    for r in timed:
        print(f"{r['case']:<44} {r['n']:>9,} {r['cpu_s']:>8.3f} {r['wall_s']:>8.3f}")
    if args.quick:
        compared = against_pandas(20_000, [100, 1_000], repeats=1)
    else:
        compared = against_pandas(1_000_000, [1_000, 10_000, 100_000], repeats=5)
    print()
    print("k-RR (k = 64) by public groups against pandas groupby value_counts (CPU s, median)")
    print(f"{'groups':>9} {'n':>11} {'frameldp':>9} {'pandas':>8} {'ratio':>6}")
    for r in compared:
        print(
            f"{r['groups']:>9,} {r['n']:>11,} {r['cpu_s']:>9.3f} {r['pandas_s']:>8.3f} "
            f"{r['ratio']:>6.1f}"
        )
    if args.json:
        rows = (
            [{"kind": "accuracy", **r} for r in scored]
            + [{"kind": "speed", **r} for r in timed]
            + [{"kind": "against_pandas", **r} for r in compared]
        )
        args.json.write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
