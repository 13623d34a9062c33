"""The key lifecycle: fresh keys (one execution, never exported), caller's keys (held by
reference), seeds (insecure), and the refusal of a fresh key's rows randomized twice. See
:mod:`frameldp.core.randomness`."""

from __future__ import annotations

import bisect
import hashlib
import hmac
import secrets
import threading
from collections.abc import Callable, Sequence
from typing import Final, Literal

import numpy as np
from numpy.typing import NDArray

from frameldp.core.randomness.labels import STREAM_VERSION, label_bytes
from frameldp.core.randomness.rows import Rows
from frameldp.core.randomness.samplers import is_int
from frameldp.core.randomness.streams import KeyedStream
from frameldp.errors import NoiseReuseError, ParameterError, shown

__all__ = ["KEY_BYTES", "MEMO_KEY_PREFIX", "Kind", "RandomSource", "new_memo_key", "resolve_source"]


KEY_BYTES: Final = 32
_SEED_PREFIX: Final = b"frameldp.v1.insecure-seed:"

Kind = Literal["fresh", "key", "seed", "memo"]
"""``memo``: a memo key of scheme 3 (:func:`new_memo_key`), otherwise a caller's key."""

MEMO_KEY_PREFIX: Final = b"frameldp-memo-v3:"


def new_memo_key() -> bytes:
    """A new memo key (keep it as a persistent secret): the prefix ``frameldp-memo-v3:`` and
    32 bytes from the operating system's CSPRNG.

    Its user ids are digested by a PRF keyed with it, in batches (scheme 3,
    :mod:`frameldp.core.randomness.keyed_ids`): memoized releases cost a few times the
    one-stage release. A plain 32-byte memo key keeps scheme 2 (BLAKE2b per id), whose
    permanent responses are frozen: changing its scheme would draw every person a second,
    independent permanent response.
    """
    return MEMO_KEY_PREFIX + secrets.token_bytes(KEY_BYTES)


class _KeyRegistry:
    """Caller keys held by reference: a pickled source carries a random handle, not the key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, tuple[bytes, Kind]] = {}

    def handle(self, key: bytes, kind: Kind) -> str:
        with self._lock:
            for handle, entry in self._keys.items():
                if entry == (key, kind):
                    return handle
            handle = secrets.token_hex(16)  # random: never derived from the key
            self._keys[handle] = (key, kind)
            return handle

    def resolve(self, handle: str) -> tuple[bytes, Kind]:
        with self._lock:
            entry = self._keys.get(handle)
        if entry is None:
            raise ParameterError(
                "this plan was made with key= or seed= in another process: frameldp never "
                "writes a key into a serialized plan or pickle. Build the plan again in this "
                "process, passing key= again"
            )
        return entry


_REGISTRY = _KeyRegistry()


def _resolve_reference(handle: str) -> RandomSource:
    key, kind = _REGISTRY.resolve(handle)
    return RandomSource(key, kind=kind)


class RandomSource:
    """A 256-bit key from which every noise stream of one execution is derived.

    Create one with :meth:`fresh` (the default: a new secret key per execution),
    :meth:`from_key` (the caller keeps the key to re-run the *same* job on the *same* rows
    idempotently) or :meth:`from_seed` (reproducible and **insecure**). See the module
    docstring for which rows may share noise under each.
    """

    __slots__ = ("_lock", "_used", "key", "kind")

    key: bytes
    kind: Kind
    _used: dict[bytes, list[tuple[int, int]]]
    _lock: threading.Lock

    def __init__(self, key: bytes, seeded: bool = False, *, kind: Kind | None = None) -> None:
        if not isinstance(key, bytes) or len(key) != KEY_BYTES:
            # Never echo the value: it may be (a mistyped form of) the secret key.
            shown_key = f"{len(key)} bytes" if isinstance(key, bytes) else f"a {type(key).__name__}"
            raise ParameterError(f"key must be {KEY_BYTES} bytes, got {shown_key}")
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "kind", kind or ("seed" if seeded else "key"))
        object.__setattr__(self, "_used", {})
        object.__setattr__(self, "_lock", threading.Lock())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("RandomSource is immutable")

    @classmethod
    def fresh(cls) -> RandomSource:
        """A new key from the operating system's CSPRNG, for one execution."""
        return cls(secrets.token_bytes(KEY_BYTES), kind="fresh")

    @classmethod
    def from_key(cls, key: bytes | bytearray | memoryview) -> RandomSource:
        """Use a caller-held secret key (exactly 32 bytes)."""
        return cls(bytes(key) if isinstance(key, bytearray | memoryview) else key, kind="key")

    @classmethod
    def from_memo_key(cls, key: bytes | bytearray | memoryview) -> RandomSource:
        """A memo key: 32 bytes (scheme 2) or a key of :func:`new_memo_key` (scheme 3)."""
        key = bytes(key) if isinstance(key, bytearray | memoryview) else key
        if isinstance(key, bytes) and key.startswith(MEMO_KEY_PREFIX):
            if len(key) != len(MEMO_KEY_PREFIX) + KEY_BYTES:
                raise ParameterError(
                    f"memo_key: a scheme-3 memo key is {len(MEMO_KEY_PREFIX)} + {KEY_BYTES} "
                    f"bytes, got {len(key)} bytes",
                    parameter="memo_key",
                )
            return cls(key[len(MEMO_KEY_PREFIX) :], kind="memo")
        if not isinstance(key, bytes) or len(key) != KEY_BYTES:
            shown_key = f"{len(key)} bytes" if isinstance(key, bytes) else f"a {type(key).__name__}"
            raise ParameterError(
                f"memo_key must be {KEY_BYTES} bytes or a key of frameldp.new_memo_key(), got "
                f"{shown_key}",
                parameter="memo_key",
            )
        return cls(key, kind="key")

    @property
    def memo_scheme(self) -> int:
        """How user ids are digested when this source is a memo key: 3 for a key of
        :func:`new_memo_key` (a keyed PRF), 2 otherwise (BLAKE2b)."""
        return 3 if self.kind == "memo" else 2

    @classmethod
    def from_seed(cls, seed: int) -> RandomSource:
        """Derive a key from an integer: reproducible, and insecure by construction."""
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise ParameterError(f"seed must be an int, got {shown(seed)}")
        seed = int(seed)
        length = max(1, (seed.bit_length() + 8) // 8)
        digest = hashlib.sha256(_SEED_PREFIX + seed.to_bytes(length, "big", signed=True))
        return cls(digest.digest(), kind="seed")

    @property
    def seeded(self) -> bool:
        """True for a source derived from a seed (insecure)."""
        return self.kind == "seed"

    @property
    def is_fresh(self) -> bool:
        """True for a fresh key: one pass over distinct rows, never reused, never exported."""
        return self.kind == "fresh"

    def stream(self, *label: object) -> KeyedStream:
        """The independent stream for ``label`` (HMAC-SHA256 key derivation, see
        :func:`label_bytes` for the canonical encoding of its parts)."""
        message = STREAM_VERSION + label_bytes(label)
        return KeyedStream(hmac.new(self.key, message, hashlib.sha256).digest())

    def rows(
        self,
        label: Sequence[object],
        row_start: int,
        num_rows: int,
        values: Callable[[], NDArray[np.uint8]],
    ) -> Rows:
        """The noise of ``num_rows`` rows at global positions ``row_start, row_start + 1, ...``
        for the stream ``label``. ``values()`` gives the canonical bytes of each row's value
        (one row of bytes per row); it is only called under a caller's key or a seed, whose
        noise is bound to the value. See :class:`Rows`."""
        if not is_int(row_start) or row_start < 0:
            raise ParameterError(f"row_start must be an integer >= 0, got {shown(row_start)}")
        if not is_int(num_rows) or num_rows < 0:
            raise ParameterError(f"num_rows must be an integer >= 0, got {shown(num_rows)}")
        label = tuple(label)
        if self.is_fresh:
            self._claim(label_bytes(label), int(row_start), int(row_start) + int(num_rows))
            return Rows(self, label, int(row_start), int(num_rows), None)
        encoded = np.ascontiguousarray(values(), dtype=np.uint8)
        if encoded.ndim != 2 or encoded.shape[0] != num_rows:
            raise ParameterError(
                f"values must be one row of bytes per row ({num_rows}), got {encoded.shape}"
            )
        return Rows(self, label, int(row_start), int(num_rows), encoded)

    def _claim(self, label: bytes, start: int, stop: int) -> None:
        """Record that rows ``[start, stop)`` of ``label`` are randomized under this fresh key;
        refuse any of them a second time (they would share noise)."""
        if start == stop:
            return
        with self._lock:
            spans = self._used.setdefault(label, [])
            i = bisect.bisect_right(spans, (start, stop))
            before = spans[i - 1] if i else None
            after = spans[i] if i < len(spans) else None
            if (before and before[1] > start) or (after and after[0] < stop):
                raise NoiseReuseError(
                    f"rows [{start}, {stop}) of one stream were about to be randomized twice "
                    "under one fresh key: their reports would share noise. This is a bug in "
                    "the caller of frameldp.core; nothing was released"
                )
            if before and before[1] == start:
                start = before[0]
                i -= 1
                del spans[i]
            if after and after[0] == stop:
                stop = after[1]
                del spans[i]
            spans.insert(i, (start, stop))

    def __reduce__(self) -> tuple[Callable[[str], RandomSource], tuple[str]]:
        if self.is_fresh:
            raise NoiseReuseError(
                "a fresh frameldp key is never serialized (pickle, plan serialization, a copy "
                "to another process): it exists for one execution in this process"
            )
        return _resolve_reference, (_REGISTRY.handle(self.key, self.kind),)

    def __copy__(self) -> RandomSource:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> RandomSource:
        return self

    def __repr__(self) -> str:
        shown_kind = {
            "fresh": "fresh key",
            "key": "caller's key",
            "seed": "seeded, insecure",
            "memo": "memo key, scheme 3",
        }
        return f"RandomSource(<{shown_kind[self.kind]}>)"


def resolve_source(key: bytes | None = None, seed: int | None = None) -> RandomSource:
    """The source for a call's ``key=`` / ``seed=`` arguments: a fresh key when both are None."""
    if key is not None and seed is not None:
        raise ParameterError("pass at most one of key= and seed=, got both")
    if key is not None:
        if not isinstance(key, bytes | bytearray | memoryview):
            raise ParameterError(f"key must be {KEY_BYTES} bytes, got a {type(key).__name__}")
        return RandomSource.from_key(key)
    if seed is not None:
        return RandomSource.from_seed(seed)
    return RandomSource.fresh()
