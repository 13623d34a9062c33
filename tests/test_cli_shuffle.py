"""``frameldp shuffle``: the shuffler for report files, through its real entry points."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import frameldp
from frameldp.cli import app
from frameldp.cli.shuffle import _read
from frameldp.datasets import FLIGHTS_DOMAINS, load_flights

ROWS = 4000


def _rows(frame: pd.DataFrame) -> list[tuple[object, str]]:
    return sorted(zip(frame["dest"].astype(object), frame["carrier"].astype(str), strict=True))


@pytest.fixture
def report_file(tmp_path: Path) -> Path:
    df = load_flights().head(ROWS)
    reports = df.ldp.privatize(
        {
            "dest": frameldp.Rappor(2.0, domain=FLIGHTS_DOMAINS["dest"]),
            "carrier": frameldp.RandomizedResponse(2.0, domain=FLIGHTS_DOMAINS["carrier"]),
        },
        seed=1,
    )
    path = tmp_path / "reports.parquet"
    reports.to_parquet(path)
    return path


def test_shuffle_parquet_keeps_report_columns_and_records_amplification(
    report_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "shuffled.parquet"
    result = CliRunner().invoke(app, ["shuffle", str(report_file), str(out), "--seed", "2"])
    assert result.exit_code == 0, result.output
    assert "central ε" in result.output
    shuffled = _read(out)
    assert list(shuffled.columns) == ["dest", "carrier"]
    assert len(shuffled) == ROWS
    original = _read(report_file)
    # Same multiset of rows, in another order.
    key = ["dest", "carrier"]
    assert _rows(shuffled) == _rows(original[key])
    assert not shuffled["carrier"].astype(str).equals(original["carrier"].astype(str))
    guarantee = shuffled.ldp.privacy
    assert guarantee.model == "shuffle"
    assert guarantee.parameters["reports"] == ROWS
    expected = frameldp.amplify_by_shuffling(original.ldp.privacy, ROWS).epsilon_at(1e-6)
    assert guarantee.epsilon_at(1e-6) == expected
    table = shuffled.ldp.debias("carrier")
    assert table.privacy.model == "shuffle"


def test_same_seed_same_order(report_file: Path, tmp_path: Path) -> None:
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for path in paths:
        result = CliRunner().invoke(app, ["shuffle", str(report_file), str(path), "--seed", "7"])
        assert result.exit_code == 0, result.output
    first, second = (_read(path) for path in paths)
    assert first["carrier"].astype(str).tolist() == second["carrier"].astype(str).tolist()


def test_keep_warns_and_leaves_the_local_guarantee(report_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "kept.parquet"
    args = ["shuffle", str(report_file), str(out), "--keep", "passenger_id", "--seed", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "passenger_id" in result.output
    assert "does not hold" in result.output
    kept = _read(out)
    assert "passenger_id" in kept.columns
    assert kept.ldp.privacy.model == "local"


def test_csv_needs_columns_and_shuffles_them(tmp_path: Path) -> None:
    raw = tmp_path / "raw.csv"
    load_flights().head(500).to_csv(raw, index=False)
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(app, ["shuffle", str(raw), str(out)])
    assert result.exit_code == 1
    assert "--column" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()
    result = CliRunner().invoke(app, ["shuffle", str(raw), str(out), "--column", "carrier"])
    assert result.exit_code == 0, result.output
    shuffled = pd.read_csv(out)
    assert list(shuffled.columns) == ["carrier"]
    assert sorted(shuffled["carrier"]) == sorted(pd.read_csv(raw)["carrier"])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.parquet", "out.parquet"], "missing.parquet"),
        (["raw.csv", "out.parquet", "--column", "nope"], "'nope'"),
        (["raw.csv", "out.txt", "--column", "carrier"], ".csv or .parquet"),
        (["raw.csv", "out.csv", "--column", "carrier", "--key-file", "short.key"], "32 bytes"),
    ],
)
def test_user_mistakes_are_one_line_errors(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    load_flights().head(100).to_csv(tmp_path / "raw.csv", index=False)
    (tmp_path / "short.key").write_bytes(b"123")
    args = [
        str(tmp_path / a) if a.endswith((".csv", ".parquet", ".txt", ".key")) else a
        for a in arguments
    ]
    result = CliRunner().invoke(app, ["shuffle", *args])
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output
    assert list(tmp_path.glob("out.*")) == []
    assert list(tmp_path.glob(".out*")) == []


def test_installed_command(report_file: Path, tmp_path: Path) -> None:
    """`frameldp shuffle` as a user runs it (the console script of the installed package)."""
    command = shutil.which("frameldp", path=str(Path(sys.executable).parent))
    assert command is not None
    out = tmp_path / "shuffled.parquet"
    key = tmp_path / "secret.key"
    key.write_bytes(bytes(range(32)))
    done = subprocess.run(
        [command, "shuffle", str(report_file), str(out), "--key-file", str(key)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 4000 shuffled rows" in done.stdout
    assert len(_read(out)) == ROWS
