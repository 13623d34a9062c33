r"""Local hashing (OLH, BLH): k-ary randomized response over a hashed value and its public hash.

The hash family
---------------
Buckets are ``g``, a prime, so that ``Z_g`` is a field. A value ``x`` in ``[0, k)`` is written
in base ``g`` as the digits ``x_0, ..., x_{m-1}`` (``m`` the fewest with ``g^m >= k``), and the
family has one member per coefficient vector ``a`` in ``Z_g^m``::

    h_a(x) = a_0 x_0 + ... + a_{m-1} x_{m-1}  (mod g)

A seed ``s`` in ``[0, g^m)`` names the member whose coefficients are the base-``g`` digits of
``s``. For ``x != x'`` some digit difference ``x_j - x'_j`` is a unit of the field, so
``h_a(x) = h_a(x')`` for exactly one ``a_j`` in ``g`` once the others are fixed: over a uniform
seed, *every* pair of values collides with probability exactly ``1/g`` (the family is exactly
universal [3]_, not just at most ``1/g``), which makes the standard OLH estimator exactly
unbiased. The family is public and unkeyed: the seed, drawn uniformly and independently of the
value with the row's noise key, is part of the report, as in OLH [1]_.

The family is small (``g^m < g k`` members), so the server starts from the histogram
``N[a, y]`` of the reports per (seed, hash value), ``O(n)``. A value's support count is
``C_v = sum_a N[a, h_a(v)]``. Looking up every value's hash under every seed present costs
``O(k min(n, g^m) m)``; at ``k = 10^4`` and ``g = 3`` that is ``2 * 10^9`` operations. The
hash is linear in the seed's digits, so the sum is a Fourier coefficient: writing
``[y = <a, v>] = (1/g) sum_t w^(t (y - <a, v>))`` (``w = e^(2 pi i / g)``) gives
``C_v = (1/g) sum_t F[t v, -t]``, where ``F`` is the ``(m + 1)``-dimensional discrete Fourier
transform of ``N`` over ``Z_g`` (a character sum: the family is linear over the field). That
is ``O(g^(m+1) (m+1) log g + k g)``, about ``g k log k``:
at ``k = 10^4``, ``g = 3``, a 59,049-point transform. The counts are integers and the
transform's rounding error is far below 1/2, so rounding makes them exact. The server takes
the cheaper of the two (:meth:`LocalHashing.support_counts`); the transform only while its
``g^(m+1)`` cells fit 128 MiB, as large ``g`` (large epsilon) with ``m = 1`` would not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import (
    LocalHashingEvent,
    PrivacyEvent,
    PrivacyGuarantee,
    RandomizedResponseEvent,
)
from frameldp.accounting.rounding import log_upper
from frameldp.arguments import check_codes, check_epsilon
from frameldp.core.columns import integer_reports, single_codes
from frameldp.core.encoding import Domain
from frameldp.core.estimation import (
    FrequencyEstimate,
    debias_direct_counts,
    mean_direct_variance,
)
from frameldp.core.mechanisms._longitudinal import (
    TwoStage,
    chained_move,
    check_epsilon_infinity,
    permanent_rows,
    value_digests,
)
from frameldp.core.mechanisms._memo import randomize_with_users
from frameldp.core.mechanisms._noise import is_prime, noise_numerator
from frameldp.core.mechanisms.protocol import (
    Capability,
    FrequencyEstimation,
    OracleCosts,
    Statistic,
    release_size,
)
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import PRECISION_BITS, RandomSource, Rows, code_bytes
from frameldp.core.sorting import sorted_distinct
from frameldp.errors import ParameterError, shown

__all__ = ["LocalHashing", "hashing_guarantee", "optimal_hash_buckets"]

_ONE: Final = 1 << PRECISION_BITS
_MAX_SEEDS: Final = 1 << 32
# Entries of the (seeds x values) hash table computed at once by the server.
_TABLE_BLOCK: Final = 1 << 22
# The largest report histogram the server transforms (2**23 complex numbers: 128 MiB), and the
# most reports of one batch it transforms (the support counts stay below 2**40, so rounding the
# transform is exact).
_TRANSFORM_CELLS: Final = 1 << 23
_TRANSFORM_REPORTS: Final = 1 << 40


def _move_numerator(epsilon: float, g: int) -> int:
    """``P[move] = (g - 1) / (e^eps + g - 1)`` as a multiple of ``2**-64``, rounded up."""
    return noise_numerator(g - 1, epsilon)


def _mean_variance(epsilon: float, g: int, k: int) -> float:
    """The estimator variance per report averaged over ``k`` buckets (exact for every
    distribution): ``(p (1 - p) + (k - 1)(1/g)(1 - 1/g)) / (k (p - 1/g)^2)``."""
    p = 1.0 - _move_numerator(epsilon, g) / _ONE
    return float(mean_direct_variance(p, 1.0 / g, k))


def _num_digits(g: int, k: int) -> int:
    """``m``: the fewest base-``g`` digits that write every value of ``[0, k)``."""
    digits = 1
    while g**digits < k:
        digits += 1
    return digits


def _fits(g: int, k: int) -> bool:
    """Whether the family's seeds fit the uniform sampler (``g^m <= 2**32``) and reports
    ``seed * g + y`` fit 62 bits."""
    digits = _num_digits(g, k)
    return bool(g**digits <= _MAX_SEEDS and g ** (digits + 1) <= 1 << 62)


def _prime_at_most(value: int) -> int:
    while value > 2 and not is_prime(value):
        value -= 1
    return max(value, 2)


def hashing_guarantee(
    name: str, move: int, num_buckets: int, parameters: dict[str, Any]
) -> PrivacyGuarantee:
    """Pure epsilon ``ln(p / q)`` of k-ary randomized response over ``num_buckets`` hash values
    with move probability ``move / 2**64``, rounded up, with one
    :class:`~frameldp.accounting.LocalHashingEvent` (two values collide under exactly ``1/g``
    of the hash functions, and then lose nothing)."""
    event = hashing_event(Fraction(move, _ONE), num_buckets)
    shown = {"num_buckets": num_buckets, **parameters, "keep_probability": 1 - move / _ONE}
    return PrivacyGuarantee(event.epsilon, name, shown, events=((event, 1),))


def hashing_event(move: Fraction, num_buckets: int) -> LocalHashingEvent:
    """The :class:`~frameldp.accounting.LocalHashingEvent` of k-ary randomized response over
    ``num_buckets`` hash values with move probability ``move``: pure epsilon ``ln(p / q)``,
    rounded up."""
    g = num_buckets
    return LocalHashingEvent(log_upper((1 - move) * (g - 1) / move), g)


def optimal_hash_buckets(epsilon: float, k: int) -> int:
    """The prime ``g`` with the smallest estimator variance at ``epsilon`` over ``k`` values.

    Optimal local hashing takes ``g = e^epsilon + 1`` [1]_; the variance is flat around it, and
    the nearest primes on either side cost at most a few percent (2% at epsilon 1, where
    ``round(e + 1) = 4`` would be the composite choice).
    """
    target = math.exp(min(epsilon, 22.0)) + 1.0
    low = _prime_at_most(max(2, math.floor(target)))
    while not _fits(low, k):  # very large epsilon: the largest prime the reports can hold
        low = _prime_at_most(low // 2)
    high = math.ceil(target)
    while not is_prime(high):
        high += 1
    candidates = {g for g in (2, low, high) if _fits(g, k)}
    return min(sorted(candidates), key=lambda g: _mean_variance(epsilon, g, k))


@register("local_hashing")
@dataclass(frozen=True)
class LocalHashing(TwoStage, FrequencyEstimation):
    r"""Local hashing over a public domain of ``k`` buckets: optimal (OLH) or binary (BLH).

    Each report is ``(seed, y)``: a uniformly drawn member ``h`` of an exactly universal hash
    family into ``g`` buckets (module docstring), and ``y``, k-ary randomized response over the
    ``g`` buckets applied to ``h(x)``: ``y = h(x)`` with probability
    ``p = e^epsilon / (e^epsilon + g - 1)``, otherwise one of the other ``g - 1`` uniformly. The
    report column holds ``seed * g + y`` (an unsigned 64-bit integer).

    Parameters
    ----------
    epsilon
        Target privacy loss (> 0).
    domain
        The public domain (list, categorical dtype or :class:`~frameldp.core.encoding.Domain`).
    num_buckets
        ``g``, a prime: ``None`` picks the variance-optimal prime next to ``e^epsilon + 1``
        (optimal local hashing; :func:`optimal_hash_buckets`, at ``epsilon``), 2 is binary
        local hashing.
    epsilon_infinity
        Longitudinal local hashing (LOLOHA [4]_): with reports that come with users, a user
        keeps one hash function (seed) in every report, and a *permanent* k-RR response over
        the ``g`` hash values at ``epsilon_infinity`` (>= ``epsilon``) is memoized per (user,
        hash value); every report applies a fresh k-RR over the hash values to it, so that one
        report is ``epsilon``-LDP end to end. ``None`` (default): one stage.

    Privacy
    -------
    The seed is drawn independently of the value and reveals nothing about it; given the seed,
    ``y`` is k-ary randomized response over ``g`` values, epsilon-LDP [1]_. The move probability
    is realized exactly as a multiple of ``2**-64`` at least as large as requested (more noise),
    and ``privacy`` reports ``ln(p / q)`` of the realized probabilities, rounded up, with one
    :class:`~frameldp.accounting.LocalHashingEvent`: every pair of values collides under
    exactly ``1/g`` of the seeds (and then loses nothing), so the worst-case loss is
    three-valued with the neutral weight ``(g - 1) + e^epsilon / (g - 1)``, and its Rényi curve,
    zCDP and composition are exact (:mod:`frameldp.accounting.events.ternary`).

    With ``epsilon_infinity``: k-RR over the hash values after k-RR over them is k-RR with move
    probability ``M = m_1 + m_2 (1 - m_1 g / (g - 1))``, so given the seed one report is k-RR
    at ``ln(p / q)`` for ``p = 1 - M``: end to end, OLH at that epsilon. The seed is a keyed
    function of the user alone (independent of the values, and of other users' seeds), so a
    value that changes does not show in it. Reports of any number of values that share a hash
    value are a post-processing of one permanent response: at most ``epsilon_infinity``, and at
    most ``g epsilon_infinity`` over any history of values [4]_. The seed is the same in every
    report of a user under one memo key: like the memoized responses themselves, it links a
    user's reports across collections.
    :meth:`guarantee` gives a :class:`~frameldp.accounting.MemoizedEvent`.

    Estimation
    ----------
    A report supports every value ``v`` with ``h(v) = y``: its own with probability ``p``, any
    other with exactly ``1/g`` (exact universality). ``ĉ_j = (C_j - n/g) / (p - 1/g)`` is
    unbiased with variance ``(c_j p (1 - p) + (n - c_j)(1/g)(1 - 1/g)) / (p - 1/g)^2``, as
    ``c_j / n -> 0`` ``n 4 e^epsilon / (e^epsilon - 1)^2`` at ``g = e^epsilon + 1`` [1]_ [2]_.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017 (Sec. 4.4, "Local Hashing").
    .. [2] R. Bassily, A. Smith, "Local, Private, Efficient Protocols for Succinct Histograms",
       STOC 2015.
    .. [3] J. L. Carter, M. N. Wegman, "Universal Classes of Hash Functions", JCSS 18(2), 1979.
    .. [4] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs, "Frequency Estimation of
       Evolving Data Under Local Differential Privacy", EDBT 2023 (arXiv:2210.00262), Sec. 4
       (LOLOHA).

    Examples
    --------
    >>> mech = LocalHashing(1.0, domain=list(range(100)))
    >>> mech.num_buckets, mech.num_seeds
    (3, 243)
    >>> LocalHashing(1.0, domain=list(range(100)), num_buckets=2).num_buckets
    2
    """

    name: ClassVar[str] = "local_hashing"
    title: ClassVar[str] = "local hashing"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {
            Capability.CALLER_KEY,
            Capability.FREQUENCY_ORACLE,
            Capability.INTEGER_REPORTS,
            Capability.MEMOIZATION,
        }
    )

    epsilon: float
    domain: Domain = field(kw_only=True)
    num_buckets: int | None = field(default=None, kw_only=True)
    epsilon_infinity: float | None = field(default=None, kw_only=True)
    _move_numerator: int = field(init=False, repr=False, compare=False)
    _permanent_numerator: int = field(init=False, repr=False, compare=False)
    _move: Fraction = field(init=False, repr=False, compare=False)
    _num_digits: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "LocalHashing"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        epsilon = check_epsilon(owner, "epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        g = self.num_buckets
        if g is None:
            g = optimal_hash_buckets(epsilon, self.domain.size)
        elif isinstance(g, bool) or not isinstance(g, int | np.integer) or not 2 <= g <= 1 << 32:
            raise ParameterError(
                f"{owner}: num_buckets must be a prime in [2, 2**32] or None, got {shown(g)}"
            )
        elif not is_prime(int(g)):
            below = next(p for p in range(int(g) - 1, 1, -1) if is_prime(p))
            above = next(p for p in range(int(g) + 1, 2 * int(g) + 2) if is_prime(p))
            raise ParameterError(
                f"{owner}: num_buckets must be a prime (the hash family is exactly universal "
                f"over the field Z_g), got {shown(g)}; the primes next to it are {below} and "
                f"{above}"
            )
        g = int(g)
        object.__setattr__(self, "num_buckets", g)
        digits = _num_digits(g, self.domain.size)
        if not _fits(g, self.domain.size):
            raise ParameterError(
                f"{owner}: the hash family for k={self.domain.size} values and {g} buckets has "
                f"{g**digits} members: reports of seed * g + y would not fit in 62 bits"
            )
        object.__setattr__(self, "_num_digits", digits)
        numerator = _move_numerator(epsilon, g)
        if Fraction(numerator, _ONE) >= Fraction(g - 1, g):
            raise ParameterError(
                f"{owner}: epsilon={shown(epsilon)} is too small to realize for {g} buckets; the "
                "reports would be uniform noise"
            )
        permanent, move = 0, Fraction(numerator, _ONE)
        infinity = check_epsilon_infinity(epsilon, self.epsilon_infinity, owner)
        if infinity is not None:
            object.__setattr__(self, "epsilon_infinity", infinity)
            permanent = _move_numerator(infinity, g)
            numerator, move = chained_move(g, permanent, move)
        object.__setattr__(self, "_move_numerator", numerator)
        object.__setattr__(self, "_permanent_numerator", permanent)
        object.__setattr__(self, "_move", move)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> LocalHashing:
        """Rebuild from :meth:`to_spec`."""
        return cls(
            spec["epsilon"],
            domain=Domain.from_json(spec["domain"]),
            num_buckets=spec["num_buckets"],
            epsilon_infinity=spec.get("epsilon_infinity"),
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (rebuilding realizes the same noise); the one-stage
        spec has no ``epsilon_infinity`` key."""
        spec = {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "num_buckets": self.num_buckets,
            "domain": self.domain.to_json(),
        }
        if self.epsilon_infinity is not None:
            spec["epsilon_infinity"] = self.epsilon_infinity
        return spec

    @property
    def _g(self) -> int:
        assert self.num_buckets is not None  # set in __post_init__
        return self.num_buckets

    @property
    def num_seeds(self) -> int:
        """Members of the hash family: ``g^m``, the fewest powers of ``g`` reaching ``k``."""
        return int(self._g**self._num_digits)

    @property
    def keep_probability(self) -> float:
        """Realized ``p``: probability that ``y`` is the value's hash (end to end)."""
        return float(1 - self._move)

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, 1/g)``: a report supports its own value, and any other (exactly)."""
        return self.keep_probability, 1.0 / self._g

    @property
    def report_range(self) -> int:
        """Reports are integers in ``[0, report_range)``."""
        return self.num_seeds * self._g

    @property
    def report_bits(self) -> int:
        """``ceil(log2(g^m g))`` bits a report."""
        return math.ceil(math.log2(self.num_seeds * self._g))

    def costs(self, n: int = 1_000_000) -> OracleCosts:
        """A seed, a hash of ``m`` digits and k-RR over ``g`` a report; the server's fixed
        cost a release is the cheaper of its two methods (:meth:`support_counts`)."""
        n = release_size(n)
        # About 7 ns an operation of either method (measured: 0.02 s at k = 1024, eps = 4 and
        # 1.2 s at k = 16384, eps = 4, by the transform).
        fixed = 7 * min(self._server_operations(n))
        return OracleCosts(client=150 + 20 * self._num_digits, server=15 + fixed / n)

    def _server_operations(self, n: int) -> tuple[float, float]:
        """Operation counts of the server's two methods on ``n`` reports, about as long per
        unit: the transform (``inf`` where it may not run) and the lookup."""
        g, m, k = self._g, self._num_digits, self.domain.size
        cells = g ** (m + 1)
        transform = cells * (m + 1) * max(1.0, math.log2(g)) + 2 * k * g
        if cells > _TRANSFORM_CELLS or n >= _TRANSFORM_REPORTS:
            transform = math.inf
        lookup = n * math.log2(n + 2) + 2 * k * min(n, self.num_seeds) * m
        return transform, lookup

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln(p / q)`` of the realized probabilities over ``g`` buckets, rounded
        up, with one :class:`~frameldp.accounting.LocalHashingEvent` at ``g``;
        :meth:`guarantee` names memoized permanent responses."""
        return self.guarantee()

    def _stage_events(self) -> tuple[PrivacyEvent, PrivacyEvent | None, dict[str, Any]]:
        g = self._g
        event = hashing_event(self._move, g)
        parameters = {
            "num_buckets": g,
            "num_seeds": self.num_seeds,
            "keep_probability": self.keep_probability,
        }
        if self.epsilon_infinity is None:
            return event, None, parameters
        return event, hashing_event(Fraction(self._permanent_numerator, _ONE), g), parameters

    def _instant_event(self) -> tuple[PrivacyEvent | None, int]:
        # g-ary RR of the permanent hash value, under the user's kept hash function: plain
        # k-RR over g values. (LocalHashingEvent credits a fresh hash per report, under which
        # two values collide with probability 1/g; a kept hash gives no such credit.)
        move = Fraction(self._move_numerator, _ONE)
        if move == 0:
            return None, 0
        g = self._g
        return RandomizedResponseEvent(log_upper((1 - move) * (g - 1) / move), g), 1

    @cached_property
    def _powers(self) -> NDArray[np.int64]:
        return self._g ** np.arange(self._num_digits, dtype=np.int64)

    def _digits(self, values: NDArray[np.int64]) -> NDArray[np.int64]:
        """``(n, m)`` base-``g`` digits, least significant first."""
        return (values[:, None] // self._powers[None, :]) % self._g

    def hash_values(self, seeds: NDArray[np.int64], codes: NDArray[np.int64]) -> NDArray[np.int64]:
        """``h_seed(code)`` row by row (both arrays of one length)."""
        products = self._digits(seeds) * self._digits(codes)
        return np.asarray(np.sum(products, axis=1) % self._g, dtype=np.int64)

    def randomize(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
        users: NDArray[np.uint8] | None = None,
        memo: RandomSource | None = None,
    ) -> NDArray[np.uint64]:
        """Reports ``seed * g + y`` of integer codes in ``[0, k)``.

        The seed ("seed" stream), the move bit and the other bucket are functions of (key,
        ``label``, spec, global row ``row_start + i``, and under a caller's key or a seed the
        row's code) only (see :class:`~frameldp.core.randomness.Rows`).

        With ``epsilon_infinity``, ``y`` is the instantaneous response to a permanent one drawn
        the same way ("permanent" streams). With ``users`` (a 16-byte digest per row), the seed
        is a function of (``memo``, default ``source``; ``label``; spec; the row's user) and
        the permanent response of (the same; the row's hash value) only
        (:meth:`~frameldp.core.randomness.Rows.memoized`).
        """
        codes = check_codes(self.title, "codes", codes, self.domain.size)
        g = self._g
        base = (label, self._stream_suffix)
        rows = source.rows(base, row_start, codes.size, lambda: code_bytes(codes))
        if self.epsilon_infinity is None:
            if users is not None:
                raise ParameterError("users are only used with epsilon_infinity")
            seeds = rows.uniform("seed", self.num_seeds)
            reported = self._moved(self.hash_values(seeds, codes), rows, self._move_numerator, "")
            return (seeds * g + reported).astype(np.uint64)

        def memoized(stream: tuple[object, ...], values: Callable[[], NDArray[np.uint8]]) -> Rows:
            return permanent_rows(
                rows, source=source, memo=memo, label=stream, users=users, values=values
            )

        no_value = np.zeros((codes.size, 16), dtype=np.uint8)
        seeds = memoized((*base, "user"), lambda: no_value).uniform("seed", self.num_seeds)
        hashed = self.hash_values(seeds, codes)
        held = memoized(base, lambda: value_digests(hashed))
        permanent = self._moved(hashed, held, self._permanent_numerator, "permanent ")
        reported = self._moved(permanent, rows, self._move_numerator, "")
        return (seeds * g + reported).astype(np.uint64)

    def _moved(
        self, hashed: NDArray[np.int64], rows: Rows, numerator: int, stage: str
    ) -> NDArray[np.int64]:
        """k-RR over the ``g`` hash values with move probability ``numerator / 2**64``
        (purposes prefixed by ``stage``)."""
        moves = rows.flags(stage + "move", numerator)
        g = self._g
        if g == 2:
            others = 1 - hashed
        else:
            shift = rows.uniform(stage + "other", g - 1)
            others = shift + (shift >= hashed)
        return np.asarray(np.where(moves, others, hashed), dtype=np.int64)

    def support_counts(self, reports: NDArray[np.uint64]) -> NDArray[np.int64]:
        """``C_v``: how many reports support each value ``v`` (``h_seed(v) = y``), by the
        cheaper of two exact methods (module docstring): the Fourier transform of the report
        histogram, ``O(n + g^(m+1) (m+1) log g + k g)``, or a lookup of every value's hash
        under every seed present, ``O(n log n + k min(n, g^m) m)``."""
        values = np.asarray(reports, dtype=np.int64)
        transform, lookup = self._server_operations(values.size)
        if transform < lookup:
            return self._transformed_support_counts(values)
        return self._looked_up_support_counts(values)

    def _transformed_support_counts(self, values: NDArray[np.int64]) -> NDArray[np.int64]:
        """Support counts from the ``(m + 1)``-dimensional DFT over ``Z_g`` of the histogram
        ``N[a, y]`` of the reports (seed digits ``a``, hash value ``y``):
        ``C_v = sum_a N[a, <a, v>] = (1/g) sum_t F[t v, -t]`` where
        ``F[w, s] = sum_{a, y} N[a, y] exp(-2 pi i (<a, w> + s y) / g)`` (the indicator of
        ``y = <a, v>`` written as ``(1/g) sum_t w^(t (y - <a, v>))``). The sums are integers
        below ``2**40``; the transform's rounding error is far below 1/2, so rounding is
        exact."""
        g, m, k = self._g, self._num_digits, self.domain.size
        histogram = np.bincount(values, minlength=self.report_range).astype(np.float64)
        # Axes: the seed's digits, most significant first, then y (a report is seed * g + y).
        spectrum = np.fft.fftn(histogram.reshape((g,) * (m + 1))).ravel()
        value_digits = self._digits(np.arange(k, dtype=np.int64))[:, ::-1]
        strides = g ** np.arange(m, 0, -1, dtype=np.int64)  # of the seed's digits
        totals = np.zeros(k, dtype=np.float64)
        for t in range(g):
            frequencies = (t * value_digits) % g
            cells = frequencies @ strides + (-t) % g
            totals += spectrum[cells].real
        return np.rint(totals / g).astype(np.int64)

    def _looked_up_support_counts(self, values: NDArray[np.int64]) -> NDArray[np.int64]:
        """Support counts by lookup: the distinct reports are counted (sorted); then, one
        block of the seeds present at a time, every value's hash under those seeds is looked
        up among them. Memory is ``O(n + block k)`` whatever ``g`` is."""
        g, k = self._g, self.domain.size
        keys, counts = np.unique(values, return_counts=True)
        present = sorted_distinct(keys // g)
        value_digits = self._digits(np.arange(k, dtype=np.int64))
        totals = np.zeros(k, dtype=np.int64)
        block = max(1, _TABLE_BLOCK // max(k, 1))
        for start in range(0, present.size, block):
            seeds = present[start : start + block]
            seed_digits = self._digits(seeds)
            hashes = np.zeros((seeds.size, k), dtype=np.int64)
            for j in range(self._num_digits):
                # Each product is below g^2 <= 2**62 (g^2 > 2**32 only when m = 1).
                hashes += np.multiply.outer(seed_digits[:, j], value_digits[:, j]) % g
                hashes %= g
            wanted = seeds[:, None] * g + hashes
            found = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
            totals += np.where(keys[found] == wanted, counts[found], 0).sum(axis=0)
        return totals

    # ------------------------------------------------------------------ the protocol

    @property
    def categories(self) -> list[Hashable]:
        """Bucket labels."""
        return list(self.domain.labels)

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """One column of ``seed * g + y`` (unsigned 64-bit integers)."""
        return {column: pa.uint64()}

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
        ``epsilon_infinity``, a seed per user and permanent responses memoized per (user, hash
        value) under ``memo``."""
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
        return {column: pa.array(reports, type=pa.uint64())}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Support counts per value of one batch of reports (``seed * g + y``, below
        ``report_range``)."""
        values = integer_reports(reports[column], self.report_range, column, self.title)
        return Statistic((self.support_counts(values.astype(np.uint64)),), values.size)

    def supports(self, reports: Mapping[str, pa.Array], *, column: str) -> NDArray[np.uint8]:
        """Whether each report ``seed * g + y`` has ``h_seed(v) = y``, for every value ``v``."""
        g, k = self._g, self.domain.size
        values = integer_reports(reports[column], self.report_range, column, self.title)
        seed_digits = self._digits(values // g)
        value_digits = self._digits(np.arange(k, dtype=np.int64))
        hashes = np.zeros((values.size, k), dtype=np.int64)
        for j in range(self._num_digits):
            # Each product is below g^2 <= 2**62, as in support_counts.
            hashes += np.multiply.outer(seed_digits[:, j], value_digits[:, j]) % g
            hashes %= g
        supported: NDArray[np.uint8] = (hashes == (values % g)[:, None]).astype(np.uint8)
        return supported

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Debiased counts from the support counts of ``statistic.rows`` reports."""
        (supports,) = statistic.parts
        keep, other = self.support_probabilities
        return debias_direct_counts(supports, statistic.rows, keep, other)
