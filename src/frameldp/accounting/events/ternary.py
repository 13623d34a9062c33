r"""Events of the frequency oracles whose worst-case privacy loss takes three values.

Optimized unary encoding, subset selection and Hadamard response are, like k-ary randomized
response, mechanisms whose privacy loss between two inputs ``x != x'`` is ``+epsilon``,
``-epsilon`` or 0, in proportions ``e^epsilon : 1 : w`` under ``x`` (the proportion of the first
two is ``e^epsilon`` for every epsilon-DP mechanism of this kind; ``w``, the *neutral weight*, is
the mechanism's own). Every pair of distinct inputs is a relabelling of every other, so that
pair is the worst case and its curves are exact:

* Rényi divergence ``1/(a-1) ln((e^{a eps} + e^{(1-a) eps} + w) / (e^eps + 1 + w))``, the
  k-ary RR curve with ``k = w + 2`` [1]_ [2]_;
* zCDP ``rho = sup_a RDP(a) / a`` (numerically, never above ``eps tanh(eps/2)`` [3]_);
* the privacy-loss distribution on the lattice ``{-1, 0, 1} epsilon``
  (:meth:`~frameldp.accounting.PrivacyLossDistribution.three_atom`).

Derivations (the realized probabilities, not the nominal ones; ``x`` the first input, ``x'``
the second, ``k`` the domain size):

* **Optimized unary encoding** [4]_: bit ``x`` of the report is 1 with probability ``1/2``,
  every other bit with ``q``. The two inputs' reports differ in law at bits ``x`` and ``x'``
  only: the loss is ``ln(1/(2q)) + ln(2q) = 0`` (both bits 1, probability ``q/2``),
  ``ln(1/(2q)) + ln(2(1-q)) = ln((1-q)/q) = epsilon`` (``(1-q)/2``), ``-epsilon`` (``q/2``) and
  0 (both 0, ``(1-q)/2``). So ``P[loss 0] = 1/2`` and ``w = e^epsilon + 1``. OUE is asymmetric
  in its bits, but the *pair* is symmetric (swapping ``x`` and ``x'`` swaps the two bits), so
  ``D_a(P||Q) = D_a(Q||P)``.
* **Hadamard response** [5]_: ``y`` is uniform on the half ``C_x`` of ``[K]`` where row ``x + 1``
  of the Sylvester–Hadamard matrix is +1, with probability ``p = e^epsilon / (e^epsilon + 1)``,
  else uniform on the other half. Two rows other than row 0 agree on exactly half of the
  columns, so ``|C_x ∩ C_x'| = K/4``: the loss is ``+epsilon`` on ``C_x \ C_x'`` (probability
  ``p/2``), ``-epsilon`` on ``C_x' \ C_x`` (``(1-p)/2``) and 0 elsewhere (``1/2``):
  ``w = e^epsilon + 1``, the loss of OUE.
* **Block Hadamard response** [5]_ (their Sec. 5): ``B`` blocks of ``b`` outputs, ``C_x`` the
  ``s = b/2`` outputs of ``x``'s block where its Hadamard row is +1, ``P[y in C_x] = p``. Two
  values of different blocks have disjoint ``C``: ``+epsilon`` with probability ``p``,
  ``-epsilon`` with ``(1-p) s/(B b - s)``, so ``w = (B b - 2s)/s = 2B - 2``. Two values of one
  block share ``s/2`` outputs, ``w = e^epsilon + 4B - 3``: that pair is the first mixed with a
  common part (a garbling), so the first is the worst case. ``B = 1`` is Hadamard response.
* **Subset selection** [6]_ [7]_: a subset of ``d`` of the ``k`` values contains ``x`` with
  probability ``p = d e^epsilon / (d e^epsilon + k - d)`` and is otherwise uniform. The loss is
  ``+epsilon`` when it holds ``x`` but not ``x'`` (``p (k-d)/(k-1)``), ``-epsilon`` when it
  holds ``x'`` but not ``x`` (``(1-p) d / (k-1)``) and 0 otherwise, so
  ``w = e^epsilon (d - 1)/(k - d) + (k - 1 - d)/d`` (``d = 1`` is k-RR: ``w = k - 2``).

* **Projective geometry response** [8]_: ``h`` is a hyperplane of ``P^(t-1)(F_q)`` (``K``
  points, ``D`` per hyperplane, ``D_2`` through two points), through ``x`` with probability
  ``p = D e^epsilon / (D e^epsilon + K - D)`` (uniform among those ``D``), else uniform among
  the ``K - D`` missing ``x``. The loss is ``+epsilon`` on hyperplanes through ``x`` but not
  ``x'`` (``p (D - D_2)/D``), ``-epsilon`` on those through ``x'`` but not ``x``
  (``(1-p)(D - D_2)/(K - D)``) and 0 otherwise, so
  ``w = (e^epsilon D_2 + K - 2D + D_2)/(D - D_2)``; any two points are alike (a linear map
  takes any pair to any other). ``t = 2`` is k-RR over ``K = q + 1`` values (``w = K - 2``).

* **Local hashing** [4]_: a public seed picks ``h`` from a family in which every pair of values
  collides with probability exactly ``1/g``, then ``y`` is k-ary RR over ``g`` buckets applied
  to ``h(x)`` (``p = e^eps / (e^eps + g - 1)``, ``q = 1 / (e^eps + g - 1)``). Under a colliding
  seed the loss is 0; otherwise it is ``+eps`` (``y = h(x)``), ``-eps`` (``y = h(x')``) or 0.
  So ``P[+eps] = (1 - 1/g) p``, ``P[-eps] = (1 - 1/g) q`` and
  ``w = (g - 1) + e^eps / (g - 1)``, below the ``g - 2`` of k-ary RR over ``g`` buckets:
  collisions make local hashing more private than the RR it runs.

Rounding: each mechanism realizes its probabilities toward more noise and states the epsilon of
what it realized, rounded up; a larger epsilon with its own ``w`` describes a mechanism of which
the realized one is a garbling (mix its output with a uniform one), so the curves stay upper
bounds. ``w`` is computed in floating point and rounded *down* (less neutral mass is a less
private pair).

References
----------
.. [1] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy",
   ICML 2015.
.. [2] I. Mironov, "Rényi Differential Privacy", CSF 2017.
.. [3] T. Steinke, "Tight bounds on converting pure DP to zCDP", differentialprivacy.org, 2024.
.. [4] T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for
   Frequency Estimation", USENIX Security 2017 (Sec. 4.4).
.. [5] J. Acharya, Z. Sun, H. Zhang, "Hadamard Response: Estimating Distributions Privately,
   Efficiently, and with Little Communication", AISTATS 2019 (Sec. 4).
.. [6] M. Ye, A. Barg, "Optimal Schemes for Discrete Distribution Estimation under Locally
   Differential Privacy", IEEE Trans. Inf. Theory 64(8), 2018.
.. [7] S. Wang, L. Huang, P. Wang, Y. Nie, H. Xu, W. Yang, X.-Y. Li, C. Qiao, "Mutual
   Information Optimally Local Private Discrete Distribution Estimation", arXiv:1607.08025, 2016.
.. [8] V. Feldman, J. Nelson, H. Nguyen, K. Talwar, "Private Frequency Estimation via
   Projective Geometry", ICML 2022.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from frameldp.accounting.blanket import Blanket, set_blanket
from frameldp.accounting.events.base import (
    PrivacyEvent,
    check_count,
    check_order,
    check_positive,
)
from frameldp.accounting.events.curves import kary_rho, pure_rho, rr_rdp
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.rounding import pad_up
from frameldp.errors import ParameterError

__all__ = [
    "BlockHadamardResponseEvent",
    "HadamardResponseEvent",
    "LocalHashingEvent",
    "OptimizedUnaryEncodingEvent",
    "ProjectiveGeometryEvent",
    "SubsetSelectionEvent",
    "TernaryLossEvent",
]

# Relative amount by which a neutral weight computed in floating point is lowered: far above
# the few-ulp error of the expressions below, so the pair accounted is never more private than
# the exact one.
_WEIGHT_MARGIN = 2.0**-40


# Beyond this epsilon e^epsilon leaves the float range: weights are capped (the safe side) and
# rho and the loss distribution are those of binary RR (which dominates every eps-DP pair).
_HUGE = 700.0


def _exp_down(epsilon: float) -> float:
    """``e^epsilon``, capped below the float range (a smaller weight is the safe side)."""
    return math.exp(min(epsilon, _HUGE))


class TernaryLossEvent(PrivacyEvent):
    """A pure epsilon-DP use whose worst-case loss is ``+eps, -eps, 0`` in proportions
    ``e^eps : 1 : neutral_weight`` (see the module docstring for each mechanism's weight)."""

    epsilon: float

    @property
    @abstractmethod
    def _exact_weight(self) -> float:
        """The neutral weight ``w`` in floating point, before rounding down."""

    @property
    def neutral_weight(self) -> float:
        """``w = P[loss 0] / P[loss -eps]`` under the first input, rounded down."""
        return max(0.0, self._exact_weight * (1.0 - _WEIGHT_MARGIN))

    @property
    def pure_epsilon(self) -> float:
        """``epsilon``."""
        return self.epsilon

    def rdp(self, order: float) -> float:
        """The exact Rényi divergence: the k-ary RR curve at ``k = w + 2``."""
        order = check_order("rdp", "order", order)
        if math.isinf(order):
            return self.epsilon
        return pad_up(rr_rdp(order, self.epsilon, self.neutral_weight + 2.0))

    @property
    def rho(self) -> float:
        """The numerical ``sup_a RDP(a) / a``, never above ``eps tanh(eps / 2)``."""
        if self.epsilon == 0.0 or self.neutral_weight == 0.0 or self.epsilon > _HUGE:
            return pure_rho(self.epsilon)
        return kary_rho(self.epsilon, self.neutral_weight + 2.0)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Exact: the ``count``-fold composition of the three-atom loss (beyond
        ``epsilon = 700``, binary RR's, which dominates every epsilon-DP mechanism)."""
        if self.epsilon > _HUGE:
            return PrivacyLossDistribution.randomized_response(self.epsilon, 2, count).dominated()
        return PrivacyLossDistribution.three_atom(self.epsilon, self.neutral_weight, count)


def _epsilon(owner: str, value: Any) -> float:
    return check_positive(owner, "epsilon", value, allow_zero=True)


@dataclass(frozen=True)
class OptimizedUnaryEncodingEvent(TernaryLossEvent):
    """Optimized unary encoding at ``epsilon = ln((1 - q) / q)`` (the bit of the true value
    kept with probability 1/2): the loss is 0 with probability 1/2, else binary RR at epsilon."""

    epsilon: float
    kind: ClassVar[str] = "optimized_unary_encoding"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _epsilon("OUE event", self.epsilon))

    @property
    def _exact_weight(self) -> float:
        return _exp_down(self.epsilon) + 1.0

    def parameters(self) -> dict[str, Any]:
        """``epsilon``."""
        return {"epsilon": self.epsilon}

    def blankets(self) -> tuple[Blanket, ...]:
        """Reports whose bits are independent ``Bernoulli(q)`` (``q = 1 / (e^eps + 1)``) lie
        below every value's, with each value's bit weighing ``e^eps`` more when set: a
        blanket report supports a value with probability ``q``, two with ``q^2``."""
        q = 1.0 / (_exp_down(self.epsilon) + 1.0)
        return set_blanket(self.epsilon, q, q * q)


@dataclass(frozen=True)
class HadamardResponseEvent(TernaryLossEvent):
    """Hadamard response at ``epsilon`` (``y`` in the true value's half of the Hadamard columns
    with probability ``e^eps / (e^eps + 1)``): the loss of OUE (``w = e^eps + 1``)."""

    epsilon: float
    kind: ClassVar[str] = "hadamard_response"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _epsilon("Hadamard response event", self.epsilon))

    @property
    def _exact_weight(self) -> float:
        return _exp_down(self.epsilon) + 1.0

    def parameters(self) -> dict[str, Any]:
        """``epsilon``."""
        return {"epsilon": self.epsilon}

    def blankets(self) -> tuple[Blanket, ...]:
        """Uniform columns lie below every value's law, its half weighing ``e^eps`` more: a
        blanket column supports a value with probability 1/2, two values (rows agreeing on
        half the columns) with 1/4."""
        return set_blanket(self.epsilon, 0.5, 0.25)


@dataclass(frozen=True)
class BlockHadamardResponseEvent(TernaryLossEvent):
    """Block Hadamard response at ``epsilon`` over ``blocks`` blocks: values of two blocks have
    disjoint supports (``w = 2 blocks - 2``), the worst pair; one block is Hadamard response
    (``w = e^eps + 1``)."""

    epsilon: float
    blocks: int
    kind: ClassVar[str] = "block_hadamard_response"

    def __post_init__(self) -> None:
        owner = "block Hadamard response event"
        object.__setattr__(self, "epsilon", _epsilon(owner, self.epsilon))
        object.__setattr__(self, "blocks", check_count(owner, "blocks", self.blocks, 1))

    @property
    def _exact_weight(self) -> float:
        if self.blocks == 1:
            return _exp_down(self.epsilon) + 1.0
        return 2.0 * self.blocks - 2.0

    def parameters(self) -> dict[str, Any]:
        """``epsilon`` and ``blocks``."""
        return {"epsilon": self.epsilon, "blocks": self.blocks}

    def blankets(self) -> tuple[Blanket, ...]:
        """Uniform outputs lie below every value's law, its ``s = b/2`` outputs weighing
        ``e^eps`` more: a blanket output supports a value with probability ``1 / (2B)``; two
        values of different blocks never share one, two of one block share ``s/2`` of them
        (``1 / (4B)``). Both kinds of pair are kept (the worse one counts)."""
        blocks = self.blocks
        kinds = [(0.5 / blocks, 0.25 / blocks)] + ([(0.5 / blocks, 0.0)] if blocks > 1 else [])
        return tuple(b for inside, both in kinds for b in set_blanket(self.epsilon, inside, both))


@dataclass(frozen=True)
class SubsetSelectionEvent(TernaryLossEvent):
    """Subset selection of ``subset_size = d`` of ``num_buckets = k`` values at ``epsilon``:
    ``w = e^eps (d - 1) / (k - d) + (k - 1 - d) / d``."""

    epsilon: float
    num_buckets: int
    subset_size: int
    kind: ClassVar[str] = "subset_selection"

    def __post_init__(self) -> None:
        owner = "subset selection event"
        object.__setattr__(self, "epsilon", _epsilon(owner, self.epsilon))
        k = check_count(owner, "num_buckets", self.num_buckets, 2)
        d = check_count(owner, "subset_size", self.subset_size, 1)
        if d >= k:
            raise ParameterError(f"{owner}: subset_size must be below num_buckets={k}, got {d}")
        object.__setattr__(self, "num_buckets", k)
        object.__setattr__(self, "subset_size", d)

    @property
    def _exact_weight(self) -> float:
        k, d = self.num_buckets, self.subset_size
        return _exp_down(self.epsilon) * (d - 1) / (k - d) + (k - 1 - d) / d

    def parameters(self) -> dict[str, Any]:
        """``epsilon``, ``num_buckets`` and ``subset_size``."""
        return {
            "epsilon": self.epsilon,
            "num_buckets": self.num_buckets,
            "subset_size": self.subset_size,
        }

    def blankets(self) -> tuple[Blanket, ...]:
        """Uniform subsets lie below every value's law, those holding it weighing ``e^eps``
        more: a blanket subset holds a value with probability ``d / k``, two with
        ``d (d - 1) / (k (k - 1))``."""
        k, d = self.num_buckets, self.subset_size
        return set_blanket(self.epsilon, d / k, d * (d - 1) / (k * (k - 1)))


@dataclass(frozen=True)
class ProjectiveGeometryEvent(TernaryLossEvent):
    """Projective geometry response at ``epsilon`` over the hyperplanes of ``P^(t-1)(F_q)``
    (``field_size = q``, ``dimension = t``): ``K`` points, ``D`` on a hyperplane, ``D_2`` on
    two points' common hyperplanes, ``w = (e^eps D_2 + K - 2D + D_2) / (D - D_2)``."""

    epsilon: float
    field_size: int
    dimension: int
    kind: ClassVar[str] = "projective_geometry_response"

    def __post_init__(self) -> None:
        owner = "projective geometry event"
        object.__setattr__(self, "epsilon", _epsilon(owner, self.epsilon))
        q = check_count(owner, "field_size", self.field_size, 2)
        t = check_count(owner, "dimension", self.dimension, 2)
        if q > 1 << 20 or t > 64 or any(q % d == 0 for d in range(2, math.isqrt(q) + 1)):
            raise ParameterError(
                f"{owner}: field_size must be a prime up to 2**20 and dimension at most 64, "
                f"got {q} and {t}"
            )
        object.__setattr__(self, "field_size", q)
        object.__setattr__(self, "dimension", t)

    @property
    def _exact_weight(self) -> float:
        q, t = self.field_size, self.dimension
        points, d, d2 = (int((q**j - 1) // (q - 1)) for j in (t, t - 1, t - 2))
        return float(_exp_down(self.epsilon) * d2 + points - 2 * d + d2) / (d - d2)

    def parameters(self) -> dict[str, Any]:
        """``epsilon``, ``field_size`` and ``dimension``."""
        return {"epsilon": self.epsilon, "field_size": self.field_size, "dimension": self.dimension}

    def blankets(self) -> tuple[Blanket, ...]:
        """Uniform hyperplanes lie below every value's law, those through it weighing
        ``e^eps`` more: a blanket hyperplane passes through a point with probability
        ``D / K``, through two with ``D_2 / K``."""
        q, t = self.field_size, self.dimension
        points, d, d2 = (int((q**j - 1) // (q - 1)) for j in (t, t - 1, t - 2))
        return set_blanket(self.epsilon, d / points, d2 / points)


@dataclass(frozen=True)
class LocalHashingEvent(TernaryLossEvent):
    """Local hashing at ``epsilon`` over ``num_buckets = g`` hash values, with an exactly
    universal family: ``w = (g - 1) + e^eps / (g - 1)``."""

    epsilon: float
    num_buckets: int
    kind: ClassVar[str] = "local_hashing"

    def __post_init__(self) -> None:
        owner = "local hashing event"
        object.__setattr__(self, "epsilon", _epsilon(owner, self.epsilon))
        object.__setattr__(
            self, "num_buckets", check_count(owner, "num_buckets", self.num_buckets, 2)
        )

    @property
    def _exact_weight(self) -> float:
        g = self.num_buckets
        return (g - 1) + _exp_down(self.epsilon) / (g - 1)

    def parameters(self) -> dict[str, Any]:
        """``epsilon`` and ``num_buckets``."""
        return {"epsilon": self.epsilon, "num_buckets": self.num_buckets}

    def blankets(self) -> tuple[Blanket, ...]:
        """A seed and a uniform bucket lie below every value's law, the value's bucket
        weighing ``e^eps`` more: a blanket report supports a value with probability ``1/g``,
        two (they collide with probability exactly ``1/g``) with ``1/g^2``."""
        g = self.num_buckets
        return set_blanket(self.epsilon, 1.0 / g, 1.0 / (g * g))
