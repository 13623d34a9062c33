"""``frameldp privatize --mechanism auto`` and every frequency oracle by name, then
``frameldp estimate``: the release holds the in-memory reports and its estimate the in-memory
table, in Parquet and CSV."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import frameldp
from frameldp.cli.estimate import estimate_file
from frameldp.datasets import FLIGHTS_DOMAINS

from .conftest import (
    EPSILON,
    SEED,
    MakeInput,
    expected,
    flights,
    in_memory,
    invoke,
    released,
    seeded,
)

NAMES = (
    "auto",
    "optimized_unary_encoding",
    "local_hashing",
    "subset_selection",
    "hadamard_response",
    "randomized_response",
)


def _in_memory_mechanism(name: str) -> frameldp.core.Mechanism:
    domain = FLIGHTS_DOMAINS["dest"]
    if name == "auto":
        return frameldp.choose_mechanism(EPSILON, domain=domain)
    return _built(name, domain)


def _built(name: str, domain: list[str]) -> frameldp.core.Mechanism:
    classes = {
        "optimized_unary_encoding": frameldp.OptimizedUnaryEncoding,
        "local_hashing": frameldp.LocalHashing,
        "subset_selection": frameldp.SubsetSelection,
        "hadamard_response": frameldp.HadamardResponse,
        "randomized_response": frameldp.RandomizedResponse,
    }
    return classes[name](EPSILON, domain=domain)  # type: ignore[no-any-return]


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
@pytest.mark.parametrize("name", NAMES)
def test_every_oracle_by_name_and_auto(
    name: str, suffix: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / f"release.{suffix}"
    run = invoke(
        "privatize",
        make_input("parquet", rows=800),
        target,
        "--column",
        "dest",
        "--mechanism",
        name,
        "--epsilon",
        EPSILON,
        "--domain-file",
        domains["dest"],
        "--seed",
        SEED,
        "--chunk-rows",
        300,
    )
    assert run.exit_code == 0, run.stderr
    mech = _in_memory_mechanism(name)
    said = f"dest: {mech.title} (chosen by auto"
    assert (said in run.stdout) == (name == "auto"), run.stdout
    reference = in_memory(flights(800), {"dest": mech})
    wanted = expected(reference, "dest")
    found = released(target, "dest")
    if isinstance(wanted[0], int):  # integer reports (local hashing, Hadamard) read as CSV text
        found = [int(v) for v in found]
    assert found == wanted
    (table,) = estimate_file(target, chunk_rows=250).tables
    wanted_table = reference.ldp.debias("dest")
    assert table.mechanism == mech
    assert table.privacy == seeded(wanted_table.privacy)
    pd.testing.assert_frame_equal(table.to_pandas(), wanted_table.to_pandas())


@pytest.mark.parametrize("name", ["local_hashing", "auto"])
def test_max_weight_is_refused_outside_rappor(
    name: str, make_input: MakeInput, domains: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "release.parquet"
    run = invoke(
        "privatize",
        make_input("parquet", rows=50),
        target,
        "--column",
        "dest",
        "--mechanism",
        name,
        "--epsilon",
        1,
        "--domain-file",
        domains["dest"],
        "--max-weight",
        3,
    )
    assert run.exit_code == 1
    assert "--max-weight does not apply to" in run.stderr
    assert not target.exists()
