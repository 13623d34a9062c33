"""Modules imported on first use, so that ``import frameldp`` stays light (issue 14, 41).

``sqlite3 = on_first_use("sqlite3")`` is a stand-in that imports the module the first time one
of its attributes is read; ``except sqlite3.Error`` and ``sqlite3.connect(...)`` work unchanged.
Type checkers see the real module (import it under ``TYPE_CHECKING``).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["on_first_use"]


class _OnFirstUse:
    """A stand-in for a module that imports it when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        module: ModuleType = importlib.import_module(self._name)  # cached in sys.modules
        return getattr(module, attribute)


def on_first_use(name: str) -> Any:
    """A stand-in for module ``name``, imported when one of its attributes is first read."""
    return _OnFirstUse(name)
