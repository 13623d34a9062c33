"""MeanEstimate: the debiased mean of a numeric report column, with its guarantee.

A mean mechanism's reports (:mod:`frameldp.core.mechanisms._numeric`) give an unbiased mean
with a standard error and a normal interval (:class:`~frameldp.core.numeric_estimates.Mean`);
by public groups, one per group. The result carries the guarantee and the mechanism like a
:class:`~frameldp.results.table.FrequencyTable`, and its ``frame`` is a native frame.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from frameldp.accounting import PrivacyGuarantee
from frameldp.core.numeric_estimates import Mean
from frameldp.errors import ParameterError, shown
from frameldp.results.keys import GroupKey, canonical_key
from frameldp.results.native import Backend, NativeFrames, escape, label_array, risk_caption
from frameldp.results.table import _rounded_rows, _text_rows

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MEAN_COLUMNS", "MeanEstimate"]

MEAN_COLUMNS = ("n", "mean", "std_error", "ci_low", "ci_high", "sum", "sum_std_error")
"""Columns of ``MeanEstimate.frame`` (after the ``by`` columns of a grouped estimate)."""

_TEXT_WIDTH = 80


@dataclass(frozen=True, repr=False)
class MeanEstimate(NativeFrames):
    """The mean of one numeric report column (of all its reports, and of each public group).

    Attributes
    ----------
    mean, std_error, ci_low, ci_high, n
        The unbiased mean of all ``n`` reports, its standard error and the normal interval at
        ``level`` (cut to the column's bounds).
    sum, sum_std_error
        ``n`` times the mean, and its standard error: the column's total.
    frame
        A native frame (pandas or polars, as the reports were) with columns
        :data:`MEAN_COLUMNS`; by groups, one row per group after the ``by`` columns.
    privacy
        What one person loses through these reports.
    mechanism
        The mechanism that produced the reports.
    """

    column: str
    estimate: Mean
    mechanism: Any
    privacy: PrivacyGuarantee
    level: float = 0.95
    backend: Backend = "pandas"
    by: tuple[str, ...] = ()
    groups: tuple[tuple[GroupKey, Mean], ...] = ()
    group_types: tuple[Any, ...] = ()

    @property
    def mean(self) -> float:
        """The unbiased mean."""
        return self.estimate.mean

    @property
    def std_error(self) -> float:
        """The mean's standard error."""
        return self.estimate.std_error

    @property
    def n(self) -> int:
        """The number of reports."""
        return self.estimate.n

    @property
    def sum(self) -> float:
        """The estimated total: ``n`` times the mean."""
        return self.estimate.sum

    @property
    def sum_std_error(self) -> float:
        """The total's standard error."""
        return self.estimate.sum_std_error

    @property
    def ci_low(self) -> float:
        """The interval's lower end at :attr:`level`."""
        return self.estimate.interval(self.level)[0]

    @property
    def ci_high(self) -> float:
        """The interval's upper end at :attr:`level`."""
        return self.estimate.interval(self.level)[1]

    def _estimates(self) -> list[Mean]:
        return [estimate for _, estimate in self.groups] if self.by else [self.estimate]

    def _arrow(self) -> pa.Table:
        estimates = self._estimates()
        intervals = [estimate.interval(self.level) for estimate in estimates]
        columns: dict[str, pa.Array] = {}
        for index, name in enumerate(self.by):
            kind = self.group_types[index] if index < len(self.group_types) else None
            columns[name] = label_array([key[index] for key, _ in self.groups], kind)
        columns["n"] = pa.array([e.n for e in estimates], type=pa.int64())
        columns["mean"] = pa.array([e.mean for e in estimates], type=pa.float64())
        columns["std_error"] = pa.array([e.std_error for e in estimates], type=pa.float64())
        columns["ci_low"] = pa.array([low for low, _ in intervals], type=pa.float64())
        columns["ci_high"] = pa.array([high for _, high in intervals], type=pa.float64())
        columns["sum"] = pa.array([e.sum for e in estimates], type=pa.float64())
        columns["sum_std_error"] = pa.array([e.sum_std_error for e in estimates], pa.float64())
        return pa.table(columns)

    def group(self, *key: Any) -> MeanEstimate:
        """The estimate of one group (one key value per ``by`` column)."""
        if not self.by:
            raise ParameterError("group: this estimate has no groups")
        wanted = canonical_key(tuple(key))
        for found, estimate in self.groups:
            if canonical_key(found) == wanted:
                return MeanEstimate(
                    self.column, estimate, self.mechanism, self.privacy, self.level, self.backend
                )
        raise ParameterError(f"group: no group {shown(tuple(key))} in by={list(self.by)}")

    # -- display -----------------------------------------------------------------------------

    def plot(self, *, truth: Any = None, **options: Any) -> Figure:
        """The mean (each group's) with its interval (matplotlib); ``truth`` marks the true
        mean (a number, or a mapping from group key to number)."""
        from frameldp.results.figure import mean_figure  # matplotlib: on first use

        return mean_figure(self, truth=truth, **options)

    def _caption(self) -> str:
        grouped = f" by {', '.join(self.by)}, {len(self.groups)} groups" if self.by else ""
        title = getattr(self.mechanism, "title", "")
        return (
            f"mean of {self.column}{grouped}: n = {self.n:,} reports of {title}; "
            f"{self.level:.0%} intervals. Privacy: {self.privacy}"
        )

    def _digits(self) -> dict[str, int]:
        error = self.std_error if self.std_error > 0 else 1.0
        import math

        places = min(6, max(0, 1 - math.floor(math.log10(error))))
        return {name: places for name in MEAN_COLUMNS if name != "n"} | {"n": 0}

    def __repr__(self) -> str:
        lines = textwrap.wrap(
            f"MeanEstimate: {self._caption()}", _TEXT_WIDTH, subsequent_indent="  "
        )
        lines.extend(_text_rows(self._arrow(), self._digits()))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return html_table(
            risk_caption(self._caption(), self.privacy), self._arrow(), self._digits()
        )


def html_table(caption: str, frame: pa.Table, digits: dict[str, int]) -> str:
    """An HTML table of ``frame``'s rows (numbers rounded to ``digits``) under ``caption``."""
    head = "".join(f"<th>{escape(name)}</th>" for name in frame.column_names)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>"
        for row in _rounded_rows(frame, digits)
    )
    return (
        f"<table><caption>{escape(caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
