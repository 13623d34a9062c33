"""scipy's ``special`` and ``sparse`` modules, imported on first use.

``import scipy.special`` costs about 0.1 s of CPU (its array-API layer); frameldp's formulas
need it only when a guarantee is converted or an estimate's interval is computed, so
``import frameldp`` does not pay for it (issue 14: light import). Use ``special.logsumexp(...)``
exactly as the scipy function.
"""

from __future__ import annotations

from typing import Any

from frameldp._lazy import on_first_use

__all__ = ["optimize", "sparse", "special"]


special: Any = on_first_use("scipy.special")
sparse: Any = on_first_use("scipy.sparse")
optimize: Any = on_first_use("scipy.optimize")
