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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.columns import combined, distinct_codes
from frameldp.core.randomness import RandomSource, digests, label_bytes
from frameldp.core.randomness.keyed_ids import (
    STREAM,
    id_messages,
    keyed_digests,
    keyed_digests_of,
)
from frameldp.errors import shown

__all__ = ["memo_name", "randomize_with_users", "row_digests", "user_digests"]


def memo_name(memo: RandomSource, label: tuple[object, ...]) -> str:
    """Public name of the permanent responses under the memo key ``memo`` for the stream
    ``label`` (an HMAC: it names them without revealing the key)."""
    version = b"frameldp.v3.memo-id:" if memo.memo_scheme == 3 else b"frameldp.v2.memo-id:"
    message = version + label_bytes(label)
    return hmac.new(memo.key, message, hashlib.sha256).hexdigest()[:32]


def row_digests(
    users: pa.Array | pa.ChunkedArray,
    column: str,
    user_column: str | None,
    row_start: int,
    memo: RandomSource,
) -> NDArray[np.uint8]:
    """``(n, 16)``: a digest of each row's user id under the memo key ``memo``'s scheme
    (module docstring); a null id is refused, naming the row."""
    what = f"user id (user column {shown(user_column)})"
    if memo.memo_scheme == 3:
        tag, data, offsets = id_messages(combined(users), column, what, row_start)
        return keyed_digests(memo.stream(*STREAM), tag, data, offsets)
    codes, ids = distinct_codes(users, column, what, row_start)
    return digests(ids)[codes]


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
    key that memoizes (``memo``, default ``source``: :func:`row_digests`)."""
    digests = (
        None
        if users is None
        else row_digests(users, column, user_column, row_start, memo or source)
    )
    return randomize(
        inputs, source=source, label=column, row_start=row_start, users=digests, memo=memo
    )


def user_digests(ids: Sequence[object], memo: RandomSource) -> NDArray[np.uint8]:
    """``(n, 16)``: the digest of each of a list of distinct user ids under ``memo``'s scheme:
    the same as :func:`row_digests` gives them in a column."""
    if memo.memo_scheme == 3:
        return keyed_digests_of(memo.stream(*STREAM), ids)
    return digests(ids)
