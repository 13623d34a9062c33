"""The privacy blanket of set randomizers (frameldp.accounting.blanket), checked against
values computed here independently:

* the blanket divergence by full enumeration of the blanket reports' counts in 40-digit mpmath
  (the bound may only be above it, by its bands' slack);
* the shuffled mechanisms themselves, for three people, by enumerating every output multiset
  of every dataset (the bound must be above every one: it is a valid guarantee);
* the incomplete-beta closed form against mpmath sums (its stated error must hold);
* connect the dots against the exact curve of a known pair, between the grid points too.

Deterministic: no randomness is drawn.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict
from collections.abc import Callable

import mpmath
import numpy as np
import pytest

from frameldp.accounting import amplify_by_shuffling
from frameldp.accounting.amplification import clone_epsilon
from frameldp.accounting.blanket import (
    Blanket,
    bit_vector_blanket,
    blanket_delta,
    blanket_dots,
    blanket_epsilon,
    blanket_lattice,
    connect_the_dots,
    excess,
)
from frameldp.accounting.events import (
    BlockHadamardResponseEvent,
    BloomRapporEvent,
    HadamardResponseEvent,
    LocalHashingEvent,
    OptimizedUnaryEncodingEvent,
    PrivacyEvent,
    RandomizedResponseEvent,
    RapporEvent,
    ShuffleEvent,
    SubsetSelectionEvent,
)
from frameldp.accounting.events.base import event_from_dict
from frameldp.accounting.guarantee import PrivacyGuarantee
from frameldp.errors import ParameterError

mpmath.mp.dps = 40


def exact_blanket_delta(epsilon: float, blanket: Blanket, n: int) -> mpmath.mpf:
    """E[(gamma / S)((1 - alpha) S + e1 (h - alpha h'))_+] by enumerating S and the four
    counts of reports supporting both values, x only, x' only, neither."""
    e0 = mpmath.e ** mpmath.mpf(blanket.epsilon0)
    e1 = e0 - 1
    alpha = mpmath.e ** mpmath.mpf(epsilon)
    u, both = mpmath.mpf(blanket.inside), mpmath.mpf(blanket.both)
    gamma = 1 / (1 + e1 * u)
    probabilities = (both, u - both, u - both, 1 - 2 * u + both)
    total = mpmath.mpf(0)
    for b in range(n):
        weight = mpmath.binomial(n - 1, b) * gamma**b * (1 - gamma) ** (n - 1 - b)
        size = b + 1
        inner = mpmath.mpf(0)
        for c11 in range(size + 1):
            for c10 in range(size + 1 - c11):
                for c01 in range(size + 1 - c11 - c10):
                    c00 = size - c11 - c10 - c01
                    counts = (c11, c10, c01, c00)
                    p = mpmath.factorial(size)
                    for count, q in zip(counts, probabilities, strict=True):
                        p *= q**count / mpmath.factorial(count)
                    h, h2 = c11 + c10, c11 + c01
                    argument = (1 - alpha) * size + e1 * (h - alpha * h2)
                    inner += p * max(argument, 0)
        total += weight * gamma / size * inner
    return total


@pytest.mark.parametrize(
    ("blanket", "n"),
    [
        (Blanket(1.0, 1 / 3), 9),
        (Blanket(2.0, 0.1), 12),
        (Blanket(1.0, 1 / (math.e + 1), 1 / (math.e + 1) ** 2), 8),
        (Blanket(0.5, 0.5, 0.25), 10),
        (Blanket(3.0, 0.25, 1 / 16), 7),
    ],
)
def test_the_sum_is_above_the_enumerated_divergence_by_its_slack_only(
    blanket: Blanket, n: int
) -> None:
    for epsilon in (0.05, 0.2, 0.5, blanket.epsilon0 * 0.9):
        exact = exact_blanket_delta(epsilon, blanket, n)
        bound = blanket_delta(epsilon, blanket, n)
        assert bound >= exact
        assert bound <= exact * 1.3 + 1e-15, (epsilon, bound, float(exact))


def test_the_sum_is_tight_where_the_bands_are_one_count_wide() -> None:
    """At three people every band holds one count: the sum is the divergence itself."""
    blanket = Blanket(1.0, 1 / 3)
    exact = exact_blanket_delta(0.3, blanket, 3)
    assert blanket_delta(0.3, blanket, 3) == pytest.approx(float(exact), rel=1e-8)


# ------------------------------------------------------------------ the real mechanisms

Law = dict[object, float]


def _rr(k: int, epsilon: float) -> Callable[[int], Law]:
    e = math.exp(epsilon)
    return lambda x: {y: (e if y == x else 1.0) / (e + k - 1) for y in range(k)}


def _oue(k: int, epsilon: float) -> Callable[[int], Law]:
    q = 1.0 / (math.exp(epsilon) + 1.0)

    def law(x: int) -> Law:
        out: Law = {}
        for bits in itertools.product((0, 1), repeat=k):
            p = 1.0
            for j, bit in enumerate(bits):
                one = 0.5 if j == x else q
                p *= one if bit else 1.0 - one
            out[bits] = p
        return out

    return law


def _subsets(k: int, d: int, epsilon: float) -> Callable[[int], Law]:
    subsets = list(itertools.combinations(range(k), d))
    e = math.exp(epsilon)

    def law(x: int) -> Law:
        weights = {s: (e if x in s else 1.0) for s in subsets}
        total = sum(weights.values())
        return {s: w / total for s, w in weights.items()}

    return law


def _hadamard(epsilon: float) -> Callable[[int], Law]:
    """K = 4 columns; value x uses row x + 1 of the Sylvester matrix."""
    rows = [[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]]
    p = math.exp(epsilon) / (math.exp(epsilon) + 1.0)
    return lambda x: {c: (p if rows[x + 1][c] == 1 else 1 - p) / 2 for c in range(4)}


def _local_hashing(g: int, epsilon: float) -> Callable[[int], Law]:
    """Values 0..g-1, hashes h_a(x) = a x mod g (exactly universal), a uniform seed."""
    e = math.exp(epsilon)
    return lambda x: {
        (a, y): (e if (a * x) % g == y else 1.0) / (e + g - 1) / g
        for a in range(g)
        for y in range(g)
    }


def _rappor(k: int, bit_epsilon: float) -> Callable[[int], Law]:
    keep = math.exp(bit_epsilon) / (1.0 + math.exp(bit_epsilon))

    def law(x: int) -> Law:
        out: Law = {}
        for bits in itertools.product((0, 1), repeat=k):
            p = 1.0
            for j, bit in enumerate(bits):
                p *= keep if bit == (j == x) else 1.0 - keep
            out[bits] = p
        return out

    return law


# Values 0..3 of a four-bit vector: two sets sharing a bit, one disjoint from the first, one
# of weight one (the case a Bloom filter's collisions give).
_BIT_SETS = ({0, 1}, {1, 2}, {2, 3}, {0})


def _bit_vectors(one: float, zero: float) -> Callable[[int], Law]:
    """Each of four bits reports 1 with ``one`` where the value sets it, ``zero`` elsewhere."""

    def law(x: int) -> Law:
        out: Law = {}
        for bits in itertools.product((0, 1), repeat=4):
            p = 1.0
            for j, bit in enumerate(bits):
                q = one if j in _BIT_SETS[x] else zero
                p *= q if bit else 1.0 - q
            out[bits] = p
        return out

    return law


def _block_hadamard(epsilon: float) -> Callable[[int], Law]:
    """B = 2 blocks of b = 4 outputs; values 0..2 of block 0 and 3 of block 1 (rows 1..3)."""
    rows = [[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]]
    e = math.exp(epsilon)
    p = 2 * e / (2 * e + 6)  # s = 2 of the 8 outputs, weight e^eps each

    def law(x: int) -> Law:
        block, row = (0, x + 1) if x < 3 else (1, 1)
        inside = {(block, c) for c in range(4) if rows[row][c] == 1}
        return {
            (b, c): (p / 2 if (b, c) in inside else (1 - p) / 6) for b in range(2) for c in range(4)
        }

    return law


@functools.cache
def _multisets(
    law: Callable[[int], Law], people: tuple[int, ...]
) -> dict[tuple[object, ...], float]:
    """The law of the multiset of the people's reports (kept for every epsilon and pair)."""
    out: dict[tuple[object, ...], float] = {(): 1.0}
    for person in people:
        following: dict[tuple[object, ...], float] = defaultdict(float)
        for key, p in out.items():
            for y, q in law(person).items():
                following[tuple(sorted((*key, y), key=repr))] += p * q
        out = following
    return out


def shuffled_delta(law: Callable[[int], Law], values: list[int], epsilon: float) -> float:
    """The largest delta(epsilon) over datasets of three people (the others' values from
    ``values``) and ordered pairs of the changing value, by enumerating output multisets."""

    worst = 0.0
    alpha = math.exp(epsilon)
    for others in itertools.product(values, repeat=2):
        for x, x2 in itertools.permutations(values, 2):
            p = _multisets(law, tuple(sorted((x, *others))))
            q = _multisets(law, tuple(sorted((x2, *others))))
            worst = max(worst, sum(max(p[key] - alpha * q.get(key, 0.0), 0.0) for key in p))
    return worst


@pytest.mark.parametrize(
    ("event", "law", "values"),
    [
        (RandomizedResponseEvent(1.5, 3), _rr(3, 1.5), [0, 1, 2]),
        (OptimizedUnaryEncodingEvent(1.5), _oue(3, 1.5), [0, 1, 2]),
        (SubsetSelectionEvent(1.5, 4, 2), _subsets(4, 2, 1.5), [0, 1, 2, 3]),
        (HadamardResponseEvent(1.5), _hadamard(1.5), [0, 1, 2]),
        (LocalHashingEvent(1.5, 3), _local_hashing(3, 1.5), [0, 1, 2]),
        (RapporEvent(0.75, 1), _rappor(3, 0.75), [0, 1, 2]),
        (BlockHadamardResponseEvent(1.5, 2), _block_hadamard(1.5), [0, 1, 2, 3]),
        (
            RapporEvent(0.6, 2),
            _bit_vectors(1 / (1 + math.exp(-0.6)), 1 / (1 + math.exp(0.6))),
            [0, 1, 2, 3],
        ),
        (BloomRapporEvent(2, 0.25, 0.75, 0.5), _bit_vectors(0.6875, 0.5625), [0, 1, 2, 3]),
        (BloomRapporEvent(2, 0.1, 0.9, 0.2), _bit_vectors(0.83, 0.27), [0, 1, 2, 3]),
    ],
)
def test_the_blanket_bounds_every_dataset_of_the_real_mechanism(
    event: PrivacyEvent, law: Callable[[int], Law], values: list[int]
) -> None:
    """For three people, every dataset and every pair of values: the shuffled mechanism's
    delta is below the blanket's (the largest over the event's kinds of pair)."""
    blankets = event.blankets()
    assert blankets
    for epsilon in (0.1, 0.4, 0.8):
        exact = shuffled_delta(law, values, epsilon)
        bound = max(blanket_delta(epsilon, blanket, 3) for blanket in blankets)
        assert exact <= bound * (1 + 1e-9), (epsilon, exact, bound)


def exact_bit_vector_deltas(
    epsilons: tuple[float, ...],
    one: float,
    zero: float,
    weight: int,
    sets: tuple[int, int, int],
    n: int,
) -> list[float]:
    """The blanket divergence of a bit-vector randomizer itself (not of the set randomizer
    above it), by enumerating the reports of ``n`` people: bits flip to 1 with ``one`` where a
    value sets them and ``zero`` elsewhere; the pair's values set ``sets = (x only, x' only,
    both)`` bits; the blanket is the empty vector's law times ``lo``. A report's ratios depend
    on its ones among each value's bits, so the sums are kept as counts of those."""
    ratio_one, ratio_zero = one / zero, (1 - one) / (1 - zero)
    gamma = min(ratio_one, ratio_zero) ** weight
    only_x, only_x2, shared = sets
    size_x, size_x2 = only_x + shared, only_x2 + shared
    # One blanket report: (ones among x's bits, ones among x''s bits) and its probability.
    cells: dict[tuple[int, int], float] = defaultdict(float)
    for s, j, j2 in itertools.product(range(shared + 1), range(only_x + 1), range(only_x2 + 1)):
        p = math.comb(shared, s) * math.comb(only_x, j) * math.comb(only_x2, j2)
        p *= zero ** (s + j + j2) * (1 - zero) ** (shared + only_x + only_x2 - s - j - j2)
        cells[(s + j, s + j2)] += p
    level_x = [ratio_one**k * ratio_zero ** (size_x - k) for k in range(size_x + 1)]
    level_x2 = [ratio_one**k * ratio_zero ** (size_x2 - k) for k in range(size_x2 + 1)]
    alphas = [math.exp(epsilon) for epsilon in epsilons]
    # State: how many of the S reports have each count of ones among x's bits, and x''s.
    start = ((0,) * (size_x + 1), (0,) * (size_x2 + 1))
    states: dict[tuple[tuple[int, ...], tuple[int, ...]], float] = {start: 1.0}
    deltas = [0.0] * len(epsilons)
    for size in range(1, n + 1):
        following: dict[tuple[tuple[int, ...], tuple[int, ...]], float] = defaultdict(float)
        for (counts, counts2), p in states.items():
            for (k, k2), q in cells.items():
                key = (
                    tuple(c + (i == k) for i, c in enumerate(counts)),
                    tuple(c + (i == k2) for i, c in enumerate(counts2)),
                )
                following[key] += p * q
        states = following
        weight_s = math.comb(n - 1, size - 1) * gamma ** (size - 1) * (1 - gamma) ** (n - size)
        for (counts, counts2), p in states.items():
            first = sum(c * r for c, r in zip(counts, level_x, strict=True))
            second = sum(c * r for c, r in zip(counts2, level_x2, strict=True))
            for i, alpha in enumerate(alphas):
                deltas[i] += weight_s * p * max(first - alpha * second, 0.0) / size
    return deltas


def test_the_set_randomizer_above_bit_vectors_has_the_stated_parameters() -> None:
    """eps0 = ln(hi/lo), inside = (1 - lo)/(hi - lo), both = inside^2 and gamma = lo, computed
    here from the bit probabilities (RAPPOR's symmetric bits, and Bloom RAPPOR's q*, p*); and
    the figures docs/shuffle.md quotes, at eps0 = 1 (1.074) among 10^4 people."""
    for event, one, zero, weight in (
        (RapporEvent(0.25, 2), 1 / (1 + math.exp(-0.25)), 1 / (1 + math.exp(0.25)), 2),
        (BloomRapporEvent(2, 0.25, 0.75, 0.5), 0.6875, 0.5625, 2),
    ):
        [blanket] = event.blankets()
        ratios = (one / zero, (1 - one) / (1 - zero))
        lo, hi = min(ratios) ** weight, max(ratios) ** weight
        inside = (1 - lo) / (hi - lo)
        assert blanket.epsilon0 == pytest.approx(math.log(hi / lo), rel=1e-12)
        assert blanket.inside == pytest.approx(inside, rel=1e-12)
        assert blanket.both == pytest.approx(inside**2, rel=1e-12)
        assert blanket.gamma == pytest.approx(lo, rel=1e-12)
    high = clone_epsilon(1e-6, 1.0, 10_000)
    [rappor] = RapporEvent(0.25, 2).blankets()
    assert blanket_epsilon(1e-6, rappor, 10_000, high) == pytest.approx(0.031026, rel=1e-4)


@pytest.mark.parametrize(
    ("one", "zero", "weight", "sets"),
    [
        (0.7, 0.3, 2, (2, 2, 0)),  # RAPPOR, two ones per value, disjoint
        (0.7, 0.3, 2, (1, 1, 1)),  # sharing one bit
        (0.83, 0.27, 2, (2, 1, 0)),  # Bloom RAPPOR; a value whose hashes collide
        (0.83, 0.27, 3, (1, 1, 2)),
    ],
)
def test_the_set_randomizer_above_bit_vectors_bounds_their_blanket_divergence(
    one: float, zero: float, weight: int, sets: tuple[int, int, int]
) -> None:
    """The two steps of the domination (module docstring, *Bit vectors*) checked on the exact
    multi-level divergence among eight people: shared bits only lower it, and the set
    randomizer's divergence is above it at every epsilon."""
    [blanket] = bit_vector_blanket(math.log(one / zero), math.log((1 - one) / (1 - zero)), weight)
    only_x, only_x2, shared = sets
    apart = (only_x + shared, only_x2 + shared, 0)
    epsilons = (0.05, 0.3, 0.8, 1.5)
    exact = exact_bit_vector_deltas(epsilons, one, zero, weight, sets, 8)
    disjoint = exact_bit_vector_deltas(epsilons, one, zero, weight, apart, 8)
    for epsilon, value, apart_value in zip(epsilons, exact, disjoint, strict=True):
        bound = blanket_delta(epsilon, blanket, 8)
        assert value <= apart_value * (1 + 1e-12) <= bound * (1 + 1e-9), (epsilon, value, bound)


def test_the_blankets_of_pairs_that_share_no_output_are_tighter_for_the_other_kind() -> None:
    """Block Hadamard response keeps both kinds of pair; the pair of different blocks (nothing
    shared) is the worse one, and the one counted."""
    same, different = BlockHadamardResponseEvent(1.0, 4).blankets()
    assert same.both > 0.0 == different.both
    assert blanket_delta(0.2, different, 300) > blanket_delta(0.2, same, 300)


# ------------------------------------------------------------------ the closed form


@pytest.mark.parametrize("m", [1, 7, 1000, 10**6, 10**8])
def test_the_incomplete_beta_closed_form_holds_its_error_bound(m: int) -> None:
    mean, spread = m / 2, math.sqrt(m) / 2
    taus = np.array([-3.0, mean + 0.5, mean + 3 * spread, mean + 9 * spread, mean + 30 * spread])
    taus = taus[taus <= m + 1]
    values, errors = excess(taus, np.full(taus.size, float(m)))
    for tau, value, error in zip(taus, values, errors, strict=True):
        exact = _mp_excess(float(tau), m)
        assert abs(value - exact) <= error + exact * 1e-15, (m, tau, value, float(exact))


def _mp_excess(tau: float, m: int) -> mpmath.mpf:
    """E (c - tau)_+ for c ~ Bin(m, 1/2) in 40-digit mpmath: the terms from the first count
    above tau on, each probability from the previous by the ratio (m - j) / (j + 1), until
    they fall below 10^-25 of the sum (their tail is then geometric and smaller still)."""
    if tau < 0:
        return mpmath.mpf(m) / 2 - mpmath.mpf(tau)
    j = math.floor(tau) + 1
    if j > m:
        return mpmath.mpf(0)
    log_p = mpmath.loggamma(m + 1) - mpmath.loggamma(j + 1) - mpmath.loggamma(m - j + 1)
    p = mpmath.exp(log_p - m * mpmath.log(2))
    total = mpmath.mpf(0)
    t = mpmath.mpf(tau)
    while j <= m:
        total += (j - t) * p
        if j > m / 2 and (j - t) * p < total * mpmath.mpf(10) ** -25:
            break
        p *= mpmath.mpf(m - j) / (j + 1)
        j += 1
    return total


# ------------------------------------------------------------------ connect the dots


def test_connect_the_dots_lies_above_the_exact_curve_everywhere() -> None:
    """The curve of a shuffled blanket pair at 5 people, exact at 30 grid points: the pair
    built from it has a curve above the exact one at 400 points, on both sides of 1."""
    blanket, n = Blanket(1.0, 0.25), 5
    grid = np.linspace(0.02, 1.0, 30)
    bounds = np.array([float(exact_blanket_delta(e, blanket, n)) for e in grid])
    bounds[-1] = 0.0
    losses, masses, error = connect_the_dots(np.exp(grid), bounds)
    assert error < 1e-9
    assert masses.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.dot(masses, np.exp(-losses)) <= 1.0 + 1e-12
    for epsilon in np.linspace(-1.0, 1.0, 400):
        built = float(np.dot(masses, np.maximum(1.0 - np.exp(epsilon - losses), 0.0)))
        if epsilon >= 0:
            exact = float(exact_blanket_delta(float(epsilon), blanket, n))
        else:  # the pair is symmetric: H(a) = 1 - a + a H(1/a)
            alpha = math.exp(epsilon)
            exact = 1 - alpha + alpha * float(exact_blanket_delta(-float(epsilon), blanket, n))
        assert built >= exact - 1e-12, (epsilon, built, exact)


def test_the_connect_the_dots_pair_is_a_pair() -> None:
    losses, masses, error = blanket_dots((Blanket(1.0, 0.25, 1 / 16),), 500, 0.15)
    assert error < 1e-9
    assert (masses >= 0).all()
    assert masses.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.dot(masses, np.exp(-losses)) <= 1.0 + 1e-9
    assert losses.max() <= 1.0 + 1e-9


# ------------------------------------------------------------------ the shuffle event


def test_a_shuffled_set_randomizer_is_accounted_by_its_blanket() -> None:
    """OUE among 10^4 people at eps0 = 1: the clone bound says 0.053, the blanket 0.030; the
    explanation names it, the event survives its dict, and compositions use its pair."""
    local = PrivacyGuarantee(1.0, "oue", {}, (), ((OptimizedUnaryEncodingEvent(1.0), 1),))
    shuffled = amplify_by_shuffling(local, 10_000)
    event = shuffled.events[0][0]
    assert isinstance(event, ShuffleEvent)
    assert event.pair == "blanket_dots"
    epsilon, how = event.central_method(1e-6)
    assert epsilon == pytest.approx(0.0300, abs=2e-4)
    assert epsilon < 0.6 * clone_epsilon(1e-6, 1.0, 10_000)
    assert "privacy blanket of optimized_unary_encoding" in how
    assert event_from_dict(event.to_dict()) == event
    ten = event.privacy_loss(10).epsilon(1e-6)
    clones = ShuffleEvent(1.0, 10_000).privacy_loss(10).epsilon(1e-6)
    assert epsilon < ten < 0.65 * clones


def test_three_ary_rr_among_a_million_uses_the_blanket() -> None:
    """Before: the stronger clones (0.003514) at 10^6 people, eps0 = 1, delta = 1e-6 (10-RR:
    0.001860, in benchmarks/bench_shuffle.py)."""
    for k, expected in ((3, 0.003091),):
        event = ShuffleEvent(1.0, 10**6, "stronger_clones", k)
        epsilon, how = event.central_method(1e-6)
        assert epsilon == pytest.approx(expected, rel=2e-3)
        assert how.startswith("privacy blanket of")


def test_a_bad_local_event_is_refused() -> None:
    with pytest.raises(ParameterError, match="local"):
        ShuffleEvent(1.0, 100, local="oue")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="local"):
        ShuffleEvent(1.0, 100, local=OptimizedUnaryEncodingEvent(2.0))
    with pytest.raises(ParameterError, match="inside"):
        Blanket(1.0, 1.5)
    with pytest.raises(ParameterError, match="both"):
        Blanket(1.0, 0.3, 0.4)


def test_blanket_epsilon_solves_for_the_sum() -> None:
    blanket = Blanket(1.0, 0.1)
    epsilon = blanket_epsilon(1e-6, blanket, 1000, 0.15)
    assert blanket_delta(epsilon, blanket, 1000) <= 1e-6 * (1 + 1e-6)
    assert blanket_delta(epsilon * 0.99, blanket, 1000) > 1e-6


@pytest.mark.parametrize("k", [4, 5, 6, 7])
def test_subset_selection_of_all_but_one_value_is_accounted(k: int) -> None:
    """Found by review: k - 1 of k values puts both at 2 inside - 1, where float rounding
    refused the blanket or reached log1p(-1). Every report then supports one value."""
    event = ShuffleEvent(1.0, 1000, "clones", None, SubsetSelectionEvent(1.0, k, k - 1))
    epsilon = event.central_epsilon(1e-6)
    assert 0.0 < epsilon <= clone_epsilon(1e-6, 1.0, 1000)
    assert event.central_delta(epsilon) <= 1e-6 * (1 + 1e-9)


def test_a_year_of_connect_the_dots_pairs_resolves_a_small_delta() -> None:
    """Found by the final read: an l1 error of 2^-40 per grid point, composed 365 times, put
    delta = 1e-9 out of reach (infinite epsilon). The pair of 10-RR among 10^3 people, a year
    of it: within 4% of the enumerated blanket lattice (2.507)."""
    from frameldp.accounting.lattice import to_pld

    pair = blanket_lattice((Blanket(1.0, 0.1),), 1000, 2.0**-14, 0.0803)
    epsilon = to_pld(pair.power(365), exact=False).epsilon(1e-9)
    assert 2.5 <= epsilon <= 2.507 * 1.04
