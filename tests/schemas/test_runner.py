"""How the schemas are run: never switched off, never letting pandera's own errors escape,
failing closed when a check cannot run, and the same failures on every path."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pandas as pd
import pandera.config
import polars as pl
import pytest

import frameldp
from frameldp import RandomizedResponse, Rappor
from frameldp.schemas import _declare, validate_input, validate_release
from frameldp.schemas import pandas as pandas_schemas
from frameldp.schemas import polars as polars_schemas
from frameldp.schemas._runner import pieces, structure

from .conftest import Backend, checks, failures

CARRIERS = ("AA", "DL", "UA")
KRR = RandomizedResponse(1.0, domain=CARRIERS)
RAPPOR = Rappor(1.0, domain=["ATL", "BOS"])


def _bad(backend: Backend) -> Any:
    return backend.make({"carrier": ["AA", "XX", None], "origin": ["ATL", "???", "BOS"]})


def test_pandera_configuration_cannot_switch_validation_off(backend: Backend) -> None:
    frame = _bad(backend)
    with pandera.config.config_context(validation_enabled=False, validation_depth="SCHEMA_ONLY"):
        error = failures(lambda: validate_input(frame, {"carrier": KRR, "origin": RAPPOR}))
    assert checks(error) == {
        ("carrier", "in_domain"),
        ("carrier", "not_nullable"),
        ("origin", "in_domain"),
    }


def test_pandas_falls_back_to_one_check_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """If pandera cannot build its lazy report, the checks run one by one: same failures."""
    frame = pd.DataFrame({"carrier": ["AA", "XX", None], "origin": ["ATL", "???", "BOS"], "x": 1})
    mechanisms = {"carrier": KRR, "origin": RAPPOR, "dest": KRR}
    expected = failures(lambda: validate_input(frame, mechanisms)).failures
    release = failures(lambda: validate_release(frame, mechanisms)).failures

    original = pandas_schemas._failures_from_table

    def broken(table: pd.DataFrame, frame: pd.DataFrame) -> Any:
        # As pandera's polars backend does: the report of column names builds, that of
        # failing values does not.
        if not table["check"].isin(_declare.STRUCTURAL).all():
            raise RuntimeError("pandera could not build its report")
        return original(table, frame)

    monkeypatch.setattr(pandas_schemas, "_failures_from_table", broken)
    fallback = failures(lambda: validate_input(frame, mechanisms)).failures
    assert sorted(map(repr, fallback)) == sorted(map(repr, expected))
    fallback = failures(lambda: validate_release(frame, mechanisms)).failures
    assert sorted(map(repr, fallback)) == sorted(map(repr, release))


def test_a_check_that_cannot_run_fails_closed(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = pandas_schemas if backend.library == "pandas" else polars_schemas

    def explode(rule: object) -> Any:
        def check(data: object) -> Any:
            raise RuntimeError("boom")

        return check

    monkeypatch.setitem(module._FUNCTIONS, _declare.InDomain, explode)
    frame = backend.make({"carrier": ["AA", "DL"]})
    error = failures(lambda: validate_input(frame, {"carrier": KRR}))
    assert checks(error) == {("carrier", "in_domain")}
    assert "boom" in str(error.failures[0]["value"])


def test_polars_reports_every_column_outside_a_strict_schema() -> None:
    frame = pl.DataFrame({"carrier": ["AA"], "a": [1], "b": [2], "c": [3]})
    error = failures(lambda: validate_release(frame, {"carrier": KRR, "origin": RAPPOR}))
    assert checks(error) == {
        ("a", "column_in_schema"),
        ("b", "column_in_schema"),
        ("c", "column_in_schema"),
        ("origin", "column_in_dataframe"),
    }


def test_the_message_is_short() -> None:
    frame = pd.DataFrame({f"c{i}": ["XX"] * 3 for i in range(8)})
    error = failures(lambda: validate_input(frame, {f"c{i}": KRR for i in range(8)}))
    lines = str(error).splitlines()
    assert lines[0] == "input schema: 24 failures in 8 check(s)"
    assert lines[1] == (
        "- column 'c0', check in_domain (value outside the public domain): 'XX' at row 0 (3 in all)"
    )
    assert lines[-1] == "- ... and 3 more check(s)"
    assert len(lines) == 7


def test_long_values_are_shortened_in_the_message() -> None:
    frame = pd.DataFrame({"carrier": ["X" * 500]})
    error = failures(lambda: validate_input(frame, {"carrier": KRR}))
    assert len(str(error).splitlines()[1]) < 160
    assert error.failures[0]["value"] == "X" * 500


def test_pieces_cover_every_check() -> None:
    bloom = frameldp.BloomRappor(f=0.5, p=0.25, q=0.75, num_bits=12, num_cohorts=4)
    declaration = _declare.declare_release({"url": bloom})
    names = []
    for column in declaration.columns:
        for piece in pieces(declaration, column):
            (only,) = piece.columns
            names.append((only.name, only.rules[0].name if only.rules else "nulls"))
    assert names == [
        ("url", "nulls"),
        ("url", "binary"),
        ("url", "packed_width"),
        ("url", "padding_bits"),
        ("url_cohort", "nulls"),
        ("url_cohort", "integer"),
        ("url_cohort", "cohort_range"),
    ]
    assert all(not c.rules and c.nullable for c in structure(declaration).columns)
    assert structure(declaration).strict


def test_validation_prints_no_spark_warning_on_a_pandas_job() -> None:
    """pandera imports pyspark.pandas when pyspark is installed; its warning about pandas 3 is
    not frameldp's user's business (a fresh interpreter: the import happens once)."""
    pytest.importorskip("pyspark")
    code = (
        "import pandas as pd, polars as pl, frameldp\n"
        "from frameldp.schemas import validate_input\n"
        "m = {'c': frameldp.RandomizedResponse(1.0, domain=['a', 'b'])}\n"
        "validate_input(pd.DataFrame({'c': ['a']}), m)\n"
        "validate_input(pl.DataFrame({'c': ['a']}), m)\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", "-c", code],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
