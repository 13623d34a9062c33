"""Speed and peak memory of frameldp's numpy core: RAPPOR and k-RR, client and server side.

What is measured
----------------
Each case times one call (or a short fixed sequence of calls) of the core API on inputs prepared
beforehand, outside the measured region:

``rappor_client``
    ``Rappor.randomize_codes`` (= ``randomize(encode(codes))`` without materializing the one-hot
    input, the path the frame adapters take) of n = 1,000,000 Zipf-distributed codes, k = 1024,
    epsilon = ln 3, keyed AES noise from ``RandomSource.fresh()``.
``rappor_server``
    ``Rappor.estimate`` (bit counting + debiasing) of those n reports.
``krr_client`` / ``krr_server``
    ``RandomizedResponse(2.0, domain=range(1024))``: ``randomize`` and ``estimate`` of n =
    10,000,000 codes.
``naive_numpy_rappor``
    The plain numpy way of doing ``rappor_client``: one-hot rows, ``rng.random((chunk, k)) < q``
    XOR-ed in, ``np.packbits`` to the same packed layout, 10,000 rows at a time, numpy's
    ``default_rng`` (PCG64: fast, but neither keyed nor exact nor cryptographic).
``rappor_client_k256_n1e6``, ``rappor_client_max_weight3``
    ``rappor_client`` with k = 256; and k-RAPPOR with ``max_weight=3`` on set-valued cells of 1
    to 3 items (``encode_sets`` from CSR offsets/codes + ``randomize``).

Input codes are drawn from numpy's ``default_rng`` with a fixed seed: that is test data, never
privacy noise.

How
---
Every case runs in a fresh interpreter (this script re-invoked with ``--case NAME``), so no case
inherits another's allocations, caches or warmed-up buffers. In that process:

* time is the best of :data:`REPEATS` repetitions, separately for CPU
  (``time.process_time``: user + system time of the process, all threads) and wall
  (``time.perf_counter``) seconds. CPU above wall would mean several cores were busy;
* peak memory is ``ru_maxrss`` (the kernel's resident-set high-water mark) after the
  repetitions, minus the resident set measured after imports and input preparation. Before the
  measured calls the high-water mark is reset to the current resident set (Linux
  ``/proc/self/clear_refs``), so input preparation cannot mask the case's own peak; the row's
  ``peak_reset`` field says whether the reset worked. No tracemalloc: it slows numpy down and
  misses allocations that bypass Python's allocator.

Targets come from the performance issue and assume a 2-core machine; ``--quick`` divides every
n by 100 for a smoke run (targets are then not checked).

Usage::

    python benchmarks/bench_foundation.py                 # full run, prints the table
    python benchmarks/bench_foundation.py --quick         # smoke run
    python benchmarks/bench_foundation.py --json out.json # also write machine + rows as JSON
    python benchmarks/bench_foundation.py --only rappor_client naive_numpy_rappor
    python benchmarks/bench_foundation.py --check         # exit status 1 if a target is missed
    python benchmarks/bench_foundation.py --case rappor_client  # one case, JSON row on stdout
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from frameldp.core import Domain

REPEATS: Final = 3
QUICK_DIVISOR: Final = 100
ZIPF_EXPONENT: Final = 1.1
NAIVE_CHUNK_ROWS: Final = 10_000
PREP_CHUNK_ROWS: Final = 100_000  # server inputs are built in chunks to keep preparation small
CASE_TIMEOUT_S: Final = 300
SEED: Final = 20_240_601
RAPPOR_EPSILON: Final = math.log(3)
KRR_EPSILON: Final = 2.0

# numpy and frameldp are imported inside the case functions only: the driver process stays small,
# and each worker's baseline is measured after its own imports.

Run = Callable[[], object]


@dataclass(frozen=True)
class Case:
    """One benchmark case: sizes, targets and how to prepare its measured call."""

    name: str
    n: int
    k: int
    prepare: Callable[[int, int], Run]
    target_cpu_s: float | None = None
    target_peak_mb: float | None = None


@dataclass(frozen=True)
class Row:
    """The measurements of one case (one fresh process)."""

    case: str
    n: int
    k: int
    cpu_s: float
    wall_s: float
    peak_mb: float
    baseline_mb: float
    peak_reset: bool
    repeats: int
    target_cpu_s: float | None
    target_peak_mb: float | None
    quick: bool

    @property
    def within_target(self) -> bool | None:
        """Whether the row meets its targets; None without targets or in a quick run."""
        if self.quick or (self.target_cpu_s is None and self.target_peak_mb is None):
            return None
        cpu_ok = self.target_cpu_s is None or self.cpu_s <= self.target_cpu_s
        peak_ok = self.target_peak_mb is None or self.peak_mb <= self.target_peak_mb
        return cpu_ok and peak_ok


# --- input preparation (outside the measured region) ----------------------------------------


def _domain(k: int) -> Domain:
    """The public domain ``0, ..., k - 1`` (what ``domain=range(k)`` is coerced to)."""
    from frameldp.core import Domain

    return Domain(tuple(range(k)))


def _zipf_codes(n: int, k: int, seed: int = SEED) -> NDArray[np.int64]:
    """``n`` codes in ``[0, k)`` with ``P(j) ∝ (j + 1) ** -ZIPF_EXPONENT`` (test data)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = np.arange(1, k + 1, dtype=np.float64) ** -ZIPF_EXPONENT
    return rng.choice(k, size=n, p=weights / weights.sum()).astype(np.int64)


def _rappor_client(max_weight: int = 1, *, keyed: bool = False) -> Callable[[int, int], Run]:
    """``keyed``: a caller's key (``key=``), whose noise is addressed by row and value (a
    CBC-MAC address per row) instead of the fresh key's position-addressed AES-CTR."""

    def prepare(n: int, k: int) -> Run:
        from frameldp.core import RandomSource, Rappor

        mech = Rappor(RAPPOR_EPSILON, domain=_domain(k), max_weight=max_weight)
        key = RandomSource.from_key(bytes(range(32)))
        # Each repeat is another release: a fresh key each time (one fresh key refuses to
        # randomize the same rows twice); a caller's key re-runs the same job.
        source: Callable[[], RandomSource] = (lambda: key) if keyed else RandomSource.fresh
        if max_weight == 1:
            codes = _zipf_codes(n, k)

            def run() -> object:
                # What the frame adapters call: one-hot bits XORed into the noise.
                return mech.randomize_codes(codes, source=source(), label="dest")

            return run

        import numpy as np

        sizes = np.random.default_rng(SEED + 1).integers(1, max_weight + 1, size=n)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        items = _zipf_codes(int(offsets[-1]), k)

        def run_sets() -> object:
            bits = mech.encode_sets(offsets, items)
            return mech.randomize(bits, source=source(), label="dest")

        return run_sets

    return prepare


def _rappor_server(n: int, k: int) -> Run:
    import numpy as np

    from frameldp.core import RandomSource, Rappor

    mech = Rappor(RAPPOR_EPSILON, domain=_domain(k))
    source = RandomSource.fresh()
    codes = _zipf_codes(n, k)
    reports = np.empty((n, -(-k // 8)), dtype=np.uint8)
    # Row-addressed noise: chunks equal the slices of one big call, with a smaller peak.
    for start in range(0, n, PREP_CHUNK_ROWS):
        chunk = codes[start : start + PREP_CHUNK_ROWS]
        reports[start : start + chunk.size] = mech.randomize(
            mech.encode(chunk), source=source, label="dest", row_start=start
        )
    return lambda: mech.estimate(reports)


def _krr_client(n: int, k: int, *, keyed: bool = False) -> Run:
    from frameldp.core import RandomizedResponse, RandomSource

    mech = RandomizedResponse(KRR_EPSILON, domain=_domain(k))
    key = RandomSource.from_key(bytes(range(32)))
    source: Callable[[], RandomSource] = (lambda: key) if keyed else RandomSource.fresh
    codes = _zipf_codes(n, k)
    return lambda: mech.randomize(codes, source=source(), label="dest")


def _krr_client_keyed(n: int, k: int) -> Run:
    return _krr_client(n, k, keyed=True)


def _krr_server(n: int, k: int) -> Run:
    import numpy as np

    from frameldp.core import RandomizedResponse, RandomSource

    mech = RandomizedResponse(KRR_EPSILON, domain=_domain(k))
    source = RandomSource.fresh()
    codes = _zipf_codes(n, k)
    reports = np.empty(n, dtype=np.int64)
    for start in range(0, n, PREP_CHUNK_ROWS):
        chunk = codes[start : start + PREP_CHUNK_ROWS]
        reports[start : start + chunk.size] = mech.randomize(
            chunk, source=source, label="dest", row_start=start
        )
    del codes
    return lambda: mech.estimate(reports)


def _naive_numpy_rappor(n: int, k: int) -> Run:
    import numpy as np

    from frameldp.core import Rappor

    flip = Rappor(RAPPOR_EPSILON, domain=_domain(k)).flip_probability
    codes = _zipf_codes(n, k)
    rng = np.random.default_rng(SEED + 2)
    width = -(-k // 8)

    def run() -> object:
        out = np.empty((n, width), dtype=np.uint8)
        for start in range(0, n, NAIVE_CHUNK_ROWS):
            chunk = codes[start : start + NAIVE_CHUNK_ROWS]
            one_hot = np.zeros((chunk.size, k), dtype=np.bool_)
            one_hot[np.arange(chunk.size), chunk] = True
            noisy = rng.random((chunk.size, k)) < flip
            np.bitwise_xor(noisy, one_hot, out=noisy)
            out[start : start + chunk.size] = np.packbits(noisy, axis=1)
        return out

    return run


CASES: Final[tuple[Case, ...]] = (
    Case("rappor_client", 1_000_000, 1024, _rappor_client(), 1.0, 400.0),
    Case("rappor_server", 1_000_000, 1024, _rappor_server, 0.5),
    Case("krr_client", 10_000_000, 1024, _krr_client, 1.0),
    Case("krr_server", 10_000_000, 1024, _krr_server),
    Case("naive_numpy_rappor", 1_000_000, 1024, _naive_numpy_rappor),
    Case("rappor_client_k256_n1e6", 1_000_000, 256, _rappor_client()),
    Case("rappor_client_max_weight3", 1_000_000, 1024, _rappor_client(max_weight=3)),
    Case("rappor_client_keyed", 1_000_000, 1024, _rappor_client(keyed=True)),
    Case("krr_client_keyed", 1_000_000, 1024, _krr_client_keyed),
)
CASE_BY_NAME: Final = {case.name: case for case in CASES}


# --- measurement (inside the worker process) --------------------------------------------------


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


def measure(case: Case, *, quick: bool, repeats: int = REPEATS) -> Row:
    """Prepare ``case`` and measure its call in this process (call it in a fresh process)."""
    n = max(1, case.n // QUICK_DIVISOR) if quick else case.n
    import frameldp

    frameldp.set_threads(1)  # one thread, comparable across versions (threads: bench_speed.py)
    run = case.prepare(n, case.k)
    gc.collect()
    baseline = _current_rss_mb()
    peak_reset = _reset_peak_rss()
    best_cpu = best_wall = math.inf
    for _ in range(repeats):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        result = run()
        best_cpu = min(best_cpu, time.process_time() - cpu_start)
        best_wall = min(best_wall, time.perf_counter() - wall_start)
        del result
    peak = _to_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) - baseline
    return Row(
        case=case.name,
        n=n,
        k=case.k,
        cpu_s=best_cpu,
        wall_s=best_wall,
        peak_mb=max(0.0, peak),
        baseline_mb=baseline,
        peak_reset=peak_reset,
        repeats=repeats,
        target_cpu_s=case.target_cpu_s,
        target_peak_mb=case.target_peak_mb,
        quick=quick,
    )


# --- driver -----------------------------------------------------------------------------------


def run_in_subprocess(name: str, *, quick: bool) -> Row:
    """Measure one case in a fresh interpreter running this script with ``--case``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--case", name]
    if quick:
        command.append("--quick")
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=CASE_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"case {name!r} failed (exit {done.returncode}):\n{done.stderr}")
    fields = json.loads(done.stdout.strip().splitlines()[-1])
    return Row(**fields)


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
    try:
        from cryptography.hazmat.backends.openssl.backend import backend

        openssl = backend.openssl_version_text()
    except (ImportError, AttributeError):
        openssl = "OpenSSL version unknown"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "cryptography": _version("cryptography"),
        "openssl": openssl,
        "frameldp": _version("frameldp"),
    }


def _target_text(row: Row) -> str:
    parts = []
    if row.target_cpu_s is not None:
        parts.append(f"<= {row.target_cpu_s:g} s CPU")
    if row.target_peak_mb is not None:
        parts.append(f"<= {row.target_peak_mb:g} MB")
    return ", ".join(parts) or "-"


def _status_text(row: Row) -> str:
    met = row.within_target
    if met is None:
        return "(quick)" if row.quick and row.target_cpu_s is not None else "-"
    return "yes" if met else "NO"


def format_table(rows: Sequence[Row]) -> str:
    """The rows as a plain-text table with aligned columns."""
    header = ("case", "n", "k", "CPU s", "wall s", "peak MB", "base MB", "target", "met")
    body = [
        (
            row.case,
            f"{row.n:,}",
            str(row.k),
            f"{row.cpu_s:.3f}",
            f"{row.wall_s:.3f}",
            f"{row.peak_mb:.1f}" + ("" if row.peak_reset else "*"),
            f"{row.baseline_mb:.0f}",
            _target_text(row),
            _status_text(row),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]
    right = {1, 2, 3, 4, 5, 6}

    def render(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    lines = [render(header), render(["-" * width for width in widths])]
    lines += [render(cells) for cells in body]
    if not all(row.peak_reset for row in rows):
        lines.append("* peak not reset after preparation: an upper bound")
    return "\n".join(lines)


def speedup(rows: Sequence[Row]) -> float | None:
    """CPU time of the naive numpy baseline over that of ``rappor_client``."""
    by_name = {row.case: row for row in rows}
    if "rappor_client" not in by_name or "naive_numpy_rappor" not in by_name:
        return None
    return by_name["naive_numpy_rappor"].cpu_s / by_name["rappor_client"].cpu_s


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n / 100: a smoke run")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    parser.add_argument("--only", nargs="+", choices=sorted(CASE_BY_NAME), metavar="NAME")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--case",
        choices=sorted(CASE_BY_NAME),
        metavar="NAME",
        help="measure one case in this process and print its row as JSON (worker mode)",
    )
    args = parser.parse_args(argv)

    if args.case:
        row = measure(CASE_BY_NAME[args.case], quick=args.quick)
        print(json.dumps(asdict(row)))
        return 0

    info = machine_info()
    print(
        f"frameldp {info['frameldp']} core benchmark ({'quick' if args.quick else 'full'} run, "
        f"best of {REPEATS}, each case in a fresh process)\n"
        f"machine: {info['cores']} cores ({info['usable_cores']} usable), {info['cpu_model']}, "
        f"{info['platform']}\n"
        f"python {info['python']}, numpy {info['numpy']}, cryptography {info['cryptography']} "
        f"({info['openssl']})\n",
        flush=True,
    )
    names = args.only or [case.name for case in CASES]
    # Each case runs in a fresh interpreter (its own peak memory); the smoke run, whose figures
    # are not checked against targets, measures them all in this one.
    rows = [
        measure(CASE_BY_NAME[name], quick=True)
        if args.quick
        else run_in_subprocess(name, quick=False)
        for name in names
    ]
    print(format_table(rows))
    ratio = speedup(rows)
    if ratio is not None:
        print(
            f"\nrappor_client vs naive_numpy_rappor: {ratio:.1f}x less CPU "
            "(keyed AES-CTR exact noise vs numpy PCG64 floats)"
        )
    if args.json:
        document = {
            "machine": info,
            "quick": args.quick,
            "repeats": REPEATS,
            "rows": [asdict(row) | {"within_target": row.within_target} for row in rows],
            "speedup_rappor_client_over_naive": ratio,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    missed = [row.case for row in rows if row.within_target is False]
    if missed:
        print(f"\ntargets missed: {', '.join(missed)}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
