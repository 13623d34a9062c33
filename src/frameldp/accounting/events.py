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
* Bloom-filter RAPPOR (:class:`BloomRapporEvent`): ``h`` hashes, permanent flip ``f/2``,
  instantaneous ``P[1 | 1] = q``, ``P[1 | 0] = p``. Two values differ in at most ``h`` bits each
  way and bits are independent, so the loss is that of ``h`` pairs of binary channels; ``r``
  reports sharing one memoized permanent response are one channel per bit whose output is the
  number of ones among the ``r`` reports, a mixture of two binomials [6]_. One report has
  ``epsilon_1 = h ln(q*(1 - p*) / (p*(1 - q*)))`` and any number of them at most
  ``epsilon_inf = 2h ln((1 - f/2) / (f/2))``.
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
.. [6] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response", CCS 2014, Sec. 3 (Theorems 1 and 2).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from frameldp._scipy import special
from frameldp.accounting._orders import minimize_over_orders
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.rounding import float_up, log_upper, pad_up, sum_up
from frameldp.errors import ParameterError

__all__ = [
    "BloomRapporEvent",
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

    central: ClassVar[bool] = False
    """Whether the event is a shuffled (central) release, whose guarantee at a ``delta`` is
    :meth:`central_epsilon` rather than what its local reports give."""

    def central_epsilon(self, delta: float) -> float:
        """Central epsilon at ``delta`` of one use (only for ``central`` events)."""
        raise NotImplementedError(f"{self.kind} is not a central (shuffled) release")

    def central_delta(self, epsilon: float) -> float:
        """Central delta at ``epsilon`` of one use (only for ``central`` events)."""
        raise NotImplementedError(f"{self.kind} is not a central (shuffled) release")

    @property
    def epsilon_infinity(self) -> float | None:
        """Pure epsilon of any number of uses sharing memoized permanent responses (None when
        uses share nothing, so that repeated uses compose)."""
        return None

    def repeated(self, count: int) -> tuple[PrivacyEvent, int]:
        """``count`` uses of this event as ``(event, independent uses)``.

        Independent by default; events whose uses share randomness (memoized responses) fold
        the count into a single event instead.
        """
        return self, count

    def unit(self) -> tuple[PrivacyEvent, int]:
        """This event as ``(one use, number of uses)``: how accountants key and count it."""
        return self, 1

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


# ---------------------------------------------------------------------- Bloom-filter RAPPOR


def _check_probability(owner: str, name: str, value: Any) -> float:
    number = check_positive(owner, name, value, allow_zero=True)
    if number > 1.0:
        raise ParameterError(f"{owner}: {name} must be in [0, 1], got {value!r}")
    return number


@dataclass(frozen=True)
class BloomRapporEvent(PrivacyEvent):
    """Bloom-filter RAPPOR: ``reports`` reports of one value sharing a permanent response.

    Each of the ``num_hashes`` bits a value sets goes through the permanent randomized response
    (flipped with ``flip_probability = f/2``), then each report through the instantaneous one
    (1 with ``one_probability = q`` where the permanent bit is 1, ``zero_probability = p``
    where it is 0). Two values differ in at most ``num_hashes`` bits each way.

    Privacy: for one report, ``epsilon_1 = h ln(q*(1 - p*) / (p*(1 - q*)))`` with
    ``q* = (1 - f/2) q + (f/2) p`` and ``p* = (f/2) q + (1 - f/2) p`` (Erlingsson et al. 2014,
    Thm. 2); for ``r`` reports sharing a memoized permanent response, the exact loss of the
    number of ones per bit, which is below ``min(r epsilon_1, epsilon_inf)`` with
    ``epsilon_inf = 2h ln((1 - f/2) / (f/2))`` (Thm. 1). The Rényi curve and the loss
    distribution are exact for the worst pair of values.

    ``memo`` names the permanent responses (a public fingerprint, not the key): uses of events
    with the same ``memo`` share them, so :meth:`repeated` folds them into one event with more
    ``reports`` rather than composing them as independent. Reports without a memo draw a fresh
    permanent response each and compose independently. The memoized guarantee protects each
    (user, value) pair, RAPPOR's longitudinal guarantee: a user whose value changes gets an
    independent permanent response for each value.
    """

    num_hashes: int
    flip_probability: float
    one_probability: float
    zero_probability: float
    reports: int = 1
    memo: str | None = None
    kind: ClassVar[str] = "bloom_rappor"

    def __post_init__(self) -> None:
        owner = "Bloom RAPPOR event"
        object.__setattr__(self, "num_hashes", check_count(owner, "num_hashes", self.num_hashes, 1))
        object.__setattr__(self, "reports", check_count(owner, "reports", self.reports, 1))
        flip = _check_probability(owner, "flip_probability", self.flip_probability)
        if not 0.0 < flip <= 0.5:
            raise ParameterError(f"{owner}: flip_probability must be in (0, 0.5], got {flip!r}")
        object.__setattr__(self, "flip_probability", flip)
        for name in ("one_probability", "zero_probability"):
            object.__setattr__(self, name, _check_probability(owner, name, getattr(self, name)))
        if self.memo is not None and not isinstance(self.memo, str):
            raise ParameterError(f"{owner}: memo must be a string or None, got {self.memo!r}")

    def repeated(self, count: int) -> tuple[PrivacyEvent, int]:
        """Memoized: one event with ``count`` times the reports; otherwise independent uses."""
        if self.memo is None:
            return self, count
        return replace(self, reports=self.reports * count), 1

    def unit(self) -> tuple[PrivacyEvent, int]:
        """Memoized: one report, counted ``reports`` times (so that releases sharing a memo add
        up their reports)."""
        if self.memo is None or self.reports == 1:
            return self, 1
        return replace(self, reports=1), self.reports

    @property
    def epsilon_infinity(self) -> float:
        """``2h ln((1 - f/2) / (f/2))``: any number of reports of one value (rounded up)."""
        flip = Fraction(self.flip_probability)
        return sum_up([(log_upper((1 - flip) / flip), 2 * self.num_hashes)])

    @property
    def pure_epsilon(self) -> float:
        """Exact pure epsilon of the ``reports``, rounded up (``epsilon_1`` for one)."""
        if self.reports == 1:
            ones, zeros = self._report_probabilities()
            if ones == zeros:
                return 0.0
            ratio = ones * (1 - zeros) / (zeros * (1 - ones))
            pair = log_upper(ratio if ratio > 1 else 1 / ratio)
            return min(sum_up([(pair, self.num_hashes)]), self.epsilon_infinity)
        log_one, log_zero = self._log_laws()
        loss = log_one - log_zero
        pair = float(np.max(loss) + np.max(-loss))
        return min(pad_up(self.num_hashes * pair), self.epsilon_infinity)

    def rdp(self, order: float) -> float:
        """``h (D_a(P1 || P0) + D_a(P0 || P1))`` over the number of ones per bit (exact)."""
        order = check_order(order)
        if math.isinf(order):
            return self.pure_epsilon
        return pad_up(min(self._rdp_raw(order), self.pure_epsilon))

    def _rdp_raw(self, order: float) -> float:
        log_one, log_zero = self._log_laws()
        t = order - 1.0
        loss = log_one - log_zero
        if t * float(np.max(np.abs(loss), initial=0.0)) < 1.0:
            # Near order 1 both sums are 1 + O(t): sum P (e^{tL} - 1) keeps their digits.
            forward = math.log1p(float(np.sum(np.exp(log_one) * np.expm1(t * loss))))
            backward = math.log1p(float(np.sum(np.exp(log_zero) * np.expm1(-t * loss))))
        else:
            forward = float(special.logsumexp(order * log_one - t * log_zero))
            backward = float(special.logsumexp(order * log_zero - t * log_one))
        return self.num_hashes * max(forward + backward, 0.0) / t

    @property
    def rho(self) -> float:
        """Numerical ``sup_a RDP(a) / a``, never above ``eps tanh(eps / 2)``."""
        return _bloom_rho(self)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Exact: ``h count`` independent pairs of per-bit channels, composed by squaring."""
        log_one, log_zero = self._log_laws()
        loss = log_one - log_zero
        # A bit the first value sets (law P1 against P0), and one the second value sets.
        first = PrivacyLossDistribution.from_atoms(loss, log_one)
        second = PrivacyLossDistribution.from_atoms(-loss, log_zero)
        return first.compose(second).power(self.num_hashes * count)

    def _report_probabilities(self) -> tuple[Fraction, Fraction]:
        """Exact ``(q*, p*)``: one report's ``P[1 | bit 1]`` and ``P[1 | bit 0]``."""
        flip = Fraction(self.flip_probability)
        q, p = Fraction(self.one_probability), Fraction(self.zero_probability)
        return (1 - flip) * q + flip * p, flip * q + (1 - flip) * p

    def _log_laws(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        return _bloom_laws(
            self.flip_probability, self.one_probability, self.zero_probability, self.reports
        )

    def parameters(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {
            "num_hashes": self.num_hashes,
            "flip_probability": self.flip_probability,
            "one_probability": self.one_probability,
            "zero_probability": self.zero_probability,
            "reports": self.reports,
            "memo": self.memo,
        }


@lru_cache(maxsize=256)
def _bloom_laws(
    flip: float, one: float, zero: float, reports: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Log laws of the number of ones among ``reports`` reports of a bit that is 1 or 0.

    ``P1(j) = (1 - f/2) B(j; r, q) + (f/2) B(j; r, p)`` and
    ``P0(j) = (f/2) B(j; r, q) + (1 - f/2) B(j; r, p)``: the permanent bit is drawn once and
    every report is an independent instantaneous response to it.
    """
    j = np.arange(reports + 1, dtype=np.float64)
    log_choose = (
        special.gammaln(reports + 1.0)
        - special.gammaln(j + 1.0)
        - special.gammaln(reports - j + 1.0)
    )

    def log_binomial(prob: float) -> np.ndarray[Any, Any]:
        with np.errstate(divide="ignore"):
            ones = j * math.log(prob) if prob > 0 else np.where(j > 0, -np.inf, 0.0)
            zeros = (
                (reports - j) * math.log1p(-prob)
                if prob < 1
                else np.where(j < reports, -np.inf, 0.0)
            )
        return np.asarray(log_choose + ones + zeros)

    high, low = log_binomial(one), log_binomial(zero)
    log_keep, log_flip = math.log1p(-flip), math.log(flip)
    log_one = np.logaddexp(log_keep + high, log_flip + low)
    log_zero = np.logaddexp(log_flip + high, log_keep + low)
    # Counts no report can produce (p = 0 or q = 1) carry no mass under either value.
    possible = np.isfinite(log_one)
    return log_one[possible], log_zero[possible]


@lru_cache(maxsize=256)
def _bloom_rho(event: BloomRapporEvent) -> float:
    epsilon = event.pure_epsilon
    if epsilon == 0.0:
        return 0.0
    log_one, log_zero = event._log_laws()
    kl = event.num_hashes * float(
        np.sum(np.exp(log_one) * (log_one - log_zero))
        + np.sum(np.exp(log_zero) * (log_zero - log_one))
    )
    return min(_sup_over_orders(event._rdp_raw, max(kl, 0.0)), _pure_rho(epsilon))
