"""Probabilities of noise, rounded toward more noise onto the samplers' dyadic grid."""

from __future__ import annotations

import math
from typing import Final

from frameldp.core.randomness import dyadic_at_least

__all__ = ["FLOAT_MARGIN", "is_prime", "noise_numerator"]

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


def is_prime(value: int) -> bool:
    """Whether ``value`` is prime (trial division: hash bucket counts are small)."""
    if value < 2:
        return False
    if value % 2 == 0:
        return value == 2
    return all(value % d for d in range(3, math.isqrt(value) + 1, 2))
