"""Non-negative Lasso by accelerated proximal gradient (FISTA), on sparse design matrices."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["nonnegative_lasso"]

FloatArray = NDArray[np.float64]


def nonnegative_lasso(
    design: Any,
    target: FloatArray,
    penalties: FloatArray,
    *,
    tolerance: float = 1e-7,
    max_iterations: int = 5000,
) -> FloatArray:
    """``argmin_{b >= 0} ||target - design b||^2 / 2 + sum_v penalties_v b_v``.

    FISTA [1]_ with the gradient restart of O'Donoghue and Candès [2]_; the step is the inverse of
    ``||design||_2^2``, estimated by power iteration and padded. Stops when an iteration moves
    the solution by less than ``tolerance`` relative to its size. ``design`` is a scipy sparse
    matrix or a dense array; a penalty of 0 leaves that coefficient unpenalized.

    References
    ----------
    .. [1] A. Beck, M. Teboulle, "A Fast Iterative Shrinkage-Thresholding Algorithm for Linear
       Inverse Problems", SIAM J. Imaging Sci. 2(1), 2009.
    .. [2] B. O'Donoghue, E. Candès, "Adaptive Restart for Accelerated Gradient Schemes",
       Found. Comput. Math. 15, 2015.
    """
    columns = design.shape[1]
    step = 1.0 / (1.01 * _squared_norm(design))
    current = np.zeros(columns)
    momentum = current.copy()
    t = 1.0
    for _ in range(max_iterations):
        gradient = design.T @ (design @ momentum - target)
        following = np.maximum(momentum - step * (gradient + penalties), 0.0)
        change = following - current
        if float(np.dot(momentum - following, change)) > 0.0:
            t = 1.0  # the momentum points uphill: restart it
        t_next = (1.0 + math.sqrt(1.0 + 4.0 * t * t)) / 2.0
        momentum = following + ((t - 1.0) / t_next) * change
        current, t = following, t_next
        size = float(np.linalg.norm(current))
        if float(np.linalg.norm(change)) <= tolerance * max(size, 1e-300):
            break
    return current


def _squared_norm(design: Any, iterations: int = 50) -> float:
    """Largest eigenvalue of ``design.T @ design`` (power iteration, from a fixed start)."""
    vector = np.ones(design.shape[1]) / math.sqrt(design.shape[1])
    value = 0.0
    for _ in range(iterations):
        image = design.T @ (design @ vector)
        value = float(np.linalg.norm(image))
        if value == 0.0:
            return 1.0
        vector = image / value
    return value
