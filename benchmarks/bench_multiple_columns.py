"""Several columns of one person: splitting the budget against sampling one column per person.

For ``d`` columns and a person's budget ``epsilon``, ``split`` privatizes every column at
``epsilon / d``, ``sample`` one column per row (``collect="sample"``) at the whole ``epsilon``,
and ``sample+fake`` the same with reports of uniform values in the other columns
(``sample+prior``: of values drawn from a public prior, RS+RFD, here the shares of the next
``n`` rows, an earlier period's, each count plus 1/2); each
column's mechanism is ``choose_mechanism`` at the epsilon it runs at (the frequency oracle of
smallest variance for its domain). The three releases state the same guarantee for a person
(checked: ``privacy.epsilon`` equals ``epsilon`` for each).

**Data.** ``d <= 5``: the first ``n`` flights of the demo data, columns ``delay`` (5 values),
``carrier`` (12), ``origin`` (30), ``dest`` (100) and ``fare`` bucketized into 16 equal bins
of its public bounds, the first ``d`` of them. ``d = 10``: those five and five synthetic
columns (Zipf(1.1) over 8 to 40 values, numpy ``default_rng(3)``, test data).

**Measured.** ``total`` is the sum over columns and buckets of the mean squared error of the
estimated share over ``R`` releases (each under its own seed), times ``n``: the variance per
person. ``formula`` is the exact variance at the true shares (``frameldp.core.collection``:
``split_count_variance``, ``sample_count_variance`` at ``m = n / d`` reporters, and
``sample_fake_count_variance`` with uniform or prior fakes), ``ratio`` their quotient (``sd``, the
ratio's standard deviation for normal errors, about ``sqrt(2 / (R * buckets))``), and
``x split`` the strategy's total over split's. ``--quick``: n = 4,000, R = 4, d = 2,
epsilon = 2.

Usage::

    python benchmarks/bench_multiple_columns.py            # d in {2, 5, 10}, eps in {1, 2, 4}
    python benchmarks/bench_multiple_columns.py --quick    # smoke run
    python benchmarks/bench_multiple_columns.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("FRAMELDP_THREADS", "1")

import numpy as np
import pandas as pd

import frameldp
from frameldp.core import choose_mechanism
from frameldp.core.collection import (
    OracleNoise,
    sample_count_variance,
    sample_fake_count_variance,
    split_count_variance,
)
from frameldp.datasets import FARE_BOUNDS, FLIGHTS_DOMAINS, load_flights

FARE_BINS = 16
SYNTHETIC_SIZES = (8, 12, 20, 30, 40)


def columns(n: int, start: int = 0) -> tuple[pd.DataFrame, dict[str, list[Any]]]:
    """Ten categorical columns of ``n`` rows (flights from row ``start``) and their public
    domains."""
    flights = load_flights().iloc[start : start + n]
    low, high = FARE_BOUNDS
    bins = np.minimum(((flights["fare"] - low) / (high - low) * FARE_BINS).astype(int), 15)
    frame = pd.DataFrame(
        {
            "delay": flights["delay"].to_numpy(),
            "carrier": flights["carrier"].to_numpy(),
            "origin": flights["origin"].to_numpy(),
            "dest": flights["dest"].to_numpy(),
            "fare_bin": bins.to_numpy(),
        }
    )
    domains: dict[str, list[Any]] = {
        name: list(FLIGHTS_DOMAINS[name]) for name in ("delay", "carrier", "origin", "dest")
    }
    domains["fare_bin"] = list(range(FARE_BINS))
    rng = np.random.default_rng(3 + start)  # synthetic test data
    for i, k in enumerate(SYNTHETIC_SIZES):
        weights = 1.0 / np.arange(1, k + 1) ** 1.1
        name = f"zipf_{k}"
        frame[name] = rng.choice(k, size=n, p=weights / weights.sum()) + 100 * i
        domains[name] = list(range(100 * i, 100 * i + k))
    return frame, domains


def measure(
    frame: pd.DataFrame,
    domains: dict[str, list[Any]],
    d: int,
    epsilon: float,
    releases: int,
    priors: dict[str, dict[Any, float]],
) -> list[dict[str, Any]]:
    """Every strategy's measured and exact total variance for the first ``d`` columns
    (``"sample+prior"``: sample+fake with fakes drawn from ``priors``)."""
    names = list(frame.columns[:d])
    n = len(frame)
    truth = {c: frame[c].value_counts().reindex(domains[c], fill_value=0).to_numpy() for c in names}
    rows = []
    for strategy, per_column in (
        ("split", epsilon / d),
        ("sample", epsilon),
        ("sample+fake", epsilon),
        ("sample+prior", epsilon),
    ):
        mechanisms = {c: choose_mechanism(per_column, domain=domains[c]) for c in names}
        collect, prior = strategy.replace("+prior", "+fake"), strategy == "sample+prior"
        fake_prior = {c: priors[c] for c in names} if prior else None
        squares = 0.0
        for seed in range(releases):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", frameldp.FrameLDPWarning)
                reports = frame[names].ldp.privatize(
                    mechanisms, collect=collect, seed=seed, fake_prior=fake_prior
                )
            assert abs(reports.ldp.privacy.epsilon - epsilon) < 1e-6
            for c in names:
                counts = reports.ldp.debias(c).to_pandas()["count"].to_numpy()
                squares += float(np.sum((counts - truth[c]) ** 2)) / n**2
        formula = 0.0
        for c in names:
            noise = OracleNoise.of(mechanisms[c])
            shares = truth[c] / n
            if strategy == "split":
                formula += float(np.sum(split_count_variance(noise, truth[c].astype(float), n)))
            elif strategy == "sample":
                formula += float(np.sum(sample_count_variance(noise, shares, n, n // d)))
            else:
                law = np.full(noise.k, 1.0 / noise.k)
                if prior:
                    law = np.array([priors[c][label] for label in domains[c]])
                formula += float(np.sum(sample_fake_count_variance(noise, shares, n, d, law)))
        formula /= n  # the variance of the shares, times n
        buckets = sum(len(domains[c]) for c in names)
        rows.append(
            {
                "d": d,
                "epsilon": epsilon,
                "strategy": strategy,
                "mechanisms": sorted({m.name for m in mechanisms.values()}),
                "total": squares / releases * n,
                "formula": formula,
                "ratio_sd": float(np.sqrt(2 / (releases * buckets))),
            }
        )
    split = rows[0]
    for row in rows:
        row["ratio"] = row["total"] / row["formula"]
        row["vs_split"] = row["total"] / split["total"]
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    print("Total variance per person (sum over columns and buckets of n * MSE of the shares)")
    print(
        f"{'d':>3} {'eps':>4} {'strategy':<11} {'total':>10} {'formula':>10} {'ratio':>6} "
        f"{'sd':>5} {'x split':>8}  mechanisms"
    )
    for row in rows:
        print(
            f"{row['d']:3d} {row['epsilon']:4.1f} {row['strategy']:<11} {row['total']:10.2f} "
            f"{row['formula']:10.2f} {row['ratio']:6.3f} {row['ratio_sd']:5.3f} "
            f"{row['vs_split']:8.3f}  {', '.join(row['mechanisms'])}"
        )


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run on small inputs")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    arguments = parser.parse_args()
    quick = arguments.quick
    n = 4_000 if quick else 20_000
    frame, domains = columns(n)
    earlier, _ = columns(n, start=n)  # the public prior: an earlier period's shares
    priors = {
        c: (earlier[c].value_counts().reindex(domains[c], fill_value=0) + 0.5)
        .pipe(lambda counts: counts / counts.sum())
        .to_dict()
        for c in frame.columns
    }
    rows: list[dict[str, Any]] = []
    for d in (2,) if quick else (2, 5, 10):
        for epsilon in (2.0,) if quick else (1.0, 2.0, 4.0):
            rows += measure(frame, domains, d, epsilon, 4 if quick else 40, priors)
    _print(rows)
    if arguments.json:
        arguments.json.write_text(json.dumps({"rows": rows}, indent=2))


if __name__ == "__main__":
    main()
