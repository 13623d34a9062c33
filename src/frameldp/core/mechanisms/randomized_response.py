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

from frameldp.accounting import PrivacyGuarantee, RandomizedResponseEvent
from frameldp.accounting.rounding import log_upper
from frameldp.core.columns import (
    check_report_labels,
    combined,
    label_array,
    label_counts,
    label_type,
    single_codes,
    value_codes,
)
from frameldp.core.encoding import Domain, one_hot_rows
from frameldp.core.estimation import FrequencyEstimate, debias_direct_counts
from frameldp.core.mechanisms._spec import (
    check_codes,
    check_epsilon,
    fingerprint,
    noise_numerator,
    register,
)
from frameldp.core.mechanisms.protocol import Capability, Statistic
from frameldp.core.randomness import (
    PRECISION_BITS,
    RandomSource,
    code_bytes,
)
from frameldp.errors import ParameterError, renamed

__all__ = ["RandomizedResponse"]

_ONE: Final = 1 << PRECISION_BITS


@register("randomized_response")
@dataclass(frozen=True)
class RandomizedResponse:
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

    Privacy
    -------
    Any output is reported with probability ``p`` under one input and at least
    ``q = (1 - p) / (k - 1)`` under any other, so the mechanism is ``ln(p / q)``-LDP, which is
    ``epsilon`` [1]_ [2]_. The probability of reporting another bucket is realized exactly as a
    multiple of ``2**-64`` at least as large as requested (more noise); ``privacy`` reports
    ``ln(p / q)`` of the realized probabilities, rounded up, as a
    :class:`~frameldp.accounting.PrivacyGuarantee`.

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
        {Capability.CALLER_KEY, Capability.FREQUENCY_ORACLE}
    )

    epsilon: float
    domain: Domain = field(kw_only=True)
    _move_numerator: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "RandomizedResponse"
        object.__setattr__(self, "domain", Domain.coerce(self.domain))
        epsilon = check_epsilon(self.epsilon, owner)
        object.__setattr__(self, "epsilon", epsilon)
        k = self.num_buckets
        if k > 1 << 32:
            raise ParameterError(f"{owner}: domain size must be at most 2**32, got {k}")
        # P[move] = (k - 1) / (e^eps + k - 1)
        numerator = noise_numerator(k - 1, epsilon)
        object.__setattr__(self, "_move_numerator", numerator)
        # Rounding toward more noise can pass the uniform point (k - 1) / k, after which the
        # report would favour the *other* values: refuse instead of realizing that.
        if Fraction(numerator, _ONE) >= Fraction(k - 1, k):
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
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (rebuilding realizes the same noise)."""
        return {"mechanism": self.name, "epsilon": self.epsilon, "domain": self.domain.to_json()}

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
        """Realized ``p / q`` as an exact rational."""
        move = self._move_numerator
        return Fraction((_ONE - move) * (self.num_buckets - 1), move)

    @property
    def keep_probability(self) -> float:
        """Realized ``p``: probability of reporting the true bucket."""
        return (_ONE - self._move_numerator) / 2.0**PRECISION_BITS

    @property
    def other_probability(self) -> float:
        """Realized ``q``: probability of reporting one given other bucket."""
        return self._move_numerator / 2.0**PRECISION_BITS / (self.num_buckets - 1)

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, q)``: a bucket is reported for a value of it, and for one given other."""
        return self.keep_probability, self.other_probability

    @property
    def report_bits(self) -> int:
        """``ceil(log2 k)`` bits a report."""
        return max(1, (self.num_buckets - 1).bit_length())

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln(p / q)`` of the realized probabilities, rounded up.

        The guarantee holds one :class:`~frameldp.accounting.RandomizedResponseEvent` at that
        epsilon and ``num_buckets``: the exact Rényi curve, the tight zCDP rho and exact
        composition.
        """
        event = RandomizedResponseEvent(log_upper(self._ratio), self.num_buckets)
        return PrivacyGuarantee(
            event.epsilon,
            self.name,
            {"num_buckets": self.num_buckets, "keep_probability": self.keep_probability},
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
        """Randomize integer codes in ``[0, k)``.

        Row ``i`` moves with an exact Bernoulli bit and, if it moves, goes to
        ``u + (u >= code)`` for an exactly uniform ``u`` in ``[0, k - 1)``; both are functions
        of (key, ``label`` (the column's identity), spec, global row ``row_start + i``, and
        under a caller's key or a seed the row's code) only (see
        :class:`~frameldp.core.randomness.Rows`).
        """
        codes = check_codes(codes, self.num_buckets)
        rows = source.rows(
            (label, self._stream_suffix), row_start, codes.size, lambda: code_bytes(codes)
        )
        moves = rows.bernoulli("move", self._move_numerator, 1).ravel().astype(bool)
        if self.num_buckets == 2:
            others = 1 - codes
        else:
            shift = rows.uniform("other", self.num_buckets - 1)
            others = shift + (shift >= codes)
        return np.where(moves, others, codes)

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
        """Reported labels of one value per row."""
        check_report_labels(self.domain, column)
        codes = single_codes(values, self.domain, column, row_start, "k-ary randomized response")
        reports = self.randomize(codes, source=source, label=column, row_start=row_start)
        return {column: label_array(reports, self.domain)}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Reports per label."""
        counts = label_counts(reports[column], self.domain, column)
        return Statistic((counts,), int(counts.sum()))

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
