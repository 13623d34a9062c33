"""The exact central (epsilon, delta) of one shuffled release of binary randomized response.

``n`` people each report their bit through binary RR at ``eps0`` (the true bit with probability
``p = e^eps0 / (e^eps0 + 1)``); the shuffled reports reveal exactly the number of ones ``Z``.
If the ``n - 1`` others hold ``m`` ones, ``Z = D + W_m`` with ``W_m = Bin(m, p) + Bin(n - 1 - m,
1 - p)`` and ``D`` the changing person's report, Bernoulli(p) against Bernoulli(1 - p). So

    P_m(z) = p w_m(z - 1) + (1 - p) w_m(z),   Q_m(z) = (1 - p) w_m(z - 1) + p w_m(z),

and the release is ``(epsilon, delta)``-DP exactly when ``delta`` is at least
``max_m max(D_e(P_m || Q_m), D_e(Q_m || P_m))`` (``e = e^epsilon``, hockey-stick divergences).

The worst ``m`` is not always 0 (all others alike): at ``n = 200, eps0 = 3`` four ones give a 4%
larger delta than none, and no proof of which ``m`` is worst is known to us. So frameldp scans
*every* ``m`` (the mirror ``m -> n - 1 - m`` swaps the two directions, so ``m <= (n - 1) / 2``
in both directions covers all), which is affordable up to ``EXACT_SCAN_MAX`` people: the laws
``w_m`` are computed once (direct convolutions of binomial windows) and every ``delta(epsilon)``
is one vectorized pass over all of them. Above that size the stronger-clone bound is reported.

Error control: each binomial window keeps ``|k - mean| <= sqrt(40 trials)`` (Hoeffding: at most
``2 e^-80`` outside); that mass, and the float error of the pmfs (a few ulps of
``gammaln(n)``, times the two coefficients, however much the difference cancels), are added to
every delta. Epsilon is the root of the padded delta, stepped up until the bound holds, so it is
never below exact.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting._binomial import log_binomial_pmf
from frameldp.accounting.amplification import smallest_epsilon
from frameldp.accounting.rounding import round_up

__all__ = ["EXACT_SCAN_MAX", "exact_rr_delta", "exact_rr_epsilon"]

EXACT_SCAN_MAX = 10_000
_LOG_CUTOFF = -80.0
_REL = 2.0**-40
_FloatArray = NDArray[np.float64]


def _window(trials: int, q: float) -> tuple[int, _FloatArray]:
    """First value and pmf of ``Bin(trials, q)`` over ``|k - mean| <= sqrt(40 trials)``."""
    if trials == 0:
        return 0, np.ones(1)
    half = math.sqrt(-_LOG_CUTOFF / 2.0 * trials) + 1.0
    mean = trials * q
    low, high = max(0, math.floor(mean - half)), min(trials, math.ceil(mean + half))
    k = np.arange(low, high + 1, dtype=np.float64)
    return low, np.exp(log_binomial_pmf(k, trials, q))


@lru_cache(maxsize=8)
def _laws(epsilon0: float, n: int) -> tuple[_FloatArray, _FloatArray, float, float]:
    """Rows ``w_m`` for ``m = 0 .. (n - 1) // 2`` on a common width (zero-padded), each padded
    with one zero on either side, their first values, the mass dropped from any row, and the
    relative error of every mass."""
    p = 1.0 / (1.0 + math.exp(-epsilon0))
    r = 1.0 - p
    rows: list[tuple[int, _FloatArray]] = []
    for m in range((n - 1) // 2 + 1):
        start_a, a = _window(m, p)
        start_b, b = _window(n - 1 - m, r)
        rows.append((start_a + start_b, np.convolve(a, b)))
    width = max(row.size for _, row in rows) + 2
    laws = np.zeros((len(rows), width))
    starts = np.empty(len(rows))
    for i, (start, row) in enumerate(rows):
        laws[i, 1 : 1 + row.size] = row
        starts[i] = start - 1
    # Two windows, each missing at most 2 e^-80: the mass of any row outside its window.
    dropped = 4.0 * math.exp(_LOG_CUTOFF)
    # Log pmfs are good to a few ulps of gammaln(n); exp, the products and the positive sums
    # of the convolution (at most `width` terms) add ulps of the result.
    mass_rel = 256.0 * math.ulp(max(math.lgamma(n + 1.0), 1.0)) + 4.0 * width * 2.0**-53
    return laws, starts, dropped, mass_rel


def exact_rr_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """``delta(epsilon)`` of one shuffled binary RR release of ``n`` people: the worst case over
    every dataset of the others, padded up by its float error (``n <= EXACT_SCAN_MAX``)."""
    if epsilon >= epsilon0:
        return 0.0
    laws, _, dropped, mass_rel = _laws(epsilon0, n)
    p = 1.0 / (1.0 + math.exp(-epsilon0))
    r = 1.0 / (1.0 + math.exp(epsilon0))
    e = math.exp(epsilon)
    below, here = laws[:, :-1], laws[:, 1:]  # w(z - 1), w(z) for z over the row
    # p - e^eps r = p (1 - e^(eps - eps0)) and e^eps p - r = r (e^(eps + eps0) - 1), both > 0
    # for eps < eps0, without the cancellation of the differences.
    big, small = -math.expm1(epsilon - epsilon0) * p, math.expm1(epsilon + epsilon0) * r
    up = np.maximum(big * below - small * here, 0.0).sum(axis=1)  # P || Q
    down = np.maximum(big * here - small * below, 0.0).sum(axis=1)  # Q || P
    worst = float(max(up.max(), down.max()))
    # Each w is good to mass_rel relative; the two terms of a difference err by at most
    # (big + small) mass_rel times the row's mass (at most 1), whatever the cancellation.
    error = (big + small) * mass_rel + dropped * (1.0 + e)
    return min(1.0, round_up(worst * (1.0 + _REL) + error))


def exact_rr_epsilon(delta: float, epsilon0: float, n: int) -> float:
    """Smallest epsilon (rounded up) with ``exact_rr_delta <= delta``."""
    return smallest_epsilon(lambda epsilon: exact_rr_delta(epsilon, epsilon0, n), delta, epsilon0)
