"""Frame adapters, registered by the native type they adapt (as pandera registers its backends).

An adapter converts one library's frames to and from Arrow, and does nothing else: every
privatization, statistic and table is computed by the one pipeline
(:mod:`frameldp.frames.pipeline`) on Arrow columns. The in-memory engine
(:mod:`frameldp.frames.in_memory`), pandera schemas and the Dask partitions find the adapter of
whatever frame they are given with :func:`adapter_for`, which walks the type's method
resolution order, so a subclass of a registered type is adapted too.

Two kinds:

* :class:`FrameAdapter`, every frame that can be read on one machine: its column names, its
  report columns (read from their ``frameldp.reports`` types,
  :mod:`frameldp.frames.report_type`), its length, a column as Arrow (a polars LazyFrame
  collects it), a new frame of Arrow columns, and a view with report columns as their storage
  values (for pandera's checks).
* :class:`InMemoryAdapter`, frames whose rows are all in memory and that take columns (pandas
  and polars DataFrames, pyarrow Tables): also report columns written back, rows taken in a
  given order, the recorded shuffle and unpacked bit vectors. Such a library needs nothing
  more: :class:`~frameldp.frames.in_memory.InMemoryEngine` serves it. A pandas Series is one
  column, read but never written.

Frames spread over machines (Dask, Spark) have engines and no adapter: nothing reads their
columns on one machine. The adapter modules (``frameldp.frames._pandas``, ``_polars``,
``_arrow``) register themselves when their library is imported
(:func:`frameldp.frames.register_accessors`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from frameldp.errors import ParameterError
from frameldp.frames import register_engine_of

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from numpy.typing import NDArray

    from frameldp.core.mechanisms import Mechanism
    from frameldp.frames.report_type import ReportMetadata
    from frameldp.results.native import Backend

__all__ = [
    "FrameAdapter",
    "InMemoryAdapter",
    "adapter_for",
    "in_memory_adapter_for",
    "register_adapter",
    "registered_types",
]


class FrameAdapter(Protocol):
    """Reads a frame of one library as Arrow."""

    backend: Backend
    """The library of the tables estimated from such frames (``"pandas"`` or ``"polars"``)."""

    in_memory: bool
    """Whether the adapter is an :class:`InMemoryAdapter` (declared, not probed)."""

    def columns(self, frame: Any) -> list[Any]:
        """The frame's column names, in order."""
        ...

    def report_columns(self, frame: Any) -> dict[Any, ReportMetadata]:
        """``{name: metadata}`` of the frame's report columns, read from their types."""
        ...

    def num_rows(self, frame: Any) -> int:
        """The number of rows (a deferred frame counts them)."""
        ...

    def to_arrow(self, frame: Any, column: Any) -> pa.Array | pa.ChunkedArray:
        """One column as Arrow; a type Arrow cannot hold raises a
        :class:`~frameldp.errors.DomainError` naming the column."""
        ...

    def from_arrow(self, columns: Mapping[Any, pa.Array]) -> Any:
        """A new frame of the library holding ``columns``."""
        ...

    def storage_view(self, frame: Any, *, text: bool = False) -> Any:
        """``frame`` with each report column holding its storage values (binary, text), as
        value checks see them (neither Arrow nor polars compares extension values); with
        ``text``, bit-vector reports in their text form (:mod:`frameldp.core.report_text`)."""
        ...


class InMemoryAdapter(FrameAdapter, Protocol):
    """Reads and writes a frame whose rows are in memory."""

    def with_arrow(self, frame: Any, columns: Mapping[Any, pa.Array]) -> Any:
        """A new frame: ``frame`` with ``columns`` replacing (or added after) its own, rows
        aligned; ``frame`` itself is not modified."""
        ...

    def take(self, frame: Any, columns: Sequence[Any], order: NDArray[np.int64]) -> Any:
        """A new frame of ``columns`` holding rows ``order`` of ``frame`` (index reset)."""
        ...

    def recorded_shuffle(self, frame: Any) -> dict[str, Any]:
        """What a ``shuffle`` recorded for ``frame`` (empty when it was not shuffled): read
        from its report types (:func:`~frameldp.frames.report_type.recorded_shuffle`)."""
        ...

    def unpack(self, frame: Any, column: Any, mechanism: Mechanism) -> Any:
        """Bit-vector reports of ``column`` as a new frame of one 0/1 ``uint8`` column per
        bucket, named ``column=label`` (:func:`~frameldp.frames.lookup.unpack_reports`)."""
        ...


_Adapter = TypeVar("_Adapter", bound=FrameAdapter)

_REGISTRY: dict[type, FrameAdapter] = {}


def register_adapter(*native_types: type) -> Callable[[type[_Adapter]], type[_Adapter]]:
    """Class decorator: an instance of the decorated adapter class adapts ``native_types``
    (and their subclasses). mypy checks that the class answers :class:`FrameAdapter`."""

    def register(adapter: type[_Adapter]) -> type[_Adapter]:
        instance = adapter()
        for native in native_types:
            _REGISTRY[native] = instance
        return adapter

    return register


def registered_types() -> tuple[type, ...]:
    """The native types adapted so far (their libraries have been imported)."""
    return tuple(_REGISTRY)


def adapter_for(frame: object) -> FrameAdapter:
    """The adapter registered for the type of ``frame`` (or the nearest base class)."""
    for kind in type(frame).__mro__:
        if kind in _REGISTRY:
            return _REGISTRY[kind]
    if register_engine_of(frame):  # a pyarrow Table: its module registers it when imported
        return adapter_for(frame)
    names = ", ".join(sorted({_library_name(kind) for kind in _REGISTRY}))
    kind = type(frame)
    raise ParameterError(
        f"frameldp has no adapter for {kind.__module__}.{kind.__qualname__} "
        f"(adapted: {names or 'none: import pandas, polars or dask.dataframe'}; frameldp.ldp "
        "also takes pyarrow RecordBatchReaders, DuckDB relations, polars LazyFrames, Dask and "
        "Spark frames. Batches or a pyarrow dataset: pa.RecordBatchReader.from_batches(schema, "
        "batches) or dataset.scanner().to_reader())"
    )


def _library_name(kind: type) -> str:
    """``pandas DataFrame``, ``polars LazyFrame``: a type as its users know it."""
    return f"{kind.__module__.partition('.')[0]} {kind.__qualname__}"


def in_memory_adapter_for(frame: object) -> InMemoryAdapter:
    """The adapter of ``frame``, which must be an in-memory frame of columns (a pandas or
    polars DataFrame)."""
    adapter = adapter_for(frame)
    if not adapter.in_memory:
        raise ParameterError(
            f"{_library_name(type(frame))} is not an in-memory frame of columns; compute or "
            "collect it (a Series: put it in a frame) first"
        )
    return cast(InMemoryAdapter, adapter)  # as it declares
