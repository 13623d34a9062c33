"""Binomial probabilities in log space, over the window of values that matter."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import special
from frameldp.accounting.rounding import round_up

# exp() of anything below this underflows to 0 in float64.
LOG_TINY = -745.0


def log_binomial_pmf(k: NDArray[np.float64], m: int, q: float) -> NDArray[np.float64]:
    """``log P[Bin(m, q) = k]`` (gammaln: good to about 1e-8 absolute at m = 10^6)."""
    return np.asarray(
        special.gammaln(m + 1.0)
        - special.gammaln(k + 1.0)
        - special.gammaln(m - k + 1.0)
        + k * math.log(q)
        + (m - k) * math.log1p(-q)
    )


def binomial_window(
    m: int, q: float, log_cutoff: float = LOG_TINY
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """The values of ``Bin(m, q)`` with probability above ``e^log_cutoff``, their log
    probabilities, and an upper bound on the total probability of every other value."""
    if q >= 1.0 or q <= 0.0:  # degenerate (a probability that rounded to 0 or 1)
        return np.array([float(m) if q >= 1.0 else 0.0]), np.zeros(1), 0.0
    mean, std = m * q, math.sqrt(m * q * (1.0 - q))
    # Beyond sqrt(2 |cutoff|) standard deviations (with a margin for skew) the probabilities are
    # below the cutoff; the window's ends are bounded below either way.
    half = 1.5 * math.sqrt(-2.0 * log_cutoff) * std + 40.0
    low, high = max(0, math.floor(mean - half)), min(m, math.ceil(mean + half))
    k = np.arange(low, high + 1, dtype=np.float64)
    log_p = log_binomial_pmf(k, m, q)
    keep = log_p > log_cutoff
    lost = _tail_bound(low, high, m, q)
    if not keep.all():
        lost += float(np.exp(special.logsumexp(log_p[~keep])))
    return k[keep], log_p[keep], round_up(lost) if lost else 0.0


def _tail_bound(low: int, high: int, m: int, q: float) -> float:
    """Mass of ``Bin(m, q)`` outside ``[low, high]``: a geometric series past each end, since
    the ratio of successive probabilities decreases (log-concavity)."""
    bound = 0.0
    if high < m:
        first = math.exp(float(log_binomial_pmf(np.array([high + 1.0]), m, q)[0]))
        ratio = (m - high - 1) / (high + 2) * q / (1.0 - q)
        bound += first / (1.0 - ratio) if ratio < 1.0 else 1.0
    if low > 0:
        first = math.exp(float(log_binomial_pmf(np.array([low - 1.0]), m, q)[0]))
        ratio = (low - 1) / (m - low + 2) * (1.0 - q) / q
        bound += first / (1.0 - ratio) if ratio < 1.0 else 1.0
    return bound
