"""Public domains, integer codes, and bit-packed one-hot / k-hot encodings.

A :class:`Domain` is the public, ordered list of categories a column may take, plus optional
reserved buckets: ``unknown="other"`` maps values outside the list to an ``OTHER`` bucket and
``nulls="category"`` maps nulls to a null bucket. Bucket ``j`` of every encoding, report and
estimate is ``domain.labels[j]``.

The domain must come from the caller (a list, a pandas ``CategoricalDtype`` or a polars
``Enum``): deriving it from the data would reveal which rare values occur, outside any privacy
guarantee.

Bit vectors are ``uint8`` arrays of shape ``(n, ceil(k / 8))``, bit ``j`` of a row being bit
``7 - j % 8`` of byte ``j // 8`` (``numpy.packbits`` order); padding bits are zero.

Open domains (URLs, device models) have no public list of categories: :class:`BloomEncoder`
hashes each string into a Bloom filter of ``num_bits`` bits with ``num_hashes`` hash functions,
the hash functions differing per cohort, as in RAPPOR [1]_.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response", CCS 2014, Sec. 3.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from numbers import Number
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from frameldp.arguments import check_size
from frameldp.core.bit_counting import count_packed_bits
from frameldp.core.parallel import map_ranges
from frameldp.errors import (
    DomainError,
    ParameterError,
    UnknownValuesWarning,
    caller_stacklevel,
    default_marker,
    renamed,
    renamed_argument,
    shown,
)

__all__ = [
    "HASH_SCHEMES",
    "OTHER",
    "BloomEncoder",
    "Domain",
    "check_padding",
    "count_bits",
    "held_exactly",
    "k_hot_packed",
    "one_hot_packed",
    "one_hot_rows",
    "packed_width",
    "padding_mask",
    "report_bits_matrix",
    "unpack_bits",
    "xor_one_hot",
]

OTHER: Final = "<other>"
"""Label of the reserved bucket for values outside the domain (``unknown="other"``)."""

OTHER_SHARE: Final = 0.05
"""Above this share of a batch's rows in ``<other>``, an :class:`UnknownValuesWarning` names
the most frequent values outside the domain (a wrong domain would otherwise put every row
there silently)."""

UnknownPolicy = Literal["raise", "other"]
NullPolicy = Literal["raise", "category"]
Kind = Literal["str", "bool", "int", "float"]


_JSON_SCALARS: Final = (str, int, float, bool)


def _python_scalar(value: Any) -> Any:
    """numpy scalars as the Python scalars they hold (so specs serialize to JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def packed_width(num_bits: int) -> int:
    """Bytes per row of a packed bit vector of ``num_bits`` bits."""
    return -(-num_bits // 8)


def _is_null(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _kind_of(value: object) -> str | None:
    """``"str"``, ``"bool"`` or ``"number"`` (ints and floats compare as numbers), else None."""
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, str):
        return "str"
    return "number" if isinstance(value, Number) else None


def _check_ordered(categories: object) -> None:
    """Refuse unordered categories: a set's order changes from process to process (string
    hashing is randomized), which would map buckets, bits and keyed noise to other values."""
    if isinstance(categories, Mapping):
        raise DomainError(
            f"domain must be a list of categories, got a {type(categories).__name__} (its keys "
            "would be used silently); pass list(...) of the keys or values you mean"
        )
    if isinstance(categories, AbstractSet):
        raise DomainError(
            f"domain must be a list, got a {type(categories).__name__} of {len(categories)} "
            "values, whose order changes from run to run (and with it which bucket holds which "
            "value); pass a list (sorted(...) if you mean a set)"
        )


_INT64_RANGE: Final = (-(1 << 63), (1 << 63) - 1)


def _check_representable(value: object, position: int) -> None:
    """A category every frame library can hold exactly: text encodable as UTF-8 (no lone
    surrogates) and integers within int64 (the report columns' integer type)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise DomainError(
                f"domain category {shown(value)} at position {position} is not valid text "
                "(a lone surrogate cannot be written as UTF-8)"
            ) from None
    elif isinstance(value, int) and not isinstance(value, bool):
        low, high = _INT64_RANGE
        if not low <= value <= high:
            raise DomainError(
                f"domain category {shown(value)} at position {position} does not fit in a "
                "64-bit integer; give it as a string"
            )


def held_exactly(
    categories: Sequence[Hashable], dtype: np.dtype[Any]
) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """The numeric ``categories`` that ``dtype`` holds exactly, as an array of ``dtype``, and
    their positions (see :meth:`Domain.held_by`)."""
    dtype = np.dtype(dtype)
    values, codes = [], []
    for code, category in enumerate(categories):
        if isinstance(category, bool) or not isinstance(category, int | float):
            continue
        try:
            with np.errstate(all="ignore"):
                held = dtype.type(category)
        except (OverflowError, ValueError):
            continue
        if held.item() == category:  # Python compares ints and floats exactly
            values.append(held)
            codes.append(code)
    return np.array(values, dtype=dtype), np.array(codes, dtype=np.int64)


@dataclass(frozen=True)
class Domain:
    """The public, ordered set of buckets of a categorical column.

    Parameters
    ----------
    categories
        The public categories, in order. A list or tuple, or any object with a ``categories``
        attribute (a pandas ``CategoricalDtype``, a polars ``Enum``).
    unknown
        ``"raise"`` (default): a value outside ``categories`` is an error. ``"other"``: it is
        mapped to a reserved bucket labelled :data:`OTHER`.
    nulls
        ``"raise"`` (default): a null is an error. ``"category"``: nulls form a reserved bucket
        labelled ``None``.

    Categories are of one kind: all strings, all booleans, or all numbers (ints and floats
    together); a domain mixing kinds (``["a", 1]``, ``[True, 1]``) is refused, and so is a set
    or a dict (their order is not the caller's). Values are matched to categories exactly,
    without converting either: a numeric value matches the category it equals as a number
    (``2`` matches ``2`` or ``2.0``, never ``2.5``), a string only the same string.
    """

    categories: tuple[Hashable, ...]
    unknown: UnknownPolicy = "raise"
    nulls: NullPolicy = "raise"
    _index: dict[Hashable, int] = field(init=False, repr=False, compare=False)
    _kind: Kind | None = field(init=False, repr=False, compare=False)
    _held: dict[np.dtype[Any], tuple[NDArray[Any], NDArray[np.int64]]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        if self.unknown not in ("raise", "other"):
            raise ParameterError(f"unknown must be 'raise' or 'other', got {shown(self.unknown)}")
        if self.nulls not in ("raise", "category"):
            raise ParameterError(f"nulls must be 'raise' or 'category', got {shown(self.nulls)}")
        _check_ordered(self.categories)
        categories = tuple(_python_scalar(c) for c in self.categories)
        if len(categories) + self.has_other + self.has_null < 2:
            raise DomainError(f"domain must have at least 2 buckets, got {shown(list(categories))}")
        index: dict[Hashable, int] = {}
        for position, value in enumerate(categories):
            if _is_null(value):
                raise DomainError(
                    f"domain contains a null at position {position}; use nulls='category' "
                    "to give nulls their own bucket"
                )
            if not isinstance(value, _JSON_SCALARS):
                raise DomainError(
                    f"domain categories must be str, int, float or bool (they are written to "
                    f"JSON specs); got {shown(value)} of type {type(value).__name__} at "
                    f"position {position}"
                )
            if _kind_of(value) != _kind_of(categories[0]):
                raise DomainError(
                    "domain categories must all be strings, all booleans or all numbers "
                    f"(a value is never converted to match one), got {shown(categories[0])} "
                    f"({type(categories[0]).__name__}) at position 0 and {shown(value)} "
                    f"({type(value).__name__}) at position {position}"
                )
            _check_representable(value, position)
            if value in index:
                raise DomainError(f"domain contains {shown(value)} twice")
            index[value] = position
        if self.has_other and OTHER in index:
            raise DomainError(f"domain contains the reserved label {OTHER!r}")
        kind = _kind_of(categories[0]) if categories else None
        if kind == "number":
            kind = "float" if any(isinstance(value, float) for value in categories) else "int"
        if kind == "float":
            for position, value in enumerate(categories):
                if isinstance(value, int) and float(value) != value:
                    raise DomainError(
                        f"domain category {shown(value)} at position {position} would be rounded "
                        "to a float among the domain's floats; give it as a string, or drop "
                        "the floats"
                    )
        object.__setattr__(self, "categories", categories)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_kind", kind)

    @classmethod
    def coerce(
        cls,
        domain: Domain | Iterable[Hashable] | Any,
        *,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
    ) -> Domain:
        """A :class:`Domain` from a list, a categorical dtype, or a Domain (policies override)."""
        if isinstance(domain, Domain):
            if unknown is None and nulls is None:
                return domain
            return cls(
                domain.categories,
                domain.unknown if unknown is None else unknown,
                domain.nulls if nulls is None else nulls,
            )
        if isinstance(domain, str | bytes):
            raise DomainError(
                f"domain must be a list of categories, got the string {shown(domain)}"
                + ("; pass domain='infer' to a frame method to infer it" if domain else "")
            )
        if domain is None:
            raise DomainError(
                "domain must be given: a list of categories, a pandas CategoricalDtype or a "
                "polars Enum (or domain='infer' in a frame method); got None"
            )
        categories = getattr(domain, "categories", domain)
        if categories is None:
            raise DomainError(f"domain must be given: {shown(domain)} has no categories")
        if not isinstance(categories, Iterable):
            raise DomainError(f"domain must be a list of categories, got {shown(domain)}")
        _check_ordered(categories)
        return cls(
            tuple(categories),
            "raise" if unknown is None else unknown,
            "raise" if nulls is None else nulls,
        )

    @property
    def kind(self) -> Kind | None:
        """What the categories are: ``"str"``, ``"bool"``, ``"int"``, or ``"float"`` (numbers, at
        least one a float); ``None`` when there are only reserved buckets."""
        return self._kind

    @property
    def has_other(self) -> bool:
        """Whether values outside the categories have a reserved bucket."""
        return self.unknown == "other"

    @property
    def has_null(self) -> bool:
        """Whether nulls have a reserved bucket."""
        return self.nulls == "category"

    @property
    def size(self) -> int:
        """Number of buckets ``k``, reserved buckets included."""
        return len(self.categories) + self.has_other + self.has_null

    @property
    def labels(self) -> tuple[Hashable, ...]:
        """Label of every bucket, in code order (``OTHER``, then ``None`` for nulls, last)."""
        return (
            self.categories
            + ((OTHER,) if self.has_other else ())
            + ((None,) if self.has_null else ())
        )

    @property
    def other_code(self) -> int:
        """Code of the :data:`OTHER` bucket (only meaningful when ``has_other``)."""
        return len(self.categories)

    @property
    def null_code(self) -> int:
        """Code of the null bucket (only meaningful when ``has_null``)."""
        return len(self.categories) + self.has_other

    def as_reported(self) -> Domain:
        """The domain of report labels: ``OTHER`` becomes a category, nulls keep their bucket.

        Codes are unchanged: ``as_reported().encode(labels)`` inverts ``labels[code]``.
        """
        if not self.has_other:
            return self
        if self.kind not in ("str", None):
            raise DomainError(
                f"reports of a domain of {self.kind} categories with unknown='other' cannot be "
                f"labelled: {OTHER!r} is a string; use string categories"
            )
        return Domain((*self.categories, OTHER), "raise", self.nulls)

    def held_by(self, dtype: np.dtype[Any]) -> tuple[NDArray[Any], NDArray[np.int64]]:
        """The numeric categories that ``dtype`` holds exactly, as an array of ``dtype``, and
        their codes.

        A category that the dtype would round, truncate or overflow (``2.5`` in ``int64``,
        ``0.1`` in ``float32``, ``2**53 + 1`` in ``float64``) is left out: no value of that
        dtype equals it, so none may be matched to it. Computed once per dtype.
        """
        dtype = np.dtype(dtype)
        if dtype not in self._held:
            self._held[dtype] = held_exactly(self.categories, dtype)
        return self._held[dtype]

    def encode(self, values: Iterable[Any], *, column: str = "values") -> NDArray[np.int64]:
        """Integer codes of plain Python / numpy values (the frame layers use native codes)."""
        items = list(values)
        kind = _kind_of(self.categories[0]) if self.categories else None
        raw = np.fromiter(
            (self._index.get(v, -1) if _kind_of(v) == kind else -1 for v in items),
            dtype=np.int64,
            count=len(items),
        )
        null = np.fromiter((_is_null(v) for v in items), dtype=bool, count=len(items))
        return self.resolve(raw, null, column=column, value_at=items.__getitem__)

    def resolve(
        self,
        raw_codes: NDArray[np.integer[Any]],
        null_mask: NDArray[np.bool_],
        *,
        column: str,
        value_at: Callable[[int], object],
        row_of: Callable[[int], int] | None = None,
    ) -> NDArray[np.int64]:
        """Apply the null and unknown policies to category codes (``-1`` = not a category).

        ``value_at(i)`` returns the original value at position ``i`` and ``row_of(i)`` the row
        it belongs to (default: ``i``); both are only called to describe offending values: the
        first in an error message, the most frequent outside the domain in an
        :class:`~frameldp.errors.UnknownValuesWarning`.
        """
        codes = np.asarray(raw_codes, dtype=np.int64)
        missing = codes < 0
        if not missing.any():
            return codes
        codes = codes.copy()  # the policies below write into it; the caller's array stays
        row_of = row_of or int
        unknown = missing & ~null_mask
        if null_mask.any():
            if not self.has_null:
                first = int(np.flatnonzero(null_mask)[0])
                raise DomainError(
                    f"column {shown(column)}: null at row {row_of(first)} "
                    f"({int(null_mask.sum())} nulls in the {codes.size} rows checked); pass "
                    "nulls='category' to give nulls their own bucket, or drop them first"
                )
            codes[null_mask] = self.null_code
        if unknown.any():
            if not self.has_other:
                first = int(np.flatnonzero(unknown)[0])
                raise DomainError(
                    f"column {shown(column)}: value {shown(value_at(first))} at row "
                    f"{row_of(first)} is not in the domain of {len(self.categories)} categories "
                    f"({int(unknown.sum())} such values in the {codes.size} rows checked); pass "
                    "unknown='other' to map such values to a reserved bucket"
                )
            codes[unknown] = self.other_code
            if unknown.sum() > OTHER_SHARE * codes.size:
                _warn_other(column, unknown, value_at)
        return codes

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Domain:
        """Rebuild a domain from :meth:`to_json`."""
        return cls.coerce(data["categories"], unknown=data["unknown"], nulls=data["nulls"])

    def to_json(self) -> dict[str, Any]:
        """A JSON-serializable description (categories must be JSON scalars)."""
        return {"categories": list(self.categories), "unknown": self.unknown, "nulls": self.nulls}


def _warn_other(column: str, unknown: NDArray[np.bool_], value_at: Callable[[int], object]) -> None:
    """Warn that ``unknown="other"`` caught more than :data:`OTHER_SHARE` of the rows, naming
    the most frequent values outside the domain (counted over the first 10,000 of them)."""
    positions = np.flatnonzero(unknown)
    counted = Counter(repr(value_at(int(i))) for i in positions[:10_000])
    top = ", ".join(shown_value for shown_value, _ in counted.most_common(3))
    warnings.warn(
        f"column {shown(column)}: unknown='other' put {positions.size / unknown.size:.0%} of "
        f"the rows in {OTHER!r} (more than {OTHER_SHARE:.0%}); the most frequent values "
        f"outside the domain are {top}. Check the domain: estimates of <other> say nothing "
        "about these values",
        UnknownValuesWarning,
        stacklevel=caller_stacklevel(),
    )


def one_hot_rows(codes: NDArray[np.int64], num_bits: int) -> NDArray[np.uint8]:
    """``(n, num_bits)`` 0/1 rows, one set bit per row at its code in ``[0, num_bits)``."""
    _check_codes(codes, num_bits)
    rows = np.zeros((codes.size, num_bits), dtype=np.uint8)
    rows[np.arange(codes.size), codes] = 1
    return rows


def one_hot_packed(codes: NDArray[np.int64], num_bits: int) -> NDArray[np.uint8]:
    """Bit-packed one-hot vectors ``(n, ceil(num_bits / 8))`` of codes in ``[0, num_bits)``."""
    packed = np.zeros((codes.size, packed_width(num_bits)), dtype=np.uint8)
    return xor_one_hot(packed, codes, num_bits)


def xor_one_hot(
    packed: NDArray[np.uint8], codes: NDArray[np.int64], num_bits: int
) -> NDArray[np.uint8]:
    """Flip bit ``codes[i]`` of row ``i`` of ``packed`` in place (and return it)."""
    _check_codes(codes, num_bits)
    if packed.ndim != 2 or packed.shape != (codes.size, packed_width(num_bits)):
        raise ParameterError(
            f"packed rows must have shape ({codes.size}, {packed_width(num_bits)}) for "
            f"{codes.size} codes of {num_bits} bits, got {packed.shape}"
        )
    if not packed.flags.c_contiguous:
        packed[np.arange(codes.size), codes >> 3] ^= (0x80 >> (codes & 7)).astype(np.uint8)
        return packed
    num_rows, width = packed.shape
    flat = packed.reshape(-1)  # a view, since packed is C-contiguous

    def flip(start: int, stop: int) -> None:  # rows of its own: any thread order
        part = np.asarray(codes[start:stop], dtype=np.int64)
        where = np.arange(start * width, stop * width, width, dtype=np.int64)
        where += part >> 3
        flat[where] ^= (0x80 >> (part & 7)).astype(np.uint8)

    map_ranges(num_rows, 1 << 16, flip)  # bounded index temporaries, on every core
    return packed


def k_hot_packed(
    offsets: NDArray[np.int64],
    codes: NDArray[np.int64],
    num_bits: int,
    *,
    max_weight: int,
    column: str = "values",
    row_offset: int = 0,
) -> NDArray[np.uint8]:
    """Bit-packed k-hot vectors of set-valued cells given in CSR form.

    Row ``i`` holds ``codes[offsets[i]:offsets[i + 1]]``; repeated items count once (a cell is a
    set). A row with more than ``max_weight`` distinct items raises :class:`DomainError` naming
    frame row ``row_offset + i``.
    """
    _check_codes(codes, num_bits)
    num_rows = offsets.size - 1
    rows = np.repeat(np.arange(num_rows, dtype=np.int64), np.diff(offsets))
    flat = np.sort(rows * num_bits + codes)
    # Drop repeats within a cell (a sort and a mask are ~20x faster than np.unique here).
    flat = flat[np.concatenate(([True], flat[1:] != flat[:-1]))] if flat.size else flat
    rows, items = np.divmod(flat, num_bits)
    weights = np.bincount(rows, minlength=num_rows)
    if num_rows and weights.max(initial=0) > max_weight:
        row = int(np.argmax(weights > max_weight))
        raise DomainError(
            f"column {shown(column)}: row {row_offset + row} holds {int(weights[row])} distinct "
            "items, more than "
            f"max_weight={max_weight}"
        )
    width = packed_width(num_bits)
    packed = np.zeros(num_rows * width, dtype=np.uint8)
    np.bitwise_or.at(packed, rows * width + (items >> 3), (0x80 >> (items & 7)).astype(np.uint8))
    return packed.reshape(num_rows, width)


def _check_codes(codes: NDArray[np.int64], num_bits: int) -> None:
    if codes.size and (codes.min() < 0 or codes.max() >= num_bits):
        raise DomainError(
            f"codes must be in [0, {num_bits}), got values in [{codes.min()}, {codes.max()}]"
        )


def unpack_bits(packed: NDArray[np.uint8], num_bits: int) -> NDArray[np.uint8]:
    """Unpack ``(n, ceil(k/8))`` packed rows into an ``(n, k)`` array of 0/1."""
    return np.unpackbits(packed, axis=1, count=num_bits)


def padding_mask(num_bits: int) -> int:
    """The padding bits of the last byte of ``num_bits`` packed bits (the low bits, in
    ``numpy.packbits`` order), which a report leaves clear; 0 when the bits fill their bytes."""
    return 0xFF >> (num_bits % 8) if num_bits % 8 else 0


def check_padding(packed: NDArray[np.uint8], num_bits: int) -> None:
    """Refuse rows with bits set past bit ``num_bits`` (another mechanism's reports)."""
    padding = padding_mask(num_bits)
    if padding and packed.shape[0] and np.bitwise_and(packed[:, -1], np.uint8(padding)).any():
        raise ParameterError(
            f"reports have bits set beyond bit {num_bits}: they were not produced by a "
            f"mechanism with {num_bits} buckets (wrong mechanism or domain?)"
        )


def report_bits_matrix(packed: NDArray[np.uint8], num_bits: int) -> NDArray[np.uint8]:
    """``(n, k)`` 0/1 of packed report rows whose padding bits are checked to be clear."""
    check_padding(packed, num_bits)
    return unpack_bits(packed, num_bits)


def count_bits(packed: NDArray[np.uint8], num_bits: int) -> NDArray[np.int64]:
    """Per-bit totals over the rows of a packed bit matrix, on every core, in bounded memory
    (a carry-save adder tree over the packed rows: :mod:`frameldp.core.bit_counting`)."""
    if packed.ndim != 2 or packed.shape[1] != packed_width(num_bits):
        raise ParameterError(
            f"reports must have shape (n, {packed_width(num_bits)}) for {num_bits} bits, "
            f"got {packed.shape}"
        )
    if packed.dtype != np.uint8:
        raise ParameterError(f"reports must be packed bytes (uint8), got {packed.dtype}")
    check_padding(packed, num_bits)
    return count_packed_bits(packed, num_bits)


# ---------------------------------------------------------------------- Bloom filters

HashScheme = Literal["fast", "rappor"]
HASH_SCHEMES: Final = ("fast", "rappor")
_MD5_BYTES: Final = 16
_FAST_PERSON: Final = b"frameldp.bloom1"
_MIX_1: Final = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2: Final = np.uint64(0x94D049BB133111EB)


def _mix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The SplitMix64 finalizer: a bijection of 64-bit words that spreads every input bit."""
    x = (x ^ (x >> np.uint64(30))) * _MIX_1
    x = (x ^ (x >> np.uint64(27))) * _MIX_2
    return x ^ (x >> np.uint64(31))


def _utf8(value: object, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise DomainError(
        f"Bloom encoding hashes strings; got {shown(value)} of type {type(value).__name__} in "
        f"{what} (cast the values to strings first)"
    )


FAST_HASHES: HashScheme = default_marker("fast")
"""The default hash scheme, told apart from a given ``"fast"``."""


def chosen_hash_scheme(owner: str, hash_scheme: HashScheme, hash: HashScheme | None) -> HashScheme:
    """``hash_scheme``, or the scheme given under its earlier name ``hash=`` (warned; refused
    when both are given and differ)."""
    chosen: HashScheme = renamed_argument(
        owner, "hash", "hash_scheme", old_value=hash, new_value=hash_scheme, default=FAST_HASHES
    )
    return chosen


@dataclass(frozen=True, init=False)
class BloomEncoder:
    """Bloom filters of strings, with hash functions that differ per cohort (RAPPOR Sec. 3).

    A string ``v`` in cohort ``c`` sets the bits ``H_1(c, v), ..., H_h(c, v)`` of a
    ``num_bits``-bit filter (fewer when two hashes collide).

    Parameters
    ----------
    num_bits
        Filter length ``k``.
    num_hashes
        Hash functions per cohort ``h``.
    num_cohorts
        Number of cohorts ``m``; each has its own hash functions, so that two strings that
        collide in one cohort are told apart by the others.
    hash_scheme
        ``"fast"`` (default): one BLAKE2b digest per distinct string, then
        ``H_i(c, v) = mix(d(v) XOR mix(c * 2**16 + i)) mod k`` with the SplitMix64 finalizer
        ``mix``, vectorized. ``"rappor"``: the reference client (google/rappor,
        ``client/python/rappor.py``): ``H_i(c, v)`` is byte ``i`` of
        ``MD5(cohort as 4 bytes big-endian || UTF-8 of v)`` modulo ``k``, which needs
        ``h <= 16`` and ``k <= 256``.

    Hashes are public: the analyst recomputes them for candidate strings.
    """

    num_bits: int
    num_hashes: int = 2
    num_cohorts: int = 1
    hash_scheme: HashScheme = "fast"

    def __init__(
        self,
        num_bits: int,
        num_hashes: int = 2,
        num_cohorts: int = 1,
        hash_scheme: HashScheme = FAST_HASHES,
        *,
        hash: HashScheme | None = None,
    ) -> None:
        owner = "BloomEncoder"
        object.__setattr__(self, "hash_scheme", chosen_hash_scheme(owner, hash_scheme, hash))
        if self.hash_scheme not in HASH_SCHEMES:
            raise ParameterError(
                f"{owner}: hash_scheme must be one of {HASH_SCHEMES}, got "
                f"{shown(self.hash_scheme)}",
                parameter="hash_scheme",
            )
        reference = self.hash_scheme == "rappor"
        max_bits = 256 if reference else 1 << 20
        max_hashes = _MD5_BYTES if reference else 64
        bits = check_size(owner, "num_bits", num_bits, 1, max_bits)
        hashes = check_size(owner, "num_hashes", num_hashes, 1, max_hashes)
        cohorts = check_size(owner, "num_cohorts", num_cohorts, 1, (1 << 32) - 1)
        if hashes > bits:
            raise ParameterError(
                f"{owner}: num_hashes must be at most num_bits={bits}, got {hashes}"
            )
        object.__setattr__(self, "num_bits", bits)
        object.__setattr__(self, "num_hashes", hashes)
        object.__setattr__(self, "num_cohorts", cohorts)

    @property
    def hash(self) -> HashScheme:
        """Deprecated name of :attr:`hash_scheme`."""
        renamed("BloomEncoder", "hash", "hash_scheme")
        return self.hash_scheme

    @property
    def width(self) -> int:
        """Bytes per packed filter."""
        return packed_width(self.num_bits)

    def to_json(self) -> dict[str, Any]:
        """The encoding parameters (JSON-serializable)."""
        return {
            "num_bits": self.num_bits,
            "num_hashes": self.num_hashes,
            "num_cohorts": self.num_cohorts,
            "hash": self.hash_scheme,  # the key of earlier releases' specs: fingerprinted
        }

    def positions(
        self, values: Sequence[str | bytes], cohorts: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """Bit positions ``(len(values), num_hashes)`` of ``values[i]`` in cohort ``cohorts[i]``."""
        cohorts = self._check_cohorts(np.asarray(cohorts, dtype=np.int64))
        if cohorts.shape != (len(values),):
            raise ParameterError(
                f"cohorts must have one entry per value ({len(values)}), got shape {cohorts.shape}"
            )
        if self.hash_scheme == "rappor":
            return self._md5_positions(values, cohorts)
        return self._fast_positions(self._fast_digests(values), cohorts)

    def signatures(self, candidates: Sequence[str | bytes]) -> NDArray[np.int64]:
        """Bit positions ``(len(candidates), num_cohorts, num_hashes)`` of every candidate."""
        count, m = len(candidates), self.num_cohorts
        cohorts = np.tile(np.arange(m, dtype=np.int64), count)
        if self.hash_scheme == "rappor":
            repeated = [value for value in candidates for _ in range(m)]
            flat = self._md5_positions(repeated, cohorts)
        else:
            digests = np.repeat(self._fast_digests(candidates), m)
            flat = self._fast_positions(digests, cohorts)
        return flat.reshape(count, m, self.num_hashes)

    def encode(
        self,
        codes: NDArray[np.int64],
        values: Sequence[str | bytes],
        cohorts: NDArray[np.int64],
    ) -> NDArray[np.uint8]:
        """Packed filters of rows holding ``values[codes[i]]`` in cohort ``cohorts[i]``.

        Each distinct string (``"fast"``) or distinct (string, cohort) pair (``"rappor"``) is
        hashed once, however many rows hold it.
        """
        codes = np.asarray(codes, dtype=np.int64)
        cohorts = self._check_cohorts(np.asarray(cohorts, dtype=np.int64))
        if codes.shape != cohorts.shape or codes.ndim != 1:
            raise ParameterError(
                f"codes and cohorts must be one-dimensional and of equal length, got shapes "
                f"{codes.shape} and {cohorts.shape}"
            )
        if codes.size and (codes.min() < 0 or codes.max() >= len(values)):
            raise ParameterError(f"codes must index the {len(values)} distinct values")
        if self.hash_scheme == "rappor":
            pairs, inverse = np.unique(codes * self.num_cohorts + cohorts, return_inverse=True)
            value_of, cohort_of = np.divmod(pairs, self.num_cohorts)
            distinct = self._md5_positions([values[i] for i in value_of.tolist()], cohort_of)
            bits = distinct[inverse.ravel()]
        else:
            bits = self._fast_positions(self._fast_digests(values)[codes], cohorts)
        width = self.width
        packed = np.zeros(codes.size * width, dtype=np.uint8)
        rows = np.repeat(np.arange(codes.size, dtype=np.int64) * width, self.num_hashes)
        flat = bits.ravel()
        np.bitwise_or.at(packed, rows + (flat >> 3), (0x80 >> (flat & 7)).astype(np.uint8))
        return packed.reshape(codes.size, width)

    def _check_cohorts(self, cohorts: NDArray[np.int64]) -> NDArray[np.int64]:
        if cohorts.size and (cohorts.min() < 0 or cohorts.max() >= self.num_cohorts):
            raise DomainError(
                f"cohorts must be in [0, {self.num_cohorts}), got values in "
                f"[{cohorts.min()}, {cohorts.max()}]"
            )
        return cohorts

    def _md5_positions(
        self, values: Sequence[str | bytes], cohorts: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        h = self.num_hashes
        digests = b"".join(
            hashlib.md5(
                int(cohort).to_bytes(4, "big") + _utf8(value, "the Bloom-encoded values")
            ).digest()[:h]
            for value, cohort in zip(values, cohorts.tolist(), strict=True)
        )
        raw = np.frombuffer(digests, dtype=np.uint8).reshape(len(values), h)
        return raw.astype(np.int64) % self.num_bits

    @staticmethod
    def _fast_digests(values: Sequence[str | bytes]) -> NDArray[np.uint64]:
        joined = b"".join(
            hashlib.blake2b(
                _utf8(value, "the Bloom-encoded values"), digest_size=8, person=_FAST_PERSON
            ).digest()
            for value in values
        )
        return np.frombuffer(joined, dtype="<u8").astype(np.uint64)

    def _fast_positions(
        self, digests: NDArray[np.uint64], cohorts: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        salts = cohorts.astype(np.uint64)[:, None] << np.uint64(16)
        salts = salts + np.arange(1, self.num_hashes + 1, dtype=np.uint64)[None, :]
        mixed = _mix64(digests[:, None] ^ _mix64(salts))
        return (mixed % np.uint64(self.num_bits)).astype(np.int64)
