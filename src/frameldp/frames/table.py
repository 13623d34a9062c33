"""FrequencyTable: a debiased frequency table with its privacy guarantee and mechanism.

Metadata lives on this result object, not on ``DataFrame.attrs`` (pandas drops attrs in many
operations): ``table.frame`` is a plain native frame, ``table.privacy`` the guarantee,
``table.mechanism`` the mechanism that produced the reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from frameldp.accounting import PrivacyGuarantee
from frameldp.core.consistency import ConsistencyMethod, consistent_counts
from frameldp.core.estimation import BloomDecoding, FrequencyEstimate
from frameldp.core.mechanisms import Decoder, Mechanism, Statistic
from frameldp.errors import ParameterError

__all__ = ["TABLE_COLUMNS", "FrequencyTable"]

TABLE_COLUMNS = ("category", "count", "frequency", "std_error", "ci_low", "ci_high")
"""Columns of ``FrequencyTable.frame``. ``count``, ``std_error`` and the interval are in counts
(reports); ``frequency`` is ``count / n``. Decoded Bloom RAPPOR tables add ``p_value``."""

Backend = Literal["pandas", "polars"]


@dataclass(frozen=True, repr=False)
class FrequencyTable:
    """Debiased frequency estimates of one privatized column.

    Attributes
    ----------
    frame
        Native frame (pandas or polars, as the reports were) with columns
        ``category, count, frequency, std_error, ci_low, ci_high``: the unbiased count
        estimate, its share of ``n``, its standard error and a normal confidence interval at
        ``level``. Estimates are not clipped, so small counts can be negative.
    privacy
        The guarantee each person's report carried; for shuffled reports and Balcer–Cheu
        messages, the shuffle-model (central) guarantee of the collection.
    mechanism
        The mechanism that produced the reports.
    n
        Number of reports.
    column
        Name of the report column.
    level
        Confidence level of ``ci_low`` / ``ci_high``.
    estimate
        The underlying arrays (``frameldp.core.FrequencyEstimate``).
    decoding
        For Bloom RAPPOR, the :class:`~frameldp.core.estimation.BloomDecoding`: the table lists
        the detected candidates only (with a ``p_value`` column), and
        ``decoding.unexplained`` is the share of reports no detected string explains.
    consistency
        ``None`` for the unbiased table; the method of :meth:`consistent` for a consistent one.
    """

    frame: Any
    privacy: PrivacyGuarantee
    mechanism: Mechanism | Any
    n: int
    column: str
    level: float
    estimate: FrequencyEstimate
    decoding: BloomDecoding | None = None
    consistency: str | None = None

    @classmethod
    def build(
        cls,
        estimate: FrequencyEstimate,
        mechanism: Mechanism,
        *,
        column: str,
        level: float,
        backend: Backend,
        privacy: PrivacyGuarantee | None = None,
    ) -> FrequencyTable:
        """Assemble the table from core estimates, in the caller's frame library.

        ``privacy`` defaults to the mechanism's (the amplified guarantee of shuffled reports
        is passed explicitly).
        """
        data = _columns(estimate, mechanism.categories, level)
        frame = _to_polars(data) if backend == "polars" else _to_pandas(data)
        guarantee = mechanism.privacy if privacy is None else privacy
        return cls(frame, guarantee, mechanism, estimate.n, column, level, estimate)

    @classmethod
    def decoded(
        cls,
        mechanism: Decoder,
        statistic: Statistic,
        candidates: Sequence[object],
        *,
        memo: str | None,
        significance: float = 0.05,
        column: str,
        level: float,
        backend: Backend,
        seeded: bool = False,
    ) -> FrequencyTable:
        """The table of the candidates that decoding the (summed) ``statistic`` detects, with
        the guarantee of the (``memo``-ized) reports (marked insecure when they were drawn from
        a seed)."""
        decoding = mechanism.decode_statistic(statistic, candidates, significance=significance)
        data = _columns(decoding.estimate, decoding.labels, level, decoding.p_values)
        frame = _to_polars(data) if backend == "polars" else _to_pandas(data)
        privacy = mechanism.guarantee(memo)
        if seeded:
            privacy = privacy.insecure()
        return cls(
            frame, privacy, mechanism, decoding.n, column, level, decoding.estimate, decoding
        )

    def consistent(self, method: ConsistencyMethod = "norm_sub") -> FrequencyTable:
        """A new table whose counts are non-negative and sum to ``n``; this one is unchanged.

        ``method`` is ``"norm_sub"`` (Wang et al., NDSS 2020), ``"simplex"`` (the projection
        weighted by the variances) or ``"ibu"`` (iterative Bayesian update, for frequency
        oracles); :mod:`frameldp.core.consistency` says what each costs. The consistent table
        has no standard errors or intervals (NaN): they are not those of the unbiased one. A
        decoded Bloom RAPPOR table lists only the strings found, so its counts are made
        non-negative and at most ``n`` in total; a table of sets of at most ``m`` values, at
        most ``m n``.
        """
        if self.consistency is not None:
            raise ParameterError(
                f"this table is already consistent ({self.consistency!r}); call consistent() on "
                "the unbiased table"
            )
        counts = consistent_counts(
            self.estimate.counts,
            self.n,
            method,
            variances=self.estimate.variances,
            support=self.estimate.support,
            at_most=self._most_counted(),
        )
        nothing = np.full(counts.shape, np.nan)
        estimate = replace(self.estimate, counts=counts, variances=nothing)
        table = replace(self, estimate=estimate, consistency=method)
        backend: Backend = (
            "polars" if type(self.frame).__module__.startswith("polars") else "pandas"
        )
        data = table._data()
        frame = _to_polars(data) if backend == "polars" else _to_pandas(data)
        return replace(table, frame=frame)

    def _most_counted(self) -> float | None:
        """The largest total the counts may have when it is not exactly ``n``: ``n`` for a
        decoded open domain (strings not found), ``m n`` for sets of at most ``m`` values."""
        if self.decoding is not None:
            return float(self.n)
        if self.estimate.items_per_report > 1:
            return float(self.estimate.items_per_report * self.n)
        return None

    def _data(self) -> dict[str, Any]:
        if self.decoding is not None:
            return _columns(self.estimate, self.decoding.labels, self.level, self.decoding.p_values)
        return _columns(self.estimate, self.mechanism.categories, self.level)

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame."""
        return _to_pandas(self._data())

    def to_polars(self) -> Any:
        """The table as a polars DataFrame."""
        return _to_polars(self._data())

    def __repr__(self) -> str:
        consistency = "" if self.consistency is None else f", consistency={self.consistency!r}"
        return (
            f"FrequencyTable(column={self.column!r}, n={self.n}, level={self.level}, "
            f"privacy={self.privacy}{consistency})\n{self.frame}"
        )


def _columns(
    estimate: FrequencyEstimate,
    labels: list[Any],
    level: float,
    p_values: Any = None,
) -> dict[str, Any]:
    low, high = estimate.interval(level)
    data = {
        "category": labels,
        "count": estimate.counts,
        "frequency": estimate.frequencies,
        "std_error": estimate.std_errors,
        "ci_low": low,
        "ci_high": high,
    }
    if p_values is not None:
        data["p_value"] = p_values
    return data


def _to_pandas(data: dict[str, Any]) -> Any:
    import pandas as pd

    categories = data["category"]
    labels = pd.Series(categories, dtype=object if _mixed(categories) else None)
    return pd.DataFrame({"category": labels, **{k: v for k, v in data.items() if k != "category"}})


def _to_polars(data: dict[str, Any]) -> Any:
    import polars as pl

    categories = data["category"]
    labels = pl.Series("category", categories, dtype=pl.Object if _mixed(categories) else None)
    return pl.DataFrame(
        [labels, *(pl.Series(k, np.asarray(v)) for k, v in data.items() if k != "category")]
    )


def _mixed(categories: list[Any]) -> bool:
    """True when labels mix types (e.g. integer categories plus the ``OTHER`` string)."""
    return len({type(c) for c in categories if c is not None}) > 1
