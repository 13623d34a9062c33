"""Samplers, estimators and settings of the frequency oracles at the variance frontier.

Distributional tests run on fixed seeds at the declared false-failure probability ``P_FAIL``
(Bonferroni-split where one test makes several assertions); each docstring says what it can
detect. Estimator tests draw ``REPS`` independent runs of ``N`` reports in one call (rows are
independent, so blocks of rows are independent runs) and check, per bucket, the mean of the
standardized errors (unbiasedness) and their sum of squares (the variance of the theory).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

import frameldp
from _stats import P_FAIL, assert_binomial, assert_chisquare, z_bound
from frameldp.core.encoding import count_bits, unpack_bits
from frameldp.core.estimation import direct_variance
from frameldp.core.mechanisms import Statistic
from frameldp.core.mechanisms.choice import compare_mechanisms, mean_variance
from frameldp.core.mechanisms.hadamard_response import walsh_hadamard
from frameldp.core.randomness import RandomSource

SEED = 20261124
LABEL = "oracle test"


def _source() -> RandomSource:
    return RandomSource.from_seed(SEED)


def _codes(value: int, n: int) -> np.ndarray:
    return np.full(n, value, dtype=np.int64)


# --- samplers --------------------------------------------------------------------------------


def test_oue_bits_have_their_probabilities() -> None:
    """The true value's bit is 1 with 1/2, every other with q, independently of each other.

    n = 200,000 rows; 4 binomial tests and a 2x2 independence test at ``P_FAIL / 5`` each: a
    shift of 0.006 in the true bit's probability is detected with probability 0.99.
    """
    mech = frameldp.OptimizedUnaryEncoding(1.0, domain=list("abcd"))
    n = 200_000
    bits = unpack_bits(mech.randomize(_codes(2, n), source=_source(), label=LABEL), 4)
    p_fail = P_FAIL / 5
    assert_binomial(bits[:, 2].sum(), n, 0.5, p_fail=p_fail)
    for j in (0, 1, 3):
        assert_binomial(bits[:, j].sum(), n, mech.zero_probability, p_fail=p_fail)
    table = np.histogram2d(bits[:, 2], bits[:, 0], bins=2)[0]
    assert stats.chi2_contingency(table).pvalue > p_fail


@pytest.mark.parametrize(
    ("k", "d", "key"),
    [(5, 2, "seed"), (6, 3, "seed"), (4, 1, "seed"), (5, 2, "fresh"), (7, 3, "fresh")],
)
def test_subset_selection_draws_every_subset_with_its_probability(k: int, d: int, key: str) -> None:
    """``P[S | x] = p / C(k-1, d-1)`` on subsets holding ``x``, ``(1-p) / C(k-1, d)`` else,
    by both samplers: Floyd's (noise bound to values: a seed) and a fresh key's (position by
    position at these sizes, :func:`~frameldp.core.mechanisms.subset_selection.sparse_subsets`;
    both fresh-key samplers are tested directly below).

    n = 200,000 reports of value 1, a chi-square test over all ``C(k, d)`` subsets at
    ``P_FAIL`` (split over the cases): it detects, with probability 0.99, a sampler favouring
    one subset by about 5 % of its probability (non-centrality 60 at these sizes).
    """
    mech = frameldp.SubsetSelection(1.0, domain=list(range(k)), subset_size=d)
    n = 200_000
    # a fixed key drawn by position, as a fresh key's noise is: reproducible here
    by_position = RandomSource(bytes(range(32)), kind="fresh")
    source = _source() if key == "seed" else by_position
    bits = unpack_bits(mech.randomize(_codes(1, n), source=source, label=LABEL), k)
    assert (bits.sum(axis=1) == d).all()
    subsets = list(itertools.combinations(range(k), d))
    index = {s: i for i, s in enumerate(subsets)}
    observed = np.bincount(
        [index[tuple(np.flatnonzero(row))] for row in bits], minlength=len(subsets)
    )
    p = mech.inclusion_probability
    probs = [
        p / math.comb(k - 1, d - 1) if 1 in s else (1 - p) / math.comb(k - 1, d) for s in subsets
    ]
    assert_chisquare(observed, probs, p_fail=P_FAIL / 5)


def test_hadamard_response_is_uniform_on_each_half() -> None:
    """``P[y | x] = 2p/K`` on the value's half of the columns and ``2(1-p)/K`` off it.

    n = 200,000 reports of value 2 over ``K = 8`` columns, one chi-square test at ``P_FAIL``.
    """
    mech = frameldp.HadamardResponse(1.5, domain=list("abcde"))
    n = 200_000
    y = mech.randomize(_codes(2, n), source=_source(), label=LABEL)
    size = mech.num_columns
    inside = [bin(3 & column).count("1") % 2 == 0 for column in range(size)]
    p = mech.inside_probability
    probs = [2 * p / size if i else 2 * (1 - p) / size for i in inside]
    assert_chisquare(np.bincount(y, minlength=size), probs, p_fail=P_FAIL)


def test_projective_geometry_response_is_uniform_through_and_off_the_value() -> None:
    """``P[h | x] = p / D`` on each hyperplane through ``x`` and ``(1 - p)/(K - D)`` on each
    other, checked against the incidences written out directly (``<h, x> = 0`` over ``F_3``).

    n = 200,000 reports of value 5 over the 13 hyperplanes of ``P^2(F_3)``, with 10 of its
    points in the domain; one chi-square test at ``P_FAIL``.
    """
    mech = frameldp.ProjectiveGeometryResponse(1.5, domain=list(range(10)), field_size=3)
    assert (mech.dimension, mech.num_points) == (3, 13)
    n = 200_000
    h = mech.randomize(_codes(5, n), source=_source(), label=LABEL)
    points = [(1, a, b) for a in range(3) for b in range(3)] + [(0, 1, b) for b in range(3)]
    points.append((0, 0, 1))
    through = [
        sum(a * b for a, b in zip(point, points[5], strict=True)) % 3 == 0 for point in points
    ]
    assert sum(through) == 4
    p = mech.inclusion_probability
    probs = [p / 4 if hit else (1 - p) / 9 for hit in through]
    assert_chisquare(np.bincount(h, minlength=13), probs, p_fail=P_FAIL)


def test_local_hashing_seed_and_value_have_their_laws() -> None:
    """Seeds are uniform over the family and independent of the value; ``y`` is the value's
    hash with ``p`` and each other bucket with ``(1 - p)/(g - 1)``.

    n = 200,000 reports of each of two values, 3 chi-square tests at ``P_FAIL / 3``.
    """
    mech = frameldp.LocalHashing(1.0, domain=list(range(7)))
    g = mech.num_buckets
    assert g == 3
    n = 200_000
    p_fail = P_FAIL / 3
    seeds_of = []
    for value in (0, 5):
        reports = mech.randomize(_codes(value, n), source=_source(), label=LABEL).astype(np.int64)
        seeds, y = np.divmod(reports, g)
        seeds_of.append(np.bincount(seeds, minlength=mech.num_seeds))
        offset = (y - mech.hash_values(seeds, _codes(value, n))) % g
        p = mech.keep_probability
        assert_chisquare(
            np.bincount(offset, minlength=g), [p, (1 - p) / 2, (1 - p) / 2], p_fail=p_fail
        )
    table = np.array(seeds_of)
    assert stats.chi2_contingency(table).pvalue > p_fail


def test_walsh_hadamard_matches_the_matrix() -> None:
    rng = np.random.default_rng(0)
    for size in (1, 2, 8, 64):
        values = rng.integers(0, 100, size)
        matrix = np.array(
            [[(-1) ** bin(i & j).count("1") for j in range(size)] for i in range(size)]
        )
        np.testing.assert_array_equal(walsh_hadamard(values), matrix @ values)


# --- estimators ------------------------------------------------------------------------------

REPS = 400
N = 2_000
K = 6
TRUTH = np.array([800, 500, 350, 200, 150, 0])  # counts of the K values in each run of N

ORACLES: dict[str, Callable[[], Any]] = {
    "oue": lambda: frameldp.OptimizedUnaryEncoding(1.0, domain=list(range(K))),
    "olh": lambda: frameldp.LocalHashing(1.5, domain=list(range(K))),
    "blh": lambda: frameldp.LocalHashing(1.0, domain=list(range(K)), num_buckets=2),
    "subset": lambda: frameldp.SubsetSelection(1.0, domain=list(range(K)), subset_size=2),
    "hadamard": lambda: frameldp.HadamardResponse(2.0, domain=list(range(K))),
    "projective-q2": lambda: frameldp.ProjectiveGeometryResponse(
        1.0, domain=list(range(K)), field_size=2
    ),
    "projective-q3": lambda: frameldp.ProjectiveGeometryResponse(
        2.0, domain=list(range(K)), field_size=3
    ),
    "rappor": lambda: frameldp.Rappor(1.0, domain=list(range(K))),
    "krr": lambda: frameldp.RandomizedResponse(1.0, domain=list(range(K))),
}


def _statistics(mech: Any) -> list[Statistic]:
    """``REPS`` statistics of ``N`` reports each, the values in the proportions of ``TRUTH``."""
    one_run = np.repeat(np.arange(K), TRUTH)
    codes = np.tile(one_run, REPS)
    reports = mech.privatize_column(pa.array(codes), column="c", source=_source(), row_start=0)["c"]
    return [mech.statistic({"c": reports.slice(r * N, N)}, column="c") for r in range(REPS)]


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_estimates_are_unbiased_with_the_stated_variance(name: str) -> None:
    """Per bucket, over ``REPS`` runs: the mean standardized error is within
    ``z(P_FAIL / 2K) / sqrt(REPS)`` of 0, and the sum of squared standardized errors is within
    the two-sided ``P_FAIL / 2K`` quantiles of a chi-square with ``REPS`` degrees of freedom
    (the estimates are sums of 2,000 independent reports: normal to well within these bounds).

    Detects, with probability 0.99, a bias of 0.3 standard errors, or a stated variance off by
    a factor 1.5 (or 1/1.5).
    """
    mech = ORACLES[name]()
    p, q = mech.support_probabilities
    exact = direct_variance(TRUTH.astype(np.float64), N, p, q)
    z = np.array([(mech.debias(s).counts - TRUTH) / np.sqrt(exact) for s in _statistics(mech)])
    p_fail = P_FAIL / (2 * K)
    assert np.all(np.abs(z.mean(axis=0)) < z_bound(p_fail) / math.sqrt(REPS))
    squares = (z**2).sum(axis=0)
    low, high = stats.chi2.ppf(p_fail / 2, REPS), stats.chi2.isf(p_fail / 2, REPS)
    assert np.all((squares > low) & (squares < high)), squares


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_the_stated_variance_is_the_plug_in_of_the_exact_one(name: str) -> None:
    mech = ORACLES[name]()
    estimate = mech.debias(_statistics(mech)[0])
    p, q = mech.support_probabilities
    expected = direct_variance(np.clip(estimate.counts, 0, N), N, p, q)
    np.testing.assert_allclose(estimate.variances, expected, rtol=1e-12)
    assert estimate.support == (p, q)


# --- settings ---------------------------------------------------------------------------------


def _olh_factor(epsilon: float, buckets: int) -> float:
    """A rare bucket's variance per report under local hashing (Wang et al. 2017, Eq. 13)."""
    p = math.exp(epsilon) / (math.exp(epsilon) + buckets - 1)
    return (1 / buckets) * (1 - 1 / buckets) / (p - 1 / buckets) ** 2


def test_optimal_local_hashing_takes_the_best_prime_next_to_e_eps_plus_one() -> None:
    for epsilon in (0.1, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0):
        g = frameldp.LocalHashing(epsilon, domain=list(range(50))).num_buckets
        assert g is not None
        target = math.exp(epsilon) + 1
        assert abs(g - target) <= max(2.0, 0.2 * target)
        # It is never worse than round(e^eps + 1) by more than 3 % in variance.
        best_integer = max(2, round(target))

        assert _olh_factor(epsilon, g) <= _olh_factor(epsilon, best_integer) * 1.03


def test_local_hashing_refuses_composite_bucket_counts() -> None:
    with pytest.raises(frameldp.ParameterError, match=r"prime.*3 and 5"):
        frameldp.LocalHashing(1.0, domain=list("abc"), num_buckets=4)
    for bad in (True, 1, 2.0, 1 << 40):
        with pytest.raises(frameldp.ParameterError, match="num_buckets"):
            frameldp.LocalHashing(1.0, domain=list("abc"), num_buckets=bad)


def test_subset_selection_takes_the_variance_optimal_size() -> None:
    for k, epsilon in ((10, 1.0), (64, 1.0), (1024, 4.0), (20, 3.0)):
        mech = frameldp.SubsetSelection(epsilon, domain=list(range(k)))
        assert mech.subset_size is not None
        best = min(
            range(1, k),
            key=lambda d: mean_variance(
                frameldp.SubsetSelection(epsilon, domain=list(range(k)), subset_size=d), k
            ),
        )
        chosen = mean_variance(mech, k)
        optimum = mean_variance(
            frameldp.SubsetSelection(epsilon, domain=list(range(k)), subset_size=best), k
        )
        assert chosen <= optimum * (1 + 1e-3)
    for bad in (0, 4, -1, True, 1.5):
        with pytest.raises(frameldp.ParameterError, match="subset_size"):
            frameldp.SubsetSelection(1.0, domain=list("abcd"), subset_size=bad)


@pytest.mark.parametrize(("epsilon", "ratio"), [(1.0, 1.06), (2.0, 1.27), (4.0, 2.4), (6.0, 5.5)])
def test_rappor_against_oue_as_published(epsilon: float, ratio: float) -> None:
    """A rare bucket's variance under RAPPOR is 1.06, 1.27, 2.4 and 5.5 times OUE's at epsilon
    1, 2, 4, 6 (Wang et al. 2017, Sec. 4.4, the closed forms ``e^{eps/2}/(e^{eps/2}-1)^2`` and
    ``4e^eps/(e^eps-1)^2`` as ``c_j / n -> 0``)."""
    domain = list(range(64))

    def rare(mech: Any) -> float:  # the variance of a bucket whose count is 0
        p, q = mech.support_probabilities
        return float(direct_variance(np.zeros(1), 1, p, q)[0])

    rappor = rare(frameldp.Rappor(epsilon, domain=domain))
    oue = rare(frameldp.OptimizedUnaryEncoding(epsilon, domain=domain))
    assert rappor / oue == pytest.approx(ratio, abs=0.05 * ratio)
    closed = (math.exp(epsilon / 2) / math.expm1(epsilon / 2) ** 2) / (
        4 * math.exp(epsilon) / math.expm1(epsilon) ** 2
    )
    assert rappor / oue == pytest.approx(closed, rel=2e-3)


def test_the_choice_follows_the_published_regimes() -> None:
    """k-RR beats OUE and local hashing below ``k = 3 e^eps + 2`` and loses to them above
    (Wang et al. 2017, Sec. 5); subset selection is at least as good as k-RR (its size 1 is
    k-RR), and ties go to the shorter report, so at small ``k`` k-RR is chosen."""

    def variances(epsilon: float, k: int) -> dict[str, float]:
        rows = compare_mechanisms(epsilon, domain=list(range(k))).records()
        return {row["mechanism"]: row["variance"] for row in rows}

    for epsilon in (1.0, 2.0, 4.0):
        threshold = 3 * math.exp(epsilon) + 2
        below, above = (
            variances(epsilon, int(threshold * 0.7)),
            variances(epsilon, int(threshold * 1.5)),
        )
        for rival in ("optimized_unary_encoding", "local_hashing"):
            assert below["randomized_response"] < below[rival]
            assert above["randomized_response"] > above[rival]
        assert below["subset_selection"] <= below["randomized_response"] * (1 + 1e-12)
    for epsilon, k in ((1.0, 3), (2.0, 10)):
        assert frameldp.choose_mechanism(epsilon, domain=list(range(k))).name == (
            "randomized_response"
        )
    for epsilon, k in ((1.0, 64), (2.0, 200), (4.0, 1024)):
        chosen = frameldp.choose_mechanism(epsilon, domain=list(range(k)))
        assert chosen.name in ("subset_selection", "optimized_unary_encoding")
    comparison = compare_mechanisms(1.0, domain=list(range(1024)), n=10**6)
    variances = [row["variance"] for row in comparison.records()]
    assert variances == sorted(variances)
    assert comparison.records()[0]["relative_variance"] == 1.0


def test_mean_variance_is_the_average_of_the_exact_variances() -> None:
    """Averaged over the buckets, the exact variances do not depend on the distribution."""
    rng = np.random.default_rng(3)
    for build in ORACLES.values():
        mech = build()
        p, q = mech.support_probabilities
        for _ in range(3):
            counts = rng.multinomial(N, rng.dirichlet(np.ones(K)))
            average = direct_variance(counts.astype(np.float64), N, p, q).mean()
            assert mean_variance(mech, K, N) == pytest.approx(average, rel=1e-12)


def test_bad_reports_are_frameldp_errors() -> None:
    lh = frameldp.LocalHashing(1.0, domain=list("abc"))
    hr = frameldp.HadamardResponse(1.0, domain=list("abc"))
    bad_columns = [
        (lh, pa.array([0, 10**9], type=pa.uint64())),
        (lh, pa.array([1, None], type=pa.uint64())),
        (lh, pa.array(["x"])),
        (hr, pa.array([0, 4], type=pa.uint32())),
        (hr, pa.array([-1], type=pa.int64())),
        (hr, pa.array([0.5])),
    ]
    for mech, column in bad_columns:
        with pytest.raises(frameldp.DomainError, match="'dest'"):
            mech.statistic({"dest": column}, column="dest")


def test_bit_vector_oracles_count_bits_like_rappor() -> None:
    mech = frameldp.SubsetSelection(2.0, domain=list(range(11)))
    reports = mech.randomize(np.arange(11).repeat(50), source=_source(), label=LABEL)
    statistic = mech.statistic({"c": pa.array(list(map(bytes, reports)))}, column="c")
    np.testing.assert_array_equal(statistic.parts[0], count_bits(reports, 11))


def test_tampered_subsets_are_refused() -> None:
    """A report that does not hold exactly ``d`` values (all ones, empty) is not a subset
    selection report: refused, naming the column and the row."""
    mech = frameldp.SubsetSelection(1.0, domain=list("abcde"), subset_size=2)
    good = mech.randomize(np.arange(5), source=_source(), label=LABEL)
    for tampered in (np.full(1, 0xF8, dtype=np.uint8), np.zeros(1, dtype=np.uint8)):
        reports = np.vstack([good, tampered[None, :]])
        with pytest.raises(frameldp.DomainError, match=r"'dest'.*row 5 holds"):
            mech.statistic({"dest": pa.array(list(map(bytes, reports)))}, column="dest")


def test_subset_size_one_ties_with_krr_and_the_shorter_report_wins() -> None:
    for epsilon in (0.5, 3.0, 15.0):
        ss = frameldp.SubsetSelection(epsilon, domain=list(range(16)), subset_size=1)
        rr = frameldp.RandomizedResponse(epsilon, domain=list(range(16)))
        assert ss.support_probabilities == rr.support_probabilities
    assert frameldp.choose_mechanism(15.0, domain=list(range(16))).name == "randomized_response"


def test_local_hashing_at_huge_epsilon_and_its_server_memory() -> None:
    """The default hash range stays within what reports can hold, and the server's memory
    does not grow with ``g`` (it used to allocate seeds x g counts)."""
    for epsilon in (18.0, 25.0, 40.0):
        mech = frameldp.LocalHashing(epsilon, domain=list("abc"))
        reports = mech.randomize(np.arange(3).repeat(2000), source=_source(), label=LABEL)
        estimate = mech.debias(Statistic((mech.support_counts(reports),), 6000))
        z = (estimate.counts - 2000) / estimate.std_errors
        assert np.abs(z).max() < z_bound(P_FAIL / 9)


@pytest.mark.parametrize("sampler", ["sparse", "bernoulli"])
@pytest.mark.parametrize(("k", "size", "barred"), [(6, 2, 1), (7, 3, 7), (8, 3, 0)])
def test_both_fresh_key_samplers_draw_every_subset_equally(
    sampler: str, k: int, size: int, barred: int
) -> None:
    """Subset selection's two samplers under a fresh key (position by position, and Bernoulli
    bits with size corrections) draw every ``size``-subset of ``[0, k)`` without ``barred``
    (``k``: none) equally often: a chi-square test over all of them, n = 100,000 rows, at
    ``P_FAIL / 6`` each (k = 6 and 7 are no power of two: candidates past ``k`` rejected)."""
    from frameldp.core.mechanisms.subset_selection import fixed_size_subsets, sparse_subsets

    n = 100_000
    source = RandomSource(bytes(range(32)), kind="fresh")
    rows = source.rows((LABEL, sampler, k), 0, n, lambda: np.zeros((n, 1), np.uint8))
    excluded = np.full(n, barred, dtype=np.int64)
    sizes = np.full(n, size, dtype=np.int64)
    if sampler == "sparse":
        bits = sparse_subsets(rows, "", excluded, sizes, k)
    else:
        bits = fixed_size_subsets(rows, "", excluded, sizes, k, (size << 64) // k)
    _assert_every_subset_equally(bits, k, size, barred, P_FAIL / 6)


def _assert_every_subset_equally(
    bits: np.ndarray, k: int, size: int, barred: int, p_fail: float
) -> None:
    """Every row holds ``size`` of ``[0, k)`` without ``barred``, and each such subset is
    drawn equally often (a chi-square test over all of them at ``p_fail``)."""
    unpacked = unpack_bits(bits, k)
    assert (unpacked.sum(axis=1) == size).all()
    allowed = [j for j in range(k) if j != barred]
    subsets = list(itertools.combinations(allowed, size))
    index = {s: i for i, s in enumerate(subsets)}
    observed = np.bincount(
        [index[tuple(np.flatnonzero(row))] for row in unpacked], minlength=len(subsets)
    )
    assert_chisquare(observed, [1 / len(subsets)] * len(subsets), p_fail=p_fail)


@pytest.mark.parametrize("k", [24, 40, 1618])
def test_fixed_size_subsets_at_sizes_that_are_no_power_of_two(k: int) -> None:
    """(Attack review) Candidates at or beyond ``k`` (``k`` not a power of two) are rejected
    without reading past the row, also where no position is excluded (memoized subset
    selection's uniform redraw): every row gets exactly its size, the padding stays zero."""
    from frameldp.core.mechanisms.subset_selection import fixed_size_subsets

    source = RandomSource(bytes(range(32)), kind="fresh")
    n = 20_000
    rows = source.rows((LABEL, k), 0, n, lambda: np.zeros((n, 1), np.uint8))
    excluded = np.where(np.arange(n) % 2 == 0, k, 3)  # none, or position 3
    sizes = np.full(n, k // 3, dtype=np.int64)
    bits = fixed_size_subsets(rows, "", excluded, sizes, k, (k // 4 << 64) // k)
    unpacked = np.unpackbits(bits, axis=1)
    assert (unpacked[:, :k].sum(axis=1) == sizes).all()
    assert not unpacked[:, k:].any()
    assert not unpacked[1::2, 3].any()
    memoized = frameldp.SubsetSelection(1.0, domain=list(range(k)), epsilon_infinity=3.0)
    users = np.repeat(np.arange(n // 4, dtype=np.uint64), 4).view(np.uint8).reshape(-1, 8)
    reports = memoized.randomize(
        np.arange(n) % k,
        source=source,
        label=LABEL,
        users=np.hstack([users, users]),
        memo=RandomSource(bytes(32), kind="key"),
    )
    assert (unpack_bits(reports, k).sum(axis=1) == memoized.subset_size).all()


@pytest.mark.parametrize(
    ("epsilon", "k", "g"),
    [(1.0, 2000, None), (1.0, 7, 2), (2.0, 50, 5), (4.0, 1024, None), (6.0, 300, None)],
)
def test_local_hashing_support_counts_by_transform_equal_the_lookup(
    epsilon: float, k: int, g: int | None
) -> None:
    """The Fourier transform of the report histogram gives exactly the support counts that
    looking up every value's hash under every seed gives (binary and optimal local hashing,
    one and several seed digits, k not a power of g), however few or many reports."""
    mech = frameldp.LocalHashing(epsilon, domain=list(range(k)), num_buckets=g)
    rng = np.random.default_rng(k)
    for n in (1, 37, 5000):
        reports = rng.integers(0, mech.report_range, n).astype(np.int64)
        by_transform = mech._transformed_support_counts(reports)
        np.testing.assert_array_equal(by_transform, mech._looked_up_support_counts(reports))
    # A batch of one seed's reports: every count is that seed's (exactly, no rounding slip).
    reports = np.full(5000, 3 * mech.num_buckets + 1, dtype=np.int64)
    np.testing.assert_array_equal(
        mech._transformed_support_counts(reports), mech._looked_up_support_counts(reports)
    )


def test_the_choice_sets_aside_slow_or_large_reports_and_says_why() -> None:
    """At k = 16384 a unary report takes 2 KB and about 10-25 us to draw: projective geometry
    response, within 2.4% of the smallest variance with 15-bit reports, is chosen, and
    explain() says why the others were set aside. Limits and preferences move the choice as
    they say."""
    domain = list(range(16384))
    comparison = frameldp.compare_mechanisms(1.0, domain=domain)
    assert comparison.best.name == "projective_geometry_response"
    assert comparison.candidates[0].variance < 1.025 * min(
        c.variance for c in comparison.candidates
    )
    aside = {c.name: c.set_aside for c in comparison.candidates if c.set_aside}
    assert set(aside) == {"optimized_unary_encoding", "subset_selection", "rappor"}
    assert "more than 20x the fastest client's" in aside["subset_selection"]
    text = comparison.explain()
    assert "Set aside:" in text
    assert "client us" in text
    lenient = frameldp.choose_mechanism(1.0, domain=domain, max_slowdown=1000)
    assert lenient.name in ("optimized_unary_encoding", "subset_selection")  # tied variances
    small = frameldp.compare_mechanisms(1.0, domain=domain[:1024], max_report_bytes=64)
    assert small.best.report_bits <= 8 * 64
    assert all(
        "max_report_bytes=64" in c.set_aside for c in small.candidates if c.report_bits > 512
    )
    fast = frameldp.compare_mechanisms(1.0, domain=domain[:1024], prefer="speed")
    eligible = [c for c in fast.candidates if c.eligible]
    assert fast.candidates[0].costs.total == min(c.costs.total for c in eligible)
    size = frameldp.compare_mechanisms(1.0, domain=domain[:1024], prefer="size")
    assert size.best.report_bits == min(c.report_bits for c in size.candidates if c.eligible)
    with pytest.raises(frameldp.ParameterError, match="prefer must be one of"):
        frameldp.choose_mechanism(1.0, domain=domain[:16], prefer="fast")
    with pytest.raises(frameldp.ParameterError, match="max_report_bytes must be a number"):
        frameldp.choose_mechanism(1.0, domain=domain[:16], max_report_bytes=0)
    with pytest.raises(frameldp.ParameterError, match="fast and small enough"):
        frameldp.choose_mechanism(1.0, domain=domain[:1024], max_report_bytes=1)


def test_a_small_release_is_fast_whatever_the_mechanism_and_preferences_keep_the_variance() -> None:
    """(Newcomer review) A server's fixed cost spread over few reports does not set a
    mechanism aside: a release under a second is fast. prefer="speed" / "size" never take a
    variance beyond twice the smallest; the numeric choice refuses oracle preferences; a
    release size that is not a count is refused."""
    domain = list(range(16384))
    small = frameldp.compare_mechanisms(4.0, domain=domain, n=1000)
    assert small.best.name == "subset_selection"  # 25 ms of client for 1000 reports
    assert not any(c.set_aside for c in small.candidates)
    for prefer in ("speed", "size"):
        comparison = frameldp.compare_mechanisms(1.0, domain=domain, prefer=prefer)
        smallest = min(c.variance for c in comparison.candidates if c.eligible)
        assert comparison.candidates[0].variance <= 2 * min(
            c.variance for c in comparison.candidates
        )
        assert comparison.candidates[0].variance == smallest or prefer != "variance"
        aside = {c.name: c.set_aside for c in comparison.candidates}
        assert "within 2x the smallest" in aside["randomized_response"]
    with pytest.raises(frameldp.ParameterError, match="choose among frequency oracles"):
        frameldp.choose_mechanism(1.0, bounds=(0, 1), prefer="speed")
    mech = frameldp.LocalHashing(1.0, domain=domain[:100])
    for bad in (0, -5, 2.5, "x", True):
        with pytest.raises(frameldp.ParameterError, match="n must be an integer"):
            mech.costs(bad)


@pytest.mark.parametrize(("k", "size", "barred"), [(6, 2, 1), (7, 3, 7), (8, 3, 0)])
def test_frozen_permanent_subsets_at_addresses_draw_every_subset_equally(
    k: int, size: int, barred: int
) -> None:
    """The frozen sampler of memoized permanent subsets under a scheme-3 memo key
    (``permanent_subsets``: bits at a rate on the 2**-6 grid, size corrections), each row
    addressed by its own (person, value) digest, draws every ``size``-subset of ``[0, k)``
    without ``barred`` (``k``: none) equally often: a chi-square test over all of them,
    n = 100,000 rows, at ``P_FAIL / 3`` each."""
    from frameldp.core.mechanisms.subset_selection import permanent_subsets
    from frameldp.core.randomness import MEMO_KEY_PREFIX, Rows

    n = 100_000
    memo = RandomSource.from_memo_key(MEMO_KEY_PREFIX + bytes(range(32)))
    rng = np.random.default_rng(k)
    users = rng.integers(0, 256, (n, 16), dtype=np.uint8)  # a distinct person per row
    values = np.zeros((n, 16), dtype=np.uint8)
    rows = Rows.memoized(memo, (LABEL, "permanent", k), users, values)
    excluded = np.full(n, barred, dtype=np.int64)
    sizes = np.full(n, size, dtype=np.int64)
    bits = permanent_subsets(rows, "permanent v3 ", excluded, sizes, k, size)
    _assert_every_subset_equally(bits, k, size, barred, P_FAIL / 3)
