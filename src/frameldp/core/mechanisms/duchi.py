"""Duchi, Jordan and Wainwright's two-point mechanism for a mean on a public interval."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting import PrivacyGuarantee, RandomizedResponseEvent
from frameldp.accounting.rounding import log_upper
from frameldp.core.mechanisms._noise import noise_numerator
from frameldp.core.mechanisms._numeric import MeanMechanism
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import Rows
from frameldp.errors import ParameterError

__all__ = ["DuchiMechanism"]

_WORD: Final = 1 << 64


@register("duchi")
@dataclass(frozen=True)
class DuchiMechanism(MeanMechanism):
    r"""Duchi et al.'s two-point mechanism: a mean of numbers on ``bounds = (lo, hi)``.

    A value ``x`` is mapped to ``t`` in ``[-1, 1]``; the report is ``+C`` with probability
    ``1/2 + t (e^eps - 1) / (2 (e^eps + 1))`` and ``-C`` otherwise, ``C = (e^eps + 1) /
    (e^eps - 1)``, written back in the column's units (``centre ± C * half``) [1]_ [2]_.

    Parameters
    ----------
    epsilon
        Privacy loss of one report (> 0).
    bounds
        The public interval ``(lo, hi)`` of the column.
    clip
        Clip values outside ``bounds`` into them (default: a value outside is an error).

    Privacy
    -------
    The probability of ``+C`` lies between ``N_lo / 2**64`` (``t = -1``) and ``N_hi / 2**64``
    (``t = 1``), ``N_lo`` being ``2**64 / (e^eps + 1)`` rounded up (more noise) and ``N_hi =
    2**64 - N_lo``; each row compares a uniform 64-bit keystream word with its threshold
    ``N_lo + floor(u (N_hi - N_lo))``, ``u = (t + 1) / 2``. Any two inputs' probabilities of an
    output differ by the factor ``N_hi / N_lo`` at most, so the mechanism is ``ln(N_hi /
    N_lo)``-LDP (stated rounded up, at most ``epsilon``), and its worst pair is binary
    randomized response at that epsilon: the guarantee holds a
    :class:`~frameldp.accounting.RandomizedResponseEvent` with ``k = 2`` (the exact Rényi
    curve, zCDP and composition).

    Estimation
    ----------
    With the realized ``C = 2**64 / (N_hi - N_lo)``, ``E[report] = t`` (up to the float rounding
    of ``u``): the mean of the reports is unbiased, and one report has variance ``C^2 - t^2``
    (normalized units; times ``half^2`` in the column's), at most ``C^2`` [1]_.

    References
    ----------
    .. [1] J. C. Duchi, M. I. Jordan, M. J. Wainwright, "Minimax Optimal Procedures for Locally
       Private Estimation", JASA 113(521), 2018.
    .. [2] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin, G. Yu, "Collecting
       and Analyzing Multidimensional Data with Local Differential Privacy", ICDE 2019, Sec.
       III-A.

    Examples
    --------
    >>> mech = DuchiMechanism(1.0, bounds=(0, 100))
    >>> round(mech.output_bound, 3)
    2.164
    >>> mech.privacy.epsilon <= 1.0
    True
    """

    name: ClassVar[str] = "duchi"
    title: ClassVar[str] = "Duchi et al.'s mechanism"

    _low: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        epsilon = self._check_numeric()
        low = noise_numerator(1.0, epsilon)
        if _WORD - low <= low:
            raise ParameterError(
                f"{self.title}: epsilon={epsilon!r} is too small to realize; the reports would "
                "be uniform noise",
                parameter="epsilon",
            )
        object.__setattr__(self, "_low", low)

    @property
    def _spread(self) -> int:
        """``N_hi - N_lo``."""
        return _WORD - 2 * self._low

    @property
    def output_bound(self) -> float:
        """The realized ``C = 2**64 / (N_hi - N_lo)``."""
        return _WORD / self._spread

    def plus_probability(self, t: float) -> float:
        """The probability of ``+C`` for input ``t`` (as realized, in floating point)."""
        u = (t + 1.0) / 2.0
        return (self._low + math.floor(u * self._spread)) / _WORD

    def variance(self, t: float) -> float:
        """``C^2 - t^2``."""
        return self.output_bound**2 - t * t

    @cached_property
    def worst_variance(self) -> float:
        """``C^2`` (at ``t = 0``)."""
        return self.output_bound**2

    def _signs(
        self, t: NDArray[np.float64], rows: Rows, at: NDArray[np.int64] | None
    ) -> NDArray[np.bool_]:
        """Whether each row (of ``rows`` at positions ``at``, all by default) reports ``+C``."""
        u = (t + 1.0) / 2.0
        spread = float(self._spread)
        if int(spread) > self._spread:  # the float of the spread rounded up: step down
            spread = math.nextafter(spread, 0.0)
        offsets = np.minimum(np.floor(u * spread), spread).astype(np.uint64)
        thresholds = offsets + np.uint64(self._low)
        words = rows.words("sign", 1)[:, 0]
        plus: NDArray[np.bool_] = (words if at is None else words[at]) < thresholds
        return plus

    def _on_grid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        on: NDArray[np.bool_] = np.isclose(np.abs(y), self.output_bound, rtol=1e-9, atol=0)
        return on

    def _randomize(
        self, t: NDArray[np.float64], rows: Rows, at: NDArray[np.int64] | None = None
    ) -> NDArray[np.float64]:
        """Reports ``±C`` of inputs ``t``, drawn from the rows of ``rows`` at positions ``at``
        (all by default)."""
        bound = self.output_bound
        return np.where(self._signs(t, rows, at), bound, -bound)

    @property
    def ratio(self) -> Fraction:
        """The realized ``N_hi / N_lo``."""
        return Fraction(_WORD - self._low, self._low)

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln(N_hi / N_lo)``, rounded up: binary randomized response's event."""
        event = RandomizedResponseEvent(log_upper(self.ratio), 2)
        return self._guarantee(event)
