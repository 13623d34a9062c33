"""Keyed cryptographic randomness, never shared between people.

Every random bit frameldp uses for privacy noise is a pure function of

* a 256-bit **key** — fresh from :mod:`secrets` for every release by default, given by the
  caller (``key=``) to re-run the *same* job on the *same* rows idempotently, or derived from an
  integer ``seed=`` for reproducible tests and simulations (insecure: anyone who knows the seed
  knows the noise);
* a **stream label** — a canonical, type-tagged identity of the column, the mechanism's spec
  and the purpose of the noise (:func:`label_bytes`: the column ``1`` and the column ``"1"``
  differ), so two columns or two mechanisms never share noise;
* the **row** the noise is for: its global position and, under a caller's key or a seed, its
  value (:class:`Rows`).

The stream for a label is AES-256 under ``HMAC-SHA256(key, "frameldp.v2" || label)``.

Who may share noise
-------------------
Two randomizations share noise only when they are the same job re-run on the same row: same
key, same column, same mechanism, same position, same value. Everything else is independent:

* A **fresh key** (the default) is drawn per execution and used for one pass over distinct
  positions: :class:`Rows` refuses a position it has already randomized under a fresh key's
  label (:class:`~frameldp.errors.NoiseReuseError`), whatever the caller does. Its noise is
  addressed by position alone (AES-CTR, the fastest path). It never leaves the process: it
  cannot be pickled, copied into a plan or printed.
* A **caller's key or a seed** is reused on purpose. Its noise is addressed by the row's
  position *and* value: the 16-byte row address is a CBC-MAC of ``(position, length, value)``
  and every noise block of the row is AES of ``address XOR tweak``. A row whose value changed,
  or another person's row at the same position with another value, gets independent noise;
  only an unchanged value at an unchanged position gets the same report (what a re-run is).
  A caller's key is pickled by reference (a random handle valid in this process only), never
  written out.

numpy's PCG64 is never used here: its state can be recovered from its output.

Samplers
--------
:func:`bernoulli_packed` / :func:`bernoulli_flags` (by position, fresh keys)
    Independent Bernoulli(q) bits, bit-packed, for a dyadic ``q = numerator / 2**64`` realized
    *exactly*, eight at a time by the interval algorithm
    (:mod:`frameldp.core.interval_sampler`): two keystream bytes per output byte. Their layout
    may change between versions, since a fresh key's noise is never reproduced.
:func:`bernoulli_packed_at` (by address, a caller's key, a seed, memoized responses)
    The same law by comparing a uniform 64-bit fraction with ``q``, bit-sliced: the first
    :data:`PLANES` bits of every comparison come from whole keystream "planes" combined with
    bitwise operations, and the ``2**-PLANES`` of positions still undecided after them draw
    their remaining bits individually. Its layout is frozen: a caller's key, a seed or a memo
    key re-run with a later version must give the same reports.
:func:`uniform_integers` / :func:`uniform_integers_at`
    Exactly uniform integers in ``[0, k)`` by rejection sampling of 32-bit words.

References
----------
.. [1] NIST SP 800-38A, "Recommendation for Block Cipher Modes of Operation", Sec. 6.5 (CTR).
.. [2] D. Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS 29(1), 2019.
.. [3] M. Bellare, J. Kilian, P. Rogaway, "The Security of the Cipher Block Chaining Message
   Authentication Code", JCSS 61(3), 2000 (CBC-MAC of length-prefixed messages is a PRF).
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import secrets
import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Final, Literal, cast

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from numpy.typing import NDArray

from frameldp.core.interval_sampler import bernoulli_bytes
from frameldp.core.parallel import map_ranges, prefaulted_empty
from frameldp.errors import NoiseReuseError, ParameterError, shown

__all__ = [
    "KEY_BYTES",
    "PLANES",
    "PRECISION_BITS",
    "STREAM_VERSION",
    "KeyedStream",
    "RandomSource",
    "Rows",
    "bernoulli_flags",
    "bernoulli_packed",
    "bernoulli_packed_at",
    "code_bytes",
    "content_sort_keys",
    "digests",
    "dyadic_at_least",
    "dyadic_at_most",
    "label_bytes",
    "permutation",
    "permutation_from_keys",
    "resolve_source",
    "row_addresses",
    "sort_keys",
    "uniform_integers",
    "uniform_integers_at",
]

KEY_BYTES: Final = 32
PRECISION_BITS: Final = 64
"""Realized probabilities are multiples of ``2**-PRECISION_BITS``."""
PLANES: Final = 12
"""Leading comparison bits drawn as whole bit-sliced keystream planes."""
STREAM_VERSION: Final = b"frameldp.v2"
"""Prefix of every stream label: bumped whenever the addressing of reusable noise (caller's
key, seed, memo key) changes; a fresh key's positional layout may change without it."""

_BLOCK: Final = 16
_WORK_BYTES: Final = 1 << 20  # bytes of output per bit-sliced step: stays in L2 cache
_TAIL_LANE: Final = 0xFFFF_FFFF
_PLANE_LANE: Final = 1
_UNIFORM_LANE: Final = 2
_DIRECT_LANE: Final = 3
_DIRECT_BITS: Final = 8  # rows of at most this many bits compare whole 64-bit uniforms
_SEED_PREFIX: Final = b"frameldp.v1.insecure-seed:"

Kind = Literal["fresh", "key", "seed"]
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
        if not _is_int(row_start) or row_start < 0:
            raise ParameterError(f"row_start must be an integer >= 0, got {shown(row_start)}")
        if not _is_int(num_rows) or num_rows < 0:
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
        shown_kind = {"fresh": "fresh key", "key": "caller's key", "seed": "seeded, insecure"}
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
        cls, source: RandomSource, label: tuple[object, ...], pairs: NDArray[np.uint8]
    ) -> Rows:
        """The noise of memoized permanent responses: row ``i`` is addressed by a keyed PRF of
        its ``(user digest, value digest)`` pair (``pairs`` of shape ``(n, 2, 16)``) under the
        stream ``(*label, "memo")``, not by its position. The same person holding the same
        value gets the same noise wherever and whenever the row sits, under the same ``source``
        (the memo key) and ``label``; any other pair gets independent noise."""
        rows = cls(source, label, 0, pairs.shape[0], None)
        rows._addresses = source.stream(*label, "memo").prf(pairs)
        return rows

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
        np.copyto(_checked_out(out, bits.shape), bits)
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


def code_bytes(codes: NDArray[np.int64]) -> NDArray[np.uint8]:
    """Integer codes as canonical value bytes for :meth:`RandomSource.rows` (8, big-endian)."""
    return np.asarray(codes, dtype=">i8").view(np.uint8).reshape(-1, 8)


def row_addresses(
    stream: KeyedStream, rows: NDArray[np.int64], values: NDArray[np.uint8]
) -> NDArray[np.uint8]:
    """16-byte addresses ``CBC-MAC(row || len(value), value)`` of ``(row, value)`` pairs.

    ``values`` holds one row of bytes per row (zero-padded to whole blocks). The first block
    carries the position and the value's length, so messages of different lengths are
    prefix-free and CBC-MAC is a PRF on them [3]_: distinct ``(row, value)`` pairs get
    independent pseudorandom addresses.
    """
    values = np.ascontiguousarray(values, dtype=np.uint8)
    n, length = values.shape
    header = np.zeros((n, 2), dtype=">u8")
    header[:, 0] = np.asarray(rows, dtype=np.int64).astype(np.uint64)
    header[:, 1] = length
    state = stream.encrypt(header.view(np.uint8).reshape(n, _BLOCK))
    blocks = -(-length // _BLOCK)
    if blocks:
        padded = np.zeros((n, blocks * _BLOCK), dtype=np.uint8)
        padded[:, :length] = values
        for b in range(blocks):
            state = stream.encrypt(state ^ padded[:, b * _BLOCK : (b + 1) * _BLOCK])
    return state


class KeyedStream:
    """AES-256 keystream of one label, addressable by (lane, block index)."""

    __slots__ = ("_aes",)

    def __init__(self, subkey: bytes) -> None:
        self._aes = algorithms.AES(subkey)

    def contiguous(self, lane: int, byte_start: int, nbytes: int) -> NDArray[np.uint8]:
        """Keystream bytes ``[byte_start, byte_start + nbytes)`` of ``lane`` (AES-CTR)."""
        first_block, skip = divmod(byte_start, _BLOCK)
        total = skip + nbytes
        counter = (lane << 96 | first_block).to_bytes(_BLOCK, "big")
        buffer = bytearray(total + _BLOCK - 1)
        encryptor = Cipher(self._aes, modes.CTR(counter)).encryptor()
        _check_written(encryptor.update_into(_zeros(total), buffer), total)
        return np.frombuffer(buffer, dtype=np.uint8, count=nbytes, offset=skip)

    def blocks_at(self, lane: int, blocks: NDArray[np.uint64]) -> NDArray[np.uint8]:
        """The 16-byte keystream blocks at the given block indices of ``lane`` (AES-ECB)."""
        counters = np.zeros((blocks.size, 2), dtype=">u8")
        counters[:, 0] = np.uint64(lane) << np.uint64(32)
        counters[:, 1] = blocks
        return self.encrypt(counters.view(np.uint8).reshape(blocks.size, _BLOCK))

    def encrypt(self, blocks: NDArray[np.uint8]) -> NDArray[np.uint8]:
        """AES-256 of each 16-byte row of ``blocks`` (a pseudorandom permutation, ECB)."""
        data = np.ascontiguousarray(blocks, dtype=np.uint8).reshape(-1)
        out = bytearray(data.size + _BLOCK - 1)
        encryptor = Cipher(self._aes, modes.ECB()).encryptor()
        written = encryptor.update_into(data.data, out)
        _check_written(written, data.size)
        return np.frombuffer(out, dtype=np.uint8, count=written).reshape(-1, _BLOCK)

    def prf(self, digests: NDArray[np.uint8]) -> NDArray[np.uint8]:
        """A keyed pseudorandom function of pairs of 16-byte blocks: ``E(E(x) XOR y)``.

        ``digests`` has shape ``(n, 2, 16)``; row ``i`` is the message ``x_i || y_i``. This is
        CBC-MAC on two-block messages, a secure PRF for messages of one fixed length [3]_.
        """
        first = self.encrypt(digests[:, 0, :])
        return self.encrypt(np.bitwise_xor(first, digests[:, 1, :]))


_ZEROS = bytes(0)


def _zeros(nbytes: int) -> memoryview:
    """A read-only zero buffer of exactly ``nbytes``, reused across calls and threads.

    The buffer is read into a local once: a thread that grows the shared one never hands
    another thread a shorter buffer than the one it checked (a short buffer would leave part
    of a keystream unencrypted: zeros, no noise).
    """
    global _ZEROS
    zeros = _ZEROS
    if len(zeros) < nbytes:
        zeros = bytes(max(nbytes, 2 * len(zeros)))
        _ZEROS = zeros
    return memoryview(zeros)[:nbytes]


def _check_written(written: int, expected: int) -> None:
    """AES must have produced every byte asked for: a short write leaves zeros, not noise."""
    if written != expected:
        raise RuntimeError(f"the cipher wrote {written} bytes of {expected}: no noise released")


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


_DIGEST_PERSON: Final = b"frameldp.v1.msg"


def digests(items: Sequence[object]) -> NDArray[np.uint8]:
    """16-byte BLAKE2b digests ``(n, 16)`` of strings, bytes or integers (PRF inputs).

    Types are tagged, so ``"1"`` and ``1`` differ. Any other type raises a ParameterError.
    """
    kinds = {type(item) for item in items}
    if kinds <= {str} or kinds <= {int}:  # one type (no bool): the same digests, 2-3x faster
        tag = "s" if str in kinds else "i"
        messages = (
            [b"s" + cast(str, item).encode("utf-8") for item in items]
            if tag == "s"
            else [b"i%d" % cast(int, item) for item in items]
        )
        blake2b = hashlib.blake2b
        joined = b"".join(
            [blake2b(m, digest_size=_BLOCK, person=_DIGEST_PERSON).digest() for m in messages]
        )
        return np.frombuffer(joined, dtype=np.uint8).reshape(-1, _BLOCK)
    out = bytearray()
    for item in items:
        if isinstance(item, str):
            message = b"s" + item.encode("utf-8")
        elif isinstance(item, bytes):
            message = b"b" + item
        elif isinstance(item, int | np.integer) and not isinstance(item, bool):
            message = b"i" + str(int(item)).encode("ascii")
        else:
            raise ParameterError(
                f"identifiers must be strings, bytes or integers, got {shown(item)} of type "
                f"{type(item).__name__}"
            )
        out += hashlib.blake2b(message, digest_size=_BLOCK, person=_DIGEST_PERSON).digest()
    return np.frombuffer(bytes(out), dtype=np.uint8).reshape(-1, _BLOCK)


def dyadic_at_least(probability: float | Fraction) -> int:
    """Numerator of the smallest multiple of ``2**-64`` that is >= ``probability``."""
    scaled = Fraction(probability) * (1 << PRECISION_BITS)
    return -((-scaled.numerator) // scaled.denominator)


def dyadic_at_most(probability: float | Fraction) -> int:
    """Numerator of the largest multiple of ``2**-64`` that is <= ``probability``."""
    scaled = Fraction(probability) * (1 << PRECISION_BITS)
    return scaled.numerator // scaled.denominator


def bernoulli_packed(
    stream: KeyedStream,
    numerator: int,
    *,
    row_start: int,
    num_rows: int,
    bits_per_row: int,
    out: NDArray[np.uint8] | None = None,
) -> NDArray[np.uint8]:
    """Independent Bernoulli(``numerator / 2**64``) bits, packed ``(num_rows, ceil(bits/8))``,
    written into ``out`` if given (a preallocated array reused across batches: no new pages).

    Bits are packed most significant first (``numpy.packbits`` order); padding bits of the last
    byte of each row are zero. Row ``i`` is the run of bytes ``i * width ...`` of the stream's
    exact Bernoulli bytes (:func:`~frameldp.core.interval_sampler.bernoulli_bytes`, the interval
    algorithm: two keystream bytes per eight bits), so it depends only on (stream, ``i``) and
    any range of rows equals the same rows of a longer range. Ranges of bytes are filled on
    :func:`~frameldp.core.parallel.thread_count` threads with identical results.
    """
    numerator = _check_numerator(numerator)
    width = -(-bits_per_row // 8)
    if out is None:
        out = prefaulted_empty((num_rows, width), np.uint8)
    _fill_bernoulli(
        stream, numerator, row_start * width, _checked_out(out, (num_rows, width)).reshape(-1)
    )
    return _clear_padding(out, bits_per_row)


def _fill_bernoulli(
    stream: KeyedStream, numerator: int, byte_start: int, out: NDArray[np.uint8]
) -> None:
    """Bytes ``byte_start, ...`` of the stream's exact Bernoulli bytes into the flat ``out``,
    in ranges of :data:`_WORK_BYTES` on :func:`~frameldp.core.parallel.thread_count` threads
    (the same bytes for any thread count)."""

    def fill(start: int, stop: int) -> None:
        bernoulli_bytes(stream, numerator, byte_start + start, out[start:stop])

    map_ranges(out.size, _WORK_BYTES, fill)


def _checked_out(out: NDArray[np.uint8], shape: tuple[int, ...]) -> NDArray[np.uint8]:
    """``out`` if it can hold packed rows of ``shape`` in place, else a ParameterError."""
    if (
        not isinstance(out, np.ndarray)
        or out.dtype != np.uint8
        or out.shape != shape
        or not out.flags.c_contiguous
        or not out.flags.writeable
    ):
        found = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise ParameterError(
            f"out must be a writable C-contiguous uint8 array of shape {shape}, got {found}"
        )
    return out


def bernoulli_flags(
    stream: KeyedStream, numerator: int, *, row_start: int, num_rows: int
) -> NDArray[np.bool_]:
    """One Bernoulli(``numerator / 2**64``) flag per row: bit ``r`` of the stream's exact
    Bernoulli bytes is row ``r``'s flag (eight rows per byte, a quarter keystream byte a row)."""
    numerator = _check_numerator(numerator)
    first, last = row_start // 8, -(-(row_start + num_rows) // 8)
    packed = np.empty(last - first, dtype=np.uint8)
    _fill_bernoulli(stream, numerator, first, packed)
    skip = row_start - 8 * first
    return np.unpackbits(packed, count=skip + num_rows)[skip:].view(np.bool_)


def bernoulli_packed_at(
    stream: KeyedStream,
    numerator: int,
    addresses: NDArray[np.uint8],
    *,
    bits_per_row: int,
) -> NDArray[np.uint8]:
    """Like :func:`bernoulli_packed`, but row ``i`` is addressed by a 16-byte ``addresses[i]``.

    The bits of a row are a function of (stream, address) only, wherever the row sits: equal
    addresses give equal bits (re-runs, memoization), distinct addresses independent ones.
    Addresses must be outputs of a PRF (:func:`row_addresses`, :meth:`KeyedStream.prf`), so
    that they never collide in practice. A row's comparison planes are laid out one after the
    other in its own keystream, each plane rounded up to whole 64-bit words, block ``b`` being
    AES of the address XOR the tweak ``(1, b)``; the positions still undecided after the
    planes use the tweak ``(TAIL, bit)``. Rows of at most 8 bits instead compare each bit's own
    uniform 64-bit word (word ``j`` of the blocks with tweaks ``(3, b)``) with the threshold.
    """
    numerator = _check_numerator(numerator)
    addresses = np.ascontiguousarray(addresses, dtype=np.uint8).reshape(-1, _BLOCK)
    num_rows = addresses.shape[0]
    width = -(-bits_per_row // 8)
    out = np.zeros((num_rows, width), dtype=np.uint8)
    if numerator == 1 << PRECISION_BITS:
        out[:] = 0xFF
    elif numerator > 0 and num_rows and bits_per_row <= _DIRECT_BITS:
        # A few bits per row: compare whole 64-bit uniforms, one per bit (fewer bytes than
        # planes rounded up to words).
        draws = _tweaked(stream, addresses, _DIRECT_LANE, -(-bits_per_row // 2))
        uniforms = draws.reshape(num_rows, -1).view(">u8")[:, :bits_per_row]
        out = np.packbits(uniforms < np.uint64(numerator), axis=1)
    elif numerator > 0 and num_rows:
        # Planes after the threshold's last 1 bit are never read.
        planes = min(PLANES, PRECISION_BITS - _trailing_zeros(numerator))
        words = -(-width // 8)
        blocks_per_row = -(-planes * words // 2)
        step = max(1, _WORK_BYTES // width)  # as many output bytes per step as bernoulli_packed
        for first in range(0, num_rows, step):
            chunk = addresses[first : first + step]
            keystream = _tweaked(stream, chunk, _PLANE_LANE, blocks_per_row)
            keystream_words = keystream.view(np.uint64).reshape(chunk.shape[0], -1)
            decided = _compare_rows(
                numerator, keystream_words[:, : planes * words].reshape(-1, planes, words)
            )
            result = decided[0].view(np.uint8)
            _decide_rows_tail(decided, result, bits_per_row, stream, chunk)
            out[first : first + chunk.shape[0]] = result[:, :width]
    return _clear_padding(out, bits_per_row)


def _compare_rows(
    numerator: int, planes: NDArray[np.uint64]
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], int]:
    """The bit-sliced comparison of :func:`_bit_sliced` on ``(rows, planes, words)``: the
    decided-true words, the still-tied words and the threshold bits left after the planes."""
    rows, count, words = planes.shape
    decided = np.zeros((rows, words), dtype=np.uint64)
    undecided = np.full((rows, words), np.iinfo(np.uint64).max, dtype=np.uint64)
    newly = np.empty_like(decided)
    remainder = numerator
    for t in range(count):
        remainder = _compare_plane(numerator, t, planes[:, t, :], decided, undecided, newly)
    return decided, undecided, remainder


def _compare_plane(
    numerator: int,
    t: int,
    zero_bit_of_u: NDArray[np.uint64],
    decided: NDArray[np.uint64],
    undecided: NDArray[np.uint64],
    newly: NDArray[np.uint64],
) -> int:
    """Compare bit ``t`` of every uniform ``U`` with bit ``t`` of the threshold, in place; the
    threshold bits still to compare afterwards.

    A keystream bit of 1 stands for a 0 bit of U (a uniform bit either way), which saves a
    negation per plane.
    """
    if (numerator >> (PRECISION_BITS - 1 - t)) & 1:
        # U has 0 where the threshold has 1: U < q is decided true there.
        np.bitwise_and(undecided, zero_bit_of_u, out=newly)
        decided |= newly
        undecided ^= newly
    else:
        # U has 1 where the threshold has 0: U > q is decided false there.
        undecided &= zero_bit_of_u
    return numerator & ((1 << (PRECISION_BITS - 1 - t)) - 1)


def _decide_rows_tail(
    compared: tuple[NDArray[np.uint64], NDArray[np.uint64], int],
    result: NDArray[np.uint8],
    bits_per_row: int,
    stream: KeyedStream,
    addresses: NDArray[np.uint8],
) -> None:
    """Finish the tied comparisons of :func:`_compare_rows`, one block per (row, bit)."""
    _, undecided, remainder = compared
    if not remainder:
        return
    word_rows, word_cols = np.nonzero(undecided)
    if word_rows.size == 0:
        return
    bits = np.unpackbits(undecided[word_rows, word_cols].view(np.uint8).reshape(-1, 8), axis=1)
    which, offset = np.nonzero(bits)
    row = word_rows[which]
    bit = word_cols[which] * 64 + offset
    keep = bit < bits_per_row
    row, bit = row[keep], bit[keep]
    tweaks = np.zeros((row.size, 2), dtype=">u8")
    tweaks[:, 0] = np.uint64(_TAIL_LANE) << np.uint64(32)
    tweaks[:, 1] = bit.astype(np.uint64)
    draws = stream.encrypt(addresses[row] ^ tweaks.view(np.uint8).reshape(-1, _BLOCK))
    rest = draws[:, :8].copy().view(">u8").ravel() >> np.uint64(PLANES)
    hit = rest < np.uint64(remainder)
    np.bitwise_or.at(result, (row[hit], bit[hit] // 8), (0x80 >> (bit[hit] % 8)).astype(np.uint8))


def _trailing_zeros(numerator: int) -> int:
    return (numerator & -numerator).bit_length() - 1


def _tweaked(
    stream: KeyedStream, addresses: NDArray[np.uint8], lane: int, count: int
) -> NDArray[np.uint8]:
    """``AES(address XOR (lane || b))`` for ``b < count`` of every address: ``(n, count, 16)``."""
    tweaks = np.zeros((count, 2), dtype=">u8")
    tweaks[:, 0] = np.uint64(lane) << np.uint64(32)
    tweaks[:, 1] = np.arange(count, dtype=np.uint64)
    # One 16-byte element per block (complex128 is only a carrier of 16 bytes): a broadcast
    # copy of each address, then one XOR with the tiled tweaks.
    inputs = np.empty((addresses.shape[0], count), dtype=np.complex128)
    inputs[:] = addresses.view(np.complex128)
    words = inputs.view(np.uint64).reshape(addresses.shape[0], 2 * count)
    words ^= tweaks.view(np.uint8).view(np.uint64).ravel()
    return stream.encrypt(inputs.view(np.uint8).reshape(-1, _BLOCK)).reshape(-1, count, _BLOCK)


def uniform_integers_at(
    stream: KeyedStream, k: int, addresses: NDArray[np.uint8]
) -> NDArray[np.int64]:
    """Like :func:`uniform_integers`, but row ``i`` is addressed by ``addresses[i]``.

    Round ``r`` of a row is the block ``AES(address XOR (2 || r))``, four 32-bit words tried in
    order; the first below the largest multiple of ``k`` not exceeding ``2**32`` gives
    ``w mod k`` (rejection keeps every value equally likely).
    """
    if not _is_int(k) or not 1 <= k <= 1 << 32:
        raise ParameterError(f"k must be an integer in [1, 2**32], got {shown(k)}")
    addresses = np.ascontiguousarray(addresses, dtype=np.uint8).reshape(-1, _BLOCK)
    limit = (1 << 32) - (1 << 32) % k
    result = np.zeros(addresses.shape[0], dtype=np.int64)
    pending = np.arange(addresses.shape[0])
    round_ = 0
    while pending.size:
        tweak = np.zeros((1, 2), dtype=">u8")
        tweak[0, 0] = np.uint64(_UNIFORM_LANE) << np.uint64(32)
        tweak[0, 1] = round_
        words = stream.encrypt(addresses[pending] ^ tweak.view(np.uint8)).view("<u4")
        words = words.astype(np.int64)
        accepted = words < limit
        found = accepted.any(axis=1)
        first = accepted.argmax(axis=1)
        chosen = words[np.arange(pending.size), first]
        result[pending[found]] = chosen[found] % k
        pending = pending[~found]
        round_ += 1
    return result


def _check_numerator(numerator: int) -> int:
    """``numerator`` as a Python int in ``[0, 2**64]`` (numpy integers included)."""
    if not _is_int(numerator) or not 0 <= numerator <= 1 << PRECISION_BITS:
        raise ParameterError(f"numerator must be an integer in [0, 2**64], got {shown(numerator)}")
    return int(numerator)


def _clear_padding(packed: NDArray[np.uint8], bits_per_row: int) -> NDArray[np.uint8]:
    if bits_per_row % 8:
        packed[:, -1] &= np.uint8((0xFF << (8 - bits_per_row % 8)) & 0xFF)
    return packed


def sort_keys(stream: KeyedStream, rows: NDArray[np.int64]) -> NDArray[np.uint64]:
    """One 128-bit pseudorandom key per row, as ``(len(rows), 2)`` unsigned words (high, low).

    Row ``r`` takes the 16-byte block ``r`` of lane 1, so a row's key depends only on (stream,
    its global position): batches of a frame get the keys the whole frame would.
    """
    blocks = stream.blocks_at(1, np.asarray(rows, dtype=np.uint64))
    return blocks.view(">u8").reshape(-1, 2).astype(np.uint64)


def content_sort_keys(
    stream: KeyedStream, rows: NDArray[np.int64], content: NDArray[np.uint8]
) -> NDArray[np.uint64]:
    """Like :func:`sort_keys`, but row ``r``'s key is the address of (its position, its
    content): ``row_addresses(stream, rows, content)`` as (high, low) words.

    Under a reused key, two frames whose rows differ are ordered independently (the same
    key never gives two different frames the same permutation, which would let anyone who
    knows one frame's order undo the other's shuffle); the same frame gets the same order.
    """
    addresses = row_addresses(stream, np.asarray(rows, dtype=np.int64), content)
    return addresses.view(">u8").reshape(-1, 2).astype(np.uint64)


def permutation_from_keys(keys: NDArray[np.uint64]) -> NDArray[np.int64]:
    """The order that sorts rows by their keys (:func:`sort_keys`): a uniformly random
    permutation, given that no two of ``n`` independent 128-bit keys collide (probability at
    most ``n^2 / 2^129``)."""
    return np.lexsort((keys[:, 1], keys[:, 0])).astype(np.int64)


def permutation(stream: KeyedStream, n: int) -> NDArray[np.int64]:
    """A keyed uniformly random permutation of ``range(n)``: sort by per-row 128-bit keys."""
    if not _is_int(n) or n < 0:
        raise ParameterError(f"n must be an integer >= 0, got {shown(n)}")
    return permutation_from_keys(sort_keys(stream, np.arange(n, dtype=np.int64)))


def uniform_integers(
    stream: KeyedStream, k: int, *, row_start: int, num_rows: int
) -> NDArray[np.int64]:
    """One exactly uniform integer in ``[0, k)`` per row, for ``1 <= k <= 2**32``.

    Row ``i`` takes the 32-bit word ``w`` at position ``i`` of lane 1 and accepts ``w mod k`` if
    ``w`` is below the largest multiple of ``k`` not exceeding ``2**32``; otherwise round ``r``
    retries with block ``i`` of lane ``1 + r``. Rejection keeps every value equally likely.
    """
    if not _is_int(k) or not 1 <= k <= 1 << 32:
        raise ParameterError(f"k must be an integer in [1, 2**32], got {shown(k)}")
    words = stream.contiguous(1, 4 * row_start, 4 * num_rows).view("<u4")
    limit = (1 << 32) - (1 << 32) % k
    if k == 1 << 32:
        result = words.astype(np.int64)
    else:  # 32-bit division, then widen: half the memory traffic of 64-bit words
        result = np.remainder(words, np.uint32(k)).astype(np.int64)
    pending = np.flatnonzero(words >= limit) if limit < 1 << 32 else np.empty(0, np.int64)
    lane = 2
    while pending.size:
        draws = stream.blocks_at(lane, (row_start + pending).astype(np.uint64))
        retry = draws[:, :4].copy().view("<u4").ravel().astype(np.int64)
        accepted = retry < limit
        result[pending[accepted]] = retry[accepted] % k
        pending = pending[~accepted]
        lane += 1
    return result
