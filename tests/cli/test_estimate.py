"""``frameldp estimate``: tables from a self-describing report file, equal to
``reports.ldp.debias(column)`` on the in-memory reports to the last bit, streamed in batches;
``--out``, ``--plot``, Bloom RAPPOR candidates and one-line errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import frameldp
from frameldp.accounting.guarantee import INSECURE
from frameldp.cli.estimate import estimate_file
from frameldp.core.encoding import Domain
from frameldp.datasets import FLIGHTS_DOMAINS

from .conftest import (
    PNG_SIGNATURE,
    ROWS,
    SEED,
    MakeInput,
    assert_user_error,
    flights,
    in_memory,
    invoke,
    leftovers,
    mechanism,
    options,
    script_environment,
    seeded,
)

NUMBERS = ["count", "frequency", "std_error", "ci_low", "ci_high"]
CANDIDATES = list(FLIGHTS_DOMAINS["origin"])


def assert_same_table(found: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Same categories in the same order; every number equal to the last bit."""
    assert [str(c) for c in found["category"]] == [str(c) for c in expected["category"]]
    for name in NUMBERS:
        assert np.array_equal(found[name].to_numpy(), expected[name].to_numpy()), name


@pytest.fixture(params=["parquet", "csv"])
def release(
    request: pytest.FixtureRequest,
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
) -> tuple[Path, pd.DataFrame]:
    """A release (Parquet or CSV) of dest (RAPPOR), carrier (k-RR, epsilon 2) and origin (Bloom
    RAPPOR) written by the command, and the same release made in memory."""
    target = tmp_path / f"release.{request.param}"
    run = invoke(
        "privatize",
        make_input("parquet"),
        target,
        *options("rappor", "dest", domains),
        *options("krr", "carrier", domains, epsilon=2.0),
        *options("bloom", "origin", domains),
        "--seed",
        SEED,
    )
    assert run.exit_code == 0, run.stderr
    mechanisms = {
        "dest": mechanism("rappor", "dest"),
        "carrier": mechanism("krr", "carrier", 2.0),
        "origin": mechanism("bloom", "origin"),
    }
    return target, in_memory(flights(), mechanisms)


@pytest.mark.parametrize("chunk_rows", [7, 1_000_000])
def test_estimates_equal_debias_of_the_in_memory_reports(
    release: tuple[Path, pd.DataFrame], chunk_rows: int
) -> None:
    """Counts summed batch by batch (7 rows, or the whole file) give exactly the estimate of
    the whole column; the table carries the mechanism's guarantee."""
    path, reference = release
    found = estimate_file(path, chunk_rows=chunk_rows)
    assert found.rows == ROWS
    assert [t.column for t in found.tables] == ["dest", "carrier"]  # Bloom needs candidates
    for table in found.tables:
        expected = reference.ldp.debias(table.column)
        assert table.n == ROWS
        assert table.privacy == seeded(expected.privacy)  # a --seed release: marked insecure
        assert table.mechanism.to_spec() == expected.mechanism.to_spec()
        assert_same_table(table.to_pandas(), expected.to_pandas())


@pytest.mark.parametrize("release", ["parquet"], indirect=True)  # CSV: see the next test
def test_bloom_columns_are_decoded_against_candidates(release: tuple[Path, pd.DataFrame]) -> None:
    path, reference = release
    found = estimate_file(path, ["origin"], candidates=CANDIDATES, chunk_rows=500)
    expected = reference.ldp.decode("origin", candidates=CANDIDATES)
    (table,) = found.tables
    assert table.privacy == seeded(expected.privacy)
    pd.testing.assert_frame_equal(table.to_pandas(), expected.to_pandas(), check_exact=True)


def test_bloom_column_of_a_csv_release_is_decoded(make_input: MakeInput, tmp_path: Path) -> None:
    target = tmp_path / "release.csv"
    args = ["privatize", make_input("parquet"), target, *options("bloom", "origin", {})]
    assert invoke(*args, "--seed", SEED).exit_code == 0
    (tmp_path / "candidates.txt").write_text("\n".join(CANDIDATES))
    run = invoke("estimate", target, "--candidates-file", tmp_path / "candidates.txt")
    assert run.exception is None, repr(run.exception)
    assert run.exit_code == 0, run.stderr


def test_bloom_only_release_needs_candidates(make_input: MakeInput, tmp_path: Path) -> None:
    target = tmp_path / "release.parquet"
    args = ["privatize", make_input("parquet"), target, *options("bloom", "origin", {})]
    assert invoke(*args).exit_code == 0
    assert_user_error(invoke("estimate", target), "only open-domain columns", "--candidates-file")
    run = invoke("estimate", target, "--column", "origin")
    assert_user_error(run, "column 'origin'", "--candidates-file")
    (tmp_path / "candidates.txt").write_text("\n".join(CANDIDATES) + "\n\n")
    run = invoke("estimate", target, "--candidates-file", tmp_path / "candidates.txt")
    assert run.exit_code == 0, run.stderr
    assert run.stdout.startswith(f"origin: BloomRappor, n = {ROWS}")


def test_command_prints_a_table_per_column(release: tuple[Path, pd.DataFrame]) -> None:
    path, reference = release
    run = invoke("estimate", path, "--top", 3, "--delta", 1e-9)
    assert run.exit_code == 0, run.stderr
    assert run.stderr == ""
    lines = run.stdout.splitlines()
    for column, name, more in (("dest", "Rappor", 97), ("carrier", "RandomizedResponse", 9)):
        epsilon = reference.ldp.debias(column).privacy.epsilon_at(1e-9)
        title = (
            f"{column}: {name}, n = {ROWS}, ε = {epsilon:.4g} at δ = 1e-09 (local model) "
            f"[{INSECURE}]"
        )
        at = lines.index(title)
        body = [line for line in lines[at + 1 : at + 9] if line.startswith("│")]
        top = reference.ldp.debias(column).to_pandas().sort_values("count", ascending=False)
        assert [row.split("│")[1].strip() for row in body] == list(top["category"][:3])
        assert f"{more} more rows (--out writes them all)" in lines[at + 1 : at + 10]


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_out_holds_every_row_of_every_table(
    release: tuple[Path, pd.DataFrame], tmp_path: Path, kind: str
) -> None:
    path, reference = release
    out = tmp_path / f"table.{kind}"
    run = invoke("estimate", path, "--out", out, "--level", 0.9)
    assert run.exit_code == 0, run.stderr
    assert run.stdout.splitlines()[-1] == f"wrote {100 + 12} rows to {out}"
    table = pd.read_csv(out, dtype={"category": str}) if kind == "csv" else pd.read_parquet(out)
    assert list(table.columns) == ["column", "category", *NUMBERS]
    assert table["column"].tolist() == ["dest"] * 100 + ["carrier"] * 12
    for column in ("dest", "carrier"):
        expected = reference.ldp.debias(column, level=0.9).to_pandas()
        rows = table[table["column"] == column].reset_index(drop=True)
        assert_same_table(rows, expected)
    assert leftovers(tmp_path) == []


def test_plot_writes_a_png(release: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    path, _ = release
    plot = tmp_path / "dest.png"
    run = invoke("estimate", path, "--column", "dest", "--plot", plot)
    assert run.exit_code == 0, run.stderr
    assert run.stdout.splitlines()[-1] == f"wrote the plot to {plot}"
    assert plot.read_bytes()[:8] == PNG_SIGNATURE


def test_a_report_file_written_by_pandas_is_read_from_its_attrs(
    make_input: MakeInput, tmp_path: Path
) -> None:
    """``reports.to_parquet`` of a privatized frame records the mechanisms in PANDAS_ATTRS only;
    a shuffled frame also records its shuffle, and the tables carry the amplified guarantee."""
    mechanisms = {"carrier": mechanism("krr", "carrier")}
    reports = in_memory(flights(), mechanisms)
    shuffled = reports.ldp.shuffle(seed=SEED)
    for frame, name in ((reports, "reports.parquet"), (shuffled, "shuffled.parquet")):
        frame.to_parquet(tmp_path / name)
        (table,) = estimate_file(tmp_path / name).tables
        expected = frame.ldp.debias("carrier")
        assert table.privacy == expected.privacy
        assert_same_table(table.to_pandas(), expected.to_pandas())
    assert table.privacy.model == "shuffle"


@pytest.mark.parametrize(
    "labels",
    [
        "null-bucket",
        "null-bucket-alone",
        "integers",
    ],
)
def test_csv_report_labels_read_back_as_written(tmp_path: Path, labels: str) -> None:
    """k-RR labels of a CSV release: the null bucket (an empty cell, beside a kept column or
    alone on its line) and integer labels (read as integers, not text) are counted in their own
    buckets, as in memory."""
    if labels.startswith("null-bucket"):
        frame = flights().astype({"carrier": object})
        frame.loc[::7, "carrier"] = None
        column, categories = "carrier", list(FLIGHTS_DOMAINS["carrier"])
        domain = Domain.coerce(categories, unknown=None, nulls="category")
        extra = ["--nulls", "category"] + (["--keep", "delay"] if labels == "null-bucket" else [])
    else:
        frame = pd.DataFrame({"hour": np.arange(ROWS) % 24})
        column, categories = "hour", list(range(24))
        domain = Domain.coerce(categories, unknown=None, nulls=None)
        extra = []
    source = tmp_path / "input.parquet"
    frame.to_parquet(source, index=False)
    (tmp_path / "domain.txt").write_text("\n".join(map(str, categories)))
    target = tmp_path / "release.csv"
    run = invoke(
        "privatize",
        source,
        target,
        *("--column", column, "--mechanism", "krr", "--epsilon", 3),
        *("--domain-file", tmp_path / "domain.txt", "--seed", SEED, *extra),
    )
    assert run.exit_code == 0, run.stderr
    reference = in_memory(frame, {column: frameldp.RandomizedResponse(3.0, domain=domain)})
    found = estimate_file(target)
    assert found.rows == ROWS
    expected = reference.ldp.debias(column).to_pandas()
    table = found.tables[0].to_pandas()
    assert list(table["category"]) == list(expected["category"])
    for name in NUMBERS:
        assert np.array_equal(table[name].to_numpy(), expected[name].to_numpy()), name


def _report_file_without_metadata(tmp_path: Path) -> Path:
    path = tmp_path / "plain.parquet"
    flights(10).to_parquet(path)
    return path


def _newer_format(tmp_path: Path, release: Path) -> Path:
    table = pq.read_table(release)
    metadata = dict(table.schema.metadata)
    data = json.loads(metadata[b"frameldp"])
    metadata[b"frameldp"] = json.dumps({**data, "format": 99}).encode()
    path = tmp_path / "newer.parquet"
    pq.write_table(table.replace_schema_metadata(metadata), path)
    return path


def _csv_without_sidecar(tmp_path: Path) -> Path:
    path = tmp_path / "bare.csv"
    path.write_text("carrier\nAA\nDL\n")
    return path


def _corrupt_parquet(tmp_path: Path) -> Path:
    path = tmp_path / "corrupt.parquet"
    path.write_bytes(b"PAR1 this is not a parquet file")
    return path


def _csv_with_a_broken_sidecar(tmp_path: Path) -> Path:
    path = _csv_without_sidecar(tmp_path)
    path.with_name("bare.csv.frameldp.json").write_text("{not json")
    return path


@pytest.mark.parametrize(
    ("case", "arguments", "fragments"),
    [
        ("missing", [], ["reports", "missing.parquet", "no such file"]),
        ("plain", [], ["plain.parquet", "no frameldp metadata"]),
        ("newer", [], ["newer.parquet", "newer frameldp", "format 99"]),
        ("bare", [], ["bare.csv", "no frameldp metadata file", "bare.csv.frameldp.json"]),
        ("corrupt", [], ["reports", "corrupt.parquet", "cannot read it as parquet"]),
        ("bad-sidecar", [], ["bare.csv", "bare.csv.frameldp.json", "not valid JSON"]),
        ("release", ["--column", "nope"], ["column 'nope' not found"]),
        ("release", ["--plot", "plot.jpg"], ["--plot", "plot.jpg", ".png"]),
        ("release", ["--out", "table.txt"], ["--out", "table.txt", ".csv or .parquet"]),
        ("release", ["--out", "nowhere/table.csv"], ["--out", "directory", "not found"]),
        ("release", ["--level", "1.5"], ["level", "1.5"]),
        ("release", ["--candidates-file", "nowhere.txt"], ["nowhere.txt"]),
    ],
    ids=[
        "missing-file",
        "no-metadata",
        "newer-format",
        "csv-without-sidecar",
        "corrupt-parquet",
        "sidecar-not-json",
        "unknown-column",
        "plot-suffix",
        "out-suffix",
        "out-directory",
        "bad-level",
        "missing-candidates-file",
    ],
)
def test_mistakes_are_one_line_errors_and_write_nothing(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    case: str,
    arguments: list[str],
    fragments: list[str],
) -> None:
    release = tmp_path / "release.parquet"
    args = ["privatize", make_input("parquet"), release, *options("krr", "carrier", domains)]
    assert invoke(*args).exit_code == 0
    path = {
        "missing": lambda: tmp_path / "missing.parquet",
        "plain": lambda: _report_file_without_metadata(tmp_path),
        "newer": lambda: _newer_format(tmp_path, release),
        "bare": lambda: _csv_without_sidecar(tmp_path),
        "corrupt": lambda: _corrupt_parquet(tmp_path),
        "bad-sidecar": lambda: _csv_with_a_broken_sidecar(tmp_path),
        "release": lambda: release,
    }[case]()
    before = sorted(p.name for p in tmp_path.iterdir())
    args = [str(tmp_path / a) if a.endswith((".jpg", ".txt", ".csv")) else a for a in arguments]
    assert_user_error(invoke("estimate", path, *args), *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("release", ["parquet"], indirect=True)
def test_a_failed_plot_leaves_no_out_file(
    release: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    path, _ = release
    out = tmp_path / "table.csv"
    run = invoke("estimate", path, "--out", out, "--plot", tmp_path / "nowhere" / "plot.png")
    assert run.exit_code == 1
    assert not out.exists()


@pytest.mark.parametrize("release", ["parquet"], indirect=True)
def test_a_bad_delta_is_a_one_line_error_before_anything_is_written(
    release: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    path, _ = release
    out = tmp_path / "table.csv"
    run = invoke("estimate", path, "--delta", 0, "--out", out)
    assert not out.exists()
    assert_user_error(run, "delta", "0")


def test_installed_command_estimates(
    script: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """``frameldp estimate`` as a user runs it, on a release of ``frameldp privatize``."""
    release = tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        make_input("parquet"),
        release,
        *options("krr", "carrier", domains),
        "--seed",
        SEED,
    )
    assert run.exit_code == 0, run.stderr
    out = tmp_path / "table.parquet"
    done = subprocess.run(
        [script, "estimate", str(release), "--out", str(out)],
        capture_output=True,
        encoding="utf-8",
        env=script_environment(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"carrier: RandomizedResponse, n = {ROWS}" in done.stdout
    reference = in_memory(flights(), {"carrier": mechanism("krr", "carrier")})
    expected = reference.ldp.debias("carrier").to_pandas()
    assert_same_table(pd.read_parquet(out).drop(columns="column"), expected)
