"""The automatic choice of a frequency oracle: the smallest exact estimator variance.

Every frequency oracle (:data:`~.protocol.Capability.FREQUENCY_ORACLE`) debiases support counts:
bucket ``j`` is supported by a report of ``j`` with probability ``p`` and by any other report
with ``q``, so the debiased count has variance
``(c_j p (1 - p) + (n - c_j) q (1 - q)) / (p - q)^2``. Summed over the ``k`` buckets the true
counts drop out (they sum to ``n``)::

    mean variance = n (p (1 - p) + (k - 1) q (1 - q)) / (k (p - q)^2)

which is exact for every distribution of the values: the expected squared L2 error of the
table divided by ``k``. The choice builds every registered frequency oracle at ``epsilon`` over
the domain (each at its own variance-optimal settings: the hash range of local hashing, the
subset size of subset selection), computes that variance from the probabilities each one
*realizes*, and takes the smallest, the shorter report (then the cheaper) breaking ties. A
mechanism added to
``core/mechanisms`` with the capability joins the candidates with no change here.

Costs. The smallest variance is not worth any price: at ``k = 16384`` a unary report is 2 KB
and takes 10 to 20 us to draw, where projective geometry response's (15 bits) or local
hashing's takes under 1 us for a variance within a few percent. Each oracle estimates its CPU
time per report (client and server, :meth:`~.protocol.FrequencyOracle.costs`, a model fitted
to the benchmarks), and by default the choice is the smallest
variance among the candidates whose client and server each stay within ``max_slowdown`` (20)
times the fastest client's and server's, or under 5 us a report (or a second for the whole
release), and whose reports fit ``max_report_bytes`` (4096). ``prefer="speed"`` takes the
fastest of those within twice the smallest variance, ``prefer="size"`` the shortest report
within it; ``explain()`` shows every candidate's costs and why one was set aside.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
   Frequency Estimation", USENIX Security 2017 (Sec. 5: k-RR wins for ``k < 3 e^epsilon + 2``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from frameldp.arguments import check_epsilon
from frameldp.core.encoding import Domain
from frameldp.core.estimation import mean_direct_variance
from frameldp.core.mechanisms._longitudinal import check_epsilon_infinity
from frameldp.core.mechanisms.numeric_choice import compare_mean_mechanisms
from frameldp.core.mechanisms.protocol import Capability, FrequencyOracle, OracleCosts
from frameldp.core.mechanisms.registry import mechanism_class, mechanism_names
from frameldp.errors import FrameLDPError, ParameterError, shown

__all__ = [
    "Candidate",
    "MechanismComparison",
    "choose_mechanism",
    "compare_mechanisms",
    "mean_variance",
    "mechanism_settings",
]

# Two variances this close (relative) are a tie: the shorter report wins.
_TIE = 1e-12
# Client or server CPU per report below which no candidate is set aside for its speed (5 us:
# five seconds a million reports), and a release's total below which none is (one second: a
# server's fixed cost spread over few reports is still fast).
_FAST_ENOUGH_NS = 5_000.0
_FAST_ENOUGH_RELEASE_NS = 1e9
# prefer="speed" and "size" choose among the candidates within this factor of the smallest
# eligible variance: a shorter or faster report is not worth a table many times noisier.
_VARIANCE_SLACK = 2.0
# Reports assumed where n is not given (the server's fixed costs are spread over them).
_DEFAULT_N = 1_000_000
_PREFERENCES = ("variance", "speed", "size")
_DEFAULTS: tuple[str, float, int] = ("variance", 20.0, 4096)
"""``choose_mechanism``'s ``prefer``, ``max_slowdown`` and ``max_report_bytes``."""


def mean_variance(mechanism: FrequencyOracle, k: int, n: int = 1) -> float:
    """The exact variance of a debiased count averaged over the ``k`` buckets, for ``n``
    reports (module docstring)."""
    p, q = mechanism.support_probabilities
    return float(mean_direct_variance(p, q, k, n))


@dataclass(frozen=True)
class Candidate:
    """One frequency oracle at ``epsilon`` over the domain, or why it cannot run there."""

    name: str
    mechanism: FrequencyOracle | None
    variance: float
    """Mean variance of a debiased count per report (``n = 1``); ``inf`` when unavailable."""
    report_bits: int
    settings: str
    """The settings chosen for it (``g = 53``, ``d = 18``), or why it is unavailable."""
    costs: OracleCosts | None = None
    """Estimated CPU nanoseconds per report (None when unavailable)."""
    set_aside: str = ""
    """Why the choice passed it over (too slow, reports too large); empty when eligible."""

    @property
    def eligible(self) -> bool:
        """Available, fast enough and small enough."""
        return self.mechanism is not None and not self.set_aside

    def std_error(self, n: int) -> float:
        """Mean standard error of a debiased *frequency* over ``n`` reports."""
        return math.sqrt(self.variance / n) if math.isfinite(self.variance) else math.inf


@dataclass(frozen=True)
class MechanismComparison:
    """Every candidate frequency oracle at one epsilon and domain, best first."""

    epsilon: float
    num_buckets: int
    n: int | None
    candidates: tuple[Candidate, ...]
    epsilon_infinity: float | None = None
    """The permanent responses' epsilon when the candidates are longitudinal."""
    prefer: str = "variance"

    @property
    def best(self) -> FrequencyOracle:
        """The chosen mechanism: by default the smallest variance among the eligible
        candidates (the shorter report, then the cheaper, on a tie)."""
        first = self.candidates[0]
        if first.mechanism is None:
            raise ParameterError(
                f"no frequency oracle can run at epsilon={self.epsilon!r} over "
                f"{self.num_buckets} buckets: {first.settings}"
            )
        if not first.eligible:
            reasons = "; ".join(f"{c.name}: {c.set_aside}" for c in self.candidates if c.set_aside)
            raise ParameterError(
                f"no frequency oracle at epsilon={self.epsilon!r} over {self.num_buckets} "
                f"buckets is fast and small enough ({reasons}): raise max_slowdown= or "
                "max_report_bytes=",
                parameter="max_report_bytes",
            )
        return first.mechanism

    def records(self) -> list[dict[str, Any]]:
        """One dict per candidate (``pandas.DataFrame(comparison.records())`` is the table)."""
        n = self.n or 1
        best = min(c.variance for c in self.candidates)
        return [
            {
                "mechanism": c.name,
                "settings": c.settings,
                "variance": c.variance * n,
                "std_error": c.std_error(n),
                "relative_variance": c.variance / best if best > 0 else math.nan,
                "report_bits": c.report_bits,
                "client_us": c.costs.client / 1000 if c.costs else math.nan,
                "server_us": c.costs.server / 1000 if c.costs else math.nan,
                "set_aside": c.set_aside,
                "chosen": i == 0 and c.eligible,
            }
            for i, c in enumerate(self.candidates)
        ]

    def explain(self) -> str:
        """Why the best candidate was chosen, and the table of all of them."""
        n_text = f"n = {self.n} reports" if self.n else "one report (multiply by n)"
        rows = self.records()
        memoized = (
            ""
            if self.epsilon_infinity is None
            else f" (one report; epsilon_infinity = {self.epsilon_infinity:g})"
        )
        why = {
            "variance": "has the smallest exact variance of a debiased count, averaged over the "
            "buckets (the same for every distribution of the values), among the candidates "
            "fast and small enough; ties go to the shorter report",
            "speed": "is the fastest candidate small enough (client and server CPU per report)",
            "size": "has the shortest reports among the candidates fast enough",
        }[self.prefer]
        chosen = (
            f"{rows[0]['mechanism']} ({rows[0]['settings']}) {why}"
            if rows[0]["chosen"]
            else "no candidate is fast and small enough (raise max_slowdown= or max_report_bytes=)"
        )
        width = max(len(str(row["mechanism"])) for row in rows)
        lines = [
            f"At epsilon = {self.epsilon:g}{memoized} over k = {self.num_buckets} buckets, "
            f"{chosen}.",
            "",
            f"{'mechanism':<{width}} {'settings':<22} {'variance':>12} {'x best':>8} "
            f"{'freq. s.e.':>11} {'bits':>8} {'client us':>10} {'server us':>10}",
        ]
        for row in rows:
            variance = f"{row['variance']:.4g}" if math.isfinite(row["variance"]) else "-"
            lines.append(
                f"{row['mechanism']:<{width}} {row['settings'][:22]:<22} {variance:>12} "
                f"{row['relative_variance']:>8.3f} {row['std_error']:>11.3g} "
                f"{row['report_bits']:>8} {_us(row['client_us']):>10} {_us(row['server_us']):>10}"
            )
        lines.append(f"(variance of a count for {n_text}; freq. s.e. at n = {self.n or 1})")
        aside = [f"  {row['mechanism']}: {row['set_aside']}" for row in rows if row["set_aside"]]
        if aside:
            lines += ["Set aside:", *aside]
        lines.append("(CPU us a report, one core, estimated: frameldp.core.mechanisms.OracleCosts)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _us(value: float) -> str:
    return f"{value:.3g}" if math.isfinite(value) else "-"


def mechanism_settings(mechanism: FrequencyOracle) -> str:
    """The settings a mechanism chose beyond epsilon and the domain (``g=53``, ``d=18``)."""
    spec = mechanism.to_spec()
    given = ("mechanism", "epsilon", "domain", "epsilon_infinity")
    chosen = {k: v for k, v in spec.items() if k not in given}
    chosen = {k: v for k, v in chosen.items() if v is not None}
    return ", ".join(f"{k}={v}" for k, v in chosen.items()) or "-"


def compare_mechanisms(
    epsilon: float,
    *,
    domain: Domain | list[Hashable] | Any,
    n: int | None = None,
    epsilon_infinity: float | None = None,
    prefer: str = _DEFAULTS[0],
    max_slowdown: float = _DEFAULTS[1],
    max_report_bytes: float = _DEFAULTS[2],
) -> MechanismComparison:
    """Every registered frequency oracle at ``epsilon`` over ``domain``, the chosen first.

    ``n`` (optional) expresses the variances and standard errors for ``n`` reports (every
    variance is proportional to ``n``) and the costs for a release of ``n`` reports (default
    10^6): a server's fixed cost is spread over them, and a release whose client or server
    takes under a second in all is never too slow, so a small ``n`` may choose a slower
    mechanism than a large one. With ``epsilon_infinity``, the longitudinal candidates
    (:data:`~.protocol.Capability.MEMOIZATION`), each built with it: one report's end-to-end
    channel is the mechanism's own at its realized probabilities, so the same variance formula
    ranks them.

    A candidate is set aside when its client or server CPU per report exceeds ``max_slowdown``
    times the fastest client's or server's (and 5 us, and a second for the release), or its
    report exceeds ``max_report_bytes`` (information bits / 8; module docstring). ``prefer``:
    ``"variance"`` (default), ``"speed"`` or ``"size"``, these two among the candidates within
    twice the smallest variance.
    """
    epsilon = check_epsilon("compare_mechanisms", "epsilon", epsilon)
    check_epsilon_infinity(epsilon, epsilon_infinity, "compare_mechanisms")
    domain = Domain.coerce(domain)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ParameterError(f"compare_mechanisms: n must be an integer >= 1, got {shown(n)}")
    if not isinstance(prefer, str) or prefer not in _PREFERENCES:
        raise ParameterError(
            f"prefer must be one of {list(_PREFERENCES)}, got {shown(prefer)}", parameter="prefer"
        )
    for name, limit in (("max_slowdown", max_slowdown), ("max_report_bytes", max_report_bytes)):
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int | float | np.integer | np.floating)
            or not limit >= 1
        ):
            raise ParameterError(
                f"{name} must be a number >= 1, got {shown(limit)}", parameter=name
            )
    k = domain.size
    candidates = []
    for name in mechanism_names():
        cls = mechanism_class(name)
        if Capability.FREQUENCY_ORACLE not in cls.capabilities:
            continue
        longitudinal = {} if epsilon_infinity is None else {"epsilon_infinity": epsilon_infinity}
        if longitudinal and Capability.MEMOIZATION not in cls.capabilities:
            reason = "unavailable: no permanent response to memoize (epsilon_infinity)"
            candidates.append(Candidate(name, None, math.inf, 0, reason))
            continue
        try:
            built = cls(epsilon, domain=domain, **longitudinal)
            mechanism = cast(FrequencyOracle, built)  # as it declares FREQUENCY_ORACLE
        except FrameLDPError as error:
            candidates.append(Candidate(name, None, math.inf, 0, f"unavailable: {error}"))
            continue
        candidates.append(
            Candidate(
                name,
                mechanism,
                mean_variance(mechanism, k),
                mechanism.report_bits,
                mechanism_settings(mechanism),
                mechanism.costs(n or _DEFAULT_N),
            )
        )
    if not candidates:
        raise ParameterError("no frequency oracle is registered")
    candidates = _set_aside(candidates, max_slowdown, max_report_bytes, n or _DEFAULT_N)
    eligible = [c for c in candidates if c.eligible]
    best = min((c.variance for c in eligible), default=math.inf)
    if prefer != "variance":
        candidates = [
            c
            if not c.eligible or c.variance <= _VARIANCE_SLACK * best
            else replace(
                c,
                set_aside=f"prefer={prefer!r} takes only variances within "
                f"{_VARIANCE_SLACK:g}x the smallest",
            )
            for c in candidates
        ]

    def rank(candidate: Candidate) -> tuple[bool, float, float, int, float, str]:
        tied = math.isfinite(best) and candidate.variance <= best * (1 + _TIE)
        by_variance = 0.0 if tied else candidate.variance
        costs = candidate.costs.total if candidate.costs else math.inf
        first, second = {
            "variance": (by_variance, float(candidate.report_bits)),  # shorter on a tie
            "speed": (costs, candidate.variance),
            "size": (float(candidate.report_bits), candidate.variance),
        }[prefer]
        # Equal variances and sizes (k-RR is subset selection's d = 1 and a projective line's
        # response): the cheaper mechanism.
        return (not candidate.eligible, first, second, candidate.report_bits, costs, candidate.name)

    ordered = tuple(sorted(candidates, key=rank))
    return MechanismComparison(epsilon, k, n, ordered, epsilon_infinity, prefer)


def _set_aside(
    candidates: list[Candidate], max_slowdown: float, max_report_bytes: float, n: int
) -> list[Candidate]:
    """``candidates`` with the reason each one too slow or too large is set aside: its client
    (or server) CPU per report above ``max_slowdown`` times the fastest client's (server's),
    5 us a report and one second for the ``n`` reports of a release."""
    costed = [c.costs for c in candidates if c.costs is not None]
    if not costed:
        return candidates
    floor = max(_FAST_ENOUGH_NS, _FAST_ENOUGH_RELEASE_NS / n)
    client = max(floor, max_slowdown * min(c.client for c in costed))
    server = max(floor, max_slowdown * min(c.server for c in costed))
    out = []
    for candidate in candidates:
        reasons = []
        if candidate.costs is not None:
            if candidate.report_bits > 8 * max_report_bytes:
                reasons.append(
                    f"reports of {math.ceil(candidate.report_bits / 8):,} bytes exceed "
                    f"max_report_bytes={max_report_bytes:g}"
                )
            for side, cost, limit in (
                ("client", candidate.costs.client, client),
                ("server", candidate.costs.server, server),
            ):
                if cost > limit:
                    reasons.append(
                        f"its {side} takes about {cost / 1000:.3g} us a report, more than "
                        f"{max_slowdown:g}x the fastest {side}'s and {floor / 1000:.3g} us"
                    )
        out.append(replace(candidate, set_aside="; ".join(reasons)))
    return out


def choose_mechanism(
    epsilon: float,
    *,
    domain: Domain | list[Hashable] | Any = None,
    n: int | None = None,
    epsilon_infinity: float | None = None,
    bounds: Any = None,
    clip: bool = False,
    prefer: str = _DEFAULTS[0],
    max_slowdown: float = _DEFAULTS[1],
    max_report_bytes: float = _DEFAULTS[2],
) -> Any:
    """The frequency oracle with the smallest exact estimator variance at ``epsilon`` over
    ``domain`` (the shorter report on a tie) among those whose CPU per report stays within
    ``max_slowdown`` times the fastest's and whose reports fit ``max_report_bytes``
    (``prefer="speed"`` or ``"size"``: the fastest or the shortest of those), ready to use like
    any mechanism; with ``epsilon_infinity``, the best longitudinal one
    (:func:`compare_mechanisms`).

    With ``bounds=(lo, hi)`` instead of a domain: the mean mechanism of smallest worst-case
    variance on that interval (``clip`` as the mechanisms take it;
    :func:`~frameldp.core.mechanisms.numeric_choice.compare_mean_mechanisms`); with
    ``epsilon_infinity`` too, the best of the mean mechanisms that memoize (stochastic
    rounding).

    :func:`compare_mechanisms` gives every candidate with its variance, and ``explain()``
    (for numbers: :func:`~frameldp.core.mechanisms.numeric_choice.compare_mean_mechanisms`).

    Examples
    --------
    >>> choose_mechanism(1.0, domain=["a", "b", "c"]).name
    'randomized_response'
    >>> choose_mechanism(4.0, domain=list(range(1024))).name
    'subset_selection'
    >>> choose_mechanism(1.0, bounds=(0, 100)).name
    'hybrid'
    """
    if bounds is not None:
        given = (prefer, max_slowdown, max_report_bytes)
        if any(
            type(value) is not type(default) or value != default
            for value, default in zip(given, _DEFAULTS, strict=True)
        ):
            raise ParameterError(
                "choose_mechanism: prefer=, max_slowdown= and max_report_bytes= choose among "
                "frequency oracles (domain=); with bounds= the mean mechanism of smallest "
                "worst-case variance is chosen",
                parameter="prefer",
            )
        if domain is not None:
            raise ParameterError(
                "choose_mechanism: give a domain (categories) or bounds (numbers), not both"
            )
        if epsilon_infinity is not None:
            return _memoizing_mean_mechanism(epsilon, bounds, clip, epsilon_infinity)
        return compare_mean_mechanisms(epsilon, bounds=bounds, clip=clip).best
    if domain is None:
        raise ParameterError("choose_mechanism: give domain= (categories) or bounds= (numbers)")
    return compare_mechanisms(
        epsilon,
        domain=domain,
        n=n,
        epsilon_infinity=epsilon_infinity,
        prefer=prefer,
        max_slowdown=max_slowdown,
        max_report_bytes=max_report_bytes,
    ).best


def _memoizing_mean_mechanism(
    epsilon: float, bounds: Any, clip: bool, epsilon_infinity: float
) -> Any:
    """The mean mechanism of smallest worst-case variance among those that memoize permanent
    responses (:data:`Capability.MEMOIZATION`), at ``epsilon`` end to end."""
    wanted = {Capability.NUMERIC, Capability.MEAN, Capability.MEMOIZATION}
    candidates: list[Any] = [
        mechanism_class(name)(epsilon, bounds=bounds, clip=clip, epsilon_infinity=epsilon_infinity)
        for name in mechanism_names()
        if wanted <= mechanism_class(name).capabilities
    ]
    return min(candidates, key=lambda mechanism: mechanism.worst_variance)
