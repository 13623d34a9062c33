r"""The prefix extending method (PEM): frequent strings of an open domain, no candidate list.

The hash family
---------------
``g`` is a prime (at most 251) and ``d`` the fewest base-``g`` digits that write a byte
(``g^d >= 256``). A prefix ``x`` of ``L`` bytes is hashed by ``L`` coefficients ``a_t`` in
``[0, g^d)``::

    h_a(x) = sum_t E[a_t, x_t] (mod g),   E[a, b] = sum_i a_i b_i (mod g)

with ``a_i``, ``b_i`` the base-``g`` digits of ``a`` and ``b``. Two distinct prefixes of one
length differ in some digit of some byte, and that difference (below ``g``) is a unit of the
field ``Z_g``: over uniform coefficients they collide with probability exactly ``1/g``, as in
:class:`~frameldp.core.mechanisms.LocalHashing`, so the support counts are exactly unbiased.
The family is linear in the positions, which is what lets the server count all 256 extensions
of a prefix at once (:mod:`frameldp.core.discovery`).

A report is ``2 + 2 M`` bytes (``M = max_length + 1``): the level ``l``, the answer ``y``, and
the ``M`` coefficients as little-endian 16-bit integers (those past the level are 0).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import PrivacyGuarantee
from frameldp.arguments import check_epsilon, check_number
from frameldp.core.columns import bits_array, distinct_strings, packed_bits
from frameldp.core.discovery import (
    Discovery,
    coefficient_digits,
    encode_prefixes,
    extension_counts,
    extension_table,
    search,
    support_counts,
)
from frameldp.core.estimation import FrequencyEstimate
from frameldp.core.mechanisms._noise import is_prime, noise_numerator
from frameldp.core.mechanisms._spec import fingerprint
from frameldp.core.mechanisms.local_hashing import hashing_guarantee, optimal_hash_buckets
from frameldp.core.mechanisms.protocol import Capability, FrequencyEstimation, Statistic
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import PRECISION_BITS, RandomSource, digests
from frameldp.errors import DomainError, ParameterError, shown

__all__ = ["PrefixExtending"]

_ONE: Final = 1 << PRECISION_BITS
# Reports whose coefficients are checked at once (bounded temporaries).
_CHECK_ROWS: Final = 1 << 16
MAX_BUCKETS: Final = 251
"""The largest prime below 256: answers and levels are one byte each."""
MAX_LENGTH: Final = 254
MAX_WIDTH: Final = 1 << 14
"""The most strings discovered, and prefixes kept per level (each costs a pass's work)."""

Gather = Callable[[Callable[[Mapping[str, pa.Array]], Statistic]], Statistic]
"""Applies a batch reduction to every batch of a report column and sums the statistics."""


@register("prefix_extending")
@dataclass(frozen=True)
class PrefixExtending(FrequencyEstimation):
    r"""Heavy hitters of an open string domain by the prefix extending method [1]_.

    Every report goes to one level ``l`` in ``[0, M)``, ``M = max_length + 1``, drawn
    uniformly with the row's noise key. It reports the first ``l + 1`` bytes of the value's
    prefix encoding (UTF-8, cut at ``max_length`` bytes on a character boundary, padded with
    ``0xFF``, the last byte marking a cut: :mod:`frameldp.core.discovery`) by local hashing
    [2]_: uniform coefficients ``a`` of the hash family (module docstring) and ``y``, k-ary
    randomized response over ``g`` buckets applied to ``h_a(prefix)``, ``y = h_a(prefix)`` with
    probability ``p = e^epsilon / (e^epsilon + g - 1)``, otherwise one of the other ``g - 1``.

    ``reports.ldp.discover(column, top=...)`` runs the server's level-by-level search
    (:func:`frameldp.core.discovery.search`).

    Parameters
    ----------
    epsilon
        Privacy loss of the one report each person sends (> 0).
    max_length
        Bytes of UTF-8 kept per string (1 to 254). Longer strings are cut (and flagged as
        cut when discovered). Every level takes ``1 / (max_length + 1)`` of the reports, so a
        smaller ``max_length`` finds rarer strings.
    num_buckets
        ``g``, a prime at most 251: ``None`` picks the variance-optimal one next to
        ``e^epsilon + 1`` (optimal local hashing).

    Privacy
    -------
    The level and the coefficients are drawn independently of the value and reveal nothing
    about it; given them, ``y`` is k-ary randomized response over ``g`` values, so each report
    is epsilon-LDP [1]_ [2]_. A person sends one report: that is their whole loss. The move
    probability is realized exactly as a multiple of ``2**-64`` at least as large as requested,
    and ``privacy`` reports ``ln(p / q)`` of the realized probabilities, rounded up, with one
    :class:`~frameldp.accounting.LocalHashingEvent` (two prefixes collide under exactly ``1/g``
    of the coefficients, and then lose nothing).

    Estimation
    ----------
    At level ``l`` a report supports every prefix ``x`` with ``h_a(x) = y``: its own with
    probability ``p``, any other with exactly ``1/g``; ``(C_x - n_l/g) / (p - 1/g)`` is unbiased
    for the number of level-``l`` reports whose prefix is ``x``, with variance
    ``(c p (1 - p) + (n_l - c)(1/g)(1 - 1/g)) / (p - 1/g)^2``. Discovered strings are counted
    from the last level's reports, which do not take part in the search, and scaled by
    ``n / n_last``; their standard error adds the sampling of the last level.

    References
    ----------
    .. [1] T. Wang, N. Li, S. Jha, "Locally Differentially Private Heavy Hitter
       Identification", IEEE TDSC 18(2), 2021 (arXiv:1708.06674), Sec. 5.
    .. [2] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
       Frequency Estimation", USENIX Security 2017, Sec. 4.4.

    Examples
    --------
    >>> mech = PrefixExtending(4.0, max_length=8)
    >>> mech.num_buckets, mech.num_levels, mech.report_width
    (53, 9, 20)
    """

    name: ClassVar[str] = "prefix_extending"
    title: ClassVar[str] = "prefix extending"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {Capability.CALLER_KEY, Capability.DISCOVERY}
    )

    epsilon: float
    max_length: int = field(default=16, kw_only=True)
    num_buckets: int | None = field(default=None, kw_only=True)
    _move_numerator: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "PrefixExtending"
        epsilon = check_epsilon(owner, "epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        length = self.max_length
        if isinstance(length, bool) or not isinstance(length, int | np.integer):
            raise ParameterError(
                f"{owner}: max_length must be an integer in [1, {MAX_LENGTH}], got {shown(length)}"
            )
        if not 1 <= length <= MAX_LENGTH:
            raise ParameterError(
                f"{owner}: max_length must be in [1, {MAX_LENGTH}] (bytes), got {shown(length)}"
            )
        object.__setattr__(self, "max_length", int(length))
        g = self.num_buckets
        if g is None:
            g = min(optimal_hash_buckets(epsilon, 256), MAX_BUCKETS)
        else:
            number = check_number(owner, "num_buckets", g)
            if not (2 <= number <= MAX_BUCKETS and number == int(number)) or not is_prime(
                int(number)
            ):
                raise ParameterError(
                    f"{owner}: num_buckets must be a prime in [2, {MAX_BUCKETS}] or None, got "
                    f"{shown(g)}"
                )
            g = int(number)
        object.__setattr__(self, "num_buckets", g)
        numerator = noise_numerator(g - 1, epsilon)
        if Fraction(numerator, _ONE) >= Fraction(g - 1, g):
            raise ParameterError(
                f"{owner}: epsilon={shown(epsilon)} is too small to realize for {g} buckets; the "
                "reports would be uniform noise"
            )
        object.__setattr__(self, "_move_numerator", numerator)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> PrefixExtending:
        """Rebuild from :meth:`to_spec`."""
        return cls(spec["epsilon"], max_length=spec["max_length"], num_buckets=spec["num_buckets"])

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (rebuilding realizes the same noise)."""
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "max_length": self.max_length,
            "num_buckets": self.num_buckets,
        }

    # ------------------------------------------------------------------ sizes

    @property
    def _g(self) -> int:
        assert self.num_buckets is not None  # set in __post_init__
        return self.num_buckets

    @property
    def num_levels(self) -> int:
        """``M = max_length + 1``: one level per byte of the prefix encoding."""
        return self.max_length + 1

    @property
    def num_coefficients(self) -> int:
        """``g^d``: the values one position's coefficient takes."""
        return int(self._g ** coefficient_digits(self._g))

    @property
    def report_width(self) -> int:
        """Bytes of one report: level, answer and ``M`` 16-bit coefficients."""
        return 2 + 2 * self.num_levels

    @property
    def keep_probability(self) -> float:
        """Realized ``p``: probability that ``y`` is the prefix's hash."""
        return (_ONE - self._move_numerator) / 2.0**PRECISION_BITS

    @property
    def support_probabilities(self) -> tuple[float, float]:
        """``(p, 1/g)``: a report supports its own prefix, and any other (exactly)."""
        return self.keep_probability, 1.0 / self._g

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """Pure epsilon ``ln(p / q)`` of the realized probabilities over ``g`` buckets, rounded
        up, with one :class:`~frameldp.accounting.LocalHashingEvent` at ``g``."""
        return hashing_guarantee(
            self.name,
            self._move_numerator,
            self._g,
            {"max_length": self.max_length, "num_levels": self.num_levels},
        )

    # ------------------------------------------------------------------ randomization

    @cached_property
    def _stream_suffix(self) -> str:
        return fingerprint(self.to_spec())

    def randomize(
        self,
        values: list[str],
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int = 0,
    ) -> NDArray[np.uint8]:
        """``(n, report_width)`` reports of rows holding ``values[codes[i]]``.

        Level, coefficients, move bit and other bucket are functions of (key, ``label``, spec,
        global row ``row_start + i``, and under a caller's key or a seed the row's value) only
        (see :class:`~frameldp.core.randomness.Rows`).
        """
        codes = np.asarray(codes, dtype=np.int64)
        n, g, width = codes.size, self._g, self.num_levels
        encoded = encode_prefixes(values, self.max_length)[codes]
        value_digests = digests(values)
        rows = source.rows((label, self._stream_suffix), row_start, n, lambda: value_digests[codes])
        levels = rows.uniform("level", width)
        coefficients = np.zeros((n, width), dtype=np.int64)
        table = extension_table(g)
        hashed = np.zeros(n, dtype=np.int64)
        for t in range(width):
            drawn = rows.uniform(f"coefficient {t}", self.num_coefficients)
            used = levels >= t
            coefficients[:, t] = np.where(used, drawn, 0)
            hashed += np.where(used, table[drawn, encoded[:, t]], 0)
        hashed %= g
        moves = rows.flags("move", self._move_numerator)
        shift = rows.uniform("other", g - 1)
        answers = np.where(moves, shift + (shift >= hashed), hashed)
        reports = np.empty((n, self.report_width), dtype=np.uint8)
        reports[:, 0] = levels
        reports[:, 1] = answers
        reports[:, 2:] = coefficients.astype("<u2").view(np.uint8)
        return reports

    # ------------------------------------------------------------------ reports

    def _decoded(
        self, array: pa.Array | pa.ChunkedArray, column: str
    ) -> tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint16]]:
        """Levels, answers and coefficients of a report column, checked one block of rows at a
        time (the temporaries stay bounded; the coefficients are kept as 16-bit integers)."""
        raw = packed_bits(array, 8 * self.report_width, column, self.title)
        levels, answers = raw[:, 0], raw[:, 1]
        coefficients = np.ascontiguousarray(raw[:, 2:]).view("<u2")
        later = np.arange(self.num_levels)[None, :]
        for first in range(0, raw.shape[0], _CHECK_ROWS):
            block = slice(first, first + _CHECK_ROWS)
            level, held = levels[block], coefficients[block]
            bad = (
                (level >= self.num_levels)
                | (answers[block] >= self._g)
                | np.any(held >= self.num_coefficients, axis=1)
                | np.any((later > level[:, None]) & (held != 0), axis=1)
            )
            if bad.any():
                row = first + int(np.flatnonzero(bad)[0])
                raise DomainError(
                    f"column {shown(column)}: row {row} is not a report of this "
                    "prefix-extending mechanism (level, answer or coefficients out of range)"
                )
        return levels, answers, coefficients

    def _at_level(
        self, reports: Mapping[str, pa.Array], column: str, level: int
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """The answers and coefficients of the reports at ``level`` (64-bit), and the reports
        per level."""
        levels, answers, coefficients = self._decoded(reports[column], column)
        at = levels == level
        sizes = np.bincount(levels, minlength=self.num_levels).astype(np.int64)
        return answers[at].astype(np.int64), coefficients[at].astype(np.int64), sizes

    def _extension_statistic(
        self,
        reports: Mapping[str, pa.Array],
        *,
        column: str,
        level: int,
        prefixes: NDArray[np.uint8],
    ) -> Statistic:
        answers, coefficients, sizes = self._at_level(reports, column, level)
        counts = extension_counts(coefficients, answers, prefixes, self._g)
        return Statistic((counts, sizes), int(sizes.sum()))

    def _final_statistic(
        self, reports: Mapping[str, pa.Array], *, column: str, strings: NDArray[np.uint8]
    ) -> Statistic:
        answers, coefficients, sizes = self._at_level(reports, column, self.max_length)
        counts = support_counts(coefficients, answers, strings, self._g)
        return Statistic((counts, sizes), int(sizes.sum()))

    def discover(
        self,
        gather: Gather,
        *,
        column: str,
        top: int = 20,
        width: int | None = None,
        significance: float = 0.05,
    ) -> Discovery:
        """The ``top`` most frequent strings, found level by level (one ``gather`` per level).

        ``width`` prefixes (default ``2 * top``) are kept at each level; discovered strings
        have a one-sided p-value below ``significance`` divided by the number of final
        candidates.
        """
        for name, number in (("top", top), ("width", width)):
            if number is None and name == "width":
                continue
            if (
                isinstance(number, bool)
                or not isinstance(number, int | np.integer)
                or not 1 <= int(number) <= MAX_WIDTH
            ):
                raise ParameterError(
                    f"{name} must be an integer in [1, {MAX_WIDTH}], got {shown(number)}"
                )
        kept_width = min(2 * int(top), MAX_WIDTH) if width is None else int(width)

        def extensions(
            level: int, prefixes: NDArray[np.uint8]
        ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
            reduce = functools.partial(
                self._extension_statistic, column=column, level=level, prefixes=prefixes
            )
            counts, sizes = gather(reduce).parts
            return counts, sizes

        def finals(strings: NDArray[np.uint8]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
            reduce = functools.partial(self._final_statistic, column=column, strings=strings)
            counts, sizes = gather(reduce).parts
            return counts, sizes

        return search(
            extensions,
            finals,
            max_length=self.max_length,
            support=self.support_probabilities,
            top=int(top),
            width=kept_width,
            significance=significance,
        )

    # ------------------------------------------------------------------ the protocol

    @property
    def categories(self) -> list[Hashable]:
        """None: the domain is open (discover the frequent strings instead)."""
        return []

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """One column of ``report_width``-byte reports."""
        return {column: pa.binary(self.report_width)}

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
        """Reports of a string column (each distinct string encoded once)."""
        codes, distinct = distinct_strings(values, column, row_start, "prefix extending reports")
        reports = self.randomize(
            [str(value) for value in distinct],
            codes,
            source=source,
            label=column,
            row_start=row_start,
        )
        return {column: bits_array(reports)}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Reports per level (discovery reads the reports level by level, :meth:`discover`)."""
        levels, _, _ = self._decoded(reports[column], column)
        return Statistic(
            (np.bincount(levels, minlength=self.num_levels).astype(np.int64),), levels.size
        )

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Refused: the domain is open."""
        raise ParameterError(
            "prefix-extending reports have no public domain to debias over: use "
            "discover(column, top=...)"
        )
