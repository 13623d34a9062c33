"""Frame engines: the ``.ldp`` accessor on pandas, polars, Dask and Spark objects, and
``frameldp.ldp(obj)`` on those and pyarrow's (plumbing, no formula).

An adapter is registered by the library it adapts, when that library is imported: at ``import
frameldp`` for a library already imported, otherwise the moment the program imports it.
``import frameldp`` therefore never pays for importing pandas, polars or Dask (about 0.5 s for
``dask.dataframe``) in a job that does not use them, and ``frameldp --help`` imports none.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from frameldp.results.table import FrequencyTable

__all__ = ["ADAPTERS", "ON_DEMAND", "FrequencyTable", "register_accessors", "register_engine_of"]

ADAPTERS: dict[str, tuple[str, str]] = {
    "pyarrow": ("pyarrow", "frameldp.frames.report_type"),  # registers the report type
    "pandas": ("pandas", "frameldp.frames._pandas"),
    "polars": ("polars", "frameldp.frames._polars"),
    "dask": ("dask.dataframe", "frameldp.frames._dask"),
    "pyspark": ("pyspark.sql", "frameldp.frames._spark"),
}
"""Library -> (the module whose import makes its frames exist, frameldp's adapter module)."""

ON_DEMAND: dict[str, str] = {
    "pyarrow": "frameldp.frames._arrow",
    "duckdb": "frameldp.frames._duckdb",
}
"""Library -> frameldp's engine module for its objects, which have no accessor: imported when
``frameldp.ldp(obj)`` first meets one (pyarrow is imported by frameldp itself, before its
engine could be)."""

_LOCK = threading.Lock()


def _register(adapter: str) -> None:
    importlib.import_module(adapter)  # the adapter registers ``.ldp`` as it is imported


class _AdapterLoader(importlib.abc.Loader):
    """Runs a library module's own loader, then imports frameldp's adapter for it."""

    def __init__(self, loader: importlib.abc.Loader, adapter: str) -> None:
        self._loader = loader
        self._adapter = adapter

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        # Once: a reload is the library's own business. Not when the spec is found: a library
        # may look for another with importlib.util.find_spec (polars does, for pandas) long
        # before importing it, and that import must still register the adapter.
        _FINDER.watched.pop(module.__name__, None)
        _register(self._adapter)


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Finds the watched library modules with the other finders, wrapping their loaders so
    that frameldp's adapter is registered once the library module has run."""

    def __init__(self) -> None:
        self.watched: dict[str, str] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        adapter = self.watched.get(fullname)
        if adapter is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _AdapterLoader(spec.loader, adapter)
                return spec
        return None


_FINDER = _RegisterOnImport()


def _installed(library: str) -> bool:
    try:
        return importlib.util.find_spec(library) is not None
    except ImportError:  # blocked by another finder
        return False


def register_accessors() -> list[str]:
    """Register ``.ldp`` on every frame library: now for those already imported, at their
    import for the others. Returns the libraries registered now.

    A library that is not installed (or is blocked) is never registered, so ``frameldp.core``
    stays usable without any dataframe library.
    """
    registered = []
    with _LOCK:
        for library, (module, adapter) in ADAPTERS.items():
            if module in sys.modules:
                _register(adapter)
                registered.append(library)
            elif _installed(library):
                _FINDER.watched[module] = adapter
        if _FINDER.watched and _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
    return registered


def register_engine_of(obj: object) -> bool:
    """Import frameldp's engine module for the library of ``obj`` when it has one on demand
    (:data:`ON_DEMAND`); whether one was imported now."""
    module = ON_DEMAND.get(type(obj).__module__.partition(".")[0])
    if module is None or module in sys.modules:
        return False
    importlib.import_module(module)
    return True


def __getattr__(name: str) -> Any:
    if name == "FrequencyTable":  # a pandas frame: imported on first use
        return importlib.import_module("frameldp.results.table").FrequencyTable
    raise AttributeError(f"module 'frameldp.frames' has no attribute {name!r}")
