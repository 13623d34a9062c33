"""Directed rounding: privacy parameters are always rounded toward the safe side."""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

# Both branches of `log_upper` are accurate to about 2 ulps of the result (argument rounded to
# nearest: <= 1/2 ulp relative; math.log / math.log1p: <= 1 ulp), so moving the result up by
# 4 ulps gives a guaranteed upper bound.
_SAFETY_ULPS = 4


def round_up(value: float, ulps: int = _SAFETY_ULPS) -> float:
    """Return ``value`` moved ``ulps`` units in the last place toward +infinity."""
    for _ in range(ulps):
        value = math.nextafter(value, math.inf)
    return value


def log_upper(ratio: Fraction) -> float:
    """An upper bound on ``ln(ratio)`` for an exact rational ``ratio >= 1``.

    The argument is exact (a ratio of the dyadic probabilities a sampler realizes), so the only
    error is floating point: ``log1p`` below 2 avoids the cancellation of ``ln`` near 1, and the
    result is rounded up so that a reported epsilon is never below the true privacy loss.
    """
    if ratio < 1:
        raise ValueError(f"ratio must be >= 1, got {ratio}")
    if ratio == 1:
        return 0.0
    if ratio < 2:
        raw = math.log1p(float(ratio - 1))
    else:
        # ratio = 2**e * r with r in [1/2, 2]: ln ratio = e ln 2 + ln r, where e ln 2 dominates
        # and |ln r| <= ln 2, so nothing cancels however large the ratio is.
        e = ratio.numerator.bit_length() - ratio.denominator.bit_length()
        scaled = ratio / (Fraction(2) ** e)
        raw = e * math.log(2) + math.log(float(scaled))
    return round_up(raw)


# Privacy numbers computed in floating point (Rényi curves, conversions, privacy-loss sums) carry
# a relative error of a few hundred ulps at worst (the Laplace curve loses about log10(2/epsilon)
# digits to cancellation near order 1). Padding them up by 2**-36 (1.5e-11) relative covers that
# with a wide margin and is invisible at the precision anyone reads an epsilon.
RELATIVE_PAD = 2.0**-36


def pad_up(value: float, relative: float = RELATIVE_PAD) -> float:
    """Move a computed privacy parameter up by a relative margin that covers its rounding error."""
    if math.isnan(value):
        raise ValueError("privacy parameter is NaN")
    if value == 0.0 or math.isinf(value):
        return value
    return round_up(value + abs(value) * relative, 1)


def float_up(value: Fraction) -> float:
    """The smallest float ``>= value`` (exact arithmetic, then one directed step if needed)."""
    nearest = float(value)
    return math.nextafter(nearest, math.inf) if Fraction(nearest) < value else nearest


def sum_up(terms: Iterable[tuple[float, int]]) -> float:
    """``sum(value * count)`` computed exactly and rounded up to a float (``inf`` if any is)."""
    exact = Fraction(0)
    for value, count in terms:
        if math.isinf(value):
            return math.inf
        exact += Fraction(value) * count
    return float_up(exact)
