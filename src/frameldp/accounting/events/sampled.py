"""One column of several, chosen at random for each person: the event of a sampled collection.

Under ``collect="sample"`` each person reports one column ``j`` of ``d``, chosen uniformly and
independently of the data, through column ``j``'s mechanism; which column it was is visible (the
others are null). This is the "sample" strategy of Wang et al. [1]_ (Sec. IV) and Arcolezi et
al.'s "Smp" [2]_. Two people's rows may differ in every column, so the worst pair of output laws
is the disjoint union of the columns' worst pairs, each with weight ``1/d``:

* pure epsilon: ``max_j eps_j``;
* Rényi divergence: ``exp((a - 1) D_a) = (1/d) sum_j exp((a - 1) D_a,j)``, each column's
  ``D_a,j`` the composition of the events it holds;
* zCDP: ``sup_a D_a / a`` of that curve, at most the largest column's ``rho``;
* privacy-loss distribution: the mixture of the columns' distributions, weights ``1/d``
  (:meth:`~frameldp.accounting.pld.PrivacyLossDistribution.mixture`).

Each is exact when the columns' own curves are.

A memoized column (:class:`~frameldp.accounting.MemoizedEvent`: a permanent response per
(person, value), then a fresh instantaneous one per report) shares its permanent responses with
the person's reports of other rows and nights, which the ledger composes with this event rather
than folding into it. So each of its reports counts here as one use of its instantaneous
response (:meth:`~frameldp.accounting.MemoizedEvent.unfolded`), a bound whatever the other
reports: given the worst pair of permanent responses, every report of every night is an
independent mixture of the columns' instantaneous responses. Counting a night's report at its
end-to-end ``epsilon_1`` would understate two nights (L-GRR, k = 4, ``epsilon_1 = 1``,
``epsilon_inf = 4``: 2.0225 > 2, enumerated in ``tests/accounting/test_sampled_event.py``).

Filling the unsampled columns with fake reports drawn from a public law ("RS+FD" [2]_)
post-processes these reports (draw the fakes, forget ``j``),
so it loses no more than this event states. It does not lose less about a person: with every
column at ``eps'``, the rows ``x = (a, a, ...)`` and ``x' = (b, b, ...)`` and the output that
reports ``a`` in every column have likelihood ratio exactly ``e^eps'`` (the ratio of sums of the
columns' ratios ``p / q``), so the amplified ``eps = ln(1 + (e^eps' - 1) / d)`` of [2]_ (Thm. 1)
holds for one column changed, not for a person (``tests/accounting/test_sampled_event.py``
enumerates it).

References
----------
.. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin, G. Yu, "Collecting and
   Analyzing Multidimensional Data with Local Differential Privacy", ICDE 2019.
.. [2] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao, "Random Sampling Plus Fake Data:
   Multidimensional Frequency Estimates With Local Differential Privacy", CIKM 2021.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from frameldp._scipy import special
from frameldp.accounting.events.base import (
    PrivacyEvent,
    check_count,
    check_order,
    event_from_dict,
)
from frameldp.accounting.events.curves import sup_over_orders
from frameldp.accounting.events.memoized import MemoizedEvent
from frameldp.accounting.lattice import compose_all
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.rounding import pad_up, sum_up
from frameldp.errors import ParameterError, shown

__all__ = ["SampledEvent"]

_NEAR_ONE = 1e-6
Component = tuple[tuple[PrivacyEvent, int], ...]
"""One column's events: ``(event, count)`` pairs whose composition it is."""


@dataclass(frozen=True, init=False)
class SampledEvent(PrivacyEvent):
    """One of ``d`` columns, chosen uniformly at random and shown, reported through its events.

    ``components[j]`` holds column ``j``'s ``(event, count)`` pairs. Privacy: see the module
    docstring (exact when every column's curves are).
    """

    components: tuple[Component, ...]
    _uses: tuple[Component, ...] = field(init=False, repr=False, compare=False)
    kind: ClassVar[str] = "sampled"

    def __init__(self, components: Iterable[Iterable[Any]]) -> None:
        owner = "sampled event"
        parts = tuple(tuple(_entry(owner, entry) for entry in part) for part in components)
        if len(parts) < 2 or any(not part for part in parts):
            raise ParameterError(
                f"{owner}: components must be two or more columns, each with events, got "
                f"{shown(components)}"
            )
        for part in parts:
            for event, _ in part:
                memoized = isinstance(event, MemoizedEvent)
                if event.central or (event.epsilon_infinity is not None and not memoized):
                    raise ParameterError(
                        f"{owner}: a column of {event.kind} events (shuffled, or Bloom RAPPOR's "
                        "memoized reports) cannot be sampled: its reports are not one "
                        "independent use per person"
                    )
        object.__setattr__(self, "components", parts)
        object.__setattr__(self, "_uses", tuple(_independent(part) for part in parts))

    @property
    def columns(self) -> int:
        """``d``: the columns one of which each person reports."""
        return len(self.components)

    @property
    def column_epsilons(self) -> tuple[float, ...]:
        """Each column's pure epsilon as charged here (a memoized column's reports each at
        their instantaneous response's: :func:`_independent`)."""
        return tuple(sum_up((e.pure_epsilon, n) for e, n in part) for part in self._uses)

    @property
    def pure_epsilon(self) -> float:
        """The largest column's pure epsilon."""
        return max(self.column_epsilons)

    def _curve(self, order: float) -> float:
        """The mixture's Rényi divergence at ``order`` (unpadded)."""
        curves = [math.fsum(e.rdp(order) * n for e, n in part) for part in self._uses]
        if math.isinf(order):
            return max(curves)
        scaled = [(order - 1.0) * curve for curve in curves]
        return float(special.logsumexp(scaled) - math.log(self.columns)) / (order - 1.0)

    def rdp(self, order: float) -> float:
        """``(1 / (a - 1)) ln((1/d) sum_j exp((a - 1) D_a,j))``, padded up."""
        return pad_up(self._curve(check_order("rdp", "order", order)))

    @property
    def rho(self) -> float:
        """``sup_a D_a / a`` of the mixture's curve, at most the largest column's rho."""
        largest = max(math.fsum(e.rho * n for e, n in part) for part in self._uses)
        # Rényi divergences grow with the order, so D at 1 + 1e-6 is above the limit at 1 (the
        # KL divergence, often the supremum here) by far more than the float error of either.
        near_one = self._curve(1.0 + _NEAR_ONE)
        return min(sup_over_orders(self._curve, pad_up(near_one, 1e-9)), pad_up(largest))

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """The mixture of the columns' composed loss distributions, ``count`` times."""
        parts = [compose_all([e.privacy_loss(n) for e, n in part]) for part in self._uses]
        mixed = PrivacyLossDistribution.mixture([p for p in parts if p is not None])
        return mixed.power(check_count("privacy_loss", "count", count, 1))

    def parameters(self) -> dict[str, Any]:
        """``components``: per column, its events with their counts."""
        return {
            "components": [
                [{"event": event.to_dict(), "count": n} for event, n in part]
                for part in self.components
            ]
        }


def _independent(part: Component) -> Component:
    """A column's entries as independent uses: a memoized event's reports each bound on
    their own (:meth:`~frameldp.accounting.MemoizedEvent.unfolded`), since the person's
    other reports of those permanent responses (other rows, other nights) are composed with
    this event, not folded into it."""
    uses: list[tuple[PrivacyEvent, int]] = []
    for event, count in part:
        if isinstance(event, MemoizedEvent):
            bounding, n = event.unfolded()
            uses.append((bounding, n * count))
        else:
            uses.append((event, count))
    return tuple(uses)


def _entry(owner: str, entry: Any) -> tuple[PrivacyEvent, int]:
    """``(event, count)`` from a pair or from its stored form ``{"event": ..., "count": ...}``."""
    if isinstance(entry, Mapping) and set(entry) == {"event", "count"}:
        event, count = event_from_dict(entry["event"]), entry["count"]
    elif isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], PrivacyEvent):
        event, count = entry
    else:
        raise ParameterError(f"{owner}: a column's entry is (event, count), got {shown(entry)}")
    return event, check_count(owner, "count", count, 1)
