"""Subset selection (k-subset): a random subset of ``d`` values, likely holding the true one."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import PrivacyEvent, PrivacyGuarantee, PureDP, SubsetSelectionEvent
from frameldp.accounting.rounding import log_upper
from frameldp.arguments import check_codes, check_epsilon
from frameldp.core.columns import bits_array, packed_bits, single_codes
from frameldp.core.encoding import Domain, count_bits, packed_width, report_bits_matrix
from frameldp.core.estimation import (
    FrequencyEstimate,
    GroupEstimates,
    debias_direct_counts,
    debias_direct_groups,
    mean_direct_variance,
)
from frameldp.core.mechanisms._longitudinal import (
    TwoStage,
    check_epsilon_infinity,
    mixed_inclusion,
)
from frameldp.core.mechanisms._memo import memo_name, randomize_with_users
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
from frameldp.errors import DomainError, ParameterError, shown

__all__ = ["SubsetSelection", "optimal_subset_size"]

_ONE: Final = 1 << PRECISION_BITS
# Rows whose set sizes are counted at once (a uint8 temporary of this many rows x ceil(k/8)).
_SIZE_BLOCK: Final = 1 << 15


def _out_numerator(epsilon: float, k: int, d: int) -> int:
    """``P[x not in S] = (k - d) / (d e^eps + k - d)`` as a multiple of ``2**-64``, rounded up."""
    return noise_numerator((k - d) / d, epsilon)


def optimal_subset_size(epsilon: float, k: int) -> int:
    """The ``d`` in ``[1, k - 1]`` with the smallest estimator variance averaged over the
    buckets (exact for every distribution; :mod:`~frameldp.core.mechanisms.choice`), near
    ``k / (e^epsilon + 1)`` [1]_ (``d = 1`` is k-ary randomized response).

    References
    ----------
    .. [1] M. Ye, A. Barg, "Optimal Schemes for Discrete Distribution Estimation under Locally
       Differential Privacy", IEEE Trans. Inf. Theory 64(8), 2018 (Sec. III).
    """
    if k <= 2:
        return 1
    e = math.exp(min(epsilon, 700.0))
    # The optimum lies near k / (e^eps + 1); the variance is flat around it.
    centre = k / (e + 1.0)
    low, high = max(1, math.floor(centre / 2)), min(k - 1, math.ceil(2 * centre) + 8)
    d = np.arange(low, high + 1, dtype=np.float64)
    p = d * e / (d * e + k - d)
    q = (p * (d - 1) + (1 - p) * d) / (k - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = mean_direct_variance(p, q, k)
    return int(np.argmin(np.where(p > q, mean, np.inf))) + low


def _set_bits(
    reports: NDArray[np.uint8], rows: NDArray[np.int64], codes: NDArray[np.int64]
) -> None:
    """Set bit ``codes[r]`` of each row ``r`` in ``rows``, in place (one bit per row)."""
    chosen = codes[rows]
    reports[rows, chosen >> 3] |= (0x80 >> (chosen & 7)).astype(np.uint8)


def _floyd(
    reports: NDArray[np.uint8],
    rows: Rows,
    purpose: str,
    excluded: NDArray[np.int64],
    count: int,
    population: int,
    whole: NDArray[np.int64] | None = None,
) -> None:
    """Add ``count`` values drawn uniformly without replacement from the ``population``
    values other than ``excluded`` (per row; ``excluded`` at or beyond the range excludes
    nothing) to the rows ``whole`` of ``reports`` (default all), by Floyd's algorithm [3]_;
    the other rows get ``count - 1`` (they start one round later).

    Round ``j`` draws an exactly uniform index in ``[0, j]`` (stream ``purpose + "pick j"``);
    index ``i`` is the value ``i + (i >= excluded)``.
    """
    first = population - count
    everyone = np.arange(excluded.size)
    for j in range(first, population):
        pick = rows.uniform(f"{purpose}pick {j}", j + 1)
        value = pick + (pick >= excluded)
        fallback = j + (j >= excluded)
        taken = (reports[everyone, value >> 3] >> (7 - (value & 7)).astype(np.uint8)) & 1
        chosen = np.where(taken != 0, fallback, value)
        _set_bits(reports, everyone if j > first or whole is None else whole, chosen)


# 64-bit words of candidate positions per row drawn at once for the size corrections.
_CANDIDATE_WORDS: Final = 6
# Rows whose size corrections run together (their state arrays stay in the CPU's cache).
_CORRECTION_ROWS: Final = 1 << 16


def _popcounts(packed: NDArray[np.uint8]) -> NDArray[np.int64]:
    """Set bits of each packed row, counted in blocks of rows (bounded temporaries)."""
    if packed.shape[1] % 8 == 0:  # eight bytes at a time
        words = np.ascontiguousarray(packed).view(np.uint64)
        counts: NDArray[np.int64] = np.bitwise_count(words).sum(axis=1, dtype=np.int64)
        return counts
    return np.concatenate(
        [
            np.bitwise_count(packed[start : start + _SIZE_BLOCK]).sum(axis=1, dtype=np.int64)
            for start in range(0, packed.shape[0], _SIZE_BLOCK)
        ]
        or [np.zeros(0, dtype=np.int64)]
    )


def fixed_size_subsets(
    rows: Rows,
    purpose: str,
    excluded: NDArray[np.int64],
    sizes: NDArray[np.int64],
    k: int,
    rate: int,
    pool_words: int = _CANDIDATE_WORDS,
) -> NDArray[np.uint8]:
    """Packed ``(n, ceil(k / 8))``: for each row ``r``, a uniformly random subset of
    ``sizes[r]`` of the positions ``[0, k)`` other than ``excluded[r]`` (``k``: none).

    Exact, in two steps. (1) Independent Bernoulli(``rate / 2**64``) bits at every allowed
    position (stream ``purpose + "subset"``): a random set whose law is the same under every
    permutation of the allowed positions. (2) Its size corrected to ``sizes[r]``: while too
    large, a uniformly random member is removed; while too small, a uniformly random
    non-member is added. Each is drawn by rejection from candidate positions, ``b = ceil(log2
    k)`` bits of a uniform 64-bit word each (streams ``purpose + "fix j"``), accepted when
    below ``k``, allowed and eligible. Step (2) commutes with permutations of the allowed
    positions too, so the law of the result is the same for every subset of that size: it is
    uniform. The bits cost one Bernoulli vector (as optimized unary encoding's) and the
    corrections about ``sqrt(sizes)`` candidates per row, instead of ``sizes`` rounds of
    Floyd's algorithm over every row. At :func:`permanent_subsets`'s settings its draws are
    frozen (memoized permanent subsets).
    """
    width = packed_width(k)
    bits = rows.bernoulli(purpose + "subset", rate, k)
    flat = bits.reshape(-1)
    held = np.flatnonzero(excluded < k)  # the excluded position's bit cleared
    flat[held * width + (excluded[held] >> 3)] &= ~_MASKS[excluded[held] & 7]
    need = _popcounts(bits) - sizes  # > 0: members to remove; < 0: non-members to add
    _correct_sizes(bits, excluded, need, rows, purpose, k, pool_words)
    return bits


PERMANENT_POOL_WORDS: Final = 6
"""Candidate words per row and pool of :func:`permanent_subsets` (frozen)."""
PERMANENT_RATE_BITS: Final = 6
"""The Bernoulli rate of :func:`permanent_subsets` is a multiple of ``2**-6`` (frozen): six
comparison planes a row."""


def permanent_rate(d: int, k: int) -> int:
    """The Bernoulli rate of :func:`permanent_subsets` (a multiple of ``2**-64``, frozen):
    ``(d - sigma / 2) / k`` rounded down to a multiple of ``2**-6``, at least ``2**-6``."""
    centre = (d - 0.5 * math.sqrt(d * (1 - d / k))) / k
    steps = max(1, math.floor(centre * (1 << PERMANENT_RATE_BITS)))
    return steps << (PRECISION_BITS - PERMANENT_RATE_BITS)


def permanent_subsets(
    rows: Rows,
    purpose: str,
    excluded: NDArray[np.int64],
    sizes: NDArray[np.int64],
    k: int,
    d: int,
) -> NDArray[np.uint8]:
    """:func:`fixed_size_subsets` with its layout frozen, for memoized permanent subsets under
    a scheme-3 memo key (rows addressed by (person, value)): Bernoulli bits at
    :func:`permanent_rate` (six planes), then :func:`_correct_sizes` with pools of
    :data:`PERMANENT_POOL_WORDS` words. Exact and uniform for the same reasons; the same
    person and value give the same subset in every version (``tests/core/
    test_frozen_keyed_noise.py``), so :func:`fixed_size_subsets` must keep every row's subset
    at these settings."""
    rate = permanent_rate(d, k)
    return fixed_size_subsets(rows, purpose, excluded, sizes, k, rate, PERMANENT_POOL_WORDS)


# A subset of at most 8 + k / _SPARSE positions is drawn position by position, not as k bits
# (about 0.04 us a position against 0.35 + 0.001 k us for the bits and their corrections).
_SPARSE: Final = 64


def sparse_subsets(
    rows: Rows,
    purpose: str,
    excluded: NDArray[np.int64],
    sizes: NDArray[np.int64],
    k: int,
) -> NDArray[np.uint8]:
    """Packed ``(n, ceil(k / 8))``: for each row ``r``, a uniformly random subset of
    ``sizes[r]`` of the positions ``[0, k)`` other than ``excluded[r]``, drawn one position at
    a time: candidates of ``b = ceil(log2 k)`` bits of uniform 64-bit words (streams ``purpose
    + "draw j"``, pools of :data:`_CANDIDATE_WORDS` words per row, pool ``j + 1`` only for the
    rows pool ``j`` left short), read in order and accepted when below ``k``, allowed and not
    drawn yet. Each accepted position is uniform over the allowed positions not drawn yet
    (sequential sampling without replacement), so the subset is uniform among those of its
    size. About ``sizes[r]`` candidates a row: for ``d << k`` far cheaper than ``k`` Bernoulli
    bits (:func:`fixed_size_subsets`)."""
    width = packed_width(k)
    bits = np.zeros((excluded.size, width), dtype=np.uint8)
    flat = bits.reshape(-1)
    b = max(1, (k - 1).bit_length())
    low = np.uint64((1 << b) - 1)
    fields = [np.uint64(shift) for shift in range(0, 64 - b + 1, b)]
    exact_range = k == 1 << b  # every b-bit candidate is a position
    left = sizes.astype(np.int64).copy()
    active = np.flatnonzero(left)
    pool = 0
    while active.size:
        words = rows.words_of(f"{purpose}draw {pool}", _CANDIDATE_WORDS, active)
        going, place = active, np.arange(active.size)
        base, barred, needed = going * width, excluded[going], left[going]
        tried = 0
        for column in range(_CANDIDATE_WORDS):
            word = words[place, column]
            for shift in fields:
                position = ((word >> shift) & low).astype(np.intp)
                accepted = (position != barred) & (needed != 0)
                if not exact_range:
                    accepted &= position < k
                    position[~accepted] = 0  # a position inside the row, for the lookup only
                at = base + (position >> 3)
                mask = _MASKS[position & 7]
                accepted &= (flat[at] & mask) == 0
                flat[at[accepted]] |= mask[accepted]
                needed -= accepted
                tried += 1
                if tried % 4 == 0:  # compact: rows done try nothing more
                    still = needed != 0
                    going, place, base = going[still], place[still], base[still]
                    barred, needed, word = barred[still], needed[still], word[still]
            if not going.size:
                break
        left[going] = needed
        active = going[needed != 0]
        pool += 1
    return bits


def _correct_sizes(
    bits: NDArray[np.uint8],
    excluded: NDArray[np.int64],
    need: NDArray[np.int64],
    rows: Rows,
    purpose: str,
    k: int,
    pool_words: int = 6,
) -> None:
    """Step (2) of :func:`fixed_size_subsets`, in place: row ``r`` loses ``need[r] > 0``
    uniformly random members or gains ``-need[r]`` uniformly random allowed non-members.

    A row that gains has its excluded position set to 1 meanwhile (as if a member), so for
    every row a candidate is accepted when its bit is the one the row flips (1 for a row that
    loses, 0 for one that gains); the excluded position is cleared again at the end.
    Candidates come from pools of ``pool_words`` words per row (stream ``purpose + "fix j"``,
    addressed as the row's other noise; pool ``j + 1`` drawn only for the rows that pool ``j``
    left short), ``b`` bits each, read in order; each step tries the next candidate of every
    row still short of its size, whose state is kept compacted.

    Frozen: memoized permanent subsets under a scheme-3 memo key are drawn with it
    (:func:`permanent_subsets`), so any change must keep every row's subset
    (``tests/core/test_frozen_keyed_noise.py``).
    """
    width = bits.shape[1]
    flat = bits.reshape(-1)
    b = max(1, (k - 1).bit_length())
    gaining = np.flatnonzero((need < 0) & (excluded < k))
    barred = gaining * width + (excluded[gaining] >> 3)
    flat[barred] |= _MASKS[excluded[gaining] & 7]
    active = np.flatnonzero(need)
    pool = 0
    while active.size:
        remaining = []
        for start in range(0, active.size, _CORRECTION_ROWS):  # bounded temporaries
            chunk = active[start : start + _CORRECTION_ROWS]
            words = rows.words_of(f"{purpose}fix {pool}", pool_words, chunk)
            remaining.append(
                _correct_rows(flat, np.ascontiguousarray(words.T), chunk, need, width, b, k)
            )
        active = np.concatenate(remaining)
        pool += 1
    flat[barred] &= ~_MASKS[excluded[gaining] & 7]


def _correct_rows(
    flat: NDArray[np.uint8],
    words: NDArray[np.uint64],
    active: NDArray[np.int64],
    need: NDArray[np.int64],
    width: int,
    b: int,
    k: int,
) -> NDArray[np.int64]:
    """One pool of candidates (``words``: line ``j`` holds word ``j`` of each row of
    ``active``) tried on the rows ``active``; returns those still short of their size.

    Each step tries one candidate of every row still short: accepted when it is a position
    (below ``k``) holding the bit its row flips (1 when removing, 0 when adding), which it
    toggles: rows are distinct, so one step touches each byte at most once, and a rejected
    candidate toggles nothing (its mask is 0). Each step costs a dozen passes over the rows
    still short, kept compacted every third step."""
    low = np.uint64((1 << b) - 1)
    shifts = [np.uint64(shift) for shift in range(0, 64 - b + 1, b)]
    exact_range = k == 1 << b  # every b-bit candidate is a position
    base = active * width
    # XORed with a byte, the bits a row flips become 1: 0x00 for a row removing members (its
    # 1 bits), 0xFF for a row adding non-members (its 0 bits).
    key = np.where(need[active] > 0, np.uint8(0), np.uint8(0xFF))
    left = np.abs(need[active])
    place = np.arange(active.size)  # each going row's line in ``words`` and ``active``
    tried = 0
    for column in range(words.shape[0]):
        word = words[column, place]
        for shift in shifts:
            position = np.bitwise_and(word >> shift, low).view(np.intp)  # below 2**63
            accepted = left != 0
            if not exact_range:
                inside = position < k
                accepted &= inside
                position *= inside  # outside: read position 0, never accepted
            at = base + (position >> 3)
            mask = _MASKS[position & 7]
            current = flat[at]
            accepted &= ((current ^ key) & mask) != 0
            flat[at] = current ^ (mask * accepted)
            left -= accepted
            tried += 1
            if tried % 3 == 0:
                going = left != 0
                base, key, left = base[going], key[going], left[going]
                word, place = word[going], place[going]
                if not place.size:
                    return np.zeros(0, dtype=np.int64)
    rows_ = active[place]
    need[rows_] = np.where(key == 0, left, -left)
    return np.asarray(rows_[left != 0], dtype=np.int64)


_MASKS: Final = (0x80 >> np.arange(8)).astype(np.uint8)
"""The mask of bit ``i`` of a byte, most significant first."""


@register("subset_selection")
@dataclass(frozen=True)
class SubsetSelection(TwoStage, BitReportsByGroup, FrequencyEstimation):
    r"""Subset selection over a public domain of ``k`` buckets.

    Each report is a subset ``S`` of ``d`` of the ``k`` values: it holds the true value with
    probability ``p = d e^epsilon / (d e^epsilon + k - d)`` (then ``d - 1`` others, uniformly),
    and otherwise ``d`` values uniformly from the other ``k - 1``. Reports are packed bit vectors
    of ``k`` bits with ``d`` ones, ``ceil(k / 8)`` bytes, like RAPPOR's.

    Parameters
    ----------
    epsilon
        Target privacy loss (> 0).
    domain
        The public domain (list, categorical dtype or :class:`~frameldp.core.encoding.Domain`).
    subset_size
        ``d`` in ``[1, k - 1]``; ``None`` picks the variance-optimal ``d``
        (:func:`optimal_subset_size`, at ``epsilon``). ``d = 1`` is k-ary randomized response.
    epsilon_infinity
        Longitudinal subset selection: a *permanent* subset drawn at ``epsilon_infinity``
        (>= ``epsilon``), memoized per (user, value) when reports come with users; every report
        keeps it or, with a fixed probability drawn fresh each time, sends a uniformly random
        ``d``-subset instead, so that one report is ``epsilon``-LDP end to end. ``None``
        (default): one stage.

    Privacy
    -------
    ``P[S | x]`` is ``p / C(k-1, d-1)`` when ``x`` is in ``S`` and ``(1 - p) / C(k-1, d)``
    otherwise, a ratio of ``p (k - d) / ((1 - p) d) = e^epsilon``: epsilon-LDP [1]_ [2]_. The
    probability of leaving the true value out is realized exactly as a multiple of ``2**-64``
    at least as large as requested (more noise); ``privacy`` reports the epsilon of the realized
    probability, rounded up, with one :class:`~frameldp.accounting.SubsetSelectionEvent`: the
    worst-case loss is ``+eps, -eps, 0`` in proportions ``e^eps : 1 : w`` (exact Rényi curve,
    tight zCDP, exact composition; :mod:`frameldp.accounting.events.ternary`).

    With ``epsilon_infinity``: a uniform ``d``-subset has probability ``1 / C(k, d)`` whatever
    the value, so the permanent subset (inclusion ``p_1`` at ``epsilon_infinity``) replaced by
    a uniform one with probability ``r`` is, end to end, subset selection with inclusion
    ``p = (1 - r) p_1 + r d / k``: ``P[S | x]`` still depends only on whether ``x`` is in ``S``.
    ``r`` is the multiple of ``2**-64`` that makes ``p`` at most the one-stage ``p`` at
    ``epsilon``. Any number of reports of one value are a post-processing of the permanent
    subset: ``epsilon_infinity`` (the argument of RAPPOR [4]_, Thm. 1).
    :meth:`guarantee` gives a :class:`~frameldp.accounting.MemoizedEvent`.

    Estimation
    ----------
    Bucket ``j`` is in a report of ``j`` with probability ``p`` and in a report of another value
    with ``q = (p (d - 1) + (1 - p) d) / (k - 1)``; ``ĉ_j = (C_j - n q) / (p - q)`` is unbiased
    with variance ``(c_j p (1 - p) + (n - c_j) q (1 - q)) / (p - q)^2``. At the optimal ``d`` it
    is order-optimal when ``e^epsilon << k`` [1]_.

    Under a fresh key (the default) the sampler (:func:`fixed_size_subsets`) draws
    independent bits at rate ``d / k`` and corrects each row's size by removing or adding
    uniformly random positions: exact, at about the cost of one optimized unary encoding
    report plus ``O(sqrt(d))`` candidates per row. Noise bound to values (a caller's key, a
    seed, memoized permanent subsets) is frozen across versions and keeps Floyd's algorithm
    [3]_, ``d`` rounds over every row: ``O(n d)``; but dense permanent subsets memoized under a
    scheme-3 memo key come from the fast sampler at frozen settings
    (:func:`permanent_subsets`, its own streams and memo name).

    References
    ----------
    .. [1] M. Ye, A. Barg, "Optimal Schemes for Discrete Distribution Estimation under Locally
       Differential Privacy", IEEE Trans. Inf. Theory 64(8), 2018.
    .. [2] S. Wang, L. Huang, P. Wang, Y. Nie, H. Xu, W. Yang, X.-Y. Li, C. Qiao, "Mutual
       Information Optimally Local Private Discrete Distribution Estimation", arXiv:1607.08025,
       2016 ("k-subset").
    .. [3] J. Bentley, B. Floyd, "Programming Pearls: A Sample of Brilliance", CACM 30(9), 1987.
    .. [4] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
       Privacy-Preserving Ordinal Response", CCS 2014.

    Examples
    --------
    >>> mech = SubsetSelection(1.0, domain=list(range(64)))
    >>> mech.subset_size
    17
    >>> mech.privacy.epsilon <= 1.0 + 1e-9
    True
    """

    name: ClassVar[str] = "subset_selection"
    title: ClassVar[str] = "subset selection"
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
    subset_size: int | None = field(default=None, kw_only=True)
    epsilon_infinity: float | None = field(default=None, kw_only=True)
    _out_numerator: int = field(init=False, repr=False, compare=False)
    _redraw_numerator: int = field(init=False, repr=False, compare=False)
    _inclusion: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "SubsetSelection"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        epsilon = check_epsilon(owner, "epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        k = self.domain.size
        d = self.subset_size
        if d is None:
            d = optimal_subset_size(epsilon, k)
        elif isinstance(d, bool) or not isinstance(d, int | np.integer) or not 1 <= d < k:
            raise ParameterError(
                f"{owner}: subset_size must be an integer in [1, {k - 1}] (below the domain "
                f"size {k}) or None, got {shown(d)}"
            )
        d = int(d)
        object.__setattr__(self, "subset_size", d)
        numerator = _out_numerator(epsilon, k, d)
        # At the uniform point P[x not in S] = (k - d) / k the reports carry nothing.
        if Fraction(numerator, _ONE) >= Fraction(k - d, k):
            raise ParameterError(
                f"{owner}: epsilon={shown(epsilon)} is too small to realize for k={k}, d={d}; "
                "the reports would be uniform noise"
            )
        redraw, inclusion = 0, 1 - Fraction(numerator, _ONE)
        infinity = check_epsilon_infinity(epsilon, self.epsilon_infinity, owner)
        if infinity is not None:
            object.__setattr__(self, "epsilon_infinity", infinity)
            numerator = _out_numerator(infinity, k, d)  # the permanent subset's
            permanent = 1 - Fraction(numerator, _ONE)
            redraw, inclusion = mixed_inclusion(permanent, inclusion, Fraction(d, k))
        object.__setattr__(self, "_out_numerator", numerator)
        object.__setattr__(self, "_redraw_numerator", redraw)
        object.__setattr__(self, "_inclusion", inclusion)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> SubsetSelection:
        """Rebuild from :meth:`to_spec`."""
        return cls(
            spec["epsilon"],
            domain=Domain.from_json(spec["domain"]),
            subset_size=spec["subset_size"],
            epsilon_infinity=spec.get("epsilon_infinity"),
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (rebuilding realizes the same noise); the one-stage
        spec has no ``epsilon_infinity`` key."""
        spec = {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "subset_size": self.subset_size,
            "domain": self.domain.to_json(),
        }
        if self.epsilon_infinity is not None:
            spec["epsilon_infinity"] = self.epsilon_infinity
        return spec

    @property
    def num_bits(self) -> int:
        """``k``: bits of a report (the domain size, reserved buckets included)."""
        return self.domain.size

    @property
    def _d(self) -> int:
        assert self.subset_size is not None  # set in __post_init__
        return self.subset_size

    @property
    def inclusion_probability(self) -> float:
        """Realized ``p``: probability that the subset holds the true value (end to end)."""
        return float(self._inclusion)

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, q)``: a bucket is in a report of it, and of another value."""
        return self.inclusion_probability, self._other_probability

    @property
    def _other_probability(self) -> float:
        # q = (p (d - 1) + (1 - p) d) / (k - 1) = (d - 1 + (1 - p)) / (k - 1), exactly (for
        # d = 1 the very value of k-RR's q: equal mechanisms, equal variances).
        return float((self._d - self._inclusion) / (self.num_bits - 1))

    @property
    def report_bits(self) -> int:
        """``k`` bits a report."""
        return self.num_bits

    def costs(self, n: int = 1_000_000) -> OracleCosts:
        """Under a fresh key: a sparse subset position by position (about 45 ns a position),
        else Bernoulli bits, their sizes, and the size corrections drawn by rejection (about
        1.7 standard deviations of the size in candidates, some 35 ns each); bit sums and each
        report's size checked. Fitted to ``benchmarks/bench_frequency_oracles.py`` at k = 1024
        to 16384, rounded up."""
        release_size(n)
        d, k = self._d, self.num_bits
        if d <= 8 + k // _SPARSE:
            client = 300 + 45 * d + 0.05 * k
        else:
            client = 60 + 1.0 * k + 60 * math.sqrt(d * (1 - d / k))
        return OracleCosts(client=client, server=20 + 0.1 * k)

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln(p (k - d) / ((1 - p) d))`` of the realized ``p``, rounded up, with
        one :class:`~frameldp.accounting.SubsetSelectionEvent`; :meth:`guarantee` names
        memoized permanent responses."""
        return self.guarantee()

    def _stage_events(self) -> tuple[PrivacyEvent, PrivacyEvent | None, dict[str, Any]]:
        k, d = self.num_bits, self._d

        def event(p: Fraction) -> SubsetSelectionEvent:
            return SubsetSelectionEvent(log_upper(p * (k - d) / ((1 - p) * d)), k, d)

        parameters = {
            "num_bits": k,
            "subset_size": d,
            "inclusion_probability": self.inclusion_probability,
        }
        if self.epsilon_infinity is None:
            return event(self._inclusion), None, parameters
        return event(self._inclusion), event(1 - Fraction(self._out_numerator, _ONE)), parameters

    def _instant_event(self) -> tuple[PrivacyEvent | None, int]:
        # Keep the permanent subset S, or redraw a uniform one with probability r:
        # P(S' | S) = (1 - r) [S' = S] + r / C(k, d), a ratio of 1 + (1 - r) C(k, d) / r.
        redraw = Fraction(self._redraw_numerator, _ONE)
        if redraw == 0:
            return None, 0
        subsets = math.comb(self.num_bits, self._d)
        return PureDP(log_upper(1 + (1 - redraw) * subsets / redraw)), 1

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
        """Packed subsets ``(n, ceil(k / 8))`` of integer codes in ``[0, k)``.

        Whether the subset holds the true value is an exact Bernoulli bit ("out" stream); the
        others are drawn by Floyd's algorithm over the ``k - 1`` other values, round ``j``
        drawing an exactly uniform integer in ``[0, j]`` ("pick j" stream). All of it is a
        function of (key, ``label``, spec, global row ``row_start + i``, and under a caller's
        key or a seed the row's code) only (see :class:`~frameldp.core.randomness.Rows`).

        Under a fresh key the others come from :func:`sparse_subsets` or
        :func:`fixed_size_subsets` instead. With ``epsilon_infinity``, that is the permanent
        subset ("permanent" streams; dense subsets memoized under a scheme-3 memo key:
        :func:`permanent_subsets`, "permanent v3" streams); a "redraw" bit then replaces it by
        a uniform ``d``-subset ("uniform" streams).
        With ``users`` (a 16-byte digest per row), the permanent subset is a function of
        (``memo``, default ``source``; ``label``; spec; the row's user and code) only
        (:meth:`~frameldp.core.randomness.Rows.memoized`).
        """
        k, d = self.num_bits, self._d
        codes = check_codes(self.title, "codes", codes, k)
        rows, held = self._stage_rows(
            codes, source=source, label=label, row_start=row_start, users=users, memo=memo
        )
        if held is None:
            return self._subsets(codes, rows, "")
        reports = self._subsets(codes, held, "permanent ")
        redraw = np.flatnonzero(rows.flags("redraw", self._redraw_numerator))
        nowhere = np.full(codes.size, k, dtype=np.int64)  # excludes no value
        if rows.by_position:
            if redraw.size:
                sizes = np.full(codes.size, d, dtype=np.int64)
                uniform = fixed_size_subsets(rows, "uniform ", nowhere, sizes, k, self._rate)
                reports[redraw] = uniform[redraw]
            return reports
        uniform = np.zeros_like(reports)
        _floyd(uniform, rows, "uniform ", nowhere, d, k)
        reports[redraw] = uniform[redraw]
        return reports

    @cached_property
    def _rate(self) -> int:
        """The first step's Bernoulli rate (:func:`fixed_size_subsets`) as a multiple of
        ``2**-64``: any rate is exact; ``(d - sigma / 2) / k`` (``sigma`` the size's standard
        deviation) makes the corrections few, most of them additions, which a uniform
        candidate passes more often than a removal when ``d < k / 2``."""
        d, k = self._d, self.num_bits
        centre = d - 0.5 * math.sqrt(d * (1 - d / k))
        return int(max(centre, 0.5) / k * 2**PRECISION_BITS)

    def _subsets(self, codes: NDArray[np.int64], rows: Rows, stage: str) -> NDArray[np.uint8]:
        """Subset selection with ``P[x not in S] = _out_numerator / 2**64`` of ``codes``
        (purposes prefixed by ``stage``): rows holding their value draw ``d - 1`` of the
        ``k - 1`` others, the rows ``out`` all ``d``. Under a fresh key by
        :func:`fixed_size_subsets`; noise bound to values (a caller's key, a seed, a memo key)
        is frozen across versions (``tests/core/test_frozen_keyed_noise.py``) and keeps
        Floyd's algorithm, but for dense permanent subsets under a scheme-3 memo key: those
        come from :func:`permanent_subsets`, with their own streams (``"permanent v3 ..."``),
        independent of Floyd's, which earlier versions drew under the same memo key and
        another memo name (:meth:`memo_id`)."""
        frozen_fast = stage == "permanent " and not rows.by_position
        frozen_fast = frozen_fast and self._fast_permanent(rows.source)
        if frozen_fast:
            stage = "permanent v3 "
        out = rows.flags(stage + "out", self._out_numerator)
        if not rows.by_position and not frozen_fast:  # keyed, seeded, memoized: Floyd's
            reports = np.zeros((codes.size, packed_width(self.num_bits)), dtype=np.uint8)
            _set_bits(reports, np.flatnonzero(~out), codes)
            _floyd(reports, rows, stage, codes, self._d, self.num_bits - 1, np.flatnonzero(out))
            return reports
        sizes = np.where(out, self._d, self._d - 1).astype(np.int64)
        k = self.num_bits
        if frozen_fast:
            reports = permanent_subsets(rows, stage, codes, sizes, k, self._d)
        elif self._d <= 8 + k // _SPARSE:
            reports = sparse_subsets(rows, stage, codes, sizes, k)
        else:
            reports = fixed_size_subsets(rows, stage, codes, sizes, k, self._rate)
        _set_bits(reports, np.flatnonzero(~out), codes)
        return reports

    def _fast_permanent(self, memo: RandomSource) -> bool:
        """Whether permanent subsets memoized under ``memo`` are drawn by
        :func:`permanent_subsets` (a scheme-3 memo key, a dense subset) rather than Floyd's
        algorithm (a scheme-2 memo key or a caller's key, whose subsets are frozen so; a sparse
        subset, for which Floyd's ``d`` rounds are few)."""
        return memo.memo_scheme == 3 and self._d > 8 + self.num_bits // _SPARSE

    def memo_id(self, memo: RandomSource, label: object, *, user_type: str) -> str:
        """Public name of the permanent subsets under ``memo``; those drawn by
        :func:`permanent_subsets` are named apart from Floyd's, so a ledger composes the two
        memos of one key instead of folding them."""
        if self._fast_permanent(memo):
            return memo_name(memo, (label, self._stream_suffix, user_type, "permanent v3"))
        return super().memo_id(memo, label, user_type=user_type)

    # ------------------------------------------------------------------ the protocol

    @property
    def categories(self) -> list[Hashable]:
        """Bucket labels, one per bit."""
        return list(self.domain.labels)

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """One column of packed subsets, ``ceil(k / 8)`` bytes each."""
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
        ``epsilon_infinity``, permanent subsets memoized per (user, value) under ``memo``."""
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
        """How many reports hold each value (every report must hold exactly ``d``)."""
        packed = self._reports(reports, column)
        return Statistic((count_bits(packed, self.num_bits),), packed.shape[0])

    def packed_reports(
        self, reports: Mapping[str, pa.Array], column: str
    ) -> tuple[NDArray[np.uint8], int]:
        """The packed reports, each checked to hold ``d`` values."""
        return self._reports(reports, column), self.num_bits

    def estimates_by_group(self, statistics: GroupStatistics) -> GroupEstimates:
        """:meth:`debias` of every group's counts."""
        (supports,) = statistics.parts
        p, q = self.support_probabilities
        return debias_direct_groups(supports, statistics.rows, p, q)

    def supports(self, reports: Mapping[str, pa.Array], *, column: str) -> NDArray[np.uint8]:
        """The report bits (the subset), one row per report."""
        return report_bits_matrix(self._reports(reports, column), self.num_bits)

    def _reports(self, reports: Mapping[str, pa.Array], column: str) -> NDArray[np.uint8]:
        """The packed reports, each checked to hold exactly ``d`` values."""
        packed = packed_bits(reports[column], self.num_bits, column, self.title)
        sizes = _popcounts(packed)
        wrong = np.flatnonzero(sizes != self._d)
        if wrong.size:
            row = int(wrong[0])
            raise DomainError(
                f"column {shown(column)}: report at row {row} holds {int(sizes[row])} values, not "
                f"subset_size={self._d} ({wrong.size} such reports; wrong mechanism or a "
                "tampered file?)"
            )
        return packed

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Debiased counts from how many of ``statistic.rows`` reports hold each value."""
        (supports,) = statistic.parts
        p, q = self.support_probabilities
        return debias_direct_counts(supports, statistic.rows, p, q)
