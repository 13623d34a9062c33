"""Nightly collections with memoized permanent responses, per mechanism (issue 18).

For every mechanism that memoizes (RAPPOR one-hot, k-RR, OUE, local hashing, subset selection,
projective geometry response)
over a public domain of ``k = 16`` values, at ``epsilon_1 = 1`` (one report) and
``epsilon_inf = 3`` (any number of reports of one value):

``charged``
    What a ledger charges each person after 365 nightly releases of the same 200 people (one
    row each; memoized: 365 instantaneous responses, since a value may change), each a real
    ``df.ldp.privatize`` call with ``ledger=``: memoized (``user=``, ``memo_key=``) and fresh
    (one-stage mechanism at epsilon 1, no memo).
``s.e.``
    The standard error of one night's debiased frequency at ``n = 10^5`` people (exact, averaged
    over the buckets): memoized (the end-to-end channel), the one-stage mechanism at epsilon 1
    (the same channel, up to rounding), and the one-stage mechanism at ``3 / 365`` (what a
    person's year would cost 3 without memoization).
``rows/s``
    Privatize throughput (CPU seconds, ``time.process_time``, best of three) of ``n`` rows of a
    pandas frame, one person a row, user ids text (``"user-<i>"``): memoized under a 32-byte
    memo key (scheme 2: BLAKE2b per id), memoized under a key of ``frameldp.new_memo_key()``
    (scheme 3: a keyed PRF over the column in batches), one-stage, and one-stage with the same
    user column (``user=``: each person's rows counted, as every release with user ids does);
    ``x`` is the one-stage rate over the scheme-3 rate (issue 41: at most 5), ``x user`` the
    one-stage-with-users rate over it.

Usage::

    python benchmarks/bench_longitudinal.py            # 365 nights, n = 10^6 for the speed
    python benchmarks/bench_longitudinal.py --quick    # 20 nights, n = 2 x 10^4 (smoke run)
    python benchmarks/bench_longitudinal.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import frameldp
from frameldp.core.mechanisms.choice import mean_variance

K = 16
EPSILON, INFINITY = 1.0, 3.0
MEMO = bytes(range(32))
DOMAIN = [f"v{i:02d}" for i in range(K)]

MECHANISMS: dict[str, Callable[..., Any]] = {
    "RAPPOR (one-hot)": frameldp.Rappor,
    "k-RR": frameldp.RandomizedResponse,
    "OUE": frameldp.OptimizedUnaryEncoding,
    "local hashing": frameldp.LocalHashing,
    "subset selection": frameldp.SubsetSelection,
    "PGR": frameldp.ProjectiveGeometryResponse,
}
MEMO_V3 = frameldp.core.randomness.MEMO_KEY_PREFIX + MEMO


def frame(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` people with a Zipf-like value each (test data, not noise)."""
    weights = 1.0 / np.arange(1, K + 1)
    values = np.random.default_rng(seed).choice(K, size=n, p=weights / weights.sum())
    return pd.DataFrame(
        {"uid": [f"user-{i}" for i in range(n)], "value": [DOMAIN[v] for v in values]}
    )


def charged(build: Callable[..., Any], nights: int) -> tuple[float, float]:
    """Ledger charges after ``nights`` releases: memoized, fresh."""
    people = frame(200)
    ledger = frameldp.Ledger(":memory:")
    for budget in ("memoized", "fresh"):
        ledger.set_budget(budget, epsilon=1e9)  # measured, not capped
    memoized = build(EPSILON, domain=DOMAIN, epsilon_infinity=INFINITY)
    fresh = build(EPSILON, domain=DOMAIN)
    for _ in range(nights):
        people.ldp.privatize(
            {"value": memoized}, user="uid", memo_key=MEMO, ledger=ledger, budget="memoized"
        )
        people.ldp.privatize({"value": fresh}, ledger=ledger, budget="fresh")
    return ledger.spent("memoized"), ledger.spent("fresh")


def throughput(people: pd.DataFrame, mechanism: Any, **memo: Any) -> float:
    """Rows per CPU second of one privatize call (the best of three)."""
    best = math.inf
    for _ in range(3):
        start = time.process_time()
        people.ldp.privatize({"value": mechanism}, **memo)
        best = min(best, time.process_time() - start)
    return len(people) / best


def measure(name: str, nights: int, n: int) -> dict[str, Any]:
    build = MECHANISMS[name]
    memoized = build(EPSILON, domain=DOMAIN, epsilon_infinity=INFINITY)
    one_stage = build(EPSILON, domain=DOMAIN)
    thinned = build(INFINITY / 365, domain=DOMAIN)
    parameters = memoized.guarantee("memo").parameters
    spent_memoized, spent_fresh = charged(build, nights)
    people = frame(n, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memoized_rate = throughput(people, memoized, user="uid", memo_key=MEMO)
        scheme_3_rate = throughput(people, memoized, user="uid", memo_key=MEMO_V3)
    population = 100_000

    def error(mechanism: Any) -> float:
        return math.sqrt(mean_variance(mechanism, K, population)) / population

    return {
        "mechanism": name,
        "epsilon_1": parameters["epsilon_1"],
        "epsilon_infinity": parameters["epsilon_infinity"],
        "nights": nights,
        "charged_memoized": spent_memoized,
        "charged_fresh": spent_fresh,
        "se_memoized": error(memoized),
        "se_one_stage": error(one_stage),
        "se_fresh_same_year": error(thinned),
        "rows_per_s_memoized": memoized_rate,
        "rows_per_s_memoized_v3": scheme_3_rate,
        "rows_per_s_one_stage": throughput(people, one_stage),
        "rows_per_s_one_stage_users": throughput(people, one_stage, user="uid"),
        "n": n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 nights, n = 2 x 10^4")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = parser.parse_args()
    nights, n = (20, 20_000) if args.quick else (365, 1_000_000)
    rows = [measure(name, nights, n) for name in MECHANISMS]
    print(
        f"Nightly collections, k = {K}, epsilon_1 = {EPSILON:g}, epsilon_inf = {INFINITY:g}: "
        f"ledger after {nights} nights (200 people); s.e. of a frequency at n = 10^5; "
        f"privatize rows/s at n = {n:,}"
    )
    header = (
        f"{'mechanism':<18} {'eps_1':>7} {'eps_inf':>7} {'memoized':>9} {'fresh':>7} "
        f"{'s.e. memo':>10} {'s.e. 1-st':>10} {'s.e. 3/365':>10} {'rows/s memo2':>12} "
        f"{'rows/s memo3':>12} {'rows/s 1-st':>12} {'1-st user':>12} {'x':>5} {'x user':>6}"
    )
    print(header)
    for r in rows:
        print(
            f"{r['mechanism']:<18} {r['epsilon_1']:>7.4f} {r['epsilon_infinity']:>7.4f} "
            f"{r['charged_memoized']:>9.4g} {r['charged_fresh']:>7.4g} "
            f"{r['se_memoized']:>10.5f} {r['se_one_stage']:>10.5f} "
            f"{r['se_fresh_same_year']:>10.4f} {r['rows_per_s_memoized']:>12,.0f} "
            f"{r['rows_per_s_memoized_v3']:>12,.0f} {r['rows_per_s_one_stage']:>12,.0f} "
            f"{r['rows_per_s_one_stage_users']:>12,.0f} "
            f"{r['rows_per_s_one_stage'] / r['rows_per_s_memoized_v3']:>5.1f} "
            f"{r['rows_per_s_one_stage_users'] / r['rows_per_s_memoized_v3']:>6.1f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
