"""Stream labels: the canonical, type-tagged identity of a noise stream (column, spec,
purpose), so that two columns or two mechanisms never share noise. See
:mod:`frameldp.core.randomness`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from frameldp.errors import ParameterError, shown

__all__ = ["STREAM_VERSION", "Identity", "label_bytes"]


STREAM_VERSION: Final = b"frameldp.v2"
"""Prefix of every stream label: bumped whenever the addressing of reusable noise (caller's
key, seed, memo key) changes; a fresh key's positional layout may change without it."""

Identity = str | int | bytes | float | bool | None | tuple[Any, ...]
"""What a stream label is made of: column labels, spec fingerprints, purposes."""


def label_bytes(parts: Sequence[object]) -> bytes:
    """The canonical, injective, type-tagged encoding of a stream label.

    Each part is tagged with its type and prefixed with its length, so ``1`` and ``"1"``,
    ``("a", "b")`` and ``"a\x1fb"``, ``True`` and ``1`` all differ. Column labels of pandas
    (any hashable: strings, integers, floats, tuples of a MultiIndex, None) are accepted;
    anything else raises a :class:`ParameterError`.

    >>> label_bytes([1]) != label_bytes(["1"])
    True
    """
    return b"".join(_part_bytes(part) for part in parts)


def _part_bytes(part: object) -> bytes:
    if isinstance(part, bool | np.bool_):
        tag, body = b"?", b"1" if part else b"0"
    elif isinstance(part, int | np.integer):
        tag, body = b"i", str(int(part)).encode("ascii")
    elif isinstance(part, str):
        tag, body = b"s", part.encode("utf-8", "surrogatepass")
    elif isinstance(part, bytes):
        tag, body = b"b", part
    elif isinstance(part, float | np.floating):
        tag, body = b"f", float(part).hex().encode("ascii")
    elif part is None:
        tag, body = b"n", b""
    elif isinstance(part, tuple):
        tag, body = b"t", label_bytes(part)
    else:
        raise ParameterError(
            f"column labels must be strings, integers, floats, bytes, None or tuples of them "
            f"(a canonical identity for the noise stream), got {shown(part)} of type "
            f"{type(part).__name__}; rename the column"
        )
    return tag + len(body).to_bytes(8, "big") + body
