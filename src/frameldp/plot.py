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

__all__ = ["plot_frequencies", "plot_plan", "plot_privacy"]

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


def plot_plan(
    plan: Plan, *, epsilons: Any = None, figsize: tuple[float, float] = (8.0, 4.5)
) -> Figure:
    """Utility against epsilon: every candidate's standard error of a debiased frequency (per
    bucket, for the plan's ``n`` and domain) over ``epsilons`` (default: 60 from 0.1 to 10,
    and the plan's), with the plan's choice marked and its target, if it had one.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import frameldp
    >>> from frameldp.plot import plot_plan
    >>> figure = plot_plan(frameldp.plan(domain=20, n=10_000, std_error=0.01))
    >>> figure.axes[0].get_xlabel()
    'ε'
    """
    from frameldp.core.planning import plan_candidates

    plt = pyplot()
    grid = np.geomspace(0.1, 10.0, 60) if epsilons is None else np.asarray(epsilons, dtype=float)
    if math.isfinite(plan.epsilon):
        grid = np.unique(np.append(grid, plan.epsilon))
    curves: dict[str, list[float]] = {}
    for epsilon in grid:
        for candidate in plan_candidates(plan.domain, plan.n, float(epsilon)):
            curves.setdefault(candidate.name, []).append(candidate.std_error)
    figure, axis = plt.subplots(figsize=figsize, layout="constrained")
    for name, errors in sorted(curves.items()):
        axis.plot(grid, errors, label=name)
    chosen = plan.mechanism if isinstance(plan.mechanism, str) else plan.mechanism.name
    axis.plot([plan.epsilon], [plan.std_error], "o", color="black", label=f"plan: {chosen}")
    if plan.target == "std_error":
        axis.axhline(plan.std_error, color="gray", linestyle=":", label="target")
    axis.set(
        xscale="log",
        yscale="log",
        xlabel="ε",
        ylabel="std. error of a frequency (per bucket)",
        title=f"n = {plan.n:,} reports, {plan.num_buckets} buckets",
    )
    axis.legend(fontsize="small")
    return cast("Figure", figure)
