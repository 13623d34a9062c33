"""Shuffle-model accounting against independent oracles.

Amplification by shuffling (Feldman, McMillan, Talwar, FOCS 2021, arXiv:2012.12803; stronger
clones: SODA 2023, arXiv:2208.04591). With ``p = e^eps0 / (e^eps0 + 1)`` and a clone probability
``q`` (``e^-eps0``, or ``2 / (e^eps0 + 1)`` for stronger clones) the shuffled reports are a
post-processing of the pair of laws on ``(c, a)``::

    P0(c, a) = Bin(n-1, q)(c) [p B_c(a-1) + (1-p) B_c(a)]
    P1(c, a) = Bin(n-1, q)(c) [(1-p) B_c(a-1) + p B_c(a)]       B_c = Bin(c, 1/2)

and the oracle below enumerates every ``(c, a)`` in mpmath at 50 digits and sums the positive
parts of ``P0 - e^eps P1`` (no tail formula, no window). Lower bound: shuffled binary randomized
response (all others hold 0; the analyst counts ones), ``Bin(n, r)`` against
``Bernoulli(1 - r) + Bin(n - 1, r)`` with ``r = 1 / (e^eps0 + 1)``: every valid bound for all
eps0-LDP randomizers must be at least its delta; computed here in scipy log space and checked
against mpmath at small n.

Balcer–Cheu counts (Balcer, Cheu, ITC 2020, arXiv:1911.06879): two counts with independent
``Bin(n, p)`` noise, one person moving one up and one down: ``P = (B + 1, B')`` against
``Q = (B, B' + 1)``, enumerated on the whole ``(n + 2)^2`` grid in mpmath.

Every value the library reports must be on the safe side of the oracle (delta and epsilon never
below it) and within the declared tolerance of it. Nothing here is random.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from fractions import Fraction
from functools import cache
from typing import Any

import mpmath
import numpy as np
import pytest
from mpmath import mpf
from scipy.special import logsumexp
from scipy.stats import binom

import frameldp
from frameldp import Accountant, ParameterError, PrivacyGuarantee
from frameldp.accounting import (
    BinomialCountsEvent,
    ShuffleEvent,
    amplify_by_shuffling,
    compose,
    event_from_dict,
)
from frameldp.accounting.amplification import (
    Clones,
    binary_rr_shuffle_delta,
    clone_delta,
    clone_epsilon,
    closed_form_epsilon,
)

from . import _oracles as oracle

DPS = 50  # significant digits of every oracle
# clone_delta pads its float sum by 2^-30 relative, far above the float error of the tail sums
# in the regimes below (a few ulps, times the sqrt(n) lost to cancellation). A correct value lies
# in [oracle, oracle (1 + DELTA_REL)] + LOST_MASS.
DELTA_REL = 1e-6
# Clone counts with probability below e^-745 are dropped and their mass added to delta in full.
LOST_MASS = 1e-300
# clone_epsilon stops Brent's method at 1e-12 eps0, steps up by at most twice that, then rounds up
# by 4 ulps.
ROOT_SLACK = 1e-9
# Two 50-digit evaluations of the same exact number.
ORACLE_AGREEMENT = mpf("1e-40")
# The scipy lower bound: log binomial pmfs good to ~1e-10 absolute at n = 1e6, summed in log
# space; checked against mpmath at small n with this same relative tolerance.
LOWER_REL = 1e-6
# Privacy-loss distributions (as in test_bloom_event.py): log masses padded by 2^-40 of their
# magnitude plus summation error, so delta is within PLD_REL relative; losses are rounded up to
# multiples of 2^-32 per composition and carry a slack of ~2^-40 scale: far below LOSS_SHIFT.
# Raising every loss by s turns delta(eps) into delta(eps - s) exactly.
PLD_REL = 1e-6
LOSS_SHIFT = 1e-8
# Rényi values and rho are padded up by a relative 2^-36.
RDP_REL = 1e-9

DELTA = 1e-6
CLONES: tuple[Clones, ...] = ("clones", "stronger_clones")


# ---------------------------------------------------------------------- oracles


@cache
def clone_pair(n: int, epsilon0: float, clones: Clones) -> tuple[tuple[mpf, ...], tuple[mpf, ...]]:
    """``P0(c, a)`` and ``P1(c, a)`` over every ``c`` in ``0..n-1`` and ``a`` in ``0..c+1``."""
    with mpmath.workdps(DPS):
        e0 = mpmath.exp(mpf(epsilon0))
        p = e0 / (e0 + 1)
        q = 1 / e0 if clones == "clones" else 2 / (e0 + 1)
        p0: list[mpf] = []
        p1: list[mpf] = []
        for c in range(n):
            weight = math.comb(n - 1, c) * q**c * (1 - q) ** (n - 1 - c)
            # half[a] = B_c(a); the trailing 0 serves both B_c(-1) (index -1) and B_c(c + 1).
            half = [mpf(math.comb(c, a)) / mpf(2) ** c for a in range(c + 1)] + [mpf(0)]
            for a in range(c + 2):
                p0.append(weight * (p * half[a - 1] + (1 - p) * half[a]))
                p1.append(weight * ((1 - p) * half[a - 1] + p * half[a]))
        return tuple(p0), tuple(p1)


def hockey_stick(first: tuple[mpf, ...], second: tuple[mpf, ...], epsilon: float) -> mpf:
    """``sum (first - e^epsilon second)_+`` at 50 digits."""
    with mpmath.workdps(DPS):
        scale = mpmath.exp(mpf(epsilon))
        return mpmath.fsum(
            d for d in (x - scale * y for x, y in zip(first, second, strict=True)) if d > 0
        )


def oracle_clone_delta(epsilon: float, epsilon0: float, n: int, clones: Clones) -> mpf:
    p0, p1 = clone_pair(n, epsilon0, clones)
    return hockey_stick(p0, p1, epsilon)


def rr_delta(epsilon: float, epsilon0: float) -> mpf:
    """One report of binary RR: ``(p - e^eps (1 - p))_+``."""
    with mpmath.workdps(DPS):
        e0 = mpmath.exp(mpf(epsilon0))
        return max(mpf(0), (e0 - mpmath.exp(mpf(epsilon))) / (e0 + 1))


def epsilon_slack(epsilon0: float) -> float:
    """How far above the exact root a correct clone_epsilon may lie.

    delta is convex and decreasing in ``t = e^eps`` and 0 at ``t = e^eps0``, so where it is
    ``delta`` its slope is at least ``delta / (e^eps0 - t)``: a relative error ``rho`` in delta
    moves the root by at most ``-ln(1 - rho expm1(eps0)) < 2 rho expm1(eps0)``. Here ``rho``
    covers the library's error (DELTA_REL) and its 2^-30 pad.
    """
    return 2.0 * (2.0 * DELTA_REL) * math.expm1(epsilon0) + ROOT_SLACK


def log_binary_rr_laws(epsilon0: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """log P[K0 = k], log P[K1 = k] for k in 0..n: ``Bin(n, r)``, ``Ber(1 - r) + Bin(n - 1, r)``."""
    r = 1.0 / (math.exp(epsilon0) + 1.0)
    log_r, log_keep = -float(np.logaddexp(0.0, epsilon0)), -float(np.logaddexp(0.0, -epsilon0))
    k = np.arange(n + 1)
    log_k0 = binom.logpmf(k, n, r)
    log_k1 = np.logaddexp(
        log_keep + binom.logpmf(k - 1, n - 1, r), log_r + binom.logpmf(k, n - 1, r)
    )
    return log_k0, log_k1


def binary_rr_lower_delta(epsilon: float, epsilon0: float, n: int) -> float:
    """Exact delta of shuffled binary RR (both directions), in float log space."""
    log_k0, log_k1 = log_binary_rr_laws(epsilon0, n)
    worst = 0.0
    for first, second in ((log_k0, log_k1), (log_k1, log_k0)):
        with np.errstate(invalid="ignore"):  # -inf - -inf where both laws are 0
            excess = first - second - epsilon
        above = excess > 0
        if above.any():
            terms = first[above] + np.log(-np.expm1(-excess[above]))
            worst = max(worst, math.exp(float(logsumexp(terms))))
    return worst


def binary_rr_lower_delta_mp(epsilon: float, epsilon0: float, n: int) -> mpf:
    """The same at 50 digits, by enumeration."""
    with mpmath.workdps(DPS):
        r = 1 / (mpmath.exp(mpf(epsilon0)) + 1)

        def rest(k: int) -> mpf:
            return math.comb(n - 1, k) * r**k * (1 - r) ** (n - 1 - k) if 0 <= k < n else mpf(0)

        k0 = tuple(math.comb(n, k) * r**k * (1 - r) ** (n - k) for k in range(n + 1))
        k1 = tuple((1 - r) * rest(k - 1) + r * rest(k) for k in range(n + 1))
        return max(hockey_stick(k0, k1, epsilon), hockey_stick(k1, k0, epsilon))


def fmt21_closed_form(delta: float, epsilon0: float, n: int) -> float | None:
    """FMT21 Thm. 3.1, or None outside ``eps0 <= ln(n / (16 ln(2 / delta)))``."""
    if epsilon0 > math.log(n / (16.0 * math.log(2.0 / delta))):
        return None
    e0 = math.exp(epsilon0)
    inner = 8.0 * math.sqrt(e0 * math.log(4.0 / delta)) / math.sqrt(n) + 8.0 * e0 / n
    return math.log(1.0 + (e0 - 1.0) / (e0 + 1.0) * inner)


def rr_guarantee(epsilon0: float) -> PrivacyGuarantee:
    return frameldp.RandomizedResponse(epsilon0, domain=["a", "b"]).privacy


def float_up(value: Fraction) -> float:
    nearest = float(value)
    return math.nextafter(nearest, math.inf) if Fraction(nearest) < value else nearest


# ---------------------------------------------------------------------- clone_delta vs mpmath

ORACLE_SIZES = (2, 10, 50, 120)  # the mpmath oracle costs n^2
ORACLE_LOCAL = (0.5, 1.0, 2.0, 4.0)
# Fractions of eps0: from nearly 0 to well inside the curve (delta from ~1 down to ~1e-12).
FRACTIONS = (0.05, 0.3, 0.6, 0.9)


@pytest.mark.parametrize("clones", CLONES)
@pytest.mark.parametrize("epsilon0", ORACLE_LOCAL)
@pytest.mark.parametrize("n", ORACLE_SIZES)
def test_clone_delta_matches_exact_divergence(n: int, epsilon0: float, clones: Clones) -> None:
    for fraction in FRACTIONS:
        epsilon = fraction * epsilon0
        exact = oracle_clone_delta(epsilon, epsilon0, n, clones)
        value = clone_delta(epsilon, epsilon0, n, clones)
        assert exact > 0
        assert value >= exact, (epsilon, value, exact)
        assert value <= exact * (1 + DELTA_REL) + LOST_MASS, (epsilon, value, exact)
    # From eps0 on the likelihood ratio never exceeds e^eps0: delta is exactly 0.
    assert clone_delta(epsilon0, epsilon0, n, clones) == 0.0
    assert oracle_clone_delta(epsilon0, epsilon0, n, clones) < ORACLE_AGREEMENT


@pytest.mark.parametrize("clones", CLONES)
@pytest.mark.parametrize("epsilon0", [0.5, 4.0])
@pytest.mark.parametrize("n", [10, 50])
def test_clone_pair_is_symmetric(n: int, epsilon0: float, clones: Clones) -> None:
    """``a -> c + 1 - a`` swaps P0 and P1, so one direction of the divergence suffices."""
    p0, p1 = clone_pair(n, epsilon0, clones)
    for fraction in (0.0, *FRACTIONS):
        epsilon = fraction * epsilon0
        forward, backward = hockey_stick(p0, p1, epsilon), hockey_stick(p1, p0, epsilon)
        assert abs(forward - backward) < ORACLE_AGREEMENT


@pytest.mark.parametrize("clones", CLONES)
@pytest.mark.parametrize("epsilon0", ORACLE_LOCAL)
def test_one_report_is_randomized_response(epsilon0: float, clones: Clones) -> None:
    """n = 1: nobody to hide among, the pair is binary RR at eps0 itself."""
    for fraction in FRACTIONS:
        epsilon = fraction * epsilon0
        exact = rr_delta(epsilon, epsilon0)
        assert abs(oracle_clone_delta(epsilon, epsilon0, 1, clones) - exact) < ORACLE_AGREEMENT
        value = clone_delta(epsilon, epsilon0, 1, clones)
        assert exact <= value <= exact * (1 + DELTA_REL)


@pytest.mark.parametrize("clones", CLONES)
@pytest.mark.parametrize("epsilon0", [1.0, 4.0])
@pytest.mark.parametrize("n", [10, 50, 200])
def test_clone_epsilon_is_the_exact_root(n: int, epsilon0: float, clones: Clones) -> None:
    """Sound (exact delta at the reported epsilon <= delta) and tight (see epsilon_slack)."""
    slack = epsilon_slack(epsilon0)
    for delta in (1e-3, DELTA):
        epsilon = clone_epsilon(delta, epsilon0, n, clones)
        assert 0.0 < epsilon <= epsilon0
        assert oracle_clone_delta(epsilon, epsilon0, n, clones) <= delta
        assert oracle_clone_delta(epsilon - slack, epsilon0, n, clones) > delta
        assert clone_delta(epsilon, epsilon0, n, clones) <= delta


def test_large_delta_gives_zero_epsilon() -> None:
    """Total variation of the pair below delta: epsilon 0 is exact."""
    n, epsilon0 = 200, 0.5
    assert oracle_clone_delta(0.0, epsilon0, n, "clones") <= 0.5
    assert clone_epsilon(0.5, epsilon0, n) == 0.0


def test_few_reports_give_back_the_local_epsilon() -> None:
    """n = 10 at eps0 = 4: hardly any clones; epsilon at 1e-6 is within 1e-5 of eps0.

    The exact root lies above 4 - 1e-5 (oracle), the reported value above the root (soundness)
    and never above eps0.
    """
    guarantee = amplify_by_shuffling(4.0, 10)
    epsilon = guarantee.epsilon_at(DELTA)
    assert oracle_clone_delta(4.0 - 1e-5, 4.0, 10, "clones") > DELTA
    assert oracle_clone_delta(epsilon, 4.0, 10, "clones") <= DELTA
    assert epsilon <= 4.0
    assert round(epsilon, 4) == 4.0
    assert guarantee.explain(DELTA).best.epsilon == epsilon


# ---------------------------------------------------------------------- numerical edge cases


@pytest.mark.parametrize("n", [1, 10])
def test_clone_delta_near_local_epsilon_is_an_upper_bound(n: int) -> None:
    epsilon0, epsilon = 2.0, 2.0 - 1e-8
    exact = oracle_clone_delta(epsilon, epsilon0, n, "clones")
    assert clone_delta(epsilon, epsilon0, n) >= exact


@pytest.mark.parametrize("epsilon0", [20.0, 30.0, 50.0])
def test_clone_epsilon_is_sound_for_large_local_epsilon(epsilon0: float) -> None:
    epsilon = clone_epsilon(DELTA, epsilon0, 1)
    assert rr_delta(epsilon, epsilon0) <= DELTA


def test_large_local_epsilon_respects_the_binary_rr_lower_bound() -> None:
    epsilon = amplify_by_shuffling(50.0, 1000).epsilon_at(DELTA)
    assert binary_rr_lower_delta(epsilon, 50.0, 1000) <= DELTA * (1 + LOWER_REL)


def test_huge_local_epsilon_does_not_crash() -> None:
    assert 0.0 < clone_epsilon(DELTA, 700.0, 100) <= 700.0


@pytest.mark.parametrize("epsilon0", [5e-324, 1e-320, 1e-310, 1e-300])
def test_tiny_local_epsilon_gives_a_tiny_central_epsilon(epsilon0: float) -> None:
    """eps0 near the smallest float (issue 36: 1e-320 raised 'math domain error' from the
    Rényi curve, whose ``t * eps0`` underflowed): every figure is bounded by eps0."""
    g = amplify_by_shuffling(epsilon0, 1000)
    assert 0.0 <= g.epsilon_at(DELTA) <= epsilon0
    assert 0.0 <= g.delta_at(0.0) <= epsilon0
    for order in (1.0 + 1e-9, 2.0, 64.0, math.inf):
        assert 0.0 <= g.rdp(order) <= 2 * epsilon0 + 1e-322  # eps0-DP: eps0, padded up
    assert 0.0 <= g.rho <= epsilon0


# ---------------------------------------------------------------------- lower bound helper


@pytest.mark.parametrize("epsilon0", [1.0, 4.0])
@pytest.mark.parametrize("n", [5, 40])
def test_binary_rr_lower_bound_helpers_match_mpmath(n: int, epsilon0: float) -> None:
    """The test's scipy lower bound and the library's binary_rr_shuffle_delta, at 50 digits."""
    for fraction in (0.0, 0.1, 0.5, 0.9):
        epsilon = fraction * epsilon0
        exact = binary_rr_lower_delta_mp(epsilon, epsilon0, n)
        assert exact > 0
        assert abs(binary_rr_lower_delta(epsilon, epsilon0, n) - exact) <= LOWER_REL * exact
        assert abs(binary_rr_shuffle_delta(epsilon, epsilon0, n) - exact) <= LOWER_REL * exact
        # Binary RR is one eps0-LDP randomizer: its shuffled delta never exceeds the clone bound.
        assert exact <= clone_delta(epsilon, epsilon0, n)


# ---------------------------------------------------------------------- acceptance grid

# Each clone_epsilon at n = 1e6 costs 0.1-0.6 s (a window of ~10^4 clone counts, tail values for
# each, a few dozen Brent steps), a stronger-clone bound up to 9 s: the grid holds each eps0 and
# each n at least once (benchmarks/bench_shuffle.py runs the full grid).
ACCEPTANCE = [(1.0, 1_000_000), (2.0, 100_000), (4.0, 10_000), (4.0, 1_000_000)]


@pytest.mark.parametrize(("epsilon0", "n"), ACCEPTANCE)
def test_clones_between_lower_bound_and_closed_form(epsilon0: float, n: int) -> None:
    epsilon = amplify_by_shuffling(epsilon0, n).epsilon_at(DELTA)
    assert 0.0 < epsilon < epsilon0
    closed = fmt21_closed_form(DELTA, epsilon0, n)
    if closed is not None:
        assert epsilon <= closed
        assert closed_form_epsilon(DELTA, epsilon0, n) == pytest.approx(closed, rel=1e-12)
    else:
        assert closed_form_epsilon(DELTA, epsilon0, n) is None
    assert binary_rr_lower_delta(epsilon, epsilon0, n) <= DELTA * (1 + LOWER_REL)


@pytest.mark.parametrize(("epsilon0", "n"), ACCEPTANCE)
def test_stronger_clones_for_rr_between_lower_bound_and_clones(epsilon0: float, n: int) -> None:
    local = rr_guarantee(epsilon0)
    realized = local.epsilon  # rounded up from the sampler's dyadic probabilities
    guarantee = amplify_by_shuffling(local, n)
    assert guarantee.parameters["clones"] == "stronger_clones"
    epsilon = guarantee.epsilon_at(DELTA)
    assert epsilon <= clone_epsilon(DELTA, realized, n, "clones")
    assert binary_rr_lower_delta(epsilon, realized, n) <= DELTA * (1 + LOWER_REL)


def test_published_fmt21_value() -> None:
    """FMT21 (Sec. 4, numerical): eps0 = 4, n = 1e5, delta = 1e-6 gives about 0.17."""
    assert amplify_by_shuffling(4.0, 100_000).epsilon_at(DELTA) <= 0.171


# ---------------------------------------------------------------------- monotonicity


def test_clone_delta_decreases_in_epsilon() -> None:
    values = [clone_delta(e, 2.0, 1000) for e in np.linspace(0.0, 2.0, 41)]
    assert all(b <= a for a, b in itertools.pairwise(values))
    assert values[0] > 0.0
    assert values[-1] == 0.0


def test_clone_epsilon_decreases_in_n() -> None:
    values = [clone_epsilon(DELTA, 2.0, n) for n in (1, 10, 100, 1000, 10_000, 100_000)]
    assert all(b < a for a, b in itertools.pairwise(values))
    assert values[0] <= 2.0


def test_clone_epsilon_increases_in_local_epsilon() -> None:
    local = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0)
    values = [clone_epsilon(DELTA, e0, 10_000) for e0 in local]
    assert all(b > a for a, b in itertools.pairwise(values))
    assert all(value <= e0 for value, e0 in zip(values, local, strict=True))


@pytest.mark.parametrize("epsilon0", [0.5, 2.0, 6.0])
@pytest.mark.parametrize("n", [10, 1000, 10_000])
def test_stronger_clones_never_worse(n: int, epsilon0: float) -> None:
    """More clones (2/(e^eps0 + 1) >= e^-eps0): a smaller divergence at every epsilon."""
    strong = clone_epsilon(DELTA, epsilon0, n, "stronger_clones")
    assert strong <= clone_epsilon(DELTA, epsilon0, n, "clones") <= epsilon0
    for fraction in FRACTIONS:
        epsilon = fraction * epsilon0
        weaker = clone_delta(epsilon, epsilon0, n, "clones")
        assert clone_delta(epsilon, epsilon0, n, "stronger_clones") <= weaker


# ---------------------------------------------------------------------- ShuffleEvent, guarantee


def test_shuffled_guarantee_records_the_model() -> None:
    guarantee = amplify_by_shuffling(2.0, 10_000)
    assert guarantee.model == "shuffle"
    assert guarantee.shuffled
    assert guarantee.epsilon == 2.0  # the pure epsilon stays the local one
    assert guarantee.parameters["reports"] == 10_000
    assert guarantee.parameters["local_epsilon"] == 2.0
    assert guarantee.parameters["clones"] == "clones"
    assert guarantee.parameters["local"] == "pure_dp"
    ((event, count),) = guarantee.events
    assert event == ShuffleEvent(2.0, 10_000, "clones")
    assert count == 1
    assert "shuffle model" in str(guarantee)
    assert not rr_guarantee(1.0).shuffled


def test_shuffled_guarantee_reports_the_shuffle_method() -> None:
    guarantee = amplify_by_shuffling(2.0, 10_000)
    best = guarantee.explain(DELTA).best
    assert best.method == "shuffle"
    assert best.epsilon == guarantee.epsilon_at(DELTA) == clone_epsilon(DELTA, 2.0, 10_000)


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
def test_delta_at_epsilon_at_is_within_delta(delta: float) -> None:
    # Above 10^4 people: the stronger-clone method (the exact scan below is checked in
    # test_shuffle_composition.py).
    guarantee = amplify_by_shuffling(rr_guarantee(2.0), 20_000)
    assert guarantee.delta_at(guarantee.epsilon_at(delta)) <= delta


def test_json_round_trip_keeps_the_curve() -> None:
    for guarantee in (
        amplify_by_shuffling(2.0, 2_000),
        amplify_by_shuffling(rr_guarantee(2.0), 2_000),  # the exact scan: every dataset
    ):
        rebuilt = PrivacyGuarantee.from_json(guarantee.to_json())
        assert rebuilt.model == "shuffle"
        assert rebuilt.to_dict() == guarantee.to_dict()
        assert rebuilt.epsilon_at(DELTA) == guarantee.epsilon_at(DELTA)
        assert rebuilt.delta_at(0.1) == guarantee.delta_at(0.1)


def test_shuffle_model_guarantee_without_pure_epsilon() -> None:
    """A shuffle-model guarantee may have epsilon = inf: JSON null, and back."""
    event = BinomialCountsEvent(1000, 0.7)
    guarantee = PrivacyGuarantee(math.inf, "balcer_cheu", {}, (), ((event, 1),), model="shuffle")
    data = json.loads(guarantee.to_json())
    assert data["epsilon"] is None
    assert data["model"] == "shuffle"
    rebuilt = PrivacyGuarantee.from_json(guarantee.to_json())
    assert rebuilt.epsilon == math.inf
    assert rebuilt.epsilon_at(DELTA) == guarantee.epsilon_at(DELTA) < math.inf
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyGuarantee(math.inf, "balcer_cheu", {}, (), ((event, 1),))  # local model
    with pytest.raises(ValueError, match="model"):
        PrivacyGuarantee(1.0, "x", model="central")  # type: ignore[arg-type]


def test_repeated_shuffled_releases_compose_their_pairs() -> None:
    """Two shuffled releases compose through their pairs' loss distributions: tighter than
    basic composition at delta / 2 each (the accountant's answer before issue 17)."""
    guarantee = amplify_by_shuffling(1.0, 10_000)
    accountant = Accountant().compose(guarantee, count=2)
    split = 2 * guarantee.epsilon_at(DELTA / 2)
    assert accountant.epsilon(DELTA) < 0.75 * split
    assert accountant.explain(DELTA).best.method == "pld"
    assert accountant.delta(accountant.epsilon(DELTA)) <= DELTA


def test_shuffled_composed_with_local_is_shuffle_model() -> None:
    shuffled, local = amplify_by_shuffling(1.0, 10_000), rr_guarantee(1.0)
    both = compose([shuffled, local])
    assert both.model == "shuffle"
    basic = float_up(Fraction(shuffled.epsilon_at(DELTA)) + Fraction(local.epsilon))
    shuffle = [c for c in both.explain(DELTA).conversions if c.method == "shuffle"]
    assert shuffle[0].epsilon == basic  # the direct single-release bound plus the local one
    assert both.epsilon_at(DELTA) <= basic
    assert both.delta_at(both.epsilon_at(DELTA)) <= DELTA
    assert compose([local, local]).model == "local"


def test_shuffle_event_local_curves() -> None:
    """Pure epsilon and rho of the local reports (binary RR at eps0); the Rényi curve is never
    above theirs (the pair's, when smaller: tests/accounting/test_shuffle_frontier.py)."""
    event = ShuffleEvent(2.0, 1000)
    assert event.pure_epsilon == 2.0
    for order in (1.5, 2.0, 10.0):
        exact = oracle.rr_rdp(order, 2.0, 2)
        assert 0.0 < event.rdp(order) <= exact * (1 + RDP_REL)
    assert event.rdp(2.0) < 0.1 * oracle.rr_rdp(2.0, 2.0, 2)
    assert ShuffleEvent(20.0, 1000).rdp(2.0) >= oracle.rr_rdp(2.0, 20.0, 2)  # past eps0 = 15
    with mpmath.workdps(DPS):
        rho = mpf(2) * mpmath.tanh(mpf(1))
    assert rho <= event.rho <= rho * (1 + RDP_REL)
    assert event.central_delta(0.1) == clone_delta(0.1, 2.0, 1000)
    assert event.central_epsilon(DELTA) == clone_epsilon(DELTA, 2.0, 1000)
    assert event_from_dict(json.loads(json.dumps(event.to_dict()))) == event


def test_already_shuffled_is_refused() -> None:
    with pytest.raises(ParameterError, match="already"):
        amplify_by_shuffling(amplify_by_shuffling(1.0, 100), 100)


def test_stronger_clones_refused_for_rappor() -> None:
    local = frameldp.Rappor(1.0, domain=["a", "b", "c"]).privacy
    with pytest.raises(ParameterError, match="stronger_clones"):
        amplify_by_shuffling(local, 1000, clones="stronger_clones")
    assert amplify_by_shuffling(local, 1000).parameters["clones"] == "clones"
    with pytest.raises(ParameterError, match="stronger_clones"):
        amplify_by_shuffling(1.0, 1000, clones="stronger_clones")


@pytest.mark.parametrize("n", [0, -1, 1.5, True, "10"])
def test_bad_n_raises(n: Any) -> None:
    with pytest.raises(ParameterError, match=r"\bn must"):
        amplify_by_shuffling(1.0, n)
    with pytest.raises(ParameterError, match=r"\bn must"):
        clone_epsilon(DELTA, 1.0, n)


@pytest.mark.parametrize("epsilon0", [0, -1.0, math.nan, math.inf, "1", True])
def test_bad_local_epsilon_raises(epsilon0: Any) -> None:
    with pytest.raises(ParameterError, match="epsilon0"):
        amplify_by_shuffling(epsilon0, 100)
    with pytest.raises(ParameterError, match="epsilon0"):
        clone_delta(0.1, epsilon0, 100)


@pytest.mark.parametrize("delta", [0, 1, -1, 1.5, math.nan])
def test_bad_delta_raises(delta: Any) -> None:
    guarantee = amplify_by_shuffling(1.0, 100)
    with pytest.raises(ParameterError, match="delta"):
        guarantee.epsilon_at(delta)
    with pytest.raises(ParameterError, match="delta"):
        clone_epsilon(delta, 1.0, 100)


@pytest.mark.parametrize("epsilon", [-1.0, math.nan, math.inf])
def test_bad_epsilon_raises(epsilon: float) -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        clone_delta(epsilon, 1.0, 100)
    with pytest.raises(ParameterError, match="epsilon"):
        amplify_by_shuffling(1.0, 100).delta_at(epsilon)


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ((0.0, 100), "local_epsilon"),
        ((1.0, 0), "reports"),
        ((1.0, 100, "copies"), "clones"),
    ],
)
def test_bad_shuffle_event_raises(arguments: tuple[Any, ...], name: str) -> None:
    with pytest.raises(ParameterError, match=name):
        ShuffleEvent(*arguments)


def test_unknown_clones_raises() -> None:
    with pytest.raises(ParameterError, match="clones"):
        amplify_by_shuffling(1.0, 100, clones="copies")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="clones"):
        clone_delta(0.1, 1.0, 100, "copies")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: clone_delta("1", 1.0, 100), "epsilon"),  # type: ignore[arg-type]
        (lambda: clone_delta(True, 1.0, 100), "epsilon"),
        (lambda: clone_epsilon("1e-6", 1.0, 100), "delta"),  # type: ignore[arg-type]
        (lambda: closed_form_epsilon(0.0, 1.0, 10**6), "delta"),
        (lambda: closed_form_epsilon(-1.0, 1.0, 10**6), "delta"),
        (lambda: closed_form_epsilon(1.0, 1.0, 10**6), "delta"),
    ],
    ids=[
        "clone_delta-str-epsilon",
        "clone_delta-bool-epsilon",
        "clone_epsilon-str-delta",
        "closed_form-delta-0",
        "closed_form-delta-negative",
        "closed_form-delta-1",
    ],
)
def test_helpers_validate_every_argument(call: Callable[[], object], name: str) -> None:
    with pytest.raises(ParameterError, match=name):
        call()


# ---------------------------------------------------------------------- BinomialCountsEvent


def binomial_pmf(n: int, p: float) -> list[mpf]:
    with mpmath.workdps(DPS):
        q = mpf(p)
        return [math.comb(n, k) * q**k * (1 - q) ** (n - k) for k in range(n + 1)]


@cache
def histogram_pair(n: int, p: float) -> tuple[tuple[mpf, ...], tuple[mpf, ...]]:
    """``P(x, y) = b(x - 1) b(y)``, ``Q(x, y) = b(x) b(y - 1)`` on ``{0..n+1}^2``."""
    with mpmath.workdps(DPS):
        b = [*binomial_pmf(n, p), mpf(0)]  # b[-1] = b[n + 1] = 0
        first = tuple(b[x - 1] * b[y] for x in range(n + 2) for y in range(n + 2))
        second = tuple(b[x] * b[y - 1] for x in range(n + 2) for y in range(n + 2))
        return first, second


@cache
def shift_pair(n: int, p: float) -> tuple[tuple[mpf, ...], tuple[mpf, ...]]:
    """One count: ``Bin(n, p) + 1`` against ``Bin(n, p)`` on ``0..n+1``."""
    with mpmath.workdps(DPS):
        b = [*binomial_pmf(n, p), mpf(0)]
        return tuple(b[x - 1] for x in range(n + 2)), tuple(b[x] for x in range(n + 2))


def oracle_histogram_delta(n: int, p: float, epsilon: float) -> mpf:
    first, second = histogram_pair(n, p)
    return hockey_stick(first, second, epsilon)


HISTOGRAMS = [(n, p) for n in (20, 60) for p in (0.6, 0.9)]


@pytest.mark.parametrize(("n", "p"), HISTOGRAMS)
def test_binomial_counts_delta_matches_exact_divergence(n: int, p: float) -> None:
    accountant = Accountant().compose(BinomialCountsEvent(n, p))
    first, second = histogram_pair(n, p)
    for epsilon in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0):
        exact = hockey_stick(first, second, epsilon)
        shifted = hockey_stick(first, second, epsilon - LOSS_SHIFT)
        value = accountant.delta(epsilon)
        assert exact <= value <= shifted * (1 + PLD_REL), (epsilon, value, exact)
        # The pair is symmetric (swap the two counts): one direction suffices.
        assert abs(hockey_stick(second, first, epsilon) - exact) < ORACLE_AGREEMENT


@pytest.mark.parametrize(("n", "p"), HISTOGRAMS)
def test_binomial_counts_epsilon_is_the_exact_root(n: int, p: float) -> None:
    accountant = Accountant().compose(BinomialCountsEvent(n, p))
    first, second = histogram_pair(n, p)
    # Outcomes impossible under Q (a count at n + 1, or the other at 0): loss +infinity.
    infinite = mpmath.fsum(x for x, y in zip(first, second, strict=True) if y == 0)
    for delta in (1e-2, DELTA):
        epsilon = accountant.epsilon(delta)
        if infinite > delta:
            assert epsilon == math.inf
            continue
        assert hockey_stick(first, second, epsilon) <= delta
        tight = hockey_stick(first, second, epsilon - LOSS_SHIFT) * (1 + PLD_REL) ** 2
        assert tight > delta
        assert accountant.delta(epsilon) <= delta


@pytest.mark.parametrize(("n", "p"), HISTOGRAMS)
def test_binary_sum_is_bounded_by_both_shifts(n: int, p: float) -> None:
    """bins = 1: at least either one-count shift, at most their composition."""
    accountant = Accountant().compose(BinomialCountsEvent(n, p, bins=1))
    up, down = shift_pair(n, p)
    for epsilon in (0.0, 0.5, 1.0, 2.0):
        value = accountant.delta(epsilon)
        assert value >= max(hockey_stick(up, down, epsilon), hockey_stick(down, up, epsilon))
        assert value <= oracle_histogram_delta(n, p, epsilon - LOSS_SHIFT) * (1 + PLD_REL)


def test_binomial_counts_has_no_pure_or_renyi_bound() -> None:
    event = BinomialCountsEvent(1000, 0.7)
    assert event.pure_epsilon == math.inf
    assert event.rho == math.inf
    assert event.rdp(2.0) == math.inf
    assert event.rdp(math.inf) == math.inf
    explanation = Accountant().compose(event).explain(DELTA)
    assert explanation.best.method == "pld"
    assert explanation.best.epsilon < math.inf


def test_binomial_counts_json_round_trip() -> None:
    for event in (BinomialCountsEvent(60, 0.9), BinomialCountsEvent(20, 0.6, bins=1)):
        rebuilt = event_from_dict(json.loads(json.dumps(event.to_dict())))
        assert rebuilt == event
        assert isinstance(rebuilt, BinomialCountsEvent)
        accountant = Accountant().compose(event)
        again = Accountant.from_dict(json.loads(accountant.to_json()))
        assert again.delta(0.5) == accountant.delta(0.5)


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ((0, 0.5), "reports"),
        ((-1, 0.5), "reports"),
        ((1.5, 0.5), "reports"),
        ((True, 0.5), "reports"),
        ((100, 0.0), "noise_probability"),
        ((100, 1.0), "noise_probability"),
        ((100, -0.1), "noise_probability"),
        ((100, math.nan), "noise_probability"),
        ((100, "0.5"), "noise_probability"),
        ((100, True), "noise_probability"),
        ((100, 0.5, 0), "bins"),
        ((100, 0.5, 3), "bins"),
    ],
)
def test_bad_binomial_counts_raises(arguments: tuple[Any, ...], name: str) -> None:
    with pytest.raises(ParameterError, match=name):
        BinomialCountsEvent(*arguments)


def test_exact_accounting_is_no_worse_than_balcer_cheu() -> None:
    """Balcer–Cheu Thm. 3.1 per count at (eps/2, delta/2), two counts per person: the histogram
    is (eps, delta)-DP with eps = 1, delta = 1e-6, n = 10^4; the exact curve must agree."""
    n, epsilon, delta = 10_000, 1.0, 1e-6
    gamma = 50.0 * math.log(2.0 / (delta / 2.0)) / ((epsilon / 2.0) ** 2 * n)
    assert gamma <= 0.5  # the theorem's condition n >= 100 ln(2/d) / e^2
    event = BinomialCountsEvent(n, 1.0 - gamma)
    assert Accountant().compose(event).epsilon(delta) <= epsilon
