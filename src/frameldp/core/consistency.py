"""Consistent distributions from unbiased estimates: non-negative counts that sum to ``n``.

Unbiased estimates of rare buckets are often negative, and their total is ``n`` only in
expectation. Post-processing costs no privacy; each method here trades the unbiasedness of the
raw table for a valid distribution, and the raw table is always kept:

``"norm_sub"``
    Norm-Sub [1]_: set negative estimates to 0 and subtract the same amount from the positive
    ones until they sum to ``n``. Its fixed point is ``max(ĉ_j - δ, 0)`` with the one ``δ`` that
    makes the total ``n``, found here exactly by sorting; it is the Euclidean projection onto
    ``{c >= 0, Σ c = n}`` (Wang et al. prove the two equal). Bias: rare buckets are pulled up to
    0 and frequent ones down by ``δ``; the total squared error never grows (a projection onto a
    convex set holding the truth).
``"simplex"``
    The projection onto the same set in the metric of the estimates' variances,
    ``min Σ (c_j - ĉ_j)^2 / σ_j^2``: ``max(ĉ_j - τ σ_j^2, 0)``, the maximum-likelihood point
    under the estimates' normal approximation. It equals ``norm_sub`` when every bucket has the
    same variance (RAPPOR), and moves the noisier buckets more otherwise (k-RR, OUE, local
    hashing, subset selection, Hadamard response, whose plug-in variances grow with the count).
``"ibu"``
    Iterative Bayesian update [2]_ [3]_: the expectation–maximization fixed point of the
    likelihood of the support counts. A bucket is supported by a report of its own value with
    probability ``p`` and of any other with ``q``; normalized by ``p + (k - 1) q``, that is a
    stochastic channel ``A``, and IBU iterates ``θ ← θ ⊙ Aᵀ(y / Aθ)`` from the uniform
    distribution, ``y`` the observed support shares. For k-RR (one bucket supported per
    report) this is the exact maximum-likelihood estimate; for mechanisms whose reports support
    several buckets it maximizes the composite (per-bucket multinomial) likelihood, as the
    multi-freq-ldpy implementation does [3]_. Each iteration costs ``O(k)``. Bias: shrinks
    towards smooth distributions; usually the smallest error on sparse, skewed data.

Standard errors and intervals of a consistent table are not given (NaN): the projections and
IBU are not linear, and their distribution is not the normal one of the raw table.

References
----------
.. [1] T. Wang, M. Lopuhaä-Zwakenberg, Z. Li, B. Skoric, N. Li, "Locally Differentially
   Private Frequency Estimation with Consistency", NDSS 2020 (Sec. IV, Norm-Sub).
.. [2] R. Agrawal, C. Aggarwal, "On the Design and Quantification of Privacy Preserving Data
   Mining Algorithms", PODS 2001.
.. [3] H. H. Arcolezi, S. Gambs, J.-F. Couchot, C. Palamidessi, "On the Risks of Collecting
   Multidimensional Data Under Local Differential Privacy", PVLDB 16(5), 2023 (IBU as in
   multi-freq-ldpy).
"""

from __future__ import annotations

from typing import Final, Literal

import numpy as np
from numpy.typing import NDArray

from frameldp.errors import ParameterError, shown

__all__ = ["CONSISTENCY_METHODS", "ConsistencyMethod", "consistent_counts", "project_to_simplex"]

ConsistencyMethod = Literal["norm_sub", "simplex", "ibu"]
CONSISTENCY_METHODS: Final = ("norm_sub", "simplex", "ibu")

FloatArray = NDArray[np.float64]

_IBU_TOLERANCE: Final = 1e-12
_IBU_ITERATIONS: Final = 100_000


def project_to_simplex(
    estimates: FloatArray, total: float, weights: FloatArray | None = None
) -> FloatArray:
    """``argmin Σ w_j (c_j - ĉ_j)^2`` over ``{c >= 0, Σ c = total}`` (``w = 1`` by default).

    The minimizer is ``c_j = max(ĉ_j - τ / w_j, 0)``; the total is decreasing and piecewise
    linear in ``τ``, with breakpoints ``ĉ_j w_j``, so sorting them finds ``τ`` exactly.
    """
    values = np.asarray(estimates, dtype=np.float64)
    w = np.ones_like(values) if weights is None else np.asarray(weights, dtype=np.float64)
    if values.size == 0:
        return values.copy()
    breakpoints = values * w
    order = np.argsort(-breakpoints, kind="stable")
    # With the j largest breakpoints active: total = Σ ĉ - τ Σ 1/w over them.
    sums = np.cumsum(values[order])
    inverse = np.cumsum(1.0 / w[order])
    taus = (sums - total) / inverse
    # The active set is the largest j whose own breakpoint stays above its tau.
    valid = breakpoints[order] > taus
    active = int(np.flatnonzero(valid)[-1]) if valid.any() else 0
    tau = taus[active]
    result = np.maximum(values - tau / w, 0.0)
    # Rescale away the float error of the sums so the total is exactly `total` to rounding.
    current = result.sum()
    return result * (total / current) if current > 0 else np.full_like(values, total / values.size)


class _IbuChannel:
    """One IBU problem: the observed support shares ``y`` and the channel ``A`` (module doc)."""

    def __init__(self, support_counts: FloatArray, p: float, q: float) -> None:
        k = support_counts.size
        observed = np.maximum(support_counts, 0.0)
        self.share = observed / observed.sum() if observed.sum() > 0 else np.full(k, 1.0 / k)
        self.spread, self.q, self.scale = p - q, q, p + (k - 1) * q

    def expected(self, theta: FloatArray) -> FloatArray:
        """``A θ``, for ``Σ θ = 1``."""
        return np.asarray((self.spread * theta + self.q) / self.scale, dtype=np.float64)

    def em_step(self, theta: FloatArray) -> FloatArray:
        """``θ ⊙ Aᵀ(y / Aθ)``, normalized."""
        expected = self.expected(theta)
        ratio = np.divide(self.share, expected, out=np.zeros_like(expected), where=expected > 0)
        updated = theta * (self.spread * ratio + self.q * ratio.sum()) / self.scale
        return np.asarray(updated / updated.sum(), dtype=np.float64)

    def log_likelihood(self, theta: FloatArray) -> float:
        """``Σ y_j log (Aθ)_j``, the (composite) log-likelihood EM climbs."""
        observed = self.share > 0
        return float(np.sum(self.share[observed] * np.log(self.expected(theta)[observed])))


def _ibu(support_counts: FloatArray, p: float, q: float) -> FloatArray:
    """The IBU fixed point ``θ`` (a distribution) from support counts (module docstring).

    Plain EM crawls where the maximum has empty buckets (a bucket's share shrinks like 1/t),
    so its steps are accelerated with SQUAREM [4]_ (scheme S3, with the global safeguard):
    from ``θ``, two EM steps give ``r = F(θ) - θ`` and ``v = F(F(θ)) - 2F(θ) + θ``; the point
    ``θ - 2αr + α²v`` with ``α = -‖r‖/‖v‖`` is kept, after one more EM step, when it is a
    distribution and its likelihood is no lower than the double step's; otherwise ``α``
    halves towards ``-1``, where the point is the double EM step itself, which never lowers
    the likelihood. The fixed point is EM's; it stops when an EM step moves no entry by more
    than 1e-12 (or after 100,000 EM steps).

    .. [4] R. Varadhan, C. Roland, "Simple and Globally Convergent Methods for Accelerating
       the Convergence of Any EM Algorithm", Scandinavian Journal of Statistics 35(2), 2008.
    """
    channel = _IbuChannel(support_counts, p, q)
    theta = np.full(support_counts.size, 1.0 / support_counts.size)
    steps = 0
    while steps < _IBU_ITERATIONS:
        once = channel.em_step(theta)
        if np.max(np.abs(once - theta)) < _IBU_TOLERANCE:
            return once
        twice = channel.em_step(once)
        steps += 2
        r = once - theta
        v = twice - once - r
        curvature = float(v @ v)
        alpha = min(-np.sqrt(float(r @ r) / curvature), -1.0) if curvature > 0 else -1.0
        floor = channel.log_likelihood(twice)
        while alpha < -1.0:
            point = theta - 2.0 * alpha * r + alpha * alpha * v
            if np.all(point >= 0.0) and point.sum() > 0:
                point = channel.em_step(point / point.sum())
                steps += 1
                if channel.log_likelihood(point) >= floor:
                    theta = point
                    break
            alpha = min((alpha - 1.0) / 2.0, -1.0)
        else:
            theta = twice
    return theta


def consistent_counts(
    counts: FloatArray,
    n: float,
    method: str,
    *,
    variances: FloatArray | None = None,
    support: tuple[float, float] | None = None,
    at_most: float | None = None,
) -> FloatArray:
    """Non-negative counts summing to ``n`` from the unbiased ``counts`` (module docstring).

    ``variances`` weigh ``"simplex"``; ``support`` (``(p, q)``) is the channel ``"ibu"``
    inverts. With ``at_most`` (a table listing only some strings of an open domain: ``n``;
    set-valued cells of at most ``m`` values: ``m n``) the total may be below it: negatives
    are cleared, and the counts projected onto that total only when they exceed it
    (``"ibu"`` does not apply).
    """
    if method not in CONSISTENCY_METHODS:
        raise ParameterError(
            f"consistent: method must be one of {', '.join(CONSISTENCY_METHODS)}, got "
            f"{shown(method)}"
        )
    estimates = np.asarray(counts, dtype=np.float64)
    if estimates.ndim != 1 or estimates.size == 0:
        raise ParameterError(
            f"consistent: expected a non-empty list of counts, got shape {estimates.shape}"
        )
    if isinstance(n, bool) or not isinstance(n, int | float | np.number) or not 0 < n < 1e300:
        raise ParameterError(f"consistent: n must be a positive count, got {shown(n)}")
    if not np.all(np.isfinite(estimates)) or np.abs(estimates).max() > 1e300:
        raise ParameterError("consistent: the counts must be finite (and below 1e300)")
    weights = None
    if method == "simplex":
        if variances is None or not np.all(np.isfinite(variances)) or np.any(variances <= 0):
            raise ParameterError(
                "consistent('simplex') needs the raw table's positive, finite variances; call it "
                "on the unbiased table"
            )
        weights = 1.0 / np.asarray(variances, dtype=np.float64)
    if at_most is not None:
        if method == "ibu":
            raise ParameterError(
                "consistent('ibu') needs one value's channel per report over a public domain; "
                "this table lists only the strings decoding found, or set-valued cells: use "
                "'norm_sub' or 'simplex'"
            )
        clipped = np.maximum(estimates, 0.0)
        if clipped.sum() <= at_most:
            return clipped
        return project_to_simplex(estimates, float(at_most), weights)
    if method == "ibu":
        if support is None:
            raise ParameterError(
                "consistent('ibu') needs a frequency oracle's channel (P[a report supports its "
                "own bucket], P[... another]); this table's mechanism has none: use 'norm_sub' "
                "or 'simplex'"
            )
        p, q = support
        supports = estimates * (p - q) + n * q
        return _ibu(supports, p, q) * n
    return project_to_simplex(estimates, float(n), weights)
