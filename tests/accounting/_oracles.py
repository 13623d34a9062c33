"""Independent high-precision oracles for the accounting tests.

Everything here is written from the published formulas in mpmath at 50 significant digits and
never calls frameldp: the Rényi divergence as a sum over outputs, Mironov's closed forms, the
Kairouz–Oh–Viswanath (KOV) delta of k-fold binary randomized response, the Balle–Wang Gaussian
curve and the Canonne–Kamath–Steinke (CKS) conversion. Maximizations and minimizations over the
Rényi order run on ``x = ln(a - 1)``: a dense grid, then golden-section refinement.

References
----------
.. [1] I. Mironov, "Rényi Differential Privacy", CSF 2017 (Prop. 5-7).
.. [2] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy",
   ICML 2015 (Thm. 3.3).
.. [3] B. Balle, Y.-X. Wang, "Improving the Gaussian Mechanism for Differential Privacy",
   ICML 2018 (Thm. 8).
.. [4] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
   NeurIPS 2020 (Prop. 12).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import mpmath
from mpmath import mpf

DPS = 50  # significant digits of every oracle: far beyond any tolerance the tests declare

Real = mpf | float | int


def renyi(terms: Sequence[tuple[Real, Real, int]], order: Real) -> mpf:
    """``1/(a-1) ln sum_y P(y)^a Q(y)^(1-a)`` over outputs given as (P, Q, multiplicity)."""
    a = mpf(order)
    total = mpmath.fsum(n * mpf(p) ** a * mpf(q) ** (1 - a) for p, q, n in terms)
    return mpmath.log(total) / (a - 1)


@mpmath.workdps(DPS)
def rr_rdp(order: Real, epsilon: Real, k: int) -> mpf:
    """Closed form: ``1/(a-1) ln((e^{a eps} + e^{(1-a) eps} + k - 2) / (e^eps + k - 1))``."""
    a, e = mpf(order), mpf(epsilon)
    numerator = mpmath.exp(a * e) + mpmath.exp((1 - a) * e) + (k - 2)
    return mpmath.log(numerator / (mpmath.exp(e) + k - 1)) / (a - 1)


@mpmath.workdps(DPS)
def rr_rdp_direct(order: Real, epsilon: Real, k: int) -> mpf:
    """The divergence summed over the k outputs.

    ``P = (e^eps, 1, 1, ...) / Z`` and ``Q = (1, e^eps, 1, ...) / Z`` with ``Z = e^eps + k - 1``.
    """
    e = mpmath.exp(mpf(epsilon))
    z = e + k - 1
    terms = [(e / z, 1 / z, 1), (1 / z, e / z, 1)]
    if k > 2:
        terms.append((1 / z, 1 / z, k - 2))
    return renyi(terms, order)


@mpmath.workdps(DPS)
def bitvector_rr_rdp(order: Real, bit_epsilon: Real, x: Sequence[int], y: Sequence[int]) -> mpf:
    """Rényi divergence of bit-vector RR between inputs x and y, over all 2^num_bits outputs.

    Each bit is flipped independently with probability ``q = 1 / (1 + e^bit_epsilon)``.
    """
    q = 1 / (1 + mpmath.exp(mpf(bit_epsilon)))

    def probability(report: tuple[int, ...], truth: Sequence[int]) -> mpf:
        result = mpf(1)
        for bit, true_bit in zip(report, truth, strict=True):
            result *= q if bit != true_bit else 1 - q
        return result

    outputs = itertools.product((0, 1), repeat=len(x))
    return renyi([(probability(r, x), probability(r, y), 1) for r in outputs], order)


@mpmath.workdps(DPS)
def laplace_rdp_closed(order: Real, scale: Real, sensitivity: Real = 1) -> mpf:
    """Mironov Prop. 6 with ``1/lambda = sensitivity / scale = eps``, capped at eps (order inf)."""
    a, e = mpf(order), mpf(sensitivity) / mpf(scale)
    inner = a / (2 * a - 1) * mpmath.exp((a - 1) * e) + (a - 1) / (2 * a - 1) * mpmath.exp(-a * e)
    return min(mpmath.log(inner) / (a - 1), e)


@mpmath.workdps(DPS)
def laplace_rdp_quad(order: Real, scale: Real, sensitivity: Real) -> mpf:
    """``D_a(Lap(0, b) || Lap(s, b))`` by numerical integration, split at the kinks 0 and s."""
    a, b, s = mpf(order), mpf(scale), mpf(sensitivity)

    def integrand(x: mpf) -> mpf:
        log_p = -abs(x) / b - mpmath.log(2 * b)
        log_q = -abs(x - s) / b - mpmath.log(2 * b)
        return mpmath.exp(a * log_p + (1 - a) * log_q)

    pieces = ([-mpmath.inf, 0], [0, s], [s, mpmath.inf])
    return mpmath.log(mpmath.fsum(mpmath.quad(integrand, piece) for piece in pieces)) / (a - 1)


def _golden(f: Callable[[mpf], mpf], low: mpf, high: mpf, iterations: int = 120) -> mpf:
    """Argmax of a unimodal ``f`` on [low, high]."""
    ratio = (mpmath.sqrt(5) - 1) / 2
    c, d = high - ratio * (high - low), low + ratio * (high - low)
    fc, fd = f(c), f(d)
    for _ in range(iterations):
        if fc > fd:
            high, d, fd = d, c, fc
            c = high - ratio * (high - low)
            fc = f(c)
        else:
            low, c, fc = c, d, fd
            d = low + ratio * (high - low)
            fd = f(d)
    return (low + high) / 2


def maximize_over_orders(
    f: Callable[[mpf], mpf], low: int = -25, high: int = 25
) -> tuple[mpf, mpf]:
    """``sup f(a)`` over ``a = 1 + e^x``, x in [low, high]: grid step 1/8, then golden section.

    Returns (value, order). The caller adds the limits at the ends of the range.
    """
    xs = [mpf(low) + mpf(i) / 8 for i in range(8 * (high - low) + 1)]

    def in_x(x: mpf) -> mpf:
        return f(1 + mpmath.exp(x))

    values = [in_x(x) for x in xs]
    best = max(range(len(xs)), key=values.__getitem__)
    if 0 < best < len(xs) - 1:
        x = _golden(in_x, xs[best - 1], xs[best + 1])
        value = in_x(x)
        if value >= values[best]:
            return value, 1 + mpmath.exp(x)
    return values[best], 1 + mpmath.exp(xs[best])


@mpmath.workdps(DPS)
def rr_rho(epsilon: Real, k: int) -> tuple[mpf, mpf]:
    """``sup_a RDP(a) / a`` of k-ary RR and the order attaining it (1 for the limit a -> 1).

    The limit at a -> 1 is the KL divergence ``eps (e^eps - 1) / (e^eps + k - 1)``.
    """
    e = mpf(epsilon)
    kl = e * mpmath.expm1(e) / (mpmath.exp(e) + k - 1)
    value, order = maximize_over_orders(lambda a: rr_rdp(a, e, k) / a)
    return (value, order) if value > kl else (kl, mpf(1))


@mpmath.workdps(DPS)
def kov_delta(epsilon0: Real, k: int, epsilon: Real) -> mpf:
    """KOV: ``sum_l C(k,l) [e^{(k-l) eps0} - e^{eps + l eps0}]_+ / (1 + e^{eps0})^k``.

    ``l`` (``j`` below) counts the reports that show the neighbour's bit.
    """
    e0, e = mpf(epsilon0), mpf(epsilon)
    total = mpmath.fsum(
        mpmath.binomial(k, j) * (mpmath.exp((k - j) * e0) - mpmath.exp(e + j * e0))
        for j in range(k + 1)
        if (k - 2 * j) * e0 > e
    )
    # A probability: rounding at 50 digits can push a total of ~1 just above 1.
    return min(mpf(1), total / (1 + mpmath.exp(e0)) ** k)


@mpmath.workdps(DPS)
def kov_delta_window(epsilon0: Real, k: int, epsilon: Real, width: int) -> mpf:
    """The KOV sum over only the ``width`` terms next to the threshold, for very large ``k``.

    A lower bound on :func:`kov_delta`; with ``width`` 20 binomial standard deviations the
    dropped terms are below e^-200 of the kept ones. Log binomials come from ``loggamma`` at 50
    digits, exact to far beyond double precision even for k = 1e7.
    """
    e0, e = mpf(epsilon0), mpf(epsilon)
    # Terms with j flipped reports contribute while (k - 2j) eps0 > eps, i.e. j < threshold.
    threshold = int(mpmath.floor((k - e / e0) / 2)) + 2
    while threshold > 0 and (k - 2 * (threshold - 1)) * e0 <= e:
        threshold -= 1
    log_norm = k * mpmath.log(1 + mpmath.exp(e0))
    log_k = mpmath.loggamma(k + 1)
    total = mpf(0)
    for j in range(max(0, threshold - width), threshold):
        log_c = log_k - mpmath.loggamma(j + 1) - mpmath.loggamma(k - j + 1) - log_norm
        total += mpmath.exp(log_c + (k - j) * e0) - mpmath.exp(log_c + e + j * e0)
    return total


@mpmath.workdps(DPS)
def kov_epsilon(epsilon0: Real, k: int, delta: Real) -> tuple[mpf, mpf]:
    """Bracket ``(low, high)`` of the exact epsilon solving ``kov_delta(eps) = delta``.

    Bisection to a width of ``k eps0 2^-110``: ``low`` is below the optimum, ``high`` above it.
    The KOV terms are computed once; each step sums the terms whose loss exceeds epsilon.
    """
    e0, d = mpf(epsilon0), mpf(delta)
    norm = (1 + mpmath.exp(e0)) ** k
    # (loss, C e^{(k-j) eps0} / norm, C e^{j eps0} / norm) for the outcomes with j flipped reports
    terms = [
        (
            (k - 2 * j) * e0,
            mpmath.binomial(k, j) * mpmath.exp((k - j) * e0) / norm,
            mpmath.binomial(k, j) * mpmath.exp(j * e0) / norm,
        )
        for j in range(k + 1)
        if k - 2 * j > 0
    ]

    def delta_at(e: mpf) -> mpf:
        factor = mpmath.exp(e)
        return mpmath.fsum(a - factor * b for loss, a, b in terms if loss > e)

    low, high = mpf(0), k * e0
    if delta_at(low) <= d:
        return low, low
    for _ in range(110):
        middle = (low + high) / 2
        if delta_at(middle) <= d:
            high = middle
        else:
            low = middle
    return low, high


@mpmath.workdps(DPS)
def gaussian_delta(mu: Real, epsilon: Real) -> mpf:
    """Balle–Wang: ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``."""
    m, e = mpf(mu), mpf(epsilon)
    return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


@mpmath.workdps(DPS)
def cks_epsilon(curve: Callable[[mpf], mpf], delta: Real) -> tuple[mpf, mpf]:
    """CKS Prop. 12: ``min_a curve(a) + ln(1 - 1/a) - (ln delta + ln a) / (a - 1)``, its order."""
    log_delta = mpmath.log(mpf(delta))

    def objective(a: mpf) -> mpf:
        return curve(a) + mpmath.log(1 - 1 / a) - (log_delta + mpmath.log(a)) / (a - 1)

    value, order = maximize_over_orders(lambda a: -objective(a), low=-20, high=20)
    return -value, order


@mpmath.workdps(DPS)
def cks_delta(curve: Callable[[mpf], mpf], epsilon: Real) -> mpf:
    """CKS Prop. 12 solved for delta: ``min_a e^{(a-1)(curve(a) - eps)} / a (1 - 1/a)^(a-1)``."""
    e = mpf(epsilon)

    def log_delta(a: mpf) -> mpf:
        return (a - 1) * (curve(a) - e) - mpmath.log(a) + (a - 1) * mpmath.log(1 - 1 / a)

    value, _ = maximize_over_orders(lambda a: -log_delta(a), low=-20, high=20)
    return min(mpf(1), mpmath.exp(-value))


@mpmath.workdps(DPS)
def mironov_epsilon(curve: Callable[[mpf], mpf], delta: Real) -> mpf:
    """Mironov 2017 Prop. 3, minimized: ``min_a curve(a) + ln(1/delta) / (a - 1)``."""
    log_inverse = -mpmath.log(mpf(delta))
    value, _ = maximize_over_orders(lambda a: -(curve(a) + log_inverse / (a - 1)), -20, 20)
    return -value
