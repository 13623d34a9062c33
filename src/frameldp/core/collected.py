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

import functools
import hashlib
import json
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.collection import (
    Collection,
    OracleNoise,
    check_prior,
    sample_count_variance,
    sample_fake_count_variance,
    total_variance,
)
from frameldp.core.estimation import FrequencyEstimate
from frameldp.core.mechanisms.protocol import Capability, Statistic, memoizes, spec_fingerprint
from frameldp.core.randomness import RandomSource
from frameldp.errors import DomainError, FrameLDPWarning, ParameterError, shown

__all__ = [
    "Collected",
    "CollectedBatch",
    "choose_collection",
    "collect_columns",
    "fake_priors",
    "reporting_columns",
]


class Collected:
    """The oracle ``mechanism`` of one column of ``collection``; every attribute not defined
    here is the oracle's (its name, categories, reports, privacy of one report)."""

    def __init__(self, mechanism: Any, collection: Collection, column: str) -> None:
        where = f"column {shown(column)}: collect={collection.strategy!r}"
        if Capability.FREQUENCY_ORACLE not in mechanism.capabilities:
            raise ParameterError(
                f"{where} takes frequency oracles, not {mechanism.title}: privatize the column "
                "in a release of its own, or use collect='split'"
            )
        domain = getattr(mechanism, "domain", None)
        fake = collection.strategy == "sample+fake"
        if fake and domain is not None and domain.has_other and domain.kind not in ("str", None):
            raise ParameterError(
                f"{where} draws fake values from the buckets, and a domain of "
                f"{domain.kind} categories has no value for its OTHER bucket; use string "
                "categories or unknown='raise'"
            )
        labelled = any(pa.types.is_dictionary(t) for t in mechanism.report_columns("c").values())
        if collection.strategy == "sample" and domain is not None and domain.has_null and labelled:
            raise ParameterError(
                f"{where} marks a row that did not report a column by a null, and "
                f"{mechanism.title} reports its null bucket as a null: use nulls='raise', "
                "another frequency oracle, or collect='sample+fake'"
            )
        if getattr(mechanism, "max_weight", 1) != 1:
            raise ParameterError(
                f"{where} takes one value per cell, not sets (max_weight={mechanism.max_weight})"
            )
        if column not in collection.columns:
            raise ParameterError(f"column {shown(column)} is not one of {list(collection.columns)}")
        self._mechanism = mechanism
        self.collection = collection
        self.column = column

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_mechanism", "collection", "column"):
            raise AttributeError(name)  # not set yet (unpickling): no delegation loop
        return getattr(self._mechanism, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Collected, (self._mechanism, self.collection, self.column))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Collected)
            and other._mechanism == self._mechanism
            and other.collection == self.collection
            and other.column == self.column
        )

    def __hash__(self) -> int:
        return hash((self._mechanism, self.collection, self.column))

    def __repr__(self) -> str:
        return f"Collected({self._mechanism!r}, {self.collection!r}, {self.column!r})"

    @property
    def mechanism(self) -> Any:
        """The column's frequency oracle."""
        return self._mechanism

    @property
    def label(self) -> str:
        """How tables and the command line name it: the oracle's class and the strategy."""
        return f"{type(self._mechanism).__name__} (collect={self.collection.strategy!r})"

    def to_spec(self) -> dict[str, Any]:
        """The oracle's spec with the collection recorded (and which of its columns this is)."""
        collection = {**self.collection.to_spec(), "column": self.column}
        return {**self._mechanism.to_spec(), "collection": collection}

    @property
    def job(self) -> str:
        """The fingerprint of the column's mechanism: what the collection's draws are bound to
        besides the key, the rows and the columns."""
        return spec_fingerprint(self._mechanism)

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
            if m == 0:  # a small group whose rows all reported other columns: no estimate
                unknown = np.full(noise.k, np.nan)
                return FrequencyEstimate(unknown, unknown.copy(), n, reporters=0)
            inner = self._mechanism.finish(Statistic(tuple(parts), m))
            shares = np.clip(inner.counts / m, 0.0, 1.0)
            counts = inner.counts * (n / m)
            variances = sample_count_variance(noise, shares, n, m)
        else:
            inner = self._mechanism.finish(Statistic(tuple(parts), statistic.rows))
            d, law = self.collection.d, self.collection.law(self.column, noise.k)
            counts = d * inner.counts - (d - 1) * n * law
            shares = np.clip(counts / n, 0.0, 1.0)
            variances = sample_fake_count_variance(noise, shares, n, d, law)
        reporters = statistic.rows if self.collection.strategy == "sample" else None
        return FrequencyEstimate(counts, variances, n, reporters=reporters)

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
    jobs: tuple[str, ...],
    source: RandomSource,
    row_start: int,
    num_rows: int,
    content: Callable[[], NDArray[np.uint8]],
) -> NDArray[np.int64]:
    """Which of the collection's columns each row reports: uniform over the ``d`` columns,
    drawn from the stream ``("collect", strategy, *columns, *jobs)`` of the release's key
    (``jobs``: the columns' :attr:`Collected.job`, so that another mechanism is another draw;
    under a caller's key or a seed, addressed by the row's position and ``content()``, the bytes
    of all its collected values, as every report is: a changed value draws another column)."""
    label = ("collect", collection.strategy, *collection.columns, *jobs, *_prior_label(collection))
    rows = source.rows(label, row_start, num_rows, content)
    return np.asarray(rows.uniform("column", collection.d), dtype=np.int64)


@dataclass
class CollectedBatch:
    """One batch of rows of a collection: which column each row reports (:attr:`reporting`),
    and the reports each column holds where it is not the one."""

    collection: Collection
    jobs: tuple[str, ...]
    source: RandomSource
    row_start: int
    num_rows: int
    content: Callable[[], NDArray[np.uint8]]

    @classmethod
    def draw(
        cls,
        mechanisms: Mapping[Any, Any],
        source: RandomSource,
        row_start: int,
        num_rows: int,
        content_of: Callable[[tuple[str, ...]], NDArray[np.uint8]],
    ) -> CollectedBatch:
        """The batch of a release whose ``mechanisms`` hold the collection's :class:`Collected`
        columns (others are ignored); ``content_of(columns)`` gives the bytes of those columns'
        values per row, read at most once."""
        collected = {c: m for c, m in mechanisms.items() if isinstance(m, Collected)}
        collections = {m.collection for m in collected.values()}
        if len(collections) != 1:
            raise ParameterError(f"a release collects one set of columns, got {len(collections)}")
        (collection,) = collections
        missing = sorted(set(collection.columns) - set(collected))
        if missing:
            raise ParameterError(f"a collection's columns {missing} are not in the release")
        jobs = tuple(collected[c].job for c in collection.columns)
        content = functools.cache(lambda: content_of(collection.columns))
        return cls(collection, jobs, source, row_start, num_rows, content)

    @functools.cached_property
    def reporting(self) -> NDArray[np.int64]:
        """:func:`reporting_columns` of the batch."""
        return reporting_columns(
            self.collection, self.jobs, self.source, self.row_start, self.num_rows, self.content
        )

    def reports(
        self, mechanism: Collected, column: str, produced: Mapping[str, pa.Array]
    ) -> dict[str, pa.Array]:
        """``column``'s reports where the row reports it; elsewhere null (``sample``) or the
        report of a fake value (``sample+fake``, :meth:`fake_reports`)."""
        chosen = pa.array(self.reporting == self.collection.columns.index(column))
        if self.collection.strategy == "sample":
            return {
                name: pc.if_else(chosen, array, pa.scalar(None, array.type))
                for name, array in produced.items()
            }
        fakes = list(self.fake_reports(mechanism, column).values())
        return {
            name: pc.if_else(chosen, array, fake)
            for (name, array), fake in zip(produced.items(), fakes, strict=True)
        }

    def fake_reports(self, mechanism: Collected, column: str) -> dict[str, pa.Array]:
        """The column's mechanism's reports of values drawn from its fake-data law (uniform
        over its buckets: RS+FD, Arcolezi et al. 2021; a public prior: RS+RFD, 2022): the
        values from the stream ``("collect", "fake", column, *jobs)``, their noise from the
        mechanism's stream of ``column + "\\x00fake"`` (a name no collected column has), both
        addressed as every report is."""
        labels = mechanism.domain.labels
        label = ("collect", "fake", column, *self.jobs, *_prior_label(self.collection))
        rows = self.source.rows(label, self.row_start, self.num_rows, self.content)
        codes = _draw_codes(rows, self.collection.law(column, len(labels)))
        values = pa.array(list(labels)).take(pa.array(codes))
        with warnings.catch_warnings():  # a uniform value falls in OTHER often: not the data's
            warnings.simplefilter("ignore", FrameLDPWarning)
            return dict(
                mechanism.mechanism.privatize_column(
                    values,
                    column=column + FAKE_SUFFIX,
                    source=self.source,
                    row_start=self.row_start,
                )
            )


def _prior_label(collection: Collection) -> tuple[str, ...]:
    """What the fake-data priors add to the collection's stream labels: nothing for uniform
    fakes (the streams of earlier releases), else a fingerprint of the priors, so that a
    collection with other priors is another job and draws its columns and fakes again."""
    if collection.priors is None:
        return ()
    text = json.dumps(collection.to_spec()["priors"], sort_keys=True)
    return ("priors", hashlib.sha256(text.encode("utf-8")).hexdigest())


def _draw_codes(rows: Any, law: NDArray[np.float64]) -> NDArray[np.int64]:
    """One bucket per row drawn from ``law``: uniform buckets exactly (``rows.uniform``),
    others by inverting the law's cumulative shares at a uniform 64-bit word (each bucket's
    chance within ``2**-53`` of its share; a bucket of share 0 is never drawn)."""
    k = law.size
    if np.all(law == law[0]):
        return np.asarray(rows.uniform("value", k), dtype=np.int64)
    words = rows.words("value", 1)[:, 0]
    cumulative = np.cumsum(law)
    cut = np.minimum(cumulative / cumulative[-1], 1.0) * 2.0**64
    thresholds = np.array([min(int(c), 2**64 - 1) for c in cut], dtype=np.uint64)
    last = int(np.flatnonzero(law > 0)[-1])  # the last bucket drawn takes the rest
    thresholds[last:] = np.uint64(2**64 - 1)
    codes = np.searchsorted(thresholds, words, side="right")
    return np.asarray(np.minimum(codes, last), dtype=np.int64)


FAKE_SUFFIX: Final = "\x00fake"
"""Appended to a column's name to name the stream of its fake reports' noise."""


def collect_columns(mechanisms: Any, collect: object, fake_prior: Any = None) -> Any:
    """The mechanisms of one release under the strategy ``collect``: as given for ``"split"``
    (each column reported, the person's loss their composition; the caller checks them); for
    ``"sample"`` and ``"sample+fake"`` each wrapped in :class:`Collected` (one column reported
    per person, chosen at random; under ``"sample+fake"`` the others' fake values drawn from
    ``fake_prior[column]``, a mapping ``{bucket label: share}``, where given, else uniformly);
    for ``"auto"`` whichever of split and sample has the smaller total variance at the same
    guarantee (:func:`choose_collection`)."""
    if fake_prior is not None and collect != "sample+fake":
        raise ParameterError(
            "fake_prior (--fake-prior) is the law of the fake values of collect='sample+fake' "
            f"(--collect sample+fake); got collect={shown(collect)}: use sample+fake, or drop "
            "the prior"
        )
    if collect == "split":
        return mechanisms
    if collect == "auto":
        return choose_collection(mechanisms)
    if collect not in ("sample", "sample+fake"):
        raise ParameterError(
            f"collect must be 'split', 'sample', 'sample+fake' or 'auto', got {shown(collect)}"
        )
    if not isinstance(mechanisms, Mapping):
        raise ParameterError(
            f"privatize takes a mapping {{column: mechanism}}, got {type(mechanisms).__name__}"
        )
    names = list(mechanisms)
    if len(names) < 2:
        raise ParameterError(
            f"collect={collect!r} draws one of two or more columns per person, got {shown(names)}"
        )
    for name, mechanism in mechanisms.items():
        if not isinstance(getattr(mechanism, "capabilities", None), frozenset):
            raise ParameterError(
                f"column {shown(name)}: expected a frameldp mechanism, got "
                f"{type(mechanism).__name__}"
            )
        if not isinstance(name, str) or "\x00" in name:
            raise ParameterError(
                f"collect={collect!r} needs string column names without NUL, got {shown(name)}"
            )
        if memoizes(mechanism) and collect == "sample+fake":
            raise ParameterError(
                f"column {shown(name)}: collect='sample+fake' cannot fake a memoized column: "
                "a person's real reports of one value share a permanent response night after "
                "night and fresh fakes would not, which shows the real column; use "
                "collect='sample' (memoized columns are sampled as they are)"
            )
        if memoizes(mechanism):
            _check_sampled_memo(name, mechanism)
    priors = None if fake_prior is None else fake_priors(mechanisms, fake_prior)
    collection = Collection(collect, tuple(names), priors)
    return {name: Collected(m, collection, name) for name, m in mechanisms.items()}


def _check_sampled_memo(column: str, mechanism: Any) -> None:
    """Refuse, naming ``column``, a memoized mechanism whose reports a sampled collection
    cannot bound (:meth:`~frameldp.accounting.MemoizedEvent.unfolded`: no instantaneous
    noise), before any report is drawn."""
    for event, _ in mechanism.guarantee(memo="sampled").events:
        try:
            event.unfolded()
        except ParameterError as error:
            raise ParameterError(f"column {shown(column)}: {error}") from None


def fake_priors(mechanisms: Mapping[str, Any], given: Any) -> tuple[tuple[float, ...] | None, ...]:
    """Each column's fake-data law over its mechanism's buckets, from ``given``:
    ``{column: {bucket label: weight}}`` (weights >= 0, normalized; a bucket not named has
    weight 0; a column not named is uniform). The labels are the domain's categories, its
    ``OTHER`` label and ``None`` for its null bucket."""
    if not isinstance(given, Mapping):
        raise ParameterError(
            f"fake_prior must map columns to {{category: weight}}, got {type(given).__name__}"
        )
    unknown = [c for c in given if c not in mechanisms]
    if unknown:
        raise ParameterError(
            f"fake_prior names column {shown(unknown[0])}, which is not privatized here"
        )
    priors: list[tuple[float, ...] | None] = []
    for name, mechanism in mechanisms.items():
        weights = given.get(name)
        priors.append(None if weights is None else _prior_of(mechanism, name, weights))
    return tuple(priors)


def _prior_of(mechanism: Any, column: str, weights: Any) -> tuple[float, ...]:
    """``weights`` ``{label: weight}`` as shares over ``mechanism``'s buckets."""
    domain = getattr(mechanism, "domain", None)
    if domain is None:
        raise ParameterError(f"column {shown(column)}: fake_prior needs a categorical domain")
    if not isinstance(weights, Mapping):
        raise ParameterError(
            f"column {shown(column)}: fake_prior must be a mapping {{category: weight}} (or a "
            f"FrequencyTable, or a pandas Series of weights), got {type(weights).__name__}"
        )
    reported = domain.as_reported()  # its labels as categories: OTHER, and None for nulls
    shares = np.zeros(domain.size)
    for label, weight in weights.items():
        try:  # matched as the domain matches values: exactly, a bool never as a number
            code = int(reported.encode([label], column=column)[0])
        except DomainError:
            raise ParameterError(
                f"column {shown(column)}: fake_prior names {shown(label)}, which is not one of "
                f"its buckets {shown(list(domain.labels))}"
            ) from None
        if isinstance(weight, bool) or not isinstance(
            weight, int | float | np.integer | np.floating
        ):
            raise ParameterError(
                f"column {shown(column)}: fake_prior weight of {shown(label)} must be a number, "
                f"got {shown(weight)}"
            )
        try:
            shares[code] = float(weight)
        except OverflowError:  # an integer beyond any float
            shares[code] = math.inf  # refused below, as not finite
    finite = bool(np.all(np.isfinite(shares)))
    peak = float(shares.max()) if finite else math.nan
    if finite and peak > 0:
        shares = shares / peak  # weights near the float range's top add up without overflow
    total = math.fsum(shares) if finite else math.nan
    if not finite or np.any(shares < 0) or not 0 < total < math.inf:
        raise ParameterError(
            f"column {shown(column)}: fake_prior weights must be finite, >= 0 and not all 0, "
            f"got {shown(dict(weights))}"
        )
    return check_prior((shares / total).tolist(), column)


def choose_collection(mechanisms: Any) -> Any:
    """``collect="auto"``: the budget of a person is what splitting costs, the sum of the given
    mechanisms' epsilons; the release reports every column as given (``split``), or one column
    per row with each column's mechanism rebuilt at that whole budget (``sample``), whichever
    has the smaller total variance of the shares (:func:`~frameldp.core.collection.total_variance`,
    exact, at uniform shares: the worst case for sampling). A single column, or columns of which
    one cannot be sampled (numbers, sets) or is memoized (rebuilding it at another epsilon
    would drop its permanent response's), are split."""
    if not isinstance(mechanisms, Mapping) or len(mechanisms) < 2:
        return mechanisms  # one column (or none: the caller refuses it) is reported whole
    if any(memoizes(m) for m in mechanisms.values() if hasattr(m, "capabilities")):
        return mechanisms  # a memoized column keeps its epsilon_infinity: not rebuilt here
    try:
        sampled = collect_columns(mechanisms, "sample")
    except ParameterError:  # a column that cannot be sampled (numbers, sets): split
        return mechanisms
    budget = math.fsum(m.privacy.epsilon for m in mechanisms.values())
    rebuilt = {
        name: Collected(_at_epsilon(m.mechanism, budget), m.collection, name)
        for name, m in sampled.items()
    }
    split = total_variance("split", [OracleNoise.of(m) for m in mechanisms.values()])
    sample = total_variance("sample", [OracleNoise.of(m.mechanism) for m in rebuilt.values()])
    return rebuilt if sample < split else mechanisms


def _at_epsilon(mechanism: Any, epsilon: float) -> Any:
    """The same frequency oracle over the same domain at ``epsilon`` (its other settings at
    their defaults for that epsilon)."""
    return type(mechanism)(epsilon, domain=mechanism.domain)
