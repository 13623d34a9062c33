"""Binomial probabilities in log space, over the window of values that matter."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import special
from frameldp.accounting.rounding import round_up

# exp() of anything below this underflows to 0 in float64.
LOG_TINY = -745.0


def log_binomial_pmf(
    k: NDArray[np.float64], m: int | NDArray[np.float64], q: float
) -> NDArray[np.float64]:
    """``log P[Bin(m, q) = k]``, elementwise when ``m`` is an array too (gammaln: good to
    about 1e-8 absolute at m = 10^6)."""
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


# Relative error taken for every value of half_tail: scipy's betainc (Boost's incomplete beta
# since SciPy 1.12) errs by at most 1.7e-11 relative from 1 to 10^8 trials, measured against
# 30-digit mpmath sums (tests/accounting/test_blanket.py). scipy's bdtrc (Cephes) must not be
# used: it errs by 1e-9 relative at 10^6 trials, 0.2% at 10^7 and 16% at 10^8.
HALF_TAIL_ERROR = 2.0**-32


def half_tail(k: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    """``P[Bin(m, 1/2) >= k]`` elementwise (1 for ``k <= 0``, 0 for ``k > m``), good to
    ``HALF_TAIL_ERROR`` relative: the regularized incomplete beta ``I_{1/2}(k, m - k + 1)``."""
    k, m = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(m, dtype=np.float64))
    inside = (k > 0.0) & (k <= m)
    a = np.where(inside, k, 1.0)
    b = np.where(inside, m - k + 1.0, 1.0)
    values = np.asarray(special.betainc(a, b, 0.5), dtype=np.float64)
    return np.where(k <= 0.0, 1.0, np.where(inside, values, 0.0))


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


# Loader's saddle-point binomial probabilities: the exponent is a sum of small, non-negative
# terms instead of the difference of gammaln values of size n log n, so its absolute error is a
# few ulps of the log probability itself, not of gammaln(n) (about 1e-8 at n = 10^6).
_STIRLING = (1.0 / 12.0, 1.0 / 360.0, 1.0 / 1260.0, 1.0 / 1680.0, 1.0 / 1188.0)
_HALF_LOG_TWO_PI = 0.5 * math.log(2.0 * math.pi)
# Bound on the error of the computed exponent, in ulps of the sum of its terms' magnitudes.
SADDLE_ULPS = 64.0


def _stirling_error(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(x!) - (x + 1/2) log x + x - log sqrt(2 pi)`` for ``x >= 1``: the series in ``1/x``
    above 15 (five terms, below 1e-17 relative truncation), gammaln below (at most about 40,
    a few ulps of it)."""
    out = np.empty_like(x)
    large = x > 15.0
    big = x[large]
    inverse_square = 1.0 / (big * big)
    s0, s1, s2, s3, s4 = _STIRLING
    out[large] = (
        s0
        - (s1 - (s2 - (s3 - s4 * inverse_square) * inverse_square) * inverse_square)
        * inverse_square
    ) / big
    small = x[~large]
    out[~large] = special.gammaln(small + 1.0) - (small + 0.5) * np.log(small) + small
    out[~large] -= _HALF_LOG_TWO_PI
    return out


def _deviance(x: NDArray[np.float64], mean: NDArray[np.float64]) -> NDArray[np.float64]:
    """``x log(x / mean) + mean - x`` (Loader's bd0) without its cancellation near
    ``x = mean``: a series in ``v = (x - mean) / (x + mean)`` there."""
    near = np.abs(x - mean) < 0.1 * (x + mean)
    out = np.empty_like(x)
    far = ~near
    if far.any():
        xf, mf = x[far], mean[far]
        out[far] = xf * np.log(xf / mf) + mf - xf
    if near.any():
        xs, ms = x[near], mean[near]
        v = (xs - ms) / (xs + ms)
        total = (xs - ms) * v
        term = 2.0 * xs * v
        v2 = v * v
        # |v| < 0.1: the terms fall by v^2 each; stop when the largest is below 2^-60 relative.
        largest = float(v2.max())
        steps = 1 if largest == 0.0 else min(40, math.ceil(-60.0 * math.log(2) / math.log(largest)))
        for j in range(1, steps + 1):
            term = term * v2
            total = total + term / (2 * j + 1)
        out[near] = total
    return out


def saddle_log_pmf(
    k: NDArray[np.float64], m: int | NDArray[np.float64], q: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``log P[Bin(m, q) = k]`` by Loader's saddle-point formula (``m`` a number or one per
    ``k``), and a bound on the absolute error of each value (``SADDLE_ULPS`` ulps of the
    magnitudes summed, and the rounding of the means).

    C. Loader, "Fast and Accurate Computation of Binomial Probabilities", 2000 (the algorithm of
    R's ``dbinom``).
    """
    k = np.asarray(k, dtype=np.float64)
    trials = np.broadcast_to(np.asarray(m, dtype=np.float64), k.shape)
    out = np.empty_like(k)
    error = np.empty_like(k)
    log_q, log_r = math.log(q), math.log1p(-q)
    low, high = k == 0, (k == trials) & (k > 0)
    out[low] = trials[low] * log_r
    out[high] = trials[high] * log_q
    error[low | high] = SADDLE_ULPS * np.spacing(np.abs(out[low | high]) + 1.0)
    inner = ~(low | high)
    kk, mm = k[inner], trials[inner]
    rest = mm - kk
    mean, other = mm * q, mm * (1.0 - q)
    if kk.size > 4096 and float(mm.max()) <= 1 << 24:
        # Integer counts repeat across windows: one table of Stirling errors up to the largest.
        table = np.zeros(int(mm.max()) + 1)
        table[1:] = _stirling_error(np.arange(1.0, table.size))
        whole = table[mm.astype(np.int64)]
        first, second = table[kk.astype(np.int64)], table[rest.astype(np.int64)]
    else:
        whole, first, second = _stirling_error(mm), _stirling_error(kk), _stirling_error(rest)
    terms = (
        whole,
        -first,
        -second,
        -_deviance(kk, mean),
        -_deviance(rest, other),
        0.5 * (np.log(mm) - np.log(kk) - np.log(rest)) - _HALF_LOG_TWO_PI,
    )
    out[inner] = terms[0] + terms[1] + terms[2] + terms[3] + terms[4] + terms[5]
    magnitude = sum(np.abs(term) for term in terms) + 1.0
    # The means m q and m (1 - q) are rounded: each deviance moves by (1 - x / mean) per unit.
    drift = np.abs(1.0 - kk / mean) * np.spacing(mean) + np.abs(1.0 - rest / other) * np.spacing(
        other
    )
    error[inner] = SADDLE_ULPS * np.spacing(magnitude) + 4.0 * drift
    return out, error
