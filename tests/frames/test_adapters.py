"""Engines and adapters are registered by native type, and an in-memory library needs only an
adapter.

Every ``.ldp`` method runs through the frame's engine (:mod:`frameldp.frames.engine`); the
in-memory engine, the pandera schemas and the Dask partitions find a frame's adapter by its
type. The last tests register a toy library (a dict of Arrow columns) with nothing but an
adapter, and get the reports, tables and refusals of the real backends from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from numpy.typing import NDArray

import frameldp
from _releases import as_one_release
from frameldp import ldp, schemas
from frameldp.frames.adapters import (
    adapter_for,
    in_memory_adapter_for,
    register_adapter,
    registered_types,
)
from frameldp.frames.lookup import unpack_reports
from frameldp.frames.methods import FrameMethods, engine_for
from frameldp.frames.pipeline import privatize_frame
from frameldp.frames.report_type import ReportMetadata, metadata_of, recorded_shuffle, storage_of

KEY = bytes(range(32))
CARRIERS = ("AA", "DL", "UA")
KRR = frameldp.RandomizedResponse(1.0, domain=CARRIERS)
RAPPOR = frameldp.Rappor(epsilon=2.0, domain=CARRIERS)


def _values(n: int = 300) -> list[str]:
    return [CARRIERS[(i * 7) % 3] for i in range(n)]


# -- the registry --------------------------------------------------------------------------------


class _SubFrame(pd.DataFrame):
    """A pandas subclass: adapted by its base class's adapter."""


@pytest.mark.parametrize(
    ("frame", "backend", "in_memory"),
    [
        (pd.DataFrame({"a": [1]}), "pandas", True),
        (pd.Series([1], name="a"), "pandas", False),
        (_SubFrame({"a": [1]}), "pandas", True),
        (pl.DataFrame({"a": [1]}), "polars", True),
        (pl.LazyFrame({"a": [1]}), "polars", False),
    ],
    ids=["pandas", "series", "pandas-subclass", "polars", "lazy"],
)
def test_every_frame_finds_its_adapter_by_type(frame: Any, backend: str, in_memory: bool) -> None:
    adapter = adapter_for(frame)
    assert (adapter.backend, adapter.in_memory) == (backend, in_memory)
    assert adapter.columns(frame) == ["a"]
    assert adapter.num_rows(frame) == 1
    assert adapter.to_arrow(frame, "a").to_pylist() == [1]
    with pytest.raises(frameldp.ParameterError, match="'b' not found"):
        adapter.to_arrow(frame, "b")


@pytest.mark.parametrize(
    ("frame", "engine", "one_machine"),
    [
        (pd.DataFrame({"a": [1]}), "InMemoryEngine", None),
        (_SubFrame({"a": [1]}), "InMemoryEngine", None),
        (pl.DataFrame({"a": [1]}), "InMemoryEngine", None),
        (pl.LazyFrame({"a": [1]}), "LazyEngine", None),
        (dd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1), "DaskEngine", "ddf.compute()"),
    ],
    ids=["pandas", "pandas-subclass", "polars", "lazy", "dask"],
)
def test_every_frame_finds_its_engine_by_type(
    frame: Any, engine: str, one_machine: str | None
) -> None:
    found = engine_for(frame)
    assert (type(found).__name__, found.one_machine) == (engine, one_machine)
    assert found.columns() == ["a"]
    assert found.num_rows() == 1
    assert found.report_columns() == {}
    assert list(found.distinct("a").to_pylist()) == [1]


def test_an_unadapted_type_is_a_frameldp_error_naming_it() -> None:
    with pytest.raises(frameldp.ParameterError, match=r"builtins\.dict") as caught:
        adapter_for({"a": [1]})
    assert "pandas DataFrame, pandas Series, polars DataFrame" in str(caught.value)
    for deferred in (pl.LazyFrame({"a": [1]}), pd.Series([1])):
        with pytest.raises(frameldp.ParameterError, match="not an in-memory frame of columns"):
            in_memory_adapter_for(deferred)
    with pytest.raises(frameldp.ParameterError, match="not an in-memory frame of columns"):
        engine_for(pd.Series([1]))  # a Series is put in a frame first


def test_validation_dispatches_by_adapter() -> None:
    ddf = dd.from_pandas(pd.DataFrame({"carrier": _values(4)}), npartitions=1)
    with pytest.raises(frameldp.ParameterError, match="a computed partition or chunk"):
        schemas.validate_input(ddf, {"carrier": KRR})
    with pytest.raises(frameldp.ParameterError, match=r"got builtins\.list"):
        schemas.validate_input([1, 2], {"carrier": KRR})


def test_the_adapted_libraries_are_registered() -> None:
    assert {pd.DataFrame, pd.Series, pl.DataFrame, pl.LazyFrame} <= set(registered_types())


def test_storage_views_show_the_report_values() -> None:
    reports = ldp(pd.DataFrame({"carrier": _values(6)})).krr("carrier", 1.0, domain=CARRIERS)
    for frame in (reports, pl.from_pandas(reports), pl.from_pandas(reports).lazy()):
        view = adapter_for(frame).storage_view(frame)
        if isinstance(view, pl.LazyFrame):
            view = view.collect()
        assert adapter_for(view).report_columns(view) == {}
        expected = storage_of(pa.Array.from_pandas(reports["carrier"])).to_pylist()
        assert list(view["carrier"]) == expected


# -- a toy backend: an adapter is all it takes ---------------------------------------------------


class ColumnDict(dict[str, pa.Array]):
    """A frame that is a dict of Arrow columns (a toy library)."""


@register_adapter(ColumnDict)
class ColumnDictAdapter:
    backend = "pandas"
    in_memory = True

    def columns(self, frame: ColumnDict) -> list[Any]:
        return list(frame)

    def report_columns(self, frame: ColumnDict) -> dict[Any, ReportMetadata]:
        found = {name: metadata_of(array.type) for name, array in frame.items()}
        return {name: meta for name, meta in found.items() if meta is not None}

    def num_rows(self, frame: ColumnDict) -> int:
        return len(next(iter(frame.values()), []))

    def to_arrow(self, frame: ColumnDict, column: Any) -> pa.Array:
        return frame[column]

    def from_arrow(self, columns: Mapping[Any, pa.Array]) -> ColumnDict:
        return ColumnDict(columns)

    def storage_view(self, frame: ColumnDict) -> ColumnDict:
        return ColumnDict({name: storage_of(array) for name, array in frame.items()})

    def with_arrow(self, frame: ColumnDict, columns: Mapping[Any, pa.Array]) -> ColumnDict:
        return ColumnDict({**frame, **columns})

    def take(self, frame: ColumnDict, columns: Sequence[Any], order: NDArray[np.int64]) -> Any:
        return ColumnDict({name: frame[name].take(order) for name in columns})

    def recorded_shuffle(self, frame: ColumnDict) -> dict[str, Any]:
        return recorded_shuffle(self.report_columns(frame))

    def unpack(self, frame: ColumnDict, column: Any, mechanism: Any) -> ColumnDict:
        bits, names = unpack_reports(frame[column], mechanism, column)
        return ColumnDict({name: pa.array(bits[:, i]) for i, name in enumerate(names)})


def test_a_new_backend_gets_the_same_reports_from_its_adapter_alone() -> None:
    values = _values()
    toy = ColumnDict({"carrier": pa.array(values), "other": pa.array(range(len(values)))})
    reports = FrameMethods(toy).privatize({"carrier": RAPPOR}, key=KEY)
    expected = ldp(pd.DataFrame({"carrier": values})).privatize({"carrier": RAPPOR}, key=KEY)
    assert as_one_release(reports["carrier"]).equals(
        as_one_release(pa.Array.from_pandas(expected["carrier"]))
    )
    assert reports["other"] is toy["other"]  # passthrough columns are not converted
    assert list(toy) == ["carrier", "other"]
    assert toy["carrier"].to_pylist() == values  # the input is not modified
    table = FrameMethods(reports).debias("carrier")
    assert table.frame.equals(ldp(expected).debias("carrier").frame)
    unpacked = FrameMethods(reports).unpack("carrier")
    assert {name: array.to_pylist() for name, array in unpacked.items()} == {
        name: list(column) for name, column in ldp(expected).unpack("carrier").items()
    }
    with pytest.raises(frameldp.ParameterError, match="already holds frameldp reports"):
        FrameMethods(reports).privatize({"carrier": KRR}, key=KEY)


def test_a_new_backend_shuffles_in_the_same_order() -> None:
    values = _values()
    toy = FrameMethods(ColumnDict({"carrier": pa.array(values)})).krr(
        "carrier", 1.0, domain=CARRIERS, key=KEY
    )
    shuffled = FrameMethods(toy).shuffle(key=KEY)
    pandas = (
        pd.DataFrame({"carrier": values})
        .ldp.krr("carrier", 1.0, domain=CARRIERS, key=KEY)
        .ldp.shuffle(key=KEY)
    )
    expected = pa.Array.from_pandas(pandas["carrier"])
    assert storage_of(shuffled["carrier"]).equals(storage_of(expected))
    assert FrameMethods(shuffled).privacy == ldp(pandas).privacy  # amplified, as on pandas
    assert FrameMethods(shuffled).privacy != KRR.privacy


def test_privatize_frame_is_one_pipeline_for_every_in_memory_frame() -> None:
    values = _values()
    spec = {"carrier": KRR.to_spec()}
    source = frameldp.RandomSource(KEY)
    produced = [
        privatize_frame(frame, {"carrier": KRR}, specs=spec, source=source, row_start=7)
        for frame in (
            pd.DataFrame({"carrier": values}),
            pl.DataFrame({"carrier": values}),
            ColumnDict({"carrier": pa.array(values)}),
        )
    ]
    arrays = [adapter_for(out).to_arrow(out, "carrier") for out in produced]
    assert all(storage_of(a).equals(storage_of(arrays[0])) for a in arrays)


def test_a_local_engine_without_its_gathering_is_refused_when_registered() -> None:
    from frameldp.frames.engine import register_engine

    class Incomplete:
        one_machine = None

    with pytest.raises(TypeError, match="needs gather and returned"):
        register_engine(ColumnDict)(Incomplete)  # type: ignore[type-var]
