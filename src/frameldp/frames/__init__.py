"""Frame adapters: the ``.ldp`` accessor on pandas, polars and Dask objects (plumbing, no
formula)."""

from __future__ import annotations

import importlib

from frameldp.frames.table import FrequencyTable

__all__ = ["FrequencyTable", "register_accessors"]


def register_accessors() -> list[str]:
    """Register ``.ldp`` on every installed frame library; returns the libraries registered.

    A library that is not installed (or is blocked) is skipped, so ``frameldp.core`` stays
    usable without any dataframe library. Dask is registered when ``dask.dataframe`` imports
    (this is where it is imported; it costs about 0.3 s the first time).
    """
    registered = []
    for library, module, adapter in (
        ("pandas", "pandas", "_pandas"),
        ("polars", "polars", "_polars"),
        ("dask", "dask.dataframe", "_dask"),
    ):
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        importlib.import_module(f"frameldp.frames.{adapter}")
        registered.append(library)
    return registered
