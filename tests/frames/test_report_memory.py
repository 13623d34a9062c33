"""A batch whose reports cannot fit in memory is refused before any report is drawn (issue 41:
unary encodings of a million buckets write 125 KB a report)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import frameldp
from frameldp.core import report_memory
from frameldp.core.report_memory import check_report_memory, memory_budget, report_bytes


def test_report_bytes_count_fixed_width_columns() -> None:
    assert report_bytes(frameldp.OptimizedUnaryEncoding(1.0, domain=list(range(1000)))) == 125
    assert report_bytes(frameldp.LocalHashing(1.0, domain=list(range(1000)))) == 8
    assert report_bytes(frameldp.HadamardResponse(1.0, domain=list(range(1000)))) == 4
    assert memory_budget() > 0


def test_a_batch_too_large_for_memory_is_refused_naming_the_column_and_what_fits(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setattr(report_memory, "memory_budget", lambda: 50_000)
    frame = pd.DataFrame({"x": np.arange(1000) % 7, "y": np.arange(1000) % 3})
    before = frame.copy()
    wide = frameldp.OptimizedUnaryEncoding(1.0, domain=list(range(4000)))  # 500 bytes
    ledger = frameldp.Ledger(tmp_path / "budget.db")
    ledger.set_budget("nightly", epsilon=10.0)
    with pytest.raises(frameldp.ParameterError, match=r"column 'x'.* 500 bytes a report") as raised:
        frame.ldp.privatize(
            {"x": wide, "y": frameldp.RandomizedResponse(1.0, domain=[0, 1, 2])},
            ledger=ledger,
            budget="nightly",
        )
    assert "at most 98 rows at a time" in str(raised.value)  # 50,000 // (500 + 8)
    pd.testing.assert_frame_equal(frame, before)
    assert ledger.spent("nightly") == 0  # nothing drawn, nothing charged
    check_report_memory({"x": wide}, 100)  # 100 rows fit


def test_a_duckdb_relation_is_checked_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """(Attack review) A DuckDB relation's reports come back as one Arrow table: every row
    counts, although each batch would fit."""
    import duckdb

    monkeypatch.setattr(report_memory, "memory_budget", lambda: 100_000)
    connection = duckdb.connect()
    relation = connection.sql("SELECT (i % 7)::BIGINT AS x FROM range(5000) t(i)")
    wide = frameldp.OptimizedUnaryEncoding(1.0, domain=list(range(800)))  # 100 bytes
    with pytest.raises(frameldp.ParameterError, match="5,000 rows of reports"):
        frameldp.ldp(relation).privatize({"x": wide})
    assert len(frameldp.ldp(relation.limit(900)).privatize({"x": wide})) == 900


def test_the_budget_is_a_quarter_of_the_smaller_of_memory_and_a_container_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    limit = tmp_path / "memory.max"
    limit.write_text("4000000\n")
    monkeypatch.setattr(report_memory, "_CGROUP_V2", str(limit))
    assert memory_budget() == 1_000_000
    limit.write_text("max\n")  # no limit
    assert memory_budget() > 1_000_000
