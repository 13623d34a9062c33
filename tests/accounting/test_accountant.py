"""The accountant and privacy guarantees: optimal composition of randomized response against the
exact Kairouz–Oh–Viswanath optimum (solved in mpmath), validity of every conversion, the public
API (compose, explain, serialization, validation) and the guarantees mechanisms emit.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import frameldp
from frameldp import (
    Accountant,
    GaussianEvent,
    LaplaceEvent,
    ParameterError,
    PrivacyGuarantee,
    PureDP,
    RandomizedResponseEvent,
    RapporEvent,
)
from frameldp.accounting import PrivacyEvent

from . import _oracles as oracle

# The requirement: the reported epsilon is within 1e-6 (relative) of the exact optimum.
ACCEPTANCE_REL = 1e-6
# The exact PLD epsilon is the optimum for the randomized-response family, so no valid method may
# be below it; its own float error (losses rounded up to 2^-32, bisection to 1e-15) is far less.
OPTIMUM_REL = 1e-9
# acc.delta(acc.epsilon(d)) may exceed d only by the conversions' order-search slack.
ROUND_TRIP_REL = 1e-6

ACCEPTANCE_EPSILONS = (0.1, 0.5, 1.0, math.log(3))
ACCEPTANCE_COUNTS = (1, 10, 100, 1000)
ACCEPTANCE_DELTAS = (1e-6, 1e-9)


# --- acceptance: k-fold binary randomized response ----------------------------------------------


@pytest.mark.parametrize("delta", ACCEPTANCE_DELTAS)
@pytest.mark.parametrize("count", ACCEPTANCE_COUNTS)
@pytest.mark.parametrize("epsilon0", ACCEPTANCE_EPSILONS)
def test_rr_composition_is_the_kov_optimum(epsilon0: float, count: int, delta: float) -> None:
    accountant = Accountant().compose(RandomizedResponseEvent(epsilon0), count=count)
    value = accountant.epsilon(delta)
    low, high = oracle.kov_epsilon(epsilon0, count, delta)
    assert value >= low, "below the optimal composition: not a valid guarantee"
    assert value <= high * (1 + ACCEPTANCE_REL), "not within 1e-6 of the optimum"
    assert value <= count * epsilon0, "worse than basic composition"


def test_hundred_uses_of_rr_at_one() -> None:
    """eps0 = 1, k = 100, delta = 1e-6: 83.53 through the PLD; RDP alone would give ~85.5."""
    accountant = Accountant().compose(RandomizedResponseEvent(1.0), count=100)
    explanation = accountant.explain(1e-6)
    assert round(accountant.epsilon(1e-6), 2) == 83.53
    assert explanation.best.method == "pld"
    assert explanation.best.epsilon == accountant.epsilon(1e-6)
    candidates = {c.method: c.epsilon for c in explanation.conversions}
    assert set(candidates) == {"basic", "pld", "rdp", "zcdp", "zcdp_bun_steinke"}
    assert candidates["rdp"] == pytest.approx(85.52, abs=0.01)
    assert candidates["basic"] == pytest.approx(100.0)
    assert candidates["pld"] < candidates["rdp"] < candidates["zcdp"]
    assert candidates["zcdp"] <= candidates["zcdp_bun_steinke"]
    text = str(explanation)
    assert "privacy-loss distribution" in text.splitlines()[0]
    assert "83.53" in text.splitlines()[0]
    starred = [line for line in text.splitlines() if line.lstrip().startswith("*")]
    assert len(starred) == 1
    assert "pld" in starred[0]


# --- validity properties ------------------------------------------------------------------------

_epsilons = st.floats(0.05, 3.0)
_rr_family = st.one_of(
    st.builds(RandomizedResponseEvent, _epsilons, st.sampled_from([2, 3, 10])),
    st.builds(RapporEvent, _epsilons, st.integers(1, 2)),
    st.builds(PureDP, _epsilons),
)
_any_event = st.one_of(
    _rr_family,
    st.builds(LaplaceEvent, st.floats(0.3, 20.0)),
    st.builds(GaussianEvent, st.floats(0.5, 20.0)),
)
_deltas = st.sampled_from([1e-3, 1e-6, 1e-9])
PROPERTY_SETTINGS = settings(max_examples=30, deadline=None, database=None, derandomize=True)


def _accountant(entries: list[tuple[PrivacyEvent, int]]) -> Accountant:
    accountant = Accountant()
    for event, count in entries:
        accountant = accountant.compose(event, count=count)
    return accountant


def _entries(events: st.SearchStrategy[PrivacyEvent]) -> st.SearchStrategy[Any]:
    return st.lists(st.tuples(events, st.integers(1, 20)), min_size=1, max_size=3)


@PROPERTY_SETTINGS
@given(entries=_entries(_rr_family), delta=_deltas)
def test_no_method_beats_the_exact_pld_for_rr_family(
    entries: list[tuple[PrivacyEvent, int]], delta: float
) -> None:
    explanation = _accountant(entries).explain(delta)
    exact = next(c.epsilon for c in explanation.conversions if c.method == "pld")
    for conversion in explanation.conversions:
        assert conversion.epsilon >= exact * (1 - OPTIMUM_REL), conversion
    assert explanation.best.epsilon == min(c.epsilon for c in explanation.conversions)


@PROPERTY_SETTINGS
@given(entries=_entries(_any_event), delta=_deltas)
def test_delta_at_reported_epsilon_is_at_most_delta(
    entries: list[tuple[PrivacyEvent, int]], delta: float
) -> None:
    accountant = _accountant(entries)
    assert accountant.delta(accountant.epsilon(delta)) <= delta * (1 + ROUND_TRIP_REL)


@PROPERTY_SETTINGS
@given(entries=_entries(_any_event), extra=_any_event, delta=_deltas, order=st.floats(1.01, 1e4))
def test_composition_never_decreases_privacy_loss(
    entries: list[tuple[PrivacyEvent, int]], extra: PrivacyEvent, delta: float, order: float
) -> None:
    before = _accountant(entries)
    after = before.compose(extra)
    assert after.epsilon(delta) >= before.epsilon(delta)
    assert after.rdp(order) >= before.rdp(order)
    assert after.rho >= before.rho
    assert after.pure_epsilon >= before.pure_epsilon


# --- composing -----------------------------------------------------------------------------------


def test_compose_accepts_events_guarantees_and_accountants() -> None:
    rr = RandomizedResponseEvent(0.5, num_buckets=4)
    guarantee = frameldp.Rappor(epsilon=1.0, domain=["a", "b", "c"]).privacy
    [(rappor_event, uses)] = guarantee.events
    assert uses == 1
    inner = Accountant().compose(rr, count=2)
    accountant = Accountant().compose(rr).compose(guarantee, count=3).compose(inner, count=5)
    assert dict(accountant.entries) == {rr: 1 + 2 * 5, rappor_event: 3}
    assert isinstance(rappor_event, RapporEvent)


def test_compose_is_immutable_and_merges_equal_events() -> None:
    empty = Accountant()
    once = empty.compose(PureDP(1.0))
    twice = once.compose(PureDP(1.0))
    assert empty.entries == ()
    assert once.entries == ((PureDP(1.0), 1),)
    assert twice.entries == ((PureDP(1.0), 2),)
    assert twice.pure_epsilon == pytest.approx(2.0)


def test_compose_rejects_other_objects() -> None:
    with pytest.raises(ParameterError, match="compose expects"):
        Accountant().compose(1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "2", None])
def test_count_must_be_a_positive_integer(count: Any) -> None:
    with pytest.raises(ParameterError, match=f"count must be an integer >= 1, got {count!r}"):
        Accountant().compose(PureDP(1.0), count=count)


def test_empty_accountant_costs_nothing() -> None:
    empty = Accountant()
    assert empty.epsilon(1e-6) == 0.0
    assert empty.delta(0.0) == 0.0
    assert empty.rho == 0.0
    assert empty.rdp(2.0) == 0.0
    assert empty.pure_epsilon == 0.0
    assert empty.privacy_loss is None
    assert empty.explain(1e-6).best.epsilon == 0.0


def test_gaussian_only_accountant_has_no_pure_epsilon() -> None:
    accountant = Accountant().compose(GaussianEvent(2.0), count=4)
    assert accountant.pure_epsilon == math.inf
    assert accountant.rho == pytest.approx(4 * 0.125)
    assert math.isfinite(accountant.epsilon(1e-6))
    assert accountant.explain(1e-6).best.method == "pld"


# --- explain and serialization -------------------------------------------------------------------


def test_explain_lists_every_method_and_names_the_winner() -> None:
    accountant = Accountant().compose(RandomizedResponseEvent(2.0, num_buckets=5), count=3)
    explanation = accountant.explain(1e-5)
    assert explanation.delta == 1e-5
    assert explanation.best in explanation.conversions
    assert explanation.best.epsilon == min(c.epsilon for c in explanation.conversions)
    assert all(c.delta == 1e-5 for c in explanation.conversions)
    text = str(explanation)
    assert explanation.best.description in text.splitlines()[0]
    assert all(c.method in text for c in explanation.conversions)
    as_dict = explanation.to_dict()
    assert as_dict["method"] == explanation.best.method
    assert as_dict["epsilon"] == explanation.best.epsilon
    assert json.loads(json.dumps(as_dict)) == as_dict


def test_accountant_round_trips_through_dict_and_json() -> None:
    accountant = (
        Accountant()
        .compose(RandomizedResponseEvent(0.7, num_buckets=3), count=4)
        .compose(RapporEvent(0.2, max_weight=2))
        .compose(PureDP(1.5), count=2)
        .compose(LaplaceEvent(3.0, 0.5))
    )
    assert Accountant.from_dict(accountant.to_dict()).entries == accountant.entries
    rebuilt = Accountant.from_dict(json.loads(accountant.to_json()))
    assert rebuilt.entries == accountant.entries
    assert rebuilt.epsilon(1e-6) == accountant.epsilon(1e-6)
    assert accountant.to_dict()["pure_epsilon"] == accountant.pure_epsilon
    assert accountant.to_dict()["rho"] == accountant.rho


def test_from_dict_rejects_unknown_event_kinds() -> None:
    data = {"events": [{"event": {"kind": "mystery", "epsilon": 1.0}, "count": 1}]}
    with pytest.raises(ParameterError, match="mystery"):
        Accountant.from_dict(data)


def test_to_json_is_strict_json_with_gaussian_events() -> None:
    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON token {token}")

    text = Accountant().compose(GaussianEvent(1.0)).to_json()
    json.loads(text, parse_constant=refuse)


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [0, 0.0, 1, 1.0, -1.0, 2.0, math.nan, math.inf, "x", None, True])
def test_bad_delta_raises_naming_delta(delta: Any) -> None:
    accountant = Accountant().compose(PureDP(1.0))
    with pytest.raises(ParameterError, match=f"delta must .*got {delta!r}"):
        accountant.epsilon(delta)
    with pytest.raises(ParameterError, match="delta must"):
        accountant.explain(delta)


@pytest.mark.parametrize("epsilon", [-1.0, -1e-300, math.nan, math.inf, "x", None, True])
def test_bad_epsilon_for_delta_raises_naming_epsilon(epsilon: Any) -> None:
    accountant = Accountant().compose(PureDP(1.0))
    with pytest.raises(ParameterError, match=f"epsilon must .*got {epsilon!r}"):
        accountant.delta(epsilon)


@pytest.mark.parametrize("order", [1.0, 0.5, math.nan, "2"])
def test_bad_order_raises(order: Any) -> None:
    with pytest.raises(ParameterError, match="order"):
        Accountant().compose(PureDP(1.0)).rdp(order)


def test_delta_at_pure_epsilon_is_zero() -> None:
    accountant = Accountant().compose(PureDP(0.5), count=4)
    assert accountant.delta(accountant.pure_epsilon) == 0.0
    assert accountant.delta(0.0) > 0.0


def test_gaussian_delta_is_never_reported_as_zero() -> None:
    assert Accountant().compose(GaussianEvent(10.0)).delta(10.0) > 0.0


# --- privacy guarantees --------------------------------------------------------------------------


def _guarantees() -> list[PrivacyGuarantee]:
    return [
        frameldp.Rappor(epsilon=1.0, domain=["a", "b", "c"]).privacy,
        frameldp.Rappor(epsilon=2.0, domain=["a", "b", "c", "d"], max_weight=2).privacy,
        frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy,
        frameldp.RandomizedResponse(2.0, domain=[f"v{i}" for i in range(10)]).privacy,
    ]


@pytest.mark.parametrize("index", range(4))
def test_mechanism_guarantees_answer_every_question(index: int) -> None:
    guarantee = _guarantees()[index]
    [(event, uses)] = guarantee.events
    assert uses == 1
    assert isinstance(guarantee, PrivacyGuarantee)
    assert guarantee.delta == 0.0
    assert event.pure_epsilon <= guarantee.epsilon
    assert guarantee.rho == pytest.approx(event.rho, rel=1e-10)  # re-padded by the accountant
    assert guarantee.rdp(2.0) == pytest.approx(event.rdp(2.0), rel=1e-10)
    for delta in (1e-3, 1e-9):
        assert guarantee.epsilon_at(delta) <= guarantee.epsilon
        explanation = guarantee.explain(delta)
        assert explanation.best.epsilon == guarantee.epsilon_at(delta)
    assert guarantee.delta_at(guarantee.epsilon) == 0.0
    assert 0.0 < guarantee.delta_at(guarantee.epsilon / 2) < 1.0


def test_rappor_guarantee_is_2m_binary_rr() -> None:
    guarantee = frameldp.Rappor(epsilon=2.0, domain=["a", "b", "c", "d"], max_weight=2).privacy
    [(event, uses)] = guarantee.events
    assert uses == 1
    assert isinstance(event, RapporEvent)
    assert event.max_weight == 2
    assert 4 * event.bit_epsilon == pytest.approx(2.0, rel=1e-9)
    two_m_rr = Accountant().compose(RandomizedResponseEvent(event.bit_epsilon), count=4)
    assert guarantee.epsilon_at(1e-6) == pytest.approx(two_m_rr.epsilon(1e-6), rel=1e-12)


def test_binary_rr_guarantee_rho_is_steinke() -> None:
    guarantee = frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy
    [(event, uses)] = guarantee.events
    assert uses == 1
    assert guarantee.rho == pytest.approx(event.epsilon * math.tanh(event.epsilon / 2), rel=1e-10)


def test_composed_guarantees_are_at_most_basic_composition() -> None:
    first, second, *_ = _guarantees()
    composed = frameldp.compose([first, second])
    for delta in (1e-3, 1e-6, 1e-9):
        assert composed.epsilon_at(delta) <= first.epsilon + second.epsilon
    assert composed.epsilon >= first.epsilon + second.epsilon
    assert composed.parts == (first, second)
    assert composed.rho == pytest.approx(first.rho + second.rho, rel=1e-10)
    assert frameldp.compose([first]) is first


@pytest.mark.parametrize("index", range(4))
def test_guarantee_round_trips_through_json(index: int) -> None:
    guarantees = _guarantees()
    for guarantee in (guarantees[index], frameldp.compose(guarantees)):
        rebuilt = PrivacyGuarantee.from_json(guarantee.to_json())
        assert rebuilt.epsilon == guarantee.epsilon
        assert rebuilt.rho == guarantee.rho
        assert rebuilt.events == guarantee.events
        assert rebuilt.epsilon_at(1e-6) == guarantee.epsilon_at(1e-6)
        assert rebuilt == guarantee


def test_guarantee_from_json_rejects_unknown_event_kinds() -> None:
    data = json.loads(frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy.to_json())
    data["events"][0]["event"]["kind"] = "mystery"
    with pytest.raises(ParameterError):
        PrivacyGuarantee.from_dict(data)


def test_compose_refuses_an_object_whose_accountant_is_not_one() -> None:
    class Pretender:
        accountant = "not an accountant"

    with pytest.raises(frameldp.ParameterError, match="compose expects"):
        frameldp.Accountant().compose(Pretender())  # type: ignore[arg-type]
