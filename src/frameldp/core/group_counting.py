"""Histograms and per-bit sums of many groups of rows in one pass (numpy only).

The statistics of a frequency oracle are a histogram of integer codes (k-RR, Hadamard
response) or the per-bit sums of packed bit reports (RAPPOR, OUE, subset selection). Of every
group of rows at once, they are a histogram of ``(group, code)`` pairs and per-bit sums of the
rows ordered by group (:mod:`frameldp.core.group_statistics` says where they are used).
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

__all__ = ["group_bincount", "group_bit_sums", "group_sizes"]

# Unpacked bytes per block of rows in group_bit_sums (8 MiB).
_UNPACKED_BYTES: Final = 1 << 23


def group_sizes(groups: NDArray[np.int64], num_groups: int) -> NDArray[np.int64]:
    """The rows of each group."""
    return np.bincount(groups, minlength=num_groups).astype(np.int64, copy=False)


def group_bincount(
    codes: NDArray[np.int64], groups: NDArray[np.int64], num_groups: int, size: int
) -> NDArray[np.int64]:
    """``(num_groups, size)``: how many rows of each group hold each code in ``[0, size)``."""
    pairs = groups.astype(np.int64, copy=False) * size + codes
    counts = np.bincount(pairs, minlength=num_groups * size)
    return counts.astype(np.int64, copy=False).reshape(num_groups, size)


def group_bit_sums(
    packed: NDArray[np.uint8], groups: NDArray[np.int64], num_groups: int, num_bits: int
) -> NDArray[np.int64]:
    """``(num_groups, num_bits)``: each group's per-bit totals of packed report rows
    (``numpy.unpackbits`` order; the caller checks the padding bits,
    :func:`~frameldp.core.encoding.check_padding`).

    The rows are ordered by group and unpacked a block at a time; each group's run of rows
    within a block is summed by ``numpy.add.reduceat``, so memory is one block of unpacked
    rows besides the ``(num_groups, num_bits)`` totals."""
    totals = np.zeros((num_groups, num_bits), dtype=np.int64)
    rows = packed.shape[0]
    if rows == 0:
        return totals
    order = np.argsort(groups, kind="stable")
    ordered = groups[order]
    block = max(1, _UNPACKED_BYTES // max(1, 8 * packed.shape[1]))
    for start in range(0, rows, block):
        chosen = order[start : start + block]
        bits = np.unpackbits(packed[chosen], axis=1, count=num_bits)
        keys = ordered[start : start + block]
        runs = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        # Each group has one run in a block (the rows are sorted): the rows of `totals` set
        # here are distinct.
        totals[keys[runs]] += np.add.reduceat(bits, runs, axis=0, dtype=np.int64)
    return totals
