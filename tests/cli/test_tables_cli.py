"""``frameldp estimate --by`` and ``--joint``, and ``frameldp plan``: the file's tables equal
the in-memory ones (Parquet and CSV); report columns are refused as group keys."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import frameldp
from frameldp.cli.estimate import estimate_file, long_table
from frameldp.datasets import FLIGHTS_DOMAINS

from .conftest import (
    EPSILON,
    SEED,
    MakeInput,
    assert_user_error,
    flights,
    in_memory,
    invoke,
)


def _release(make_input: MakeInput, domains: dict[str, Path], target: Path) -> Path:
    run = invoke(
        "privatize",
        make_input("parquet", rows=900),
        target,
        "--column",
        "carrier",
        "--mechanism",
        "krr",
        "--epsilon",
        EPSILON,
        "--domain-file",
        domains["carrier"],
        "--column",
        "dest",
        "--mechanism",
        "optimized_unary_encoding",
        "--epsilon",
        EPSILON,
        "--domain-file",
        domains["dest"],
        "--keep",
        "origin",
        "--seed",
        SEED,
        "--chunk-rows",
        250,
    )
    assert run.exit_code == 0, run.stderr
    return target


def _reference() -> pd.DataFrame:
    mechanisms = {
        "carrier": frameldp.RandomizedResponse(EPSILON, domain=FLIGHTS_DOMAINS["carrier"]),
        "dest": frameldp.OptimizedUnaryEncoding(EPSILON, domain=FLIGHTS_DOMAINS["dest"]),
    }
    return in_memory(flights(900), mechanisms)


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_grouped_and_joint_estimates_equal_the_frame_api(
    suffix: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    path = _release(make_input, domains, tmp_path / f"release.{suffix}")
    reference = _reference()
    found = estimate_file(
        path, ["dest"], by=["origin"], joint=[("carrier", "dest")], chunk_rows=200
    )
    grouped, joint = found.tables
    expected = reference.ldp.debias("dest", by="origin")
    assert [g.key for g in grouped.groups] == [g.key for g in expected.groups]
    for mine, theirs in zip(grouped.groups, expected.groups, strict=True):
        pd.testing.assert_series_equal(
            pd.Series(mine.estimate.counts), pd.Series(theirs.estimate.counts), rtol=1e-12
        )
    expected_joint = reference.ldp.debias(["carrier", "dest"], by="origin")
    for mine, theirs in zip(joint.groups, expected_joint.groups, strict=True):
        pd.testing.assert_series_equal(
            pd.Series(mine.estimate.counts), pd.Series(theirs.estimate.counts), rtol=1e-12
        )
    assert joint.privacy.seeded
    stacked = long_table(found.tables)
    assert set(stacked["column"]) == {"dest", "carrier,dest"}
    assert stacked["category"].str.contains("|", regex=False).any()


def test_the_command_prints_and_writes_grouped_tables(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    path = _release(make_input, domains, tmp_path / "release.parquet")
    out = tmp_path / "tables.csv"
    run = invoke(
        "estimate", path, "--by", "origin", "--joint", "carrier,dest", "--out", out, "--top", "2"
    )
    assert run.exit_code == 0, run.stderr
    assert "by origin" in run.stdout
    assert "carrier × dest" in run.stdout
    written = pd.read_csv(out)
    assert {"column", "origin", "category", "count"} <= set(written.columns)
    for by in ("dest", "carrier"):
        refused = invoke("estimate", path, "--by", by)
        assert_user_error(refused, "public columns")
    assert_user_error(invoke("estimate", path, "--joint", "carrier"), "--joint")


def test_a_joint_table_of_a_column_and_its_copy_is_refused(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """A report column twice, or with a copy of it written to Parquet from pandas (the copy
    keeps the report type), shares its noise: ``--joint`` refuses both, naming the columns."""
    path = _release(make_input, domains, tmp_path / "release.parquet")
    assert_user_error(invoke("estimate", path, "--joint", "carrier,carrier"), "share noise")
    copied = tmp_path / "copied.parquet"
    frame = pd.read_parquet(path)
    frame.assign(again=frame["carrier"]).to_parquet(copied)
    refused = invoke("estimate", copied, "--joint", "again,carrier")
    assert_user_error(refused, "'again' and 'carrier'")
    assert "assumes independent reports" in refused.stderr
    assert invoke("estimate", copied, "--joint", "carrier,dest").exit_code == 0


def test_the_plan_command(tmp_path: Path) -> None:
    run = invoke("plan", "--n", "100000", "--domain-size", "50", "--std-error", "0.005")
    assert run.exit_code == 0, run.stderr
    plan = frameldp.plan(domain=50, n=100_000, std_error=0.005)
    assert f"{plan.epsilon:.6g}" in run.stdout
    domain = tmp_path / "domain.txt"
    domain.write_text("a\nb\nc\n")
    image = tmp_path / "plan.png"
    run = invoke("plan", "--n", "1000", "--domain-file", domain, "--epsilon", "1", "--plot", image)
    assert run.exit_code == 0, run.stderr
    assert "randomized_response" in run.stdout
    assert image.read_bytes().startswith(b"\x89PNG")
    assert_user_error(
        invoke("plan", "--n", "1000", "--domain-size", "5"),
        "--epsilon, --std-error, --max-posterior and --max-tpr",
    )


def test_the_plan_command_by_risk(tmp_path: Path) -> None:
    """``--max-posterior``: the largest epsilon at which an attacker who gave 1% believes at
    most 10% (ln(0.1 / 0.9) - ln(0.01 / 0.99) = 2.3979), and what the plan lets one learn."""
    image = tmp_path / "risk.png"
    run = invoke(
        "plan",
        "--n",
        "10000",
        "--domain-size",
        "20",
        "--max-posterior",
        "0.1",
        "--prior",
        "0.01",
        "--plot",
        image,
    )
    assert run.exit_code == 0, run.stderr
    assert "2.3979" in run.stdout
    assert "believed a person's value    1% -> at most 10%" in run.stdout
    assert image.read_bytes().startswith(b"\x89PNG")
    run = invoke("plan", "--n", "10000", "--domain-size", "20", "--max-tpr", "0.2", "--fpr", "0.01")
    assert run.exit_code == 0, run.stderr
    assert f"{math.log(20):.6g}" in run.stdout
    assert_user_error(
        invoke(
            "plan", "--n", "100", "--domain-size", "5", "--max-posterior", "0.1", "--fpr", "0.1"
        ),
        "--fpr goes with --max-tpr",
    )
    assert_user_error(
        invoke(
            "plan", "--n", "100", "--domain-size", "5", "--max-posterior", "0.01", "--prior", "0.2"
        ),
        "max_posterior=0.01 is not above prior=0.2",
    )
    assert_user_error(
        invoke("plan", "--n", "100", "--domain-size", "5", "--max-posterior", "1.5"),
        "max_posterior",
    )


def test_a_joint_table_states_what_a_person_loses_in_both_columns(tmp_path: Path) -> None:
    """(Attack review) A release with ``user=`` of people holding three rows, two k-RR columns
    at epsilon 1: the joint table costs a person 3 + 3 = 6, as the frame API states, and two
    such files composed 12; the command line stated 2 (two reports' epsilon)."""
    people = [f"u{i // 3}" for i in range(300)]
    frame = pd.DataFrame({"user": people, "a": ["x", "y", "z"] * 100, "b": ["y", "z", "x"] * 100})
    mechanism = frameldp.RandomizedResponse(1.0, domain=["x", "y", "z"])
    paths = []
    for night in range(2):
        release = frame.ldp.privatize({"a": mechanism, "b": mechanism}, user="user")
        expected = release.ldp.debias(["a", "b"]).privacy.epsilon
        paths.append(tmp_path / f"night{night}.parquet")
        release.drop(columns="user").to_parquet(paths[-1])
    assert expected == pytest.approx(6.0)
    one = estimate_file(paths[0], [], joint=[("a", "b")]).tables[0]
    assert one.privacy.epsilon == pytest.approx(expected)
    both = estimate_file(paths, [], joint=[("a", "b")], releases="compose").tables[0]
    assert both.privacy.epsilon == pytest.approx(2 * expected)
