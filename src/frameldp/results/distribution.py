"""DistributionTable: the estimated distribution of a numeric report column, with its guarantee.

Square Wave reports (:class:`~frameldp.core.mechanisms.square_wave.SquareWave`) give a
histogram over equal buckets of the column's interval, estimated by EMS
(:class:`~frameldp.core.distribution.Distribution`): the table shows each bucket's share, the
CDF at its upper end and their standard errors; :meth:`DistributionTable.quantile`,
:meth:`~DistributionTable.mean` and :meth:`~DistributionTable.range_count` answer from it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from frameldp.accounting import PrivacyGuarantee
from frameldp.core.distribution import Distribution, check_share
from frameldp.core.numeric_estimates import Mean
from frameldp.errors import ParameterError, shown
from frameldp.results.keys import GroupKey, canonical_key
from frameldp.results.mean import MeanEstimate, html_table
from frameldp.results.native import (
    Backend,
    NativeFrames,
    label_array,
    native_frame,
    risk_caption,
)
from frameldp.results.table import _text_rows

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DISTRIBUTION_COLUMNS", "DistributionTable", "RangeCount"]

DISTRIBUTION_COLUMNS = (
    "bucket_low",
    "bucket_high",
    "count",
    "frequency",
    "std_error",
    "cdf",
    "cdf_std_error",
)
"""Columns of ``DistributionTable.frame`` (after the ``by`` columns of a grouped table):
``frequency`` is the bucket's share of the values and ``std_error`` its standard error; ``cdf``
is the share at most ``bucket_high``; ``count`` is ``n`` times the frequency."""

_SHOWN_ROWS = 40
_TEXT_WIDTH = 80


@dataclass(frozen=True)
class RangeCount:
    """How many values lie in ``[low, high]``: an estimate with its standard error."""

    low: float
    high: float
    count: float
    std_error: float
    share: float
    n: int
    privacy: PrivacyGuarantee


@dataclass(frozen=True, repr=False)
class DistributionTable(NativeFrames):
    """The estimated distribution of one numeric report column (of all its reports, and of
    each public group): see the module docstring.

    Attributes
    ----------
    distribution
        The estimate from all reports (:class:`~frameldp.core.distribution.Distribution`).
    frame
        A native frame with columns :data:`DISTRIBUTION_COLUMNS`, one row per bucket (per
        group and bucket, after the ``by`` columns, when grouped).
    privacy, mechanism
        What one person loses through these reports, and the mechanism that drew them.
    """

    column: str
    distribution: Distribution
    mechanism: Any
    privacy: PrivacyGuarantee
    level: float = 0.95
    backend: Backend = "pandas"
    by: tuple[str, ...] = ()
    groups: tuple[tuple[GroupKey, Distribution], ...] = ()
    group_types: tuple[Any, ...] = ()

    @property
    def n(self) -> int:
        """The number of reports."""
        return self.distribution.n

    def _ungrouped(self, what: str) -> None:
        """A grouped table answers per group: ``table.group(key).quantile(q)``."""
        if self.by:
            raise ParameterError(
                f"{what} of a table by {', '.join(self.by)}: take one group's table first, "
                "table.group(key)"
            )

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the column (an ungrouped table, or one group's)."""
        self._ungrouped("quantile")
        return self.distribution.quantile(q)

    def quantiles(self, qs: Any) -> Any:
        """Quantiles with standard errors, as a native frame (``q, value, std_error``; an
        ungrouped table, or one group's)."""
        self._ungrouped("quantiles")
        if isinstance(qs, str | bytes) or not hasattr(qs, "__iter__"):
            raise ParameterError(f"quantiles: give a list of shares in [0, 1], got {shown(qs)}")
        shares = [check_share("quantiles", q) for q in qs]
        table = pa.table(
            {
                "q": pa.array(shares, type=pa.float64()),
                "value": pa.array([self.distribution.quantile(q) for q in shares]),
                "std_error": pa.array(
                    [self.distribution.quantile_std_error(q) for q in shares], type=pa.float64()
                ),
            }
        )
        return native_frame(table, self.backend)

    def mean(self) -> MeanEstimate:
        """The column's mean from the distribution (and each group's), with bootstrap standard
        errors, as a :class:`~frameldp.results.mean.MeanEstimate`."""
        return MeanEstimate(
            self.column,
            _mean_of(self.distribution),
            self.mechanism,
            self.privacy,
            self.level,
            self.backend,
            self.by,
            tuple((key, _mean_of(found)) for key, found in self.groups),
            self.group_types,
        )

    def range_count(self, low: float, high: float) -> RangeCount:
        """How many values lie in ``[low, high]``, with its standard error (an ungrouped table,
        or one group's)."""
        self._ungrouped("range_count")
        share = self.distribution.range_share(low, high)
        error = self.distribution.range_share_std_error(low, high)
        n = self.n
        return RangeCount(low, high, share * n, error * n, share, n, self.privacy)

    def group(self, *key: Any) -> DistributionTable:
        """The table of one group (one key value per ``by`` column)."""
        if not self.by:
            raise ParameterError("group: this table has no groups")
        wanted = canonical_key(tuple(key))
        for found, distribution in self.groups:
            if canonical_key(found) == wanted:
                return DistributionTable(
                    self.column,
                    distribution,
                    self.mechanism,
                    self.privacy,
                    self.level,
                    self.backend,
                )
        raise ParameterError(f"group: no group {shown(tuple(key))} in by={list(self.by)}")

    def _blocks(self) -> list[tuple[GroupKey, Distribution]]:
        return list(self.groups) if self.by else [((), self.distribution)]

    def _arrow(self) -> pa.Table:
        parts: dict[str, list[Any]] = {name: [] for name in (*self.by, *DISTRIBUTION_COLUMNS)}
        for key, found in self._blocks():
            size = found.frequencies.size
            for index, name in enumerate(self.by):
                parts[name].extend([key[index]] * size)
            parts["bucket_low"].extend(found.edges[:-1].tolist())
            parts["bucket_high"].extend(found.edges[1:].tolist())
            parts["count"].extend(found.counts.tolist())
            parts["frequency"].extend(found.frequencies.tolist())
            parts["std_error"].extend(found.frequency_std_errors.tolist())
            parts["cdf"].extend(np.cumsum(found.frequencies).tolist())
            parts["cdf_std_error"].extend(found.cdf_std_errors[1:].tolist())
        columns: dict[str, pa.Array] = {}
        for index, name in enumerate(self.by):
            kind = self.group_types[index] if index < len(self.group_types) else None
            columns[name] = label_array(parts[name], kind)
        for name in DISTRIBUTION_COLUMNS:
            columns[name] = pa.array(parts[name], type=pa.float64())
        return pa.table(columns)

    # -- display -----------------------------------------------------------------------------

    def plot(self, **options: Any) -> Figure:
        """The histogram with its intervals (matplotlib)."""
        from frameldp.results.figure import distribution_figure  # matplotlib: on first use

        return distribution_figure(self, **options)

    def _caption(self) -> str:
        grouped = f" by {', '.join(self.by)}, {len(self.groups)} groups" if self.by else ""
        title = getattr(self.mechanism, "title", "")
        return (
            f"distribution of {self.column}{grouped}: n = {self.n:,} reports of {title}, "
            f"{self.distribution.frequencies.size} buckets. Privacy: {self.privacy}"
        )

    def _digits(self) -> dict[str, int]:
        return {"bucket_low": 4, "bucket_high": 4, "count": 1} | {
            name: 4 for name in ("frequency", "std_error", "cdf", "cdf_std_error")
        }

    def __repr__(self) -> str:
        caption = f"DistributionTable: {self._caption()}"
        lines = textwrap.wrap(caption, _TEXT_WIDTH, subsequent_indent="  ")
        frame = self._arrow()
        lines.extend(_text_rows(frame.slice(0, _SHOWN_ROWS), self._digits()))
        if frame.num_rows > _SHOWN_ROWS:
            lines.append(f"... {frame.num_rows - _SHOWN_ROWS:,} more rows")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        caption = risk_caption(self._caption(), self.privacy)
        return html_table(caption, self._arrow().slice(0, _SHOWN_ROWS), self._digits())


def _mean_of(distribution: Distribution) -> Mean:
    error = distribution.mean_std_error()
    return Mean(distribution.mean(), error, error, distribution.n, distribution.lo, distribution.hi)
