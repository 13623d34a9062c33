"""``frameldp privatize --collect sample``: the file equals the in-memory release, validates
with its nulls, states and charges the largest epsilon, and ``estimate`` scales its counts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import frameldp
from frameldp.cli.estimate import estimate_file
from frameldp.datasets import FLIGHTS_DOMAINS

from .conftest import SEED, MakeInput, assert_user_error, flights, in_memory, invoke, released


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_a_sampled_release_is_the_in_memory_one(
    suffix: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / f"release.{suffix}"
    run = invoke(
        "privatize", make_input("parquet"), target, "--column", "carrier", "--column", "delay",
        "--mechanism", "krr", "--mechanism", "optimized_unary_encoding",
        "--epsilon", "1", "--epsilon", "2",
        "--domain-file", domains["carrier"], "--domain-file", domains["delay"],
        "--collect", "sample", "--seed", SEED, "--chunk-rows", 300,
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    assert "privacy per person: ε = 2 " in run.stdout
    mechanisms = {
        "carrier": frameldp.RandomizedResponse(1.0, domain=FLIGHTS_DOMAINS["carrier"]),
        "delay": frameldp.OptimizedUnaryEncoding(2.0, domain=FLIGHTS_DOMAINS["delay"]),
    }
    reference = in_memory(flights(), mechanisms, collect="sample")
    absent = None if suffix == "parquet" else ""  # a CSV cell without a report is empty
    wanted = [absent if pd.isna(v) else v for v in reference["carrier"].tolist()]
    assert released(target, "carrier") == wanted
    bits = released(target, "delay")  # bytes, or hex text in a CSV file
    assert [b in (None, b"") for b in bits] == reference["delay"].isna().tolist()
    tables = estimate_file(target, chunk_rows=250).tables
    for column, table in zip(mechanisms, tables, strict=True):
        assert table.n == len(reference)
        wanted_table = reference.ldp.debias(column).to_pandas()
        pd.testing.assert_frame_equal(table.to_pandas(), wanted_table)


def test_collect_is_checked(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    run = invoke(
        "privatize", make_input("parquet"), tmp_path / "out.parquet", "--column", "carrier",
        "--mechanism", "krr", "--epsilon", "1", "--domain-file", domains["carrier"],
        "--collect", "sample",
    )  # fmt: skip
    assert_user_error(run, "two or more columns")
    assert not (tmp_path / "out.parquet").exists()


def test_collect_auto_says_what_it_chose(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "release.parquet"
    run = invoke(
        "privatize", make_input("parquet"), target, "--column", "carrier", "--column", "delay",
        "--column", "origin", "--mechanism", "krr", "--epsilon", "0.5",
        "--domain-file", domains["carrier"], "--domain-file", domains["delay"],
        "--domain-file", domains["origin"], "--collect", "auto", "--seed", SEED,
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    assert "--collect auto: sample (the smaller total variance)" in run.stdout
    assert "privacy per person: ε = 1.5 " in run.stdout


def test_fake_prior_is_read_from_json(
    make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    """``--fake-prior``: the file's laws give the in-memory release's fakes (both forms of a
    law); a law naming no bucket of its column is refused and writes nothing."""
    prior = tmp_path / "prior.json"
    prior.write_text('{"carrier": {"AA": 3, "DL": 1}, "delay": [["early", 1], ["late_15_60", 1]]}')
    target = tmp_path / "release.parquet"
    options = [
        "--column", "carrier", "--column", "delay", "--mechanism", "krr", "--epsilon", "1",
        "--domain-file", domains["carrier"], "--domain-file", domains["delay"],
        "--collect", "sample+fake", "--seed", SEED,
    ]  # fmt: skip
    run = invoke("privatize", make_input("parquet"), target, *options, "--fake-prior", prior)
    assert run.exit_code == 0, run.stderr
    mechanisms = {
        c: frameldp.RandomizedResponse(1.0, domain=FLIGHTS_DOMAINS[c]) for c in ("carrier", "delay")
    }
    laws = {"carrier": {"AA": 3, "DL": 1}, "delay": {"early": 1, "late_15_60": 1}}
    reference = in_memory(flights(), mechanisms, collect="sample+fake", fake_prior=laws)
    for column in mechanisms:
        assert released(target, column) == reference[column].tolist()
    prior.write_text('{"carrier": {"XX": 1}}')
    refused = tmp_path / "refused.parquet"
    run = invoke("privatize", make_input("parquet"), refused, *options, "--fake-prior", prior)
    assert_user_error(run, "not one of its buckets")
    assert not refused.exists()
    prior.write_text("{not json")
    run = invoke("privatize", make_input("parquet"), refused, *options, "--fake-prior", prior)
    assert_user_error(run, "not JSON")
    for text, message in [
        ('{"carrier": [[["AA"], 1]]}', "expected"),  # a category that is no JSON scalar
        ('{"carrier": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ]:
        prior.write_text(text)
        run = invoke("privatize", make_input("parquet"), refused, *options, "--fake-prior", prior)
        assert_user_error(run, message)
    assert not refused.exists()
