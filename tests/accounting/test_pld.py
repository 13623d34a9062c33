"""Privacy-loss distributions: atoms, composition and the (epsilon, delta) curve against mpmath.

Oracles: the Kairouz–Oh–Viswanath sum for k-fold binary RR, a trinomial sum for k-ary RR, a
brute-force enumeration of every outcome pair for RR at two different epsilons, and the
Balle–Wang formula for the Gaussian mechanism (all in ``_oracles`` or below, at 50 digits).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from mpmath import mpf
from scipy.special import logsumexp

import frameldp
import frameldp.accounting.pld as pld_module
from frameldp import Accountant, GaussianEvent, RandomizedResponseEvent
from frameldp.accounting import PrivacyLossDistribution

from . import _oracles as oracle

# Unpadded deltas: log-space sums of positive terms whose log masses (gammaln of counts up to 1000)
# carry ~1e-12 relative error; 1e-9 leaves room and still catches any wrong term.
DELTA_REL = 1e-9
# Composition rounds each summed loss up to a multiple of 2^-32 (plus one ulp), i.e. by less than
# two grid steps; d delta / d loss <= 1, so delta rises by at most that times P(L > epsilon).
LOSS_ROUNDING = 2 * pld_module.EXACT_GRID
# Losses of a composition, against exact multiples of epsilon: the rounding above, with margin.
LOSS_ABS = 1e-9
# Masses of a composition against the closed form: float products and log-sum-exp of <= 1000
# terms, ~1e-14; atoms lighter than the pruning threshold (2^-200) are moved to +infinity before
# a convolution, so only atoms above MASS_FLOOR (where the moved mass is < 1e-15 relative) are
# compared atom by atom.
MASS_REL = 1e-12
MASS_FLOOR = 1e-40
# The lattice power counts what underflowed (< 2^-1022 of the peak) at +infinity: harmless.
UNDERFLOW_ABS = 1e-300
# PrivacyLossDistribution.epsilon bisects toward delta (1 - 2^-30) (documented), so just below
# the returned epsilon the curve is above that target.
EPSILON_TARGET = 1 - 2.0**-30


def _log_total(pld: PrivacyLossDistribution) -> float:
    return float(logsumexp(pld.log_masses))


# --- constructors and composition ---------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 10, 1000])
@pytest.mark.parametrize("epsilon", [1e-4, 0.5, 3.0, 30.0])
def test_binary_rr_masses_sum_to_one_and_losses_ascend(epsilon: float, count: int) -> None:
    pld = PrivacyLossDistribution.randomized_response(epsilon, 2, count)
    assert abs(_log_total(pld)) <= 1e-12
    assert np.all(np.diff(pld.losses) > 0)
    assert pld.losses.size == count + 1
    assert pld.infinity_mass == 0.0


@pytest.mark.parametrize("count", [1, 5, 60])
@pytest.mark.parametrize(("epsilon", "k"), [(0.5, 3), (2.0, 10), (1.0, 1000)])
def test_kary_rr_masses_sum_to_one_and_losses_ascend(epsilon: float, k: int, count: int) -> None:
    pld = PrivacyLossDistribution.randomized_response(epsilon, k, count)
    assert abs(math.expm1(_log_total(pld)) + pld.infinity_mass) <= 1e-12
    assert np.all(np.diff(pld.losses) > 0)
    # Every lattice point from -count to +count, less the tails lighter than 2^-200 of the peak
    # (cut after each squaring: moved up, or to infinity).
    assert pld.losses.size <= 2 * count + 1
    assert pld.losses[-1] <= count * epsilon * (1 + 1e-12)


@pytest.mark.parametrize(("c1", "c2"), [(1, 1), (3, 7), (50, 70), (400, 600)])
@pytest.mark.parametrize("epsilon", [0.01, 0.3, 1.0, 5.0])
def test_composing_binary_rr_gives_the_closed_form(epsilon: float, c1: int, c2: int) -> None:
    """c1 then c2 uses equal c1 + c2 uses: a binomial over the number of flipped reports."""
    rr = PrivacyLossDistribution.randomized_response
    composed = rr(epsilon, 2, c1).compose(rr(epsilon, 2, c2))
    n = c1 + c2
    flipped = np.rint((n - composed.losses / epsilon) / 2).astype(int)  # loss = (n - 2 j) eps
    assert np.all(np.abs(composed.losses - (n - 2 * flipped) * epsilon) <= LOSS_ABS)
    assert np.all(composed.losses >= (n - 2 * flipped) * epsilon)  # rounded up, never down
    found = {int(j): -math.inf for j in flipped}
    for j, log_mass in zip(flipped, composed.log_masses, strict=True):
        found[int(j)] = float(np.logaddexp(found[int(j)], log_mass))
    with mpmath.workdps(oracle.DPS):
        p = mpmath.exp(mpf(epsilon)) / (1 + mpmath.exp(mpf(epsilon)))
        for j in range(n + 1):
            mass = mpmath.binomial(n, j) * p ** (n - j) * (1 - p) ** j
            if mass > MASS_FLOOR:
                assert j in found, f"atom with {j} flipped reports (mass {mass}) is missing"
                assert abs(mpmath.exp(found[j]) / mass - 1) <= MASS_REL
    total = math.exp(_log_total(composed))
    assert abs(total + composed.infinity_mass - 1) <= 1e-12  # pruned mass is kept at +infinity


def test_composition_merges_atoms_of_equal_loss() -> None:
    rr = PrivacyLossDistribution.randomized_response
    composed = rr(0.3, 2, 50).compose(rr(0.3, 2, 70))
    assert composed.losses.size == 121


@pytest.mark.parametrize("k", [1, 10, 100, 1000])
@pytest.mark.parametrize("epsilon0", [0.1, 0.5, 1.0, math.log(3), 3.0])
def test_binary_rr_delta_is_kairouz_oh_viswanath(epsilon0: float, k: int) -> None:
    pld = PrivacyLossDistribution.randomized_response(epsilon0, 2, k)
    accountant = Accountant().compose(RandomizedResponseEvent(epsilon0), count=k)
    # Levels between lattice points (a level on a loss adds mass * 1 ulp, not a real error).
    for fraction in (0.0, 0.137, 0.41, 0.77, 0.93):
        epsilon = fraction * k * epsilon0
        exact = oracle.kov_delta(epsilon0, k, epsilon)
        value = pld.delta(epsilon)
        assert abs(value - exact) <= DELTA_REL * exact, f"delta({epsilon})"
        assert accountant.delta(epsilon) >= exact  # the reported (padded) delta is never below


def _trinomial_delta(epsilon: float, k: int, count: int, level: float) -> mpf:
    """k-ary RR, count uses: (n+, n0, n-) reports of the true, another, the neighbour's value."""
    with mpmath.workdps(oracle.DPS):
        e = mpf(epsilon)
        norm = (mpmath.exp(e) + k - 1) ** count
        total = mpf(0)
        for plus in range(count + 1):
            for minus in range(count + 1 - plus):
                loss = (plus - minus) * e
                if loss <= level:
                    continue
                zero = count - plus - minus
                ways = mpmath.factorial(count) / (
                    mpmath.factorial(plus) * mpmath.factorial(zero) * mpmath.factorial(minus)
                )
                mass = ways * mpmath.exp(plus * e) * mpf(k - 2) ** zero / norm
                total += mass * (1 - mpmath.exp(level - loss))
        return total


@pytest.mark.parametrize("count", [1, 2, 7, 20])
@pytest.mark.parametrize("k", [3, 10, 1000])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_kary_rr_delta_matches_trinomial_sum(epsilon: float, k: int, count: int) -> None:
    pld = PrivacyLossDistribution.randomized_response(epsilon, k, count)
    accountant = Accountant().compose(RandomizedResponseEvent(epsilon, k), count=count)
    levels = [0.0] + [(j + 0.5) * epsilon for j in sorted({0, count // 3, (2 * count) // 3})]
    for level in levels:
        exact = _trinomial_delta(epsilon, k, count, level)
        value = pld.delta(level)
        assert abs(value - exact) <= DELTA_REL * exact + UNDERFLOW_ABS, f"delta({level})"
        assert accountant.delta(level) >= exact


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 3.0, 10.0])
def test_gaussian_delta_is_balle_wang(mu: float) -> None:
    pld = PrivacyLossDistribution.gaussian(mu)
    for epsilon in (0.0, 0.1, 1.0, 5.0, 20.0, 60.0):
        exact = oracle.gaussian_delta(mu, epsilon)
        value = pld.delta(epsilon)
        if exact > 1e-300:
            assert abs(value - exact) <= DELTA_REL * exact, f"delta({epsilon})"
        else:
            assert value <= 1e-300


@pytest.mark.parametrize(("mu1", "mu2"), [(0.3, 0.4), (1.0, 2.0), (0.05, 5.0)])
def test_gaussians_compose_in_quadrature(mu1: float, mu2: float) -> None:
    composed = PrivacyLossDistribution.gaussian(mu1).compose(PrivacyLossDistribution.gaussian(mu2))
    single = PrivacyLossDistribution.gaussian(math.hypot(mu1, mu2))
    for epsilon in (0.0, 0.5, 2.0, 8.0):
        # The composed curve carries the padding for its merge's log-mass error (~1e-15).
        assert composed.delta(epsilon) == pytest.approx(single.delta(epsilon), rel=1e-11, abs=0)
    for delta in (1e-3, 1e-9):
        assert composed.epsilon(delta) == pytest.approx(single.epsilon(delta), rel=1e-12)


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_gaussian_accountant_epsilon_inverts_balle_wang(delta: float) -> None:
    """Ten Gaussians at sigma = 2 are one at mu = sqrt(10) / 2; the mpmath inverse of Balle–Wang."""
    mu = mpf(10) ** 0.5 / 2
    with mpmath.workdps(oracle.DPS):
        low, high = mpf(0), mpf(100)
        for _ in range(110):
            middle = (low + high) / 2
            if oracle.gaussian_delta(mu, middle) <= delta:
                high = middle
            else:
                low = middle
    value = Accountant().compose(GaussianEvent(2.0), count=10).epsilon(delta)
    assert value >= low
    assert value <= high * (1 + 1e-6)


def _mixed_oracle(level: float) -> tuple[mpf, mpf]:
    """Binary RR at 0.3 seven times and at 0.7 five times.

    Returns delta(level) and the mass that loss rounding can move across the level.
    """
    with mpmath.workdps(oracle.DPS):
        ea, eb = mpf(0.3), mpf(0.7)
        norm = (1 + mpmath.exp(ea)) ** 7 * (1 + mpmath.exp(eb)) ** 5
        delta, tail = mpf(0), mpf(0)
        for i in range(8):  # i of the seven 0.3-reports, j of the five 0.7-reports flipped
            for j in range(6):
                loss = (7 - 2 * i) * ea + (5 - 2 * j) * eb
                mass = (
                    mpmath.binomial(7, i)
                    * mpmath.binomial(5, j)
                    * mpmath.exp((7 - i) * ea + (5 - j) * eb)
                    / norm
                )
                if loss > level:
                    delta += mass * (1 - mpmath.exp(level - loss))
                if loss > level - LOSS_ROUNDING:  # rounding up can carry these above the level
                    tail += mass
        return delta, tail


def test_mixed_epsilons_match_brute_force_and_are_never_below() -> None:
    rr = PrivacyLossDistribution.randomized_response
    composed = rr(0.3, 2, 7).compose(rr(0.7, 2, 5))
    accountant = (
        Accountant()
        .compose(RandomizedResponseEvent(0.3), 7)
        .compose(RandomizedResponseEvent(0.7), 5)
    )
    for level in (0.0, 0.1, 0.35, 1.0, 2.0, 3.05, 4.0, 5.0, 5.5):
        exact, tail = _mixed_oracle(level)
        value = composed.delta(level)
        assert value >= exact * (1 - 1e-12), f"delta({level}) below the exact value"
        assert value - exact <= DELTA_REL * exact + LOSS_ROUNDING * tail, f"delta({level})"
        assert accountant.delta(level) >= exact
    for delta in (1e-3, 1e-6):
        epsilon = accountant.epsilon(delta)
        assert _mixed_oracle(epsilon)[0] <= delta
        assert _mixed_oracle(epsilon * (1 - 1e-6))[0] > delta  # and tight


def test_huge_count_epsilon_is_not_below_the_exact_optimum() -> None:
    count, epsilon0, delta = 10**6, 0.01, 1e-6
    accountant = Accountant().compose(RandomizedResponseEvent(epsilon0), count=count)
    epsilon = accountant.epsilon(delta)
    # 20 binomial standard deviations (sqrt(count) / 2 each) below the threshold.
    exact = oracle.kov_delta_window(epsilon0, count, epsilon, width=10 * math.isqrt(count))
    assert accountant.delta(epsilon) >= exact
    assert exact <= delta


# --- epsilon(delta) ------------------------------------------------------------------------------

PLDS = {
    "binary": PrivacyLossDistribution.randomized_response(1.0, 2, 100),
    "kary": PrivacyLossDistribution.randomized_response(0.5, 10, 30),
    "gaussian": PrivacyLossDistribution.gaussian(2.0),
    "mixed": PrivacyLossDistribution.randomized_response(0.3, 2, 7).compose(
        PrivacyLossDistribution.randomized_response(0.7, 2, 5)
    ),
    "gaussian+rr": PrivacyLossDistribution.gaussian(1.0).compose(
        PrivacyLossDistribution.randomized_response(0.5, 3, 4)
    ),
}


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
@pytest.mark.parametrize("name", sorted(PLDS))
def test_epsilon_inverts_delta(name: str, delta: float) -> None:
    pld = PLDS[name]
    epsilon = pld.epsilon(delta)
    assert 0 < epsilon < math.inf
    assert pld.delta(epsilon) <= delta
    assert pld.delta(epsilon * (1 - 1e-9)) > delta * EPSILON_TARGET  # the smallest such epsilon


def test_epsilon_is_infinite_when_infinity_mass_reaches_delta() -> None:
    pld = PrivacyLossDistribution(np.array([0.0, 1.0]), np.log([0.5, 0.49]), infinity_mass=0.01)
    assert pld.epsilon(0.005) == math.inf
    assert pld.epsilon(0.01) == math.inf
    epsilon = pld.epsilon(0.02)
    assert epsilon < math.inf
    assert pld.delta(epsilon) <= 0.02
    assert pld.delta(1e9) == pytest.approx(0.01)  # the infinite loss counts at every epsilon


def test_epsilon_is_zero_when_delta_at_zero_suffices() -> None:
    pld = PrivacyLossDistribution.randomized_response(1e-3, 2, 1)
    assert pld.delta(0.0) < 1e-3
    assert pld.epsilon(1e-3) == 0.0


# --- coarsening ----------------------------------------------------------------------------------


@pytest.mark.parametrize("max_atoms", [4, 16, 64])
def test_coarsened_composition_is_pessimistic(
    monkeypatch: pytest.MonkeyPatch, max_atoms: int
) -> None:
    rr = PrivacyLossDistribution.randomized_response
    first, second = rr(0.3, 2, 40), rr(0.7, 3, 25)
    exact = first.compose(second)
    assert exact.grid == pld_module.EXACT_GRID
    monkeypatch.setattr(pld_module, "MAX_ATOMS", max_atoms)
    coarse = first.compose(second)
    assert coarse.losses.size <= max_atoms
    assert coarse.grid > pld_module.EXACT_GRID
    for epsilon in np.linspace(0.0, 32.0, 129):
        assert coarse.delta(epsilon) >= exact.delta(epsilon), f"delta({epsilon})"
    for delta in (1e-2, 1e-6, 1e-10):
        assert coarse.epsilon(delta) >= exact.epsilon(delta)


def test_coarsening_is_reported_by_the_accountant(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the exact atoms would have to coarsen, the accountant composes on a lattice and
    says how far above the exact composition that can be; the answer stays above exact."""
    events = [(RandomizedResponseEvent(0.3), 40), (RandomizedResponseEvent(0.7, num_buckets=3), 25)]
    exact = Accountant()
    for event, count in events:
        exact = exact.compose(event, count)
    exact_epsilon = exact.privacy_loss.epsilon(1e-6)  # type: ignore[union-attr]
    monkeypatch.setattr(pld_module, "MAX_ATOMS", 16)
    accountant = Accountant()
    for event, count in events:
        accountant = accountant.compose(event, count)
    pld = [c for c in accountant.explain(1e-6).conversions if c.method == "pld"]
    assert len(pld) == 1
    assert "lattice" in pld[0].detail
    assert "exact (" not in pld[0].detail
    composed = accountant.privacy_loss
    assert composed is not None
    bound = composed.rounding
    assert 0 < bound <= 2 * composed.grid  # two parts, each rounded up once
    assert exact_epsilon <= pld[0].epsilon <= exact_epsilon + bound + 1e-9


def test_the_stated_distance_from_exact_counts_every_raise_of_the_losses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(Attack review, issue 42) explain() states how far a lattice composition can be above
    the exact one; a part whose own atoms were coarsened (raising its losses by its grid) had
    that left out: 0.00013 claimed, 4.4 actual. Thirty uses of 'one of binary RR at 0.5 and
    3-RR at 3' plus binary RR at 1, against their exact composition computed here (a 2-D
    convolution over the two counts of signs)."""
    import re

    from frameldp.accounting.guarantee import sampled

    monkeypatch.setattr(pld_module, "MAX_ATOMS", 64)
    first = frameldp.RandomizedResponse(0.5, domain=["a", "b"]).privacy
    second = frameldp.RandomizedResponse(3.0, domain=["a", "b", "c"]).privacy
    third = frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy
    uses = 30
    accountant = Accountant().compose(sampled([first, second]), count=uses).compose(third)
    e1, e2, e3 = (g.events[0][0].epsilon for g in (first, second, third))

    def signs(epsilon: float, k: int) -> dict[int, float]:
        z = math.exp(epsilon) + k - 1
        return {1: math.exp(epsilon) / z, -1: 1 / z, **({0: (k - 2) / z} if k > 2 else {})}

    size = 1 << (4 * uses + 2).bit_length()
    step = np.zeros((size, size))
    for sign, mass in signs(e1, 2).items():
        step[sign % size, 0] += mass / 2
    for sign, mass in signs(e2, 3).items():
        step[0, sign % size] += mass / 2
    joint = np.fft.irfft2(np.fft.rfft2(step) ** uses, s=(size, size))
    index = np.arange(size)
    index = np.where(index > size // 2, index - size, index)
    rows, columns = np.meshgrid(index, index, indexing="ij")
    losses, masses = (rows * e1 + columns * e2).ravel(), np.maximum(joint.ravel(), 0.0)
    keep = masses > 1e-30
    losses = np.concatenate([losses[keep] + s * e3 for s in signs(e3, 2)])
    masses = np.concatenate([masses[keep] * m for m in signs(e3, 2).values()])

    def exact_epsilon(delta: float) -> float:
        low, high = 0.0, float(losses.max())
        for _ in range(100):
            middle = 0.5 * (low + high)
            above = losses > middle
            value = float(np.sum(masses[above] * -np.expm1(middle - losses[above])))
            low, high = (middle, high) if value > delta else (low, middle)
        return high

    for delta in (1e-3, 1e-6):
        conversion = next(c for c in accountant.explain(delta).conversions if c.method == "pld")
        stated = re.search(r"at most ([0-9.e+-]+) above", conversion.detail)
        assert stated is not None
        exact = exact_epsilon(delta)
        assert exact - 1e-6 <= conversion.epsilon
        assert conversion.epsilon - float(stated.group(1)) <= exact + 1e-6
