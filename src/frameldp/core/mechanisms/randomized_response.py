"""k-ary randomized response (generalized / direct encoding), binary RR for k = 2."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import PrivacyEvent, PrivacyGuarantee, RandomizedResponseEvent
from frameldp.accounting.rounding import log_upper
from frameldp.arguments import check_codes, check_epsilon
from frameldp.core.columns import (
    check_report_labels,
    combined,
    label_array,
    label_counts,
    label_type,
    map_code_runs,
    single_codes,
    value_codes,
)
from frameldp.core.encoding import Domain, one_hot_rows
from frameldp.core.estimation import (
    FrequencyEstimate,
    GroupEstimates,
    debias_direct_counts,
    debias_direct_groups,
)
from frameldp.core.mechanisms._longitudinal import (
    TwoStage,
    chained_move,
    check_epsilon_infinity,
)
from frameldp.core.mechanisms._memo import UserDigests, randomize_in_runs
from frameldp.core.mechanisms._noise import noise_numerator
from frameldp.core.mechanisms.protocol import (
    Capability,
    CodeReportsByGroup,
    FrequencyEstimation,
    GroupStatistics,
    OracleCosts,
    Statistic,
    release_size,
)
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import (
    PRECISION_BITS,
    RandomSource,
    Rows,
)
from frameldp.errors import ParameterError, renamed

__all__ = ["RandomizedResponse"]

_ONE: Final = 1 << PRECISION_BITS


@register("randomized_response")
@dataclass(frozen=True)
class RandomizedResponse(TwoStage, CodeReportsByGroup, FrequencyEstimation):
    r"""k-ary randomized response over a public domain of ``k`` buckets.

    Report the true bucket with probability ``p = e^epsilon / (e^epsilon + k - 1)``, otherwise
    one of the other ``k - 1`` buckets uniformly at random. For ``k = 2`` this is Warner's
    binary randomized response.

    Parameters
    ----------
    epsilon
        Target privacy loss (> 0).
    domain
        The public domain (list, categorical dtype or :class:`~frameldp.core.encoding.Domain`).
    epsilon_infinity
        Longitudinal randomized response (L-GRR [4]_): a *permanent* k-RR response at
        ``epsilon_infinity`` (>= ``epsilon``), memoized per (user, value) when reports come with
        users, then an *instantaneous* k-RR of it, fresh for every report, chosen so that one
        report is ``epsilon``-LDP end to end. ``None`` (default): one-stage k-RR.

    Privacy
    -------
    Any output is reported with probability ``p`` under one input and at least
    ``q = (1 - p) / (k - 1)`` under any other, so the mechanism is ``ln(p / q)``-LDP, which is
    ``epsilon`` [1]_ [2]_. The probability of reporting another bucket is realized exactly as a
    multiple of ``2**-64`` at least as large as requested (more noise); ``privacy`` reports
    ``ln(p / q)`` of the realized probabilities, rounded up, as a
    :class:`~frameldp.accounting.PrivacyGuarantee`.

    With ``epsilon_infinity``: k-RR composed with k-RR is k-RR, with move probability
    ``M = m_1 + m_2 (1 - m_1 k / (k - 1))`` for permanent and instantaneous move probabilities
    ``m_1``, ``m_2`` (each realized on the ``2**-64`` grid, rounded up), so one report is
    ``ln(p / q)``-LDP for ``p = 1 - M`` [4]_. Any number of reports of one value are a
    post-processing of the permanent response: ``epsilon_infinity`` (Erlingsson et al. 2014,
    Thm. 1). :meth:`guarantee` gives a :class:`~frameldp.accounting.MemoizedEvent`, which
    accountants and the ledger fold for reports sharing a memo.

    Estimation
    ----------
    ``ĉ_j = (Y_j - n q) / (p - q)`` is unbiased with variance
    ``(c_j p (1 - p) + (n - c_j) q (1 - q)) / (p - q)^2`` [2]_ [3]_.

    References
    ----------
    .. [1] S. L. Warner, "Randomized Response", JASA 60(309), 1965.
    .. [2] P. Kairouz, K. Bonawitz, D. Ramage, "Discrete Distribution Estimation under Local
       Privacy", ICML 2016.
    .. [3] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017.
    .. [4] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs, "Frequency Estimation of
       Evolving Data Under Local Differential Privacy", EDBT 2023 (arXiv:2210.00262), Sec. 3
       (L-GRR).

    Examples
    --------
    >>> mech = RandomizedResponse(2.0, domain=["AA", "DL", "UA"])
    >>> round(mech.keep_probability, 6)
    0.786986
    >>> mech.privacy.epsilon <= 2.0
    True
    """

    name: ClassVar[str] = "randomized_response"
    title: ClassVar[str] = "k-ary randomized response"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.CALLER_KEY, Capability.FREQUENCY_ORACLE, Capability.MEMOIZATION}
    )

    epsilon: float
    domain: Domain = field(kw_only=True)
    epsilon_infinity: float | None = field(default=None, kw_only=True)
    _move_numerator: int = field(init=False, repr=False, compare=False)
    _permanent_numerator: int = field(init=False, repr=False, compare=False)
    _keep: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "RandomizedResponse"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        epsilon = check_epsilon(owner, "epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        k = self.num_buckets
        if k > 1 << 32:
            raise ParameterError(f"{owner}: domain size must be at most 2**32, got {k}")
        # P[move] = (k - 1) / (e^eps + k - 1)
        numerator = noise_numerator(k - 1, epsilon)
        permanent = 0
        move = Fraction(numerator, _ONE)
        infinity = check_epsilon_infinity(epsilon, self.epsilon_infinity, owner)
        if infinity is not None:
            object.__setattr__(self, "epsilon_infinity", infinity)
            permanent = noise_numerator(k - 1, infinity)
            numerator, move = chained_move(k, permanent, move)
        object.__setattr__(self, "_move_numerator", numerator)
        object.__setattr__(self, "_permanent_numerator", permanent)
        object.__setattr__(self, "_keep", 1 - move)
        # Rounding toward more noise can pass the uniform point (k - 1) / k, after which the
        # report would favour the *other* values: refuse instead of realizing that.
        if move >= Fraction(k - 1, k):
            raise ParameterError(
                f"{owner}: epsilon={epsilon!r} is too small to realize for k={k}; "
                "the reports would be uniform noise"
            )

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> RandomizedResponse:
        """Rebuild from :meth:`to_spec`."""
        return cls(
            spec["epsilon"],
            domain=Domain.coerce(
                spec["domain"]["categories"],
                unknown=spec["domain"]["unknown"],
                nulls=spec["domain"]["nulls"],
            ),
            epsilon_infinity=spec.get("epsilon_infinity"),
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (rebuilding realizes the same noise); the one-stage
        spec has no ``epsilon_infinity`` key."""
        spec = {"mechanism": self.name, "epsilon": self.epsilon, "domain": self.domain.to_json()}
        if self.epsilon_infinity is not None:
            spec["epsilon_infinity"] = self.epsilon_infinity
        return spec

    @property
    def num_buckets(self) -> int:
        """Number of buckets (reserved buckets included)."""
        return self.domain.size

    @property
    def k(self) -> int:
        """Deprecated name of :attr:`num_buckets`."""
        renamed("RandomizedResponse", "k", "num_buckets")
        return self.num_buckets

    @property
    def _ratio(self) -> Fraction:
        """Realized ``p / q`` (end to end) as an exact rational."""
        return self._keep * (self.num_buckets - 1) / (1 - self._keep)

    @property
    def keep_probability(self) -> float:
        """Realized ``p``: probability of reporting the true bucket (end to end)."""
        return float(self._keep)

    @property
    def other_probability(self) -> float:
        """Realized ``q``: probability of reporting one given other bucket."""
        return float((1 - self._keep) / (self.num_buckets - 1))

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, q)``: a bucket is reported for a value of it, and for one given other."""
        return self.keep_probability, self.other_probability

    @property
    def report_bits(self) -> int:
        """``ceil(log2 k)`` bits a report."""
        return max(1, (self.num_buckets - 1).bit_length())

    def costs(self, n: int = 1_000_000) -> OracleCosts:
        """One keyed draw a report; a histogram of ``k`` labels a release."""
        return OracleCosts(client=60, server=10 + self.num_buckets / release_size(n))

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln(p / q)`` of the realized probabilities, rounded up.

        The guarantee holds one :class:`~frameldp.accounting.RandomizedResponseEvent` at that
        epsilon and ``num_buckets``: the exact Rényi curve, the tight zCDP rho and exact
        composition. :meth:`guarantee` names memoized permanent responses.
        """
        return self.guarantee()

    def _stage_events(self) -> tuple[PrivacyEvent, PrivacyEvent | None, dict[str, Any]]:
        k = self.num_buckets
        event = RandomizedResponseEvent(log_upper(self._ratio), k)
        parameters = {"num_buckets": k, "keep_probability": self.keep_probability}
        if self.epsilon_infinity is None:
            return event, None, parameters
        move = Fraction(self._permanent_numerator, _ONE)
        permanent = RandomizedResponseEvent(log_upper((1 - move) * (k - 1) / move), k)
        return event, permanent, parameters

    def _instant_event(self) -> tuple[PrivacyEvent | None, int]:
        k, move = self.num_buckets, Fraction(self._move_numerator, _ONE)
        if move == 0:
            return None, 0
        return RandomizedResponseEvent(log_upper((1 - move) * (k - 1) / move), k), 1

    def randomize(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
        users: NDArray[np.uint8] | None = None,
        memo: RandomSource | None = None,
    ) -> NDArray[np.int64]:
        """Randomize integer codes in ``[0, k)``.

        Row ``i`` moves with an exact Bernoulli bit and, if it moves, goes to
        ``u + (u >= code)`` for an exactly uniform ``u`` in ``[0, k - 1)``; both are functions
        of (key, ``label`` (the column's identity), spec, global row ``row_start + i``, and
        under a caller's key or a seed the row's code) only (see
        :class:`~frameldp.core.randomness.Rows`).

        With ``epsilon_infinity``, that is the instantaneous response, applied to a permanent
        one drawn the same way. With ``users`` (a 16-byte digest per row), the permanent
        response is a function of (``memo``, default ``source``; ``label``; spec; the row's
        user and code) only (:meth:`~frameldp.core.randomness.Rows.memoized`): the same user
        with the same value gets the same one in every call under that memo key.
        """
        codes = check_codes(self.title, "codes", codes, self.num_buckets)
        rows, held = self._stage_rows(
            codes, source=source, label=label, row_start=row_start, users=users, memo=memo
        )
        if held is None:
            return self._moved(codes, rows, self._move_numerator, "")
        permanent = self._moved(codes, held, self._permanent_numerator, "permanent ")
        return self._moved(permanent, rows, self._move_numerator, "")

    def moved(self, codes: NDArray[np.int64], rows: Rows) -> NDArray[np.int64]:
        """One-stage k-RR of ``codes`` in ``[0, k)`` under the noise of ``rows`` (purposes
        ``"move"`` and ``"other"``): for a mechanism that randomizes a code it derived itself
        (a rounded level), under the rows of its own input. With ``epsilon_infinity`` this is
        the instantaneous response only: apply it to :meth:`permanent`'s output."""
        return self._moved(codes, rows, self._move_numerator, "")

    def permanent(self, codes: NDArray[np.int64], rows: Rows) -> NDArray[np.int64]:
        """The permanent response of ``codes`` under the noise of ``rows`` (purposes
        ``"permanent move"`` and ``"permanent other"``; memoized rows for a memoized one);
        ``epsilon_infinity`` must be set."""
        if self.epsilon_infinity is None:
            raise ParameterError(f"{self.title}: a permanent response needs epsilon_infinity")
        return self._moved(codes, rows, self._permanent_numerator, "permanent ")

    def _moved(
        self, codes: NDArray[np.int64], rows: Rows, numerator: int, stage: str
    ) -> NDArray[np.int64]:
        """k-RR of ``codes`` with move probability ``numerator / 2**64`` (purposes prefixed by
        ``stage``)."""
        moves = rows.flags(stage + "move", numerator)
        if self.num_buckets == 2:
            others = 1 - codes
        else:  # uniform over the k - 1 other buckets: skip the row's own
            others = rows.uniform(stage + "other", self.num_buckets - 1)
            np.add(others, others >= codes, out=others)
        # where(moves, others, codes), in place and without branches (a random mask makes
        # numpy.where's selection three times slower than this arithmetic)
        np.subtract(others, codes, out=others)
        np.multiply(others, moves, out=others)
        np.add(others, codes, out=others)
        return others

    # ------------------------------------------------------------------ the protocol

    @property
    def categories(self) -> list[Hashable]:
        """Bucket labels."""
        return list(self.domain.labels)

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """One dictionary (categorical) column of reported labels; the null bucket is null."""
        check_report_labels(self.domain, column)
        return {column: label_type(self.domain)}

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
        """Reported labels of one value per row; with ``users`` (the ids of ``user_column``)
        and ``epsilon_infinity``, permanent responses memoized per (user, value) under
        ``memo``."""
        check_report_labels(self.domain, column)
        owner = "k-ary randomized response"
        if users is not None:  # values, then user ids, checked whole first (errors in order)
            codes = single_codes(values, self.domain, column, row_start, owner)
            digests = UserDigests.of_column(users, column, user_column, row_start, memo or source)
            memoized = randomize_in_runs(
                self.randomize,
                codes,
                digests,
                column=column,
                source=source,
                row_start=row_start,
                memo=memo,
            )
            return {column: label_array(memoized, self.domain)}
        reports = np.empty(len(values), dtype=np.int32)

        def privatize_rows(start: int, stop: int, codes: NDArray[np.int64]) -> None:
            reports[start:stop] = self.randomize(
                codes, source=source, label=column, row_start=row_start + start, memo=memo
            )

        map_code_runs(values, self.domain, column, row_start, owner, privatize_rows)
        return {column: label_array(reports, self.domain)}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Reports per label."""
        counts = label_counts(reports[column], self.domain, column)
        return Statistic((counts,), int(counts.sum()))

    def report_codes(
        self, reports: Mapping[str, pa.Array], column: str
    ) -> tuple[NDArray[np.int64], int]:
        """The reported labels' bucket codes."""
        codes = value_codes(combined(reports[column]), self.domain.as_reported(), column)
        return codes, self.num_buckets

    def estimates_by_group(self, statistics: GroupStatistics) -> GroupEstimates:
        """:meth:`debias` of every group's histogram."""
        (counts,) = statistics.parts
        return debias_direct_groups(
            counts, statistics.rows, self.keep_probability, self.other_probability
        )

    def supports(self, reports: Mapping[str, pa.Array], *, column: str) -> NDArray[np.uint8]:
        """One-hot rows of the reported labels."""
        codes = value_codes(combined(reports[column]), self.domain.as_reported(), column)
        return one_hot_rows(codes, self.num_buckets)

    def estimate(self, reports: NDArray[np.int64]) -> FrequencyEstimate:
        """Debiased counts from report codes."""
        reports = np.asarray(reports, dtype=np.int64)
        counts = np.bincount(reports, minlength=self.num_buckets).astype(np.int64)
        return self.debias(Statistic((counts,), reports.size))

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Debiased counts from the report histogram of ``statistic.rows`` reports."""
        (counts,) = statistic.parts
        return debias_direct_counts(
            counts, statistic.rows, self.keep_probability, self.other_probability
        )
