"""The event of a shuffled release: ``reports`` local reports, one per person, shuffled
(amplification by shuffling, :mod:`frameldp.accounting.amplification`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from frameldp.accounting.amplification import (
    MAX_EPSILON0,
    Clones,
    clone_delta,
    clone_epsilon,
    clone_probability,
)
from frameldp.accounting.events.base import PrivacyEvent
from frameldp.accounting.events.curves import pure_rho, rr_rdp
from frameldp.accounting.lattice import FINEST_STEP, Lattice, lattice_step, to_pld
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.rounding import pad_up
from frameldp.accounting.shuffle_pairs import (
    MAX_BLANKET_ATOMS,
    blanket_atoms,
    blanket_pair,
    clone_pair,
)
from frameldp.accounting.shuffled_rr import EXACT_SCAN_MAX, exact_rr_delta, exact_rr_epsilon
from frameldp.arguments import check_count, check_order, check_positive
from frameldp.errors import ParameterError

__all__ = ["ShuffleEvent"]


@lru_cache(maxsize=64)
def _privacy_loss(event: ShuffleEvent, count: int) -> PrivacyLossDistribution:
    """The loss distribution of ``count`` releases (cached: it takes up to seconds)."""
    return event._privacy_loss(count)


@lru_cache(maxsize=256)
def _central_epsilon(event: ShuffleEvent, delta: float) -> float:
    """Central epsilon of one release (cached: the exact scan takes seconds at 10^4 people)."""
    if event.pair == "blanket":
        return min(event.local_epsilon, event.privacy_loss(1).epsilon(delta))
    bound = clone_epsilon(delta, event.local_epsilon, event.reports, event.clones)
    if event.exact_scan:
        return min(bound, exact_rr_epsilon(delta, event.local_epsilon, event.reports))
    return bound


@dataclass(frozen=True)
class ShuffleEvent(PrivacyEvent):
    """``reports`` shuffled reports of ``local_epsilon``-LDP randomizers, one per person.

    Privacy: the central ``(epsilon, delta)`` curve of a dominating pair of the shuffled output
    (:mod:`frameldp.accounting.shuffle_pairs`): the clone pair (``clones``: any randomizer;
    ``stronger_clones``: k-ary randomized response), or, for k-ary randomized response with
    ``num_buckets = k >= 3``, the blanket pair with its ``k`` when it is affordable (usually
    the tighter one; the two are not compared per release; :attr:`pair` says which). Its
    privacy-loss distribution composes with every other event's (several shuffled releases
    compose at PLD tightness). One release of binary RR (``num_buckets = 2``) among at most
    10^4 people is accounted exactly by a scan over every dataset of the others
    (:attr:`exact_scan`). The pure epsilon, Rényi curve and rho are those of the local reports
    (shuffling is post-processing; binary RR at ``local_epsilon`` dominates every
    ``local_epsilon``-DP mechanism).
    """

    local_epsilon: float
    reports: int
    clones: Clones = "clones"
    num_buckets: int | None = None
    kind: ClassVar[str] = "shuffle"
    central: ClassVar[bool] = True

    def __post_init__(self) -> None:
        owner = "shuffle event"
        object.__setattr__(
            self, "local_epsilon", check_positive(owner, "local_epsilon", self.local_epsilon)
        )
        object.__setattr__(self, "reports", check_count(owner, "reports", self.reports, 1))
        clone_probability(self.local_epsilon, self.clones)  # validates clones
        if self.num_buckets is not None:
            buckets = check_count(owner, "num_buckets", self.num_buckets, 2)
            if self.clones != "stronger_clones":
                raise ParameterError(
                    "shuffle event: num_buckets is the k of k-ary randomized response, whose "
                    f"reports use clones='stronger_clones'; got clones={self.clones!r}"
                )
            object.__setattr__(self, "num_buckets", buckets)

    @property
    def pair(self) -> str:
        """The dominating pair used: ``"clones"``, ``"stronger_clones"`` or ``"blanket"``."""
        k = self.num_buckets
        if (
            k is not None
            and k >= 3
            and self.local_epsilon <= MAX_EPSILON0
            # the blanket probability k / (e^eps0 + k - 1) must not round to 1
            and k / (math.exp(self.local_epsilon) + k - 1.0) < 1.0
            and blanket_atoms(self.local_epsilon, self.reports, k) <= MAX_BLANKET_ATOMS
        ):
            return "blanket"
        return self.clones

    @property
    def pure_epsilon(self) -> float:
        """``local_epsilon``: shuffling is post-processing of the local reports."""
        return self.local_epsilon

    def rdp(self, order: float) -> float:
        """The local reports' bound: binary RR at ``local_epsilon``."""
        return pad_up(rr_rdp(check_order("rdp", "order", order), self.local_epsilon, 2))

    @property
    def rho(self) -> float:
        """The local reports' ``eps0 tanh(eps0 / 2)``."""
        return pure_rho(self.local_epsilon)

    def _pair_lattice(self, step: float = FINEST_STEP) -> Lattice:
        epsilon0, n = self.local_epsilon, self.reports
        if self.pair == "blanket":
            assert self.num_buckets is not None
            return blanket_pair(epsilon0, n, self.num_buckets, step)
        return clone_pair(epsilon0, n, clone_probability(epsilon0, self.clones), step)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """``count`` shuffled releases: the dominating pair's loss distribution, rounded up to
        a lattice of ``2**-16`` and composed by FFT (at most ``count * 2**-16`` above the
        exact composition of the pairs). Above ``eps0 = 15`` no amplification is claimed:
        binary RR at ``local_epsilon``."""
        return _privacy_loss(self, count)

    def _privacy_loss(self, count: int) -> PrivacyLossDistribution:
        if self.local_epsilon > MAX_EPSILON0:
            return PrivacyLossDistribution.randomized_response(
                self.local_epsilon, 2, count
            ).dominated()
        pair = self._pair_lattice()
        # The finest step whose composed lattice fits (coarser for many uses of a wide pair).
        span, deviation = pair.spread()
        step = lattice_step([span], [deviation * math.sqrt(count)], count)
        if step != pair.step:
            pair = self._pair_lattice(step)
        return to_pld(pair.power(count), exact=False)

    @property
    def exact_scan(self) -> bool:
        """Whether one release is accounted exactly: binary RR of at most ``EXACT_SCAN_MAX``
        people, every dataset of the others scanned (:mod:`~frameldp.accounting.shuffled_rr`).
        """
        return (
            self.num_buckets == 2
            and self.reports <= EXACT_SCAN_MAX
            and self.local_epsilon <= MAX_EPSILON0
        )

    @property
    def central_is_tightest(self) -> bool:
        """The clone pairs' divergence computed directly (or the exact scan) is never above
        their lattice loss distribution, which rounds losses up."""
        return self.pair != "blanket"

    @property
    def central_detail(self) -> str:
        """How one release is accounted (the ``shuffle`` method's detail)."""
        if self.exact_scan:
            return "exact: binary RR, every dataset of the others scanned"
        return {
            "clones": "clone pair (Feldman–McMillan–Talwar 2021)",
            "stronger_clones": "stronger-clone pair (Feldman–McMillan–Talwar 2023)",
            "blanket": f"blanket pair with k = {self.num_buckets} (Balle et al. 2019)",
        }[self.pair]

    def central_delta(self, epsilon: float) -> float:
        """Central delta at ``epsilon`` of one use: the exact scan (small binary RR), the clone
        pair's divergence computed directly (0 from ``eps0`` on), or the blanket pair's loss
        distribution."""
        if self.pair == "blanket":
            # The shuffled reports are a post-processing of eps0-DP ones: delta is 0 from eps0
            # on (the lattice raises the top loss a step above eps0).
            return 0.0 if epsilon >= self.local_epsilon else self.privacy_loss(1).delta(epsilon)
        bound = clone_delta(epsilon, self.local_epsilon, self.reports, self.clones)
        if self.exact_scan:
            return min(bound, exact_rr_delta(epsilon, self.local_epsilon, self.reports))
        return bound

    def central_epsilon(self, delta: float) -> float:
        """Central epsilon at ``delta`` of one use (never above ``local_epsilon``)."""
        return _central_epsilon(self, delta)

    def parameters(self) -> dict[str, Any]:
        """``local_epsilon``, ``reports``, ``clones`` and (k-ary RR) ``num_buckets``."""
        parameters: dict[str, Any] = {
            "local_epsilon": self.local_epsilon,
            "reports": self.reports,
            "clones": self.clones,
        }
        if self.num_buckets is not None:
            parameters["num_buckets"] = self.num_buckets
        return parameters
