"""Counts released with binomial noise: the central privacy of Balcer–Cheu shuffle histograms.

In the Balcer–Cheu protocols every one of ``n`` people adds a noise message to each count with
probability ``p``, so the shuffler's output reveals, per count, ``s + Bin(n, p)`` where ``s``
is the true count. Changing one person's value moves ``bins`` counts by one: 2 in a histogram
(one count down, another up), 1 in a binary sum. Per count the pair is a binomial and its shift
by one, ``(Bin(n, p) + 1, Bin(n, p))``, whose privacy loss at ``Bin = j`` is ::

    up:   ln((j + 1) / (n - j)) + ln((1 - p) / p)     (probability b(j), j < n)
    down: ln((n - j + 1) / j) + ln(p / (1 - p))       (probability b(j), j > 0)

with an infinite loss of probability ``p^n`` (up) or ``(1 - p)^n`` (down), where only one side
can produce the outcome. Counts carry independent noise, so a histogram's loss is the
composition of one up and one down pair — exactly, since the other counts have the same
distribution under both inputs. The resulting privacy-loss distribution gives the optimal
``(epsilon, delta)`` curve of the released counts, which is far below the ``(epsilon, delta)``
that the paper's smooth-noise argument proves [1]_ (Thm. 3.1; Lemma 3 of [2]_). There is no
pure epsilon and no finite Rényi divergence (the supports differ).

References
----------
.. [1] V. Balcer, A. Cheu, "Separating Local & Shuffled Differential Privacy via Histograms",
   ITC 2020 (arXiv:1911.06879).
.. [2] B. Ghazi, N. Golowich, R. Kumar, R. Pagh, A. Velingker, "On the Power of Multiple
   Anonymous Messages", EUROCRYPT 2021 (arXiv:1908.11358).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from frameldp._scipy import special
from frameldp.accounting._binomial import binomial_window
from frameldp.accounting.events.base import PrivacyEvent
from frameldp.accounting.pld import PRUNE_LOG_MASS, PrivacyLossDistribution
from frameldp.accounting.rounding import round_up
from frameldp.arguments import check_count, check_order
from frameldp.errors import ParameterError

__all__ = ["BinomialCountsEvent"]


@dataclass(frozen=True)
class BinomialCountsEvent(PrivacyEvent):
    """Counts released with ``Bin(reports, noise_probability)`` noise each; one person's change
    moves ``bins`` of them by one.

    Privacy: the exact privacy-loss distribution above (``bins = 2``: one count up, one down;
    ``bins = 1``: accounted as one up and one down, an upper bound for either direction).
    Pure epsilon, Rényi curve and rho are infinite.
    """

    reports: int
    noise_probability: float
    bins: int = 2
    kind: ClassVar[str] = "binomial_counts"

    def __post_init__(self) -> None:
        owner = "binomial counts event"
        object.__setattr__(self, "reports", check_count(owner, "reports", self.reports, 1))
        p = self.noise_probability
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < float(p) < 1.0:
            raise ParameterError(f"{owner}: noise_probability must be in (0, 1), got {p!r}")
        object.__setattr__(self, "noise_probability", float(p))
        if self.bins not in (1, 2):
            raise ParameterError(f"{owner}: bins must be 1 or 2, got {self.bins!r}")

    @property
    def pure_epsilon(self) -> float:
        """``inf``: some outcomes are possible under one input only."""
        return math.inf

    def rdp(self, order: float) -> float:
        """``inf`` for every order (the supports differ)."""
        check_order("rdp", "order", order)
        return math.inf

    @property
    def rho(self) -> float:
        """``inf``."""
        return math.inf

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """One count up and one down, composed ``count`` times."""
        pair = self._shift(up=True).compose(self._shift(up=False))
        if self.bins == 1:
            pair = pair.dominated()
        return pair.power(count) if count > 1 else pair

    def _shift(self, *, up: bool) -> PrivacyLossDistribution:
        n, p = self.reports, self.noise_probability
        j, log_mass, lost = binomial_window(n, p, PRUNE_LOG_MASS)
        log_odds = math.log1p(-p) - math.log(p)
        if up:  # P = Bin + 1 against Q = Bin: infinite loss at Bin = n
            finite = j < n
            losses = np.log(j[finite] + 1.0) - np.log(n - j[finite]) + log_odds
        else:  # P = Bin against Q = Bin + 1: infinite loss at Bin = 0
            finite = j > 0
            losses = np.log(n - j[finite] + 1.0) - np.log(j[finite]) - log_odds
        infinite = (
            lost + float(np.exp(special.logsumexp(log_mass[~finite]))) if (~finite).any() else lost
        )
        pld = PrivacyLossDistribution.from_atoms(losses, log_mass[finite])
        return replace(pld, infinity_mass=min(1.0, round_up(infinite)) if infinite else 0.0)

    def parameters(self) -> dict[str, Any]:
        """``reports``, ``noise_probability`` and ``bins``."""
        return {
            "reports": self.reports,
            "noise_probability": self.noise_probability,
            "bins": self.bins,
        }
