"""The benchmark scripts keep working (smoke runs at reduced sizes; no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _quick_run(script: str, tmp_path: Path, *extra: str) -> tuple[list[dict[str, Any]], str]:
    """Run ``script --quick`` (and ``extra`` arguments); return its JSON rows and its printed
    table."""
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick", "--json", str(out), *extra],
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
    assert "ledger_spend x50" in by_case
    assert "ms per spend" in stdout


def test_bloom_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_bloom.py", tmp_path)
    assert len(rows) == 2
    assert all(0.0 <= row["recall"] <= 1.0 and row["decode_s"] > 0 for row in rows)
    assert "memoized" in stdout
    assert "TVD" in stdout


def test_shuffle_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_shuffle.py", tmp_path)
    amplification = [row for row in rows if row["table"] == "amplification"]
    assert {(row["epsilon0"], row["n"]) for row in amplification} >= {(1.0, 10_000), (4.0, 10_000)}
    for row in amplification:
        if row["closed_form"] is not None:
            assert row["clones"] <= row["closed_form"]
        assert row["lower_bound"] <= row["stronger_clones"] <= row["clones"] <= row["epsilon0"]
    frontier = [row for row in rows if row["table"] == "frontier"]
    assert len(frontier) == 3  # binary RR, 3-RR and OUE (the blanket)
    for row in frontier:  # never above the clones, never below a lower bound
        assert row["reported"] <= row["before"]
        assert row["lower"] is None or row["lower"] <= row["reported"]
    accuracy = [row for row in rows if row["table"] == "accuracy"]
    methods = {"rappor_local", "rappor_shuffled", "krr_shuffled", "balcer_cheu"}
    assert methods | {"balcer_cheu_zero_sum"} == {row["method"] for row in accuracy}
    for row in accuracy:
        assert row["central_achieved"] <= row["central_epsilon"]
        assert 0.0 <= row["linf"] <= 1.0
        if row["method"] in ("rappor_shuffled", "krr_shuffled"):
            assert row["local_epsilon"] > row["central_epsilon"]
        if row["method"].startswith("balcer_cheu"):
            assert row["messages_per_user"] > 1.0
        if row["method"] == "balcer_cheu_zero_sum" and row["zero_abs"] is not None:
            assert row["zero_abs"] == 0.0
    # At the same central epsilon, shuffled reports beat local ones.
    for dataset in {row["dataset"] for row in accuracy}:
        rmse = {row["method"]: row["rmse"] for row in accuracy if row["dataset"] == dataset}
        assert rmse["rappor_shuffled"] < rmse["rappor_local"]
    pandas_rows = [row for row in rows if row["table"] == "pandas"]
    assert {row["method"] for row in pandas_rows} == methods - {"rappor_local"}
    assert all(row["same_counts_as_core"] for row in pandas_rows)
    assert "closed form" in stdout
    assert "Balcer-Cheu" in stdout


def test_etl_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_etl.py", tmp_path)
    cli = [row for row in rows if row["case"] == "cli"]
    assert [row["rows"] for row in cli] == [20_000]
    assert all(row["peak_mb"] > 0 and row["rows_per_s"] > 0 for row in cli)
    dask = {row["case"]: row for row in rows if row["case"].startswith("dask")}
    assert list(dask) == ["dask 2 worker(s)"]  # the smoke run: one cluster
    assert dask["dask 2 worker(s)"]["rows"] == 20_000
    assert "peak MB" in stdout


def test_import_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_import.py", tmp_path)
    by_case = {row["case"]: row for row in rows}
    assert set(by_case) == {"baseline", "import frameldp", "frameldp --help"}
    assert by_case["import frameldp"]["added_cpu_s"] is not None
    assert all(row["cpu_s"] > 0 for row in rows)
    assert "added CPU s" in stdout


def test_frequency_oracles_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_frequency_oracles.py", tmp_path)
    mechanisms = {row.get("mechanism") for row in rows if row.get("table") == "frameldp"}
    assert {
        "randomized_response",
        "rappor",
        "optimized_unary_encoding",
        "local_hashing",
        "subset_selection",
        "hadamard_response",
    } <= mechanisms
    assert "norm_sub" in stdout
    assert "ibu" in stdout


def test_tables_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_tables.py", tmp_path)
    assert "dest by month" in stdout
    cases = {r["case"] for r in rows if r["kind"] == "speed"}
    assert "joint carrier x origin" in cases
    coverage = [r["coverage_95"] for r in rows if r["kind"] == "accuracy"]
    assert len(coverage) == 3


def test_composition_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_composition.py", tmp_path)
    shuffle = [r for r in rows if r["table"] == "shuffle"]
    assert {(r["epsilon0"], r["n"]) for r in shuffle} == {(4.0, 1_000)}
    for r in shuffle:
        assert r["lower"] <= r["stronger_clones"] <= r["clones"] <= r["epsilon0"]
        assert r["lower"] - 1e-9 <= r["exact"] <= r["stronger_clones"] + 1e-9
        assert r["rounds_lower"] <= r["rounds_reported"] < r["rounds_before"]
    small = [r for r in rows if r["table"] == "small_delta"]
    assert [r["k"] for r in small] == [2]
    for r in small:  # 10 releases at delta 1e-9: never basic composition, never below the bound
        assert r["lower"] <= r["reported"] < 0.6 * r["before"]
    cases = {r["case"] for r in rows if r["table"] == "timing"}
    assert any("12-RR" in case for case in cases)
    assert "Composition times" in stdout


def test_discovery_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_discovery.py", tmp_path)
    methods = {row["method"].split(" (")[0] for row in rows}
    assert methods == {"prefix extending", "Bloom RAPPOR"}
    for row in rows:
        assert 0.0 <= row["recall"] <= 1.0
        assert 0.0 <= row["in_top_k"] <= row["precision"] <= 1.0
    assert "Frequent strings" in stdout


def test_longitudinal_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_longitudinal.py", tmp_path)
    assert len(rows) == 6
    for row in rows:
        assert row["rows_per_s_memoized_v3"] > 0  # both memo key schemes measured
        # A person's nights under one memo: every instantaneous response (issue 36), no less
        # than the same nights of fresh reports.
        assert row["charged_memoized"] >= row["charged_fresh"] * (1 - 1e-9)
        assert row["charged_fresh"] == pytest.approx(row["nights"] * row["epsilon_1"])
        assert row["se_memoized"] < row["se_fresh_same_year"]
    assert "Nightly collections" in stdout


def test_speed_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_speed.py", tmp_path)
    cases = {(row["case"], row["threads"]) for row in rows if "cpu_s" in row}
    assert {("keystream", 1), ("rappor_client", 2), ("krr_frame", 1), ("krr_plain", 1)} <= cases
    assert "randomized bits per keystream byte-time" in stdout
    assert "k-RR on a frame / plain pandas + numpy" in stdout


def test_report_ops_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_report_ops.py", tmp_path)
    assert {(row["reports"], row["operation"]) for row in rows} >= {
        ("krr", "value_counts"),
        ("rappor", "to_csv"),
    }
    assert all(row["report_s"] >= 0 for row in rows)
    assert "ratio" in stdout


def test_numeric_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_numeric.py", tmp_path)
    speed = {row["mechanism"]: row for row in rows if row["table"] == "speed"}
    assert set(speed) == {
        "k-RR (k = 16)",
        "duchi",
        "piecewise",
        "hybrid",
        "stochastic_rounding",
        "square_wave",
    }
    assert all(row["client_s_per_million"] > 0 for row in speed.values())
    variance = [row for row in rows if row["table"] == "variance"]
    assert len(variance) == 4
    assert all(0 < row["ratio"] < 10 and 0 <= row["coverage"] <= 1 for row in variance)
    methods = {row["method"].split(" ")[0] for row in rows if row["table"] == "distribution"}
    assert methods == {"square_wave", "bucketize"}
    assert "Distribution of fare" in stdout


def test_multiple_columns_benchmark_quick_run(tmp_path: Path) -> None:
    rows, stdout = _quick_run("bench_multiple_columns.py", tmp_path)
    assert {row["strategy"] for row in rows} == {"split", "sample", "sample+fake", "sample+prior"}
    assert all(row["total"] > 0 and row["formula"] > 0 for row in rows)
    assert "x split" in stdout
