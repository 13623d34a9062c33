"""pandas report columns: :class:`ReportDtype` and :class:`ReportArray`.

A report column in pandas is a :class:`ReportArray`: an ``ArrowExtensionArray`` that holds the
reports' storage values (labels, integers, packed bits) and whose dtype, :class:`ReportDtype`,
holds the ``frameldp.reports`` Arrow type (:mod:`frameldp.frames.report_type`). Because the
values are plain Arrow values, every read of pandas runs its own Arrow kernels on them at the
speed of a plain column: comparisons, ``isin``, ``unique``, ``value_counts``, ``factorize``,
sorts, ``groupby`` and ``merge`` keys, ``describe``, hashing. The type comes back where the
result still holds the column's reports, row for row: selections (``take``, filters, slices,
``head``, sorts, ``drop_duplicates``), ``copy``, ``unique``, ``concat`` of one release, fills
with nulls. Any other result (a comparison's mask, ``value_counts``' index and ``groupby`` keys,
an arithmetic result, a fill value, ``fillna``, ``ffill``, ``bfill``) is a plain ``ArrowDtype``
column: it no longer claims the release.

Writes: a write of non-null values into a report column (``__setitem__``, and through it
``.loc``/``.iloc``, ``where``, ``mask``, ``update``) raises a :class:`ParameterError` naming
the column (see "Writes" in :mod:`frameldp.frames.report_type`); values made into the type
(``astype(report dtype)``, ``pd.array(values, dtype=...)``, and pandas rebuilding the keys of
a join) stay plain values, which claim no release. Nulls pass.

Text: bit-vector reports are shown (repr, HTML), converted (``astype(str)``,
``astype(object)``) and written (``to_csv``) in the text form of
:mod:`frameldp.core.report_text`, which ``debias`` reads back; ``to_numpy()`` gives their bytes.

Files: ``str(dtype)`` is the storage's pandas name (``"large_string[pyarrow]"``), because
pyarrow records ``str(dtype)`` in a Parquet file's pandas metadata and a reader without frameldp
must understand it; the file's Arrow type still records the release, and ``dtype.name`` and the
repr show the mechanism. No formula lives here.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.extensions import ExtensionDtype

from frameldp.core.report_text import is_text
from frameldp.errors import ParameterError, shown
from frameldp.frames.report_type import ReportType, register_pandas_dtype, storage_of, text_of

__all__ = ["ReportArray", "ReportDtype"]


class ReportDtype(pd.ArrowDtype):  # type: ignore[misc]  # pandas' ArrowDtype is untyped here
    """The pandas dtype of a report column: an ``ArrowDtype`` of its :class:`ReportType`."""

    pyarrow_dtype: ReportType

    def __init__(self, pyarrow_dtype: ReportType) -> None:
        if not isinstance(pyarrow_dtype, ReportType):
            raise ParameterError(
                f"a ReportDtype holds a frameldp report type, got {shown(str(pyarrow_dtype))}"
            )
        super().__init__(pyarrow_dtype)

    @functools.cached_property
    def name(self) -> str:  # cached: pandas reads it in every operation
        return f"{self.pyarrow_dtype}[pyarrow]"

    def __str__(self) -> str:
        # What pyarrow writes into a Parquet file's pandas metadata (see the module docstring).
        return str(self.storage_dtype.name)

    def __repr__(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return hash(self.pyarrow_dtype)

    @functools.cached_property
    def storage_dtype(self) -> pd.ArrowDtype:
        """The plain ``ArrowDtype`` of the reports' storage values."""
        return pd.ArrowDtype(self.pyarrow_dtype.storage_type)

    @property
    def type(self) -> Any:
        return self.storage_dtype.type

    @functools.cached_property
    def numpy_dtype(self) -> np.dtype[Any]:
        # Numbers as numbers (describe, sums); labels and bits as objects: a "string" kind
        # would let Dask's string conversion replace the column by plain strings.
        storage: np.dtype[Any] = self.storage_dtype.numpy_dtype
        return storage if storage.kind in "biuf" else np.dtype(object)

    @property
    def kind(self) -> str:
        return self.numpy_dtype.kind

    @classmethod
    def construct_from_string(cls, string: str) -> ReportDtype:
        raise TypeError(f"a report dtype is not made from a string, got {shown(string)}")

    def construct_array_type(self) -> Any:
        return ReportArray

    def _get_common_dtype(self, dtypes: list[Any]) -> Any:
        # One release with itself: its type. Anything else: object (no release is claimed).
        if all(dtype == self for dtype in dtypes):
            return self
        return np.dtype(object)

    def __from_arrow__(self, array: pa.Array | pa.ChunkedArray) -> ReportArray:
        return ReportArray._of(_storage_chunks(array), self)


def _storage_chunks(array: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    """The storage values of a report column (any other column as it is), chunked."""
    storage = storage_of(array)
    return storage if isinstance(storage, pa.ChunkedArray) else pa.chunked_array([storage])


def _dtype_of(dtype: Any) -> Any:
    """``dtype`` as a numpy or pandas dtype (None when it names neither)."""
    try:
        return pd.api.types.pandas_dtype(dtype)
    except TypeError:
        return None


def _is_text_dtype(dtype: Any) -> bool:
    """Whether values converted to ``dtype`` are text (Python objects count: CSV writes them)."""
    if isinstance(dtype, np.dtype):
        return dtype.kind in "OU"
    if isinstance(dtype, pd.ArrowDtype):
        return is_text(dtype.pyarrow_dtype)
    return isinstance(dtype, pd.StringDtype)


def _all_null(value: Any) -> bool:
    """Whether a written value holds nulls only (a shift or reindex writes those)."""
    if value is None or value is pd.NA:
        return True
    if np.ndim(value) == 0:
        return bool(pd.isna(value))
    if isinstance(value, ReportArray | pd.Series | pd.Index) and isinstance(
        getattr(value, "dtype", None), ReportDtype
    ):
        return False
    return bool(np.all(pd.isna(np.asarray(value, dtype=object))))


class ReportArray(pd.arrays.ArrowExtensionArray):  # type: ignore[misc]
    """The values of a pandas report column (see the module docstring)."""

    _dtype: ReportDtype

    def __new__(cls, values: pa.Array | pa.ChunkedArray | None = None) -> Any:
        if values is None:  # pandas' view() fills in the attributes itself
            return object.__new__(cls)
        if not isinstance(values.type, ReportType):
            # An operation's result that is no report column: a plain Arrow-backed array.
            return pd.arrays.ArrowExtensionArray(values)
        return cls._of(_storage_chunks(values), ReportDtype(values.type))

    def __init__(self, values: pa.Array | pa.ChunkedArray | None = None) -> None:
        """Made by ``__new__``; nothing left to do."""

    @classmethod
    def _of(cls, storage: pa.ChunkedArray, dtype: ReportDtype) -> ReportArray:
        obj = object.__new__(cls)
        obj._pa_array = storage
        obj._dtype = dtype
        obj._cache = {}
        return obj

    # -- the type survives row selections -------------------------------------------------

    def _kept(self, result: Any) -> Any:
        """``result`` of a row selection of this array, typed as this release's reports."""
        if isinstance(result, pd.arrays.ArrowExtensionArray) and (
            result._pa_array.type == self._pa_array.type
        ):
            return type(self)._of(result._pa_array, self._dtype)
        return result

    def _from_pyarrow_array(self, pa_array: pa.Array | pa.ChunkedArray) -> Any:
        # Results of pandas' operations are plain columns unless a selection below keeps them.
        return pd.arrays.ArrowExtensionArray(pa_array)

    def __getitem__(self, item: Any) -> Any:
        return self._kept(super().__getitem__(item))

    def take(self, indices: Any, *, allow_fill: bool = False, fill_value: Any = None) -> Any:
        result = super().take(indices, allow_fill=allow_fill, fill_value=fill_value)
        if allow_fill and not _all_null(fill_value):
            return result  # a fill value (reindex, shift, unstack) is no report: plain
        return self._kept(result)

    def copy(self) -> ReportArray:
        return type(self)._of(self._pa_array, self._dtype)

    def dropna(self) -> Any:
        return self._kept(super().dropna())

    def unique(self) -> Any:
        return self._kept(super().unique())

    def fillna(self, value: Any = None, limit: int | None = None, copy: bool = True) -> Any:
        # Plain even when nothing is null: Dask infers its schema from an empty array, and a
        # typed schema over plain partitions would be written into Parquet files as a release.
        return self.plain().fillna(value=value, limit=limit, copy=copy)

    def _pad_or_backfill(self, *, method: Any, limit: Any = None, **options: Any) -> Any:
        # A null filled from another row holds that row's report: a plain column (see fillna).
        return self.plain()._pad_or_backfill(method=method, limit=limit, **options)

    def _values_for_json(self) -> Any:
        return self.astype(object)

    @classmethod
    def _concat_same_type(cls, to_concat: Any) -> Any:
        first = to_concat[0]
        chunks = [chunk for array in to_concat for chunk in array._pa_array.iterchunks()]
        stacked = pa.chunked_array(chunks, type=first._pa_array.type)
        if all(isinstance(a, ReportArray) and a.dtype == first.dtype for a in to_concat):
            return cls._of(stacked, first._dtype)
        return pd.arrays.ArrowExtensionArray(stacked)  # a part that is no report: plain

    # -- Arrow, numpy, text ---------------------------------------------------------------

    def __arrow_array__(self, type: pa.DataType | None = None) -> pa.ChunkedArray:
        kind = self._dtype.pyarrow_dtype
        if type is not None and type == self._pa_array.type:
            return self._pa_array
        chunks = [pa.ExtensionArray.from_storage(kind, c) for c in self._pa_array.iterchunks()]
        return pa.chunked_array(chunks, type=kind)

    def _text(self) -> pa.ChunkedArray:
        """The values as text-ready Arrow values (bit vectors in their text form)."""
        kind = self._dtype.pyarrow_dtype
        return pa.chunked_array(
            [text_of(chunk, kind) for chunk in self._pa_array.iterchunks()],
            type=pa.large_string() if kind.text_bits is not None else self._pa_array.type,
        )

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        target = pd.api.types.pandas_dtype(dtype)
        if isinstance(target, ReportDtype):
            if target == self._dtype:
                return self.copy() if copy else self
            self._refuse()
        return self.plain(text=_is_text_dtype(target)).astype(target, copy=copy)

    def plain(self, *, text: bool = False) -> pd.arrays.ArrowExtensionArray:
        """The storage values as a plain Arrow-backed array (``text``: bit vectors in their
        text form), which claims no release."""
        if text and self._dtype.pyarrow_dtype.text_bits is not None:
            return pd.arrays.ArrowExtensionArray(self._text())
        return pd.arrays.ArrowExtensionArray(self._pa_array)

    def _formatter(self, boxed: bool = False) -> Any:
        if self._dtype.pyarrow_dtype.text_bits is None:
            return super()._formatter(boxed)
        kind = self._dtype.pyarrow_dtype

        def text(value: Any) -> str:
            if value is None or value is pd.NA:
                return "<NA>"
            if isinstance(value, str):  # already the text form
                return value
            return str(text_of(pa.array([value], type=kind.storage_type), kind)[0].as_py())

        return text

    # -- writes ---------------------------------------------------------------------------

    @classmethod
    def _from_sequence(cls, scalars: Any, *, dtype: Any = None, copy: bool = False) -> Any:
        if isinstance(scalars, ReportArray) and scalars.dtype == dtype:
            return scalars.copy()
        if not isinstance(dtype, ReportDtype):  # a result of another type (counts, say)
            return pd.arrays.ArrowExtensionArray._from_sequence(scalars, dtype=dtype, copy=copy)
        storage = dtype.storage_dtype.construct_array_type()._from_sequence(
            scalars.plain() if isinstance(scalars, ReportArray) else scalars,
            dtype=dtype.storage_dtype,
        )
        converted = isinstance(scalars, pd.api.extensions.ExtensionArray | pd.Series | pd.Index)
        if converted or not _all_null(scalars):
            # Values made into this type (astype, pd.array, pandas rebuilding a join's keys)
            # are no reports of the release: they stay plain values, which claim nothing. So do
            # another array's values, even none (Dask infers a schema from an empty array).
            return storage
        return cls._of(storage._pa_array, dtype)

    @classmethod
    def _from_sequence_of_strings(cls, strings: Any, *, dtype: Any, copy: bool = False) -> Any:
        """Text read into the report dtype (``read_csv(dtype=...)``): plain values, which
        ``debias(column, mechanism)`` reads (bit reports in their text form)."""
        if dtype.pyarrow_dtype.text_bits is not None:
            return pd.arrays.ArrowExtensionArray(pa.array(strings, type=pa.large_string()))
        kind = dtype.storage_dtype
        return kind.construct_array_type()._from_sequence_of_strings(strings, dtype=kind)

    def to_numpy(self, dtype: Any = None, copy: bool = False, na_value: Any = None) -> Any:
        target = None if dtype is None else _dtype_of(dtype)
        text = target != np.dtype(object) and _is_text_dtype(target)  # bytes as objects
        plain = self.plain(text=text)
        if na_value is None:
            return plain.to_numpy(dtype=dtype, copy=copy)
        return plain.to_numpy(dtype=dtype, copy=copy, na_value=na_value)

    def __setitem__(self, key: Any, value: Any) -> None:
        own = getattr(value, "array", value)
        if isinstance(own, ReportArray) and own.dtype == self._dtype and self._unchanged(key, own):
            # The column written back over itself, nulls aside: pandas writes a frame's column
            # so when one of its cells is set to null.
            super().__setitem__(key, own.plain())
            return
        if not _all_null(value):
            self._refuse()
        super().__setitem__(key, None)

    def _unchanged(self, key: Any, values: ReportArray) -> bool:
        """Whether writing ``values`` at ``key`` changes no cell but to null (a report moved to
        another row would part it from its row's other columns: a Bloom cohort, a joint
        table's other report, the groups)."""
        current = super().__getitem__(key)
        if not isinstance(current, pd.arrays.ArrowExtensionArray) or len(current) != len(values):
            return False
        same = pc.equal(values._pa_array, current._pa_array)
        kept = pc.or_kleene(pc.is_null(values._pa_array), same)
        return bool(pc.all(kept.fill_null(False)).as_py())

    def _refuse(self) -> None:
        _refuse_values(self._dtype)


def _refuse_values(dtype: ExtensionDtype | None) -> None:
    """Raise: values written into a report column are no reports of its release."""
    if isinstance(dtype, ReportDtype):
        dtype.pyarrow_dtype.refuse_values()
    raise ParameterError("values cannot be made into frameldp reports")


register_pandas_dtype(ReportDtype)
