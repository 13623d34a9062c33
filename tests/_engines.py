"""Frames of every engine over given columns, and their RAPPOR reports as ``bytes``.

Each builder gives a native frame of one library from ``{column: values}``; :func:`stacked`
stacks blocks as separate chunks (polars, Arrow), partitions (Dask, Spark) or concatenated rows
(pandas), so that row positions would restart at each block if an engine numbered rows per
chunk. The Spark engines run in the test process's one Spark session (``tests/_spark.py``):
:data:`ENGINES` marks them slow.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Final

import dask.dataframe as dd
import duckdb
import pandas as pd  # type: ignore[import-untyped]
import polars as pl
import pyarrow as pa
import pytest

import _spark as sessions
from frameldp.frames.report_type import storage_of

Data = Mapping[Hashable, Sequence[Any]]


def _pandas(data: Data) -> Any:
    return pd.DataFrame({name: list(values) for name, values in data.items()})


def _pandas_object(data: Data) -> Any:
    return pd.DataFrame({name: pd.Series(list(v), dtype=object) for name, v in data.items()})


def _pandas_categorical(data: Data) -> Any:
    return pd.DataFrame({name: pd.Series(list(v), dtype="category") for name, v in data.items()})


def _polars(data: Data) -> Any:
    return pl.DataFrame({str(name): list(values) for name, values in data.items()})


def _lazy(data: Data) -> Any:
    return _polars(data).lazy()


def _arrow(data: Data) -> Any:
    return pa.table({str(name): list(values) for name, values in data.items()})


def _duckdb(data: Data) -> Any:
    """A DuckDB relation over an Arrow table (DuckDB keeps a scan's row order)."""
    return duckdb.from_arrow(_arrow(data))


def dask_frame(data: Data, npartitions: int = 3) -> Any:
    """A Dask frame of ``npartitions`` over the pandas frame (equal partitions when they can be)."""
    return dd.from_pandas(_pandas(data), npartitions=npartitions)  # type: ignore[no-untyped-call]


def _spark(data: Data) -> Any:
    """A classic Spark frame over the pandas frame (rows in its order)."""
    return sessions.session("classic").createDataFrame(_pandas(data))


def _spark_connect(data: Data) -> Any:
    """A Spark Connect frame over the pandas frame (rows in its order)."""
    return sessions.session("connect").createDataFrame(_pandas(data))


FRAMES: Final[dict[str, Callable[[Data], Any]]] = {
    "pandas": _pandas,
    "pandas-object": _pandas_object,
    "pandas-categorical": _pandas_categorical,
    "polars-eager": _polars,
    "polars-lazy": _lazy,
    "dask": dask_frame,
    "pyarrow": _arrow,
    "duckdb": _duckdb,
    "spark": _spark,
    "spark-connect": _spark_connect,
}
"""Every engine, frame library and string representation (pandas' default strings are
Arrow-backed)."""

SPARK: Final = ("spark", "spark-connect")

ENGINES: Final = [
    pytest.param(name, marks=pytest.mark.slow) if name in SPARK else name for name in FRAMES
]
"""``FRAMES`` as parameters: the Spark engines marked slow (a JVM per test process)."""

LOCAL: Final = [name for name in FRAMES if name not in SPARK]
"""The engines that need no Spark session."""


def stacked(backend: str, blocks: Sequence[Data]) -> Any:
    """The blocks one below the other, each its own chunk / partition."""
    frames = [FRAMES[backend](block) for block in blocks]
    if backend == "dask":
        parts = [dask_frame(block, npartitions=1) for block in blocks]
        out = dd.concat(parts, ignore_index=True)  # type: ignore[no-untyped-call]
        assert out.npartitions == len(blocks)
        return out
    if backend.startswith("pandas"):
        return pd.concat(frames, ignore_index=True)
    if backend in SPARK:
        parts = [FRAMES[backend](block).coalesce(1) for block in blocks]
        out = parts[0]
        for part in parts[1:]:
            out = out.unionByName(part)
        return out
    if backend in ("pyarrow", "duckdb"):
        table = pa.concat_tables([_arrow(block) for block in blocks])  # one chunk per block
        assert table.column(0).num_chunks == len(blocks)
        return table if backend == "pyarrow" else duckdb.from_arrow(table)
    return pl.concat(frames, rechunk=False)


def collected(frame: Any) -> Any:
    """An eager frame: a LazyFrame collected by the streaming engine, a Dask frame computed, a
    Spark frame collected as Arrow (rows in partition order)."""
    if isinstance(frame, pl.LazyFrame):
        return frame.collect(engine="streaming")
    if isinstance(frame, dd.DataFrame):
        return frame.compute()  # type: ignore[no-untyped-call]
    if hasattr(frame, "toArrow"):  # classic and Connect Spark frames
        return frame.toArrow()
    return frame


def stored(frame: Any, column: str) -> list[Any]:
    """The storage values of a report column of any engine's (collected) frame: labels,
    integers or bytes, as the mechanism wrote them."""
    values = collected(frame)
    if isinstance(values, pd.DataFrame):
        values = pa.Table.from_pandas(values[[column]], preserve_index=False)
    elif isinstance(values, pl.DataFrame):
        values = values.select(column).to_arrow()
    return list(storage_of(values.column(column)).to_pylist())


def reports(frame: Any, column: Hashable) -> list[bytes]:
    """The report column of a (collected) frame, Series or polars Series, as ``bytes``."""
    values = collected(frame)
    if isinstance(values, pa.Table):
        return list(storage_of(values.column(str(column))).to_pylist())
    if isinstance(values, pl.DataFrame):
        values = values.get_column(str(column))
    elif isinstance(values, pd.DataFrame):
        values = values[column]
    out = values.to_list() if isinstance(values, pl.Series) else values.tolist()
    assert all(isinstance(report, bytes) for report in out)
    return list(out)
