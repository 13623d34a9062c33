"""Comparison: the bucket-by-bucket difference of two frequency tables, with tests.

The formulas are :mod:`frameldp.core.comparison`'s; this module puts them in a native frame
beside the labels, with the guarantee of the releases compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from frameldp.accounting import PrivacyGuarantee, compose
from frameldp.core.comparison import Difference
from frameldp.errors import ParameterError, shown
from frameldp.results.native import label_array, native_frame, risk_caption

if TYPE_CHECKING:
    from frameldp.results.table import FrequencyTable

__all__ = ["COMPARISON_COLUMNS", "Comparison"]

COMPARISON_COLUMNS = (
    "first",
    "second",
    "difference",
    "std_error",
    "ci_low",
    "ci_high",
    "z",
    "p_value",
    "p_holm",
)
"""The columns of ``Comparison.frame`` after the label columns: both estimates (shares or
counts), their difference, its standard error and interval at ``level``, the Wald statistic,
its two-sided p-value and the Holm-adjusted p-value over the buckets."""


@dataclass(frozen=True, repr=False)
class Comparison:
    """``first - second``, bucket by bucket (see :mod:`frameldp.core.comparison`).

    Attributes
    ----------
    frame
        Native frame: the label columns, then :data:`COMPARISON_COLUMNS`.
    difference
        The arrays (:class:`frameldp.core.comparison.Difference`).
    privacy
        The guarantee of everything compared: the table's for two groups of one table (each
        person is in one group), the composition of both tables' otherwise.
    first, second
        What was compared (group keys, or the tables' columns).
    level
        Confidence level of the intervals.
    """

    frame: Any
    difference: Difference
    privacy: PrivacyGuarantee
    first: Any
    second: Any
    level: float

    @classmethod
    def build(
        cls,
        first: FrequencyTable,
        second: FrequencyTable,
        difference: Difference,
        *,
        privacy: PrivacyGuarantee | None = None,
        names: tuple[Any, Any] | None = None,
    ) -> Comparison:
        """The comparison of two flat tables of the same buckets."""
        low, high = difference.interval(first.level)
        columns = {str(name): values for name, values in first._label_values().items()}
        clash = sorted(set(columns) & set(COMPARISON_COLUMNS))
        if clash:
            raise ParameterError(
                f"compare: the label column {shown(clash[0])} clashes with a comparison column; "
                "rename the report column"
            )
        arrays = {
            "first": difference.first,
            "second": difference.second,
            "difference": difference.difference,
            "std_error": difference.std_error,
            "ci_low": low,
            "ci_high": high,
            "z": difference.z,
            "p_value": difference.p_value,
            "p_holm": difference.p_holm,
        }
        table = pa.table(
            {
                **{name: label_array(values) for name, values in columns.items()},
                **{name: pa.array(np.asarray(v, dtype=np.float64)) for name, v in arrays.items()},
            }
        )
        guarantee = privacy if privacy is not None else compose([first.privacy, second.privacy])
        frame = native_frame(table, first._backend)
        described = names if names is not None else (first.column, second.column)
        return cls(frame, difference, guarantee, described[0], described[1], first.level)

    def significant(self, level: float = 0.95, *, family: bool = True) -> Any:
        """Rows whose difference is significant at ``level``: Holm-adjusted p-value below
        ``1 - level`` (``family=False``: each bucket's own p-value), largest ``|z|`` first."""
        if not (isinstance(level, float | int) and 0 < level < 1):
            raise ParameterError(f"level must be in (0, 1), got {shown(level)}")
        p = self.difference.p_holm if family else self.difference.p_value
        chosen = np.flatnonzero(p < 1 - level)
        chosen = chosen[np.argsort(-np.abs(self.difference.z[chosen]), kind="stable")]
        if type(self.frame).__module__.startswith("polars"):
            return self.frame[chosen.tolist()]
        return self.frame.iloc[chosen].reset_index(drop=True)

    def __repr__(self) -> str:
        return (
            f"Comparison ({self.first!r} - {self.second!r}, {self.difference.scale}, "
            f"{self.level:.0%} intervals; privacy: {self.privacy})\n{self.frame}"
        )

    def _repr_html_(self) -> str:
        import html

        inner = (
            self.frame._repr_html_()
            if hasattr(self.frame, "_repr_html_")
            else html.escape(str(self.frame))
        )
        caption = html.escape(
            risk_caption(
                f"{self.first!r} - {self.second!r} ({self.difference.scale}); "
                f"privacy: {self.privacy}",
                self.privacy,
            )
        )
        return f"<div><p><b>Comparison</b>: {caption}</p>{inner}</div>"
