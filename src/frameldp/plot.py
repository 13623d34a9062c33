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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from frameldp.accounting import Accountant, PrivacyGuarantee
from frameldp.errors import ParameterError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from frameldp.frames.planner import Plan
    from frameldp.frames.table import FrequencyTable

__all__ = ["plot_frequencies", "plot_plan", "plot_privacy"]

_STYLES = {
    "basic": ":",
    "pld": "-",
    "rdp": "--",
    "zcdp": "-.",
    "zcdp_bun_steinke": (0, (1, 3)),
}


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - depends on the installed extras
        raise ImportError("plotting needs matplotlib: pip install 'frameldp[plot]'") from error
    return plt


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
    plt = _pyplot()
    tables = [tables] if not isinstance(tables, list) else tables
    if not tables:
        raise ParameterError("plot_frequencies needs at least one FrequencyTable")
    from frameldp.frames.table import FrequencyTable as Table

    if not all(isinstance(t, Table) for t in tables):
        raise ParameterError("plot_frequencies expects FrequencyTables")
    if truth is not None and len(tables) > 1:
        raise ParameterError("plot_frequencies: truth= goes with one table")
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise ParameterError(f"plot_frequencies: top must be an integer >= 1 or None, got {top!r}")
    panels = [panel for table in tables for panel in _panels(table, truth)]
    heights = [max(1.5, 0.25 * min(len(p[0].labels), top or 10**9) + 1.0) for p in panels]
    figure, axes = plt.subplots(
        len(panels),
        1,
        figsize=(width, sum(heights)),
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
        squeeze=False,
    )
    for axis, (table, title, true_counts) in zip(axes[:, 0], panels, strict=True):
        counts = table.estimate.counts
        order = np.argsort(-counts, kind="stable")[: top or None][::-1]
        low, high = table.estimate.interval(table.level)
        labels = [_label(table.labels[i]) for i in order]
        axis.barh(
            labels,
            counts[order],
            xerr=[counts[order] - low[order], high[order] - counts[order]],
            color="tab:blue",
            alpha=0.7,
            capsize=2,
        )
        if true_counts is not None:
            axis.plot(true_counts[order], labels, "x", color="tab:red", label="truth")
            axis.legend(fontsize="small")
        axis.axvline(0.0, color="gray", linewidth=0.8)
        axis.set(xlabel="estimated count", title=title)
    return cast("Figure", figure)


def _label(label: Any) -> str:
    return " × ".join(str(part) for part in label) if isinstance(label, tuple) else str(label)


def _panels(table: FrequencyTable, truth: Any) -> list[tuple[FrequencyTable, str, Any]]:
    """``(flat table, title, true counts or None)`` of every panel of ``table``."""
    what = " × ".join(table.label_columns) if table.joint else str(table.column)
    if not table.by:
        title = f"{what} (n = {table.n}, {table.level:.0%} intervals)"
        return [(table, title, _truth(table, truth))]
    keys = [group.key if len(group.key) > 1 else group.key[0] for group in table.groups]
    if truth is not None and (
        not isinstance(truth, Mapping) or not any(key in truth for key in keys)
    ):
        # A flat {label: count} here would match no group and draw no truth at all.
        raise ParameterError(
            "plot_frequencies: the truth of a grouped table maps each group key (here "
            f"{_label(keys[0]) if keys else 'none'}, ...) to its counts; got "
            f"{type(truth).__name__} with no group key"
        )
    panels = []
    for group, key in zip(table.groups, keys, strict=True):
        flat = table.group(*group.key)
        shown_key = ", ".join(f"{n}={v}" for n, v in zip(table.by, group.key, strict=True))
        given = None if truth is None else truth.get(key)
        title = f"{what} | {shown_key} (n = {flat.n}, {table.level:.0%} intervals)"
        panels.append((flat, title, _truth(flat, given)))
    return panels


def _truth(table: FrequencyTable, truth: Any) -> Any:
    """True counts in bucket order, from a mapping by label or a sequence (None: none)."""
    if truth is None:
        return None
    labels = table.labels
    try:
        if isinstance(truth, Mapping) or callable(getattr(truth, "get", None)):
            return np.array([float(truth.get(label, 0.0)) for label in labels])
        values = np.asarray(truth, dtype=np.float64).ravel()
    except (TypeError, ValueError) as error:
        raise ParameterError(
            "plot_frequencies: truth must map labels to counts or list counts in bucket "
            f"order, got {type(truth).__name__}"
        ) from error
    if values.size != len(labels):
        raise ParameterError(
            f"plot_frequencies: truth has {values.size} counts for {len(labels)} buckets"
        )
    return values


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
    plt = _pyplot()
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

    plt = _pyplot()
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
