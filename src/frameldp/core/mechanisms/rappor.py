"""RAPPOR bit-vector randomized response (unary encoding), basic one-time and k-RAPPOR."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final, TypeVar

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import (
    PrivacyEvent,
    PrivacyGuarantee,
    RandomizedResponseEvent,
    RapporEvent,
)
from frameldp.accounting.rounding import log_upper
from frameldp.accounting.unary_memo import unary_memo_losses
from frameldp.arguments import check_codes, check_epsilon, check_number
from frameldp.core.columns import bits_array, combined, is_list, packed_bits, set_codes, value_codes
from frameldp.core.encoding import (
    Domain,
    count_bits,
    k_hot_packed,
    one_hot_packed,
    packed_width,
    report_bits_matrix,
    xor_one_hot,
)
from frameldp.core.estimation import (
    FrequencyEstimate,
    GroupEstimates,
    debias_unary_counts,
    debias_unary_groups,
)
from frameldp.core.mechanisms._longitudinal import (
    TwoStage,
    chained_move,
    check_epsilon_infinity,
    permanent_rows,
    value_digests,
)
from frameldp.core.mechanisms._memo import UserDigests, randomize_in_runs
from frameldp.core.mechanisms._noise import FLOAT_MARGIN
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
from frameldp.core.randomness import PRECISION_BITS, RandomSource, dyadic_at_least
from frameldp.errors import ParameterError, shown

__all__ = ["Rappor"]

_Estimates = TypeVar("_Estimates", FrequencyEstimate, GroupEstimates)

_ONE: Final = 1 << PRECISION_BITS
_HALF: Final = _ONE >> 1


def _flip_numerator(epsilon: float, max_weight: int) -> int:
    """``f/2 = 1 / (1 + e^{epsilon / (2m)})`` as a multiple of ``2**-64``, rounded up (at least
    ``2**-64``: never a noiseless bit; at most 1/2)."""
    tail = math.exp(-epsilon / (2 * max_weight))  # 1 / (1 + e^x) without overflow
    return max(1, dyadic_at_least(min(0.5, tail / (1.0 + tail) * (1 + FLOAT_MARGIN))))


@register("rappor")
@dataclass(frozen=True)
class Rappor(TwoStage, BitReportsByGroup, FrequencyEstimation):
    r"""RAPPOR bit-vector randomized response over a public domain.

    A value is one-hot encoded in ``k = domain.size`` bits (a set of at most ``max_weight = m``
    values is k-hot encoded) and every bit is flipped independently with probability ``f/2``:
    the basic one-time RAPPOR of Erlingsson et al. for ``m = 1``, k-RAPPOR for ``m > 1``.

    Parameters
    ----------
    epsilon
        Target privacy loss; then ``f/2 = 1 / (1 + e^{epsilon / (2m)})``. Exactly one of
        ``epsilon`` and ``f``.
    f
        RAPPOR's noise parameter in ``(0, 1]`` (each bit is replaced by a fair coin with
        probability ``f``).
    domain
        The public domain (list, categorical dtype or :class:`~frameldp.core.encoding.Domain`).
    max_weight
        Largest number of ones in an input vector (``1 <= m <= k``).
    epsilon_infinity
        Longitudinal RAPPOR: a *permanent* RAPPOR response at ``epsilon_infinity``
        (>= ``epsilon``), memoized per (user, value) when reports come with users, then every
        bit flipped again, fresh for every report, so that one report is ``epsilon``-LDP end to
        end (needs ``epsilon``, not ``f``). ``None`` (default): one stage.

    Privacy
    -------
    Two inputs differ in at most ``2m`` bits, each contributing a likelihood ratio of at most
    ``(1 - f/2) / (f/2)``, so the mechanism is ``epsilon = 2m ln((2 - f) / f)``-LDP [1]_ [2]_.
    The flip probability is realized exactly as a multiple of ``2**-64`` at least as large as
    requested (more noise); ``privacy`` reports the epsilon of that realized probability,
    rounded up, as a :class:`~frameldp.accounting.PrivacyGuarantee`. Its Rényi curve is
    ``2m`` times that of binary randomized response at ``epsilon / (2m)`` [3]_.

    With ``epsilon_infinity``: a bit flipped with probability ``φ_1`` (permanent) and then
    ``φ_2`` (instantaneous) is flipped with probability ``φ = φ_1 + φ_2 (1 - 2 φ_1)``, so the
    end-to-end channel is RAPPOR with flip probability ``φ``, ``2m ln((1 - φ)/φ)``-LDP; ``φ_2``
    is the multiple of ``2**-64`` that makes ``φ`` at least the one-stage flip probability at
    ``epsilon``. Any number of reports of one value are a post-processing of the permanent
    response: ``epsilon_infinity`` [1]_ (Thm. 1) [4]_ (L-SUE).
    :meth:`guarantee` gives a :class:`~frameldp.accounting.MemoizedEvent`.

    Estimation
    ----------
    ``ĉ_j = (Y_j - n f/2) / (1 - f)`` is unbiased with variance
    ``n (f/2)(1 - f/2) / (1 - f)^2`` for every bucket [2]_.

    References
    ----------
    .. [1] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
       Privacy-Preserving Ordinal Response", CCS 2014.
    .. [2] A. Gentle, "Proof of make_randomized_response_bitvec", OpenDP, 2024, Thm. 3.2-3.4.
    .. [3] "Tight RDP and zCDP bounds for RAPPOR", 2024 (Thm. 1, 6).
    .. [4] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs, "Frequency Estimation of
       Evolving Data Under Local Differential Privacy", EDBT 2023 (arXiv:2210.00262), Sec. 3.

    Examples
    --------
    >>> mech = Rappor(epsilon=1.0, domain=["a", "b", "c"])
    >>> mech.privacy.epsilon <= 1.0
    True
    >>> round(mech.f, 6)
    0.755081
    """

    name: ClassVar[str] = "rappor"
    title: ClassVar[str] = "RAPPOR"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {
            Capability.SETS,
            Capability.BIT_VECTORS,
            Capability.CALLER_KEY,
            Capability.FREQUENCY_ORACLE,
            Capability.MEMOIZATION,
        }
    )

    epsilon: float | None = None
    f: float | None = field(default=None, kw_only=True)
    domain: Domain = field(kw_only=True)
    max_weight: int = field(default=1, kw_only=True)
    epsilon_infinity: float | None = field(default=None, kw_only=True)
    _flip_numerator: int = field(init=False, repr=False, compare=False)
    _permanent_numerator: int = field(init=False, repr=False, compare=False)
    _flip: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "Rappor"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        m = self.max_weight
        if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
            raise ParameterError(f"{owner}: max_weight must be an integer >= 1, got {shown(m)}")
        if m > self.num_bits:
            raise ParameterError(
                f"{owner}: max_weight must be at most the domain size {self.num_bits}, got "
                f"{shown(m)}"
            )
        object.__setattr__(self, "max_weight", int(m))
        if (self.epsilon is None) == (self.f is None):
            raise ParameterError(
                f"{owner}: pass exactly one of epsilon and f, got epsilon={shown(self.epsilon)}, "
                f"f={shown(self.f)}"
            )
        if self.epsilon is not None:
            epsilon = check_epsilon(owner, "epsilon", self.epsilon)
            numerator = _flip_numerator(epsilon, m)
            object.__setattr__(self, "epsilon", epsilon)
        else:
            try:
                f = check_number(owner, "f", self.f)
            except ParameterError:  # not a number: said below, as for numbers out of range
                f = math.nan
            if not 0 < f <= 1:
                raise ParameterError(f"{owner}: f must be in (0, 1], got {shown(self.f)}")
            object.__setattr__(self, "f", f)
            numerator = dyadic_at_least(Fraction(f) / 2)
        numerator = max(1, min(numerator, _HALF))
        if self.epsilon is not None and numerator == _HALF:
            raise ParameterError(
                f"{owner}: epsilon={shown(self.epsilon)} is too small to realize with "
                f"max_weight={m}; the reports would be pure noise (pass f=1.0 if that is meant)"
            )
        permanent, flip = 0, Fraction(numerator, _ONE)
        if self.epsilon_infinity is not None:
            if self.epsilon is None:
                raise ParameterError(
                    f"{owner}: epsilon_infinity needs epsilon (one report's target), not f "
                    f"(a one-stage flip probability), got f={shown(self.f)}"
                )
            infinity = check_epsilon_infinity(self.epsilon, self.epsilon_infinity, owner)
            assert infinity is not None  # epsilon_infinity is set
            object.__setattr__(self, "epsilon_infinity", infinity)
            permanent = _flip_numerator(infinity, m)
            numerator, flip = chained_move(2, permanent, flip)
        object.__setattr__(self, "_flip_numerator", numerator)
        object.__setattr__(self, "_permanent_numerator", permanent)
        object.__setattr__(self, "_flip", flip)
        if self.epsilon is not None:
            object.__setattr__(self, "f", 2 * self.flip_probability)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Rappor:
        """Rebuild from :meth:`to_spec`."""
        return cls(
            spec.get("epsilon"),
            f=None if spec.get("epsilon") is not None else spec.get("f"),
            domain=Domain.coerce(
                spec["domain"]["categories"],
                unknown=spec["domain"]["unknown"],
                nulls=spec["domain"]["nulls"],
            ),
            max_weight=spec.get("max_weight", 1),
            epsilon_infinity=spec.get("epsilon_infinity"),
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (as requested: rebuilding realizes the same noise);
        the one-stage spec has no ``epsilon_infinity`` key."""
        requested_f = None if self.epsilon is not None else self.f
        spec = {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "f": requested_f,
            "max_weight": self.max_weight,
            "domain": self.domain.to_json(),
        }
        if self.epsilon_infinity is not None:
            spec["epsilon_infinity"] = self.epsilon_infinity
        return spec

    @property
    def num_bits(self) -> int:
        """Length ``k`` of the bit vector (the domain size, reserved buckets included)."""
        return self.domain.size

    @property
    def flip_probability(self) -> float:
        """Realized probability ``f/2`` that a bit is flipped (end to end; one stage: exactly a
        multiple of ``2**-64``)."""
        return float(self._flip)

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(1 - f/2, f/2)``: a bucket's bit is 1 for a report of it, and of another value."""
        return 1.0 - self.flip_probability, self.flip_probability

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
        """Pure epsilon ``2m ln((1 - f/2) / (f/2))`` of the realized flip probability.

        The guarantee holds one :class:`~frameldp.accounting.RapporEvent`: ``2m`` binary
        randomized responses at the per-bit epsilon, which gives the exact Rényi curve, the tight
        zCDP rho ``2m eps_bit tanh(eps_bit / 2)`` and exact composition. :meth:`guarantee` names
        memoized permanent responses.
        """
        return self.guarantee()

    def _stage_events(self) -> tuple[PrivacyEvent, PrivacyEvent | None, dict[str, Any]]:
        m = self.max_weight
        event = RapporEvent(log_upper((1 - self._flip) / self._flip), m)
        parameters = {
            "num_bits": self.num_bits,
            "max_weight": m,
            "flip_probability": self.flip_probability,
        }
        if self.epsilon_infinity is None:
            return event, None, parameters
        permanent = Fraction(self._permanent_numerator, _ONE)
        return event, RapporEvent(log_upper((1 - permanent) / permanent), m), parameters

    def _instant_event(self) -> tuple[PrivacyEvent | None, int]:
        # Permanent responses may differ in every bit: each bit's flip is one binary RR.
        flip = Fraction(self._flip_numerator, _ONE)
        if flip == 0:
            return None, 0
        return RandomizedResponseEvent(log_upper((1 - flip) / flip), 2), self.num_bits

    def _exact_person_losses(self) -> tuple[float, ...]:
        # One-hot vectors (at most one value per cell: a set-valued cell may be empty, the
        # zero vector): every bit is flipped with the permanent probability, then with the
        # instantaneous one (L-SUE).
        if self.max_weight != 1:
            return ()
        permanent = Fraction(self._permanent_numerator, _ONE)
        flip = Fraction(self._flip_numerator, _ONE)
        return unary_memo_losses(self.num_bits, 1 - permanent, permanent, flip, empty=True)

    def encode(self, codes: NDArray[np.int64]) -> NDArray[np.uint8]:
        """One-hot bit vectors of integer codes."""
        return one_hot_packed(np.asarray(codes, dtype=np.int64), self.num_bits)

    def encode_sets(
        self,
        offsets: NDArray[np.int64],
        codes: NDArray[np.int64],
        *,
        column: str = "values",
        row_offset: int = 0,
    ) -> NDArray[np.uint8]:
        """k-hot bit vectors of set-valued cells in CSR form (at most ``max_weight`` items).

        ``row_offset`` is the frame row of the first cell, for error messages.
        """
        return k_hot_packed(
            offsets,
            codes,
            self.num_bits,
            max_weight=self.max_weight,
            column=column,
            row_offset=row_offset,
        )

    def randomize(
        self,
        bits: NDArray[np.uint8],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
        users: NDArray[np.uint8] | None = None,
        memo: RandomSource | None = None,
    ) -> NDArray[np.uint8]:
        """Flip every bit of the packed vectors with probability ``f/2``.

        ``label`` is the column's identity. The noise of row ``i`` is a function of (key,
        ``label``, this mechanism's spec, global row ``row_start + i``, and under a caller's
        key or a seed the row's bits) only (see :class:`~frameldp.core.randomness.Rows`), so
        any chunking of the rows gives the same reports.

        With ``epsilon_infinity``, that is the instantaneous flip, applied to a permanent
        response drawn the same way. With ``users`` (a 16-byte digest per row), the permanent
        response is a function of (``memo``, default ``source``; ``label``; spec; the row's
        user and bit vector) only (:meth:`~frameldp.core.randomness.Rows.memoized`): the same
        user with the same value gets the same one in every call under that memo key.
        """
        bits = np.asarray(bits, dtype=np.uint8)
        width = packed_width(self.num_bits)
        if bits.ndim != 2 or bits.shape[1] != width:
            raise ParameterError(f"bits must have shape (n, {width}), got {bits.shape}")
        noise = self._noise(
            source,
            label,
            row_start,
            bits.shape[0],
            lambda: bits,
            users,
            memo,
            lambda: value_digests(bits),
        )
        np.bitwise_xor(noise, bits, out=noise)
        return noise

    def randomize_codes(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
        users: NDArray[np.uint8] | None = None,
        memo: RandomSource | None = None,
        out: NDArray[np.uint8] | None = None,
    ) -> NDArray[np.uint8]:
        """``randomize(encode(codes))`` without materializing the one-hot vectors (under a
        fresh key; a caller's key binds the noise to them).

        Same reports, bit for bit: the one-hot bit is XORed into the noise. ``out`` (uint8,
        ``(len(codes), ceil(k / 8))``, C-contiguous) receives the reports instead of a new
        array: a pipeline that reuses it per batch never pays for new memory pages. The
        reports are ``out`` itself, so copy them (or finish with them) before the next call
        reuses it; if the call raises, what ``out`` holds is unspecified.
        """
        codes = check_codes(self.title, "codes", codes, self.num_bits)

        def values() -> NDArray[np.uint8]:  # digests of the one-hot rows, each hashed once
            present = np.bincount(codes, minlength=self.num_bits) != 0
            distinct = np.flatnonzero(present)
            position = np.cumsum(present) - 1  # each code's place among the distinct ones
            return np.take(value_digests(self.encode(distinct)), position[codes], axis=0)

        noise = self._noise(
            source,
            label,
            row_start,
            codes.size,
            lambda: self.encode(codes),
            users,
            memo,
            values,
            out,
        )
        return xor_one_hot(noise, codes, self.num_bits)

    def _noise(
        self,
        source: RandomSource,
        label: object,
        row_start: int,
        num_rows: int,
        bits: Callable[[], NDArray[np.uint8]],
        users: NDArray[np.uint8] | None,
        memo: RandomSource | None,
        values: Callable[[], NDArray[np.uint8]],
        out: NDArray[np.uint8] | None = None,
    ) -> NDArray[np.uint8]:
        """Bits that are 1 with the flip probability, keyed by (label, spec, row, value); with
        ``epsilon_infinity``, the XOR of the instantaneous and the permanent flips, the
        permanent ones keyed by (user, value digest ``values()``) with ``users``."""
        base = (label, self._stream_suffix)
        rows = source.rows(base, row_start, num_rows, bits)
        noise = rows.bernoulli("flip", self._flip_numerator, self.num_bits, out=out)
        if self.epsilon_infinity is None:
            if users is not None:
                raise ParameterError("users are only used with epsilon_infinity")
            return noise
        held = permanent_rows(
            rows,
            source=source,
            memo=memo,
            label=base,
            users=users,
            values=values,
        )
        permanent = held.bernoulli("permanent flip", self._permanent_numerator, self.num_bits)
        np.bitwise_xor(noise, permanent, out=noise)
        return noise

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
        """Reports of one value (one-hot) or a set of values (k-hot) per row; with ``users``
        (the ids of ``user_column``) and ``epsilon_infinity``, permanent responses memoized per
        (user, value) under ``memo``."""
        array = combined(values)
        digests = (  # user ids checked before values
            None
            if users is None
            else UserDigests.of_column(users, column, user_column, row_start, memo or source)
        )
        inputs: NDArray[Any]
        if is_list(array):
            offsets, codes = set_codes(array, self.domain, column, row_start)
            inputs = self.encode_sets(offsets, codes, column=column, row_offset=row_start)
            randomize: Callable[..., NDArray[np.uint8]] = self.randomize
        else:
            inputs = value_codes(array, self.domain, column, lambda row: row_start + row)
            randomize = self.randomize_codes
        if digests is None:
            reports = randomize(
                inputs, source=source, label=column, row_start=row_start, users=None, memo=memo
            )
        else:
            reports = randomize_in_runs(
                randomize,
                inputs,
                digests,
                column=column,
                source=source,
                row_start=row_start,
                memo=memo,
            )
        return {column: bits_array(reports)}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Per-bit sums of the reports."""
        packed = packed_bits(reports[column], self.num_bits, column)
        return Statistic((count_bits(packed, self.num_bits).astype(np.int64),), packed.shape[0])

    def packed_reports(
        self, reports: Mapping[str, pa.Array], column: str
    ) -> tuple[NDArray[np.uint8], int]:
        """The packed reports (``k`` bits each)."""
        return packed_bits(reports[column], self.num_bits, column), self.num_bits

    def estimates_by_group(self, statistics: GroupStatistics) -> GroupEstimates:
        """:meth:`debias` of every group's bit sums."""
        (bit_sums,) = statistics.parts
        return self._of_sets(debias_unary_groups(bit_sums, statistics.rows, self.flip_probability))

    def supports(self, reports: Mapping[str, pa.Array], *, column: str) -> NDArray[np.uint8]:
        """The report bits, one row per report."""
        return report_bits_matrix(
            packed_bits(reports[column], self.num_bits, column), self.num_bits
        )

    def estimate(self, reports: NDArray[np.uint8]) -> FrequencyEstimate:
        """Debiased counts from packed reports ``(n, ceil(k/8))``."""
        reports = np.asarray(reports, dtype=np.uint8)
        counts = count_bits(reports, self.num_bits).astype(np.int64)
        return self.debias(Statistic((counts,), reports.shape[0]))

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Debiased counts from the per-bit sums of ``statistic.rows`` reports."""
        (bit_sums,) = statistic.parts
        return self._of_sets(debias_unary_counts(bit_sums, statistic.rows, self.flip_probability))

    def _of_sets(self, estimates: _Estimates) -> _Estimates:
        """``estimates`` (one, or every group's) of sets of up to ``m = max_weight`` values a
        row: counts add up to at most ``m n``, and a report is not one value's channel (no
        iterative Bayesian update)."""
        if self.max_weight == 1:
            return estimates
        return replace(estimates, support=None, items_per_report=self.max_weight)
