"""A column collected with others under one budget: who reported it, and its counts for all.

:class:`Collected` wraps the frequency oracle of one column of a ``sample`` or ``sample+fake``
collection (:mod:`frameldp.core.collection`). It is what a recorded spec with a
``"collection"`` rebuilds into, so every engine's tables of such a column go through it:

* under ``sample`` a row that did not report the column holds null reports. The statistic is
  the oracle's over the ``m`` rows that reported, plus the number of rows ``n``; the counts are
  scaled by ``n / m``, with the sampling of the reporters in their variance;
* under ``sample+fake`` every row holds a report, real with probability ``1 / d``. The counts
  are ``d`` times the oracle's, less the fake reports' expected ``(d - 1) n pi``, with the
  variance of that mixture.

Either estimate is unbiased for the counts among all ``n`` rows (people), and its variance is
the exact one with the estimated shares plugged in (module docstring of
:mod:`frameldp.core.collection`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.collection import (
    Collection,
    OracleNoise,
    sample_count_variance,
    sample_fake_count_variance,
    total_variance,
)
from frameldp.core.estimation import FrequencyEstimate
from frameldp.core.mechanisms.protocol import Capability, Statistic, memoizes
from frameldp.core.randomness import RandomSource
from frameldp.errors import ParameterError, shown

__all__ = [
    "Collected",
    "choose_collection",
    "collect_columns",
    "reporting_columns",
    "sampled_reports",
]


class Collected:
    """The oracle ``mechanism`` of one column of ``collection``; every attribute not defined
    here is the oracle's (its name, categories, reports, privacy of one report)."""

    def __init__(self, mechanism: Any, collection: Collection) -> None:
        if Capability.FREQUENCY_ORACLE not in mechanism.capabilities:
            raise ParameterError(
                f"collect={collection.strategy!r} takes frequency oracles, not {mechanism.title}"
            )
        if getattr(mechanism, "max_weight", 1) != 1:
            raise ParameterError(
                f"collect={collection.strategy!r} takes one value per cell, not sets "
                f"(max_weight={mechanism.max_weight})"
            )
        self._mechanism = mechanism
        self.collection = collection

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_mechanism", "collection"):
            raise AttributeError(name)  # not set yet (unpickling): no delegation loop
        return getattr(self._mechanism, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Collected, (self._mechanism, self.collection))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Collected)
            and other._mechanism == self._mechanism
            and other.collection == self.collection
        )

    def __hash__(self) -> int:
        return hash((self._mechanism, self.collection))

    def __repr__(self) -> str:
        return f"Collected({self._mechanism!r}, {self.collection!r})"

    @property
    def mechanism(self) -> Any:
        """The column's frequency oracle."""
        return self._mechanism

    def to_spec(self) -> dict[str, Any]:
        """The oracle's spec with the collection recorded."""
        return {**self._mechanism.to_spec(), "collection": self.collection.to_spec()}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """The oracle's statistic of the rows that reported, and the number of rows."""
        rows = len(next(iter(reports.values())))
        if self.collection.strategy == "sample":
            reported = _reported(reports, column)
            reports = {name: array.filter(reported) for name, array in reports.items()}
        inner = self._mechanism.statistic(reports, column=column)
        return Statistic((*inner.parts, np.array([rows], dtype=np.int64)), inner.rows)

    def finish(self, statistic: Statistic) -> FrequencyEstimate:
        """Counts among all the rows (see the module docstring)."""
        *parts, total = statistic.parts
        n = int(total[0])
        noise = OracleNoise.of(self._mechanism)
        if self.collection.strategy == "sample":
            m = statistic.rows
            if m == 0:
                raise ParameterError(
                    f"none of the {n} rows reported this column (collect='sample' drew "
                    f"another of {self.collection.d} columns for each): nothing to estimate"
                )
            inner = self._mechanism.finish(Statistic(tuple(parts), m))
            shares = np.clip(inner.counts / m, 0.0, 1.0)
            counts = inner.counts * (n / m)
            variances = sample_count_variance(noise, shares, n, m)
        else:
            inner = self._mechanism.finish(Statistic(tuple(parts), statistic.rows))
            d, law = self.collection.d, self.collection.law(noise.k)
            counts = d * inner.counts - (d - 1) * n * law
            shares = np.clip(counts / n, 0.0, 1.0)
            variances = sample_fake_count_variance(noise, shares, n, d, law)
        return FrequencyEstimate(counts, variances, n)

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """:meth:`finish`."""
        return self.finish(statistic)


def _reported(reports: Mapping[str, pa.Array], column: str) -> pa.Array:
    """Which rows hold a report (all of a row's report columns null or none)."""
    arrays = list(reports.values())
    valid = arrays[0].is_valid()
    for array in arrays[1:]:
        if not pc.all(pc.equal(array.is_valid(), valid)).as_py():
            raise ParameterError(
                f"column {shown(column)}: a row holds some of its report columns and not others"
            )
    return valid


def reporting_columns(
    collection: Collection,
    source: RandomSource,
    row_start: int,
    num_rows: int,
    content: Callable[[], NDArray[np.uint8]],
) -> NDArray[np.int64]:
    """Which of the collection's columns each row reports: uniform over the ``d`` columns,
    drawn from the stream ``("collect", *columns)`` of the release's key (under a caller's key
    or a seed, addressed by the row's position and ``content()``, the bytes of all its
    collected values, as every report is: a changed value draws another column)."""
    rows = source.rows(("collect", *collection.columns), row_start, num_rows, content)
    return np.asarray(rows.uniform("column", collection.d), dtype=np.int64)


def sampled_reports(
    reports: Mapping[str, pa.Array], reporting: NDArray[np.int64], index: int
) -> dict[str, pa.Array]:
    """A column's reports where the row reports it (``reporting == index``), null elsewhere."""
    chosen = pa.array(reporting == index)
    return {
        name: pc.if_else(chosen, array, pa.scalar(None, array.type))
        for name, array in reports.items()
    }


def collect_columns(mechanisms: Any, collect: object) -> Any:
    """The mechanisms of one release under the strategy ``collect``: as given for ``"split"``
    (each column reported, the person's loss their composition; the caller checks them); for
    ``"sample"`` each wrapped in :class:`Collected` (one column reported per person, chosen at
    random); for ``"auto"`` whichever of the two has the smaller total variance at the same
    guarantee (:func:`choose_collection`)."""
    if collect == "split":
        return mechanisms
    if collect == "auto":
        return choose_collection(mechanisms)
    if collect != "sample":
        raise ParameterError(f"collect must be 'split', 'sample' or 'auto', got {shown(collect)}")
    if not isinstance(mechanisms, Mapping):
        raise ParameterError(
            f"privatize takes a mapping {{column: mechanism}}, got {type(mechanisms).__name__}"
        )
    names = list(mechanisms)
    if len(names) < 2:
        raise ParameterError(
            f"collect='sample' draws one of two or more columns per person, got {shown(names)}"
        )
    for name, mechanism in mechanisms.items():
        if not isinstance(getattr(mechanism, "capabilities", None), frozenset):
            raise ParameterError(
                f"column {shown(name)}: expected a frameldp mechanism, got "
                f"{type(mechanism).__name__}"
            )
        if not isinstance(name, str):
            raise ParameterError(f"collect='sample' needs string column names, got {shown(name)}")
        if memoizes(mechanism):
            raise ParameterError(
                f"column {shown(name)}: collect='sample' does not memoize permanent responses; "
                "privatize memoized columns in a release of their own"
            )
    collection = Collection("sample", tuple(names))
    return {name: Collected(mechanism, collection) for name, mechanism in mechanisms.items()}


def choose_collection(mechanisms: Any) -> Any:
    """``collect="auto"``: the budget of a person is what splitting costs, the sum of the given
    mechanisms' epsilons; the release reports every column as given (``split``), or one column
    per row with each column's mechanism rebuilt at that whole budget (``sample``), whichever
    has the smaller total variance of the shares (:func:`~frameldp.core.collection.total_variance`,
    exact, at uniform shares: the worst case for sampling). A single column is split."""
    if not isinstance(mechanisms, Mapping) or len(mechanisms) < 2:
        return mechanisms  # one column (or none: the caller refuses it) is reported whole
    sampled = collect_columns(mechanisms, "sample")  # checks the columns and mechanisms
    budget = math.fsum(m.privacy.epsilon for m in mechanisms.values())
    rebuilt = {
        name: Collected(_at_epsilon(m.mechanism, budget), m.collection)
        for name, m in sampled.items()
    }
    split = total_variance("split", [OracleNoise.of(m) for m in mechanisms.values()])
    sample = total_variance("sample", [OracleNoise.of(m.mechanism) for m in rebuilt.values()])
    return rebuilt if sample < split else mechanisms


def _at_epsilon(mechanism: Any, epsilon: float) -> Any:
    """The same frequency oracle over the same domain at ``epsilon`` (its other settings at
    their defaults for that epsilon)."""
    return type(mechanism)(epsilon, domain=mechanism.domain)
