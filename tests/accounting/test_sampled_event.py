"""The event of a sampled collection (one column of ``d`` per person, the choice shown), against
exhaustive enumeration of the output laws of the worst pair of rows.

Deterministic: every law here is enumerated exactly in floating point (no sampling), and the
event's figures must lie above the enumerated ones (never understated) and within float error of
them (tight).
"""

from __future__ import annotations

import itertools
import math
from typing import Final

import numpy as np
import pytest

import frameldp
from frameldp.accounting import (
    MemoizedEvent,
    PrivacyGuarantee,
    RandomizedResponseEvent,
    SampledEvent,
    ShuffleEvent,
)
from frameldp.accounting.events import event_from_dict

# Columns: (epsilon, buckets, reports of that column per row)
COLUMNS: Final = ((1.0, 3, 1), (2.0, 4, 1), (0.5, 2, 2))
ORDERS: Final = (1.5, 2.0, 4.0, 16.0)
EPSILONS: Final = (0.0, 0.3, 0.9, 1.7)


def _rr_pair(epsilon: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """k-RR's output laws for two different values (the worst pair)."""
    scale = math.exp(epsilon) + k - 1
    p = np.ones(k) / scale
    q = np.ones(k) / scale
    p[0] = q[1] = math.exp(epsilon) / scale
    return p, q


def _column_pair(epsilon: float, k: int, reports: int) -> tuple[np.ndarray, np.ndarray]:
    """The laws of ``reports`` independent k-RR reports of one value, for two values."""
    p, q = _rr_pair(epsilon, k)
    joint_p, joint_q = np.ones(1), np.ones(1)
    for _ in range(reports):
        joint_p, joint_q = np.outer(joint_p, p).ravel(), np.outer(joint_q, q).ravel()
    return joint_p, joint_q


def _sampled_pair() -> tuple[np.ndarray, np.ndarray]:
    """The output laws (column shown, its reports) of two rows differing in every column."""
    pairs = [_column_pair(*column) for column in COLUMNS]
    d = len(pairs)
    return np.concatenate([p / d for p, _ in pairs]), np.concatenate([q / d for _, q in pairs])


def _event() -> SampledEvent:
    return SampledEvent(
        [[(RandomizedResponseEvent(eps, k), reports)] for eps, k, reports in COLUMNS]
    )


def test_pure_epsilon_renyi_and_deltas_are_those_of_the_enumerated_pair() -> None:
    event = _event()
    p, q = _sampled_pair()
    assert event.pure_epsilon == pytest.approx(float(np.max(np.log(p / q))), rel=1e-12)
    assert event.pure_epsilon >= float(np.max(np.log(p / q)))
    for order in ORDERS:
        exact = math.log(float(np.sum(p**order * q ** (1 - order)))) / (order - 1)
        assert exact <= event.rdp(order) <= exact + 1e-9
    loss = event.privacy_loss()
    for epsilon in EPSILONS:
        exact = float(np.sum(np.maximum(p - math.exp(epsilon) * q, 0.0)))
        assert exact <= loss.delta(epsilon) <= exact + 1e-9
    kl = float(np.sum(p * np.log(p / q)))  # the limit of D_a / a at a -> 1
    grid = np.linspace(1.01, 40.0, 4000)
    found = max(kl, *(math.log(float(np.sum(p**a * q ** (1 - a)))) / (a - 1) / a for a in grid))
    assert found <= event.rho <= found * (1 + 1e-5)
    assert event.rho <= max(column.rho for column in _column_events())


def _column_events() -> list[PrivacyGuarantee]:
    return [
        PrivacyGuarantee(eps * reports, "rr", events=((RandomizedResponseEvent(eps, k), reports),))
        for eps, k, reports in COLUMNS
    ]


def test_two_releases_compose_as_the_enumerated_pair_twice() -> None:
    p, q = _sampled_pair()
    p2, q2 = np.outer(p, p).ravel(), np.outer(q, q).ravel()
    loss = _event().privacy_loss(2)
    for epsilon in EPSILONS:
        exact = float(np.sum(np.maximum(p2 - math.exp(epsilon) * q2, 0.0)))
        assert exact <= loss.delta(epsilon) <= exact + 1e-9
    guarantee = PrivacyGuarantee(_event().pure_epsilon, "sampled", events=((_event(), 2),))
    assert guarantee.epsilon_at(1e-6) < 2 * _event().pure_epsilon


def _fake_data_law(epsilon: float, k: int, d: int, rows: tuple[tuple[int, ...], ...]) -> dict:
    """P[every column's report | row] under random sampling plus fake data (RS+FD) with k-RR
    at ``epsilon``: the sampled column reports its value, the others a uniform fake (k-RR of
    a uniform value is uniform), the sampled column not shown."""
    p, q = _rr_pair(epsilon, k)
    rr = np.full((k, k), q[0])
    np.fill_diagonal(rr, p[0])
    laws = {}
    for row in rows:
        law = {}
        for y in itertools.product(range(k), repeat=d):
            law[y] = sum(rr[row[j], y[j]] * (1 / k) ** (d - 1) for j in range(d)) / d
        laws[row] = law
    return laws


def test_fake_data_does_not_amplify_a_persons_loss_only_one_columns() -> None:
    """RS+FD (Arcolezi et al., CIKM 2021, Thm. 1) runs the sampled column at ``eps' = ln(d
    (e^eps - 1) + 1)`` for a stated ``eps``. Enumerated: two rows that differ in every column
    are told apart by the factor ``e^eps'`` (the person's loss is ``eps'``, not ``eps``);
    ``eps`` is the loss of one column changed, the others fixed. So frameldp states a sampled
    collection with fake data at its columns' own epsilon (post-processing of the sample)."""
    d, k, stated = 3, 3, 1.0
    amplified = math.log(d * math.expm1(stated) + 1)
    rows = tuple(itertools.product(range(k), repeat=d))
    laws = _fake_data_law(amplified, k, d, rows)

    def worst(pairs: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> float:
        return max(math.log(laws[a][y] / laws[b][y]) for a, b in pairs for y in laws[a])

    def differing(a: tuple[int, ...], b: tuple[int, ...]) -> int:
        return sum(u != v for u, v in zip(a, b, strict=True))

    everything = [(a, b) for a in rows for b in rows if differing(a, b) == d]
    one_column = [(a, b) for a in rows for b in rows if differing(a, b) == 1]
    assert worst(everything) == pytest.approx(amplified, rel=1e-12)
    assert worst(one_column) == pytest.approx(stated, rel=1e-12)
    event = SampledEvent([[(RandomizedResponseEvent(amplified, k), 1)]] * d)
    assert event.pure_epsilon == pytest.approx(worst(everything), rel=1e-12)


def test_round_trip_guarantee_and_refusals() -> None:
    event = _event()
    again = event_from_dict(event.to_dict())
    assert again == event
    assert hash(again) == hash(event)
    guarantee = PrivacyGuarantee(event.pure_epsilon, "sampled", events=((event, 1),))
    assert PrivacyGuarantee.from_json(guarantee.to_json()).epsilon_at(1e-6) == pytest.approx(
        guarantee.epsilon_at(1e-6)
    )
    rr = RandomizedResponseEvent(1.0, 2)
    with pytest.raises(frameldp.ParameterError, match="two or more columns"):
        SampledEvent([[(rr, 1)]])
    with pytest.raises(frameldp.ParameterError, match="two or more columns"):
        SampledEvent([[(rr, 1)], []])
    with pytest.raises(frameldp.ParameterError, match=r"is \(event, count\)"):
        SampledEvent([[(rr, 1)], ["rr"]])
    fresh = MemoizedEvent(rr, rr)  # no memo: a fresh permanent response per report
    assert SampledEvent([[(rr, 1)], [(fresh, 1)]]).pure_epsilon == rr.pure_epsilon
    noiseless = MemoizedEvent(rr, rr, 1, "memo", None, 0)
    with pytest.raises(frameldp.ParameterError, match="adds no noise"):
        SampledEvent([[(rr, 1)], [(noiseless, 1)]])
    shuffled = ShuffleEvent(4.0, 1000)
    with pytest.raises(frameldp.ParameterError, match="shuffled"):
        SampledEvent([[(rr, 1)], [(shuffled, 1)]])


def _rr_matrix(epsilon: float, k: int) -> np.ndarray:
    """k-RR at ``epsilon`` as a row-stochastic matrix (row: input)."""
    keep = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    matrix = np.full((k, k), (1 - keep) / (k - 1))
    np.fill_diagonal(matrix, keep)
    return matrix


def _memoized_nights_law(
    values: tuple[tuple[int, ...], ...], columns: list[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    """P[(column shown, report) of every night | the person's values each night] when each
    night samples one column uniformly and reports its instantaneous response to the permanent
    response memoized per (column, value): ``columns[j]`` = (permanent, instantaneous)
    matrices. The permanent responses of distinct (column, value) are independent, so the
    law factors over them."""
    d = len(columns)
    outputs = [(j, y) for j, (_, instant) in enumerate(columns) for y in range(len(instant))]
    law = []
    for shown_ in itertools.product(outputs, repeat=len(values)):
        probability = (1 / d) ** len(values)
        for j, (permanent, instant) in enumerate(columns):
            for value in range(len(permanent)):
                held = [
                    y for night, (c, y) in enumerate(shown_) if c == j and values[night][j] == value
                ]
                if held:
                    probability *= float(permanent[value] @ np.prod(instant[:, held], axis=1))
        law.append(probability)
    return np.array(law)


def test_memoized_columns_cost_their_instantaneous_response_each_night() -> None:
    """Memoized L-GRR columns (k = 4, eps_1 = 1, eps_inf = 4) sampled on one and two nights,
    a person's values free to change: the exact loss, enumerated over every pair of value
    sequences, lies under what the nights' sampled events compose to (each report one use
    of its instantaneous response), in pure epsilon and at Rényi order 2. Charging each
    night its end-to-end eps_1 instead would understate two nights (2.0225 > 2): a night's
    report shares its permanent response with the person's other nights."""
    mechanism = frameldp.RandomizedResponse(1.0, domain=[0, 1, 2, 3], epsilon_infinity=4.0)
    memoized = mechanism.guarantee(memo="memo").events[0][0]
    assert isinstance(memoized, MemoizedEvent)
    assert memoized.instant is not None
    column = (
        _rr_matrix(memoized.permanent.pure_epsilon, 4),
        _rr_matrix(memoized.instant.pure_epsilon, 4),
    )
    event = SampledEvent([[(memoized, 1)], [(memoized, 1)]])
    one_each = SampledEvent([[(memoized.one, 1)], [(memoized.one, 1)]])
    for nights in (1, 2):
        sequences = list(itertools.product(itertools.product(range(4), repeat=2), repeat=nights))
        laws = np.array([_memoized_nights_law(s, [column, column]) for s in sequences])
        logs = np.log(laws)
        worst = max(float(np.max(a - b)) for a in logs for b in logs)
        second = max(math.log(float(np.sum(a * a / b))) for a in laws for b in laws)
        stated = frameldp.Accountant().compose(event, count=nights)  # as the ledger does
        assert worst <= stated.pure_epsilon + 1e-12
        assert second <= nights * event.rdp(2.0) + 1e-12
        if nights == 2:
            assert worst == pytest.approx(2.0225, abs=5e-5)
            assert worst > nights * one_each.pure_epsilon
