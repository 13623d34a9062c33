"""Bloom-filter RAPPOR privacy events against an independent mpmath oracle (50 digits).

The oracle is written from Erlingsson, Pihur, Korolova, "RAPPOR", CCS 2014 (Sec. 3, Thm. 1 and
2), never from library code. Two values differ in ``h = num_hashes`` bits each way; a bit goes
through the permanent response (flipped with ``flip = f/2``) once, then each of the ``r`` reports
through the instantaneous one (1 with ``q`` where the permanent bit is 1, ``p`` where it is 0).
Per bit the output is the number ``j`` of ones among the reports::

    P1(j) = (1 - flip) B(j; r, q) + flip B(j; r, p)    (true bit 1)
    P0(j) = flip B(j; r, q) + (1 - flip) B(j; r, p)    (true bit 0)

and the worst pair of values is ``h`` channels (P1 against P0) and ``h`` channels (P0 against P1),
independent. From these laws the oracle computes the pure epsilon (largest log ratio), the Rényi
curve (a sum over outputs), the zCDP rho (``sup_a RDP(a) / a``, grid then golden section) and the
exact privacy-loss distribution of the 2h channels (atoms grouped by how many channels show each
count, so that equal losses add exactly), hence ``delta(epsilon)`` and its exact inverse. The
reduction to counts is itself checked against a full enumeration of every report sequence of
every bit for small ``h`` and ``r``.

Every value the library reports must be an upper bound on the oracle (it rounds toward the safe
side) and within a tight relative tolerance of it.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import replace
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pytest
from mpmath import mpf

import frameldp
from frameldp import (
    Accountant,
    BloomRapporEvent,
    BudgetExceededError,
    Ledger,
    ParameterError,
    PrivacyGuarantee,
)
from frameldp.accounting import event_from_dict

from . import _oracles as oracle

# Pure epsilons and Rényi values are the float computation padded up by a relative 2^-36
# (1.5e-11); the float computation itself is good to ~1e-14 away from order 1. A correct value
# lies in [oracle, oracle (1 + 1e-9)].
RDP_REL = 1e-9
# rho is a numerical supremum (grid + Brent) padded up by a relative 1e-9.
RHO_REL = 1e-8
# Deltas and epsilons from the privacy-loss distribution: from_atoms pads every log mass by 2^-40
# of its magnitude and each composition adds its summation error (~1e-8 relative at these sizes).
PLD_REL = 1e-6
# Losses are rounded up to multiples of 2^-32 at every composition and carry a slack for float
# noise; over the few compositions here they move by far less than this. Moving a loss up by s
# raises delta(epsilon) by at most s P(L > epsilon - s), and epsilon(delta) by at most s.
LOSS_SHIFT = 1e-8
# delta(0) of a distribution whose losses are all exactly 0: from_atoms and every composition add
# a loss slack of ~2^-40 for float error, so delta(0) is that slack (~8e-12 at h = 3), not 0.
ZERO_LOSS_DELTA = 1e-10
# Two library values that are padded versions of the same exact number (no oracle).
PAD_SLACK = 4 * 2.0**-36
# The count reduction against the full enumeration: both at 50 digits.
ORACLE_AGREEMENT = mpf("1e-40")

# (flip_probability = f/2, one_probability = q, zero_probability = p)
CASES: dict[str, tuple[float, float, float]] = {
    "paper": (0.25, 0.75, 0.5),  # RAPPOR's example f = 0.5, p = 0.5, q = 0.75
    "strong": (0.1, 0.9, 0.2),
    "rare-flip": (0.01, 0.6, 0.4),
    "p>q": (0.3, 0.2, 0.7),  # asymmetric: a 1 is less likely where the permanent bit is 1
    "no-instantaneous": (0.25, 1.0, 0.0),  # one report is the permanent response
    "q=1": (0.05, 1.0, 0.3),
    "p=0": (0.2, 0.6, 0.0),
    "near-noise": (0.45, 0.55, 0.45),
}
HASHES = (1, 2, 3)
REPORTS = (1, 2, 3, 5)
ORDERS = (1.5, 2.0, 3.0, 8.0, 32.0, 1000.0, 1e6)
NEAR_ONE_ORDERS = (1 + 1e-9, 1 + 1e-6, 1.001)

GRID = [
    pytest.param(h, r, name, id=f"{name}-h{h}-r{r}")
    for name in CASES
    for h in HASHES
    for r in REPORTS
]


@pytest.fixture(autouse=True)
def _fifty_digits() -> Iterator[None]:
    """Every oracle value, and the arithmetic tests do on them, at 50 digits (restored after)."""
    with mpmath.workdps(oracle.DPS):
        yield


def _event(h: int, name: str, reports: int = 1, memo: str | None = None) -> BloomRapporEvent:
    flip, one, zero = CASES[name]
    return BloomRapporEvent(h, flip, one, zero, reports, memo)


def _paper_mechanism() -> frameldp.BloomRappor:
    """RAPPOR's example: f = 0.5, p = 0.5, q = 0.75 (all exact on the 2^-52 grid), h = 2."""
    return frameldp.BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=128, num_hashes=2, num_cohorts=64)


def _per_value(memo: str) -> frameldp.PrivacyGuarantee:
    """The paper mechanism's guarantee under ``memo`` with the per-value event an earlier
    frameldp recorded (no ``num_bits``): the exact loss of reports of one unchanged value, which
    ledgers written before issue 36 still hold and ``epsilon_infinity`` still states."""
    guarantee = _paper_mechanism().guarantee(memo=memo)
    [(event, count)] = guarantee.events
    return replace(guarantee, events=((replace(event, num_bits=None), count),))


def _assert_tight_upper(
    value: float, exact: mpf, rel: float, what: str, slack: float = 0.0
) -> None:
    """``exact <= value <= exact (1 + rel) + slack``: never below the truth, and tight."""
    assert value >= exact, f"{what}: {value!r} is below the exact {mpmath.nstr(exact, 20)}"
    assert value <= exact * (1 + mpf(rel)) + mpf(slack), (
        f"{what}: {value!r} exceeds the exact {mpmath.nstr(exact, 20)} by more than {rel}"
    )


# --- the oracle ----------------------------------------------------------------------------------

Laws = tuple[tuple[mpf, mpf], ...]


@cache
def _laws(name: str, reports: int) -> Laws:
    """``(P1(j), P0(j))`` for every count ``j`` of ones that either law can produce."""
    flip, one, zero = CASES[name]
    with mpmath.workdps(oracle.DPS):
        f, q, p, r = mpf(flip), mpf(one), mpf(zero), reports
        out = []
        for j in range(r + 1):
            high = mpmath.binomial(r, j) * q**j * (1 - q) ** (r - j)
            low = mpmath.binomial(r, j) * p**j * (1 - p) ** (r - j)
            p1, p0 = (1 - f) * high + f * low, f * high + (1 - f) * low
            if p1 > 0 or p0 > 0:
                out.append((p1, p0))
        return tuple(out)


def _pair_rdp(laws: Laws, order: float | mpf) -> mpf:
    """``D_a(P1 || P0) + D_a(P0 || P1)``: one bit each value sets."""
    with mpmath.workdps(oracle.DPS):
        forward = oracle.renyi([(p1, p0, 1) for p1, p0 in laws], order)
        backward = oracle.renyi([(p0, p1, 1) for p1, p0 in laws], order)
        return forward + backward


def _pair_pure(laws: Laws) -> mpf:
    with mpmath.workdps(oracle.DPS):
        losses = [mpmath.log(p1 / p0) for p1, p0 in laws]
        return max(losses) + max(-loss for loss in losses)


def _pure(name: str, h: int, reports: int) -> mpf:
    """Exact pure epsilon of ``reports`` reports sharing a permanent response."""
    return h * _pair_pure(_laws(name, reports))


@cache
def _pair_rho(name: str, reports: int) -> mpf:
    """``sup_a (pair RDP(a)) / a``, including its limit at ``a -> 1`` (the symmetrized KL)."""
    laws = _laws(name, reports)
    with mpmath.workdps(oracle.DPS):
        kl = mpmath.fsum((p1 - p0) * mpmath.log(p1 / p0) for p1, p0 in laws)
        # RDP(a) / a -> 0 as a -> inf, and the limit at a -> 1 is taken separately (the KL).
        supremum, _ = oracle.maximize_over_orders(lambda a: _pair_rdp(laws, a) / a, -15, 15)
        return max(kl, supremum)


def _epsilon_1(h: int, name: str) -> mpf:
    """Erlingsson et al. Thm. 2: ``h |ln(q*(1 - p*) / (p*(1 - q*)))|``."""
    flip, one, zero = CASES[name]
    with mpmath.workdps(oracle.DPS):
        f, q, p = mpf(flip), mpf(one), mpf(zero)
        q_star, p_star = (1 - f) * q + f * p, f * q + (1 - f) * p
        return h * abs(mpmath.log(q_star * (1 - p_star) / (p_star * (1 - q_star))))


def _epsilon_infinity(h: int, flip: float) -> mpf:
    """Erlingsson et al. Thm. 1: ``2h ln((1 - f/2) / (f/2))``."""
    with mpmath.workdps(oracle.DPS):
        return 2 * h * mpmath.log((1 - mpf(flip)) / mpf(flip))


@cache
def _loss_atoms(pairs: int, name: str, reports: int) -> tuple[tuple[mpf, mpf], ...]:
    """Exact (loss, mass) atoms of ``pairs`` independent pairs of channels, under the first value.

    An outcome is keyed by ``c_j`` = (channels of the first kind showing ``j`` ones) - (channels
    of the second kind showing ``j``); its loss is ``sum_j c_j ln(P1(j) / P0(j))``. Sorted by
    descending loss.
    """
    laws = _laws(name, reports)
    with mpmath.workdps(oracle.DPS):
        log_ratio = [mpmath.log(p1 / p0) for p1, p0 in laws]
        start = (0,) * len(laws)
        outcomes: dict[tuple[int, ...], mpf] = {start: mpf(1)}
        for _ in range(pairs):
            # A bit the first value sets (P1 against P0), then one the second value sets.
            for sign, which in ((1, 0), (-1, 1)):
                grown: defaultdict[tuple[int, ...], mpf] = defaultdict(lambda: mpf(0))
                for key, mass in outcomes.items():
                    for j, law in enumerate(laws):
                        moved = list(key)
                        moved[j] += sign
                        grown[tuple(moved)] += mass * law[which]
                outcomes = dict(grown)
        atoms = [
            (mpmath.fsum(c * log_ratio[j] for j, c in enumerate(key) if c), mass)
            for key, mass in outcomes.items()
        ]
        return tuple(sorted(atoms, key=lambda atom: atom[0], reverse=True))


def _delta(atoms: Sequence[tuple[mpf, mpf]], epsilon: float | mpf) -> mpf:
    """Hockey stick ``E_P[(1 - e^{epsilon - L})_+]``."""
    with mpmath.workdps(oracle.DPS):
        e = mpf(epsilon)
        return mpmath.fsum(m * (1 - mpmath.exp(e - loss)) for loss, m in atoms if loss > e)


def _tail(atoms: Sequence[tuple[mpf, mpf]], epsilon: float) -> mpf:
    """``P(L > epsilon - LOSS_SHIFT)``: the mass that rounding losses up can carry over a level."""
    with mpmath.workdps(oracle.DPS):
        return mpmath.fsum(m for loss, m in atoms if loss > mpf(epsilon) - mpf(LOSS_SHIFT))


def _epsilon(atoms: Sequence[tuple[mpf, mpf]], delta: float) -> mpf:
    """The exact smallest ``epsilon >= 0`` with ``delta(epsilon) <= delta``.

    Between consecutive losses ``l' < l`` the curve is ``A - e^epsilon B`` with ``A`` and ``B``
    the masses and ``e^-loss``-weighted masses of the atoms above: solved in closed form.
    """
    with mpmath.workdps(oracle.DPS):
        target, mass_above, weighted_above = mpf(delta), mpf(0), mpf(0)
        for k, (loss, mass) in enumerate(atoms):
            if loss <= 0:
                break
            mass_above += mass
            weighted_above += mass * mpmath.exp(-loss)
            left = max(atoms[k + 1][0], mpf(0)) if k + 1 < len(atoms) else mpf(0)
            if mass_above - mpmath.exp(left) * weighted_above >= target:
                return max(mpmath.log((mass_above - target) / weighted_above), left)
        return mpf(0)


def _sequence_law(name: str, reports: int, true_bit: int) -> dict[tuple[int, ...], mpf]:
    """Probability of every sequence of ``reports`` report bits of one bit (no counting)."""
    flip, one, zero = CASES[name]
    with mpmath.workdps(oracle.DPS):
        f, q, p = mpf(flip), mpf(one), mpf(zero)
        keep_one = 1 - f if true_bit else f  # P[permanent bit = 1]
        law = {}
        for sequence in itertools.product((0, 1), repeat=reports):
            if_one = mpmath.fprod(q if bit else 1 - q for bit in sequence)
            if_zero = mpmath.fprod(p if bit else 1 - p for bit in sequence)
            law[sequence] = keep_one * if_one + (1 - keep_one) * if_zero
        return law


def _joint_terms(h: int, name: str, reports: int) -> list[tuple[mpf, mpf, int]]:
    """``(P_x(y), P_x'(y), 1)`` over every report of all 2h bits, for x setting the first h bits
    and x' the other h (full enumeration: ``2^(2 h r)`` outputs)."""
    x = (1,) * h + (0,) * h
    laws = {bit: _sequence_law(name, reports, bit) for bit in (0, 1)}
    sequences = list(laws[0])
    terms = []
    with mpmath.workdps(oracle.DPS):
        for output in itertools.product(sequences, repeat=2 * h):
            first = mpmath.fprod(laws[b][s] for b, s in zip(x, output, strict=True))
            second = mpmath.fprod(laws[1 - b][s] for b, s in zip(x, output, strict=True))
            if first > 0 or second > 0:
                terms.append((first, second, 1))
    return terms


# --- the oracle checked against itself ----------------------------------------------------------


@pytest.mark.parametrize(("h", "reports"), [(1, 1), (1, 3), (1, 5), (2, 2), (3, 1)])
@pytest.mark.parametrize("name", ["paper", "p>q", "no-instantaneous", "p=0"])
def test_count_laws_match_full_enumeration_of_reports(h: int, reports: int, name: str) -> None:
    """The number of ones per bit carries the whole loss: the Rényi divergence and the pure epsilon
    of every joint report sequence equal ``h`` times the per-pair values over counts."""
    terms = _joint_terms(h, name, reports)
    laws = _laws(name, reports)
    event = _event(h, name, reports)
    pure = max(mpmath.log(a / b) for a, b, _ in terms)
    assert abs(pure - h * _pair_pure(laws)) <= ORACLE_AGREEMENT * (1 + pure)
    _assert_tight_upper(event.pure_epsilon, pure, RDP_REL, "pure epsilon")
    for order in (1.5, 2.0, 8.0):
        direct = oracle.renyi(terms, order)
        assert abs(direct - h * _pair_rdp(laws, order)) <= ORACLE_AGREEMENT * (1 + direct)
        _assert_tight_upper(event.rdp(order), direct, RDP_REL, f"RDP at {order}")


def test_oracle_reproduces_the_paper_example() -> None:
    """f = 0.5, p = 0.5, q = 0.75, h = 2: epsilon_1 ~ 1.0743 and epsilon_inf = 4 ln 3 ~ 4.3944."""
    assert float(_epsilon_1(2, "paper")) == pytest.approx(1.0743, abs=5e-5)
    assert float(_epsilon_infinity(2, 0.25)) == pytest.approx(4.3944, abs=5e-5)
    assert abs(_epsilon_infinity(2, 0.25) - 4 * mpmath.log(3)) <= mpf("1e-45")
    assert abs(2 * _pair_pure(_laws("paper", 1)) - _epsilon_1(2, "paper")) <= mpf("1e-45")


# --- pure epsilon, epsilon_infinity ---------------------------------------------------------------


@pytest.mark.parametrize(("h", "reports", "name"), GRID)
def test_pure_epsilon_is_exact(h: int, reports: int, name: str) -> None:
    event = _event(h, name, reports)
    exact = h * _pair_pure(_laws(name, reports))
    _assert_tight_upper(event.pure_epsilon, exact, RDP_REL, "pure epsilon")
    assert event.pure_epsilon <= event.epsilon_infinity
    if reports == 1:
        assert abs(exact - _epsilon_1(h, name)) <= mpf("1e-45") * (1 + exact)


@pytest.mark.parametrize("h", HASHES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_epsilon_infinity_is_rounded_up_closed_form(h: int, name: str) -> None:
    flip = CASES[name][0]
    value = _event(h, name).epsilon_infinity
    exact = _epsilon_infinity(h, flip)
    _assert_tight_upper(value, exact, 1e-15, "epsilon_infinity")
    for reports in (1, 7):
        assert _event(h, name, reports, memo="m").epsilon_infinity == value


@pytest.mark.parametrize("name", sorted(CASES))
def test_pure_epsilon_grows_with_reports_below_r_epsilon_1_and_epsilon_infinity(
    name: str,
) -> None:
    """r reports sharing a permanent response cost at most ``r epsilon_1`` (basic composition) and
    at most ``epsilon_inf`` (Thm. 1); more reports never cost less, and the cost tends to
    ``epsilon_inf``."""
    h = 2
    epsilon_1 = _epsilon_1(h, name)
    epsilon_inf = _epsilon_infinity(h, CASES[name][0])
    previous = 0.0
    for reports in (1, 2, 3, 5, 10, 50, 200):
        event = _event(h, name, reports)
        exact = h * _pair_pure(_laws(name, reports))
        _assert_tight_upper(event.pure_epsilon, exact, RDP_REL, f"{reports} reports")
        assert exact <= reports * epsilon_1 * (1 + mpf("1e-40"))
        assert exact <= epsilon_inf * (1 + mpf("1e-40"))
        assert event.pure_epsilon <= event.epsilon_infinity
        assert event.pure_epsilon >= previous * (1 - PAD_SLACK)
        previous = event.pure_epsilon
    if name != "near-noise":  # there the convergence is slow: (p/q)^r with p/q = 0.82
        assert epsilon_inf - h * _pair_pure(_laws(name, 200)) <= mpf("1e-12")


def test_paper_example_epsilon_infinity_is_reached_from_below() -> None:
    """f = 0.5, p = 0.5, q = 0.75: the gap to 4 ln 3 shrinks like (2/3)^r; at 50 reports it is
    ~8.3e-9 (still visible in a float), at 200 below one ulp."""
    event = _event(2, "paper", 50)
    assert event.pure_epsilon < event.epsilon_infinity
    gap = _epsilon_infinity(2, 0.25) - 2 * _pair_pure(_laws("paper", 50))
    assert mpf("8e-9") < gap < mpf("9e-9")
    assert _event(2, "paper", 200).pure_epsilon == pytest.approx(
        _event(2, "paper").epsilon_infinity, rel=1e-15
    )


# --- Rényi curve and rho ------------------------------------------------------------------------


@pytest.mark.parametrize(("h", "reports", "name"), GRID)
def test_rdp_is_exact(h: int, reports: int, name: str) -> None:
    event = _event(h, name, reports)
    laws = _laws(name, reports)
    for order in ORDERS:
        exact = h * _pair_rdp(laws, order)
        _assert_tight_upper(event.rdp(order), exact, RDP_REL, f"RDP at {order}")
    assert event.rdp(math.inf) == event.pure_epsilon


def test_rdp_near_order_one_is_an_upper_bound() -> None:
    """At ``a = 1 + t`` the divergence is ~``t KL``; computed as a log-sum-exp of terms summing to
    ~``1 + t KL``, it keeps an absolute error ~1e-16, i.e. ~1e-16 / (t KL) relative, far above the
    2^-36 pad (near-noise at ``1 + 1e-9``: 3e-4 below; strong, h = 3, r = 5: 1.7e-7 below)."""
    below, loose = [], []
    for name in CASES:
        for reports in REPORTS:
            laws = _laws(name, reports)
            event = _event(3, name, reports)
            for order in NEAR_ONE_ORDERS:
                exact = 3 * _pair_rdp(laws, order)
                value = event.rdp(order)
                if value < exact:
                    below.append((name, reports, order, float((value - exact) / exact)))
                elif value > exact * (1 + mpf(RDP_REL)):
                    loose.append((name, reports, order, float((value - exact) / exact)))
    assert not below, f"below the exact divergence (relative error): {below}"
    assert not loose, f"not within {RDP_REL} of the exact divergence: {loose}"


@pytest.mark.parametrize(("h", "reports", "name"), GRID)
def test_rho_is_supremum_of_rdp_over_order(h: int, reports: int, name: str) -> None:
    event = _event(h, name, reports)
    exact = h * _pair_rho(name, reports)
    # near-noise: never below, but not tight (see the xfail below).
    _assert_tight_upper(event.rho, exact, RHO_REL if name != "near-noise" else 1e-6, "rho")
    epsilon = h * _pair_pure(_laws(name, reports))
    steinke = epsilon * mpmath.tanh(epsilon / 2)
    assert event.rho <= steinke * (1 + mpf(PAD_SLACK)), "eps-DP, so Steinke's bound holds"
    for order in (1.5, 2.0, 8.0, 64.0):
        assert event.rho * order >= event.rdp(order) * (1 - PAD_SLACK)


def test_rho_is_tight_when_the_loss_is_small() -> None:
    """f/2 = 0.45, q = 0.55, p = 0.45: the supremum is the KL limit at ``a -> 1``; the search
    reads noisy curve values near ``a - 1 = e^-11`` that sit above it (h = 3, r = 1: 6.0e-8)."""
    for h in HASHES:
        for reports in REPORTS:
            exact = h * _pair_rho("near-noise", reports)
            value = _event(h, "near-noise", reports).rho
            _assert_tight_upper(value, exact, RHO_REL, f"h={h} r={reports}")


@pytest.mark.parametrize("name", ["paper", "p>q", "rare-flip"])
def test_curves_never_decrease_with_reports(name: str) -> None:
    """r reports are a post-processing of r + 1 (drop one): no curve may go down."""
    events = [_event(2, name, reports) for reports in (1, 2, 3, 5, 10, 30)]
    for weak, strong in itertools.pairwise(events):
        assert weak.rho <= strong.rho * (1 + PAD_SLACK)
        for order in ORDERS:
            assert weak.rdp(order) <= strong.rdp(order) * (1 + PAD_SLACK)


@pytest.mark.parametrize("reports", [1, 2, 5])
@pytest.mark.parametrize("name", ["paper", "strong", "p>q"])
def test_relabelling_probabilities_leaves_the_curves_unchanged(name: str, reports: int) -> None:
    """Swapping p and q swaps P1 and P0; replacing them by 1 - q, 1 - p counts zeros instead of
    ones. The worst pair is symmetric, so neither changes any curve."""
    flip, one, zero = CASES[name]
    event = BloomRapporEvent(2, flip, one, zero, reports)
    for other in (
        BloomRapporEvent(2, flip, zero, one, reports),
        BloomRapporEvent(2, flip, 1 - one, 1 - zero, reports),
    ):
        assert other.pure_epsilon == pytest.approx(event.pure_epsilon, rel=1e-12)
        assert other.rho == pytest.approx(event.rho, rel=1e-9)
        for order in ORDERS:
            assert other.rdp(order) == pytest.approx(event.rdp(order), rel=1e-12)


# --- extremes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("reports", [1, 2, 5, 40])
@pytest.mark.parametrize(("one", "zero"), [(1.0, 0.0), (0.0, 1.0)])
@pytest.mark.parametrize("flip", [0.01, 0.25, 0.4])
def test_without_instantaneous_noise_every_report_is_the_permanent_response(
    flip: float, one: float, zero: float, reports: int
) -> None:
    """p = 0, q = 1 (or reversed): each report repeats the permanent response, so r reports cost
    exactly what one does, 2h binary RR at ``ln((1 - f/2) / (f/2))``, and pure epsilon is
    epsilon_inf."""
    h = 2
    event = BloomRapporEvent(h, flip, one, zero, reports)
    bit_epsilon = mpmath.log((1 - mpf(flip)) / mpf(flip))
    rho = 2 * h * bit_epsilon * mpmath.tanh(bit_epsilon / 2)
    epsilon_inf = _epsilon_infinity(h, flip)
    _assert_tight_upper(event.pure_epsilon, epsilon_inf, 1e-15, "pure epsilon")
    _assert_tight_upper(event.epsilon_infinity, epsilon_inf, 1e-15, "epsilon_infinity")
    assert event.pure_epsilon <= event.epsilon_infinity
    for order in ORDERS:
        exact = 2 * h * oracle.rr_rdp(order, bit_epsilon, 2)
        _assert_tight_upper(event.rdp(order), exact, RDP_REL, f"RDP at {order}")
    _assert_tight_upper(event.rho, rho, RHO_REL, "rho")
    # delta of 2h binary RR at bit_epsilon: Kairouz–Oh–Viswanath.
    pld = event.privacy_loss()
    for level in (0.0, 0.5 * float(bit_epsilon), 1.5 * float(bit_epsilon)):
        exact = oracle.kov_delta(bit_epsilon, 2 * h, level)
        _assert_tight_upper(pld.delta(level), exact, PLD_REL, f"delta({level})", LOSS_SHIFT)


@pytest.mark.parametrize("reports", [1, 7])
@pytest.mark.parametrize(("one", "zero"), [(0.75, 0.5), (1.0, 0.0), (0.2, 0.9), (0.0, 0.0)])
def test_flip_one_half_is_pure_noise(one: float, zero: float, reports: int) -> None:
    """f = 1: the permanent response is a fair coin whatever the value, so nothing is revealed."""
    event = BloomRapporEvent(3, 0.5, one, zero, reports, memo="m")
    assert event.epsilon_infinity == 0.0
    assert event.pure_epsilon == 0.0
    assert event.rho == 0.0
    for order in (*ORDERS, math.inf):
        assert event.rdp(order) == 0.0
    # All losses are 0; from_atoms still carries its float-error slack into delta.
    assert event.privacy_loss().delta(0.0) <= ZERO_LOSS_DELTA
    accountant = Accountant().compose(event, count=5)
    assert accountant.pure_epsilon == 0.0
    assert accountant.rho == 0.0
    assert accountant.epsilon(1e-6) == 0.0


def test_pure_noise_accountant_reports_delta_zero() -> None:
    """The exact answer: basic composition proves delta = 0 at epsilon = 0."""
    accountant = Accountant().compose(BloomRapporEvent(2, 0.5, 0.75, 0.5, memo="m"), count=3)
    assert accountant.delta(0.0) == 0.0
    assert accountant.explain_delta(0.0).best.method == "basic"


@pytest.mark.parametrize("reports", [1, 3])
@pytest.mark.parametrize("probability", [0.0, 0.3, 1.0])
def test_equal_instantaneous_probabilities_reveal_nothing(probability: float, reports: int) -> None:
    """p = q: the reports ignore the permanent bit."""
    event = BloomRapporEvent(2, 0.1, probability, probability, reports)
    assert event.pure_epsilon == 0.0
    assert event.rho == 0.0
    assert event.rdp(2.0) == 0.0
    assert event.privacy_loss().delta(0.0) <= ZERO_LOSS_DELTA
    assert Accountant().compose(event, count=3).epsilon(1e-6) == 0.0
    assert event.epsilon_infinity > 0.0  # the permanent response alone would still cost this


# --- privacy-loss distribution ------------------------------------------------------------------


@pytest.mark.parametrize(("h", "reports", "name"), GRID)
def test_pld_delta_and_epsilon_are_exact(h: int, reports: int, name: str) -> None:
    atoms = _loss_atoms(h, name, reports)
    pld = _event(h, name, reports).privacy_loss()
    largest = float(atoms[0][0])
    for fraction in (0.0, 0.1, 0.37, 0.61, 0.9):
        level = fraction * largest
        exact = _delta(atoms, level)
        slack = LOSS_SHIFT * float(_tail(atoms, level))
        _assert_tight_upper(pld.delta(level), exact, PLD_REL, f"delta({level})", slack)
    assert pld.delta(largest * (1 + 1e-6)) <= LOSS_SHIFT * float(_tail(atoms, largest))
    for delta in (1e-3, 1e-6):
        exact = _epsilon(atoms, delta)
        assert _delta(atoms, exact) <= mpf(delta) * (1 + mpf("1e-30"))  # the oracle's inverse
        _assert_tight_upper(pld.epsilon(delta), exact, PLD_REL, f"epsilon({delta})", LOSS_SHIFT)


def test_pld_of_the_paper_example_by_hand() -> None:
    """h = 1, one report: q* = 11/16, p* = 9/16 and L = ln(q*/p*) or ln((1 - q*)/(1 - p*)) on each
    of the two bits. The largest loss ln(11 * 7 / (9 * 5)) has mass q*(1 - p*) = 77/256."""
    q_star, p_star = Fraction(11, 16), Fraction(9, 16)
    atoms = _loss_atoms(1, "paper", 1)
    assert abs(atoms[0][0] - mpmath.log(mpf(77) / 45)) <= mpf("1e-45")
    mass = q_star * (1 - p_star)
    assert abs(atoms[0][1] - mpf(mass.numerator) / mass.denominator) <= mpf("1e-45")
    assert abs(mpmath.fsum(m for _, m in atoms) - 1) <= mpf("1e-45")
    pld = _event(1, "paper").privacy_loss()
    _assert_tight_upper(pld.delta(0.0), _delta(atoms, 0.0), PLD_REL, "delta(0)")


# --- the accountant -----------------------------------------------------------------------------


@pytest.mark.parametrize("reports", [2, 3, 5])
@pytest.mark.parametrize("name", ["paper", "p>q", "q=1"])
def test_memo_event_composed_r_times_is_one_event_with_r_reports(name: str, reports: int) -> None:
    h = 2
    memo = _event(h, name, memo="m")
    folded = _event(h, name, reports, memo="m")
    reference = Accountant().compose(memo, count=reports)
    assert reference.entries == ((memo, reports),)
    # Every way of recording r reports under one memo keys them by the one-report event.
    accumulated = Accountant()
    for _ in range(reports):
        accumulated = accumulated.compose(memo)
    earlier = _event(h, name, reports - 1, memo="m")
    for same in (
        accumulated,
        Accountant().compose(folded),
        Accountant().compose(earlier).compose(memo),
        Accountant().compose(Accountant().compose(earlier)).compose(memo),
    ):
        assert same.entries == reference.entries
    # Accountants holding the r-report event itself (not folded into counts) agree on every curve.
    for other in (Accountant(((folded, 1),)), Accountant().compose(_event(h, name, reports))):
        assert other.pure_epsilon == reference.pure_epsilon
        assert other.rho == reference.rho
        for order in (1.5, 2.0, 32.0):
            assert other.rdp(order) == reference.rdp(order)
        assert other.epsilon(1e-6) == reference.epsilon(1e-6)
    assert reference.pure_epsilon == folded.pure_epsilon
    assert reference.rho == pytest.approx(folded.rho, rel=PAD_SLACK)
    assert reference.rdp(2.0) == pytest.approx(folded.rdp(2.0), rel=PAD_SLACK)
    _assert_tight_upper(reference.rho, h * _pair_rho(name, reports), RHO_REL, "rho")
    _assert_tight_upper(reference.rdp(2.0), h * _pair_rdp(_laws(name, reports), 2), RDP_REL, "RDP")
    # Against the oracle: r reports sharing one permanent response.
    atoms = _loss_atoms(h, name, reports)
    exact = _epsilon(atoms, 1e-6)
    _assert_tight_upper(reference.epsilon(1e-6), exact, PLD_REL, "epsilon(1e-6)", LOSS_SHIFT)
    _assert_tight_upper(
        reference.pure_epsilon, h * _pair_pure(_laws(name, reports)), RDP_REL, "pure epsilon"
    )


@pytest.mark.parametrize("reports", [2, 3, 5])
@pytest.mark.parametrize("name", ["paper", "p>q", "q=1"])
def test_unmemoized_events_compose_independently(name: str, reports: int) -> None:
    """Without a memo every report draws a fresh permanent response: r independent reports,
    i.e. ``h r`` independent pairs of one-report channels."""
    h = 2
    single = _event(h, name)
    accountant = Accountant().compose(single, count=reports)
    assert accountant.entries == ((single, reports),)
    epsilon_1 = _epsilon_1(h, name)
    _assert_tight_upper(accountant.pure_epsilon, reports * epsilon_1, 1e-14, "r epsilon_1")
    for order in (1.5, 2.0, 32.0):
        exact = reports * h * _pair_rdp(_laws(name, 1), order)
        _assert_tight_upper(accountant.rdp(order), exact, RDP_REL, f"RDP at {order}")
    _assert_tight_upper(accountant.rho, reports * h * _pair_rho(name, 1), RHO_REL, "rho")
    atoms = _loss_atoms(h * reports, name, 1)
    for delta in (1e-3, 1e-6):
        exact = _epsilon(atoms, delta)
        value = accountant.epsilon(delta)
        _assert_tight_upper(value, exact, PLD_REL, f"epsilon({delta})", LOSS_SHIFT)
    # Sharing the permanent response never costs more than drawing it afresh.
    folded = Accountant().compose(_event(h, name, memo="m"), count=reports)
    assert folded.pure_epsilon <= accountant.pure_epsilon
    assert folded.epsilon(1e-6) <= accountant.epsilon(1e-6)


def test_memo_events_with_different_memos_compose_independently() -> None:
    first, second = _event(2, "paper", memo="m1"), _event(2, "paper", memo="m2")
    accountant = Accountant().compose(first, count=3).compose(second, count=3)
    assert dict(accountant.entries) == {first: 3, second: 3}
    three = _event(2, "paper", 3)
    assert accountant.pure_epsilon == pytest.approx(2 * three.pure_epsilon, rel=PAD_SLACK)
    assert accountant.pure_epsilon >= 2 * _pure("paper", 2, 3)
    assert accountant.rho == pytest.approx(2 * three.rho, rel=PAD_SLACK)
    assert accountant.rdp(2.0) == pytest.approx(2 * three.rdp(2.0), rel=PAD_SLACK)
    # Two independent groups of three reports: h = 4 pairs of three-report channels.
    exact = _epsilon(_loss_atoms(4, "paper", 3), 1e-6)
    _assert_tight_upper(accountant.epsilon(1e-6), exact, PLD_REL, "epsilon(1e-6)", LOSS_SHIFT)
    # Unmemoized and memoized uses of the same parameters are different permanent responses.
    mixed = Accountant().compose(_event(2, "paper"), count=2).compose(first, count=2)
    assert len(mixed.entries) == 2
    expected = 2 * _epsilon_1(2, "paper") + 2 * _pair_pure(_laws("paper", 2))
    _assert_tight_upper(mixed.pure_epsilon, expected, RDP_REL, "mixed pure epsilon")


def test_thousand_memoized_reports_stay_below_epsilon_infinity() -> None:
    event = _event(2, "paper", memo="m")
    accountant = Accountant().compose(event, count=1000)
    assert accountant.entries == ((event, 1000),)
    epsilon_inf = event.epsilon_infinity
    # The exact value is below 4 ln 3 by ~(2/3)^1000: far below one ulp, so equal after rounding.
    assert accountant.pure_epsilon <= epsilon_inf
    _assert_tight_upper(accountant.pure_epsilon, _pure("paper", 2, 1000), 1e-15, "pure")
    assert accountant.epsilon(1e-9) <= epsilon_inf
    assert accountant.rdp(2.0) < epsilon_inf
    # Independent reports would cost 1000 epsilon_1 ~ 1074.
    assert Accountant().compose(_event(2, "paper"), count=1000).pure_epsilon > 1000


def test_repeated_and_unit_hooks() -> None:
    plain, memo = _event(2, "paper"), _event(2, "paper", memo="m")
    assert plain.repeated(4) == (plain, 4)
    assert plain.unit() == (plain, 1)
    assert memo.repeated(4) == (replace(memo, reports=4), 1)
    assert memo.unit() == (memo, 1)
    three = _event(2, "paper", 3, memo="m")
    assert three.unit() == (memo, 3)
    assert three.repeated(2) == (replace(memo, reports=6), 1)
    plain_three = _event(2, "paper", 3)
    assert plain_three.unit() == (plain_three, 1)  # three reports of one unmemoized release
    assert plain_three.repeated(2) == (plain_three, 2)
    # Folding an accountant of memo events into another adds up the reports.
    inner = Accountant().compose(three, count=2)
    assert inner.entries == ((memo, 6),)
    assert Accountant().compose(memo).compose(inner, count=2).entries == ((memo, 13),)


# --- serialization ------------------------------------------------------------------------------


def _refuse(token: str) -> None:
    raise ValueError(f"non-standard JSON token {token}")


@pytest.mark.parametrize("memo", [None, "m1", ""])
@pytest.mark.parametrize("reports", [1, 7])
def test_event_round_trips_through_strict_json(reports: int, memo: str | None) -> None:
    event = BloomRapporEvent(3, 0.1, 0.9, 0.2, reports, memo)
    data = event.to_dict()
    assert data == {
        "kind": "bloom_rappor",
        "num_hashes": 3,
        "flip_probability": 0.1,
        "one_probability": 0.9,
        "zero_probability": 0.2,
        "reports": reports,
        "memo": memo,
    }
    text = json.dumps(data, allow_nan=False)
    rebuilt = event_from_dict(json.loads(text, parse_constant=_refuse))
    assert rebuilt == event
    assert hash(rebuilt) == hash(event)
    assert isinstance(rebuilt, BloomRapporEvent)
    assert rebuilt.pure_epsilon == event.pure_epsilon


def test_integer_probabilities_and_numpy_counts_normalize() -> None:
    event = BloomRapporEvent(np.int64(2), 0.25, 1, 0, reports=np.int64(3))
    assert event == BloomRapporEvent(2, 0.25, 1.0, 0.0, 3)
    assert type(event.num_hashes) is int
    assert type(event.reports) is int
    assert type(event.one_probability) is float
    assert json.dumps(event.to_dict(), allow_nan=False)


def test_accountant_and_guarantee_with_memo_events_round_trip() -> None:
    accountant = (
        Accountant()
        .compose(_event(2, "paper", memo="m1"), count=4)
        .compose(_event(2, "paper"), count=2)
        .compose(_event(3, "p>q", 2, memo="m2"))
    )
    text = accountant.to_json()
    rebuilt = Accountant.from_dict(json.loads(text, parse_constant=_refuse))
    assert rebuilt.entries == accountant.entries
    assert rebuilt.pure_epsilon == accountant.pure_epsilon
    assert rebuilt.epsilon(1e-6) == accountant.epsilon(1e-6)
    mechanism = _paper_mechanism()
    for guarantee in (mechanism.privacy, mechanism.guarantee(memo="m1")):
        text = guarantee.to_json()
        json.loads(text, parse_constant=_refuse)
        back = PrivacyGuarantee.from_json(text)
        assert back.events == guarantee.events
        assert back.epsilon == guarantee.epsilon
        assert back.epsilon_infinity == guarantee.epsilon_infinity


@pytest.mark.parametrize(
    ("change", "names"),
    [
        ({"memo": 7}, "memo"),
        ({"reports": 2.0}, "reports"),
        ({"reports": 0}, "reports"),
        ({"num_hashes": "2"}, "num_hashes"),
        ({"flip_probability": None}, "flip_probability"),
        ({"colour": "red"}, "bad parameters"),
    ],
)
def test_event_from_dict_rejects_bad_data(change: dict[str, Any], names: str) -> None:
    data = {**_event(2, "paper", memo="m").to_dict(), **change}
    with pytest.raises(ParameterError, match=names):
        event_from_dict(data)


def test_event_from_dict_rejects_missing_parameters() -> None:
    data = _event(2, "paper").to_dict()
    del data["num_hashes"]
    with pytest.raises(ParameterError, match="bad parameters"):
        event_from_dict(data)


# --- validation ----------------------------------------------------------------------------------

BAD_PARAMETERS = [
    ("num_hashes", 0),
    ("num_hashes", -1),
    ("num_hashes", 1.5),
    ("num_hashes", 2.0),
    ("num_hashes", True),
    ("num_hashes", "2"),
    ("num_hashes", None),
    ("flip_probability", 0.0),
    ("flip_probability", -0.1),
    ("flip_probability", 0.5000001),
    ("flip_probability", 0.75),
    ("flip_probability", 1.0),
    ("flip_probability", 1.5),
    ("flip_probability", math.nan),
    ("flip_probability", math.inf),
    ("flip_probability", True),
    ("flip_probability", "0.25"),
    ("flip_probability", None),
    ("one_probability", -0.1),
    ("one_probability", -1e-300),
    ("one_probability", 1.0000001),
    ("one_probability", math.nan),
    ("one_probability", math.inf),
    ("one_probability", True),
    ("one_probability", False),
    ("one_probability", "1"),
    ("zero_probability", -0.5),
    ("zero_probability", 2.0),
    ("zero_probability", math.nan),
    ("zero_probability", -math.inf),
    ("zero_probability", True),
    ("zero_probability", None),
    ("reports", 0),
    ("reports", -3),
    ("reports", 2.0),
    ("reports", True),
    ("reports", "3"),
    ("memo", 3),
    ("memo", b"m"),
    ("memo", True),
    ("memo", ["m"]),
]


@pytest.mark.parametrize(
    ("name", "value"), BAD_PARAMETERS, ids=[f"{n}={v!r}" for n, v in BAD_PARAMETERS]
)
def test_bad_parameters_raise_naming_parameter_and_value(name: str, value: Any) -> None:
    arguments: dict[str, Any] = {
        "num_hashes": 2,
        "flip_probability": 0.25,
        "one_probability": 0.75,
        "zero_probability": 0.5,
        name: value,
    }
    with pytest.raises(ParameterError) as raised:
        BloomRapporEvent(**arguments)
    message = str(raised.value)
    assert f"{name} must" in message
    assert f"got {value!r}" in message


@pytest.mark.parametrize(
    ("flip", "one", "zero"), [(0.5, 0.0, 0.0), (1e-300, 1.0, 0.0), (0.5, 1.0, 1.0)]
)
def test_boundary_parameters_are_accepted(flip: float, one: float, zero: float) -> None:
    event = BloomRapporEvent(1, flip, one, zero, memo="")
    assert event.pure_epsilon <= event.epsilon_infinity


@pytest.mark.parametrize("order", [1, 1.0, 0.5, math.nan, "2", None, True])
def test_bad_orders_raise(order: Any) -> None:
    with pytest.raises(ParameterError, match="order"):
        _event(2, "paper", 3, memo="m").rdp(order)


# --- PrivacyGuarantee.epsilon_infinity ----------------------------------------------------------


def test_guarantee_epsilon_infinity_of_the_paper_example_is_4_ln_3() -> None:
    mechanism = _paper_mechanism()
    assert (mechanism.flip_probability, mechanism.one_probability) == (0.25, 0.75)
    assert mechanism.zero_probability == 0.5
    exact = _epsilon_infinity(2, 0.25)
    for guarantee in (mechanism.privacy, mechanism.guarantee(memo="m1")):
        value = guarantee.epsilon_infinity
        assert value is not None
        _assert_tight_upper(value, exact, 1e-15, "epsilon_infinity")
        assert value == guarantee.parameters["epsilon_infinity"]
        _assert_tight_upper(guarantee.epsilon, _epsilon_1(2, "paper"), 1e-15, "epsilon_1")


def test_randomized_response_guarantee_has_no_epsilon_infinity() -> None:
    rr = frameldp.RandomizedResponse(1.0, domain=["a", "b", "c"]).privacy
    assert rr.epsilon_infinity is None
    assert frameldp.compose([_paper_mechanism().privacy, rr]).epsilon_infinity is None


def test_composed_bloom_guarantees_add_their_epsilon_infinity() -> None:
    first = _paper_mechanism().guarantee(memo="m1")
    second = frameldp.BloomRappor(
        f=0.2, p=0.4, q=0.6, num_bits=16, num_hashes=3, num_cohorts=4
    ).privacy
    composed = frameldp.compose([first, second])
    value = composed.epsilon_infinity
    assert value is not None
    [(event, _)] = second.events
    assert isinstance(event, BloomRapporEvent)
    exact = _epsilon_infinity(2, 0.25) + _epsilon_infinity(3, event.flip_probability)
    _assert_tight_upper(value, exact, 1e-15, "sum of epsilon_infinity")
    assert first.epsilon_infinity is not None
    assert second.epsilon_infinity is not None
    assert Fraction(value) >= Fraction(first.epsilon_infinity) + Fraction(second.epsilon_infinity)
    # Two releases sharing a memo share their permanent responses: the bound does not add up.
    same = frameldp.compose([first, first])
    assert same.epsilon_infinity == first.epsilon_infinity


def test_two_equal_unmemoized_bloom_guarantees_add_their_epsilon_infinity() -> None:
    """Two Bloom columns with the same parameters and no memo have two independent permanent
    responses, exactly like two columns with different parameters; compose merges their equal
    events into one entry with count 2, which must still count twice."""
    single = _paper_mechanism().privacy
    composed = frameldp.compose([single, single])
    assert composed.epsilon == pytest.approx(2 * single.epsilon)
    assert composed.accountant.pure_epsilon == pytest.approx(2 * single.epsilon)
    exact = 2 * _epsilon_infinity(2, 0.25)
    value = composed.epsilon_infinity
    assert value is not None
    _assert_tight_upper(value, exact, 1e-15, "two columns")


# --- the ledger ---------------------------------------------------------------------------------

CAP = 5.0
LEDGER_DELTA = 1e-6


def test_memoized_spends_fold_and_stay_below_epsilon_infinity(tmp_path: Path) -> None:
    """Per-value events (a ledger written before issue 36). Pure budget of 5: fifty releases
    of the same memoized report all fit, since any number of them costs at most 4 ln 3 ~ 4.394
    (independent reports would pass the cap at the fifth)."""
    ledger = Ledger(tmp_path / "ledger.db")
    ledger.set_budget("b", epsilon=CAP)
    guarantee = _per_value("m1")
    epsilon_inf = guarantee.epsilon_infinity
    assert epsilon_inf is not None
    totals = [ledger.spend("b", guarantee) for _ in range(50)]
    assert all(t <= epsilon_inf for t in totals)
    assert all(a <= b for a, b in itertools.pairwise(totals))
    for reports in (1, 2, 3, 5, 10, 50):
        exact = _pure("paper", 2, reports)
        _assert_tight_upper(totals[reports - 1], exact, RDP_REL, f"{reports} memoized releases")
    assert totals[0] == guarantee.epsilon
    status = ledger.status("b")
    assert (status.releases, status.spent, status.method) == (50, totals[-1], "basic")
    [(event, _)] = guarantee.events
    assert ledger.accountant("b").entries == ((event, 50),)
    assert Ledger(tmp_path / "ledger.db").status("b") == status


def test_spends_under_different_memos_compose_independently(tmp_path: Path) -> None:
    """Per-value events (a ledger written before issue 36). Each memo names its own permanent
    responses: three releases under each of two memos cost twice three memoized reports
    (~5.51), and a cap of 6 that one memo could never reach (any number of its releases costs
    at most 4 ln 3) is reached by two."""
    cap = 6.0
    ledger = Ledger(tmp_path / "ledger.db")
    ledger.set_budget("b", epsilon=cap)
    first = _per_value("m1")
    second = _per_value("m2")
    for _ in range(3):
        ledger.spend("b", first)
        total = ledger.spend("b", second)
    _assert_tight_upper(total, 2 * _pure("paper", 2, 3), RDP_REL, "two memos")
    assert _pure("paper", 2, 4) + _pure("paper", 2, 3) > cap  # ~6.04: a seventh does not fit
    with pytest.raises(BudgetExceededError):
        ledger.spend("b", first)
    assert ledger.status("b").releases == 6
    assert ledger.status("b").spent == total


def test_memoized_spends_fold_on_a_delta_budget(tmp_path: Path) -> None:
    """Per-value events (a ledger written before issue 36). At delta 1e-6 the total is the
    tightest composition of the folded reports: the exact epsilon(1e-6) of r memoized reports,
    never above their pure epsilon nor 4 ln 3."""
    ledger = Ledger(tmp_path / "ledger.db")
    ledger.set_budget("b", epsilon=CAP, delta=LEDGER_DELTA)
    guarantee = _per_value("m1")
    epsilon_inf = guarantee.epsilon_infinity
    assert epsilon_inf is not None
    totals = [ledger.spend("b", guarantee) for _ in range(20)]
    assert all(t <= epsilon_inf for t in totals)
    for reports in (1, 2, 3):
        exact = _epsilon(_loss_atoms(2, "paper", reports), LEDGER_DELTA)
        _assert_tight_upper(totals[reports - 1], exact, PLD_REL, f"{reports} releases", LOSS_SHIFT)
    for reports in (5, 20):
        assert totals[reports - 1] <= _pure("paper", 2, reports) * (1 + RDP_REL)
    assert ledger.status("b").releases == 20


def test_a_persons_memoized_spends_add_up_their_instantaneous_responses(tmp_path: Path) -> None:
    """A person's reports sharing permanent responses, whatever their values: from the second
    on, every bit of every report's instantaneous response (q = 0.75 from a permanent 1, p =
    0.5 from a 0: ln 2 per bit), 2 x 128 ln 2 ~ 177 for two; the second spend passes a cap of
    5 and is refused, recording nothing."""
    ledger = Ledger(tmp_path / "ledger.db")
    ledger.set_budget("b", epsilon=CAP)
    guarantee = _paper_mechanism().guarantee(memo="m1")
    assert ledger.spend("b", guarantee) == guarantee.epsilon
    [(event, _)] = guarantee.events
    folded, uses = event.repeated(2)
    assert uses == 1
    assert folded.pure_epsilon == pytest.approx(2 * 128 * math.log(2.0))
    assert folded.pure_epsilon >= 2 * 128 * math.log(2.0)
    with pytest.raises(BudgetExceededError):
        ledger.spend("b", guarantee)
    assert ledger.status("b").releases == 1


@pytest.mark.parametrize("delta", [None, LEDGER_DELTA])
def test_unmemoized_spends_pass_the_cap_at_the_fifth(tmp_path: Path, delta: float | None) -> None:
    """Fresh permanent responses: independent reports, 5 epsilon_1 ~ 5.37 > 5 (and above 5 at
    delta 1e-6 too, exactly: 10 independent pairs of one-report channels)."""
    path = tmp_path / "ledger.db"
    ledger = Ledger(path)
    ledger.set_budget("b", epsilon=CAP, delta=delta)
    guarantee = _paper_mechanism().privacy
    epsilon_1 = _epsilon_1(2, "paper")
    if delta is None:
        exact_four, exact_five = 4 * epsilon_1, 5 * epsilon_1
    else:
        exact_four = _epsilon(_loss_atoms(8, "paper", 1), delta)
        exact_five = _epsilon(_loss_atoms(10, "paper", 1), delta)
    assert exact_four <= CAP < exact_five
    for _ in range(4):
        total = ledger.spend("b", guarantee)
    assert total <= CAP
    if delta is None:
        _assert_tight_upper(total, exact_four, 1e-14, "four releases")
    else:
        _assert_tight_upper(total, exact_four, PLD_REL, "four releases", LOSS_SHIFT)
    history = ledger.history("b")
    with pytest.raises(BudgetExceededError):
        ledger.spend("b", guarantee)
    assert ledger.status("b").releases == 4
    assert Ledger(path).history("b") == history
