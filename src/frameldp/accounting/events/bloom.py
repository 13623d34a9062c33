"""The event of Bloom-filter RAPPOR with memoized permanent responses [6]_ (closed forms and
references in the package docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from frameldp._scipy import special
from frameldp.accounting.blanket import Blanket, bit_vector_blanket
from frameldp.accounting.events.base import (
    PrivacyEvent,
    check_count,
    check_order,
)
from frameldp.accounting.events.curves import (
    pure_rho,
    sup_over_orders,
)
from frameldp.accounting.events.local import PureDP
from frameldp.accounting.pld import PrivacyLossDistribution
from frameldp.accounting.rounding import log_upper, pad_up, sum_up
from frameldp.arguments import check_positive, check_probability
from frameldp.errors import ParameterError

__all__ = ["BloomRapporEvent"]


def _probability(owner: str, name: str, value: object) -> float:
    """A probability of the event: an int or a float in [0, 1] (a Fraction or Decimal is
    refused, as every privacy event's parameter: its nearest float may state less loss)."""
    check_positive(owner, name, value, allow_zero=True)
    return check_probability(owner, name, value)


@dataclass(frozen=True)
class BloomRapporEvent(PrivacyEvent):
    """Bloom-filter RAPPOR: ``reports`` reports of one value sharing a permanent response.

    Each of the ``num_hashes`` bits a value sets goes through the permanent randomized response
    (flipped with ``flip_probability = f/2``), then each report through the instantaneous one
    (1 with ``one_probability = q`` where the permanent bit is 1, ``zero_probability = p``
    where it is 0). Two values differ in at most ``num_hashes`` bits each way.

    Privacy: for one report, ``epsilon_1 = h ln(q*(1 - p*) / (p*(1 - q*)))`` with
    ``q* = (1 - f/2) q + (f/2) p`` and ``p* = (f/2) q + (1 - f/2) p`` (Erlingsson et al. 2014,
    Thm. 2); for ``r`` reports sharing a memoized permanent response, the exact loss of the
    number of ones per bit, which is below ``min(r epsilon_1, epsilon_inf)`` with
    ``epsilon_inf = 2h ln((1 - f/2) / (f/2))`` (Thm. 1). The Rényi curve and the loss
    distribution are exact for the worst pair of values.

    ``memo`` names the permanent responses (a public fingerprint, not the key): uses of events
    with the same ``memo`` share them, so :meth:`repeated` folds them into one event with more
    ``reports`` rather than composing them as independent. Reports without a memo draw a fresh
    permanent response each and compose independently. The memoized guarantee protects each
    (user, value) pair, RAPPOR's longitudinal guarantee: a user whose value changes gets an
    independent permanent response for each value.
    """

    num_hashes: int
    flip_probability: float
    one_probability: float
    zero_probability: float
    reports: int = 1
    memo: str | None = None
    num_bits: int | None = None
    kind: ClassVar[str] = "bloom_rappor"

    def __post_init__(self) -> None:
        owner = "Bloom RAPPOR event"
        object.__setattr__(self, "num_hashes", check_count(owner, "num_hashes", self.num_hashes, 1))
        object.__setattr__(self, "reports", check_count(owner, "reports", self.reports, 1))
        flip = _probability(owner, "flip_probability", self.flip_probability)
        if not 0.0 < flip <= 0.5:
            raise ParameterError(f"{owner}: flip_probability must be in (0, 0.5], got {flip!r}")
        object.__setattr__(self, "flip_probability", flip)
        for name in ("one_probability", "zero_probability"):
            object.__setattr__(self, name, _probability(owner, name, getattr(self, name)))
        if self.memo is not None and not isinstance(self.memo, str):
            raise ParameterError(f"{owner}: memo must be a string or None, got {self.memo!r}")
        if self.num_bits is not None:
            object.__setattr__(self, "num_bits", check_count(owner, "num_bits", self.num_bits, 1))

    @property
    def _person(self) -> tuple[PrivacyEvent, int] | None:
        """One person's ``reports`` (two or more, any values) as independent uses of one bit's
        instantaneous response (``P[1] = q`` from a permanent 1, ``p`` from a 0), every bit of
        every report: the reports are that product channel applied to the person's permanent
        bit vectors, and the bound of the worst pair of them holds for every coupling
        (:class:`~frameldp.accounting.MemoizedEvent`). None for one report, or for an event
        recorded without ``num_bits`` by an earlier frameldp (its per-value bound)."""
        if self.reports == 1 or self.num_bits is None:
            return None
        q, p = Fraction(self.one_probability), Fraction(self.zero_probability)
        if p == 0 or q == 1 or p == q:
            if p == q:
                return PureDP(0.0), 1
            raise ParameterError(
                f"Bloom RAPPOR event: {self.reports} reports of one person whose instantaneous "
                "response adds no noise reveal which of them share a value (an unbounded loss); "
                "keep one report per person (max_rows_per_user=1)"
            )
        ratio = max(q / p, p / q, (1 - p) / (1 - q), (1 - q) / (1 - p))
        return PureDP(log_upper(ratio)), self.reports * self.num_bits

    def repeated(self, count: int) -> tuple[PrivacyEvent, int]:
        """Memoized: one event with ``count`` times the reports; otherwise independent uses."""
        if self.memo is None:
            return self, count
        return replace(self, reports=self.reports * count), 1

    def unit(self) -> tuple[PrivacyEvent, int]:
        """Memoized: one report, counted ``reports`` times (so that releases sharing a memo add
        up their reports)."""
        if self.memo is None or self.reports == 1:
            return self, 1
        return replace(self, reports=1), self.reports

    @property
    def epsilon_infinity(self) -> float:
        """``2h ln((1 - f/2) / (f/2))``: any number of reports of one value (rounded up)."""
        flip = Fraction(self.flip_probability)
        return sum_up([(log_upper((1 - flip) / flip), 2 * self.num_hashes)])

    @property
    def pure_epsilon(self) -> float:
        """Exact pure epsilon of the ``reports`` of one value, rounded up (``epsilon_1`` for
        one); a person's bound for two or more (:attr:`_person`)."""
        person = self._person
        if person is not None:
            return sum_up([(person[0].pure_epsilon, person[1])])
        if self.reports == 1:
            ones, zeros = self._report_probabilities()
            if ones == zeros:
                return 0.0
            ratio = ones * (1 - zeros) / (zeros * (1 - ones))
            pair = log_upper(ratio if ratio > 1 else 1 / ratio)
            return min(sum_up([(pair, self.num_hashes)]), self.epsilon_infinity)
        log_one, log_zero = self._log_laws()
        loss = log_one - log_zero
        pair = float(np.max(loss) + np.max(-loss))
        return min(pad_up(self.num_hashes * pair), self.epsilon_infinity)

    def blankets(self) -> tuple[Blanket, ...]:
        """One report: the set randomizer above its bit vectors (:func:`~frameldp.accounting.
        blanket.bit_vector_blanket`, each bit's ratios ``q*/p*`` and ``(1 - q*)/(1 - p*)``, at
        most ``h`` bits a value). Several reports of one person in a release: none."""
        if self.reports != 1:
            return ()
        ones, zeros = self._report_probabilities()
        if zeros in (0, 1) or ones in (0, 1):
            return ()
        return bit_vector_blanket(
            math.log(ones / zeros), math.log((1 - ones) / (1 - zeros)), self.num_hashes
        )

    def rdp(self, order: float) -> float:
        """``h (D_a(P1 || P0) + D_a(P0 || P1))`` over the number of ones per bit (exact)."""
        order = check_order("rdp", "order", order)
        person = self._person
        if person is not None:
            return pad_up(person[1] * person[0].rdp(order))
        if math.isinf(order):
            return self.pure_epsilon
        return pad_up(min(self._rdp_raw(order), self.pure_epsilon))

    def _rdp_raw(self, order: float) -> float:
        log_one, log_zero = self._log_laws()
        t = order - 1.0
        loss = log_one - log_zero
        if t * float(np.max(np.abs(loss), initial=0.0)) < 1.0:
            # Near order 1 both sums are 1 + O(t): sum P (e^{tL} - 1) keeps their digits.
            forward = math.log1p(float(np.sum(np.exp(log_one) * np.expm1(t * loss))))
            backward = math.log1p(float(np.sum(np.exp(log_zero) * np.expm1(-t * loss))))
        else:
            forward = float(special.logsumexp(order * log_one - t * log_zero))
            backward = float(special.logsumexp(order * log_zero - t * log_one))
        return self.num_hashes * max(forward + backward, 0.0) / t

    @property
    def rho(self) -> float:
        """Numerical ``sup_a RDP(a) / a``, never above ``eps tanh(eps / 2)``."""
        person = self._person
        if person is not None:
            return pad_up(person[1] * person[0].rho)
        return _bloom_rho(self)

    def privacy_loss(self, count: int = 1) -> PrivacyLossDistribution:
        """Exact: ``h count`` independent pairs of per-bit channels, composed by squaring."""
        person = self._person
        if person is not None:
            return person[0].privacy_loss(person[1] * count)
        log_one, log_zero = self._log_laws()
        loss = log_one - log_zero
        # A bit the first value sets (law P1 against P0), and one the second value sets.
        first = PrivacyLossDistribution.from_atoms(loss, log_one)
        second = PrivacyLossDistribution.from_atoms(-loss, log_zero)
        return first.compose(second).power(self.num_hashes * count)

    def _report_probabilities(self) -> tuple[Fraction, Fraction]:
        """Exact ``(q*, p*)``: one report's ``P[1 | bit 1]`` and ``P[1 | bit 0]``."""
        flip = Fraction(self.flip_probability)
        q, p = Fraction(self.one_probability), Fraction(self.zero_probability)
        return (1 - flip) * q + flip * p, flip * q + (1 - flip) * p

    def _log_laws(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        return _bloom_laws(
            self.flip_probability, self.one_probability, self.zero_probability, self.reports
        )

    def parameters(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {
            "num_hashes": self.num_hashes,
            "flip_probability": self.flip_probability,
            "one_probability": self.one_probability,
            "zero_probability": self.zero_probability,
            "reports": self.reports,
            "memo": self.memo,
            **({} if self.num_bits is None else {"num_bits": self.num_bits}),
        }


@lru_cache(maxsize=256)
def _bloom_laws(
    flip: float, one: float, zero: float, reports: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Log laws of the number of ones among ``reports`` reports of a bit that is 1 or 0.

    ``P1(j) = (1 - f/2) B(j; r, q) + (f/2) B(j; r, p)`` and
    ``P0(j) = (f/2) B(j; r, q) + (1 - f/2) B(j; r, p)``: the permanent bit is drawn once and
    every report is an independent instantaneous response to it.
    """
    j = np.arange(reports + 1, dtype=np.float64)
    log_choose = (
        special.gammaln(reports + 1.0)
        - special.gammaln(j + 1.0)
        - special.gammaln(reports - j + 1.0)
    )

    def log_binomial(prob: float) -> np.ndarray[Any, Any]:
        with np.errstate(divide="ignore"):
            ones = j * math.log(prob) if prob > 0 else np.where(j > 0, -np.inf, 0.0)
            zeros = (
                (reports - j) * math.log1p(-prob)
                if prob < 1
                else np.where(j < reports, -np.inf, 0.0)
            )
        return np.asarray(log_choose + ones + zeros)

    high, low = log_binomial(one), log_binomial(zero)
    log_keep, log_flip = math.log1p(-flip), math.log(flip)
    log_one = np.logaddexp(log_keep + high, log_flip + low)
    log_zero = np.logaddexp(log_flip + high, log_keep + low)
    # Counts no report can produce (p = 0 or q = 1) carry no mass under either value.
    possible = np.isfinite(log_one)
    return log_one[possible], log_zero[possible]


@lru_cache(maxsize=256)
def _bloom_rho(event: BloomRapporEvent) -> float:
    epsilon = event.pure_epsilon
    if epsilon == 0.0:
        return 0.0
    log_one, log_zero = event._log_laws()
    kl = event.num_hashes * float(
        np.sum(np.exp(log_one) * (log_one - log_zero))
        + np.sum(np.exp(log_zero) * (log_zero - log_one))
    )
    return min(sup_over_orders(event._rdp_raw, max(kl, 0.0)), pure_rho(epsilon))
