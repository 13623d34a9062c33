"""The event of a shuffled release: ``reports`` local reports, one per person, shuffled
(amplification by shuffling, :mod:`frameldp.accounting.amplification`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from frameldp.accounting.amplification import Clones, clone_delta, clone_epsilon, clone_probability
from frameldp.accounting.checks import check_count, check_order, check_positive
from frameldp.accounting.events.base import PrivacyEvent
from frameldp.accounting.events.curves import pure_rho, rr_rdp
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.rounding import pad_up

__all__ = ["ShuffleEvent"]


@dataclass(frozen=True)
class ShuffleEvent(PrivacyEvent):
    """``reports`` shuffled reports of ``local_epsilon``-LDP randomizers, one per person.

    Privacy: the central ``(epsilon, delta)`` curve of the clone reduction (:func:`clone_delta`),
    and never worse than the local ``local_epsilon``-DP it post-processes: the pure epsilon,
    Rényi curve, rho and privacy-loss distribution are those of the local reports (binary RR at
    ``local_epsilon`` dominates every ``local_epsilon``-DP mechanism).
    """

    local_epsilon: float
    reports: int
    clones: Clones = "clones"
    kind: ClassVar[str] = "shuffle"
    central: ClassVar[bool] = True

    def __post_init__(self) -> None:
        owner = "shuffle event"
        object.__setattr__(
            self, "local_epsilon", check_positive(owner, "local_epsilon", self.local_epsilon)
        )
        object.__setattr__(self, "reports", check_count(owner, "reports", self.reports, 1))
        clone_probability(self.local_epsilon, self.clones)  # validates clones

    @property
    def pure_epsilon(self) -> float:
        """``local_epsilon``: shuffling is post-processing of the local reports."""
        return self.local_epsilon

    def rdp(self, order: float) -> float:
        """The local reports' bound: binary RR at ``local_epsilon``."""
        return pad_up(rr_rdp(check_order(order), self.local_epsilon, 2))

    @property
    def rho(self) -> float:
        """The local reports' ``eps0 tanh(eps0 / 2)``."""
        return pure_rho(self.local_epsilon)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """The local reports' loss (binary RR at ``local_epsilon``, an upper bound)."""
        return PrivacyLossDistribution.randomized_response(self.local_epsilon, 2, count).dominated()

    def central_delta(self, epsilon: float) -> float:
        """Central delta at ``epsilon`` of one use (clone reduction; 0 from ``eps0`` on)."""
        return clone_delta(epsilon, self.local_epsilon, self.reports, self.clones)

    def central_epsilon(self, delta: float) -> float:
        """Central epsilon at ``delta`` of one use (never above ``local_epsilon``)."""
        return clone_epsilon(delta, self.local_epsilon, self.reports, self.clones)

    def parameters(self) -> dict[str, Any]:
        """``local_epsilon``, ``reports`` and ``clones``."""
        return {
            "local_epsilon": self.local_epsilon,
            "reports": self.reports,
            "clones": self.clones,
        }
