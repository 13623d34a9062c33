"""Privacy events: immutable records of one use of a mechanism, each knowing its own curves.

An event states what one report (or one release) cost a person: its pure epsilon, its exact
Rényi curve ``rdp(order)``, its tight zCDP ``rho`` and its privacy-loss distribution. Accountants
compose events; they never inspect what kind of event they hold.

Closed forms (all for a worst-case pair of neighbouring inputs):

* k-ary randomized response at epsilon [1]_ [2]_ (binary RR is ``k = 2``)::

      RDP(a) = 1/(a-1) ln((e^{a eps} + e^{(1-a) eps} + k - 2) / (e^eps + k - 1))

  zCDP ``rho = eps tanh(eps / 2)`` for ``k = 2`` [2]_; for ``k > 2`` the supremum of
  ``RDP(a) / a``, which is attained at an interior order and exceeds the KL divergence.
* RAPPOR (bit-vector RR, at most ``m`` ones, each bit flipped with probability ``f/2``): two inputs
  differ in at most ``2m`` bits, so its loss is that of ``2m`` binary RR at
  ``eps_bit = ln((1 - f/2) / (f/2))`` [3]_: ``RDP = 2m RDP_RR(eps_bit)``,
  ``rho = 2m eps_bit tanh(eps_bit / 2)``.
* Laplace with ``b / sensitivity = lambda`` [4]_ (Prop. 6)::

      RDP(a) = 1/(a-1) ln(a/(2a-1) e^{(a-1)/lambda} + (a-1)/(2a-1) e^{-a/lambda})

* Gaussian with ``sigma / sensitivity``: ``RDP(a) = a mu^2 / 2`` with ``mu = sensitivity / sigma``
  [4]_ (Prop. 7); ``rho = mu^2 / 2`` [5]_.
* Bloom-filter RAPPOR (:class:`BloomRapporEvent`): ``h`` hashes, permanent flip ``f/2``,
  instantaneous ``P[1 | 1] = q``, ``P[1 | 0] = p``. Two values differ in at most ``h`` bits each
  way and bits are independent, so the loss is that of ``h`` pairs of binary channels; ``r``
  reports sharing one memoized permanent response are one channel per bit whose output is the
  number of ones among the ``r`` reports, a mixture of two binomials [6]_. One report has
  ``epsilon_1 = h ln(q*(1 - p*) / (p*(1 - q*)))`` and any number of them at most
  ``epsilon_inf = 2h ln((1 - f/2) / (f/2))``.
* Reports sharing a memoized permanent response of any mechanism (:class:`MemoizedEvent`):
  one report costs ``epsilon_1``, two or more ``epsilon_inf`` (post-processing of the permanent
  response), at every Rényi order. ``r epsilon_1`` does not bound them: the reports are not
  independent given the value.
* Optimized unary encoding, subset selection and Hadamard response (:mod:`.ternary`): the loss
  of k-ary RR with a real ``k - 2``, the neutral weight each derives from its probabilities.
* Any other pure epsilon-DP mechanism (:class:`PureDP`): dominated by binary RR at epsilon [1]_,
  so it is accounted as that (the tightest statement valid for every epsilon-DP mechanism).

References
----------
.. [1] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy",
   ICML 2015.
.. [2] T. Steinke, "Tight bounds on converting pure DP to zCDP", differentialprivacy.org, 2024.
.. [3] "Tight RDP and zCDP bounds for RAPPOR", 2024 (Thm. 1, 4, 6); see
   ``../shared/references/000``.
.. [4] I. Mironov, "Rényi Differential Privacy", CSF 2017 (Prop. 5-7, Table II).
.. [5] M. Bun, T. Steinke, "Concentrated Differential Privacy", TCC 2016 (Prop. 1.6).
.. [6] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response", CCS 2014, Sec. 3 (Theorems 1 and 2).
"""

from frameldp.accounting.events.additive import GaussianEvent, LaplaceEvent
from frameldp.accounting.events.base import (
    PrivacyEvent,
    check_count,
    check_order,
    check_positive,
    event_from_dict,
)
from frameldp.accounting.events.binomial import BinomialCountsEvent
from frameldp.accounting.events.bloom import BloomRapporEvent
from frameldp.accounting.events.local import PureDP, RandomizedResponseEvent, RapporEvent
from frameldp.accounting.events.memoized import MemoizedEvent
from frameldp.accounting.events.numeric import PiecewiseDensityEvent
from frameldp.accounting.events.sampled import SampledEvent
from frameldp.accounting.events.shuffle import ShuffleEvent
from frameldp.accounting.events.ternary import (
    BlockHadamardResponseEvent,
    HadamardResponseEvent,
    LocalHashingEvent,
    OptimizedUnaryEncodingEvent,
    ProjectiveGeometryEvent,
    SubsetSelectionEvent,
    TernaryLossEvent,
)

__all__ = [
    "BinomialCountsEvent",
    "BlockHadamardResponseEvent",
    "BloomRapporEvent",
    "GaussianEvent",
    "HadamardResponseEvent",
    "LaplaceEvent",
    "LocalHashingEvent",
    "MemoizedEvent",
    "OptimizedUnaryEncodingEvent",
    "PiecewiseDensityEvent",
    "PrivacyEvent",
    "ProjectiveGeometryEvent",
    "PureDP",
    "RandomizedResponseEvent",
    "RapporEvent",
    "SampledEvent",
    "ShuffleEvent",
    "SubsetSelectionEvent",
    "TernaryLossEvent",
    "check_count",
    "check_order",
    "check_positive",
    "event_from_dict",
]
