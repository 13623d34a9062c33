"""Privacy events: immutable records of one use of a mechanism, each knowing its own curves.

An event states what one report (or one release) cost a person: its pure epsilon, its exact
Rényi curve ``rdp(order)``, its tight zCDP ``rho`` and its privacy-loss distribution. Accountants
compose events; they never inspect what kind of event they hold.

Closed forms (all for a worst-case pair of neighbouring inputs):

* k-ary randomized response at epsilon [1]_ [2]_ (binary RR is ``k = 2``)::

      RDP(a) = 1/(a-1) ln((e^{a eps} + e^{(1-a) eps} + k - 2) / (e^eps + k - 1))

  zCDP ``rho = eps tanh(eps / 2)`` for ``k = 2`` [2]_; for ``k > 2`` the supremum of
  ``RDP(a) / a``, which is attained at an interior order and exceeds the KL divergence.
* RAPPOR (bit-vector RR, at most ``m`` ones, each bit flipped with probability ``f/2``): two inputs
  differ in at most ``2m`` bits, so its loss is that of ``2m`` binary RR at
  ``eps_bit = ln((1 - f/2) / (f/2))`` [3]_: ``RDP = 2m RDP_RR(eps_bit)``,
  ``rho = 2m eps_bit tanh(eps_bit / 2)``.
* Laplace with ``b / sensitivity = lambda`` [4]_ (Prop. 6)::

      RDP(a) = 1/(a-1) ln(a/(2a-1) e^{(a-1)/lambda} + (a-1)/(2a-1) e^{-a/lambda})

* Gaussian with ``sigma / sensitivity``: ``RDP(a) = a mu^2 / 2`` with ``mu = sensitivity / sigma``
  [4]_ (Prop. 7); ``rho = mu^2 / 2`` [5]_.
* Any other pure epsilon-DP mechanism (:class:`PureDP`): dominated by binary RR at epsilon [1]_,
  so it is accounted as that (the tightest statement valid for every epsilon-DP mechanism).

References
----------
.. [1] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy",
   ICML 2015.
.. [2] T. Steinke, "Tight bounds on converting pure DP to zCDP", differentialprivacy.org, 2024.
.. [3] "Tight RDP and zCDP bounds for RAPPOR", 2024 (Thm. 1, 4, 6); see
   ``../shared/references/000``.
.. [4] I. Mironov, "Rényi Differential Privacy", CSF 2017 (Prop. 5-7, Table II).
.. [5] M. Bun, T. Steinke, "Concentrated Differential Privacy", TCC 2016 (Prop. 1.6).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from frameldp.accounting._orders import minimize_over_orders
from frameldp.accounting._rounding import float_up, pad_up, sum_up
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.errors import ParameterError

__all__ = [
    "GaussianEvent",
    "LaplaceEvent",
    "PrivacyEvent",
    "PureDP",
    "RandomizedResponseEvent",
    "RapporEvent",
    "event_from_dict",
]

_REGISTRY: dict[str, type[PrivacyEvent]] = {}


def check_order(order: float) -> float:
    """Validate a Rényi order ``alpha > 1`` (``inf`` allowed: the max divergence)."""
    if isinstance(order, bool) or not isinstance(order, (int, float)):
        raise ParameterError(f"order (Rényi alpha) must be a number > 1, got {order!r}")
    order = float(order)
    if not order > 1.0:
        raise ParameterError(f"order (Rényi alpha) must be > 1, got {order!r}")
    return order


def check_positive(owner: str, name: str, value: Any, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ParameterError(f"{owner}: {name} must be a number, got {value!r}")
    number = float(value)
    low_ok = number >= 0.0 if allow_zero else number > 0.0
    if not (low_ok and math.isfinite(number)):
        bound = ">= 0" if allow_zero else "> 0"
        raise ParameterError(f"{owner}: {name} must be finite and {bound}, got {value!r}")
    return number


def check_count(owner: str, name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ParameterError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


class PrivacyEvent(ABC):
    """One use of a mechanism on one person's data (immutable, hashable, serializable)."""

    kind: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            _REGISTRY[cls.kind] = cls

    @property
    @abstractmethod
    def pure_epsilon(self) -> float:
        """Pure epsilon of one use (``inf`` when the mechanism has none)."""

    @abstractmethod
    def rdp(self, order: float) -> float:
        """Rényi divergence bound of one use at ``order > 1`` (padded up)."""

    @property
    @abstractmethod
    def rho(self) -> float:
        """Tight zCDP parameter of one use: ``sup_a rdp(a) / a`` (padded up)."""

    @abstractmethod
    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Privacy-loss distribution of ``count`` uses."""

    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """The constructor arguments, JSON-serializable."""

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": ..., **parameters}``; :func:`event_from_dict` rebuilds the event."""
        return {"kind": self.kind, **self.parameters()}

    def __str__(self) -> str:
        shown = ", ".join(
            f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in self.parameters().items()
        )
        return f"{self.kind}({shown})"


def event_from_dict(data: Mapping[str, Any]) -> PrivacyEvent:
    """Rebuild an event from :meth:`PrivacyEvent.to_dict`; unknown kinds raise."""
    kind = data.get("kind")
    cls = _REGISTRY.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ParameterError(f"unknown privacy event kind {kind!r}; known: {sorted(_REGISTRY)}")
    arguments = {k: v for k, v in data.items() if k != "kind"}
    try:
        return cls(**arguments)
    except TypeError as error:
        raise ParameterError(f"privacy event {kind!r}: bad parameters {arguments!r}") from error


# ---------------------------------------------------------------------- randomized response


def _rr_cumulant(t: float, epsilon: float, k: int) -> float:
    """``ln E_P[e^{t L}]`` of k-ary RR, without cancellation for any ``t > 0``.

    ``E_P[e^{tL}] - 1 = (e^eps expm1(t eps) + expm1(-t eps)) / (e^eps + k - 1)``
    ``= expm1(t eps) e^{-t eps} expm1(eps + t eps) / (e^eps + k - 1)``: a product of positive
    factors, evaluated in log space.
    """
    if epsilon == 0.0:
        return 0.0
    d = t * epsilon
    log_x = (
        math.log(-math.expm1(-d))
        + (epsilon + d)
        + math.log(-math.expm1(-(epsilon + d)))
        - (epsilon + math.log1p((k - 1) * math.exp(-epsilon)))
    )
    return float(np.logaddexp(0.0, log_x))


def _rr_rdp(order: float, epsilon: float, k: int) -> float:
    if math.isinf(order):
        return epsilon
    return _rr_cumulant(order - 1.0, epsilon, k) / (order - 1.0)


def _sup_over_orders(curve: Callable[[float], float], limit_at_one: float) -> float:
    """``sup_{a > 1} curve(a) / a``, never below its limit at ``a -> 1``.

    Padded up by a relative 1e-9, which covers the distance between the located maximum and the
    true supremum of these smooth unimodal ratios.
    """
    value, _ = minimize_over_orders(lambda a: -curve(a) / a)
    return pad_up(max(-value, limit_at_one), 1e-9)


def _pure_rho(epsilon: float) -> float:
    """Steinke's tight conversion: pure epsilon-DP implies ``eps tanh(eps / 2)``-zCDP."""
    return pad_up(epsilon * math.tanh(epsilon / 2.0))


@lru_cache(maxsize=1024)
def _kary_rho(epsilon: float, k: int) -> float:
    kl = epsilon * math.expm1(epsilon) / (math.exp(epsilon) + k - 1)
    value = _sup_over_orders(lambda a: _rr_rdp(a, epsilon, k), kl)
    return min(value, _pure_rho(epsilon))


@dataclass(frozen=True)
class RandomizedResponseEvent(PrivacyEvent):
    """k-ary randomized response at ``epsilon`` (binary RR when ``k = 2``).

    Privacy: ``epsilon``-DP; the Rényi curve and the loss distribution in the module docstring
    are exact for the worst pair of inputs, so compositions of these events are accounted
    optimally (Kairouz–Oh–Viswanath).
    """

    epsilon: float
    k: int = 2
    kind: ClassVar[str] = "randomized_response"

    def __post_init__(self) -> None:
        owner = "randomized response event"
        object.__setattr__(
            self, "epsilon", check_positive(owner, "epsilon", self.epsilon, allow_zero=True)
        )
        object.__setattr__(self, "k", check_count(owner, "k", self.k, 2))

    @property
    def pure_epsilon(self) -> float:
        """``epsilon``."""
        return self.epsilon

    def rdp(self, order: float) -> float:
        """Exact Rényi divergence of the worst pair (Mironov 2017 Prop. 5 for ``k = 2``)."""
        return pad_up(_rr_rdp(check_order(order), self.epsilon, self.k))

    @property
    def rho(self) -> float:
        """``eps tanh(eps/2)`` for binary RR; the numerical ``sup_a RDP(a)/a`` for ``k > 2``."""
        if self.k == 2 or self.epsilon == 0.0:
            return _pure_rho(self.epsilon)
        return _kary_rho(self.epsilon, self.k)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Exact: ``count``-fold composition of the three-atom loss (two atoms when ``k = 2``)."""
        return PrivacyLossDistribution.randomized_response(self.epsilon, self.k, count)

    def parameters(self) -> dict[str, Any]:
        """``epsilon`` and ``k``."""
        return {"epsilon": self.epsilon, "k": self.k}


@dataclass(frozen=True)
class RapporEvent(PrivacyEvent):
    """Bit-vector randomized response (RAPPOR): ``max_weight`` ones, each bit at ``bit_epsilon``.

    Privacy: ``2 m bit_epsilon``-DP; two inputs differ in at most ``2m`` bits and the bits are
    flipped independently, so the loss is exactly that of ``2m`` binary RR at ``bit_epsilon``.
    """

    bit_epsilon: float
    max_weight: int = 1
    kind: ClassVar[str] = "rappor"

    def __post_init__(self) -> None:
        owner = "RAPPOR event"
        object.__setattr__(
            self,
            "bit_epsilon",
            check_positive(owner, "bit_epsilon", self.bit_epsilon, allow_zero=True),
        )
        object.__setattr__(self, "max_weight", check_count(owner, "max_weight", self.max_weight, 1))

    @property
    def _flips(self) -> int:
        return 2 * self.max_weight

    @property
    def epsilon(self) -> float:
        """``2m bit_epsilon``, rounded up."""
        return sum_up([(self.bit_epsilon, self._flips)])

    @property
    def pure_epsilon(self) -> float:
        """``2m bit_epsilon``, rounded up."""
        return self.epsilon

    def rdp(self, order: float) -> float:
        """``2m RDP_RR(bit_epsilon)`` (exact)."""
        return pad_up(self._flips * _rr_rdp(check_order(order), self.bit_epsilon, 2))

    @property
    def rho(self) -> float:
        """``2m bit_epsilon tanh(bit_epsilon / 2)`` (tight)."""
        return pad_up(self._flips * _pure_rho(self.bit_epsilon))

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Exact: ``2m count`` binary RR at ``bit_epsilon``."""
        return PrivacyLossDistribution.randomized_response(self.bit_epsilon, 2, self._flips * count)

    def parameters(self) -> dict[str, Any]:
        """``bit_epsilon`` and ``max_weight``."""
        return {"bit_epsilon": self.bit_epsilon, "max_weight": self.max_weight}


@dataclass(frozen=True)
class PureDP(PrivacyEvent):
    """Any pure ``epsilon``-DP mechanism, accounted as the binary RR that dominates it."""

    epsilon: float
    kind: ClassVar[str] = "pure_dp"

    def __post_init__(self) -> None:
        value = check_positive("pure DP event", "epsilon", self.epsilon, allow_zero=True)
        object.__setattr__(self, "epsilon", value)

    @property
    def pure_epsilon(self) -> float:
        """``epsilon``."""
        return self.epsilon

    def rdp(self, order: float) -> float:
        """The binary RR curve: the largest Rényi divergence any epsilon-DP pair can have."""
        return pad_up(_rr_rdp(check_order(order), self.epsilon, 2))

    @property
    def rho(self) -> float:
        """``eps tanh(eps / 2)`` (Steinke 2024)."""
        return _pure_rho(self.epsilon)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Binary RR's loss: exact for RR, an upper bound for every other epsilon-DP mechanism."""
        return PrivacyLossDistribution.randomized_response(self.epsilon, 2, count).dominated()

    def parameters(self) -> dict[str, Any]:
        """``epsilon``."""
        return {"epsilon": self.epsilon}


# ---------------------------------------------------------------------- additive noise


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
        order = check_order(order)
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
    return min(_sup_over_orders(event.rdp, kl), _pure_rho(event.epsilon))


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
        order = check_order(order)
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
