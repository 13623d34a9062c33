"""Plots of privacy guarantees (the ``plot`` extra: matplotlib).

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import frameldp
>>> from frameldp.plot import plot_privacy
>>> g = frameldp.Accountant().compose(frameldp.RandomizedResponseEvent(1.0), count=10)
>>> figure = plot_privacy(g)
>>> [axis.get_title() for axis in figure.axes]
['ε(δ) by method', 'Rényi DP curve']
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from frameldp.accounting import Accountant, PrivacyGuarantee
from frameldp.errors import ParameterError
from frameldp.results.figure import frequency_figure, pyplot
from frameldp.results.table import FrequencyTable

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from frameldp.frames.planner import Plan

__all__ = ["plot_frequencies", "plot_plan", "plot_privacy", "plot_risk"]

_STYLES = {
    "basic": ":",
    "pld": "-",
    "rdp": "--",
    "zcdp": "-.",
    "zcdp_bun_steinke": (0, (1, 3)),
}


def plot_frequencies(
    tables: FrequencyTable | list[FrequencyTable],
    *,
    top: int | None = 30,
    width: float = 8.0,
    truth: Any = None,
) -> Figure:
    """One panel per table (per group of a grouped table): estimated counts as horizontal bars
    with their confidence intervals, largest first (the ``top`` largest; ``None`` for all).

    ``truth`` (optional) marks the true counts with a red ``x``: a mapping ``{label: count}``
    or a sequence in bucket order (pairs ``(a, b)`` label a joint table's cells); for a
    grouped table, a mapping from group key to one of those. Only with one table.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd, frameldp
    >>> from frameldp.plot import plot_frequencies
    >>> df = pd.DataFrame({"carrier": ["AA", "DL", "UA", "DL"] * 250})
    >>> table = df.ldp.krr("carrier", 2.0, domain=["AA", "DL", "UA"], seed=1).ldp.debias("carrier")
    >>> [axis.get_title() for axis in plot_frequencies(table).axes]
    ['carrier (n = 1000, 95% intervals)']
    """
    tables = [tables] if not isinstance(tables, list) else tables
    if not tables:
        raise ParameterError("plot_frequencies needs at least one FrequencyTable")
    if not all(isinstance(t, FrequencyTable) for t in tables):
        raise ParameterError("plot_frequencies expects FrequencyTables")
    return frequency_figure(tables, top=top, width=width, truth=truth)


def plot_privacy(
    privacy: PrivacyGuarantee | Accountant,
    *,
    deltas: Any = None,
    orders: Any = None,
    figsize: tuple[float, float] = (10.0, 4.0),
) -> Figure:
    """Two panels: epsilon(delta) for every conversion method, and the Rényi curve with ``a rho``.

    ``deltas`` defaults to 30 values from 1e-12 to 1e-2, ``orders`` to 60 from 1.01 to 1000.
    """
    plt = pyplot()
    if isinstance(privacy, PrivacyGuarantee):
        accountant = privacy.accountant
    elif isinstance(privacy, Accountant):
        accountant = privacy
    else:
        raise ParameterError(
            "plot_privacy expects a PrivacyGuarantee or an Accountant, "
            f"got {type(privacy).__name__}"
        )
    deltas = np.logspace(-12, -2, 30) if deltas is None else np.asarray(deltas, dtype=float)
    orders = np.geomspace(1.01, 1000.0, 60) if orders is None else np.asarray(orders, dtype=float)

    explanations = [accountant.explain(float(delta)) for delta in deltas]
    figure, (left, right) = plt.subplots(1, 2, figsize=figsize, layout="constrained")
    for index, conversion in enumerate(explanations[0].conversions):
        values = [explanation.conversions[index].epsilon for explanation in explanations]
        left.plot(
            deltas, values, linestyle=_STYLES.get(conversion.method, "-"), label=conversion.method
        )
    left.plot(
        deltas,
        [e.best.epsilon for e in explanations],
        color="gray",
        alpha=0.35,
        linewidth=4,
        zorder=0,
        label="reported (min)",
    )
    left.set(xscale="log", xlabel="δ", ylabel="ε", title="ε(δ) by method")
    left.legend(fontsize="small")

    right.plot(orders, [accountant.rdp(float(a)) for a in orders], label="RDP(α)")
    right.plot(orders, orders * accountant.rho, linestyle="--", label="ρα (zCDP)")
    if np.isfinite(accountant.pure_epsilon):
        right.axhline(accountant.pure_epsilon, linestyle=":", color="gray", label="pure ε")
    right.set(xscale="log", xlabel="order α", ylabel="Rényi divergence", title="Rényi DP curve")
    right.set_ylim(0.0, max(accountant.rdp(float(orders[-1])), 1e-12) * 1.1)
    right.legend(fontsize="small")
    return cast("Figure", figure)


def plot_risk(
    guarantees: PrivacyGuarantee | dict[str, PrivacyGuarantee],
    *,
    fprs: Any = None,
    figsize: tuple[float, float] = (5.5, 5.0),
) -> Figure:
    """The trade-off curve of one or more guarantees: the largest true-positive rate of a test
    of one person's value against its false-positive rate (``g.true_positive_rate``), beside
    random guessing and each guarantee's Gaussian-DP curve where it has one. ``fprs`` defaults
    to 101 rates from 0 to 1. A dict labels several guarantees.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import frameldp
    >>> from frameldp.plot import plot_risk
    >>> g = frameldp.RandomizedResponse(1.0, domain=["a", "b"]).privacy
    >>> plot_risk(g).axes[0].get_xlabel()
    'false-positive rate (people wrongly flagged)'
    """
    from frameldp._scipy import special

    if isinstance(guarantees, PrivacyGuarantee):
        guarantees = {f"ε = {guarantees.epsilon:.3g}": guarantees}
    if not isinstance(guarantees, dict) or not all(
        isinstance(g, PrivacyGuarantee) for g in guarantees.values()
    ):
        raise ParameterError("plot_risk expects a PrivacyGuarantee or a dict of them")
    try:
        rates = np.linspace(0.0, 1.0, 101) if fprs is None else np.asarray(fprs, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(
            f"plot_risk: fprs must be numbers in [0, 1], got {fprs!r:.60}"
        ) from None
    inside = rates[(rates > 0.0) & (rates < 1.0)]
    plt = pyplot()
    figure, axis = plt.subplots(figsize=figsize, layout="constrained")
    axis.plot([0.0, 1.0], [0.0, 1.0], color="gray", linestyle=":", label="random guessing")
    for label, guarantee in guarantees.items():
        if guarantee.seeded:
            label = f"{label} [INSECURE: seeded]"
        powers = [guarantee.true_positive_rate(float(rate)) for rate in inside]
        (line,) = axis.plot(inside, powers, label=label)
        mu = guarantee.gdp_mu()
        if mu is not None:
            gaussian = special.ndtr(mu + special.ndtri(inside))
            axis.plot(
                inside,
                gaussian,
                color=line.get_color(),
                linestyle="--",
                alpha=0.6,
                label=f"{label}: Gaussian DP, μ = {mu:.3g}",
            )
    axis.set(
        xlim=(0.0, 1.0),
        ylim=(0.0, 1.0),
        xlabel="false-positive rate (people wrongly flagged)",
        ylabel="largest true-positive rate (people found)",
        title="What a test of one person's value can reach",
    )
    axis.legend(fontsize="small", loc="lower right")
    return cast("Figure", figure)


def plot_plan(
    plan: Plan,
    *,
    epsilons: Any = None,
    against: str | None = None,
    figsize: tuple[float, float] = (8.0, 4.5),
) -> Figure:
    """Utility against epsilon, or against the risk to one person: every candidate's standard
    error of a debiased frequency (per bucket, for the plan's ``n`` and domain) over
    ``epsilons`` (default: 60 from 0.1 to 10, and the plan's), with the plan's choice marked
    and its target, if it had one.

    ``against`` is ``"epsilon"``, ``"posterior"`` (the most an attacker who gave a fact 1%, or
    the plan's prior, believes after one report) or ``"tpr"`` (the power of a test at 1%
    false positives, or the plan's rate); by default the plan's own target.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import frameldp
    >>> from frameldp.plot import plot_plan
    >>> figure = plot_plan(frameldp.plan(domain=20, n=10_000, std_error=0.01))
    >>> figure.axes[0].get_xlabel()
    'ε'
    >>> plan = frameldp.plan(domain=20, n=10_000, max_posterior=0.1, prior=0.01)
    >>> plot_plan(plan).axes[0].get_xlabel()
    'posterior of an attacker with prior 0.01 (one report)'
    """
    from frameldp.accounting.risk import posterior_from_epsilon, power_from_epsilon
    from frameldp.core.planning import plan_candidates

    if against is None:
        against = {"max_posterior": "posterior", "max_tpr": "tpr"}.get(plan.target, "epsilon")
    if against not in ("epsilon", "posterior", "tpr"):
        raise ParameterError(
            f"plot_plan: against must be 'epsilon', 'posterior' or 'tpr', got {against!r}"
        )
    given = plan.risk_goal[1] if plan.risk_goal is not None else 0.01
    if against == "posterior" and plan.target == "max_tpr":
        given = 0.01
    if against == "tpr" and plan.target == "max_posterior":
        given = 0.01

    def risk(epsilon: float) -> float:
        if against == "posterior":
            return posterior_from_epsilon(given, epsilon)
        if against == "tpr":
            return power_from_epsilon(given, epsilon)
        return epsilon

    plt = pyplot()
    grid = np.geomspace(0.1, 10.0, 60) if epsilons is None else np.asarray(epsilons, dtype=float)
    if math.isfinite(plan.epsilon):
        grid = np.unique(np.append(grid, plan.epsilon))
    curves: dict[str, list[float]] = {}
    for epsilon in grid:
        for candidate in plan_candidates(plan.domain, plan.n, float(epsilon)):
            curves.setdefault(candidate.name, []).append(candidate.std_error)
    xs = [risk(float(epsilon)) for epsilon in grid]
    figure, axis = plt.subplots(figsize=figsize, layout="constrained")
    for name, errors in sorted(curves.items()):
        axis.plot(xs, errors, label=name)
    chosen = plan.mechanism if isinstance(plan.mechanism, str) else plan.mechanism.name
    axis.plot([risk(plan.epsilon)], [plan.std_error], "o", color="black", label=f"plan: {chosen}")
    if plan.target == "std_error":
        axis.axhline(plan.std_error, color="gray", linestyle=":", label="target")
    if plan.risk_goal is not None and against != "epsilon":
        axis.axvline(risk(plan.epsilon), color="gray", linestyle=":", label="risk target")
    label = {
        "epsilon": "ε",
        "posterior": f"posterior of an attacker with prior {given:g} (one report)",
        "tpr": f"power of a test at {given:g} false positives (one report)",
    }[against]
    axis.set(
        xscale="log" if against == "epsilon" else "linear",
        yscale="log",
        xlabel=label,
        ylabel="std. error of a frequency (per bucket)",
        title=f"n = {plan.n:,} reports, {plan.num_buckets} buckets",
    )
    axis.legend(fontsize="small")
    return cast("Figure", figure)
