"""The noise of one run of rows under one stream label: by position under a fresh key, by
position and value under a caller's key or a seed, by (user, value) for memoized responses.
See :mod:`frameldp.core.randomness`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from frameldp.core.randomness.addresses import row_addresses
from frameldp.core.randomness.samplers import (
    bernoulli_flags,
    bernoulli_packed,
    bernoulli_packed_at,
    checked_out,
    uniform_integers,
    uniform_integers_at,
    uniform_words,
    uniform_words_at,
    uniform_words_of,
)
from frameldp.errors import ParameterError

__all__ = ["Rows"]

if TYPE_CHECKING:
    from frameldp.core.randomness.keys import RandomSource


class Rows:
    """The noise of one run of rows under one stream label.

    Under a fresh key, noise is addressed by position: purpose ``p`` of row ``r`` is keystream
    at ``r`` of the stream ``(*label, p)`` (AES-CTR). Under a caller's key or a seed it is
    addressed by position and value: row ``r`` holding value bytes ``v`` has the address
    ``A = CBC-MAC(r || len(v), v)`` under the stream ``(*label, "address")``, and purpose ``p``
    draws ``AES(A XOR tweak)`` under ``(*label, p)``.
    """

    __slots__ = ("_addresses", "label", "num_rows", "row_start", "source")

    def __init__(
        self,
        source: RandomSource,
        label: tuple[object, ...],
        row_start: int,
        num_rows: int,
        values: NDArray[np.uint8] | None,
    ) -> None:
        self.source = source
        self.label = label
        self.row_start = row_start
        self.num_rows = num_rows
        self._addresses: NDArray[np.uint8] | None = None
        if values is not None:
            self._addresses = row_addresses(
                source.stream(*label, "address"),
                np.arange(row_start, row_start + self.num_rows, dtype=np.int64),
                values,
            )

    @classmethod
    def memoized(
        cls,
        source: RandomSource,
        label: tuple[object, ...],
        users: NDArray[np.uint8],
        values: NDArray[np.uint8],
    ) -> Rows:
        """The noise of memoized permanent responses: row ``i`` is addressed by a keyed PRF of
        its ``(users[i], values[i])`` pair of 16-byte digests under the stream ``(*label,
        "memo")``, not by its position. The same person holding the same value gets the same
        noise wherever and whenever the row sits, under the same ``source`` (the memo key) and
        ``label``; any other pair gets independent noise."""
        rows = cls(source, label, 0, users.shape[0], None)
        rows._addresses = source.stream(*label, "memo").prf(users, values)
        return rows

    @property
    def by_position(self) -> bool:
        """Whether the noise is addressed by position alone (a fresh key): no other run ever
        draws it again, so its sampler may change between versions; noise addressed by value
        (a caller's key, a seed, a memo key) may not."""
        return self._addresses is None

    def part(self, start: int, stop: int) -> Rows:
        """The noise of rows ``start`` to ``stop`` of this run (positions within it): the same
        draws as this run gives those rows, without claiming them again under a fresh key."""
        if not 0 <= start <= stop <= self.num_rows:
            raise ParameterError(
                f"part [{start}, {stop}) is outside the run of {self.num_rows} rows"
            )
        part = Rows(self.source, self.label, self.row_start + start, stop - start, None)
        if self._addresses is not None:
            part._addresses = self._addresses[start:stop]
        return part

    def bernoulli(
        self,
        purpose: str,
        numerator: int,
        bits_per_row: int,
        out: NDArray[np.uint8] | None = None,
    ) -> NDArray[np.uint8]:
        """Bernoulli(``numerator / 2**64``) bits, packed ``(num_rows, ceil(bits_per_row/8))``
        (written into ``out`` if given)."""
        stream = self.source.stream(*self.label, purpose)
        if self._addresses is None:
            return bernoulli_packed(
                stream,
                numerator,
                row_start=self.row_start,
                num_rows=self.num_rows,
                bits_per_row=bits_per_row,
                out=out,
            )
        bits = bernoulli_packed_at(stream, numerator, self._addresses, bits_per_row=bits_per_row)
        if out is None:
            return bits
        np.copyto(checked_out(out, bits.shape), bits)
        return out

    def flags(self, purpose: str, numerator: int) -> NDArray[np.bool_]:
        """One Bernoulli(``numerator / 2**64``) flag per row (eight rows per keystream byte pair
        under a fresh key; under an address, what ``bernoulli(purpose, numerator, 1)`` gives)."""
        stream = self.source.stream(*self.label, purpose)
        if self._addresses is None:
            return bernoulli_flags(
                stream, numerator, row_start=self.row_start, num_rows=self.num_rows
            )
        packed = bernoulli_packed_at(stream, numerator, self._addresses, bits_per_row=1)
        flags: NDArray[np.bool_] = packed.ravel() != 0
        return flags

    def uniform(self, purpose: str, k: int) -> NDArray[np.int64]:
        """One exactly uniform integer in ``[0, k)`` per row."""
        stream = self.source.stream(*self.label, purpose)
        if self._addresses is None:
            return uniform_integers(stream, k, row_start=self.row_start, num_rows=self.num_rows)
        return uniform_integers_at(stream, k, self._addresses)

    def words_of(self, purpose: str, count: int, indices: NDArray[np.int64]) -> NDArray[np.uint64]:
        """``words(purpose, count)[indices]``, computed for those rows only (``indices``:
        positions within this run)."""
        indices = np.asarray(indices, dtype=np.int64)
        stream = self.source.stream(*self.label, purpose)
        if self._addresses is None:
            return uniform_words_of(stream, indices + self.row_start, count)
        return uniform_words_at(stream, self._addresses[indices], count)

    def words(self, purpose: str, count: int) -> NDArray[np.uint64]:
        """``count`` exactly uniform 64-bit words per row, ``(num_rows, count)``."""
        stream = self.source.stream(*self.label, purpose)
        if self._addresses is None:
            return uniform_words(
                stream, row_start=self.row_start, num_rows=self.num_rows, count=count
            )
        return uniform_words_at(stream, self._addresses, count)
