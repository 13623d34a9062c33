r"""Projective geometry response (PGR): a report is one hyperplane of a projective space over a
prime field, likely through the true value's point.

The geometry
------------
``q`` is a prime and ``t >= 2``. The projective space ``P^(t-1)(F_q)`` has
``K = (q^t - 1)/(q - 1)`` points, the lines through the origin of ``F_q^t``; each is written by
its *canonical* vector, whose leading (first nonzero) coordinate is 1. Value ``x`` of the domain
(``k <= K`` values) is point number ``x``: points are numbered by the position ``j`` of their
leading 1 (``j = 0`` first, ``q^(t-1-j)`` points each), then by the base-``q`` number of their
``t - 1 - j`` trailing coordinates. Hyperplanes ``{v : <h, v> = 0}`` are numbered as the points
``h`` (the space is self-dual). Each hyperplane holds ``D = (q^(t-1) - 1)/(q - 1)`` points, two
distinct points lie together in ``D_2 = (q^(t-2) - 1)/(q - 1)`` hyperplanes, and
``K - D = q^(t-1)`` hyperplanes miss a point: the hyperplanes through the points form a
symmetric 2-design, so every pair of values is alike (a relabelling by a linear map).

A report is a hyperplane ``h``: with probability ``p = D e^eps / (D e^eps + K - D)`` uniform
among the ``D`` through ``x``, else uniform among the ``q^(t-1)`` missing it, so
``P[h | x] = p / D`` or ``(1 - p) / (K - D)``, a ratio of ``e^eps``. It is subset selection
with the ``K`` hyperplanes as its only subsets: ``ceil(log2 K)`` bits a report instead of
``k``, for about subset selection's variance at ``q`` near ``e^eps + 1`` [1]_.

Sampling is exact, without rejection. With ``j`` the leading position of ``x`` (``x_j = 1``),
the vectors ``e_i - x_i e_j`` (``i != j``) are a basis of ``x``'s orthogonal complement, so
``y_i = c_i`` (``i != j``), ``y_j = s - sum_{i != j} c_i x_i`` has ``<y, x> = s``. Uniform
digits ``c`` in ``F_q^(t-1) \ {0}`` with ``s = 0`` give a uniform nonzero vector of the
complement, and so (canonicalized) a uniform hyperplane through ``x``, each of its ``q - 1``
multiples equally often; uniform ``c`` in ``F_q^(t-1)`` with ``s = 1`` give every hyperplane
missing ``x`` exactly once (by its one multiple with ``<y, x> = 1``). The digits are one exactly
uniform integer in ``[1, q^(t-1))`` or ``[0, q^(t-1))``.

The server
----------
``C_v``, the reports whose hyperplane holds ``v``, is ``sum_h N[h] [<h, v> = 0]`` for the
report histogram ``N``: ``O(K k)`` directly. The hyperplanes whose leading 1 is at position
``j`` have ``<h, v> = v_j + <h', v'>`` over their ``m = t - 1 - j`` trailing coordinates
``h'``, and ``v' = a u`` for the canonical vector ``u`` of ``v'``'s line; so they hold ``v``
when ``<h', u> = -v_j / a``, and each block needs only, for every line ``u`` of ``F_q^m``,
the histogram ``P_u`` of ``<h', u>`` over its reports. That is a Radon transform over
``F_q^m``: writing the indicator as ``(1/q) sum_a w^(a (<h', u> - s))`` gives
``P_u[s] = (1/q) sum_a w^(-a s) F[a u]`` (``w = e^(2 pi i / q)``), the inverse transform
along the line of the block's ``m``-dimensional transform ``F``. Then every value looks up
one count per block: ``O(q^(t-1) t log q + k t)`` in all, against ``O(n + k e^eps log k)``
for the authors' dynamic programme [1]_. The counts are integers below ``2**40`` and the
rounding error is far below 1/2, so they are exact. The transforms run while the largest
block's ``q^(t-1)`` cells are at most ``2**23`` (128 MiB); beyond that the server looks every
value up against every distinct report, ``O(min(n, K) k t)``, and
:meth:`ProjectiveGeometryResponse.costs` says so.

The field is chosen, unless given, as the prime ``q`` with the smallest variance averaged over
the buckets (exact: :func:`~frameldp.core.estimation.mean_direct_variance`) among those whose
transform fits; ``t`` is then the smallest with ``K >= k``. Only prime fields are used (the
authors also allow prime powers), so ``q`` may sit a little off its ideal ``e^eps + 1``.

References
----------
.. [1] V. Feldman, J. Nelson, H. Nguyen, K. Talwar, "Private Frequency Estimation via
   Projective Geometry", ICML 2022 (Sec. 3, Algorithm 1; Sec. 4, reconstruction).
.. [2] M. Ye, A. Barg, "Optimal Schemes for Discrete Distribution Estimation under Locally
   Differential Privacy", IEEE Trans. Inf. Theory 64(8), 2018 (subset selection).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final, TypeVar

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import PrivacyEvent, PrivacyGuarantee, ProjectiveGeometryEvent, PureDP
from frameldp.accounting.rounding import log_upper
from frameldp.arguments import check_codes, check_epsilon
from frameldp.core.columns import integer_reports, single_codes
from frameldp.core.encoding import Domain
from frameldp.core.estimation import (
    FrequencyEstimate,
    GroupEstimates,
    debias_direct_counts,
    debias_direct_groups,
    mean_direct_variance,
)
from frameldp.core.mechanisms._codes import CodeReports, codes_array
from frameldp.core.mechanisms._longitudinal import (
    TwoStage,
    check_epsilon_infinity,
    mixed_inclusion,
)
from frameldp.core.mechanisms._memo import randomize_with_users
from frameldp.core.mechanisms._noise import is_prime, noise_numerator
from frameldp.core.mechanisms.protocol import (
    Capability,
    FrequencyEstimation,
    GroupStatistics,
    OracleCosts,
    Statistic,
    release_size,
)
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import PRECISION_BITS, RandomSource, Rows
from frameldp.errors import ParameterError, shown

__all__ = ["MAX_FIELD_SIZE", "ProjectiveGeometryResponse", "ProjectiveSpace", "optimal_field"]

_ONE: Final = 1 << PRECISION_BITS
# A block's transform: at most this many complex cells (128 MiB), and as many along its lines.
_TRANSFORM_CELLS: Final = 1 << 23
# Above this many reports the transform's float sums could lose the exact integer.
_TRANSFORM_REPORTS: Final = 1 << 40
# The largest field: products of coordinates (t q^2) stay exact in int64 and float64, and the
# tables of inverses stay small. The variance-optimal field is near e^eps + 1, far below.
MAX_FIELD_SIZE: Final = 1 << 20
# Reports' hyperplane numbers are stored as uint32; a uniform digit draw takes at most 2**32.
_MAX_POINTS: Final = 1 << 32
# Values whose sums the server forms at once (an (block, t) array per field element).
_VALUE_BLOCK: Final = 1 << 16
# Distinct reports x values whose incidences the lookup server forms at once.
_LOOKUP_BLOCK: Final = 1 << 22


def _points(q: int, t: int) -> int:
    """``(q^t - 1) / (q - 1)``: the points of ``P^(t-1)(F_q)`` (0 for ``t = 0``)."""
    return int((q**t - 1) // (q - 1))


@dataclass(frozen=True)
class ProjectiveSpace:
    """``P^(t-1)(F_q)`` for a prime ``q``: its points numbered as in the module docstring."""

    q: int
    t: int

    @property
    def points(self) -> int:
        """``K = (q^t - 1) / (q - 1)``, the number of points (and of hyperplanes)."""
        return _points(self.q, self.t)

    @property
    def per_hyperplane(self) -> int:
        """``D``: the points of one hyperplane (the hyperplanes through one point)."""
        return _points(self.q, self.t - 1)

    @property
    def per_pair(self) -> int:
        """``D_2``: the hyperplanes through two distinct points."""
        return _points(self.q, self.t - 2)

    @property
    def cells(self) -> int:
        """``q^t``: the vectors of ``F_q^t`` (the transform's grid)."""
        return int(self.q**self.t)

    @cached_property
    def _powers(self) -> NDArray[np.int64]:
        """``q^(t-1-i)``: the place value of coordinate ``i``."""
        return self.q ** np.arange(self.t - 1, -1, -1, dtype=np.int64)

    @cached_property
    def _offsets(self) -> NDArray[np.int64]:
        """The first point number with its leading 1 at each position (and ``K`` last)."""
        return np.concatenate([[0], np.cumsum(self._powers)]).astype(np.int64)

    @cached_property
    def _inverses(self) -> NDArray[np.int64]:
        """``a^-1 mod q`` for ``a`` in ``[1, q)`` (index 0 unused)."""
        return _field_inverses(self.q)

    def coordinates(self, numbers: NDArray[np.int64]) -> NDArray[np.int64]:
        """``(n, t)`` canonical vectors of point numbers in ``[0, K)``."""
        value = self.cell_numbers(numbers)
        digits: NDArray[np.int64] = (value[:, None] // self._powers[None, :]) % self.q
        return digits

    def numbers(self, vectors: NDArray[np.int64]) -> NDArray[np.int64]:
        """Point numbers of nonzero ``(n, t)`` vectors with coordinates in ``[0, q)``: each is
        scaled to its canonical multiple first."""
        lead = np.argmax(vectors != 0, axis=1)
        scale = self._inverses[vectors[np.arange(vectors.shape[0]), lead]]
        canonical = (vectors * scale[:, None]) % self.q
        value = canonical @ self._powers
        return np.asarray(value + self._offsets[lead] - self._powers[lead], dtype=np.int64)

    def cell_numbers(self, numbers: NDArray[np.int64]) -> NDArray[np.int64]:
        """The base-``q`` value of each point's canonical vector (its leading 1, then its
        trailing digits): its cell of ``F_q^t``."""
        numbers = np.asarray(numbers, dtype=np.int64)
        lead = np.searchsorted(self._offsets, numbers, side="right") - 1
        return np.asarray(numbers - self._offsets[lead] + self._powers[lead], dtype=np.int64)

    def hyperplanes(
        self, codes: NDArray[np.int64], digits: NDArray[np.int64], missing: NDArray[np.bool_]
    ) -> NDArray[np.int64]:
        """Hyperplane numbers ``h`` with ``<h, x> = 0`` (``missing`` false) or ``1`` (true) for
        the points ``x`` numbered ``codes``, built from ``t - 1`` base-``q`` ``digits`` per row
        (integers in ``[0, q^(t-1))``; nonzero where ``missing`` is false): the map of the
        module docstring, one to one onto its hyperplanes up to their ``q - 1`` multiples."""
        q, t = self.q, self.t
        x = self.coordinates(codes)
        lead = np.argmax(x != 0, axis=1)  # x[lead] = 1
        # The t - 1 digits, most significant first, fill the coordinates other than lead.
        places = self.q ** np.arange(t - 2, -1, -1, dtype=np.int64)
        c = (digits[:, None] // places[None, :]) % q
        position = np.arange(t, dtype=np.int64)[None, :]
        slot = np.minimum(position - (position > lead[:, None]), t - 2)
        y = np.where(position == lead[:, None], 0, np.take_along_axis(c, slot, axis=1))
        dot = np.sum(y * x, axis=1) % q
        y[np.arange(y.shape[0]), lead] = (missing.astype(np.int64) - dot) % q
        return self.numbers(y)

    def support_counts(
        self, histograms: NDArray[np.int64], k: int, rows: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """``C_v`` for ``v`` in ``[0, k)`` of each row of the ``(groups, K)`` report
        ``histograms`` (``rows``: each row's total), by the transform or the lookup (module
        docstring)."""
        if self.transform_fits(int(rows.max(initial=0))):
            return self._transformed(histograms, k)
        return np.stack([self._looked_up(histogram, k) for histogram in histograms])

    @property
    def block_cells(self) -> int:
        """``q^(t-1)``: the largest block's transform (the hyperplanes with their leading 1
        first)."""
        return int(self.q ** (self.t - 1))

    def transform_fits(self, n: int) -> bool:
        """Whether the transform server runs for ``n`` reports."""
        return self.block_cells <= _TRANSFORM_CELLS and n < _TRANSFORM_REPORTS

    def _transformed(self, histograms: NDArray[np.int64], k: int) -> NDArray[np.int64]:
        """``C_v`` block by block (module docstring): the hyperplanes ``h`` with their leading
        1 at ``j`` have ``<h, v> = v_j + <h', v'>`` over the ``m = t - 1 - j`` trailing
        coordinates, so they hold ``v`` when ``<h', u> = -v_j / a`` for ``v' = a u``, ``u`` the
        canonical vector of ``v'``'s line. Each line's histogram of ``<h', u>``
        (:meth:`_Lines.counts`) is looked up once per value and block."""
        q, t = self.q, self.t
        groups = histograms.shape[0]
        totals = np.zeros((groups, k), dtype=np.int64)
        cells = self.cell_numbers(np.arange(k, dtype=np.int64))
        chunk = max(1, _TRANSFORM_CELLS // self.block_cells)
        for j in range(t):
            block = histograms[:, self._offsets[j] : self._offsets[j + 1]]
            if not block.any():
                continue
            width = t - 1 - j
            lines = _Lines(q, width, self._inverses)
            # v' is the low `width` base-q digits of v's cell, v_j the next one.
            head, suffix = np.divmod(cells, q**width)
            line = lines.line_of[suffix]
            shift = (-(head % q) * self._inverses[lines.scale_of[suffix]]) % q
            for start in range(0, groups, chunk):
                counts = lines.counts(block[start : start + chunk])
                totals[start : start + chunk] += counts[:, line, shift]
        return totals

    def _looked_up(self, histogram: NDArray[np.int64], k: int) -> NDArray[np.int64]:
        """``C_v`` from the distinct reports, a block of (reports x values) at a time; the
        inner products are exact in float64 (each below ``t q^2 < 2**53``)."""
        present = np.flatnonzero(histogram)
        counts = histogram[present].astype(np.float64)
        h = self.coordinates(present).astype(np.float64)
        totals = np.zeros(k, dtype=np.float64)
        block = max(1, _LOOKUP_BLOCK // max(present.size, 1))
        for low in range(0, k, block):
            v = self.coordinates(np.arange(low, min(k, low + block), dtype=np.int64))
            through = np.fmod(h @ v.T.astype(np.float64), self.q) == 0
            totals[low : low + v.shape[0]] = counts @ through
        return np.rint(totals).astype(np.int64)


def _field_inverses(q: int) -> NDArray[np.int64]:
    """``a^-1 = a^(q-2) mod q`` for every ``a`` of ``F_q`` (0 for ``a = 0``), by square and
    multiply over the whole field at once (products below ``q^2 <= 2**40``)."""
    base = np.arange(q, dtype=np.int64)
    result = np.ones(q, dtype=np.int64)
    exponent = q - 2
    while exponent > 0:
        if exponent & 1:
            result = result * base % q
        base = base * base % q
        exponent >>= 1
    result[0] = 0
    return result


def _scaled_values(q: int, width: int) -> NDArray[np.int64]:
    """``M[e, w]``: the base-``q`` value of ``e w`` (coordinates times ``e`` mod ``q``) for
    every vector ``w`` of ``F_q^width`` by its value, ``(q, q^width)``: digit by digit,
    ``M[e, d q^(i-1) + r] = (e d mod q) q^(i-1) + M[e, r]``."""
    table = np.zeros((q, 1), dtype=np.int64)
    digits = np.arange(q, dtype=np.int64)
    for i in range(1, width + 1):
        lead = (np.multiply.outer(digits, digits) % q) * q ** (i - 1)
        table = (lead[:, :, None] + table[:, None, :]).reshape(q, q**i)
    return table


class _Lines:
    """The lines through the origin of ``F_q^width``, for one block of the server: ``u``
    numbered as the points of ``P^(width-1)`` and, last, ``u = 0``; ``line_of[w]`` and
    ``scale_of[w]`` give each vector (by its base-``q`` value) as ``w = scale * u``."""

    def __init__(self, q: int, width: int, inverses: NDArray[np.int64]) -> None:
        self.q, self.width = q, width
        self.size = _points(q, width)  # lines; u = 0 is number `size`
        self.line_of = np.full(q**width, self.size, dtype=np.int64)
        self.scale_of = np.ones(q**width, dtype=np.int64)
        self.multiples = np.zeros((q, self.size), dtype=np.int64)  # [a, u]: the value of a u
        if width == 0:
            return
        scaled = _scaled_values(q, width - 1)
        first = 0  # the number of the first line whose leading 1 is at `position`
        for position in range(width):
            place = q ** (width - 1 - position)
            # The vectors with leading digit d at `position`: w = d place + r, on the line of
            # u = place + (r / d), as w = d u.
            lead = np.arange(1, q, dtype=np.int64)[:, None]
            rest = np.arange(place, dtype=np.int64)[None, :]
            w = lead * place + rest
            self.line_of[w] = first + scaled[inverses[lead], rest]
            self.scale_of[w] = lead
            self.multiples[:, first : first + place] = (
                np.arange(q, dtype=np.int64)[:, None] * place + scaled[:, :place]
            )
            first += place

    def counts(self, block: NDArray[np.int64]) -> NDArray[np.int64]:
        """``P[g, u, s]``: the reports of group ``g`` in the block (histograms over the
        trailing coordinates ``h'``, by base-``q`` value) with ``<h', u> = s``; for ``u = 0``
        the block's total at ``s = 0``.

        ``P[u, s] = (1/q) sum_a e^(2 pi i a s / q) F[a u]`` with ``F`` numpy's transform of
        the block: the inverse transform over ``a`` of ``F`` along the line. The counts are
        integers below ``2**40`` and the rounding error far below 1/2, so rounding is exact.
        """
        q, width, groups = self.q, self.width, block.shape[0]
        result = np.zeros((groups, self.size + 1, q), dtype=np.int64)
        result[:, -1, 0] = block.sum(axis=1)
        if width == 0:
            return result
        spectrum = np.fft.fftn(
            block.astype(np.float64).reshape((groups,) + (q,) * width), axes=range(1, width + 1)
        ).reshape(groups, -1)
        along = spectrum[:, self.multiples.T]  # (groups, u, a)
        result[:, :-1, :] = np.rint(np.fft.ifft(along, axis=2).real)
        return result


def _better(
    rank: tuple[bool, float, int, ProjectiveSpace], best: tuple[bool, float, int, ProjectiveSpace]
) -> bool:
    """Whether a space ranks before the best so far: a server that fits, then the smaller
    variance, then (variances within a relative 1e-9, as at huge epsilon) fewer cells."""
    if rank[0] != best[0]:
        return not rank[0]
    if math.isclose(rank[1], best[1], rel_tol=1e-9):
        return rank[2] < best[2]
    return rank[1] < best[1]


def _primes(limit: int) -> list[int]:
    """The primes up to ``limit`` (a sieve)."""
    sieve = np.ones(limit + 1, dtype=bool)
    sieve[:2] = False
    for p in range(2, math.isqrt(limit) + 1):
        if sieve[p]:
            sieve[p * p :: p] = False
    return [int(q) for q in np.flatnonzero(sieve)]


def _dimension(q: int, k: int) -> int:
    """The smallest ``t >= 2`` with ``(q^t - 1)/(q - 1) >= k``."""
    t = 2
    while (q**t - 1) // (q - 1) < k:
        t += 1
    return t


def _out_numerator(epsilon: float, space: ProjectiveSpace) -> int:
    """``P[x not in h] = (K - D) / (D e^eps + K - D)`` as a multiple of ``2**-64``, rounded
    up (more noise)."""
    d = space.per_hyperplane
    return noise_numerator((space.points - d) / d, epsilon)


_P = TypeVar("_P", Fraction, float)


def _supports(p: _P, space: ProjectiveSpace) -> tuple[_P, _P]:
    """``(p, b)``: a value's point in a report of it, and in a report of another value
    (``D_2 / D`` of the hyperplanes through the true point, ``(D - D_2)/(K - D)`` of the
    others); exact for a realized ``p``, in floating point for a nominal one."""
    d, d2, points = space.per_hyperplane, space.per_pair, space.points
    return p, p * Fraction(d2, d) + (1 - p) * Fraction(d - d2, points - d)


def optimal_field(epsilon: float, k: int) -> ProjectiveSpace:
    """The space of :class:`ProjectiveGeometryResponse`'s default: the prime ``q`` with the
    smallest mean variance (at the nominal ``p``) among those whose server transform fits,
    ``t`` the smallest with ``K >= k`` (module docstring)."""
    e = math.exp(min(epsilon, 40.0))
    best: tuple[bool, float, int, ProjectiveSpace] | None = None
    # Past 4 (e^eps + 1) the variance only grows, and past 2k + 16 every q gives a line
    # (t = 2) padded further: the best is below both.
    for q in _primes(min(MAX_FIELD_SIZE, max(8, min(math.ceil(4 * (e + 1)), 2 * k + 16)))):
        t = _dimension(q, k)
        space = ProjectiveSpace(q, t)
        if space.points >= _MAX_POINTS:
            continue
        d, points = space.per_hyperplane, space.points
        p, other = _supports(d * e / (d * e + points - d), space)
        variance = float(mean_direct_variance(p, other, k)) if p > other else math.inf
        rank = (space.block_cells > _TRANSFORM_CELLS, variance, space.cells, space)
        if best is None or _better(rank, best):
            best = rank
    if best is None:
        raise ParameterError(f"ProjectiveGeometryResponse: no projective space holds {k} values")
    return best[3]


@register("projective_geometry_response")
@dataclass(frozen=True)
class ProjectiveGeometryResponse(TwoStage, CodeReports, FrequencyEstimation):
    r"""Projective geometry response over a public domain of ``k`` buckets.

    A report is the number of one hyperplane of ``P^(t-1)(F_q)`` (``K >= k`` points, value
    ``x`` is point ``x``): through ``x`` with probability ``p = D e^eps / (D e^eps + K - D)``,
    else one missing it, uniformly either way (module docstring). ``ceil(log2 K)`` bits a
    report; about subset selection's variance; an ``O(n + k e^eps log k)`` server.

    Parameters
    ----------
    epsilon
        Target privacy loss (> 0).
    domain
        The public domain (list, categorical dtype or :class:`~frameldp.core.encoding.Domain`).
    field_size
        The prime ``q``; ``None`` (default) picks the variance-optimal one whose server
        transform fits (:func:`optimal_field`).
    epsilon_infinity
        Longitudinal PGR: a *permanent* hyperplane drawn at ``epsilon_infinity``
        (>= ``epsilon``), memoized per (user, value) when reports come with users; every report
        keeps it or, with a fixed probability drawn fresh each time, sends a uniformly random
        hyperplane instead, so that one report is ``epsilon``-LDP end to end. ``None``
        (default): one stage.

    Privacy
    -------
    ``P[h | x]`` is ``p / D`` when ``h`` holds ``x`` and ``(1 - p)/(K - D)`` otherwise, a ratio
    of ``p (K - D) / ((1 - p) D) = e^epsilon``: epsilon-LDP [1]_. The probability of missing
    ``x`` is realized exactly as a multiple of ``2**-64`` at least as large as requested (more
    noise); ``privacy`` reports the epsilon of the realized ``p``, rounded up, with one
    :class:`~frameldp.accounting.ProjectiveGeometryEvent`: the worst-case loss is
    ``+eps, -eps, 0`` in proportions ``e^eps : 1 : w``, ``w = (e^eps D_2 + K - 2D + D_2) /
    (D - D_2)``, the same for every pair of values (exact Rényi curve, tight zCDP, exact
    composition; :mod:`frameldp.accounting.events.ternary`).

    With ``epsilon_infinity``: a uniform hyperplane has probability ``1/K`` whatever the value,
    so the permanent hyperplane (inclusion ``p_1`` at ``epsilon_infinity``) replaced by a
    uniform one with probability ``r`` is, end to end, PGR with inclusion
    ``(1 - r) p_1 + r D / K``, as for subset selection. Any number of reports of one value are a
    post-processing of the permanent hyperplane: ``epsilon_infinity`` (RAPPOR's argument [2]_,
    Thm. 1). :meth:`guarantee` gives a :class:`~frameldp.accounting.MemoizedEvent`.

    Estimation
    ----------
    Bucket ``j`` lies in a report of ``j`` with probability ``p`` and in a report of another
    value with ``b = p D_2 / D + (1 - p)(D - D_2)/(K - D)``; ``ĉ_j = (C_j - n b)/(p - b)`` is
    unbiased with variance ``(c_j p (1 - p) + (n - c_j) b (1 - b)) / (p - b)^2``.

    References
    ----------
    .. [1] V. Feldman, J. Nelson, H. Nguyen, K. Talwar, "Private Frequency Estimation via
       Projective Geometry", ICML 2022.
    .. [2] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
       Privacy-Preserving Ordinal Response", CCS 2014.

    Examples
    --------
    >>> mech = ProjectiveGeometryResponse(4.0, domain=list(range(1000)))
    >>> mech.field_size, mech.dimension, mech.num_points, mech.report_bits
    (53, 3, 2863, 12)
    >>> mech.privacy.epsilon <= 4.0 + 1e-9
    True
    """

    name: ClassVar[str] = "projective_geometry_response"
    title: ClassVar[str] = "projective geometry response"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {
            Capability.CALLER_KEY,
            Capability.FREQUENCY_ORACLE,
            Capability.INTEGER_REPORTS,
            Capability.MEMOIZATION,
        }
    )

    epsilon: float
    domain: Domain = field(kw_only=True)
    field_size: int | None = field(default=None, kw_only=True)
    epsilon_infinity: float | None = field(default=None, kw_only=True)
    _space: ProjectiveSpace = field(init=False, repr=False, compare=False)
    _out_numerator: int = field(init=False, repr=False, compare=False)
    _redraw_numerator: int = field(init=False, repr=False, compare=False)
    _inclusion: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "ProjectiveGeometryResponse"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        epsilon = check_epsilon(owner, "epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        k = self.domain.size  # at least 2 (Domain)
        q = self.field_size
        if q is None:
            space = optimal_field(epsilon, k)
        elif (
            isinstance(q, bool)
            or not isinstance(q, int | np.integer)
            or not 2 <= q <= MAX_FIELD_SIZE
            or not is_prime(int(q))
        ):
            near = ""
            if isinstance(q, int | np.integer) and 2 < q <= MAX_FIELD_SIZE:
                below = next(p for p in range(int(q) - 1, 1, -1) if is_prime(p))
                above = next(p for p in range(int(q) + 1, 2 * int(q) + 2) if is_prime(p))
                near = f" (the primes on either side are {below} and {above}; prime powers such "
                near += "as 4 or 9 are not supported)"
            raise ParameterError(
                f"{owner}: field_size must be a prime in [2, {MAX_FIELD_SIZE}] or None, got "
                f"{shown(q)}{near}",
                parameter="field_size",
            )
        else:
            space = ProjectiveSpace(int(q), _dimension(int(q), k))
        if space.points >= _MAX_POINTS:
            raise ParameterError(
                f"{owner}: field_size={space.q} needs {space.points} points for {k} values, "
                f"above 2**32; choose a smaller field",
                parameter="field_size",
            )
        object.__setattr__(self, "field_size", space.q)
        object.__setattr__(self, "_space", space)
        numerator = _out_numerator(epsilon, space)
        inclusion = 1 - Fraction(numerator, _ONE)
        # At the uniform point P[x in h] = D / K the reports carry nothing.
        if inclusion <= Fraction(space.per_hyperplane, space.points):
            raise ParameterError(
                f"{owner}: epsilon={shown(epsilon)} is too small to realize for k={k}, "
                f"q={space.q}; the reports would be uniform noise"
            )
        redraw = 0
        infinity = check_epsilon_infinity(epsilon, self.epsilon_infinity, owner)
        if infinity is not None:
            object.__setattr__(self, "epsilon_infinity", infinity)
            numerator = _out_numerator(infinity, space)  # the permanent hyperplane's
            permanent = 1 - Fraction(numerator, _ONE)
            uniform = Fraction(space.per_hyperplane, space.points)
            redraw, inclusion = mixed_inclusion(permanent, inclusion, uniform)
        object.__setattr__(self, "_out_numerator", numerator)
        object.__setattr__(self, "_redraw_numerator", redraw)
        object.__setattr__(self, "_inclusion", inclusion)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> ProjectiveGeometryResponse:
        """Rebuild from :meth:`to_spec`."""
        return cls(
            spec["epsilon"],
            domain=Domain.from_json(spec["domain"]),
            field_size=spec["field_size"],
            epsilon_infinity=spec.get("epsilon_infinity"),
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (rebuilding realizes the same noise); the one-stage
        spec has no ``epsilon_infinity`` key."""
        spec = {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "field_size": self.field_size,
            "domain": self.domain.to_json(),
        }
        if self.epsilon_infinity is not None:
            spec["epsilon_infinity"] = self.epsilon_infinity
        return spec

    @property
    def dimension(self) -> int:
        """``t``: the vectors of ``F_q^t`` whose lines are the points."""
        return self._space.t

    @property
    def num_points(self) -> int:
        """``K``: the points (and hyperplanes) of the space, at least ``k``."""
        return self._space.points

    @property
    def inclusion_probability(self) -> float:
        """Realized ``p``: probability that the hyperplane holds the true value (end to end)."""
        return float(self._inclusion)

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, b)``: a value lies in a report of it, and in a report of another value."""
        p, other = _supports(self._inclusion, self._space)
        return float(p), float(other)

    @property
    def report_range(self) -> int:
        """Reports are hyperplane numbers in ``[0, K)``."""
        return self.num_points

    @property
    def report_bits(self) -> int:
        """``ceil(log2 K)`` bits a report."""
        return (self.num_points - 1).bit_length()

    def costs(self, n: int = 1_000_000) -> OracleCosts:
        """Three keyed draws and ``O(t)`` field operations a report; a histogram, the blocks'
        transforms (``q^(t-1)`` cells at most) and ``t`` lookups per value, or the lookup of
        every value against every distinct report (``min(n, K) k t``), a release."""
        n = release_size(n)
        space, k = self._space, self.domain.size
        q, t = space.q, space.t
        if space.transform_fits(n):
            work = 60.0 * k * t + 40.0 * space.block_cells * (1 + math.log2(q))
        else:
            work = 5.0 * min(n, space.points) * k * t
        return OracleCosts(client=130 + 45 * t, server=5 + work / n)

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln(p (K - D) / ((1 - p) D))`` of the realized ``p``, rounded up, with
        one :class:`~frameldp.accounting.ProjectiveGeometryEvent`; :meth:`guarantee` names
        memoized permanent responses."""
        return self.guarantee()

    def _stage_events(self) -> tuple[PrivacyEvent, PrivacyEvent | None, dict[str, Any]]:
        space = self._space
        d, points = space.per_hyperplane, space.points

        def event(p: Fraction) -> ProjectiveGeometryEvent:
            return ProjectiveGeometryEvent(
                log_upper(p * (points - d) / ((1 - p) * d)), space.q, space.t
            )

        parameters = {
            "field_size": space.q,
            "dimension": space.t,
            "num_points": points,
            "inclusion_probability": self.inclusion_probability,
        }
        if self.epsilon_infinity is None:
            return event(self._inclusion), None, parameters
        permanent = 1 - Fraction(self._out_numerator, _ONE)
        return event(self._inclusion), event(permanent), parameters

    def _instant_event(self) -> tuple[PrivacyEvent | None, int]:
        # Keep the permanent hyperplane h, or redraw a uniform one with probability r:
        # P(h' | h) = (1 - r) [h' = h] + r / K, a ratio of 1 + (1 - r) K / r.
        redraw = Fraction(self._redraw_numerator, _ONE)
        if redraw == 0:
            return None, 0
        return PureDP(log_upper(1 + (1 - redraw) * self.num_points / redraw)), 1

    def _draw(self, codes: NDArray[np.int64], rows: Rows, stage: str) -> NDArray[np.int64]:
        """PGR with ``P[x not in h] = _out_numerator / 2**64`` of ``codes`` (purposes
        prefixed by ``stage``)."""
        span = self._space.q ** (self.dimension - 1)
        missing = rows.flags(stage + "out", self._out_numerator)
        through = rows.uniform(stage + "through", span - 1) + 1
        away = rows.uniform(stage + "away", span)
        return self._space.hyperplanes(codes, np.where(missing, away, through), missing)

    def randomize(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
        users: NDArray[np.uint8] | None = None,
        memo: RandomSource | None = None,
    ) -> NDArray[np.int64]:
        """Hyperplane numbers in ``[0, K)`` of integer codes in ``[0, k)``.

        Whether the hyperplane holds the true value is an exact Bernoulli bit ("out" stream);
        the hyperplane is then one exactly uniform integer ("through" or "away" stream) mapped
        one to one onto the hyperplanes through or missing the value (module docstring). All
        of it is a function of (key, ``label``, spec, global row ``row_start + i``, and under a
        caller's key or a seed the row's code) only (:class:`~frameldp.core.randomness.Rows`).

        With ``epsilon_infinity``, that is the permanent hyperplane ("permanent" streams); a
        "redraw" bit then replaces it by a uniform one ("uniform" stream). With ``users`` (a
        16-byte digest per row), the permanent hyperplane is a function of (``memo``, default
        ``source``; ``label``; spec; the row's user and code) only
        (:meth:`~frameldp.core.randomness.Rows.memoized`).
        """
        codes = check_codes(self.title, "codes", codes, self.domain.size)
        rows, held = self._stage_rows(
            codes, source=source, label=label, row_start=row_start, users=users, memo=memo
        )
        if held is None:
            return self._draw(codes, rows, "")
        reports = self._draw(codes, held, "permanent ")
        redraw = rows.flags("redraw", self._redraw_numerator)
        uniform = rows.uniform("uniform", self.num_points)
        return np.where(redraw, uniform, reports)

    def support_counts(
        self, histograms: NDArray[np.int64], rows: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """``C_v`` of each row of ``(groups, K)`` report histograms (module docstring)."""
        return self._space.support_counts(histograms, self.domain.size, rows)

    # ------------------------------------------------------------------ the protocol

    def privatize_column(
        self,
        values: pa.Array,
        *,
        column: str,
        source: RandomSource,
        row_start: int = 0,
        users: pa.Array | None = None,
        user_column: str | None = None,
        memo: RandomSource | None = None,
    ) -> dict[str, pa.Array]:
        """Reports of one value per row; with ``users`` (the ids of ``user_column``) and
        ``epsilon_infinity``, permanent hyperplanes memoized per (user, value) under ``memo``."""
        codes = single_codes(values, self.domain, column, row_start, self.title)
        reports = randomize_with_users(
            self.randomize,
            codes,
            column=column,
            source=source,
            row_start=row_start,
            users=users,
            user_column=user_column,
            memo=memo,
        )
        return {column: codes_array(reports)}

    def estimates_by_group(self, statistics: GroupStatistics) -> GroupEstimates:
        """:meth:`debias` of every group's histogram."""
        (histograms,) = statistics.parts
        supports = self.support_counts(histograms, statistics.rows)
        keep, other = self.support_probabilities
        return debias_direct_groups(supports, statistics.rows, keep, other)

    def supports(self, reports: Mapping[str, pa.Array], *, column: str) -> NDArray[np.uint8]:
        """Whether each report's hyperplane holds each value (``<h, v> = 0``)."""
        values = integer_reports(reports[column], self.num_points, column, self.title)
        h = self._space.coordinates(values)
        v = self._space.coordinates(np.arange(self.domain.size, dtype=np.int64))
        inside: NDArray[np.uint8] = ((h @ v.T) % self._space.q == 0).astype(np.uint8)
        return inside

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Debiased counts from the histogram of hyperplanes over ``statistic.rows`` reports."""
        (histogram,) = statistic.parts
        rows = np.array([statistic.rows], dtype=np.int64)
        supports = self.support_counts(histogram[None, :], rows)[0]
        keep, other = self.support_probabilities
        return debias_direct_counts(supports, statistic.rows, keep, other)
