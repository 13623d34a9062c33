"""FrequencyTable: a debiased frequency table with its privacy guarantee and mechanism.

Metadata lives on this result object, not on ``DataFrame.attrs`` (pandas drops attrs in many
operations): ``table.frame`` is a plain native frame, ``table.privacy`` the guarantee,
``table.mechanism`` the mechanism that produced the reports. A table may be flat, by public
groups (``debias(..., by=...)``: the group columns come first) or joint over two privatized
columns (``debias(["a", "b"])``: one label column per privatized column).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import PrivacyGuarantee
from frameldp.core.comparison import Scale, difference_of
from frameldp.core.consistency import ConsistencyMethod, consistent_counts
from frameldp.core.discovery import Discovery
from frameldp.core.estimation import (
    BloomDecoding,
    FrequencyEstimate,
    GroupEstimates,
    normal_quantile,
)
from frameldp.core.mechanisms import Decoder, Discoverer, FrequencyEstimator, Statistic
from frameldp.errors import ParameterError, shown
from frameldp.results.comparison import Comparison
from frameldp.results.keys import canonical_key
from frameldp.results.native import (
    Backend,
    escape,
    label_array,
    mixed,
    native_frame,
    risk_caption,
    with_objects,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["STAT_COLUMNS", "TABLE_COLUMNS", "FrequencyTable", "TableGroup", "TableGroups"]

TABLE_COLUMNS = ("category", "count", "frequency", "std_error", "ci_low", "ci_high")
"""Columns of a flat ``FrequencyTable.frame``. ``count``, ``std_error`` and the interval are in
counts (reports); ``frequency`` is ``count / n`` (``n`` of the group in a grouped table).
Decoded Bloom RAPPOR tables add ``p_value``, discovered strings ``truncated`` and ``p_value``;
grouped tables put the group columns first; joint tables have one label column per privatized
column instead of ``category``."""

STAT_COLUMNS = TABLE_COLUMNS[1:]
"""The estimate columns every table has, after its label columns."""

_SHOWN_ROWS = 40  # rows an HTML or text rendering shows before "... more rows"
_TEXT_WIDTH = 80  # a text rendering fits a terminal of this width: labels give way, numbers not


@dataclass(frozen=True)
class TableGroup:
    """One group of a grouped table: its key (one value per ``by`` column, ``None`` for a null
    key) and the estimate from its ``estimate.n`` reports."""

    key: tuple[Any, ...]
    estimate: FrequencyEstimate


class TableGroups(Sequence[TableGroup]):
    """The groups of a grouped table, a read-only sequence of :class:`TableGroup` that reads
    like a tuple: ``keys[g]`` and ``estimates[g]`` (a
    :class:`~frameldp.core.estimation.GroupEstimates` keeps 10^5 groups' estimates as a few
    arrays, which the table's frame reads whole). A group is built the first time it is asked
    for, and the same object is returned after that."""

    __slots__ = ("_built", "_index", "estimates", "keys")

    def __init__(
        self, keys: Sequence[tuple[Any, ...]], estimates: Sequence[FrequencyEstimate]
    ) -> None:
        self.keys = tuple(keys)
        self.estimates = estimates
        self._built: dict[int, TableGroup] = {}
        self._index: dict[tuple[Any, ...], int] | None = None

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> TableGroup: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[TableGroup, ...]: ...

    def __getitem__(self, index: int | slice) -> TableGroup | tuple[TableGroup, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        position = range(len(self))[index]  # IndexError out of range; negative from the end
        group = self._built.get(position)
        if group is None:
            group = TableGroup(self.keys[position], self.estimates[position])
            self._built[position] = group
        return group

    def find(self, key: tuple[Any, ...]) -> TableGroup | None:
        """The group of ``key`` (canonical), found by a dictionary built on first use."""
        if self._index is None:
            self._index = {found: position for position, found in enumerate(self.keys)}
        position = self._index.get(key)
        return None if position is None else self[position]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TableGroups | tuple | list):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to tuples, which hash by value

    def __add__(self, other: Sequence[TableGroup]) -> tuple[TableGroup, ...]:
        return (*self, *other)

    def __radd__(self, other: Sequence[TableGroup]) -> tuple[TableGroup, ...]:
        return (*other, *self)

    def __repr__(self) -> str:
        shown_keys = ", ".join(repr(key) for key in self.keys[:3])
        more = ", ..." if len(self) > 3 else ""
        return f"TableGroups({len(self)} groups: {shown_keys}{more})"


@dataclass(frozen=True, repr=False)
class FrequencyTable:
    """Debiased frequency estimates of one privatized column, of one column by public groups,
    or of two privatized columns jointly.

    Attributes
    ----------
    frame
        Native frame (pandas or polars, as the reports were) with columns
        ``category, count, frequency, std_error, ci_low, ci_high``: the unbiased count
        estimate, its share of ``n``, its standard error and a normal confidence interval at
        ``level``. Estimates are not clipped, so small counts can be negative. A grouped table
        starts with its ``by`` columns; a joint table has a label column per privatized column
        (named after it) instead of ``category``.
    privacy
        The guarantee each person's report carried (both reports, composed, for a joint
        table); for shuffled reports and Balcer–Cheu messages, the shuffle-model (central)
        guarantee of the collection.
    mechanism
        The mechanism that produced the reports (a pair for a joint table).
    n
        Number of reports (all groups together).
    column
        Name of the report column (a pair for a joint table).
    level
        Confidence level of ``ci_low`` / ``ci_high``.
    estimate
        The underlying arrays (``frameldp.core.FrequencyEstimate``) of all reports together
        (for a grouped table, the table that ignores the groups).
    decoding
        For Bloom RAPPOR, the :class:`~frameldp.core.estimation.BloomDecoding`: the table lists
        the detected candidates only (with a ``p_value`` column), and
        ``decoding.unexplained`` is the share of reports no detected string explains. For
        prefix extending, the :class:`~frameldp.core.discovery.Discovery`: the table lists
        the discovered strings (with ``truncated`` and ``p_value`` columns).
    consistency
        ``None`` for the unbiased table; the method of :meth:`consistent` for a consistent one.
    by
        The public group columns (empty for an ungrouped table).
    groups
        The estimate of every group (:class:`TableGroup`), in the frame's order: keys
        ascending, a null key last. Groups with no reports do not appear.
    """

    frame: Any
    privacy: PrivacyGuarantee
    mechanism: FrequencyEstimator | Any
    n: int
    column: str | tuple[str, str]
    level: float
    estimate: FrequencyEstimate
    decoding: BloomDecoding | Discovery | None = None
    consistency: str | None = None
    by: tuple[str, ...] = ()
    groups: Sequence[TableGroup] = ()
    group_types: tuple[Any, ...] = ()

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        estimate: FrequencyEstimate,
        mechanism: FrequencyEstimator | tuple[FrequencyEstimator, FrequencyEstimator],
        *,
        column: str | tuple[str, str],
        level: float,
        backend: Backend,
        privacy: PrivacyGuarantee,
        by: Sequence[str] = (),
        groups: Sequence[TableGroup] = (),
        group_types: Sequence[Any] = (),
    ) -> FrequencyTable:
        """Assemble the table from core estimates, in the caller's frame library.

        ``privacy`` is what one person loses (resolved by the query,
        :meth:`frameldp.frames.query.Query.finish`). A grouped table passes its ``by`` columns,
        every group's estimate and the Arrow type of each group column.
        """
        table = cls(
            None,
            privacy,
            mechanism,
            estimate.n,
            column,
            level,
            estimate,
            by=tuple(by),
            groups=groups if isinstance(groups, TableGroups) else tuple(groups),
            group_types=tuple(group_types),
        )
        return table._framed(backend)

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
        privacy = mechanism.guarantee(memo)
        if seeded:
            privacy = privacy.insecure()
        table = cls(
            None, privacy, mechanism, decoding.n, column, level, decoding.estimate, decoding
        )
        return table._framed(backend)

    @classmethod
    def discovered(
        cls,
        mechanism: Discoverer,
        discovery: Discovery,
        *,
        column: str,
        level: float,
        backend: Backend,
        seeded: bool = False,
    ) -> FrequencyTable:
        """The table of the strings a prefix-extending search discovered, with the guarantee
        of the reports (marked insecure when they were drawn from a seed)."""
        privacy = mechanism.privacy.insecure() if seeded else mechanism.privacy
        table = cls(
            None, privacy, mechanism, discovery.n, column, level, discovery.estimate, discovery
        )
        return table._framed(backend)

    def _framed(self, backend: Backend) -> FrequencyTable:
        return replace(self, frame=self._native(backend))

    def _native(self, backend: Backend, rows: Any = None) -> Any:
        """The table (its ``rows`` only, when given) as a native frame. Labels of mixed types
        (integer categories and the ``OTHER`` string) stay Python objects, as given."""
        table = self._arrow()
        if rows is not None:
            table = table.take(pa.array(rows, type=pa.int64()))
        frame = native_frame(table, backend)
        named = {str(n): n for n in (*self.by, *self.label_columns) if not isinstance(n, str)}
        if named and backend == "pandas":  # pandas keeps a caller's non-string column names
            frame = frame.rename(columns=named)
        repeats = len(self.groups) if self.by else 1
        objects = {
            name: values * repeats for name, values in self._label_values().items() if mixed(values)
        }
        for name, values in objects.items():
            chosen = values if rows is None else [values[int(i)] for i in rows]
            frame = with_objects(frame, name, chosen, backend)
        return frame

    @property
    def _backend(self) -> Backend:
        return "polars" if type(self.frame).__module__.startswith("polars") else "pandas"

    # -- what the table holds ----------------------------------------------------------------

    @property
    def joint(self) -> bool:
        """Whether this is a joint table of two privatized columns."""
        return isinstance(self.mechanism, tuple)

    @property
    def label_columns(self) -> tuple[str, ...]:
        """The frame's label columns: ``("category",)``, or the two privatized columns."""
        return tuple(self.column) if self.joint else ("category",)

    @property
    def labels(self) -> list[Any]:
        """The bucket labels, in estimate order (pairs ``(a, b)`` for a joint table)."""
        if self.decoding is not None:
            return list(self.decoding.labels)
        if isinstance(self.mechanism, tuple):
            first, second = self.mechanism
            return [(a, b) for a in first.categories for b in second.categories]
        return list(self.mechanism.categories)

    def _blocks(self) -> list[tuple[tuple[Any, ...], FrequencyEstimate]]:
        """Each block of rows of the frame (a group's, or the one of an ungrouped table):
        its key and estimate."""
        if self.by:
            return [(group.key, group.estimate) for group in self.groups]
        return [((), self.estimate)]

    def _stacked(
        self,
    ) -> tuple[Sequence[tuple[Any, ...]], NDArray[np.float64], NDArray[np.float64], Any]:
        """The frame's blocks of rows (a group's, or the one of an ungrouped table): their
        keys, every count and variance (block after block) and each block's ``n``."""
        groups = self.groups
        if self.by and isinstance(groups, TableGroups):
            stacked = groups.estimates  # (groups, k) arrays: their rows are the blocks
            if isinstance(stacked, GroupEstimates):
                counts = np.asarray(stacked.counts, dtype=np.float64).ravel()
                variances = np.asarray(stacked.variances, dtype=np.float64).ravel()
                return groups.keys, counts, variances, stacked.n
        blocks = self._blocks()
        return (
            [key for key, _ in blocks],
            _joined([e.counts for _, e in blocks]),
            _joined([e.variances for _, e in blocks]),
            [e.n for _, e in blocks],
        )

    def _arrow(self) -> pa.Table:
        """The frame's columns as one Arrow table (group keys keep their Arrow type): a block
        of rows per group, whole columns at a time."""
        keys, counts, variances, sizes = self._stacked()
        size, count = len(self.labels), len(keys)
        columns: dict[str, Any] = {}
        if self.by:
            block_rows = pa.array(np.repeat(np.arange(count, dtype=np.int64), size))
            for index, name in enumerate(self.by):
                kind = self.group_types[index] if index < len(self.group_types) else None
                values = label_array([key[index] for key in keys], kind)
                columns[str(name)] = values.take(block_rows)
        label_rows = pa.array(np.tile(np.arange(size, dtype=np.int64), count))
        for name, labels in self._label_values().items():
            columns[str(name)] = label_array(labels).take(label_rows)
        # As FrequencyEstimate.frequencies and .interval, over every block at once.
        std_errors = np.sqrt(variances)
        n = np.maximum(np.asarray(sizes, dtype=np.float64), 1.0)
        frequencies = (counts.reshape(count, size) / n[:, None]).ravel()
        half = normal_quantile(self.level) * std_errors
        columns["count"] = pa.array(counts)
        columns["frequency"] = pa.array(frequencies)
        columns["std_error"] = pa.array(std_errors)
        columns["ci_low"] = pa.array(counts - half)
        half += counts
        columns["ci_high"] = pa.array(half)
        if self.decoding is not None:
            extra = self.decoding.table_columns()
            columns.update({name: pa.array(values) for name, values in extra.items()})
        return pa.table(columns)

    def _label_values(self) -> dict[str, list[Any]]:
        """Every label column's values for one block of the labels."""
        labels = self.labels
        if self.joint:
            return {
                name: [label[index] for label in labels]
                for index, name in enumerate(self.label_columns)
            }
        return {"category": labels}

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame."""
        return self._native("pandas")

    def to_polars(self) -> Any:
        """The table as a polars DataFrame."""
        return self._native("polars")

    def group(self, *key: Any) -> FrequencyTable:
        """The flat table of one group of a grouped table (one value per ``by`` column;
        ``None`` for the null group)."""
        if not self.by:
            raise ParameterError("group() needs a table debiased with by=...")
        wanted = canonical_key(tuple(key))
        if isinstance(self.groups, TableGroups):
            found = self.groups.find(wanted)
        else:
            found = next((group for group in self.groups if group.key == wanted), None)
        if found is not None:
            flat = replace(
                self, estimate=found.estimate, n=found.estimate.n, by=(), groups=(), group_types=()
            )
            return flat._framed(self._backend)
        known = ", ".join(repr(g.key if len(g.key) > 1 else g.key[0]) for g in self.groups[:8])
        raise ParameterError(
            f"group {shown(wanted if len(wanted) != 1 else wanted[0])} is not in the table "
            f"(groups: {known}{', ...' if len(self.groups) > 8 else ''})"
        )

    # -- post-processing ---------------------------------------------------------------------

    def consistent(self, method: ConsistencyMethod = "norm_sub") -> FrequencyTable:
        """A new table whose counts are non-negative and sum to ``n`` (in every group); this
        one is unchanged.

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
        table = replace(
            self,
            estimate=self._consistent(self.estimate, method),
            groups=tuple(
                TableGroup(g.key, self._consistent(g.estimate, method)) for g in self.groups
            ),
            consistency=method,
        )
        return table._framed(self._backend)

    def _consistent(
        self, estimate: FrequencyEstimate, method: ConsistencyMethod
    ) -> FrequencyEstimate:
        counts = consistent_counts(
            estimate.counts,
            estimate.n,
            method,
            variances=estimate.variances,
            support=estimate.support,
            at_most=self._most_counted(estimate),
        )
        return replace(estimate, counts=counts, variances=np.full(counts.shape, np.nan))

    def _most_counted(self, estimate: FrequencyEstimate) -> float | None:
        """The largest total the counts may have when it is not exactly ``n``: ``n`` for a
        decoded open domain (strings not found), ``m n`` for sets of at most ``m`` values."""
        if self.decoding is not None:
            return float(estimate.n)
        if estimate.items_per_report > 1:
            return float(estimate.items_per_report * estimate.n)
        return None

    def top(self, k: int = 10) -> Any:
        """The ``k`` rows with the largest counts (in each group of a grouped table), largest
        first, as a native frame."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ParameterError(f"top: k must be an integer >= 1, got {shown(k)}")
        chosen = np.concatenate(
            [start + _by_count(estimate)[:k] for start, estimate in self._starts()]
        )
        return self._native(self._backend, chosen)

    def significant(self, level: float | None = None) -> Any:
        """The rows whose confidence interval at ``level`` (default: the table's) excludes 0,
        largest count first (in each group), as a native frame. Each row is tested on its own:
        at level 0.95, about 5% of the buckets whose true count is 0 still show up."""
        if self.consistency is not None:
            raise ParameterError(
                "significant() needs the unbiased table (a consistent table has no standard errors)"
            )
        chosen = []
        for start, estimate in self._starts():
            low, high = estimate.interval(self.level if level is None else level)
            order = _by_count(estimate)
            keep = order[(low[order] > 0) | (high[order] < 0)]
            chosen.append(start + keep)
        rows = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
        return self._native(self._backend, rows)

    def _starts(self) -> list[tuple[int, FrequencyEstimate]]:
        size = len(self.labels)
        return [(index * size, estimate) for index, (_, estimate) in enumerate(self._blocks())]

    def compare(
        self,
        other: FrequencyTable | Any,
        second: Any = None,
        *,
        on: Scale = "frequency",
    ) -> Comparison:
        """Bucket-by-bucket differences with standard errors, intervals and tests.

        ``first.compare(second_table)`` compares two tables of the same buckets (e.g. two
        nights); on a grouped table, ``table.compare(a, b)`` compares groups ``a`` and ``b``
        (a tuple for several ``by`` columns). ``on="frequency"`` (default) compares shares of
        each table's ``n``, ``on="count"`` counts
        (:class:`~frameldp.results.comparison.Comparison`).
        """
        if self.consistency is not None:
            raise ParameterError("compare needs unbiased tables (consistent ones have no errors)")
        if self.by:
            first_key = other if isinstance(other, tuple) else (other,)
            second_key = second if isinstance(second, tuple) else (second,)
            if first_key == second_key:
                raise ParameterError(f"compare: both groups are {shown(other)}")
            first, last = self.group(*first_key), self.group(*second_key)
            difference = difference_of(first.estimate, last.estimate, scale=on)
            # Each person is in one group: the table's guarantee covers both.
            return Comparison.build(
                first, last, difference, privacy=self.privacy, names=(other, second)
            )
        if second is not None:
            raise ParameterError("compare(a, b) compares two groups of a table debiased with by=")
        if not isinstance(other, FrequencyTable):
            raise ParameterError(
                f"compare: expected another FrequencyTable, got {type(other).__name__}"
            )
        if other.by:
            raise ParameterError("compare: pick one group of the grouped table with .group(...)")
        if other is self:
            raise ParameterError("compare: a table compared with itself has no difference")
        if self.consistency is not None or other.consistency is not None:
            raise ParameterError("compare needs unbiased tables (consistent ones have no errors)")
        if self.labels != other.labels:
            raise ParameterError(
                "compare: the tables have different buckets (another domain or mechanism?)"
            )
        difference = difference_of(self.estimate, other.estimate, scale=on)
        return Comparison.build(self, other, difference)

    # -- display -----------------------------------------------------------------------------

    def plot(self, *, truth: Any = None, top: int | None = 30, **options: Any) -> Figure:
        """Estimated counts with their intervals, largest first (matplotlib;
        :func:`frameldp.plot.plot_frequencies`). ``truth`` (optional) marks the true counts:
        a mapping ``{label: count}`` or a sequence in bucket order."""
        from frameldp.results.figure import frequency_figure  # matplotlib: on first use

        return frequency_figure([self], top=top, truth=truth, **{"width": 8.0, **options})

    def _title(self) -> str:
        what = " × ".join(self.label_columns) if self.joint else str(self.column)
        grouped = f" by {', '.join(self.by)}" if self.by else ""
        consistency = f", consistent ({self.consistency})" if self.consistency else ""
        return f"{what}{grouped}: {self._counted()}{consistency}"

    def _counted(self) -> str:
        """How many rows the table counts, and how many of them reported the column when a
        collection reported only some (``collect="sample"``) or mixed in fakes."""
        collection = getattr(self.mechanism, "collection", None)
        if collection is None:
            return f"n = {self.n:,} reports"
        strategy = collection.strategy
        if self.estimate.reporters is not None:
            return f"n = {self.n:,} rows, {self.estimate.reporters:,} reported it ({strategy})"
        return f"n = {self.n:,} reports, 1 in {collection.d} real on average ({strategy})"

    def _caption(self) -> str:
        groups = f", {len(self.groups)} groups" if self.by else ""
        return f"{self._title()}{groups}; {self.level:.0%} intervals. Privacy: {self.privacy}"

    def _shown(self) -> Any:
        """The rows a rendering shows: sorted by count (within groups), rounded."""
        frame = self._arrow()
        order = np.concatenate(
            [start + _by_count(estimate) for start, estimate in self._starts()]
            or [np.zeros(0, dtype=np.int64)]
        )
        return frame.take(pa.array(order, type=pa.int64()))

    def __repr__(self) -> str:
        shown = self._shown()
        lines = textwrap.wrap(
            f"FrequencyTable: {self._caption()}", _TEXT_WIDTH, subsequent_indent="  "
        )
        lines.extend(_text_rows(shown.slice(0, _SHOWN_ROWS), self._digits()))
        if shown.num_rows > _SHOWN_ROWS:
            lines.append(f"... {shown.num_rows - _SHOWN_ROWS:,} more rows")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        shown = self._shown()
        digits = self._digits()
        names = shown.column_names
        head = "".join(f"<th>{escape(str(name))}</th>" for name in names)
        body = []
        for row in _rounded_rows(shown.slice(0, _SHOWN_ROWS), digits):
            cells = "".join(
                f'<td style="text-align:{"left" if i < len(names) - len(digits) else "right"}">'
                f"{escape(cell)}</td>"
                for i, cell in enumerate(row)
            )
            body.append(f"<tr>{cells}</tr>")
        more = shown.num_rows - _SHOWN_ROWS
        if more > 0:
            body.append(f'<tr><td colspan="{len(names)}">… {more:,} more rows</td></tr>')
        return (
            f"<table><caption>{escape(risk_caption(self._caption(), self.privacy))}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        )

    def _digits(self) -> dict[str, int]:
        """Decimals shown per estimate column: two significant digits of the typical
        standard error (counts, at most 2 decimals: a line stays within 80 columns), and of the
        typical frequency error (frequencies)."""
        errors = np.concatenate([e.std_errors for _, e in self._blocks()])
        finite = errors[np.isfinite(errors) & (errors > 0)]
        typical = float(np.median(finite)) if finite.size else 1.0
        count_digits = min(2, max(0, 1 - math.floor(math.log10(typical))))
        share = typical / max(min(e.n for _, e in self._blocks()), 1)
        frequency_digits = min(8, max(2, 1 - math.floor(math.log10(share)))) if share > 0 else 4
        digits = {name: count_digits for name in ("count", "std_error", "ci_low", "ci_high")}
        digits["frequency"] = frequency_digits
        if self.decoding is not None:
            digits["p_value"] = 3
        return digits


def _by_count(estimate: FrequencyEstimate) -> Any:
    """Bucket indices by decreasing count (ties in bucket order)."""
    return np.argsort(-estimate.counts, kind="stable")


def _rounded_rows(frame: pa.Table, digits: dict[str, int]) -> list[list[str]]:
    columns = []
    for name in frame.column_names:
        values = frame.column(name).to_pylist()
        if name in digits:
            places = digits[name]
            if name == "p_value":
                columns.append([f"{v:.3g}" for v in values])
            else:
                columns.append(
                    ["" if v is None or math.isnan(v) else f"{v:,.{places}f}" for v in values]
                )
        else:
            columns.append(["null" if v is None else str(v) for v in values])
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


def _text_rows(frame: pa.Table, digits: dict[str, int]) -> list[str]:
    rows = _rounded_rows(frame, digits)
    names = frame.column_names
    shown = rows[:_SHOWN_ROWS]
    widths = [max([len(name), *(len(row[i]) for row in shown)]) for i, name in enumerate(names)]
    numeric = [name in digits for name in names]
    _fit_labels(widths, numeric)
    shown = [[_cut(cell, width) for cell, width in zip(row, widths, strict=True)] for row in shown]
    names = [_cut(str(name), width) for name, width in zip(names, widths, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if right else cell.ljust(width)
            for cell, width, right in zip(cells, widths, numeric, strict=True)
        ).rstrip()

    return [line(names), *(line(row) for row in shown)]


def _fit_labels(widths: list[int], numeric: list[bool]) -> None:
    """Narrow the widest label columns (in place) until a row fits :data:`_TEXT_WIDTH`, each to
    no less than 8 characters: numbers are never cut."""
    labels = [i for i, right in enumerate(numeric) if not right]
    while sum(widths) + 2 * (len(widths) - 1) > _TEXT_WIDTH:
        widest = max(labels, key=lambda i: widths[i], default=None)
        if widest is None or widths[widest] <= 8:
            return
        widths[widest] -= 1


def _cut(cell: str, width: int) -> str:
    """``cell`` in ``width`` characters, its middle replaced by "…" when it is longer (labels
    often share a prefix and differ at the end: URLs, keys)."""
    if len(cell) <= width:
        return cell
    head = (width - 1) // 2
    return cell[:head] + "…" + cell[len(cell) - (width - 1 - head) :]


def _joined(parts: list[Any]) -> NDArray[np.float64]:
    values = np.concatenate(parts) if parts else np.zeros(0)
    return np.asarray(values, dtype=np.float64)
