"""The quantile planner (core/quantile_planning.py): Square Wave's quantile error by simulation.

Statistical claim: the planner's simulated error is the error real releases have. ``RELEASES``
Square Wave releases (the real sampler, each under its own seed) of values drawn uniformly on
the bounds give a root-mean-square error of the median whose ratio to the true error lies, with
probability ``1 - P_FAIL``, within the chi-square bounds on ``RELEASES`` degrees of freedom
(errors close to normal at these n); the planner's own figure, a fixed function of its seed
from 24 simulated releases, is allowed ``PLAN_SLACK`` around the true error (its relative
spread is about 15%).
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

import frameldp
from _stats import P_FAIL
from frameldp.core import RandomSource
from frameldp.core.distribution import Distribution
from frameldp.core.quantile_planning import plan_quantiles

BOUNDS: Final = (0.0, 100.0)
BUCKETS: Final = 64
RELEASES: Final = 60
PLAN_SLACK: Final = 1.35


def test_the_planned_error_is_the_error_of_real_releases() -> None:
    uniform = np.linspace(*BOUNDS, 10_001)  # plan for the data of the releases below
    plan = plan_quantiles(BOUNDS, epsilon=2.0, quantile_error=2.0, buckets=BUCKETS, prior=uniform)
    assert plan.target == "n"
    assert plan.quantile_error <= 2.0
    mechanism = plan.mechanism
    edges = np.linspace(*BOUNDS, BUCKETS + 1)
    rng = np.random.default_rng(11)  # test data
    squares = 0.0
    for seed in range(RELEASES):
        values = pa.array(rng.uniform(*BOUNDS, plan.n))
        reports = mechanism.privatize_column(
            values, column="x", source=RandomSource.from_seed(seed)
        )
        counts = mechanism.statistic(reports, column="x").parts[0]
        estimate = mechanism.estimate(counts)
        median = Distribution(edges, estimate, plan.n, np.empty((0, BUCKETS))).quantile(0.5)
        squares += (median - 50.0) ** 2
    measured = math.sqrt(squares / RELEASES)
    low = math.sqrt(stats.chi2.ppf(P_FAIL / 2, RELEASES) / RELEASES) / PLAN_SLACK
    high = math.sqrt(stats.chi2.isf(P_FAIL / 2, RELEASES) / RELEASES) * PLAN_SLACK
    assert low <= measured / plan.quantile_error <= high


def test_two_of_three_give_the_third_and_each_quantile_is_stated() -> None:
    found = frameldp.plan(
        bounds=BOUNDS, n=5_000, quantile_error=3.0, quantiles=[0.1, 0.9], buckets=BUCKETS
    )
    assert found.target == "epsilon"
    assert found.quantile_error <= 3.0
    assert found.quantiles == (0.1, 0.9)
    assert max(found.errors) == found.quantile_error
    again = frameldp.plan(
        bounds=BOUNDS, n=5_000, epsilon=found.epsilon, quantiles=[0.1, 0.9], buckets=BUCKETS
    )
    assert again.quantile_error == found.quantile_error  # a plan is deterministic
    assert "solved for quantile_error" in repr(again)
    assert "Beta(2, 5)" in repr(again)


def test_a_tiny_epsilon_is_not_planned_from_the_estimators_own_start() -> None:
    """(Attack review) On uniform values alone, EMS's fallback to its uniform start made
    epsilon 0.05 look exact for a median at n = 1,000; the skewed shapes refuse it."""
    found = plan_quantiles(BOUNDS, n=1_000, quantile_error=5.0, buckets=BUCKETS)
    assert found.epsilon > 0.5
    tiny = plan_quantiles(BOUNDS, n=1_000, epsilon=0.05, buckets=BUCKETS)
    assert tiny.quantile_error > 10.0


def test_a_prior_changes_the_plan_and_an_unreachable_target_is_refused() -> None:
    prior = np.concatenate([np.full(900, 20.0), np.linspace(0, 100, 100)])  # a sharp peak
    peaked = plan_quantiles(BOUNDS, n=20_000, epsilon=1.0, buckets=BUCKETS, prior=prior)
    flat = plan_quantiles(BOUNDS, n=20_000, epsilon=1.0, buckets=BUCKETS)
    assert peaked.quantile_error != flat.quantile_error
    assert "1,000 prior values" in peaked.planning
    with pytest.raises(frameldp.ParameterError, match="however many people"):
        plan_quantiles(BOUNDS, epsilon=0.5, quantile_error=1e-4, buckets=BUCKETS)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"n": 100}, "give two of"),
        ({"n": 100, "epsilon": 1.0, "quantile_error": 1.0}, "give two of"),
        ({"n": 0, "epsilon": 1.0}, "n must be"),
        ({"n": 100, "epsilon": -1.0}, "epsilon must be"),
        ({"n": 100, "quantile_error": math.inf}, "quantile_error must be"),
        ({"n": 100, "epsilon": 1.0, "quantiles": [1.5]}, "quantiles"),
        ({"n": 100, "epsilon": 1.0, "quantiles": "median"}, "quantiles must be"),
        ({"n": 100, "epsilon": 1.0, "prior": [500.0]}, "within the bounds"),
        ({"n": 100, "epsilon": 1.0, "prior": ["x"]}, "prior must be numbers"),
        ({"n": 100, "epsilon": 1.0, "buckets": 1}, "buckets"),
        ({"n": 100, "epsilon": 1.0, "buckets": 0}, "buckets"),
        ({"n": 100, "epsilon": 1.0, "prior": ["5"]}, "prior must be numbers"),
        ({"n": 100, "epsilon": 1.0, "prior": [10**400]}, "prior must be numbers"),
    ],
)
def test_bad_arguments_are_refused(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(frameldp.ParameterError, match=message):
        plan_quantiles(BOUNDS, **arguments)  # type: ignore[arg-type]


def test_the_front_door_keeps_means_and_quantiles_apart() -> None:
    with pytest.raises(frameldp.ParameterError, match="quantile_error"):
        frameldp.plan(bounds=BOUNDS, n=100, std_error=1.0, quantiles=[0.5])
    with pytest.raises(frameldp.ParameterError, match="need bounds"):
        frameldp.plan(domain=10, n=100, epsilon=1.0, quantile_error=1.0)
    with pytest.raises(frameldp.ParameterError, match="for a quantile plan"):
        frameldp.plan(bounds=BOUNDS, n=100, epsilon=1.0, buckets=64)
