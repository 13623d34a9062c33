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
*realizes*, and takes the smallest, the shorter report breaking ties. A mechanism added to
``core/mechanisms`` with the capability joins the candidates with no change here.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
   Frequency Estimation", USENIX Security 2017 (Sec. 5: k-RR wins for ``k < 3 e^epsilon + 2``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, cast

from frameldp.arguments import check_epsilon
from frameldp.core.encoding import Domain
from frameldp.core.estimation import mean_direct_variance
from frameldp.core.mechanisms._longitudinal import check_epsilon_infinity
from frameldp.core.mechanisms.numeric_choice import compare_mean_mechanisms
from frameldp.core.mechanisms.protocol import Capability, FrequencyOracle
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

    @property
    def best(self) -> FrequencyOracle:
        """The mechanism with the smallest variance (the shorter report on a tie)."""
        mechanism = self.candidates[0].mechanism
        if mechanism is None:
            raise ParameterError(
                f"no frequency oracle can run at epsilon={self.epsilon!r} over "
                f"{self.num_buckets} buckets: {self.candidates[0].settings}"
            )
        return mechanism

    def records(self) -> list[dict[str, Any]]:
        """One dict per candidate (``pandas.DataFrame(comparison.records())`` is the table)."""
        n = self.n or 1
        best = self.candidates[0].variance
        return [
            {
                "mechanism": c.name,
                "settings": c.settings,
                "variance": c.variance * n,
                "std_error": c.std_error(n),
                "relative_variance": c.variance / best if best > 0 else math.nan,
                "report_bits": c.report_bits,
                "chosen": i == 0,
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
        lines = [
            f"At epsilon = {self.epsilon:g}{memoized} over k = {self.num_buckets} buckets, "
            f"{rows[0]['mechanism']} ({rows[0]['settings']}) has the smallest exact variance of "
            "a debiased count, averaged over the buckets (the same for every distribution of "
            "the values); ties go to the shorter report.",
            "",
            f"{'mechanism':<26} {'settings':<22} {'variance':>12} {'x best':>8} "
            f"{'freq. s.e.':>11} {'bits':>6}",
        ]
        for row in rows:
            variance = f"{row['variance']:.4g}" if math.isfinite(row["variance"]) else "-"
            lines.append(
                f"{row['mechanism']:<26} {row['settings'][:22]:<22} {variance:>12} "
                f"{row['relative_variance']:>8.3f} {row['std_error']:>11.3g} "
                f"{row['report_bits']:>6}"
            )
        lines.append(f"(variance of a count for {n_text}; freq. s.e. at n = {self.n or 1})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


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
) -> MechanismComparison:
    """Every registered frequency oracle at ``epsilon`` over ``domain``, best first.

    ``n`` (optional) expresses the variances and standard errors for ``n`` reports; it does not
    change the ranking (every variance is proportional to ``n``). With ``epsilon_infinity``,
    the longitudinal candidates (:data:`~.protocol.Capability.MEMOIZATION`), each built with
    it: one report's end-to-end channel is the mechanism's own at its realized probabilities,
    so the same variance formula ranks them.
    """
    epsilon = check_epsilon("compare_mechanisms", "epsilon", epsilon)
    check_epsilon_infinity(epsilon, epsilon_infinity, "compare_mechanisms")
    domain = Domain.coerce(domain)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ParameterError(f"compare_mechanisms: n must be an integer >= 1, got {shown(n)}")
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
            )
        )
    if not candidates:
        raise ParameterError("no frequency oracle is registered")
    best = min(c.variance for c in candidates)

    def rank(candidate: Candidate) -> tuple[bool, float, int, str]:
        tied = math.isfinite(best) and candidate.variance <= best * (1 + _TIE)
        # Among the tied, the shorter report first; the rest by variance.
        return (
            not tied,
            0.0 if tied else candidate.variance,
            candidate.report_bits,
            candidate.name,
        )

    ordered = tuple(sorted(candidates, key=rank))
    return MechanismComparison(epsilon, k, n, ordered, epsilon_infinity)


def choose_mechanism(
    epsilon: float,
    *,
    domain: Domain | list[Hashable] | Any = None,
    n: int | None = None,
    epsilon_infinity: float | None = None,
    bounds: Any = None,
    clip: bool = False,
) -> Any:
    """The frequency oracle with the smallest exact estimator variance at ``epsilon`` over
    ``domain`` (the shorter report on a tie), ready to use like any mechanism; with
    ``epsilon_infinity``, the best longitudinal one (:func:`compare_mechanisms`).

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
        if domain is not None:
            raise ParameterError(
                "choose_mechanism: give a domain (categories) or bounds (numbers), not both"
            )
        if epsilon_infinity is not None:
            return _memoizing_mean_mechanism(epsilon, bounds, clip, epsilon_infinity)
        return compare_mean_mechanisms(epsilon, bounds=bounds, clip=clip).best
    if domain is None:
        raise ParameterError("choose_mechanism: give domain= (categories) or bounds= (numbers)")
    return compare_mechanisms(epsilon, domain=domain, n=n, epsilon_infinity=epsilon_infinity).best


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
