"""Privacy events: each closed form against an independent mpmath oracle (50 digits), validation,
serialization, and the structural properties every Rényi curve must have.

Oracles (``_oracles``) are written from the papers, never from library code: the k-ary RR curve
both in closed form and as the divergence summed over the k outputs, RAPPOR by enumerating all
``2^num_bits`` reports, Laplace by numerical integration over the real line.
"""

from __future__ import annotations

import json
import math
from typing import Any

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpmath import mpf

from frameldp import (
    GaussianEvent,
    LaplaceEvent,
    ParameterError,
    PureDP,
    RandomizedResponseEvent,
    RapporEvent,
)
from frameldp.accounting import PrivacyEvent, event_from_dict

from . import _oracles as oracle

# Reported Rényi values are the float computation padded up by a relative 2^-36 (1.5e-11); the
# float computation itself is good to ~1e-14. So a correct value lies in [oracle, oracle (1 +
# 1e-10)]: the upper end leaves a wide margin over the pad and still catches any formula slip.
RDP_REL = 1e-10
# The k-ary RR rho is a numerical supremum (grid + Brent) padded up by a relative 1e-9.
RHO_REL = 1e-8
# Two library values compared with each other (no oracle): each is its exact value padded up by at
# most ~2^-36 relative, so an exact inequality between the true values can appear violated by at
# most twice that.
PAD_SLACK = 2 * 2.0**-36
# Agreement of two mpmath oracles computing the same number two ways at 50 digits, less the ~17
# digits that ln(1 + x) loses to cancellation at order 1 + 1e-9.
ORACLE_AGREEMENT = mpf("1e-25")

EPSILONS = (1e-4, 0.01, 0.1, 0.5, 1.0, math.log(3), 2.0, 5.0, 10.0)
KS = (2, 3, 10, 1000)
ORDERS = (1 + 1e-9, 1 + 1e-6, 1.001, 1.5, 2.0, 8.0, 32.0, 1000.0, 1e6)


def _assert_tight_upper(value: float, exact: mpf, rel: float, what: str) -> None:
    """``exact <= value <= exact (1 + rel)``: never below the truth, and tight."""
    assert value >= exact, f"{what}: {value!r} is below the exact {mpmath.nstr(exact, 20)}"
    assert value <= exact * (1 + mpf(rel)), (
        f"{what}: {value!r} exceeds the exact {mpmath.nstr(exact, 20)} by more than {rel}"
    )


# --- k-ary randomized response -------------------------------------------------------------------


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_rr_rdp_matches_closed_form_and_divergence_sum(epsilon: float, k: int) -> None:
    event = RandomizedResponseEvent(epsilon, k)
    for order in ORDERS:
        exact = oracle.rr_rdp(order, epsilon, k)
        direct = oracle.rr_rdp_direct(order, epsilon, k)
        assert abs(exact - direct) <= ORACLE_AGREEMENT * exact
        _assert_tight_upper(event.rdp(order), exact, RDP_REL, f"RR({epsilon}, {k}) at {order}")


@pytest.mark.parametrize("k", KS)
def test_rr_rdp_at_order_infinity_is_epsilon(k: int) -> None:
    event = RandomizedResponseEvent(0.7, k)
    _assert_tight_upper(event.rdp(math.inf), mpf(0.7), RDP_REL, "order inf")


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_binary_rr_rho_is_steinke_and_the_supremum(epsilon: float) -> None:
    """Steinke: rho = eps tanh(eps/2), the KL divergence, is the supremum of RDP(a)/a."""
    with mpmath.workdps(oracle.DPS):
        steinke = mpf(epsilon) * mpmath.tanh(mpf(epsilon) / 2)
        supremum, _ = oracle.rr_rho(epsilon, 2)
    assert abs(supremum - steinke) <= ORACLE_AGREEMENT * steinke
    _assert_tight_upper(RandomizedResponseEvent(epsilon).rho, steinke, RDP_REL, "binary rho")


@pytest.mark.parametrize("k", [3, 10, 1000])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_kary_rr_rho_is_supremum_of_rdp_over_order(epsilon: float, k: int) -> None:
    rho = RandomizedResponseEvent(epsilon, k).rho
    exact, _ = oracle.rr_rho(epsilon, k)
    _assert_tight_upper(rho, exact, RHO_REL, f"rho of RR({epsilon}, {k})")
    with mpmath.workdps(oracle.DPS):
        steinke = mpf(epsilon) * mpmath.tanh(mpf(epsilon) / 2)
    assert rho <= steinke * (1 + mpf(PAD_SLACK)), "k-ary RR is eps-DP, so Steinke's bound holds"


def test_kary_rr_rho_exceeds_kl_at_an_interior_order() -> None:
    """k = 10, eps = 0.5: the supremum ~0.03243 sits near a ~ 5.9, above the KL ~0.03046."""
    exact, order = oracle.rr_rho(0.5, 10)
    with mpmath.workdps(oracle.DPS):
        kl = mpf(0.5) * mpmath.expm1(mpf(0.5)) / (mpmath.exp(mpf(0.5)) + 9)
    assert float(kl) == pytest.approx(0.03046, abs=5e-6)
    assert float(exact) == pytest.approx(0.03243, abs=5e-6)
    assert 5.5 < order < 6.3
    rho = RandomizedResponseEvent(0.5, 10).rho
    _assert_tight_upper(rho, exact, RHO_REL, "rho of RR(0.5, 10)")
    assert rho > kl * 1.06


@pytest.mark.parametrize(("epsilon", "k"), [(1e-5, 10), (3e-5, 1000), (1e-6, 1000)])
def test_kary_rr_rho_small_epsilon_is_not_below_the_supremum(epsilon: float, k: int) -> None:
    event = RandomizedResponseEvent(epsilon, k)
    exact, order = oracle.rr_rho(epsilon, k)
    assert order > 1e5  # the supremum is attained beyond the library's search range
    assert event.rho >= exact
    # Equivalently, the zCDP claim fails at the maximizing order: rho * a < RDP(a).
    assert event.rho * float(order) >= event.rdp(float(order)) * (1 - PAD_SLACK)


# --- RAPPOR --------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_weight", [1, 2, 3])
@pytest.mark.parametrize("bit_epsilon", EPSILONS)
def test_rappor_is_2m_binary_rr(bit_epsilon: float, max_weight: int) -> None:
    event = RapporEvent(bit_epsilon, max_weight=max_weight)
    flips = 2 * max_weight
    for order in ORDERS:
        exact = flips * oracle.rr_rdp(order, bit_epsilon, 2)
        _assert_tight_upper(event.rdp(order), exact, RDP_REL, f"RAPPOR at {order}")
    with mpmath.workdps(oracle.DPS):
        rho = flips * mpf(bit_epsilon) * mpmath.tanh(mpf(bit_epsilon) / 2)
    _assert_tight_upper(event.rho, rho, RDP_REL, "RAPPOR rho")
    # 2m bit_epsilon, rounded up by one ulp at most.
    assert flips * bit_epsilon <= event.epsilon <= math.nextafter(flips * bit_epsilon, math.inf)
    assert event.pure_epsilon == event.epsilon


@pytest.mark.parametrize(
    ("max_weight", "x", "y"),
    [(1, (1, 0, 0, 0), (0, 1, 0, 0)), (2, (1, 1, 0, 0), (0, 0, 1, 1))],
)
@pytest.mark.parametrize("bit_epsilon", [0.1, 0.5, 1.0, 2.0])
def test_rappor_rdp_equals_direct_bit_vector_divergence(
    bit_epsilon: float, max_weight: int, x: tuple[int, ...], y: tuple[int, ...]
) -> None:
    """Enumerate all 16 reports of 4-bit RR for inputs differing in 2m bits."""
    event = RapporEvent(bit_epsilon, max_weight=max_weight)
    for order in (1 + 1e-6, 1.5, 2.0, 32.0, 1e6):
        exact = oracle.bitvector_rr_rdp(order, bit_epsilon, x, y)
        _assert_tight_upper(event.rdp(order), exact, RDP_REL, f"4-bit RAPPOR at {order}")


def test_rappor_rho_matches_reference_theorem_4() -> None:
    """Reference 000, Thm. 4: eps-DP RAPPOR (m = 1, bits at eps/2) has rho = eps tanh(eps/4)."""
    epsilon = 2.0
    with mpmath.workdps(oracle.DPS):
        rho = mpf(epsilon) * mpmath.tanh(mpf(epsilon) / 4)
    _assert_tight_upper(RapporEvent(epsilon / 2).rho, rho, RDP_REL, "Thm. 4")


# --- Laplace -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scale", "sensitivity"), [(1.0, 1.0), (0.5, 1.0), (4.0, 2.0), (10.0, 1.0)]
)
def test_laplace_rdp_matches_numerical_integration(scale: float, sensitivity: float) -> None:
    event = LaplaceEvent(scale, sensitivity)
    for order in (1.001, 2.0, 32.0):
        integral = oracle.laplace_rdp_quad(order, scale, sensitivity)
        closed = oracle.laplace_rdp_closed(order, scale, sensitivity)
        assert abs(integral - closed) <= ORACLE_AGREEMENT * closed  # Mironov Prop. 6 itself
        _assert_tight_upper(event.rdp(order), integral, RDP_REL, f"Laplace({scale}) at {order}")


@pytest.mark.parametrize("sensitivity", [1.0, 0.5])
@pytest.mark.parametrize("scale", [0.1, 0.5, 1.0, 2.0, 10.0, 1e3, 1e4])
def test_laplace_rdp_closed_form_over_orders(scale: float, sensitivity: float) -> None:
    event = LaplaceEvent(scale, sensitivity)
    previous = 0.0
    for order in ORDERS:
        value = event.rdp(order)
        exact = oracle.laplace_rdp_closed(order, scale, sensitivity)
        _assert_tight_upper(value, exact, RDP_REL, f"Laplace({scale}, {sensitivity}) at {order}")
        assert value >= previous * (1 - PAD_SLACK), "RDP must not decrease with the order"
        assert value <= event.epsilon * (1 + PAD_SLACK)
        previous = value
    assert sensitivity / scale <= event.epsilon <= math.nextafter(sensitivity / scale, math.inf)
    assert event.pure_epsilon == event.epsilon
    assert event.rdp(math.inf) == event.epsilon


@pytest.mark.parametrize(
    ("scale", "sensitivity", "order"),
    [(1e8, 0.5, 1 + 1e-6), (1e6, 1.0, 1.5), (1e5, 0.5, 1.5)],
)
def test_laplace_rdp_small_epsilon_is_not_below_exact(
    scale: float, sensitivity: float, order: float
) -> None:
    exact = oracle.laplace_rdp_closed(order, scale, sensitivity)
    assert LaplaceEvent(scale, sensitivity).rdp(order) >= exact


@pytest.mark.parametrize("scale", [0.1, 1.0, 2.0, 100.0])
def test_laplace_rho_is_kl_and_below_steinke(scale: float) -> None:
    """The Laplace RDP(a)/a is largest at a -> 1, where it is the KL divergence eps + e^-eps - 1."""
    event = LaplaceEvent(scale)
    with mpmath.workdps(oracle.DPS):
        epsilon = 1 / mpf(scale)
        kl = epsilon + mpmath.expm1(-epsilon)
        supremum, _ = oracle.maximize_over_orders(lambda a: oracle.laplace_rdp_closed(a, scale) / a)
        steinke = epsilon * mpmath.tanh(epsilon / 2)
    exact = max(kl, supremum)
    _assert_tight_upper(event.rho, exact, RHO_REL, "Laplace rho")
    assert event.rho <= steinke * (1 + mpf(PAD_SLACK))


# --- Gaussian and generic pure DP ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("sigma", "sensitivity"), [(0.5, 1.0), (1.0, 1.0), (3.0, 2.0), (100.0, 1.0)]
)
def test_gaussian_curves(sigma: float, sensitivity: float) -> None:
    event = GaussianEvent(sigma, sensitivity)
    with mpmath.workdps(oracle.DPS):
        rho = (mpf(sensitivity) / mpf(sigma)) ** 2 / 2
    _assert_tight_upper(event.rho, rho, RDP_REL, "Gaussian rho")
    for order in ORDERS:
        _assert_tight_upper(event.rdp(order), mpf(order) * rho, RDP_REL, f"Gaussian at {order}")
    assert event.pure_epsilon == math.inf
    assert event.rdp(math.inf) == math.inf


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_pure_dp_is_accounted_as_binary_rr(epsilon: float) -> None:
    event = PureDP(epsilon)
    for order in ORDERS:
        _assert_tight_upper(event.rdp(order), oracle.rr_rdp(order, epsilon, 2), RDP_REL, "PureDP")
    with mpmath.workdps(oracle.DPS):
        steinke = mpf(epsilon) * mpmath.tanh(mpf(epsilon) / 2)
    _assert_tight_upper(event.rho, steinke, RDP_REL, "PureDP rho")
    assert event.pure_epsilon == epsilon
    assert not event.privacy_loss(3).exact  # an upper bound through binary RR, and says so


def test_zero_epsilon_events_are_free() -> None:
    """epsilon -> 0 is the uniform report: no privacy loss at any order."""
    for event in (RandomizedResponseEvent(0.0, 5), RapporEvent(0.0, 2), PureDP(0.0)):
        assert event.pure_epsilon == 0.0
        assert event.rho == 0.0
        assert event.rdp(2.0) == 0.0
        assert event.privacy_loss(4).delta(0.0) == 0.0


# --- serialization and validation ----------------------------------------------------------------

ALL_KINDS: list[PrivacyEvent] = [
    RandomizedResponseEvent(0.8),
    RandomizedResponseEvent(1.5, num_buckets=7),
    RapporEvent(0.25, max_weight=3),
    PureDP(2.0),
    LaplaceEvent(2.0, sensitivity=0.5),
    GaussianEvent(3.0, sensitivity=2.0),
]


@pytest.mark.parametrize("event", ALL_KINDS, ids=str)
def test_event_round_trips_through_dict_and_json(event: PrivacyEvent) -> None:
    assert event_from_dict(event.to_dict()) == event
    assert event_from_dict(json.loads(json.dumps(event.to_dict()))) == event
    assert hash(event_from_dict(event.to_dict())) == hash(event)


def test_events_of_different_kinds_are_not_equal() -> None:
    assert RandomizedResponseEvent(1.0) != PureDP(1.0)
    assert RandomizedResponseEvent(1) == RandomizedResponseEvent(1.0)


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "exponential", "epsilon": 1.0},
        {"epsilon": 1.0},
        {"kind": 3, "epsilon": 1.0},
        {"kind": "randomized_response", "epsilon": 1.0, "colour": "red"},
    ],
)
def test_event_from_dict_rejects_unknown_kinds_and_parameters(data: dict[str, Any]) -> None:
    with pytest.raises(ParameterError):
        event_from_dict(data)


BAD_PARAMETERS = [
    (RandomizedResponseEvent, {"epsilon": -1.0}, "epsilon", -1.0),
    (RandomizedResponseEvent, {"epsilon": math.nan}, "epsilon", math.nan),
    (RandomizedResponseEvent, {"epsilon": math.inf}, "epsilon", math.inf),
    (RandomizedResponseEvent, {"epsilon": True}, "epsilon", True),
    (RandomizedResponseEvent, {"epsilon": "1"}, "epsilon", "1"),
    (RandomizedResponseEvent, {"epsilon": 1.0, "num_buckets": 1}, "num_buckets", 1),
    (RandomizedResponseEvent, {"epsilon": 1.0, "num_buckets": 2.5}, "num_buckets", 2.5),
    (RandomizedResponseEvent, {"epsilon": 1.0, "num_buckets": True}, "num_buckets", True),
    (RapporEvent, {"bit_epsilon": -0.5}, "bit_epsilon", -0.5),
    (RapporEvent, {"bit_epsilon": math.nan}, "bit_epsilon", math.nan),
    (RapporEvent, {"bit_epsilon": 1.0, "max_weight": 0}, "max_weight", 0),
    (RapporEvent, {"bit_epsilon": 1.0, "max_weight": 1.5}, "max_weight", 1.5),
    (PureDP, {"epsilon": -2.0}, "epsilon", -2.0),
    (PureDP, {"epsilon": math.inf}, "epsilon", math.inf),
    (LaplaceEvent, {"scale": 0.0}, "scale", 0.0),
    (LaplaceEvent, {"scale": -1.0}, "scale", -1.0),
    (LaplaceEvent, {"scale": 1.0, "sensitivity": 0.0}, "sensitivity", 0.0),
    (GaussianEvent, {"sigma": 0.0}, "sigma", 0.0),
    (GaussianEvent, {"sigma": -3.0}, "sigma", -3.0),
    (GaussianEvent, {"sigma": math.nan}, "sigma", math.nan),
    (GaussianEvent, {"sigma": 1.0, "sensitivity": math.inf}, "sensitivity", math.inf),
]


@pytest.mark.parametrize(
    ("cls", "kwargs", "name", "value"),
    BAD_PARAMETERS,
    ids=[f"{c.__name__}-{n}={v!r}" for c, _, n, v in BAD_PARAMETERS],
)
def test_bad_parameters_raise_naming_parameter_and_value(
    cls: type[PrivacyEvent], kwargs: dict[str, Any], name: str, value: Any
) -> None:
    with pytest.raises(ParameterError) as raised:
        cls(**kwargs)
    message = str(raised.value)
    assert f"{name} must" in message
    assert f"got {value!r}" in message


@pytest.mark.parametrize("order", [1, 1.0, 0.5, -2.0, math.nan, "2", None, True])
@pytest.mark.parametrize("event", ALL_KINDS, ids=str)
def test_bad_orders_raise(event: PrivacyEvent, order: Any) -> None:
    with pytest.raises(ParameterError, match="order"):
        event.rdp(order)


# --- properties ----------------------------------------------------------------------------------

_epsilons = st.floats(1e-6, 20.0)
_orders = st.floats(-8.0, 6.0).map(lambda u: 1.0 + 10.0**u)


@st.composite
def _pure_events(draw: st.DrawFn) -> PrivacyEvent:
    eps = draw(_epsilons)
    kind = draw(st.sampled_from(["rr", "rappor", "pure", "laplace"]))
    if kind == "rr":
        return RandomizedResponseEvent(eps, draw(st.integers(2, 1000)))
    if kind == "rappor":
        return RapporEvent(eps, max_weight=draw(st.integers(1, 4)))
    if kind == "pure":
        return PureDP(eps)
    sensitivity = draw(st.floats(0.1, 10.0))
    return LaplaceEvent(sensitivity / eps, sensitivity)


_gaussians = st.builds(GaussianEvent, st.floats(0.05, 100.0), st.floats(0.1, 10.0))
_events = st.one_of(_pure_events(), _gaussians)
PROPERTY_SETTINGS = settings(max_examples=80, deadline=None, database=None, derandomize=True)


@PROPERTY_SETTINGS
@given(event=_events, a=_orders, b=_orders)
def test_rdp_is_non_decreasing_in_order(event: PrivacyEvent, a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert event.rdp(high) >= event.rdp(low) * (1 - PAD_SLACK)


@PROPERTY_SETTINGS
@given(event=_pure_events(), order=_orders)
def test_rdp_never_exceeds_pure_epsilon(event: PrivacyEvent, order: float) -> None:
    # The Rényi divergence of an eps-DP pair is at most eps; the reported value may sit above
    # by the 2^-36 pad (the padded curve tends to eps from above at large orders).
    assert event.rdp(order) <= event.pure_epsilon * (1 + PAD_SLACK)


@PROPERTY_SETTINGS
@given(event=_events, order=_orders)
def test_rho_bounds_the_whole_curve(event: PrivacyEvent, order: float) -> None:
    """zCDP: rho-zCDP means RDP(a) <= a rho at every order."""
    assert event.rho * order >= event.rdp(order) * (1 - PAD_SLACK)


@PROPERTY_SETTINGS
@given(data=st.data(), low=_epsilons, high=_epsilons, order=_orders)
def test_rdp_is_increasing_in_epsilon(
    data: st.DataObject, low: float, high: float, order: float
) -> None:
    low, high = sorted((low, high))
    kind = data.draw(st.sampled_from(["rr", "rappor", "pure", "laplace", "gaussian"]))
    k = data.draw(st.integers(2, 1000))

    def make(eps: float) -> PrivacyEvent:
        return {
            "rr": lambda: RandomizedResponseEvent(eps, k),
            "rappor": lambda: RapporEvent(eps, max_weight=2),
            "pure": lambda: PureDP(eps),
            "laplace": lambda: LaplaceEvent(1.0 / eps),
            "gaussian": lambda: GaussianEvent(1.0 / eps),
        }[kind]()

    weak, strong = make(low), make(high)
    assert weak.rdp(order) <= strong.rdp(order) * (1 + PAD_SLACK)
    assert weak.rho <= strong.rho * (1 + PAD_SLACK)
