"""Events of additive-noise mechanisms: Laplace and Gaussian [4]_ [5]_ (closed forms and
references in the package docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from frameldp.accounting.events.base import (
    PrivacyEvent,
    check_order,
    check_positive,
)
from frameldp.accounting.events.curves import (
    pure_rho,
    sup_over_orders,
)
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.rounding import float_up, pad_up

__all__ = ["GaussianEvent", "LaplaceEvent"]


@dataclass(frozen=True)
class LaplaceEvent(PrivacyEvent):
    """Laplace noise of ``scale`` on a query of L1 ``sensitivity``.

    Privacy: ``sensitivity / scale``-DP, with Mironov's exact Rényi curve (Prop. 6). Its
    privacy-loss distribution is bounded through binary RR at the same epsilon (valid, not tight).
    """

    scale: float
    sensitivity: float = 1.0
    kind: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("Laplace event", "scale", self.scale))
        object.__setattr__(
            self,
            "sensitivity",
            check_positive("Laplace event", "sensitivity", self.sensitivity),
        )

    @property
    def epsilon(self) -> float:
        """``sensitivity / scale``, rounded up."""
        return float_up(Fraction(self.sensitivity) / Fraction(self.scale))

    @property
    def pure_epsilon(self) -> float:
        """``sensitivity / scale``, rounded up."""
        return self.epsilon

    def rdp(self, order: float) -> float:
        """``1/(a-1) ln(a/(2a-1) e^{(a-1) eps} + (a-1)/(2a-1) e^{-a eps})``, ``eps = 1/lambda``."""
        order = check_order("rdp", "order", order)
        epsilon = self.sensitivity / self.scale
        if math.isinf(order):
            return self.epsilon
        t = order - 1.0
        # S - 1 = ((t+1) expm1(t eps) + t expm1(-(t+1) eps)) / (2t+1). The linear parts of the two
        # expm1 cancel exactly, leaving (t+1) g(t eps) + t g(-(t+1) eps) with g(x) = e^x - 1 - x
        # >= 0: no cancellation at small epsilon. In logs when the terms are large.
        if t * epsilon < 30.0:
            excess = (
                (t + 1.0) * _expm1_minus_x(t * epsilon) + t * _expm1_minus_x(-order * epsilon)
            ) / (2.0 * t + 1.0)
            log_s = math.log1p(excess)
        else:
            log_s = float(
                np.logaddexp(math.log(order) + t * epsilon, math.log(t) - order * epsilon)
            ) - math.log(2.0 * t + 1.0)
        return pad_up(min(log_s / t, self.epsilon))

    @property
    def rho(self) -> float:
        """Numerical ``sup_a RDP(a) / a``, never above the pure-DP bound ``eps tanh(eps / 2)``."""
        return _laplace_rho(self)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Upper bound through binary RR at ``epsilon`` (it dominates every epsilon-DP pair)."""
        return PrivacyLossDistribution.randomized_response(self.epsilon, 2, count).dominated()

    def parameters(self) -> dict[str, Any]:
        """``scale`` and ``sensitivity``."""
        return {"scale": self.scale, "sensitivity": self.sensitivity}


def _expm1_minus_x(x: float) -> float:
    """``e^x - 1 - x`` without cancellation: its Taylor series when ``|x| < 1/2``."""
    if abs(x) >= 0.5:
        return math.expm1(x) - x
    term, total, n = x * x / 2.0, 0.0, 2
    while abs(term) > 1e-17 * abs(total) or total == 0.0:
        total += term
        n += 1
        term *= x / n
        if term == 0.0:
            break
    return total


@lru_cache(maxsize=1024)
def _laplace_rho(event: LaplaceEvent) -> float:
    epsilon = event.sensitivity / event.scale
    kl = epsilon + math.expm1(-epsilon)
    return min(sup_over_orders(event.rdp, kl), pure_rho(event.epsilon))


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """Gaussian noise of standard deviation ``sigma`` on a query of L2 ``sensitivity``.

    Privacy: ``rho = mu^2 / 2``-zCDP with ``mu = sensitivity / sigma`` (no pure epsilon); its
    privacy loss is exactly ``N(mu^2 / 2, mu^2)`` (Balle–Wang 2018).
    """

    sigma: float
    sensitivity: float = 1.0
    kind: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("Gaussian event", "sigma", self.sigma))
        object.__setattr__(
            self,
            "sensitivity",
            check_positive("Gaussian event", "sensitivity", self.sensitivity),
        )

    @property
    def _mu(self) -> float:
        return self.sensitivity / self.sigma

    @property
    def pure_epsilon(self) -> float:
        """No pure epsilon: ``inf``."""
        return math.inf

    def rdp(self, order: float) -> float:
        """``a mu^2 / 2`` (Mironov 2017 Prop. 7)."""
        order = check_order("rdp", "order", order)
        return math.inf if math.isinf(order) else pad_up(order * self.rho)

    @property
    def rho(self) -> float:
        """``mu^2 / 2`` (Bun–Steinke 2016 Prop. 1.6)."""
        return pad_up(self._mu * self._mu / 2.0)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Exact: ``count`` Gaussians compose to ``mu sqrt(count)``."""
        return PrivacyLossDistribution.gaussian(self._mu * math.sqrt(count))

    def parameters(self) -> dict[str, Any]:
        """``sigma`` and ``sensitivity``."""
        return {"sigma": self.sigma, "sensitivity": self.sensitivity}
