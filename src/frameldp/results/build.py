"""The result builder: a query's estimates become the result type of their estimate type.

A ``debias`` query (:class:`frameldp.frames.query.Query`) finishes every group's statistic
into an :class:`~frameldp.core.mechanisms.Estimate` and hands them here; the estimate's type
picks the result: a :class:`~frameldp.results.table.FrequencyTable` for a
:class:`~frameldp.core.estimation.FrequencyEstimate`. An estimator of another kind (means,
distributions) registers its result type with :func:`register_result`; nothing else changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from frameldp.accounting import PrivacyGuarantee
from frameldp.core.distribution import Distribution
from frameldp.core.estimation import FrequencyEstimate
from frameldp.core.mechanisms import Estimate
from frameldp.core.numeric_estimates import Mean
from frameldp.errors import ParameterError
from frameldp.results.distribution import DistributionTable
from frameldp.results.keys import GroupKey
from frameldp.results.mean import MeanEstimate
from frameldp.results.native import Backend
from frameldp.results.table import FrequencyTable, TableGroups

__all__ = ["ResultContext", "register_result", "result_of", "unregister_result"]


@dataclass(frozen=True)
class ResultContext:
    """What a result shows beside its estimates: what they are of, how and for whom."""

    mechanism: Any
    """The mechanism (a pair for a joint table)."""
    column: str | tuple[str, str]
    level: float
    backend: Backend
    privacy: PrivacyGuarantee
    """What one person loses through these reports: the release's recorded guarantee, else
    the mechanism's own (a joint table's two composed)."""
    by: tuple[str, ...] = ()
    group_types: tuple[Any, ...] = field(default=())


Builder = Callable[[Any, Sequence[GroupKey], Sequence[Any], ResultContext], Any]
"""``build(total, keys, estimates, context)``: the result of the estimate of all reports
together and of every group's (``keys[g]`` and ``estimates[g]`` in the result's order; both
empty when ungrouped; ``estimates`` may be a
:class:`~frameldp.core.estimation.GroupEstimates`). ``context.privacy`` is the guarantee the
result states (never None: the query resolves it)."""

_BUILDERS: dict[type, Builder] = {}


def register_result(estimate_type: type) -> Callable[[Builder], Builder]:
    """Decorator: ``build`` makes the result of estimates of ``estimate_type``."""

    def decorate(build: Builder) -> Builder:
        _BUILDERS[estimate_type] = build
        return build

    return decorate


def unregister_result(estimate_type: type) -> None:
    """Forget the result type of ``estimate_type`` (a test's or a plugin's)."""
    _BUILDERS.pop(estimate_type, None)


def result_of(
    total: Estimate,
    keys: Sequence[GroupKey],
    estimates: Sequence[Estimate],
    context: ResultContext,
) -> Any:
    """The result of ``total`` (all reports) and each group's estimate (``keys[g]``,
    ``estimates[g]``, in the order the result lists them), built by the builder registered
    for the nearest class of ``total``'s type (its own, else its bases in method resolution
    order)."""
    for estimate_type in type(total).__mro__:
        build = _BUILDERS.get(estimate_type)
        if build is not None:
            return build(total, keys, estimates, context)
    raise ParameterError(f"no result type is registered for a {type(total).__name__}")


@register_result(FrequencyEstimate)
def _frequency_table(
    total: FrequencyEstimate,
    keys: Sequence[GroupKey],
    estimates: Sequence[FrequencyEstimate],
    context: ResultContext,
) -> FrequencyTable:
    return FrequencyTable.build(
        total,
        context.mechanism,
        column=context.column,
        level=context.level,
        backend=context.backend,
        privacy=context.privacy,
        by=context.by,
        groups=TableGroups(tuple(keys), estimates),
        group_types=context.group_types,
    )


def _numeric_result(result_type: Any) -> Builder:
    """The builder of a numeric column's result (``MeanEstimate``, ``DistributionTable``):
    the estimate of all reports, each group's, and the context's fields."""

    def build(
        total: Any, keys: Sequence[GroupKey], estimates: Sequence[Any], context: ResultContext
    ) -> Any:
        return result_type(
            str(context.column),
            total,
            context.mechanism,
            context.privacy,
            context.level,
            context.backend,
            context.by,
            tuple(zip(keys, estimates, strict=True)),
            context.group_types,
        )

    return build


register_result(Mean)(_numeric_result(MeanEstimate))
register_result(Distribution)(_numeric_result(DistributionTable))
