"""Events of local randomizers: k-ary randomized response, RAPPOR (bit-vector RR) and any other
pure epsilon-DP mechanism (closed forms and references in the package docstring).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from frameldp.accounting.blanket import Blanket, bit_vector_blanket, set_blanket
from frameldp.accounting.events.base import (
    PrivacyEvent,
    check_count,
    check_order,
    check_positive,
)
from frameldp.accounting.events.curves import (
    kary_rho,
    pure_rho,
    rr_rdp,
)
from frameldp.accounting.pld import TWO_BUCKETS, PrivacyLossDistribution
from frameldp.accounting.rounding import pad_up, sum_up
from frameldp.errors import renamed, renamed_argument

__all__ = ["PureDP", "RandomizedResponseEvent", "RapporEvent"]


@dataclass(frozen=True, init=False)
class RandomizedResponseEvent(PrivacyEvent):
    """k-ary randomized response at ``epsilon`` over ``num_buckets`` outputs (binary RR when
    ``num_buckets = 2``; the literature's ``k``).

    Privacy: ``epsilon``-DP; the Rényi curve and the loss distribution in the module docstring
    are exact for the worst pair of inputs, so compositions of these events are accounted
    optimally (Kairouz–Oh–Viswanath).
    """

    epsilon: float
    num_buckets: int = 2
    kind: ClassVar[str] = "randomized_response"
    renamed_parameters: ClassVar[Mapping[str, str]] = {"k": "num_buckets"}

    def __init__(
        self, epsilon: float, num_buckets: int = TWO_BUCKETS, *, k: int | None = None
    ) -> None:
        owner = "randomized response event"
        num_buckets = renamed_argument(
            "RandomizedResponseEvent",
            "k",
            "num_buckets",
            old_value=k,
            new_value=num_buckets,
            default=TWO_BUCKETS,
        )
        epsilon = check_positive(owner, "epsilon", epsilon, allow_zero=True)
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "num_buckets", check_count(owner, "num_buckets", num_buckets, 2))

    @property
    def k(self) -> int:
        """Deprecated name of :attr:`num_buckets`."""
        renamed("RandomizedResponseEvent", "k", "num_buckets")
        return self.num_buckets

    @property
    def pure_epsilon(self) -> float:
        """``epsilon``."""
        return self.epsilon

    def blankets(self) -> tuple[Blanket, ...]:
        """Uniform reports lie below every value's law, the value weighing ``e^eps`` more: a
        blanket report is a given value with probability ``1/k`` (for ``k >= 3``; binary RR's
        blanket is the stronger-clone pair, and its shuffles are scanned exactly)."""
        return set_blanket(self.epsilon, 1.0 / self.num_buckets) if self.num_buckets >= 3 else ()

    def rdp(self, order: float) -> float:
        """Exact Rényi divergence of the worst pair (Mironov 2017 Prop. 5 for two buckets)."""
        return pad_up(rr_rdp(check_order("rdp", "order", order), self.epsilon, self.num_buckets))

    @property
    def rho(self) -> float:
        """``eps tanh(eps/2)`` for binary RR; the numerical ``sup_a RDP(a)/a`` for more
        buckets."""
        if self.num_buckets == 2 or self.epsilon == 0.0:
            return pure_rho(self.epsilon)
        return kary_rho(self.epsilon, self.num_buckets)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Exact: ``count``-fold composition of the three-atom loss (two atoms for two
        buckets)."""
        return PrivacyLossDistribution.randomized_response(self.epsilon, self.num_buckets, count)

    def parameters(self) -> dict[str, Any]:
        """``epsilon`` and ``num_buckets``."""
        return {"epsilon": self.epsilon, "num_buckets": self.num_buckets}


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

    def blankets(self) -> tuple[Blanket, ...]:
        """The set randomizer above the bit vectors (:func:`~frameldp.accounting.blanket.
        bit_vector_blanket`): the reports of the all-zero vector times ``e^-mb`` lie below
        every value's law (``b = bit_epsilon``); at ``m = 1`` that is one-hot RAPPOR's exact
        blanket (a blanket report supports a value with probability ``1 / (1 + e^b)``)."""
        return bit_vector_blanket(self.bit_epsilon, -self.bit_epsilon, self.max_weight)

    def rdp(self, order: float) -> float:
        """``2m RDP_RR(bit_epsilon)`` (exact)."""
        return pad_up(self._flips * rr_rdp(check_order("rdp", "order", order), self.bit_epsilon, 2))

    @property
    def rho(self) -> float:
        """``2m bit_epsilon tanh(bit_epsilon / 2)`` (tight)."""
        return pad_up(self._flips * pure_rho(self.bit_epsilon))

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
        return pad_up(rr_rdp(check_order("rdp", "order", order), self.epsilon, 2))

    @property
    def rho(self) -> float:
        """``eps tanh(eps / 2)`` (Steinke 2024)."""
        return pure_rho(self.epsilon)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Binary RR's loss: exact for RR, an upper bound for every other epsilon-DP mechanism."""
        return PrivacyLossDistribution.randomized_response(self.epsilon, 2, count).dominated()

    def parameters(self) -> dict[str, Any]:
        """``epsilon``."""
        return {"epsilon": self.epsilon}
