"""Privacy-loss distributions: exact (epsilon, delta) curves of composed mechanisms.

For a pair of neighbouring inputs with output distributions ``P`` and ``Q``, the privacy loss of
an output ``y`` is ``L(y) = ln(P(y) / Q(y))``; its distribution under ``P`` determines every
(epsilon, delta) statement the pair satisfies through the hockey-stick divergence

    delta(epsilon) = E_P[(1 - e^{epsilon - L})_+]  (+ the mass of P where Q is 0).

Losses of independent mechanisms add, so composing mechanisms convolves their loss
distributions, and the curve of the convolution is the *optimal* (epsilon, delta) curve of the
composition for that pair [1]_ [2]_. For randomized response the pair is the worst case over all
neighbours (every pair is a relabelling of it), and every pure epsilon-DP mechanism is dominated by
binary randomized response at epsilon [1]_, so for the randomized-response family the curve below
is the exact optimum.

Representation: finitely many atoms (losses, log masses) under ``P``, a mass at loss +infinity
(``infinity_mass``: truncated and underflowed mass, counted in full in every delta), and an
optional independent Gaussian component ``N(mu^2/2, mu^2)`` (the loss of a Gaussian mechanism with
sensitivity / sigma = mu [3]_). Whenever atoms are merged, their losses are rounded *up* (to
multiples of ``grid``); raising a loss only raises delta(epsilon) for every epsilon, so the result
stays a valid, pessimistic curve [4]_, and since the raised pair dominates the original one
(Blackwell), compositions of raised pairs dominate compositions of the originals.

References
----------
.. [1] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy",
   ICML 2015 (Thm. 3.3: optimal k-fold composition; binary RR is the worst epsilon-DP mechanism).
.. [2] Y. Zhu, J. Dong, Y.-X. Wang, "Optimal Accounting of Differential Privacy via
   Characteristic Function", AISTATS 2022 (dominating pairs, composition).
.. [3] B. Balle, Y.-X. Wang, "Improving the Gaussian Mechanism for Differential Privacy", ICML
   2018 (Thm. 8: delta(epsilon) of the Gaussian mechanism).
.. [4] S. Meiser, E. Mohammadi, "Tight on Budget? Tight Bounds for r-Fold Approximate
   Differential Privacy", CCS 2018 (pessimistic discretization of privacy buckets).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import special
from frameldp.accounting.rounding import round_up
from frameldp.arguments import check_count
from frameldp.errors import ParameterError, default_marker, renamed_argument

__all__ = ["PrivacyLossDistribution"]

# Atoms are merged after rounding their losses up to a multiple of this grid: fine enough that an
# "exact" epsilon moves by far less than its reported precision. Sums that equal a grid point in
# real arithmetic (3e - 3e = 0) but carry float noise merge onto it (_MERGE_TOLERANCE).
TWO_BUCKETS = default_marker(2)
"""The default number of buckets of randomized response (binary), told apart from a given 2."""

EXACT_GRID = 2.0**-32
# Above this many atoms the grid is coarsened (doubling) until the support fits; the result is then
# a pessimistic upper bound, not the exact curve, and says so (its ``grid``).
MAX_ATOMS = 1 << 18
# Atoms lighter than this are moved to +infinity before a convolution: they can no longer change
# any delta worth reporting, and the mass they carry is still counted in every delta.
PRUNE_LOG_MASS = -200 * math.log(2)
# A convolution of two supports larger than this coarsens the larger operand first.
MAX_OUTER = 1 << 23
# Losses this many grid steps above a grid point are float noise and merge onto it.
_MERGE_TOLERANCE = 2.0**-10
# The smallest positive float: a positive delta is never reported as 0.
_TINY = 5e-324

_FloatArray = NDArray[np.float64]
_Composable = TypeVar("_Composable")


@dataclass(frozen=True, eq=False)
class PrivacyLossDistribution:
    """The privacy-loss random variable of a (composed) mechanism under its first distribution.

    Attributes
    ----------
    losses
        Ascending finite loss values of the atoms.
    log_masses
        Natural logarithm of each atom's probability.
    infinity_mass
        Upper bound on the probability of an infinite loss (counted in every delta).
    gaussian_mu2
        ``mu^2`` of an independent Gaussian loss ``N(mu^2 / 2, mu^2)`` (0 when none).
    grid
        Losses are multiples of this (rounded up), or 0 when they are the exact values. Above
        ``EXACT_GRID`` the support was coarsened and the curve is a valid upper bound.
    exact
        False when some event was bounded through a dominating mechanism (binary RR for a
        generic pure-DP mechanism); the curve is then a valid upper bound, not the optimum.
    log_error
        Upper bound on the floating-point error of every log mass (added to every delta).
    loss_slack
        Upper bound on how far below its true value a merged loss may lie (atoms within float
        noise of a grid point merge onto it); every epsilon is raised by it.
    mass_error
        Upper bound on the l1 distance between the atoms' masses and those of a valid
        distribution (the float error of an FFT composition, :mod:`~frameldp.accounting.lattice`);
        added to every delta.
    rounding
        How far, at most, the losses were raised above the exact composition by rounding them to
        a lattice (informative: every curve is an upper bound either way).
    raised_mass
        Mass moved to a higher loss than ``rounding`` allows for (the low tails a lattice
        composition truncates): :meth:`epsilon_lower` leaves it out.
    loss_raise
        How far merging atoms onto a grid (one grid step a merge, every coarsening step) may
        have raised the losses, beyond ``rounding``: :meth:`epsilon_lower` takes it off.
    """

    losses: _FloatArray
    log_masses: _FloatArray
    infinity_mass: float = 0.0
    gaussian_mu2: float = 0.0
    grid: float = 0.0
    exact: bool = True
    log_error: float = 0.0
    loss_slack: float = 0.0
    mass_error: float = 0.0
    rounding: float = 0.0
    raised_mass: float = 0.0
    loss_raise: float = 0.0

    # ------------------------------------------------------------------ constructors

    @classmethod
    def randomized_response(
        cls,
        epsilon: float,
        num_buckets: int = TWO_BUCKETS,
        count: int = 1,
        *,
        k: int | None = None,
    ) -> PrivacyLossDistribution:
        """``count``-fold composition of k-ary randomized response at ``epsilon`` over
        ``k = num_buckets`` outputs (``k=`` is the deprecated keyword).

        One use has losses ``+epsilon`` (the true value reported, probability
        ``e^eps / (e^eps + k - 1)``), ``-epsilon`` (the neighbour's value reported, probability
        ``1 / (e^eps + k - 1)``) and 0 (any of the other ``k - 2`` values). For ``k = 2`` the
        ``count``-fold composition is a binomial in closed form [1]_; otherwise a lattice
        convolution power.
        """
        k = renamed_argument(
            "PrivacyLossDistribution.randomized_response",
            "k",
            "num_buckets",
            old_value=k,
            new_value=num_buckets,
            default=TWO_BUCKETS,
        )
        k = check_count("randomized response", "num_buckets", k, 2)
        return cls.three_atom(epsilon, float(k - 2), count)

    @classmethod
    def three_atom(
        cls, epsilon: float, neutral_weight: float, count: int = 1
    ) -> PrivacyLossDistribution:
        """``count``-fold composition of the loss ``+epsilon``, ``-epsilon``, 0 in proportions
        ``e^epsilon : 1 : neutral_weight`` (k-ary RR has ``neutral_weight = k - 2``).

        Optimized unary encoding, subset selection and Hadamard response have this loss with a
        non-integer weight (:mod:`frameldp.accounting.events.ternary`).
        """
        if epsilon == 0.0:
            return cls(np.zeros(1), np.zeros(1))
        if neutral_weight == 0.0:
            return cls._binary_power(epsilon, count)
        # log of (1, w, e^eps) / (e^eps + w + 1) on the lattice (-1, 0, +1) * epsilon.
        log_norm = epsilon + math.log1p((neutral_weight + 1.0) * math.exp(-epsilon))
        step = np.array([-log_norm, math.log(neutral_weight) - log_norm, epsilon - log_norm])
        start, log_masses, lost, error = _lattice_power(step, count)
        offsets = np.arange(start, start + log_masses.size, dtype=np.float64)
        keep = np.isfinite(log_masses)
        # Each of the `count` factors carries the rounding of its three log masses.
        error += count * 4.0 * float(np.spacing(abs(log_norm) + 1.0))
        return cls(
            _up(offsets[keep] * epsilon), log_masses[keep], infinity_mass=lost, log_error=error
        )

    @classmethod
    def _binary_power(cls, epsilon: float, count: int) -> PrivacyLossDistribution:
        # l of the `count` uses report the neighbour's bit: loss (count - 2l) eps, probability
        # C(count, l) p^(count - l) (1 - p)^l with p = e^eps / (1 + e^eps).
        minus = np.arange(count, -1, -1, dtype=np.float64)  # ascending losses
        log_p = -math.log1p(math.exp(-epsilon))
        log_q = -epsilon + log_p
        log_binom = (
            special.gammaln(count + 1.0)
            - special.gammaln(minus + 1.0)
            - special.gammaln(count - minus + 1.0)
        )
        log_masses = log_binom + (count - minus) * log_p + minus * log_q
        # gammaln is accurate to a few ulps of its value, and the products to one ulp of theirs:
        # at count = 10**6 the log masses are good to about 1e-8 absolute, not to 1e-16.
        scale = max(float(special.gammaln(count + 1.0)), count * abs(log_q), 1.0)
        error = 16.0 * float(np.spacing(scale))
        return cls(_up((count - 2 * minus) * epsilon), log_masses, log_error=error)

    @classmethod
    def from_atoms(cls, losses: _FloatArray, log_masses: _FloatArray) -> PrivacyLossDistribution:
        """A loss distribution from finite atoms computed in floating point.

        Losses and log masses are differences and sums of logs good to a few ulps of the
        largest of them; that error (far above it: 2**-40 relative) is carried as loss slack and
        log-mass error, so every curve stays an upper bound.
        """
        losses = np.asarray(losses, dtype=np.float64)
        log_masses = np.asarray(log_masses, dtype=np.float64)
        order = np.argsort(losses, kind="stable")
        scale = float(np.max(np.abs(losses), initial=0.0)) + 1.0
        mass_scale = float(np.max(np.abs(log_masses), initial=0.0)) + 1.0
        merged, masses, error = _merge(_up(losses[order]), log_masses[order], EXACT_GRID)
        return cls(
            merged,
            masses,
            grid=EXACT_GRID,
            loss_raise=EXACT_GRID,
            log_error=error + mass_scale * 2.0**-40,
            loss_slack=scale * 2.0**-40 + EXACT_GRID * _MERGE_TOLERANCE,
        )

    @classmethod
    def mixture(cls, parts: list[PrivacyLossDistribution]) -> PrivacyLossDistribution:
        """The loss of running one of ``parts``, chosen uniformly at random and shown: the union
        of their atoms, each part's masses times ``1 / len(parts)`` (its delta at every epsilon
        is the mean of theirs). Parts with a Gaussian loss have no atoms to mix and are refused.
        """
        if not parts or any(part.gaussian_mu2 for part in parts):
            raise ParameterError("a mixture needs loss distributions without a Gaussian part")
        weight = -math.log(len(parts))
        grid = max(EXACT_GRID, *(part.grid for part in parts))
        losses, log_masses, error = _merge(
            np.concatenate([part.losses for part in parts]),
            np.concatenate([part.log_masses + weight for part in parts]),
            grid,
        )
        infinity = round_up(math.fsum(part.infinity_mass for part in parts) / len(parts))
        mixed = cls(
            losses,
            log_masses,
            infinity_mass=min(1.0, infinity),
            grid=grid,
            exact=all(part.exact for part in parts),
            # a part's error, the merge's, and the rounding of log(1 / d) (a few ulps)
            log_error=max(p.log_error for p in parts) + error + 4.0 * float(np.spacing(weight)),
            loss_slack=max(p.loss_slack for p in parts) + grid * _MERGE_TOLERANCE,
            mass_error=round_up(math.fsum(p.mass_error for p in parts) / len(parts)),
            rounding=max(p.rounding for p in parts),
            loss_raise=max(p.loss_raise for p in parts) + grid,
        )
        return mixed._coarsened(MAX_ATOMS) if mixed.losses.size > MAX_ATOMS else mixed

    def power(self, count: int) -> PrivacyLossDistribution:
        """The ``count``-fold composition of this distribution with itself (by squaring)."""
        return power_by_squaring(self, count, PrivacyLossDistribution.compose)

    @classmethod
    def gaussian(cls, mu: float) -> PrivacyLossDistribution:
        """The Gaussian mechanism with ``sensitivity / sigma = mu``: loss ``N(mu^2/2, mu^2)``."""
        return cls(np.zeros(1), np.zeros(1), gaussian_mu2=mu * mu)

    # ------------------------------------------------------------------ composition

    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """The loss distribution of running both mechanisms (losses add, masses multiply)."""
        a, b = self._pruned(), other._pruned()
        while a.losses.size * b.losses.size > MAX_OUTER:
            if a.losses.size >= b.losses.size:
                a = a._coarsened(a.losses.size // 2)
            else:
                b = b._coarsened(b.losses.size // 2)
        losses = _up((a.losses[:, None] + b.losses[None, :]).ravel())
        log_masses = (a.log_masses[:, None] + b.log_masses[None, :]).ravel()
        grid = max(a.grid, b.grid, EXACT_GRID)
        merged_losses, merged_masses, merge_error = _merge(losses, log_masses, grid)
        merged = PrivacyLossDistribution(
            merged_losses,
            merged_masses,
            infinity_mass=_union_mass(a.infinity_mass, b.infinity_mass),
            gaussian_mu2=a.gaussian_mu2 + b.gaussian_mu2,
            grid=grid,
            exact=a.exact and b.exact,
            log_error=a.log_error + b.log_error + merge_error,
            loss_slack=a.loss_slack + b.loss_slack + grid * _MERGE_TOLERANCE,
            mass_error=_error_sum(a.mass_error, b.mass_error),
            rounding=a.rounding + b.rounding,
            raised_mass=a.raised_mass + b.raised_mass,
            loss_raise=a.loss_raise + b.loss_raise + grid,
        )
        if merged.losses.size > MAX_ATOMS:
            merged = merged._coarsened(MAX_ATOMS)
        return merged

    def dominated(self) -> PrivacyLossDistribution:
        """The same curve, marked as an upper bound obtained through a dominating mechanism."""
        return replace(self, exact=False)

    def _pruned(self) -> PrivacyLossDistribution:
        light = self.log_masses < PRUNE_LOG_MASS
        if not light.any():
            return self
        moved = float(np.exp(special.logsumexp(self.log_masses[light])))
        return replace(
            self,
            losses=self.losses[~light],
            log_masses=self.log_masses[~light],
            infinity_mass=_union_mass(self.infinity_mass, moved),
        )

    def _coarsened(self, max_atoms: int) -> PrivacyLossDistribution:
        """Round losses up to the finest power-of-two grid that leaves at most ``max_atoms``."""
        grid = max(self.grid, EXACT_GRID)
        losses, log_masses = self.losses, self.log_masses
        log_error, slack, raise_ = self.log_error, self.loss_slack, self.loss_raise
        while losses.size > max_atoms:
            grid *= 2.0
            losses, log_masses, error = _merge(losses, log_masses, grid)
            log_error += error
            slack += grid * _MERGE_TOLERANCE
            raise_ += grid  # each merge rounds a loss up by less than its grid
        return replace(
            self,
            losses=losses,
            log_masses=log_masses,
            grid=grid,
            log_error=log_error,
            loss_slack=slack,
            loss_raise=raise_,
        )

    # ------------------------------------------------------------------ curves

    def delta(self, epsilon: float) -> float:
        """Upper bound on the hockey-stick divergence ``E_P[(1 - e^{epsilon - L})_+]``.

        Evaluated at ``epsilon - loss_slack`` and raised by the log-mass error and a relative
        ``2**-30`` for the float error of the sum; never 0 when the exact value is positive.
        """
        raw = self._delta_raw(epsilon - self.loss_slack)
        if raw == 0.0 and not self.mass_error:
            return min(1.0, self.infinity_mass)
        padded = (raw * (1.0 + 2.0**-30) + self.mass_error) * math.exp(self.log_error)
        return min(1.0, max(padded, _TINY) + self.infinity_mass)

    def _delta_raw(self, epsilon: float) -> float:
        """The hockey-stick sum of the atoms (infinite-loss mass excluded), unpadded."""
        if self.gaussian_mu2 == 0.0:
            # Losses ascend: the atoms above epsilon are a suffix.
            first = int(np.searchsorted(self.losses, epsilon, side="right"))
            if first == self.losses.size:
                return 0.0
            # Every term is positive: no cancellation, summed in log space.
            above = self.losses[first:]
            terms = self.log_masses[first:] + np.log(-np.expm1(epsilon - above))
        else:
            terms = self.log_masses + _log_gaussian_delta(
                epsilon - self.losses, math.sqrt(self.gaussian_mu2)
            )
        if not terms.size:
            return 0.0
        log_total = float(special.logsumexp(terms))
        # A positive delta below the smallest float is still positive: never report pure DP.
        return max(math.exp(log_total), _TINY) if log_total > -math.inf else 0.0

    def epsilon_lower(self, delta: float, upper: float | None = None) -> float:
        """A lower bound on the epsilon at ``delta`` of the exact composition this distribution
        bounds from above (of its parts' pairs): every exact loss is at least this one's minus
        ``rounding`` and ``loss_raise`` (lattice rounding, merges and coarsening), every exact
        mass at least this one's, lowered by its errors, minus ``raised_mass``; the mass at
        +infinity is left out. With :meth:`epsilon` (``upper``, when already computed) it
        brackets the exact value, at any delta.
        """
        shift = self.rounding + self.loss_slack + self.loss_raise + 2.0**-30
        scale = math.exp(-self.log_error) * (1.0 - 2.0**-30)
        lost = self.mass_error + self.raised_mass

        def lower(epsilon: float) -> float:
            return self._delta_raw(epsilon + shift) * scale - lost

        if lower(0.0) <= delta:
            return 0.0
        # Bracket below the upper bound's epsilon, widening from the rounding, then bisect to a
        # relative 1e-7 (the answer is a distance shown to three digits).
        high = self.epsilon(delta) if upper is None else upper
        if not math.isfinite(high):
            return 0.0
        gap = max(shift, 1e-9)
        while high - gap > 0.0 and lower(high - gap) <= delta:
            gap *= 4.0
        low = max(high - gap, 0.0)
        while high - low > 1e-7 * max(high, 1e-9):
            middle = 0.5 * (low + high)
            if lower(middle) > delta:
                low = middle
            else:
                high = middle
        return low

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon with ``delta(epsilon) <= delta``, by bisection, rounded up.

        Returns ``inf`` when no epsilon reaches ``delta`` (the infinite-loss mass exceeds it).
        """
        # Aim below delta by the log-mass error and a relative 2**-30, so that float error in
        # the sum can never make the returned epsilon smaller than the exact one.
        target = ((delta - self.infinity_mass) * math.exp(-self.log_error) - self.mass_error) * (
            1.0 - 2.0**-30
        )
        if target <= 0.0:
            return math.inf
        if self._delta_raw(0.0) <= target:
            return round_up(self.loss_slack) if self.loss_slack else 0.0
        high = max(float(self.losses[-1]), 1.0) if self.losses.size else 1.0
        while self._delta_raw(high) > target:
            high *= 2.0
            if high > 1e12:
                return math.inf
        low = 0.0
        for _ in range(200):
            middle = 0.5 * (low + high)
            if middle in (low, high) or high - low <= 1e-15 * high:
                break
            if self._delta_raw(middle) <= target:
                high = middle
            else:
                low = middle
        result = round_up(high + self.loss_slack)
        # The target's margin and delta()'s padding cancel to a few ulps, and a Gaussian term
        # carries float noise of its own: step up until delta() itself agrees.
        step = max(abs(result) * 2.0**-50, 2.0**-1000)
        for _ in range(80):
            if self.delta(result) <= delta:
                return result
            result, step = result + step, 2.0 * step
        return math.inf


def power_by_squaring(
    base: _Composable, count: int, compose: Callable[[_Composable, _Composable], _Composable]
) -> _Composable:
    """``count`` copies of ``base`` composed with ``compose``, in O(log count) compositions."""
    result: _Composable | None = None
    while count:
        if count & 1:
            result = base if result is None else compose(result, base)
        count >>= 1
        if count:
            base = compose(base, base)
    assert result is not None
    return result


def _up(values: _FloatArray) -> _FloatArray:
    """Round float results of loss arithmetic up by one ulp (the arithmetic rounded to nearest)."""
    return np.where(values == 0.0, 0.0, np.nextafter(values, np.inf))


def _error_sum(a: float, b: float) -> float:
    """l1 error of a product of two distributions known to within ``a`` and ``b`` in l1 (and
    a relative error far below 2**-20, which the factor covers)."""
    return round_up((a + b + a * b) * (1.0 + 2.0**-20)) if (a or b) else 0.0


def _union_mass(a: float, b: float) -> float:
    """Probability that either of two independent events happens, rounded up."""
    return min(1.0, round_up(a + b - a * b)) if (a or b) else 0.0


def _merge(
    losses: _FloatArray, log_masses: _FloatArray, grid: float
) -> tuple[_FloatArray, _FloatArray, float]:
    """Round losses up to multiples of ``grid`` and add the masses of atoms that meet.

    Losses within ``_MERGE_TOLERANCE`` grid steps above a grid point (float noise of sums such
    as ``3e - 3e``) merge onto it; the caller adds that much to the loss slack. Returns the
    merged atoms and a bound on the error the summation adds to the log masses.
    """
    keys = np.ceil(losses / grid - _MERGE_TOLERANCE)
    order = np.argsort(keys, kind="stable")
    keys, log_masses = keys[order], log_masses[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sizes = np.diff(np.r_[starts, keys.size])
    peak = np.maximum.reduceat(log_masses, starts)
    group = np.repeat(np.arange(starts.size), sizes)
    sums = np.add.reduceat(np.exp(log_masses - peak[group]), starts)
    # A sum of n positive terms is good to n ulps; exp and log add a few ulps of the peak.
    error = float(sizes.max()) * 2.0**-52 + 8.0 * float(np.spacing(np.max(np.abs(peak)) + 1.0))
    return keys[starts] * grid, peak + np.log(sums), error


def _lattice_power(step: _FloatArray, count: int) -> tuple[int, _FloatArray, float, float]:
    """Log masses of the ``count``-fold convolution of a 3-atom lattice law (by squaring).

    Returns the lattice index of the first mass, the log masses, an upper bound on the mass
    lost to +infinity and a bound on the error the convolutions add to the log masses.
    Convolutions run on masses scaled by their maximum; what underflows (below 2**-1022 of the
    largest product) is lost from the atoms and counted at infinity. After each convolution the
    tails lighter than ``e^PRUNE_LOG_MASS`` of the peak are cut: the low one is added to the
    lowest kept atom (its losses raised: pessimistic), the high one counted at infinity; the
    arrays then stay about 30 standard deviations wide however large ``count`` is.
    """
    result: tuple[int, _FloatArray] | None = None
    power: tuple[int, _FloatArray] = (-1, step)
    lost = result_error = power_error = 0.0
    remaining = count
    while remaining:
        if remaining & 1:
            if result is None:
                result, result_error = power, power_error
            else:
                result, bound, added = _log_convolve(result, power)
                lost += bound
                result_error += power_error + added
        remaining >>= 1
        if remaining:
            power, bound, added = _log_convolve(power, power)
            lost += bound
            power_error = 2.0 * power_error + added
    assert result is not None
    return result[0], result[1], round_up(lost) if lost else 0.0, result_error


def _log_convolve(
    a: tuple[int, _FloatArray], b: tuple[int, _FloatArray]
) -> tuple[tuple[int, _FloatArray], float, float]:
    """Convolve two lattice laws ``(first index, log masses)`` and cut their light tails."""
    (start_a, log_a), (start_b, log_b) = a, b
    peak_a, peak_b = np.max(log_a), np.max(log_b)
    product = np.convolve(np.exp(log_a - peak_a), np.exp(log_b - peak_b))
    # Each output entry sums at most min(len) products, each either exact or below the smallest
    # normal number times the scale when it underflowed.
    scale = math.exp(peak_a + peak_b)
    bound = min(log_a.size, log_b.size) * product.size * 2.0**-1022 * scale
    # Positive sums of n terms: n ulps; exp, log and the shifts: a few ulps of the peaks.
    error = min(log_a.size, log_b.size) * 2.0**-52 + 8.0 * float(
        np.spacing(abs(peak_a) + abs(peak_b) + 1.0)
    )
    heavy = np.flatnonzero(product >= math.exp(PRUNE_LOG_MASS) * float(product.max()))
    first, last = int(heavy[0]), int(heavy[-1]) + 1
    kept = product[first:last].copy()
    # The low tail joins the lowest kept atom (a sum of positive terms, a few ulps more).
    kept[0] += float(product[:first].sum())
    bound += float(product[last:].sum()) * scale * (1.0 + 2.0**-40)
    with np.errstate(divide="ignore"):
        out = np.log(kept) + peak_a + peak_b
    return (start_a + start_b + first, out), bound, error


def _log_gaussian_delta(x: _FloatArray, mu: float) -> _FloatArray:
    """``log(Phi(mu/2 - x/mu) - e^x Phi(-mu/2 - x/mu))``: the Gaussian curve at ``x`` [3]_."""
    first = special.log_ndtr(mu / 2.0 - x / mu)
    second = x + special.log_ndtr(-mu / 2.0 - x / mu)
    with np.errstate(divide="ignore"):
        return np.asarray(first + np.log(-np.expm1(np.minimum(second - first, 0.0))))
