r"""Block Hadamard response: the domain split into blocks, each a small Hadamard response.

Acharya, Sun and Zhang's general Hadamard response [1]_ (their Sec. 5) for ``epsilon > 1``.
With a block size ``b`` (a power of two), the ``k`` values fill ``B = ceil(k / (b - 1))``
blocks of ``b - 1``; value ``x`` is row ``r_x`` (in ``[1, b)``) of the Sylvester–Hadamard
matrix ``H_b`` in block ``beta_x``. A report is one of the ``B b`` outputs ``y = beta b + c``:
with probability ``p = s e^eps / (s e^eps + B b - s)`` uniform on the ``s = b/2`` outputs
``C_x = {beta_x b + c : H_b[r_x, c] = +1}``, else uniform on the ``B b - s`` others; ``log2(B b)``
bits. ``B = 1`` is :class:`~frameldp.core.mechanisms.hadamard_response.HadamardResponse`.

Unlike the frequency oracles of :mod:`~frameldp.core.mechanisms.choice`, whether ``y`` lies in
``C_x`` has three probabilities, not two: ``p`` for a report of ``x``,
``p_s = p/2 + (1 - p)(s/2)/(B b - s)`` for another value of its block (two rows share a quarter
of the columns) and ``p_o = (1 - p) s/(B b - s)`` for a value of another block. So the
estimator also counts the reports in each block, ``M_beta``: its mean is
``n_beta a_1 + (n - n_beta) a_0`` with ``a_1 = p + (1 - p) s/(B b - s)``,
``a_0 = (1 - p) b/(B b - s)``, and with ``lambda = (p_s - p_o)/(a_1 - a_0)``::

    c_x = (S_x - lambda M_beta - n (p_o - lambda a_0)) / (p - p_s)

is unbiased (``S_x`` the reports in ``C_x``). It is a sum over reports of a score
``[y in C_x] - lambda [y in block beta_x]``, so its variance is exact: ``(c_x V(p, a_1) +
(n_beta - c_x) V(p_s, a_1) + (n - n_beta) V(p_o, a_0)) / (p - p_s)^2`` with
``V(f, g) = f (1 - lambda)^2 + (g - f) lambda^2 - (f - lambda g)^2`` (the score's variance for
a report in ``C_x`` with probability ``f`` and in the block with ``g``), plug-in ``c_x`` and
``n_beta``. Its support probabilities are not one pair, so it is not a candidate of the
automatic choice, ``consistent("ibu")`` or joint tables; projective geometry response, which
is, reaches subset selection's variance with reports as short.

The server counts the reports per output and transforms each block's ``b`` counts with one
fast Walsh–Hadamard transform: ``O(n + B b log b)``.

References
----------
.. [1] J. Acharya, Z. Sun, H. Zhang, "Hadamard Response: Estimating Distributions Privately,
   Efficiently, and with Little Communication", AISTATS 2019.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting import BlockHadamardResponseEvent, PrivacyGuarantee
from frameldp.accounting.rounding import log_upper
from frameldp.arguments import check_codes, check_epsilon
from frameldp.core.encoding import Domain
from frameldp.core.estimation import FrequencyEstimate, GroupEstimates
from frameldp.core.mechanisms._codes import CodeReports
from frameldp.core.mechanisms._noise import noise_numerator
from frameldp.core.mechanisms._spec import fingerprint
from frameldp.core.mechanisms.hadamard_response import parity, walsh_hadamard
from frameldp.core.mechanisms.protocol import (
    Capability,
    FrequencyEstimation,
    GroupStatistics,
    Statistic,
)
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import PRECISION_BITS, RandomSource, code_bytes
from frameldp.errors import ParameterError, shown

__all__ = ["BlockHadamardResponse", "optimal_block_size"]

_ONE: Final = 1 << PRECISION_BITS


@dataclass(frozen=True)
class _Channel:
    """The probabilities of a block Hadamard response with ``blocks`` blocks of ``size``
    outputs and inside probability ``p`` (module docstring), and the estimator's ``lambda``."""

    p: float
    blocks: int
    size: int

    @property
    def _others(self) -> float:
        return float(self.blocks * self.size - self.size // 2)  # B b - s

    @property
    def same(self) -> float:
        """``p_s``: ``y`` in ``C_x`` for a report of another value of ``x``'s block."""
        return self.p / 2 + (1 - self.p) * (self.size / 4) / self._others

    @property
    def other(self) -> float:
        """``p_o``: ``y`` in ``C_x`` for a report of a value of another block (``p_s`` when
        there is one block: no value is in another, and the estimator stays that of Hadamard
        response)."""
        if self.blocks == 1:
            return self.same
        return (1 - self.p) * (self.size / 2) / self._others

    @property
    def in_block(self) -> tuple[float, float]:
        """``(a_1, a_0)``: ``y`` in a block for a report of a value in it, and out of it."""
        if self.blocks == 1:
            return 1.0, 0.0
        s = self.size / 2
        return self.p + (1 - self.p) * s / self._others, (1 - self.p) * self.size / self._others

    @property
    def weight(self) -> float:
        """``lambda = (p_s - p_o)/(a_1 - a_0)`` (0 with one block: every report is in it)."""
        if self.blocks == 1:
            return 0.0
        a1, a0 = self.in_block
        return (self.same - self.other) / (a1 - a0)

    def score_variances(self) -> tuple[float, float, float]:
        """``V`` of a report of ``x``, of another value of its block, of another block's."""
        lam = self.weight
        a1, a0 = self.in_block

        def v(f: float, g: float) -> float:
            return f * (1 - lam) ** 2 + (g - f) * lam**2 - (f - lam * g) ** 2

        return v(self.p, a1), v(self.same, a1), v(self.other, a0)

    def worst_mean_variance(self, k: int) -> float:
        """The variance of a debiased count for one report averaged over the ``k`` buckets,
        at the distribution that makes it largest (all reports in one block: the average is
        linear in the blocks' shares)."""
        v1, v2, v3 = self.score_variances()
        rows = self.size - 1
        sizes = {min(rows, k - start) for start in range(0, k, rows)}
        worst = max((kb - 1) * v2 + (k - kb) * v3 for kb in sizes)
        return (v1 + worst) / (k * (self.p - self.same) ** 2)


def _out_numerator(epsilon: float, blocks: int, size: int) -> int:
    """``P[y not in C_x] = (B b - s)/(s e^eps + B b - s)`` as a multiple of ``2**-64``,
    rounded up (more noise)."""
    s = size // 2
    return noise_numerator((blocks * size - s) / s, epsilon)


def optimal_block_size(epsilon: float, k: int) -> int:
    """The block size ``b`` (a power of two, at most the one-block ``2^ceil(log2(k + 1))``)
    with the smallest worst-case mean variance (:meth:`_Channel.worst_mean_variance`)."""
    best: tuple[float, int] | None = None
    size = 2
    while True:
        blocks = -(-k // (size - 1))
        out = _out_numerator(epsilon, blocks, size)
        p = 1 - out / 2.0**PRECISION_BITS
        channel = _Channel(p, blocks, size)
        if p > channel.same:
            variance = channel.worst_mean_variance(k)
            if best is None or variance < best[0]:
                best = (variance, size)
        if blocks == 1:
            break
        size *= 2
    return best[1] if best is not None else size


@register("block_hadamard_response")
@dataclass(frozen=True)
class BlockHadamardResponse(CodeReports, FrequencyEstimation):
    r"""Block Hadamard response over a public domain of ``k`` buckets (module docstring).

    Parameters
    ----------
    epsilon
        Target privacy loss (> 0).
    domain
        The public domain (list, categorical dtype or :class:`~frameldp.core.encoding.Domain`).
    block_size
        ``b``, a power of two >= 2 (each block holds ``b - 1`` values); ``None`` (default)
        picks the one with the smallest worst-case mean variance (:func:`optimal_block_size`;
        about ``e^epsilon / 1.6`` blocks).

    Privacy
    -------
    ``P[y | x]`` is ``p / s`` on ``C_x`` and ``(1 - p)/(B b - s)`` off it, a ratio of
    ``e^epsilon``: epsilon-LDP [1]_. The probability of leaving ``C_x`` is realized exactly as
    a multiple of ``2**-64`` at least as large as requested (more noise); ``privacy`` reports
    the epsilon of the realized ``p``, rounded up, with one
    :class:`~frameldp.accounting.BlockHadamardResponseEvent`. Two values of different blocks
    have disjoint ``C``: the loss is ``+eps, -eps, 0`` in proportions ``e^eps : 1 : 2B - 2``;
    two values of one block share half their ``C`` (``w = e^eps + 4B - 3``), a garbling of the
    first pair (mix it with the common part), so the first is the worst case and its curves
    are exact.

    Estimation
    ----------
    Unbiased, with the exact variance plugged in (module docstring).

    References
    ----------
    .. [1] J. Acharya, Z. Sun, H. Zhang, "Hadamard Response: Estimating Distributions Privately,
       Efficiently, and with Little Communication", AISTATS 2019.

    Examples
    --------
    >>> mech = BlockHadamardResponse(4.0, domain=list(range(1000)))
    >>> mech.block_size, mech.blocks, mech.report_bits
    (32, 33, 11)
    """

    name: ClassVar[str] = "block_hadamard_response"
    title: ClassVar[str] = "block Hadamard response"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.CALLER_KEY, Capability.INTEGER_REPORTS}
    )

    epsilon: float
    domain: Domain = field(kw_only=True)
    block_size: int | None = field(default=None, kw_only=True)
    _out_numerator: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "BlockHadamardResponse"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        epsilon = check_epsilon(owner, "epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        k = self.domain.size
        if k >= 1 << 31:
            raise ParameterError(f"{owner}: domain size must be below 2**31, got {k}")
        size = self.block_size
        if size is None:
            size = optimal_block_size(epsilon, k)
        elif (
            isinstance(size, bool)
            or not isinstance(size, int | np.integer)
            or size < 2
            or size & (size - 1)
            or size > 1 << k.bit_length()
        ):
            raise ParameterError(
                f"{owner}: block_size must be a power of two in [2, {1 << k.bit_length()}] or "
                f"None, got {shown(size)}",
                parameter="block_size",
            )
        object.__setattr__(self, "block_size", int(size))
        numerator = _out_numerator(epsilon, self.blocks, self.size)
        # At the uniform point P[y not in C_x] = (B b - s)/(B b) the reports carry nothing.
        if Fraction(numerator, _ONE) >= Fraction(
            self.report_range - self.size // 2, self.report_range
        ):
            raise ParameterError(
                f"{owner}: epsilon={shown(epsilon)} is too small to realize for k={k}, "
                f"b={self.size}; the reports would be uniform noise"
            )
        object.__setattr__(self, "_out_numerator", numerator)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> BlockHadamardResponse:
        """Rebuild from :meth:`to_spec`."""
        return cls(
            spec["epsilon"],
            domain=Domain.from_json(spec["domain"]),
            block_size=spec["block_size"],
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (rebuilding realizes the same noise)."""
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "block_size": self.block_size,
            "domain": self.domain.to_json(),
        }

    @property
    def size(self) -> int:
        """``b``: the outputs of a block (``b - 1`` values each)."""
        assert self.block_size is not None  # set in __post_init__
        return self.block_size

    @property
    def blocks(self) -> int:
        """``B = ceil(k / (b - 1))``."""
        return -(-self.domain.size // (self.size - 1))

    @property
    def inside_probability(self) -> float:
        """Realized ``p``: probability that ``y`` is in ``C_x``."""
        return (_ONE - self._out_numerator) / 2.0**PRECISION_BITS

    @property
    def report_range(self) -> int:
        """Reports are integers in ``[0, B b)``."""
        return self.blocks * self.size

    @property
    def report_bits(self) -> int:
        """``ceil(log2(B b))`` bits a report."""
        return (self.report_range - 1).bit_length()

    @cached_property
    def _channel(self) -> _Channel:
        return _Channel(self.inside_probability, self.blocks, self.size)

    def mean_variance(self, n: int = 1) -> float:
        """The variance of a debiased count averaged over the buckets, for ``n`` reports, at
        the distribution of the values that makes it largest."""
        return n * self._channel.worst_mean_variance(self.domain.size)

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln(p (B b - s) / ((1 - p) s))`` of the realized ``p``, rounded up,
        with one :class:`~frameldp.accounting.BlockHadamardResponseEvent`."""
        s, out = self.size // 2, self._out_numerator
        event = BlockHadamardResponseEvent(
            log_upper(Fraction(_ONE - out, out) * (self.report_range - s) / s), self.blocks
        )
        parameters = {
            "block_size": self.size,
            "blocks": self.blocks,
            "inside_probability": self.inside_probability,
        }
        return PrivacyGuarantee(event.epsilon, self.name, parameters, events=((event, 1),))

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
        """Reports ``y`` in ``[0, B b)`` of integer codes in ``[0, k)``.

        Whether ``y`` is in ``C_x`` is an exact Bernoulli bit ("out" stream). Inside, a uniform
        column ("column" stream) moved to the value's half by flipping the lowest set bit of its
        row when it lies in the other (a bijection between the halves); outside, one uniform
        integer ("other" stream) over the other blocks' outputs and the other half of the
        value's own block. Functions of (key, ``label``, spec, global row ``row_start + i``, and
        under a caller's key or a seed the row's code) only
        (:class:`~frameldp.core.randomness.Rows`).
        """
        codes = check_codes(self.title, "codes", codes, self.domain.size)
        b, blocks = self.size, self.blocks
        rows = source.rows(
            (label, self._stream_suffix), row_start, codes.size, lambda: code_bytes(codes)
        )
        out = rows.flags("out", self._out_numerator)
        column = rows.uniform("column", b)
        other = rows.uniform("other", blocks * b - b // 2)
        block, row = np.divmod(codes, b - 1)
        row += 1
        low = row & -row
        # Inside: the column, or its partner across bit `low`, whichever is in the +1 half.
        inside = np.where(parity(row & column) != 0, column ^ low, column)
        # Outside: another block's output, or the -1 half of the value's own block.
        elsewhere = other < (blocks - 1) * b
        other_block = other // b
        other_block += other_block >= block
        half = other - (blocks - 1) * b  # in [0, b/2) where not elsewhere
        spread = ((half & ~(low - 1)) << 1) | (half & (low - 1))  # a 0 inserted at bit `low`
        minus = np.where(parity(row & spread) == 0, spread ^ low, spread)
        outside = np.where(elsewhere, other_block * b + other % b, block * b + minus)
        return np.where(out, outside, block * b + inside)

    def _estimates(
        self, histograms: NDArray[np.int64], rows: NDArray[np.int64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Debiased counts and their plug-in variances of each row of ``(groups, B b)``
        output histograms with ``rows`` reports each (module docstring)."""
        b, k = self.size, self.domain.size
        channel = self._channel
        transformed = walsh_hadamard(histograms.reshape(histograms.shape[0], self.blocks, b))
        in_block = transformed[..., 0].astype(np.float64)  # M_beta
        codes = np.arange(k)
        block, row = np.divmod(codes, b - 1)
        supports = (in_block[:, block] + transformed[:, block, row + 1]) / 2  # S_x
        n = rows.astype(np.float64)[:, None]
        p, same, other, lam = channel.p, channel.same, channel.other, channel.weight
        a1, a0 = channel.in_block
        counts = (supports - lam * in_block[:, block] - n * (other - lam * a0)) / (p - same)
        v1, v2, v3 = channel.score_variances()
        if self.blocks == 1:
            block_counts = np.broadcast_to(n, in_block.shape)
        else:
            block_counts = (in_block - n * a0) / (a1 - a0)
        own = np.clip(counts, 0, n)
        mass = np.clip(block_counts[:, block], own, n)
        variances = (own * v1 + (mass - own) * v2 + (n - mass) * v3) / (p - same) ** 2
        return counts, variances

    # ------------------------------------------------------------------ the protocol

    def estimates_by_group(self, statistics: GroupStatistics) -> GroupEstimates:
        """:meth:`debias` of every group's histogram."""
        (histograms,) = statistics.parts
        counts, variances = self._estimates(histograms, statistics.rows)
        return GroupEstimates(counts, variances, statistics.rows)

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Debiased counts from the histogram of ``y`` over ``statistic.rows`` reports."""
        (histogram,) = statistic.parts
        counts, variances = self._estimates(histogram[None, :], np.array([statistic.rows]))
        return FrequencyEstimate(counts[0], variances[0], statistic.rows)
