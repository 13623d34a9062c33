"""The automatic choice of a mean mechanism: the smallest worst-case variance.

Every mean mechanism (:data:`~.protocol.Capability.MEAN`) reports ``y`` with ``E[y] = t`` after
debiasing, for ``t`` the value mapped to ``[-1, 1]``; one report's variance ``Var(t)`` is exact
for the realized law (:meth:`variance`), and its largest value over ``[-1, 1]`` bounds the
standard error of a mean whatever the data: ``half * sqrt(worst / n)``. The choice builds every
registered mean mechanism at ``epsilon`` on the bounds and takes the smallest worst-case
variance (Wang et al. [1]_: Piecewise beats Duchi et al.'s above epsilon ~ 1.29, Hybrid beats
both; stochastic rounding to a few levels wins at larger epsilon).

References
----------
.. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin, G. Yu, "Collecting and
   Analyzing Multidimensional Data with Local Differential Privacy", ICDE 2019.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from frameldp.arguments import check_epsilon
from frameldp.core.mechanisms._numeric import MeanMechanism
from frameldp.core.mechanisms.protocol import Capability
from frameldp.core.mechanisms.registry import mechanism_class, mechanism_names
from frameldp.core.numeric import Bounds
from frameldp.errors import FrameLDPError, ParameterError, shown

__all__ = ["MeanCandidate", "MeanComparison", "compare_mean_mechanisms"]


@dataclass(frozen=True)
class MeanCandidate:
    """One mean mechanism at ``epsilon`` on the bounds, or why it cannot run there."""

    name: str
    mechanism: MeanMechanism | None
    worst_variance: float
    """The largest variance of one debiased report, in normalized units (``inf`` when
    unavailable)."""

    def std_error(self, n: int, half: float) -> float:
        """The worst-case standard error of a mean of ``n`` reports, in the column's units."""
        return half * math.sqrt(self.worst_variance / n)


@dataclass(frozen=True)
class MeanComparison:
    """Every mean mechanism at one epsilon and bounds, best first."""

    epsilon: float
    bounds: Bounds
    candidates: tuple[MeanCandidate, ...]

    @property
    def best(self) -> MeanMechanism:
        """The mechanism of smallest worst-case variance."""
        best = self.candidates[0].mechanism
        if best is None:
            raise ParameterError(f"no mean mechanism can run at epsilon={self.epsilon!r}")
        return best

    def explain(self, n: int | None = None) -> str:
        """The candidates and their worst-case variances (and standard errors for ``n``)."""
        half = self.bounds.half
        lines = [
            f"mean mechanisms at epsilon = {self.epsilon:g} on {self.bounds.to_json()} (worst "
            "variance of one report in units of the half-width squared; std_error in the "
            "column's units):"
        ]
        for candidate in self.candidates:
            error = f", std_error {candidate.std_error(n, half):.4g}" if n else ""
            lines.append(
                f"  {candidate.name:<20} worst variance {candidate.worst_variance:.6g}{error}"
            )
        return "\n".join(lines)


def compare_mean_mechanisms(epsilon: float, *, bounds: Any, clip: bool = False) -> MeanComparison:
    """Every registered mean mechanism at ``epsilon`` on ``bounds``, smallest worst-case
    variance first."""
    epsilon = check_epsilon("choose_mechanism", "epsilon", epsilon)
    checked = Bounds.coerce("choose_mechanism", bounds)
    candidates = []
    for name in mechanism_names():
        cls = mechanism_class(name)
        if Capability.MEAN not in cls.capabilities:
            continue
        try:
            built: MeanMechanism = cls(epsilon, bounds=checked, clip=clip)  # type: ignore[assignment]
        except FrameLDPError:
            candidates.append(MeanCandidate(name, None, math.inf))
            continue
        candidates.append(MeanCandidate(name, built, built.worst_variance))
    if not candidates:
        raise ParameterError(f"no mean mechanism is registered (bounds={shown(bounds)})")
    # Variances equal to 9 significant digits are a tie (binary stochastic rounding is Duchi
    # et al.'s mechanism, and Hybrid is too below epsilon 0.61): the first name wins.
    ordered = tuple(sorted(candidates, key=lambda c: (float(f"{c.worst_variance:.9g}"), c.name)))
    return MeanComparison(epsilon, checked, ordered)
