"""Hadamard response: a ``log2 K``-bit report, decoded by a fast Walsh–Hadamard transform."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import HadamardResponseEvent, PrivacyGuarantee
from frameldp.accounting.rounding import log_upper
from frameldp.arguments import check_codes, check_epsilon
from frameldp.core.columns import integer_reports
from frameldp.core.encoding import Domain
from frameldp.core.estimation import (
    FrequencyEstimate,
    GroupEstimates,
    debias_direct_counts,
    debias_direct_groups,
)
from frameldp.core.mechanisms._codes import CodeReports
from frameldp.core.mechanisms._noise import noise_numerator
from frameldp.core.mechanisms._spec import fingerprint
from frameldp.core.mechanisms.protocol import (
    Capability,
    FrequencyEstimation,
    GroupStatistics,
    OracleCosts,
    Statistic,
    release_size,
)
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import PRECISION_BITS, RandomSource, code_bytes
from frameldp.errors import ParameterError, shown

__all__ = ["HadamardResponse", "parity", "walsh_hadamard"]

_ONE: Final = 1 << PRECISION_BITS
_HALF: Final = _ONE >> 1


def parity(values: NDArray[np.int64]) -> NDArray[np.int64]:
    """Parity of the set bits of each (non-negative, < 2**32) integer."""
    v = values.copy()
    for shift in (16, 8, 4, 2, 1):
        v ^= v >> shift
    return v & 1


def walsh_hadamard(values: NDArray[np.int64]) -> NDArray[np.int64]:
    """``H_K values`` for the Sylvester–Hadamard matrix ``H[i, y] = (-1)^popcount(i & y)``
    (``K`` a power of two), in ``O(K log K)`` integer additions (exact); of each row of a 2-D
    ``values``."""
    result = np.array(values, dtype=np.int64)
    lead, size = result.shape[:-1], result.shape[-1]
    half = 1
    while half < size:
        view = result.reshape(*lead, -1, 2, half)
        low, high = view[..., 0, :].copy(), view[..., 1, :]
        view[..., 0, :] += high
        view[..., 1, :] = low - high
        half *= 2
    return result


@register("hadamard_response")
@dataclass(frozen=True)
class HadamardResponse(CodeReports, FrequencyEstimation):
    r"""Hadamard response over a public domain of ``k`` buckets.

    ``K`` is the smallest power of two above ``k``; value ``x`` owns row ``x + 1`` of the
    ``K x K`` Sylvester–Hadamard matrix and the half ``C_x = {y : H[x + 1, y] = +1}`` of
    ``[0, K)``. A report is one integer ``y`` in ``[0, K)``: uniform on ``C_x`` with probability
    ``p = e^epsilon / (e^epsilon + 1)``, else uniform on the other half. ``log2 K`` bits a
    report (``ceil(log2(k + 1))``).

    Parameters
    ----------
    epsilon
        Target privacy loss (> 0).
    domain
        The public domain (list, categorical dtype or :class:`~frameldp.core.encoding.Domain`).

    Privacy
    -------
    ``P[y | x]`` is ``2p / K`` on ``C_x`` and ``2(1 - p) / K`` off it, a ratio of
    ``p / (1 - p) = e^epsilon``: epsilon-LDP [1]_. ``p`` is realized exactly as a multiple of
    ``2**-64`` at most the requested one (more noise) and the halves are sampled exactly
    (``K`` is a power of two); ``privacy`` reports ``ln(p / (1 - p))`` of the realized ``p``,
    rounded up, with one :class:`~frameldp.accounting.HadamardResponseEvent`: two rows agree on
    a quarter of the columns, so the worst-case loss is 0 with probability 1/2 and otherwise
    binary RR at epsilon (:mod:`frameldp.accounting.events.ternary`).

    Estimation
    ----------
    ``C_j`` reports fall in ``C_j``: with probability ``p`` for a report of ``j`` and exactly
    ``1/2`` for any other (``|C_j ∩ C_x| = K/4``), so ``ĉ_j = (C_j - n/2) / (p - 1/2)`` is
    unbiased with variance ``(c_j p (1 - p) + (n - c_j)/4) / (p - 1/2)^2``, as
    ``c_j / n -> 0`` ``n (e^epsilon + 1)^2 / (e^epsilon - 1)^2`` [1]_. The server counts the
    reports per ``y`` and gets every ``C_j = (n + (H h)_{j+1}) / 2`` from one fast
    Walsh–Hadamard transform of that histogram ``h``: ``O(n + k log k)``.

    This is the one-row scheme of Acharya et al. (their Sec. 4), order-optimal for
    ``epsilon <= 1``; for large epsilon its variance exceeds OUE's by
    ``(e^epsilon + 1)^2 / (4 e^epsilon)``, and
    :func:`~frameldp.core.mechanisms.choice.choose_mechanism` says so.

    References
    ----------
    .. [1] J. Acharya, Z. Sun, H. Zhang, "Hadamard Response: Estimating Distributions Privately,
       Efficiently, and with Little Communication", AISTATS 2019.

    Examples
    --------
    >>> mech = HadamardResponse(1.0, domain=list(range(100)))
    >>> mech.num_columns, mech.report_bits
    (128, 7)
    """

    name: ClassVar[str] = "hadamard_response"
    title: ClassVar[str] = "Hadamard response"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.CALLER_KEY, Capability.FREQUENCY_ORACLE, Capability.INTEGER_REPORTS}
    )

    epsilon: float
    domain: Domain = field(kw_only=True)
    _off_numerator: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "HadamardResponse"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        epsilon = check_epsilon(owner, "epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        if self.domain.size >= 1 << 31:
            raise ParameterError(
                f"{owner}: domain size must be below 2**31, got {self.domain.size}"
            )
        numerator = noise_numerator(1.0, epsilon)  # 1 - p = 1 / (e^eps + 1)
        if numerator >= _HALF:
            raise ParameterError(
                f"{owner}: epsilon={shown(epsilon)} is too small to realize; the reports would "
                "be uniform noise"
            )
        object.__setattr__(self, "_off_numerator", numerator)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> HadamardResponse:
        """Rebuild from :meth:`to_spec`."""
        return cls(spec["epsilon"], domain=Domain.from_json(spec["domain"]))

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (rebuilding realizes the same noise)."""
        return {"mechanism": self.name, "epsilon": self.epsilon, "domain": self.domain.to_json()}

    @property
    def num_columns(self) -> int:
        """``K``: the smallest power of two above ``k`` (row 0 of ``H_K`` is unused)."""
        return 1 << self.domain.size.bit_length()

    @property
    def inside_probability(self) -> float:
        """Realized ``p``: probability that ``y`` is in the true value's half."""
        return (_ONE - self._off_numerator) / 2.0**PRECISION_BITS

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, 1/2)``: ``y`` in a value's half for a report of it, and of another value."""
        return self.inside_probability, 0.5

    @property
    def report_range(self) -> int:
        """Reports are integers in ``[0, report_range)``."""
        return self.num_columns

    @property
    def report_bits(self) -> int:
        """``log2 K`` bits a report."""
        return self.num_columns.bit_length() - 1

    def costs(self, n: int = 1_000_000) -> OracleCosts:
        """One keyed draw and a parity a report; a histogram of ``K`` columns, then one
        Walsh-Hadamard transform of it (``K log2 K``) a release."""
        size = self.num_columns
        transform = size * max(1, size.bit_length() - 1)
        return OracleCosts(client=70, server=5 + 2 * transform / release_size(n))

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln(p / (1 - p))`` of the realized ``p``, rounded up, with one
        :class:`~frameldp.accounting.HadamardResponseEvent`."""
        off = self._off_numerator
        event = HadamardResponseEvent(log_upper(Fraction(_ONE - off, off)))
        return PrivacyGuarantee(
            event.epsilon,
            self.name,
            {"num_columns": self.num_columns, "inside_probability": self.inside_probability},
            events=((event, 1),),
        )

    @cached_property
    def _stream_suffix(self) -> str:
        return fingerprint(self.to_spec())

    def randomize(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
    ) -> NDArray[np.int64]:
        """Reports ``y`` in ``[0, K)`` of integer codes in ``[0, k)``.

        ``y`` is drawn uniformly ("column" stream) and, if it lies in the wrong half, moved to
        the other by flipping the lowest set bit of the row index ``x + 1`` (a bijection between
        the halves, so ``y`` is uniform on the half it must lie in); the half is an exact
        Bernoulli bit ("off" stream). Both are functions of (key, ``label``, spec, global row
        ``row_start + i``, and under a caller's key or a seed the row's code) only.
        """
        codes = check_codes(self.title, "codes", codes, self.domain.size)
        rows = source.rows(
            (label, self._stream_suffix), row_start, codes.size, lambda: code_bytes(codes)
        )
        off = rows.flags("off", self._off_numerator).astype(np.int64)
        y = rows.uniform("column", self.num_columns)
        index = codes + 1
        # H[index, y] = +1 exactly when popcount(index & y) is even: in the half when parity 0.
        wrong = parity(index & y) != off
        return np.where(wrong, y ^ (index & -index), y)

    def column_counts(
        self, histogram: NDArray[np.int64], n: int | NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """``C_j``: reports in each value's half, from the histogram of ``y`` over ``[0, K)``
        (of each row of a 2-D histogram, with ``n`` a column of their report counts)."""
        transformed = walsh_hadamard(histogram)
        k = self.domain.size
        return (n + transformed[..., 1 : k + 1]) // 2

    # ------------------------------------------------------------------ the protocol

    def estimates_by_group(self, statistics: GroupStatistics) -> GroupEstimates:
        """:meth:`debias` of every group's histogram."""
        (histograms,) = statistics.parts
        supports = self.column_counts(histograms, statistics.rows[:, None])
        keep, other = self.support_probabilities
        return debias_direct_groups(supports, statistics.rows, keep, other)

    def supports(self, reports: Mapping[str, pa.Array], *, column: str) -> NDArray[np.uint8]:
        """Whether each report ``y`` lies in each value's half (``H[x + 1, y] = +1``)."""
        values = integer_reports(reports[column], self.num_columns, column, self.title)
        rows = np.arange(1, self.domain.size + 1, dtype=np.int64)
        inside: NDArray[np.uint8] = (parity(values[:, None] & rows[None, :]) == 0).astype(np.uint8)
        return inside

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Debiased counts from the histogram of ``y`` over ``statistic.rows`` reports."""
        (histogram,) = statistic.parts
        supports = self.column_counts(histogram, statistic.rows)
        keep, other = self.support_probabilities
        return debias_direct_counts(supports, statistic.rows, keep, other)
