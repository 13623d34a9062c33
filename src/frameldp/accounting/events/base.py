"""The event protocol: what every privacy event answers, the registry that rebuilds events
from their dicts, and the argument checks they share (see the package docstring).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from frameldp.accounting.blanket import Blanket
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.arguments import check_count, check_order, check_positive
from frameldp.errors import ParameterError, shown

__all__ = ["PrivacyEvent", "check_count", "check_order", "check_positive", "event_from_dict"]


_REGISTRY: dict[str, type[PrivacyEvent]] = {}


class PrivacyEvent(ABC):
    """One use of a mechanism on one person's data (immutable, hashable, serializable)."""

    kind: ClassVar[str]
    renamed_parameters: ClassVar[Mapping[str, str]] = {}
    """``{earlier name: name}`` of parameters renamed since a release that stored them: they
    are stored under the earlier name still (a ledger may be shared by processes running
    different releases), and read under either."""

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

    def blankets(self) -> tuple[Blanket, ...]:
        """The privacy blanket of one report for each kind of pair of values, when the
        mechanism is a set randomizer (:mod:`frameldp.accounting.blanket`); empty otherwise.
        Shuffled reports use it for the blanket bound (the clone bound holds for every
        mechanism)."""
        return ()

    central: ClassVar[bool] = False
    """Whether the event is a shuffled (central) release, whose guarantee at a ``delta`` is
    :meth:`central_epsilon` rather than what its local reports give."""

    def central_epsilon(self, delta: float) -> float:
        """Central epsilon at ``delta`` of one use (only for ``central`` events)."""
        raise NotImplementedError(f"{self.kind} is not a central (shuffled) release")

    def central_delta(self, epsilon: float) -> float:
        """Central delta at ``epsilon`` of one use (only for ``central`` events)."""
        raise NotImplementedError(f"{self.kind} is not a central (shuffled) release")

    def profile_delta(self, epsilon: float) -> float:
        """A valid central delta at ``epsilon`` of one use, for curves evaluated at many
        epsilons (risk readings): :meth:`central_delta` unless the event has a cheaper one."""
        return self.central_delta(epsilon)

    @property
    def central_is_tightest(self) -> bool:
        """Whether one use alone is accounted at least as tightly by :meth:`central_epsilon`
        as by its privacy-loss distribution (which the accountant then skips)."""
        return False

    @property
    def central_detail(self) -> str:
        """How :meth:`central_epsilon` is computed (shown by the accountant)."""
        return ""

    def central_method(self, delta: float) -> tuple[float, str]:
        """:meth:`central_epsilon` at ``delta`` and how it was computed."""
        return self.central_epsilon(delta), self.central_detail

    def central_delta_method(self, epsilon: float) -> tuple[float, str]:
        """:meth:`central_delta` at ``epsilon`` and how it was computed."""
        return self.central_delta(epsilon), self.central_detail

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
        """``{"kind": ..., **parameters}`` (renamed parameters under their earlier, stored
        name); :func:`event_from_dict` rebuilds the event."""
        stored = {new: old for old, new in self.renamed_parameters.items()}
        return {"kind": self.kind, **{stored.get(k, k): v for k, v in self.parameters().items()}}

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
    # Parameters stored under an earlier name (a ledger or file written by an earlier release).
    renamed = cls.renamed_parameters
    arguments = {renamed.get(k, k): v for k, v in data.items() if k != "kind"}
    if len(arguments) < len(data) - 1:
        raise ParameterError(f"privacy event {kind!r}: a parameter given twice in {shown(data)}")
    try:
        return cls(**arguments)
    except TypeError as error:
        raise ParameterError(f"privacy event {kind!r}: bad parameters {arguments!r}") from error
