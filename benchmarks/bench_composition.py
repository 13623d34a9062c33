"""Shuffled releases composed, and how long compositions take (issue 17).

Two tables, both at ``delta`` = 1e-6.

**Shuffled binary randomized response**, one release and 365 nightly releases of the same
people, for ``eps0`` in {1, 2, 4, 8} and ``n`` in {10^4, 10^5, 10^6} (``--quick``: eps0 = 4,
n = 1,000, and 10 releases instead of 365; the lower bound on a lattice of step 2^-8):

``FMT21 closed``
    Feldman, McMillan, Talwar 2021, Thm. 3.1 (``n/a`` outside its condition).
``FMT21 clones``
    the clone pair's exact divergence (valid for any eps0-LDP randomizer).
``FMT23``
    the stronger-clone pair (k-ary RR).
``exact``
    the exact scan over every dataset of the others (``n <= 10^4``): what frameldp reports for
    one release there (FMT23 above).
``lower``
    shuffled binary RR with every other person holding 0 (the analyst counts ones): no valid
    bound can be below it. Over 365 rounds: that pair's loss distribution composed with every
    loss rounded *down* to the lattice (a lower bound of its exact composition).
``365 before``
    issue 16's accountant: basic composition, ``365 x FMT23(delta / 365)``.
``365 reported``
    the FMT23 pair's loss distribution composed 365 times on the lattice (what frameldp
    reports now), and its rounding bound (the most it can exceed the exact composition of the
    pairs).

**Small delta**: ``rounds`` shuffled k-RR releases at eps0 = 4 among 10^3 people
(``--quick``: 300 people, k = 2) at delta = 1e-9, before (basic composition, what
frameldp reported there) and now (the pairs' Rényi curves when the lattice cannot resolve the
delta), with a lower bound for binary RR.

**Composition times**: cold calls of ``Accountant.epsilon(1e-6)`` (each accountant is new, so
nothing is cached), beside the figures issue 17 measured before the change (``--quick``: 10^3
uses, 100 distinct epsilons, shuffled releases among 300 people).

Run: ``.venv/bin/python benchmarks/bench_composition.py [--quick] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench_shuffle import binary_rr_lower_bound
from frameldp import Accountant
from frameldp.accounting import RandomizedResponseEvent, ShuffleEvent
from frameldp.accounting.amplification import clone_epsilon, closed_form_epsilon
from frameldp.accounting.lattice import FINEST_STEP, Lattice, to_pld
from frameldp.accounting.shuffled_rr import EXACT_SCAN_MAX, exact_rr_epsilon

DELTA = 1e-6
SMALL_DELTA = 1e-9
ROUNDS = 365
QUICK_ROUNDS = 10


def zeros_pair(epsilon0: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Losses and masses of the all-zeros pair: Bernoulli(p) + Bin(n - 1, r) against
    Bernoulli(r) + Bin(n - 1, r), r = 1 / (e^eps0 + 1), one direction (the worse one at
    delta = 1e-6 is taken by the caller)."""
    from scipy.stats import binom

    r = 1.0 / (math.exp(epsilon0) + 1.0)
    z = np.arange(n + 1)
    others = binom.pmf(z, n - 1, r)
    shifted = np.r_[0.0, others[:-1]]
    first = (1 - r) * shifted + r * others
    second = r * shifted + (1 - r) * others
    keep = (first > 1e-300) & (second > 1e-300)
    return np.log(first[keep] / second[keep]), first[keep]


def lower_bound_rounds(
    epsilon0: float, n: int, rounds: int, delta: float = DELTA, step: float = FINEST_STEP
) -> float:
    """Epsilon of the all-zeros pair composed ``rounds`` times, losses rounded down to a lattice
    of ``step``: a lower bound (``epsilon_lower`` of the composition, which also takes off its
    float error)."""
    best = 0.0
    for losses, masses in (zeros_pair(epsilon0, n), _reverse(*zeros_pair(epsilon0, n))):
        down = Lattice.from_atoms(losses - step, masses, step)
        best = max(best, to_pld(down.power(rounds)).epsilon_lower(delta))
    return best


def _reverse(losses: np.ndarray, masses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The other direction: masses under Q are P e^-loss, losses negated."""
    return -losses, masses * np.exp(-losses)


def shuffle_rows(quick: bool, rounds: int) -> list[dict[str, Any]]:
    rows = []
    epsilons = (4.0,) if quick else (1.0, 2.0, 4.0, 8.0)
    sizes = (1_000,) if quick else (10_000, 100_000, 1_000_000)
    for epsilon0 in epsilons:
        for n in sizes:
            event = ShuffleEvent(epsilon0, n, "stronger_clones", 2)
            start = time.perf_counter()
            composed = Accountant().compose(event, rounds)
            pld = composed.privacy_loss
            assert pld is not None
            reported = composed.epsilon(DELTA)
            seconds = time.perf_counter() - start
            rows.append(
                {
                    "table": "shuffle",
                    "epsilon0": epsilon0,
                    "n": n,
                    "closed_form": closed_form_epsilon(DELTA, epsilon0, n),
                    "clones": clone_epsilon(DELTA, epsilon0, n, "clones"),
                    "stronger_clones": clone_epsilon(DELTA, epsilon0, n, "stronger_clones"),
                    "exact": exact_rr_epsilon(DELTA, epsilon0, n) if n <= EXACT_SCAN_MAX else None,
                    "lower": binary_rr_lower_bound(epsilon0, n, DELTA),
                    "rounds_before": min(
                        rounds * epsilon0,
                        rounds * clone_epsilon(DELTA / rounds, epsilon0, n, "stronger_clones"),
                    ),
                    "rounds_reported": reported,
                    "rounds_rounding": pld.rounding,
                    # The smoke run's lower bound on a coarser lattice (still a lower bound).
                    "rounds_lower": lower_bound_rounds(
                        epsilon0, n, rounds, step=2.0**-8 if quick else FINEST_STEP
                    ),
                    "rounds_s": seconds,
                }
            )
    return rows


def small_delta_rows(quick: bool, rounds: int) -> list[dict[str, Any]]:
    """Shuffled k-RR releases composed at delta = 1e-9 (issue 42): what basic composition gave
    before (``rounds x eps0``), what frameldp reports now and by which method, and for binary
    RR the all-zeros pair composed with its losses rounded down (a lower bound)."""
    epsilon0, n = 4.0, 300 if quick else 1000
    lower_step = 2.0**-8 if quick else FINEST_STEP  # a coarser lattice: still a lower bound
    rows = []
    for k in (2,) if quick else (2, 3, 10, 100):
        event = ShuffleEvent(epsilon0, n, "stronger_clones", k)
        start = time.process_time()
        explanation = Accountant().compose(event, rounds).explain(SMALL_DELTA)
        seconds = time.process_time() - start
        rows.append(
            {
                "table": "small_delta",
                "k": k,
                "n": n,
                "rounds": rounds,
                "before": rounds * epsilon0,
                "reported": explanation.best.epsilon,
                "method": explanation.best.method,
                "lower": (
                    lower_bound_rounds(epsilon0, n, rounds, SMALL_DELTA, lower_step)
                    if k == 2
                    else None
                ),
                "cpu_s": seconds,
            }
        )
    return rows


def _timed(build: Any) -> tuple[float, float]:
    start = time.perf_counter()
    epsilon = build().epsilon(DELTA)
    return epsilon, time.perf_counter() - start


def timing_rows(quick: bool, rounds: int) -> list[dict[str, Any]]:
    uses = 1_000 if quick else 1_000_000
    distinct = 100 if quick else 10_000
    people = 300 if quick else 10_000
    rng = np.random.default_rng(17)
    epsilons = rng.uniform(0.1, 1.0, distinct)

    def many_distinct() -> Accountant:
        return Accountant.of((RandomizedResponseEvent(float(value)), 1) for value in epsilons)

    def uses_of(k: int) -> Any:
        return lambda: Accountant().compose(RandomizedResponseEvent(1.0, k), uses)

    def shuffled(epsilon0: float, k: int) -> Any:
        event = ShuffleEvent(epsilon0, people, "stronger_clones", k)
        return lambda: Accountant().compose(event, rounds)

    cases = [
        (f"{uses:,} x binary RR(1)", uses_of(2), "0.4 s"),
        (f"{uses:,} x 12-RR(1)", uses_of(12), "291-312 s"),
        (f"{uses:,} x 100-RR(1)", uses_of(100), "-"),
        (f"{distinct:,} distinct RR epsilons", many_distinct, "238 s (10,000)"),
        (f"{rounds} x shuffled RR (eps0 1, n {people:,})", shuffled(1.0, 2), "basic only"),
        (f"{rounds} x shuffled 100-RR (eps0 4, n {people:,})", shuffled(4.0, 100), "basic only"),
    ]
    rows = []
    for name, build, before in cases:
        epsilon, seconds = _timed(build)
        rows.append(
            {
                "table": "timing",
                "case": name,
                "epsilon": epsilon,
                "seconds": seconds,
                "before": before,
            }
        )
    return rows


def _cell(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run on small inputs")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args()

    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    shuffle = shuffle_rows(args.quick, rounds)
    print(f"Shuffled binary RR at delta = {DELTA:g}: one release, and {rounds} releases")
    print(
        "| eps0 | n | FMT21 closed | FMT21 clones | FMT23 | exact | lower | "
        f"{rounds} before | {rounds} reported (rounding) | {rounds} lower |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in shuffle:
        print(
            f"| {r['epsilon0']:g} | {r['n']:,} | {_cell(r['closed_form'])} | {_cell(r['clones'])} "
            f"| {_cell(r['stronger_clones'])} | {_cell(r['exact'])} | {_cell(r['lower'])} "
            f"| {_cell(r['rounds_before'])} "
            f"| {_cell(r['rounds_reported'])} ({r['rounds_rounding']:.2g}) "
            f"| {_cell(r['rounds_lower'])} |"
        )
    small = small_delta_rows(args.quick, rounds)
    print()
    print(
        f"{rounds} shuffled k-RR releases (eps0 4) at delta = {SMALL_DELTA:g} "
        "(lower: binary RR's all-zeros pair composed, losses rounded down)"
    )
    print("| k | n | before (basic) | reported | method | lower | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for r in small:
        print(
            f"| {r['k']} | {r['n']:,} | {_cell(r['before'])} | {_cell(r['reported'])} "
            f"| {r['method']} | {_cell(r['lower'])} | {r['cpu_s']:.2f} |"
        )
    timing = timing_rows(args.quick, rounds)
    print()
    print("Composition times (cold Accountant.epsilon(1e-6))")
    print("| case | epsilon | seconds | before (issue 17) |")
    print("|---|---|---|---|")
    for r in timing:
        print(f"| {r['case']} | {r['epsilon']:.6g} | {r['seconds']:.3f} | {r['before']} |")
    if args.json:
        args.json.write_text(json.dumps({"rows": shuffle + small + timing}, indent=1))


if __name__ == "__main__":
    main()
