"""The ``.ldp`` accessor on pandas DataFrame and Series.

Plumbing only: column -> Arrow -> ``frameldp.core`` -> native column. The input is never
modified; a new frame is returned. Mechanism specs are recorded in ``attrs["frameldp"]`` so that
``debias`` finds them on the frame ``privatize`` returned (pandas keeps ``attrs`` through most
row operations but drops them in some; pass the mechanism explicitly then).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from frameldp.accounting import PrivacyGuarantee
from frameldp.core.columns import bits_array
from frameldp.core.mechanisms import Mechanism
from frameldp.core.randomness import RandomSource, resolve_source
from frameldp.errors import DomainError, shown
from frameldp.frames._arrow import estimate_reports, privatize_values, statistic_of
from frameldp.frames._common import (
    METADATA_KEY,
    SHUFFLED_KEY,
    FrameMethods,
    LedgerLike,
    ReleasePlan,
    ValueShortcuts,
    charging,
    check_columns,
    column_context,
    find_decoder,
    find_mechanism,
    guarantee_of,
    is_seeded,
    memoizes,
    plan_release,
    plan_shuffle,
    report_names,
    require_column,
    shuffle_order,
    unpack_reports,
)
from frameldp.frames.table import FrequencyTable

__all__ = ["PandasFrameAccessor", "PandasSeriesAccessor", "privatize_rows", "rappor_values"]


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


def rappor_values(packed: np.ndarray[Any, Any]) -> pd.arrays.ArrowExtensionArray:
    """Packed RAPPOR reports as a ``binary[pyarrow]`` column (variable-width binary, as in
    polars: pandas cannot read a fixed-width binary dtype back from Parquet)."""
    return _native(bits_array(packed), None)


def _native(array: pa.Array, original: Any) -> Any:
    """pandas values of an Arrow report column: binary reports as ``binary[pyarrow]``
    (variable-width: pandas cannot read a fixed-width binary dtype back from Parquet), reported
    labels as a Categorical (the input's own categorical dtype when it has exactly those
    categories), anything else as numpy."""
    if pa.types.is_fixed_size_binary(array.type):
        return pd.arrays.ArrowExtensionArray(array.cast(pa.binary()))
    if pa.types.is_dictionary(array.type):
        categories = array.dictionary.to_pylist()
        codes = array.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        ordered = bool(getattr(original, "ordered", False))
        if isinstance(original, pd.CategoricalDtype) and list(original.categories) == categories:
            dtype = original
        else:
            dtype = pd.CategoricalDtype(categories, ordered=ordered)
        return pd.Categorical.from_codes(codes, dtype=dtype)
    return array.to_numpy(zero_copy_only=False)


def _recorded(obj: pd.DataFrame | pd.Series) -> dict[str, Any]:
    return dict(obj.attrs.get(METADATA_KEY, {}).get("mechanisms", {}))


def _recorded_shuffle(obj: pd.DataFrame) -> dict[str, Any]:
    return dict(obj.attrs.get(METADATA_KEY, {}).get(SHUFFLED_KEY, {}))


def _record(obj: pd.DataFrame | pd.Series, specs: Mapping[str, Any]) -> None:
    attrs = copy.deepcopy(obj.attrs)
    meta = attrs.setdefault(METADATA_KEY, {})
    meta["mechanisms"] = {**meta.get("mechanisms", {}), **specs}
    obj.attrs = attrs


def _column_reports(
    frame: pd.DataFrame,
    column: Any,
    mechanism: Mechanism,
    source: RandomSource,
    release: ReleasePlan,
    user: str | None,
    row_start: int,
) -> dict[Any, pd.Series]:
    """The report columns of ``column`` (a Bloom column's cohort column too), aligned with
    the input."""
    original = frame[column] if isinstance(frame, pd.DataFrame) else frame
    users = _arrow(frame[user]) if user is not None and memoizes(mechanism) else None
    with column_context(column):
        produced = privatize_values(
            _arrow(original),
            mechanism,
            column=column,
            source=source,
            row_start=row_start,
            users=users,
            user_column=user,
            memo=release.memo,
        )
    return {
        name: pd.Series(
            _native(array, original.dtype),
            index=original.index,
            name=original.name if name == column else name,
        )
        for name, array in produced.items()
    }


def privatize_rows(
    frame: pd.DataFrame,
    mechanisms: Mapping[str, Mechanism],
    *,
    source: RandomSource,
    release: ReleasePlan,
    user: str | None = None,
    row_start: int = 0,
) -> pd.DataFrame:
    """``frame`` with each column replaced by its reports, its first row being row
    ``row_start`` of the whole input (the reports' randomness is addressed by that global row,
    so a chunk or a Dask partition gets exactly the reports of the in-memory call).

    Every column is randomized before anything is assembled; the specs are recorded.
    """
    reports = {
        column: _column_reports(frame, column, mechanism, source, release, user, row_start)
        for column, mechanism in mechanisms.items()
    }
    out = frame.copy(deep=False)
    for produced in reports.values():
        for name, series in produced.items():
            out[name] = series
    _record(out, release.specs)
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

    def _specs(self) -> dict[str, Any]:
        return _recorded(self._frame)

    def _columns(self) -> list[Any]:
        return list(self._frame.columns)

    def _column_arrow(self, column: str) -> pa.Array | pa.ChunkedArray:
        return _arrow(self._frame[column])

    def _num_rows(self) -> int:
        return len(self._frame)

    def _shuffled(self) -> dict[str, Any]:
        return _recorded_shuffle(self._frame)

    def shuffle(
        self, *, keep: Sequence[Any] | str = (), key: bytes | None = None, seed: int | None = None
    ) -> pd.DataFrame:
        """The report columns only, rows in a keyed uniformly random order, index reset.

        Every column that is not a recorded report column is dropped (the index too: it may
        identify people), unless named in ``keep``, which voids the shuffle guarantee (the frame
        then keeps its local guarantee; a warning says so). ``ldp.privacy`` of the result is
        amplified by shuffling its rows, one per person (:func:`frameldp.amplify_by_shuffling`).
        """
        specs = _recorded(self._frame)
        columns, record = plan_shuffle(self._columns(), specs, keep, len(self._frame), seed=seed)
        selected = self._frame[columns]
        arrays = [_arrow(selected.iloc[:, i]) for i in range(selected.shape[1])]
        order = shuffle_order(arrays, len(self._frame), key, seed)
        out = selected.iloc[order].reset_index(drop=True)
        out.attrs = {METADATA_KEY: {"mechanisms": specs, SHUFFLED_KEY: record}}
        return out

    def _messages_frame(
        self, column: str, messages: pa.Array, specs: dict[str, dict[str, Any]]
    ) -> pd.DataFrame:
        out = pd.DataFrame({column: _native(messages, self._frame[column].dtype)})
        _record(out, specs)
        return out

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
        check_columns(columns, mechanisms, recorded=self._specs())
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
        recorded = _recorded(self._frame)
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
        column, found, names, memo = find_decoder(column, mechanism, _recorded(self._frame))
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
                seeded=is_seeded(_recorded(self._frame), column),
            )

    def unpack(self, column: str, mechanism: Mechanism | None = None) -> pd.DataFrame:
        """RAPPOR reports as one 0/1 ``uint8`` column per bucket, named ``column=label``."""
        require_column(self._columns(), column)
        found = find_mechanism(column, mechanism, _recorded(self._frame))
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
            [self._name], {self._name: mechanism}, frame=False, recorded=_recorded(self._series)
        )
        source = resolve_source(key, seed)
        release = plan_release(
            [self._name], {self._name: mechanism}, source=source, user=None, memo_key=None
        )
        with charging(ledger, budget, release):
            # The stream is labelled by the Series' own name (1 and "1" differ), as a frame
            # column of that name would be.
            label = "" if self._series.name is None else self._series.name
            (out,) = _column_reports(
                self._series, label, mechanism, source, release, None, 0
            ).values()
        _record(out, release.specs)
        return out

    def debias(self, mechanism: Mechanism | None = None, *, level: float = 0.95) -> FrequencyTable:
        """Debiased frequency table of this Series of reports."""
        recorded = _recorded(self._series)
        found = find_mechanism(self._name, mechanism, recorded)
        privacy = found.privacy.insecure() if is_seeded(recorded, self._name) else None
        with column_context(self._name):
            estimate = estimate_reports([_arrow(self._series)], found, column=self._name)
            return FrequencyTable.build(
                estimate, found, column=self._name, level=level, backend="pandas", privacy=privacy
            )

    def unpack(self, mechanism: Mechanism | None = None) -> pd.DataFrame:
        """RAPPOR reports as one 0/1 ``uint8`` column per bucket."""
        found = find_mechanism(self._name, mechanism, _recorded(self._series))
        return _unpack(self._series, found, self._name)

    @property
    def privacy(self) -> PrivacyGuarantee | None:
        """Guarantee of the recorded mechanism of this Series of reports."""
        return guarantee_of(_recorded(self._series))
