"""With ``key=``: the same job on the same rows gives the same reports everywhere, and nothing
else is linked.

Every way below releases one column keyed by :data:`KEY` through another backend, chunking,
batching or partitioning. Same values -> exactly the pandas reports (idempotence). A row whose
value changed -> independent noise, while the unchanged rows keep their reports; equal values at
other positions of one release -> independent noise. "Independent" is the XOR test of
``_linkage.py`` at ``P_FAIL = 1e-6`` per test; it detects shared noise in 5% of 3000 rows with
probability 0.99.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import polars as pl
import pytest

from _engines import ENGINES, FRAMES, SPARK, dask_frame, reports, stacked

from ._linkage import (
    DOMAIN,
    EPSILON,
    KEY,
    ROWS,
    assert_unlinked,
    changed,
    ldp,
    people,
    subset,
)

CHUNKS = (1, 999, 1234, 7)
"""Lengths of the leading chunks of a chunked frame (the rest is one more chunk)."""


def _keyed(frame: Any) -> Any:
    return ldp(frame).rappor("c", EPSILON, domain=DOMAIN, key=KEY)


def _chunks(values: list[str]) -> list[pl.DataFrame]:
    ends = [*np.cumsum(CHUNKS).tolist(), len(values)]
    starts = [0, *ends[:-1]]
    return [pl.DataFrame({"c": values[a:b]}) for a, b in zip(starts, ends, strict=True)]


def _frame(backend: str) -> Callable[[list[str]], list[bytes]]:
    return lambda values: reports(_keyed(FRAMES[backend]({"c": values})), "c")


def _series(values: list[str]) -> list[bytes]:
    series = ldp(pd.Series(values, name="c")).rappor(EPSILON, domain=DOMAIN, key=KEY)
    return reports(series, "c")


def _polars_chunks(values: list[str]) -> list[bytes]:
    frame = pl.concat(_chunks(values), rechunk=False)
    assert frame.n_chunks() == len(CHUNKS) + 1
    return reports(_keyed(frame), "c")


def _lazy_in_memory(values: list[str]) -> list[bytes]:
    out = _keyed(pl.LazyFrame({"c": values})).collect(engine="in-memory")
    return reports(out, "c")


def _lazy_chunks(values: list[str]) -> list[bytes]:
    return reports(_keyed(pl.concat([chunk.lazy() for chunk in _chunks(values)])), "c")


def _lazy_batches(values: list[str]) -> list[bytes]:
    plan = _keyed(pl.LazyFrame({"c": values}))
    batches = list(plan.collect_batches(chunk_size=333))
    assert len(batches) > 1
    return reports(pl.concat(batches), "c")


def _dask(npartitions: int) -> Callable[[list[str]], list[bytes]]:
    return lambda values: reports(_keyed(dask_frame({"c": values}, npartitions)), "c")


def _parquet_files(values: list[str], read: Callable[[Path], Any]) -> list[bytes]:
    """The values as four Parquet files of row groups of 500, read back by ``read(folder)``."""
    with tempfile.TemporaryDirectory() as folder:
        for part, chunk in enumerate(np.array_split(np.array(values), 4)):
            table = pl.DataFrame({"c": chunk.tolist()})
            table.write_parquet(Path(folder) / f"part{part}.parquet", row_group_size=500)
        return reports(_keyed(read(Path(folder))), "c")


def _scan_parquet_files(values: list[str]) -> list[bytes]:
    return _parquet_files(values, lambda folder: pl.scan_parquet(folder / "*.parquet"))


def _dask_read_parquet(values: list[str]) -> list[bytes]:
    return _parquet_files(values, lambda folder: dd.read_parquet(folder))


WAYS: dict[str, Callable[[list[str]], list[bytes]]] = {
    **{backend: _frame(backend) for backend in FRAMES},
    "pandas-series": _series,
    "polars-eager-chunks": _polars_chunks,
    "polars-lazy-in-memory": _lazy_in_memory,
    "polars-lazy-chunks": _lazy_chunks,
    "polars-lazy-batches": _lazy_batches,
    "polars-scan-parquet-files": _scan_parquet_files,
    "dask-1": _dask(1),
    "dask-7": _dask(7),
    "dask-read-parquet-files": _dask_read_parquet,
}
"""A keyed release of column ``c`` of the given values, as report bytes."""


WAY_PARAMS = [pytest.param(way, marks=pytest.mark.slow) if way in SPARK else way for way in WAYS]
"""``WAYS`` as parameters: the Spark engines marked slow."""


@pytest.mark.parametrize("way", WAY_PARAMS)
def test_same_key_same_job_same_rows_same_reports(way: str) -> None:
    """Re-running the keyed job gives exactly the pandas reports, whatever the backend,
    chunking, batch size or partitioning (deterministic)."""
    values = people()
    expected = WAYS["pandas"](values)

    assert WAYS[way](values) == expected
    assert WAYS[way](values) == expected


@pytest.mark.parametrize("way", WAY_PARAMS)
def test_a_changed_row_gets_independent_noise(way: str) -> None:
    """Two keyed runs, every even row changed in between: the unchanged rows keep their
    reports, the changed rows (another person, or the same person's new value) are unlinked
    (P_FAIL)."""
    values = people(2 * ROWS)
    new, mask = changed(values)
    first, second = WAYS[way](values), WAYS[way](new)

    assert subset(first, ~mask) == subset(second, ~mask)
    assert_unlinked(
        subset(first, mask), subset(second, mask), subset(values, mask), subset(new, mask)
    )


@pytest.mark.parametrize("way", WAY_PARAMS)
def test_equal_values_at_other_positions_are_unlinked(way: str) -> None:
    """One keyed release of the same values twice over: the two halves are unlinked (P_FAIL)."""
    values = people()
    out = WAYS[way](values + values)

    assert_unlinked(out[:ROWS], out[ROWS:], values)


@pytest.mark.parametrize("backend", ENGINES)
def test_equal_blocks_in_other_chunks_of_a_keyed_release_are_unlinked(backend: str) -> None:
    """Two equal blocks stacked as chunks (polars) or partitions (Dask), keyed: rows are
    numbered globally, so the blocks are unlinked (P_FAIL)."""
    values = people()
    out = reports(_keyed(stacked(backend, [{"c": values}] * 2)), "c")

    assert_unlinked(out[:ROWS], out[ROWS:], values)


def test_a_keyed_parquet_scan_after_its_file_changed(tmp_path: Path) -> None:
    """A keyed plan over ``scan_parquet`` collected, the file rewritten with every even row
    changed, collected again: unchanged rows keep their reports, changed rows are unlinked
    (P_FAIL)."""
    values = people(2 * ROWS)
    new, mask = changed(values)
    path = tmp_path / "people.parquet"
    pl.DataFrame({"c": values}).write_parquet(path)
    plan = _keyed(pl.scan_parquet(path))

    first = reports(plan, "c")
    pl.DataFrame({"c": new}).write_parquet(path)
    second = reports(plan, "c")

    assert first == WAYS["pandas"](values)
    assert subset(first, ~mask) == subset(second, ~mask)
    assert_unlinked(
        subset(first, mask), subset(second, mask), subset(values, mask), subset(new, mask)
    )
