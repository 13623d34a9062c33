"""Several columns of one person under one budget: split it, sample one column, or sample one
and fill the others with fake reports. The exact variances that choose among them.

A person holds ``d`` categorical columns, column ``j`` privatized by a frequency oracle whose
report supports its own bucket with probability ``p`` and any other with ``q`` (Wang et al.
2017), over ``k`` buckets; ``n`` people; ``f`` a bucket's true share.

``split``
    Every column reported, each through its own mechanism: a person loses their composition
    (the caller gives column ``j`` its share of the budget, ``eps / d`` each for an even split).
    A debiased count has variance ``n (f p (1 - p) + (1 - f) q (1 - q)) / (p - q)^2``.
``sample``
    Each person reports one column, chosen uniformly under the release's key, and the others
    are null (Wang et al., ICDE 2019 [1]_; "Smp" of [2]_): a person loses the largest column's
    epsilon (:class:`~frameldp.accounting.SampledEvent`), so each column can run at the whole
    budget. Column ``j``'s count comes from its ``m`` reporters, scaled to ``n``:
    ``N = (n / m) (C - m q) / (p - q)``. Given ``m`` (a simple random sample of the ``n``
    people), its variance is ``(n^2 / m) A + n^2 f (1 - f) (n - m) / (m (n - 1))``, with
    ``A = (f p (1 - p) + (1 - f) q (1 - q)) / (p - q)^2``: the mechanism's noise over ``m``
    reports and the sampling of who reported.
``sample+fake``
    As ``sample``, and every other column holds the mechanism's report of a value drawn from a
    public law ``pi`` (uniform: "RS+FD" [2]_; a prior: "RS+RFD" [3]_). Each column's reports
    are then real with probability ``1 / d``: with ``t = pi p + (1 - pi) q`` (a fake report's
    chance of supporting the bucket), ``N = d (C - n q) / (p - q) - (d - 1) n pi``, and
    ``Var N = d^2 (c P1 (1 - P1) + (n - c) P0 (1 - P0)) / (p - q)^2`` with
    ``P1 = p / d + (1 - 1/d) t``, ``P0 = q / d + (1 - 1/d) t``. The fake reports are a
    post-processing of the sample, so a person loses at most what ``sample`` states, and with
    equal epsilons exactly that: the amplified ``eps' = ln(d (e^eps - 1) + 1)`` of [2]_ holds
    for one column changed, the others fixed, not for a person whose every column may differ
    (:mod:`frameldp.accounting.events.sampled`). The fakes hide which column was real (one
    column, given the others, loses ``ln(1 + (e^eps - 1) / d)`` under k-ary randomized response
    with uniform fakes) at about ``d`` times ``sample``'s variance (5.0 to 5.5 times for
    ``d = 5`` under k-ary randomized response and optimized unary encoding).

:func:`total_variance` adds the variance of every bucket's share over every column, per person
(``n`` times the variance of the shares, as ``n`` grows), at a uniform ``f``: the largest over
distributions for ``sample`` and ``sample+fake`` (``f (1 - f)`` and ``P (1 - P)`` are concave),
and ``split``'s does not depend on ``f``.

References
----------
.. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin, G. Yu, "Collecting and
   Analyzing Multidimensional Data with Local Differential Privacy", ICDE 2019.
.. [2] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao, "Random Sampling Plus Fake Data:
   Multidimensional Frequency Estimates With Local Differential Privacy", CIKM 2021.
.. [3] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao, "Improving the Utility of Locally
   Differentially Private Protocols for Longitudinal and Multidimensional Frequency Estimates",
   Digital Communications and Networks, 2022.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from frameldp.errors import ParameterError, shown

__all__ = [
    "STRATEGIES",
    "Collection",
    "OracleNoise",
    "Strategy",
    "check_prior",
    "fake_support",
    "sample_count_variance",
    "sample_fake_count_variance",
    "split_count_variance",
    "total_variance",
]

Strategy = Literal["split", "sample", "sample+fake"]
STRATEGIES: Final[tuple[Strategy, ...]] = ("split", "sample", "sample+fake")

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class OracleNoise:
    """What the variances need of a frequency oracle: its realized ``(p, q)`` over ``k``."""

    p: float
    q: float
    k: int

    @classmethod
    def of(cls, mechanism: Any) -> OracleNoise:
        """From a frequency oracle's ``support_probabilities`` and categories."""
        p, q = mechanism.support_probabilities
        return cls(float(p), float(q), len(mechanism.categories))

    def per_report(self, share: FloatArray | float) -> Any:
        """``A = (f p (1 - p) + (1 - f) q (1 - q)) / (p - q)^2``: one report's variance."""
        p, q = self.p, self.q
        return (share * p * (1 - p) + (1 - share) * q * (1 - q)) / (p - q) ** 2


def split_count_variance(noise: OracleNoise, counts: FloatArray, n: int) -> FloatArray:
    """``Var N`` of each bucket's debiased count when all ``n`` people report the column."""
    return np.asarray(n * noise.per_report(counts / n), dtype=np.float64)


def sample_count_variance(
    noise: OracleNoise, shares: FloatArray, n: int, reporters: int
) -> FloatArray:
    """``Var N`` of each bucket's count scaled to ``n`` from ``reporters`` sampled people."""
    if not 0 < reporters <= n:
        raise ParameterError(f"reporters must be in 1..n = {n}, got {shown(reporters)}")
    noise_part = n * n / reporters * noise.per_report(shares)
    if n < 2:
        return np.asarray(noise_part, dtype=np.float64)
    sampling = n * n * shares * (1 - shares) * (n - reporters) / (reporters * (n - 1))
    return np.asarray(noise_part + sampling, dtype=np.float64)


def fake_support(noise: OracleNoise, prior: FloatArray) -> FloatArray:
    """``t = pi p + (1 - pi) q``: the chance a fake report supports each bucket."""
    return np.asarray(prior * noise.p + (1 - prior) * noise.q, dtype=np.float64)


def sample_fake_count_variance(
    noise: OracleNoise, shares: FloatArray, n: int, columns: int, prior: FloatArray
) -> FloatArray:
    """``Var N`` of each bucket's count when each of ``n`` reports is real with probability
    ``1 / columns`` and otherwise a fake report of a value drawn from ``prior``."""
    d = columns
    t = fake_support(noise, prior)
    real, other = noise.p / d + (1 - 1 / d) * t, noise.q / d + (1 - 1 / d) * t
    spread = shares * real * (1 - real) + (1 - shares) * other * (1 - other)
    return np.asarray(d * d * n * spread / (noise.p - noise.q) ** 2, dtype=np.float64)


def total_variance(
    strategy: Strategy, noises: Sequence[OracleNoise], priors: Sequence[FloatArray] | None = None
) -> float:
    """The variance of every bucket's share, added over buckets and columns, per person (``n``
    times it as ``n`` grows), at uniform shares; ``noises[j]`` is column ``j``'s mechanism as
    it runs under ``strategy``, ``priors[j]`` its fake-data law (uniform when None)."""
    d = len(noises)
    if d < 2:
        raise ParameterError(f"a collection strategy needs two or more columns, got {d}")
    total = 0.0
    for j, noise in enumerate(noises):
        shares = np.full(noise.k, 1.0 / noise.k)
        if strategy == "split":
            total += float(np.sum(noise.per_report(shares)))
        elif strategy == "sample":
            total += float(np.sum(d * noise.per_report(shares) + (d - 1) * shares * (1 - shares)))
        elif strategy == "sample+fake":
            prior = shares if priors is None or priors[j] is None else priors[j]
            total += float(np.sum(sample_fake_count_variance(noise, shares, 1, d, prior)))
        else:
            raise ParameterError(f"collect must be one of {STRATEGIES}, got {shown(strategy)}")
    return total


@dataclass(frozen=True)
class Collection:
    """How one column was collected with the other columns of its people: the ``strategy``,
    the ``columns`` collected together (in the order the release drew them), and for
    ``sample+fake`` the public law of each column's fake values over its buckets (``priors``,
    one per column, in the order of ``columns``: RS+RFD [3]_; uniform where None: RS+FD)."""

    strategy: Strategy
    columns: tuple[str, ...]
    priors: tuple[tuple[float, ...] | None, ...] | None = None

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES[1:]:
            raise ParameterError(
                f"collect must be one of {STRATEGIES[1:]} for a recorded collection, got "
                f"{shown(self.strategy)}"
            )
        if len(self.columns) < 2 or len(set(self.columns)) < len(self.columns):
            raise ParameterError(
                f"a collection needs two or more distinct columns, got {shown(self.columns)}"
            )
        if self.priors is None:
            return
        if self.strategy != "sample+fake" or len(self.priors) != len(self.columns):
            raise ParameterError(
                f"a collection's priors are one per column of collect='sample+fake', got "
                f"{shown(self.priors)} for {self.strategy!r} over {len(self.columns)} columns"
            )
        for column, prior in zip(self.columns, self.priors, strict=True):
            if prior is not None:
                check_prior(prior, column)

    @property
    def d(self) -> int:
        """The number of columns, one of which each person reports."""
        return len(self.columns)

    def law(self, column: str, k: int) -> FloatArray:
        """The law of ``column``'s fake values over its ``k`` buckets."""
        prior = None if self.priors is None else self.priors[self.columns.index(column)]
        if prior is None:
            return np.full(k, 1.0 / k)
        if len(prior) != k:
            raise ParameterError(
                f"column {shown(column)}: its recorded fake-data prior has {len(prior)} "
                f"buckets, its mechanism {k}"
            )
        return np.asarray(prior, dtype=np.float64)

    def to_spec(self) -> dict[str, Any]:
        """The JSON form a report column's spec records under ``"collection"``."""
        return {
            "strategy": self.strategy,
            "columns": list(self.columns),
            "priors": None
            if self.priors is None
            else [None if p is None else list(p) for p in self.priors],
        }

    @classmethod
    def from_spec(cls, data: Any) -> Collection:
        """Rebuild from :meth:`to_spec`."""
        if not isinstance(data, dict) or set(data) - {"column"} != {
            "strategy",
            "columns",
            "priors",
        }:
            raise ParameterError(f"a recorded collection is malformed: {shown(data)}")
        priors = data["priors"]
        if priors is not None and not isinstance(priors, list):
            raise ParameterError(f"a recorded collection's priors are malformed: {shown(priors)}")
        return cls(
            data["strategy"],
            tuple(str(c) for c in data["columns"]),
            None if priors is None else tuple(_recorded_prior(p) for p in priors),
        )


def check_prior(prior: Sequence[float], column: str) -> tuple[float, ...]:
    """A fake-data law: finite shares >= 0 over the buckets, adding up to 1 (within float
    error); refused naming ``column`` otherwise."""
    shares = np.asarray(prior, dtype=np.float64)
    if shares.ndim != 1 or shares.size < 2 or not np.all(np.isfinite(shares)):
        raise ParameterError(
            f"column {shown(column)}: fake_prior must be finite shares, got {shown(list(prior))}"
        )
    if np.any(shares < 0) or abs(math.fsum(shares) - 1.0) > 1e-9:
        raise ParameterError(
            f"column {shown(column)}: fake_prior shares must be >= 0 and add up to 1, got "
            f"{shown(list(prior))}"
        )
    return tuple(float(s) for s in shares)


def _recorded_prior(prior: Any) -> tuple[float, ...] | None:
    if prior is None:
        return None
    if not isinstance(prior, list) or not all(
        isinstance(p, (int, float)) and not isinstance(p, bool) for p in prior
    ):
        raise ParameterError(f"a recorded fake-data prior is malformed: {shown(prior)}")
    try:
        return tuple(float(p) for p in prior)
    except OverflowError:  # an integer beyond any float
        raise ParameterError(f"a recorded fake-data prior is malformed: {shown(prior)}") from None
