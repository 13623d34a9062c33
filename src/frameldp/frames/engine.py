"""The engine protocol: what frame libraries really differ on, written once per engine.

Every ``.ldp`` method (:class:`~frameldp.frames.methods.FrameMethods`) is written once on top
of one :class:`Engine`, bound to the frame it was asked about. An engine answers:

* the frame's columns and the report metadata their types carry;
* the values a domain is inferred from;
* ``privatize``: one release (:class:`Privatization`) over row-addressed batches, charging the
  ledger once per execution, returned as a frame of the engine's library;
* ``reduce``: a query's additive statistics (:class:`~frameldp.frames.grouping.Reduction`),
  flat or by the values of public columns;
* ``gatherer``: a multi-pass search's view of the reports, which reads the same reports in
  every pass;
* ``unpack`` and ``plain``: report columns as 0/1 columns, or as their storage values.

An engine whose rows can come to one machine (in-memory frames, polars LazyFrames) is a
:class:`LocalEngine`: it also gathers named columns into an in-memory frame, on which
``shuffle`` and the Balcer–Cheu shuffler (which permute every report together) run. An engine
whose rows are spread over machines (Dask, Spark) names instead how its user brings the frame
to one machine (``one_machine``), and those two refuse with that advice.

Engines are registered by the native type they serve (:func:`register_engine`); a frame of an
in-memory library needs no engine of its own, only a
:class:`~frameldp.frames.adapters.InMemoryAdapter`: :class:`~frameldp.frames.in_memory.
InMemoryEngine` serves every one (pandas, polars, pyarrow). Plumbing only: no formula lives
here, and no engine names a mechanism class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import pyarrow as pa

    from frameldp.core.mechanisms import Mechanism, Statistic
    from frameldp.frames.adapters import InMemoryAdapter
    from frameldp.frames.grouping import Grouped, Reduction
    from frameldp.frames.release import LedgerLike
    from frameldp.frames.report_type import ReportMetadata
    from frameldp.results.native import Backend

__all__ = [
    "Engine",
    "Gather",
    "LocalEngine",
    "LocalFrame",
    "Privatization",
    "register_engine",
    "registered_engine",
]

Gather = Callable[[Callable[[Mapping[str, "pa.Array"]], "Statistic"]], "Statistic"]
"""``gather(reduce)``: the summed statistic of ``reduce`` over every batch of the reports."""


@dataclass(frozen=True)
class Privatization:
    """One ``privatize`` call, as the caller gave it (see ``DataFrame.ldp.privatize``)."""

    mechanisms: Mapping[str, Mechanism]
    key: bytes | None = None
    seed: int | None = None
    ledger: LedgerLike | None = None
    budget: str | None = None
    user: str | None = None
    memo_key: bytes | None = None
    max_rows_per_user: int | None = None
    contributions: str = "all"


class Engine(Protocol):
    """One frame, as a frame library holds it."""

    backend: Backend
    """The library of the tables estimated from the frame (``"pandas"`` or ``"polars"``)."""

    one_machine: str | None
    """None when the frame's rows can come to one machine (the engine is a
    :class:`LocalEngine`); otherwise the expression that brings them there
    (``"ddf.compute()"``), which a refusal of ``shuffle`` names."""

    def columns(self) -> list[Any]:
        """The frame's column names, in order."""
        ...

    def report_columns(self) -> dict[Any, ReportMetadata]:
        """``{name: metadata}`` of the frame's report columns, read from their types."""
        ...

    def recorded_shuffle(self) -> dict[str, Any]:
        """What a ``shuffle`` recorded for the frame (empty when it was not shuffled)."""
        ...

    def num_rows(self) -> int:
        """The number of rows (a deferred frame counts them)."""
        ...

    def distinct(self, column: Any) -> pa.Array | pa.ChunkedArray:
        """Values of ``column`` whose distinct ones are its inferred domain (all of them, or
        the distinct ones only)."""
        ...

    def privatize(self, request: Privatization) -> Any:
        """The release of ``request``: the frame with each named column replaced by its
        reports, rows addressed globally, the ledger charged once per execution."""
        ...

    def reduce(self, reduction: Reduction, by: tuple[str, ...]) -> Grouped:
        """The statistics of ``reduction`` over the frame, by the values of ``by`` (one
        statistic under the key ``()`` when ``by`` is empty)."""
        ...

    def gatherer(self, names: tuple[str, ...], column: str) -> Gather:
        """A search's view of the report columns ``names``: every pass reads the same
        reports (a lazy release recomputed per pass would draw new ones)."""
        ...

    def unpack(self, column: str, mechanism: Mechanism) -> Any:
        """Bit-vector reports as one 0/1 ``uint8`` column per bucket, named ``column=label``."""
        ...

    def plain(self, *, text: bool) -> Any:
        """The frame with its report columns as plain columns of their storage values (with
        ``text``, bit vectors in their text form)."""
        ...


class LocalEngine(Engine, Protocol):
    """An engine whose rows can come to one machine."""

    def gather(self, columns: list[Any]) -> LocalFrame:
        """Every row of (at least) ``columns``, in memory (a lazy plan runs once)."""
        ...

    def returned(self, frame: Any) -> Any:
        """An in-memory result as a frame of this engine's kind (a LazyFrame: ``.lazy()``)."""
        ...


@dataclass(frozen=True)
class LocalFrame:
    """An in-memory frame and its adapter."""

    frame: Any
    adapter: InMemoryAdapter


_ENGINES: dict[type, Callable[[Any], Engine]] = {}

LOCAL = ("gather", "returned")
"""What a :class:`LocalEngine` adds to the :class:`Engine` protocol."""

_Engine = TypeVar("_Engine", bound=Engine)


def register_engine(*native_types: type) -> Callable[[type[_Engine]], type[_Engine]]:
    """Class decorator: the decorated engine class, called with a frame, serves frames of
    ``native_types`` (and their subclasses). mypy checks that the class answers
    :class:`Engine`."""

    def register(engine: type[_Engine]) -> type[_Engine]:
        local = getattr(engine, "one_machine", "") is None
        if local and not all(callable(getattr(engine, name, None)) for name in LOCAL):
            raise TypeError(
                f"{engine.__qualname__} declares one_machine = None, so it is a LocalEngine: "
                f"it needs {' and '.join(LOCAL)}"
            )
        for native in native_types:
            _ENGINES[native] = engine
        return engine

    return register


def registered_engine(frame: object) -> Callable[[Any], Engine] | None:
    """The engine class registered for the type of ``frame`` (or its nearest base class)."""
    for kind in type(frame).__mro__:
        if kind in _ENGINES:
            return _ENGINES[kind]
    return None
