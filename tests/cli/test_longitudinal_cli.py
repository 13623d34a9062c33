"""``frameldp privatize --epsilon-infinity --user --memo-key-file``: every mechanism that
memoizes permanent responses writes the in-memory pandas release, and nightly runs under a
ledger are charged epsilon_inf once; options that apply to no column are refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import frameldp
from frameldp.accounting import Ledger, per_person
from frameldp.datasets import FARE_BOUNDS, FLIGHTS_DOMAINS

from .conftest import (
    SEED,
    MakeInput,
    assert_user_error,
    expected,
    flights,
    in_memory,
    invoke,
    leftovers,
    released,
    write_input,
)

MEMO = bytes(range(32))
LONGITUDINAL = {
    "rappor": frameldp.Rappor,
    "krr": frameldp.RandomizedResponse,
    "optimized_unary_encoding": frameldp.OptimizedUnaryEncoding,
    "local_hashing": frameldp.LocalHashing,
    "subset_selection": frameldp.SubsetSelection,
}


def _memo_file(tmp_path: Path) -> Path:
    path = tmp_path / "memo.key"
    path.write_bytes(MEMO)
    return path


@pytest.mark.parametrize("kind", LONGITUDINAL)
def test_a_memoized_release_is_the_in_memory_release(
    kind: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    source, target = make_input("parquet", rows=300), tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        source,
        target,
        *("--column", "carrier", "--mechanism", kind, "--epsilon", 1),
        *("--domain-file", domains["carrier"], "--epsilon-infinity", 3),
        *("--user", "passenger_id", "--memo-key-file", _memo_file(tmp_path)),
        *("--seed", SEED, "--chunk-rows", 70),
    )
    assert run.exit_code == 0, run.stderr
    mechanism = LONGITUDINAL[kind](1.0, domain=FLIGHTS_DOMAINS["carrier"], epsilon_infinity=3.0)
    reference = in_memory(flights(300), {"carrier": mechanism}, user="passenger_id", memo_key=MEMO)
    assert released(target, "carrier") == expected(reference, "carrier")


@pytest.mark.parametrize("kind", [*LONGITUDINAL, "auto"])
def test_nightly_runs_are_charged_each_persons_loss(
    kind: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """Three nights of one column under one ledger budget: one memo, whose charge grows with
    every night (a person's value may change: tests/privacy/test_person_unit.py), exactly as
    the library charges the same three releases of the same rows."""
    source, book = make_input("parquet", rows=100), tmp_path / "ledger.db"
    Ledger(book).set_budget("nightly", epsilon=1e6)
    library = Ledger(":memory:")
    library.set_budget("nightly", epsilon=1e6)
    frame = flights(100)
    spent = []
    for night in range(3):
        run = invoke(
            "privatize",
            source,
            tmp_path / f"night{night}.parquet",
            *("--column", "carrier", "--mechanism", kind, "--epsilon", 1),
            *("--domain-file", domains["carrier"], "--epsilon-infinity", 3),
            *("--user", "passenger_id", "--memo-key-file", _memo_file(tmp_path)),
            *("--ledger", book, "--budget", "nightly"),
        )
        assert run.exit_code == 0, run.stderr
        spent.append(Ledger(book).spent("nightly"))
        written = pd.read_parquet(tmp_path / f"night{night}.parquet")
        frame.ldp.privatize(
            {"carrier": written.ldp.mechanisms["carrier"]},
            user="passenger_id",
            memo_key=MEMO,
            ledger=library,
            budget="nightly",
        )
    assert spent[0] < spent[1] < spent[2]
    assert spent[2] == pytest.approx(library.spent("nightly"), rel=1e-12)
    assert len(Ledger(book).history("nightly")) == 3


def test_nights_alternating_parquet_and_csv_keep_the_permanent_responses(
    domains: dict[str, Path], tmp_path: Path
) -> None:
    """Integer ids in Parquet, the same ids as CSV text, night after night under one memo key.
    Every CSV night is read with the integer ids the ledger charged, so a person's reports on
    two nights are instantaneous responses to one permanent response: they agree with
    probability 0.377 (k = 12, epsilon_1 = 2, epsilon_inf = 3), against 0.194 for independent
    permanent responses (what CSV ids drew before). Over 4000 people the share of agreeing
    reports falls below the midpoint 0.2855 with probability at most exp(-2 * 4000 * 0.0915**2)
    < 1e-29 (Hoeffding), and rises above it under independent permanent responses with the
    same bound. One memo, one charge of a person's four reports. Text that is not an integer's
    decimal spelling is refused, naming the recorded type."""
    base = flights(400)["carrier"].tolist()
    frame = pd.DataFrame({"carrier": base * 10, "passenger_id": range(4000)})
    book = tmp_path / "ledger.db"
    Ledger(book).set_budget("nightly", epsilon=1e6)
    options = (
        *("--column", "carrier", "--mechanism", "krr", "--epsilon", 2),
        *("--domain-file", domains["carrier"], "--epsilon-infinity", 3),
        *("--user", "passenger_id", "--memo-key-file", _memo_file(tmp_path)),
        *("--ledger", book, "--budget", "nightly"),
    )
    nights = []
    for night, suffix in enumerate(["parquet", "csv", "parquet", "csv"]):
        source = write_input(frame, tmp_path / f"in{night}.{suffix}")
        run = invoke("privatize", source, tmp_path / f"night{night}.parquet", *options)
        assert run.exit_code == 0, run.stderr
        nights.append(released(tmp_path / f"night{night}.parquet", "carrier"))
    for reports in nights[1:]:
        agree = np.mean([a == b for a, b in zip(reports, nights[0], strict=True)])
        assert agree > (0.377 + 0.194) / 2
    history = Ledger(book).history("nightly")
    assert len(history) == 4
    memos = {json.dumps(entry.guarantee.parameters.get("memo")) for entry in history}
    assert len(memos) == 1  # one memo: the CSV nights were read as the integer ids
    padded = frame.assign(passenger_id=[f"{i:04d}" for i in range(4000)])
    source = tmp_path / "padded.csv"
    padded.to_csv(source, index=False)
    refused = invoke("privatize", source, tmp_path / "padded.parquet", *options)
    assert_user_error(refused, "'passenger_id', row 0", "'0000'", "integers")


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (
            "--column carrier --mechanism krr --epsilon 1 --domain-file D --epsilon-infinity 3",
            ["--epsilon-infinity needs --user", "krr"],
        ),
        (
            "--column carrier --mechanism hadamard_response --epsilon 1 --domain-file D "
            "--epsilon-infinity 3 --user passenger_id",
            ["--epsilon-infinity does not apply to hadamard_response"],
        ),
        (
            "--column carrier --mechanism krr --epsilon 1 --domain-file D --max-length 8",
            ["--max-length does not apply to krr"],
        ),
        (
            "--column carrier --mechanism krr --epsilon 1 --domain-file D --num-bits 64",
            ["--num-bits does not apply to krr"],
        ),
    ],
    ids=["no-user", "hadamard", "max-length-on-krr", "num-bits-on-krr"],
)
def test_longitudinal_option_mistakes_are_one_line_errors(
    make_input: MakeInput,
    domains: dict[str, Path],
    tmp_path: Path,
    arguments: str,
    fragments: list[str],
) -> None:
    source, target = make_input("parquet", rows=20), tmp_path / "release.parquet"
    args = [str(domains["carrier"]) if a == "D" else a for a in arguments.split()]
    assert_user_error(invoke("privatize", source, target, *args), *fragments)
    assert not target.exists()
    assert leftovers(tmp_path) == []


def test_a_spec_file_refuses_an_option_its_mechanism_does_not_take(
    make_input: MakeInput, tmp_path: Path
) -> None:
    spec = tmp_path / "job.json"
    domain = list(FLIGHTS_DOMAINS["carrier"])
    for options, fragment in [
        ({"mechanism": "hadamard_response", "epsilon_infinity": 3.0}, "'epsilon_infinity'"),
        ({"mechanism": "krr", "max_length": 8}, "'max_length'"),
    ]:
        spec.write_text(json.dumps({"carrier": {"epsilon": 1.0, "domain": domain, **options}}))
        target = tmp_path / "release.parquet"
        run = invoke("privatize", make_input("parquet", rows=20), target, "--spec", spec)
        assert_user_error(run, "column 'carrier'", fragment, "does not apply")
        assert not target.exists()


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_a_person_is_the_unit_on_the_command_line(
    kind: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """--user with any mechanism: the summary, the file's guarantee and the ledger state the
    loss of the person holding the most rows, as the library does for the same rows; with
    --max-rows-per-user below it, nothing is written or charged."""
    frame = flights(120).assign(passenger_id=[i // 3 for i in range(120)])  # 3 rows a person
    source, book = make_input(kind, frame=frame), tmp_path / "ledger.db"
    Ledger(book).set_budget("b", epsilon=100.0)
    options = (
        *("--column", "carrier", "--mechanism", "krr", "--epsilon", 1),
        *("--domain-file", domains["carrier"], "--user", "passenger_id"),
        *("--ledger", book, "--budget", "b"),
    )
    run = invoke("privatize", source, tmp_path / "out.parquet", *options)
    assert run.exit_code == 0, run.stderr
    one = frameldp.RandomizedResponse(1.0, domain=FLIGHTS_DOMAINS["carrier"]).privacy.epsilon
    assert Ledger(book).spent("b") == pytest.approx(3 * one)
    assert "privacy per person: ε = 3" in run.stdout
    written = pd.read_parquet(tmp_path / "out.parquet")
    assert written.ldp.privacy.epsilon == pytest.approx(3 * one)
    estimated = invoke("estimate", tmp_path / "out.parquet", "--column", "carrier")
    assert estimated.exit_code == 0, estimated.stderr
    assert "ε = 3" in estimated.stdout, estimated.stdout
    refused = invoke(
        "privatize", source, tmp_path / "two.parquet", *options, "--max-rows-per-user", 2
    )
    assert_user_error(refused, "max_rows_per_user=2", "3 rows")
    assert not (tmp_path / "two.parquet").exists()
    assert len(Ledger(book).history("b")) == 1


def test_several_files_are_several_releases(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """Two nights' files estimated together: refused, naming the releases, unless
    --releases compose; then each person's report of each night composes (2 epsilon, where
    one file states epsilon), every report is counted, and with --user each night's rows per
    person add up."""
    source = make_input("parquet", rows=120)
    options = ("--column", "carrier", "--mechanism", "krr", "--epsilon", 1)
    options += ("--domain-file", domains["carrier"])
    nights = [tmp_path / f"night{i}.parquet" for i in range(2)]
    for night in nights:
        assert invoke("privatize", source, night, *options).exit_code == 0
    refused = invoke("estimate", *nights, "--column", "carrier")
    assert_user_error(refused, "2 files of 2 releases", "--releases compose")
    composed = invoke("estimate", *nights, "--column", "carrier", "--releases", "compose")
    assert composed.exit_code == 0, composed.stderr
    assert "n = 240, ε = 2 " in composed.stdout, composed.stdout
    alone = invoke("estimate", nights[0], "--column", "carrier")
    assert "n = 120, ε = 1 " in alone.stdout, alone.stdout
    frame = flights(120).assign(passenger_id=[i // 3 for i in range(120)])
    people = make_input("parquet", frame=frame, name="people")
    counted = [tmp_path / f"people{i}.parquet" for i in range(2)]
    for night in counted:
        run = invoke("privatize", people, night, *options, "--user", "passenger_id")
        assert run.exit_code == 0, run.stderr
    stacked = invoke("estimate", *counted, "--column", "carrier", "--releases", "compose")
    one = frameldp.RandomizedResponse(1.0, domain=FLIGHTS_DOMAINS["carrier"]).privacy
    six = per_person(one, 6).epsilon_at(1e-6)  # 3 rows per person in each of 2 releases
    assert f"n = 240, ε = {six:.4g} " in stacked.stdout, stacked.stdout
    bad = invoke("estimate", *nights, "--column", "carrier", "--releases", "merge")
    assert_user_error(bad, "--releases must be one of")


def test_a_memoized_numeric_release_is_the_in_memory_release(
    make_input: MakeInput, tmp_path: Path
) -> None:
    """Stochastic rounding memoizes (levels and permanent responses per person and value);
    the other numeric mechanisms refuse --epsilon-infinity."""
    source, target = make_input("parquet", rows=300), tmp_path / "release.parquet"
    bounds = f"{FARE_BOUNDS[0]:g},{FARE_BOUNDS[1]:g}"
    common = (
        *("--column", "fare", "--epsilon", 1, "--bounds", bounds, "--epsilon-infinity", 3),
        *("--user", "passenger_id", "--memo-key-file", _memo_file(tmp_path), "--seed", SEED),
    )
    run = invoke("privatize", source, target, "--mechanism", "rounding", *common)
    assert run.exit_code == 0, run.stderr
    mechanism = frameldp.StochasticRounding(1.0, bounds=FARE_BOUNDS, epsilon_infinity=3.0)
    reference = in_memory(flights(300), {"fare": mechanism}, user="passenger_id", memo_key=MEMO)
    assert released(target, "fare") == reference["fare"].tolist()
    refused = invoke("privatize", source, tmp_path / "d.parquet", "--mechanism", "duchi", *common)
    assert refused.exit_code != 0
    assert "epsilon-infinity" in refused.stderr


def test_a_scheme_3_memo_key_file_made_by_the_command_line_is_the_in_memory_release(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """``frameldp memo-key`` writes a new key (owner-only, never over an existing file); a
    release under it is the pandas release under the same key, and differs from the release
    under the same 32 bytes as a scheme-2 key (other permanent responses)."""
    key_file = tmp_path / "memo3.key"
    made = invoke("memo-key", key_file)
    assert made.exit_code == 0, made.stderr
    assert key_file.stat().st_mode & 0o777 == 0o600
    again = invoke("memo-key", key_file)
    assert_user_error(again, "the file exists")
    key = key_file.read_bytes()
    assert key.startswith(frameldp.core.randomness.MEMO_KEY_PREFIX)
    source, target = make_input("parquet", rows=300), tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        source,
        target,
        *("--column", "carrier", "--mechanism", "krr", "--epsilon", 1),
        *("--domain-file", domains["carrier"], "--epsilon-infinity", 1),
        *("--user", "passenger_id", "--memo-key-file", key_file, "--seed", SEED),
    )
    assert run.exit_code == 0, run.stderr
    mechanism = frameldp.RandomizedResponse(
        1.0, domain=FLIGHTS_DOMAINS["carrier"], epsilon_infinity=1.0
    )
    frame = flights(300)
    reference = in_memory(frame, {"carrier": mechanism}, user="passenger_id", memo_key=key)
    assert released(target, "carrier") == expected(reference, "carrier")
    raw = in_memory(frame, {"carrier": mechanism}, user="passenger_id", memo_key=key[-32:])
    assert expected(raw, "carrier") != expected(reference, "carrier")
