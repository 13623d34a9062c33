"""``frameldp.plan``: which mechanism and which epsilon for a domain and a number of people.

The formulas are :mod:`frameldp.core.planning`'s (exact mean variances of the realized
mechanisms; the epsilon for a target found by bisection, not on a grid); this module gives the
answer as a :class:`Plan` with a pandas frame of every candidate.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from frameldp.accounting.risk import (
    Risk,
    check_probability,
    epsilon_for_posterior,
    epsilon_for_power,
)
from frameldp.core.encoding import Domain
from frameldp.core.mean_planning import plan_mean
from frameldp.core.mechanisms import FrequencyOracle
from frameldp.core.planning import (
    PlannedMechanism,
    epsilon_for_std_error,
    plan_candidates,
    plan_records,
)
from frameldp.core.quantile_planning import plan_quantiles
from frameldp.errors import ParameterError, shown

__all__ = ["Plan", "plan"]

_LARGEST_DOMAIN = 1 << 20  # the candidates are built over the domain: beyond, hash it first


@dataclass(frozen=True, repr=False)
class Plan:
    """The best frequency oracle for ``n`` reports over a domain, at a given epsilon or for a
    target standard error.

    Attributes
    ----------
    mechanism
        The best candidate: ready to use (``df.ldp.privatize({"col": plan.mechanism})``) when
        the domain's values were given; its registered name when only the size was.
    epsilon
        The epsilon given, or the smallest that reaches the target standard error.
    std_error
        The mean standard error of a debiased frequency per bucket (a share: 0.005 is half a
        percentage point) the best candidate gives at ``epsilon``.
    n, num_buckets
        The number of reports and of buckets planned for.
    candidates
        Every frequency oracle, best first (:class:`~frameldp.core.planning.PlannedMechanism`).
    target
        ``"epsilon"`` (the epsilon was given) or ``"std_error"`` (the error was).
    domain
        The domain planned for (``0, ..., k-1`` when only its size was given).
    """

    mechanism: FrequencyOracle | str
    epsilon: float
    std_error: float
    n: int
    num_buckets: int
    candidates: tuple[PlannedMechanism, ...]
    target: str
    domain: Domain
    risk_goal: tuple[float, float] | None = None

    @property
    def risk(self) -> Risk:
        """What the best candidate's one report per person lets an attacker learn
        (:meth:`~frameldp.PrivacyGuarantee.risk`)."""
        mechanism = self.candidates[0].mechanism
        assert mechanism is not None  # the best candidate always runs
        return mechanism.privacy.risk()

    def records(self) -> list[dict[str, Any]]:
        """One dict per candidate, best first (:func:`~frameldp.core.planning.plan_records`)."""
        return plan_records(self.candidates, self.n)

    @property
    def frame(self) -> Any:
        """Every candidate as a pandas DataFrame: the epsilon it runs at (or needs), the
        epsilon its guarantee states (rounded up from the realized probabilities), its
        standard error of a frequency and of a count, and its report size."""
        import pandas as pd

        return pd.DataFrame(self.records())

    def __repr__(self) -> str:
        name = self.mechanism if isinstance(self.mechanism, str) else self.mechanism.name
        goal = {
            "epsilon": f"at epsilon = {self.epsilon:.6g}",
            "std_error": (
                f"smallest epsilon for std_error <= {self.std_error:.4g}: {self.epsilon:.6g}"
            ),
        }.get(self.target, "")
        if self.risk_goal is not None:
            limit, given = self.risk_goal
            goal = (
                f"the largest epsilon, {self.epsilon:.6g}, keeping an attacker's posterior "
                f"from {given:.3g} at most {limit:.3g}"
                if self.target == "max_posterior"
                else f"the largest epsilon, {self.epsilon:.6g}, keeping a test's power at "
                f"{given:.3g} false positives at most {limit:.3g}"
            )
        lines = [
            f"Plan for n = {self.n:,} reports over {self.num_buckets} buckets, {goal}: "
            f"{name} ({self.candidates[0].settings}), std_error {self.std_error:.4g} "
            "(of a frequency, per bucket)"
        ]
        for record in self.records():
            lines.append(
                f"  {record['mechanism']:<28} {record['settings'][:20]:<20} "
                f"epsilon {record['epsilon']:>9.5g}  std_error {record['std_error']:>9.4g}  "
                f"{record['report_bits']:>6} bits"
            )
        return "\n".join(lines)


def plan(
    *,
    domain: Domain | list[Hashable] | int | Any = None,
    n: int | None = None,
    epsilon: float | None = None,
    std_error: float | None = None,
    bounds: Any = None,
    clip: bool = False,
    quantile_error: float | None = None,
    quantiles: Any = None,
    buckets: int | None = None,
    prior: Any = None,
    max_posterior: float | None = None,
    max_tpr: float | None = None,
    fpr: float | None = None,
) -> Any:
    """The best frequency oracle and its standard error at ``epsilon``, or the smallest
    epsilon that reaches ``std_error`` (give exactly one of the two).

    ``domain`` is the public domain (its values: the plan's mechanism is then ready to use) or
    just its size. ``std_error`` is the mean standard error of a debiased *frequency* per
    bucket (e.g. ``0.005``); multiply by ``n`` for counts. The epsilon found is exact to a
    relative 1e-12: it reaches the target, and any smaller epsilon does not.

    >>> import frameldp
    >>> p = frameldp.plan(domain=50, n=100_000, std_error=0.005)
    >>> p.mechanism, round(p.epsilon, 4), p.std_error <= 0.005
    ('subset_selection', 1.1674, True)
    >>> frameldp.plan(domain=["a", "b", "c"], n=1000, epsilon=1.0).mechanism.name
    'randomized_response'

    With ``bounds=(lo, hi)`` instead of a domain, the plan is a mean's
    (:func:`~frameldp.core.mean_planning.plan_mean`, a
    :class:`~frameldp.core.mean_planning.MeanPlan`): give two of ``n``, ``epsilon`` and
    ``std_error`` (the worst-case standard error of the mean, in the column's units) and get
    the third, with the mean mechanism of smallest worst-case variance.

    >>> p = frameldp.plan(bounds=(0, 100), epsilon=1.0, std_error=0.5)
    >>> p.mechanism.name, p.n
    ('hybrid', 42890)

    With ``bounds`` and ``quantile_error`` (or ``quantiles``), the plan is Square Wave's for
    quantiles (:func:`~frameldp.core.quantile_planning.plan_quantiles`, a
    :class:`~frameldp.core.quantile_planning.QuantilePlan`): give two of ``n``, ``epsilon``
    and ``quantile_error`` (the root-mean-square error of each of ``quantiles``, default the
    median, in the column's units), simulated on ``prior`` values (uniform on the bounds by
    default) with ``buckets`` buckets.

    **By risk** (:mod:`~frameldp.accounting.risk`), instead of ``epsilon`` or ``std_error``:
    ``max_posterior=0.1, prior=0.01`` plans the largest epsilon at which an attacker who gave
    a fact about a person 1% believes it at most 10% after seeing their report;
    ``max_tpr=0.2, fpr=0.01`` the largest at which a test that wrongly flags 1% of the people
    without a value finds at most 20% of those with it (``prior`` and ``fpr`` default to
    0.01). The epsilon is the pure one of one report per person (the exact inverse of the
    bound), and the plan's standard error is what it buys.

    >>> p = frameldp.plan(domain=50, n=100_000, max_posterior=0.1, prior=0.01)
    >>> round(p.epsilon, 4), p.risk.posteriors[1][1] <= 0.1
    (2.3979, True)
    """
    risk_goal: tuple[float, float] | None = None
    target_name = ""
    if max_posterior is not None or max_tpr is not None or fpr is not None:
        if quantile_error is not None or quantiles is not None or buckets is not None:
            raise ParameterError("plan: a quantile plan takes epsilon, not a risk target")
        epsilon, risk_goal, target_name = _epsilon_for_risk(
            epsilon, std_error, max_posterior, max_tpr, prior, fpr
        )
        prior = None
    quantile_plan = quantile_error is not None or quantiles is not None
    if bounds is not None:
        if domain is not None:
            raise ParameterError("plan: give a domain (categories) or bounds (numbers), not both")
        if quantile_plan:
            if std_error is not None:
                raise ParameterError(
                    "plan: std_error is a mean's; a quantile plan takes quantile_error"
                )
            return plan_quantiles(
                bounds,
                n=n,
                epsilon=epsilon,
                quantile_error=quantile_error,
                quantiles=(0.5,) if quantiles is None else quantiles,
                buckets=buckets,
                prior=prior,
            )
        if buckets is not None or prior is not None:
            raise ParameterError("plan: buckets and prior are for a quantile plan")
        return plan_mean(bounds, n=n, epsilon=epsilon, std_error=std_error, clip=clip)
    if quantile_plan or buckets is not None or prior is not None:
        raise ParameterError("plan: quantile_error, quantiles, buckets and prior need bounds=")
    if domain is None or n is None:
        raise ParameterError("plan: give domain= and n= (or bounds= for a mean)")
    if (epsilon is None) == (std_error is None):
        raise ParameterError(
            f"plan: give exactly one of epsilon and std_error, got epsilon={shown(epsilon)}, "
            f"std_error={shown(std_error)}"
        )
    named = not (isinstance(domain, int) and not isinstance(domain, bool))
    if not isinstance(domain, int) or isinstance(domain, bool):
        coerced = Domain.coerce(domain)
    elif not 2 <= domain <= _LARGEST_DOMAIN:
        raise ParameterError(
            f"plan: domain must have 2 to {_LARGEST_DOMAIN:,} values, got domain={domain}"
        )
    else:
        coerced = Domain.coerce(list(range(domain)))
    if risk_goal is not None:
        assert epsilon is not None
        candidates = _candidates_within(coerced, n, epsilon)
        target = target_name
    elif epsilon is not None:
        candidates = plan_candidates(coerced, n, epsilon)
        target = "epsilon"
    else:
        candidates = epsilon_for_std_error(coerced, n, std_error)  # type: ignore[arg-type]
        target = "std_error"
    best = candidates[0]
    if best.mechanism is None:
        raise ParameterError(
            f"plan: no frequency oracle reaches std_error={shown(std_error)} with n={n} "
            f"over {coerced.size} buckets at any epsilon up to 64; collect more reports"
        )
    return Plan(
        best.mechanism if named else best.name,
        best.epsilon,
        best.std_error,
        n,
        coerced.size,
        tuple(candidates),
        target,
        coerced,
        risk_goal,
    )


def _epsilon_for_risk(
    epsilon: float | None,
    std_error: float | None,
    max_posterior: float | None,
    max_tpr: float | None,
    prior: Any,
    fpr: float | None,
) -> tuple[float, tuple[float, float], str]:
    """The largest pure epsilon within the risk target, the target, and its name."""
    if epsilon is not None or std_error is not None:
        raise ParameterError(
            "plan: give one of epsilon, std_error, max_posterior and max_tpr, got "
            f"epsilon={shown(epsilon)}, std_error={shown(std_error)} with a risk target"
        )
    if (max_posterior is None) == (max_tpr is None):
        raise ParameterError(
            "plan: give one of max_posterior (with prior) and max_tpr (with fpr), got "
            f"max_posterior={shown(max_posterior)}, max_tpr={shown(max_tpr)}"
        )
    if max_posterior is not None:
        if fpr is not None:
            raise ParameterError("plan: fpr goes with max_tpr; max_posterior takes prior")
        limit = check_probability("plan", "max_posterior", max_posterior)
        given = 0.01 if prior is None else check_probability("plan", "prior", prior)
        bound, name, what = epsilon_for_posterior(given, limit), "max_posterior", "prior"
    else:
        if prior is not None:
            raise ParameterError("plan: prior goes with max_posterior; max_tpr takes fpr")
        limit = check_probability("plan", "max_tpr", max_tpr)
        given = 0.01 if fpr is None else check_probability("plan", "fpr", fpr)
        bound, name, what = epsilon_for_power(given, limit), "max_tpr", "fpr"
    if bound <= 0.0:
        raise ParameterError(
            f"plan: {name}={shown(limit)} is not above {what}={shown(given)}: no epsilon > 0 "
            "keeps the risk there"
        )
    return bound, (limit, given), name


def _candidates_within(domain: Domain, n: int, bound: float) -> list[PlannedMechanism]:
    """The candidates at the largest epsilon whose realized guarantee (rounded up from the
    probabilities the sampler uses) stays within ``bound``."""
    epsilon = bound
    for _ in range(8):
        candidates = plan_candidates(domain, n, epsilon)
        best = candidates[0].mechanism
        if best is not None and best.privacy.epsilon <= bound:
            return candidates
        epsilon = math.nextafter(epsilon, 0.0) * (1.0 - 2.0**-40)
    raise ParameterError(f"plan: no candidate's guarantee stays within epsilon = {bound!r}")
