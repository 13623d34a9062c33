"""Speed at the cipher's limit: keystream economy, both cores, linear scaling, k-RR on a frame.

What is measured (each case in a fresh interpreter; best of ``--repeats`` calls; CPU is
``time.process_time``, the user + system time of all the process's threads):

``keystream``
    The AES-256-CTR keystream frameldp draws noise from (``KeyedStream.contiguous``, 1 MB a
    call), as keystream bytes per CPU second: the yardstick of the sampler.
``rappor_client``
    ``Rappor(ln 3).randomize_codes`` of Zipf codes, k = 1024, under a fresh key, at n = 10^5,
    10^6 and 10^7 rows and with 1 and 2 threads. *Randomized bits per keystream byte-time* is
    (n k bits per CPU second) / (keystream bytes per CPU second): how many output bits the
    client produces in the time AES takes to produce one keystream byte.
``rappor_client_into``
    The same at 10^6 and 10^7 rows, written into an output array allocated (and touched) once
    before the timed calls (``out=``): the per-row cost without the operating system's cost of
    handing the process new memory pages, which on small virtual machines grows with n.
``rappor_server``
    ``Rappor.estimate`` of those reports (bit counting and debiasing), 1 and 2 threads.
``krr_frame`` / ``krr_plain``
    k-RR of a pandas column of 10^7 strings (a ``category`` column over 16 labels) at
    epsilon = 2: ``df.ldp.krr`` (codes mapped, exact keyed noise, the report column built)
    against plain pandas + numpy with PCG64 (``Categorical`` codes, ``rng.random < p``,
    ``rng.integers``, ``Categorical.from_codes``), which is neither keyed nor exact.

Usage::

    python benchmarks/bench_speed.py              # full run, prints the tables
    python benchmarks/bench_speed.py --quick      # n / 100: a smoke run
    python benchmarks/bench_speed.py --json out.json
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

SEED: Final = 20_261_124
RAPPOR_K: Final = 1024
KRR_LABELS: Final = 16
KRR_EPSILON: Final = 2.0
CASE_TIMEOUT_S: Final = 900
QUICK_DIVISOR: Final = 100

Run = Callable[[], object]


def _zipf_codes(n: int, k: int) -> Any:
    import numpy as np

    rng = np.random.default_rng(SEED)
    weights = np.arange(1, k + 1, dtype=np.float64) ** -1.1
    out = np.empty(n, dtype=np.int64)
    step = 1 << 22  # bounded preparation memory
    for start in range(0, n, step):
        size = min(step, n - start)
        out[start : start + size] = rng.choice(k, size=size, p=weights / weights.sum())
    return out


def _set_threads(threads: int) -> bool:
    """Use ``threads`` threads; False where this frameldp has no thread setting (one thread)."""
    import frameldp

    setter = getattr(frameldp, "set_threads", None)
    if setter is None:
        return threads == 1
    setter(threads)
    return True


def _keystream(n: int) -> tuple[Run, int]:
    from frameldp.core import RandomSource

    stream = RandomSource.fresh().stream("benchmark")
    total = n * RAPPOR_K // 8
    step = 1 << 20

    def run() -> object:
        for start in range(0, total, step):
            stream.contiguous(1, start, min(step, total - start))
        return None

    return run, total


def _rappor_client(n: int) -> tuple[Run, int]:
    from frameldp.core import RandomSource, Rappor

    mech = Rappor(math.log(3), domain=range(RAPPOR_K))
    codes = _zipf_codes(n, RAPPOR_K)
    return (lambda: mech.randomize_codes(codes, source=RandomSource.fresh(), label="c")), n


def _rappor_client_into(n: int) -> tuple[Run, int]:
    import numpy as np

    from frameldp.core import RandomSource, Rappor

    mech = Rappor(math.log(3), domain=range(RAPPOR_K))
    codes = _zipf_codes(n, RAPPOR_K)
    out = np.ones((n, RAPPOR_K // 8), dtype=np.uint8)  # allocated and touched before timing

    def run() -> object:
        return mech.randomize_codes(codes, source=RandomSource.fresh(), label="c", out=out)

    return run, n


def _rappor_server(n: int) -> tuple[Run, int]:
    from frameldp.core import RandomSource, Rappor

    mech = Rappor(math.log(3), domain=range(RAPPOR_K))
    codes = _zipf_codes(n, RAPPOR_K)
    reports = mech.randomize_codes(codes, source=RandomSource.fresh(), label="c")
    del codes
    return (lambda: mech.estimate(reports)), n


def _krr_column(n: int) -> Any:
    import numpy as np
    import pandas as pd

    labels = [f"value-{j:02d}" for j in range(KRR_LABELS)]
    codes = _zipf_codes(n, KRR_LABELS)
    column = pd.Categorical.from_codes(codes.astype(np.int8), categories=labels)
    return pd.DataFrame({"c": column}), labels


def _krr_frame(n: int) -> tuple[Run, int]:
    import frameldp  # noqa: F401  (registers the accessors)

    frame, labels = _krr_column(n)
    return (lambda: frame.ldp.krr("c", KRR_EPSILON, domain=labels)), n


def _krr_per_person(n: int) -> tuple[Run, int]:
    """k-RR with ``user=``: a pass counting each person's rows (n / 3 people) comes first."""
    import numpy as np

    import frameldp  # noqa: F401  (registers the accessors)

    frame, labels = _krr_column(n)
    users = np.random.default_rng(SEED + 2).integers(0, max(1, n // 3), n)  # test data
    frame = frame.assign(user=users)
    return (lambda: frame.ldp.krr("c", KRR_EPSILON, domain=labels, user="user")), n


def _krr_plain(n: int) -> tuple[Run, int]:
    import numpy as np
    import pandas as pd

    frame, labels = _krr_column(n)
    k = len(labels)
    keep = math.exp(KRR_EPSILON) / (math.exp(KRR_EPSILON) + k - 1)
    rng = np.random.default_rng(SEED + 1)

    def run() -> object:
        codes = pd.Categorical(frame["c"], categories=labels).codes.astype(np.int64)
        moves = rng.random(codes.size) >= keep
        others = rng.integers(0, k - 1, codes.size)
        others += others >= codes
        reported = np.where(moves, others, codes)
        return pd.DataFrame({"c": pd.Categorical.from_codes(reported, categories=labels)})

    return run, n


CASES: Final[dict[str, Callable[[int], tuple[Run, int]]]] = {
    "keystream": _keystream,
    "rappor_client": _rappor_client,
    "rappor_client_into": _rappor_client_into,
    "rappor_server": _rappor_server,
    "krr_frame": _krr_frame,
    "krr_per_person": _krr_per_person,
    "krr_plain": _krr_plain,
}


def measure(name: str, n: int, threads: int, repeats: int) -> dict[str, Any]:
    """Prepare the case and time its call in this process (call it in a fresh process)."""
    if not _set_threads(threads):
        return {"case": name, "n": n, "threads": threads, "skipped": "no thread setting"}
    run, units = CASES[name](n)
    run()  # warm up: imports, tables, the thread pool
    gc.collect()
    best_cpu = best_wall = math.inf
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        result = run()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
        del result
    return {
        "case": name,
        "n": n,
        "threads": threads,
        "cpu_s": best_cpu,
        "wall_s": best_wall,
        "units": units,
        "ns_per_row": 1e9 * best_cpu / n,
    }


def run_case(name: str, n: int, threads: int, repeats: int) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter (no shared caches or warmed buffers)."""
    command = [sys.executable, __file__, "--case", name, str(n), str(threads), str(repeats)]
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=CASE_TIMEOUT_S, check=False, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"case {name} n={n} failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def plan(quick: bool) -> list[tuple[str, int, int]]:
    """The (case, n, threads) to run."""
    scale = QUICK_DIVISOR if quick else 1
    cases = [("keystream", 1_000_000 // scale, 1)]
    # The smoke run takes one size of each case (each case is a fresh interpreter).
    sizes = (1_000_000,) if quick else (100_000, 1_000_000, 10_000_000)
    for n in sizes:
        for threads in (1, 2):
            cases.append(("rappor_client", n // scale, threads))
    for n in (10_000_000,) if quick else (1_000_000, 10_000_000):
        cases.append(("rappor_client_into", n // scale, 1))
    # (the smoke run: each case once, one of them on two threads)
    for threads in (1,) if quick else (1, 2):
        cases.append(("rappor_server", 1_000_000 // scale, threads))
    for threads in (1,) if quick else (1, 2):
        cases.append(("krr_frame", 10_000_000 // scale, threads))
    cases.append(("krr_per_person", 10_000_000 // scale, 1))
    cases.append(("krr_plain", 10_000_000 // scale, 1))
    return cases


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The headline figures: bits per keystream byte-time, wall / CPU, per-row growth, k-RR."""
    measured = [r for r in rows if "cpu_s" in r]

    def one(case: str, n: int | None = None, threads: int = 1) -> dict[str, Any] | None:
        for r in measured:
            if r["case"] == case and r["threads"] == threads and (n is None or r["n"] == n):
                return r
        return None

    out: dict[str, Any] = {}
    keystream = one("keystream")
    sizes = sorted({r["n"] for r in measured if r["case"] == "rappor_client"})
    if keystream and sizes:
        bytes_per_cpu_s = keystream["units"] / keystream["cpu_s"]
        out["keystream_bytes_per_cpu_s"] = bytes_per_cpu_s
        client = one("rappor_client", sizes[min(1, len(sizes) - 1)])
        if client:
            bits_per_cpu_s = client["n"] * RAPPOR_K / client["cpu_s"]
            out["client_n"] = client["n"]
            out["rappor_bits_per_cpu_s"] = bits_per_cpu_s
            out["bits_per_keystream_byte_time"] = bits_per_cpu_s / bytes_per_cpu_s
        first, last = (
            one("rappor_client", sizes[1 if len(sizes) > 2 else 0]),
            one("rappor_client", sizes[-1]),
        )
        if first and last:
            out["growth_sizes"] = [first["n"], last["n"]]
            out["per_row_growth"] = last["ns_per_row"] / first["ns_per_row"]
    into = sorted((r for r in measured if r["case"] == "rappor_client_into"), key=lambda r: r["n"])
    if len(into) >= 2:
        out["per_row_growth_into"] = into[-1]["ns_per_row"] / into[0]["ns_per_row"]
    for case in ("rappor_client", "rappor_server", "krr_frame"):
        both = [r for r in measured if r["case"] == case and r["threads"] == 2]
        if both:
            largest = max(both, key=lambda r: r["n"])
            out[f"{case}_wall_over_cpu_2_threads"] = largest["wall_s"] / largest["cpu_s"]
    frame, plain = one("krr_frame"), one("krr_plain")
    if frame and plain:
        out["krr_frame_over_plain_cpu"] = frame["cpu_s"] / plain["cpu_s"]
    person = one("krr_per_person")
    if frame and person:
        out["krr_per_person_over_frame_cpu"] = person["cpu_s"] / frame["cpu_s"]
    return out


def format_tables(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    """The rows and the headline figures as aligned text."""
    lines = [
        f"frameldp speed benchmark: {platform.python_version()}, "
        f"{os.cpu_count()} cores, {platform.platform()}",
        "(keystream: n counts units of 128 bytes, the size of one RAPPOR report of 1024 bits)",
        "",
        f"{'case':<18} {'n':>12} {'threads':>7} {'CPU s':>8} {'wall s':>8} "
        f"{'wall/CPU':>8} {'ns/row CPU':>10}",
    ]
    for r in rows:
        if "cpu_s" not in r:
            lines.append(f"{r['case']:<18} {r['n']:>12,} {r['threads']:>7}  ({r['skipped']})")
            continue
        lines.append(
            f"{r['case']:<18} {r['n']:>12,} {r['threads']:>7} {r['cpu_s']:>8.3f} "
            f"{r['wall_s']:>8.3f} {r['wall_s'] / r['cpu_s']:>8.2f} {r['ns_per_row']:>10.1f}"
        )
    lines.append("")
    client_n = f"{summary.get('client_n', 0):,}"
    small, large = (f"{n:,}" for n in summary.get("growth_sizes", [0, 0]))
    names = {
        "keystream_bytes_per_cpu_s": ("AES-CTR keystream, bytes per CPU s", "{:.3g}"),
        "rappor_bits_per_cpu_s": (f"RAPPOR client (n = {client_n}), bits per CPU s", "{:.3g}"),
        "bits_per_keystream_byte_time": ("randomized bits per keystream byte-time", "{:.2f}"),
        "per_row_growth": (f"per-row CPU, n = {large} / n = {small}", "{:.2f}x"),
        "per_row_growth_into": ("the same, written into a reused output", "{:.2f}x"),
        "rappor_client_wall_over_cpu_2_threads": ("RAPPOR client wall / CPU, 2 threads", "{:.2f}"),
        "rappor_server_wall_over_cpu_2_threads": ("RAPPOR server wall / CPU, 2 threads", "{:.2f}"),
        "krr_frame_wall_over_cpu_2_threads": ("k-RR on a frame wall / CPU, 2 threads", "{:.2f}"),
        "krr_frame_over_plain_cpu": ("k-RR on a frame / plain pandas + numpy, CPU", "{:.2f}x"),
        "krr_per_person_over_frame_cpu": ("k-RR with user= (rows counted) / without", "{:.2f}x"),
    }
    for key, (text, form) in names.items():
        if key in summary:
            lines.append(f"{text:<48} {form.format(summary[key])}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n / 100: a smoke run")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the rows as JSON")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=sorted(CASES), metavar="CASE")
    parser.add_argument("--case", nargs=4, metavar=("NAME", "N", "THREADS", "REPEATS"))
    args = parser.parse_args(argv)
    if args.case:
        name, n, threads, repeats = args.case
        print(json.dumps(measure(name, int(n), int(threads), int(repeats))))
        return 0
    repeats = 1 if args.quick else args.repeats
    rows = []
    for name, n, threads in plan(args.quick):
        if args.only and name not in args.only:
            continue
        print(f"  {name} n={n:,} threads={threads}", file=sys.stderr, flush=True)
        # The smoke run measures in this process; the full run, each case in a fresh one.
        rows.append(
            measure(name, n, threads, repeats)
            if args.quick
            else run_case(name, n, threads, repeats)
        )
    summary = summarize(rows)
    print(format_tables(rows, summary))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
