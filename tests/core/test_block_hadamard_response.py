"""Block Hadamard response: its law, its estimator's bias and variance, its privacy event.

Statistical tests use fixed seeds and ``P_FAIL`` (``tests/_stats.py``); the law and the event
are checked against outputs enumerated from the definition (module docstring of
``frameldp.core.mechanisms.block_hadamard_response``), not against the sampler's code.
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np
import pyarrow as pa
import pytest
from mpmath import mpf
from scipy import stats

import frameldp
from _stats import P_FAIL, assert_chisquare, z_bound
from accounting import _oracles as oracle
from frameldp.core.mechanisms import Statistic
from frameldp.core.randomness import RandomSource

LABEL = "c"


def _law(mech: frameldp.BlockHadamardResponse, x: int, p: Any = None) -> list[Any]:
    """``P[y | x]`` for every output, from the definition (``p`` default: the realized one as
    a float)."""
    b, blocks = mech.block_size, mech.blocks
    assert b is not None
    block, row = divmod(x, b - 1)
    row += 1
    inside = [y // b == block and bin(row & (y % b)).count("1") % 2 == 0 for y in range(blocks * b)]
    p = mech.inside_probability if p is None else p
    s = b // 2
    return [p / s if hit else (1 - p) / (blocks * b - s) for hit in inside]


def test_reports_follow_the_law_inside_and_outside_the_value_half() -> None:
    """n = 200,000 reports of each of two values (a full block and the partial last one) over
    3 blocks of 4 outputs; one chi-square test each at ``P_FAIL / 2``."""
    mech = frameldp.BlockHadamardResponse(1.5, domain=list(range(7)), block_size=4)
    assert (mech.blocks, mech.report_range) == (3, 12)
    n = 200_000
    for x in (1, 6):
        y = mech.randomize(np.full(n, x), source=RandomSource.fresh(), label=LABEL)
        assert_chisquare(np.bincount(y, minlength=12), _law(mech, x), p_fail=P_FAIL / 2)


REPS = 400
N = 2_000
TRUTH = np.array([600, 400, 300, 250, 200, 150, 100, 0, 0, 0])  # 10 values, 4 blocks of 3


def test_estimates_are_unbiased_with_the_exact_variance() -> None:
    """Per bucket, over ``REPS`` runs of ``N`` reports: the mean standardized error is within
    ``z(P_FAIL / 2k) / sqrt(REPS)`` of 0 and the sum of squares within the chi-square
    quantiles, standardized by the exact variance (module docstring) at the true counts. The
    plug-in variance the estimate states is that formula at the estimates.

    Detects, with probability 0.99, a bias of 0.3 standard errors or a variance off by 1.5x.
    """
    k = TRUTH.size
    mech = frameldp.BlockHadamardResponse(3.0, domain=list(range(k)), block_size=4)
    assert mech.blocks == 4
    one_run = np.repeat(np.arange(k), TRUTH)
    codes = np.tile(one_run, REPS)
    reports = mech.privatize_column(pa.array(codes), column="c", source=RandomSource.fresh())
    estimates = [
        mech.debias(mech.statistic({"c": reports["c"].slice(r * N, N)}, column="c"))
        for r in range(REPS)
    ]
    channel = mech._channel
    v1, v2, v3 = channel.score_variances()
    blocks = np.arange(k) // 3
    mass = np.bincount(blocks, weights=TRUTH)[blocks]
    exact = (TRUTH * v1 + (mass - TRUTH) * v2 + (N - mass) * v3) / (channel.p - channel.same) ** 2
    z = np.array([(e.counts - TRUTH) / np.sqrt(exact) for e in estimates])
    p_fail = P_FAIL / (2 * k)
    assert np.all(np.abs(z.mean(axis=0)) < z_bound(p_fail) / math.sqrt(REPS))
    squares = (z**2).sum(axis=0)
    low, high = stats.chi2.ppf(p_fail / 2, REPS), stats.chi2.isf(p_fail / 2, REPS)
    assert np.all((squares > low) & (squares < high)), squares
    # The mean over buckets of the exact variances is at most the worst case the mechanism
    # states (all reports in one block).
    assert exact.mean() <= mech.mean_variance(N) * (1 + 1e-12)


def test_one_block_is_hadamard_response() -> None:
    """With ``b = 2^ceil(log2(k + 1))`` there is one block: the same outputs, law and
    estimates as :class:`frameldp.HadamardResponse`."""
    domain = list(range(12))
    block = frameldp.BlockHadamardResponse(2.0, domain=domain, block_size=16)
    plain = frameldp.HadamardResponse(2.0, domain=domain)
    assert block.blocks == 1
    assert block.report_range == plain.num_columns
    assert block.inside_probability == plain.inside_probability
    histogram = np.random.default_rng(5).integers(0, 200, 16)
    statistic = Statistic((histogram,), int(histogram.sum()))
    ours, theirs = block.debias(statistic), plain.debias(statistic)
    np.testing.assert_allclose(ours.counts, theirs.counts, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(ours.variances, theirs.variances, rtol=1e-12)
    assert block.privacy.epsilon == pytest.approx(plain.privacy.epsilon, rel=1e-12)


def test_the_default_block_size_beats_one_block_at_large_epsilon() -> None:
    """Near ``e^eps``: at eps = 4 over 1024 values the worst-case mean variance is about 1/7
    of Hadamard response's, with reports as short; at eps = 1 one block is best."""
    from frameldp.core.mechanisms.choice import mean_variance

    domain = list(range(1024))
    mech = frameldp.BlockHadamardResponse(4.0, domain=domain)
    plain = frameldp.HadamardResponse(4.0, domain=domain)
    assert 16 <= mech.size <= 64
    assert mech.mean_variance() < 0.2 * mean_variance(plain, 1024)
    assert mech.report_bits <= plain.report_bits + 1
    assert frameldp.BlockHadamardResponse(1.0, domain=domain).blocks == 1


@pytest.mark.parametrize(("epsilon", "k", "b"), [(1.0, 6, 4), (2.5, 7, 4), (0.7, 5, 2)])
@mpmath.workdps(oracle.DPS)
def test_the_event_is_the_worst_pair_exactly(epsilon: float, k: int, b: int) -> None:
    """The stated pure epsilon and Rényi curve are the largest over every pair of values (of
    one block and of two), written out from the law, within a relative 1e-9 above."""
    mech = frameldp.BlockHadamardResponse(epsilon, domain=list(range(k)), block_size=b)
    assert mech.blocks >= 2
    exact = 1 - mpf(mech._out_numerator) / mpf(2) ** 64  # the realized p
    laws = [_law(mech, x, exact) for x in range(k)]
    outputs = mech.report_range
    ((event, _),) = mech.privacy.events
    worst_epsilon = max(
        mpmath.log(a[y] / c[y]) for a in laws for c in laws if a is not c for y in range(outputs)
    )
    assert event.pure_epsilon >= worst_epsilon
    assert event.pure_epsilon <= worst_epsilon * (1 + 1e-9)
    for order in (1.5, 2.0, 8.0):
        worst = max(
            oracle.renyi([(a[y], c[y], 1) for y in range(outputs)], order)
            for a in laws
            for c in laws
            if a is not c
        )
        assert event.rdp(order) >= worst
        assert event.rdp(order) <= worst * (1 + 1e-9)


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"block_size": 6}, "block_size must be a power of two"),
        ({"block_size": 1}, "block_size must be a power of two"),
        ({"block_size": 64}, "block_size must be a power of two"),
        ({"block_size": 4.0}, "block_size must be a power of two"),
        ({"epsilon": 1e-30}, "too small to realize"),
    ],
)
def test_bad_parameters_are_refused_naming_them(arguments: dict, match: str) -> None:
    options = {"epsilon": 1.0, "domain": list("abcdefgh"), **arguments}
    epsilon = options.pop("epsilon")
    with pytest.raises(frameldp.ParameterError, match=match):
        frameldp.BlockHadamardResponse(epsilon, **options)
