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

from frameldp.core.randomness.addresses import code_bytes, row_addresses
from frameldp.core.randomness.digests import digests
from frameldp.core.randomness.keys import (
    KEY_BYTES,
    MEMO_KEY_PREFIX,
    RandomSource,
    new_memo_key,
    resolve_source,
)
from frameldp.core.randomness.labels import STREAM_VERSION, label_bytes
from frameldp.core.randomness.rows import Rows
from frameldp.core.randomness.samplers import (
    PLANES,
    PRECISION_BITS,
    bernoulli_flags,
    bernoulli_packed,
    bernoulli_packed_at,
    content_sort_keys,
    dyadic_at_least,
    dyadic_at_most,
    permutation,
    permutation_from_keys,
    sort_keys,
    uniform_integers,
    uniform_integers_at,
    uniform_words,
    uniform_words_at,
)
from frameldp.core.randomness.streams import KeyedStream

__all__ = [
    "KEY_BYTES",
    "MEMO_KEY_PREFIX",
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
    "new_memo_key",
    "permutation",
    "permutation_from_keys",
    "resolve_source",
    "row_addresses",
    "sort_keys",
    "uniform_integers",
    "uniform_integers_at",
    "uniform_words",
    "uniform_words_at",
]
