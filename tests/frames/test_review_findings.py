"""Regression tests for the attacker's review of issue 13's change (each failed before it).

* A LazyFrame with Bloom RAPPOR's ``user=`` but no ``memo_key=``/``key=`` memoized under a new
  fresh key at each collect while every charge named one memo, so the ledger folded independent
  permanent responses and charged 1.6 instead of 2 for two collects: refused, as on Dask.
* Balcer–Cheu with a reused ``key=`` repeated everyone's noise messages, so two runs over data
  that differ in one person differed by that person's true value: ``key=`` is refused.
* Inputs that raised foreign exceptions: a list instead of a mapping, a multi-output expression,
  a complex column, a list-typed user column; and a key file given as the CLI's input was
  quoted as its own header.
"""

from __future__ import annotations

from pathlib import Path

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest
from typer.testing import CliRunner

import frameldp
from frameldp.cli import app

from .conftest import CARRIERS, small_data

BLOOM = {"encoding": "bloom", "epsilon": 1.0, "epsilon_infinity": 2.0, "num_bits": 16}


def test_a_lazy_bloom_release_with_users_needs_a_memo_key(tmp_path: Path) -> None:
    ledger = frameldp.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("b", epsilon=100.0)
    lazy = pl.LazyFrame({"u": [f"u{i}" for i in range(100)], "v": ["apple"] * 100})

    with pytest.raises(frameldp.ParameterError, match=r"user='u' on a LazyFrame needs memo_key"):
        lazy.ldp.rappor("v", user="u", ledger=ledger, budget="b", **BLOOM)  # type: ignore[arg-type]

    assert ledger.history("b") == []
    first, second = (
        lazy.ldp.rappor("v", user="u", memo_key=bytes(32), **BLOOM).collect()  # type: ignore[arg-type]
        for _ in range(2)
    )
    # One memo key: each user keeps their cohort (and permanent response) in every release.
    assert first["v_cohort"].ext.storage().equals(second["v_cohort"].ext.storage())


def test_a_dask_bloom_release_with_users_needs_a_memo_key() -> None:
    frame = dd.from_pandas(pd.DataFrame({"u": ["x", "y"] * 10, "v": ["a", "b"] * 10}), 2)

    with pytest.raises(frameldp.ParameterError, match=r"user='u' on Dask needs memo_key"):
        frame.ldp.rappor("v", user="u", **BLOOM)  # type: ignore[arg-type]

    frame.ldp.rappor("v", user="u", memo_key=bytes(32), **BLOOM)  # type: ignore[arg-type]


def test_balcer_cheu_refuses_a_caller_key() -> None:
    frame = pd.DataFrame({"v": ["a", "b", "c"] * 3000})

    with pytest.raises(frameldp.ParameterError, match="key= is refused for Balcer–Cheu"):
        frame.ldp.balcer_cheu("v", 1.0, 1e-6, domain=["a", "b", "c"], key=bytes(32))


@pytest.mark.parametrize(
    "call",
    [
        lambda: pd.DataFrame({"v": ["AA"]}).ldp.privatize(
            [("v", frameldp.RandomizedResponse(1.0, domain=CARRIERS))]  # type: ignore[arg-type]
        ),
        lambda: pl.DataFrame(small_data()).select(
            pl.col("carrier", "origin").ldp.krr(1.0, domain=CARRIERS)
        ),
        lambda: pl.DataFrame(small_data()).select(pl.all().ldp.krr(1.0, domain=CARRIERS)),
        lambda: pd.DataFrame({"v": [1j, 2j]}).ldp.krr("v", 1.0, domain=[1, 2]),
        lambda: pd.DataFrame({"v": ["a", "b"], "u": [[1], [2]]}).ldp.rappor("v", user="u", **BLOOM),
        lambda: pl.DataFrame({"v": ["a", "b"], "u": [[1], [2]]}).ldp.rappor("v", user="u", **BLOOM),
    ],
    ids=["list", "two-columns", "all", "complex", "pandas-list-users", "polars-list-users"],
)
@pytest.mark.filterwarnings("ignore::frameldp.FrameLDPWarning")
def test_odd_inputs_raise_frameldp_errors(call: object) -> None:
    with pytest.raises(frameldp.FrameLDPError):
        call()  # type: ignore[operator]


def test_a_key_file_given_as_the_input_is_not_quoted(tmp_path: Path) -> None:
    key = b"o259owoo3s-abcdefghijklmnopqrstu"
    (tmp_path / "key.csv").write_bytes(key + b"\n")
    (tmp_path / "domain.txt").write_text("AA\nDL\n")

    result = CliRunner().invoke(
        app,
        [
            "privatize",
            str(tmp_path / "key.csv"),
            str(tmp_path / "out.csv"),
            *("--column", "v", "--mechanism", "krr", "--epsilon", "1"),
            *("--domain-file", str(tmp_path / "domain.txt")),
        ],
    )

    assert result.exit_code == 1
    assert "is it a key file?" in result.stderr
    assert key[:8].decode() not in result.stderr
    assert not (tmp_path / "out.csv").exists()
