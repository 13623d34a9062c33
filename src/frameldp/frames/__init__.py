"""Frame adapters: the ``.ldp`` accessor on pandas and polars objects (plumbing, no formula)."""

from __future__ import annotations

import importlib

from frameldp.frames.table import FrequencyTable

__all__ = ["FrequencyTable", "register_accessors"]


def register_accessors() -> list[str]:
    """Register ``.ldp`` on every installed frame library; returns the libraries registered.

    A library that is not installed (or is blocked) is skipped, so ``frameldp.core`` stays
    usable without any dataframe library.
    """
    registered = []
    for library, adapter in (("pandas", "_pandas"), ("polars", "_polars")):
        try:
            importlib.import_module(library)
        except ImportError:
            continue
        importlib.import_module(f"frameldp.frames.{adapter}")
        registered.append(library)
    return registered
