"""The event of the mechanisms whose output density has two levels (Piecewise, Hybrid, Square
Wave): a ternary loss (:mod:`.ternary`) whose neutral weight comes from the mass where two
inputs' windows differ.

References
----------
.. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin, G. Yu, "Collecting and
   Analyzing Multidimensional Data with Local Differential Privacy", ICDE 2019.
.. [2] Z. Li, T. Wang, M. Lopuhaä-Zwakenberg, N. Li, B. Škoric, "Estimating Numerical
   Distributions under Local Differential Privacy", SIGMOD 2020.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from frameldp.accounting.events.base import check_positive
from frameldp.accounting.events.ternary import TernaryLossEvent, _epsilon, _exp_down
from frameldp.errors import ParameterError, shown

__all__ = ["PiecewiseDensityEvent"]


@dataclass(frozen=True)
class PiecewiseDensityEvent(TernaryLossEvent):
    """A mechanism whose output density has two levels ``e^eps : 1`` (the Piecewise, Hybrid
    and Square Wave mechanisms, on their 2**32-cell grid): between the two ends of the interval,
    the loss is ``+eps`` or ``-eps`` on a ``disjoint_mass`` of the output (in proportions
    ``e^eps : 1``) and 0 elsewhere.

    Derivation: an input's window of ``H`` of the ``M`` cells starts at ``S``; two inputs'
    windows differ on ``D = min(|S - S'|, H)`` cells each, where the loss is ``+eps`` (the
    first input's window) or ``-eps`` (the second's), and is 0 on every other cell. ``D`` is
    largest, ``min(H, M - H)``, for the two ends of the interval, and a pair of ternary losses
    with more disjoint mass is less private at every order, so that pair is the worst case
    (inputs between cells are mixtures of two starts: joint convexity). Hybrid mixes the
    Piecewise mechanism (probability ``alpha``, disjoint mass ``m``) with Duchi et al.'s
    (disjoint mass 1) on disjoint outputs: ``alpha m + 1 - alpha``. A realized ratio below
    ``e^eps`` is a garbling of this pair. So ``P[-eps] = m / (1 + e^eps)``, ``P[0] = 1 - m``
    and ``w = (1 - m)(1 + e^eps) / m``; ``disjoint_mass`` is rounded up (the safe side).
    """

    epsilon: float
    disjoint_mass: float
    kind: ClassVar[str] = "piecewise_density"

    def __post_init__(self) -> None:
        owner = "piecewise density event"
        object.__setattr__(self, "epsilon", _epsilon(owner, self.epsilon))
        mass = check_positive(owner, "disjoint_mass", self.disjoint_mass)
        if mass > 1.0:
            raise ParameterError(
                f"{owner}: disjoint_mass must be in (0, 1], got {shown(self.disjoint_mass)}",
                parameter="disjoint_mass",
            )
        object.__setattr__(self, "disjoint_mass", mass)

    @property
    def _exact_weight(self) -> float:
        mass = self.disjoint_mass
        return (1.0 - mass) * (1.0 + _exp_down(self.epsilon)) / mass

    def parameters(self) -> dict[str, Any]:
        """``epsilon`` and ``disjoint_mass``."""
        return {"epsilon": self.epsilon, "disjoint_mass": self.disjoint_mass}
