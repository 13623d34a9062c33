"""Optimized unary encoding (OUE): unary encoding with the bit of the true value kept at 1/2."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import (
    OptimizedUnaryEncodingEvent,
    PrivacyEvent,
    PrivacyGuarantee,
    RandomizedResponseEvent,
)
from frameldp.accounting.rounding import log_upper
from frameldp.accounting.unary_memo import unary_memo_losses
from frameldp.arguments import check_codes, check_epsilon
from frameldp.core.columns import bits_array, packed_bits, single_codes
from frameldp.core.encoding import (
    Domain,
    count_bits,
    packed_width,
    report_bits_matrix,
    xor_one_hot,
)
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
from frameldp.core.mechanisms._memo import randomize_with_users
from frameldp.core.mechanisms._noise import noise_numerator
from frameldp.core.mechanisms.protocol import (
    BitReportsByGroup,
    Capability,
    FrequencyEstimation,
    GroupStatistics,
    OracleCosts,
    Statistic,
    release_size,
)
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import PRECISION_BITS, RandomSource, Rows
from frameldp.errors import ParameterError, shown

__all__ = ["OptimizedUnaryEncoding"]

_ONE: Final = 1 << PRECISION_BITS
_HALF: Final = _ONE >> 1


@register("optimized_unary_encoding")
@dataclass(frozen=True)
class OptimizedUnaryEncoding(TwoStage, BitReportsByGroup, FrequencyEstimation):
    r"""Optimized unary encoding over a public domain of ``k`` buckets.

    A value is one-hot encoded in ``k`` bits; the bit of the true value is reported as 1 with
    probability ``1/2`` and every other bit as 1 with probability ``q = 1 / (e^epsilon + 1)``,
    independently. Reports are packed bit vectors, ``ceil(k / 8)`` bytes, like RAPPOR's.

    Parameters
    ----------
    epsilon
        Target privacy loss (> 0).
    domain
        The public domain (list, categorical dtype or :class:`~frameldp.core.encoding.Domain`).
    epsilon_infinity
        Longitudinal OUE (L-OUE [2]_): a *permanent* OUE response at ``epsilon_infinity``
        (>= ``epsilon``), memoized per (user, value) when reports come with users, then every
        bit flipped with one probability, fresh for every report, so that one report is
        ``epsilon``-LDP end to end. ``None`` (default): one stage.

    Privacy
    -------
    Two values differ in law at their two bits only; the likelihood ratio of a report is at most
    ``(1/2)/q * (1 - q)/(1/2) = (1 - q)/q = e^epsilon``, so OUE is epsilon-LDP [1]_. ``q`` is
    realized exactly as a multiple of ``2**-64`` at least ``1 / (e^epsilon + 1)`` (more noise),
    and ``privacy`` reports ``ln((1 - q)/q)`` of the realized ``q``, rounded up, with one
    :class:`~frameldp.accounting.OptimizedUnaryEncodingEvent`: the worst-case loss is 0 with
    probability 1/2 and otherwise that of binary RR at epsilon, which gives the exact Rényi
    curve, the tight zCDP rho and exact composition
    (:mod:`frameldp.accounting.events.ternary`).

    With ``epsilon_infinity``: a permanent OUE response with ``q_1`` at ``epsilon_infinity``,
    each bit then flipped with probability ``r``, sets the true value's bit with probability
    ``1/2 (1 - r) + 1/2 r = 1/2`` and any other with ``q = q_1 + r (1 - 2 q_1)``: end to end it
    is OUE with ``q``, ``ln((1 - q)/q)``-LDP; ``r`` is the multiple of ``2**-64`` that makes
    ``q`` at least the one-stage ``q`` at ``epsilon``. Any number of reports of one value are a
    post-processing of the permanent response: ``epsilon_infinity`` [2]_.
    :meth:`guarantee` gives a :class:`~frameldp.accounting.MemoizedEvent`.

    Estimation
    ----------
    Bucket ``j``'s bit is set with probability ``p = 1/2`` by a report of ``j`` and ``q`` by any
    other, so ``ĉ_j = (Y_j - n q) / (1/2 - q)`` is unbiased with variance
    ``(c_j/4 + (n - c_j) q (1 - q)) / (1/2 - q)^2``; as ``c_j / n -> 0`` this is
    ``n 4 e^epsilon / (e^epsilon - 1)^2``, the smallest of the unary encodings [1]_ (RAPPOR's is
    ``e^{epsilon/2} / (e^{epsilon/2} - 1)^2``: 1.06 times OUE's at epsilon 1, 2.4 times at 4).

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017 (Sec. 4.4, Eq. 7).
    .. [2] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs, "Frequency Estimation of
       Evolving Data Under Local Differential Privacy", EDBT 2023 (arXiv:2210.00262), Sec. 3
       (L-OUE: OUE, then symmetric unary encoding).

    Examples
    --------
    >>> mech = OptimizedUnaryEncoding(2.0, domain=["AA", "DL", "UA"])
    >>> round(mech.zero_probability, 6)
    0.119203
    >>> mech.privacy.epsilon <= 2.0 + 1e-9
    True
    """

    name: ClassVar[str] = "optimized_unary_encoding"
    title: ClassVar[str] = "optimized unary encoding"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {
            Capability.BIT_VECTORS,
            Capability.CALLER_KEY,
            Capability.FREQUENCY_ORACLE,
            Capability.MEMOIZATION,
        }
    )

    epsilon: float
    domain: Domain = field(kw_only=True)
    epsilon_infinity: float | None = field(default=None, kw_only=True)
    _zero_numerator: int = field(init=False, repr=False, compare=False)
    _flip_numerator: int = field(init=False, repr=False, compare=False)
    _zero: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "OptimizedUnaryEncoding"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        epsilon = check_epsilon(owner, "epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        numerator = noise_numerator(1.0, epsilon)  # q = 1 / (e^eps + 1)
        if numerator >= _HALF:
            raise ParameterError(
                f"{owner}: epsilon={shown(epsilon)} is too small to realize; the reports would "
                "be uniform noise"
            )
        flip, zero = 0, Fraction(numerator, _ONE)
        infinity = check_epsilon_infinity(epsilon, self.epsilon_infinity, owner)
        if infinity is not None:
            object.__setattr__(self, "epsilon_infinity", infinity)
            numerator = noise_numerator(1.0, infinity)  # the permanent response's q_1
            flip, zero = chained_move(2, numerator, zero)
        object.__setattr__(self, "_zero_numerator", numerator)
        object.__setattr__(self, "_flip_numerator", flip)
        object.__setattr__(self, "_zero", zero)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> OptimizedUnaryEncoding:
        """Rebuild from :meth:`to_spec`."""
        return cls(
            spec["epsilon"],
            domain=Domain.from_json(spec["domain"]),
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
    def num_bits(self) -> int:
        """Length ``k`` of the bit vector (the domain size, reserved buckets included)."""
        return self.domain.size

    @property
    def zero_probability(self) -> float:
        """Realized ``q``: probability that a bit other than the true value's is 1 (end to
        end)."""
        return float(self._zero)

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(1/2, q)``: a bucket's bit is 1 for a report of it, and of another value."""
        return 0.5, self.zero_probability

    @property
    def report_bits(self) -> int:
        """``k`` bits a report."""
        return self.num_bits

    def costs(self, n: int = 1_000_000) -> OracleCosts:
        """A keyed bit per bucket, drawn 64 at a time; bit sums over ``k`` bits."""
        release_size(n)
        return OracleCosts(client=60 + 0.6 * self.num_bits, server=5 + 0.07 * self.num_bits)

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln((1 - q)/q)`` of the realized ``q``, rounded up, with one
        :class:`~frameldp.accounting.OptimizedUnaryEncodingEvent`; :meth:`guarantee` names
        memoized permanent responses."""
        return self.guarantee()

    def _stage_events(self) -> tuple[PrivacyEvent, PrivacyEvent | None, dict[str, Any]]:
        event = OptimizedUnaryEncodingEvent(log_upper((1 - self._zero) / self._zero))
        parameters = {"num_bits": self.num_bits, "zero_probability": self.zero_probability}
        if self.epsilon_infinity is None:
            return event, None, parameters
        q = self._zero_numerator
        return event, OptimizedUnaryEncodingEvent(log_upper(Fraction(_ONE - q, q))), parameters

    def _instant_event(self) -> tuple[PrivacyEvent | None, int]:
        # A symmetric flip of every bit of any permanent vector: one binary RR per bit.
        flip = Fraction(self._flip_numerator, _ONE)
        if flip == 0:
            return None, 0
        return RandomizedResponseEvent(log_upper((1 - flip) / flip), 2), self.num_bits

    def _exact_person_losses(self) -> tuple[float, ...]:
        # The permanent OUE holds the value's bit with a fair coin and every other bit with
        # q; every bit of it is then flipped (L-OUE).
        q = Fraction(self._zero_numerator, _ONE)
        flip = Fraction(self._flip_numerator, _ONE)
        return unary_memo_losses(self.num_bits, Fraction(1, 2), q, flip)

    def randomize(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
        users: NDArray[np.uint8] | None = None,
        memo: RandomSource | None = None,
    ) -> NDArray[np.uint8]:
        """Packed reports ``(n, ceil(k / 8))`` of integer codes in ``[0, k)``.

        Every bit is drawn 1 with ``q`` ("zero" stream), then the true value's bit is replaced
        by a fair coin ("one" stream); the noise of row ``i`` is a function of (key, ``label``,
        spec, global row ``row_start + i``, and under a caller's key or a seed the row's code)
        only (see :class:`~frameldp.core.randomness.Rows`).

        With ``epsilon_infinity``, that is the permanent response (streams "permanent zero",
        "permanent one"), and every bit is then flipped ("flip" stream). With ``users`` (a
        16-byte digest per row), the permanent response is a function of (``memo``, default
        ``source``; ``label``; spec; the row's user and code) only
        (:meth:`~frameldp.core.randomness.Rows.memoized`).
        """
        codes = check_codes(self.title, "codes", codes, self.num_bits)
        rows, held = self._stage_rows(
            codes, source=source, label=label, row_start=row_start, users=users, memo=memo
        )
        if held is None:
            return self._encoded(codes, rows, "")
        reports = self._encoded(codes, held, "permanent ")
        np.bitwise_xor(
            reports, rows.bernoulli("flip", self._flip_numerator, self.num_bits), out=reports
        )
        return reports

    def _encoded(self, codes: NDArray[np.int64], rows: Rows, stage: str) -> NDArray[np.uint8]:
        """OUE with ``q = _zero_numerator / 2**64`` of ``codes`` (purposes prefixed by
        ``stage``)."""
        reports = rows.bernoulli(stage + "zero", self._zero_numerator, self.num_bits)
        coins = rows.flags(stage + "one", _HALF)
        positions = np.arange(codes.size)
        shifts = (7 - (codes & 7)).astype(np.uint8)
        current = ((reports[positions, codes >> 3] >> shifts) & 1) != 0
        differ = np.flatnonzero(current != coins)
        reports[differ] = xor_one_hot(reports[differ], codes[differ], self.num_bits)
        return reports

    # ------------------------------------------------------------------ the protocol

    @property
    def categories(self) -> list[Hashable]:
        """Bucket labels, one per bit."""
        return list(self.domain.labels)

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """One column of packed bit vectors, ``ceil(k / 8)`` bytes each."""
        return {column: pa.binary(packed_width(self.num_bits))}

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
        """Reports of one value per row; with ``users`` (the ids of ``user_column``) and
        ``epsilon_infinity``, permanent responses memoized per (user, value) under ``memo``."""
        codes = single_codes(values, self.domain, column, row_start, self.title)
        reports = randomize_with_users(
            self.randomize,
            codes,
            column=column,
            source=source,
            row_start=row_start,
            users=users,
            user_column=user_column,
            memo=memo,
        )
        return {column: bits_array(reports)}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Per-bit sums of the reports."""
        packed = packed_bits(reports[column], self.num_bits, column, self.title)
        return Statistic((count_bits(packed, self.num_bits),), packed.shape[0])

    def packed_reports(
        self, reports: Mapping[str, pa.Array], column: str
    ) -> tuple[NDArray[np.uint8], int]:
        """The packed reports (``k`` bits each)."""
        return packed_bits(reports[column], self.num_bits, column, self.title), self.num_bits

    def estimates_by_group(self, statistics: GroupStatistics) -> GroupEstimates:
        """:meth:`debias` of every group's bit sums."""
        (bit_sums,) = statistics.parts
        return debias_direct_groups(bit_sums, statistics.rows, 0.5, self.zero_probability)

    def supports(self, reports: Mapping[str, pa.Array], *, column: str) -> NDArray[np.uint8]:
        """The report bits, one row per report."""
        packed = packed_bits(reports[column], self.num_bits, column, self.title)
        return report_bits_matrix(packed, self.num_bits)

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Debiased counts from the per-bit sums of ``statistic.rows`` reports."""
        (bit_sums,) = statistic.parts
        return debias_direct_counts(bit_sums, statistic.rows, 0.5, self.zero_probability)
