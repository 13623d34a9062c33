"""Reports that share a memoized permanent response: RAPPOR's longitudinal guarantee for any
mechanism whose reports are an instantaneous randomization of a permanent one.

A person's permanent response ``P`` to a value is drawn once, with the loss of ``permanent``
(epsilon_inf), and memoized; each report is a fresh randomization of ``P`` whose end-to-end
channel from the value has the loss of ``one`` (epsilon_1).

* One report costs ``one``: its end-to-end channel.
* Any number ``r >= 2`` of reports of one value are a post-processing of ``P``: they cost at
  most ``permanent`` (Erlingsson, Pihur, Korolova, CCS 2014, Thm. 1; Arcolezi et al., EDBT
  2023, L-GRR / L-OUE), at every Rényi order, in zCDP and in pure epsilon.

``r`` compositions of ``one`` do **not** bound ``r`` reports that share ``P``: the reports are
not independent given the value, and two reports that agree reveal the hidden ``P``. Subset
selection at k = 16, d = 6, epsilon_1 = 0.5, epsilon_inf = 4 loses at least 3.96 in two
reports, not 1.0; k-RR at k = 100, epsilon_1 = 1, epsilon_inf = 6 loses 3.18 in three, not 3
(exact enumeration, ``tests/accounting/test_memoized_event.py``). So this event charges
``permanent`` from the second report on. Mechanisms whose joint loss of ``r`` reports is known
exactly say so with their own event (Bloom RAPPOR:
:class:`~frameldp.accounting.events.bloom.BloomRapporEvent`).

The guarantee protects each (user, value) pair: a user whose value changes gets an independent
permanent response for each value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from frameldp.accounting.events.base import (
    PrivacyEvent,
    check_count,
    check_order,
    event_from_dict,
)
from frameldp.accounting.pld import PrivacyLossDistribution
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
    docstring): one costs ``one``, two or more together at most ``permanent``.

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

    @property
    def _bounding(self) -> PrivacyEvent:
        """The event that bounds the ``reports``: ``one`` for one report, else ``permanent``
        (module docstring)."""
        return self.one if self.reports == 1 else self.permanent

    @property
    def pure_epsilon(self) -> float:
        """``epsilon_1`` for one report, ``epsilon_inf`` for more."""
        return self._bounding.pure_epsilon

    def rdp(self, order: float) -> float:
        """One report's Rényi divergence, or the permanent response's for more."""
        return self._bounding.rdp(check_order(order))

    @property
    def rho(self) -> float:
        """One report's zCDP rho, or the permanent response's for more."""
        return self._bounding.rho

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """``count`` independent uses of the bounding pair (one report's, or the permanent
        response's)."""
        return self._bounding.privacy_loss(count)

    def parameters(self) -> dict[str, Any]:
        """The constructor arguments (the two events as their dicts)."""
        return {
            "one": self.one.to_dict(),
            "permanent": self.permanent.to_dict(),
            "reports": self.reports,
            "memo": self.memo,
        }
