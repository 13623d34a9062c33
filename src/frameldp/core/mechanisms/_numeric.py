"""What the numeric mechanisms share: bounds, the report column, and for a mean its estimator.

A numeric mechanism privatizes a number ``x`` of a public interval ``[lo, hi]``: it maps it to
``t = 2 (x - lo) / (hi - lo) - 1`` in ``[-1, 1]``, draws a report ``y`` in normalized units
(:meth:`NumericMechanism._randomize`), and writes ``centre + half * y`` (``centre`` and
``half`` of the interval) as a float64 report column, in the column's own units. A mean
mechanism (:class:`MeanMechanism`) sums ``(y, y^2)`` and debiases the mean
(:func:`~frameldp.core.numeric_estimates.mean_of`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import PrivacyEvent, PrivacyGuarantee
from frameldp.arguments import check_epsilon
from frameldp.core.mechanisms._longitudinal import permanent_rows, value_digests
from frameldp.core.mechanisms._memo import row_digests
from frameldp.core.mechanisms._spec import fingerprint
from frameldp.core.mechanisms.protocol import Capability, Statistic
from frameldp.core.numeric import Bounds, unit_values
from frameldp.core.numeric_estimates import Mean, mean_of, normalized_sums
from frameldp.core.randomness import RandomSource, Rows
from frameldp.errors import DomainError, ParameterError, shown

__all__ = ["CHUNK_ROWS", "MeanMechanism", "NumericMechanism", "value_bytes"]

CHUNK_ROWS = 1 << 17
"""Rows randomized at a time: their arrays stay in the CPU's caches (a report depends on its
row's key, position and value only, not on the chunks)."""


def value_bytes(unit: NDArray[np.float64]) -> Callable[[], NDArray[np.uint8]]:
    """The bytes that bind a row's noise to its value under a caller's key (-0.0 is 0.0)."""
    return lambda: (unit + 0.0).astype(">f8").view(np.uint8).reshape(-1, 8)


@dataclass(frozen=True)
class NumericMechanism:
    """The base of a numeric mechanism (see the module docstring); a subclass defines
    :meth:`_randomize`, :attr:`output_bound`, ``privacy``, ``statistic`` and ``finish``."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.CALLER_KEY, Capability.NUMERIC}
    )
    title: ClassVar[str]
    name: ClassVar[str]
    extra_fields: ClassVar[tuple[str, ...]] = ()
    """The spec's parameters beyond epsilon, bounds and clip."""

    epsilon: float
    bounds: Bounds = field(kw_only=True)
    clip: bool = field(default=False, kw_only=True)

    def _check_numeric(self) -> float:
        """Check and set ``epsilon``, ``bounds`` and ``clip`` (every numeric mechanism's
        ``__post_init__`` starts here); the checked epsilon."""
        epsilon = check_epsilon(self.title, "epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "bounds", Bounds.coerce(self.title, self.bounds))
        if not isinstance(self.clip, bool):
            raise ParameterError(
                f"{self.title}: clip must be True or False, got {shown(self.clip)}",
                parameter="clip",
            )
        return epsilon

    # ------------------------------------------------------------------ to define

    def _randomize(self, t: NDArray[np.float64], rows: Rows) -> NDArray[np.float64]:
        """Reports ``y`` (normalized units) of inputs ``t`` in ``[-1, 1]``."""
        raise NotImplementedError  # pragma: no cover - every mechanism defines it

    @property
    def output_bound(self) -> float:
        """The largest ``|y|`` a report can take (normalized units)."""
        raise NotImplementedError  # pragma: no cover

    def _check_memoizing(self) -> None:
        """Refuse users unless this instance memoizes (a mechanism that can says when)."""
        raise ParameterError(f"{self.title} does not memoize reports per user")

    def _randomize_memoized(
        self, t: NDArray[np.float64], rows: Rows, held: Rows
    ) -> NDArray[np.float64]:
        """Reports whose permanent part is drawn from ``held`` (memoized per user and value)
        and the rest from ``rows``; only a mechanism that memoizes defines it."""
        raise NotImplementedError  # pragma: no cover

    # ------------------------------------------------------------------ shared

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters."""
        spec: dict[str, Any] = {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "bounds": self.bounds.to_json(),
        }
        if self.clip:
            spec["clip"] = True
        spec.update(self._extra_spec())
        return spec

    def _extra_spec(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.extra_fields}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Any:
        """Rebuild from :meth:`to_spec` (other keys of a release's spec are not read)."""
        extra = {key: spec[key] for key in cls.extra_fields if key in spec}
        return cls(spec["epsilon"], bounds=spec["bounds"], clip=spec.get("clip", False), **extra)

    def _guarantee(self, event: PrivacyEvent, **parameters: Any) -> PrivacyGuarantee:
        """One report's guarantee: ``event`` once, described by the bounds and
        ``parameters``."""
        described = {"bounds": self.bounds.to_json(), **parameters}
        return PrivacyGuarantee(event.pure_epsilon, self.name, described, events=((event, 1),))

    @property
    def report_bounds(self) -> tuple[float, float]:
        """The interval every report lies in, in the column's units (with a relative margin of
        ``1e-9`` for the rounding of the written floats)."""
        half, centre = self.bounds.half, self.bounds.centre
        reach = half * self.output_bound * (1 + 1e-9) + 1e-9 * max(1.0, abs(centre))
        return centre - reach, centre + reach

    @property
    def _stream_suffix(self) -> str:
        return fingerprint(self.to_spec())

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """One float64 column of reports, in the column's units."""
        return {column: pa.float64()}

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
        """Reports of one batch of numbers (see the module docstring); a report of row ``i``
        is a function of (key, column, spec, global row ``row_start + i`` and, under a
        caller's key or a seed, the row's value) only."""
        if users is not None:
            self._check_memoizing()
        unit = unit_values(
            values,
            self.bounds,
            clip=self.clip,
            column=column,
            row_start=row_start,
            owner=self.title,
        )
        half, centre = self.bounds.half, self.bounds.centre
        # one claim of the batch's rows (under a fresh key), then chunks that stay in cache
        label = (column, self._stream_suffix)
        encoded = value_bytes(unit)
        rows = source.rows(label, row_start, unit.size, encoded)
        held = None
        if users is not None:  # memoized per (user, value): checked above
            digests = row_digests(users, column, user_column, row_start, memo or source)
            held = permanent_rows(
                rows,
                source=source,
                memo=memo,
                label=label,
                users=digests,
                values=lambda: value_digests(encoded()),
            )
        reports = np.empty(unit.size, dtype=np.float64)
        for start in range(0, unit.size, CHUNK_ROWS):
            stop = min(unit.size, start + CHUNK_ROWS)
            out = reports[start:stop]
            t = 2.0 * unit[start:stop] - 1.0
            part = rows.part(start, stop)
            if held is None:
                y = self._randomize(t, part)
            else:
                y = self._randomize_memoized(t, part, held.part(start, stop))
            np.multiply(y, half, out=out)
            out += centre
        return {column: pa.array(reports, type=pa.float64())}

    def _normalized(self, reports: pa.Array | pa.ChunkedArray, column: str) -> NDArray[np.float64]:
        """Reports back in normalized units; a null, a non-number or a value no report can
        take is refused (they are not this mechanism's reports)."""
        array = reports.combine_chunks() if isinstance(reports, pa.ChunkedArray) else reports
        if not pa.types.is_floating(array.type) and not pa.types.is_integer(array.type):
            raise DomainError(
                f"column {shown(column)}: {self.title} reports are numbers, got type "
                f"{shown(str(array.type))}",
                column=column,
            )
        if array.null_count:
            raise DomainError(
                f"column {shown(column)}: {array.null_count} null reports; a report column of "
                f"{self.title} has none (drop the rows, e.g. those of an outer join)",
                column=column,
            )
        values = np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.float64)
        half, centre = self.bounds.half, self.bounds.centre
        y = (values - centre) / half
        low, high = self.report_bounds
        bad = ~((values >= low) & (values <= high))
        bad[~bad] = ~self._on_grid(y[~bad])
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise DomainError(
                f"column {shown(column)}: {shown(float(values[first]))} at row {first} is not a "
                f"report of {self.title} on {self.bounds.to_json()} (reports lie within "
                f"{self.output_bound:.6g} half-widths of the centre, on the mechanism's output "
                "grid: a value written into a report column is not a report)",
                column=column,
            )
        return y

    def _on_grid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether each value (normalized units, within the output range) is one a report can
        take; a subclass whose outputs are a finite set or cell centres says which."""
        return np.ones(y.size, dtype=bool)


@dataclass(frozen=True)
class MeanMechanism(NumericMechanism):
    """The base of a mean mechanism: a numeric mechanism whose reports debias to an unbiased
    mean (:data:`~frameldp.core.mechanisms.protocol.Capability.MEAN`); a subclass also defines
    :meth:`variance`."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.CALLER_KEY, Capability.NUMERIC, Capability.MEAN}
    )

    def variance(self, t: float) -> float:
        """The exact variance of one debiased report of input ``t`` (normalized units)."""
        raise NotImplementedError  # pragma: no cover

    @property
    def debias_shift(self) -> float:
        """``shift`` of the debiasing ``(y - shift) / scale`` (0 for unbiased reports)."""
        return 0.0

    @property
    def debias_scale(self) -> float:
        """``scale`` of the debiasing (1 for unbiased reports)."""
        return 1.0

    @cached_property
    def worst_variance(self) -> float:
        """The largest :meth:`variance` over ``[-1, 1]`` (normalized units; attained at an
        end of the interval for the mechanisms whose variance is convex in ``t``, and
        checked on a grid otherwise)."""
        grid = np.linspace(-1.0, 1.0, 513)
        return max(self.variance(float(t)) for t in grid)

    def worst_std(self) -> float:
        """The largest standard deviation of one report, in the column's units."""
        return self.bounds.half * math.sqrt(self.worst_variance)

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """``(sum y, sum y^2)`` of the reports in normalized units."""
        y = self._normalized(reports[column], column)
        return Statistic((normalized_sums(y),), int(y.size))

    def finish(self, statistic: Statistic) -> Mean:
        """The debiased mean with its standard error."""
        return mean_of(
            statistic,
            shift=self.debias_shift,
            scale=self.debias_scale,
            worst_variance=self.worst_variance,
            lo=self.bounds.lo,
            hi=self.bounds.hi,
            variance=self.variance,
        )
