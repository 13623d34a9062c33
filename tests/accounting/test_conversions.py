"""RDP / zCDP to (epsilon, delta): the library's order search against a continuous minimization
of the same conversion formulas in mpmath (``_oracles``), and the ordering of the conversions:
Canonne–Kamath–Steinke (CKS) <= Mironov's classic conversion, CKS zCDP <= Bun–Steinke.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mpmath
import pytest
from mpmath import mpf

from frameldp import RandomizedResponseEvent
from frameldp.accounting.conversions import (
    rdp_to_delta,
    rdp_to_epsilon,
    zcdp_to_epsilon_bun_steinke,
)

from . import _oracles as oracle

Curve = Callable[[float], float]
MpCurve = Callable[[mpf], mpf]

# The order is found on a log grid then by Brent's method to 1e-9 in ln(a - 1); near the
# optimum the objective is quadratic, so the value is within ~1e-12 of the minimum; 1e-6 is
# the tightness the accountant promises.
CONVERSION_REL = 1e-6
# A closed form (Bun–Steinke) evaluated in floats (~1e-15) and padded up by 2^-36 (1.5e-11).
CLOSED_FORM_REL = 1e-10

# The smallest positive (subnormal) float.
SMALLEST_FLOAT = 5e-324

RHOS = (1e-4, 0.01, 0.5, 1.0, 10.0, 100.0)
DELTAS = (1e-3, 1e-6, 1e-10)


def _assert_tight_upper(value: float, exact: mpf, rel: float, what: str) -> None:
    assert value >= exact, f"{what}: {value!r} is below the exact {mpmath.nstr(exact, 20)}"
    assert value <= exact * (1 + mpf(rel)), f"{what}: {value!r} vs {mpmath.nstr(exact, 20)}"


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("rho", RHOS)
def test_zcdp_conversion_is_the_cks_minimum(rho: float, delta: float) -> None:
    value, order = rdp_to_epsilon(lambda a: a * rho, delta)
    exact, exact_order = oracle.cks_epsilon(lambda a: a * mpf(rho), delta)
    _assert_tight_upper(value, exact, CONVERSION_REL, f"CKS(rho={rho}, delta={delta})")
    assert math.log(order - 1) == pytest.approx(float(mpmath.log(exact_order - 1)), abs=0.05)


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("rho", RHOS)
def test_cks_beats_mironov_and_bun_steinke(rho: float, delta: float) -> None:
    value, _ = rdp_to_epsilon(lambda a: a * rho, delta)
    mironov = oracle.mironov_epsilon(lambda a: a * mpf(rho), delta)
    with mpmath.workdps(oracle.DPS):
        # Mironov's conversion of the line a rho, minimized at a = 1 + sqrt(ln(1/delta) / rho),
        # is exactly Bun–Steinke Prop. 1.3.
        bun_steinke = mpf(rho) + 2 * mpmath.sqrt(mpf(rho) * mpmath.log(1 / mpf(delta)))
    assert abs(mironov - bun_steinke) <= mpf("1e-30") * bun_steinke
    assert value < mironov
    reported = zcdp_to_epsilon_bun_steinke(rho, delta)
    _assert_tight_upper(reported, bun_steinke, CLOSED_FORM_REL, "Bun–Steinke")
    assert value <= reported


RR_COMPOSITIONS = [(1.0, 100), (0.1, 1000), (0.5, 10), (math.log(3), 30)]


def _rr_curves(epsilon0: float, count: int) -> tuple[Curve, MpCurve]:
    """count * RDP_RR(epsilon0): the library's (padded) curve and the exact mpmath one."""
    event = RandomizedResponseEvent(epsilon0)
    return (
        lambda a: count * event.rdp(a),
        lambda a: count * oracle.rr_rdp(a, epsilon0, 2),
    )


def _gaussian_curves(rho: float) -> tuple[Curve, MpCurve]:
    return (lambda a: a * rho, lambda a: a * mpf(rho))


@pytest.mark.parametrize(
    ("epsilon0", "count", "delta"),
    [(e, c, d) for e, c in RR_COMPOSITIONS for d in (1e-6, 1e-9)],
)
def test_rdp_conversion_of_composed_rr_curve(epsilon0: float, count: int, delta: float) -> None:
    """The CKS conversion of count * RDP_RR is tight and never below the exact KOV epsilon."""
    curve, exact_curve = _rr_curves(epsilon0, count)
    value, _ = rdp_to_epsilon(curve, delta)
    exact, _ = oracle.cks_epsilon(exact_curve, delta)
    _assert_tight_upper(value, exact, CONVERSION_REL, f"RDP of {count} x RR({epsilon0})")
    optimum, _ = oracle.kov_epsilon(epsilon0, count, delta)
    assert value >= optimum


@pytest.mark.parametrize(
    ("curves", "delta"),
    [
        (_gaussian_curves(1e-12), 1e-10),
        (_gaussian_curves(1e-10), 1e-10),
        (_rr_curves(0.5, 10), 1e-9),
    ],
    ids=["rho=1e-12", "rho=1e-10", "10xRR(0.5)"],
)
def test_conversion_is_tight_when_the_optimal_order_is_large(
    curves: tuple[Curve, MpCurve], delta: float
) -> None:
    curve, exact_curve = curves
    value, _ = rdp_to_epsilon(curve, delta)
    exact, order = oracle.cks_epsilon(exact_curve, delta)
    assert order > 1e5
    assert value <= exact * (1 + mpf(CONVERSION_REL))


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 10.0])
@pytest.mark.parametrize("rho", [0.01, 0.5, 3.0])
def test_rdp_to_delta_is_the_cks_minimum(rho: float, epsilon: float) -> None:
    value, _ = rdp_to_delta(lambda a: a * rho, epsilon)
    exact = oracle.cks_delta(lambda a: a * mpf(rho), epsilon)
    if exact < SMALLEST_FLOAT:
        assert 0 < value <= SMALLEST_FLOAT  # below what a float holds, but never 0
        return
    _assert_tight_upper(value, exact, CONVERSION_REL, f"delta(rho={rho}, eps={epsilon})")


def test_rdp_to_delta_never_rounds_a_positive_delta_to_zero() -> None:
    assert oracle.cks_delta(lambda a: a * mpf(0.01), 10.0) > 0
    assert rdp_to_delta(lambda a: a * 0.01, 10.0)[0] > 0


@pytest.mark.parametrize(("epsilon0", "count"), RR_COMPOSITIONS)
def test_rdp_to_delta_of_composed_rr_curve(epsilon0: float, count: int) -> None:
    event = RandomizedResponseEvent(epsilon0)
    epsilon = 0.6 * count * epsilon0
    value, _ = rdp_to_delta(lambda a: count * event.rdp(a), epsilon)
    exact = oracle.cks_delta(lambda a: count * oracle.rr_rdp(a, epsilon0, 2), epsilon)
    _assert_tight_upper(value, exact, CONVERSION_REL, f"delta of {count} x RR({epsilon0})")
    assert value >= oracle.kov_delta(epsilon0, count, epsilon)  # valid


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("rho", [0.01, 1.0, 100.0])
def test_delta_and_epsilon_conversions_are_consistent(rho: float, delta: float) -> None:
    epsilon, _ = rdp_to_epsilon(lambda a: a * rho, delta)
    back, _ = rdp_to_delta(lambda a: a * rho, epsilon)
    assert back <= delta * (1 + CONVERSION_REL)


def test_conversion_is_zero_when_the_curve_is_flat_zero() -> None:
    assert rdp_to_epsilon(lambda a: 0.0, 0.5)[0] == 0.0
