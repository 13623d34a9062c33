"""The benchmark scripts keep working (smoke runs at reduced sizes; no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _quick_run(script: str, tmp_path: Path) -> tuple[list[dict[str, Any]], str]:
    """Run ``script --quick``; return its JSON rows and its printed table."""
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())["rows"], done.stdout


def test_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_foundation.py", tmp_path)
    cases = {row["case"] for row in rows}
    assert {"rappor_client", "rappor_server", "krr_client", "naive_numpy_rappor"} <= cases
    assert "rappor_client" in stdout


def test_accounting_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_accounting.py", tmp_path)
    by_case = {row["case"]: row for row in rows}
    assert by_case["binary_rr x100"]["method"] == "pld"
    assert by_case["binary_rr x100"]["epsilon"] < by_case["binary_rr x100"]["basic_epsilon"]
    assert "ledger_spend x200" in by_case
    assert "ms per spend" in stdout


def test_bloom_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_bloom.py", tmp_path)
    assert len(rows) == 2
    assert all(0.0 <= row["recall"] <= 1.0 and row["decode_s"] > 0 for row in rows)
    assert "memoized" in stdout
    assert "TVD" in stdout
