"""How fast the accountant and the ledger answer, and how much tighter than basic composition.

Cases (each timed as the best of ``--repeats`` runs of wall time, ``time.perf_counter``, with a
fresh accountant so nothing is cached between runs):

``binary_rr xK``
    ``Accountant().compose(RandomizedResponseEvent(1.0), count=K).explain(1e-6)``: the exact
    Kairouz–Oh–Viswanath sum (K + 1 atoms), RDP and zCDP conversions.
``nightly xN``
    The demo's release (RAPPOR epsilon 1 on 100 airports + 12-ary RR epsilon 2) repeated N times,
    ``explain(1e-9)``: two groups of events convolved exactly.
``three_epsilons x365``
    RAPPOR epsilon 1, 12-ary RR epsilon 0.5 and epsilon 2, each 365 times: three groups, the
    convolution of mixed epsilons.
``krr_k1024 x3650``
    1024-ary RR at epsilon 1, 3650 times: the three-atom lattice convolution power.
``ledger_spend``
    ``Ledger.spend`` of the nightly release on a SQLite file, at a budget with delta 1e-9:
    mean milliseconds per spend over the first 100 spends, and over spends 900-1000 (each spend
    recomputes the composition of the whole history).

Usage::

    python benchmarks/bench_accounting.py            # full run
    python benchmarks/bench_accounting.py --quick    # smaller counts (smoke run)
    python benchmarks/bench_accounting.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import frameldp
from frameldp.datasets import FLIGHTS_DOMAINS


def _best(repeats: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def _nightly() -> frameldp.PrivacyGuarantee:
    return frameldp.compose(
        [
            frameldp.Rappor(epsilon=1.0, domain=FLIGHTS_DOMAINS["dest"]).privacy,
            frameldp.RandomizedResponse(2.0, domain=FLIGHTS_DOMAINS["carrier"]).privacy,
        ]
    )


def _explain_case(
    name: str, build: Callable[[], frameldp.Accountant], delta: float, repeats: int
) -> dict[str, Any]:
    seconds, explanation = _best(repeats, lambda: build().explain(delta))
    basic = next(c.epsilon for c in explanation.conversions if c.method == "basic")
    rdp = next(c.epsilon for c in explanation.conversions if c.method == "rdp")
    return {
        "case": name,
        "delta": delta,
        "seconds": seconds,
        "epsilon": explanation.best.epsilon,
        "method": explanation.best.method,
        "rdp_epsilon": rdp,
        "basic_epsilon": basic,
    }


def _ledger_case(spends: int) -> dict[str, Any]:
    guarantee = _nightly()
    with tempfile.TemporaryDirectory() as directory:
        ledger = frameldp.Ledger(Path(directory) / "budget.sqlite")
        ledger.set_budget("flights", epsilon=1e9, delta=1e-9)
        times = []
        for _ in range(spends):
            start = time.perf_counter()
            ledger.spend("flights", guarantee)
            times.append(time.perf_counter() - start)
        spent = ledger.spent("flights")
    first = times[: min(100, spends)]
    last = times[-100:]
    return {
        "case": f"ledger_spend x{spends}",
        "delta": 1e-9,
        "seconds": sum(times),
        "ms_per_spend_first_100": 1000 * sum(first) / len(first),
        "ms_per_spend_last_100": 1000 * sum(last) / len(last),
        "epsilon": spent,
        "method": "pld",
        "rdp_epsilon": float("nan"),
        "basic_epsilon": spends * guarantee.epsilon,
    }


def run(quick: bool, repeats: int) -> list[dict[str, Any]]:
    """Every case, as rows."""
    nightly = _nightly()
    binary = (100, 1000) if quick else (100, 10_000, 1_000_000)
    nights = (30, 365) if quick else (30, 365, 3650)
    rows = []
    for count in binary:
        rows.append(
            _explain_case(
                f"binary_rr x{count}",
                lambda count=count: frameldp.Accountant().compose(
                    frameldp.RandomizedResponseEvent(1.0), count=count
                ),
                1e-6,
                repeats,
            )
        )
    for count in nights:
        rows.append(
            _explain_case(
                f"nightly x{count}",
                lambda count=count: frameldp.Accountant().compose(nightly, count=count),
                1e-9,
                repeats,
            )
        )
    mixed = [
        frameldp.Rappor(epsilon=1.0, domain=FLIGHTS_DOMAINS["dest"]).privacy,
        frameldp.RandomizedResponse(0.5, domain=FLIGHTS_DOMAINS["carrier"]).privacy,
        frameldp.RandomizedResponse(2.0, domain=FLIGHTS_DOMAINS["carrier"]).privacy,
    ]

    def three() -> frameldp.Accountant:
        accountant = frameldp.Accountant()
        for guarantee in mixed:
            accountant = accountant.compose(guarantee, count=365)
        return accountant

    rows.append(_explain_case("three_epsilons x365", three, 1e-9, repeats))
    krr_count = 365 if quick else 3650
    rows.append(
        _explain_case(
            f"krr_k1024 x{krr_count}",
            lambda: frameldp.Accountant().compose(
                frameldp.RandomizedResponseEvent(1.0, k=1024), count=krr_count
            ),
            1e-9,
            repeats,
        )
    )
    rows.append(_ledger_case(50 if quick else 1000))
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    header = f"{'case':<24} {'delta':>7} {'seconds':>9} {'epsilon':>10} {'method':>6} "
    header += f"{'rdp eps':>10} {'basic eps':>10}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['case']:<24} {row['delta']:>7.0e} {row['seconds']:>9.4f} "
            f"{row['epsilon']:>10.4f} {row['method']:>6} {row['rdp_epsilon']:>10.4f} "
            f"{row['basic_epsilon']:>10.4g}"
        )
    for row in rows:
        if "ms_per_spend_first_100" in row:
            print(
                f"\n{row['case']}: {row['ms_per_spend_first_100']:.2f} ms per spend "
                f"(first 100), {row['ms_per_spend_last_100']:.2f} ms (last 100)"
            )


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts (smoke run)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    arguments = parser.parse_args()
    rows = run(arguments.quick, 1 if arguments.quick else arguments.repeats)
    _print(rows)
    if arguments.json:
        arguments.json.write_text(json.dumps({"rows": rows}, indent=2))


if __name__ == "__main__":
    main()
