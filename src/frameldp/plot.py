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

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from frameldp.accounting import Accountant, PrivacyGuarantee
from frameldp.errors import ParameterError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from frameldp.frames.table import FrequencyTable

__all__ = ["plot_frequencies", "plot_privacy"]

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
    tables: FrequencyTable | list[FrequencyTable], *, top: int | None = 30, width: float = 8.0
) -> Figure:
    """One panel per table: estimated counts as horizontal bars with their confidence
    intervals, largest first (the ``top`` largest; ``None`` for all).

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
    shown = [table.to_pandas().sort_values("count", ascending=False) for table in tables]
    shown = [frame if top is None else frame.head(top) for frame in shown]
    heights = [max(1.5, 0.25 * len(frame) + 1.0) for frame in shown]
    figure, axes = plt.subplots(
        len(tables),
        1,
        figsize=(width, sum(heights)),
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
        squeeze=False,
    )
    for axis, table, frame in zip(axes[:, 0], tables, shown, strict=True):
        labels = [str(label) for label in frame["category"]][::-1]
        counts = frame["count"].to_numpy()[::-1]
        low = counts - frame["ci_low"].to_numpy()[::-1]
        high = frame["ci_high"].to_numpy()[::-1] - counts
        axis.barh(labels, counts, xerr=[low, high], color="tab:blue", alpha=0.7, capsize=2)
        axis.axvline(0.0, color="gray", linewidth=0.8)
        axis.set(
            xlabel="estimated count",
            title=f"{table.column} (n = {table.n}, {table.level:.0%} intervals)",
        )
    return cast("Figure", figure)


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
