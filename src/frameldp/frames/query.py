"""A ``debias`` as one query: built once, executed by an engine, finished by a result builder.

``reports.ldp.debias(...)`` and ``frameldp estimate`` both build a :class:`Query` from what
they were asked (one report column or a pair, its mechanisms, the public ``by`` columns):

1. **built once** (:func:`flat_query`, :func:`joint_query`): the report columns it reads and
   the :class:`~frameldp.frames.grouping.Reduction` of one batch of them to an additive
   statistic;
2. **executed by the engine** (:meth:`Query.run`: ``engine.reduce(reduction, by)``, flat or
   by groups; the command line sums a file's batches with the same reduction);
3. **finished** (:meth:`Query.finish`): every group's statistic, and all groups' together,
   become estimates (:meth:`~frameldp.core.mechanisms.Estimator.finish`, or the joint
   estimator of :mod:`frameldp.core.joint`), and :func:`frameldp.results.result_of` turns
   them into the result type of their estimate type.

Plumbing only: the formulas live in the mechanisms and :mod:`frameldp.core.joint`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from frameldp.accounting import PrivacyGuarantee, compose
from frameldp.core.group_statistics import estimates_by_group
from frameldp.core.joint import debias_joint
from frameldp.core.mechanisms import Estimate, FrequencyOracle, GroupStatistics, Mechanism
from frameldp.errors import ParameterError, shown
from frameldp.frames.grouping import (
    AnyStatistic,
    Grouped,
    Reduction,
    Stack,
    flat_reduction,
    joint_reduction,
    sorted_order,
)
from frameldp.frames.pipeline import column_context
from frameldp.frames.report_type import ReportMetadata
from frameldp.results.build import ResultContext, result_of
from frameldp.results.native import Backend

if TYPE_CHECKING:
    from frameldp.frames.engine import Engine

__all__ = ["Query", "flat_query", "joint_query"]


@dataclass(frozen=True)
class Query:
    """One table to estimate: of ``column`` (a pair for a joint table) privatized by
    ``mechanism`` (a pair of frequency oracles for a joint table), by the public columns
    ``by``, from the statistics of ``reduction``."""

    column: str | tuple[str, str]
    mechanism: Mechanism | tuple[FrequencyOracle, FrequencyOracle]
    reduction: Reduction
    by: tuple[str, ...] = ()

    def estimate(self, statistic: AnyStatistic) -> Estimate:
        """The estimate of one (summed) statistic."""
        if isinstance(self.mechanism, tuple):
            first, second = self.mechanism
            return debias_joint(first, second, statistic)  # type: ignore[arg-type]
        return self.mechanism.finish(statistic)  # type: ignore[arg-type]

    def run(self, engine: Engine, *, level: float, privacy: PrivacyGuarantee | None) -> Any:
        """Execute on ``engine`` and finish (:meth:`finish`)."""
        grouped = engine.reduce(self.reduction, self.by)
        return self.finish(grouped, level=level, privacy=privacy, backend=engine.backend)

    def finish(
        self,
        grouped: Grouped,
        *,
        level: float,
        privacy: PrivacyGuarantee | None,
        backend: Backend,
    ) -> Any:
        """The result of ``grouped`` statistics: each group estimated on its own, and all
        groups together; groups in :func:`~frameldp.frames.grouping.sorted_order`."""
        label = self.reduction.label
        if privacy is None:  # one report per person: the mechanisms' own guarantee
            mechanisms = self.mechanism if isinstance(self.mechanism, tuple) else (self.mechanism,)
            privacy = compose([mechanism.privacy for mechanism in mechanisms])
        context = ResultContext(
            self.mechanism, self.column, level, backend, privacy, self.by, grouped.types
        )
        with column_context(label):
            if not self.by:
                return result_of(self.estimate(grouped.only()), (), (), context)
            if grouped.statistics is None:
                raise ParameterError(f"column {shown(label)}: no reports to debias (empty input)")
            order = sorted_order(grouped.keys, grouped.types)
            statistics = grouped.statistics.take(order)
            estimates = self.estimates(statistics)
            keys = [grouped.keys[position] for position in order.tolist()]
            total = self.estimate(statistics.total())
            return result_of(total, keys, estimates, context)

    def estimates(self, statistics: Stack) -> Sequence[Estimate]:
        """The estimate of every group's statistic (as whole arrays where the mechanism can,
        :func:`~frameldp.core.group_statistics.estimates_by_group`)."""
        if isinstance(statistics, GroupStatistics) and not isinstance(self.mechanism, tuple):
            return estimates_by_group(self.mechanism, statistics)
        return [self.estimate(statistics[group]) for group in range(len(statistics))]


def flat_query(
    column: str, mechanism: Mechanism, names: Sequence[str], by: Sequence[str] = ()
) -> Query:
    """The table of one report column, whose report columns are ``names`` (in the order of
    ``mechanism.report_columns(column)``)."""
    return Query(column, mechanism, flat_reduction(column, names, mechanism), tuple(by))


def joint_query(
    pair: tuple[str, str],
    mechanisms: tuple[Mechanism, Mechanism],
    names: tuple[Sequence[str], Sequence[str]],
    recorded: tuple[ReportMetadata | None, ReportMetadata | None],
    by: Sequence[str] = (),
) -> Query:
    """The joint table of two report columns (:mod:`frameldp.core.joint`), each of a frequency
    oracle; ``recorded`` are their report types, whose releases must be independent
    (:func:`~frameldp.frames.grouping.check_independent_reports`)."""
    reduction = joint_reduction(pair, names, mechanisms, recorded)  # checks both are oracles
    oracles = cast(tuple[FrequencyOracle, FrequencyOracle], mechanisms)
    return Query(pair, oracles, reduction, tuple(by))
