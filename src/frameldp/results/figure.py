"""The figure of frequency tables: estimated counts with their intervals (matplotlib, the
``plot`` extra, imported when a figure is drawn)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from frameldp.errors import ParameterError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from frameldp.results.distribution import DistributionTable
    from frameldp.results.mean import MeanEstimate
    from frameldp.results.table import FrequencyTable

__all__ = ["distribution_figure", "frequency_figure", "mean_figure", "pyplot"]


def pyplot() -> Any:
    """matplotlib.pyplot, or an error naming the extra that installs it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - depends on the installed extras
        raise ImportError("plotting needs matplotlib: pip install 'frameldp[plot]'") from error
    return plt


def frequency_figure(
    tables: list[FrequencyTable], *, top: int | None, width: float, truth: Any
) -> Figure:
    """One panel per table (per group of a grouped table); see
    :func:`frameldp.plot.plot_frequencies`."""
    plt = pyplot()
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


def distribution_figure(
    table: DistributionTable, *, width: float = 8.0, truth: Any = None, z: float = 1.96
) -> Figure:
    """The histogram of a distribution table (bucket shares as bars, ``z`` standard errors as
    error bars), one panel per group; ``truth`` (optional, one group) is a sequence of true
    values drawn as a step histogram over the same buckets."""
    plt = pyplot()
    blocks = table._blocks()
    if truth is not None and len(blocks) > 1:
        raise ParameterError("plot: truth= goes with an ungrouped table")
    figure, axes = plt.subplots(
        len(blocks), 1, figsize=(width, 2.8 * len(blocks)), layout="constrained", squeeze=False
    )
    for axis, (key, found) in zip(axes[:, 0], blocks, strict=True):
        widths = np.diff(found.edges)
        axis.bar(
            found.edges[:-1],
            found.frequencies,
            width=widths,
            align="edge",
            alpha=0.6,
            yerr=z * found.frequency_std_errors,
            error_kw={"elinewidth": 0.6},
            label="estimate",
        )
        if truth is not None:
            shares = np.histogram(np.asarray(truth, dtype=np.float64), bins=found.edges)[0]
            axis.stairs(shares / max(shares.sum(), 1), found.edges, label="truth", color="black")
            axis.legend()
        group = f" ({', '.join(map(str, key))})" if key else ""
        axis.set_title(f"{table.column}{group}: n = {found.n:,}")
        axis.set_ylabel("share")
    return cast("Figure", figure)


def mean_figure(estimate: MeanEstimate, *, width: float = 8.0, truth: Any = None) -> Figure:
    """The mean (each group's, by groups) with its interval at the estimate's level; ``truth``
    (optional) marks true means: a number, or a mapping from group key to number."""
    plt = pyplot()
    frame = estimate.to_pandas()
    labels = (
        [", ".join(str(v) for v in row) for row in frame[list(estimate.by)].itertuples(index=False)]
        if estimate.by
        else [str(estimate.column)]
    )
    figure, axis = plt.subplots(figsize=(width, max(1.5, 0.35 * len(labels) + 1.0)))
    positions = np.arange(len(labels))
    means = frame["mean"].to_numpy()
    lower = means - frame["ci_low"].to_numpy()
    upper = frame["ci_high"].to_numpy() - means
    axis.errorbar(means, positions, xerr=[lower, upper], fmt="o", capsize=3, label="estimate")
    if truth is not None:
        marks = (
            [
                truth.get(tuple(row) if len(row) > 1 else row[0])
                for row in frame[list(estimate.by)].itertuples(index=False)
            ]
            if estimate.by and hasattr(truth, "get")
            else [truth] * len(labels)
        )
        axis.scatter(marks, positions, marker="x", color="black", label="truth", zorder=3)
        axis.legend()
    axis.set_yticks(positions, labels)
    axis.invert_yaxis()
    axis.set_xlabel(f"mean of {estimate.column} ({estimate.level:.0%} intervals)")
    return cast("Figure", figure)
