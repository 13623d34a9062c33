"""Stochastic rounding to a few levels, then k-ary randomized response of the level."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting import PrivacyGuarantee
from frameldp.arguments import check_size
from frameldp.core.encoding import Domain
from frameldp.core.mechanisms._numeric import MeanMechanism
from frameldp.core.mechanisms.randomized_response import RandomizedResponse
from frameldp.core.mechanisms.registry import register
from frameldp.core.numeric import round_at_random
from frameldp.core.randomness import Rows
from frameldp.errors import ParameterError

__all__ = ["StochasticRounding"]

MAX_LEVELS: Final = 1 << 16
_SEARCHED_LEVELS: Final = 64  # levels=None picks the best of 2 .. 64


@register("stochastic_rounding")
@dataclass(frozen=True)
class StochasticRounding(MeanMechanism):
    r"""Stochastic rounding to ``levels`` equally spaced levels, then k-ary randomized response.

    A value ``x`` is mapped to ``t`` in ``[-1, 1]`` and rounded at random to one of the levels
    ``z_i = -1 + 2 i / (G - 1)`` next to it (so that ``E[z] = t``); the level is then reported
    by k-ary randomized response over the ``G`` levels at ``epsilon`` [1]_, and written as the
    level's value in the column's units. ``levels=None`` takes the ``G`` in 2..64 of smallest
    worst-case variance at ``epsilon`` (2, the binary mechanism, below epsilon of about 2).

    Parameters
    ----------
    epsilon
        Privacy loss of one report (> 0).
    bounds
        The public interval ``(lo, hi)`` of the column.
    clip
        Clip values outside ``bounds`` into them (default: a value outside is an error).
    levels
        The number of levels ``G`` (2 to 65,536), or None for the best.

    Privacy
    -------
    The rounding is a function of the value alone; the level goes through k-ary randomized
    response, realized as :class:`RandomizedResponse` realizes it (exact dyadic probabilities,
    toward more noise). The two ends of the interval round to the two end levels with
    certainty, so the worst pair is that of k-RR: a
    :class:`~frameldp.accounting.RandomizedResponseEvent` at ``k = G`` and the realized
    epsilon, rounded up (exact Rényi curve, zCDP and composition).

    Estimation
    ----------
    A report ``z'`` has ``E[z'] = (p - q) t + q sum(z_i) = (p - q) t`` (the levels are
    symmetric), ``p`` and ``q`` k-RR's realized probabilities; ``z' / (p - q)`` is unbiased,
    with variance ``(q sum(z_i^2) + (p - q) E[z^2]) / (p - q)^2 - t^2`` where ``E[z^2] = t^2 +
    (t - z_i)(z_{i+1} - t)`` [1]_. Reports hold levels, not estimates: their plain mean is
    shrunk toward the centre; ``reports.ldp.mean`` debiases it.

    References
    ----------
    .. [1] I. Waudby-Smith, Z. S. Wu, A. Ramdas, "Nonparametric Extensions of Randomized
       Response for Private Confidence Sets", ICML 2023, Sec. 2 (NPRR).

    Examples
    --------
    >>> StochasticRounding(1.0, bounds=(0, 100)).levels
    2
    """

    name: ClassVar[str] = "stochastic_rounding"
    title: ClassVar[str] = "stochastic rounding"
    extra_fields: ClassVar[tuple[str, ...]] = ("levels",)

    levels: int | None = field(default=None, kw_only=True)
    _rr: RandomizedResponse = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        epsilon = self._check_numeric()
        if self.levels is None:
            object.__setattr__(self, "levels", _best_levels(epsilon))
        else:
            levels = check_size(self.title, "levels", self.levels, 2, MAX_LEVELS)
            object.__setattr__(self, "levels", levels)
        count = self._count
        try:
            response = _level_response(epsilon, count)
        except ParameterError as error:  # in this mechanism's words
            raise ParameterError(
                f"{self.title}: epsilon={epsilon!r} is too small to realize for {count} levels; "
                "the reports would be uniform noise (use fewer levels)",
                parameter="epsilon",
            ) from error
        object.__setattr__(self, "_rr", response)

    @property
    def _count(self) -> int:
        assert self.levels is not None  # set in __post_init__
        return self.levels

    @property
    def level_values(self) -> NDArray[np.float64]:
        """The levels ``z_i`` in normalized units."""
        return np.linspace(-1.0, 1.0, self._count)

    @property
    def output_bound(self) -> float:
        """Reports are levels: 1."""
        return 1.0

    @property
    def debias_scale(self) -> float:
        """``p - q`` of the realized k-RR."""
        keep, other = self._rr.support_probabilities
        return keep - other

    def variance(self, t: float) -> float:
        """The exact variance of one debiased report of input ``t`` (normalized units)."""
        return _variance(t, self._count, *self._rr.support_probabilities)

    @cached_property
    def worst_variance(self) -> float:
        """The largest variance over ``[-1, 1]`` (at an end or a level's midpoint)."""
        return _worst_variance(self._count, *self._rr.support_probabilities)

    def _on_grid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        position = (y + 1.0) / 2.0 * (self._count - 1)
        on: NDArray[np.bool_] = np.abs(position - np.rint(position)) <= 1e-6
        return on

    def _randomize(self, t: NDArray[np.float64], rows: Rows) -> NDArray[np.float64]:
        count = self._count
        position = (t + 1.0) / 2.0 * (count - 1)
        codes = np.minimum(round_at_random(position, rows.words("round", 1)[:, 0]), count - 1)
        reported = self._rr.moved(codes, rows)
        reports: NDArray[np.float64] = self.level_values[reported]
        return reports

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """k-RR's guarantee over the levels (pure epsilon, rounded up)."""
        ((event, _),) = self._rr.privacy.events
        return self._guarantee(event, levels=self.levels)


def _level_response(epsilon: float, count: int) -> RandomizedResponse:
    """k-RR over the ``count`` level indices."""
    return RandomizedResponse(epsilon, domain=Domain.coerce(list(range(count))))


def _variance(t: float, count: int, keep: float, other: float) -> float:
    levels = np.linspace(-1.0, 1.0, count)
    step = 2.0 / (count - 1)
    index = min(count - 2, max(0, math.floor((t + 1.0) / step)))
    rounding = (t - levels[index]) * (levels[index + 1] - t)
    second = t * t + max(0.0, rounding)
    scale = keep - other
    return float((other * float(np.dot(levels, levels)) + scale * second) / scale**2 - t * t)


def _worst_variance(count: int, keep: float, other: float) -> float:
    """The largest variance: at a level or midway between two (vectorized :func:`_variance`)."""
    levels = np.linspace(-1.0, 1.0, count)
    step = 2.0 / (count - 1)
    scale = keep - other
    squares = other * float(np.dot(levels, levels))
    at_levels = (squares + scale * levels**2) / scale**2 - levels**2
    middles = (levels[1:] + levels[:-1]) / 2
    rounding = (step / 2) ** 2
    at_middles = (squares + scale * (middles**2 + rounding)) / scale**2 - middles**2
    return float(max(at_levels.max(), at_middles.max()))


def _best_levels(epsilon: float) -> int:
    """The level count in 2 .. 64 of smallest worst-case variance at ``epsilon``."""
    best, best_variance = 2, math.inf
    for count in range(2, _SEARCHED_LEVELS + 1):
        try:
            keep, other = _level_response(epsilon, count).support_probabilities
        except ValueError:  # too small an epsilon for this many levels
            break
        variance = _worst_variance(count, keep, other)
        if variance < best_variance:
            best, best_variance = count, variance
    return best
