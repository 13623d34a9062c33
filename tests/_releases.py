"""Comparing two releases of one job: the same reports and mechanism, another release id.

Every privatize call records a fresh release id (and, in memory, its rows) in the type of
its report columns, so two releases of the same job with the same key have equal reports but
different types. :func:`as_one_release` drops those records, so that tests can compare the
reports and the mechanisms of two releases (pandas against Dask, eager against lazy) exactly.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa

from frameldp.frames.report_type import ReportMetadata, ReportType, storage_of

RELEASE_RECORDS = ("release", "rows", "fingerprint")
"""What a release adds to the spec of its report types that another release of the job lacks."""


def _retyped(kind: ReportType) -> ReportType:
    meta = kind.metadata
    spec = {k: v for k, v in meta.spec.items() if k not in RELEASE_RECORDS}
    shuffled = {k: v for k, v in meta.shuffled.items() if k != "collection"}
    return ReportType(kind.storage_type, ReportMetadata(spec, meta.column, meta.part, shuffled))


def _array(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    if not isinstance(array.type, ReportType):
        return array
    kind = _retyped(array.type)
    storage = storage_of(array)
    if isinstance(storage, pa.ChunkedArray):
        chunks = [pa.ExtensionArray.from_storage(kind, chunk) for chunk in storage.chunks]
        return pa.chunked_array(chunks, kind)
    return pa.ExtensionArray.from_storage(kind, storage)


def as_one_release(frame: Any) -> Any:
    """``frame`` (pandas DataFrame or Series, polars DataFrame, Arrow table or array) with its
    report types stripped of the release id and row count."""
    if isinstance(frame, pd.Series):
        dtype = frame.dtype
        if isinstance(dtype, pd.ArrowDtype) and isinstance(dtype.pyarrow_dtype, ReportType):
            values = _array(pa.array(frame.array))
            return pd.Series(
                values, dtype=pd.ArrowDtype(values.type), index=frame.index, name=frame.name
            )
        return frame
    if isinstance(frame, pd.DataFrame):
        out = frame.copy()
        for i, name in enumerate(frame.columns):
            out.isetitem(i, as_one_release(frame.iloc[:, i]).rename(name))
        return out
    if isinstance(frame, pl.DataFrame):
        return pl.from_arrow(as_one_release(frame.to_arrow()))
    if isinstance(frame, pa.Table):
        return pa.table({name: _array(frame.column(name)) for name in frame.column_names})
    if isinstance(frame, pa.Array | pa.ChunkedArray):
        return _array(frame)
    return frame


def assert_frame_equal(left: Any, right: Any, **options: Any) -> None:
    """``pandas.testing.assert_frame_equal`` of two releases of one job (:func:`as_one_release`)."""
    pd.testing.assert_frame_equal(as_one_release(left), as_one_release(right), **options)


def assert_series_equal(left: Any, right: Any, **options: Any) -> None:
    """``pandas.testing.assert_series_equal`` of two releases of one job."""
    pd.testing.assert_series_equal(as_one_release(left), as_one_release(right), **options)


def without_release_records(specs: dict[str, Any]) -> dict[str, Any]:
    """``{column: spec}`` without what a release adds that another release of the job lacks."""
    return {
        column: {k: v for k, v in spec.items() if k not in RELEASE_RECORDS}
        for column, spec in specs.items()
    }
