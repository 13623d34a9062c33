"""Privacy guarantees: what one privatized report (or one release) costs.

A :class:`PrivacyGuarantee` is an immutable record emitted by every mechanism
(``mechanism.privacy``) and carried by every frequency table (``table.privacy``). It states the
pure local epsilon of the probabilities the sampler *actually realized* (rounded up), names the
mechanism and its parameters, and composes with other guarantees.

Local differential privacy: a randomizer ``R`` is epsilon-LDP if for all inputs ``x, x'`` and
outputs ``y``, ``P[R(x) = y] <= e^epsilon P[R(x') = y]``. One report per person and column;
several columns of the same rows compose (:func:`compose`).

References
----------
.. [1] S. Kasiviswanathan et al., "What Can We Learn Privately?", SIAM J. Comput. 40(3), 2011.
.. [2] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
   Thm. 3.16 (basic composition).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from frameldp.accounting._rounding import round_up

__all__ = ["PrivacyGuarantee", "compose"]


@dataclass(frozen=True)
class PrivacyGuarantee:
    """A pure epsilon-LDP guarantee.

    Attributes
    ----------
    epsilon
        Pure (local) epsilon, rounded up; ``delta`` is 0.
    mechanism
        Name of the mechanism (``"rappor"``, ``"randomized_response"``, ``"composition"``).
    parameters
        The parameters that determine the privacy loss (as realized, not as requested).
    parts
        For a composition, the guarantees it composes.
    """

    epsilon: float
    mechanism: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    parts: tuple[PrivacyGuarantee, ...] = ()

    def __post_init__(self) -> None:
        if not (self.epsilon >= 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"epsilon must be finite and >= 0, got {self.epsilon!r}")

    @property
    def delta(self) -> float:
        """Pure LDP: delta is exactly 0."""
        return 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable description."""
        out: dict[str, Any] = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "mechanism": self.mechanism,
            "parameters": dict(self.parameters),
        }
        if self.parts:
            out["parts"] = [part.to_dict() for part in self.parts]
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def __str__(self) -> str:
        if self.parts:
            names = ", ".join(f"{p.mechanism} ε={p.epsilon:.6g}" for p in self.parts)
            return f"ε = {self.epsilon:.6g}-LDP (basic composition of {names})"
        shown = ", ".join(f"{k}={v}" for k, v in self.parameters.items())
        return f"ε = {self.epsilon:.6g}-LDP ({self.mechanism}: {shown})"


def compose(guarantees: Iterable[PrivacyGuarantee]) -> PrivacyGuarantee:
    """Basic composition: one report per guarantee about the same person costs the sum.

    The sum is rounded up so that it is never below the exact sum of the parts.
    """
    parts = tuple(guarantees)
    if not parts:
        raise ValueError("compose needs at least one guarantee")
    if len(parts) == 1:
        return parts[0]
    total = math.fsum(p.epsilon for p in parts)
    return PrivacyGuarantee(round_up(total), "composition", {"method": "basic"}, parts)
