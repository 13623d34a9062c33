"""Reports that share a memoized permanent response: RAPPOR's longitudinal guarantee for any
mechanism whose reports are an instantaneous randomization of a permanent one.

A person's permanent response ``P`` to a value is drawn once, with the loss of ``permanent``
(epsilon_inf), and memoized; each report is a fresh randomization of ``P`` whose end-to-end
channel from the value has the loss of ``one`` (epsilon_1). ``r`` reports of one value are
then bounded twice over:

* they are a post-processing of ``P``: at most the loss of ``permanent`` (Erlingsson, Pihur,
  Korolova, CCS 2014, Thm. 1; Arcolezi et al., "Improving the Utility of Locally
  Differentially Private Protocols for Longitudinal and Multidimensional Frequency
  Estimates", 2022, Sec. 3, L-GRR / L-OUE);
* each is epsilon_1-LDP: at most the composition of ``r`` uses of ``one``.

Both bounds hold for the same reports, so the smaller one holds at every order (Rényi), for
zCDP and for pure epsilon; the privacy-loss distribution is that of whichever pair gives the
smaller pure epsilon. The guarantee protects each (user, value) pair: a user whose value
changes gets an independent permanent response for each value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from frameldp.accounting.events.base import (
    PrivacyEvent,
    check_count,
    check_order,
    event_from_dict,
)
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.rounding import pad_up
from frameldp.errors import ParameterError

__all__ = ["MemoizedEvent"]


def _event(owner: str, name: str, value: Any) -> PrivacyEvent:
    if isinstance(value, PrivacyEvent):
        return value
    if isinstance(value, dict):
        return event_from_dict(value)
    raise ParameterError(f"{owner}: {name} must be a privacy event or its dict, got {value!r}")


@dataclass(frozen=True)
class MemoizedEvent(PrivacyEvent):
    """``reports`` reports of one value sharing a memoized permanent response (module
    docstring): each costs ``one``, all of them together at most ``permanent``.

    ``memo`` names the permanent responses (a public fingerprint, not the key): uses of events
    with the same ``memo`` share them, so :meth:`repeated` folds them into one event with more
    ``reports`` rather than composing them as independent. Without a memo every report has a
    fresh permanent response and reports compose as ``one``.
    """

    one: PrivacyEvent
    permanent: PrivacyEvent
    reports: int = 1
    memo: str | None = None
    kind: ClassVar[str] = "memoized"

    def __post_init__(self) -> None:
        owner = "memoized event"
        object.__setattr__(self, "one", _event(owner, "one", self.one))
        object.__setattr__(self, "permanent", _event(owner, "permanent", self.permanent))
        object.__setattr__(self, "reports", check_count(owner, "reports", self.reports, 1))
        if self.memo is not None and not isinstance(self.memo, str):
            raise ParameterError(f"{owner}: memo must be a string or None, got {self.memo!r}")
        if self.one.pure_epsilon > self.permanent.pure_epsilon:
            raise ParameterError(
                f"{owner}: one report ({self.one.pure_epsilon!r}) cannot lose more than its "
                f"permanent response ({self.permanent.pure_epsilon!r})"
            )

    def repeated(self, count: int) -> tuple[PrivacyEvent, int]:
        """Memoized: one event with ``count`` times the reports; otherwise independent uses."""
        if self.memo is None:
            return self, count
        return replace(self, reports=self.reports * count), 1

    def unit(self) -> tuple[PrivacyEvent, int]:
        """Memoized: one report, counted ``reports`` times."""
        if self.memo is None or self.reports == 1:
            return self, 1
        return replace(self, reports=1), self.reports

    @property
    def epsilon_infinity(self) -> float:
        """The permanent response's pure epsilon: any number of reports of one value."""
        return self.permanent.pure_epsilon

    def _times_reports(self, value: float) -> float:
        """``reports * value``, padded up (exact for one report)."""
        return value if self.reports == 1 else pad_up(self.reports * value)

    @property
    def _composed_epsilon(self) -> float:
        return self._times_reports(self.one.pure_epsilon)

    @property
    def pure_epsilon(self) -> float:
        """``min(r epsilon_1, epsilon_inf)``."""
        return min(self._composed_epsilon, self.epsilon_infinity)

    def rdp(self, order: float) -> float:
        """``min(r RDP_1(a), RDP_inf(a))``."""
        order = check_order(order)
        if math.isinf(order):
            return self.pure_epsilon
        return min(self._times_reports(self.one.rdp(order)), self.permanent.rdp(order))

    @property
    def rho(self) -> float:
        """``min(r rho_1, rho_inf)``."""
        return min(self._times_reports(self.one.rho), self.permanent.rho)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """``count`` independent uses of whichever pair bounds the ``reports`` more tightly in
        pure epsilon: ``reports`` compositions of ``one``, or ``permanent``."""
        if self._composed_epsilon <= self.epsilon_infinity:
            return self.one.privacy_loss(self.reports * count)
        return self.permanent.privacy_loss(count)

    def parameters(self) -> dict[str, Any]:
        """The constructor arguments (the two events as their dicts)."""
        return {
            "one": self.one.to_dict(),
            "permanent": self.permanent.to_dict(),
            "reports": self.reports,
            "memo": self.memo,
        }
