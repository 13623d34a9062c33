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

from typing import TYPE_CHECKING, Any

import numpy as np

from frameldp.accounting import Accountant, PrivacyGuarantee
from frameldp.errors import ParameterError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_privacy"]

_STYLES = {
    "basic": ":",
    "pld": "-",
    "rdp": "--",
    "zcdp": "-.",
    "zcdp_bun_steinke": (0, (1, 3)),
}


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
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - depends on the installed extras
        raise ImportError("plotting needs matplotlib: pip install 'frameldp[plot]'") from error
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
    return figure
