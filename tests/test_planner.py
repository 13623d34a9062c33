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


@pytest.mark.parametrize(("prior", "target"), [(0.01, 0.1), (0.001, 0.05), (0.2, 0.5)])
def test_the_plan_by_posterior_is_the_largest_epsilon_within_it(
    prior: float, target: float
) -> None:
    """The epsilon is the inverse of the posterior bound: the plan's mechanism keeps the risk,
    and 1% more epsilon would not."""
    plan = frameldp.plan(domain=list(range(20)), n=10_000, max_posterior=target, prior=prior)
    exact = math.log(target / (1 - target)) - math.log(prior / (1 - prior))
    assert plan.epsilon == pytest.approx(exact, rel=1e-9)
    assert plan.target == "max_posterior"
    mechanism = plan.mechanism
    assert not isinstance(mechanism, str)
    assert mechanism.privacy.epsilon <= exact
    assert mechanism.privacy.posterior(prior, delta=0) <= target
    odds = prior / (1 - prior) * math.exp(exact * 1.01)
    assert odds / (1 + odds) > target
    assert plan.std_error == pytest.approx(std_error_at(mechanism, 10_000))


@pytest.mark.parametrize(("fpr", "target"), [(0.01, 0.2), (0.05, 0.5), (0.3, 0.9)])
def test_the_plan_by_power_is_the_largest_epsilon_within_it(fpr: float, target: float) -> None:
    plan = frameldp.plan(domain=["a", "b", "c"], n=1000, max_tpr=target, fpr=fpr)
    mechanism = plan.mechanism
    assert not isinstance(mechanism, str)
    assert mechanism.privacy.true_positive_rate(fpr) <= target * (1 + 1e-9)
    more = frameldp.RandomizedResponse(plan.epsilon * 1.01, domain=["a", "b", "c"])
    assert more.privacy.true_positive_rate(fpr) > target
    assert "keeping a test's power" in repr(plan)


def test_risk_plans_refuse_bad_requests() -> None:
    with pytest.raises(FrameLDPError, match="one of epsilon, std_error"):
        frameldp.plan(domain=10, n=100, epsilon=1.0, max_posterior=0.1)
    with pytest.raises(FrameLDPError, match="one of max_posterior"):
        frameldp.plan(domain=10, n=100, max_posterior=0.1, max_tpr=0.5)
    with pytest.raises(FrameLDPError, match="not above"):
        frameldp.plan(domain=10, n=100, max_tpr=0.01, fpr=0.05)
    with pytest.raises(FrameLDPError, match="prior"):
        frameldp.plan(domain=10, n=100, max_posterior=0.1, prior=1.0)
    with pytest.raises(FrameLDPError, match="quantile"):
        frameldp.plan(bounds=(0, 1), n=100, max_posterior=0.1, quantile_error=0.1)
    mean = frameldp.plan(bounds=(0, 100), n=10_000, max_posterior=0.1)
    assert mean.epsilon <= math.log(0.1 / 0.9) - math.log(0.01 / 0.99)


def test_plot_plan_against_the_risk() -> None:
    from frameldp.plot import plot_plan

    plan = frameldp.plan(domain=16, n=10_000, max_posterior=0.1, prior=0.01)
    axis = plot_plan(plan).axes[0]
    assert axis.get_xlabel().startswith("posterior of an attacker with prior 0.01")
    labels = [text.get_text() for text in axis.get_legend().get_texts()]
    assert "risk target" in labels
    point = next(line for line in axis.get_lines() if line.get_label().startswith("plan:"))
    assert point.get_xdata()[0] == pytest.approx(0.1)
    assert plot_plan(plan, against="tpr").axes[0].get_xlabel().startswith("power of a test")
    with pytest.raises(FrameLDPError, match="against"):
        plot_plan(plan, against="odds")
