"""Frequency oracles head to head: speed, memory and accuracy of frameldp's seven, and of peers.

Three tables.

**1. frameldp** (``--quick``: n = 20,000, k = 16, epsilon = 1). For each of
``RandomizedResponse`` (k-RR), ``Rappor``, ``OptimizedUnaryEncoding`` (OUE), ``LocalHashing``
(OLH), ``SubsetSelection`` (SS), ``HadamardResponse`` (HR) and
``ProjectiveGeometryResponse`` (PGR), built as ``cls(epsilon,
domain=range(k))`` at their variance-optimal settings, for k in {16, 1024, 16384} and epsilon in
{1, 4}, on n = 1,000,000 codes drawn from a Zipf law over ``range(k)`` (``P(j) ∝ (j + 1)^-1.1``,
numpy ``default_rng`` with a fixed seed: test data, not privacy noise):

``client``
    the protocol path the frame adapters take: ``mech.privatize_column(pa.array(codes),
    column="c", source=RandomSource.fresh())``, Arrow values in, Arrow report columns out,
    under a release's default key (``--seeded``: ``RandomSource.from_seed(1)``);
``server``
    ``mech.debias(mech.statistic(reports, column="c"))``: from the report columns to the debiased
    ``FrequencyEstimate``;
``kernel client`` / ``kernel server``
    the numpy core without Arrow, under a fresh key (a release's default: noise addressed by
    position, where subset selection uses its fast sampler): ``mech.randomize(codes,
    source=RandomSource.fresh(), label="bench")`` (RAPPOR: ``randomize_codes``); then the
    mechanism's own reduction to its
    statistic (``count_bits`` for RAPPOR, OUE and SS, ``support_counts`` for OLH, ``np.bincount``
    for k-RR, HR and PGR) and ``debias``;
``MSE``
    the empirical mean over the k buckets of the squared error of the debiased counts of the
    protocol path against the true counts, beside ``theory``, the exact mean variance
    ``frameldp.core.mechanisms.choice.mean_variance(mech, k, n)``, their ``ratio`` and ``± sd``,
    the standard deviation the ratio would have if the bucket errors were independent normals
    with their exact variances (``sqrt(2 Σ v_j²) / Σ v_j``): with k = 16 a ratio of 0.6 or 1.5
    is noise, with k = 1024 it should be within a few percent of 1. A ratio more than 4 sd from 1
    is flagged ``!``.

A seeded source addresses its noise by row *and* value (a CBC-MAC address per row), which costs
more than a fresh key's position-addressed AES-CTR stream (``bench_foundation.py``'s
``rappor_client`` vs ``rappor_client_keyed``), and subset selection's keyed noise keeps Floyd's
algorithm, ``O(n d)``: at k = 16384 (d = 4406) that is hours for 10^6 rows, so ``--seeded``
skips it there.

**2. Peers** on the same codes, only if importable by the interpreter given by ``--peer-python``
(default: this one): multi-freq-ldpy (``multi_freq_ldpy.pure_frequency_oracles``: ``GRR``,
``UE`` symmetric (= RAPPOR) and optimized, ``LH`` optimal, ``SS``) and pure-LDP
(``pure_ldp.frequency_oracles``: ``DEClient``/``DEServer``, ``UEClient``/``UEServer`` symmetric
and optimized, ``LHClient``/``LHServer`` with ``use_olh=True``, ``HadamardResponseClient``/
``HadamardResponseServer``). A peer that cannot be imported gets one ``not installed`` row. Both
privatize one value per Python call and keep one Python object per report; their servers loop
over the reports in Python, and their local-hashing servers hash every report against every
value (``n k`` xxhash calls). So each peer case first times a pilot of 1,000 reports (after one
warm-up call, which also compiles multi-freq-ldpy's numba functions) and runs the client on the
largest power of ten (at most n) whose reports fit in 1 GiB and take at most an estimated 60 s
of CPU, and the server on the largest one (at most the client's) whose estimated CPU time is at
most 30 s. Times are then scaled linearly to
n and marked ``~``; peak memory is that of the smaller run (not scaled). The MSE is that of the
estimate from the reports the server saw, against their true counts, beside the variance the
peer's own ``(p, q)`` imply (pure-LDP's Hadamard response has no such closed form: ``-``).
multi-freq-ldpy's ``*_Aggregator_MI`` clips negative estimates and renormalizes (``clip+norm``),
so its MSE is not that of an unbiased estimator and may fall below the variance; pure-LDP's
``estimate_all(..., normalization=0)`` is unbiased. ``x fl`` is the peer's CPU time over
frameldp's protocol path for the same case.

**3. Accuracy on the flights demo data** (``frameldp.datasets.load_flights()``, n = 120,000):
for the ``dest`` (k = 100, 5 airports with no flight) and ``origin`` (k = 30) columns at
epsilon in {1, 2, 4} (``--quick``: ``dest`` at epsilon 1, one seed), each mechanism privatizes
through pandas (``df[[col]].ldp.privatize({col: mech}, seed=s)``) and debiases
(``reports.ldp.debias(col)``, a ``FrequencyTable``). The table gives the total variation
distance ``1/2 Σ |count_j / n - f_j|`` to the true distribution ``f`` of the raw (unbiased,
possibly negative) table and of ``table.consistent(method)`` for ``norm_sub``, ``simplex`` and
``ibu``, averaged over the seeds (``--seeds``, default 3), and the seconds of privatize +
debias and of ``consistent("ibu")`` (mean wall clock).

How
---
Every case of tables 1 and 2 runs in a fresh interpreter (this script with ``--case``), which
reads the codes from a ``.npy`` file the driver wrote, so peers see exactly the same data.

* **Time**: ``time.process_time()`` (CPU: user + system of the process, all threads) and
  ``time.perf_counter()`` (wall). frameldp's paths run twice, and a third time if the two took
  less than 2 s of CPU; the table gives the fastest run, that of a warm process. The first call
  in a fresh process also pays the page faults of its temporaries (subset selection at k =
  1024, epsilon = 1: about 3 s of system time per 200,000 rows); the JSON keeps it as
  ``client_first_cpu_s`` and ``kernel_client_first_cpu_s``. Peers run once (their time is
  Python calls, one per report). Nothing is asserted.
* **Memory** (``resource``, not tracemalloc: tracemalloc slows numpy down and misses memory
  allocated outside Python's allocator): before each measured step the kernel's resident-set
  high-water mark is reset to the current resident set (Linux ``/proc/self/clear_refs``), and
  ``peak MB`` is ``ru_maxrss`` afterwards minus the resident set before the step: the most
  extra memory the step used, its output included. Where the reset is impossible the value is
  marked ``*`` (an upper bound). 1 MB = 2^20 bytes.

Usage::

    python benchmarks/bench_frequency_oracles.py                 # full run (about 12 minutes
                                                                 # on 2 cores, both peers)
    python benchmarks/bench_frequency_oracles.py --quick         # smoke run, well under 1 min
    python benchmarks/bench_frequency_oracles.py --json out.json # also write {"rows": [...]}
    python benchmarks/bench_frequency_oracles.py --peer-python /path/to/venv/bin/python
    python benchmarks/bench_frequency_oracles.py --parts 1 3     # skip the peers
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

# numpy is the only third-party import at module level: a peer's interpreter (--peer-python) need
# not have frameldp, pandas or pyarrow installed.

SEED: Final = 20_240_601
ZIPF_EXPONENT: Final = 1.1
NOISE_SEED: Final = 1
FULL_N: Final = 1_000_000
QUICK_N: Final = 20_000
FULL_KS: Final = (16, 1024, 16384)
QUICK_KS: Final = (16,)
FULL_EPSILONS: Final = (1.0, 4.0)
QUICK_EPSILONS: Final = (1.0,)
REPEATS: Final = 3
MIN_REPEATS: Final = 2  # the first call in a fresh process pays page faults for its temporaries
REPEAT_CPU_S: Final = 2.0  # no third run once a path has used this much CPU
SD_FLAG: Final = 4.0
CASE_TIMEOUT_S: Final = 1800

PEER_PILOT: Final = 1_000
PEER_MEMORY_BYTES: Final = 1 << 30
PEER_CLIENT_CPU_S: Final = 60.0
PEER_SERVER_CPU_S: Final = 30.0
PEER_MIN_N: Final = 1_000

FLIGHTS_COLUMNS: Final = ("dest", "origin")
FLIGHTS_EPSILONS: Final = (1.0, 2.0, 4.0)
CONSISTENCY: Final = ("norm_sub", "simplex", "ibu")

# frameldp's registry names, in table order, with the short names the tables print.
MECHANISMS: Final = (
    "randomized_response",
    "rappor",
    "optimized_unary_encoding",
    "local_hashing",
    "subset_selection",
    "hadamard_response",
    "projective_geometry_response",
)
SHORT: Final = {
    "randomized_response": "k-RR",
    "rappor": "RAPPOR",
    "optimized_unary_encoding": "OUE",
    "local_hashing": "OLH",
    "subset_selection": "SS",
    "hadamard_response": "HR",
    "projective_geometry_response": "PGR",
}

PEERS: Final = {
    "multi-freq-ldpy": "multi_freq_ldpy",
    "pure-LDP": "pure_ldp",
}
PEER_MECHANISMS: Final = {
    "multi-freq-ldpy": (
        "randomized_response",
        "rappor",
        "optimized_unary_encoding",
        "local_hashing",
        "subset_selection",
    ),
    "pure-LDP": (
        "randomized_response",
        "rappor",
        "optimized_unary_encoding",
        "local_hashing",
        "hadamard_response",
    ),
}
PEER_MODULES: Final = {
    "multi-freq-ldpy": tuple(
        f"multi_freq_ldpy.pure_frequency_oracles.{name}" for name in ("GRR", "UE", "LH", "SS")
    ),
    "pure-LDP": ("pure_ldp.frequency_oracles",),
}


# --- measurement (in the worker process) ------------------------------------------------------


def _to_mb(rusage_maxrss: int) -> float:
    """``ru_maxrss`` in MB: kilobytes on Linux, bytes on macOS."""
    return rusage_maxrss / (2**20 if sys.platform == "darwin" else 2**10)


def _current_rss_mb() -> float:
    """The resident set now (``/proc/self/statm``), or the high-water mark where unavailable."""
    try:
        with open("/proc/self/statm") as statm:
            resident_pages = int(statm.read().split()[1])
    except OSError:
        return _to_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return resident_pages * resource.getpagesize() / 2**20


def _reset_peak_rss() -> bool:
    """Reset the resident-set high-water mark to the current resident set (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True


@dataclass
class Timing:
    """One measured step: fastest CPU and wall seconds, peak extra memory, runs made, and the
    CPU seconds of the first run."""

    cpu_s: float
    wall_s: float
    peak_mb: float
    peak_reset: bool
    runs: int
    first_cpu_s: float


def measure(
    run: Callable[[], Any], *, repeats: int, min_repeats: int = MIN_REPEATS
) -> tuple[Any, Timing]:
    """Call ``run`` ``min_repeats`` to ``repeats`` times (no more once it has used
    :data:`REPEAT_CPU_S` of CPU); return its last result, the fastest times and peak memory."""
    gc.collect()
    baseline = _current_rss_mb()
    peak_reset = _reset_peak_rss()
    best_cpu = best_wall = math.inf
    spent = 0.0
    result: Any = None
    runs = 0
    first_cpu = math.nan
    while runs < repeats and (runs < min_repeats or spent < REPEAT_CPU_S):
        result = None  # the previous result must not sit under this run's peak
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        result = run()
        cpu = time.process_time() - cpu_start
        best_wall = min(best_wall, time.perf_counter() - wall_start)
        best_cpu = min(best_cpu, cpu)
        if runs == 0:
            first_cpu = cpu
        spent += cpu
        runs += 1
    peak = _to_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) - baseline
    return result, Timing(best_cpu, best_wall, max(0.0, peak), peak_reset, runs, first_cpu)


def mean_variance_of(p: float, q: float, k: int, n: int) -> float:
    """The exact mean variance of a debiased count for support probabilities ``(p, q)``."""
    return n * (p * (1 - p) + (k - 1) * q * (1 - q)) / (k * (p - q) ** 2)


def ratio_sd(truth: NDArray[np.int64], p: float, q: float) -> float:
    """Standard deviation of MSE / theory if the bucket errors were independent normals."""
    n = float(truth.sum())
    variances = (truth * p * (1 - p) + (n - truth) * q * (1 - q)) / (p - q) ** 2
    return float(math.sqrt(2.0 * float(np.sum(variances**2))) / float(np.sum(variances)))


def _zipf_codes(n: int, k: int) -> NDArray[np.int64]:
    """``n`` codes in ``[0, k)`` with ``P(j) ∝ (j + 1) ** -ZIPF_EXPONENT`` (test data)."""
    rng = np.random.default_rng(SEED + k)
    weights = np.arange(1, k + 1, dtype=np.float64) ** -ZIPF_EXPONENT
    return rng.choice(k, size=n, p=weights / weights.sum()).astype(np.int64)


# --- frameldp cases ---------------------------------------------------------------------------


def _settings(mech: Any) -> str:
    name = mech.name
    if name == "local_hashing":
        return f"g={mech.num_buckets}"
    if name == "subset_selection":
        return f"d={mech.subset_size}"
    if name == "hadamard_response":
        return f"K={mech.num_columns}"
    if name == "projective_geometry_response":
        return f"q={mech.field_size},t={mech.dimension}"
    return "-"


def frameldp_case(spec: dict[str, Any]) -> dict[str, Any]:
    """Measure one frameldp mechanism at one (k, epsilon) on the codes in ``spec["codes"]``."""
    import pyarrow as pa

    from frameldp.core import RandomSource
    from frameldp.core.encoding import count_bits
    from frameldp.core.mechanisms import Statistic, mechanism_class
    from frameldp.core.mechanisms.choice import mean_variance

    codes = np.load(spec["codes"])
    k, epsilon, name = spec["k"], spec["epsilon"], spec["mechanism"]
    n = int(codes.size)
    truth = np.bincount(codes, minlength=k).astype(np.int64)
    mech: Any = mechanism_class(name)(epsilon, domain=range(k))
    values = pa.array(codes)

    def client() -> Any:
        source = RandomSource.from_seed(NOISE_SEED) if spec.get("seeded") else RandomSource.fresh()
        return mech.privatize_column(values, column="c", source=source, row_start=0)

    held: dict[str, Any] = {}
    held["reports"], client_t = measure(client, repeats=REPEATS)
    estimate, server_t = measure(
        lambda: mech.debias(mech.statistic(held["reports"], column="c")), repeats=REPEATS
    )
    held.clear()  # the kernel steps' baselines should not carry the protocol reports

    def kernel_client() -> Any:
        source = RandomSource.fresh()  # the default: noise addressed by position
        if name == "rappor":
            return mech.randomize_codes(codes, source=source, label="bench")
        return mech.randomize(codes, source=source, label="bench")

    def kernel_server() -> Any:
        if name in ("rappor", "optimized_unary_encoding", "subset_selection"):
            parts = count_bits(kernel_reports, k).astype(np.int64)
        elif name == "local_hashing":
            parts = mech.support_counts(kernel_reports)
        elif name in ("hadamard_response", "projective_geometry_response"):
            parts = np.bincount(kernel_reports, minlength=mech.report_range).astype(np.int64)
        else:
            parts = np.bincount(kernel_reports, minlength=k).astype(np.int64)
        return mech.debias(Statistic((parts,), n))

    kernel_reports, kernel_client_t = measure(kernel_client, repeats=REPEATS)
    kernel_estimate, kernel_server_t = measure(kernel_server, repeats=REPEATS)

    p, q = mech.support_probabilities
    mse = float(np.mean((estimate.counts - truth) ** 2))
    theory = float(mean_variance(mech, k, n))
    return {
        "table": "frameldp",
        "mechanism": name,
        "k": k,
        "epsilon": epsilon,
        "n": n,
        "settings": _settings(mech),
        "report_bits": int(mech.report_bits),
        "privacy_epsilon": float(mech.privacy.epsilon),
        "client_cpu_s": client_t.cpu_s,
        "client_wall_s": client_t.wall_s,
        "client_peak_mb": client_t.peak_mb,
        "client_runs": client_t.runs,
        "client_first_cpu_s": client_t.first_cpu_s,
        "server_cpu_s": server_t.cpu_s,
        "server_wall_s": server_t.wall_s,
        "server_peak_mb": server_t.peak_mb,
        "server_runs": server_t.runs,
        "kernel_client_cpu_s": kernel_client_t.cpu_s,
        "kernel_client_wall_s": kernel_client_t.wall_s,
        "kernel_client_peak_mb": kernel_client_t.peak_mb,
        "kernel_client_first_cpu_s": kernel_client_t.first_cpu_s,
        "kernel_server_cpu_s": kernel_server_t.cpu_s,
        "kernel_server_wall_s": kernel_server_t.wall_s,
        "kernel_server_peak_mb": kernel_server_t.peak_mb,
        "peak_reset": client_t.peak_reset and server_t.peak_reset,
        "mse": mse,
        "kernel_mse": float(np.mean((kernel_estimate.counts - truth) ** 2)),
        "theory_mse": theory,
        "ratio": mse / theory,
        "ratio_sd": ratio_sd(truth, p, q),
        "support_p": p,
        "support_q": q,
    }


# --- peers ------------------------------------------------------------------------------------


@dataclass
class PeerOracle:
    """A peer's client and server for one mechanism, and the ``(p, q)`` it realizes."""

    privatize: Callable[[list[int]], list[Any]]
    """Reports of a list of codes, one peer call per value."""
    estimate: Callable[[list[Any]], NDArray[np.float64]]
    """Estimated counts of every bucket from a list of reports."""
    support: tuple[float, float] | None
    estimator: str


def _as_float(values: Any) -> NDArray[np.float64]:
    return np.asarray(values, dtype=np.float64)


def _multi_freq_ldpy(mechanism: str, k: int, epsilon: float) -> PeerOracle:
    """multi-freq-ldpy's pure frequency oracles; ``*_Aggregator_MI`` returns frequencies."""
    base = "multi_freq_ldpy.pure_frequency_oracles."
    e = math.exp(epsilon)
    if mechanism == "randomized_response":
        grr = importlib.import_module(base + "GRR")
        p = e / (e + k - 1)
        return PeerOracle(
            lambda xs: [grr.GRR_Client(x, k, epsilon) for x in xs],
            lambda rs: _as_float(grr.GRR_Aggregator_MI(rs, k, epsilon)) * len(rs),
            (p, (1 - p) / (k - 1)),
            "clip+norm",
        )
    if mechanism in ("rappor", "optimized_unary_encoding"):
        ue = importlib.import_module(base + "UE")
        optimal = mechanism == "optimized_unary_encoding"
        if optimal:
            support = (0.5, 1 / (e + 1))
        else:
            half = math.exp(epsilon / 2)
            support = (half / (half + 1), 1 / (half + 1))
        return PeerOracle(
            lambda xs: [ue.UE_Client(x, k, epsilon, optimal) for x in xs],
            lambda rs: _as_float(ue.UE_Aggregator_MI(rs, epsilon, optimal)) * len(rs),
            support,
            "clip+norm",
        )
    if mechanism == "local_hashing":
        lh = importlib.import_module(base + "LH")
        g = round(e) + 1
        return PeerOracle(
            lambda xs: [lh.LH_Client(x, k, epsilon, True) for x in xs],
            lambda rs: _as_float(lh.LH_Aggregator_MI(rs, k, epsilon, True)) * len(rs),
            (e / (e + g - 1), 1 / g),
            "clip+norm",
        )
    if mechanism == "subset_selection":
        ss = importlib.import_module(base + "SS")
        d = max(1, round(k / (e + 1)))
        p = d * e / (d * e + k - d)
        q = ((d - 1) * d * e + (k - d) * d) / ((k - 1) * (d * e + k - d))
        return PeerOracle(
            lambda xs: [ss.SS_Client(x, k, epsilon) for x in xs],
            lambda rs: _as_float(ss.SS_Aggregator_MI(rs, k, epsilon)) * len(rs),
            (p, q),
            "clip+norm",
        )
    raise ValueError(f"multi-freq-ldpy has no {mechanism}")


def _pure_ldp(mechanism: str, k: int, epsilon: float) -> PeerOracle:
    """pure-LDP's client/server classes, with the identity index map (codes are 0-based)."""
    oracles = importlib.import_module("pure_ldp.frequency_oracles")
    e = math.exp(epsilon)

    def identity(x: int) -> int:
        return x

    if mechanism == "randomized_response":
        client = oracles.DEClient(epsilon, k, index_mapper=identity)
        server = oracles.DEServer(epsilon, k, index_mapper=identity)
        p = e / (e + k - 1)
        support: tuple[float, float] | None = (p, (1 - p) / (k - 1))
    elif mechanism in ("rappor", "optimized_unary_encoding"):
        optimal = mechanism == "optimized_unary_encoding"
        client = oracles.UEClient(epsilon, k, use_oue=optimal, index_mapper=identity)
        server = oracles.UEServer(epsilon, k, use_oue=optimal, index_mapper=identity)
        half = math.exp(epsilon / 2)
        support = (0.5, 1 / (e + 1)) if optimal else (half / (half + 1), 1 / (half + 1))
    elif mechanism == "local_hashing":
        client = oracles.LHClient(epsilon, k, use_olh=True, index_mapper=identity)
        server = oracles.LHServer(epsilon, k, use_olh=True, index_mapper=identity)
        g = int(client.g)
        support = (e / (e + g - 1), 1 / g)
    elif mechanism == "hadamard_response":
        server = oracles.HadamardResponseServer(epsilon, k, index_mapper=identity)
        client = oracles.HadamardResponseClient(
            epsilon, k, server.get_hash_funcs(), index_mapper=identity
        )
        support = None
    else:
        raise ValueError(f"pure-LDP has no {mechanism}")

    def estimate(reports: list[Any]) -> NDArray[np.float64]:
        server.reset()
        server.aggregate_all(reports)
        return _as_float(server.estimate_all(range(k), suppress_warnings=True))

    return PeerOracle(lambda xs: [client.privatise(x) for x in xs], estimate, support, "unbiased")


def _report_bytes(report: Any) -> int:
    """Memory of one report object, with the list slot holding it."""
    size = sys.getsizeof(report) + 8
    if isinstance(report, np.ndarray) and not report.flags.owndata:
        size += report.nbytes  # numba's arrays own no data: getsizeof leaves the buffer out
    if isinstance(report, tuple | list):
        size += sum(sys.getsizeof(item) for item in report)
    return size


def _affordable(n: int, per_report: float, budget: float) -> int:
    """``n`` if ``n`` reports fit the budget, else the largest power of ten that does."""
    if per_report * n <= budget:
        return n
    fits = 10 ** math.floor(math.log10(max(budget / max(per_report, 1e-12), 1.0)))
    return int(min(n, max(PEER_MIN_N, fits)))


def probe_peer(peer: str) -> dict[str, Any]:
    """Whether ``peer`` imports here (status ``ok``, ``not installed`` or the import error)."""
    top = PEERS[peer]
    try:
        for module in PEER_MODULES[peer]:
            importlib.import_module(module)
    except ModuleNotFoundError as error:
        status = "not installed" if error.name == top else f"import failed: {error}"
        return {"peer": peer, "status": status, "version": None}
    except Exception as error:  # a peer's import may fail any way
        return {"peer": peer, "status": f"import failed: {error!r}", "version": None}
    try:
        version = metadata.version(peer)
    except metadata.PackageNotFoundError:
        version = None
    return {"peer": peer, "status": "ok", "version": version}


def peer_case(spec: dict[str, Any]) -> dict[str, Any]:
    """Measure one peer mechanism at one (k, epsilon) on the codes in ``spec["codes"]``."""
    peer, name, k, epsilon = spec["peer"], spec["mechanism"], spec["k"], spec["epsilon"]
    row: dict[str, Any] = {
        "table": "peer",
        "peer": peer,
        "mechanism": name,
        "k": k,
        "epsilon": epsilon,
    }
    warnings.simplefilter("ignore")  # pure-LDP warns about small n and epsilon < 1
    random.seed(NOISE_SEED)  # pure-LDP's Python-level draws (numpy's global state is not reset)
    codes_array = np.load(spec["codes"])
    n = int(codes_array.size)
    codes: list[int] = codes_array.tolist()
    row["n"] = n
    try:
        oracle = (_multi_freq_ldpy if peer == "multi-freq-ldpy" else _pure_ldp)(name, k, epsilon)
        oracle.estimate(oracle.privatize(codes[:10]))  # warm-up: numba compiles here
        pilot_n = min(PEER_PILOT, n)
        start = time.process_time()
        pilot = oracle.privatize(codes[:pilot_n])
        client_per_report = (time.process_time() - start) / pilot_n
        bytes_per_report = sum(_report_bytes(report) for report in pilot) / pilot_n
        start = time.process_time()
        oracle.estimate(pilot)
        server_per_report = (time.process_time() - start) / pilot_n
        del pilot
        client_n = min(
            _affordable(n, bytes_per_report, PEER_MEMORY_BYTES),
            _affordable(n, client_per_report, PEER_CLIENT_CPU_S),
        )
        server_n = min(client_n, _affordable(n, server_per_report, PEER_SERVER_CPU_S))
        values = codes[:client_n]
        reports, client_t = measure(lambda: oracle.privatize(values), repeats=1, min_repeats=1)
        seen = reports[:server_n]
        counts, server_t = measure(lambda: oracle.estimate(seen), repeats=1, min_repeats=1)
    except Exception as error:  # report a broken peer instead of failing the benchmark
        row["status"] = f"failed: {type(error).__name__}: {error}"
        return row
    truth = np.bincount(codes_array[:server_n], minlength=k).astype(np.int64)
    mse = float(np.mean((counts - truth) ** 2))
    row |= {
        "status": "ok",
        "client_n": client_n,
        "server_n": server_n,
        "client_cpu_s": client_t.cpu_s,
        "client_wall_s": client_t.wall_s,
        "client_peak_mb": client_t.peak_mb,
        "server_cpu_s": server_t.cpu_s,
        "server_wall_s": server_t.wall_s,
        "server_peak_mb": server_t.peak_mb,
        "client_cpu_s_at_n": client_t.cpu_s * n / client_n,
        "client_wall_s_at_n": client_t.wall_s * n / client_n,
        "server_cpu_s_at_n": server_t.cpu_s * n / server_n,
        "server_wall_s_at_n": server_t.wall_s * n / server_n,
        "extrapolated": client_n < n or server_n < n,
        "peak_reset": client_t.peak_reset and server_t.peak_reset,
        "pilot_bytes_per_report": bytes_per_report,
        "pilot_client_cpu_s_per_report": client_per_report,
        "pilot_server_cpu_s_per_report": server_per_report,
        "estimator": oracle.estimator,
        "mse": mse,
        "theory_mse": None,
        "ratio": None,
        "ratio_sd": None,
    }
    if oracle.support is not None:
        p, q = oracle.support
        theory = mean_variance_of(p, q, k, server_n)
        row |= {"theory_mse": theory, "ratio": mse / theory, "ratio_sd": ratio_sd(truth, p, q)}
    return row


# --- flights accuracy (in the driver) ---------------------------------------------------------


def flights_rows(columns: Sequence[str], epsilons: Sequence[float], seeds: int) -> list[Any]:
    """Total variation distance of raw and consistent tables on the flights data."""
    from frameldp.core.mechanisms import mechanism_class
    from frameldp.datasets import FLIGHTS_DOMAINS, load_flights
    from frameldp.errors import InsecureSeedWarning

    warnings.simplefilter("ignore", InsecureSeedWarning)
    flights = load_flights()
    rows: list[Any] = []
    for column in columns:
        frame = flights[[column]]
        labels = list(FLIGHTS_DOMAINS[column])
        truth = frame[column].value_counts().reindex(labels, fill_value=0).to_numpy()
        n = len(frame)
        true_freq = truth / n
        for epsilon in epsilons:
            for name in MECHANISMS:
                mech = mechanism_class(name)(epsilon, domain=labels)
                tvd: dict[str, list[float]] = {"raw": [], **{m: [] for m in CONSISTENCY}}
                seconds: list[float] = []
                ibu_seconds: list[float] = []
                for seed in range(seeds):
                    start = time.perf_counter()
                    reports = frame.ldp.privatize({column: mech}, seed=seed)
                    table = reports.ldp.debias(column)
                    seconds.append(time.perf_counter() - start)
                    if list(table.frame["category"]) != labels:
                        raise RuntimeError(f"{column}: the table's categories are not the domain")
                    tvd["raw"].append(_tvd(table.estimate.counts, n, true_freq))
                    for method in CONSISTENCY:
                        start = time.perf_counter()
                        consistent = table.consistent(method)
                        if method == "ibu":
                            ibu_seconds.append(time.perf_counter() - start)
                        tvd[method].append(_tvd(consistent.estimate.counts, n, true_freq))
                rows.append(
                    {
                        "table": "flights",
                        "column": column,
                        "k": len(labels),
                        "n": n,
                        "empty_buckets": int((truth == 0).sum()),
                        "epsilon": epsilon,
                        "mechanism": name,
                        "settings": _settings(mech),
                        "seeds": seeds,
                        "tvd": {key: float(np.mean(values)) for key, values in tvd.items()},
                        "tvd_per_seed": tvd,
                        "privatize_debias_s": float(np.mean(seconds)),
                        "ibu_s": float(np.mean(ibu_seconds)),
                    }
                )
                print(f"  flights {column} eps={epsilon:g} {SHORT[name]}", file=sys.stderr)
    return rows


def _tvd(counts: NDArray[np.float64], n: int, true_freq: NDArray[np.float64]) -> float:
    return 0.5 * float(np.abs(np.asarray(counts) / n - true_freq).sum())


# --- driver -----------------------------------------------------------------------------------


def run_case(python: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run one case in a fresh interpreter ``python`` running this script with ``--case``."""
    command = [python, str(Path(__file__).resolve()), "--case", json.dumps(spec)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=CASE_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"case {spec} failed (exit {done.returncode}):\n{done.stderr}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, Any]:
    """Cores, CPU model and the versions that decide the numbers."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "pyarrow": _version("pyarrow"),
        "frameldp": _version("frameldp"),
    }


def _machine_line(info: dict[str, Any]) -> str:
    return (
        f"machine: {info['cores']} CPUs ({info['usable_cores']} usable), {info['cpu_model']}, "
        f"python {info['python']}, numpy {info['numpy']}, frameldp {info['frameldp']}"
    )


def _render(header: Sequence[str], body: Sequence[Sequence[str]], left: set[int]) -> list[str]:
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(width) if i in left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), line(["-" * width for width in widths]), *(line(b) for b in body)]


def _s(seconds: float | None, approx: bool = False) -> str:
    if seconds is None:
        return "-"
    text = f"{seconds:.3f}" if seconds < 100 else f"{seconds:.1f}"
    return ("~" if approx else "") + text


def _mb(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.1f}" + ("" if row.get("peak_reset", True) else "*")


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _ratio(row: dict[str, Any]) -> tuple[str, str, str]:
    ratio, sd = row.get("ratio"), row.get("ratio_sd")
    if ratio is None or sd is None:
        return "-", "-", ""
    unbiased = row.get("estimator", "unbiased") == "unbiased"
    flag = "!" if unbiased and abs(ratio - 1.0) > SD_FLAG * sd else ""
    return f"{ratio:.3f}", f"{sd:.3f}", flag


def format_frameldp(rows: Sequence[dict[str, Any]], info: dict[str, Any]) -> str:
    """Table 1."""
    lines = [
        f"1. frameldp frequency oracles, n = {rows[0]['n']:,} Zipf({ZIPF_EXPONENT}) codes "
        f"(best of {MIN_REPEATS} or {REPEATS} runs, each case in a fresh process)",
        _machine_line(info),
        "columns: settings = chosen g (hash range) / d (subset size) / K (Hadamard columns); "
        "bits = bits a report;",
        "  client = privatize_column (Arrow in/out), server = statistic + debias: CPU s, wall s, "
        "peak MB (ru_maxrss above the step's start);",
        "  kern cl / kern sv = CPU s of randomize and of the numpy reduction + debias; MSE = mean "
        "squared count error over the buckets;",
        "  theory = exact mean variance (choice.mean_variance); ratio = MSE / theory; sd = its "
        f"sd for independent bucket errors; ! = more than {SD_FLAG:g} sd from 1",
        "",
    ]
    header = [
        "mech",
        "k",
        "eps",
        "settings",
        "bits",
        "client CPU",
        "wall",
        "peak MB",
        "server CPU",
        "wall",
        "peak MB",
        "kern cl",
        "kern sv",
        "MSE",
        "theory",
        "ratio",
        "sd",
        "",
    ]
    body = []
    for row in rows:
        ratio, sd, flag = _ratio(row)
        body.append(
            [
                SHORT[row["mechanism"]],
                str(row["k"]),
                f"{row['epsilon']:g}",
                row["settings"],
                str(row["report_bits"]),
                _s(row["client_cpu_s"]),
                _s(row["client_wall_s"]),
                _mb(row, "client_peak_mb"),
                _s(row["server_cpu_s"]),
                _s(row["server_wall_s"]),
                _mb(row, "server_peak_mb"),
                _s(row["kernel_client_cpu_s"]),
                _s(row["kernel_server_cpu_s"]),
                _g(row["mse"]),
                _g(row["theory_mse"]),
                ratio,
                sd,
                flag,
            ]
        )
    lines += _render(header, body, left={0, 3, 17})
    if not all(row["peak_reset"] for row in rows):
        lines.append("* peak not reset before the step: an upper bound")
    return "\n".join(lines)


def format_peers(
    rows: Sequence[dict[str, Any]], ours: Sequence[dict[str, Any]], info: dict[str, Any], n: int
) -> str:
    """Table 2."""
    lines = [
        f"2. peers on the same codes (n = {n:,}; each case in a fresh process, one run)",
        _machine_line(info),
        "columns: client/server CPU s and wall s scaled to n (~: measured on the n in 'cl n' / "
        "'sv n', scaled linearly); peak MB at that smaller n;",
        "  x fl = CPU over frameldp's protocol path; est = clip+norm (negative estimates "
        "clipped, renormalized) or unbiased;",
        "  MSE over the reports the server saw ('sv n'), theory = mean variance for the peer's "
        "own (p, q) at that n; ratio, sd, ! as in table 1 (no ! for clip+norm, which is "
        "biased)",
        "",
    ]
    by_case = {(r["mechanism"], r["k"], r["epsilon"]): r for r in ours}
    header = [
        "peer",
        "mech",
        "k",
        "eps",
        "cl n",
        "client CPU",
        "wall",
        "peak MB",
        "x fl",
        "sv n",
        "server CPU",
        "wall",
        "peak MB",
        "x fl",
        "est",
        "MSE",
        "theory",
        "ratio",
        "sd",
        "",
        "note",
    ]
    body = []
    for row in rows:
        if row.get("status") != "ok":
            label = [row["peer"], SHORT.get(row.get("mechanism", ""), "-")]
            where = [str(row["k"]), f"{row['epsilon']:g}"] if "k" in row else ["-", "-"]
            body.append([*label, *where, *["-"] * (len(header) - 6), "", row["status"]])
            continue
        mine = by_case.get((row["mechanism"], row["k"], row["epsilon"]))
        client_x = server_x = "-"
        if mine is not None:
            client_x = f"{row['client_cpu_s_at_n'] / mine['client_cpu_s']:.0f}"
            server_x = f"{row['server_cpu_s_at_n'] / max(mine['server_cpu_s'], 1e-6):.0f}"
        ratio, sd, flag = _ratio(row)
        body.append(
            [
                row["peer"],
                SHORT[row["mechanism"]],
                str(row["k"]),
                f"{row['epsilon']:g}",
                f"{row['client_n']:,}",
                _s(row["client_cpu_s_at_n"], row["client_n"] < row["n"]),
                _s(row["client_wall_s_at_n"], row["client_n"] < row["n"]),
                _mb(row, "client_peak_mb"),
                client_x,
                f"{row['server_n']:,}",
                _s(row["server_cpu_s_at_n"], row["server_n"] < row["n"]),
                _s(row["server_wall_s_at_n"], row["server_n"] < row["n"]),
                _mb(row, "server_peak_mb"),
                server_x,
                row["estimator"],
                _g(row["mse"]),
                _g(row["theory_mse"]),
                ratio,
                sd,
                flag,
                "",
            ]
        )
    lines += _render(header, body, left={0, 1, 14, 19, 20})
    return "\n".join(lines)


def format_flights(rows: Sequence[dict[str, Any]], info: dict[str, Any]) -> str:
    """Table 3."""
    lines = [
        f"3. accuracy on the flights demo data (n = {rows[0]['n']:,}), total variation distance "
        f"to the true distribution, mean of {rows[0]['seeds']} seed(s)",
        _machine_line(info),
        "columns: raw = the unbiased table; norm_sub / simplex / ibu = table.consistent(method); "
        "s = privatize + debias wall s; ibu s = consistent('ibu') wall s",
        "",
    ]
    header = ["column", "k", "eps", "mech", "settings", "raw", *CONSISTENCY, "s", "ibu s"]
    body = []
    for row in rows:
        tvd = row["tvd"]
        best = min(CONSISTENCY, key=lambda method: tvd[method])
        body.append(
            [
                row["column"],
                str(row["k"]),
                f"{row['epsilon']:g}",
                SHORT[row["mechanism"]],
                row["settings"],
                f"{tvd['raw']:.4f}",
                *(f"{tvd[m]:.4f}" + ("<" if m == best else " ") for m in CONSISTENCY),
                f"{row['privatize_debias_s']:.2f}",
                f"{row['ibu_s']:.2f}",
            ]
        )
    lines += _render(header, body, left={0, 3, 4})
    lines.append("< the smallest of the three consistent tables")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="n = 20,000, k = 16, eps = 1, one flights case"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the rows as JSON")
    parser.add_argument(
        "--peer-python",
        default=sys.executable,
        metavar="PATH",
        help="interpreter that runs the peers' cases (default: this one)",
    )
    parser.add_argument(
        "--parts", nargs="+", type=int, choices=(1, 2, 3), default=[1, 2, 3], metavar="N"
    )
    parser.add_argument("--seeds", type=int, default=3, help="flights noise seeds (default 3)")
    parser.add_argument(
        "--seeded", action="store_true", help="table 1's client under a seed, not a fresh key"
    )
    parser.add_argument("--case", metavar="JSON", help="worker mode: measure one case")
    parser.add_argument("--probe", metavar="PEER", help="worker mode: can this peer be imported")
    args = parser.parse_args(argv)

    if args.case:
        spec = json.loads(args.case)
        row = peer_case(spec) if "peer" in spec else frameldp_case(spec)
        print(json.dumps(row))
        return 0
    if args.probe:
        print(json.dumps(probe_peer(args.probe)))
        return 0

    started = time.perf_counter()
    info = machine_info()
    n = QUICK_N if args.quick else FULL_N
    ks = QUICK_KS if args.quick else FULL_KS
    epsilons = QUICK_EPSILONS if args.quick else FULL_EPSILONS
    cases = [(k, epsilon) for k in ks for epsilon in epsilons]
    document: dict[str, Any] = {"machine": info, "quick": args.quick, "n": n, "rows": []}
    rows: list[dict[str, Any]] = document["rows"]
    ours: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_fo_") as scratch:
        codes_path = {}
        for k in ks:
            codes_path[k] = str(Path(scratch) / f"codes_k{k}.npy")
            np.save(codes_path[k], _zipf_codes(n, k))
        if 1 in args.parts or 2 in args.parts:
            for k, epsilon in cases:
                for name in MECHANISMS:
                    if args.seeded and name == "subset_selection" and k > 1024:
                        continue  # Floyd's algorithm under a keyed source: O(n d) (docstring)
                    print(f"  frameldp {SHORT[name]} k={k} eps={epsilon:g}", file=sys.stderr)
                    spec = {"mechanism": name, "k": k, "epsilon": epsilon, "codes": codes_path[k]}
                    spec["seeded"] = args.seeded
                    # The smoke run measures in this process (a fresh one per case isolates
                    # the full run's memory peaks; it adds an interpreter start per case).
                    ours.append(
                        frameldp_case(spec) if args.quick else run_case(sys.executable, spec)
                    )
            if 1 in args.parts:
                rows += ours
                print(format_frameldp(ours, info) + "\n", flush=True)
        if 2 in args.parts:
            peer_rows: list[dict[str, Any]] = []
            for peer in PEERS:
                probe = [args.peer_python, str(Path(__file__).resolve()), "--probe", peer]
                done = subprocess.run(probe, capture_output=True, text=True, check=False)
                status = (
                    json.loads(done.stdout.strip().splitlines()[-1])
                    if done.returncode == 0 and done.stdout.strip()
                    else {"peer": peer, "status": f"probe failed: {done.stderr.strip()[-200:]}"}
                )
                info[f"peer {peer}"] = status.get("version") or status["status"]
                if status["status"] != "ok":
                    peer_rows.append({"table": "peer", "peer": peer, "status": status["status"]})
                    continue
                for k, epsilon in cases:
                    for name in PEER_MECHANISMS[peer]:
                        print(f"  {peer} {SHORT[name]} k={k} eps={epsilon:g}", file=sys.stderr)
                        spec = {
                            "peer": peer,
                            "mechanism": name,
                            "k": k,
                            "epsilon": epsilon,
                            "codes": codes_path[k],
                        }
                        peer_rows.append(run_case(args.peer_python, spec))
            rows += peer_rows
            print(format_peers(peer_rows, ours, info, n) + "\n", flush=True)
    if 3 in args.parts:
        columns = FLIGHTS_COLUMNS[:1] if args.quick else FLIGHTS_COLUMNS
        flight_epsilons = FLIGHTS_EPSILONS[:1] if args.quick else FLIGHTS_EPSILONS
        seeds = 1 if args.quick else args.seeds
        flights = flights_rows(columns, flight_epsilons, seeds)
        rows += flights
        print(format_flights(flights, info) + "\n", flush=True)
    elapsed = time.perf_counter() - started
    document["elapsed_s"] = elapsed
    print(f"total: {elapsed:.1f} s wall")
    if args.json:
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
