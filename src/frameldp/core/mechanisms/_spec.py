"""Mechanism specs: every mechanism serializes to a JSON object and back.

Specs are what a stored report file carries (Parquet key-value metadata, frame attrs), so that
reports are self-describing: the spec alone determines the estimator and the guarantee.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Callable
from decimal import Decimal
from numbers import Real
from typing import Any, Final, TypeVar, cast

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.columns import distinct_codes
from frameldp.core.randomness import RandomSource, digests, dyadic_at_least, label_bytes
from frameldp.errors import ParameterError, shown

__all__ = [
    "FLOAT_MARGIN",
    "canonical_json",
    "check_codes",
    "check_epsilon",
    "check_number",
    "fingerprint",
    "is_mechanism",
    "mechanism_class",
    "mechanism_from_spec",
    "noise_numerator",
    "register",
]

FLOAT_MARGIN: Final = 2.0**-40
"""Relative margin added toward more noise to a probability computed in floating point before
it is rounded to the sampler's grid: far above the few-ulp error of expressions such as
``1 / (1 + exp(x))``, so the realized probability is never less noisy than the exact one."""


def noise_numerator(weight: float, epsilon: float) -> int:
    """``P = w e^-eps / (1 + w e^-eps)``, the probability of a noisy outcome of total weight
    ``w`` against the true one's ``e^eps`` (k-RR's move: ``w = k - 1``; OUE's other bit:
    ``w = 1``), as a multiple of ``2**-64`` at least as large (more noise; never 0).

    Written with ``e^-eps`` so it neither overflows nor cancels for any epsilon.
    """
    scaled = weight * math.exp(-epsilon)
    return max(1, dyadic_at_least(scaled / (1.0 + scaled) * (1 + FLOAT_MARGIN)))


def check_number(value: object, owner: str, name: str) -> float:
    """``value`` as a float, or a :class:`ParameterError` naming it (as ``name``).

    Python and numpy integers and floats, ``Fraction`` and ``Decimal`` are numbers; ``bool``,
    strings and anything else are refused. A number beyond the float range (``10**400``) becomes
    ``±inf`` (callers refuse non-finite values), never an ``OverflowError``.
    """
    if isinstance(value, bool) or not isinstance(value, Real | Decimal):
        raise ParameterError(f"{owner}: {name} must be a number, got {shown(value)}")
    try:
        return float(value)
    except OverflowError:  # an int or Fraction too large for a float
        return math.inf if cast(Any, value) > 0 else -math.inf
    except ValueError:  # Decimal('sNaN')
        return math.nan


def check_epsilon(epsilon: object, owner: str, name: str = "epsilon") -> float:
    """``epsilon`` as a float, or a :class:`ParameterError` naming it (as ``name``)."""
    value = check_number(epsilon, owner, name)
    if not (value > 0 and math.isfinite(value)):
        beyond = " (beyond the float range)" if value == math.inf and epsilon != value else ""
        raise ParameterError(
            f"{owner}: {name} must be > 0 and finite, got {shown(epsilon)}{beyond}"
        )
    return value


def check_codes(codes: object, k: int) -> NDArray[np.int64]:
    """``codes`` as a one-dimensional int64 array of buckets in ``[0, k)``, or a
    :class:`ParameterError` naming the first code outside."""
    array = np.asarray(codes, dtype=np.int64)
    if array.ndim != 1:
        raise ParameterError(f"codes must be one-dimensional, got shape {array.shape}")
    if array.size and (array.min() < 0 or array.max() >= k):
        outside = (array < 0) | (array >= k)
        first = int(np.flatnonzero(outside)[0])
        raise ParameterError(
            f"codes must be in [0, {k}), got {int(array[first])} at position {first}"
        )
    return array


_REGISTRY: dict[str, type[Any]] = {}
_M = TypeVar("_M")


def register(name: str) -> Callable[[type[_M]], type[_M]]:
    """Class decorator: make ``mechanism_from_spec`` able to rebuild ``name`` specs."""

    def decorate(cls: type[_M]) -> type[_M]:
        _REGISTRY[name] = cls
        return cls

    return decorate


def mechanism_from_spec(spec: dict[str, Any] | str) -> Any:
    """Rebuild a mechanism from its spec (a dict or its JSON text)."""
    try:
        data = json.loads(spec) if isinstance(spec, str) else spec
    except ValueError as error:
        raise ParameterError(f"mechanism spec is not valid JSON: {error}") from None
    name = data.get("mechanism") if isinstance(data, dict) else None
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ParameterError(
            f"unknown mechanism in spec: {shown(name)}; known: {sorted(_REGISTRY)}"
        )
    try:
        return _REGISTRY[name].from_spec(data)
    except (KeyError, TypeError, AttributeError) as error:  # a field missing or of a wrong shape
        raise ParameterError(
            f"invalid {name} spec: a field is missing or malformed "
            f"({type(error).__name__}: {shown(error.args[0] if error.args else None)})"
        ) from None


def mechanism_class(name: str) -> Any:
    """The mechanism class registered as ``name`` (the spec's ``"mechanism"``): how the frame
    shortcuts (``df.ldp.rappor``, ``krr``, ...) and the command line build mechanisms without
    naming their classes."""
    if name not in _REGISTRY:
        raise ParameterError(f"unknown mechanism {shown(name)}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def mechanism_names() -> list[str]:
    """The names of every registered mechanism (the spec's ``"mechanism"``), sorted."""
    return sorted(_REGISTRY)


def canonical_json(spec: dict[str, Any]) -> str:
    """The spec as compact, key-sorted JSON (stable across runs)."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(spec: dict[str, Any]) -> str:
    """SHA-256 of the canonical spec: separates the noise streams of different mechanisms."""
    return hashlib.sha256(canonical_json(spec).encode("utf-8")).hexdigest()


def is_mechanism(value: object) -> bool:
    """Whether ``value`` is an instance of a registered frameldp mechanism."""
    return isinstance(value, tuple(_REGISTRY.values()))


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


def is_prime(value: int) -> bool:
    """Whether ``value`` is prime (trial division: hash bucket counts are small)."""
    if value < 2:
        return False
    if value % 2 == 0:
        return value == 2
    return all(value % d for d in range(3, math.isqrt(value) + 1, 2))
