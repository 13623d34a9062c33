"""Composition of privacy-loss distributions on a uniform lattice, by FFT.

:class:`~frameldp.accounting.pld.PrivacyLossDistribution` composes atoms exactly (outer sums of
losses, merged at ``2**-32``), which is the optimum for a few events but explodes when many
*different* events compose (distinct epsilons, shuffled releases with hundreds of thousands of
atoms). Here every loss is rounded *up* to a multiple of one step ``h`` (raising a loss only
raises every delta [1]_), the masses become one dense array per distribution, and composing is a
convolution of arrays: direct (exact to a few ulps, relative) while it is cheap, by real FFT
otherwise, the way dp_accounting composes its PLDs [2]_.

Error accounting (every bound is added to every delta, so nothing reported is below exact):

* **Rounding.** Each distribution is rounded once; a composition of ``r`` rounded parts has
  losses at most ``r h`` above the exact ones (``rounding``, reported to the reader: the
  returned epsilon is within that of the exact one computed from the same parts).
* **FFT.** The computed convolution ``c'`` of ``a`` and ``b`` satisfies
  ``||c' - c||_2 <= 2 [g (|b|_1 ||a||_2 + |a|_1 ||b||_2) + g^2 sqrt(N) ||a||_2 ||b||_2
  + (3u + g) |a|_1 ||b||_2]`` with ``g = 8 u log2 N`` (Higham, Thm. 24.2, applied to the two
  forward transforms, the product and the inverse [3]_), and the mass error in l1 is at most
  ``sqrt(len c)`` times that. Errors of the operands add (``e_a + e_b + e_a e_b``), and
  negative results are clipped to 0, which brings them closer to the true non-negative masses.
  The total is carried as the distribution's ``mass_error``.
* **Tails.** After each convolution the lowest masses summing to at most ``TAIL_MASS`` move up
  to the lowest kept loss (raising losses), and the highest ones to the mass at +infinity.

References
----------
.. [1] S. Meiser, E. Mohammadi, "Tight on Budget? Tight Bounds for r-Fold Approximate
   Differential Privacy", CCS 2018.
.. [2] A. Koskela, J. Jälkö, A. Honkela, "Computing Tight Differential Privacy Guarantees Using
   FFT", AISTATS 2020; Google's dp_accounting ``PrivacyLossDistribution``.
.. [3] N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM 2002,
   Thm. 24.2 (error of the computed FFT).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting.pld import (
    EXACT_GRID,
    MAX_OUTER,
    PrivacyLossDistribution,
    power_by_squaring,
)
from frameldp.accounting.rounding import round_up

__all__ = ["Lattice", "compose_all", "fft_convolve", "lattice_step", "to_lattice", "to_pld"]

_FloatArray = NDArray[np.float64]

# Masses this light at either end are moved (up, or to +infinity) after each convolution.
TAIL_MASS = 2.0**-60
# Largest lattice a composition is allowed to build (float64 masses: 32 MiB).
MAX_LENGTH = 1 << 22
# The finest step a lattice composition uses (about 1.5e-5): K shuffled releases are then at
# most K * 1.5e-5 above the exact composition of their pairs.
FINEST_STEP = 2.0**-16
_UNIT = 2.0**-53


@dataclass(frozen=True)
class Lattice:
    """Masses on the losses ``(offset + i) * step``, plus mass at +infinity and error bounds.

    ``masses`` are linear probabilities, within a factor ``e^log_error`` (either way) of masses
    ``m'`` that are in turn within ``mass_error`` in l1 of a valid (pessimistic) privacy-loss
    distribution; ``rounding`` bounds how far the losses were raised above those of the exact
    composition.
    """

    step: float
    offset: int
    masses: _FloatArray
    infinity_mass: float = 0.0
    mass_error: float = 0.0
    rounding: float = 0.0
    log_error: float = 0.0
    raised_mass: float = 0.0
    """Mass moved up past the rounding (the low tails of :meth:`truncated`): a lower bound on
    the exact curve leaves it out."""

    @classmethod
    def from_atoms(
        cls,
        losses: _FloatArray,
        masses: _FloatArray,
        step: float,
        *,
        infinity_mass: float = 0.0,
        mass_error: float = 0.0,
        log_error: float = 0.0,
        slack: float = 0.0,
    ) -> Lattice:
        """Raise each loss by ``slack`` (a bound on its float error), round it up to a multiple
        of ``step`` and add the masses that meet (positive sums: ``len`` ulps relative at most,
        added to ``log_error``)."""
        if losses.size == 0:
            return cls(step, 0, np.zeros(1), infinity_mass, mass_error, step, log_error)
        if math.frexp(step)[0] != 0.5:
            raise ValueError(f"a lattice step must be a power of two, got {step!r}")
        # Dividing by a power of two is exact, so ceil() never lowers a loss.
        keys = np.ceil((losses + slack) / step).astype(np.int64)
        low = int(keys.min())
        dense = np.asarray(np.bincount(keys - low, weights=masses), dtype=np.float64)
        log_error += 2.0 * losses.size * _UNIT
        rounding = step + slack  # ceil raises by less than a step, after the slack
        return cls(step, low, dense, infinity_mass, mass_error, rounding, log_error).truncated()

    # ------------------------------------------------------------------ composition

    def convolve(self, other: Lattice) -> Lattice:
        """The composition of both (losses add): a convolution of the mass arrays."""
        if self.step != other.step:
            raise ValueError("lattices of different steps")
        masses, relative, absolute = fft_convolve(self.masses, other.masses)
        e1, e2 = self.mass_error, other.mass_error
        i1, i2 = self.infinity_mass, other.infinity_mass
        log_error = self.log_error + other.log_error + relative
        # ||m1 * m2 - m1' * m2'||_1 <= e1 |m2| + |m1'| e2 + e1 e2, |m'| <= e^log_error.
        error = (e1 + e2 + e1 * e2) * math.exp(log_error) + absolute
        return Lattice(
            self.step,
            self.offset + other.offset,
            masses,
            infinity_mass=round_up(i1 + i2 - i1 * i2) if (i1 or i2) else 0.0,
            mass_error=round_up(error) if error else 0.0,
            rounding=self.rounding + other.rounding,
            log_error=log_error,
            # Raised mass of either operand stays raised in the product (masses sum to ~1).
            raised_mass=(self.raised_mass + other.raised_mass) * math.exp(log_error),
        ).truncated(max(TAIL_MASS, absolute))

    def power(self, count: int) -> Lattice:
        """``count`` independent copies composed (by squaring); each copy counts its rounding."""
        return power_by_squaring(self, count, Lattice.convolve)

    def truncated(self, tail: float = TAIL_MASS) -> Lattice:
        """Move the tails lighter than ``tail`` up (low end) and to +infinity (high end).

        After an FFT the tail is the larger of ``TAIL_MASS`` and the convolution's error bound:
        below that the computed masses are float noise, and keeping them would only widen the
        lattice (the error is counted in every delta either way).
        """
        masses = self.masses
        low_cum = np.cumsum(masses)
        first = int(np.searchsorted(low_cum, tail, side="right"))
        high_cum = np.cumsum(masses[::-1])
        last = masses.size - int(np.searchsorted(high_cum, tail, side="right"))
        first = min(first, masses.size - 1)
        if last <= first:
            last = first + 1
        if first == 0 and last == masses.size:
            return self
        kept = masses[first:last].copy()
        raised = self.raised_mass
        if first:
            kept[0] += low_cum[first - 1]
            raised += float(low_cum[first - 1])
        dropped = float(masses[last:].sum())
        infinity = self.infinity_mass
        if dropped:
            infinity = round_up(infinity + dropped - infinity * dropped)
        return Lattice(
            self.step,
            self.offset + first,
            kept,
            infinity,
            self.mass_error,
            self.rounding,
            self.log_error,
            raised,
        )

    def spread(self) -> tuple[float, float]:
        """The range of the losses and their standard deviation."""
        return _spread(self.losses, self.masses)

    @property
    def losses(self) -> _FloatArray:
        """The loss of each mass (exact: an integer times a power of two)."""
        index = np.arange(self.offset, self.offset + self.masses.size, dtype=np.float64)
        return index * self.step


def fft_convolve(a: _FloatArray, b: _FloatArray) -> tuple[_FloatArray, float, float]:
    """The convolution of two non-negative arrays, its relative (log) error and l1 error.

    Direct (positive sums, a few ulps relative per entry) when the product of the lengths, or
    of the numbers of non-zero masses, is small; by real FFT otherwise, whose negative results
    are clipped to 0.
    """
    length = a.size + b.size - 1
    if min(a.size, b.size) <= 64 or a.size * b.size <= 1 << 22:
        # Each entry sums at most min(len) products of non-negative terms: that many ulps.
        return np.convolve(a, b), 2.0 * (min(a.size, b.size) + 1) * _UNIT, 0.0
    nonzero_a, nonzero_b = np.flatnonzero(a), np.flatnonzero(b)
    if nonzero_a.size * nonzero_b.size <= 1 << 22:
        # Sparse (a few atoms spread over a fine lattice): every product, added where it lands.
        where = (nonzero_a[:, None] + nonzero_b[None, :]).ravel()
        products = (a[nonzero_a, None] * b[None, nonzero_b]).ravel()
        out = np.asarray(np.bincount(where, weights=products, minlength=length), dtype=np.float64)
        return out, 2.0 * (min(nonzero_a.size, nonzero_b.size) + 1) * _UNIT, 0.0
    size = 1 << (length - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:length]
    np.maximum(out, 0.0, out=out)
    l1a, l1b = float(a.sum()), float(b.sum())
    l2a, l2b = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    g = 8.0 * _UNIT * math.log2(size)
    l2_error = 2.0 * (
        g * (l1b * l2a + l1a * l2b)
        + g * g * math.sqrt(size) * l2a * l2b
        + (3.0 * _UNIT + g) * l1a * l2b
    )
    return out, 0.0, math.sqrt(length) * l2_error


def lattice_step(spans: list[float], deviations: list[float], copies: int = 1) -> float:
    """The finest power-of-two step (at least ``FINEST_STEP``) whose composed lattice fits.

    ``spans`` are the loss ranges of the parts and ``deviations`` their standard deviations,
    with the last part composed ``copies`` times. The composition is at most the sum of the
    spans wide, and keeps about 12 standard deviations of its sum on either side (the tails
    beyond hold less than ``TAIL_MASS``) plus the widest part.
    """
    total = math.fsum(spans) + (copies - 1) * (spans[-1] if spans else 0.0)
    kept = 24.0 * math.sqrt(math.fsum(d * d for d in deviations)) + 2.0 * max(spans, default=0)
    width = min(total, kept)
    step = FINEST_STEP
    while width / step > MAX_LENGTH:
        step *= 2.0
    return step


def compose_lattices(parts: list[Lattice]) -> Lattice:
    """All parts composed, the two shortest first (a balanced order keeps arrays short)."""
    heap = [(part.masses.size, i, part) for i, part in enumerate(parts)]
    heapq.heapify(heap)
    counter = len(heap)
    while len(heap) > 1:
        _, _, a = heapq.heappop(heap)
        _, _, b = heapq.heappop(heap)
        c = a.convolve(b)
        heapq.heappush(heap, (c.masses.size, counter, c))
        counter += 1
    return heap[0][2]


def to_lattice(pld: PrivacyLossDistribution, step: float) -> Lattice:
    """``pld`` with its losses (raised by their slack) rounded up onto the lattice of ``step``.

    Masses that underflow in ``exp`` (below 1e-308 each) are counted in the mass error.
    """
    masses = np.exp(pld.log_masses)
    underflow = float(np.count_nonzero(masses == 0.0)) * 2.0**-1022
    lattice = Lattice.from_atoms(
        pld.losses + pld.loss_slack,
        masses,
        step,
        infinity_mass=pld.infinity_mass,
        mass_error=pld.mass_error + underflow,
        log_error=pld.log_error,
    )
    lattice = replace(lattice, raised_mass=lattice.raised_mass + pld.raised_mass)
    # Atoms already on this lattice are not moved: their rounding is the distribution's own.
    on_lattice = pld.grid == step and pld.loss_slack == 0.0
    return replace(lattice, rounding=pld.rounding + pld.loss_raise + (0.0 if on_lattice else step))


def to_pld(
    lattice: Lattice, *, gaussian_mu2: float = 0.0, exact: bool = True
) -> PrivacyLossDistribution:
    """The lattice as a :class:`PrivacyLossDistribution` (its non-zero masses as atoms)."""
    keep = lattice.masses > 0.0
    if not keep.any():
        keep[0] = True  # a point mass of 0 at the lowest loss keeps the arrays non-empty
    with np.errstate(divide="ignore"):
        log_masses = np.log(lattice.masses[keep])
    return PrivacyLossDistribution(
        lattice.losses[keep],
        log_masses,
        infinity_mass=lattice.infinity_mass,
        gaussian_mu2=gaussian_mu2,
        grid=lattice.step,
        exact=exact,
        log_error=lattice.log_error,
        mass_error=lattice.mass_error,
        rounding=lattice.rounding,
        raised_mass=lattice.raised_mass,
    )


def compose_all(parts: list[PrivacyLossDistribution]) -> PrivacyLossDistribution | None:
    """The composition of all ``parts``: exact atoms while they stay few, else on a lattice.

    The exact composition (outer sums of atoms, merged at ``2**-32``) is the optimum; it is
    abandoned as soon as it would have to coarsen its grid, and the parts are then rounded
    onto the finest lattice that fits (:func:`lattice_step`) and composed by FFT.
    """
    if not parts:
        return None
    exact = _compose_exactly(parts)
    if exact is not None:
        return exact
    spreads = [_spread(part.losses, np.exp(part.log_masses)) for part in parts]
    spans, deviations = zip(*spreads, strict=True)
    step = lattice_step(list(spans), list(deviations))
    composed = compose_lattices([to_lattice(part, step) for part in parts])
    return to_pld(
        composed,
        gaussian_mu2=math.fsum(part.gaussian_mu2 for part in parts),
        exact=all(part.exact for part in parts),
    )


def _compose_exactly(parts: list[PrivacyLossDistribution]) -> PrivacyLossDistribution | None:
    result = parts[0]
    for part in parts[1:]:
        if result.losses.size * part.losses.size > MAX_OUTER:
            return None
        grid = max(result.grid, part.grid, EXACT_GRID)
        result = result.compose(part)
        if result.grid > grid:
            return None  # the atoms no longer fit: compose on a lattice instead
    if result.grid > EXACT_GRID and len(parts) > 1:
        return None
    return result


def _spread(losses: _FloatArray, masses: _FloatArray) -> tuple[float, float]:
    """The range of the losses and their standard deviation under the masses."""
    if losses.size == 0:
        return 0.0, 0.0
    total = float(masses.sum()) or 1.0
    mean = float(np.dot(masses, losses)) / total
    variance = float(np.dot(masses, (losses - mean) ** 2)) / total
    return float(losses[-1] - losses[0]), math.sqrt(max(variance, 0.0))
