"""Reports that share a memoized permanent response: RAPPOR's longitudinal guarantee for any
mechanism whose reports are an instantaneous randomization of a permanent one.

A person's permanent response ``P`` to a value is drawn once, with the loss of ``permanent``
(epsilon_inf), and memoized; each report is a fresh randomization of ``P`` (the
``instant`` channel, from any permanent response to a report) whose end-to-end channel from
the value has the loss of ``one`` (epsilon_1).

* One report costs ``one``: its end-to-end channel.
* **A person** holding ``r >= 2`` such reports, whatever their values: at most ``r`` uses of
  ``instant`` (pure epsilon, Rényi curve, zCDP and loss distribution alike). The reports are
  a product channel ``instant^r`` applied to the permanent responses ``(P_{x_1}, ...,
  P_{x_r})``; any coupling of those under two inputs writes both report distributions as
  mixtures with equal weights, and every divergence here is jointly quasi-convex, so the
  worst pair of permanent vectors bounds it (van Erven and Harremoës, IEEE Trans. IT 2014,
  Thm. 13 for Rényi; the hockey-stick divergence for the loss distribution).
  No bound below that exists in general: reports that share ``P`` reveal which rows share a
  value, so a person whose value changes between reports loses without limit as reports
  accumulate (L-GRR, k = 4, epsilon_1 = 1, epsilon_inf = 4: two reports lose exactly 2.0225
  against the worst pair of two-row inputs, eight reports 4.199 > epsilon_inf;
  ``tests/privacy/test_person_unit.py``). With no instantaneous noise the loss of two
  reports is unbounded, and the event refuses to state one.
* **Exactly, for a few reports** (memoized unary encodings: L-SUE, L-OUE): ``exact`` holds the
  exact pure loss of ``1, 2, 3`` reports of one person over every pair of inputs, from the
  realized probabilities (:mod:`frameldp.accounting.unary_memo`); more reports add one use of
  the instantaneous channel each (adaptive composition: given the earlier reports, one more is
  a mixture of the instantaneous channel over the permanent vectors' posterior). The pure
  epsilon is the smaller of that and the bound above; Rényi and zCDP are then also bounded by
  the pure epsilon's (Bun and Steinke, TCC 2016, Prop. 3.3: ``eps``-DP is
  ``eps^2 / 2``-zCDP). One-hot RAPPOR over 9 values at epsilon_1 = 1, epsilon_inf = 3: two
  reports 3.03 (14.6 by the bound), three 5.80 (21.9).
* **One value**: ``r`` reports of one unchanged value are a post-processing of ``P``: they
  cost at most ``permanent`` (Erlingsson, Pihur, Korolova, CCS 2014, Thm. 1; Arcolezi et al.,
  EDBT 2023, L-GRR / L-OUE). That is RAPPOR's longitudinal guarantee, per (person, value),
  kept as :attr:`MemoizedEvent.epsilon_infinity`; frameldp charges the person's bound.

``r`` compositions of ``one`` do **not** bound ``r`` reports that share ``P``: the reports are
not independent given the value, and two reports that agree reveal the hidden ``P``. Subset
selection at k = 16, d = 6, epsilon_1 = 0.5, epsilon_inf = 4 loses at least 3.96 in two
reports, not 1.0; k-RR at k = 100, epsilon_1 = 1, epsilon_inf = 6 loses 3.18 in three, not 3
(exact enumeration, ``tests/accounting/test_memoized_event.py``).

An event recorded before ``instant`` existed (a ledger written by an earlier frameldp) keeps
the per-value bound it was charged with.
"""

from __future__ import annotations

import itertools
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
from frameldp.accounting.rounding import pad_up, sum_up
from frameldp.errors import ParameterError

__all__ = ["MemoizedEvent"]


def _event(owner: str, name: str, value: Any) -> PrivacyEvent:
    if isinstance(value, PrivacyEvent):
        return value
    if isinstance(value, dict):
        return event_from_dict(value)
    raise ParameterError(f"{owner}: {name} must be a privacy event or its dict, got {value!r}")


def _exact_losses(owner: str, value: Any) -> tuple[float, ...]:
    """``exact`` checked: finite losses >= 0, one per number of reports, not decreasing."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ParameterError(f"{owner}: exact must be a list of losses, got {value!r}")
    losses = tuple(value)
    valid = all(
        isinstance(loss, (int, float)) and not isinstance(loss, bool) and 0 <= loss < math.inf
        for loss in losses
    )
    if not valid or any(b < a for a, b in itertools.pairwise(losses)):
        raise ParameterError(f"{owner}: exact must hold losses >= 0, not decreasing: {value!r}")
    return tuple(float(loss) for loss in losses)


@dataclass(frozen=True)
class MemoizedEvent(PrivacyEvent):
    """``reports`` reports of one person sharing memoized permanent responses (module
    docstring): one costs ``one``; two or more cost ``reports * instant_uses`` uses of
    ``instant`` (``instant_uses`` > 1 where the instantaneous channel is that many independent
    ones, a bit vector's bits); those of one unchanged value at most ``permanent``.
    ``instant=None, instant_uses=0``: the instantaneous response adds no noise (two reports
    of one person have no finite bound); ``instant=None, instant_uses=1``: an event recorded
    by an earlier frameldp (module docstring).

    ``exact`` (optional) is the exact pure loss of ``1, 2, ...`` reports of one person, over
    every pair of inputs, for as many reports as were enumerated (module docstring).

    ``memo`` names the permanent responses (a public fingerprint, not the key): uses of events
    with the same ``memo`` share them, so :meth:`repeated` folds them into one event with more
    ``reports`` rather than composing them as independent. Without a memo every report has a
    fresh permanent response and reports compose as ``one``.
    """

    one: PrivacyEvent
    permanent: PrivacyEvent
    reports: int = 1
    memo: str | None = None
    instant: PrivacyEvent | None = None
    instant_uses: int = 1
    exact: tuple[float, ...] = ()
    kind: ClassVar[str] = "memoized"

    def __post_init__(self) -> None:
        owner = "memoized event"
        object.__setattr__(self, "one", _event(owner, "one", self.one))
        object.__setattr__(self, "permanent", _event(owner, "permanent", self.permanent))
        object.__setattr__(self, "reports", check_count(owner, "reports", self.reports, 1))
        if self.instant is not None:
            object.__setattr__(self, "instant", _event(owner, "instant", self.instant))
        uses = check_count(owner, "instant_uses", self.instant_uses, 0)
        object.__setattr__(self, "instant_uses", uses)
        object.__setattr__(self, "exact", _exact_losses(owner, self.exact))
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

    def unfolded(self) -> tuple[PrivacyEvent, int]:
        """This event's ``reports`` as independent uses ``(event, uses)``, for a context that
        cannot fold the person's other reports of these permanent responses into it (a column
        of a sampled collection, :class:`~frameldp.accounting.SampledEvent`): without ``memo``
        (fresh permanent responses) ``one`` per report; memoized, ``instant_uses`` uses of
        ``instant`` per report, which bounds it beside any other reports of the person in any
        order (module docstring), or ``permanent`` per report for an event of an earlier
        frameldp. Refused when the instantaneous response adds no noise (unbounded)."""
        if self.memo is None:
            return self.one, self.reports
        if self.instant is None and not self.instant_uses:
            raise ParameterError(
                "memoized event: a sampled memoized column is charged its instantaneous "
                "response per report, and this one adds no noise (epsilon_infinity equal to "
                "epsilon: a person's reports would be unbounded); give epsilon_infinity above "
                "epsilon"
            )
        if self.instant is None:  # an earlier frameldp's event: no instantaneous channel kept
            return self.permanent, self.reports
        if not math.isfinite(self.instant.pure_epsilon):
            raise ParameterError(
                "memoized event: a sampled memoized column is charged its instantaneous "
                "response per report, and this one has no finite epsilon"
            )
        return self.instant, self.instant_uses * self.reports

    @property
    def epsilon_infinity(self) -> float:
        """The permanent response's pure epsilon: any number of reports of one value."""
        return self.permanent.pure_epsilon

    @property
    def _bounding(self) -> tuple[PrivacyEvent, int]:
        """The event that bounds the ``reports`` and its number of uses (module docstring):
        ``one`` once for one report, else ``instant`` ``reports * instant_uses`` times (an
        earlier frameldp's event without ``instant``: ``permanent`` once)."""
        if self.reports == 1:
            return self.one, 1
        if self.instant is None and self.instant_uses:
            return self.permanent, 1
        if self.instant is None or not math.isfinite(self.instant.pure_epsilon):
            raise ParameterError(
                f"memoized event: {self.reports} reports of one person whose instantaneous "
                "response adds no noise reveal which of them share a value (an unbounded "
                "loss); keep one report per person (max_rows_per_user=1) or give "
                "epsilon_infinity above epsilon"
            )
        return self.instant, self.reports * self.instant_uses

    @property
    def pure_epsilon(self) -> float:
        """``epsilon_1`` for one report, else ``reports * instant_uses`` instantaneous ones, or
        the exact loss of the first reports plus the instantaneous ones of the others, when
        smaller (module docstring)."""
        event, uses = self._bounding
        bound = sum_up([(event.pure_epsilon, uses)])
        if self.reports == 1 or not self.exact or self.instant is None:
            return bound
        first = min(self.reports, len(self.exact))
        step = (self.instant.pure_epsilon, (self.reports - first) * self.instant_uses)
        return min(bound, sum_up([(self.exact[first - 1], 1), step]))

    def rdp(self, order: float) -> float:
        """One report's Rényi divergence, or the composed instantaneous ones' (at most what
        the pure epsilon implies: ``min(eps, order * eps^2 / 2)``)."""
        event, uses = self._bounding
        order = check_order("rdp", "order", order)
        divergence = event.rdp(order)
        if uses == 1:
            return divergence
        pure = self.pure_epsilon
        return min(pad_up(uses * divergence), pure, pad_up(order * pure * pure / 2))

    @property
    def rho(self) -> float:
        """One report's zCDP rho, or the composed instantaneous ones' (at most ``eps^2 / 2``)."""
        event, uses = self._bounding
        if uses == 1:
            return event.rho
        pure = self.pure_epsilon
        return min(pad_up(uses * event.rho), pad_up(pure * pure / 2))

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """``count`` independent uses of the bounding events."""
        event, uses = self._bounding
        return event.privacy_loss(count * uses)

    def parameters(self) -> dict[str, Any]:
        """The constructor arguments (the two events as their dicts)."""
        return {
            "one": self.one.to_dict(),
            "permanent": self.permanent.to_dict(),
            "reports": self.reports,
            "memo": self.memo,
            **(
                {}
                if self.instant is None and self.instant_uses
                else {
                    "instant": None if self.instant is None else self.instant.to_dict(),
                    "instant_uses": self.instant_uses,
                }
            ),
            **({"exact": list(self.exact)} if self.exact else {}),
        }
