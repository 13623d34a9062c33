"""The one protocol every frameldp mechanism answers, and the capabilities some declare.

The frame adapters, schemas, the command line and file readers know mechanisms only through
this protocol: they never test a mechanism's class. A mechanism is two halves.

Its :class:`Randomizer` half runs on the client side:

* says which report columns it writes for an input column (:meth:`Randomizer.report_columns`:
  names and Arrow storage types; Bloom RAPPOR adds a cohort column);
* privatizes one batch of a column (:meth:`Randomizer.privatize_column`: Arrow values in, Arrow
  report columns out, the rows being rows ``row_start, ...`` of the whole input, so any
  chunking gives the same reports);
* gives its guarantee (:attr:`Randomizer.privacy`) and its JSON spec (``to_spec`` /
  ``from_spec``, rebuilt by :func:`~frameldp.core.mechanisms.mechanism_from_spec`);
* declares what else it can do in :attr:`Randomizer.capabilities` (:class:`Capability`), which
  callers ask instead of probing with ``isinstance`` or ``hasattr``.

Its :class:`Estimator` half runs on the server side: it reduces report columns to an additive
sufficient :class:`Statistic` (integer or float parts; statistics of disjoint runs of rows add
up: chunked files, Dask partitions, groups) and finishes a summed statistic into an
:class:`Estimate` (:meth:`Estimator.finish`). The engines and the query that runs a
``debias`` know nothing more; the result type is chosen by the estimate's type
(:func:`frameldp.results.result_of`). Every mechanism of this package estimates frequencies
(:class:`FrequencyEstimator`: a :class:`~frameldp.core.estimation.FrequencyEstimate` over its
``categories``); an estimator of means or distributions returns its own estimate type.

Its :class:`Randomizer` half is a *local randomizer* (Kasiviswanathan, Lee, Nissim,
Raskhodnikova and Smith, "What Can We Learn Privately?", FOCS 2008 / SICOMP 2011): each report
is drawn from one person's value alone, and the guarantee is that of one report.

Adding a mechanism is one module in ``core/mechanisms`` (decorated with ``@register``), its
privacy event in ``accounting``, and its example in the contract suite (docs/mechanisms.md,
"Adding a mechanism").
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
from numpy.typing import NDArray

from frameldp.core.encoding import check_padding
from frameldp.core.group_counting import group_bincount, group_bit_sums, group_sizes
from frameldp.core.mechanisms._spec import fingerprint
from frameldp.errors import ParameterError, shown

if TYPE_CHECKING:
    import pyarrow as pa

    from frameldp.accounting import PrivacyGuarantee
    from frameldp.core.discovery import Discovery
    from frameldp.core.estimation import BloomDecoding, FrequencyEstimate, GroupEstimates
    from frameldp.core.randomness import RandomSource

__all__ = [
    "OPEN_DOMAIN",
    "BitReportsByGroup",
    "Capability",
    "CodeReportsByGroup",
    "Decoder",
    "Discoverer",
    "Estimate",
    "Estimator",
    "FrequencyEstimation",
    "FrequencyEstimator",
    "FrequencyOracle",
    "GroupEstimator",
    "GroupStatistics",
    "Mechanism",
    "MechanismClass",
    "Memoizing",
    "OracleCosts",
    "Randomizer",
    "Statistic",
    "memoizes",
    "release_size",
    "spec_fingerprint",
]


class Capability(enum.Enum):
    """What only some mechanisms can do; a mechanism lists its own in ``capabilities``."""

    SETS = "sets"
    """Set-valued cells (list columns, at most ``max_weight`` values a cell), k-hot encoded."""
    MEMOIZATION = "memoization"
    """Takes ``users`` and a memo source: permanent responses memoized per (user, value), so a
    person's loss over many collections of one value stays bounded (:class:`Memoizing`)."""
    CANDIDATES = "candidates"
    """An open domain: reports are decoded against candidate strings (:class:`Decoder`), not
    debiased over a public domain."""
    BIT_VECTORS = "bit_vectors"
    """Reports are packed bit vectors: they unpack to one 0/1 column per bit, and a CSV file
    holds them as hex."""
    SHUFFLER_MESSAGES = "shuffler_messages"
    """The shuffle model's messages: a person sends several, the frame holds the shuffler's
    output (not one report per row), and there is no local guarantee to amplify."""
    INTEGER_REPORTS = "integer_reports"
    """Reports are integers in ``[0, report_range)`` (an attribute of the mechanism): a release
    schema checks their type and range."""
    FREQUENCY_ORACLE = "frequency_oracle"
    """A frequency oracle over a public domain, built as ``cls(epsilon, domain=...)`` at its
    variance-optimal settings, whose debiased counts are those of support counts
    (:class:`FrequencyOracle`): a candidate of
    :func:`~frameldp.core.mechanisms.choice.choose_mechanism` and a ``--mechanism`` name on the
    command line."""
    DISCOVERY = "discovery"
    """An open domain whose frequent strings are found without candidates
    (:class:`Discoverer`): ``reports.ldp.discover(column, top=...)``."""
    NUMERIC = "numeric"
    """Numbers on a public interval ``bounds = (lo, hi)``, not categories: reports are
    numbers and the estimate is a mean (``reports.ldp.mean``) or a distribution
    (``reports.ldp.distribution``)."""
    MEAN = "mean"
    """A numeric mechanism whose reports debias to an unbiased mean, with an exact variance
    per input (``variance(t)``, ``worst_variance``): a candidate of
    :func:`~frameldp.core.mechanisms.choice.choose_mechanism` given ``bounds``."""
    CALLER_KEY = "caller_key"
    """A caller's key (``key=``) may be reused across runs: its guarantee holds for any one
    run's reports of a row, whoever else's rows change."""


OPEN_DOMAIN: frozenset[Capability] = frozenset({Capability.CANDIDATES, Capability.DISCOVERY})
"""A mechanism with one of these capabilities takes strings of an open domain (no public
domain)."""


@dataclass(frozen=True)
class Statistic:
    """An additive sufficient statistic of a run of ``rows`` reports.

    ``parts`` are integer arrays (counts, bit sums: they add exactly) or float arrays (sums of
    numeric reports and of their squares) whose meaning the mechanism defines (per-bit sums,
    per-label counts, per-cohort bit sums and cohort sizes). Statistics of disjoint runs of rows
    add up, part by part, to the statistic of their union; a part's kind (integer or float) is
    the mechanism's, so statistics whose parts differ in kind are of different mechanisms.
    """

    parts: tuple[NDArray[Any], ...]
    """Integer or float arrays (:func:`numpy.issubdtype` of ``integer`` or ``floating``)."""
    rows: int

    def __add__(self, other: Statistic) -> Statistic:
        if len(other.parts) != len(self.parts) or any(
            _is_float(a) != _is_float(b) for a, b in zip(self.parts, other.parts, strict=True)
        ):
            raise ParameterError("statistics of different mechanisms do not add up")
        parts = tuple(a + b for a, b in zip(self.parts, other.parts, strict=True))
        return Statistic(parts, self.rows + other.rows)

    def repeated(self, times: int) -> Statistic:
        """The statistic of ``times`` runs of these same reports (additivity): what a query
        engine's ``GROUP BY`` count of identical reports stands for."""
        return Statistic(tuple(part * times for part in self.parts), self.rows * times)


def _is_float(part: NDArray[Any]) -> bool:
    return bool(np.asarray(part).dtype.kind == "f")


@dataclass(frozen=True)
class GroupStatistics:
    """The :class:`Statistic` of each of ``len(rows)`` groups of rows, stacked: every part
    has a leading group axis (``parts[i][g]`` is part ``i`` of group ``g``), ``rows[g]`` the
    rows of group ``g``. What a table by public groups reduces to in one pass over the
    reports (:meth:`GroupEstimator.statistics_by_group`)."""

    parts: tuple[NDArray[Any], ...]
    rows: NDArray[np.int64]

    @classmethod
    def stack(cls, statistics: Sequence[Statistic]) -> GroupStatistics:
        """The statistics of groups ``0, 1, ...`` (at least one; parts of equal shapes)."""
        parts = tuple(np.stack(group) for group in zip(*(s.parts for s in statistics), strict=True))
        return cls(parts, np.array([s.rows for s in statistics], dtype=np.int64))

    def __len__(self) -> int:
        return int(self.rows.size)

    def __getitem__(self, group: int) -> Statistic:
        return Statistic(tuple(part[group] for part in self.parts), int(self.rows[group]))

    def total(self) -> Statistic:
        """The statistic of all the groups' rows together (additivity)."""
        return Statistic(tuple(part.sum(axis=0) for part in self.parts), int(self.rows.sum()))

    def take(self, groups: NDArray[np.int64]) -> GroupStatistics:
        """The statistics of ``groups``, in that order."""
        return GroupStatistics(tuple(part[groups] for part in self.parts), self.rows[groups])

    def concatenated(self, *others: GroupStatistics) -> GroupStatistics:
        """These groups, then each of ``others``' (statistics of one mechanism), in one copy."""
        for other in others:
            if len(other.parts) != len(self.parts) or any(
                a.shape[1:] != b.shape[1:] or _is_float(a) != _is_float(b)
                for a, b in zip(self.parts, other.parts, strict=True)
            ):
                raise ParameterError("statistics of different mechanisms do not add up")
        stacks = (self, *others)
        parts = tuple(
            np.concatenate([stack.parts[i] for stack in stacks]) for i in range(len(self.parts))
        )
        return GroupStatistics(parts, np.concatenate([stack.rows for stack in stacks]))

    def summed_by(self, positions: NDArray[np.int64], size: int) -> GroupStatistics:
        """``size`` groups, group ``g`` the sum of these groups ``i`` with ``positions[i] ==
        g`` (additivity): how the groups of several batches merge."""
        parts = []
        for part in self.parts:
            summed = np.zeros((size, *part.shape[1:]), dtype=part.dtype)
            np.add.at(summed, positions, part)
            parts.append(summed)
        rows = np.zeros(size, dtype=np.int64)
        np.add.at(rows, positions, self.rows)
        return GroupStatistics(tuple(parts), rows)

    def repeated(self, times: NDArray[np.int64]) -> GroupStatistics:
        """Group ``g`` as ``times[g]`` runs of its reports (:meth:`Statistic.repeated`)."""
        parts = tuple(
            part * times.reshape(-1, *([1] * (part.ndim - 1))).astype(part.dtype)
            for part in self.parts
        )
        return GroupStatistics(parts, self.rows * times)


class Estimate(Protocol):
    """What an :class:`Estimator` finishes a statistic into; its type picks the result type
    (:func:`frameldp.results.result_of`): a frequency table for a
    :class:`~frameldp.core.estimation.FrequencyEstimate`."""

    @property
    def n(self) -> int:
        """The number of reports it is estimated from."""
        ...


class Randomizer(Protocol):
    """The client half of a mechanism: report columns, privatization, guarantee, spec."""

    name: ClassVar[str]
    """The spec's ``"mechanism"`` name."""
    title: ClassVar[str]
    """The name messages use ("Bloom RAPPOR")."""
    capabilities: ClassVar[frozenset[Capability]]

    @property
    def privacy(self) -> PrivacyGuarantee:
        """The guarantee of one person's report (for shuffle-model messages: the central one)."""
        ...

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters; ``from_spec`` rebuilds an equal mechanism."""
        ...

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """Names and Arrow storage types of the columns written for input ``column``, the
        report column (named ``column``) first."""
        ...

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
        """The report columns (:meth:`report_columns`) of one batch of ``column``, whose first
        row is row ``row_start`` of the whole input (errors name the column and the row).

        ``users``/``memo`` only for :data:`Capability.MEMOIZATION`.
        """
        ...


class Estimator(Protocol):
    """The server half of a mechanism: an additive statistic, finished into an estimate."""

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """The additive statistic of one batch of the report columns written for ``column``."""
        ...

    def finish(self, statistic: Statistic) -> Estimate:
        """The estimate of a (summed) statistic, with its uncertainty."""
        ...


class Mechanism(Randomizer, Estimator, Protocol):
    """What every frameldp mechanism answers (see the module docstring)."""


class GroupEstimator(Protocol):
    """An estimator that reduces and debiases many groups of rows at once: what a table by
    public groups costs, in whole-array operations instead of one call per group.

    Optional. :func:`~frameldp.core.group_statistics.statistics_by_group` and
    :func:`~frameldp.core.group_statistics.estimates_by_group` look both methods up on the
    mechanism's *class*, so a wrapper that forwards attributes (a column of a
    ``collect="sample"`` release) keeps its own statistic, group by group. Both must agree
    exactly with :meth:`Estimator.statistic` and :meth:`Estimator.finish` applied to each
    group on its own (tests/test_mechanism_contract.py checks every mechanism).
    """

    def statistics_by_group(
        self,
        reports: Mapping[str, pa.Array],
        groups: NDArray[np.int64],
        num_groups: int,
        *,
        column: str,
    ) -> GroupStatistics:
        """The statistic of each group ``g`` of the rows with ``groups == g`` (every group in
        ``[0, num_groups)``), reports checked as by :meth:`Estimator.statistic`."""
        ...

    def estimates_by_group(self, statistics: GroupStatistics) -> GroupEstimates:
        """:meth:`Estimator.finish` of every group's statistic (each group holds a row)."""
        ...


class MechanismClass(Protocol):
    """A registered mechanism class (:mod:`~frameldp.core.mechanisms.registry`): what the
    frame shortcuts and the command line build by name."""

    name: str
    title: str
    capabilities: frozenset[Capability]

    def __call__(self, *args: Any, **kwargs: Any) -> Mechanism:
        """A mechanism of the given parameters (validated by the class)."""
        ...

    def from_spec(self, spec: dict[str, Any]) -> Mechanism:
        """The mechanism a spec (:meth:`Randomizer.to_spec`) describes."""
        ...


class FrequencyEstimator(Mechanism, Protocol):
    """A mechanism whose estimate is a frequency table over its ``categories``: every
    mechanism of this package."""

    @property
    def categories(self) -> list[Hashable]:
        """The categories a debiased table lists, in bucket order (empty for an open domain)."""
        ...

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Unbiased counts with their variances from a (summed) statistic."""
        ...

    def finish(self, statistic: Statistic) -> FrequencyEstimate:
        """:meth:`debias` (:class:`FrequencyEstimation`)."""
        ...


class FrequencyEstimation:
    """The base of a :class:`FrequencyEstimator`: its estimate is its debiased counts."""

    def debias(self, statistic: Statistic) -> FrequencyEstimate:  # pragma: no cover - defined
        raise NotImplementedError  # by every mechanism

    def finish(self, statistic: Statistic) -> FrequencyEstimate:
        """The debiased counts of ``statistic`` (:meth:`debias`)."""
        return self.debias(statistic)


class BitReportsByGroup:
    """The :meth:`GroupEstimator.statistics_by_group` of packed bit-vector reports (RAPPOR,
    OUE, subset selection): per-bit sums of each group's reports, from
    :meth:`packed_reports`."""

    def packed_reports(
        self, reports: Mapping[str, pa.Array], column: str
    ) -> tuple[NDArray[np.uint8], int]:  # pragma: no cover - defined by every subclass
        """The checked ``(n, width)`` packed reports of ``column`` and their number of bits."""
        raise NotImplementedError

    def statistics_by_group(
        self,
        reports: Mapping[str, pa.Array],
        groups: NDArray[np.int64],
        num_groups: int,
        *,
        column: str,
    ) -> GroupStatistics:
        """Per-bit sums of each group's reports."""
        packed, num_bits = self.packed_reports(reports, column)
        check_padding(packed, num_bits)  # as the flat statistic: another mechanism's reports
        sums = group_bit_sums(packed, groups, num_groups, num_bits)
        return GroupStatistics((sums,), group_sizes(groups, num_groups))


class CodeReportsByGroup:
    """The :meth:`GroupEstimator.statistics_by_group` of reports that are codes (k-RR's
    labels, Hadamard response's columns): a histogram of each group's codes, from
    :meth:`report_codes`."""

    def report_codes(
        self, reports: Mapping[str, pa.Array], column: str
    ) -> tuple[NDArray[np.int64], int]:  # pragma: no cover - defined by every subclass
        """The checked codes of ``column``'s reports and how many codes there are."""
        raise NotImplementedError

    def statistics_by_group(
        self,
        reports: Mapping[str, pa.Array],
        groups: NDArray[np.int64],
        num_groups: int,
        *,
        column: str,
    ) -> GroupStatistics:
        """Reports per (group, code)."""
        codes, size = self.report_codes(reports, column)
        counts = group_bincount(codes, groups, num_groups, size)
        return GroupStatistics((counts,), counts.sum(axis=1))


class Memoizing(Mechanism, Protocol):
    """A mechanism with :data:`Capability.MEMOIZATION`."""

    @property
    def longitudinal(self) -> bool:
        """Whether this instance has a permanent response to memoize (k-RR: only with
        ``epsilon_infinity``; Bloom RAPPOR: always)."""
        ...

    def memo_id(self, memo: RandomSource, label: object, *, user_type: str) -> str:
        """Public name of the permanent responses under ``memo`` for ``label`` (not the key),
        and user ids of canonical type ``user_type`` (``"integer"``, ``"text"``, ``"bytes"``:
        ids of another type are other people, whose permanent responses are drawn anew, so
        their memo must have another name)."""
        ...

    def guarantee(self, memo: str | None = None) -> PrivacyGuarantee:
        """One report's guarantee; ``memo`` names its memoized permanent responses."""
        ...


class Decoder(FrequencyEstimator, Protocol):
    """A mechanism with :data:`Capability.CANDIDATES`."""

    def decode_statistic(
        self, statistic: Statistic, candidates: Any, *, significance: float = 0.05
    ) -> BloomDecoding:
        """Detected candidates with debiased counts."""
        ...

    def guarantee(self, memo: str | None = None) -> PrivacyGuarantee:
        """One report's guarantee; ``memo`` names its memoized permanent responses."""
        ...


class Discoverer(FrequencyEstimator, Protocol):
    """A mechanism with :data:`Capability.DISCOVERY`."""

    def discover(
        self,
        gather: Callable[[Callable[[Mapping[str, pa.Array]], Statistic]], Statistic],
        *,
        column: str,
        top: int = 20,
        width: int | None = None,
        significance: float = 0.05,
    ) -> Discovery:
        """The most frequent strings; ``gather(reduce)`` applies a reduction of one batch of
        the report columns to every batch and sums the statistics (the search reads the
        reports once per level)."""
        ...


@dataclass(frozen=True)
class OracleCosts:
    """Estimated CPU nanoseconds per report of a frequency oracle on one core: ``client``
    (privatize) and ``server`` (statistic and debiasing, a batch's fixed costs spread over its
    reports). A model of each mechanism's work, fitted to ``benchmarks/bench_frequency_oracles.py``
    on the reference machine (x86-64, 2 cores; docs/frequency_oracles.md, "Costs"): what the
    automatic choice compares, within a factor of about two of what a run takes. Reading the
    input values into the domain's codes (about 4 us per category a batch, the same for every
    mechanism) is left out."""

    client: float
    server: float

    @property
    def total(self) -> float:
        """Client and server together."""
        return self.client + self.server


def release_size(n: object) -> int:
    """``n``, the reports of a release whose costs are estimated: an integer >= 1."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ParameterError(f"costs: n must be an integer >= 1, got {shown(n)}", parameter="n")
    return int(n)


class FrequencyOracle(FrequencyEstimator, Protocol):
    """A mechanism with :data:`Capability.FREQUENCY_ORACLE`.

    A report *supports* a set of buckets (the reported one for k-RR, the set bits for unary
    encodings and subset selection, the preimage of the hash value for local hashing, the
    Hadamard half for Hadamard response); every bucket is supported with probability
    ``p`` by a report of its own value and ``q`` by a report of any other, so the debiased
    count ``(C_j - n q) / (p - q)`` has variance
    ``(c_j p (1 - p) + (n - c_j) q (1 - q)) / (p - q)^2`` (Wang et al., USENIX Security 2017).
    """

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """The realized ``(p, q)``."""
        ...

    @property
    def report_bits(self) -> int:
        """Bits one report takes (the tie-break of the automatic choice)."""
        ...

    def costs(self, n: int = 1_000_000) -> OracleCosts:
        """Estimated CPU time per report of a release of ``n`` reports (:class:`OracleCosts`)."""
        ...

    def supports(self, reports: Mapping[str, pa.Array], *, column: str) -> NDArray[np.uint8]:
        """``(rows, k)`` 0/1: which buckets each report of one batch supports (the per-row
        form of the support counts; joint tables of two columns multiply them,
        :mod:`frameldp.core.joint`). Reports are checked as by :meth:`Mechanism.statistic`."""
        ...


def spec_fingerprint(mechanism: Mechanism) -> str:
    """SHA-256 of a mechanism's canonical spec: what its noise streams are bound to, so that
    another mechanism (or the same at another epsilon) draws other noise."""
    return fingerprint(mechanism.to_spec())


def memoizes(mechanism: Mechanism) -> bool:
    """Whether ``mechanism`` memoizes permanent responses per (user, value): it declares
    :data:`Capability.MEMOIZATION` and this instance has a permanent response."""
    if Capability.MEMOIZATION not in mechanism.capabilities:
        return False
    memoizing: Memoizing = mechanism  # type: ignore[assignment]  # as it declares
    return memoizing.longitudinal
