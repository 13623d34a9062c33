"""pandas: the adapter of DataFrame and Series, and their ``.ldp`` accessors.

Plumbing only: :class:`PandasAdapter` converts columns to Arrow and report columns back, and
:class:`~frameldp.frames.methods.FrameMethods` does the rest. The input is never modified; a
new frame is returned. Report columns are ``ArrowDtype`` columns of the
``frameldp.reports`` extension type (:mod:`frameldp.frames.report_type`), which carries the
mechanism: ``debias`` finds it after merges, filters, ``concat`` and Parquet round trips. Frames
read from Parquet files of earlier releases carry it in ``attrs`` instead, which is still read.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import PrivacyGuarantee
from frameldp.core.mechanisms import Mechanism
from frameldp.core.randomness import resolve_source
from frameldp.errors import DomainError, ParameterError, shown
from frameldp.frames._pandas_reports import ReportArray, ReportDtype
from frameldp.frames.adapters import register_adapter
from frameldp.frames.inputs import METADATA_KEY, check_columns, require_column
from frameldp.frames.lookup import find_mechanism, unpack_reports
from frameldp.frames.methods import FrameMethods, ValueShortcuts
from frameldp.frames.pipeline import (
    privatize_columns,
)
from frameldp.frames.release import (
    LedgerLike,
    charging,
    plan_release,
)
from frameldp.frames.report_type import (
    ReportMetadata,
    ReportType,
    legacy_report_columns,
    recorded_shuffle,
)
from frameldp.frames.shuffling import SHUFFLED_KEY
from frameldp.results.native import Backend
from frameldp.results.table import FrequencyTable

__all__ = [
    "PandasAdapter",
    "PandasFrameAccessor",
    "PandasSeriesAccessor",
    "report_columns_of",
]


def _arrow(series: pd.Series) -> pa.Array | pa.ChunkedArray:
    """The column as Arrow (zero-copy for Arrow-backed and categorical columns; NaN is null)."""
    try:
        if isinstance(series.dtype, pd.CategoricalDtype):
            return _categorical(series)
        return _from_pandas(series)
    except (pa.ArrowException, OverflowError, UnicodeEncodeError) as error:
        kinds = sorted({type(v).__name__ for v in itertools.islice(series.array, 10_000)})
        raise DomainError(
            f"column {shown(series.name)}: values ({', '.join(kinds)}) cannot form one Arrow "
            f"column ({shown(str(error), 120)}); cast the column to one type (integers within "
            "64 bits, text without lone surrogates) first"
        ) from None


def _categorical(series: pd.Series) -> pa.DictionaryArray:
    """A ``category`` column as the Arrow dictionary array ``from_pandas`` makes, without its
    copy of the codes (code -1 is null). Categories mixing text and bytes are refused, as in an
    object column (``from_pandas`` would convert one kind into the other)."""
    codes = series.cat.codes.to_numpy()
    missing = codes < 0
    indices = pa.array(codes, mask=missing if missing.any() else None)
    dictionary = _from_pandas(series.cat.categories.to_series(index=None))
    return pa.DictionaryArray.from_arrays(indices, dictionary, ordered=series.cat.ordered)


def _from_pandas(series: pd.Series) -> pa.Array:
    """``pa.Array.from_pandas``, refusing an object column whose cells Arrow converted to
    another type (raised as an Arrow error, for :func:`_arrow` to report)."""
    array = pa.Array.from_pandas(series)
    if series.dtype == object and _coerced(array, series):
        raise pa.ArrowInvalid("text and bytes in one column")
    return array


def _coerced(array: pa.Array, series: pd.Series) -> bool:
    """Whether Arrow converted some cells of an object column to another type (a ``str``
    among ``bytes`` becomes its UTF-8 bytes, and the other way round): a text ``"4"`` among
    RAPPOR reports is no report."""
    expected = {"binary": "bytes", "string": "string"}
    kind = (
        "binary"
        if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)
        else "string"
        if pa.types.is_string(array.type) or pa.types.is_large_string(array.type)
        else None
    )
    if kind is None:
        return False
    inferred = pd.api.types.infer_dtype(series, skipna=True)
    if kind == "binary" and inferred == "mixed":  # bytearray cells (DuckDB's BLOBs) are bytes
        cells = series.dropna()
        return not all(isinstance(cell, bytes | bytearray) for cell in cells)
    return inferred not in (expected[kind], "empty")


def _native(array: pa.Array) -> pd.arrays.ArrowExtensionArray:
    """pandas values of an Arrow column: a :class:`ReportArray` for reports."""
    return ReportArray(array)


def _is_report_dtype(dtype: object) -> bool:
    return isinstance(dtype, ReportDtype)


def _refuse_raw_report_type(name: Any, dtype: object) -> None:
    """Refuse a column of ``pd.ArrowDtype`` of the report type: what pandas makes of a file read
    with ``dtype_backend="pyarrow"``. pandas runs none of its operations on it and checks none
    of the writes into it, so frameldp cannot tell whether it still holds the release."""
    if not isinstance(dtype, pd.ArrowDtype) or isinstance(dtype, ReportDtype):
        return
    if isinstance(dtype.pyarrow_dtype, ReportType):
        raise ParameterError(
            f"column {shown(name)}: holds frameldp reports as pd.ArrowDtype of their Arrow type "
            "(a file read with dtype_backend='pyarrow'), on which pandas runs no operation and "
            "checks no write. Read the file without dtype_backend (or with "
            "pyarrow.parquet.read_table(path).to_pandas()), which gives frameldp's report dtype"
        )


def _storage_series(series: pd.Series, text: bool = False) -> pd.Series:
    """A report column as its storage values (``text``: bit vectors in their text form); any
    other as it is."""
    if not isinstance(series.array, ReportArray):
        return series
    return pd.Series(series.array.plain(text=text), index=series.index, name=series.name)


def report_columns_of(obj: pd.DataFrame | pd.Series) -> dict[Any, ReportMetadata]:
    """The report columns of a frame (a Series: itself, under its name), from their types;
    for untyped columns, what a frame read from an earlier release's file holds in ``attrs``."""
    dtypes = list(obj.dtypes.items()) if isinstance(obj, pd.DataFrame) else [(obj.name, obj.dtype)]
    for name, dtype in dtypes:
        _refuse_raw_report_type(name, dtype)
    typed = {
        name: dtype.pyarrow_dtype.metadata for name, dtype in dtypes if _is_report_dtype(dtype)
    }
    names = [name for name, _ in dtypes]
    for name in typed:
        if names.count(name) > 1:  # one name, several columns: which release is it?
            require_column(names, name)
    untyped = [name for name in names if name not in typed]
    legacy = legacy_report_columns(obj.attrs.get(METADATA_KEY) or {}, untyped)
    return {**legacy, **typed}


@register_adapter(pd.DataFrame)
class PandasAdapter:
    """pandas DataFrames to and from Arrow. Report columns are ``ArrowDtype`` columns of their
    report type; other columns stay as they are (they never cross to Arrow)."""

    backend: Backend = "pandas"
    in_memory = True

    def columns(self, frame: pd.DataFrame) -> list[Any]:
        return list(frame.columns)

    def report_columns(self, frame: pd.DataFrame) -> dict[Any, ReportMetadata]:
        return report_columns_of(frame)

    def num_rows(self, frame: pd.DataFrame) -> int:
        return len(frame)

    def to_arrow(self, frame: pd.DataFrame, column: Any) -> pa.Array | pa.ChunkedArray:
        require_column(list(frame.columns), column)
        return _arrow(frame[column])

    def from_arrow(self, columns: Mapping[Any, pa.Array]) -> pd.DataFrame:
        return pd.DataFrame({name: _native(array) for name, array in columns.items()})

    def storage_view(self, frame: pd.DataFrame, *, text: bool = False) -> pd.DataFrame:
        view = frame.copy(deep=False)
        for i in range(frame.shape[1]):  # by position: names may repeat
            view.isetitem(i, _storage_series(frame.iloc[:, i], text))
        return view

    def with_arrow(self, frame: pd.DataFrame, columns: Mapping[Any, pa.Array]) -> pd.DataFrame:
        out = frame.copy(deep=False)
        for name, array in columns.items():
            out[name] = pd.Series(_native(array), index=frame.index, name=name)
        return out

    def take(
        self, frame: pd.DataFrame, columns: Sequence[Any], order: NDArray[np.int64]
    ) -> pd.DataFrame:
        out = frame[list(columns)].iloc[order].reset_index(drop=True)
        # What an earlier release recorded in attrs described the frame's rows as they were.
        out.attrs = {k: v for k, v in out.attrs.items() if k != METADATA_KEY}
        return out

    def recorded_shuffle(self, frame: pd.DataFrame) -> dict[str, Any]:
        # A file of plain columns shuffled by the command line records its shuffle in the
        # attrs pandas restores (it has no report column to type).
        reports = report_columns_of(frame)
        if reports:
            return recorded_shuffle(reports)
        return dict((frame.attrs.get(METADATA_KEY) or {}).get(SHUFFLED_KEY) or {})

    def unpack(self, frame: pd.DataFrame, column: Any, mechanism: Mechanism) -> pd.DataFrame:
        return _unpack(frame[column], mechanism, column)


@register_adapter(pd.Series)
class PandasSeriesAdapter:
    """A pandas Series: one column, under its name; read, never written into."""

    backend: Backend = "pandas"
    in_memory = False

    def columns(self, frame: pd.Series) -> list[Any]:
        return [frame.name]

    def report_columns(self, frame: pd.Series) -> dict[Any, ReportMetadata]:
        return report_columns_of(frame)

    def num_rows(self, frame: pd.Series) -> int:
        return len(frame)

    def to_arrow(self, frame: pd.Series, column: Any) -> pa.Array | pa.ChunkedArray:
        require_column([frame.name], column)
        return _arrow(frame)

    def from_arrow(self, columns: Mapping[Any, pa.Array]) -> pd.Series:
        ((name, array),) = columns.items()
        return pd.Series(_native(array), name=name)

    def storage_view(self, frame: pd.Series, *, text: bool = False) -> pd.Series:
        return _storage_series(frame, text)


def _unpack(series: pd.Series, mechanism: Mechanism, column: str) -> pd.DataFrame:
    bits, names = unpack_reports(_arrow(series), mechanism, column)
    return pd.DataFrame(bits, index=series.index, columns=names)


@pd.api.extensions.register_dataframe_accessor("ldp")
class PandasFrameAccessor(FrameMethods):
    """``df.ldp``: privatize columns and debias reports of a pandas DataFrame (its engine:
    :class:`~frameldp.frames.in_memory.InMemoryEngine` over :class:`PandasAdapter`)."""


@pd.api.extensions.register_series_accessor("ldp")
class PandasSeriesAccessor(ValueShortcuts):
    """``series.ldp``: privatize a Series or debias a Series of reports."""

    def __init__(self, series: pd.Series) -> None:
        self._series = series

    @property
    def _name(self) -> str:
        return "" if self._series.name is None else str(self._series.name)

    def _values_arrow(self) -> pa.Array | pa.ChunkedArray:
        return _arrow(self._series)

    def privatize(
        self,
        mechanism: Mechanism,
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> pd.Series:
        """Reports of this Series under ``mechanism`` (charged to ``budget`` when given)."""
        check_columns(
            [self._name],
            {self._name: mechanism},
            frame=False,
            reports=self._reports(),
        )
        source = resolve_source(key, seed)
        release = plan_release(
            [self._name],
            {self._name: mechanism},
            source=source,
            user=None,
            memo_key=None,
            num_rows=len(self._series),
        )
        with charging(ledger, budget, release):
            # The stream is labelled by the Series' own name (1 and "1" differ), as a frame
            # column of that name would be.
            label = "" if self._series.name is None else self._series.name
            (reports,) = privatize_columns(
                {label: _arrow(self._series)},
                {label: mechanism},
                specs={label: release.specs[self._name]},
                source=source,
            ).values()
        return pd.Series(_native(reports), index=self._series.index, name=self._series.name)

    def debias(self, mechanism: Mechanism | None = None, *, level: float = 0.95) -> FrequencyTable:
        """Debiased frequency table of this Series of reports, with the guarantee its release
        states for a person (memoized, shuffled, several rows per person), as the frame's."""
        table: FrequencyTable = self._as_frame().ldp.debias(self._name, mechanism, level=level)
        return table

    def _as_frame(self) -> pd.DataFrame:
        """This Series as a one-column frame under its name: the frame accessor reads a
        release's guarantee (a Series once had its own path, which stated one report's)."""
        return pd.DataFrame({self._name: self._series})

    def unpack(self, mechanism: Mechanism | None = None) -> pd.DataFrame:
        """RAPPOR reports as one 0/1 ``uint8`` column per bucket."""
        found = find_mechanism(self._name, mechanism, self._specs())
        return _unpack(self._series, found, self._name)

    @property
    def privacy(self) -> PrivacyGuarantee | None:
        """Per-person guarantee of the release this Series of reports belongs to."""
        guarantee: PrivacyGuarantee | None = self._as_frame().ldp.privacy
        return guarantee

    def _reports(self) -> dict[str, ReportMetadata]:
        """``{name: metadata}`` when this Series holds reports (its name as a string)."""
        found = list(report_columns_of(self._series).values())
        return {self._name: found[0]} if found else {}

    def _specs(self) -> dict[str, Any]:
        return {name: meta.spec for name, meta in self._reports().items()}
