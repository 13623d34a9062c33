"""Stochastic rounding to a few levels, then k-ary randomized response of the level."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting import PrivacyGuarantee
from frameldp.arguments import check_size
from frameldp.core.encoding import Domain
from frameldp.core.mechanisms._longitudinal import (
    MemoNaming,
    check_epsilon_infinity,
)
from frameldp.core.mechanisms._numeric import MeanMechanism
from frameldp.core.mechanisms.protocol import Capability
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
class StochasticRounding(MeanMechanism, MemoNaming):
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
    epsilon_infinity
        Memoization (longitudinal randomized response, L-GRR [2]_): the rounded level and a
        *permanent* k-RR response of it at ``epsilon_infinity`` (>= ``epsilon``) are drawn
        once per (user, value) when reports come with users, and every report is a fresh
        *instantaneous* k-RR of the permanent response, so that one report is
        ``epsilon``-LDP end to end. ``None`` (default): one stage.

    Privacy
    -------
    The rounding is a function of the value alone; the level goes through k-ary randomized
    response, realized as :class:`RandomizedResponse` realizes it (exact dyadic probabilities,
    toward more noise). The two ends of the interval round to the two end levels with
    certainty, so the worst pair is that of k-RR: a
    :class:`~frameldp.accounting.RandomizedResponseEvent` at ``k = G`` and the realized
    epsilon, rounded up (exact Rényi curve, zCDP and composition).

    With ``epsilon_infinity``, the level's k-RR is :class:`RandomizedResponse`'s two-stage
    chain (k-RR after k-RR is k-RR at the end-to-end probabilities). The rounding and the
    permanent response of one (user, value) are memoized together, so any number of reports of
    that value are a post-processing of one permanent response: ``epsilon_infinity``
    (Erlingsson et al. 2014, Thm. 1); :meth:`guarantee` names the memo
    (:class:`~frameldp.accounting.MemoizedEvent`).

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
    .. [2] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs, "Frequency Estimation of
       Evolving Data Under Local Differential Privacy", EDBT 2023, Sec. 3 (L-GRR).

    Examples
    --------
    >>> StochasticRounding(1.0, bounds=(0, 100)).levels
    2
    """

    name: ClassVar[str] = "stochastic_rounding"
    title: ClassVar[str] = "stochastic rounding"
    capabilities: ClassVar[frozenset[Capability]] = MeanMechanism.capabilities | {
        Capability.MEMOIZATION
    }
    extra_fields: ClassVar[tuple[str, ...]] = ("levels", "epsilon_infinity")

    levels: int | None = field(default=None, kw_only=True)
    epsilon_infinity: float | None = field(default=None, kw_only=True)
    _rr: RandomizedResponse = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        epsilon = self._check_numeric()
        infinity = check_epsilon_infinity(epsilon, self.epsilon_infinity, self.title)
        object.__setattr__(self, "epsilon_infinity", infinity)
        if self.levels is None:
            object.__setattr__(self, "levels", _best_levels(epsilon))
        else:
            levels = check_size(self.title, "levels", self.levels, 2, MAX_LEVELS)
            object.__setattr__(self, "levels", levels)
        count = self._count
        try:
            response = _level_response(epsilon, count, infinity)
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

    def _extra_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"levels": self.levels}
        if self.epsilon_infinity is not None:
            spec["epsilon_infinity"] = self.epsilon_infinity
        return spec

    def _randomize(self, t: NDArray[np.float64], rows: Rows) -> NDArray[np.float64]:
        return self._reports(t, rows, rows)

    def _reports(self, t: NDArray[np.float64], rows: Rows, held: Rows) -> NDArray[np.float64]:
        """Reports of inputs ``t``: the level rounded and (with ``epsilon_infinity``) its
        permanent response drawn from ``held`` (memoized rows, or ``rows`` themselves), the
        one-stage or instantaneous response from ``rows``."""
        count = self._count
        position = (t + 1.0) / 2.0 * (count - 1)
        codes = np.minimum(round_at_random(position, held.words("round", 1)[:, 0]), count - 1)
        if self.epsilon_infinity is not None:
            codes = self._rr.permanent(codes, held)
        reported = self._rr.moved(codes, rows)
        reports: NDArray[np.float64] = self.level_values[reported]
        return reports

    def _check_memoizing(self) -> None:
        if self.epsilon_infinity is None:
            raise ParameterError(
                f"{self.title}: memoizing per user needs epsilon_infinity (the permanent "
                "response's epsilon)",
                parameter="epsilon_infinity",
            )

    def _randomize_memoized(
        self, t: NDArray[np.float64], rows: Rows, held: Rows
    ) -> NDArray[np.float64]:
        """The level and its permanent response from ``held``, memoized per (user, value)."""
        return self._reports(t, rows, held)

    def guarantee(self, memo: str | None = None) -> PrivacyGuarantee:
        """One report's guarantee: k-RR's over the levels (pure epsilon, rounded up); with
        ``epsilon_infinity`` its two stages, and with ``memo`` the memoized event."""
        levels = self._rr.guarantee(memo)
        ((event, _),) = levels.events
        shown = {k: v for k, v in levels.parameters.items() if k in _STAGE_PARAMETERS}
        return self._guarantee(event, levels=self.levels, **shown)

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """k-RR's guarantee over the levels (pure epsilon, rounded up)."""
        return self.guarantee()


_STAGE_PARAMETERS: Final = ("epsilon_1", "epsilon_infinity", "memo")


def _level_response(epsilon: float, count: int, infinity: float | None) -> RandomizedResponse:
    """k-RR over the ``count`` level indices (two stages with ``infinity``)."""
    return RandomizedResponse(
        epsilon, domain=Domain.coerce(list(range(count))), epsilon_infinity=infinity
    )


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
            keep, other = _level_response(epsilon, count, None).support_probabilities
        except ValueError:  # too small an epsilon for this many levels
            break
        variance = _worst_variance(count, keep, other)
        if variance < best_variance:
            best, best_variance = count, variance
    return best
