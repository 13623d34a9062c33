"""Planning a mean: the standard error a budget buys, the budget or the people it needs.

A mean mechanism's debiased report has variance at most ``W(epsilon)`` in normalized units
(``worst_variance``, exact for the realized law), so a mean of ``n`` reports on ``[lo, hi]``
has standard error at most ``half * sqrt(W(epsilon) / n)`` (``half = (hi - lo) / 2``), whatever
the values: the planner's figure, a guarantee rather than a guess. Given two of ``epsilon``,
``n`` and a target ``std_error`` it gives the third, with the mechanism of smallest ``W``
(:func:`~frameldp.core.mechanisms.numeric_choice.compare_mean_mechanisms`): ``n`` in closed
form, ``epsilon`` by bisection to a relative ``1e-9`` (``W`` decreases with epsilon; the upper
end of the final bracket is returned, so the target is reached).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

from frameldp.core.mechanisms import MeanMechanism
from frameldp.core.mechanisms.numeric_choice import MeanComparison, compare_mean_mechanisms
from frameldp.core.numeric import Bounds
from frameldp.errors import ParameterError, shown

__all__ = ["MeanPlan", "plan_mean"]

_LARGEST_EPSILON: Final = 64.0
_RELATIVE: Final = 1e-9


@dataclass(frozen=True)
class MeanPlan:
    """The best mean mechanism for a budget, a number of people and a standard error."""

    mechanism: MeanMechanism
    epsilon: float
    n: int
    std_error: float
    """The worst-case standard error of the mean (column units) at ``epsilon`` and ``n``."""
    comparison: MeanComparison
    target: str
    """What was solved for: ``"std_error"``, ``"epsilon"`` or ``"n"``."""

    def __repr__(self) -> str:
        bounds = self.comparison.bounds.to_json()
        return (
            f"Mean plan on {bounds}: {self.mechanism.name} at epsilon = {self.epsilon:.6g}, "
            f"n = {self.n:,}: std_error of the mean at most {self.std_error:.4g} "
            f"(solved for {self.target})\n{self.comparison.explain(self.n)}"
        )


def _worst_error(comparison: MeanComparison, n: int) -> float:
    half = comparison.bounds.half
    return comparison.candidates[0].std_error(n, half)


def _check_target(std_error: Any) -> float:
    if (
        isinstance(std_error, bool)
        or not isinstance(std_error, int | float)
        or not (std_error > 0 and math.isfinite(std_error))
    ):
        raise ParameterError(f"plan: std_error must be > 0 and finite, got {shown(std_error)}")
    return float(std_error)


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError(f"plan: n must be an integer >= 1, got {shown(n)}")
    return n


def plan_mean(
    bounds: Any,
    *,
    n: int | None = None,
    epsilon: float | None = None,
    std_error: float | None = None,
    clip: bool = False,
) -> MeanPlan:
    """The mean mechanism and the missing one of ``n``, ``epsilon`` and ``std_error`` (give
    exactly two; see the module docstring)."""
    given = [
        name
        for name, value in zip(("n", "epsilon", "std_error"), (n, epsilon, std_error), strict=True)
        if value is not None
    ]
    if len(given) != 2:
        raise ParameterError(
            f"plan: for a mean give two of n, epsilon and std_error, got {given or 'none'}"
        )
    checked = Bounds.coerce("plan", bounds)
    budget = 0.0 if epsilon is None else float(epsilon)
    if std_error is None:
        comparison = compare_mean_mechanisms(budget, bounds=checked, clip=clip)
        count = _check_n(n)
        return MeanPlan(
            comparison.best,
            budget,
            count,
            _worst_error(comparison, count),
            comparison,
            "std_error",
        )
    target = _check_target(std_error)
    if n is None:
        comparison = compare_mean_mechanisms(budget, bounds=checked, clip=clip)
        worst = comparison.candidates[0].worst_variance
        count = max(1, math.ceil(worst * checked.half**2 / target**2))
        return MeanPlan(
            comparison.best,
            budget,
            count,
            _worst_error(comparison, count),
            comparison,
            "n",
        )
    count = _check_n(n)

    def error(value: float) -> tuple[float, MeanComparison]:
        found = compare_mean_mechanisms(value, bounds=checked, clip=clip)
        return _worst_error(found, count), found

    high = 1.0
    reached, comparison = error(high)
    while reached > target and high < _LARGEST_EPSILON:
        high *= 2
        reached, comparison = error(high)
    if reached > target:
        raise ParameterError(
            f"plan: no mean mechanism reaches std_error={shown(std_error)} with n={count} on "
            f"{checked.to_json()} at any epsilon up to {_LARGEST_EPSILON:g}; collect more reports"
        )
    low = 0.0
    while high - low > _RELATIVE * high:
        middle = (low + high) / 2
        try:
            at_middle, found = error(middle)
        except ParameterError:  # too small an epsilon to realize: below the answer
            low = middle
            continue
        if at_middle <= target:
            high, reached, comparison = middle, at_middle, found
        else:
            low = middle
    return MeanPlan(comparison.best, high, count, reached, comparison, "epsilon")
