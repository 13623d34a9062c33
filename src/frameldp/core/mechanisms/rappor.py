"""RAPPOR bit-vector randomized response (unary encoding), basic one-time and k-RAPPOR."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import PrivacyGuarantee, RapporEvent
from frameldp.accounting.rounding import log_upper
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
from frameldp.core.estimation import FrequencyEstimate, debias_unary_counts
from frameldp.core.mechanisms._spec import (
    FLOAT_MARGIN,
    check_epsilon,
    check_number,
    fingerprint,
    register,
)
from frameldp.core.mechanisms.protocol import Capability, Statistic
from frameldp.core.randomness import PRECISION_BITS, RandomSource, dyadic_at_least
from frameldp.errors import ParameterError, shown

__all__ = ["Rappor"]

_HALF: Final = 1 << (PRECISION_BITS - 1)


@register("rappor")
@dataclass(frozen=True)
class Rappor:
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

    Privacy
    -------
    Two inputs differ in at most ``2m`` bits, each contributing a likelihood ratio of at most
    ``(1 - f/2) / (f/2)``, so the mechanism is ``epsilon = 2m ln((2 - f) / f)``-LDP [1]_ [2]_.
    The flip probability is realized exactly as a multiple of ``2**-64`` at least as large as
    requested (more noise); ``privacy`` reports the epsilon of that realized probability,
    rounded up, as a :class:`~frameldp.accounting.PrivacyGuarantee`. Its Rényi curve is
    ``2m`` times that of binary randomized response at ``epsilon / (2m)`` [3]_.

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
        }
    )

    epsilon: float | None = None
    f: float | None = field(default=None, kw_only=True)
    domain: Domain = field(kw_only=True)
    max_weight: int = field(default=1, kw_only=True)
    _flip_numerator: int = field(init=False, repr=False, compare=False)

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
            epsilon = check_epsilon(self.epsilon, owner)
            tail = math.exp(-epsilon / (2 * m))  # 1 / (1 + e^x) without overflow
            exact = tail / (1.0 + tail)
            numerator = dyadic_at_least(min(0.5, exact * (1 + FLOAT_MARGIN)))
            object.__setattr__(self, "epsilon", epsilon)
        else:
            try:
                f = check_number(self.f, owner, "f")
            except ParameterError:  # not a number: said below, as for numbers out of range
                f = math.nan
            if not 0 < f <= 1:
                raise ParameterError(f"{owner}: f must be in (0, 1], got {shown(self.f)}")
            object.__setattr__(self, "f", f)
            numerator = dyadic_at_least(Fraction(f) / 2)
        object.__setattr__(self, "_flip_numerator", max(1, min(numerator, _HALF)))
        if self.epsilon is not None and self._flip_numerator == _HALF:
            raise ParameterError(
                f"{owner}: epsilon={shown(self.epsilon)} is too small to realize with "
                f"max_weight={m}; the reports would be pure noise (pass f=1.0 if that is meant)"
            )
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
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (as requested: rebuilding realizes the same noise)."""
        requested_f = None if self.epsilon is not None else self.f
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "f": requested_f,
            "max_weight": self.max_weight,
            "domain": self.domain.to_json(),
        }

    @property
    def num_bits(self) -> int:
        """Length ``k`` of the bit vector (the domain size, reserved buckets included)."""
        return self.domain.size

    @property
    def flip_probability(self) -> float:
        """Realized probability ``f/2`` that a bit is flipped (exactly a multiple of 2**-64)."""
        return self._flip_numerator / 2.0**PRECISION_BITS

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(1 - f/2, f/2)``: a bucket's bit is 1 for a report of it, and of another value."""
        return 1.0 - self.flip_probability, self.flip_probability

    @property
    def report_bits(self) -> int:
        """``k`` bits a report."""
        return self.num_bits

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``2m ln((1 - f/2) / (f/2))`` of the realized flip probability.

        The guarantee holds one :class:`~frameldp.accounting.RapporEvent`: ``2m`` binary
        randomized responses at the per-bit epsilon, which gives the exact Rényi curve, the tight
        zCDP rho ``2m eps_bit tanh(eps_bit / 2)`` and exact composition.
        """
        q = self._flip_numerator
        event = RapporEvent(log_upper(Fraction((1 << PRECISION_BITS) - q, q)), self.max_weight)
        return PrivacyGuarantee(
            event.epsilon,
            self.name,
            {
                "num_bits": self.num_bits,
                "max_weight": self.max_weight,
                "flip_probability": self.flip_probability,
            },
            events=((event, 1),),
        )

    @cached_property
    def _stream_suffix(self) -> str:
        return fingerprint(self.to_spec())

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
    ) -> NDArray[np.uint8]:
        """Flip every bit of the packed vectors with probability ``f/2``.

        ``label`` is the column's identity. The noise of row ``i`` is a function of (key,
        ``label``, this mechanism's spec, global row ``row_start + i``, and under a caller's
        key or a seed the row's bits) only (see :class:`~frameldp.core.randomness.Rows`), so
        any chunking of the rows gives the same reports.
        """
        bits = np.asarray(bits, dtype=np.uint8)
        width = packed_width(self.num_bits)
        if bits.ndim != 2 or bits.shape[1] != width:
            raise ParameterError(f"bits must have shape (n, {width}), got {bits.shape}")
        noise = self._noise(source, label, row_start, bits.shape[0], lambda: bits)
        np.bitwise_xor(noise, bits, out=noise)
        return noise

    def randomize_codes(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
    ) -> NDArray[np.uint8]:
        """``randomize(encode(codes))`` without materializing the one-hot vectors (under a
        fresh key; a caller's key binds the noise to them).

        Same reports, bit for bit: the one-hot bit is XORed into the noise.
        """
        codes = np.asarray(codes, dtype=np.int64)
        noise = self._noise(source, label, row_start, codes.size, lambda: self.encode(codes))
        return xor_one_hot(noise, codes, self.num_bits)

    def _noise(
        self,
        source: RandomSource,
        label: object,
        row_start: int,
        num_rows: int,
        bits: Callable[[], NDArray[np.uint8]],
    ) -> NDArray[np.uint8]:
        """Bits that are 1 with the flip probability, keyed by (label, spec, row, value)."""
        rows = source.rows((label, self._stream_suffix), row_start, num_rows, bits)
        return rows.bernoulli("flip", self._flip_numerator, self.num_bits)

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
        """Reports of one value (one-hot) or a set of values (k-hot) per row."""
        array = combined(values)
        if is_list(array):
            offsets, codes = set_codes(array, self.domain, column, row_start)
            bits = self.encode_sets(offsets, codes, column=column, row_offset=row_start)
            reports = self.randomize(bits, source=source, label=column, row_start=row_start)
        else:
            codes = value_codes(array, self.domain, column, lambda row: row_start + row)
            reports = self.randomize_codes(codes, source=source, label=column, row_start=row_start)
        return {column: bits_array(reports)}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Per-bit sums of the reports."""
        packed = packed_bits(reports[column], self.num_bits, column)
        return Statistic((count_bits(packed, self.num_bits).astype(np.int64),), packed.shape[0])

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
        estimate = debias_unary_counts(bit_sums, statistic.rows, self.flip_probability)
        if self.max_weight == 1:
            return estimate
        # A set of up to m values a row: counts add up to at most m n, and a report is not one
        # value's channel (no iterative Bayesian update).
        return replace(estimate, support=None, items_per_report=self.max_weight)
