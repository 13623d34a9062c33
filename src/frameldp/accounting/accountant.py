"""The accountant: composes privacy events and reports the tightest (epsilon, delta) it can prove.

Composition covers both the columns of one release (one report per column about the same person)
and repeated releases; the loss of each is an event, and the accountant keeps the multiset of
events (immutable, in the spirit of dp_accounting's ``DpEvent``). Every question is answered by
every valid method, and the smallest answer is reported together with the method that produced it:

* ``basic``: the sum of pure epsilons (delta = 0) [1]_;
* ``pld``: the privacy-loss distribution of the whole composition, exact for the randomized
  response family and Gaussian noise (Kairouz–Oh–Viswanath optimal composition) [2]_;
* ``rdp``: the summed Rényi curves with the improved conversion [3]_ [4]_;
* ``zcdp``: the summed zCDP rhos with the Canonne–Kamath–Steinke conversion [3]_;
* ``zcdp_bun_steinke``: the same rhos with Bun–Steinke Prop. 1.3 [5]_ (for comparison);
* ``shuffle``: one shuffled release (amplified by shuffling): its central (epsilon, delta)
  computed directly (exactly for binary RR of up to 10^4 people, else from its dominating
  pair), plus the pure epsilons of the other events (basic composition [1]_).

Shuffled releases also enter ``pld`` through the loss distribution of their dominating pair
(:mod:`~frameldp.accounting.shuffle_pairs`), so several of them, and mixes of shuffled and local
events, compose at PLD tightness, and ``delta(epsilon)`` and ``epsilon(delta)`` come from the
same curves. When the exact composition of atoms would have to coarsen its grid, the events are
composed on a lattice by FFT instead (:mod:`~frameldp.accounting.lattice`), and the explanation
states how far above the exact composition the rounding can be.

Composition theorems: Rényi divergences and zCDP rhos add (Mironov 2017 Prop. 1; Bun–Steinke
2016 Lemma 2.3); privacy-loss distributions convolve. All hold under adaptive composition.

References
----------
.. [1] C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014, Thm. 3.16.
.. [2] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy",
   ICML 2015.
.. [3] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
   NeurIPS 2020, Prop. 12 and Cor. 13.
.. [4] B. Balle et al., "Hypothesis Testing Interpretations and Rényi Differential Privacy",
   AISTATS 2020, Thm. 21.
.. [5] M. Bun, T. Steinke, "Concentrated Differential Privacy", TCC 2016, Prop. 1.3.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from frameldp.accounting.conversions import (
    rdp_to_delta,
    rdp_to_epsilon,
    zcdp_to_epsilon_bun_steinke,
)
from frameldp.accounting.events import PrivacyEvent, check_count, check_order, event_from_dict
from frameldp.accounting.lattice import compose_all
from frameldp.accounting.pld import EXACT_GRID, PrivacyLossDistribution
from frameldp.accounting.risk import PrivacyProfile
from frameldp.accounting.rounding import pad_up, sum_up
from frameldp.arguments import MAX_EXACT
from frameldp.errors import ParameterError


@runtime_checkable
class Accounted(Protocol):
    """What carries its own accountant (a :class:`~frameldp.PrivacyGuarantee`): composed by
    its events. Declared here so that the accountant needs no import of the guarantee."""

    @property
    def accountant(self) -> Accountant: ...


__all__ = [
    "Accountant",
    "Conversion",
    "DeltaExplanation",
    "Explanation",
    "check_delta",
    "check_epsilon_level",
]

# Where a profile's grid ends when no pure epsilon or small-delta epsilon bounds it, and how
# many loss atoms near a test's optimum it tries.
_PROFILE_TOP = 64.0
_PROFILE_ATOMS = 48
_PROFILE_SMALL = 8.0

METHODS = {
    "basic": "basic composition of pure epsilons",
    "pld": "privacy-loss distribution",
    "rdp": "Rényi DP, Canonne–Kamath–Steinke conversion",
    "zcdp": "zCDP, Canonne–Kamath–Steinke conversion",
    "zcdp_bun_steinke": "zCDP, Bun–Steinke Prop. 1.3",
    "shuffle": "amplification by shuffling, one release (exact scan or its pair, directly)",
}


def check_delta(delta: Any) -> float:
    """Validate ``0 < delta < 1``."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise ParameterError(f"delta must be a number in (0, 1), got {delta!r}")
    if not 0.0 < float(delta) < 1.0:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    return float(delta)


def check_epsilon_level(epsilon: Any) -> float:
    """Validate an epsilon at which a delta is asked: finite and ``>= 0``."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise ParameterError(f"epsilon must be a number >= 0, got {epsilon!r}")
    if not (float(epsilon) >= 0.0 and math.isfinite(epsilon)):
        raise ParameterError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    return float(epsilon)


@dataclass(frozen=True)
class Conversion:
    """One method's answer: ``(epsilon, delta)`` and how it was obtained."""

    method: str
    epsilon: float
    delta: float
    detail: str = ""

    @property
    def description(self) -> str:
        """Readable name of the method."""
        return METHODS[self.method]


@dataclass(frozen=True)
class Explanation:
    """Every method's epsilon at one delta; ``best`` is the one reported."""

    delta: float
    conversions: tuple[Conversion, ...]
    source: Accountant | None = field(default=None, compare=False, repr=False)
    """The accountant explained: its profile gives :meth:`risk_lines` when shown."""
    warning: str = field(default="", compare=False)
    """Set for a seeded guarantee: shown beside what it means for a person."""

    @property
    def best(self) -> Conversion:
        """The smallest epsilon (the first listed method wins ties)."""
        return min(self.conversions, key=lambda c: c.epsilon)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable: the reported method and every candidate."""
        return {
            "delta": self.delta,
            "epsilon": self.best.epsilon,
            "method": self.best.method,
            "candidates": [
                {"method": c.method, "epsilon": c.epsilon, "detail": c.detail}
                for c in self.conversions
            ],
        }

    def __str__(self) -> str:
        best = self.best
        lines = [f"ε = {best.epsilon:.6g} at δ = {self.delta:.3g} ({best.description})"]
        for c in sorted(self.conversions, key=lambda c: c.epsilon):
            mark = "*" if c is best else " "
            detail = f"  [{c.detail}]" if c.detail else ""
            lines.append(f" {mark} {c.method:<17} ε = {c.epsilon:<12.6g}{detail}")
        lines.extend(self.risk_lines())
        return "\n".join(lines)

    def risk_lines(self) -> list[str]:
        """What this means for one person (:meth:`~frameldp.accounting.risk.PrivacyProfile.
        summary`): the posterior of an attacker who gave a fact 1% (except on reports of
        probability ``delta`` where that is tighter) and the power of a test at 1% false
        positives."""
        if self.source is None or not self.source.entries:
            return []
        mark = f" [{self.warning}]" if self.warning else ""
        return [f"For one person: {self.source.profile.summary(self.delta)}.{mark}"]


@dataclass(frozen=True)
class Accountant:
    """An immutable multiset of privacy events, with every composition method.

    >>> import frameldp
    >>> acc = frameldp.Accountant().compose(frameldp.RandomizedResponseEvent(1.0), count=100)
    >>> round(acc.epsilon(1e-6), 2)
    83.53
    >>> acc.explain(1e-6).best.method
    'pld'
    """

    entries: tuple[tuple[PrivacyEvent, int], ...] = ()

    def compose(self, item: PrivacyEvent | Accounted | Accountant, count: int = 1) -> Accountant:
        """A new accountant that also holds ``count`` uses of ``item``."""
        return Accountant.of([(self, 1), (item, count)])

    @classmethod
    def of(cls, items: Iterable[tuple[PrivacyEvent | Accounted | Accountant, int]]) -> Accountant:
        """One accountant holding ``count`` uses of each ``(item, count)``, built in one pass
        (composing one at a time copies the entries each time: quadratic in their number)."""
        counts: dict[PrivacyEvent, int] = {}
        for item, count in items:
            count = check_count("Accountant.compose", "count", count, 1, MAX_EXACT)
            for event, n in _entries_of(item):
                unit, uses = event.unit()
                counts[unit] = counts.get(unit, 0) + n * uses * count
        return Accountant(tuple(_unshuffle_shared_memos(counts).items()))

    @cached_property
    def _uses(self) -> tuple[tuple[PrivacyEvent, int], ...]:
        """The entries as independent uses (memoized events fold their count into one, and
        shuffled releases sharing a memo are their local reports, however the entries were
        built: :meth:`of`, or directly)."""
        counts: dict[PrivacyEvent, int] = {}
        for event, n in self.entries:
            counts[event] = counts.get(event, 0) + n
        return tuple(event.repeated(n) for event, n in _unshuffle_shared_memos(counts).items())

    # ------------------------------------------------------------------ curves

    @property
    def pure_epsilon(self) -> float:
        """Basic composition: the sum of pure epsilons (``inf`` if any event has none)."""
        return sum_up((event.pure_epsilon, n) for event, n in self._uses)

    def rdp(self, order: float) -> float:
        """Rényi divergence bound of the composition at ``order > 1`` (curves add)."""
        return pad_up(self._rdp_raw(check_order("rdp", "order", order)))

    @property
    def rho(self) -> float:
        """zCDP rho of the composition (rhos add)."""
        return pad_up(math.fsum(event.rho * n for event, n in self._uses))

    @cached_property
    def privacy_loss(self) -> PrivacyLossDistribution | None:
        """The composed privacy-loss distribution (None when there are no events)."""
        return compose_all([event.privacy_loss(n) for event, n in self._uses])

    # ------------------------------------------------------------------ (epsilon, delta)

    def explain(self, delta: float) -> Explanation:
        """Every method's epsilon at ``delta``; ``.best`` is what :meth:`epsilon` reports."""
        delta = check_delta(delta)
        if not self.entries:
            return Explanation(delta, (Conversion("basic", 0.0, delta, "no events"),))
        conversions = [Conversion("basic", self.pure_epsilon, delta)]
        pld = None if self._direct_only else self.privacy_loss
        if pld is not None:
            epsilon = pld.epsilon(delta)
            conversions.append(Conversion("pld", epsilon, delta, _pld_detail(pld, delta, epsilon)))
        if not self._direct_only:
            epsilon, order = rdp_to_epsilon(self._rdp_raw, delta)
            conversions.append(Conversion("rdp", epsilon, delta, f"order {order:.6g}"))
        rho = self.rho
        epsilon, order = rdp_to_epsilon(lambda a: a * rho, delta)
        conversions.append(Conversion("zcdp", epsilon, delta, f"rho {rho:.6g}, order {order:.6g}"))
        conversions.append(
            Conversion(
                "zcdp_bun_steinke", zcdp_to_epsilon_bun_steinke(rho, delta), delta, f"rho {rho:.6g}"
            )
        )
        shuffled = self._shuffled_epsilon(delta)
        if shuffled is not None:
            conversions.append(shuffled)
        return Explanation(delta, tuple(conversions), self)

    def _split(self) -> tuple[list[tuple[PrivacyEvent, int]], list[tuple[PrivacyEvent, int]]]:
        """Uses of amplified (shuffled) events, and all the others."""
        amplified = [(e, n) for e, n in self._uses if e.central]
        others = [(e, n) for e, n in self._uses if not e.central]
        return amplified, others

    @cached_property
    def _direct_only(self) -> bool:
        """One shuffled release alone whose direct answer is the tightest: no loss
        distribution or Rényi conversion needed (they would only round the same pairs up, and
        the Rényi curve of its pair costs more than the answer)."""
        return (
            len(self._uses) == 1
            and self._uses[0][1] == 1
            and (self._uses[0][0].central and self._uses[0][0].central_is_tightest)
        )

    def _single_shuffled(self) -> tuple[PrivacyEvent, float] | None:
        """The one shuffled use and the pure epsilon of the rest (None unless exactly one)."""
        amplified, others = self._split()
        if len(amplified) != 1 or amplified[0][1] != 1:
            return None  # several shuffled uses compose through their pairs (pld)
        return amplified[0][0], sum_up((event.pure_epsilon, n) for event, n in others)

    def _shuffled_epsilon(self, delta: float) -> Conversion | None:
        single = self._single_shuffled()
        if single is None:
            return None
        event, rest = single
        central, detail = event.central_method(delta)
        epsilon = sum_up([(central, 1), (rest, 1)])
        return Conversion("shuffle", epsilon, delta, detail)

    def _shuffled_delta(self, epsilon: float) -> Conversion | None:
        single = self._single_shuffled()
        if single is None:
            return None
        event, rest = single
        if rest > epsilon:
            return Conversion("shuffle", epsilon, 1.0, event.central_detail)
        value, detail = event.central_delta_method(epsilon - rest)
        return Conversion("shuffle", epsilon, value, detail)

    def epsilon(self, delta: float) -> float:
        """The smallest epsilon any valid method proves at ``delta`` (rounded up)."""
        return self.explain(delta).best.epsilon

    def delta(self, epsilon: float) -> float:
        """The smallest delta any valid method proves at ``epsilon`` (rounded up)."""
        return self.explain_delta(epsilon).best_delta

    def explain_delta(self, epsilon: float) -> DeltaExplanation:
        """Every method's delta at ``epsilon``."""
        epsilon = check_epsilon_level(epsilon)
        if not self.entries:
            return DeltaExplanation(epsilon, (Conversion("basic", epsilon, 0.0, "no events"),))
        basic = 0.0 if epsilon >= self.pure_epsilon else 1.0
        conversions = [Conversion("basic", epsilon, basic)]
        pld = None if self._direct_only else self.privacy_loss
        if pld is not None:
            value = pld.delta(epsilon)  # already a padded upper bound
            conversions.append(Conversion("pld", epsilon, value, _pld_detail(pld)))
        if not self._direct_only:
            value, order = rdp_to_delta(self._rdp_raw, epsilon)
            conversions.append(Conversion("rdp", epsilon, value, f"order {order:.6g}"))
        rho = self.rho
        value, order = rdp_to_delta(lambda a: a * rho, epsilon)
        conversions.append(Conversion("zcdp", epsilon, value, f"rho {rho:.6g}, order {order:.6g}"))
        shuffled = self._shuffled_delta(epsilon)
        if shuffled is not None:
            conversions.append(shuffled)
        return DeltaExplanation(epsilon, tuple(conversions))

    @cached_property
    def profile(self) -> PrivacyProfile:
        """The privacy profile ``delta(epsilon)`` of the composition, for the readings of
        :mod:`~frameldp.accounting.risk` (true-positive rates, posteriors, Gaussian DP).

        Each value is the smallest of the basic, loss-distribution and shuffle answers
        (the Rényi conversions, far looser wherever a loss distribution exists, are skipped);
        the grid ends at the pure epsilon (at most 8) or where delta falls to ``1e-12``.
        """
        pure = self.pure_epsilon
        if pure <= _PROFILE_SMALL:
            top = pure  # the grid spans it finely enough: no conversion needed to place it
        else:
            reach = self.epsilon(1e-12) if self.entries else 0.0
            top = min(pure, reach) if math.isfinite(reach) else pure
        if not math.isfinite(top):
            top = _PROFILE_TOP
        pld = None if (self._direct_only or not self.entries) else self.privacy_loss
        atoms = None
        if pld is not None and pld.gaussian_mu2 == 0.0:
            losses = pld.losses

            def atoms(low: float, high: float) -> Any:
                inside = losses[(losses >= low) & (losses <= high)]
                step = max(1, inside.size // _PROFILE_ATOMS)
                return inside[::step]

        return PrivacyProfile(self._profile_delta, pure, max(top, 0.0), atoms)

    def _profile_delta(self, epsilon: float) -> float:
        """A valid delta at ``epsilon``: basic, loss distribution or shuffle, the smallest."""
        if not self.entries or epsilon >= self.pure_epsilon:
            return 0.0
        single = self._single_shuffled()
        if single is not None and len(self._uses) == 1:
            # One release: every pair it has, its own loss distribution too (a risk reading
            # asks for a hundred deltas: the event answers from its cheaper curves).
            return single[0].profile_delta(epsilon)
        shuffled = self._shuffled_delta(epsilon)
        best = 1.0 if shuffled is None else shuffled.delta
        pld = None if self._direct_only else self.privacy_loss
        if pld is not None:
            best = min(best, pld.delta(epsilon))
        return best

    def _rdp_raw(self, order: float) -> float:
        return math.fsum(event.rdp(order) * n for event, n in self._uses)

    # ------------------------------------------------------------------ serialization

    def to_dict(self) -> dict[str, Any]:
        """Events with counts, plus the pure epsilon and rho (for readers without frameldp)."""
        return {
            "events": [{"event": event.to_dict(), "count": n} for event, n in self.entries],
            # JSON has no infinity: null when some event (Gaussian) has no pure epsilon.
            "pure_epsilon": self.pure_epsilon if math.isfinite(self.pure_epsilon) else None,
            "rho": self.rho,
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Accountant:
        """Rebuild from :meth:`to_dict` (unknown event kinds raise :class:`ParameterError`)."""
        return cls.of(
            (event_from_dict(entry["event"]), entry["count"]) for entry in data.get("events", [])
        )

    def __str__(self) -> str:
        if not self.entries:
            return "Accountant(no events)"
        parts = ", ".join(f"{n} x {event}" for event, n in self.entries)
        return f"Accountant({parts}; pure ε = {self.pure_epsilon:.6g}, ρ = {self.rho:.6g})"


@dataclass(frozen=True)
class DeltaExplanation:
    """Every method's delta at one epsilon."""

    epsilon: float
    conversions: tuple[Conversion, ...]

    @property
    def best(self) -> Conversion:
        """The smallest delta."""
        return min(self.conversions, key=lambda c: c.delta)

    @property
    def best_delta(self) -> float:
        """The reported delta."""
        return self.best.delta


@functools.lru_cache(maxsize=4096)
def memos_of(event: PrivacyEvent) -> frozenset[str]:
    """Every memo an event's record names (nested events too: a sampled collection's columns,
    a shuffled release's local reports)."""
    found: set[str] = set()
    stack: list[Any] = [event.to_dict()]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            memo = item.get("memo")
            if isinstance(memo, str):
                found.add(memo)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return frozenset(found)


def _unshuffle_shared_memos(counts: dict[PrivacyEvent, int]) -> dict[PrivacyEvent, int]:
    """A shuffled release whose reports share memoized permanent responses with another use
    (a second shuffled release, or a local one) is not independent of it: its reports are
    counted as the local ones they are (shuffling is post-processing), which fold with the
    others sharing the memo. Shuffle bounds compose releases of independent randomness only,
    and a person's permanent response links them (for two people, two shuffled releases
    sharing it lose more than two with fresh ones)."""
    if not any(event.central for event in counts):
        return counts
    named = {event: memos_of(event) for event in counts}
    uses: dict[str, int] = {}
    for event, n in counts.items():
        for memo in named[event]:
            uses[memo] = uses.get(memo, 0) + n
    shared = {memo for memo, n in uses.items() if n > 1}

    def linked(event: PrivacyEvent) -> bool:
        return event.central and bool(named[event] & shared)

    if not any(linked(event) for event in counts):
        return counts
    out: dict[PrivacyEvent, int] = {}
    for event, n in counts.items():
        if linked(event):
            local = getattr(event, "local", None)
            if not isinstance(local, PrivacyEvent):
                raise ParameterError(
                    f"a shuffled release shares the memo {sorted(named[event] & shared)} with "
                    "another use but does not name its local reports: it cannot be counted"
                )
            event, uses_of = local.unit()
            n *= uses_of
        out[event] = out.get(event, 0) + n
    return out


def _entries_of(item: PrivacyEvent | Accounted | Accountant) -> Iterable[tuple[PrivacyEvent, int]]:
    """The ``(event, count)`` entries an item stands for."""
    if isinstance(item, PrivacyEvent):
        return [(item, 1)]
    if isinstance(item, Accountant):
        return item.entries
    if isinstance(item, Accounted) and isinstance(item.accountant, Accountant):
        return item.accountant.entries
    raise ParameterError(
        "compose expects a PrivacyEvent, a PrivacyGuarantee or an Accountant, "
        f"got {type(item).__name__}"
    )


def _pld_detail(
    pld: PrivacyLossDistribution, delta: float | None = None, epsilon: float | None = None
) -> str:
    """How a loss distribution was computed; at a ``delta``, how far above the exact
    composition of its parts its ``epsilon`` can be (:meth:`~PrivacyLossDistribution.
    epsilon_lower`: the rounding of the losses, and the float error and truncated tails of the
    masses, which dominate at small deltas)."""
    notes = []
    if pld.rounding:
        if delta is not None and epsilon is not None and math.isfinite(epsilon):
            gap = max(epsilon - pld.epsilon_lower(delta, epsilon), 0.0)
            notes.append(
                f"losses rounded up to a lattice of {pld.grid:.3g}: at most {gap:.3g} above "
                "the exact composition at this δ"
            )
        else:
            notes.append(
                f"losses rounded up to a lattice of {pld.grid:.3g}: at most "
                f"{pld.rounding:.3g} higher than the exact composition's"
            )
    elif pld.grid > EXACT_GRID:
        notes.append(f"losses rounded up to a grid of {pld.grid:.3g}")
    if not pld.exact:
        notes.append(
            "some events bounded through a dominating pair (randomized response or a shuffle pair)"
        )
    return "; ".join(notes) if notes else "exact (Kairouz–Oh–Viswanath)"
