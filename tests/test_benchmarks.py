"""The benchmark script keeps working (smoke run at 1/100 of the sizes; no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_foundation.py"
ACCOUNTING = SCRIPT.with_name("bench_accounting.py")


def test_benchmark_quick_run(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["rows"]
    cases = {row["case"] for row in rows}
    assert {"rappor_client", "rappor_server", "krr_client", "naive_numpy_rappor"} <= cases
    assert "rappor_client" in done.stdout


def test_accounting_benchmark_quick_run(tmp_path: Path) -> None:
    out = tmp_path / "accounting.json"
    done = subprocess.run(
        [sys.executable, str(ACCOUNTING), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {row["case"]: row for row in json.loads(out.read_text())["rows"]}
    assert rows["binary_rr x100"]["method"] == "pld"
    assert rows["binary_rr x100"]["epsilon"] < rows["binary_rr x100"]["basic_epsilon"]
    assert "ledger_spend x200" in rows
