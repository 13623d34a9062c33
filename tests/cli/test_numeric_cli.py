"""The command line on numeric columns: ``privatize --bounds`` for every numeric mechanism (and
``auto``), its file equal to the in-memory release, ``estimate --mean`` and ``--quantiles``,
and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import frameldp
from frameldp.datasets import FARE_BOUNDS

from .conftest import SEED, MakeInput, assert_user_error, flights, in_memory, invoke, released

BOUNDS = f"{FARE_BOUNDS[0]:g},{FARE_BOUNDS[1]:g}"
NAMES = {
    "duchi": frameldp.DuchiMechanism,
    "piecewise": frameldp.PiecewiseMechanism,
    "hybrid": frameldp.HybridMechanism,
    "rounding": frameldp.StochasticRounding,
    "squarewave": frameldp.SquareWave,
}


@pytest.mark.parametrize("name", list(NAMES))
def test_a_numeric_release_is_the_in_memory_one(
    name: str, make_input: MakeInput, tmp_path: Path
) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    run = invoke(
        "privatize", source, target, "--column", "fare", "--mechanism", name,
        "--epsilon", "2", "--bounds", BOUNDS, "--seed", SEED,
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    mechanism = NAMES[name](2.0, bounds=FARE_BOUNDS)
    expected = in_memory(flights(), {"fare": mechanism})
    assert released(target, "fare") == expected["fare"].tolist()
    printed = invoke("estimate", target, "--mean", "fare")
    assert printed.exit_code == 0, printed.stderr
    assert "mean of fare" in printed.stdout


def test_auto_with_bounds_chooses_a_mean_mechanism(make_input: MakeInput, tmp_path: Path) -> None:
    source, target = make_input("csv"), tmp_path / "release.parquet"
    run = invoke(
        "privatize", source, target, "--column", "fare", "--mechanism", "auto",
        "--epsilon", "1", "--bounds", BOUNDS, "--seed", SEED,
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    chosen = frameldp.choose_mechanism(1.0, bounds=FARE_BOUNDS)
    assert chosen.name == "hybrid"
    assert "fare: Hybrid mechanism (chosen by auto: the smallest variance)" in run.stdout
    expected = in_memory(flights(), {"fare": chosen})
    assert released(target, "fare") == expected["fare"].tolist()


def test_estimate_prints_means_and_quantiles_and_writes_them(
    make_input: MakeInput, tmp_path: Path
) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    invoke(
        "privatize", source, target, "--column", "fare", "--mechanism", "squarewave",
        "--epsilon", "4", "--bounds", BOUNDS, "--buckets", "32", "--seed", SEED,
    )  # fmt: skip
    out = tmp_path / "estimates.csv"
    run = invoke(
        "estimate", target, "--mean", "fare", "--quantiles", "fare:0.1,0.5,0.9", "--out", out
    )
    assert run.exit_code == 0, run.stderr
    assert "quantiles of fare" in run.stdout
    assert "mean of fare" in run.stdout
    written = pd.read_csv(out)
    assert set(written["column"]) == {"fare"}
    assert written["q"].dropna().tolist() == [0.1, 0.5, 0.9]  # the quantiles are written too
    truth = flights()["fare"].mean()
    row = written[written["mean"].notna()].iloc[0]
    assert abs(row["mean"] - truth) < 6 * row["std_error"] + 10


def test_a_spec_file_takes_bounds(make_input: MakeInput, tmp_path: Path) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    spec = tmp_path / "job.json"
    spec.write_text(
        json.dumps({"fare": {"mechanism": "piecewise", "epsilon": 2.0, "bounds": [39, 1500]}})
    )
    run = invoke("privatize", source, target, "--spec", spec, "--seed", SEED)
    assert run.exit_code == 0, run.stderr
    expected = in_memory(flights(), {"fare": frameldp.PiecewiseMechanism(2.0, bounds=(39, 1500))})
    assert released(target, "fare") == expected["fare"].tolist()


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        ("--mechanism piecewise --epsilon 2", ["column 'fare'", "--bounds LO,HI is required"]),
        ("--mechanism piecewise --epsilon 2 --bounds 1,x", ["--bounds", "two numbers"]),
        ("--mechanism piecewise --epsilon 2 --bounds 5", ["--bounds", "LO,HI"]),
        ("--mechanism piecewise --epsilon 2 --bounds 9,1", ["column 'fare'", "lo < hi"]),
        ("--mechanism rounding --epsilon 2 --bounds 39,1500 --levels 1", ["levels"]),
        ("--mechanism krr --epsilon 2 --bounds 39,1500", ["--bounds", "does not apply"]),
    ],
)
def test_numeric_option_mistakes_are_one_line_errors(
    make_input: MakeInput, tmp_path: Path, arguments: str, fragments: list[str]
) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    args = ["--column", "fare", *arguments.split()]
    if "krr" in arguments:
        domain = tmp_path / "fares.txt"
        domain.write_text("39\n1500\n")
        args += ["--domain-file", str(domain)]
    assert_user_error(invoke("privatize", source, target, *args), *fragments)
    assert not target.exists()


def test_values_outside_the_bounds_fail_validation_unless_clipped(
    make_input: MakeInput, tmp_path: Path
) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    args = ["--column", "fare", "--mechanism", "hybrid", "--epsilon", "1", "--bounds", "50,400"]
    run = invoke("privatize", source, target, *args)
    assert run.exit_code == 1
    assert "between" in run.stderr
    assert not target.exists()
    clipped = invoke("privatize", source, target, *args, "--clip", "--seed", SEED)
    assert clipped.exit_code == 0, clipped.stderr


def test_quantiles_of_mean_reports_are_refused(make_input: MakeInput, tmp_path: Path) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    invoke(
        "privatize", source, target, "--column", "fare", "--mechanism", "hybrid",
        "--epsilon", "2", "--bounds", BOUNDS, "--seed", SEED,
    )  # fmt: skip
    assert_user_error(invoke("estimate", target, "--quantiles", "fare:0.5"), "fare", "Square Wave")
    assert_user_error(invoke("estimate", target, "--quantiles", "fare"), "COLUMN:q1")


def test_estimate_refuses_what_does_not_apply(make_input: MakeInput, tmp_path: Path) -> None:
    source, target = make_input("parquet"), tmp_path / "release.parquet"
    invoke(
        "privatize", source, target, "--column", "fare", "--mechanism", "squarewave",
        "--epsilon", "2", "--bounds", BOUNDS, "--buckets", "16", "--seed", SEED,
    )  # fmt: skip
    assert_user_error(invoke("estimate", target, "--mean", "fare", "--level", "95"), "level")
    assert_user_error(
        invoke("estimate", target, "--quantiles", "fare:0.5", "--by", "carrier"), "--by"
    )
    quantiles = invoke("estimate", target, "--quantiles", "fare:0.5")
    assert "quantiles of fare" in quantiles.stdout
    assert "distribution of fare" not in quantiles.stdout  # --quantiles alone: no histogram
    plot = tmp_path / "fare.png"
    assert invoke("estimate", target, "--plot", plot).exit_code == 0
    assert plot.stat().st_size > 0
