"""The planner: the standard error a budget buys and the smallest budget a target needs, for
every frequency oracle; round trips, refusals, the CLI and the plot."""

from __future__ import annotations

import math

import matplotlib
import pytest

import frameldp
from frameldp.core.mechanisms.choice import compare_mechanisms
from frameldp.core.planning import std_error_at
from frameldp.errors import FrameLDPError

matplotlib.use("Agg")


@pytest.mark.parametrize(
    ("domain", "n", "target"),
    [(2, 1_000, 0.05), (20, 10_000, 0.01), (50, 100_000, 0.005), (1024, 1_000_000, 0.002)],
)
def test_the_proposed_epsilon_reaches_the_target_and_five_percent_less_does_not(
    domain: int, n: int, target: float
) -> None:
    plan = frameldp.plan(domain=domain, n=n, std_error=target)
    assert plan.std_error <= target
    assert isinstance(plan.mechanism, str)
    for candidate in plan.candidates:
        if candidate.mechanism is None:
            assert math.isinf(candidate.epsilon)
            continue
        assert std_error_at(candidate.mechanism, n) <= target
        # Every candidate at 95% of its epsilon misses the target.
        cls = type(candidate.mechanism)
        weaker = cls(0.95 * candidate.epsilon, domain=list(range(domain)))
        assert std_error_at(weaker, n) > target
    assert plan.epsilon == min(c.epsilon for c in plan.candidates)


def test_at_a_given_epsilon_the_plan_is_the_automatic_choice() -> None:
    domain = [f"v{i}" for i in range(40)]
    plan = frameldp.plan(domain=domain, n=50_000, epsilon=2.0)
    best = compare_mechanisms(2.0, domain=domain, n=50_000).candidates[0]
    assert plan.mechanism == best.mechanism  # a ready mechanism over the domain
    assert plan.std_error == pytest.approx(best.std_error(50_000), rel=1e-12)
    frame = plan.frame
    assert list(frame.columns[:5]) == ["mechanism", "settings", "epsilon", "guarantee", "std_error"]
    assert frame["chosen"].tolist()[0]
    assert (frame["count_std_error"] == frame["std_error"] * 50_000).all()
    assert "subset_selection" in repr(plan) or plan.mechanism.name in repr(plan)


def test_plans_refuse_bad_requests() -> None:
    with pytest.raises(FrameLDPError, match="exactly one"):
        frameldp.plan(domain=10, n=100)
    with pytest.raises(FrameLDPError, match="exactly one"):
        frameldp.plan(domain=10, n=100, epsilon=1.0, std_error=0.01)
    with pytest.raises(FrameLDPError, match="n must be"):
        frameldp.plan(domain=10, n=0, epsilon=1.0)
    with pytest.raises(FrameLDPError, match="std_error"):
        frameldp.plan(domain=10, n=100, std_error=1.5)
    with pytest.raises(FrameLDPError, match="epsilon"):
        frameldp.plan(domain=10, n=100, epsilon=-1.0)
    with pytest.raises(FrameLDPError, match="domain must have 2 to"):
        frameldp.plan(domain=1, n=100, epsilon=1.0)


def test_plot_plan_draws_every_candidate_and_the_target() -> None:
    from frameldp.plot import plot_plan

    plan = frameldp.plan(domain=16, n=10_000, std_error=0.01)
    figure = plot_plan(plan)
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert len(labels) == len(plan.candidates) + 2  # curves, the plan's point, the target
    assert "target" in labels


def test_frameldp_plot_is_an_attribute() -> None:
    assert frameldp.plot.plot_plan is not None
    assert callable(frameldp.plot.plot_frequencies)
