"""What an attacker can learn about one person: the testing and Bayesian readings of a guarantee.

Every statement here is derived from the guarantee's *privacy profile* ``delta(epsilon)``, the
tightest delta frameldp proves at each epsilon >= 0 (the same numbers ``epsilon_at`` inverts).
The profile bounds every neighbouring pair of the person's values, in both directions, and so
also a value against any mixture of the others (the hockey-stick divergence is jointly convex).

**Hypothesis testing** (Wasserman and Zhou 2010; Kairouz, Oh and Viswanath 2015). An attacker
tests "this person's value is x" against "it is x'" from everything released. A mechanism that
is ``(epsilon, delta(epsilon))``-DP for every ``epsilon >= 0`` is ``f``-DP for the trade-off
function ``f = sup_epsilon f_{epsilon, delta(epsilon)}``, and this is the tightest statement
the profile allows (Dong, Roth and Su 2022, Prop. 2.12). So any test whose false-positive rate
is ``alpha`` has a true-positive rate (power) of at most::

    TPR(alpha) = min over eps >= 0 of  min(1, d + e^eps alpha, 1 - e^-eps (1 - d - alpha))

with ``d = delta(eps)``: exactly the largest power of a Neyman–Pearson test when the profile is
that of a dominating pair (randomized response and its compositions, the shuffle pairs). It is
evaluated on a grid of epsilons and refined around the minimum (at the loss atoms nearby, where a
loss distribution has them); every evaluated epsilon gives a valid bound.

**Bayesian reading.** An attacker who gives probability ``prior`` to a fact about the person
(their value is x) and sees the reports has posterior odds ``prior odds * e^L``, ``L`` the
realized privacy loss. Pure epsilon bounds ``L <= epsilon``. With a profile, the loss exceeds
``x`` with probability at most ``delta(epsilon) / (1 - e^(epsilon - x))`` for any
``epsilon < x`` (the hockey-stick divergence counts at least that much mass above ``x``); so,
except on reports of probability at most ``delta``, the posterior stays below
``prior e^x / (prior e^x + 1 - prior)`` with ``x`` the smallest level that tail bound allows.

**Gaussian DP** (Dong, Roth and Su 2022, Cor. 2.13): the mechanism is ``mu``-GDP exactly when
its profile lies below the Gaussian one,
``delta_mu(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)``. The profile
is non-increasing, so requiring ``delta(epsilon_j) <= delta_mu(epsilon_{j+1})`` on consecutive
grid points certifies it on every epsilon in between; above the pure epsilon the profile is 0.

References
----------
.. [1] L. Wasserman, S. Zhou, "A Statistical Framework for Differential Privacy", JASA 2010.
.. [2] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy",
   ICML 2015 (the privacy region of a test).
.. [3] J. Dong, A. Roth, W. Su, "Gaussian Differential Privacy", JRSS B 84(1), 2022, Prop. 2.12
   and Cor. 2.13.
.. [4] S. Kasiviswanathan, A. Smith, "On the 'Semantics' of Differential Privacy: A Bayesian
   Formulation", J. Privacy and Confidentiality 6(1), 2014.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import special
from frameldp.errors import ParameterError, shown

__all__ = [
    "RISK_FPRS",
    "RISK_PRIORS",
    "PrivacyProfile",
    "Risk",
    "check_probability",
    "epsilon_for_posterior",
    "epsilon_for_power",
    "percent",
    "posterior_from_epsilon",
    "posterior_sentence",
    "power_from_epsilon",
    "power_sentence",
]

_FloatArray = NDArray[np.float64]

RISK_PRIORS = (0.001, 0.01, 0.1, 0.5)
"""The priors a :class:`Risk` table shows."""
RISK_FPRS = (0.001, 0.01, 0.05)
"""The false-positive rates a :class:`Risk` table shows."""
RISK_DELTA = 1e-6
"""Default probability of the reports a posterior bound may fail on (when the guarantee has
no pure epsilon that is tighter)."""

# The profile's grid: this many points from 0 to the top, then refined around a test's optimum.
_GRID = 65
_REFINE = 17
_LARGEST_MU = 64.0
_LARGEST_EXPONENT = 700.0  # e^700 is near the largest float


def check_probability(owner: str, name: str, value: Any) -> float:
    """Validate a probability strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"{owner}: {name} must be a number in (0, 1), got {shown(value)}")
    if not 0.0 < float(value) < 1.0:
        raise ParameterError(f"{owner}: {name} must be in (0, 1), got {shown(value)}")
    return float(value)


def epsilon_for_posterior(prior: float, max_posterior: float) -> float:
    """The largest pure epsilon whose posterior from ``prior`` is at most ``max_posterior``:
    ``ln(max_posterior / (1 - max_posterior)) - ln(prior / (1 - prior))`` (0 when the target is
    not above the prior: no epsilon > 0 keeps it)."""
    return max(0.0, _log_odds(max_posterior) - _log_odds(prior))


def epsilon_for_power(fpr: float, max_tpr: float) -> float:
    """The largest pure epsilon whose tests at false-positive rate ``fpr`` have power at most
    ``max_tpr``. The power is the smaller of ``e^eps fpr`` and ``1 - e^-eps (1 - fpr)``, so it
    stays within ``max_tpr`` up to the larger of the epsilons that bring either line there
    (0 when ``max_tpr <= fpr``)."""
    if max_tpr <= fpr:
        return 0.0
    return max(math.log(max_tpr / fpr), math.log1p(-fpr) - math.log1p(-max_tpr))


def power_from_epsilon(fpr: float, epsilon: float) -> float:
    """The power at false-positive rate ``fpr`` of a pure ``epsilon``:
    ``min(1, e^eps fpr, 1 - e^-eps (1 - fpr))``."""
    return float(_power(np.array([epsilon]), np.zeros(1), fpr)[0])


def _log_odds(probability: float) -> float:
    return math.log(probability) - math.log1p(-probability)


def posterior_from_epsilon(prior: float, epsilon: float) -> float:
    """``prior e^epsilon / (prior e^epsilon + 1 - prior)``: the posterior at loss ``epsilon``
    (computed from the log odds, without overflow)."""
    if epsilon == math.inf:
        return 1.0
    log_odds = math.log(prior) - math.log1p(-prior) + epsilon
    if log_odds > -700.0:
        return 1.0 / (1.0 + math.exp(-log_odds))
    # The odds bound the posterior; below the smallest float, that float bounds it.
    return max(math.exp(log_odds), 5e-324)


@dataclass
class PrivacyProfile:
    """The privacy profile ``delta(epsilon)`` of a guarantee, evaluated lazily and kept.

    ``delta`` returns a valid upper bound on the hockey-stick divergence at any ``epsilon >= 0``;
    ``pure_epsilon`` is where it reaches 0 (``inf`` when it never does); ``top`` is where the
    grid ends (the profile is at most ``delta(top)`` beyond).
    """

    delta: Callable[[float], float]
    pure_epsilon: float
    top: float
    atoms: Callable[[float, float], _FloatArray] | None = None
    _known: dict[float, float] = field(default_factory=dict, repr=False)

    def at(self, epsilons: _FloatArray) -> _FloatArray:
        """The profile at each of ``epsilons`` (each value computed once)."""
        out = np.empty(len(epsilons))
        for i, epsilon in enumerate(epsilons):
            value = float(epsilon)
            if value not in self._known:
                self._known[value] = 0.0 if value >= self.pure_epsilon else self.delta(value)
            out[i] = self._known[value]
        return out

    @property
    def grid(self) -> _FloatArray:
        """The epsilons of the coarse grid (0 to ``top``, then the pure epsilon if finite)."""
        points = np.linspace(0.0, self.top, _GRID)
        if math.isfinite(self.pure_epsilon) and self.pure_epsilon > self.top:
            points = np.append(points, self.pure_epsilon)
        return points

    # ------------------------------------------------------------------ testing

    def true_positive_rate(self, fpr: float) -> float:
        """The largest power of a test of one person's value at false-positive rate ``fpr``."""
        alpha = check_probability("true_positive_rate", "fpr", fpr)
        grid = self.grid
        values = _power(grid, self.at(grid), alpha)
        best = int(np.argmin(values))
        low, high = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
        fine = np.linspace(low, high, _REFINE)
        if self.atoms is not None:
            # The Neyman–Pearson threshold sits on a loss of the distribution: try those nearby.
            fine = np.concatenate([fine, self.atoms(float(low), float(high))])
        return float(min(values.min(), _power(fine, self.at(fine), alpha).min()))

    # ------------------------------------------------------------------ Bayes

    def loss_level(self, delta: float) -> float:
        """The smallest loss ``x`` the realized privacy loss exceeds with probability at most
        ``delta`` (the pure epsilon when ``delta`` is 0)."""
        if delta <= 0.0:
            return self.pure_epsilon
        grid = self.grid
        deltas = self.at(grid)
        below = deltas < delta
        # delta_j / (1 - e^(eps_j - x)) = delta  <=>  x = eps_j - log(1 - delta_j / delta).
        levels = grid[below] - np.log1p(-deltas[below] / delta)
        return float(min(self.pure_epsilon, levels.min(initial=math.inf)))

    def posterior(self, prior: float, delta: float = 0.0) -> float:
        """The largest posterior of a fact given ``prior``, except on reports of probability at
        most ``delta``."""
        return posterior_from_epsilon(prior, self.loss_level(delta))

    def failure_probability(self, delta: float) -> float:
        """``delta`` when a posterior bound that may fail on that much is tighter than the pure
        epsilon's; 0 (a bound that never fails) otherwise."""
        return delta if delta > 0.0 and self.loss_level(delta) < self.pure_epsilon else 0.0

    def headline(self, prior: float, delta: float) -> str:
        """The posterior from ``prior`` in words, with the probability it may fail on."""
        used = self.failure_probability(delta)
        return posterior_sentence(prior, self.posterior(prior, used), used)

    def summary(self, delta: float) -> str:
        """One line: the posterior from 1% and the power of a test at 1% false positives."""
        power = self.true_positive_rate(0.01)
        return f"{self.headline(0.01, delta)}; {power_sentence(0.01, power)}"

    # ------------------------------------------------------------------ Gaussian DP

    def gdp_mu(self) -> float | None:
        """The smallest ``mu`` the profile certifies ``mu``-GDP for (None when it reaches no 0,
        or needs ``mu > 64``)."""
        if not math.isfinite(self.pure_epsilon):
            return None
        epsilons = self.grid
        deltas = self.at(epsilons)
        if deltas[-1] > 0.0:
            return None
        intercepts, slopes = _power_lines(epsilons, deltas)
        alphas = _envelope_corners(intercepts, slopes)
        powers = np.min(intercepts[None, :] + slopes[None, :] * alphas[:, None], axis=1)
        if not _dominated(alphas, powers, _LARGEST_MU):
            return None
        low, high = 0.0, _LARGEST_MU
        for _ in range(60):
            middle = 0.5 * (low + high)
            if _dominated(alphas, powers, middle):
                high = middle
            else:
                low = middle
        return high


def _power_lines(epsilons: _FloatArray, deltas: _FloatArray) -> tuple[_FloatArray, _FloatArray]:
    """Intercepts and slopes of the lines that bound the power at every false-positive rate:
    ``delta + e^eps alpha`` and ``1 - e^-eps (1 - delta) + e^-eps alpha`` for each point."""
    usable = epsilons <= _LARGEST_EXPONENT  # dropping a line only raises the envelope
    epsilons, deltas = epsilons[usable], deltas[usable]
    intercepts = np.concatenate([deltas, 1.0 - np.exp(-epsilons) * (1.0 - deltas), [1.0]])
    slopes = np.concatenate([np.exp(epsilons), np.exp(-epsilons), [0.0]])
    return intercepts, slopes


def _envelope_corners(intercepts: _FloatArray, slopes: _FloatArray) -> _FloatArray:
    """Every false-positive rate in [0, 1/2] where two lines meet, and both ends: the corners
    of their lower envelope there are among them.

    Half the range suffices: the bound is symmetric (each ``(epsilon, delta)`` trade-off is),
    and so is the Gaussian one, so a symmetric trade-off above the Gaussian one up to its
    fixed point (at most 1/2) is above it everywhere (a symmetric trade-off function is its
    own inverse, Dong, Roth and Su 2022, Sec. 2)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        meet = (intercepts[None, :] - intercepts[:, None]) / (slopes[:, None] - slopes[None, :])
    meet = meet[np.isfinite(meet) & (meet > 0.0) & (meet < 0.5)]
    return np.unique(np.concatenate([[0.0, 0.5], meet]))


def _power(epsilons: _FloatArray, deltas: _FloatArray, alpha: float) -> _FloatArray:
    """The two trade-off bounds on the power at ``alpha`` of each ``(epsilon, delta)``."""
    huge = epsilons > _LARGEST_EXPONENT  # e^eps alpha past any probability: the bound is 1
    first = deltas + np.exp(np.minimum(epsilons, _LARGEST_EXPONENT)) * alpha
    first[huge] = 1.0
    second = 1.0 - np.exp(-epsilons) * np.maximum(1.0 - deltas - alpha, 0.0)
    return np.minimum(1.0, np.minimum(first, second))


def _dominated(alphas: _FloatArray, powers: _FloatArray, mu: float) -> bool:
    """Whether the piecewise-linear power bound stays below mu-GDP's power
    ``Phi(mu - Phi^-1(1 - alpha))`` at every corner (lowered by 2^-40 relative: the comparison
    may only favour the mechanism's side). The Gaussian power is concave in ``alpha``, so a
    line below it at both ends of a piece is below it on the whole piece."""
    # Phi^-1(1 - alpha) = -Phi^-1(alpha), without 1 - alpha rounding to 1 for tiny alpha.
    gaussian = special.ndtr(mu + special.ndtri(alphas)) * (1.0 - 2.0**-40)
    return bool(np.all(powers <= gaussian))


@dataclass(frozen=True)
class Risk:
    """What an attacker can learn about one person from a release: a small table.

    Attributes
    ----------
    posteriors
        ``(prior, posterior)`` pairs: an attacker who gave ``prior`` to a fact about a person
        (their value is x) reaches at most ``posterior`` after seeing every report, except on
        reports of probability at most ``delta``.
    powers
        ``(fpr, tpr)`` pairs: a test of "this person's value is x, not x'" that is wrong about
        ``fpr`` of the people whose value is x' detects at most ``tpr`` of those whose value is x.
    gdp_mu
        The smallest Gaussian-DP ``mu`` the guarantee certifies (None where none applies).
    delta
        The probability of reports on which a posterior bound may fail (0: never).
    """

    posteriors: tuple[tuple[float, float], ...]
    powers: tuple[tuple[float, float], ...]
    gdp_mu: float | None
    delta: float
    warning: str = ""
    """Set for a seeded release: the figures hold only against those who do not know the
    seed."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable."""
        return {
            "posteriors": [{"prior": p, "posterior": q} for p, q in self.posteriors],
            "powers": [{"fpr": a, "tpr": t} for a, t in self.powers],
            "gdp_mu": self.gdp_mu,
            "delta": self.delta,
            **({"warning": self.warning} if self.warning else {}),
        }

    @property
    def sentence(self) -> str:
        """The headline in words (the prior of 1%)."""
        prior, posterior = min(self.posteriors, key=lambda pair: abs(pair[0] - 0.01))
        text = posterior_sentence(prior, posterior, self.delta)
        return f"{text} [{self.warning}]" if self.warning else text

    def __str__(self) -> str:
        lines = ["What an attacker can learn about one person:"]
        for prior, posterior in self.posteriors:
            lines.append(
                f"  believed a person's value {percent(prior):>5} -> at most {percent(posterior)}"
            )
        if self.delta:
            lines.append(
                f"  (bounds that may fail on reports of total probability {self.delta:.3g})"
            )
        if self.powers:
            lines.append(
                "  a test for a value, wrongly flagging people without it, finds of those with it:"
            )
        for fpr, tpr in self.powers:
            lines.append(f"    wrongly flagging {percent(fpr):>5} -> at most {percent(tpr)}")
        if self.gdp_mu is not None:
            lines.append(f"  Gaussian DP: mu = {self.gdp_mu:.4g}")
        if self.warning:
            lines.append(f"  [{self.warning}]")
        return "\n".join(lines)


def power_sentence(fpr: float, power: float) -> str:
    """``a test that wrongly flags 1% of the people without a value finds at most 2.8% of those
    with it``."""
    return (
        f"a test that wrongly flags {percent(fpr)} of the people without a value finds at most "
        f"{percent(power)} of those with it"
    )


def posterior_sentence(prior: float, posterior: float, delta: float) -> str:
    """``an attacker who gave 1% to a person's value reaches at most 2.7%`` (and the
    probability it may fail on, when there is one)."""
    text = f"an attacker who gave {percent(prior)} to a person's value reaches at most " + (
        percent(posterior)
    )
    if not delta or posterior >= 0.9995:
        return text
    return f"{text} (a bound that may fail on reports of total probability {delta:.3g})"


def percent(value: float) -> str:
    """A probability as a short percentage (never rounded down to a smaller-looking risk)."""
    percent = value * 100.0
    if percent >= 99.95:
        return "100%" if value >= 1.0 else "99.9+%"
    if 0.0 < percent < 0.001:  # two significant digits, the second rounded up
        exponent = math.floor(math.log10(percent))
        mantissa = math.ceil(percent / 10.0 ** (exponent - 1) - 1e-9) / 10.0
        return f"{mantissa:g}e{exponent}%"
    digits = 1 if percent >= 1.0 else (2 if percent >= 0.1 else 3)
    scale = 10.0**digits
    text = f"{math.ceil(percent * scale - 1e-9) / scale:.{digits}f}"
    return f"{text.rstrip('0').rstrip('.')}%"
