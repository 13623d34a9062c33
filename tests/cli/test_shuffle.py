"""``frameldp shuffle``: the shuffler for report files, through its real entry points."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import frameldp
from frameldp.cli import app
from frameldp.cli._report_file import read_report_file
from frameldp.cli.estimate import estimate_file
from frameldp.datasets import FLIGHTS_DOMAINS, load_flights

ROWS = 4000


def _read(path: Path) -> pd.DataFrame:
    """A report file as pandas, as a user reads it: binary (RAPPOR) columns stay Arrow binary,
    and the recorded mechanisms (and shuffle) come back from the pandas attrs."""
    table = pq.read_table(path)
    binary = [
        i
        for i, field in enumerate(table.schema)
        if pa.types.is_fixed_size_binary(field.type) or pa.types.is_binary(field.type)
    ]
    for i in binary:
        table = table.set_column(i, table.field(i).name, table.column(i).cast(pa.binary()))
    frame = table.to_pandas(
        types_mapper=lambda t: pd.ArrowDtype(t) if pa.types.is_binary(t) else None,
        ignore_metadata=True,
    )
    attrs = (table.schema.metadata or {}).get(b"PANDAS_ATTRS")
    frame.attrs = json.loads(attrs) if attrs else {}
    return frame


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


def test_a_plain_parquet_shuffle_amplifies_debias_in_pandas(tmp_path: Path) -> None:
    """A file that records no mechanism (reports made elsewhere) shuffled to Parquet records
    its shuffle for pandas: debias with the mechanism carries the amplified guarantee."""
    raw, out = tmp_path / "raw.parquet", tmp_path / "out.parquet"
    load_flights().head(2000)[["carrier"]].to_parquet(raw)
    result = CliRunner().invoke(app, ["shuffle", str(raw), str(out), "--column", "carrier"])
    assert result.exit_code == 0, result.output
    mechanism = frameldp.RandomizedResponse(1.0, domain=FLIGHTS_DOMAINS["carrier"])
    table = pd.read_parquet(out).ldp.debias("carrier", mechanism)
    assert table.privacy is not None
    assert table.privacy.shuffled
    assert table.n == 2000


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


# ------------------------------------------------------------- the CSV pipeline, end to end


def _pipeline(tmp_path: Path, kind: str) -> tuple[Path, Path, CliRunner]:
    """``privatize in.KIND rel.KIND`` then ``shuffle rel.KIND shuffled.KIND``, seeded."""
    frame = load_flights().drop(columns="services").head(ROWS)
    source = tmp_path / f"in.{kind}"
    if kind == "csv":
        frame.to_csv(source, index=False)
    else:
        frame.to_parquet(source, index=False)
    for column in ("dest", "carrier"):
        (tmp_path / f"{column}.txt").write_text("\n".join(FLIGHTS_DOMAINS[column]))
    release, shuffled = tmp_path / f"rel.{kind}", tmp_path / f"shuffled.{kind}"
    args = [
        *("privatize", str(source), str(release)),
        *("--column", "dest", "--mechanism", "rappor", "--epsilon", "2"),
        *("--domain-file", str(tmp_path / "dest.txt")),
        *("--column", "carrier", "--mechanism", "krr", "--epsilon", "2"),
        *("--domain-file", str(tmp_path / "carrier.txt")),
        *("--column", "origin", "--mechanism", "bloom", "--epsilon", "2"),
        *("--epsilon-infinity", "4", "--seed", "5"),
    ]
    runner = CliRunner()
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    return release, shuffled, runner


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_privatize_shuffle_estimate_pipeline(tmp_path: Path, kind: str) -> None:
    """The CSV pipeline works like the Parquet one: shuffle reads the sidecar, writes one bound
    to its output and prints the central epsilon; estimate reports the amplified guarantee and
    the same tables as the unshuffled release (counts do not depend on the order)."""
    release, shuffled, runner = _pipeline(tmp_path, kind)
    args = ["shuffle", str(release), str(shuffled), "--key-file", _key(tmp_path)]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    assert f"wrote {ROWS} shuffled rows" in done.output
    assert "central ε" in done.output
    local = read_report_file(release)
    after = read_report_file(shuffled)
    assert after.specs == local.specs
    assert after.shuffled["reports"] == ROWS
    assert after.shuffled["kept"] == []
    expected = frameldp.amplify_by_shuffling(local.guarantee, ROWS)
    assert f"central ε = {expected.epsilon_at(1e-6):.6g}" in done.output
    assert f"for one person: {expected.accountant.profile.summary(1e-6)}" in done.output
    if kind == "csv":
        assert after.hex_columns == ("dest", "origin")
        assert "origin_cohort" in pd.read_csv(shuffled).columns

    for column in ("dest", "carrier"):
        (table,) = estimate_file(shuffled, [column]).tables
        (unshuffled,) = estimate_file(release, [column]).tables
        assert table.privacy.model == "shuffle"
        assert table.privacy.epsilon_at(1e-6) == expected.epsilon_at(1e-6)
        pd.testing.assert_frame_equal(table.to_pandas(), unshuffled.to_pandas())
    candidates = tmp_path / "airports.txt"
    candidates.write_text("\n".join(FLIGHTS_DOMAINS["origin"]))
    shown = runner.invoke(app, ["estimate", str(shuffled), "--candidates-file", str(candidates)])
    assert shown.exit_code == 0, shown.output
    assert "(shuffle model)" in shown.output


def test_the_csv_pipeline_gives_the_parquet_pipelines_tables(tmp_path: Path) -> None:
    """Same seeds, same reports, same order: the shuffled CSV estimates are the shuffled Parquet
    estimates to the last bit, with the same guarantee."""
    tables = {}
    for kind in ("csv", "parquet"):
        folder = tmp_path / kind
        folder.mkdir()
        release, shuffled, runner = _pipeline(folder, kind)
        done = runner.invoke(app, ["shuffle", str(release), str(shuffled), "--seed", "9"])
        assert done.exit_code == 0, done.output
        tables[kind] = estimate_file(shuffled, ["dest", "carrier"]).tables
    for csv_table, parquet_table in zip(tables["csv"], tables["parquet"], strict=True):
        assert csv_table.privacy == parquet_table.privacy
        pd.testing.assert_frame_equal(csv_table.to_pandas(), parquet_table.to_pandas())


def test_a_seeded_shuffle_is_marked_insecure(report_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "shuffled.csv"
    done = CliRunner().invoke(app, ["shuffle", str(report_file), str(out), "--seed", "2"])
    assert done.exit_code == 0, done.output
    assert "INSECURE" in done.output
    assert json.loads(out.with_name("shuffled.csv.frameldp.json").read_text())["shuffled"]["seeded"]
    (table,) = estimate_file(out, ["carrier"]).tables
    assert table.privacy.seeded


def _key(tmp_path: Path) -> str:
    key = tmp_path / "order.key"
    key.write_bytes(bytes(range(32)))
    return str(key)


def test_a_release_file_records_its_rows_and_is_shuffled_only_whole(tmp_path: Path) -> None:
    """``frameldp privatize`` writes each report column's row count and fingerprint into the
    file when it is complete (its ``frameldp`` metadata and the Parquet report types), so pandas
    can shuffle the file as read, and a copy holding half of its rows twice (the same count) is
    refused by ``frameldp shuffle`` and by pandas alike."""
    release, shuffled, runner = _pipeline(tmp_path, "parquet")
    specs = read_report_file(release).specs
    assert {spec["rows"] for spec in specs.values()} == {ROWS}
    assert pd.read_parquet(release).ldp.shuffle().ldp.privacy.model == "shuffle"

    table = pq.read_table(release)
    half = table.slice(0, ROWS // 2)
    doubled = tmp_path / "doubled.parquet"
    pq.write_table(pa.concat_tables([half, half]), doubled)
    done = runner.invoke(app, ["shuffle", str(doubled), str(shuffled), "--seed", "9"])
    assert done.exit_code != 0
    assert f"not the {ROWS} rows of its release" in done.output
    assert not shuffled.exists()
    with pytest.raises(frameldp.ParameterError, match="not the 4000 rows"):
        pd.read_parquet(doubled).ldp.shuffle()


def test_a_malformed_record_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """A CSV release whose sidecar records a row count that is no count: a frameldp error, and
    no output (the guarantee is computed before the file is written)."""
    release, shuffled, runner = _pipeline(tmp_path, "csv")
    beside = release.with_name(release.name + ".frameldp.json")
    data = json.loads(beside.read_text())
    data["mechanisms"]["carrier"]["rows"] = "x"
    beside.write_text(json.dumps(data))
    done = runner.invoke(app, ["shuffle", str(release), str(shuffled), "--seed", "9"])
    assert done.exit_code != 0
    assert "recorded row count" in done.output
    assert not shuffled.exists()
