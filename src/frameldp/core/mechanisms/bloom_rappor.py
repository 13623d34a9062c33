"""Bloom-filter RAPPOR for open domains: cohorts, memoized permanent response, instantaneous one."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import BloomRapporEvent, PrivacyGuarantee
from frameldp.arguments import check_epsilon, check_probability
from frameldp.core.columns import (
    bits_array,
    combined,
    distinct_codes,
    distinct_strings,
    packed_bits,
)
from frameldp.core.encoding import (
    FAST_HASHES,
    BloomEncoder,
    HashScheme,
    chosen_hash_scheme,
    count_bits,
    packed_width,
)
from frameldp.core.estimation import (
    BloomDecoding,
    FrequencyEstimate,
    debias_bloom_counts,
    decode_bloom,
)
from frameldp.core.mechanisms._memo import memo_name
from frameldp.core.mechanisms._memo import user_digests as digests_of_users
from frameldp.core.mechanisms._noise import FLOAT_MARGIN
from frameldp.core.mechanisms._spec import fingerprint
from frameldp.core.mechanisms.protocol import Capability, FrequencyEstimation, Statistic
from frameldp.core.mechanisms.registry import register
from frameldp.core.randomness import (
    PRECISION_BITS,
    RandomSource,
    Rows,
    digests,
    dyadic_at_least,
    dyadic_at_most,
)
from frameldp.errors import DomainError, ParameterError, renamed, shown

__all__ = ["BloomRappor"]

# Realized probabilities are multiples of 2**-52, so that the floats handed to the accountant are
# exactly the probabilities the samplers realize.
_GRID_BITS: Final = 52
_STEP: Final = 1 << (PRECISION_BITS - _GRID_BITS)
_ONE: Final = 1 << PRECISION_BITS
_HALF: Final = _ONE // 2
_EXP_LIMIT: Final = 700.0  # e^700 < 1.8e308; 1 / (1 + e^700) < 2**-1000


def _grid_up(probability: Fraction) -> int:
    """Numerator (over 2**64) of the smallest multiple of 2**-52 that is >= ``probability``."""
    return -(-dyadic_at_least(probability) // _STEP) * _STEP


def _grid_down(probability: Fraction) -> int:
    """Numerator (over 2**64) of the largest multiple of 2**-52 that is <= ``probability``."""
    return dyadic_at_most(probability) // _STEP * _STEP


def _spec_hash_scheme(spec: dict[str, Any]) -> Any:
    """The hash scheme of a spec: stored under ``"hash"`` (its key since the first release, and
    part of the stream fingerprint), read under ``"hash_scheme"`` too (the public name)."""
    given = [spec[key] for key in ("hash", "hash_scheme") if key in spec]
    if len(given) == 2 and given[0] != given[1]:
        raise ParameterError(
            f"BloomRappor spec: hash={shown(given[0])} and hash_scheme={shown(given[1])} disagree",
            parameter="hash_scheme",
        )
    return given[0] if given else "fast"


@register("bloom_rappor")
@dataclass(frozen=True, init=False)
class BloomRappor(FrequencyEstimation):
    r"""Bloom-filter RAPPOR: strings from an open domain, decoded against candidate strings.

    A value ``v`` of a user in cohort ``c`` sets ``num_hashes = h`` bits of a
    ``num_bits = k``-bit Bloom filter ``B`` (:class:`~frameldp.core.encoding.BloomEncoder`).
    Then, as in the RAPPOR paper [1]_:

    1. **Permanent randomized response**: ``B'_i = B_i`` flipped with probability ``f/2``
       (RAPPOR's "1 with probability f/2, 0 with probability f/2, else B_i"). It is
       *memoized*: a keyed PRF of (user, value) addresses its noise, so collecting the same
       value of the same user again, with the same ``memo`` key, reuses the same ``B'``.
    2. **Instantaneous randomized response**, fresh for every report: bit ``i`` is 1 with
       probability ``q`` if ``B'_i = 1`` and ``p`` if ``B'_i = 0``.

    The user's cohort is a keyed PRF of the user id (stable across collections), or drawn at
    random per report when there is no user id (then there is no memoization either: every
    report has a fresh permanent response).

    Parameters
    ----------
    epsilon, epsilon_infinity
        Target one-report epsilon ``epsilon_1`` and longitudinal ``epsilon_inf``
        (``epsilon <= epsilon_infinity``). Then ``f/2 = 1 / (1 + e^{epsilon_inf / 2h})`` and a
        symmetric instantaneous response ``p = 1 - q`` is chosen so that one report has
        ``epsilon_1``. Either both, or all of ``f``, ``p`` and ``q``.
    f, p, q
        RAPPOR's parameters: ``f`` in ``(0, 1]``, ``p != q`` in ``[0, 1]``.
    num_bits, num_hashes, num_cohorts, hash_scheme
        The Bloom filter (see :class:`~frameldp.core.encoding.BloomEncoder`).

    Privacy
    -------
    Two values set at most ``h`` bits each that the other does not, and bits are randomized
    independently. Any number of reports of one value is a post-processing of ``B'``, hence
    ``epsilon_inf = 2h ln((1 - f/2) / (f/2))`` [1]_ (Thm. 1); one report is
    ``epsilon_1 = h ln(q*(1 - p*) / (p*(1 - q*)))``-LDP with ``q* = P[1 | B_i = 1] =
    (1 - f/2) q + (f/2) p`` and ``p* = P[1 | B_i = 0] = (f/2) q + (1 - f/2) p`` [1]_ (Thm. 2).
    Probabilities are realized exactly as multiples of ``2**-52``, rounded toward more noise,
    and :meth:`guarantee` reports the epsilons of the realized ones, rounded up, as a
    :class:`~frameldp.accounting.PrivacyGuarantee` holding one
    :class:`~frameldp.accounting.BloomRapporEvent`: its epsilon is ``epsilon_1``, its
    ``epsilon_infinity`` the longitudinal bound, and accountants and the ledger fold reports
    that share a memo into the exact loss of ``r`` reports of one value.

    Estimation
    ----------
    Per cohort and bit, ``t̂ = (Y - N_c p*) / (q* - p*)`` is an unbiased count of true bits with
    variance ``(t q*(1 - q*) + (N_c - t) p*(1 - p*)) / (q* - p*)^2``; candidate strings are
    decoded by regressing ``t̂`` on their Bloom signatures
    (:func:`~frameldp.core.estimation.decode_bloom`).

    References
    ----------
    .. [1] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
       Privacy-Preserving Ordinal Response", CCS 2014, Sec. 3-5.

    Examples
    --------
    >>> mech = BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=128, num_hashes=2, num_cohorts=64)
    >>> g = mech.privacy                  # epsilon_1 and epsilon_inf of the paper's example
    >>> round(g.epsilon, 4), round(g.epsilon_infinity, 4)
    (1.0743, 4.3944)
    """

    name: ClassVar[str] = "bloom_rappor"
    title: ClassVar[str] = "Bloom RAPPOR"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {
            Capability.MEMOIZATION,
            Capability.CANDIDATES,
            Capability.BIT_VECTORS,
            Capability.CALLER_KEY,
        }
    )

    epsilon: float | None = None
    epsilon_infinity: float | None = field(default=None, kw_only=True)
    f: float | None = field(default=None, kw_only=True)
    p: float | None = field(default=None, kw_only=True)
    q: float | None = field(default=None, kw_only=True)
    num_bits: int = field(default=128, kw_only=True)
    num_hashes: int = field(default=2, kw_only=True)
    num_cohorts: int = field(default=64, kw_only=True)
    hash_scheme: HashScheme = field(default="fast", kw_only=True)
    encoder: BloomEncoder = field(init=False, repr=False, compare=False)
    _flip: int = field(init=False, repr=False, compare=False)
    _zero: int = field(init=False, repr=False, compare=False)
    _one: int = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        epsilon: float | None = None,
        *,
        epsilon_infinity: float | None = None,
        f: float | None = None,
        p: float | None = None,
        q: float | None = None,
        num_bits: int = 128,
        num_hashes: int = 2,
        num_cohorts: int = 64,
        hash_scheme: HashScheme = FAST_HASHES,
        hash: HashScheme | None = None,
    ) -> None:
        # Written out (rather than generated) for ``hash=``, the earlier name of hash_scheme.
        given = {
            "epsilon": epsilon,
            "epsilon_infinity": epsilon_infinity,
            "f": f,
            "p": p,
            "q": q,
            "num_bits": num_bits,
            "num_hashes": num_hashes,
            "num_cohorts": num_cohorts,
            "hash_scheme": chosen_hash_scheme("BloomRappor", hash_scheme, hash),
        }
        for name, value in given.items():
            object.__setattr__(self, name, value)
        self._realize("BloomRappor")

    @property
    def hash(self) -> HashScheme:
        """Deprecated name of :attr:`hash_scheme`."""
        renamed("BloomRappor", "hash", "hash_scheme")
        return self.hash_scheme

    def _realize(self, owner: str) -> None:
        encoder = BloomEncoder(self.num_bits, self.num_hashes, self.num_cohorts, self.hash_scheme)
        object.__setattr__(self, "encoder", encoder)
        for name in ("num_bits", "num_hashes", "num_cohorts"):
            object.__setattr__(self, name, getattr(encoder, name))
        by_epsilon = self.epsilon is not None or self.epsilon_infinity is not None
        by_probability = self.f is not None or self.p is not None or self.q is not None
        if (
            by_epsilon == by_probability
            or (by_epsilon and (self.epsilon is None or self.epsilon_infinity is None))
            or (by_probability and None in (self.f, self.p, self.q))
        ):
            raise ParameterError(
                f"{owner}: pass either epsilon and epsilon_infinity, or all of f, p and q; got "
                f"epsilon={shown(self.epsilon)}, epsilon_infinity={shown(self.epsilon_infinity)}, "
                f"f={shown(self.f)}, p={shown(self.p)}, q={shown(self.q)}"
            )
        if by_epsilon:
            self._realize_epsilons(owner)
        else:
            self._realize_probabilities(owner)

    def _realize_probabilities(self, owner: str) -> None:
        f = Fraction(check_probability(owner, "f", self.f, low_open=True))
        p = Fraction(check_probability(owner, "p", self.p))
        q = Fraction(check_probability(owner, "q", self.q))
        if p == q:
            raise ParameterError(
                f"{owner}: p and q must differ (p = q = {float(p)!r}: the reports would carry "
                "no information)"
            )
        flip = min(_grid_up(f / 2), _HALF)
        # Round p and q toward each other: more noise, never less.
        zero, one = (_grid_up(p), _grid_down(q)) if p < q else (_grid_down(p), _grid_up(q))
        if (zero >= one) if p < q else (zero <= one):
            raise ParameterError(
                f"{owner}: p={float(p)!r} and q={float(q)!r} are too close to realize on a "
                "2**-52 grid"
            )
        for name, value in (("f", float(f)), ("p", float(p)), ("q", float(q))):
            object.__setattr__(self, name, value)
        self._set(flip, zero, one)

    def _realize_epsilons(self, owner: str) -> None:
        epsilon_1 = check_epsilon(owner, "epsilon", self.epsilon)
        epsilon_inf = check_epsilon(owner, "epsilon_infinity", self.epsilon_infinity)
        if epsilon_1 > epsilon_inf:
            raise ParameterError(
                f"{owner}: epsilon (one report) must be at most epsilon_infinity={epsilon_inf!r}, "
                f"got {epsilon_1!r}: the instantaneous response only adds noise"
            )
        h = self.num_hashes
        too_small = ParameterError(
            f"{owner}: epsilon={epsilon_1!r} with epsilon_infinity={epsilon_inf!r} is too "
            f"small to realize with num_hashes={h}; the reports would be pure noise"
        )
        # A bit flipped with probability x has bit-epsilon ln((1 - x) / x); 2h bits differ.
        # Past _EXP_LIMIT, 1 / (1 + e^x) is far below the grid's first step (and exp would
        # overflow): capping x rounds to that first step, toward more noise.
        permanent = 1.0 / (1.0 + math.exp(min(epsilon_inf / (2 * h), _EXP_LIMIT)))
        flip = min(_grid_up(Fraction(permanent * (1 + FLOAT_MARGIN))), _HALF)
        if flip >= _HALF:
            raise too_small
        # The combined flip probability flip + p (1 - 2 flip) must reach the one-report target.
        combined = 1.0 / (1.0 + math.exp(min(epsilon_1 / (2 * h), _EXP_LIMIT)))
        f2 = Fraction(flip, _ONE)
        wanted = (Fraction(combined * (1 + FLOAT_MARGIN)) - f2) / (1 - 2 * f2)
        zero = max(0, _grid_up(wanted)) if wanted > 0 else 0
        if zero >= _HALF:
            raise too_small
        object.__setattr__(self, "epsilon", epsilon_1)
        object.__setattr__(self, "epsilon_infinity", epsilon_inf)
        self._set(flip, zero, _ONE - zero)

    def _set(self, flip: int, zero: int, one: int) -> None:
        object.__setattr__(self, "_flip", flip)
        object.__setattr__(self, "_zero", zero)
        object.__setattr__(self, "_one", one)

    # ------------------------------------------------------------------ spec

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> BloomRappor:
        """Rebuild from :meth:`to_spec` (keys the frames add, such as the cohort column, are
        ignored)."""
        return cls(
            spec.get("epsilon"),
            epsilon_infinity=spec.get("epsilon_infinity"),
            f=spec.get("f"),
            p=spec.get("p"),
            q=spec.get("q"),
            num_bits=spec["num_bits"],
            num_hashes=spec["num_hashes"],
            num_cohorts=spec["num_cohorts"],
            hash_scheme=_spec_hash_scheme(spec),
        )

    def to_spec(self) -> dict[str, Any]:
        """JSON-serializable parameters (as requested: rebuilding realizes the same noise)."""
        by_epsilon = self.epsilon_infinity is not None
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon if by_epsilon else None,
            "epsilon_infinity": self.epsilon_infinity,
            "f": None if by_epsilon else self.f,
            "p": None if by_epsilon else self.p,
            "q": None if by_epsilon else self.q,
            **self.encoder.to_json(),
        }

    # ------------------------------------------------------------------ probabilities

    @property
    def flip_probability(self) -> float:
        """Realized ``f/2``: probability that the permanent response flips a bit."""
        return self._flip / _ONE

    @property
    def zero_probability(self) -> float:
        """Realized ``p``: probability of reporting 1 where the permanent bit is 0."""
        return self._zero / _ONE

    @property
    def one_probability(self) -> float:
        """Realized ``q``: probability of reporting 1 where the permanent bit is 1."""
        return self._one / _ONE

    @property
    def report_probabilities(self) -> tuple[float, float]:
        """Realized ``(q*, p*)``: probability that a report bit is 1 when the true bit is 1, 0."""
        flip, one, zero = self.flip_probability, self.one_probability, self.zero_probability
        return (1 - flip) * one + flip * zero, flip * one + (1 - flip) * zero

    # ------------------------------------------------------------------ privacy

    def guarantee(self, memo: str | None = None) -> PrivacyGuarantee:
        """The guarantee of one report; ``memo`` names its memoized permanent responses."""
        event = BloomRapporEvent(
            self.num_hashes,
            self.flip_probability,
            self.one_probability,
            self.zero_probability,
            1,
            memo,
            self.num_bits if memo is not None else None,
        )
        parameters: dict[str, Any] = {
            **self.encoder.to_json(),
            "f": 2 * self.flip_probability,
            "p": self.zero_probability,
            "q": self.one_probability,
            "epsilon_1": event.pure_epsilon,
            "epsilon_infinity": event.epsilon_infinity,
        }
        if memo is not None:
            parameters["memo"] = memo
        return PrivacyGuarantee(event.pure_epsilon, self.name, parameters, events=((event, 1),))

    @cached_property
    def privacy(self) -> PrivacyGuarantee:
        """One report without memoization: ``epsilon_1`` (see :meth:`guarantee`)."""
        return self.guarantee()

    # ------------------------------------------------------------------ randomization

    @cached_property
    def _stream_suffix(self) -> str:
        return fingerprint(self.to_spec())

    @property
    def longitudinal(self) -> bool:
        """Always: Bloom RAPPOR reports have a permanent response."""
        return True

    def memo_id(self, memo: RandomSource, label: object, *, user_type: str) -> str:
        """Public name of the permanent responses under ``memo`` for ``label`` and user ids of
        canonical type ``user_type`` (not the key)."""
        return memo_name(memo, (label, self._stream_suffix, user_type))

    def randomize(
        self,
        codes: NDArray[np.int64],
        values: Sequence[str | bytes],
        *,
        user_codes: NDArray[np.int64] | None = None,
        user_ids: Sequence[object] | None = None,
        source: RandomSource,
        memo: RandomSource | None = None,
        label: object,
        row_start: int = 0,
    ) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
        """Reports and cohorts of rows holding ``values[codes[i]]``.

        With users (row ``i`` belongs to ``user_ids[user_codes[i]]``, ids being strings,
        integers or bytes), cohorts and permanent responses come from a keyed PRF of (user,
        value) under ``memo`` (default: ``source``): the same person with the same value gets
        the same permanent response, which is what bounds their loss over many reports.
        Without users both are drawn per row from ``source``. The instantaneous response of
        row ``i`` is a function of (``source``, ``label`` (the column's identity), this spec,
        global row ``row_start + i``, and under a caller's key or a seed the row's value and
        user) only (see :class:`~frameldp.core.randomness.Rows`).
        """
        codes = np.asarray(codes, dtype=np.int64)
        n = codes.size
        base = (label, self._stream_suffix)
        value_digests = digests(values)
        if user_codes is not None and user_ids is not None:
            user_codes = np.asarray(user_codes, dtype=np.int64)
            if user_codes.shape != codes.shape:
                raise ParameterError(
                    f"user_codes must have one entry per row ({n}), got shape {user_codes.shape}"
                )
            if n and (user_codes.min() < 0 or user_codes.max() >= len(user_ids)):
                raise ParameterError(
                    f"user_codes must index the {len(user_ids)} user ids, got values in "
                    f"[{user_codes.min()}, {user_codes.max()}]"
                )
            keyed = memo or source
            user_digests = digests_of_users(user_ids, keyed)
            # 64 uniform bits modulo the cohort count: bias below num_cohorts / 2**64.
            words = keyed.stream(*base, "cohort").encrypt(user_digests)[:, :8].copy()
            cohorts = (words.view("<u8").ravel() % np.uint64(self.num_cohorts)).astype(np.int64)
            cohorts = cohorts[user_codes]
            pairs = np.stack([user_digests[user_codes], value_digests[codes]], axis=1)
            held = Rows.memoized(keyed, base, pairs[:, 0], pairs[:, 1])
            flips = held.bernoulli("permanent", self._flip, self.num_bits)
            rows = source.rows(base, row_start, n, lambda: pairs.reshape(n, 2 * 16))
        elif user_codes is None and user_ids is None:
            rows = source.rows(base, row_start, n, lambda: value_digests[codes])
            cohorts = rows.uniform("cohort", self.num_cohorts)
            flips = rows.bernoulli("permanent", self._flip, self.num_bits)
        else:
            raise ParameterError("pass both user_codes and user_ids, or neither")
        permanent = self.encoder.encode(codes, values, cohorts)
        permanent ^= flips
        ones = rows.bernoulli("one", self._one, self.num_bits)
        zeros = rows.bernoulli("zero", self._zero, self.num_bits)
        # Reports are q-bits where the permanent bit is 1 and p-bits where it is 0 (the padding
        # bits of both samples are 0, so those of the reports are too).
        return (permanent & ones) | (~permanent & zeros), cohorts

    # ------------------------------------------------------------------ estimation

    def bit_counts(
        self, reports: NDArray[np.uint8], cohorts: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Per-cohort bit sums ``(num_cohorts, num_bits)`` and reports per cohort."""
        reports = np.asarray(reports, dtype=np.uint8)
        cohorts = np.asarray(cohorts, dtype=np.int64)
        width = packed_width(self.num_bits)
        if reports.ndim != 2 or reports.shape[1] != width or cohorts.shape != (reports.shape[0],):
            raise ParameterError(
                f"reports must have shape (n, {width}) and cohorts shape (n,), got "
                f"{reports.shape} and {cohorts.shape}"
            )
        if cohorts.size and (cohorts.min() < 0 or cohorts.max() >= self.num_cohorts):
            raise ParameterError(
                f"cohorts must be in [0, {self.num_cohorts}), got values in "
                f"[{cohorts.min()}, {cohorts.max()}]"
            )
        sizes = np.bincount(cohorts, minlength=self.num_cohorts)
        counts = np.zeros((self.num_cohorts, self.num_bits), dtype=np.int64)
        order = np.argsort(cohorts, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        for cohort in np.flatnonzero(sizes):
            rows = reports[order[bounds[cohort] : bounds[cohort + 1]]]
            counts[cohort] = count_bits(rows, self.num_bits)
        return counts, sizes

    def decode(
        self,
        counts: NDArray[np.int64],
        sizes: NDArray[np.int64],
        candidates: Sequence[object],
        *,
        significance: float = 0.05,
    ) -> BloomDecoding:
        """Detected candidates with debiased counts (see :func:`decode_bloom`)."""
        one, zero = self.report_probabilities
        debiased, variances = debias_bloom_counts(counts, sizes, one, zero)
        return decode_bloom(
            debiased, variances, sizes, candidates, self.encoder, significance=significance
        )

    # ------------------------------------------------------------------ the protocol

    @property
    def categories(self) -> list[Hashable]:
        """None: the domain is open (decode against candidates instead)."""
        return []

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        """The reports (packed Bloom bits) and, named ``{column}_cohort``, their cohorts."""
        return {column: pa.binary(packed_width(self.num_bits)), f"{column}_cohort": pa.int64()}

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
        """Reports and cohorts of a string column (each distinct string hashed once); with
        ``users`` (the ids of ``user_column``), memoized per (user, value) under ``memo``."""
        codes, distinct = distinct_strings(values, column, row_start, "Bloom encoding hashes")
        user_codes, user_ids = (
            (None, None)
            if users is None
            else distinct_codes(
                users, column, f"user id (user column {shown(user_column)})", row_start
            )
        )
        reports, cohorts = self.randomize(
            codes,
            distinct,
            user_codes=user_codes,
            user_ids=user_ids,
            source=source,
            memo=memo,
            label=column,
            row_start=row_start,
        )
        return {
            column: bits_array(reports),
            f"{column}_cohort": pa.array(cohorts, type=pa.int64()),
        }

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        """Per-cohort bit sums and cohort sizes (see :meth:`bit_counts`)."""
        packed = packed_bits(reports[column], self.num_bits, column)
        cohorts = combined(reports[f"{column}_cohort"])
        if cohorts.null_count or not pa.types.is_integer(cohorts.type):
            raise DomainError(
                f"column {shown(column)}: the cohort column must hold integers without nulls, "
                f"got {cohorts.type} with {cohorts.null_count} nulls"
            )
        codes = cohorts.to_numpy(zero_copy_only=False).astype(np.int64)
        counts, sizes = self.bit_counts(packed, codes)
        return Statistic((counts, sizes.astype(np.int64)), packed.shape[0])

    def debias(self, statistic: Statistic) -> FrequencyEstimate:
        """Refused: Bloom reports are decoded against candidate strings."""
        raise ParameterError(
            "Bloom RAPPOR reports are decoded against candidate strings: use "
            "decode(column, candidates=[...])"
        )

    def decode_statistic(
        self, statistic: Statistic, candidates: Sequence[object], *, significance: float = 0.05
    ) -> BloomDecoding:
        """:meth:`decode` of a summed :meth:`statistic`."""
        counts, sizes = statistic.parts
        return self.decode(counts, sizes, candidates, significance=significance)
