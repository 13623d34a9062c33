"""DuckDB relations through ``frameldp.ldp(relation)`` (frames/_duckdb.py).

privatize streams the relation's batches and returns typed Arrow reports, equal to pandas' for
the same key; a relation over Parquet files that record their release is debiased without
naming the mechanism; the ``GROUP BY`` pushdown gives exactly the tables of the batch path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameldp
from frameldp.frames import _duckdb
from frameldp.frames.report_type import ReportType, storage_of

KEY = bytes(range(32))
CARRIERS = ("AA", "DL", "UA")
KRR = frameldp.RandomizedResponse(2.0, domain=CARRIERS)
RAPPOR = frameldp.Rappor(epsilon=2.0, domain=CARRIERS)


@pytest.fixture
def connection() -> duckdb.DuckDBPyConnection:
    return duckdb.connect()


def _input(tmp_path: Path, n: int = 3000) -> Path:
    path = tmp_path / "input.parquet"
    values = [CARRIERS[(i * 7) % 3] for i in range(n)]
    pq.write_table(pa.table({"carrier": values, "group": [i % 4 for i in range(n)]}), path)
    return path


@pytest.mark.parametrize("mechanism", [KRR, RAPPOR], ids=["krr", "rappor"])
def test_a_relation_gets_the_pandas_reports_as_a_typed_table(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path, mechanism: object
) -> None:
    path = _input(tmp_path)
    relation = connection.read_parquet(str(path))
    reports = frameldp.ldp(relation).privatize({"carrier": mechanism}, key=KEY)
    assert isinstance(reports, pa.Table)
    assert isinstance(reports.schema.field("carrier").type, ReportType)
    expected = frameldp.ldp(pq.read_table(path)).privatize({"carrier": mechanism}, key=KEY)
    ours = storage_of(reports.column("carrier")).combine_chunks()
    assert ours.equals(storage_of(expected.column("carrier")).combine_chunks())
    # DuckDB queries the typed table in place (as its storage values).
    assert connection.sql("select count(*) from reports").fetchall() == [(3000,)]


@pytest.mark.parametrize("mechanism", [KRR, RAPPOR], ids=["krr", "rappor"])
def test_reports_read_back_from_parquet_debias_without_naming_the_mechanism(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path, mechanism: object
) -> None:
    reports = frameldp.ldp(pq.read_table(_input(tmp_path))).privatize(
        {"carrier": mechanism}, key=KEY
    )
    pq.write_table(reports, tmp_path / "reports.parquet")
    relation = connection.read_parquet(str(tmp_path / "reports.parquet"))
    assert frameldp.ldp(relation).specs == frameldp.ldp(reports).specs
    for by in (None, "group"):
        ours = frameldp.ldp(relation).debias("carrier", by=by).frame
        pd.testing.assert_frame_equal(ours, frameldp.ldp(reports).debias("carrier", by=by).frame)
    kept = frameldp.ldp(relation.filter('"group" = 1')).debias("carrier")
    assert kept.n == 750


def test_the_group_by_pushdown_equals_the_batch_path(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = frameldp.ldp(pq.read_table(_input(tmp_path))).krr(
        "carrier", 1.0, domain=CARRIERS, key=KEY
    )
    pq.write_table(reports, tmp_path / "reports.parquet")
    relation = connection.read_parquet(str(tmp_path / "reports.parquet"))
    pushed = frameldp.ldp(relation).debias("carrier", by="group").frame
    monkeypatch.setattr(_duckdb, "PUSHDOWN_ROWS", 0)  # too many distinct rows: batches
    batched = frameldp.ldp(relation).debias("carrier", by="group").frame
    pd.testing.assert_frame_equal(pushed, batched)


def test_a_relation_without_a_record_needs_the_mechanism_named(
    connection: duckdb.DuckDBPyConnection,
) -> None:
    relation = connection.sql("select 'AA' as carrier from range(10)")
    with pytest.raises(frameldp.MechanismNotFoundError, match="no mechanism recorded"):
        frameldp.ldp(relation).debias("carrier")
    assert frameldp.ldp(relation).debias("carrier", KRR).n == 10


def test_files_of_two_releases_are_refused(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    table = pq.read_table(_input(tmp_path))
    for night in ("a", "b"):
        reports = frameldp.ldp(table).krr("carrier", 1.0, domain=CARRIERS)
        pq.write_table(reports, tmp_path / f"night-{night}.parquet")
    relation = connection.read_parquet(str(tmp_path / "night-*.parquet"))
    with pytest.raises(frameldp.ParameterError, match="files of different releases"):
        frameldp.ldp(relation).debias("carrier")


def test_a_relation_is_charged_once_and_a_failed_query_is_a_frameldp_error(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    ledger = frameldp.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("etl", epsilon=3.0)
    relation = connection.read_parquet(str(_input(tmp_path)))
    frameldp.ldp(relation).krr("carrier", 2.0, domain=CARRIERS, ledger=ledger, budget="etl")
    assert ledger.spent("etl") == pytest.approx(2.0)
    with pytest.raises(frameldp.BudgetExceededError):
        frameldp.ldp(relation).krr("carrier", 2.0, domain=CARRIERS, ledger=ledger, budget="etl")
    bad = connection.sql("select cast('x' as integer) as carrier from range(3)")
    with pytest.raises(frameldp.ParameterError, match="DuckDB could not run the relation"):
        frameldp.ldp(bad).krr("carrier", 1.0, domain=[1, 2])


def test_user_rows_are_counted_and_stated(
    connection: duckdb.DuckDBPyConnection,
) -> None:
    relation = connection.sql(
        "select ['AA', 'DL', 'UA'][1 + (range % 3)::int] as carrier, range % 10 as user "
        "from range(30)"
    )
    reports = frameldp.ldp(relation).krr("carrier", 1.0, domain=CARRIERS, user="user", key=KEY)
    assert frameldp.ldp(reports).specs["carrier"]["rows_per_user"] == 3


# -- the attack review of the first DuckDB and Arrow engines (each failed before its fix) ------


def test_reports_read_from_files_are_not_privatized_again_and_keep_their_type(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    table = pq.read_table(_input(tmp_path)).append_column("other", pa.array(["AA"] * 3000))
    pq.write_table(frameldp.ldp(table).krr("carrier", 2.0, domain=CARRIERS), tmp_path / "r.pq")
    relation = connection.read_parquet(str(tmp_path / "r.pq"))
    with pytest.raises(frameldp.ParameterError, match="already holds frameldp reports"):
        frameldp.ldp(relation).privatize({"carrier": KRR})
    both = frameldp.ldp(relation).krr("other", 2.0, domain=CARRIERS)
    assert isinstance(both.schema.field("carrier").type, ReportType)
    privacy = frameldp.ldp(both).privacy
    assert privacy is not None
    assert privacy.epsilon == pytest.approx(4.0)  # both releases, composed


def test_a_failure_after_the_first_batch_charges_nothing(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    ledger = frameldp.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("etl", epsilon=10.0)
    last = 3 * _duckdb.BATCH_ROWS
    relation = connection.sql(
        f"select case when i = {last // 2} then 'ZZ' else ['AA', 'DL', 'UA'][i % 3 + 1] end "
        f"as carrier from range({last}) t(i)"
    )
    with pytest.raises(frameldp.DomainError, match="'ZZ'") as caught:
        frameldp.ldp(relation).krr("carrier", 1.0, domain=CARRIERS, ledger=ledger, budget="etl")
    assert ledger.history("etl") == []
    # the half-read result was closed, although the error (as a notebook does) and its traceback
    # are still held: the connection runs the next query (DuckDB runs one at a time)
    assert caught.traceback
    fine = connection.sql("select ['AA', 'DL', 'UA'][i % 3 + 1] as carrier from range(10) t(i)")
    assert frameldp.ldp(fine).krr("carrier", 1.0, domain=CARRIERS, seed=1).num_rows == 10


def test_a_failed_reduction_frees_the_connection(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Bit-vector reports are reduced batch by batch; a bad report in a later batch stops the
    reduction and closes DuckDB's result, so that the connection serves the next query."""
    n = 2 * _duckdb.BATCH_ROWS
    people = frameldp.ldp(pd.DataFrame({"carrier": [CARRIERS[i % 3] for i in range(n)]}))
    reports = people.rappor("carrier", 2.0, domain=CARRIERS, seed=1)
    table = pa.Table.from_pandas(reports.ldp.plain())
    bad = table.set_column(0, "carrier", pa.array(["1" * 8, *table.column(0).to_pylist()[1:]]))
    pq.write_table(bad, tmp_path / "bad.parquet")
    relation = connection.read_parquet(str(tmp_path / "bad.parquet"))
    with pytest.raises(frameldp.FrameLDPError, match="carrier") as caught:
        frameldp.ldp(relation).debias("carrier", RAPPOR)
    assert caught.traceback  # held, as a notebook holds the last error
    assert connection.sql("select 42").fetchall() == [(42,)]


def test_duckdb_errors_and_repeated_names_are_frameldp_errors(tmp_path: Path) -> None:
    connection = duckdb.connect()
    relation = connection.read_parquet(str(_input(tmp_path)))
    connection.close()
    with pytest.raises(frameldp.ParameterError, match="DuckDB could not run the relation"):
        frameldp.ldp(relation).debias("carrier", KRR)
    repeated = duckdb.sql("select 'AA' as c, 1 as b, 2 as b")
    with pytest.raises(frameldp.ParameterError, match=r"'b'.*2 columns of that name"):
        frameldp.ldp(repeated).krr("c", 1.0, domain=CARRIERS)
    with pytest.raises(frameldp.ParameterError, match="needs user="):
        frameldp.ldp(duckdb.sql("select 'AA' as c")).krr(
            "c", 1.0, domain=CARRIERS, max_rows_per_user=2
        )


@pytest.mark.parametrize(
    "derive",
    [
        lambda r, c: r.join(c.sql("select 'AA' as carrier, 1 as extra"), "carrier", how="right"),
        lambda r, c: r.select('"group" as carrier, carrier as "group"'),
        lambda r, c: r.union(r),
        lambda r, c: c.sql("select * from r"),
    ],
    ids=["join", "swapped-names", "union", "sql"],
)
def test_only_a_bare_scan_of_the_files_is_trusted_with_their_record(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path, derive: Any
) -> None:
    table = pq.read_table(_input(tmp_path))
    pq.write_table(frameldp.ldp(table).krr("carrier", 2.0, domain=CARRIERS), tmp_path / "r.pq")
    r = connection.read_parquet(str(tmp_path / "r.pq"))
    assert frameldp.ldp(r.filter('"group" = 1')).specs  # a filter keeps the record
    assert frameldp.ldp(derive(r, connection)).specs == {}


def test_sql_text_over_the_files_is_debiased_with_its_mechanism_named(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """(Newcomer review: DuckDB's Binder Error on the filename column, for SQL text.)"""
    table = pq.read_table(_input(tmp_path))
    pq.write_table(frameldp.ldp(table).krr("carrier", 2.0, domain=CARRIERS), tmp_path / "r.pq")
    path = tmp_path / "r.pq"
    relation = connection.sql(f"select * from read_parquet('{path}') where \"group\" = 1")
    assert frameldp.ldp(relation).specs == {}
    assert frameldp.ldp(relation).debias("carrier", KRR).n == 750
    other = frameldp.RandomizedResponse(1.0, domain=[0, 1, 2, 3])
    assert frameldp.ldp(relation).privatize({"group": other}).num_rows == 750


def test_a_null_report_is_named_at_its_row_through_the_pushdown(
    connection: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    values = pa.array(["AA"] * 500 + [None] + ["DL"] * 499)
    pq.write_table(pa.table({"carrier": values}), tmp_path / "nulls.parquet")
    relation = connection.read_parquet(str(tmp_path / "nulls.parquet"))
    with pytest.raises(frameldp.DomainError, match="null at row 500"):
        frameldp.ldp(relation).debias("carrier", KRR)
