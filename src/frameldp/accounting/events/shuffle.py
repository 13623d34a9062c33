"""The event of a shuffled release: ``reports`` local reports, one per person, shuffled
(amplification by shuffling, :mod:`frameldp.accounting.amplification`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameldp._scipy import special
from frameldp.accounting.amplification import (
    MAX_EPSILON0,
    Clones,
    clone_delta,
    clone_epsilon,
    clone_probability,
)
from frameldp.accounting.blanket import Blanket, blanket_delta, blanket_epsilon, blanket_lattice
from frameldp.accounting.events.base import PrivacyEvent, event_from_dict
from frameldp.accounting.events.curves import pure_rho, rr_rdp
from frameldp.accounting.events.local import RandomizedResponseEvent
from frameldp.accounting.lattice import FINEST_STEP, Lattice, lattice_step, to_pld
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.rounding import pad_up
from frameldp.accounting.shuffle_pairs import (
    blanket_band,
    blanket_pair,
    clone_pair,
)
from frameldp.accounting.shuffled_rr import (
    BAND_SCAN_MAX,
    EXACT_SCAN_MAX,
    band_rr_delta,
    band_rr_epsilon,
    band_rr_lower,
    exact_rr_delta,
    exact_rr_epsilon,
)
from frameldp.arguments import check_count, check_order, check_positive
from frameldp.errors import ParameterError

__all__ = ["ShuffleEvent", "pair_rdp"]

_METHODS = {
    "clones": "clone pair (Feldman–McMillan–Talwar 2021)",
    "stronger_clones": "stronger-clone pair (Feldman–McMillan–Talwar 2023)",
    "blanket": "blanket pair with k = {k} (Balle et al. 2019)",
    "blanket_sum": "privacy blanket of {local}, summed directly (Balle et al. 2019; the optimal "
    "decomposition, Su–Cheng–Wang 2026)",
    "blanket_dots": "privacy blanket of {local}, connect-the-dots pair (Balle et al. 2019; "
    "Doroshenko et al. 2022)",
    "exact": "exact: binary RR, every dataset of the others scanned",
    "bands": "binary RR, every dataset of the others bounded in bands (certified)",
}


@lru_cache(maxsize=64)
def _privacy_loss(event: ShuffleEvent, count: int) -> PrivacyLossDistribution:
    """The loss distribution of ``count`` releases (cached: it takes up to seconds)."""
    return event._privacy_loss(count)


@lru_cache(maxsize=256)
def _blanket_band(epsilon0: float, n: int, k: int | None) -> float | None:
    """The blanket pair's band of counts, for k-ary RR with ``k >= 3`` whose blanket
    probability ``k / (e^eps0 + k - 1)`` does not round to 1 (None otherwise, or past the work
    limit)."""
    if k is None or k < 3 or epsilon0 > MAX_EPSILON0 or k / (math.exp(epsilon0) + k - 1.0) >= 1.0:
        return None
    return blanket_band(epsilon0, n, k)


_Curve = Callable[[float], float]


# The clone bound at a delta: the first method's answer and the blanket's starting bracket.
_clone_epsilon = lru_cache(maxsize=256)(clone_epsilon)


def _central_methods(event: ShuffleEvent) -> list[tuple[str, _Curve, _Curve]]:
    """Every valid method for one release: its name, ``epsilon(delta)`` and ``delta(epsilon)``
    (below ``eps0``): the clone pair's divergence, the privacy blanket summed directly (set
    randomizers: k-ary RR with ``k >= 3``, OUE, local hashing, subset selection, Hadamard and
    projective geometry response, RAPPOR, Bloom RAPPOR) and a scan (binary RR)."""
    epsilon0, n, clones = event.local_epsilon, event.reports, event.clones
    methods: list[tuple[str, _Curve, _Curve]] = [
        (
            clones,
            lambda delta: _clone_epsilon(delta, epsilon0, n, clones),
            lambda epsilon: clone_delta(epsilon, epsilon0, n, clones),
        )
    ]
    blankets = event.report_blankets
    if blankets:
        methods.append(
            (
                "blanket_sum",
                lambda delta: max(
                    blanket_epsilon(delta, b, n, _clone_epsilon(delta, epsilon0, n, clones))
                    for b in blankets
                ),
                lambda epsilon: max(blanket_delta(epsilon, b, n) for b in blankets),
            )
        )
    if event.scan == "exact":
        methods.append(
            (
                "exact",
                lambda delta: exact_rr_epsilon(delta, epsilon0, n),
                lambda epsilon: exact_rr_delta(epsilon, epsilon0, n),
            )
        )
    elif event.scan == "bands":
        methods.append(
            (
                "bands",
                lambda delta: band_rr_epsilon(delta, epsilon0, n),
                lambda epsilon: band_rr_delta(epsilon, epsilon0, n),
            )
        )
    return methods


@lru_cache(maxsize=256)
def _central_epsilons(event: ShuffleEvent, delta: float) -> tuple[tuple[str, float], ...]:
    """Every valid method's central epsilon of one release at ``delta`` (cached: the scans
    take seconds at 10^4 to 10^8 people)."""
    return tuple((name, epsilon_of(delta)) for name, epsilon_of, _ in _central_methods(event))


def pair_rdp(pair: Lattice, order: float, epsilon0: float) -> float:
    """An upper bound on the Rényi divergence of order ``order`` of a symmetric dominating
    pair, from its lattice: ``log E_P[e^((order - 1) L)] / (order - 1)``.

    The lattice's losses are raised (only raising the bound, as ``order > 1``); its masses are
    within ``e^log_error`` of masses within ``mass_error`` (l1) of valid ones; the mass it put
    at +infinity (dropped binomial tails) carries losses of at most ``epsilon0`` (every loss of
    a shuffle pair is within ``[-epsilon0, epsilon0]``: the shuffled reports are a
    post-processing of ``epsilon0``-DP ones), and so does the mass error. The pair is
    symmetric, so the same value bounds ``D_order(Q || P)``.
    """
    return _moment_rdp(_pair_atoms(pair), order, epsilon0)


def _pair_atoms(pair: Lattice) -> tuple[NDArray[np.float64], NDArray[np.float64], float, float]:
    """The lattice's non-zero atoms (losses, log masses), the mass spilled past it (at
    +infinity or in error) and the log error of its masses."""
    keep = pair.masses > 0.0
    return (
        pair.losses[keep],
        np.log(pair.masses[keep]),
        pair.infinity_mass + pair.mass_error,
        pair.log_error,
    )


def _moment_rdp(
    atoms: tuple[NDArray[np.float64], NDArray[np.float64], float, float],
    order: float,
    epsilon0: float,
) -> float:
    losses, log_masses, spill, log_error = atoms
    scale = order - 1.0
    log_moment = float(special.logsumexp(log_masses + scale * np.minimum(losses, epsilon0)))
    log_moment += log_error
    if spill > 0.0:
        log_moment = float(np.logaddexp(log_moment, math.log(spill) + scale * epsilon0))
    # logsumexp of n terms errs by a few ulps relative: 2^-40 of the moment's log, at least.
    return max(0.0, log_moment + 2.0**-40 * (abs(log_moment) + 1.0)) / scale


def _order_above(order: float) -> float:
    """The smallest order of a fixed grid (64 per decade of ``order - 1``) at least ``order``:
    Rényi divergences do not decrease with the order, so the pair's divergence there bounds it
    at ``order`` too, and the conversions' hundreds of orders share a few cached values."""
    if not 1e-12 < order - 1.0 < 1e12:
        return order  # off the grid (an infinite order included): computed as asked
    step = math.ceil(64.0 * math.log10(order - 1.0))
    above = 1.0 + math.pow(10.0, step / 64.0)
    while above < order:  # float rounding of the power
        step += 1
        above = 1.0 + math.pow(10.0, step / 64.0)
    return above


@lru_cache(maxsize=4096)
def _pair_rdp_at(event: ShuffleEvent, order: float) -> float:
    return _moment_rdp(_event_atoms(event), order, event.local_epsilon)


@lru_cache(maxsize=64)
def _event_atoms(
    event: ShuffleEvent,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, float]:
    """:func:`_pair_atoms` of the event's enumerated pair (cached: the Rényi conversions ask
    for hundreds of orders): the blanket lattice of k-ary RR or the clone pair (the
    connect-the-dots pair is built only for compositions' loss distributions, where it
    matters: it takes seconds)."""
    if event.pair == "blanket_dots":
        return _pair_atoms(event._clone_lattice(FINEST_STEP))
    return _pair_atoms(event._pair_lattice())


@dataclass(frozen=True)
class ShuffleEvent(PrivacyEvent):
    """``reports`` shuffled reports of ``local_epsilon``-LDP randomizers, one per person.

    Privacy: one release is accounted by the smallest of every valid bound
    (:meth:`central_method` names it): the clone pair's divergence (``clones``: any
    randomizer; ``stronger_clones``: k-ary randomized response), the privacy blanket summed
    directly when the randomizer is a set randomizer (k-ary RR with ``num_buckets = k >= 3``,
    or the one-report event ``local`` of OUE, local hashing, subset selection, Hadamard or
    projective geometry response, RAPPOR, Bloom RAPPOR: :mod:`frameldp.accounting.blanket`;
    bit vectors through the set randomizer above them), and for
    binary RR a scan over every dataset of the others (:attr:`scan`). Compositions use one
    dominating pair's privacy-loss distribution (:attr:`pair`): the blanket pair of k-ary RR
    where affordable, else the blanket's connect-the-dots pair, else the clone pair. The pure
    epsilon, Rényi curve and rho are those of the local reports (shuffling is
    post-processing; binary RR at ``local_epsilon`` dominates every ``local_epsilon``-DP
    mechanism), or the pair's Rényi curve where smaller.
    """

    local_epsilon: float
    reports: int
    clones: Clones = "clones"
    num_buckets: int | None = None
    local: PrivacyEvent | None = None
    kind: ClassVar[str] = "shuffle"
    central: ClassVar[bool] = True

    def __post_init__(self) -> None:
        owner = "shuffle event"
        object.__setattr__(
            self, "local_epsilon", check_positive(owner, "local_epsilon", self.local_epsilon)
        )
        object.__setattr__(self, "reports", check_count(owner, "reports", self.reports, 1))
        clone_probability(self.local_epsilon, self.clones)  # validates clones
        if self.num_buckets is not None:
            buckets = check_count(owner, "num_buckets", self.num_buckets, 2)
            if self.clones != "stronger_clones":
                raise ParameterError(
                    "shuffle event: num_buckets is the k of k-ary randomized response, whose "
                    f"reports use clones='stronger_clones'; got clones={self.clones!r}"
                )
            object.__setattr__(self, "num_buckets", buckets)
        if self.local is not None:
            local: Any = self.local
            if not isinstance(local, PrivacyEvent):
                if not isinstance(local, Mapping):
                    raise ParameterError(
                        f"{owner}: local must be a privacy event or its dict, got {local!r:.80}"
                    )
                local = event_from_dict(local)
            if local.pure_epsilon > self.local_epsilon or local.central:
                raise ParameterError(
                    f"{owner}: local must be one local report of at most local_epsilon="
                    f"{self.local_epsilon!r}, got {local}"
                )
            object.__setattr__(self, "local", local)

    @property
    def report_blankets(self) -> tuple[Blanket, ...]:
        """The privacy blanket of one report for each kind of pair of values (empty when the
        randomizer is not known to be a set randomizer, or beyond ``eps0 = 15``)."""
        if self.local_epsilon > MAX_EPSILON0:
            return ()
        if self.local is not None:
            return self.local.blankets()
        if self.num_buckets is not None and self.num_buckets >= 3:
            return RandomizedResponseEvent(self.local_epsilon, self.num_buckets).blankets()
        return ()

    @property
    def pair(self) -> str:
        """The dominating pair compositions use: ``"blanket"`` (k-ary RR, where affordable),
        ``"blanket_dots"`` (the blanket's connect-the-dots pair), or the clone pair
        (``"clones"``, ``"stronger_clones"``)."""
        if self.blanket_band is not None:
            return "blanket"
        return "blanket_dots" if self.report_blankets else self.clones

    @property
    def blanket_band(self) -> float | None:
        """The band width of the blanket pair's counts (None: no blanket pair within the work
        limit, or not k-ary RR with ``k >= 3``)."""
        return _blanket_band(self.local_epsilon, self.reports, self.num_buckets)

    @property
    def pure_epsilon(self) -> float:
        """``local_epsilon``: shuffling is post-processing of the local reports."""
        return self.local_epsilon

    def rdp(self, order: float) -> float:
        """The smaller of the local reports' bound (binary RR at ``local_epsilon``) and the
        Rényi divergence of an enumerated dominating pair (:func:`pair_rdp`: k-ary RR's blanket
        lattice, else the clone pair), which composes without the lattice's error terms and so
        resolves deltas far below them."""
        order = check_order("rdp", "order", order)
        local = rr_rdp(order, self.local_epsilon, 2)
        if self.local_epsilon > MAX_EPSILON0:
            return pad_up(local)
        return pad_up(min(local, _pair_rdp_at(self, _order_above(order))))

    @property
    def rho(self) -> float:
        """The local reports' ``eps0 tanh(eps0 / 2)``."""
        return pure_rho(self.local_epsilon)

    def _pair_lattice(self, step: float = FINEST_STEP) -> Lattice:
        epsilon0, n = self.local_epsilon, self.reports
        if self.pair == "blanket":
            assert self.num_buckets is not None
            return blanket_pair(epsilon0, n, self.num_buckets, step, self.blanket_band)
        if self.pair == "blanket_dots":
            scale = self.central_epsilon(1e-6)
            return blanket_lattice(self.report_blankets, n, step, scale)
        return self._clone_lattice(step)

    def _clone_lattice(self, step: float) -> Lattice:
        epsilon0 = self.local_epsilon
        return clone_pair(epsilon0, self.reports, clone_probability(epsilon0, self.clones), step)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """``count`` shuffled releases: the dominating pair's loss distribution, rounded up to
        a lattice of ``2**-16`` and composed by FFT (at most ``count * 2**-16`` above the
        exact composition of the pairs). Above ``eps0 = 15`` no amplification is claimed:
        binary RR at ``local_epsilon``."""
        return _privacy_loss(self, count)

    def _privacy_loss(self, count: int) -> PrivacyLossDistribution:
        if self.local_epsilon > MAX_EPSILON0:
            return PrivacyLossDistribution.randomized_response(
                self.local_epsilon, 2, count
            ).dominated()
        pair = self._pair_lattice()
        # The finest step whose composed lattice fits (coarser for many uses of a wide pair).
        span, deviation = pair.spread()
        step = lattice_step([span], [deviation * math.sqrt(count)], count)
        if step != pair.step:
            pair = self._pair_lattice(step)
        return to_pld(pair.power(count), exact=False)

    @property
    def scan(self) -> str | None:
        """How one release of binary RR is scanned over every dataset of the others:
        ``"exact"`` (at most ``EXACT_SCAN_MAX`` people), ``"bands"`` (certified, at most
        ``BAND_SCAN_MAX``), or None (not binary RR, or beyond)
        (:mod:`~frameldp.accounting.shuffled_rr`)."""
        if self.num_buckets != 2 or self.local_epsilon > MAX_EPSILON0:
            return None
        if self.reports <= EXACT_SCAN_MAX:
            return "exact"
        return "bands" if self.reports <= BAND_SCAN_MAX else None

    @property
    def exact_scan(self) -> bool:
        """Whether one release is accounted exactly (``scan == "exact"``)."""
        return self.scan == "exact"

    @property
    def central_is_tightest(self) -> bool:
        """The direct answers (the clone pair's divergence, the blanket's sum, the scans) are
        never above a loss distribution of their pairs, which rounds losses up (k-ary RR's
        blanket pair on its lattice can come within its band slack, a few 10^-4 relative). A
        Rényi conversion of the local reports can be below them by the clone bound's padding
        (about 10^-6 at eps0 between 10 and 15, where shuffling barely helps); skipping it
        only states that much more. Not above ``eps0 = 15``, where no pair is computed and
        the conversion can be tighter by more."""
        return self.local_epsilon <= MAX_EPSILON0

    def central_method(self, delta: float) -> tuple[float, str]:
        """The central epsilon at ``delta`` of one use and the method that produced it: the
        smallest of every valid one (module docstring of
        :mod:`~frameldp.accounting.shuffle_pairs` and :mod:`~frameldp.accounting.shuffled_rr`).
        """
        name, epsilon = min(_central_epsilons(self, delta), key=lambda item: item[1])
        text = self._method_text(name)
        if name == "bands":
            lower = band_rr_lower(delta, self.local_epsilon, self.reports)
            text += f": at most {max(epsilon - lower, 0.0):.3g} above exact"
        return epsilon, text

    @property
    def central_detail(self) -> str:
        """How one release is accounted at delta = 1e-6 (:meth:`central_method` at any)."""
        return self.central_method(1e-6)[1]

    def central_delta(self, epsilon: float) -> float:
        """Central delta at ``epsilon`` of one use: the smallest of the clone pair's divergence
        computed directly (0 from ``eps0`` on), the scans (binary RR) and the blanket pair's
        loss distribution (k-ary RR)."""
        return self.central_delta_method(epsilon)[0]

    def central_delta_method(self, epsilon: float) -> tuple[float, str]:
        """:meth:`central_delta` and the method that produced it."""
        if epsilon >= self.local_epsilon:
            # The shuffled reports are a post-processing of eps0-DP ones.
            return 0.0, "pure: the local reports' epsilon"
        value, name = min((delta_of(epsilon), name) for name, _, delta_of in _central_methods(self))
        return value, self._method_text(name)

    def profile_delta(self, epsilon: float) -> float:
        """:meth:`central_delta` without the blanket's direct sum, which costs up to a tenth of
        a second per epsilon (a risk reading asks for a hundred): the clone pair's divergence,
        the scans and k-ary RR's blanket lattice. Valid, and at most the clone bound."""
        if epsilon >= self.local_epsilon:
            return 0.0
        values = [
            delta_of(epsilon)
            for name, _, delta_of in _central_methods(self)
            if name != "blanket_sum"
        ]
        if self.pair == "blanket":
            values.append(self.privacy_loss(1).delta(epsilon))
        return min(values)

    def _method_text(self, name: str) -> str:
        local = str(self.local) if self.local is not None else f"{self.num_buckets}-ary RR"
        return _METHODS[name].format(k=self.num_buckets, local=local)

    def central_epsilon(self, delta: float) -> float:
        """Central epsilon at ``delta`` of one use (never above ``local_epsilon``)."""
        return self.central_method(delta)[0]

    def parameters(self) -> dict[str, Any]:
        """``local_epsilon``, ``reports``, ``clones``, (k-ary RR) ``num_buckets`` and (other set
        randomizers) the ``local`` event's dict."""
        parameters: dict[str, Any] = {
            "local_epsilon": self.local_epsilon,
            "reports": self.reports,
            "clones": self.clones,
        }
        if self.num_buckets is not None:
            parameters["num_buckets"] = self.num_buckets
        if self.local is not None:
            parameters["local"] = self.local.to_dict()
        return parameters
