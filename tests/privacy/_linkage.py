"""The XOR test for linked noise, shared by the privacy-invariant tests.

RAPPOR reports a one-hot vector of ``k`` bits, each flipped independently with probability
``q = Rappor.flip_probability``. Write a report as ``onehot(v) XOR flips``. Two reports share
noise when their flips are equal, and then ``report1 XOR report2 == onehot(v1) XOR onehot(v2)``
in every row. Under independent noise two flips of one bit agree with probability
``a = q1 q2 + (1 - q1)(1 - q2)``, so a row's flips all agree with probability ``p0 = a**k``:
``p0 ~= 0.079`` for ``k = 4`` at epsilon 1 (``q ~= 0.378``). :func:`assert_unlinked` tests the
number of agreeing rows against Binomial(rows, p0) with an exact two-sided test at ``p_fail``.

Power. Noise shared by every row gives ``rows`` agreeing rows, a p-value below
``p0**rows < 1e-3300`` for 3000 rows. Noise shared by a fraction ``s`` of the rows raises the
agreeing fraction to ``p0 + s (1 - p0)``; :func:`detectable_linked_fraction` gives the ``s``
detected with probability 0.99 (5% of 3000 rows at ``p_fail = 1e-6``; checked in
``test_linkage.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from scipy import stats

import frameldp
from _stats import P_FAIL, POWER, assert_binomial
from frameldp.core.encoding import Domain

DOMAIN: Final = ("AA", "DL", "UA", "WN")
"""Public domain of every test column (``k = 4`` bits)."""

EPSILON: Final = 1.0
MECHANISM: Final = frameldp.Rappor(EPSILON, domain=Domain.coerce(list(DOMAIN)))
"""What ``df.ldp.rappor(column, EPSILON, domain=DOMAIN)`` applies."""

ROWS: Final = 3000
"""Rows compared by one XOR test."""

KEY: Final = bytes(range(32))
"""A caller's key (``key=``)."""

_INDEX: Final = {label: i for i, label in enumerate(DOMAIN)}


def ldp(obj: Any) -> Any:
    """The ``.ldp`` methods of a frame, Series, expression, Arrow table or DuckDB relation
    (``frameldp.ldp``)."""
    return frameldp.ldp(obj)


def people(rows: int = ROWS, seed: int = 0) -> list[str]:
    """``rows`` values drawn uniformly from :data:`DOMAIN` (fixed seed)."""
    draws = np.random.default_rng(seed).integers(len(DOMAIN), size=rows)
    return [DOMAIN[i] for i in draws]


def changed(values: Sequence[str], seed: int = 1) -> tuple[list[str], NDArray[np.bool_]]:
    """``values`` with every even row replaced by another label, and the mask of those rows."""
    offsets = np.random.default_rng(seed).integers(1, len(DOMAIN), size=len(values))
    mask = np.arange(len(values)) % 2 == 0
    out = [
        DOMAIN[(_INDEX[v] + int(o)) % len(DOMAIN)] if m else v
        for v, o, m in zip(values, offsets, mask, strict=True)
    ]
    return out, mask


def subset(items: Sequence[Any], rows: NDArray[np.bool_]) -> list[Any]:
    """The items of the rows where ``rows`` is true."""
    return [item for item, keep in zip(items, rows, strict=True) if keep]


def flips(reports: Sequence[bytes], values: Sequence[str], num_bits: int) -> NDArray[np.uint8]:
    """The ``(rows, num_bits)`` noise of RAPPOR reports: their bits XOR ``onehot(values)``
    (``numpy.packbits`` order: bucket ``j`` is bit ``j``)."""
    assert len(reports) == len(values)
    width = -(-num_bits // 8)
    packed = np.frombuffer(b"".join(reports), dtype=np.uint8).reshape(len(reports), width)
    bits = np.unpackbits(packed, axis=1)[:, :num_bits]
    onehot = np.eye(num_bits, dtype=np.uint8)[[_INDEX[v] for v in values]]
    return np.asarray(bits ^ onehot, dtype=np.uint8)


def agreement(first: frameldp.Rappor, second: frameldp.Rappor) -> float:
    """``p0``: probability that independent noise of the two mechanisms agrees on a whole row."""
    q1, q2 = first.flip_probability, second.flip_probability
    assert first.num_bits == second.num_bits
    return float((q1 * q2 + (1 - q1) * (1 - q2)) ** first.num_bits)


def linked_rows(
    first: Sequence[bytes],
    second: Sequence[bytes],
    first_values: Sequence[str],
    second_values: Sequence[str],
    num_bits: int = MECHANISM.num_bits,
) -> NDArray[np.bool_]:
    """Rows where ``report1 XOR report2 == onehot(v1) XOR onehot(v2)`` (the noise agrees)."""
    agree = flips(first, first_values, num_bits) == flips(second, second_values, num_bits)
    return np.asarray(np.all(agree, axis=1))


def assert_unlinked(
    first: Sequence[bytes],
    second: Sequence[bytes],
    first_values: Sequence[str],
    second_values: Sequence[str] | None = None,
    *,
    mechanisms: tuple[frameldp.Rappor, frameldp.Rappor] = (MECHANISM, MECHANISM),
    p_fail: float = P_FAIL,
) -> None:
    """The XOR test: the rows where two series of reports have equal noise number
    Binomial(rows, p0), as for independent noise (exact two-sided test at ``p_fail``)."""
    second_values = first_values if second_values is None else second_values
    linked = linked_rows(first, second, first_values, second_values, mechanisms[0].num_bits)
    assert_binomial(linked.sum(), linked.size, agreement(*mechanisms), p_fail=p_fail)


def detectable_linked_fraction(
    rows: int, p0: float, p_fail: float = P_FAIL, power: float = POWER
) -> float:
    """Smallest fraction (in steps of 0.1%) of rows with shared noise that the XOR test detects
    with ``power``: the upper critical count of Binomial(rows, p0) at ``p_fail / 2`` is exceeded
    with probability ``power`` when the agreeing fraction is ``p0 + s (1 - p0)``."""
    critical = stats.binom.isf(p_fail / 2, rows, p0)
    for permille in range(1, 1001):
        fraction = permille / 1000
        if stats.binom.sf(critical, rows, p0 + fraction * (1 - p0)) >= power:
            return fraction
    return 1.0
