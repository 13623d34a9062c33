"""Memoization's public names and user digests: the permanent responses of one (user, value)
are drawn from a stream named by an HMAC of the memo key, never the key itself.

A memo key of 32 bytes digests user ids with BLAKE2b, each distinct id once (scheme 2, frozen);
a key of :func:`~frameldp.core.randomness.new_memo_key` with a PRF keyed by it over the whole
column, in batches (scheme 3, :mod:`~frameldp.core.randomness.keyed_ids`). The two schemes
give one person independent permanent responses, so their memo names differ too: a ledger
composes their releases instead of folding them."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.columns import combined, distinct_codes
from frameldp.core.parallel import map_ranges
from frameldp.core.randomness import RandomSource, digests, label_bytes
from frameldp.core.randomness.keyed_ids import (
    STREAM,
    id_messages,
    keyed_digests,
    keyed_digests_of,
)
from frameldp.errors import ParameterError, shown

__all__ = [
    "MEMO_ROWS",
    "UserDigests",
    "memo_name",
    "randomize_in_runs",
    "randomize_with_users",
    "row_digests",
    "shared_user_digests",
    "user_digests",
]


def memo_name(memo: RandomSource, label: tuple[object, ...]) -> str:
    """Public name of the permanent responses under the memo key ``memo`` for the stream
    ``label`` (an HMAC: it names them without revealing the key)."""
    version = b"frameldp.v3.memo-id:" if memo.memo_scheme == 3 else b"frameldp.v2.memo-id:"
    message = version + label_bytes(label)
    return hmac.new(memo.key, message, hashlib.sha256).hexdigest()[:32]


class UserDigests:
    """The user ids of one column, checked whole when made (a null id, a column that is not of
    ids, text that is not UTF-8: refused naming the column and the row), digested run by run
    under the memo key ``memo``'s scheme (module docstring): scheme 3 keys each row's id by
    the PRF, scheme 2 hashes each distinct id once.

    A release makes them once (:func:`shared_user_digests`): its person count
    (:meth:`person_keys`) and every memoized column then use the same digests."""

    def __init__(
        self,
        users: pa.Array | pa.ChunkedArray,
        column: str,
        user_column: str | None,
        row_start: int,
        memo: RandomSource,
    ) -> None:
        what = f"user id (user column {shown(user_column)})"
        self.ids, self.rows, self.row_start = users, len(users), row_start
        self._memo = (memo.memo_scheme, memo.key)
        self._table: NDArray[np.uint8] | None = None
        self._whole: NDArray[np.uint8] | None = None
        if memo.memo_scheme == 3:
            self._tag, self._data, self._offsets = id_messages(
                combined(users), column, what, row_start
            )
            self._stream = memo.stream(*STREAM)
        else:
            self._codes, ids = distinct_codes(users, column, what, row_start)
            self._table = digests(ids)

    @classmethod
    def of_column(
        cls,
        users: pa.Array | pa.ChunkedArray,
        column: str,
        user_column: str | None,
        row_start: int,
        memo: RandomSource,
    ) -> UserDigests:
        """The digests of ``users`` under ``memo``: the release's shared ones when they were
        made of this very array under the same memo key and rows, else new ones."""
        shared = _SHARED.get()
        if (
            shared is not None
            and shared.ids is users
            and shared.row_start == row_start
            and shared._memo == (memo.memo_scheme, memo.key)
        ):
            return shared
        return cls(users, column, user_column, row_start, memo)

    def of(self, start: int, stop: int) -> NDArray[np.uint8]:
        """``(stop - start, 16)``: the digests of rows ``[start, stop)``."""
        if self._table is not None:
            return np.take(self._table, self._codes[start:stop], axis=0)
        if self._whole is not None:
            return self._whole[start:stop]
        offsets = self._offsets[start : stop + 1]
        data = self._data[offsets[0] : offsets[-1]]  # this run's bytes only
        return keyed_digests(self._stream, self._tag, data, offsets - offsets[0])

    def person_keys(self) -> NDArray[np.int64] | NDArray[np.uint64]:
        """One key per row, equal for rows of one id (and, with probability about
        ``n^2 / 2^65``, for two ids, which can only merge people): the codes of the distinct
        ids (scheme 2), or the first 8 bytes of each digest (scheme 3; the digests are kept for
        the runs)."""
        if self._table is not None:
            return self._codes
        if self._whole is None:
            self._whole = np.concatenate(
                [
                    self.of(start, min(start + MEMO_ROWS, self.rows))
                    for start in range(0, self.rows, MEMO_ROWS)
                ]
                or [np.zeros((0, 16), dtype=np.uint8)]
            )
        keys: NDArray[np.uint64] = np.ascontiguousarray(self._whole[:, :8]).view(np.uint64)[:, 0]
        return keys


_SHARED: ContextVar[UserDigests | None] = ContextVar("frameldp_user_digests", default=None)


@contextmanager
def shared_user_digests(digests: UserDigests | None) -> Iterator[None]:
    """Within the block, :meth:`UserDigests.of_column` of the same ids array under the same
    memo key gives ``digests`` (None: nothing shared): a release digests its users once, for
    counting each person's rows and for every memoized column."""
    token = _SHARED.set(digests)
    try:
        yield
    finally:
        _SHARED.reset(token)


def row_digests(
    users: pa.Array | pa.ChunkedArray,
    column: str,
    user_column: str | None,
    row_start: int,
    memo: RandomSource,
) -> NDArray[np.uint8]:
    """``(n, 16)``: a digest of each row's user id under the memo key ``memo``'s scheme
    (module docstring); a null id is refused, naming the row."""
    users_ = UserDigests.of_column(users, column, user_column, row_start, memo)
    return users_.of(0, users_.rows)


MEMO_ROWS = 1 << 16
"""Rows a memoized release draws at once (their digests, addresses and draws stay in cache)."""


def randomize_in_runs(
    randomize: Callable[..., NDArray[Any]],
    inputs: NDArray[Any],
    users: UserDigests,
    *,
    column: str,
    source: RandomSource,
    row_start: int,
    memo: RandomSource | None,
) -> NDArray[Any]:
    """``randomize(inputs, users=...)`` of a memoizing mechanism, :data:`MEMO_ROWS` rows at a
    time on the threads of :func:`~frameldp.core.parallel.map_ranges`: the same reports as one
    call over every row, since permanent responses are addressed by (user, value) and
    instantaneous ones by row position (each run from ``row_start`` plus its start)."""

    if len(inputs) != users.rows:
        raise ParameterError(
            f"column {shown(column)}: users must be one id per row ({len(inputs)}), got "
            f"{users.rows}"
        )

    def run(start: int, stop: int) -> NDArray[Any]:
        return randomize(
            inputs[start:stop],
            source=source,
            label=column,
            row_start=row_start + start,
            users=users.of(start, stop),
            memo=memo,
        )

    first = run(0, min(users.rows, MEMO_ROWS))
    if users.rows <= MEMO_ROWS:
        return first
    out = np.empty((users.rows, *first.shape[1:]), dtype=first.dtype)
    out[:MEMO_ROWS] = first

    def rest(start: int, stop: int) -> None:
        out[MEMO_ROWS + start : MEMO_ROWS + stop] = run(MEMO_ROWS + start, MEMO_ROWS + stop)

    map_ranges(users.rows - MEMO_ROWS, MEMO_ROWS, rest)
    return out


def randomize_with_users(
    randomize: Callable[..., NDArray[Any]],
    inputs: NDArray[Any],
    *,
    column: str,
    source: RandomSource,
    row_start: int,
    users: pa.Array | pa.ChunkedArray | None,
    user_column: str | None,
    memo: RandomSource | None,
) -> NDArray[Any]:
    """``randomize(inputs, ...)`` of a memoizing mechanism for the column ``column``: with
    ``users`` (the ids of ``user_column``), each row's user digested under the scheme of the
    key that memoizes (``memo``, default ``source``: :class:`UserDigests`), run by run
    (:func:`randomize_in_runs`)."""
    if users is None:
        return randomize(
            inputs, source=source, label=column, row_start=row_start, users=None, memo=memo
        )
    digested = UserDigests.of_column(users, column, user_column, row_start, memo or source)
    return randomize_in_runs(
        randomize, inputs, digested, column=column, source=source, row_start=row_start, memo=memo
    )


def user_digests(ids: Sequence[object], memo: RandomSource) -> NDArray[np.uint8]:
    """``(n, 16)``: the digest of each of a list of distinct user ids under ``memo``'s scheme:
    the same as :func:`row_digests` gives them in a column."""
    if memo.memo_scheme == 3:
        return keyed_digests_of(memo.stream(*STREAM), ids)
    return digests(ids)
