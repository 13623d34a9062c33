"""Shuffle model: how much shuffling amplifies local reports, and what that buys in accuracy.

Two tables, both at ``delta`` = 1e-6.

**Amplification** (``--quick``: n up to 10^4, eps0 in {1, 4}). For a local ``eps0`` in
{1, 2, 4} and ``n`` in {10^4, 10^5, 10^6} shuffled reports, the central epsilon of

``closed form``
    ``closed_form_epsilon``: Feldman, McMillan and Talwar 2021 (FMT21), Thm. 3.1 (``n/a``
    outside its condition ``eps0 <= log(n / (16 log(2 / delta)))``);
``clones``
    ``clone_epsilon(..., "clones")``: frameldp's exact evaluation of the clone reduction, valid
    for every ``eps0``-LDP randomizer (what ``amplify_by_shuffling`` gives RAPPOR);
``stronger``
    ``clone_epsilon(..., "stronger_clones")``: the reduction of FMT23, proven for k-ary
    randomized response only (what ``amplify_by_shuffling`` gives k-RR);
``lower bound``
    the smallest epsilon with ``binary_rr_shuffle_delta(epsilon, eps0, n) <= delta``, found by
    bisection: the exact epsilon of shuffled binary RR on one pair of neighbouring datasets. No
    bound valid for every ``eps0``-LDP randomizer can be below it.

and how long each took (wall clock, one cold call; the lower bound is about 30 calls).

**One release at the frontier** (issue 42): shuffled binary RR above 10^4 people (the certified
bands) and at delta = 1e-9 (the exact scan), and k-RR with k = 3, 10 at eps0 = 1 (``--quick``:
n = 20,001, k = 3): ``before`` (the stronger clones), what frameldp reports and the
method named, a lower bound, and the CPU time of a cold ``explain``.

**Accuracy at the same central (epsilon, delta)**, central epsilon in {0.5, 1} (``--quick``: 1
only), on (a) the demo data's ``dest`` column (n = 120,000 flights, k = 100 airports;
``--quick``: 7,000 rows drawn without replacement) and (b) a synthetic Zipf(1.1) column over k =
10,000 values with n = 100,000 people (``--quick``: the flights data only; a fresh population per
seed). Methods:

``RAPPOR local``
    ``Rappor(epsilon, domain=D)``, no shuffler: epsilon-LDP, hence also central epsilon.
``RAPPOR shuffled``
    RAPPOR at the largest local ``eps0`` in ``[epsilon, 20]`` with
    ``amplify_by_shuffling(Rappor(eps0, domain=D).privacy, n).epsilon_at(1e-6) <= epsilon``
    (bisection on ``eps0`` to 1e-4, 4.0 with ``--quick``; the realized ``privacy.epsilon`` is
    what is amplified, with clones).
``k-RR shuffled``
    The same with ``RandomizedResponse(eps0, domain=D)`` (stronger clones).
``Balcer-Cheu``
    ``BalcerCheu(epsilon, 1e-6, n=n, domain=D)``: ``message_counts`` (the shuffler's per-bucket
    message counts, in bounded memory) then ``debias`` (unbiased), and the paper's ``zero_sum``
    analyzer (0 for buckets with at most ``n`` messages). Its ``central eps`` column is the exact
    ``privacy.epsilon_at(1e-6)``, far below the requested epsilon (the paper's constants are
    loose).

The estimators only see counts, so the permutation itself is not timed in the core runs (the
pandas cross-check below does shuffle). Error metrics, against the true counts, averaged over
the seeds: ``L_inf`` (largest absolute error over the buckets, as a share of n), ``RMSE`` (root
mean square count error over the buckets), ``SE`` (the estimator's own standard error, from
its variances; none for ``zero_sum``), ``|err| at 0`` (mean absolute error over the buckets
whose true count is 0). ``msgs`` is the number of messages per person, ``bits`` the size of one
message (a RAPPOR report is one message of k bits), ``seconds`` the time to randomize and
estimate (mean over seeds), ``account s`` the time to compute the central epsilon (the
calibration bisection for the shuffled rows). Noise comes from ``RandomSource.from_seed(seed)``.

**pandas cross-check** (dataset (a), first seed): ``df.ldp.rappor(...).ldp.shuffle()`` and
``df.ldp.krr(...).ldp.shuffle()`` at the calibrated ``eps0``, and ``df.ldp.balcer_cheu(...)``,
each debiased with ``ldp.debias``; the table reports the frame's own central epsilon, the time
of privatize + shuffle + debias, and whether the counts equal the core run's.

**At Balcer-Cheu's exact epsilon**: since Balcer-Cheu spends far less than requested, shuffled
RAPPOR and k-RR are calibrated again to its exact central epsilon, and their exact standard
errors (RMS over the buckets of the seed-0 population; no randomization) are set beside its
own. Last, the exact central epsilon of ``BalcerCheu(2.0, 1e-6)``, the largest it accepts.

Usage::

    python benchmarks/bench_shuffle.py              # full run (3 seeds)
    python benchmarks/bench_shuffle.py --quick      # small sizes, 1 seed (smoke run)
    python benchmarks/bench_shuffle.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from frameldp import BalcerCheu, RandomizedResponse, RandomSource, Rappor, amplify_by_shuffling
from frameldp.accounting.amplification import (
    binary_rr_shuffle_delta,
    clone_epsilon,
    closed_form_epsilon,
)
from frameldp.accounting.events import (
    HadamardResponseEvent,
    LocalHashingEvent,
    OptimizedUnaryEncodingEvent,
    PrivacyEvent,
    RandomizedResponseEvent,
    SubsetSelectionEvent,
)
from frameldp.accounting.guarantee import PrivacyGuarantee
from frameldp.accounting.shuffled_rr import EXACT_SCAN_MAX, band_rr_lower
from frameldp.core.encoding import count_bits, packed_width
from frameldp.core.estimation import FrequencyEstimate, direct_variance, unary_variance
from frameldp.core.mechanisms import Statistic
from frameldp.datasets import FLIGHTS_DOMAINS, load_flights

DELTA = 1e-6
EPSILON0_MAX = 20.0
ZIPF_S = 1.1
# RAPPOR reports are randomized and counted this many bytes at a time.
CHUNK_BYTES = 1 << 24
# Published FMT21 numerical value for eps0 = 4, n = 10^5, delta = 1e-6.
FMT21_PUBLISHED = (4.0, 100_000, 0.17)

Array = np.ndarray[Any, Any]


def _timed(run: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = run(*args)
    return time.perf_counter() - start, result


# --- amplification -----------------------------------------------------------------------


def binary_rr_lower_bound(epsilon0: float, n: int, delta: float = DELTA) -> float:
    """Smallest epsilon with ``binary_rr_shuffle_delta(epsilon, eps0, n) <= delta`` (bisection).

    ``delta(epsilon)`` decreases and is 0 at ``eps0``; the bracket ``[low, high]`` keeps
    ``delta(low) > target >= delta(high)`` and stops at a width of ``1e-9 eps0``.
    """
    if binary_rr_shuffle_delta(0.0, epsilon0, n) <= delta:
        return 0.0
    low, high = 0.0, epsilon0
    while high - low > 1e-9 * epsilon0:
        middle = 0.5 * (low + high)
        if binary_rr_shuffle_delta(middle, epsilon0, n) <= delta:
            high = middle
        else:
            low = middle
    return high


def amplification(epsilons0: tuple[float, ...], ns: tuple[int, ...]) -> list[dict[str, Any]]:
    """Central epsilon of n shuffled eps0-LDP reports, four ways."""
    rows = []
    for epsilon0 in epsilons0:
        for n in ns:
            closed_s, closed = _timed(closed_form_epsilon, DELTA, epsilon0, n)
            clones_s, clones = _timed(clone_epsilon, DELTA, epsilon0, n, "clones")
            stronger_s, stronger = _timed(clone_epsilon, DELTA, epsilon0, n, "stronger_clones")
            lower_s, lower = _timed(binary_rr_lower_bound, epsilon0, n)
            rows.append(
                {
                    "table": "amplification",
                    "epsilon0": epsilon0,
                    "n": n,
                    "delta": DELTA,
                    "closed_form": closed,
                    "clones": clones,
                    "stronger_clones": stronger,
                    "lower_bound": lower,
                    "closed_form_s": closed_s,
                    "clones_s": clones_s,
                    "stronger_clones_s": stronger_s,
                    "lower_bound_s": lower_s,
                }
            )
    return rows


# --- accuracy ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """One column: its public domain, the label of its noise streams, and its codes per seed."""

    name: str
    label: str
    domain: list[Any]
    n: int
    draw: Callable[[int], Array]

    @property
    def k(self) -> int:
        return len(self.domain)


def flights_dataset(rows: int | None) -> tuple[Dataset, pd.DataFrame]:
    """The demo data's ``dest`` column (all 120,000 rows, or ``rows`` drawn without replacement)."""
    frame = load_flights()
    if rows is not None and rows < len(frame):
        picked = np.sort(np.random.default_rng(0).choice(len(frame), size=rows, replace=False))
        frame = frame.iloc[picked].reset_index(drop=True)
    frame = frame[["dest"]]
    codes = frame["dest"].cat.codes.to_numpy().astype(np.int64)
    domain = list(FLIGHTS_DOMAINS["dest"])
    assert list(frame["dest"].cat.categories) == domain
    name = f"(a) flights dest, n = {len(frame):,}, k = {len(domain)}"
    return Dataset(name, "dest", domain, len(frame), lambda _seed: codes), frame


def zipf_dataset(k: int, n: int) -> Dataset:
    """A Zipf(1.1) column over ``k`` values, ``n`` people, a fresh draw per seed."""
    weights = 1.0 / np.arange(1, k + 1) ** ZIPF_S
    weights /= weights.sum()

    def draw(seed: int) -> Array:
        rng = np.random.default_rng(seed)  # test data, not privacy noise
        return rng.choice(k, size=n, p=weights).astype(np.int64)

    name = f"(b) Zipf({ZIPF_S}), n = {n:,}, k = {k:,}"
    return Dataset(name, "value", list(range(k)), n, draw)


def calibrate(
    build: Callable[[float], Any], n: int, central: float, tolerance: float
) -> tuple[float, float]:
    """Largest ``eps0`` in ``[central, 20]`` whose ``n`` shuffled reports are
    ``(central, DELTA)``-DP (bisection to ``tolerance``), and that central epsilon."""

    def amplified(epsilon0: float) -> float:
        return amplify_by_shuffling(build(epsilon0).privacy, n).epsilon_at(DELTA)

    if amplified(EPSILON0_MAX) <= central:
        return EPSILON0_MAX, amplified(EPSILON0_MAX)
    low, high = central, EPSILON0_MAX  # amplified(low) <= central < amplified(high)
    while high - low > tolerance:
        middle = 0.5 * (low + high)
        if amplified(middle) <= central:
            low = middle
        else:
            high = middle
    return low, amplified(low)


def rappor_estimate(
    mechanism: Rappor, codes: Array, source: RandomSource, label: str
) -> FrequencyEstimate:
    """RAPPOR reports randomized and counted in chunks of about 16 MB (same reports as one call)."""
    rows = max(1, CHUNK_BYTES // packed_width(mechanism.num_bits))
    sums = np.zeros(mechanism.num_bits, dtype=np.int64)
    for start in range(0, codes.size, rows):
        reports = mechanism.randomize_codes(
            codes[start : start + rows], source=source, label=label, row_start=start
        )
        sums += count_bits(reports, mechanism.num_bits)
    return mechanism.debias(Statistic((sums,), codes.size))


def errors(counts: Array, truth: Array, n: int) -> dict[str, Any]:
    """L_inf (share of n), RMSE of counts, mean |error| over the buckets nobody holds."""
    error = np.asarray(counts, dtype=np.float64) - truth
    absent = truth == 0
    return {
        "linf": float(np.abs(error).max()) / n,
        "rmse": float(np.sqrt(np.mean(error**2))),
        "zero_abs": float(np.abs(error[absent]).mean()) if absent.any() else None,
        "absent_buckets": int(absent.sum()),
    }


METHODS = (
    ("rappor_local", "RAPPOR local"),
    ("rappor_shuffled", "RAPPOR shuffled"),
    ("krr_shuffled", "k-RR shuffled"),
    ("balcer_cheu", "Balcer-Cheu debias"),
    ("balcer_cheu_zero_sum", "Balcer-Cheu zero_sum"),
)


def _setup(data: Dataset, central: float, tolerance: float) -> dict[str, dict[str, Any]]:
    """Every method's mechanism and privacy for one (dataset, central epsilon)."""
    bits = max(1, math.ceil(math.log2(data.k)))
    local = Rappor(central, domain=data.domain)
    local_s, local_central = _timed(local.privacy.epsilon_at, DELTA)

    def rappor(epsilon0: float) -> Rappor:
        return Rappor(epsilon0, domain=data.domain)

    def krr(epsilon0: float) -> RandomizedResponse:
        return RandomizedResponse(epsilon0, domain=data.domain)

    rappor_s, (rappor_eps0, rappor_central) = _timed(calibrate, rappor, data.n, central, tolerance)
    krr_s, (krr_eps0, krr_central) = _timed(calibrate, krr, data.n, central, tolerance)
    shuffled_rappor, shuffled_krr = rappor(rappor_eps0), krr(krr_eps0)
    balcer = BalcerCheu(central, DELTA, n=data.n, domain=data.domain)
    balcer_s, balcer_central = _timed(balcer.privacy.epsilon_at, DELTA)
    balcer_common = {
        "mechanism": balcer,
        "requested": None,
        "local_epsilon": None,
        "central_achieved": balcer_central,
        "clones": None,
        "messages": balcer.messages_per_person,
        "bits": bits,
        "account_s": balcer_s,
    }
    return {
        "rappor_local": {
            "mechanism": local,
            "requested": central,
            "local_epsilon": local.privacy.epsilon,
            "central_achieved": local_central,
            "clones": None,
            "messages": 1.0,
            "bits": data.k,
            "account_s": local_s,
        },
        "rappor_shuffled": {
            "mechanism": shuffled_rappor,
            "requested": rappor_eps0,
            "local_epsilon": shuffled_rappor.privacy.epsilon,
            "central_achieved": rappor_central,
            "clones": "clones",
            "messages": 1.0,
            "bits": data.k,
            "account_s": rappor_s,
        },
        "krr_shuffled": {
            "mechanism": shuffled_krr,
            "requested": krr_eps0,
            "local_epsilon": shuffled_krr.privacy.epsilon,
            "central_achieved": krr_central,
            "clones": "stronger_clones",
            "messages": 1.0,
            "bits": bits,
            "account_s": krr_s,
        },
        "balcer_cheu": balcer_common,
        "balcer_cheu_zero_sum": balcer_common,
    }


def _run_seed(
    setup: dict[str, dict[str, Any]], data: Dataset, seed: int
) -> dict[str, tuple[float, Array, Array | None]]:
    """``method -> (seconds, estimated counts, variances)`` for one seed."""
    codes = data.draw(seed)
    source = RandomSource.from_seed(seed)
    label = data.label
    out: dict[str, tuple[float, Array, Array | None]] = {}
    for method in ("rappor_local", "rappor_shuffled"):
        seconds, estimate = _timed(
            rappor_estimate, setup[method]["mechanism"], codes, source, label
        )
        out[method] = (seconds, estimate.counts, estimate.variances)
    krr: RandomizedResponse = setup["krr_shuffled"]["mechanism"]
    start = time.perf_counter()
    estimate = krr.estimate(krr.randomize(codes, source=source, label=label))
    out["krr_shuffled"] = (time.perf_counter() - start, estimate.counts, estimate.variances)
    balcer: BalcerCheu = setup["balcer_cheu"]["mechanism"]
    count_s, message_counts = _timed(
        lambda: balcer.message_counts(codes, source=source, label=label)
    )
    statistic = Statistic((message_counts,), int(message_counts.sum()))
    debias_s, estimate = _timed(balcer.debias, statistic)
    out["balcer_cheu"] = (count_s + debias_s, estimate.counts, estimate.variances)
    zero_s, zero = _timed(balcer.zero_sum, message_counts)
    out["balcer_cheu_zero_sum"] = (count_s + zero_s, zero, None)
    out["_truth"] = (0.0, np.bincount(codes, minlength=data.k), None)
    return out


def accuracy(data: Dataset, central: float, seeds: int, tolerance: float) -> list[dict[str, Any]]:
    """One row per method: errors averaged over the seeds."""
    setup = _setup(data, central, tolerance)
    per_seed: dict[str, list[dict[str, Any]]] = {method: [] for method, _ in METHODS}
    for seed in range(seeds):
        results = _run_seed(setup, data, seed)
        truth = results["_truth"][1]
        for method, _ in METHODS:
            seconds, counts, variances = results[method]
            row = {"seconds": seconds, **errors(counts, truth, data.n)}
            row["se"] = None if variances is None else float(np.sqrt(np.mean(variances)))
            per_seed[method].append(row)
    rows = []
    for method, title in METHODS:
        runs = per_seed[method]
        info = setup[method]
        mean: dict[str, Any] = {}
        for key in ("seconds", "linf", "rmse", "zero_abs", "se"):
            values = [run[key] for run in runs if run[key] is not None]
            mean[key] = statistics.fmean(values) if values else None
        rows.append(
            {
                "table": "accuracy",
                "dataset": data.name,
                "n": data.n,
                "k": data.k,
                "central_epsilon": central,
                "delta": DELTA,
                "method": method,
                "title": title,
                "local_epsilon_requested": info["requested"],
                "local_epsilon": info["local_epsilon"],
                "central_achieved": info["central_achieved"],
                "clones": info["clones"],
                "messages_per_user": info["messages"],
                "bits_per_message": info["bits"],
                "account_s": info["account_s"],
                "seeds": seeds,
                "absent_buckets": statistics.fmean(run["absent_buckets"] for run in runs),
                **mean,
                "per_seed": runs,
                "_mechanism": info["mechanism"],
            }
        )
    return rows


def _accessor_release(frame: pd.DataFrame, method: str, epsilon: float) -> pd.DataFrame:
    """What the shuffler outputs for ``method`` through the pandas accessor (seed 0)."""
    domain = FLIGHTS_DOMAINS["dest"]
    if method == "rappor_shuffled":
        return frame.ldp.rappor("dest", epsilon, domain=domain, seed=0).ldp.shuffle(seed=1)
    if method == "krr_shuffled":
        return frame.ldp.krr("dest", epsilon, domain=domain, seed=0).ldp.shuffle(seed=1)
    return frame.ldp.balcer_cheu("dest", epsilon, DELTA, domain=domain, seed=0)


def pandas_check(
    frame: pd.DataFrame, data: Dataset, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The accessor path on the flights frame (seed 0), against the core run's counts."""
    out = []
    for central in sorted({row["central_epsilon"] for row in rows}):
        by_method = {row["method"]: row for row in rows if row["central_epsilon"] == central}
        setup = {
            method: {"mechanism": by_method[method]["_mechanism"]}
            for method in ("rappor_local", "rappor_shuffled", "krr_shuffled", "balcer_cheu")
        }
        core = _run_seed(setup, data, 0)
        truth = core["_truth"][1]
        for method in ("rappor_shuffled", "krr_shuffled", "balcer_cheu"):
            requested = by_method[method]["local_epsilon_requested"] or central
            start = time.perf_counter()
            shuffled = _accessor_release(frame, method, requested)
            table = shuffled.ldp.debias("dest")
            seconds = time.perf_counter() - start
            counts = np.asarray(table.estimate.counts)
            out.append(
                {
                    "table": "pandas",
                    "dataset": data.name,
                    "central_epsilon": central,
                    "method": method,
                    "output_rows": len(shuffled),
                    "frame_central_epsilon": table.privacy.epsilon_at(DELTA),
                    "core_central_epsilon": by_method[method]["central_achieved"],
                    "same_counts_as_core": bool(np.allclose(counts, core[method][1])),
                    "linf": errors(counts, truth, data.n)["linf"],
                    "seconds": seconds,
                }
            )
    return out


def equal_epsilon(
    data: Dataset, rows: list[dict[str, Any]], tolerance: float
) -> list[dict[str, Any]]:
    """Shuffled RAPPOR and k-RR calibrated to Balcer-Cheu's *exact* central epsilon: their
    exact standard errors (RMS over the buckets of the seed-0 population), beside its own."""
    truth = np.bincount(data.draw(0), minlength=data.k)
    out = []
    for row in rows:
        if row["dataset"] != data.name or row["method"] != "balcer_cheu":
            continue
        target = row["central_achieved"]
        rappor_eps0, _ = calibrate(
            lambda e: Rappor(e, domain=data.domain), data.n, target, tolerance
        )
        krr_eps0, _ = calibrate(
            lambda e: RandomizedResponse(e, domain=data.domain), data.n, target, tolerance
        )
        rappor = Rappor(rappor_eps0, domain=data.domain)
        krr = RandomizedResponse(krr_eps0, domain=data.domain)
        krr_variances = direct_variance(
            truth.astype(np.float64), data.n, krr.keep_probability, krr.other_probability
        )
        out.append(
            {
                "table": "equal_epsilon",
                "dataset": data.name,
                "requested_epsilon": row["central_epsilon"],
                "central_epsilon": target,
                "balcer_cheu_se": row["se"],
                "rappor_epsilon0": rappor.privacy.epsilon,
                "rappor_se": math.sqrt(unary_variance(data.n, rappor.flip_probability)),
                "krr_epsilon0": krr.privacy.epsilon,
                "krr_se": float(np.sqrt(np.mean(krr_variances))),
            }
        )
    return out


def frontier(quick: bool) -> list[dict[str, Any]]:
    """One shuffled release at the frontier (issue 42): binary RR above 10^4 people (the bands)
    and at a small delta (the exact scan), and k-RR with a small k (stronger clones against
    the blanket pair). ``before`` is the stronger-clone bound frameldp reported there before;
    ``lower`` the bands' certified lower bound (binary RR), or the all-alike lower bound."""
    binary = [(4.0, 20_001, 1e-6)]
    if not quick:
        binary += [
            (4.0, 10_000, 1e-9),
            (4.0, 1_000_000, 1e-6),
            (4.0, 1_000_000, 1e-9),
            (4.0, 10**8, 1e-6),
        ]
    rows = []
    for epsilon0, n, delta in binary:
        guarantee = amplify_by_shuffling(RandomizedResponse(epsilon0, domain=[0, 1]).privacy, n)
        start = time.process_time()
        best = guarantee.explain(delta).best
        seconds = time.process_time() - start
        lower = (
            band_rr_lower(delta, epsilon0, n)
            if n > EXACT_SCAN_MAX
            else binary_rr_lower_bound(epsilon0, n, delta)
        )
        rows.append(
            {
                "table": "frontier",
                "case": f"binary RR, eps0 {epsilon0:g}, n {n:,}",
                "delta": delta,
                "before": clone_epsilon(delta, epsilon0, n, "stronger_clones"),
                "reported": best.epsilon,
                "method": _method(best.method, best.detail),
                "lower": lower,
                "cpu_s": seconds,
            }
        )
    for k in (3,) if quick else (3, 10):
        domain = list(range(k))
        guarantee = amplify_by_shuffling(RandomizedResponse(1.0, domain=domain).privacy, 1000)
        start = time.process_time()
        best = guarantee.explain(1e-6).best
        seconds = time.process_time() - start
        rows.append(
            {
                "table": "frontier",
                "case": f"{k}-RR, eps0 1, n 1,000",
                "delta": 1e-6,
                "before": clone_epsilon(1e-6, 1.0, 1000, "stronger_clones"),
                "reported": best.epsilon,
                "method": _method(best.method, best.detail),
                "lower": None,  # binary RR's lower bound does not bound k-RR
                "cpu_s": seconds,
            }
        )
    # Every other set randomizer: the privacy blanket against the clones (before).
    local_events: list[tuple[str, PrivacyEvent, int]] = [
        ("OUE", OptimizedUnaryEncodingEvent(1.0), 10_000),
    ]
    if not quick:
        local_events += [
            ("OUE", OptimizedUnaryEncodingEvent(1.0), 1000),
            ("OUE", OptimizedUnaryEncodingEvent(1.0), 1_000_000),
            ("Hadamard response", HadamardResponseEvent(1.0), 10_000),
            ("local hashing, g 4", LocalHashingEvent(1.0, 4), 10_000),
            ("subset selection, 5 of 20", SubsetSelectionEvent(1.0, 20, 5), 10_000),
            ("3-RR", RandomizedResponseEvent(1.0, 3), 1_000_000),
            ("10-RR", RandomizedResponseEvent(1.0, 10), 1_000_000),
            ("100-RR", RandomizedResponseEvent(1.0, 100), 1_000_000),
        ]
    for name, event, n in local_events:
        local = PrivacyGuarantee(1.0, name, {}, (), ((event, 1),))
        guarantee = amplify_by_shuffling(local, n)
        start = time.process_time()
        best = guarantee.explain(1e-6).best
        seconds = time.process_time() - start
        clones = "stronger_clones" if isinstance(event, RandomizedResponseEvent) else "clones"
        rows.append(
            {
                "table": "frontier",
                "case": f"{name}, eps0 1, n {n:,}",
                "delta": 1e-6,
                "before": clone_epsilon(1e-6, 1.0, n, clones),
                "reported": best.epsilon,
                "method": _method(best.method, best.detail),
                "lower": None,
                "cpu_s": seconds,
            }
        )
    return rows


def _method(method: str, detail: str) -> str:
    """A short name for the method an explanation names."""
    if method == "pld":
        return "pair's loss distribution"
    for key, name in (
        ("bands", "bands"),
        ("exact:", "exact scan"),
        ("stronger-clone", "stronger clones"),
        ("summed directly", "blanket, summed"),
        ("blanket", "blanket"),
    ):
        if key in detail:
            return name
    return "clones"


def run(quick: bool, seeds: int) -> dict[str, Any]:
    """Every table, as rows (``table`` says which)."""
    ns = (10_000,) if quick else (10_000, 100_000, 1_000_000)
    # eps0 is calibrated by bisection to 1e-4 (4.0 in the smoke run: each step builds the
    # blanket pair of k-RR, about 0.2 s).
    tolerance = 4.0 if quick else 1e-4
    rows = amplification((1.0, 4.0) if quick else (1.0, 2.0, 4.0), ns)
    rows += frontier(quick)
    published_epsilon0, published_n, published = FMT21_PUBLISHED
    fmt21 = {
        "epsilon0": published_epsilon0,
        "n": published_n,
        "published": published,
        "clones": clone_epsilon(DELTA, published_epsilon0, published_n, "clones"),
        "closed_form": closed_form_epsilon(DELTA, published_epsilon0, published_n),
    }
    flights, frame = flights_dataset(7_000 if quick else None)
    # The smoke run compares the methods on the flights data only (each dataset calibrates
    # eps0 by bisection for every method).
    datasets = (flights,) if quick else (flights, zipf_dataset(10_000, 100_000))
    centrals = (1.0,) if quick else (0.5, 1.0)
    accuracy_rows: list[dict[str, Any]] = []
    for data in datasets:
        for central in centrals:
            accuracy_rows += accuracy(data, central, seeds, tolerance)
    rows += accuracy_rows
    flight_rows = [row for row in accuracy_rows if row["dataset"] == flights.name]
    rows += pandas_check(frame, flights, flight_rows)
    for data in datasets:
        rows += equal_epsilon(data, accuracy_rows, tolerance)
    for row in accuracy_rows:
        del row["_mechanism"]
    largest = []
    for data in datasets:
        mechanism = BalcerCheu(2.0, DELTA, n=data.n, domain=data.domain)
        largest.append(
            {
                "dataset": data.name,
                "requested_epsilon": 2.0,
                "central_epsilon": mechanism.privacy.epsilon_at(DELTA),
            }
        )
    return {"quick": quick, "seeds": seeds, "rows": rows, "fmt21": fmt21, "balcer_cheu_2": largest}


# --- printing ----------------------------------------------------------------------------


def _cell(value: Any, width: int, spec: str) -> str:
    return f"{'n/a' if value is None else format(value, spec):>{width}}"


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str, int, str]]) -> None:
    header = "  ".join(
        f"{title:{'<' if spec.startswith('<') else '>'}{width}}"
        for _, title, width, spec in columns
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print("  ".join(_cell(row[key], width, spec) for key, _, width, spec in columns))


_AMPLIFICATION = [
    ("epsilon0", "eps0", 4, "g"),
    ("n", "n", 9, ",d"),
    ("closed_form", "closed form", 11, ".4f"),
    ("clones", "clones", 7, ".4f"),
    ("stronger_clones", "stronger", 8, ".4f"),
    ("lower_bound", "lower bound", 11, ".4f"),
    ("clones_s", "clones s", 8, ".3f"),
    ("stronger_clones_s", "stronger s", 10, ".3f"),
    ("lower_bound_s", "lower s", 7, ".3f"),
]

_FRONTIER = [
    ("case", "case", 31, "s"),
    ("delta", "delta", 6, "g"),
    ("before", "before", 8, ".5f"),
    ("reported", "reported", 8, ".5f"),
    ("method", "method", 24, "s"),
    ("lower", "lower", 8, ".5f"),
    ("cpu_s", "CPU s", 6, ".2f"),
]

_ACCURACY = [
    ("title", "method", 20, "<20"),
    ("local_epsilon", "local eps", 9, ".4f"),
    ("central_achieved", "central eps", 11, ".4f"),
    ("linf", "L_inf", 7, ".5f"),
    ("rmse", "RMSE", 7, ".1f"),
    ("se", "SE", 7, ".1f"),
    ("zero_abs", "|err| at 0", 10, ".1f"),
    ("messages_per_user", "msgs", 7, ",.1f"),
    ("bits_per_message", "bits", 6, ",d"),
    ("seconds", "seconds", 7, ".3f"),
    ("account_s", "account s", 9, ".2f"),
]

_PANDAS = [
    ("central_epsilon", "central", 7, "g"),
    ("method", "method", 15, "<15"),
    ("output_rows", "rows", 10, ",d"),
    ("frame_central_epsilon", "frame eps", 9, ".4f"),
    ("core_central_epsilon", "core eps", 8, ".4f"),
    ("same_counts_as_core", "same counts", 11, ""),
    ("linf", "L_inf", 7, ".5f"),
    ("seconds", "seconds", 7, ".2f"),
]


_EQUAL = [
    ("dataset", "dataset", 40, "<40"),
    ("requested_epsilon", "requested", 9, "g"),
    ("central_epsilon", "exact eps", 9, ".4f"),
    ("balcer_cheu_se", "B-C SE", 7, ".1f"),
    ("rappor_epsilon0", "RAPPOR eps0", 11, ".3f"),
    ("rappor_se", "RAPPOR SE", 9, ".1f"),
    ("krr_epsilon0", "k-RR eps0", 9, ".3f"),
    ("krr_se", "k-RR SE", 7, ".1f"),
]


def _print(result: dict[str, Any]) -> None:
    rows = result["rows"]
    print(
        f"Amplification by shuffling: central epsilon at delta = {DELTA:g} of n shuffled eps0-LDP"
    )
    print("reports (clones: any eps0-LDP randomizer; stronger: k-RR; lower bound: binary RR)")
    _table([row for row in rows if row["table"] == "amplification"], _AMPLIFICATION)
    print(
        "\nOne release at the frontier (before: the stronger clones; lower: the bands' certified"
        " lower bound, or the all-alike dataset's)"
    )
    _table([row for row in rows if row["table"] == "frontier"], _FRONTIER)
    fmt21 = result["fmt21"]
    print(
        f"\nFMT21 publish about {fmt21['published']} for eps0 = {fmt21['epsilon0']:g}, "
        f"n = {fmt21['n']:,} (their numerical method); frameldp's clones bound gives "
        f"{fmt21['clones']:.4f}, the closed form {fmt21['closed_form']:.4f}."
    )
    accuracy_rows = [row for row in rows if row["table"] == "accuracy"]
    blocks: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for row in accuracy_rows:
        blocks.setdefault((row["dataset"], row["central_epsilon"]), []).append(row)
    for (dataset, central), block in blocks.items():
        print(
            f"\n{dataset}: central (epsilon, delta) = ({central:g}, {DELTA:g}) (Balcer-Cheu "
            f"requested at it), mean of {block[0]['seeds']} seed(s), "
            f"{block[0]['absent_buckets']:g} bucket(s) with true count 0"
        )
        _table(block, _ACCURACY)
    pandas_rows = [row for row in rows if row["table"] == "pandas"]
    if pandas_rows:
        dataset = pandas_rows[0]["dataset"]
        print(f"\npandas accessor on {dataset} (seed 0; privatize + shuffle + debias)")
        _table(pandas_rows, _PANDAS)
    equal = [row for row in rows if row["table"] == "equal_epsilon"]
    if equal:
        print(
            "\nAt Balcer-Cheu's exact central epsilon (delta 1e-6): standard error of a count "
            "(exact, RMS over the buckets)"
        )
        _table(equal, _EQUAL)
    print()
    for item in result["balcer_cheu_2"]:
        print(
            f"BalcerCheu(2.0, {DELTA:g}) (the largest epsilon it accepts) on {item['dataset']}: "
            f"exact central epsilon {item['central_epsilon']:.4f}"
        )


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 seed (smoke run)")
    parser.add_argument("--seeds", type=int, default=3, help="noise seeds (default 3)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    arguments = parser.parse_args()
    start = time.perf_counter()
    result = run(arguments.quick, 1 if arguments.quick else arguments.seeds)
    result["total_s"] = time.perf_counter() - start
    _print(result)
    print(f"\ntotal {result['total_s']:.1f} s")
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
