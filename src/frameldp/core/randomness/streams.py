"""AES-256 keystreams: one per stream label, addressable by (lane, block index), and the
block cipher and PRF that address reusable noise. See :mod:`frameldp.core.randomness`.

References
----------
.. [1] NIST SP 800-38A, "Recommendation for Block Cipher Modes of Operation", Sec. 6.5 (CTR).
.. [3] M. Bellare, J. Kilian, P. Rogaway, "The Security of the Cipher Block Chaining Message
   Authentication Code", JCSS 61(3), 2000 (CBC-MAC of length-prefixed messages is a PRF).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

__all__ = ["BLOCK", "KeyedStream", "check_written", "zeros"]


def _ciphers() -> Any:
    """``cryptography.hazmat.primitives.ciphers``, imported when a key is first used (about
    10 ms that ``import frameldp`` need not pay)."""
    from cryptography.hazmat.primitives import ciphers

    return ciphers


BLOCK: Final = 16


class KeyedStream:
    """AES-256 keystream of one label, addressable by (lane, block index)."""

    __slots__ = ("_aes",)

    def __init__(self, subkey: bytes) -> None:
        self._aes = _ciphers().algorithms.AES(subkey)

    def contiguous(self, lane: int, byte_start: int, nbytes: int) -> NDArray[np.uint8]:
        """Keystream bytes ``[byte_start, byte_start + nbytes)`` of ``lane`` (AES-CTR)."""
        first_block, skip = divmod(byte_start, BLOCK)
        total = skip + nbytes
        counter = (lane << 96 | first_block).to_bytes(BLOCK, "big")
        buffer = np.empty(total + BLOCK - 1, dtype=np.uint8)  # every byte written (checked)
        ciphers = _ciphers()
        encryptor = ciphers.Cipher(self._aes, ciphers.modes.CTR(counter)).encryptor()
        check_written(encryptor.update_into(zeros(total), buffer.data), total)
        return buffer[skip : skip + nbytes]

    def blocks_at(self, lane: int, blocks: NDArray[np.uint64]) -> NDArray[np.uint8]:
        """The 16-byte keystream blocks at the given block indices of ``lane`` (AES-ECB)."""
        counters = np.zeros((blocks.size, 2), dtype=">u8")
        counters[:, 0] = np.uint64(lane) << np.uint64(32)
        counters[:, 1] = blocks
        return self.encrypt(counters.view(np.uint8).reshape(blocks.size, BLOCK))

    def encrypt(self, blocks: NDArray[np.uint8]) -> NDArray[np.uint8]:
        """AES-256 of each 16-byte row of ``blocks`` (a pseudorandom permutation, ECB)."""
        data = np.ascontiguousarray(blocks, dtype=np.uint8).reshape(-1)
        out = np.empty(data.size + BLOCK - 1, dtype=np.uint8)  # every byte written (checked)
        ciphers = _ciphers()
        encryptor = ciphers.Cipher(self._aes, ciphers.modes.ECB()).encryptor()
        written = encryptor.update_into(data.data, out.data)
        check_written(written, data.size)
        return out[:written].reshape(-1, BLOCK)

    def prf(self, first: NDArray[np.uint8], second: NDArray[np.uint8]) -> NDArray[np.uint8]:
        """A keyed pseudorandom function of pairs of 16-byte blocks: ``E(E(x) XOR y)``.

        ``first`` and ``second`` have shape ``(n, 16)``; row ``i`` is the message ``x_i ||
        y_i`` (``x_i = first[i]``). This is CBC-MAC on two-block messages, a secure PRF for
        messages of one fixed length [3]_.
        """
        state = self.encrypt(first)
        np.bitwise_xor(state, second, out=state)
        return self.encrypt(state)


_ZEROS = bytes(0)


def zeros(nbytes: int) -> memoryview:
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


def check_written(written: int, expected: int) -> None:
    """AES must have produced every byte asked for: a short write leaves zeros, not noise."""
    if written != expected:
        raise RuntimeError(f"the cipher wrote {written} bytes of {expected}: no noise released")
