"""The Hybrid mechanism of Wang et al.: Piecewise or Duchi et al.'s, at random."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting import PiecewiseDensityEvent, PrivacyGuarantee
from frameldp.accounting.rounding import float_up, log_upper
from frameldp.core.mechanisms._numeric import MeanMechanism
from frameldp.core.mechanisms.duchi import DuchiMechanism
from frameldp.core.mechanisms.piecewise import PiecewiseMechanism
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import PRECISION_BITS, Rows

__all__ = ["HybridMechanism"]

THRESHOLD: Final = 0.61
"""Below this epsilon (about 0.61, the root of the paper's condition), Hybrid is Duchi et al.'s
mechanism alone [1]_."""


@register("hybrid")
@dataclass(frozen=True)
class HybridMechanism(MeanMechanism):
    r"""The Hybrid mechanism: a mean of numbers on ``bounds = (lo, hi)``.

    Each report is the Piecewise mechanism's with probability ``alpha = 1 - e^{-eps/2}`` and
    Duchi et al.'s otherwise, both at ``epsilon``; for ``epsilon <= 0.61``, ``alpha = 0``.
    Its worst-case variance is never above either's [1]_.

    Parameters
    ----------
    epsilon
        Privacy loss of one report (> 0).
    bounds
        The public interval ``(lo, hi)`` of the column.
    clip
        Clip values outside ``bounds`` into them (default: a value outside is an error).

    Privacy
    -------
    ``alpha`` is realized as a multiple of ``2**-64`` (an exact Bernoulli draw). A mixture of
    two ``eps``-LDP mechanisms with input-independent weights is ``eps``-LDP; the guarantee is
    the larger realized epsilon of the two, rounded up, and its worst pair (both ends of the
    interval, for both mechanisms) is a :class:`~frameldp.accounting.PiecewiseDensityEvent` of
    disjoint mass ``alpha m + (1 - alpha)``, ``m`` the Piecewise mechanism's.

    Estimation
    ----------
    Both components' reports are unbiased, so the mixture's are; one report's variance is
    ``alpha Var_PM(t) + (1 - alpha) Var_Duchi(t)``, each exact [1]_.

    References
    ----------
    .. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin, G. Yu, "Collecting
       and Analyzing Multidimensional Data with Local Differential Privacy", ICDE 2019, Sec.
       III-C (Algorithm 3, Lemma 5).

    Examples
    --------
    >>> mech = HybridMechanism(2.0, bounds=(0, 100))
    >>> round(mech.alpha, 4)
    0.6321
    """

    name: ClassVar[str] = "hybrid"
    title: ClassVar[str] = "Hybrid mechanism"

    _alpha: int = field(init=False, repr=False, compare=False)
    _piecewise: PiecewiseMechanism = field(init=False, repr=False, compare=False)
    _duchi: DuchiMechanism = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        epsilon = self._check_numeric()
        alpha = 0.0 if epsilon <= THRESHOLD else -math.expm1(-epsilon / 2)
        object.__setattr__(self, "_alpha", round(alpha * (1 << PRECISION_BITS)))
        duchi = DuchiMechanism(epsilon, bounds=self.bounds, clip=self.clip)
        object.__setattr__(self, "_duchi", duchi)
        if self._alpha:
            piecewise = PiecewiseMechanism(epsilon, bounds=self.bounds, clip=self.clip)
            object.__setattr__(self, "_piecewise", piecewise)

    @property
    def alpha(self) -> float:
        """The realized probability of a Piecewise report."""
        return self._alpha / (1 << PRECISION_BITS)

    @property
    def output_bound(self) -> float:
        """The larger of the two mechanisms' bounds."""
        if not self._alpha:
            return self._duchi.output_bound
        return max(self._duchi.output_bound, self._piecewise.output_bound)

    def variance(self, t: float) -> float:
        """``alpha Var_PM(t) + (1 - alpha) Var_Duchi(t)``."""
        duchi = self._duchi.variance(t)
        if not self._alpha:
            return duchi
        return self.alpha * self._piecewise.variance(t) + (1 - self.alpha) * duchi

    def paper_variance(self, t: float) -> float:
        """The variance of the continuous mechanism at the requested epsilon [1]_."""
        ratio = math.exp(self.epsilon)
        duchi = ((ratio + 1) / (ratio - 1)) ** 2 - t * t
        if not self._alpha:
            return duchi
        alpha = -math.expm1(-self.epsilon / 2)
        return alpha * self._piecewise.paper_variance(t) + (1 - alpha) * duchi

    def _on_grid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        on = self._duchi._on_grid(y)
        if self._alpha:
            on |= self._piecewise._on_grid(y)
        return on

    def _randomize(self, t: NDArray[np.float64], rows: Rows) -> NDArray[np.float64]:
        """Each row's coin picks its mechanism, which alone draws its report (from its own
        purposes of the row's noise: the two never share a word)."""
        if not self._alpha:
            return self._duchi._randomize(t, rows)
        chosen = rows.flags("mixture", self._alpha)
        piecewise, duchi = np.flatnonzero(chosen), np.flatnonzero(~chosen)
        reports = np.empty(t.size, dtype=np.float64)
        reports[piecewise] = self._piecewise._randomize(t[piecewise], rows, piecewise)
        reports[duchi] = self._duchi._randomize(t[duchi], rows, duchi)
        return reports

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon: the larger realized one, rounded up, with the worst pair's loss."""
        ratio, mass = self._duchi.ratio, Fraction(1)
        if self._alpha:
            alpha = Fraction(self._alpha, 1 << PRECISION_BITS)
            window = self._piecewise.window
            ratio = max(ratio, window.ratio)
            mass = alpha * window.disjoint_mass + (1 - alpha)
        event = PiecewiseDensityEvent(log_upper(ratio), float_up(mass))
        return self._guarantee(event, alpha=self.alpha)
