"""Dominating pairs of a shuffled release, as privacy-loss distributions on a lattice.

A *dominating pair* ``(P, Q)`` of a mechanism is a pair of distributions whose hockey-stick
divergences bound the mechanism's for every neighbouring pair of inputs and every level; when
the shuffled output is a post-processing of ``P`` (one input) and of ``Q`` (its neighbour), the
pair dominates it, and releases compose by composing their pairs' loss distributions, under
adaptive composition too (Zhu, Dong, Wang 2022, Thm. 10). Both pairs below are symmetric (a
relabelling swaps ``P`` and ``Q``), so one loss distribution covers both directions.

**Clones** (any ``eps0``-LDP randomizer; Feldman, McMillan, Talwar 2021, Thm. 3.2). ``n - 1``
others each become, with probability ``q``, a clone whose report is that of either input at
random; ``S = 1 + C`` with ``C ~ Bin(n - 1, q)`` reports fall in the two "input" classes, and
the analyst sees how they split. Writing ``B_S`` for the ``Bin(S, 1/2)`` probabilities and
``t = tanh(eps0 / 2) (2a - S) / S``, the pair is::

    P(S, a) = P[1 + C = S] B_S(a) (1 + t),   Q(S, a) = P[1 + C = S] B_S(a) (1 - t),
    loss    = ln((1 + t) / (1 - t)) = ln((S + (e^eps0 - 1) a) / (S + (e^eps0 - 1) (S - a)))

(the FMT pair ``(A + Δ, C - A + 1 - Δ)`` rewritten: ``p B_C(a - 1) + (1 - p) B_C(a) =
B_S(a) (1 + t)``). ``q = e^-eps0`` for any randomizer; ``q = 2 / (e^eps0 + 1)`` (stronger
clones, FMT 2023 with its erratum) for k-ary randomized response.

**Blanket with k** (k-ary randomized response, ``k >= 3``; Balle, Bell, Gascón, Nissim 2019,
"The Privacy Blanket of the Shuffle Model"). k-RR at ``eps0`` reports a uniform value (the
*blanket*) with probability ``g = k / (e^eps0 + k - 1)`` and the true value otherwise. Reveal
to the analyst which of the others drew from the blanket (this only helps them) and the others'
true values: what remains is ``S = 1 + B`` reports, ``B ~ Bin(n - 1, g)`` of them uniform, plus
the one that changes. Only the counts ``h, h'`` of the two values ``x, x'`` that change carry
information; with ``M = h + h' ~ Bin(S, 2/k)`` and ``h | M ~ Bin(M, 1/2)``, reweighted::

    P(S, M, h) = P[1 + B = S] Bin(S, 2/k)(M) B_M(h) k (S + (e^eps0 - 1) h) / (S (e^eps0 + k - 1))
    loss       = ln((S + (e^eps0 - 1) h) / (S + (e^eps0 - 1) (M - h)))

(for ``k = 2`` this is the stronger-clone pair). The other ``S - M`` reports dilute the loss,
which is why this bound improves on the clones by a factor that grows with ``k``.

**Rounding the count down.** One more clone (or blanket report) is a post-processing (add an
independent fair coin, or a uniform report), so the pair with ``S`` replaced by any smaller
value dominates. The values of ``S`` are grouped into bands ``[s, s (1 + 2^-12))`` and each band
uses its smallest ``s``: a few hundred bands instead of tens of thousands of values, at a cost
in epsilon of about ``2^-13`` relative.

**Truncation.** Values of every binomial below ``e^-80`` of mass are dropped; their mass (times
the largest reweighting) goes to the mass at +infinity, counted in full in every delta.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import special
from frameldp.accounting._binomial import binomial_window
from frameldp.accounting.lattice import Lattice

__all__ = ["blanket_band", "blanket_pair", "clone_pair"]

_FloatArray = NDArray[np.float64]

# Binomial values lighter than this are dropped (their mass counted at +infinity).
LOG_CUTOFF = -80.0
# Width of a band of counts, relative: each band uses its smallest count (a post-processing).
CLONE_BAND = 2.0**-12
BLANKET_BAND = 2.0**-10
# Wider bands the blanket pair may take, in turn, when its atoms would pass the work limit.
BLANKET_BANDS = (2.0**-10, 2.0**-8, 2.0**-6, 2.0**-4)
# Work limit of the blanket pair (atoms); above it, at every band, k-RR falls back to the
# stronger clones.
MAX_BLANKET_ATOMS = 1 << 24


def _bands(m: int, q: float, band: float) -> tuple[_FloatArray, _FloatArray, float]:
    """Smallest ``S = 1 + c`` of each band of ``c ~ Bin(m, q)``, the band masses, lost mass."""
    if m == 0:
        return np.ones(1), np.ones(1), 0.0
    c, log_w, lost = binomial_window(m, q, LOG_CUTOFF)
    weights = np.exp(log_w)
    first, last = int(c[0]), int(c[-1])
    starts = [first]
    while True:
        following = max(starts[-1] + 1, math.floor(starts[-1] * (1.0 + band)))
        if following > last:
            break
        starts.append(following)
    index = np.asarray(starts) - first
    return np.asarray(starts, dtype=np.float64) + 1.0, np.add.reduceat(weights, index), lost


@lru_cache(maxsize=64)
def clone_pair(epsilon0: float, n: int, q: float, step: float) -> Lattice:
    """The clone pair of ``n`` shuffled ``epsilon0``-LDP reports at clone probability ``q``."""
    e1 = math.expm1(epsilon0)
    sizes, weights, infinity = _bands(n - 1, q, CLONE_BAND)
    losses: list[_FloatArray] = []
    masses: list[_FloatArray] = []
    for size, weight in zip(sizes, weights, strict=True):
        a, log_b, lost = binomial_window(int(size), 0.5, LOG_CUTOFF)
        # 2 atanh(t) = ln((S + e1 a) / (S + e1 (S - a))) and 1 + t = 2 (S + e1 a) / (S (e1 + 2)),
        # computed without tanh (ill-conditioned near |t| = 1 for large eps0).
        losses.append(np.log1p(e1 * (2.0 * a - size) / (size + e1 * (size - a))))
        masses.append(weight * np.exp(log_b) * 2.0 * (size + e1 * a) / (size * (e1 + 2.0)))
        infinity += weight * lost * 2.0 * (e1 + 1.0) / (e1 + 2.0)
    return _lattice(losses, masses, step, infinity, n, epsilon0)


def _half_width(m: _FloatArray) -> _FloatArray:
    """Half-width ``w`` of the window of ``Bin(m, 1/2)`` kept around ``m / 2``: Hoeffding puts
    at most ``2 e^(-2 w^2 / m) <= 2 e^-80`` outside it."""
    return np.ceil(np.sqrt(-LOG_CUTOFF * np.maximum(m, 1.0) / 2.0)) + 1.0


def blanket_atoms(epsilon0: float, n: int, k: int, band: float = BLANKET_BAND) -> int:
    """How many atoms :func:`blanket_pair` enumerates (its cost), from the window sizes."""
    g = k / (math.exp(epsilon0) + k - 1.0)
    sizes, _, _ = _bands(n - 1, g, band)
    deviation = np.sqrt(sizes * (2.0 / k) * (1.0 - 2.0 / k))
    m_values = np.minimum(2.0 * math.sqrt(-2.0 * LOG_CUTOFF) * deviation + 1.0, sizes + 1.0)
    h_values = 2.0 * _half_width(sizes * 2.0 / k + 13.0 * deviation) + 1.0
    return int(np.sum(m_values * h_values))


def blanket_band(epsilon0: float, n: int, k: int) -> float | None:
    """The narrowest of ``BLANKET_BANDS`` whose blanket pair stays within
    ``MAX_BLANKET_ATOMS`` (None: none does). A wider band rounds more counts down to its
    smallest (each a post-processing away), at a cost in epsilon of about half its width
    relative to the spread of the count: the pair stays valid."""
    for band in BLANKET_BANDS:
        if blanket_atoms(epsilon0, n, k, band) <= MAX_BLANKET_ATOMS:
            return band
    return None


@lru_cache(maxsize=64)
def blanket_pair(
    epsilon0: float, n: int, k: int, step: float, band: float = BLANKET_BAND
) -> Lattice:
    """The blanket pair of ``n`` shuffled reports of k-ary randomized response at ``epsilon0``,
    its counts of blanket reports rounded down within bands ``band`` wide (relative)."""
    e1 = math.expm1(epsilon0)
    z = math.exp(epsilon0) + k - 1.0
    sizes, weights, infinity = _bands(n - 1, k / z, band)
    largest_weight = k * math.exp(epsilon0) / z
    losses: list[_FloatArray] = []
    masses: list[_FloatArray] = []
    for size, weight in zip(sizes, weights, strict=True):
        ms, log_m, lost_m = binomial_window(int(size), 2.0 / k, LOG_CUTOFF)
        width = _half_width(ms)
        infinity += weight * (lost_m + 2.0 * math.exp(LOG_CUTOFF)) * largest_weight
        # One row per M, one column per offset of h from floor(M / 2), masked to 0 <= h <= M.
        offsets = np.arange(-width.max(), width.max() + 1.0)
        m = ms[:, None]
        h = np.floor(m / 2.0) + offsets[None, :]
        inside = (h >= 0.0) & (h <= m) & (np.abs(offsets)[None, :] <= width[:, None])
        m, h = np.broadcast_to(m, h.shape)[inside], h[inside]
        log_pm = np.broadcast_to(log_m[:, None], inside.shape)[inside]
        log_h = special.gammaln(m + 1.0) - special.gammaln(h + 1.0) - special.gammaln(m - h + 1.0)
        log_h -= m * math.log(2.0)
        # ln((S + e1 h) / (S + e1 (M - h))) as log1p of the difference over the denominator.
        losses.append(np.log1p(e1 * (2.0 * h - m) / (size + e1 * (m - h))))
        masses.append(weight * np.exp(log_pm + log_h) * k * (size + e1 * h) / (size * z))
    return _lattice(losses, masses, step, infinity, n, epsilon0)


def _lattice(
    losses: list[_FloatArray],
    masses: list[_FloatArray],
    step: float,
    infinity: float,
    n: int,
    epsilon0: float,
) -> Lattice:
    """Round the atoms up onto the lattice.

    Each mass is a product of at most three binomial probabilities computed as ``exp`` of
    gammaln differences, good to a few ulps of ``gammaln(n + 1)`` each, times factors good to a
    few ulps: 64 ulps of that scale bounds the log error of every mass. Each loss is ``log1p``
    of a ratio ``x`` of sums good to a few ulps; near ``x = -1`` (the lowest loss, ``-eps0``)
    ``log1p`` magnifies that by ``1 / (1 + x) = e^eps0``. Every loss is raised before rounding
    by ``2^-40 (eps0 + ln n + 1) + 2^-48 e^eps0``, far above both.
    """
    scale = max(math.lgamma(n + 1.0), 1.0)
    return Lattice.from_atoms(
        np.concatenate(losses),
        np.concatenate(masses),
        step,
        infinity_mass=min(1.0, infinity),
        log_error=64.0 * math.ulp(scale),
        slack=2.0**-40 * (epsilon0 + math.log(n) + 1.0) + 2.0**-48 * math.exp(epsilon0),
    )
