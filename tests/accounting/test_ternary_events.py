"""The frequency oracles' privacy against an independent mpmath oracle (50 digits).

The oracle never calls frameldp's accounting: it writes out each mechanism's output law from its
definition, with the probabilities the mechanism *realized* (exact rationals read from the
mechanism), for every output of a small instance, and computes for every ordered pair of inputs
the pure epsilon (the largest log ratio), the Rényi divergence (a sum over outputs), the zCDP rho
(``sup_a RDP(a) / a``, grid then golden section) and the hockey-stick divergence of one and two
uses (two uses: the product law, enumerated). The library's values come from the guarantee the
mechanism states (its event's closed forms); each must be an upper bound on the worst pair and,
for OUE, subset selection, Hadamard and projective geometry response (whose every pair is the
worst), within a tight relative tolerance of it.

* Optimized unary encoding: bits independent, the true value's bit 1 with 1/2, others with q.
* Subset selection: ``P[S | x] = p / C(k-1, d-1)`` if ``x`` in ``S``, else ``(1-p) / C(k-1, d)``.
* Hadamard response: ``P[y | x] = 2p/K`` where ``H[x + 1, y] = +1``, else ``2(1-p)/K``.
* Projective geometry response: ``P[h | x] = p / D`` if ``<h, x> = 0`` over ``F_q``, else
  ``(1 - p) / (K - D)``, with the points enumerated from the module's numbering.
* Local hashing: ``P[(s, y) | x] = (p if y = h_s(x) else (1-p)/(g-1)) / g^m`` with the hash
  family written out from its definition (digits of the seed times digits of the value mod g).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable

import mpmath
import numpy as np
import pytest
from mpmath import mpf

import frameldp
from frameldp.accounting import event_from_dict

from . import _oracles as oracle

RDP_REL = 1e-9
RHO_REL = 1e-8
PLD_REL = 1e-6
LOSS_SHIFT = 1e-8
ORDERS = (1.25, 2.0, 5.0, 32.0)

Law = dict[Hashable, mpf]


def _dyadic(numerator: int) -> mpf:
    """A realized probability: the sampler's exact numerator over ``2**64`` (the float
    properties round it to 53 bits)."""
    return mpf(numerator) / mpf(2) ** 64


@mpmath.workdps(oracle.DPS)
def oue_law(mech: frameldp.OptimizedUnaryEncoding, x: int) -> Law:
    q, k = _dyadic(mech._zero_numerator), mech.num_bits
    law = {}
    for bits in itertools.product((0, 1), repeat=k):
        probability = mpf(1)
        for j, bit in enumerate(bits):
            one = mpf(1) / 2 if j == x else q
            probability *= one if bit else 1 - one
        law[bits] = probability
    return law


@mpmath.workdps(oracle.DPS)
def subset_law(mech: frameldp.SubsetSelection, x: int) -> Law:
    k, d = mech.num_bits, mech.subset_size
    p = 1 - _dyadic(mech._out_numerator)
    inside = p / mpmath.binomial(k - 1, d - 1)
    outside = (1 - p) / mpmath.binomial(k - 1, d)
    return {s: inside if x in s else outside for s in itertools.combinations(range(k), d)}


@mpmath.workdps(oracle.DPS)
def hadamard_law(mech: frameldp.HadamardResponse, x: int) -> Law:
    size = mech.num_columns
    p = 1 - _dyadic(mech._off_numerator)
    law = {}
    for y in range(size):
        positive = bin((x + 1) & y).count("1") % 2 == 0
        law[y] = (2 * p if positive else 2 * (1 - p)) / size
    return law


@mpmath.workdps(oracle.DPS)
def hashing_law(mech: frameldp.LocalHashing, x: int) -> Law:
    g, seeds = mech.num_buckets, mech.num_seeds
    assert g is not None
    digits = round(math.log(seeds, g))
    p = 1 - _dyadic(mech._move_numerator)

    def digit(value: int, j: int) -> int:
        return (value // g**j) % g

    law = {}
    for s in range(seeds):
        hashed = sum(digit(s, j) * digit(x, j) for j in range(digits)) % g
        for y in range(g):
            law[(s, y)] = (p if y == hashed else (1 - p) / (g - 1)) / seeds
    return law


def _projective_points(q: int, t: int) -> list[tuple[int, ...]]:
    """The points of ``P^(t-1)(F_q)`` in the module's numbering, written from its docstring:
    by the position of the leading 1, then by the trailing coordinates as a base-q number."""
    return [
        (0,) * j + (1,) + trailing
        for j in range(t)
        for trailing in itertools.product(range(q), repeat=t - 1 - j)
    ]


@mpmath.workdps(oracle.DPS)
def projective_law(mech: frameldp.ProjectiveGeometryResponse, x: int) -> Law:
    q = mech.field_size
    assert q is not None
    points = _projective_points(q, mech.dimension)
    through = [sum(a * b for a, b in zip(h, points[x], strict=True)) % q == 0 for h in points]
    p = 1 - _dyadic(mech._out_numerator)
    inside = p / sum(through)
    outside = (1 - p) / (len(points) - sum(through))
    return {h: inside if hit else outside for h, hit in zip(points, through, strict=True)}


def _terms(first: Law, second: Law) -> list[tuple[mpf, mpf, int]]:
    return [(first[y], second[y], 1) for y in first]


@mpmath.workdps(oracle.DPS)
def hockey_stick(first: Law, second: Law, epsilon: float, uses: int) -> mpf:
    """``sum max(P - e^eps Q, 0)`` over the outputs of ``uses`` independent uses."""
    e = mpmath.exp(mpf(epsilon))
    items = [(first[y], second[y]) for y in first]
    total = mpf(0)
    for combo in itertools.product(items, repeat=uses):
        p = mpmath.fprod(a for a, _ in combo)
        q = mpmath.fprod(b for _, b in combo)
        total += max(p - e * q, 0)
    return total


def _pairs(size: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(size) for b in range(size) if a != b]


LAWS: dict[str, tuple[Callable[[], object], Callable[..., Law]]] = {
    "oue-eps1-k4": (lambda: frameldp.OptimizedUnaryEncoding(1.0, domain=list("abcd")), oue_law),
    "oue-eps3-k3": (lambda: frameldp.OptimizedUnaryEncoding(3.0, domain=list("abc")), oue_law),
    "ss-eps1-k6-d2": (
        lambda: frameldp.SubsetSelection(1.0, domain=list("abcdef"), subset_size=2),
        subset_law,
    ),
    "ss-eps2-k7-d3": (
        lambda: frameldp.SubsetSelection(2.0, domain=list("abcdefg"), subset_size=3),
        subset_law,
    ),
    "hr-eps1-k5": (lambda: frameldp.HadamardResponse(1.0, domain=list("abcde")), hadamard_law),
    "hr-eps4-k3": (lambda: frameldp.HadamardResponse(4.0, domain=list("abc")), hadamard_law),
    "olh-eps1-k4": (lambda: frameldp.LocalHashing(1.0, domain=list("abcd")), hashing_law),
    "blh-eps1-k5": (
        lambda: frameldp.LocalHashing(1.0, domain=list("abcde"), num_buckets=2),
        hashing_law,
    ),
    "pgr-eps1-fano": (
        lambda: frameldp.ProjectiveGeometryResponse(1.0, domain=list("abcdefg"), field_size=2),
        projective_law,
    ),
    "pgr-eps2-q3-k10": (
        lambda: frameldp.ProjectiveGeometryResponse(2.0, domain=list("abcdefghij"), field_size=3),
        projective_law,
    ),
    "lh-eps2-k6-g5": (
        lambda: frameldp.LocalHashing(2.0, domain=list("abcdef"), num_buckets=5),
        hashing_law,
    ),
}


@pytest.fixture(params=sorted(LAWS))
def case(request: pytest.FixtureRequest) -> tuple[object, list[tuple[Law, Law]]]:
    build, law = LAWS[request.param]
    mech = build()
    k = len(mech.categories)  # type: ignore[attr-defined]
    laws = [law(mech, x) for x in range(k)]
    return mech, [(laws[a], laws[b]) for a, b in _pairs(k)]


def _event(mech: object) -> frameldp.PrivacyGuarantee:
    return mech.privacy  # type: ignore[attr-defined, no-any-return]


@mpmath.workdps(oracle.DPS)
def test_pure_epsilon_is_the_largest_log_ratio(case: tuple[object, list[tuple[Law, Law]]]) -> None:
    mech, pairs = case
    exact = max(mpmath.log(p[y] / q[y]) for p, q in pairs for y in p)
    stated = _event(mech).epsilon
    assert stated >= exact
    assert stated <= exact * (1 + RDP_REL)


@mpmath.workdps(oracle.DPS)
def test_every_pair_is_the_worst_and_the_renyi_curve_is_exact(
    case: tuple[object, list[tuple[Law, Law]]],
) -> None:
    mech, pairs = case
    ((event, _),) = _event(mech).events
    for order in ORDERS:
        values = [oracle.renyi(_terms(p, q), order) for p, q in pairs]
        assert max(values) - min(values) < mpf("1e-40")  # relabellings of one pair
        assert event.rdp(order) >= values[0]
        assert event.rdp(order) <= values[0] * (1 + RDP_REL)


@mpmath.workdps(oracle.DPS)
def test_rho_is_the_supremum_of_rdp_over_order(case: tuple[object, list[tuple[Law, Law]]]) -> None:
    mech, pairs = case
    ((event, _),) = _event(mech).events
    p, q = pairs[0]
    kl = mpmath.fsum(p[y] * mpmath.log(p[y] / q[y]) for y in p)
    value, _ = oracle.maximize_over_orders(lambda a: oracle.renyi(_terms(p, q), a) / a)
    exact = max(value, kl)
    assert event.rho >= exact * (1 - 1e-12)
    assert event.rho <= exact * (1 + RHO_REL)


@pytest.mark.parametrize("uses", [1, 2])
@mpmath.workdps(oracle.DPS)
def test_privacy_loss_distribution_gives_the_exact_delta(
    case: tuple[object, list[tuple[Law, Law]]], uses: int
) -> None:
    mech, pairs = case
    ((event, _),) = _event(mech).events
    pld = event.privacy_loss(uses)
    p, q = pairs[0]
    for epsilon in (0.0, 0.5 * event.epsilon, event.epsilon * uses * 0.9):
        exact = max(hockey_stick(p, q, epsilon, uses), hockey_stick(q, p, epsilon, uses))
        stated = pld.delta(epsilon)
        assert stated >= exact
        shifted = max(
            hockey_stick(p, q, epsilon - LOSS_SHIFT, uses),
            hockey_stick(q, p, epsilon - LOSS_SHIFT, uses),
        )
        assert stated <= shifted * (1 + PLD_REL) + mpf("1e-15")


def test_local_hashing_is_more_private_than_the_randomized_response_it_runs() -> None:
    """Collisions lose nothing: the exact curve lies below k-ary RR's over ``g`` buckets."""
    for g in (2, 3, 5):
        mech = frameldp.LocalHashing(1.0, domain=list(range(9)), num_buckets=g)
        ((event, _),) = mech.privacy.events
        rr = frameldp.RandomizedResponseEvent(event.epsilon, g)
        for order in ORDERS:
            assert event.rdp(order) < rr.rdp(order)
        assert event.pure_epsilon == rr.pure_epsilon


def test_local_hashing_family_is_exactly_universal() -> None:
    """Every pair of values collides under exactly 1/g of the seeds (the estimator's premise)."""
    for g, k in ((2, 9), (3, 10), (5, 7), (7, 50)):
        mech = frameldp.LocalHashing(1.0, domain=list(range(k)), num_buckets=g)
        seeds = mech.num_seeds
        all_seeds = np.repeat(np.arange(seeds), k)
        all_codes = np.tile(np.arange(k), seeds)
        table = mech.hash_values(all_seeds, all_codes).reshape(seeds, k)
        for a, b in _pairs(k):
            assert int(np.sum(table[:, a] == table[:, b])) * g == seeds


def test_events_round_trip_and_refuse_bad_parameters() -> None:
    for event in (
        frameldp.OptimizedUnaryEncodingEvent(1.5),
        frameldp.HadamardResponseEvent(0.5),
        frameldp.SubsetSelectionEvent(2.0, 10, 3),
        frameldp.ProjectiveGeometryEvent(2.0, 5, 3),
    ):
        assert event_from_dict(event.to_dict()) == event
    for bad in (
        lambda: frameldp.SubsetSelectionEvent(1.0, 5, 5),
        lambda: frameldp.SubsetSelectionEvent(1.0, 5, 0),
        lambda: frameldp.OptimizedUnaryEncodingEvent(-1.0),
        lambda: frameldp.HadamardResponseEvent(math.nan),
        lambda: frameldp.ProjectiveGeometryEvent(1.0, 4, 3),
        lambda: frameldp.ProjectiveGeometryEvent(1.0, 3, 1),
    ):
        with pytest.raises(frameldp.ParameterError):
            bad()


def test_projective_geometry_over_a_line_is_randomized_response() -> None:
    """``t = 2``: each hyperplane is one of ``q + 1`` points, the event k-RR's."""
    pgr = frameldp.ProjectiveGeometryEvent(1.3, 7, 2)
    rr = frameldp.RandomizedResponseEvent(1.3, 8)
    for order in ORDERS:
        assert pgr.rdp(order) == pytest.approx(rr.rdp(order), rel=1e-9)


def test_subset_size_one_is_randomized_response() -> None:
    ss = frameldp.SubsetSelectionEvent(1.3, 9, 1)
    rr = frameldp.RandomizedResponseEvent(1.3, 9)
    for order in ORDERS:
        assert ss.rdp(order) == pytest.approx(rr.rdp(order), rel=1e-9)
        assert ss.rdp(order) >= rr.rdp(order) * (1 - 1e-11)
    assert ss.privacy_loss(3).epsilon(1e-6) == pytest.approx(
        rr.privacy_loss(3).epsilon(1e-6), rel=1e-9
    )


def test_huge_epsilon_does_not_overflow() -> None:
    event = frameldp.OptimizedUnaryEncodingEvent(1000.0)
    assert event.pure_epsilon == 1000.0
    assert math.isfinite(event.rdp(2.0))
