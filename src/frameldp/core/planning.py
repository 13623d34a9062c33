"""Choosing epsilon: the standard error a budget buys, and the budget a standard error needs.

For ``n`` reports over ``k`` buckets every frequency oracle's debiased *frequency* has mean
variance ``V(epsilon) / n`` per bucket, where ``V`` is the exact mean variance of one report
(:func:`~frameldp.core.mechanisms.choice.mean_variance`, computed from the probabilities the
mechanism realizes, the same for every distribution of the values). The planner reports
``std_error = sqrt(V(epsilon) / n)`` for every candidate at a given epsilon, or, for a target
standard error, the smallest epsilon at which each candidate reaches it: ``V`` decreases with
epsilon, so the boundary is found by bisection to a relative ``1e-12`` (not on a grid) and the
epsilon returned is the upper end of the final bracket, which reaches the target. Some
mechanisms never reach a small target (Hadamard response's variance stays above ``n`` per
report); they are listed with an infinite epsilon.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from frameldp.core.encoding import Domain
from frameldp.core.mechanisms import mechanism_class, mechanism_names
from frameldp.core.mechanisms.choice import (
    compare_mechanisms,
    mean_variance,
    mechanism_settings,
)
from frameldp.core.mechanisms.protocol import Capability, FrequencyOracle
from frameldp.errors import FrameLDPError, ParameterError, shown

__all__ = [
    "PlannedMechanism",
    "epsilon_for_std_error",
    "plan_candidates",
    "plan_records",
    "std_error_at",
]

_LARGEST_EPSILON: Final = 64.0  # past it every oracle is at its floor
_RELATIVE: Final = 1e-12  # bisection stops when the bracket is this narrow


@dataclass(frozen=True)
class PlannedMechanism:
    """One candidate frequency oracle of a plan: the epsilon it runs at and the mean standard
    error of a debiased frequency per bucket it gives (``inf`` when it cannot run or reach
    the target)."""

    name: str
    mechanism: FrequencyOracle | None
    epsilon: float
    std_error: float
    report_bits: int
    settings: str


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError(f"plan: n must be an integer >= 1, got {shown(n)}")
    return n


def _oracles() -> list[tuple[str, Any]]:
    return [
        (name, mechanism_class(name))
        for name in mechanism_names()
        if Capability.FREQUENCY_ORACLE in mechanism_class(name).capabilities
    ]


def _built(cls: Any, epsilon: float, domain: Domain) -> FrequencyOracle | None:
    try:
        mechanism: FrequencyOracle = cls(epsilon, domain=domain)
    except FrameLDPError:
        return None
    return mechanism


def std_error_at(mechanism: FrequencyOracle, n: int) -> float:
    """The mean standard error of a debiased frequency per bucket over ``n`` reports."""
    return math.sqrt(mean_variance(mechanism, len(mechanism.categories)) / n)


def plan_candidates(
    domain: Domain | list[Hashable] | Any, n: int, epsilon: float
) -> list[PlannedMechanism]:
    """Every frequency oracle at ``epsilon`` over ``domain`` with its standard error for
    ``n`` reports, smallest first (the ranking of
    :func:`~frameldp.core.mechanisms.choice.compare_mechanisms`)."""
    comparison = compare_mechanisms(epsilon, domain=domain, n=_check_n(n))
    return [
        PlannedMechanism(
            c.name, c.mechanism, comparison.epsilon, c.std_error(n), c.report_bits, c.settings
        )
        for c in comparison.candidates
    ]


def _rounded(value: float) -> float:
    """Equal to 12 significant digits counts as a tie."""
    return float(f"{value:.12g}") if math.isfinite(value) else value


def epsilon_for_std_error(
    domain: Domain | list[Hashable] | Any, n: int, std_error: float
) -> list[PlannedMechanism]:
    """For every frequency oracle over ``domain``, the smallest epsilon at which ``n``
    reports give a mean standard error of a debiased frequency of at most ``std_error``;
    smallest epsilon first (module docstring)."""
    domain = Domain.coerce(domain)
    n = _check_n(n)
    if (
        isinstance(std_error, bool)
        or not isinstance(std_error, int | float)
        or not 0 < std_error < 1
        or not math.isfinite(std_error)
    ):
        raise ParameterError(f"plan: std_error must be in (0, 1), got {shown(std_error)}")
    planned = []
    for name, cls in _oracles():
        planned.append(_smallest_epsilon(name, cls, domain, n, float(std_error)))
    return sorted(planned, key=lambda p: (_rounded(p.epsilon), p.report_bits, p.name))


def _smallest_epsilon(
    name: str, cls: Any, domain: Domain, n: int, target: float
) -> PlannedMechanism:
    def error(epsilon: float) -> tuple[float, FrequencyOracle | None]:
        mechanism = _built(cls, epsilon, domain)
        return (math.inf, None) if mechanism is None else (std_error_at(mechanism, n), mechanism)

    high = 1.0
    reached, mechanism = error(high)
    while reached > target and high < _LARGEST_EPSILON:
        high *= 2
        reached, mechanism = error(high)
    if reached > target or mechanism is None:
        return PlannedMechanism(name, None, math.inf, math.inf, 0, "never reaches the target")
    low = 0.0
    while high - low > _RELATIVE * high:
        middle = (low + high) / 2
        at_middle, built = error(middle)
        if at_middle <= target:
            high, reached, mechanism = middle, at_middle, built
        else:
            low = middle
    assert mechanism is not None
    return PlannedMechanism(
        name, mechanism, high, reached, mechanism.report_bits, mechanism_settings(mechanism)
    )


def plan_records(candidates: Sequence[PlannedMechanism], n: int) -> list[dict[str, Any]]:
    """One dict per candidate: the epsilon it runs at (or needs), the epsilon its guarantee
    states (rounded up from the realized probabilities), the standard error of a frequency
    and of a count (``n`` times it), its report size, and whether it is the one chosen."""
    return [
        {
            "mechanism": c.name,
            "settings": c.settings,
            "epsilon": c.epsilon,
            "guarantee": c.mechanism.privacy.epsilon if c.mechanism is not None else math.inf,
            "std_error": c.std_error,
            "count_std_error": c.std_error * n,
            "report_bits": c.report_bits,
            "chosen": i == 0,
        }
        for i, c in enumerate(candidates)
    ]
