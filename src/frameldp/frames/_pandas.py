"""The ``.ldp`` accessor on pandas DataFrame and Series.

Plumbing only: columns -> Arrow -> the privatize pipeline -> pandas columns. The input is never
modified; a new frame is returned. Report columns are ``ArrowDtype`` columns of the
``frameldp.reports`` extension type (:mod:`frameldp.frames.report_type`), which carries the
mechanism: ``debias`` finds it after merges, filters, ``concat`` and Parquet round trips. Frames
read from Parquet files of earlier releases carry it in ``attrs`` instead, which is still read.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from frameldp.accounting import PrivacyGuarantee
from frameldp.core.mechanisms import Mechanism
from frameldp.core.randomness import RandomSource, resolve_source
from frameldp.errors import DomainError, shown
from frameldp.frames._methods import FrameMethods, ValueShortcuts
from frameldp.frames.inputs import METADATA_KEY, check_columns, require_column
from frameldp.frames.lookup import find_decoder, find_mechanism, report_names, unpack_reports
from frameldp.frames.pipeline import (
    column_context,
    estimate_reports,
    privatize_columns,
    statistic_of,
)
from frameldp.frames.release import (
    LedgerLike,
    ReleasePlan,
    charging,
    guarantee_of,
    is_seeded,
    plan_release,
)
from frameldp.frames.report_type import (
    ReportMetadata,
    ReportType,
    legacy_report_columns,
    recorded_specs,
    with_shuffle,
)
from frameldp.frames.shuffling import SHUFFLED_KEY, plan_shuffle, shuffle_order
from frameldp.frames.table import FrequencyTable

__all__ = [
    "PandasFrameAccessor",
    "PandasSeriesAccessor",
    "privatize_rows",
    "report_columns_of",
]


def _arrow(series: pd.Series) -> pa.Array | pa.ChunkedArray:
    """The column as Arrow (zero-copy for Arrow-backed and categorical columns; NaN is null)."""
    try:
        array = pa.Array.from_pandas(series)
        if series.dtype == object and _coerced(array, series):
            raise pa.ArrowInvalid("text and bytes in one column")
        return array
    except (pa.ArrowException, OverflowError, UnicodeEncodeError) as error:
        kinds = sorted({type(v).__name__ for v in itertools.islice(series.array, 10_000)})
        raise DomainError(
            f"column {shown(series.name)}: values ({', '.join(kinds)}) cannot form one Arrow "
            f"column ({shown(str(error), 120)}); cast the column to one type (integers within "
            "64 bits, text without lone surrogates) first"
        ) from None


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
    return inferred not in (expected[kind], "empty")


def _native(array: pa.Array) -> pd.arrays.ArrowExtensionArray:
    """pandas values of a report column: an ``ArrowDtype`` of its report type."""
    return pd.arrays.ArrowExtensionArray(array)


def report_columns_of(obj: pd.DataFrame | pd.Series) -> dict[Any, ReportMetadata]:
    """The report columns of a frame (a Series: itself, under its name), from their types;
    for untyped columns, what a frame read from an earlier release's file holds in ``attrs``."""
    dtypes = list(obj.dtypes.items()) if isinstance(obj, pd.DataFrame) else [(obj.name, obj.dtype)]
    typed = {
        name: dtype.pyarrow_dtype.metadata
        for name, dtype in dtypes
        if isinstance(dtype, pd.ArrowDtype) and isinstance(dtype.pyarrow_dtype, ReportType)
    }
    names = [name for name, _ in dtypes]
    for name in typed:
        if names.count(name) > 1:  # one name, several columns: which release is it?
            require_column(names, name)
    untyped = [name for name in names if name not in typed]
    legacy = legacy_report_columns(obj.attrs.get(METADATA_KEY) or {}, untyped)
    return {**legacy, **typed}


def privatize_rows(
    frame: pd.DataFrame,
    mechanisms: Mapping[str, Mechanism],
    *,
    source: RandomSource,
    release: ReleasePlan,
    user: str | None = None,
    row_start: int = 0,
) -> pd.DataFrame:
    """``frame`` with each column replaced by its report columns, its first row being row
    ``row_start`` of the whole input (a chunk or a Dask partition gets exactly the reports of
    the in-memory call). Every column is randomized before anything is assembled."""
    needed = [*mechanisms, *([] if user is None else [user])]
    produced = privatize_columns(
        {column: _arrow(frame[column]) for column in needed},
        mechanisms,
        specs=release.specs,
        source=source,
        row_start=row_start,
        user=user,
        memo=release.memo,
    )
    out = frame.copy(deep=False)
    for name, array in produced.items():
        out[name] = pd.Series(_native(array), index=frame.index, name=name)
    return out


def _reports(frame: pd.DataFrame, names: list[Any]) -> list[pa.Array | pa.ChunkedArray]:
    for name in names:
        require_column(list(frame.columns), name)
    return [_arrow(frame[name]) for name in names]


def _unpack(series: pd.Series, mechanism: Mechanism, column: str) -> pd.DataFrame:
    bits, names = unpack_reports(_arrow(series), mechanism, column)
    return pd.DataFrame(bits, index=series.index, columns=names)


@pd.api.extensions.register_dataframe_accessor("ldp")
class PandasFrameAccessor(FrameMethods):
    """``df.ldp``: privatize columns and debias reports of a pandas DataFrame."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame

    def _report_columns(self) -> dict[str, ReportMetadata]:
        return report_columns_of(self._frame)

    def _shuffled(self) -> dict[str, Any]:
        # A file of plain columns shuffled by the command line records its shuffle in the
        # attrs pandas restores (it has no report column to type).
        if self._report_columns():
            return super()._shuffled()
        return dict((self._frame.attrs.get(METADATA_KEY) or {}).get(SHUFFLED_KEY) or {})

    def _columns(self) -> list[Any]:
        return list(self._frame.columns)

    def _column_arrow(self, column: str) -> pa.Array | pa.ChunkedArray:
        return _arrow(self._frame[column])

    def _num_rows(self) -> int:
        return len(self._frame)

    def shuffle(
        self, *, keep: Sequence[Any] | str = (), key: bytes | None = None, seed: int | None = None
    ) -> pd.DataFrame:
        """The report columns only, rows in a keyed uniformly random order, index reset.

        Every column that is not a recorded report column is dropped (the index too: it may
        identify people), unless named in ``keep``, which voids the shuffle guarantee (the frame
        then keeps its local guarantee; a warning says so). ``ldp.privacy`` of the result is
        amplified by shuffling its rows, one per person (:func:`frameldp.amplify_by_shuffling`).
        """
        reports = self._report_columns()
        columns, record = plan_shuffle(
            self._columns(), recorded_specs(reports), keep, len(self._frame), seed=seed
        )
        selected = self._frame[columns]
        arrays = [_arrow(selected.iloc[:, i]) for i in range(selected.shape[1])]
        order = shuffle_order(arrays, len(self._frame), key, seed)
        out = selected.iloc[order].reset_index(drop=True)
        for name in columns:
            if name in reports:
                out[name] = _native(with_shuffle(_arrow(out[name]), reports[name], record))
        out.attrs = {k: v for k, v in out.attrs.items() if k != METADATA_KEY}
        return out

    def _messages_frame(self, column: str, messages: pa.ExtensionArray) -> pd.DataFrame:
        return pd.DataFrame({column: _native(messages)})

    def privatize(
        self,
        mechanisms: Mapping[str, Mechanism],
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
        user: str | None = None,
        memo_key: bytes | None = None,
    ) -> pd.DataFrame:
        """Replace each column by its reports; one fresh key for the call unless given.

        Every column is randomized before anything is assembled, so a bad column raises
        without producing any output. The returned frame records the mechanisms. With
        ``ledger`` and ``budget``, the release is checked against the budget first and recorded
        once the reports exist. Bloom RAPPOR columns also get a ``{column}_cohort`` column;
        ``user`` and ``memo_key`` are described in :meth:`rappor`.
        """
        columns = list(self._frame.columns)
        check_columns(columns, mechanisms, reports=self._report_columns())
        source = resolve_source(key, seed)
        release = plan_release(columns, mechanisms, source=source, user=user, memo_key=memo_key)
        with charging(ledger, budget, release):
            return privatize_rows(
                self._frame, mechanisms, source=source, release=release, user=user
            )

    def debias(
        self, column: str, mechanism: Mechanism | None = None, *, level: float = 0.95
    ) -> FrequencyTable:
        """Debiased frequency table of a report column (or of Balcer–Cheu messages)."""
        require_column(self._columns(), column)
        recorded = self._specs()
        found = find_mechanism(column, mechanism, recorded)
        names = report_names(column, found, recorded.get(column))
        with column_context(column):
            estimate = estimate_reports(_reports(self._frame, names), found, column=column)
            return FrequencyTable.build(
                estimate,
                found,
                column=column,
                level=level,
                backend="pandas",
                privacy=self._table_privacy(found, column),
            )

    def decode(
        self,
        column: str | None = None,
        *,
        candidates: Sequence[object],
        mechanism: Mechanism | None = None,
        significance: float = 0.05,
        level: float = 0.95,
    ) -> FrequencyTable:
        """Decode Bloom RAPPOR reports against candidate strings (see
        :func:`frameldp.core.estimation.decode_bloom`).

        The table lists the detected candidates with counts, standard errors, intervals at
        ``level`` and p-values; ``table.decoding.unexplained`` is the share of reports they do
        not explain. ``column`` may be omitted when the frame holds one Bloom report column.
        """
        column, found, names, memo = find_decoder(column, mechanism, self._specs())
        require_column(self._columns(), column)
        with column_context(column):
            statistic = statistic_of(_reports(self._frame, names), found, column)
            return FrequencyTable.decoded(
                found,
                statistic,
                candidates,
                memo=memo,
                significance=significance,
                column=column,
                level=level,
                backend="pandas",
                seeded=is_seeded(self._specs(), column),
            )

    def unpack(self, column: str, mechanism: Mechanism | None = None) -> pd.DataFrame:
        """RAPPOR reports as one 0/1 ``uint8`` column per bucket, named ``column=label``."""
        require_column(self._columns(), column)
        found = find_mechanism(column, mechanism, self._specs())
        return _unpack(self._frame[column], found, column)


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
            [self._name], {self._name: mechanism}, source=source, user=None, memo_key=None
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
        """Debiased frequency table of this Series of reports."""
        recorded = self._specs()
        found = find_mechanism(self._name, mechanism, recorded)
        privacy = found.privacy.insecure() if is_seeded(recorded, self._name) else None
        with column_context(self._name):
            estimate = estimate_reports([_arrow(self._series)], found, column=self._name)
            return FrequencyTable.build(
                estimate, found, column=self._name, level=level, backend="pandas", privacy=privacy
            )

    def unpack(self, mechanism: Mechanism | None = None) -> pd.DataFrame:
        """RAPPOR reports as one 0/1 ``uint8`` column per bucket."""
        found = find_mechanism(self._name, mechanism, self._specs())
        return _unpack(self._series, found, self._name)

    @property
    def privacy(self) -> PrivacyGuarantee | None:
        """Guarantee of the recorded mechanism of this Series of reports."""
        return guarantee_of(self._specs())

    def _reports(self) -> dict[str, ReportMetadata]:
        """``{name: metadata}`` when this Series holds reports (its name as a string)."""
        found = list(report_columns_of(self._series).values())
        return {self._name: found[0]} if found else {}

    def _specs(self) -> dict[str, Any]:
        return {name: meta.spec for name, meta in self._reports().items()}
