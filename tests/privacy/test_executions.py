"""Without ``key=``, every release draws independent noise, on every backend, and a lazy
plan is one release that runs once.

Every test compares reports of the *same* values at the *same* positions (two calls, two
plans of one lazy frame or graph, a Parquet scan before and after its file changed) or equal
values in different chunks / partitions of one release, and asserts that no two reports are
linked: the XOR test of ``_linkage.py``, an exact binomial test at the declared
false-failure probability ``P_FAIL = 1e-6`` per test (Bonferroni-split where a test makes
several), which detects shared noise in 5% of 3000 rows with probability 0.99.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import polars as pl
import pytest

import frameldp
from _engines import ENGINES, FRAMES, dask_frame, reports, stacked
from _stats import P_FAIL

from ._linkage import DOMAIN, EPSILON, ROWS, assert_unlinked, changed, ldp, people, subset


def _rappor(frame: Any) -> Any:
    return ldp(frame).rappor("c", EPSILON, domain=DOMAIN)


@pytest.mark.parametrize("backend", ENGINES)
def test_two_calls_are_unlinked(backend: str) -> None:
    """Two calls on one frame: equal values at equal positions get independent noise."""
    values = people()
    frame = FRAMES[backend]({"c": values})

    assert_unlinked(reports(_rappor(frame), "c"), reports(_rappor(frame), "c"), values)


@pytest.mark.parametrize("backend", ENGINES)
def test_equal_values_in_other_chunks_of_one_release_are_unlinked(backend: str) -> None:
    """Three equal blocks stacked as chunks (polars) or partitions (Dask): rows are numbered
    globally, so block 0 is unlinked from blocks 1 and 2 (P_FAIL / 2 each)."""
    values = people()
    out = reports(_rappor(stacked(backend, [{"c": values}] * 3)), "c")

    for block in (1, 2):
        later = out[block * ROWS : (block + 1) * ROWS]
        assert_unlinked(out[:ROWS], later, values, p_fail=P_FAIL / 2)


def _collect_streaming(plan: Any) -> Any:
    return plan.collect(engine="streaming")


def _collect_in_memory(plan: Any) -> Any:
    return plan.collect(engine="in-memory")


def _sink_parquet(plan: Any) -> Any:
    sink = io.BytesIO()
    plan.sink_parquet(sink)
    return pl.read_parquet(io.BytesIO(sink.getvalue()))


def _compute(graph: Any) -> Any:
    return graph.compute()


RUNS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "polars-lazy-streaming": ("polars-lazy", _collect_streaming),
    "polars-lazy-in-memory": ("polars-lazy", _collect_in_memory),
    "polars-lazy-sink": ("polars-lazy", _sink_parquet),
    "dask": ("dask", _compute),
}


@pytest.mark.parametrize("run", RUNS)
def test_one_fresh_plan_runs_once(run: str) -> None:
    """One privatized LazyFrame collected (or sunk) twice, one Dask graph computed twice: the
    second run is refused (it would release every row again, with new noise, under the same
    release id)."""
    backend, execute = RUNS[run]
    plan = _rappor(FRAMES[backend]({"c": people()}))
    execute(plan)

    with pytest.raises(frameldp.ParameterError, match="ran already"):
        execute(plan)


@pytest.mark.parametrize("run", RUNS)
def test_two_plans_of_one_frame_are_unlinked(run: str) -> None:
    """Two privatized plans of one LazyFrame or Dask frame, each run once: independent noise."""
    backend, execute = RUNS[run]
    values = people()
    frame = FRAMES[backend]({"c": values})

    first, second = (reports(execute(_rappor(frame)), "c") for _ in range(2))
    assert_unlinked(first, second, values)


def test_one_plan_used_twice_in_one_query_is_refused() -> None:
    """``pl.concat([plan, plan])`` runs the scan twice: the second run is refused."""
    plan = _rappor(FRAMES["polars-lazy"]({"c": people()}))

    with pytest.raises(frameldp.ParameterError, match="ran already"):
        pl.concat([plan, plan]).collect()


def test_dask_partitions_of_one_release_are_unlinked() -> None:
    """Four partitions of equal values (``from_pandas``), computed once: partition 0 is
    unlinked from partitions 1-3 (P_FAIL / 3 each)."""
    values = people()
    frame = dask_frame({"c": values * 4}, npartitions=4)
    graph = _rappor(frame)

    assert frame.map_partitions(len).compute().tolist() == [ROWS] * 4
    out = reports(graph, "c")
    for block in (1, 2, 3):
        later = out[block * ROWS : (block + 1) * ROWS]
        assert_unlinked(out[:ROWS], later, values, p_fail=P_FAIL / 3)


def test_series_accessor_calls_are_unlinked() -> None:
    """``series.ldp.rappor`` twice on one Series, and once on an equal Series (P_FAIL / 2)."""
    values = people()
    series = pd.Series(values, name="c")
    first = reports(ldp(series).rappor(EPSILON, domain=DOMAIN), "c")
    again = reports(ldp(series).rappor(EPSILON, domain=DOMAIN), "c")
    other = reports(ldp(pd.Series(values, name="c")).rappor(EPSILON, domain=DOMAIN), "c")

    assert_unlinked(first, again, values, p_fail=P_FAIL / 2)
    assert_unlinked(first, other, values, p_fail=P_FAIL / 2)


def test_a_parquet_scan_collected_after_its_file_changed_is_unlinked(tmp_path: Path) -> None:
    """A plan over ``scan_parquet`` collected, the file rewritten with every even row changed,
    a plan over the same scan collected: the changed rows and the unchanged rows are unlinked
    (P_FAIL / 2 each)."""
    values = people(2 * ROWS)
    new, mask = changed(values)
    path = tmp_path / "people.parquet"
    pl.DataFrame({"c": values}).write_parquet(path)
    scan = pl.scan_parquet(path)

    first = reports(_rappor(scan), "c")
    pl.DataFrame({"c": new}).write_parquet(path)
    second = reports(_rappor(scan), "c")

    for rows in (mask, ~mask):
        assert_unlinked(
            subset(first, rows),
            subset(second, rows),
            subset(values, rows),
            subset(new, rows),
            p_fail=P_FAIL / 2,
        )
