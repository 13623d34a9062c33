"""scipy's ``special`` and ``sparse`` modules, imported on first use.

``import scipy.special`` costs about 0.1 s of CPU (its array-API layer); frameldp's formulas
need it only when a guarantee is converted or an estimate's interval is computed, so
``import frameldp`` does not pay for it (issue 14: light import). Use ``special.logsumexp(...)``
exactly as the scipy function.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["optimize", "sparse", "special"]


class _OnFirstUse:
    """A stand-in for a module that imports it when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        module: ModuleType = importlib.import_module(self._name)  # cached in sys.modules
        return getattr(module, attribute)


special: Any = _OnFirstUse("scipy.special")
sparse: Any = _OnFirstUse("scipy.sparse")
optimize: Any = _OnFirstUse("scipy.optimize")
