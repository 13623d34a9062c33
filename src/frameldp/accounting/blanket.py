r"""The privacy blanket of a shuffled release, for every randomizer of the *set* kind (and bit
vectors, through the set randomizer above them).

**Set randomizers.** k-ary randomized response, optimized unary encoding, local hashing, subset
selection, (block) Hadamard response, projective geometry response and one-hot RAPPOR all
report a ``y`` that *supports* a set ``C(y)`` of values, with::

    R(x)(y) = m(y) (1 + (e^eps0 - 1) [x in C(y)])            for every value x and report y

for some ``m(y) >= 0``. Then ``m`` is a *blanket*: ``gamma omega = m`` with ``gamma = sum m``
lies below every ``R(x)``, so each report is drawn from ``omega`` with probability ``gamma``
whatever its sender's value (Balle, Bell, Gascón, Nissim, "The Privacy Blanket of the Shuffle
Model", CRYPTO 2019). Among all ways to split a randomizer so (the *general clone* paradigm),
the blanket is the best one (Su, Cheng, Wang, "Decomposition-Based Optimal Bounds for Privacy
Amplification via Shuffling", IEEE S&P 2026, arXiv:2504.07414). For a pair of values
``x, x'`` the set randomizer is described by three numbers (:class:`Blanket`): ``eps0``,
``inside = P_omega[x in C(Y)]`` and ``both = P_omega[x, x' in C(Y)]``; ``gamma = 1 / (1 +
(e^eps0 - 1) inside)`` follows, as ``R(x)`` sums to one.

**The divergence.** Reveal to the analyst which of the ``n - 1`` others drew from the blanket
and every other report (a post-processing the analyst can only gain from). What remains is
``S = 1 + B`` reports, ``B ~ Bin(n - 1, gamma)``: the person's and ``B`` draws of ``omega``.
With ``h`` (``h'``) the number of them supporting ``x`` (``x'``), the likelihood of the
multiset is ``omega^S (gamma / S) (S + e1 h)`` under ``x`` and the same with ``h'`` under
``x'`` (``e1 = e^eps0 - 1``), so, with ``alpha = e^epsilon``::

    delta(epsilon) = E[(gamma / S) ((1 - alpha) S + e1 (h - alpha h'))_+]

over ``S`` reports of ``omega``. Of those, ``t ~ Bin(S, both)`` support both values;
``M ~ Bin(S - t, r)`` one of them, ``r = 2 (inside - both) / (1 - both)``; and
``c ~ Bin(M, 1/2)`` of those ``x``. So ``h = t + c``, ``h' = t + M - c``, and::

    delta(epsilon) = E_S E_t E_M [(gamma / S) e1 (1 + alpha) E_c (c - tau)_+],
    tau = (alpha e1 M - (1 - alpha)(S + e1 t)) / (e1 (1 + alpha))

with ``E (c - tau)_+ = (M/2) P[Bin(M - 1, 1/2) >= j - 1] - tau P[Bin(M, 1/2) >= j]``,
``j = floor(tau) + 1`` (regularized incomplete beta values).

**Bands.** ``delta`` does not increase with ``S`` (one more blanket report is a
post-processing: add a draw of ``omega``), nor with ``t`` at fixed ``S`` (for ``alpha >= 1``:
one report supporting both values in place of one of the others adds ``Z`` with
``E Z = (alpha - 1) e1 (1 - r/2) >= 0`` to the argument, independent of the rest, so by Jensen
the expectation can only grow; the pair is symmetric, so the same holds below 1). So each band
of ``S`` (of ``t``) may use its smallest value with the band's total probability: an upper
bound at every band width. The widths are fitted per quarter octave of ``epsilon``: the
smallest value moves the argument by at most ``2^-5`` of its spread at the mode (more in the
tails, where the bands carry little weight).

**Errors.** Every binomial is kept on a window outside which Hoeffding's bound leaves
``e^-50``, and the dropped mass is added at its largest possible contribution,
``gamma e^eps0`` (so this bound does not go below about ``10^-19 e^eps0``: smaller deltas
are left to the other methods). The binomial probabilities (gammaln) are taken as good to 64 ulps of
``gammaln(n + 1)`` in the log, each incomplete-beta value to ``2^-32`` relative
(:func:`~frameldp.accounting._binomial.half_tail`: scipy's betainc, measured against mpmath
up to 10^8 trials), and the difference in ``E (c - tau)_+`` is bounded with
both terms' errors. The sum is then padded by ``2^-30`` relative for the float error of the
parameters.

**Bit vectors** (:func:`bit_vector_blanket`). RAPPOR with several ones per value and Bloom
RAPPOR flip each bit of a vector independently, ``P[1] = q1`` on the bits ``B(x)`` a value
sets (at most ``w`` of them) and ``q0`` elsewhere. Take ``omega`` the law of the empty vector
and ``gamma = lo = min(L1, L0)^w`` with ``L1 = q1/q0``, ``L0 = (1 - q1)/(1 - q0)``: a value's
ratio ``l_x = R(x)/omega``, the product of ``L(y_i)`` over ``B(x)``, lies in ``[lo, hi]``
(``hi = max(L1, L0)^w``) with mean 1, so ``R(x) >= gamma omega`` for every value. Its weight
takes up to ``w + 1`` levels, not two, so this is not a set randomizer, but it is *dominated*
by one. The divergence is ``E phi(sum_i (l_x(Y_i) - alpha l_x'(Y_i)))`` over ``S`` draws of
``omega``, with ``phi`` convex (``(.)_+ / S``). (i) Bits both values set make the pair
``(l_x, l_x')`` share a factor ``U``: ``phi(c + a U - alpha a' U')`` is submodular in
``(U, U')`` (``a, a' >= 0``), so the comonotone coupling ``U' = U`` has a smaller mean than an
independent copy (Cambanis, Simons, Stout 1976); replacing it draw by draw, the pair's sets
may be taken disjoint, and ``l_x``, ``l_x'`` independent. (ii) Each is then replaced by the
two-point law on ``{lo, hi}`` with mean 1, which is above it in convex order, and by Jensen
(conditioning on the rest) the mean only grows. What remains is the set randomizer with
``eps0 = ln(hi / lo)``, ``inside = (1 - lo) / (hi - lo)`` and ``both = inside^2``; its
``gamma = 1 / (1 + e1 inside) = lo``. For one-hot RAPPOR (``w = 1``, symmetric bits) it is the
exact blanket. At ``w = 2``, ``b = 0.5`` and ``10^4`` people, ``delta = 10^-6`` holds at
``0.088`` where the clone pair gives ``0.155``.

**Compositions** (:func:`blanket_lattice`) use *connect the dots* (Doroshenko, Ghazi, Kamath,
Kumar, Manurangsi, "Connect the Dots: Tighter Discrete Approximations of Privacy Loss
Distributions", PETS 2022): the hockey-stick curve ``H(alpha) = delta(ln alpha)`` is convex, so
the lower convex envelope of upper bounds ``U_i >= H(alpha_i)`` on a grid lies above ``H``
everywhere; a convex piecewise-linear curve is the curve of a pair whose likelihood ratio takes
the grid's values, with masses read off its slopes. The pair is symmetric, so its curve below
``alpha = 1`` is ``1 - alpha + alpha H(1/alpha)``; that needs ``H'(1+) >= (H(1) - 1) / 2``,
which holds for every symmetric pair (``P[loss 0] >= 0``), and ``H(1)`` is bounded by
``min_i (2 U_i + alpha_i - 1) / (alpha_i + 1)`` (convexity and that slope), which meets it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import optimize
from frameldp.accounting._binomial import (
    HALF_TAIL_ERROR,
    binomial_window,
    half_tail,
    log_binomial_pmf,
)
from frameldp.accounting.lattice import Lattice
from frameldp.accounting.rounding import round_up
from frameldp.errors import ParameterError

__all__ = [
    "Blanket",
    "bit_vector_blanket",
    "blanket_delta",
    "blanket_epsilon",
    "blanket_lattice",
    "set_blanket",
]

_FloatArray = NDArray[np.float64]

# Windows of every binomial leave at most e^LOG_CUTOFF outside (Hoeffding).
LOG_CUTOFF = -50.0
# Relative padding of the result: the float error of the parameters and of the sums.
_PAD = 2.0**-30
# A band's smallest count moves the argument by at most this share of its spread (at the
# mode; more in the tails, where the bands carry little weight): one release, and the grid of
# a composition (coarser: it is evaluated at every point).
BAND_SHARE = 2.0**-5
GRID_BAND_SHARE = 2.0**-3
# The largest eps0 a blanket is built for (e^eps0 stays a float).
MAX_BLANKET_EPSILON0 = 700.0
# Points of the connect-the-dots grid, and the delta at which it stops.
GRID_POINTS = 128
GRID_DELTA = 1e-40


@dataclass(frozen=True)
class Blanket:
    """A set randomizer for one pair of values (module docstring): ``epsilon0``, the
    probability ``inside`` that a blanket report supports a value, and ``both`` that it
    supports both values of the pair."""

    epsilon0: float
    inside: float
    both: float = 0.0

    def __post_init__(self) -> None:
        if not (0.0 < self.epsilon0 <= MAX_BLANKET_EPSILON0 and math.isfinite(self.epsilon0)):
            raise ParameterError(f"blanket: epsilon0 must be in (0, 700], got {self.epsilon0!r}")
        if not (0.0 < self.inside < 1.0):
            raise ParameterError(f"blanket: inside must be in (0, 1), got {self.inside!r}")
        # Both counts are probabilities of a joint law: both <= inside, and the reports
        # supporting neither value have probability 1 - 2 inside + both >= 0 (up to the float
        # rounding of both sides: subset selection of k - 1 of k values sits on that edge).
        if not (max(0.0, 2.0 * self.inside - 1.0) - 2.0**-40 <= self.both < self.inside):
            raise ParameterError(
                f"blanket: both must be in [max(0, 2 inside - 1), inside), got {self.both!r}"
            )

    @property
    def gamma(self) -> float:
        """The blanket's probability, ``1 / (1 + (e^eps0 - 1) inside)``."""
        return 1.0 / (1.0 + math.expm1(self.epsilon0) * self.inside)

    @property
    def one_of(self) -> float:
        """``r``: probability that a report supporting not both supports one of the values
        (at most 1: at the edge every such report supports one)."""
        return min(1.0, 2.0 * (self.inside - self.both) / (1.0 - self.both))


def set_blanket(epsilon0: float, inside: float, both: float = 0.0) -> tuple[Blanket, ...]:
    """The blanket of a set randomizer at ``epsilon0`` whose blanket reports support a value
    with probability ``inside`` and both values of a pair with ``both`` (none at epsilon 0,
    where nothing is learnt, or beyond 700)."""
    if not 0.0 < epsilon0 <= MAX_BLANKET_EPSILON0:
        return ()
    return (Blanket(epsilon0, inside, both),)


def bit_vector_blanket(log_one: float, log_zero: float, weight: int) -> tuple[Blanket, ...]:
    """The set randomizer above a bit-vector randomizer (module docstring, *Bit vectors*):
    each bit a value sets reports 1 with ``e^log_one`` times, and 0 with ``e^log_zero`` times,
    the probability of a clear bit; a value sets at most ``weight`` bits. Empty where the bits
    carry no information (or infinite: a bit that never flips), or beyond ``eps0 = 350``."""
    low, high = sorted((log_one, log_zero))
    if not (math.isfinite(low) and math.isfinite(high) and low < 0.0 < high):
        return ()
    log_low, log_high = weight * low, weight * high
    epsilon0 = log_high - log_low
    if epsilon0 > 350.0:
        return ()
    # (1 - lo) / (hi - lo), in the form that keeps its digits when both are near 1.
    inside = -math.expm1(log_low) / (math.exp(log_low) * math.expm1(epsilon0))
    if not 0.0 < inside < 1.0:  # a bit whose one ratio rounds to 1: no blanket to speak of
        return ()
    return (Blanket(epsilon0, inside, inside * inside),)


def _window(m: _FloatArray, q: float, log_cutoff: float) -> tuple[_FloatArray, _FloatArray]:
    """Per trial count ``m``: the first value and the length of a window of ``Bin(m, q)``
    outside which Hoeffding leaves at most ``2 e^log_cutoff``."""
    half = np.ceil(np.sqrt(-log_cutoff * np.maximum(m, 1.0) / 2.0)) + 1.0
    low = np.maximum(np.floor(m * q - half), 0.0)
    high = np.minimum(np.ceil(m * q + half), m)
    return low, high - low + 1.0


def _bands(
    values: _FloatArray, weights: _FloatArray, width: float
) -> tuple[_FloatArray, _FloatArray]:
    """Bands of consecutive values, each its smallest value and total weight: ``width`` values
    wide at the mean, ``1 + z^2 / 4`` times as wide ``z`` standard deviations away (where the
    bands carry little weight, their rounding matters little); a band's end nearest the mean
    sets its width."""
    total = float(weights.sum())
    mean = float(np.dot(values, weights)) / total
    deviation = math.sqrt(max(float(np.dot((values - mean) ** 2, weights)) / total, 1.0))

    def wide(value: float) -> float:
        z = (value - mean) / deviation
        return width * (1.0 + z * z / 4.0)

    starts = [0]
    while True:
        start = float(values[starts[-1]])
        span = wide(start)
        for _ in range(3):
            span = min(span, wide(min(start + span, max(start, mean))))
        following = starts[-1] + max(1, int(min(1e9, span)))
        if following >= values.size:
            break
        starts.append(following)
    index = np.asarray(starts)
    return values[index], np.add.reduceat(weights, index)


def excess(tau: _FloatArray, m: _FloatArray) -> tuple[_FloatArray, _FloatArray]:
    """``E (c - tau)_+`` for ``c ~ Bin(m, 1/2)``, and a bound on its float error."""
    j = np.floor(tau) + 1.0
    first = 0.5 * m * half_tail(j - 1.0, m - 1.0)
    second = tau * half_tail(j, m)
    below = j <= 0.0  # tau < 0: every value is above it
    value = np.where(below, 0.5 * m - tau, first - second)
    error = HALF_TAIL_ERROR * (first + np.abs(second)) + 1e-300
    return np.maximum(value, 0.0), np.where(below, 0.0, error)


@dataclass(frozen=True)
class _Terms:
    """The terms of the sum over ``(S, t, M)`` for one layout of bands: each term's ``M``,
    its dilution ``S + e1 t``, its weight ``P[S, t band] P[M] gamma / S`` and the mass left
    outside the windows (counted at its largest contribution, ``gamma e^eps0``)."""

    m: _FloatArray
    dilution: _FloatArray
    weight: _FloatArray
    lost: float


def _terms(blanket: Blanket, n: int, log_cutoff: float, alpha: float, share: float) -> _Terms:
    """The terms whose bands keep the argument within ``share`` of its spread at ``alpha``
    (and within less at every smaller ``alpha``; at a larger one they stay an upper bound)."""
    e1 = math.expm1(blanket.epsilon0)
    gamma = blanket.gamma
    largest = gamma * math.exp(blanket.epsilon0)
    if n > 1:
        b, log_w, lost = binomial_window(n - 1, gamma, log_cutoff)
    else:
        b, log_w, lost = np.zeros(1), np.zeros(1), 0.0
    sizes, weights = b + 1.0, np.exp(log_w)
    lost *= largest
    # The smallest count of a band moves the argument by (alpha - 1) per report (e1 times that
    # for t), against a spread of about e1 (1 + alpha) sqrt(S r) / 2.
    mean = float(np.dot(sizes, weights)) / float(weights.sum())
    spread = e1 * (1.0 + alpha) * math.sqrt(max(mean * blanket.one_of, 1.0)) / 2.0
    shift = max(alpha - 1.0, 1e-300)
    s_values, s_weights = _bands(sizes, weights, share * spread / shift)
    columns: list[tuple[_FloatArray, _FloatArray, _FloatArray]] = []
    for size, weight in zip(s_values, s_weights, strict=True):
        if blanket.both > 0.0:
            t, log_t, lost_t = binomial_window(int(size), blanket.both, log_cutoff)
            t_values, t_weights = _bands(t, np.exp(log_t), share * spread / max(shift * e1, 1e-300))
        else:
            t_values, t_weights, lost_t = np.zeros(1), np.ones(1), 0.0
        lost += weight * lost_t * largest
        columns.append((np.full(t_values.size, size), t_values, weight * t_weights))
    size, t, weight = (np.concatenate(column) for column in zip(*columns, strict=True))
    # Every M of every (S, t) band, flattened: M ~ Bin(S - t, r) on its window.
    trials = size - t
    low, length = _window(trials, blanket.one_of, log_cutoff)
    lost += float(weight.sum()) * 2.0 * math.exp(log_cutoff) * largest
    owner = np.repeat(np.arange(size.size), length.astype(np.int64))
    first = np.cumsum(length) - length
    m = low[owner] + (np.arange(owner.size) - first[owner])
    if blanket.one_of < 1.0:
        log_pm = log_binomial_pmf(m, trials[owner], blanket.one_of)
    else:  # every report supporting not both supports one: M = S - t
        log_pm = np.where(m == trials[owner], 0.0, -np.inf)
    # gammaln of counts up to n is good to a few ulps of gammaln(n + 1): 64 of them bound the
    # log error of every probability.
    log_error = 64.0 * math.ulp(max(math.lgamma(n + 1.0), 1.0))
    scale = weight[owner] * np.exp(log_pm + log_error) * gamma / size[owner]
    return _Terms(m, (size + e1 * t)[owner], scale, lost)


def _delta_at(terms: _Terms, blanket: Blanket, alpha: float) -> float:
    """The sum at ``alpha`` (module docstring), its float errors included, padded."""
    e1 = math.expm1(blanket.epsilon0)
    coefficient = e1 * (1.0 + alpha)
    tau = (alpha * e1 * terms.m - (1.0 - alpha) * terms.dilution) / coefficient
    value, error = excess(tau, terms.m)
    total = coefficient * float(np.dot(terms.weight, value + error)) + terms.lost
    return min(1.0, round_up(total * (1.0 + _PAD)))


def _bucket(epsilon: float) -> float:
    """The epsilon a layout of bands is fitted at for ``epsilon``: the next quarter octave
    (one layout serves every epsilon of its quarter octave, with bands as narrow as its
    largest needs)."""
    return float(2.0 ** (math.ceil(4.0 * math.log2(max(epsilon, 2.0**-40))) / 4.0))


@lru_cache(maxsize=16)
def _layout(blanket: Blanket, n: int, bucket: float) -> _Terms:
    return _terms(blanket, n, LOG_CUTOFF, math.exp(bucket), BAND_SHARE)


def _sum(epsilon: float, blanket: Blanket, n: int) -> float:
    """The bound at ``epsilon`` on the layout of its quarter octave: :func:`blanket_delta`
    and :func:`blanket_epsilon` read one curve, so ``delta(epsilon(delta)) <= delta``."""
    return _delta_at(_layout(blanket, n, _bucket(epsilon)), blanket, math.exp(epsilon))


@lru_cache(maxsize=4096)
def blanket_delta(epsilon: float, blanket: Blanket, n: int) -> float:
    """An upper bound on ``delta(epsilon)`` of ``n`` shuffled reports of the set randomizer
    ``blanket`` (module docstring); 0 from ``eps0`` on."""
    if epsilon >= blanket.epsilon0:
        return 0.0
    return _sum(max(epsilon, 0.0), blanket, n)


@lru_cache(maxsize=1024)
def blanket_epsilon(delta: float, blanket: Blanket, n: int, high: float) -> float:
    """The smallest epsilon (rounded up, at most ``high``, an epsilon known to hold) whose
    :func:`blanket_delta` is at most ``delta``. The curve only decreases (within a quarter
    octave as epsilon grows; from one to the next its bands narrow), so Brent's method finds
    its crossing; a first solve on coarse bands (above the curve) narrows the bracket."""
    high = min(high, blanket.epsilon0)
    coarse = _terms(blanket, n, LOG_CUTOFF, math.exp(high), GRID_BAND_SHARE)
    coarse_of = lambda epsilon: _delta_at(coarse, blanket, math.exp(epsilon))  # noqa: E731
    high = _root(coarse_of, delta, high, 1e-3)
    return _root(lambda epsilon: _sum(epsilon, blanket, n), delta, high, 1e-7)


def _root(delta_of: Callable[[float], float], delta: float, high: float, relative: float) -> float:
    """An epsilon in ``[0, high]`` with ``delta_of`` at most ``delta``, within ``relative``
    of the smallest (then rounded up); ``high`` when none is."""

    def excess_log(epsilon: float) -> float:
        value = delta_of(epsilon)
        return (math.log(value) if value > 0.0 else -math.inf) - math.log(delta)

    if high == 0.0 or excess_log(high) > 0.0:
        return high
    # The answer is usually just below high (a coarser bound's answer): try a narrow bracket.
    low = 0.97 * high
    if excess_log(low) <= 0.0:
        low = 0.0
        if excess_log(0.0) <= 0.0:
            return 0.0
    tolerance = relative * high
    root = optimize.brentq(excess_log, low, high, xtol=tolerance, rtol=relative)
    while root < high and excess_log(root) > 0.0:
        root += tolerance
        tolerance *= 2.0
    return min(high, round_up(root))


def connect_the_dots(
    alphas: _FloatArray, bounds: _FloatArray
) -> tuple[_FloatArray, _FloatArray, float]:
    """A symmetric pair whose hockey-stick curve lies above every curve ``H`` of a symmetric
    pair with ``H(alphas[i]) <= bounds[i]`` (module docstring): its losses and their
    probabilities under the first distribution, and a bound on their l1 distance from the
    exact construction's (float rounding). ``alphas`` increase from above 1 and the last
    bound is 0 (no loss reaches its log)."""
    # H(1) <= min (2 U + alpha - 1) / (alpha + 1): convexity and H'(1+) >= (H(1) - 1) / 2.
    start = min(1.0, float(np.min((2.0 * bounds + alphas - 1.0) / (alphas + 1.0))))
    xs = np.concatenate([[1.0], alphas])
    ys = np.concatenate([[start], bounds])
    hull = _lower_hull(xs, ys)
    x, y = xs[hull], ys[hull]
    slopes = np.diff(y) / np.diff(x)  # increasing (convex), the last 0 after the curve ends
    slopes = np.concatenate([slopes, [0.0]])
    # Q puts slope jumps at each vertex above 1 (likelihood ratio x), P x times as much.
    q_mass = np.maximum(np.diff(slopes), 0.0)
    ratios = x[1:]
    p_mass = ratios * q_mass
    losses = np.log(ratios)
    # The mirror images below 0 (the pair is symmetric), and what is left at loss 0: exactly
    # none when the first slope is the steepest allowed, so float rounding can leave the sum
    # a few ulps above 1; that excess, and the float error of the sum of a few hundred masses
    # (2^-44), is returned as an l1 error (counted in every delta).
    total = float(p_mass.sum() + q_mass.sum())
    middle = max(0.0, 1.0 - total)
    keep = p_mass > 0.0
    return (
        np.concatenate([losses[keep], [0.0], -losses[keep]]),
        np.concatenate([p_mass[keep], [middle], q_mass[keep]]),
        max(0.0, total - 1.0) + 2.0**-44,
    )


def _lower_hull(xs: _FloatArray, ys: _FloatArray) -> list[int]:
    """Indices of the lower convex hull of points with increasing ``xs``."""
    hull: list[int] = []
    for index in range(xs.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # Drop b when it lies on or above the chord from a to the new point.
            cross = (xs[b] - xs[a]) * (ys[index] - ys[a]) - (ys[b] - ys[a]) * (xs[index] - xs[a])
            if cross > 0.0:
                break
            hull.pop()
        hull.append(index)
    return hull


def blanket_lattice(blankets: tuple[Blanket, ...], n: int, step: float, scale: float) -> Lattice:
    """:func:`blanket_dots` on a lattice of ``step``."""
    losses, masses, error = blanket_dots(blankets, n, scale)
    epsilon0 = min(blanket.epsilon0 for blanket in blankets)
    # exp and log round trips move a grid loss by a few ulps: each is raised by far more.
    return Lattice.from_atoms(
        losses, masses, step, mass_error=error, slack=2.0**-40 * (epsilon0 + 1.0)
    )


@lru_cache(maxsize=64)
def blanket_dots(
    blankets: tuple[Blanket, ...], n: int, scale: float
) -> tuple[_FloatArray, _FloatArray, float]:
    """The connect-the-dots pair of ``n`` shuffled reports (losses, masses, l1 error), above the
    curve of every pair in ``blankets`` (one per kind of pair of values; the largest bound
    counts at each point): the curves bounded on ``GRID_POINTS`` epsilons evenly spread up to
    where they fall below ``GRID_DELTA`` (searched from ``scale``, an epsilon near their
    value at delta 1e-6), then 0 at ``eps0`` (no loss exceeds it)."""
    epsilon0 = min(blanket.epsilon0 for blanket in blankets)

    def layouts(top: float) -> list[tuple[Blanket, _Terms]]:
        # Bands fitted at twice the scale: far enough out for the bulk of every composition,
        # and still upper bounds (if looser) out in the tails beyond.
        alpha = math.exp(min(top, 2.0 * scale))
        return [(b, _terms(b, n, LOG_CUTOFF, alpha, GRID_BAND_SHARE)) for b in blankets]

    def bound(terms: list[tuple[Blanket, _Terms]], epsilon: float) -> float:
        return max(_delta_at(layout, blanket, math.exp(epsilon)) for blanket, layout in terms)

    top = min(epsilon0, 2.0 * max(scale, 1e-12))
    terms = layouts(top)
    while top < epsilon0 and bound(terms, top) > GRID_DELTA:
        top = min(epsilon0, 2.0 * top)
        terms = layouts(top)
    epsilons = top * np.arange(1, GRID_POINTS + 1) / GRID_POINTS
    bounds = np.array([bound(terms, epsilon) for epsilon in epsilons])
    if top < epsilon0:
        epsilons, bounds = np.append(epsilons, epsilon0), np.append(bounds, 0.0)
    else:
        bounds[-1] = 0.0
    return connect_the_dots(np.exp(epsilons), bounds)
