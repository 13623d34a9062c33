"""Planning quantiles: the error Square Wave's quantiles have at a budget, or what they need.

A quantile of a Square Wave release (Li et al., SIGMOD 2020) comes from the EMS estimate of the
distribution (:func:`~frameldp.core.distribution.ems`), which has no closed-form error: its
smoothing trades variance for a bias that depends on the distribution itself. The planner
therefore computes the error by simulation, exactly as a release's own standard errors are
computed (a parametric bootstrap): for a *planning distribution* ``p`` over the buckets,
``REPLICATES`` report counts are drawn from their exact law ``Multinomial(n, K p)`` (``K`` the
mechanism's kernel), EMS re-estimates each, and the quantile error is the root mean square of
the replicates' quantiles about ``p``'s own, in the column's units: the largest over the
quantiles asked and over the planning distributions. Those are ``prior=`` public or guessed
values, or by default values uniform on the bounds, Beta(2, 5) and Beta(5, 2): EMS starts from
the uniform distribution and stays near it when the reports say little, so uniform values
alone would make a tiny epsilon look exact. The error counts the people's sampling from ``p``,
the reports' noise and the smoothing's bias on ``p``, and carries the simulation's own spread
(about 15% with ``REPLICATES`` releases); on data far from ``p`` (sharper peaks, say) it
differs, which is why the planning distribution is part of the plan and printed with it.

The simulation draws test noise from numpy's ``default_rng(PLANNING_SEED)``: a plan is a
deterministic function of its arguments. It never touches data or privacy noise.

Given two of ``epsilon``, ``n`` and ``quantile_error``, :func:`plan_quantiles` gives the third:
``n`` by a search on ``log n`` (the error falls about as ``1 / sqrt(n)`` until the smoothing's
bias is reached, where no ``n`` helps and the plan says so), ``epsilon`` by bisection. The
figure returned always reaches the target at the plan's own simulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from frameldp.arguments import check_positive, check_size
from frameldp.core.distribution import Distribution, check_share
from frameldp.core.mechanisms.square_wave import DEFAULT_BUCKETS, SquareWave
from frameldp.core.numeric import Bounds
from frameldp.errors import ParameterError, shown

__all__ = ["PLANNING_SEED", "REPLICATES", "QuantilePlan", "plan_quantiles"]

REPLICATES: Final = 24
"""Simulated releases behind each error the planner states."""
PLANNING_SEED: Final = 20_261_129
"""The seed of the planner's simulations (test noise, not privacy noise)."""
BIAS_N: Final = 10**9
"""Reports whose expected counts measure the smoothing's bias (:meth:`_Setting.bias`)."""
_LARGEST_N: Final = 10**12
_LARGEST_EPSILON: Final = 32.0
_SMALLEST_EPSILON: Final = 0.05
_N_STEPS: Final = 12
_EPSILON_RELATIVE: Final = 1e-2
_DEFAULT_PLANNING: Final = "values uniform on the bounds, Beta(2, 5) and Beta(5, 2) (the worst)"


@dataclass(frozen=True)
class QuantilePlan:
    """Square Wave at a budget and a number of people, with the error of its quantiles."""

    mechanism: SquareWave
    epsilon: float
    n: int
    quantiles: tuple[float, ...]
    quantile_error: float
    """The largest root-mean-square error of the quantiles asked (column units), simulated."""
    errors: tuple[float, ...]
    """Each quantile's root-mean-square error, in the order of ``quantiles``."""
    planning: str
    """The distribution the errors were simulated on."""
    target: str
    """What was solved for: ``"quantile_error"``, ``"epsilon"`` or ``"n"``."""

    def __repr__(self) -> str:
        each = ", ".join(
            f"q={q:g}: {error:.4g}" for q, error in zip(self.quantiles, self.errors, strict=True)
        )
        return (
            f"Quantile plan on {self.mechanism.bounds.to_json()}: square_wave "
            f"({self.mechanism.buckets} buckets) at epsilon = {self.epsilon:.6g}, n = "
            f"{self.n:,}: root-mean-square error of the quantiles at most "
            f"{self.quantile_error:.4g} ({each}; solved for {self.target}; simulated on "
            f"{self.planning}, {REPLICATES} releases)"
        )


@dataclass(frozen=True)
class _Setting:
    """What stays fixed while the planner searches: bounds, buckets, quantiles, planning law."""

    bounds: Bounds
    buckets: int
    quantiles: tuple[float, ...]
    prior: NDArray[np.float64] | None
    planning: str

    def shares(self, buckets: int) -> list[NDArray[np.float64]]:
        """The planning distributions over ``buckets`` equal buckets of the bounds: the prior's
        histogram, or the default shapes (:func:`_default_shapes`)."""
        if self.prior is None:
            return _default_shapes(buckets)
        unit = (self.prior - self.bounds.lo) / self.bounds.width
        index = np.minimum((unit * buckets).astype(np.int64), buckets - 1)
        counts = np.bincount(index, minlength=buckets).astype(np.float64)
        return [np.asarray(counts / counts.sum(), dtype=np.float64)]

    def _quantiles(
        self, edges: NDArray[np.float64], shares: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        distribution = Distribution(edges, shares, 1, np.empty((0, shares.size)))
        return np.array([distribution.quantile(q) for q in self.quantiles])

    def errors(self, epsilon: float, n: int) -> tuple[SquareWave, tuple[float, ...]]:
        """The mechanism at ``epsilon`` and each quantile's simulated RMS error at ``n`` (the
        largest over the planning distributions)."""

        def releases(law: NDArray[np.float64]) -> NDArray[np.int64]:
            rng = np.random.default_rng(PLANNING_SEED)  # test noise for the simulation
            return rng.multinomial(n, law, size=REPLICATES)

        mechanism, worst = self._errors_of(epsilon, releases)
        return mechanism, tuple(float(x) for x in worst)

    def bias(self, epsilon: float) -> float:
        """The largest error of a quantile when the reports' counts are their expectations
        (``BIAS_N`` reports, no noise): the smoothing's bias, which no ``n`` removes."""
        _, worst = self._errors_of(epsilon, lambda law: BIAS_N * law)
        return float(np.max(worst))

    def _errors_of(
        self, epsilon: float, counts: Callable[[NDArray[np.float64]], NDArray[Any]]
    ) -> tuple[SquareWave, NDArray[np.float64]]:
        """The mechanism at ``epsilon`` and each quantile's RMS error over the EMS estimates of
        the report counts ``counts(law)`` gives (rows), the largest over the planning
        distributions."""
        mechanism = SquareWave(epsilon, bounds=self.bounds, buckets=self.buckets)
        fine_edges = np.linspace(self.bounds.lo, self.bounds.hi, mechanism.ems_cells + 1)
        edges = np.linspace(self.bounds.lo, self.bounds.hi, mechanism.buckets + 1)
        worst = np.zeros(len(self.quantiles))
        for shares in self.shares(mechanism.ems_cells):
            truth = self._quantiles(fine_edges, shares)
            law = mechanism.kernel @ shares
            estimates = np.atleast_2d(mechanism.estimate(counts(law / law.sum())))
            found = np.array([self._quantiles(edges, estimate) for estimate in estimates])
            worst = np.maximum(worst, np.sqrt(np.mean((found - truth) ** 2, axis=0)))
        return mechanism, worst


def _default_shapes(buckets: int) -> list[NDArray[np.float64]]:
    """Uniform, Beta(2, 5) and Beta(5, 2) over ``buckets`` equal buckets of ``[0, 1]``. EMS
    starts from the uniform distribution and returns close to it when the reports say little
    (a small epsilon or few people), so a plan on uniform values alone would find that
    estimate exact; the two skewed shapes, one to each side, keep the plan honest."""
    x = np.linspace(0.0, 1.0, buckets + 1)
    skewed = 1.0 - (1.0 - x) ** 5 * (1.0 + 5.0 * x)  # the CDF of Beta(2, 5)
    mirrored = x**5 * (6.0 - 5.0 * x)  # of Beta(5, 2)
    return [np.full(buckets, 1.0 / buckets), np.diff(skewed), np.diff(mirrored)]


def _check_positive(name: str, value: Any) -> float:
    return check_positive("plan", name, value)


def _check_n(n: Any) -> int:
    return check_size("plan", "n", n, 1, _LARGEST_N)


def _setting(bounds: Any, quantiles: Any, buckets: Any, prior: Any) -> _Setting:
    checked = Bounds.coerce("plan", bounds)
    buckets = SquareWave(
        1.0, bounds=checked, buckets=DEFAULT_BUCKETS if buckets is None else buckets
    ).buckets
    asked = (quantiles,) if isinstance(quantiles, int | float) else quantiles
    if not isinstance(asked, Sequence) or isinstance(asked, str) or not asked:
        raise ParameterError(
            f"plan: quantiles must be a share or a list of shares, got {shown(quantiles)}"
        )
    shares = tuple(check_share("quantiles", q) for q in asked)
    if prior is None:
        return _Setting(checked, buckets, shares, None, _DEFAULT_PLANNING)
    try:
        given = np.asarray(prior)
    except (TypeError, ValueError, OverflowError):  # ragged or unconvertible
        given = np.asarray([], dtype=object)
    if given.dtype.kind not in "iuf":  # not text, booleans, objects or ragged
        raise ParameterError(
            f"plan: prior must be numbers (public or guessed values), got {shown(prior)}"
        )
    values = given.astype(np.float64).ravel()
    inside = (values >= checked.lo) & (values <= checked.hi)
    if not values.size or not inside.all():
        raise ParameterError(
            f"plan: prior must be numbers within the bounds {checked.to_json()}, got {shown(prior)}"
        )
    return _Setting(checked, buckets, shares, values, f"the {values.size:,} prior values")


def plan_quantiles(
    bounds: Any,
    *,
    n: int | None = None,
    epsilon: float | None = None,
    quantile_error: float | None = None,
    quantiles: float | Sequence[float] = (0.5,),
    buckets: int | None = None,
    prior: Any = None,
) -> QuantilePlan:
    """Square Wave's quantile error at ``epsilon`` and ``n``, or the ``n`` or ``epsilon`` that
    brings it to ``quantile_error`` (give exactly two; see the module docstring).

    ``quantile_error`` is the root-mean-square error of each quantile in ``quantiles`` (column
    units); ``prior`` is public or guessed values the errors are simulated on (uniform on the
    bounds by default).

    >>> plan = plan_quantiles((0, 100), epsilon=2.0, quantile_error=2.0, buckets=64)
    >>> plan.quantile_error <= 2.0, plan.target
    (True, 'n')
    """
    given = [
        name
        for name, value in zip(
            ("n", "epsilon", "quantile_error"), (n, epsilon, quantile_error), strict=True
        )
        if value is not None
    ]
    if len(given) != 2:
        raise ParameterError(
            f"plan: for quantiles give two of n, epsilon and quantile_error, got {given or 'none'}"
        )
    setting = _setting(bounds, quantiles, buckets, prior)

    def planned(budget: float, count: int, target: str) -> QuantilePlan:
        mechanism, errors = setting.errors(budget, count)
        return QuantilePlan(
            mechanism,
            budget,
            count,
            setting.quantiles,
            max(errors),
            errors,
            setting.planning,
            target,
        )

    if quantile_error is None:
        return planned(_check_positive("epsilon", epsilon), _check_n(n), "quantile_error")
    target = _check_positive("quantile_error", quantile_error)
    if n is None:
        return _solve_n(setting, _check_positive("epsilon", epsilon), target, planned)
    return _solve_epsilon(setting, _check_n(n), target, planned)


def _solve_n(setting: _Setting, epsilon: float, target: float, planned: Any) -> QuantilePlan:
    """The least ``n`` (to about 2%) whose simulated error reaches ``target``."""

    def worst(count: int) -> float:
        return max(setting.errors(epsilon, count)[1])

    bias = setting.bias(epsilon)
    if bias >= target:
        raise ParameterError(
            f"plan: Square Wave's quantiles do not reach quantile_error={shown(target)} on "
            f"{setting.bounds.to_json()} at epsilon={shown(epsilon)}: the smoothing's bias alone "
            f"is {bias:.4g} on {setting.planning}, however many people report; ask a larger "
            "epsilon or more buckets"
        )
    low, high = 0, 1_000
    reached = worst(high)
    for _ in range(_N_STEPS):
        if reached <= target:
            break
        # the error falls about as 1 / sqrt(n): aim past the target, at most 100x at a time
        factor = min(100.0, max(2.0, 1.2 * (reached / target) ** 2))
        low, high = high, min(_LARGEST_N, math.ceil(high * factor))
        previous, reached = reached, worst(high)
        if reached > 0.98 * previous or high == _LARGEST_N:  # the smoothing's bias: a floor
            break
    if reached > target:
        raise ParameterError(
            f"plan: Square Wave's quantiles do not reach quantile_error={shown(target)} on "
            f"{setting.bounds.to_json()} at epsilon={shown(epsilon)}: the error stays near "
            f"{reached:.4g} however many people report (the smoothing's bias on "
            f"{setting.planning}); ask a larger epsilon or more buckets"
        )
    while high - low > max(1, 0.02 * high):
        middle = math.isqrt(max(1, low) * high)
        middle = min(high - 1, max(low + 1, middle))
        if worst(middle) <= target:
            high = middle
        else:
            low = middle
    return planned(epsilon, high, "n")  # type: ignore[no-any-return]


def _solve_epsilon(setting: _Setting, n: int, target: float, planned: Any) -> QuantilePlan:
    """The least ``epsilon`` (to a relative 1%) whose simulated error reaches ``target``."""

    def worst(budget: float) -> float:
        return max(setting.errors(budget, n)[1])

    high = 1.0
    while worst(high) > target:
        if high >= _LARGEST_EPSILON:
            raise ParameterError(
                f"plan: Square Wave's quantiles do not reach quantile_error={shown(target)} "
                f"with n={n:,} on {setting.bounds.to_json()} at any epsilon up to "
                f"{_LARGEST_EPSILON:g}; collect more reports or ask more buckets"
            )
        high *= 2
    low = high / 2 if high > 1.0 else _SMALLEST_EPSILON
    if high == 1.0 and worst(low) <= target:
        high = low
    while high - low > _EPSILON_RELATIVE * high:
        middle = (low + high) / 2
        if worst(middle) <= target:
            high = middle
        else:
            low = middle
    return planned(high, n, "epsilon")  # type: ignore[no-any-return]
