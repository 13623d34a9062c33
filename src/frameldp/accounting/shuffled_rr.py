"""The central (epsilon, delta) of one shuffled release of binary randomized response, exact for
up to 10^4 people and certified to a stated gap up to 10^8.

``n`` people each report their bit through binary RR at ``eps0`` (the true bit with probability
``p = e^eps0 / (e^eps0 + 1)``, ``r = 1 - p``); the shuffled reports reveal exactly the number of
ones ``Z``. If the ``n - 1`` others hold ``m`` ones, ``Z = D + W_m`` with
``W_m = Bin(m, p) + Bin(n - 1 - m, r)`` and ``D`` the changing person's report, Bernoulli(p)
against Bernoulli(r). So

    P_m(z) = p w_m(z - 1) + r w_m(z),   Q_m(z) = r w_m(z - 1) + p w_m(z),

and the release is ``(epsilon, delta)``-DP exactly when ``delta`` is at least
``max_m max(D_e(P_m || Q_m), D_e(Q_m || P_m))`` (``e = e^epsilon``, hockey-stick divergences).
The mirror ``m -> n - 1 - m`` swaps the two directions, so ``m <= (n - 1) / 2`` in both
directions covers every dataset.

**Exact scan** (``n <= EXACT_SCAN_MAX``). The worst ``m`` is not always 0 (all others alike):
at ``n = 200, eps0 = 3`` four ones give a 4% larger delta than none, and no proof of which ``m``
is worst is known to us. So every ``m`` is scanned: the laws ``w_m`` are computed once and every
``delta(epsilon)`` is one vectorized pass over all of them.

**Band scan** (larger ``n``, certified). The ``m`` are split into ``BANDS`` bands
``[m0, m0 + j]``. For ``m = m0 + i`` in a band, pick ``j`` of the others, ``i`` of them ones:
each reports a uniform bit (the *blanket*) with probability ``2r`` and its true bit otherwise.
Reveal which of the ``j`` drew the blanket and the true bits of the others among them (this
only helps the attacker; Balle, Bell, Gascón and Nissim 2019): what remains of ``Z`` is
``D + V + U_b`` plus a known shift, with ``V = Bin(m0, p) + Bin(n - 1 - j - m0, r)``,
``b ~ Bin(j, 2r)`` blanket bits and ``U_b ~ Bin(b, 1/2)`` -- the same for every ``m`` of the band.
The divergence is jointly convex and shift-invariant, and one more fair coin is a
post-processing, so every ``delta_m`` of the band is at most the divergence of the pair with
``V + U_b_low`` (``b_low`` the lowest ``b`` kept) plus ``P[b < b_low]``. The bound gives up the
variance of ``j`` people's bits, a share of about ``1 / (2 BANDS)`` (fewer bands, down to 64,
above 10^7 people, to bound the work); exact deltas at 9 values of ``m`` give a lower bound on
the worst case, and both are reported (:func:`band_rr_lower`).

Error control: binomial laws are Loader's saddle-point probabilities (their error bound, about
1e-13 relative, is carried), windows keep every value above ``e^-80`` (the mass outside,
bounded by the log-concave tails, is added in full), convolutions are direct (positive sums) or
by FFT with the error bound of :func:`~frameldp.accounting.lattice.fft_convolve`, and each
delta is padded by all of it. Epsilon is the root of the padded delta, stepped up until the
bound holds, so it is never below exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting._binomial import saddle_log_pmf
from frameldp.accounting.amplification import smallest_epsilon
from frameldp.accounting.lattice import fft_convolve
from frameldp.accounting.rounding import round_up

__all__ = [
    "BANDS",
    "BAND_SCAN_MAX",
    "EXACT_SCAN_MAX",
    "band_rr_delta",
    "band_rr_epsilon",
    "band_rr_lower",
    "exact_rr_delta",
    "exact_rr_epsilon",
]

EXACT_SCAN_MAX = 10_000
BAND_SCAN_MAX = 10**8
BANDS = 256
_LOG_CUTOFF = -80.0
_TRIM = 1e-25
_LOWER_STARTS = 8
_REL = 2.0**-40
_FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class _Law:
    """A probability law on consecutive integers from ``start``, with bounds on the mass it
    misses and on the relative and absolute (l1) error of its values."""

    start: int
    masses: _FloatArray
    dropped: float
    relative: float
    absolute: float

    def plus(self, other: _Law) -> _Law:
        """The law of the sum of independent draws (a convolution)."""
        masses, relative, absolute = fft_convolve(self.masses, other.masses)
        np.maximum(masses, 0.0, out=masses)
        grown = math.exp(self.relative + other.relative + relative)
        return _Law(
            self.start + other.start,
            masses,
            self.dropped + other.dropped,
            self.relative + other.relative + relative,
            (self.absolute + other.absolute + self.absolute * other.absolute) * grown + absolute,
        )


def _binomial(trials: int, q: float) -> _Law:
    """``Bin(trials, q)`` over the values above ``e^-80`` (:func:`_binomials`)."""
    return _binomials([trials], q)[0]


def _binomials(trials: list[int], q: float) -> list[_Law]:
    """``Bin(t, q)`` for each ``t`` of ``trials`` over the values above ``e^-80``: Bernstein's
    inequality bounds each window (the mass outside is at most ``4 e^-80``), and the error of
    the saddle-point probabilities is carried in l1. One vectorized pass over every window."""
    windows = []
    for t in trials:
        if t == 0:
            windows.append((0, 0))
            continue
        variance = t * q * (1.0 - q)
        # P[|X - mean| >= s] <= 2 exp(-s^2 / (2 (variance + s / 3))): s for e^-80.
        s = -_LOG_CUTOFF / 3.0 + math.sqrt((_LOG_CUTOFF / 3.0) ** 2 - 2.0 * _LOG_CUTOFF * variance)
        windows.append((max(0, math.floor(t * q - s) - 1), min(t, math.ceil(t * q + s) + 1)))
    sizes = np.array([high - low + 1 for low, high in windows])
    k = np.concatenate([np.arange(low, high + 1, dtype=np.float64) for low, high in windows])
    m = np.repeat(np.asarray(trials, dtype=np.float64), sizes)
    log_p, error = saddle_log_pmf(k, m, q)
    masses = np.exp(log_p)
    errors = masses * np.expm1(error)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    laws = []
    for i, (t, (low, high)) in enumerate(zip(trials, windows, strict=True)):
        part = slice(int(bounds[i]), int(bounds[i + 1]))
        dropped = 4.0 * math.exp(_LOG_CUTOFF) if (low > 0 or high < t) else 0.0
        if t == 0:
            laws.append(_Law(0, np.ones(1), 0.0, 0.0, 0.0))
        else:
            laws.append(_Law(low, masses[part], dropped, 0.0, float(errors[part].sum())))
    return laws


def _report_probabilities(epsilon0: float) -> tuple[float, float]:
    """``p = e^eps0 / (e^eps0 + 1)`` (a report is the true bit) and ``r = 1 - p``, each
    computed without cancellation."""
    return 1.0 / (1.0 + math.exp(-epsilon0)), 1.0 / (1.0 + math.exp(epsilon0))


def _others(ones: list[int], people: int, epsilon0: float) -> list[_Law]:
    """For each ``m`` of ``ones``, the law of the ones reported by ``people`` others of whom
    ``m`` hold 1: ``Bin(m, p) + Bin(people - m, r)``."""
    p, r = _report_probabilities(epsilon0)
    reports = zip(_binomials(ones, p), _binomials([people - m for m in ones], r), strict=True)
    return [first.plus(second) for first, second in reports]


def _divergences(
    laws: _FloatArray, epsilon: float, epsilon0: float
) -> tuple[_FloatArray, float, float]:
    """Both directions' hockey-stick divergence of the pair on each row of ``laws`` (rows padded
    with a zero on either side), the larger per row; and the two coefficients."""
    p, r = _report_probabilities(epsilon0)
    # p - e^eps r = p (1 - e^(eps - eps0)) and e^eps p - r = r (e^(eps + eps0) - 1), both > 0
    # for eps < eps0, without the cancellation of the differences.
    big, small = -math.expm1(epsilon - epsilon0) * p, math.expm1(epsilon + epsilon0) * r
    below, here = laws[:, :-1], laws[:, 1:]  # w(z - 1), w(z) for z over the row
    up = np.maximum(big * below - small * here, 0.0).sum(axis=1)  # P || Q
    down = np.maximum(big * here - small * below, 0.0).sum(axis=1)  # Q || P
    return np.maximum(up, down), big, small


def _stacked(laws: list[_Law]) -> tuple[_FloatArray, float, float, float]:
    """Rows of the laws on a common width (each padded with a zero on either side), and the
    largest dropped mass, relative error and absolute error among them."""
    width = max(law.masses.size for law in laws) + 2
    rows = np.zeros((len(laws), width))
    for i, law in enumerate(laws):
        rows[i, 1 : 1 + law.masses.size] = law.masses
    return (
        rows,
        max(law.dropped for law in laws),
        max(law.relative for law in laws),
        max(law.absolute for law in laws),
    )


def _padded(worst: float, big: float, small: float, errors: tuple[float, float, float]) -> float:
    """``worst`` raised by the error of the laws: each difference errs by at most
    ``(big + small)`` times the error of the row's mass (relative, and absolute in l1), and the
    dropped mass counts in full under either coefficient."""
    dropped, relative, absolute = errors
    error = (big + small) * (math.expm1(relative) + absolute) + dropped * (big + small + 1.0)
    return min(1.0, round_up(worst * (1.0 + _REL) + error))


# ---------------------------------------------------------------------- exact scan


@lru_cache(maxsize=8)
def _exact_laws(epsilon0: float, n: int) -> tuple[_FloatArray, tuple[float, float, float]]:
    """``w_m`` for ``m = 0 .. (n - 1) // 2``, stacked, and their errors (:func:`_stacked`)."""
    rows, *errors = _stacked(_others(list(range((n - 1) // 2 + 1)), n - 1, epsilon0))
    return rows, (errors[0], errors[1], errors[2])


def exact_rr_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """``delta(epsilon)`` of one shuffled binary RR release of ``n`` people: the worst case over
    every dataset of the others, padded up by its float error (``n <= EXACT_SCAN_MAX``)."""
    if epsilon >= epsilon0:
        return 0.0
    rows, errors = _exact_laws(epsilon0, n)
    worst, big, small = _divergences(rows, epsilon, epsilon0)
    return _padded(float(worst.max()), big, small, errors)


def exact_rr_epsilon(delta: float, epsilon0: float, n: int) -> float:
    """Smallest epsilon (rounded up) with ``exact_rr_delta <= delta``."""
    return smallest_epsilon(lambda epsilon: exact_rr_delta(epsilon, epsilon0, n), delta, epsilon0)


# ---------------------------------------------------------------------- band scan


@lru_cache(maxsize=2)
def _band_laws(epsilon0: float, n: int) -> tuple[_FloatArray, tuple[float, float, float], float]:
    """The laws of ``V + U_b_low`` of every band, stacked, their errors, and the largest
    ``P[b < b_low]`` (module docstring)."""
    p, r = _report_probabilities(epsilon0)
    last = (n - 1) // 2
    j = max(1, math.ceil((last + 1) / _bands(n, p)) - 1)  # a band holds j + 1 values of m
    blanket = _binomial(j, 2.0 * r)
    coins = _binomial(blanket.start, 0.5)  # the fewest blanket bits kept
    starts = list(range(0, last + 1, j + 1))
    laws = [law.plus(coins) for law in _others(starts, n - 1 - j, epsilon0)]
    rows, dropped, relative, absolute = _stacked([_trimmed(law) for law in laws])
    return rows, (dropped, relative, absolute), blanket.dropped


def _bands(n: int, p: float) -> int:
    """How many bands: ``BANDS``, fewer when the laws are so wide that the stacked rows would
    pass 2^22 values (about 25 standard deviations each); never below 64."""
    width = 25.0 * math.sqrt(n * p * (1.0 - p)) + 64.0
    return int(max(64, min(BANDS, (1 << 22) / width)))


def _trimmed(law: _Law) -> _Law:
    """The law without the values below ``_TRIM`` at either end (their computed mass counted
    dropped; the FFT's float noise sits there, and its error bound is carried already)."""
    keep = np.flatnonzero(law.masses > _TRIM)
    if keep.size == 0:
        return law
    first, last = int(keep[0]), int(keep[-1])
    cut = float(law.masses[:first].sum() + law.masses[last + 1 :].sum())
    return _Law(
        law.start + first,
        law.masses[first : last + 1].copy(),
        law.dropped + cut,
        law.relative,
        law.absolute,
    )


def band_rr_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """An upper bound on ``delta(epsilon)`` of one shuffled binary RR release of ``n`` people,
    over every dataset of the others, from ``BANDS`` bands (module docstring)."""
    if epsilon >= epsilon0:
        return 0.0
    rows, errors, tail = _band_laws(epsilon0, n)
    worst, big, small = _divergences(rows, epsilon, epsilon0)
    return min(1.0, round_up(_padded(float(worst.max()), big, small, errors) + tail))


def band_rr_epsilon(delta: float, epsilon0: float, n: int) -> float:
    """Smallest epsilon (rounded up) with ``band_rr_delta <= delta``."""
    return smallest_epsilon(lambda epsilon: band_rr_delta(epsilon, epsilon0, n), delta, epsilon0)


@lru_cache(maxsize=2)
def _band_starts(epsilon0: float, n: int) -> tuple[_FloatArray, float, float]:
    """The exact laws ``w_m`` at ``_LOWER_STARTS + 1`` evenly spaced ``m`` (all alike
    included), stacked (lower bounds on the worst), and their largest relative and absolute
    errors."""
    last = (n - 1) // 2
    starts = sorted({round(last * i / _LOWER_STARTS) for i in range(_LOWER_STARTS + 1)})
    laws = _others(starts, n - 1, epsilon0)
    rows, _, relative, absolute = _stacked([_trimmed(law) for law in laws])
    return rows, relative, absolute


def band_rr_lower(delta: float, epsilon0: float, n: int) -> float:
    """A lower bound on the exact epsilon at ``delta``: where 9 datasets of the others (evenly
    spaced counts of ones, all alike included), scanned exactly, reach ``delta`` (their float
    error taken off; dropped tails only lower a divergence). With :func:`band_rr_epsilon` it
    brackets the exact epsilon."""
    rows, relative, absolute = _band_starts(epsilon0, n)
    low, high = 0.0, epsilon0
    for _ in range(60):
        middle = 0.5 * (low + high)
        worst, big, small = _divergences(rows, middle, epsilon0)
        lower = float(worst.max()) * (1.0 - _REL) - (big + small) * (
            math.expm1(relative) + absolute
        )
        if lower > delta:
            low = middle
        else:
            high = middle
    return low
