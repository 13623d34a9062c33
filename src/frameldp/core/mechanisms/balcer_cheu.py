"""Balcer–Cheu shuffle-model protocols: binary sums and histograms with domain-free error.

Binary sums [1]_ (Algorithms 1 and 2, Theorem 3.1). With ``epsilon, delta`` in ``(0, 1]`` and
``n`` people, let ``gamma = 50 ln(2 / delta) / (epsilon^2 n)`` and ``p = 1 - gamma``. Each person
with bit ``x`` sends ``x + z`` messages "1", where ``z ~ Bernoulli(p)``. The shuffler's output is
the number of messages, ``sum(x) + Bin(n, p)``; the analyzer returns ``c* - p`` when
``c* = |messages| / n > 1`` and 0 otherwise. When ``n >= 100 ln(2 / delta) / epsilon^2`` (so that
``gamma <= 1/2``) the shuffled messages are ``(epsilon, delta)``-DP: ``n - |messages|`` is the
1-sensitive sum plus ``Bin(n, gamma)`` noise, and that binomial is ``(epsilon, delta, 1)``-smooth
([1]_ Lemma 3, from [2]_).

Histograms [1]_ (Section 3.2): a person with value ``x`` in a domain of ``k`` buckets runs the
binary-sum randomizer on each bucket's indicator and labels each message with its bucket, so
the shuffler sees, per bucket ``j``, ``s_j + Bin(n, p)`` messages labelled ``j``. Changing one
person's value changes *two* indicators, so the protocol is ``(2 epsilon', 2 delta')``-DP when
each bucket runs at ``(epsilon', delta')``. frameldp runs each bucket at
``(epsilon / 2, delta / 2)`` so that the histogram meets the requested ``(epsilon, delta)``;
hence ``epsilon <= 2`` and the validity condition ``n >= 400 ln(4 / delta) / epsilon^2``.

Every person sends about ``1 + k p`` messages (communication grows with the domain); in return
the error of each count does not: ``Var = n p gamma = 50 ln(2 / delta') p / epsilon'^2``,
independent of ``n`` and ``k``.

References
----------
.. [1] V. Balcer, A. Cheu, "Separating Local & Shuffled Differential Privacy via Histograms",
   ITC 2020 (arXiv:1911.06879).
.. [2] B. Ghazi, N. Golowich, R. Kumar, R. Pagh, A. Velingker, "On the Power of Multiple
   Anonymous Messages", EUROCRYPT 2021 (arXiv:1908.11358).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, partial
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import BinomialCountsEvent, PrivacyGuarantee
from frameldp.accounting.rounding import float_up
from frameldp.arguments import check_codes, check_number
from frameldp.core.columns import (
    check_report_labels,
    label_array,
    label_counts,
    label_type,
    single_codes,
)
from frameldp.core.encoding import Domain
from frameldp.core.estimation import FrequencyEstimate
from frameldp.core.mechanisms._noise import FLOAT_MARGIN
from frameldp.core.mechanisms._spec import fingerprint
from frameldp.core.mechanisms.protocol import Capability, FrequencyEstimation, Statistic
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import (
    PRECISION_BITS,
    RandomSource,
    code_bytes,
    dyadic_at_least,
)
from frameldp.errors import ParameterError, renamed, shown

__all__ = ["BalcerCheu", "binary_sum_analyze", "binary_sum_gamma"]

_ONE: Final = 1 << PRECISION_BITS
# Users per randomization step: bounds the unpacked (users x buckets) bit matrix.
_CHUNK_BITS: Final = 1 << 24
_MAX_PEOPLE: Final = 1 << 62


def binary_sum_gamma(epsilon: float, delta: float, n: int, *, owner: str = "Balcer–Cheu") -> float:
    """``gamma = 50 ln(2 / delta) / (epsilon^2 n)`` ([1]_ Algorithm 1), after checking
    ``epsilon, delta`` in ``(0, 1]`` and ``n >= 100 ln(2 / delta) / epsilon^2`` (Theorem 3.1)."""
    numbers = []
    for name, value in (("epsilon", epsilon), ("delta", delta)):
        numbers.append(check_number(owner, f"per-count {name}", value))
        if not 0.0 < numbers[-1] <= 1.0:
            raise ParameterError(f"{owner}: per-count {name} must be in (0, 1], got {shown(value)}")
    epsilon, delta = numbers
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ParameterError(f"{owner}: n must be an integer >= 1, got {shown(n)}")
    if n > _MAX_PEOPLE:
        raise ParameterError(f"{owner}: n must be at most 2**62, got {shown(n)}")
    square = epsilon**2  # 0.0 for epsilon below about 1e-162: no n is enough
    needed = 100.0 * math.log(2.0 / delta) / square if square else math.inf
    if n < needed:
        bound = math.ceil(needed) if math.isfinite(needed) else "more than 1e308"
        raise ParameterError(
            f"{owner}: n={n} people are too few for per-count (epsilon, delta) = "
            f"({epsilon:g}, {delta:g}); Balcer and Cheu's protocol needs n >= "
            f"100 ln(2/delta) / epsilon^2 = {bound}"
        )
    return 50.0 * math.log(2.0 / delta) / (epsilon**2 * int(n))


def binary_sum_analyze(message_count: int, n: int, noise_probability: float) -> float:
    """The analyzer ``A^zsum`` ([1]_ Algorithm 2): ``c* - p`` if ``c* = count / n > 1``, else 0
    (an estimate of the *share* of ones; exactly 0 when nobody holds a one)."""
    share = message_count / n
    return share - noise_probability if share > 1.0 else 0.0


@register("balcer_cheu")
@dataclass(frozen=True)
class BalcerCheu(FrequencyEstimation):
    r"""Balcer–Cheu shuffle-model histogram over a public domain, for ``n`` people.

    Parameters
    ----------
    epsilon, delta
        Central privacy of the shuffled messages: ``epsilon`` in ``(0, 2]``, ``delta`` in
        ``(0, 1)``. Each bucket runs the binary-sum protocol at ``(epsilon / 2, delta / 2)``.
    n
        Number of people (one value each); the parameters depend on it.
    domain
        The public domain (list, categorical dtype or :class:`~frameldp.core.encoding.Domain`).

    Privacy
    -------
    ``(epsilon, delta)``-DP in the shuffle model [1]_ (Theorem 3.1 per bucket; two buckets
    change per person). Requires ``n >= 400 ln(4 / delta) / epsilon^2``, refused otherwise. The
    probability ``gamma`` of *not* sending a bucket's noise message is realized exactly as a
    multiple of ``2**-64`` at least as large as requested (more noise). ``privacy`` holds a
    :class:`~frameldp.accounting.BinomialCountsEvent` whose exact privacy-loss distribution gives
    ``epsilon_at(delta)`` well below the requested ``epsilon`` (the paper's constants are loose).
    There is no local guarantee: a single person's messages reveal their value (only the
    shuffler's anonymity protects it).

    Estimation
    ----------
    ``ĉ_j = M_j - n p`` (``M_j`` messages labelled ``j``) is unbiased with variance
    ``n p (1 - p)``, the same for every bucket and independent of the domain size; the paper's
    analyzer (:meth:`zero_sum`) also returns exactly 0 for buckets with ``M_j <= n``.

    References
    ----------
    .. [1] V. Balcer, A. Cheu, "Separating Local & Shuffled Differential Privacy via
       Histograms", ITC 2020.

    Examples
    --------
    >>> mech = BalcerCheu(1.0, 1e-6, n=20_000, domain=["a", "b", "c"])
    >>> round(mech.absent_probability, 5)          # 50 ln(2 / 5e-7) / (0.5^2 * 20,000)
    0.15202
    >>> round(mech.messages_per_person, 3)         # 1 + k p
    3.544
    >>> mech.privacy.epsilon_at(1e-6) < 1.0
    True
    """

    name: ClassVar[str] = "balcer_cheu"
    title: ClassVar[str] = "Balcer–Cheu"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.SHUFFLER_MESSAGES})

    epsilon: float
    delta: float
    n: int = field(kw_only=True)
    domain: Domain = field(kw_only=True)
    _absent_numerator: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "BalcerCheu"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        epsilon = check_number(owner, "epsilon", self.epsilon)
        if not 0.0 < epsilon <= 2.0:
            raise ParameterError(
                f"{owner}: epsilon must be in (0, 2] (each bucket runs at epsilon / 2 <= 1), got "
                f"{shown(self.epsilon)}"
            )
        delta = check_number(owner, "delta", self.delta)
        if not 0.0 < delta < 1.0:
            raise ParameterError(f"{owner}: delta must be in (0, 1), got {shown(self.delta)}")
        for name, value in (("epsilon", epsilon), ("delta", delta)):
            if value / 2.0 == 0.0:  # 5e-324 / 2 underflows: no bucket could run at it
                raise ParameterError(f"{owner}: {name}={value!r} is too small to realize")
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "delta", delta)
        gamma = binary_sum_gamma(self.epsilon / 2.0, self.delta / 2.0, self.n, owner=owner)
        numerator = dyadic_at_least(gamma * (1 + FLOAT_MARGIN))
        if 2 * numerator > _ONE:  # rounding passed gamma = 1/2, where the proof stops
            raise ParameterError(f"{owner}: n={self.n} is too small for these parameters")
        if float_up(Fraction(_ONE - numerator, _ONE)) >= 1.0:
            # 1 - gamma would round to 1: the accountant's binomial noise would vanish.
            raise ParameterError(
                f"{owner}: n={self.n} is too large for these parameters (the noise probability "
                "1 - gamma rounds to 1 in double precision)"
            )
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "_absent_numerator", numerator)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> BalcerCheu:
        """Rebuild from :meth:`to_spec`."""
        domain = spec["domain"]
        return cls(
            spec["epsilon"],
            spec["delta"],
            n=spec["n"],
            domain=Domain.coerce(
                domain["categories"], unknown=domain["unknown"], nulls=domain["nulls"]
            ),
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (rebuilding realizes the same noise)."""
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "n": self.n,
            "domain": self.domain.to_json(),
        }

    @property
    def num_buckets(self) -> int:
        """Number of buckets."""
        return self.domain.size

    @property
    def k(self) -> int:
        """Deprecated name of :attr:`num_buckets`."""
        renamed("BalcerCheu", "k", "num_buckets")
        return self.num_buckets

    @property
    def absent_probability(self) -> float:
        """Realized ``gamma``: probability that a person sends no noise message for a bucket."""
        return self._absent_numerator / 2.0**PRECISION_BITS

    @property
    def noise_probability(self) -> float:
        """Realized ``p = 1 - gamma``, rounded up to a float (the side of less noise, so the
        guarantee computed from it is never optimistic)."""
        return float_up(Fraction(_ONE - self._absent_numerator, _ONE))

    @property
    def messages_per_person(self) -> float:
        """Expected messages each person sends: their value's, plus ``k p`` noise messages."""
        return 1.0 + self.num_buckets * self.noise_probability

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Central guarantee of the shuffled messages (shuffle model, no pure epsilon)."""
        event = BinomialCountsEvent(self.n, self.noise_probability, bins=2)
        parameters = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "reports": self.n,
            "noise_probability": self.noise_probability,
        }
        return PrivacyGuarantee(math.inf, self.name, parameters, (), ((event, 1),), "shuffle")

    @cached_property
    def _stream_suffix(self) -> str:
        return fingerprint(self.to_spec())

    def _noise_chunks(
        self, codes: NDArray[np.int64], source: RandomSource, label: object, row_start: int
    ) -> Any:
        """``(chunk offset, (rows, k) 0/1 noise-message matrix)`` for consecutive row chunks.

        Bucket ``j`` of person ``i`` is *absent* with an exact Bernoulli(``gamma``) bit: a
        function of (key, ``label``, spec, global row ``row_start + i``, and under a caller's
        key or a seed the person's code) only (see :class:`~frameldp.core.randomness.Rows`).
        """
        step = max(1, _CHUNK_BITS // self.num_buckets)
        for offset in range(0, codes.size, step):
            chunk = codes[offset : offset + step]
            rows = source.rows(
                (label, self._stream_suffix),
                row_start + offset,
                chunk.size,
                partial(code_bytes, chunk),
            )
            absent = rows.bernoulli("absent", self._absent_numerator, self.num_buckets)
            yield offset, 1 - np.unpackbits(absent, axis=1, count=self.num_buckets)

    def randomize(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
    ) -> NDArray[np.int64]:
        """The messages (bucket codes) of people with value ``codes``, person after person.

        Person ``i`` sends their own bucket once and bucket ``j`` once more with probability
        ``p``. The result is *not* shuffled: the shuffler (``frame.ldp.shuffle``, or the frame
        accessor ``balcer_cheu``, which shuffles) must permute it before anyone sees it.
        """
        codes = check_codes(self.title, "codes", codes, self.num_buckets)
        parts: list[NDArray[np.int64]] = []
        for offset, noise in self._noise_chunks(codes, source, label, row_start):
            rows = noise.shape[0]
            noise[np.arange(rows), codes[offset : offset + rows]] += 1
            buckets = np.broadcast_to(np.arange(self.num_buckets, dtype=np.int64), noise.shape)
            parts.append(np.repeat(buckets.ravel(), noise.ravel()))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def message_counts(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
    ) -> NDArray[np.int64]:
        """Messages per bucket that :meth:`randomize` would send (the same keyed draws), in
        memory bounded by one chunk: what the shuffler's output reveals."""
        codes = check_codes(self.title, "codes", codes, self.num_buckets)
        counts = np.bincount(codes, minlength=self.num_buckets).astype(np.int64)
        for _, noise in self._noise_chunks(codes, source, label, row_start):
            counts += noise.sum(axis=0, dtype=np.int64)
        return counts

    # ------------------------------------------------------------------ the protocol

    @property
    def categories(self) -> list[Hashable]:
        """Bucket labels."""
        return list(self.domain.labels)

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """One dictionary (categorical) column of message labels; the null bucket is null."""
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
        """Every person's messages, person after person (:meth:`randomize`): *not* shuffled,
        and not one row per input row. The shuffler must permute them before anyone sees
        them."""
        codes = single_codes(values, self.domain, column, row_start, "Balcer–Cheu")
        messages = self.randomize(codes, source=source, label=column, row_start=row_start)
        return {column: label_array(messages, self.domain)}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Messages per bucket."""
        counts = label_counts(reports[column], self.domain, column)
        return Statistic((counts,), int(counts.sum()))

    def estimate(self, messages: NDArray[np.int64]) -> FrequencyEstimate:
        """Debiased counts from the shuffled messages (bucket codes)."""
        messages = np.asarray(messages, dtype=np.int64)
        counts = np.bincount(messages, minlength=self.num_buckets).astype(np.int64)
        return self.debias(Statistic((counts,), messages.size))

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Unbiased counts ``M_j - n p``, variance ``n p (1 - p)`` each (``M_j``: the messages
        per bucket in ``statistic``; ``n`` is the number of people, not of messages)."""
        counts = np.asarray(statistic.parts[0], dtype=np.float64)
        if counts.shape != (self.num_buckets,):
            raise ParameterError(
                f"message_counts must have shape ({self.num_buckets},), got {counts.shape}"
            )
        p = self.noise_probability
        variances = np.full(self.num_buckets, self.n * p * self.absent_probability)
        return FrequencyEstimate(counts - self.n * p, variances, self.n)

    def zero_sum(self, message_counts: NDArray[np.int64]) -> NDArray[np.float64]:
        """The paper's analyzer per bucket, in counts: ``M_j - n p`` if ``M_j > n``, else 0.

        Exactly 0 on every bucket nobody holds (so the error does not grow with the domain), at
        the price of a downward bias on small counts ([1]_ Theorem 3.1 iii).
        """
        counts = np.asarray(message_counts, dtype=np.float64)
        return np.where(counts > self.n, counts - self.n * self.noise_probability, 0.0)
