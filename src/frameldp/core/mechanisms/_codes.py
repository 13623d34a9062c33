"""The protocol methods of mechanisms whose report is one code of ``[0, report_range)``
(Hadamard, block Hadamard and projective geometry response): one ``uint32`` column, a
histogram of the codes as the statistic, by group in one pass."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import ClassVar

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.columns import integer_reports, single_codes
from frameldp.core.encoding import Domain
from frameldp.core.mechanisms.protocol import CodeReportsByGroup, Statistic
from frameldp.core.randomness import RandomSource

__all__ = ["CodeReports", "codes_array"]


class CodeReports(CodeReportsByGroup):
    """One column of codes in ``[0, report_range)`` per report (unsigned 32-bit integers)."""

    title: ClassVar[str]
    domain: Domain

    @property
    def report_range(self) -> int:  # pragma: no cover - every mechanism defines it
        raise NotImplementedError

    def randomize(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
    ) -> NDArray[np.int64]:  # pragma: no cover - every mechanism defines it
        raise NotImplementedError

    @property
    def categories(self) -> list[Hashable]:
        """Bucket labels."""
        return list(self.domain.labels)

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """One column of codes (unsigned 32-bit integers)."""
        return {column: pa.uint32()}

    def privatize_column(
        self,
        values: pa.Array,
        *,
        column: str,
        source: RandomSource,
        row_start: int = 0,
        users: pa.Array | None = None,
        user_column: str | None = None,
        memo: RandomSource | None = None,
    ) -> dict[str, pa.Array]:
        """Reports of one value per row (no memoization)."""
        codes = single_codes(values, self.domain, column, row_start, self.title)
        reports = self.randomize(codes, source=source, label=column, row_start=row_start)
        return {column: codes_array(reports)}

    def report_codes(
        self, reports: Mapping[str, pa.Array], column: str
    ) -> tuple[NDArray[np.int64], int]:
        """The reported codes of ``[0, report_range)``, checked."""
        values = integer_reports(reports[column], self.report_range, column, self.title)
        return values, self.report_range

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Reports per code of ``[0, report_range)``."""
        values, size = self.report_codes(reports, column)
        return Statistic((np.bincount(values, minlength=size).astype(np.int64),), values.size)


def codes_array(reports: NDArray[np.int64]) -> pa.Array:
    """Reports as an Arrow column of unsigned 32-bit integers."""
    return pa.array(reports.astype(np.uint32), type=pa.uint32())
