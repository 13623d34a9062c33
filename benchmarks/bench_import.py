"""Start-up cost: ``import frameldp`` on top of the dataframe libraries, and ``frameldp --help``.

Each case runs in a fresh interpreter (``python -c``), ``--repeats`` times (default 5; the
table shows the median), and measures the CPU time (user + system, from ``resource`` of the
child) and the wall time of:

``baseline``
    ``import pandas, pyarrow, polars``: what any dataframe job pays anyway;
``import frameldp``
    the same, then ``import frameldp``; ``added`` is the CPU time of the ``import frameldp``
    statement alone, measured inside the process (``resource.getrusage`` before and after):
    the difference of two whole-process medians is noisier than the quantity measured;
``frameldp --help``
    the installed command printing its help (what a scheduler pays per CLI call).

Issue 14 targets: ``import frameldp`` adds at most 0.15 s CPU over the baseline, and
``frameldp --help`` answers in a few tenths of a second. ``python -X importtime -c "import
frameldp"`` shows where the time goes.

Usage::

    python benchmarks/bench_import.py               # median of 5 runs per case
    python benchmarks/bench_import.py --quick       # one run per case (smoke run)
    python benchmarks/bench_import.py --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

BASELINE: Final = "import pandas, pyarrow, polars"
_TIMED_IMPORT: Final = (
    f"{BASELINE}, resource\n"
    "def cpu():\n"
    "    usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    return usage.ru_utime + usage.ru_stime\n"
    "before = cpu()\n"
    "import frameldp\n"
    "print(cpu() - before)\n"
)
CASES: Final = {
    "baseline": [sys.executable, "-c", BASELINE],
    "import frameldp": [sys.executable, "-c", _TIMED_IMPORT],
}
TARGET_ADDED_CPU_S: Final = 0.15


@dataclass(frozen=True)
class Row:
    case: str
    cpu_s: float
    wall_s: float
    added_cpu_s: float | None


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(command: Sequence[str], repeats: int) -> tuple[float, float, float | None]:
    """Median CPU and wall seconds of ``command`` run ``repeats`` times in fresh processes, and
    the median of the number it printed (None when it printed none)."""
    cpu, wall, printed = [], [], []
    for _ in range(repeats):
        before, start = _child_cpu(), time.perf_counter()
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        wall.append(time.perf_counter() - start)
        cpu.append(_child_cpu() - before)
        with contextlib.suppress(ValueError):  # a case that prints nothing
            printed.append(float(out.strip()))
    number = statistics.median(printed) if printed else None
    return statistics.median(cpu), statistics.median(wall), number


def run(repeats: int) -> list[Row]:
    cases = dict(CASES)
    command = shutil.which("frameldp") or str(Path(sys.executable).with_name("frameldp"))
    cases["frameldp --help"] = [command, "--help"]
    rows = []
    for name, case in cases.items():
        cpu, wall, added = measure(case, repeats)
        rows.append(Row(name, cpu, wall, added if name == "import frameldp" else None))
    return rows


def format_table(rows: Sequence[Row]) -> str:
    lines = [
        f"{'case':<18} {'CPU s':>7} {'wall s':>7} {'added CPU s':>12}  target",
        "-" * 64,
    ]
    for row in rows:
        added = "" if row.added_cpu_s is None else f"{row.added_cpu_s:.3f}"
        target = f"<= {TARGET_ADDED_CPU_S} s added" if row.added_cpu_s is not None else ""
        lines.append(f"{row.case:<18} {row.cpu_s:>7.3f} {row.wall_s:>7.3f} {added:>12}  {target}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run per case (smoke run)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per case (median shown)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = run(1 if args.quick else args.repeats)
    print(f"frameldp start-up (median of {1 if args.quick else args.repeats} fresh processes)")
    print(format_table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": [asdict(row) for row in rows]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
