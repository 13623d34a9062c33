"""Self-describing report files (Parquet key-value metadata, the CSV sidecar) read back by
pandas, polars and ``frameldp.cli._files``; atomic writes, hex reports, batches and keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import frameldp
from _releases import without_release_records
from frameldp._atomic import HOST, atomic, remove_stale
from frameldp.accounting import Ledger, PrivacyGuarantee, compose
from frameldp.cli._inputs import batches, file_digest, file_kind, read_key, sidecar
from frameldp.cli._metadata import FORMAT
from frameldp.cli._report_file import read_report_file
from frameldp.core.mechanisms import mechanism_from_spec
from frameldp.datasets import FLIGHTS_DOMAINS
from frameldp.errors import DomainError, ParameterError
from frameldp.frames.batches import from_hex, to_hex
from frameldp.frames.report_type import ReportType

from .conftest import (
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
    released,
    seeded,
)

CANDIDATES = list(FLIGHTS_DOMAINS["origin"])


def _mechanisms() -> dict[
    str, frameldp.Rappor | frameldp.RandomizedResponse | frameldp.BloomRappor
]:
    return {
        "dest": mechanism("rappor", "dest"),
        "carrier": mechanism("krr", "carrier", 2.0),
        "origin": mechanism("bloom", "origin"),
    }


@pytest.fixture
def releases(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> tuple[Path, Path, pd.DataFrame]:
    """The same release (dest RAPPOR, carrier k-RR, origin Bloom RAPPOR, delay kept) written as
    Parquet and as CSV by the command, and made in memory."""
    source = make_input("parquet")
    paths = tmp_path / "release.parquet", tmp_path / "release.csv"
    for target in paths:
        run = invoke(
            "privatize",
            source,
            target,
            *options("rappor", "dest", domains),
            *options("krr", "carrier", domains, epsilon=2.0),
            *options("bloom", "origin", domains),
            "--keep",
            "delay",
            "--seed",
            SEED,
            "--chunk-rows",
            1000,
        )
        assert run.exit_code == 0, run.stderr
    return *paths, in_memory(flights(), _mechanisms())


def _metadata(path: Path) -> dict[bytes, bytes]:
    return dict(pq.read_schema(path).metadata)


# ------------------------------------------------------------------------------- Parquet


def test_parquet_metadata_holds_the_specs_and_the_guarantee(
    releases: tuple[Path, Path, pd.DataFrame],
) -> None:
    parquet, _, reference = releases
    metadata = _metadata(parquet)
    data = json.loads(metadata[b"frameldp"])
    assert data["format"] == FORMAT == 1
    assert data["hex"] == []
    specs = reference.ldp.specs
    assert without_release_records(data["mechanisms"]) == without_release_records(specs)
    assert list(data["mechanisms"]) == ["dest", "carrier", "origin"]
    releases = {spec["release"] for spec in data["mechanisms"].values()}
    assert len(releases) == 1  # one release id for the file's columns
    assert data["mechanisms"]["origin"]["cohort_column"] == "origin_cohort"
    guarantee = PrivacyGuarantee.from_dict(data["guarantee"])
    mechanisms = _mechanisms()
    parts = [mechanisms["dest"].privacy, mechanisms["carrier"].privacy]
    # A --seed release: the guarantee is marked insecure.
    assert guarantee == seeded(compose([*parts, mechanisms["origin"].guarantee(None)]))
    # The frame composes its columns in column order, the file in --column order.
    in_frame = seeded(reference.ldp.privacy)
    assert sorted(guarantee.parts, key=repr) == sorted(in_frame.parts, key=repr)
    assert guarantee.epsilon == in_frame.epsilon
    assert guarantee.epsilon == pytest.approx(4.0)
    assert b"PANDAS_ATTRS" not in metadata  # pandas reads the mechanisms from the column types


def test_parquet_column_types(releases: tuple[Path, Path, pd.DataFrame]) -> None:
    """Report columns are of the report type recording their spec: RAPPOR reports over
    binary, k-RR labels over text, cohorts over integers; the kept column is as it was."""
    parquet, _, reference = releases
    schema = pq.read_schema(parquet)
    assert schema.names == ["origin", "origin_cohort", "dest", "carrier", "delay"]
    types = {name: schema.field(name).type for name in schema.names[:4]}
    assert all(isinstance(kind, ReportType) for kind in types.values())
    assert types["dest"].storage_type == pa.large_binary()
    assert types["origin"].storage_type == pa.large_binary()
    assert pa.types.is_integer(types["origin_cohort"].storage_type)
    assert types["carrier"].storage_type == pa.large_string()
    assert types["origin_cohort"].metadata.column == "origin"
    assert types["origin_cohort"].metadata.part == 1
    specs = without_release_records(reference.ldp.specs)
    for name in ("origin", "dest", "carrier"):
        assert without_release_records({name: types[name].metadata.spec}) == {name: specs[name]}
    dest = pq.read_table(parquet, columns=["dest"]).column("dest").chunk(0).storage
    assert set(pc.binary_length(dest).to_pylist()) == {13}  # ceil(100 / 8)
    carriers = pq.read_table(parquet, columns=["carrier"]).column("carrier").chunk(0).storage
    assert set(carriers.to_pylist()) <= set(FLIGHTS_DOMAINS["carrier"])


def test_pandas_reads_a_release_that_debiases_itself(
    releases: tuple[Path, Path, pd.DataFrame],
) -> None:
    """``pd.read_parquet(OUT).ldp.debias(col)`` needs no mechanism: the frame's attrs hold
    them, and the tables equal those of the in-memory reports."""
    parquet, _, reference = releases
    back = pd.read_parquet(parquet)
    for column in ("dest", "carrier"):
        found, expected = back.ldp.debias(column), reference.ldp.debias(column)
        assert found.privacy == expected.privacy
        pd.testing.assert_frame_equal(found.to_pandas(), expected.to_pandas(), check_exact=True)
    decoded = back.ldp.decode("origin", candidates=CANDIDATES)
    expected = reference.ldp.decode("origin", candidates=CANDIDATES)
    pd.testing.assert_frame_equal(decoded.to_pandas(), expected.to_pandas(), check_exact=True)
    assert back.ldp.privacy == reference.ldp.privacy
    assert back["delay"].astype(str).tolist() == flights()["delay"].astype(str).tolist()


def test_polars_reads_the_release(releases: tuple[Path, Path, pd.DataFrame]) -> None:
    parquet, _, reference = releases
    frame = pl.read_parquet(parquet)
    assert frame.columns == ["origin", "origin_cohort", "dest", "carrier", "delay"]
    assert frame.schema["dest"].ext_storage() == pl.Binary
    assert frame.schema["origin"].ext_storage() == pl.Binary
    assert frame.schema["origin_cohort"].ext_storage().is_integer()
    assert frame["dest"].to_list() == released(parquet, "dest")
    for column in ("dest", "carrier"):
        found, expected = frame.ldp.debias(column), reference.ldp.debias(column)
        assert found.privacy == expected.privacy
        pd.testing.assert_frame_equal(found.to_pandas(), expected.to_pandas(), check_exact=True)
    assert frame["carrier"].ext.storage().to_list() == reference["carrier"].astype(str).tolist()
    spec = json.loads(_metadata(parquet)[b"frameldp"])["mechanisms"]["carrier"]
    found = frame.ldp.debias("carrier", mechanism_from_spec(spec))
    expected = reference.ldp.debias("carrier")
    for name in ("count", "std_error"):
        assert np.array_equal(found.to_pandas()[name], expected.to_pandas()[name])


# ----------------------------------------------------------------------------------- CSV


def test_csv_sidecar_holds_the_parquet_metadata_and_lists_hex_columns(
    releases: tuple[Path, Path, pd.DataFrame],
) -> None:
    parquet, csv, _ = releases
    assert sidecar(csv) == csv.with_name("release.csv.frameldp.json")
    data = json.loads(sidecar(csv).read_text())
    expected = json.loads(_metadata(parquet)[b"frameldp"])
    # Two runs, two releases: the same job but for the release ids.
    for record in (data, expected):
        record["mechanisms"] = without_release_records(record["mechanisms"])
    assert data == {**expected, "hex": ["dest", "origin"], "csv": file_digest(csv)}
    assert sorted(p.name for p in csv.parent.glob("release.*")) == [
        "release.csv",
        "release.csv.frameldp.json",
        "release.parquet",
    ]


def test_csv_release_is_the_parquet_release_as_text(
    releases: tuple[Path, Path, pd.DataFrame],
) -> None:
    """Hex reports (lowercase, two digits a byte), labels as text, cohorts as integers; read
    back by ``read_report_file`` they are the Parquet release's reports."""
    parquet, csv, _ = releases
    text = pd.read_csv(csv, dtype=str)
    assert list(text.columns) == ["origin", "origin_cohort", "dest", "carrier", "delay"]
    assert text["dest"].str.fullmatch("[0-9a-f]{26}").all()
    assert text["dest"].tolist() == [r.hex() for r in released(parquet, "dest")]
    assert text["carrier"].tolist() == released(parquet, "carrier")
    assert text["origin_cohort"].astype(int).tolist() == released(parquet, "origin_cohort")
    reports = read_report_file(csv)
    stored = read_report_file(parquet)
    assert reports.kind == "csv"
    assert without_release_records(reports.specs) == without_release_records(stored.specs)
    assert reports.guarantee == stored.guarantee
    assert reports.hex_columns == ("dest", "origin")
    read = list(reports.batches(["dest", "carrier"], chunk_rows=1000))
    assert sum(b.num_rows for b in read) == ROWS
    dest = pa.concat_arrays([b.column("dest") for b in read])
    assert dest.type == pa.binary(13)
    assert dest.to_pylist() == released(parquet, "dest")


@pytest.mark.parametrize("writer", ["pandas", "polars"])
def test_a_frame_written_by_a_frame_library_is_a_report_file(tmp_path: Path, writer: str) -> None:
    """No CLI metadata: the specs are read from the column types; no guarantee is recorded."""
    reports = in_memory(flights(), {"carrier": mechanism("krr", "carrier")})
    if writer == "pandas":
        reports.to_parquet(tmp_path / "reports.parquet")
    else:
        pl.from_pandas(reports).write_parquet(tmp_path / "reports.parquet")
    found = read_report_file(tmp_path / "reports.parquet")
    assert found.specs == reports.ldp.specs
    assert found.guarantee is None
    assert found.hex_columns == ()


def test_a_pandas_file_of_an_earlier_release_is_a_report_file(tmp_path: Path) -> None:
    """Files written by earlier releases recorded the specs in pandas attrs (PANDAS_ATTRS)."""
    spec = mechanism("krr", "carrier").to_spec()
    table = pa.table({"carrier": pa.array(["AA", "DL"]).dictionary_encode()})
    attrs = {"frameldp": {"mechanisms": {"carrier": spec}}}
    pq.write_table(
        table.replace_schema_metadata({b"PANDAS_ATTRS": json.dumps(attrs).encode()}),
        tmp_path / "old.parquet",
    )
    found = read_report_file(tmp_path / "old.parquet")
    assert found.specs == {"carrier": spec}
    back = pd.read_parquet(tmp_path / "old.parquet")
    assert back.ldp.mechanisms == {"carrier": mechanism("krr", "carrier")}
    assert back.ldp.debias("carrier").n == 2


# ------------------------------------------------------------------------- atomic writes


def test_atomic_renames_a_complete_file_onto_the_target(tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    target.write_bytes(b"old")
    with atomic(target) as temporary:
        assert temporary.parent == tmp_path
        assert temporary.name.startswith(".out.parquet.")
        assert temporary.name.endswith(".tmp")
        temporary.write_bytes(b"new")
        assert target.read_bytes() == b"old"
    assert target.read_bytes() == b"new"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt, SystemExit])
def test_atomic_removes_the_temporary_file_on_any_exception(
    tmp_path: Path, error: type[BaseException]
) -> None:
    target = tmp_path / "out.csv"
    target.write_bytes(b"old")

    def write_and_fail() -> None:
        with atomic(target) as temporary:
            temporary.write_bytes(b"partial")
            raise error

    with pytest.raises(error):
        write_and_fail()
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_a_temporary_file_is_named_by_host_and_process(tmp_path: Path) -> None:
    with atomic(tmp_path / "out.csv") as temporary:
        assert temporary.name.startswith(f".out.csv.{HOST}-{os.getpid()}-")


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def test_stale_temporary_files_of_dead_processes_are_removed(tmp_path: Path) -> None:
    """What a SIGKILLed run left (its pid is gone) is removed by the next write in that
    directory; the files of a live process, of another machine, and other files are kept."""
    dead = tmp_path / f".release.csv.{HOST}-{_dead_pid()}-abcd1234.tmp"
    live = tmp_path / f".release.csv.{HOST}-{os.getpid()}-abcd1234.tmp"
    elsewhere = tmp_path / f".release.csv.{'0' * 8 if HOST != '0' * 8 else '1' * 8}-1-x.tmp"
    mine = tmp_path / ".notes.tmp"
    for path in (dead, live, elsewhere, mine):
        path.write_bytes(b"reports and raw kept columns")
    with atomic(tmp_path / "other.parquet") as temporary:
        temporary.write_bytes(b"new")
    assert not dead.exists()
    assert [p.exists() for p in (live, elsewhere, mine)] == [True, True, True]
    assert remove_stale(tmp_path) == []


def test_atomic_refuses_a_directory_before_the_block_runs(tmp_path: Path) -> None:
    (tmp_path / "out.csv").mkdir()
    ran = []
    with (
        pytest.raises(ParameterError, match=r"out\.csv' is a directory"),
        atomic(tmp_path / "out.csv"),
    ):
        ran.append(True)
    assert ran == []
    assert leftovers(tmp_path) == []


def test_a_failed_rename_names_the_target_not_the_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(source: object, target: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "replace", refuse)
    with (
        pytest.raises(OSError, match="cannot replace") as raised,
        atomic(tmp_path / "out.csv") as temporary,
    ):
        temporary.write_bytes(b"new")
    assert "out.csv" in str(raised.value)
    assert ".tmp" not in str(raised.value)
    assert leftovers(tmp_path) == []


# ------------------------------------------------------------------- CSV and sidecar, bound


def _csv_release(source: Path, target: Path, domains: dict[str, Path], epsilon: float) -> Any:
    return invoke(
        "privatize",
        source,
        target,
        *options("krr", "carrier", domains, epsilon=epsilon),
        "--seed",
        SEED,
    )


def _failing_rename(monkeypatch: pytest.MonkeyPatch, fail_at: int) -> list[str]:
    """``os.replace`` that fails at its ``fail_at``-th call onto a release file (CSV or
    sidecar), as a rename onto an immutable file or a crash there would; returns the calls."""
    real = os.replace
    calls: list[str] = []

    def replace(source: Any, target: Any) -> None:
        name = Path(target).name
        if name.startswith("release.csv"):
            calls.append(name)
            if len(calls) == fail_at:
                raise PermissionError(1, "Operation not permitted", str(target))
        real(source, target)

    monkeypatch.setattr(os, "replace", replace)
    return calls


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_a_csv_is_never_read_with_another_runs_metadata(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fail_at: int,
) -> None:
    """A second release (epsilon 2) over a first (epsilon 1) stopped at each rename of the
    pair: the CSV in place always reads with the metadata of the run that wrote it."""
    source = make_input("parquet")
    target = tmp_path / "release.csv"
    assert _csv_release(source, target, domains, 1.0).exit_code == 0
    first = target.read_bytes()
    reference = tmp_path / "second" / "release.csv"  # what the second run writes, undisturbed
    reference.parent.mkdir()
    assert _csv_release(source, reference, domains, 2.0).exit_code == 0
    second = reference.read_bytes()
    assert first != second

    calls = _failing_rename(monkeypatch, fail_at)
    run = _csv_release(source, target, domains, 2.0)
    monkeypatch.undo()
    assert len(calls) >= fail_at  # the run did reach that rename
    found = read_report_file(target)
    epsilon = found.specs["carrier"]["epsilon"]
    if target.read_bytes() == first:
        assert epsilon == 1.0
        assert run.exit_code == 1
        assert "release.csv" in run.stderr
    else:
        assert target.read_bytes() == second
        assert epsilon == 2.0
    assert leftovers(tmp_path) == []


def test_a_csv_whose_sidecar_describes_other_bytes_is_refused(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "release.csv"
    assert _csv_release(make_input("parquet"), target, domains, 1.0).exit_code == 0
    lines = target.read_text().splitlines()
    target.write_text("\n".join([lines[0], lines[2], lines[1], *lines[3:]]) + "\n")
    with pytest.raises(ParameterError, match="describes another CSV file"):
        read_report_file(target)
    run = invoke("estimate", target)
    assert run.exit_code == 1
    assert "release.csv.frameldp.json" in run.stderr
    data = json.loads(sidecar(target).read_text())
    del data["csv"]
    sidecar(target).write_text(json.dumps(data))
    with pytest.raises(ParameterError, match="does not record which CSV file"):
        read_report_file(target)


@pytest.mark.parametrize("blocked", ["release.csv", "release.csv.frameldp.json"])
def test_a_directory_in_the_way_is_refused_before_any_work(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path, blocked: str
) -> None:
    """Checked first: the input (with a bad value in its last rows) is never read, the ledger
    never charged, and the error names the output, not a temporary file."""
    frame = flights().astype({"carrier": str})
    frame.loc[2990, "carrier"] = "XX"
    source = make_input("parquet", frame=frame)
    (tmp_path / blocked).mkdir()
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("b", epsilon=10.0)
    run = invoke(
        "privatize",
        source,
        tmp_path / "release.csv",
        *options("krr", "carrier", domains),
        *("--ledger", ledger, "--budget", "b"),
    )
    line = assert_user_error(run, blocked, "is a directory")
    assert ".tmp" not in line
    assert Ledger(ledger).history("b") == []
    assert leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- hex reports


@pytest.mark.parametrize("width", [1, 13, 16])
def test_hex_round_trip(width: int) -> None:
    """Every byte value, including a slice that starts inside the buffer."""
    packed = np.arange(width * 40, dtype=np.uint64).astype(np.uint8).reshape(40, width)
    reports = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), 40, [None, pa.py_buffer(packed.tobytes())]
    )
    for array in (reports, reports.slice(7, 20)):
        text = to_hex(array)
        assert text.to_pylist() == [r.hex() for r in array.to_pylist()]
        back = from_hex(text, width * 8, "reports")
        assert back.to_pylist() == array.to_pylist()
        upper = pa.array([t.upper() for t in text.to_pylist()])
        assert from_hex(upper, width * 8, "reports").to_pylist() == array.to_pylist()
        sliced = pa.chunked_array([text.slice(1), text.slice(0, 1)])
        assert from_hex(sliced, width * 8, "reports").to_pylist() == [
            *array.to_pylist()[1:],
            array.to_pylist()[0],
        ]


@pytest.mark.parametrize(
    ("values", "fragments"),
    [
        (["00ff", "0g00"], ["column 'dest'", "row 1", "'0g00'"]),
        (["00ff", "00f"], ["column 'dest'", "4 characters", "16 bits"]),
        (["00ff", None], ["column 'dest'", "1 nulls"]),
    ],
    ids=["not-hex", "wrong-length", "null"],
)
def test_bad_hex_reports_are_refused_by_name(
    values: list[str | None], fragments: list[str]
) -> None:
    with pytest.raises(DomainError) as raised:
        from_hex(pa.array(values, pa.string()), 16, "dest")
    for fragment in fragments:
        assert fragment in str(raised.value)


# --------------------------------------------------------------------- batches, keys, kinds


def test_parquet_batches_have_at_most_chunk_rows(tmp_path: Path) -> None:
    path = tmp_path / "flights.parquet"
    flights().to_parquet(path, index=False)
    sizes = [b.num_rows for b in batches(path, ["carrier", "dest"], chunk_rows=7)]
    assert sum(sizes) == ROWS
    assert max(sizes) == 7
    assert all(
        b.schema.names == ["carrier", "dest"]
        for b in batches(path, ["carrier", "dest"], chunk_rows=1000)
    )


def test_csv_columns_named_as_strings_are_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "codes.csv"
    path.write_text("code,n\n007,1\n010,2\n")
    (batch,) = batches(path, ["code", "n"], chunk_rows=10, strings=["code"])
    assert batch.column("code").to_pylist() == ["007", "010"]
    assert batch.column("n").to_pylist() == [1, 2]


def test_read_key(tmp_path: Path) -> None:
    assert read_key(None) is None
    (tmp_path / "good.key").write_bytes(bytes(range(32)))
    assert read_key(tmp_path / "good.key") == bytes(range(32))
    (tmp_path / "long.key").write_bytes(bytes(33))
    with pytest.raises(ParameterError, match="a key is 32 bytes, got 33"):
        read_key(tmp_path / "long.key")


@pytest.mark.parametrize("name", ["out.CSV", "out.Parquet", "out.csv", "out.parquet"])
def test_file_kind_by_suffix(name: str) -> None:
    assert file_kind(Path(name), "output") == name.rsplit(".", 1)[1].lower()


@pytest.mark.parametrize("name", ["out.txt", "out.pq", "out", "out.csv.gz"])
def test_file_kind_refuses_other_suffixes(name: str) -> None:
    with pytest.raises(ParameterError, match=r"output '.*': expected a \.csv or \.parquet file"):
        file_kind(Path(name), "output")


def test_a_file_whose_column_types_and_metadata_disagree_is_refused(
    releases: tuple[Path, Path, pd.DataFrame], tmp_path: Path
) -> None:
    """pyarrow keeps a table's key-value metadata through ``set_column``: a report column
    swapped for another release's must not be estimated with the metadata's mechanism."""
    parquet, _, _ = releases
    table = pq.read_table(parquet)
    other = in_memory(
        flights(),
        {"carrier": frameldp.RandomizedResponse(5.0, domain=list(FLIGHTS_DOMAINS["carrier"]))},
    )
    column = pa.Array.from_pandas(other["carrier"])
    index = table.schema.get_field_index("carrier")
    swapped = table.set_column(index, pa.field("carrier", column.type), column)
    pq.write_table(swapped, tmp_path / "swapped.parquet")
    with pytest.raises(frameldp.ParameterError, match="types and its frameldp metadata"):
        read_report_file(tmp_path / "swapped.parquet")
