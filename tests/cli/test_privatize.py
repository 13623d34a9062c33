"""``frameldp privatize``: streamed releases equal to the in-memory pandas path, atomic output,
one-line errors, ledger charges, the columns released, spec files and option pairing.

Most runs are in process (typer's CliRunner); the ``test_installed_*`` tests run the console
script in a subprocess, one of them interrupted by SIGTERM.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameldp
from frameldp.accounting import Ledger, PrivacyGuarantee, compose
from frameldp.accounting.guarantee import INSECURE
from frameldp.cli._inputs import batches
from frameldp.core.encoding import Domain
from frameldp.datasets import FLIGHTS_DOMAINS

from .conftest import (
    COLUMN_OF,
    EPSILON,
    EPSILON_INFINITY,
    MECHANISMS,
    ROWS,
    SEED,
    MakeInput,
    assert_user_error,
    expected,
    flights,
    in_memory,
    invoke,
    leftovers,
    mechanism,
    options,
    release_names,
    released,
    script_environment,
    seeded,
)


def report_columns(kind: str, column: str) -> list[str]:
    """The release columns of one privatized column (Bloom RAPPOR adds its cohorts)."""
    return [column, f"{column}_cohort"] if kind == "bloom" else [column]


def assert_same_reports(target: Path, reference: pd.DataFrame, columns: list[str]) -> None:
    for column in columns:
        assert released(target, column) == expected(reference, column), column


# ---------------------------------------------------------------- reports of the in-memory path


@pytest.mark.parametrize("kind", MECHANISMS)
@pytest.mark.parametrize(
    ("chunk_rows", "rows"), [(1, 60), (7, 300), (2000, ROWS)], ids=["chunk1", "chunk7", "chunk2000"]
)
def test_release_is_the_in_memory_release_whatever_the_batch_size(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    kind: str,
    chunk_rows: int,
    rows: int,
) -> None:
    """Parquet in batches of 1, 7 and 2000 rows: reports are addressed by their row in the whole
    file, so every batching gives exactly the reports of ``df.ldp.privatize`` with the seed."""
    column = COLUMN_OF[kind]
    source, target = make_input("parquet", rows), tmp_path / "release.parquet"
    before = source.read_bytes()
    run = invoke(
        "privatize",
        source,
        target,
        *options(kind, column, domains),
        "--seed",
        SEED,
        "--chunk-rows",
        chunk_rows,
    )
    assert run.exit_code == 0, run.stderr
    reference = in_memory(flights(rows), {column: mechanism(kind, column)})
    assert release_names(target) == report_columns(kind, column)
    assert_same_reports(target, reference, report_columns(kind, column))
    assert f"wrote {rows} rows" in run.stdout
    assert source.read_bytes() == before
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("kind", ["krr", "rappor"])
def test_threads_option_gives_the_in_memory_release(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    kind: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``frameldp --threads N privatize`` sets the thread count and gives the same reports for
    any N."""
    monkeypatch.delenv("FRAMELDP_THREADS", raising=False)  # the option sets it; restored after
    column = COLUMN_OF[kind]
    source = make_input("parquet", ROWS)
    reference = in_memory(flights(ROWS), {column: mechanism(kind, column)})
    for count in (1, 2):
        target = tmp_path / f"release-{count}.parquet"
        run = invoke(
            "--threads", count, "privatize", source, target,
            *options(kind, column, domains), "--seed", SEED,
        )  # fmt: skip
        assert run.exit_code == 0, run.stderr
        assert frameldp.core.parallel.thread_count() == count
        assert_same_reports(target, reference, report_columns(kind, column))


def test_threads_option_refuses_zero_on_one_line() -> None:
    run = invoke("--threads", 0, "demo")
    assert_user_error(run, "--threads", "greater than or equal to 1")


@pytest.mark.parametrize("value", ["abc", "0"])
def test_a_bad_frameldp_threads_variable_is_refused_before_anything_runs(
    value: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    run = invoke("demo", env={"FRAMELDP_THREADS": value})
    assert_user_error(run, "FRAMELDP_THREADS", repr(value))
    target = tmp_path / "release.parquet"
    run = invoke(
        "privatize", make_input("csv", 10), target, *options("krr", "carrier", domains),
        env={"FRAMELDP_THREADS": value},
    )  # fmt: skip
    assert_user_error(run, "FRAMELDP_THREADS must be an integer in [1, 256]")
    assert list(tmp_path.glob("release*")) == []


def test_a_bad_frameldp_threads_variable_leaves_help_and_commands_without_threads_alone() -> None:
    """(Issue 36: the root option read the variable, so every command failed, help included.)"""
    bad = {"FRAMELDP_THREADS": "abc"}
    for args in (["--help"], ["privatize", "--help"], ["budget", "--help"]):
        run = invoke(*args, env=bad)
        assert run.exit_code == 0, run.stderr
        assert "Usage" in run.stdout
    run = invoke("plan", "--n", 1000, "--domain-size", 5, "--epsilon", 1, env=bad)
    assert run.exit_code == 0, run.stderr
    assert run.stdout.startswith("Plan for n = 1,000 reports")
    run = invoke("--threads", 2, "demo", "--seed", 1, "--epsilon", 1, "--top", 1, env=bad)
    assert run.exit_code == 0, run.stderr  # --threads overrides the variable


@pytest.mark.parametrize("kind", MECHANISMS)
@pytest.mark.parametrize(
    ("source_kind", "target_kind"), [("csv", "csv"), ("csv", "parquet"), ("parquet", "csv")]
)
def test_csv_input_and_output_hold_the_in_memory_reports(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    kind: str,
    source_kind: str,
    target_kind: str,
) -> None:
    """CSV in or out: CSV columns to privatize are read as text, RAPPOR reports are written as
    hex, k-RR reports as their labels; the reports are the in-memory ones."""
    column = COLUMN_OF[kind]
    source, target = make_input(source_kind), tmp_path / f"release.{target_kind}"
    run = invoke("privatize", source, target, *options(kind, column, domains), "--seed", SEED)
    assert run.exit_code == 0, run.stderr
    reference = in_memory(flights(), {column: mechanism(kind, column)})
    assert release_names(target) == report_columns(kind, column)
    assert_same_reports(target, reference, report_columns(kind, column))


def test_a_csv_file_read_in_several_blocks_gives_the_in_memory_reports(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """A CSV file is read in blocks of bytes (at least 1 MiB), each sliced to at most
    ``--chunk-rows`` rows: 120,000 rows (about 3 MiB) come in batches that do not follow the
    blocks, and the reports are still the in-memory ones."""
    frame = flights(120_000)
    source, target = make_input("csv", frame=frame), tmp_path / "release.parquet"
    chunks = [b.num_rows for b in batches(source, ["dest"], chunk_rows=30_000, strings=["dest"])]
    assert len(chunks) > 4  # precondition: blocks cut across the slices of 30,000
    assert max(chunks) <= 30_000
    run = invoke(
        "privatize",
        source,
        target,
        *options("rappor", "dest", domains),
        *options("krr", "carrier", domains),
        "--seed",
        SEED,
        "--chunk-rows",
        30_000,
    )
    assert run.exit_code == 0, run.stderr
    reference = in_memory(
        frame, {"dest": mechanism("rappor", "dest"), "carrier": mechanism("krr", "carrier")}
    )
    assert_same_reports(target, reference, ["dest", "carrier"])


def test_set_valued_rappor_cells_give_the_in_memory_reports(
    domains: dict[str, Path], tmp_path: Path
) -> None:
    """A Parquet list column (the flights ``services`` sets) with ``--max-weight``."""
    from frameldp.datasets import load_flights

    frame = load_flights()[["passenger_id", "services"]].head(500)
    source, target = tmp_path / "services.parquet", tmp_path / "release.parquet"
    frame.to_parquet(source, index=False)
    universe = tmp_path / "services.txt"
    universe.write_text("\n".join(FLIGHTS_DOMAINS["services"]))
    run = invoke(
        "privatize",
        source,
        target,
        "--column",
        "services",
        "--mechanism",
        "rappor",
        "--epsilon",
        2,
        "--domain-file",
        universe,
        "--max-weight",
        6,
        "--seed",
        SEED,
        "--chunk-rows",
        64,
    )
    assert run.exit_code == 0, run.stderr
    rappor = frameldp.Rappor(2.0, domain=FLIGHTS_DOMAINS["services"], max_weight=6)
    assert_same_reports(target, in_memory(frame, {"services": rappor}), ["services"])


def test_key_file_gives_the_reports_of_that_key(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    key = bytes(range(100, 132))
    (tmp_path / "secret.key").write_bytes(key)
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    args = ["privatize", source, target, *options("krr", "carrier", domains)]
    run = invoke(*args, "--key-file", tmp_path / "secret.key", "--chunk-rows", 700)
    assert run.exit_code == 0, run.stderr
    reference = flights().ldp.privatize({"carrier": mechanism("krr", "carrier")}, key=key)
    assert_same_reports(target, reference, ["carrier"])


def test_without_seed_or_key_every_run_draws_fresh_noise(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """Two runs with the default (fresh secret) key differ; 3000 k-RR reports at epsilon 1
    agree by chance with probability far below 1e-100."""
    source = make_input("parquet")
    outputs = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for target in outputs:
        run = invoke("privatize", source, target, *options("krr", "carrier", domains))
        assert run.exit_code == 0, run.stderr
    assert released(outputs[0], "carrier") != released(outputs[1], "carrier")


def test_success_prints_rows_columns_and_the_guarantee(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    target.write_bytes(b"an older release")  # replaced on success
    run = invoke(
        "privatize",
        source,
        target,
        *options("rappor", "dest", domains),
        *options("krr", "carrier", domains, epsilon=0.5),
        "--seed",
        SEED,
        "--delta",
        1e-9,
    )
    assert run.exit_code == 0, run.stderr
    guarantee = compose(
        [mechanism("rappor", "dest").privacy, mechanism("krr", "carrier", 0.5).privacy]
    )
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"wrote {ROWS} rows, columns ['dest', 'carrier'], to {target}")
    assert lines[1] == (
        f"privacy per person: ε = {guarantee.epsilon:.6g} (pure, local); "
        f"ε = {guarantee.epsilon_at(1e-9):.6g} at δ = 1e-09 [{INSECURE}]"
    )
    # What that means for one person, at the same delta (tests/accounting/test_risk.py).
    assert lines[2] == (
        f"for one person: {guarantee.accountant.profile.summary(1e-9)} [{INSECURE}]"
    )  # a seeded run says so on this line too
    assert lines[2].startswith("for one person: an attacker who gave 1% to a person's value")
    assert pq.read_table(target).num_rows == ROWS
    assert leftovers(tmp_path) == []


# ------------------------------------------------------------------------- released columns


def test_release_holds_the_report_columns_and_the_kept_ones_in_input_order(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        source,
        target,
        *options("krr", "carrier", domains),
        *options("rappor", "dest", domains),
        "--keep",
        "delay",
        "--keep",
        "origin",
        "--seed",
        SEED,
    )
    assert run.exit_code == 0, run.stderr
    assert release_names(target) == ["origin", "dest", "carrier", "delay"]
    kept = pd.read_parquet(target, columns=["origin", "delay"])
    original = flights()
    for column in ("origin", "delay"):
        assert kept[column].astype(str).tolist() == original[column].astype(str).tolist()


@pytest.mark.parametrize("keep_user", [False, True], ids=["user-dropped", "user-kept"])
@pytest.mark.parametrize("memo_key", [None, bytes(range(32))], ids=["no-memo-key", "memo-key"])
def test_bloom_user_column_is_released_only_when_kept(
    make_input: MakeInput, tmp_path: Path, keep_user: bool, memo_key: bytes | None
) -> None:
    """``--user`` gives stable cohorts and memoized permanent responses (the in-memory
    ``user=``, ``memo_key=``); the user column itself is dropped unless ``--keep`` names it."""
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    extra: list[Any] = ["--keep", "passenger_id"] if keep_user else []
    if memo_key is not None:
        (tmp_path / "memo.key").write_bytes(memo_key)
        extra += ["--memo-key-file", tmp_path / "memo.key"]
    run = invoke(
        "privatize",
        source,
        target,
        *options("bloom", "dest", {}),
        "--user",
        "passenger_id",
        "--seed",
        SEED,
        "--chunk-rows",
        500,
        *extra,
    )
    assert run.exit_code == 0, run.stderr
    names = ["dest", "dest_cohort"]
    assert release_names(target) == (["passenger_id", *names] if keep_user else names)
    reference = in_memory(
        flights(), {"dest": mechanism("bloom", "dest")}, user="passenger_id", memo_key=memo_key
    )
    assert_same_reports(target, reference, names)


def test_empty_input_gives_an_empty_self_describing_release(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    source, target = make_input("parquet", frame=flights(0)), tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        source,
        target,
        *options("rappor", "dest", domains),
        *options("bloom", "origin", domains),
        "--keep",
        "delay",
    )
    assert run.exit_code == 0, run.stderr
    table = pq.read_table(target)
    assert table.num_rows == 0
    assert table.column_names == ["origin", "origin_cohort", "dest", "delay"]
    assert set(json.loads(table.schema.metadata[b"frameldp"])["mechanisms"]) == {"dest", "origin"}


# ------------------------------------------------------------------------ specs and pairing


def test_spec_file_describes_each_column(make_input: MakeInput, tmp_path: Path) -> None:
    """Mixed mechanisms and per-column options; a relative ``domain_file`` is read from the
    spec file's directory (not the working directory)."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "dests.txt").write_text("\n".join(FLIGHTS_DOMAINS["dest"]))
    spec = {
        "dest": {"mechanism": "rappor", "epsilon": 1.5, "domain_file": "dests.txt"},
        "carrier": {
            "mechanism": "krr",
            "epsilon": 2.0,
            "domain": ["AA", "DL", "UA"],
            "unknown": "other",
        },
        "origin": {
            "mechanism": "bloom",
            "epsilon": 1.0,
            "epsilon_infinity": 3.0,
            "num_bits": 64,
            "num_cohorts": 8,
        },
    }
    (jobs / "job.json").write_text(json.dumps(spec))
    source, target = make_input("csv"), tmp_path / "release.parquet"
    run = invoke("privatize", source, target, "--spec", jobs / "job.json", "--seed", SEED)
    assert run.exit_code == 0, run.stderr
    mechanisms = {
        "dest": frameldp.Rappor(1.5, domain=FLIGHTS_DOMAINS["dest"]),
        "carrier": frameldp.RandomizedResponse(
            2.0, domain=Domain.coerce(["AA", "DL", "UA"], unknown="other", nulls=None)
        ),
        "origin": frameldp.BloomRappor(1.0, epsilon_infinity=3.0, num_bits=64, num_cohorts=8),
    }
    reference = in_memory(flights(), mechanisms)
    assert release_names(target) == ["origin", "origin_cohort", "dest", "carrier"]
    assert_same_reports(target, reference, ["origin", "origin_cohort", "dest", "carrier"])


def test_options_given_once_apply_to_every_column(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """One ``--mechanism``, ``--epsilon`` and ``--domain-file`` (a JSON list) for two columns."""
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        source,
        target,
        "--column",
        "origin",
        "--column",
        "dest",
        "--mechanism",
        "krr",
        "--epsilon",
        1.5,
        "--domain-file",
        domains["airports"],
        "--seed",
        SEED,
    )
    assert run.exit_code == 0, run.stderr
    airports = FLIGHTS_DOMAINS["dest"]
    mechanisms = {
        column: frameldp.RandomizedResponse(1.5, domain=airports) for column in ("origin", "dest")
    }
    assert_same_reports(target, in_memory(flights(), mechanisms), ["origin", "dest"])


def test_domain_files_pair_with_the_columns_that_take_a_domain(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """Options once per column, in order; the two domain files go to the RAPPOR and k-RR
    columns, skipping the Bloom column between them."""
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        source,
        target,
        *("--column", "dest", "--column", "origin", "--column", "carrier"),
        *("--mechanism", "rappor", "--mechanism", "bloom", "--mechanism", "krr"),
        *("--epsilon", 1, "--epsilon", 2, "--epsilon", 0.5),
        *("--domain-file", domains["dest"], "--domain-file", domains["carrier"]),
        *("--epsilon-infinity", EPSILON_INFINITY, "--seed", SEED),
    )
    assert run.exit_code == 0, run.stderr
    mechanisms = {
        "dest": mechanism("rappor", "dest", 1.0),
        "origin": mechanism("bloom", "origin", 2.0),
        "carrier": mechanism("krr", "carrier", 0.5),
    }
    reference = in_memory(flights(), mechanisms)
    assert_same_reports(target, reference, ["origin", "origin_cohort", "dest", "carrier"])


D = "DOMAIN"  # placeholder for a domain file in the parametrizations below


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (
            "--column dest --column carrier --column delay --mechanism krr --mechanism krr "
            "--epsilon 1 --domain-file DOMAIN",
            ["--mechanism was given 2 times for 3 columns", "once per column"],
        ),
        (
            "--column dest --column carrier --mechanism krr --epsilon 1 --epsilon 2 --epsilon 3 "
            "--domain-file DOMAIN",
            ["--epsilon was given 3 times for 2 columns"],
        ),
        (
            "--column dest --column origin --column carrier --mechanism rappor --mechanism bloom "
            "--mechanism krr --epsilon 1 --epsilon-infinity 4 --domain-file DOMAIN "
            "--domain-file DOMAIN --domain-file DOMAIN",
            ["--domain-file was given 3 times for 2 columns that take a domain"],
        ),
        (
            "--column dest --mechanism bloom --epsilon 1 --epsilon-infinity 4 --domain-file DOMAIN",
            ["--domain-file is not used", "Bloom"],
        ),
        (
            "--column carrier --mechanism krr --epsilon 1",
            ["column 'carrier'", "--domain-file is required for krr"],
        ),
        (
            "--column dest --column dest --mechanism krr --epsilon 1",
            ["--column 'dest' is given more than once"],
        ),
        ("--mechanism krr --epsilon 1", ["--column"]),
        ("--column dest --epsilon 1 --domain-file DOMAIN", ["--mechanism is required"]),
        ("--column dest --mechanism krr --domain-file DOMAIN", ["--epsilon is required"]),
        (
            "--column dest --mechanism laplace --epsilon 1 --domain-file DOMAIN",
            ["column 'dest'", "auto, bloom, duchi, hadamard_response, hybrid, krr", "'laplace'"],
        ),
        (
            "--column dest --mechanism bloom --epsilon 1",
            ["column 'dest'", "epsilon_infinity"],
        ),
    ],
    ids=[
        "mechanism-count",
        "epsilon-count",
        "domain-file-count",
        "domain-file-unused",
        "domain-file-missing",
        "column-twice",
        "no-column",
        "no-mechanism",
        "no-epsilon",
        "unknown-mechanism",
        "bloom-without-epsilon-infinity",
    ],
)
def test_option_pairing_mistakes_are_one_line_errors(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    arguments: str,
    fragments: list[str],
) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    args = [str(domains["dest"]) if a == D else a for a in arguments.split()]
    assert_user_error(invoke("privatize", source, target, *args), *fragments)
    assert not target.exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("spec", "fragments"),
    [
        ("{not json", ["--spec", "cannot read it"]),
        (["dest"], ["--spec", "expected a JSON object"]),
        ({}, ["--spec", "expected a JSON object"]),
        ({"dest": "rappor"}, ["column 'dest'", "expected an object"]),
        (
            {"dest": {"mechanism": "krr", "epsilon": 1, "domain": ["ATL", "BOS"], "eps": 2}},
            ["column 'dest'", "unknown option 'eps'"],
        ),
        ({"dest": {"epsilon": 1, "domain": ["ATL", "BOS"]}}, ["column 'dest'", "'mechanism'"]),
        ({"dest": {"mechanism": "rappor", "epsilon": 1}}, ["column 'dest'", "'domain'"]),
        (
            {"dest": {"mechanism": "krr", "epsilon": 1, "domain_file": "missing.txt"}},
            ["column 'dest'", "--domain-file", "missing.txt"],
        ),
        (
            {"dest": {"mechanism": "rappor", "epsilon": "1", "domain": ["ATL", "BOS"]}},
            ["column 'dest'", "epsilon", "'1'"],
        ),
    ],
    ids=[
        "not-json",
        "list",
        "empty",
        "entry-not-object",
        "unknown-option",
        "no-mechanism",
        "no-domain",
        "missing-domain-file",
        "epsilon-as-text",
    ],
)
def test_spec_file_mistakes_are_one_line_errors(
    make_input: MakeInput, tmp_path: Path, spec: Any, fragments: list[str]
) -> None:
    path = tmp_path / "job.json"
    path.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    assert_user_error(invoke("privatize", source, target, "--spec", path), *fragments)
    assert not target.exists()
    assert leftovers(tmp_path) == []


def test_spec_file_cannot_be_combined_with_column_options(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"dest": {"mechanism": "krr", "epsilon": 1, "domain": ["A", "B"]}}))
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    run = invoke("privatize", source, target, "--spec", path, "--column", "carrier")
    assert_user_error(run, "--spec describes every column")
    run = invoke("privatize", source, target, "--spec", tmp_path / "missing.json")
    assert_user_error(run, "--spec", "missing.json")


def test_spec_file_domain_must_be_a_list(make_input: MakeInput, tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"dest": {"mechanism": "krr", "epsilon": 1, "domain": "ATL"}}))
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    assert_user_error(invoke("privatize", source, target, "--spec", path), "'dest'", "domain")


def test_spec_file_domain_file_must_be_a_path(make_input: MakeInput, tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"dest": {"mechanism": "krr", "epsilon": 1, "domain_file": 5}}))
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    assert_user_error(invoke("privatize", source, target, "--spec", path), "'dest'", "domain_file")


def test_spec_file_does_not_silently_drop_shared_options(
    make_input: MakeInput, tmp_path: Path
) -> None:
    path = tmp_path / "job.json"
    path.write_text(
        json.dumps({"dest": {"mechanism": "krr", "epsilon": 1, "domain": ["ATL", "BOS"]}})
    )
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    run = invoke("privatize", source, target, "--spec", path, "--unknown", "other")
    # Either applied (values outside the domain go to the OTHER bucket) or refused by name.
    assert run.exit_code == 0 or "--unknown" in run.stderr, run.stderr


# ------------------------------------------------------------------- no partial output


def _late_bad_value(make_input: MakeInput, kind: str = "parquet") -> Path:
    """3000 rows whose row 2950 holds a destination outside the domain."""
    frame = flights().astype({"dest": str})
    frame.loc[2950, "dest"] = "ZZZ"
    return make_input(kind, frame=frame, name="late")


def _garbage(make_input: MakeInput) -> Path:
    path = make_input("parquet", rows=10, name="garbage")
    path.write_bytes(b"this is not a parquet file")
    return path


DEST = ["--column", "dest", "--mechanism", "rappor", "--epsilon", "1", "--domain-file", D]

# (input, arguments, fragments of stderr): a failure at every stage of a run, from reading the
# options to the last batch. Placeholders: DOMAIN, KEY, SHORT (key files), nowhere.txt.
FAILURES: dict[str, tuple[Any, list[str], list[str]]] = {
    "late-value-validated": (
        _late_bad_value,
        [*DEST, "--chunk-rows", "50"],
        ["input validation failed: 1 failure(s) in column(s) dest", "row 2950", "'ZZZ'"],
    ),
    "late-value-unvalidated": (
        _late_bad_value,
        [*DEST, "--chunk-rows", "50", "--no-validate"],
        ["column 'dest'", "'ZZZ'", "row 2950"],
    ),
    "bad-epsilon": (None, [*DEST[:5], "-1", *DEST[6:]], ["column 'dest'", "epsilon", "-1"]),
    "missing-column": (None, ["--column", "nope", *DEST[2:]], ["column 'nope' not found"]),
    "unreadable-input": (_garbage, DEST, ["Parquet"]),
    "missing-input": ("missing.parquet", DEST, ["input", "missing.parquet", "no such file"]),
    "keep-privatized": (None, [*DEST, "--keep", "dest"], ["--keep 'dest'", "privatized"]),
    "keep-missing": (None, [*DEST, "--keep", "gate"], ["column 'gate' not found"]),
    "missing-domain-file": (
        None,
        [*DEST[:7], "nowhere.txt"],
        ["column 'dest'", "--domain-file", "nowhere.txt"],
    ),
    "bad-chunk-rows": (None, [*DEST, "--chunk-rows", "0"], ["--chunk-rows", "got 0"]),
    "huge-chunk-rows": (
        None,
        [*DEST, "--chunk-rows", "99999999999999999999"],
        ["--chunk-rows must be between 1 and 2**63 - 1", "got 99999999999999999999"],
    ),
    "seed-and-key": (None, [*DEST, "--seed", "1", "--key-file", "KEY"], ["--seed", "--key-file"]),
    "short-key": (None, [*DEST, "--key-file", "SHORT"], ["--key-file", "32 bytes, got 3"]),
    "bad-unknown-policy": (None, [*DEST, "--unknown", "bogus"], ["unknown", "'bogus'"]),
}


@pytest.mark.parametrize("existing", [False, True], ids=["no-previous-out", "previous-out"])
@pytest.mark.parametrize(
    ("failure", "target_kind"),
    [(failure, "parquet") for failure in FAILURES]
    # A CSV release has two outputs (OUT and its sidecar): both written while batches pass.
    + [("late-value-validated", "csv"), ("late-value-unvalidated", "csv")],
)
def test_a_failure_writes_nothing_and_leaves_an_existing_output_untouched(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    failure: str,
    existing: bool,
    target_kind: str,
) -> None:
    make, arguments, fragments = FAILURES[failure]
    if make is None:
        source = make_input("parquet")
    elif isinstance(make, str):
        source = tmp_path / make
    else:
        source = make(make_input)
    (tmp_path / "secret.key").write_bytes(bytes(32))
    (tmp_path / "short.key").write_bytes(b"abc")
    target = tmp_path / f"release.{target_kind}"
    beside = tmp_path / f"release.{target_kind}.frameldp.json"
    if existing:
        target.write_bytes(b"previous release")
        beside.write_bytes(b"previous metadata")
    replace = {
        D: domains["dest"],
        "nowhere.txt": tmp_path / "nowhere.txt",
        "KEY": tmp_path / "secret.key",
        "SHORT": tmp_path / "short.key",
    }
    args = [replace.get(a, a) for a in arguments]
    run = invoke("privatize", source, target, *args)
    assert run.exception is None, repr(run.exception)
    assert run.exit_code == 1
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert lines[0].startswith("error: ")
    assert len(lines) == (2 if failure == "late-value-validated" else 1), run.stderr
    for fragment in fragments:
        assert fragment in run.stderr, (fragment, run.stderr)
    if existing:
        assert target.read_bytes() == b"previous release"
        assert beside.read_bytes() == b"previous metadata"
    else:
        assert not target.exists()
        assert not beside.exists()
    assert leftovers(tmp_path) == []


def test_a_missing_output_directory_is_refused(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "nowhere" / "release.parquet"
    args = [str(domains["dest"]) if a == D else a for a in DEST]
    run = invoke("privatize", make_input("parquet"), target, *args)
    assert_user_error(run, "release.parquet", "directory", "nowhere", "not found")
    assert not target.parent.exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("target_name", "fragments"),
    [("release.txt", ["output", ".csv or .parquet"]), ("flights.parquet", ["overwrite the input"])],
)
def test_bad_outputs_are_refused(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    target_name: str,
    fragments: list[str],
) -> None:
    source = make_input("parquet")
    before = source.read_bytes()
    args = [str(domains["dest"]) if a == D else a for a in DEST]
    assert_user_error(invoke("privatize", source, tmp_path / target_name, *args), *fragments)
    assert source.read_bytes() == before
    assert leftovers(tmp_path) == []


def test_an_unreadable_input_error_names_the_file(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    source = _garbage(make_input)
    args = [str(domains["dest"]) if a == D else a for a in DEST]
    run = invoke("privatize", source, tmp_path / "release.parquet", *args)
    assert_user_error(run, "garbage.parquet")


# ---------------------------------------------------------------------------- validation


def test_validation_lists_every_failure_of_every_column_and_batch(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """Failures in two columns and three batches are collected before the run stops; each is
    listed with its row in the whole file and its value."""
    frame = flights().astype({"dest": str, "carrier": str})
    frame.loc[5, "dest"] = "ZZZ"
    frame.loc[1234, "carrier"] = "XX"
    frame.loc[2950, "dest"] = "YYY"
    source, target = make_input("parquet", frame=frame), tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        source,
        target,
        *options("rappor", "dest", domains),
        *options("krr", "carrier", domains),
        "--chunk-rows",
        100,
    )
    assert run.exception is None
    assert run.exit_code == 1
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    first, *listed = run.stderr.splitlines()
    assert first == (
        "error: input validation failed: 3 failure(s) in column(s) carrier, dest; "
        "nothing was written; pass --unknown other to give values outside the domain their own "
        "bucket"
    )
    assert len(listed) == 3
    for column, row, value in (("dest", 5, "ZZZ"), ("carrier", 1234, "XX"), ("dest", 2950, "YYY")):
        assert any(
            f"column {column!r} row {row}:" in line and f"value {value!r}" in line
            for line in listed
        ), (column, row, listed)
    assert not target.exists()
    assert leftovers(tmp_path) == []


def test_validation_lists_the_first_twenty_failures_and_counts_the_rest(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    frame = flights().astype({"carrier": str})
    frame.loc[range(0, 3000, 100), "carrier"] = "XX"  # 30 failures, one per batch
    source, target = make_input("parquet", frame=frame), tmp_path / "release.parquet"
    run = invoke(
        "privatize", source, target, *options("krr", "carrier", domains), "--chunk-rows", 100
    )
    assert run.exit_code == 1
    first, *listed = run.stderr.splitlines()
    assert "30 failure(s) in column(s) carrier" in first
    assert len(listed) == 21
    assert [line for line in listed if "row 1900:" in line]
    assert listed[-1] == "  ... and 10 more"


def test_validation_counts_every_failure(make_input: MakeInput, tmp_path: Path) -> None:
    (tmp_path / "two.txt").write_text("ATL\nBOS\n")
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        source,
        target,
        *("--column", "dest", "--mechanism", "krr", "--epsilon", 1),
        *("--domain-file", tmp_path / "two.txt"),
    )
    outside = int((~flights()["dest"].isin(["ATL", "BOS"])).sum())
    assert outside > 100
    assert f"input validation failed: {outside} failure(s)" in run.stderr.splitlines()[0]


def test_unknown_other_and_null_category_accept_what_raise_refuses(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """``--unknown other --nulls category``: values outside the domain and nulls get their own
    buckets, as ``Domain(unknown="other", nulls="category")`` does in memory."""
    frame = flights().astype({"carrier": object})
    frame.loc[[3, 30, 300], "carrier"] = "XX"
    frame.loc[[4, 40], "carrier"] = None
    source, target = make_input("parquet", frame=frame), tmp_path / "release.parquet"
    args = ["privatize", source, target, *options("krr", "carrier", domains), "--seed", SEED]
    run = invoke(*args)
    assert run.exit_code == 1
    (error,) = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert "5 failure(s) in column(s) carrier" in error
    # The error says which options accept them, in command-line words.
    assert "pass --nulls category" in error
    assert "pass --unknown other" in error
    run = invoke(*args, "--unknown", "other", "--nulls", "category", "--chunk-rows", 64)
    assert run.exit_code == 0, run.stderr
    domain = Domain.coerce(FLIGHTS_DOMAINS["carrier"], unknown="other", nulls="category")
    reference = in_memory(frame, {"carrier": frameldp.RandomizedResponse(EPSILON, domain=domain)})
    assert_same_reports(target, reference, ["carrier"])


# ------------------------------------------------- errors in command-line words, short, secret-free


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["--epsilon", "one"], ["--epsilon", "frameldp privatize --help"]),
        (["--epsilonn", "1"], ["--epsilonn", "frameldp privatize --help"]),
        (["--chunk-rows", "many"], ["--chunk-rows"]),
    ],
    ids=["epsilon-not-a-number", "unknown-option", "chunk-rows-not-a-number"],
)
def test_usage_mistakes_are_one_line_errors(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    arguments: list[str],
    fragments: list[str],
) -> None:
    """Not typer's boxed usage message: one ``error:`` line and exit status 1, like every
    other mistake."""
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    args = ["--column", "carrier", "--mechanism", "krr", "--domain-file", domains["carrier"]]
    if "--epsilon" not in arguments:
        args += ["--epsilon", 1]
    line = assert_user_error(invoke("privatize", source, target, *args, *arguments), *fragments)
    assert "╭" not in line
    assert not target.exists()


def test_a_usage_error_does_not_echo_a_pasted_value_whole(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    pasted = "x" * 100_000
    run = invoke("privatize", make_input("parquet"), tmp_path / "r.parquet", "--" + pasted)
    line = assert_user_error(run)
    assert len(line) < 400


@pytest.mark.parametrize(
    ("policy", "fragment"), [("nulls", "--nulls category"), ("unknown", "--unknown other")]
)
def test_a_null_or_outside_value_suggests_the_option_that_accepts_it(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path, policy: str, fragment: str
) -> None:
    """With or without validation, the error names the command-line option (the Python API's
    ``nulls='category'`` / ``unknown='other'`` mean nothing to a shell user)."""
    frame = flights().astype({"carrier": object})
    frame.loc[7, "carrier"] = None if policy == "nulls" else "XX"
    source, target = make_input("parquet", frame=frame), tmp_path / "release.parquet"
    for validate in ("--validate", "--no-validate"):
        run = invoke("privatize", source, target, *options("krr", "carrier", domains), validate)
        assert run.exit_code == 1
        first = run.stderr.splitlines()[0]
        assert first.startswith("error: ")
        assert fragment in first, (validate, first)
        assert "='" not in first, (validate, first)
        assert not target.exists()


@pytest.mark.parametrize("option", ["--key-file", "--memo-key-file"])
def test_a_missing_key_file_error_names_the_option_and_the_file(
    make_input: MakeInput, tmp_path: Path, option: str
) -> None:
    args = [*options("bloom", "dest", {}), "--user", "passenger_id"]
    run = invoke("privatize", make_input("parquet"), tmp_path / "r.parquet", *args, option, "nokey")
    assert_user_error(run, f"{option} 'nokey'", "cannot read it", "No such file")


@pytest.mark.parametrize(
    "key",
    [bytes(range(200, 232)), b"correct horse battery staple 123"],
    ids=["binary-key", "printable-key"],
)
@pytest.mark.parametrize("column", ["carrier", "delay"], ids=["text-column", "int-column"])
def test_a_key_file_given_as_domain_file_is_not_echoed(
    make_input: MakeInput, tmp_path: Path, key: bytes, column: str
) -> None:
    """A 32-byte key passed as ``--domain-file`` by mistake: the error says what is wrong
    without a byte of the key (not the text, not a byte value, not its position)."""
    secret = tmp_path / "secret.key"
    secret.write_bytes(key)
    frame = flights().assign(delay=np.arange(ROWS) % 5)
    source = make_input("parquet", frame=frame)
    for validate in ("--validate", "--no-validate"):
        run = invoke(
            "privatize",
            source,
            tmp_path / "release.parquet",
            *("--column", column, "--mechanism", "rappor", "--epsilon", 1),
            *("--domain-file", secret, validate),
        )
        line = assert_user_error(run, "--domain-file", "secret.key", "key file")
        said = line.replace(str(secret), "")
        assert key[:6].decode("latin-1") not in said
        assert "0x" not in said
        assert "\\x" not in said
        assert "position" not in said


def test_failed_values_are_quoted_short(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """A 1 MB private value outside the domain is listed by a short prefix only."""
    frame = flights().astype({"carrier": object})
    frame.loc[3, "carrier"] = "p" * 1_000_000
    source = make_input("parquet", frame=frame)
    run = invoke("privatize", source, tmp_path / "r.parquet", *options("krr", "carrier", domains))
    assert run.exit_code == 1
    assert "row 3" in run.stderr
    assert len(run.stderr) < 2000


# ----------------------------------------------------------------------------- seeded runs


def _metadata_guarantee(target: Path) -> dict[str, Any]:
    if target.suffix == ".parquet":
        return json.loads(pq.read_schema(target).metadata[b"frameldp"])["guarantee"]
    return json.loads(target.with_name(target.name + ".frameldp.json").read_text())["guarantee"]


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_a_seeded_run_is_marked_insecure_everywhere_it_shows(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    """The output line, a warning, the file's metadata, the ledger and ``estimate`` all say
    INSECURE; a run with a secret key says it nowhere."""
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("flights", epsilon=10.0)
    source = make_input("parquet")
    for seed in (SEED, None):
        target = tmp_path / f"{'seeded' if seed else 'keyed'}.{kind}"
        run = invoke(
            "privatize",
            source,
            target,
            *options("krr", "carrier", domains),
            *(("--seed", seed) if seed else ()),
            *("--ledger", ledger, "--budget", "flights"),
        )
        assert run.exit_code == 0, run.stderr
        (said,) = [line for line in run.stdout.splitlines() if line.startswith("privacy")]
        recorded = _metadata_guarantee(target)
        shown = invoke("estimate", target)
        assert shown.exit_code == 0, shown.stderr
        if seed:
            assert said.endswith(f"[{INSECURE}]")
            assert run.stderr.startswith("warning: --seed: INSECURE")
            assert recorded["seeded"] is True
            assert recorded["warning"] == INSECURE
            assert PrivacyGuarantee.from_dict(recorded).seeded
            assert Ledger(ledger).history("flights")[-1].guarantee.seeded
            assert "INSECURE" in shown.stdout
        else:
            assert "INSECURE" not in run.stdout + run.stderr + shown.stdout
            assert "seeded" not in recorded
            assert not Ledger(ledger).history("flights")[-1].guarantee.seeded


# -------------------------------------------------------------------------------- ledger


def _charge_args(source: Path, target: Path, domains: dict[str, Path], ledger: Path) -> list[Any]:
    return [
        "privatize",
        source,
        target,
        *options("rappor", "dest", domains),
        *options("krr", "carrier", domains),
        "--seed",
        SEED,
        "--ledger",
        ledger,
        "--budget",
        "flights",
    ]


def test_ledger_is_charged_once_for_a_release_of_many_batches(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("flights", epsilon=10.0)
    source, target = make_input("parquet", rows=700), tmp_path / "release.parquet"
    run = invoke(*_charge_args(source, target, domains, ledger), "--chunk-rows", 7)
    assert run.exit_code == 0, run.stderr
    assert f"charged to budget 'flights' of ledger {ledger}" in run.stdout
    (spend,) = Ledger(ledger).history("flights")
    guarantee = compose([mechanism("rappor", "dest").privacy, mechanism("krr", "carrier").privacy])
    assert spend.guarantee == seeded(guarantee)  # a --seed run: charged as insecure
    assert spend.epsilon == guarantee.epsilon
    assert spend.description == "privatize dest, carrier"
    recorded = json.loads(pq.read_schema(target).metadata[b"frameldp"])["guarantee"]
    assert PrivacyGuarantee.from_dict(recorded) == spend.guarantee


def test_ledger_from_the_environment(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("flights", epsilon=10.0)
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    args = _charge_args(source, target, domains, ledger)
    at = args.index("--ledger")
    run = invoke(*args[:at], *args[at + 2 :], env={"FRAMELDP_LEDGER": str(ledger)})
    assert run.exit_code == 0, run.stderr
    assert len(Ledger(ledger).history("flights")) == 1


def test_over_budget_refuses_and_writes_nothing(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("flights", epsilon=3.0)
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    assert invoke(*_charge_args(source, target, domains, ledger)).exit_code == 0
    second = tmp_path / "second.parquet"
    run = invoke(*_charge_args(source, second, domains, ledger))
    assert_user_error(run, "budget 'flights'", "over its cap", "nothing was recorded")
    assert not second.exists()
    assert leftovers(tmp_path) == []
    assert len(Ledger(ledger).history("flights")) == 1


@pytest.mark.parametrize(
    ("drop", "fragments"),
    [
        (None, ["ledger file", "missing.sqlite", "does not exist", "frameldp budget set"]),
        ("--budget", ["budget"]),
        ("--ledger", ["ledger"]),
    ],
    ids=["missing-ledger-file", "ledger-without-budget", "budget-without-ledger"],
)
def test_ledger_mistakes_write_nothing_and_create_no_ledger(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    drop: str | None,
    fragments: list[str],
) -> None:
    ledger = tmp_path / "missing.sqlite"
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    args = _charge_args(source, target, domains, ledger)
    if drop is not None:
        at = args.index(drop)
        args = args[:at] + args[at + 2 :]
    assert_user_error(invoke(*args), *fragments)
    assert not ledger.exists()
    assert not target.exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("validate", ["--validate", "--no-validate"])
def test_a_failed_release_charges_nothing(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path, validate: str
) -> None:
    """The charge is rolled back when a late batch fails (the input schema, or without it the
    mechanism)."""
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("flights", epsilon=10.0)
    source, target = _late_bad_value(make_input), tmp_path / "release.parquet"
    run = invoke(*_charge_args(source, target, domains, ledger), validate, "--chunk-rows", 50)
    assert run.exit_code == 1
    assert "'ZZZ'" in run.stderr
    assert "row 2950" in run.stderr
    assert Ledger(ledger).history("flights") == []
    assert not target.exists()
    assert leftovers(tmp_path) == []


def test_a_bad_delta_is_refused_before_anything_is_written(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("flights", epsilon=10.0)
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    run = invoke(*_charge_args(source, target, domains, ledger), "--delta", 0)
    assert Ledger(ledger).history("flights") == []
    assert not target.exists()
    assert_user_error(run, "delta", "0")


def test_a_kept_csv_column_is_released_whatever_the_batch_size(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    frame = flights(120_000)
    frame["gate"] = (np.arange(len(frame)) % 50).astype(str)
    frame.loc[110_000, "gate"] = "B7"
    source = make_input("csv", frame=frame)
    for chunk_rows in (500_000, 1000):
        target = tmp_path / f"release{chunk_rows}.parquet"
        args = [*options("krr", "carrier", domains), "--keep", "gate", "--chunk-rows", chunk_rows]
        run = invoke("privatize", source, target, *args)
        assert run.exit_code == 0, (chunk_rows, run.stderr)
        gates = pq.read_table(target, columns=["gate"]).column("gate")
        assert gates.cast(pa.string()).to_pylist() == frame["gate"].tolist()


def test_the_memo_key_warning_speaks_of_the_command_line(
    make_input: MakeInput, tmp_path: Path
) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    args = [*options("bloom", "dest", {}), "--user", "passenger_id"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = invoke("privatize", source, target, *args)
    assert run.exit_code == 0, run.stderr
    said = run.stderr + "".join(str(w.message) for w in caught)
    assert "memoized under this call's key only" in said
    assert "--memo-key-file" in said


# --------------------------------------------------------------------- installed command


def test_installed_command_privatizes_and_charges(
    script: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """``frameldp privatize`` as a user runs it: CSV in, Parquet out, ledger charged once; a
    mistake is one line on stderr, exit status 1."""
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("flights", epsilon=10.0)
    source, target = make_input("csv"), tmp_path / "release.parquet"
    args = [str(a) for a in _charge_args(source, target, domains, ledger)]
    done = subprocess.run(
        [script, *args, "--chunk-rows", "1000"],
        capture_output=True,
        encoding="utf-8",
        env=script_environment(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {ROWS} rows, columns ['dest', 'carrier']")
    reference = in_memory(
        flights(), {"dest": mechanism("rappor", "dest"), "carrier": mechanism("krr", "carrier")}
    )
    assert_same_reports(target, reference, ["dest", "carrier"])
    assert len(Ledger(ledger).history("flights")) == 1

    done = subprocess.run(
        [script, "privatize", str(source), str(tmp_path / "other.parquet")]
        + [str(a) for a in options("krr", "nope", {"nope": domains["carrier"]})],
        capture_output=True,
        encoding="utf-8",
        env=script_environment(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: column 'nope' not found; columns are {list(flights().columns)}"
    ]


BIG_ROWS = 2_000_000


def test_installed_command_stopped_by_sigterm_leaves_nothing_and_charges_nothing(
    script: str, tmp_path: Path
) -> None:
    """SIGTERM while batches are being written (the temporary file has data, the ledger's
    transaction is open): no output, no temporary file, no charge."""
    carriers = pa.array(FLIGHTS_DOMAINS["carrier"])
    codes = np.random.default_rng(0).integers(0, len(carriers), BIG_ROWS).astype(np.int32)
    column = pa.DictionaryArray.from_arrays(pa.array(codes), carriers)
    source = tmp_path / "big.parquet"
    pq.write_table(pa.table({"carrier": column}), source, row_group_size=100_000)
    domain = tmp_path / "carrier.txt"
    domain.write_text("\n".join(FLIGHTS_DOMAINS["carrier"]))
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget("flights", epsilon=10.0)
    target = tmp_path / "release.parquet"
    process = subprocess.Popen(
        [script, "privatize", str(source), str(target), "--chunk-rows", "2000"]
        + [str(a) for a in options("krr", "carrier", {"carrier": domain})]
        + ["--ledger", str(ledger), "--budget", "flights"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8",
        env=script_environment(),
    )
    try:
        deadline = time.monotonic() + 60
        while not [p for p in tmp_path.glob(".release.parquet.*.tmp") if p.stat().st_size > 0]:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no batch was written within 60 s"
            time.sleep(0.005)
        time.sleep(0.1)
        assert process.poll() is None, "the run finished before it could be interrupted"
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr
    assert stdout == ""
    assert not target.exists()
    assert leftovers(tmp_path) == []
    assert Ledger(ledger).history("flights") == []
