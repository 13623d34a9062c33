"""Memoization's public names and user digests: the permanent responses of one (user, value)
are drawn from a stream named by an HMAC of the memo key, never the key itself."""

from __future__ import annotations

import hashlib
import hmac

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.columns import distinct_codes
from frameldp.core.randomness import RandomSource, digests, label_bytes
from frameldp.errors import shown

__all__ = ["memo_name", "row_digests"]


def memo_name(memo: RandomSource, label: tuple[object, ...]) -> str:
    """Public name of the permanent responses under the memo key ``memo`` for the stream
    ``label`` (an HMAC: it names them without revealing the key)."""
    message = b"frameldp.v2.memo-id:" + label_bytes(label)
    return hmac.new(memo.key, message, hashlib.sha256).hexdigest()[:32]


def row_digests(
    users: pa.Array | pa.ChunkedArray, column: str, user_column: str | None, row_start: int
) -> NDArray[np.uint8]:
    """``(n, 16)``: a digest of each row's user id (each distinct id hashed once); a null id is
    refused, naming the row."""
    codes, ids = distinct_codes(
        users, column, f"user id (user column {shown(user_column)})", row_start
    )
    return digests(ids)[codes]
