"""The exact pure loss of one person's few reports of a memoized unary encoding.

Memoized basic RAPPOR (L-SUE) and memoized optimized unary encoding (L-OUE) encode a value as a
one-hot vector of ``k`` bits, draw a permanent response of every bit once per (person, value)
and memoize it, then flip every bit of it anew for each report [1]_ [2]_. Bit ``j`` of the
permanent response of value ``v`` is 1 with probability ``permanent_one`` when ``j = v`` and
``permanent_zero`` otherwise; a report's bit is its permanent bit flipped with probability
``flip``.

A person holds ``r`` reports of the values ``x = (x_1, ..., x_r)`` (any values, equal or not).
Given ``x``, the bits are independent: bit ``j`` of the ``r`` reports depends only on which
reports share a value (they share its permanent bit) and on which of those values are ``j``.
So for two inputs ``x`` and ``x'`` the largest log-ratio of report probabilities is a sum over
the bits of each bit's largest log-ratio over its ``2^r`` outputs (the maximum of a product of
functions of disjoint coordinates is the product of their maxima). The exact pure loss of ``r``
reports is the largest such sum over every pair of inputs. Pairs are enumerated up to relabeling
of the values (restricted growth strings of length ``2r``): a pair uses ``u`` distinct values,
their ``u`` bits are computed one by one and the other ``k - u`` bits (all zero in both inputs)
alike. A bit that is zero in every value still leaks which reports share a value, which is why
the loss grows with ``k`` when values change.

Beyond the enumerated ``r``, :class:`~frameldp.accounting.MemoizedEvent` composes adaptively:
given any earlier reports, one more report is a mixture of the instantaneous channel over the
posterior of the permanent vectors, and any two such mixtures are within the instantaneous
channel's loss between the worst pair of vectors, ``k`` bit flips. So ``r`` reports cost at most
the exact loss of ``r0`` plus ``r - r0`` times that.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response", CCS 2014 (Sec. 3).
.. [2] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs, "Frequency Estimation of Evolving
   Data Under Local Differential Privacy", EDBT 2023 (arXiv:2210.00262), L-SUE and L-OUE.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting.rounding import pad_up
from frameldp.errors import ParameterError

__all__ = ["EXACT_REPORTS", "unary_memo_losses"]

EXACT_REPORTS = 3
"""How many reports of one person are enumerated exactly (203 pairs of inputs for three, and
each with one of its values taken as the empty set where cells may be empty)."""

# Float error of one log term is below 1e-13 for any probability here; a bit sums at most 2r
# of them per side. This absolute margin per bit covers it many times over.
_MARGIN_PER_BIT = 1e-9


def unary_memo_losses(
    bits: int,
    permanent_one: Fraction,
    permanent_zero: Fraction,
    flip: Fraction,
    reports: int = EXACT_REPORTS,
    *,
    empty: bool = False,
) -> tuple[float, ...]:
    """The exact pure loss (rounded up) of one person holding ``1, 2, ..., reports`` reports
    (module docstring); with ``empty``, an input may also be the empty set, which sets no bit
    (RAPPOR takes set-valued cells of at most one value)."""
    for name, value in (("permanent_one", permanent_one), ("permanent_zero", permanent_zero)):
        if not 0 < value < 1:
            raise ParameterError(f"unary_memo_losses: {name} must be in (0, 1), got {value}")
    if not 0 < flip <= Fraction(1, 2):
        raise ParameterError(f"unary_memo_losses: flip must be in (0, 1/2], got {flip}")
    if not isinstance(bits, int) or bits < 1 or not 1 <= reports <= 4:
        raise ParameterError(
            f"unary_memo_losses: bits must be >= 1 and reports in [1, 4], got {bits}, {reports}"
        )
    values = (float(permanent_one), float(permanent_zero), float(flip))
    return _losses(bits, *values, reports, empty)


@functools.lru_cache(maxsize=256)
def _losses(
    bits: int, one: float, zero: float, flip: float, reports: int, empty: bool
) -> tuple[float, ...]:
    return tuple(_exact(bits, one, zero, flip, r, empty) for r in range(1, reports + 1))


_EMPTY = -2
"""The label of the empty set: it sets no bit (and is no idle bit's "no value", -1)."""


def _exact(bits: int, one: float, zero: float, flip: float, r: int, empty: bool) -> float:
    outputs = np.array(list(itertools.product((0, 1), repeat=r)), dtype=np.int64)
    laws: dict[tuple[tuple[int, bool], ...], NDArray[np.float64]] = {}
    losses: dict[tuple[object, ...], float] = {}

    def bit_loss(first: tuple[int, ...], second: tuple[int, ...], bit: int) -> float:
        """The largest log-ratio of one bit's outputs; bits of one shape are computed once."""
        shapes = (_shape(first, bit), _shape(second, bit))
        if shapes not in losses:
            for shape in shapes:
                if shape not in laws:
                    laws[shape] = _log_prob(outputs, one, zero, flip, shape)
            losses[shapes] = float(np.max(laws[shapes[0]] - laws[shapes[1]]))
        return losses[shapes]

    worst = 0.0
    for labels in _pairs(2 * r, bits + 1 if empty else bits):
        distinct = sorted(set(labels))
        # Each label may stand for a bit's value, or (one of them) for the empty set.
        for blank in [None, *distinct] if empty else [None]:
            used = [label for label in distinct if label != blank]
            if len(used) > bits:
                continue
            named = tuple(_EMPTY if label == blank else label for label in labels)
            first, second = named[:r], named[r:]
            total = math.fsum(bit_loss(first, second, value) for value in used)
            idle = bits - len(used)
            if idle:
                total += idle * bit_loss(first, second, -1)
            worst = max(worst, total)
    return pad_up(worst + bits * _MARGIN_PER_BIT)


def _pairs(length: int, most: int) -> Iterator[tuple[int, ...]]:
    """Restricted growth strings of ``length`` with at most ``most`` labels: every pair of
    inputs up to relabeling of the values."""

    def grow(prefix: tuple[int, ...], top: int) -> Iterator[tuple[int, ...]]:
        if len(prefix) == length:
            yield prefix
            return
        for label in range(min(top + 2, most)):
            yield from grow((*prefix, label), max(top, label))

    yield from grow((), -1)


def _shape(values: tuple[int, ...], bit: int) -> tuple[tuple[int, bool], ...]:
    """What one bit of reports of ``values`` depends on: for each report, which permanent
    vector it shares (values numbered by first appearance) and whether that value sets
    ``bit`` (-1: a bit that no value sets; the value ``_EMPTY`` sets no bit)."""
    groups: dict[int, int] = {}
    return tuple((groups.setdefault(value, len(groups)), value == bit) for value in values)


def _log_prob(
    outputs: NDArray[np.int64],
    one: float,
    zero: float,
    flip: float,
    shape: tuple[tuple[int, bool], ...],
) -> NDArray[np.float64]:
    """Log-probability of every output of one bit over reports of the given ``shape``."""
    total = np.zeros(len(outputs))
    for group in sorted({group for group, _ in shape}):
        rows = [i for i, (held, _) in enumerate(shape) if held == group]
        ones = outputs[:, rows].sum(axis=1)
        zeros = len(rows) - ones
        kept = (1 - flip) ** ones * flip**zeros  # the permanent bit is 1
        flipped = flip**ones * (1 - flip) ** zeros  # it is 0
        start = one if shape[rows[0]][1] else zero
        total += np.log(start * kept + (1 - start) * flipped)
    return total
