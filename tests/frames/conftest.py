"""The ``backend`` fixture: one test body run on every frame library frameldp supports.

In the style of narwhals' ``constructor`` fixtures: each test receives a :class:`Backend` that
builds its input frames in one library / string representation and knows how to look at the
result, so a test body never branches on the library. Ids:

``pandas-numpy``        pandas, strings as Python objects (``dtype=object``)
``pandas-pyarrow``      pandas, strings as ``pd.StringDtype("pyarrow")``
``pandas-categorical``  pandas, string columns as ``pd.CategoricalDtype``
``polars-eager``        ``polars.DataFrame``
``polars-lazy``         ``polars.LazyFrame`` (collected with the streaming engine)
``dask``                ``dask.dataframe.DataFrame`` of 3 partitions over a pandas frame with
                        pyarrow strings, computed on the synchronous scheduler. Its ``library``
                        is "pandas" (it computes to pandas frames and pandas tables) and it is
                        ``lazy`` (charged when the graph is built, data errors at compute).
                        ``shuffle`` and ``balcer_cheu`` need one machine on Dask: the tests of
                        test_shuffle_frames.py, and the Series / expression API tests, are
                        skipped for it (tests/frames/test_dask.py checks the refusal).
``pyarrow``             ``pyarrow.Table`` through ``frameldp.ldp(table)`` (no accessor); reports
                        and tables as pandas' (its ``library`` is "pandas" for tables)
``duckdb``              a DuckDB relation over an Arrow table through ``frameldp.ldp(rel)``;
                        reports come back as a typed ``pyarrow.Table``

The engines are those of ``tests/_engines.py``, the suite's one registry of engines, on which
the privacy-invariant suite and the mechanism contract run (Spark classic and Spark Connect
included); a ``Backend`` adds what these tests look at (string representations, dtypes,
snapshots). The modules of this directory that run on ``backend`` call ``frameldp.ldp(frame)``
(every engine) rather than an accessor. The Spark engines run their own modules
(tests/frames/test_spark.py, test_spark_connect.py: one session per process) and are not cells
of this fixture, whose every test would run Spark jobs.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.dataframe as dd
import duckdb
import numpy as np
import pandas as pd
import polars as pl
import polars.testing
import pyarrow as pa
import pytest
from scipy.stats import norm

from _stats import P_FAIL  # the one false-failure probability of the suite
from frameldp.datasets import FLIGHTS_DOMAINS, load_flights
from frameldp.frames.report_type import ReportType, storage_of

"""Chance that one distributional assertion fails although the code is correct."""

NEAR_IDENTITY_EPSILON = 90.0
"""An epsilon so large that the realized flip (RAPPOR, per bit) or move (k-RR) probability is the
samplers' smallest, 2**-64: reports equal the encoded input, so tests can check the encoding
exactly (epsilon -> inf is the identity)."""


def bonferroni_z(num_buckets: int, p_fail: float = P_FAIL) -> float:
    """Two-sided z bound for ``num_buckets`` simultaneous bucket checks at total ``p_fail``."""
    return float(norm.isf(p_fail / (2 * num_buckets)))


Columns = dict[str, Sequence[Any]]


def _kind(values: Sequence[Any]) -> str:
    """What a test column holds: 'str', 'list', 'bytes' or 'other' (nulls are ignored)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, str) for v in present):
        return "str"
    if present and all(isinstance(v, list) for v in present):
        return "list"
    if present and all(isinstance(v, bytes) for v in present):
        return "bytes"
    return "other"


@dataclass(frozen=True)
class Backend:
    """How one frame library builds, collects and inspects frames (see the module docstring)."""

    id: str
    library: str  # "pandas" or "polars" (Dask computes to pandas)
    lazy: bool
    _pandas_strings: Callable[[Sequence[Any]], pd.Series] | None = None
    dask: bool = False
    arrow: str | None = None  # "pyarrow" or "duckdb": frames built from an Arrow table

    # -- building ----------------------------------------------------------------------------

    def _distributed(self, frame: pd.DataFrame) -> Any:
        """The pandas frame as this backend's frame (itself, or a Dask frame over it)."""
        if not self.dask:
            return frame
        # Keep object columns (set-valued cells) as they are: Dask would cast them to strings.
        with dask.config.set({"dataframe.convert-string": False}):
            return dd.from_pandas(frame, npartitions=DASK_PARTITIONS)

    def _from_arrow(self, table: pa.Table, like: Any = None) -> Any:
        """``table`` as this backend's input frame (a DuckDB relation over it), or as ``like``
        is: a release on DuckDB comes back as a typed Arrow table, and stays one."""
        if like is not None and not isinstance(like, duckdb.DuckDBPyRelation):
            return table
        return duckdb.from_arrow(table) if self.arrow == "duckdb" else table

    def make(self, data: Columns) -> Any:
        """A native frame of the given columns (strings in this backend's representation)."""
        if self.arrow:
            return self._from_arrow(
                pa.table({name: self._arrow_column(values) for name, values in data.items()})
            )
        if self.library == "pandas":
            return self._distributed(
                pd.DataFrame({name: self._pandas_column(values) for name, values in data.items()})
            )
        frame = pl.DataFrame(
            {name: self._polars_column(name, values) for name, values in data.items()}
        )
        return frame.lazy() if self.lazy else frame

    def _pandas_column(self, values: Sequence[Any]) -> pd.Series:
        kind = _kind(values)
        if kind == "str":
            assert self._pandas_strings is not None
            return self._pandas_strings(values)
        if kind in ("list", "bytes"):
            return pd.Series(list(values), dtype=object)
        return pd.Series(values)

    @staticmethod
    def _arrow_column(values: Sequence[Any]) -> pa.Array:
        kind = _kind(values)
        dtype = {"str": pa.string(), "list": pa.list_(pa.string()), "bytes": pa.binary()}
        return pa.array(list(values), type=dtype.get(kind))

    @staticmethod
    def _polars_column(name: str, values: Sequence[Any]) -> pl.Series:
        kind = _kind(values)
        dtype = {"str": pl.String, "list": pl.List(pl.String), "bytes": pl.Binary}.get(kind)
        return pl.Series(name, list(values), dtype=dtype)

    def make_categorical(self, name: str, values: Sequence[str], categories: Sequence[str]) -> Any:
        """A frame whose column is the library's categorical type over ``categories``.

        pandas: an *ordered* ``CategoricalDtype`` (so that keeping ``ordered`` is observable);
        polars: ``Enum``.
        """
        if self.arrow:
            codes = pa.array([list(categories).index(v) for v in values], type=pa.int32())
            column = pa.DictionaryArray.from_arrays(codes, pa.array(list(categories)), ordered=True)
            return self._from_arrow(pa.table({name: column}))
        if self.library == "pandas":
            dtype = pd.CategoricalDtype(list(categories), ordered=True)
            return self._distributed(pd.DataFrame({name: pd.Series(list(values), dtype=dtype)}))
        frame = pl.DataFrame({name: pl.Series(name, list(values), dtype=pl.Enum(categories))})
        return frame.lazy() if self.lazy else frame

    def flights(self) -> Any:
        """The demo dataset, its string columns converted to this backend's representation."""
        if self.library == "polars":
            frame = load_flights("polars")
            return frame.lazy() if self.lazy else frame
        if self.arrow:
            return self._from_arrow(load_flights("polars").to_arrow())
        frame = load_flights("pandas")
        if self.id == "pandas-categorical":
            return frame
        strings = self._pandas_strings
        assert strings is not None
        converted = {
            name: strings(frame[name].astype(object).tolist())
            for name in ("passenger_id", *FLIGHTS_DOMAINS)
            if name != "services"
        }
        return self._distributed(frame.assign(**converted))

    def concat(self, frames: Sequence[Any]) -> Any:
        """Frames stacked vertically without rechunking (the result holds several chunks)."""
        if self.dask:
            return dd.concat(frames)
        if self.arrow:
            tables = pa.concat_tables([self.collect(f) for f in frames])
            return self._from_arrow(tables, like=frames[0])
        if self.library == "pandas":
            return pd.concat(frames, ignore_index=True)
        return pl.concat(frames, rechunk=False)

    def slice(self, native: Any, offset: int, length: int) -> Any:
        """Rows ``offset`` to ``offset + length`` (a zero-copy view where the library has one;
        on Dask, by the frame's RangeIndex, which ``make`` gives)."""
        if self.dask:
            return native.loc[offset : offset + length - 1]
        if self.arrow:
            return self._from_arrow(self.collect(native).slice(offset, length), like=native)
        if self.library == "pandas":
            return native.iloc[offset : offset + length]
        return native.slice(offset, length)

    def with_copy(self, native: Any, source: str, target: str) -> Any:
        """The frame with column ``target`` a copy of ``source`` (pandas and Dask ``assign``,
        polars ``pl.col(source).alias(target)``, Arrow ``append_column``)."""
        if self.arrow:
            table = self.collect(native)
            copied = table.append_column(target, table.column(source))
            return self._from_arrow(copied, like=native)
        if self.library == "pandas":
            return native.assign(**{target: native[source]})
        return native.with_columns(pl.col(source).alias(target))

    # -- inspecting --------------------------------------------------------------------------

    def is_native(self, obj: Any) -> bool:
        """Whether ``obj`` is the frame type the caller passed in."""
        if self.dask:
            return isinstance(obj, dd.DataFrame)
        if self.arrow == "duckdb":  # a release comes back as a typed Arrow table
            return isinstance(obj, duckdb.DuckDBPyRelation | pa.Table)
        if self.arrow:
            return type(obj) is pa.Table
        if self.library == "pandas":
            return type(obj) is pd.DataFrame
        return type(obj) is (pl.LazyFrame if self.lazy else pl.DataFrame)

    def collect(self, native: Any) -> Any:
        """An eager frame (a LazyFrame is collected by the streaming engine, a Dask frame is
        computed)."""
        if isinstance(native, pl.LazyFrame):
            return native.collect(engine="streaming")
        if isinstance(native, dd.DataFrame):
            return native.compute()
        if isinstance(native, duckdb.DuckDBPyRelation):
            return native.to_arrow_table()
        return native

    def column_values(self, native: Any, name: str) -> list[Any]:
        """The values of column ``name`` as Python objects (bytes, labels, None for null)."""
        collected = self.collect(native)
        if isinstance(collected, pa.Table):
            return list(storage_of(collected.column(name)).to_pylist())
        column = collected[name]
        if isinstance(column, pd.Series):
            return [None if _pandas_null(v) else v for v in column.tolist()]
        return column.to_list()

    def dtype(self, native: Any, name: str) -> Any:
        """The dtype of column ``name``."""
        if isinstance(native, pl.LazyFrame):
            return native.collect_schema()[name]
        if isinstance(native, pl.DataFrame):
            return native.schema[name]
        if isinstance(native, pa.Table | duckdb.DuckDBPyRelation):
            return self.collect(native).schema.field(name).type
        return native[name].dtype

    def names(self, native: Any) -> list[str]:
        """The column names of a (collected) frame."""
        collected = self.collect(native)
        if isinstance(collected, pa.Table):
            return list(collected.column_names)
        return list(collected.columns)

    def num_rows(self, native: Any) -> int:
        """Number of rows."""
        return len(self.collect(native))

    def report_storage(self, native: Any, name: str) -> pa.DataType:
        """The Arrow storage type of report column ``name``, which must be of the report type
        (``frameldp.reports``: a pandas ``ArrowDtype``, a polars extension dtype)."""
        dtype = self.dtype(native, name)
        if self.arrow:
            assert isinstance(dtype, ReportType), dtype
            return dtype.storage_type
        if self.library == "pandas":
            assert isinstance(dtype, pd.ArrowDtype), dtype
            assert isinstance(dtype.pyarrow_dtype, ReportType), dtype
            return dtype.pyarrow_dtype.storage_type
        assert isinstance(dtype, pl.BaseExtension), dtype
        assert dtype.ext_name() == "frameldp.reports", dtype
        return pl.Series([], dtype=dtype.ext_storage()).to_arrow().type

    @staticmethod
    def rappor_storage(num_bits: int) -> pa.DataType:
        """The storage of RAPPOR reports over ``num_bits`` buckets: packed bytes."""
        return pa.large_binary()

    @staticmethod
    def krr_storage(categories: Sequence[Hashable]) -> pa.DataType:
        """The storage of k-RR reports over string ``categories``: the labels as text."""
        return pa.large_string()

    def uint8_dtype(self) -> Any:
        """The dtype of the 0/1 columns of ``unpack``."""
        if self.arrow:
            return pa.uint8()
        return np.dtype("uint8") if self.library == "pandas" else pl.UInt8()

    def table_type(self) -> type:
        """The frame type of ``FrequencyTable.frame`` for this backend."""
        return pd.DataFrame if self.library == "pandas" else pl.DataFrame

    # -- input preservation ------------------------------------------------------------------

    def snapshot(self, native: Any) -> Any:
        """A deep copy to compare with later (lists in object cells included)."""
        if self.arrow:
            return self.collect(native)  # Arrow tables are immutable
        if self.library == "pandas":
            return pickle.loads(pickle.dumps(self.collect(native)))
        return self.collect(native).clone()

    def assert_unchanged(self, snapshot: Any, native: Any) -> None:
        """``native`` still equals the snapshot taken before the call (data, dtypes, attrs)."""
        if self.arrow:
            assert self.collect(native).equals(snapshot, check_metadata=True)
            return
        if self.library == "pandas":
            native = self.collect(native)
            pd.testing.assert_frame_equal(native, snapshot, check_exact=True)
            assert native.attrs == snapshot.attrs
        else:
            polars.testing.assert_frame_equal(self.collect(native), snapshot)

    # -- column-level API --------------------------------------------------------------------

    def privatize_column(self, native: Any, name: str, method: str, **kwargs: Any) -> list[Any]:
        """Reports of one column through the library's column API, as a list.

        pandas: the Series accessor ``df[name].ldp.<method>``; polars: the expression namespace
        ``df.select(pl.col(name).ldp.<method>)``; Arrow tables and DuckDB have no column API.
        """
        if self.arrow:
            pytest.skip(f"{self.arrow} has no column API (a Series or an expression)")
        if self.library == "pandas":
            series = getattr(native[name].ldp, method)(**kwargs)
            assert isinstance(series, pd.Series)
            return [None if _pandas_null(v) else v for v in series.tolist()]
        expression = getattr(pl.col(name).ldp, method)(**kwargs)
        return self.column_values(native.select(expression), name)


def _pandas_null(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def _object_strings(values: Sequence[Any]) -> pd.Series:
    return pd.Series(list(values), dtype=object)


def _pyarrow_strings(values: Sequence[Any]) -> pd.Series:
    return pd.Series(list(values), dtype=pd.StringDtype("pyarrow"))


def _categorical_strings(values: Sequence[Any]) -> pd.Series:
    return pd.Series(list(values), dtype="category")


DASK_PARTITIONS = 3
"""Partitions of the ``dask`` backend's frames (rows are addressed across them)."""

BACKENDS = {
    "pandas-numpy": Backend("pandas-numpy", "pandas", False, _object_strings),
    "pandas-pyarrow": Backend("pandas-pyarrow", "pandas", False, _pyarrow_strings),
    "pandas-categorical": Backend("pandas-categorical", "pandas", False, _categorical_strings),
    "polars-eager": Backend("polars-eager", "polars", False),
    "polars-lazy": Backend("polars-lazy", "polars", True),
    "dask": Backend("dask", "pandas", True, _pyarrow_strings, dask=True),
    "pyarrow": Backend("pyarrow", "pandas", False, arrow="pyarrow"),
    "duckdb": Backend("duckdb", "pandas", False, arrow="duckdb"),
}

ONE_MACHINE_ONLY = {
    "test_shuffle_frames": "shuffle and Balcer–Cheu need one machine: Dask refuses them "
    "(tests/frames/test_dask.py)",
    "test_column_api_equals_the_frame_api": "no Series accessor on Dask",
    "test_the_column_api_charges_too": "no Series accessor on Dask",
    "test_an_over_budget_series_or_expression_is_refused": "no Series accessor on Dask",
}
"""Tests skipped for the ``dask`` backend (module or test name), and why."""


@pytest.fixture(params=list(BACKENDS), ids=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """Every frame library and string representation frameldp supports (Dask on the
    synchronous scheduler)."""
    chosen = BACKENDS[request.param]
    if not chosen.dask:
        yield chosen
        return
    module = request.module.__name__.rpartition(".")[2]
    reason = ONE_MACHINE_ONLY.get(module) or ONE_MACHINE_ONLY.get(request.function.__name__)
    if reason:
        pytest.skip(reason)
    with dask.config.set(scheduler="synchronous"):
        yield chosen


@pytest.fixture
def pyspark_quiet() -> Iterator[None]:
    """pyspark 4 warns that it has not been tested with pandas 3 (``toPandas`` only): the
    Spark modules' tests run without that warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="pyspark")
        yield


@pytest.fixture(params=[b for b in BACKENDS if b.startswith("pandas")])
def pandas_backend(request: pytest.FixtureRequest) -> Backend:
    """The pandas backends only (for the pandas Series accessor)."""
    return BACKENDS[request.param]


def reference_reports(data: Columns, call: Callable[[Any], Any], column: str) -> list[Any]:
    """Reports of ``column`` computed on plain pandas (object strings): the cross-backend oracle."""
    reference = BACKENDS["pandas-numpy"]
    return reference.column_values(call(reference.make(data)), column)


CARRIERS = ("AA", "DL", "UA", "WN")
"""Public domain of the small test frames' ``carrier`` column ("WN" never occurs in them)."""
ORIGINS = ("ATL", "BOS", "DEN", "JFK", "LAX")
"""Public domain of the small test frames' ``origin`` column."""


def small_data(n: int = 64) -> Columns:
    """A small frame: two string columns over public domains and an untouched float column."""
    return {
        "carrier": [CARRIERS[i % 3] for i in range(n)],
        "origin": [ORIGINS[(7 * i) % 5] for i in range(n)],
        "fare": [i / 4 for i in range(n)],
    }


def unpacked(reports: Sequence[bytes], num_bits: int) -> np.ndarray:
    """``(n, num_bits)`` 0/1 matrix of RAPPOR report bytes (``numpy.packbits`` order)."""
    width = -(-num_bits // 8)
    packed = np.frombuffer(b"".join(reports), dtype=np.uint8).reshape(len(reports), width)
    return np.unpackbits(packed, axis=1)[:, :num_bits]


def untyped(frame: Any, column: str) -> Any:
    """``frame`` with the report column ``column`` as plain values (its type dropped, as a
    user's cast does): then only an explicit mechanism says what it holds."""
    if isinstance(frame, pl.DataFrame | pl.LazyFrame):
        return frame.with_columns(pl.col(column).ext.storage())
    if isinstance(frame, dd.DataFrame):
        return frame.map_partitions(untyped, column)
    if isinstance(frame, pa.Table):
        index = frame.column_names.index(column)
        return frame.set_column(index, column, storage_of(frame.column(column)))
    if isinstance(frame, duckdb.DuckDBPyRelation):
        return untyped(frame.to_arrow_table(), column)
    storage = pa.Array.from_pandas(frame[column])
    out = frame.copy()
    out[column] = pd.arrays.ArrowExtensionArray(storage_of(storage))
    return out
