"""Privacy guarantees: what one privatized report (or one release) costs.

Two models: ``"local"`` (the default) states what each person's report reveals on its own;
``"shuffle"`` states what the *anonymized, shuffled* collection of ``n`` reports reveals about
one person (central differential privacy of the shuffler's output, see
:mod:`frameldp.accounting.amplification` and the Balcer–Cheu protocols). A shuffle-model
guarantee may have no pure epsilon (``inf``); its ``epsilon_at(delta)`` is what matters.

A :class:`PrivacyGuarantee` is an immutable record emitted by every mechanism
(``mechanism.privacy``) and carried by every frequency table (``table.privacy``) and privatized
frame (``frame.ldp.privacy``). It states the pure local epsilon of the probabilities the sampler
*actually realized* (rounded up), names the mechanism and its parameters, and holds the privacy
events it consists of, from which it answers every other question exactly:
``rdp(order)``, ``rho``, ``epsilon_at(delta)``, ``delta_at(epsilon)`` and ``explain(delta)``
(see :class:`~frameldp.accounting.Accountant`).

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

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from frameldp.accounting.accountant import Accountant, Explanation, memos_of
from frameldp.accounting.events import PrivacyEvent, PureDP, SampledEvent, ShuffleEvent
from frameldp.accounting.risk import (
    RISK_DELTA,
    RISK_FPRS,
    RISK_PRIORS,
    Risk,
    check_probability,
)
from frameldp.accounting.rounding import sum_up
from frameldp.errors import FrameLDPError, ParameterError, shown

__all__ = [
    "INSECURE",
    "MODELS",
    "Model",
    "PrivacyGuarantee",
    "compose",
    "per_person",
    "sampled",
]

INSECURE = "INSECURE: seeded noise, anyone who knows the seed can remove it"
"""How a seeded run is marked in guarantees, files, ledgers and the command line."""

Model = Literal["local", "shuffle"]
MODELS: tuple[Model, ...] = ("local", "shuffle")


@dataclass(frozen=True)
class PrivacyGuarantee:
    """A local privacy guarantee: pure epsilon plus the events that give its exact curves.

    Attributes
    ----------
    epsilon
        Pure (local) epsilon, rounded up.
    mechanism
        Name of the mechanism (``"rappor"``, ``"randomized_response"``, ``"composition"``).
    parameters
        The parameters that determine the privacy loss (as realized, not as requested).
    parts
        For a composition, the guarantees it composes.
    events
        ``(event, count)`` pairs whose composition this guarantee is; by default one
        :class:`~frameldp.accounting.PureDP` event at ``epsilon``.
    model
        ``"local"`` (each report) or ``"shuffle"`` (the shuffled collection of reports).
    seeded
        True when the reports were drawn from an integer ``seed=``: the noise is reproducible
        by anyone who knows the seed, so the guarantee holds only against those who do not.
        Shown as ``INSECURE`` wherever the guarantee is printed or recorded.

    >>> import frameldp
    >>> g = frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy
    >>> round(g.rho, 6)   # eps tanh(eps / 2), Steinke's tight bound, for binary RR
    0.462117
    >>> round(frameldp.Accountant().compose(g, count=100).epsilon(1e-6), 2)
    83.53
    """

    epsilon: float
    mechanism: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    parts: tuple[PrivacyGuarantee, ...] = ()
    events: tuple[tuple[PrivacyEvent, int], ...] = ()
    model: Model = "local"
    seeded: bool = False

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ParameterError(f"model must be one of {MODELS}, got {shown(self.model)}")
        finite = math.isfinite(self.epsilon) or self.model != "local"
        if not (self.epsilon >= 0 and finite):
            raise ParameterError(f"epsilon must be finite and >= 0, got {shown(self.epsilon)}")
        if not self.events:
            object.__setattr__(self, "events", ((PureDP(self.epsilon), 1),))

    @property
    def delta(self) -> float:
        """Delta of the pure ``epsilon``: exactly 0 (it is ``inf`` when there is none)."""
        return 0.0

    @property
    def shuffled(self) -> bool:
        """True for a shuffle-model (central) guarantee."""
        return self.model == "shuffle"

    @property
    def epsilon_infinity(self) -> float | None:
        """Longitudinal bound: pure epsilon of any number of reports of unchanged values.

        Defined when every event has one (Bloom RAPPOR's ``2h ln((1 - f/2) / (f/2))``, which
        holds for reports sharing memoized permanent responses); None otherwise.
        """
        bounds: list[tuple[float, int]] = []
        for event, count in self.events:
            # Memoized uses fold into one event; others are independent permanent responses.
            use, uses = event.repeated(count)
            bound = use.epsilon_infinity
            if bound is None:
                return None
            bounds.append((float(bound), uses))
        return sum_up(bounds)

    @cached_property
    def accountant(self) -> Accountant:
        """An :class:`~frameldp.accounting.Accountant` holding this guarantee's events."""
        return Accountant(self.events)

    def rdp(self, order: float) -> float:
        """Exact Rényi DP curve at ``order > 1`` (padded up)."""
        return self.accountant.rdp(order)

    @property
    def rho(self) -> float:
        """Tight zCDP rho."""
        return self.accountant.rho

    def epsilon_at(self, delta: float) -> float:
        """Tightest epsilon at ``delta`` over every valid conversion (see :meth:`explain`)."""
        return self.accountant.epsilon(delta)

    def delta_at(self, epsilon: float) -> float:
        """Tightest delta at ``epsilon`` over every valid conversion."""
        return self.accountant.delta(epsilon)

    def explain(self, delta: float) -> Explanation:
        """Every method's epsilon at ``delta`` and which one is reported (a seeded guarantee's
        says so beside what it means for a person)."""
        explanation = self.accountant.explain(delta)
        return dataclasses.replace(explanation, warning=INSECURE) if self.seeded else explanation

    # ------------------------------------------------------------------ what an attacker learns

    def true_positive_rate(self, fpr: float) -> float:
        """The largest power of any test of "this person's value is x, not x'" whose
        false-positive rate is ``fpr``, from the exact privacy profile
        (:mod:`~frameldp.accounting.risk`; Dong, Roth and Su 2022, Prop. 2.12).

        >>> import frameldp
        >>> g = frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy
        >>> round(g.true_positive_rate(0.05), 4)   # e^1 * 0.05
        0.1359
        """
        return self.accountant.profile.true_positive_rate(fpr)

    def posterior(self, prior: float, delta: float | None = None) -> float:
        """The largest probability an attacker who gave ``prior`` to a fact about one person
        (their value is x) reaches after seeing every report, except on reports of probability
        at most ``delta`` (default: the guarantee's delta, else 1e-6; 0 asks for the pure
        epsilon's bound). Never above the pure epsilon's bound.

        >>> import frameldp
        >>> g = frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy
        >>> round(g.posterior(0.01), 4)   # 0.01 e / (0.01 e + 0.99)
        0.0267
        """
        prior = check_probability("posterior", "prior", prior)
        return self.accountant.profile.posterior(prior, self._risk_delta(delta))

    def gdp_mu(self) -> float | None:
        """The smallest ``mu`` for which the guarantee certifies mu-Gaussian DP (Dong, Roth
        and Su 2022, Cor. 2.13), or None where none applies (no pure epsilon).

        >>> import frameldp
        >>> round(frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy.gdp_mu(), 3)
        1.232
        """
        return self.accountant.profile.gdp_mu()

    def risk(
        self,
        priors: Iterable[float] = RISK_PRIORS,
        fprs: Iterable[float] = RISK_FPRS,
        delta: float | None = None,
    ) -> Risk:
        """What an attacker can learn about one person, as a small table: the posterior from
        each of ``priors``, the power of a test at each false-positive rate of ``fprs``, and
        the Gaussian-DP ``mu``.

        >>> import frameldp
        >>> print(frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy.risk())
        What an attacker can learn about one person:
          believed a person's value  0.1% -> at most 0.28%
          believed a person's value    1% -> at most 2.7%
          believed a person's value   10% -> at most 23.2%
          believed a person's value   50% -> at most 73.2%
          a test for a value, wrongly flagging people without it, finds of those with it:
            wrongly flagging  0.1% -> at most 0.28%
            wrongly flagging    1% -> at most 2.8%
            wrongly flagging    5% -> at most 13.6%
          Gaussian DP: mu = 1.232
        """
        profile = self.accountant.profile
        used = profile.failure_probability(self._risk_delta(delta))
        priors, fprs = _probabilities("priors", priors), _probabilities("fprs", fprs)
        return Risk(
            tuple(
                (p, profile.posterior(check_probability("risk", "prior", p), used)) for p in priors
            ),
            tuple((a, profile.true_positive_rate(a)) for a in fprs),
            profile.gdp_mu(),
            used,
            INSECURE if self.seeded else "",
        )

    def risk_sentence(self, prior: float = 0.01) -> str:
        """The posterior from ``prior`` in words, as table captions show it.

        >>> import frameldp
        >>> frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy.risk_sentence()
        "an attacker who gave 1% to a person's value reaches at most 2.7%"
        """
        prior = check_probability("risk_sentence", "prior", prior)
        text = self.accountant.profile.headline(prior, self._risk_delta(None))
        return f"{text} [{INSECURE}]" if self.seeded else text

    def _risk_delta(self, delta: float | None) -> float:
        if delta is None:
            return float(self.parameters.get("delta", RISK_DELTA))
        if delta == 0 and not isinstance(delta, bool):
            return 0.0
        return check_probability("posterior", "delta", delta)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable description (:meth:`from_dict` rebuilds it)."""
        out: dict[str, Any] = {
            # JSON has no infinity: null when there is no pure epsilon.
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else None,
            "model": self.model,
            "delta": self.delta,
            "rho": self.rho,
            "mechanism": self.mechanism,
            "parameters": dict(self.parameters),
            "events": self.accountant.to_dict()["events"],
        }
        if self.seeded:
            out["seeded"] = True
            out["warning"] = INSECURE
        if self.parts:
            out["parts"] = [part.to_dict() for part in self.parts]
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PrivacyGuarantee:
        """Rebuild from :meth:`to_dict` (anything else, unknown event kinds included, raises a
        ParameterError)."""
        try:
            epsilon = data["epsilon"]
            parts = tuple(cls.from_dict(part) for part in data.get("parts", []))
            return cls(
                math.inf if epsilon is None else float(epsilon),
                str(data["mechanism"]),
                dict(data.get("parameters", {})),
                parts,
                _with_local_memos(
                    Accountant.from_dict(data).entries, parts, data["mechanism"] == "shuffled"
                ),
                str(data.get("model", "local")),  # type: ignore[arg-type]
                bool(data.get("seeded", False)),
            )
        except FrameLDPError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ParameterError(
                f"not a frameldp privacy guarantee ({type(error).__name__}: "
                f"{shown(str(error))}): {shown(data)}"
            ) from None

    @classmethod
    def from_json(cls, text: str) -> PrivacyGuarantee:
        """Rebuild from :meth:`to_json` (anything else raises a ParameterError)."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError, RecursionError) as error:
            raise ParameterError(
                f"not a frameldp privacy guarantee ({type(error).__name__}): {shown(text)}"
            ) from None
        try:
            return cls.from_dict(data)
        except (OverflowError, RecursionError) as error:
            raise ParameterError(
                f"not a frameldp privacy guarantee ({type(error).__name__}): {shown(text)}"
            ) from None

    def insecure(self) -> PrivacyGuarantee:
        """This guarantee, marked as drawn from a seed (see ``seeded``)."""
        return dataclasses.replace(self, parts=tuple(p.insecure() for p in self.parts), seeded=True)

    def __str__(self) -> str:
        text = self._describe()
        return f"{text} [{INSECURE}]" if self.seeded else text

    def _describe(self) -> str:
        if self.shuffled:
            delta = float(self.parameters.get("delta", 1e-6))
            shown = ", ".join(
                f"{k}={_shown(v)}" for k, v in self.parameters.items() if k != "delta"
            )
            return (
                f"central ε = {self.epsilon_at(delta):.6g} at δ = {delta:.3g}, shuffle model "
                f"({self.mechanism}: {shown})"
            )
        if self.parts:
            names = ", ".join(f"{p.mechanism} ε={p.epsilon:.6g}" for p in self.parts)
            how = "one at random of" if self.mechanism == "sampled" else "composition of"
            return f"ε = {self.epsilon:.6g}-LDP, ρ = {self.rho:.6g} ({how} {names})"
        shown = ", ".join(f"{k}={_shown(v)}" for k, v in self.parameters.items())
        return f"ε = {self.epsilon:.6g}-LDP, ρ = {self.rho:.6g} ({self.mechanism}: {shown})"


def _probabilities(name: str, values: Any) -> tuple[float, ...]:
    """A non-empty sequence of probabilities for :meth:`PrivacyGuarantee.risk`."""
    try:
        given = tuple(values)
    except TypeError:
        raise ParameterError(
            f"risk: {name} must be a sequence of numbers in (0, 1), got {shown(values)}"
        ) from None
    if not given:
        raise ParameterError(f"risk: {name} must hold at least one probability")
    return given


def _shown(value: Any) -> Any:
    """A parameter as a description shows it: floats (probabilities, realized epsilons) to 3
    significant digits; the guarantee keeps them exact."""
    return f"{value:.3g}" if isinstance(value, float) else value


def _with_local_memos(
    events: tuple[tuple[PrivacyEvent, int], ...],
    parts: tuple[PrivacyGuarantee, ...],
    shuffled: bool,
) -> tuple[tuple[PrivacyEvent, int], ...]:
    """Shuffled releases recorded before frameldp kept their memoized local reports (a
    ``ShuffleEvent`` without ``local``) hide a memo that later releases may share: their parts
    still name it. A release of one memoized report gets it back as its ``local``; any other
    shape is counted as its local reports (never below them). Other records are unchanged."""
    if not any(isinstance(event, ShuffleEvent) and event.local is None for event, _ in events):
        return events
    if not any(memos_of(event) for part in parts for event, _ in part.events):
        return events
    if not shuffled:  # a composition: its events are its parts', now recovered
        return Accountant.of((part, 1) for part in parts).entries
    [(event, count)] = events
    local_events = parts[0].events if len(parts) == 1 else ()
    if isinstance(event, ShuffleEvent) and len(local_events) == 1 and local_events[0][1] == 1:
        try:
            return ((dataclasses.replace(event, local=local_events[0][0]), count),)
        except ParameterError:
            pass
    return Accountant.of((part, count) for part in parts).entries


def compose(guarantees: Iterable[PrivacyGuarantee]) -> PrivacyGuarantee:
    """One report per guarantee about the same person.

    The pure epsilon is the basic composition (the exact sum, rounded up to a float); the events
    of all parts are kept, so ``epsilon_at``, ``rdp`` and ``rho`` of the result use the tightest
    composition. Composing with a shuffle-model guarantee gives a shuffle-model guarantee (what
    the analyst of the shuffled reports learns).
    """
    parts = tuple(guarantees)
    if not parts:
        raise ParameterError("compose needs at least one guarantee")
    if len(parts) == 1:
        return parts[0]
    accountant = Accountant.of((part, 1) for part in parts)
    # Parts sharing a memo are not independent: their reports' pure loss is the accountant's
    # (folded under the memo), which can exceed the sum of the parts' epsilons.
    total = max(sum_up((p.epsilon, 1) for p in parts), accountant.pure_epsilon)
    model: Model = "shuffle" if any(p.shuffled for p in parts) else "local"
    seeded = any(p.seeded for p in parts)
    return PrivacyGuarantee(
        total, "composition", {"method": "basic"}, parts, accountant.entries, model, seeded
    )


def sampled(guarantees: Iterable[PrivacyGuarantee]) -> PrivacyGuarantee:
    """One report of one of these guarantees' columns, chosen uniformly at random and shown
    (``collect="sample"``): a :class:`~frameldp.accounting.SampledEvent` whose pure epsilon is
    the largest of theirs."""
    parts = tuple(guarantees)
    if any(part.shuffled for part in parts):
        raise ParameterError("a shuffled release cannot be one column of a sampled collection")
    event = SampledEvent([part.events for part in parts])
    parts = tuple(  # a memoized column is charged its instantaneous response per report
        part
        if charged <= part.epsilon
        else dataclasses.replace(part, epsilon=charged, mechanism=f"{part.mechanism} memoized")
        for part, charged in zip(parts, event.column_epsilons, strict=True)
    )
    return PrivacyGuarantee(
        event.pure_epsilon,
        "sampled",
        {"columns": len(parts)},
        parts,
        ((event, 1),),
        "local",
        any(part.seeded for part in parts),
    )


def per_person(guarantee: PrivacyGuarantee, rows: int) -> PrivacyGuarantee:
    """What one person loses who holds ``rows`` reports, each under ``guarantee``.

    Reports with independent noise compose ``rows`` times. Reports that share memoized
    permanent responses fold into one :class:`~frameldp.accounting.MemoizedEvent` of ``rows``
    reports, whose bound holds whatever the person's values (its module docstring): RAPPOR's
    ``epsilon_infinity`` bounds only the reports of one unchanged value, not a person's.
    """
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ParameterError(f"rows per person must be an integer >= 1, got {shown(rows)}")
    if rows == 1:
        return guarantee
    events: list[tuple[PrivacyEvent, int]] = []
    for event, count in guarantee.events:
        events.append(event.repeated(count * rows))
    epsilon = sum_up((event.pure_epsilon, uses) for event, uses in events)
    parameters = {**guarantee.parameters, "rows_per_user": rows}
    return dataclasses.replace(
        guarantee, epsilon=epsilon, parameters=parameters, parts=(), events=tuple(events)
    )
