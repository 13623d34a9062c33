"""Regression tests for the attack and code reviews of issue 14's adapter change (each failed
before its fix).

* Balcer–Cheu read a LazyFrame twice (its length, then its values): a source that changed in
  between gave a guarantee stated for other people than those whose messages were sent. It also
  accepted a column of reports.
* A Dask dataset whose later files hold a release of the column it privatizes re-randomized
  those reports: every batch is now checked by its own column types.
* Two privatized columns could write a column of one name (a Bloom cohort column and another
  column's reports): one was silently lost. (A cohort column overwriting a column of the frame
  was refused already; the test keeps it so.)
* ``shuffle(keep=None)``, ``keep=123`` and a name kept twice raised foreign exceptions; a polars
  ``Object`` column was read as pointers; validating a pandas Series raised ``AttributeError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest
from polars.io.plugins import register_io_source

import frameldp
from frameldp import schemas

CARRIERS = ("AA", "DL", "UA")
KRR = frameldp.RandomizedResponse(1.0, domain=CARRIERS)
BLOOM = frameldp.BloomRappor(1.0, epsilon_infinity=2.0, num_bits=16, num_cohorts=4)


def _counting_scan(rows: list[int], executions: list[int]) -> pl.LazyFrame:
    """A LazyFrame whose every execution is counted and yields ``rows[execution]`` rows."""
    schema = pl.Schema({"carrier": pl.String()})

    def scan(
        with_columns: list[str] | None, predicate: object, n_rows: int | None, batch_size: object
    ) -> Iterator[pl.DataFrame]:
        executions.append(1)
        n = rows[min(len(executions), len(rows)) - 1]
        yield pl.DataFrame({"carrier": [CARRIERS[i % 3] for i in range(n)]})

    return register_io_source(scan, schema=schema)


def test_balcer_cheu_reads_a_lazy_frame_once() -> None:
    executions: list[int] = []
    lazy = _counting_scan([4_000, 7_000], executions)
    messages = lazy.ldp.balcer_cheu("carrier", 2.0, 1e-3, domain=CARRIERS).collect()
    assert len(executions) == 1
    table = messages.ldp.debias("carrier")
    assert table.mechanism.n == 4_000  # the people counted are those whose messages were sent


def test_balcer_cheu_refuses_a_column_of_reports() -> None:
    frame = pd.DataFrame({"carrier": [CARRIERS[i % 3] for i in range(300)]})
    reports = frame.ldp.krr("carrier", 1.0, domain=CARRIERS)
    with pytest.raises(frameldp.ParameterError, match="already holds frameldp reports"):
        reports.ldp.balcer_cheu("carrier", 2.0, 1e-3, domain=CARRIERS)


def test_a_dataset_mixing_raw_and_privatized_files_is_refused(tmp_path: Path) -> None:
    raw = pd.DataFrame({"carrier": [CARRIERS[i % 3] for i in range(300)]})
    raw.to_parquet(tmp_path / "part-0.parquet")
    raw.ldp.krr("carrier", 1.0, domain=CARRIERS).to_parquet(tmp_path / "part-1.parquet")
    ddf = dd.read_parquet(tmp_path)
    with pytest.raises(frameldp.ParameterError, match="already holds frameldp reports"):
        ddf.ldp.krr("carrier", 1.0, domain=CARRIERS).compute()


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_two_columns_writing_one_name_are_refused(library: str) -> None:
    data = {"x": ["a", "b"] * 50, "x_cohort": ["c", "d"] * 50, "u": list(range(100))}
    frame = pd.DataFrame(data) if library == "pandas" else pl.DataFrame(data)
    with pytest.raises(frameldp.ParameterError, match=r"'x_cohort'.* need too") as clash:
        frame.ldp.privatize({"x": BLOOM, "x_cohort": BLOOM})
    assert clash.value.column == "x_cohort"
    with pytest.raises(frameldp.ParameterError, match="already exists"):
        frame.ldp.privatize({"x": BLOOM})  # would overwrite the frame's own x_cohort


@pytest.mark.parametrize("keep", [None, 123, ["u", "u"]], ids=["none", "int", "twice"])
@pytest.mark.parametrize("library", ["pandas", "polars", "lazy"])
def test_shuffle_refuses_a_bad_keep(library: str, keep: object) -> None:
    frame = pd.DataFrame({"carrier": [CARRIERS[i % 3] for i in range(60)], "u": range(60)})
    reports = frame.ldp.krr("carrier", 1.0, domain=CARRIERS)
    native = {
        "pandas": reports,
        "polars": pl.from_pandas(reports),
        "lazy": pl.from_pandas(reports).lazy(),
    }[library]
    with pytest.raises(frameldp.ParameterError, match="keep=") as refused:
        native.ldp.shuffle(keep=keep)
    assert refused.value.parameter == "keep"


def test_a_polars_object_column_is_refused_not_read_as_pointers() -> None:
    frame = pl.DataFrame({"carrier": pl.Series([object(), object()], dtype=pl.Object)})
    with pytest.raises(frameldp.DomainError, match="column 'carrier': polars type Object"):
        frame.ldp.krr("carrier", 1.0, domain=CARRIERS)


def test_validating_a_series_is_a_frameldp_error() -> None:
    with pytest.raises(frameldp.ParameterError, match=r"got pandas\.Series"):
        schemas.validate_input(pd.Series(["AA"], name="carrier"), {"carrier": KRR})
