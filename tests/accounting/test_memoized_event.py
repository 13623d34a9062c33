"""Memoized reports against their exact joint loss: ``r`` reports that share a permanent
response, enumerated over every sequence of reports with exact rationals.

The guarantee the ledger charges for ``r`` memoized reports (one ``MemoizedEvent`` folded ``r``
times) must be at least the exact pure epsilon of their joint law, for every mechanism that
memoizes through it. ``r`` compositions of epsilon_1 are not enough: the cases below exceed
them, which is why the event charges epsilon_inf from the second report on.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from math import comb
from typing import Any

import pytest

import frameldp
from frameldp.accounting import Accountant

_ONE = 1 << 64
Channel = Callable[[Any], dict[Any, Fraction]]


def _joint_epsilon(
    inputs: Sequence[Any], permanent: Channel, instant: Channel, reports: int
) -> float:
    """Exact max over two inputs and every report sequence of ``ln P[seq | x] / P[seq | x']``,
    where the ``reports`` reports are i.i.d. ``instant`` of one ``permanent`` draw."""
    laws = []
    for x in inputs:
        law: dict[tuple[Any, ...], Fraction] = {}
        for held, weight in permanent(x).items():
            steps = instant(held)
            for sequence in itertools.product(steps, repeat=reports):
                chance = weight
                for y in sequence:
                    chance *= steps[y]
                law[sequence] = law.get(sequence, Fraction(0)) + chance
        laws.append(law)
    worst = Fraction(1)
    for first, second in itertools.permutations(laws, 2):
        for sequence, chance in first.items():
            worst = max(worst, chance / second[sequence])
    return math.log(worst)


def _krr(values: int, move: Fraction) -> Channel:
    return lambda x: {y: (1 - move) if y == x else move / (values - 1) for y in range(values)}


def _randomized_response(epsilon: float, infinity: float, k: int) -> tuple[Any, Channel, Channel]:
    mech = frameldp.RandomizedResponse(epsilon, domain=list(range(k)), epsilon_infinity=infinity)
    permanent = _krr(k, Fraction(mech._permanent_numerator, _ONE))
    instant = _krr(k, Fraction(mech._move_numerator, _ONE))
    return mech, permanent, instant


def _subset_selection(
    epsilon: float, infinity: float, k: int, d: int
) -> tuple[Any, Channel, Channel]:
    mech = frameldp.SubsetSelection(
        epsilon, domain=list(range(k)), subset_size=d, epsilon_infinity=infinity
    )
    subsets = [frozenset(s) for s in itertools.combinations(range(k), d)]
    held = 1 - Fraction(mech._out_numerator, _ONE)
    redraw = Fraction(mech._redraw_numerator, _ONE)

    def permanent(x: int) -> dict[Any, Fraction]:
        inside, outside = held / comb(k - 1, d - 1), (1 - held) / comb(k - 1, d)
        return {s: inside if x in s else outside for s in subsets}

    def instant(s: frozenset[int]) -> dict[Any, Fraction]:
        uniform = redraw / len(subsets)
        return {t: uniform + (1 - redraw if t == s else 0) for t in subsets}

    return mech, permanent, instant


def _projective(epsilon: float, infinity: float, q: int, k: int) -> tuple[Any, Channel, Channel]:
    mech = frameldp.ProjectiveGeometryResponse(
        epsilon, domain=list(range(k)), field_size=q, epsilon_infinity=infinity
    )
    # The space's points from its definition (leading 1 first, trailing digits in base q).
    t = mech.dimension
    points = [
        (0,) * j + (1,) + rest
        for j in range(t)
        for rest in itertools.product(range(q), repeat=t - 1 - j)
    ]
    held = 1 - Fraction(mech._out_numerator, _ONE)
    redraw = Fraction(mech._redraw_numerator, _ONE)

    def permanent(x: int) -> dict[Any, Fraction]:
        through = [sum(a * b for a, b in zip(h, points[x], strict=True)) % q == 0 for h in points]
        inside, outside = held / sum(through), (1 - held) / (len(points) - sum(through))
        return {h: inside if hit else outside for h, hit in zip(points, through, strict=True)}

    def instant(h: tuple[int, ...]) -> dict[Any, Fraction]:
        uniform = redraw / len(points)
        return {g: uniform + (1 - redraw if g == h else 0) for g in points}

    return mech, permanent, instant


CASES = {
    "krr-k5": lambda: _randomized_response(1.0, 3.0, 5),
    "krr-k16": lambda: _randomized_response(0.5, 5.0, 16),
    "subset-k5-d2": lambda: _subset_selection(0.5, 4.0, 5, 2),
    "subset-k6-d3": lambda: _subset_selection(0.25, 2.0, 6, 3),
    "pgr-fano": lambda: _projective(0.5, 3.0, 2, 7),
}
# (case, reports): three reports where the enumeration stays small (k^3 or C(k, d)^3 sequences).
RUNS = [(case, reports) for case in CASES for reports in (1, 2)] + [
    ("krr-k5", 3),
    ("subset-k5-d2", 3),
]


@pytest.mark.parametrize(("case", "reports"), RUNS)
def test_the_charge_is_never_below_the_exact_joint_loss(case: str, reports: int) -> None:
    mech, permanent, instant = CASES[case]()
    exact = _joint_epsilon(range(mech.domain.size), permanent, instant, reports)
    ((event, _),) = mech.guarantee("memo").events
    charged = Accountant.of([(event, reports)]).pure_epsilon
    assert exact <= charged * (1 + 1e-12)


@pytest.mark.parametrize("case", ["krr-k16", "subset-k5-d2", "subset-k6-d3"])
def test_r_compositions_of_epsilon_one_would_undercharge(case: str) -> None:
    """Why the event charges epsilon_inf from the second report: two reports of k-RR (k = 16,
    epsilon_1 = 0.5, epsilon_inf = 5: 1.013) and of subset selection (k = 5, d = 2, 0.5 and 4:
    1.373; k = 6, d = 3, 0.25 and 2: 0.866) lose more than 2 x epsilon_1."""
    mech, permanent, instant = CASES[case]()
    exact = _joint_epsilon(range(mech.domain.size), permanent, instant, 2)
    assert exact > 2 * mech.privacy.epsilon
