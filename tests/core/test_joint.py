"""Joint tables of two independently privatized columns (frameldp.core.joint): the estimator
is unbiased with the stated variance for every pair of frequency oracles, equals the inverse of
the Kronecker product of two k-RR channels, and its statistic adds up over any chunking."""

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
from _stats import P_FAIL, z_bound
from frameldp.core import joint
from frameldp.core.joint import (
    debias_joint,
    joint_statistic,
    joint_variance,
    mean_joint_variance,
    product_domain,
)
from frameldp.core.mechanisms.choice import choose_mechanism, compare_mechanisms
from frameldp.core.randomness import RandomSource
from frameldp.errors import FrameLDPError

SEED = 20261124
K1, K2 = 3, 4
# True joint counts of one run of N rows (a zero cell included).
TRUTH = np.array([[400, 250, 150, 0], [300, 200, 100, 50], [250, 150, 100, 50]])
N = int(TRUTH.sum())
REPS = 200

ORACLES: dict[str, Callable[[int], Any]] = {
    "krr": lambda k: frameldp.RandomizedResponse(1.5, domain=list(range(k))),
    "rappor": lambda k: frameldp.Rappor(2.0, domain=list(range(k))),
    "oue": lambda k: frameldp.OptimizedUnaryEncoding(1.5, domain=list(range(k))),
    "olh": lambda k: frameldp.LocalHashing(2.0, domain=list(range(k))),
    "subset": lambda k: frameldp.SubsetSelection(1.5, domain=list(range(k)), subset_size=2),
    "hadamard": lambda k: frameldp.HadamardResponse(2.0, domain=list(range(k))),
}
# Every oracle as the first and as the second column, k-RR with itself.
PAIRS = [
    ("krr", "krr"),
    ("krr", "oue"),
    ("oue", "olh"),
    ("olh", "hadamard"),
    ("hadamard", "subset"),
    ("subset", "rappor"),
    ("rappor", "krr"),
]


def _values() -> tuple[np.ndarray, np.ndarray]:
    """The two columns of one run, in the proportions of ``TRUTH``."""
    cells = np.repeat(np.arange(K1 * K2), TRUTH.ravel())
    return cells // K2, cells % K2


def _reports(mechanism: Any, codes: np.ndarray, label: str) -> pa.Array:
    source = RandomSource.from_seed(SEED)
    tiled = pa.array(np.tile(codes, REPS))
    return mechanism.privatize_column(tiled, column=label, source=source, row_start=0)[label]


def _runs(first: Any, second: Any) -> list[joint.JointStatistic]:
    a, b = _values()
    left, right = _reports(first, a, "a"), _reports(second, b, "b")
    return [
        joint_statistic(
            first,
            {"a": left.slice(r * N, N)},
            second,
            {"b": right.slice(r * N, N)},
            columns=("a", "b"),
        )
        for r in range(REPS)
    ]


@pytest.mark.parametrize(("first_name", "second_name"), PAIRS)
def test_joint_counts_are_unbiased_with_the_stated_variance(
    first_name: str, second_name: str
) -> None:
    """Per cell, over ``REPS`` runs of ``N`` rows: the mean standardized error is within
    ``z(P_FAIL / 2 cells) / sqrt(REPS)`` of 0, and the sum of squared standardized errors within
    the two-sided chi-square(REPS) quantiles at ``P_FAIL / 2 cells`` (Bonferroni over the
    cells). The exact variance uses the true joint and marginal counts.

    Detects, with probability 0.99, a bias of 0.4 standard errors in one cell, or a variance
    off by a factor 1.6 (or 1/1.6).
    """
    first, second = ORACLES[first_name](K1), ORACLES[second_name](K2)
    exact = joint_variance(TRUTH, TRUTH.sum(axis=1), TRUTH.sum(axis=0), N, first, second)
    z = np.array(
        [
            (debias_joint(first, second, s).counts - TRUTH.ravel()) / np.sqrt(exact.ravel())
            for s in _runs(first, second)
        ]
    )
    p_fail = P_FAIL / (2 * K1 * K2)
    assert np.all(np.abs(z.mean(axis=0)) < z_bound(p_fail) / math.sqrt(REPS)), z.mean(axis=0)
    squares = (z**2).sum(axis=0)
    low, high = stats.chi2.ppf(p_fail / 2, REPS), stats.chi2.isf(p_fail / 2, REPS)
    assert np.all((squares > low) & (squares < high)), squares / REPS


def test_the_stated_variance_is_the_clipped_plug_in_of_the_exact_one() -> None:
    first, second = ORACLES["krr"](K1), ORACLES["oue"](K2)
    statistic = _runs(first, second)[0]
    estimate = debias_joint(first, second, statistic)
    a = np.clip(first.debias(statistic.first).counts, 0, N)
    b = np.clip(second.debias(statistic.second).counts, 0, N)
    low = np.maximum(0, a[:, None] + b[None, :] - N)
    high = np.maximum(low, np.minimum(a[:, None], b[None, :]))
    plug_in = np.clip(estimate.counts.reshape(K1, K2), low, high)
    expected = joint_variance(plug_in, a, b, N, first, second)
    np.testing.assert_allclose(estimate.variances, expected.ravel(), rtol=1e-12)
    assert estimate.n == N
    assert estimate.support is None  # not a frequency oracle's channel: IBU does not apply


def _krr_matrix(mechanism: Any) -> np.ndarray:
    """The k-RR transition matrix ``M[report, value]``."""
    p, q = mechanism.support_probabilities
    k = len(mechanism.categories)
    return np.full((k, k), q) + (p - q) * np.eye(k)


def test_krr_pairs_invert_the_kronecker_product_of_the_channels() -> None:
    """For k-RR x k-RR the estimate is ``(M1 ⊗ M2)^-1`` applied to the joint histogram of the
    reports (DESIGN.md), to rounding."""
    first, second = ORACLES["krr"](K1), ORACLES["krr"](K2)
    statistic = _runs(first, second)[0]
    histogram = statistic.co_supports.astype(np.float64).ravel()
    channel = np.kron(_krr_matrix(first), _krr_matrix(second))
    expected = np.linalg.solve(channel, histogram)
    estimate = debias_joint(first, second, statistic)
    np.testing.assert_allclose(estimate.counts, expected, rtol=1e-9, atol=1e-7)
    assert int(histogram.sum()) == N


def test_the_statistic_adds_up_over_batches_and_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = ORACLES["olh"](K1), ORACLES["subset"](K2)
    a, b = _values()
    source = RandomSource.from_seed(SEED)
    left = first.privatize_column(pa.array(a), column="a", source=source)["a"]
    right = second.privatize_column(pa.array(b), column="b", source=source)["b"]
    whole = joint_statistic(first, {"a": left}, second, {"b": right}, columns=("a", "b"))
    halves = [
        joint_statistic(
            first,
            {"a": left.slice(start, length)},
            second,
            {"b": right.slice(start, length)},
            columns=("a", "b"),
        )
        for start, length in ((0, 777), (777, N - 777))
    ]
    total = halves[0] + halves[1]
    monkeypatch.setattr(joint, "_CELLS", 13)  # chunks of 3 rows
    chunked = joint_statistic(first, {"a": left}, second, {"b": right}, columns=("a", "b"))
    for other in (total, chunked):
        np.testing.assert_array_equal(other.co_supports, whole.co_supports)
        np.testing.assert_array_equal(other.first_supports, whole.first_supports)
        np.testing.assert_array_equal(other.second_supports, whole.second_supports)
        assert other.rows == whole.rows == N
    # The co-support matrix's margins are each column's support counts, times the other's
    # report sizes: for subset selection every report holds d values.
    np.testing.assert_array_equal(whole.co_supports.sum(axis=1), whole.first_supports * 2)


def test_mean_joint_variance_is_the_average_over_cells_for_any_distribution() -> None:
    rng = np.random.default_rng(SEED)
    for first_name, second_name in PAIRS:
        first, second = ORACLES[first_name](K1), ORACLES[second_name](K2)
        cells = rng.multinomial(5000, rng.dirichlet(np.ones(K1 * K2))).reshape(K1, K2)
        exact = joint_variance(cells, cells.sum(axis=1), cells.sum(axis=0), 5000, first, second)
        assert mean_joint_variance(first, second, 5000) == pytest.approx(exact.mean(), rel=1e-12)


def test_one_column_over_the_product_domain_beats_two_columns_at_the_same_budget() -> None:
    """The documented rule: at the summed epsilon, the best oracle over the ``k k'`` pairs has
    a smaller mean variance than the best pair of oracles at half the epsilon each."""
    for k1, k2, epsilon in itertools.product((2, 5, 20), (3, 10), (0.5, 2.0, 8.0)):
        pair = mean_joint_variance(
            choose_mechanism(epsilon / 2, domain=list(range(k1))),
            choose_mechanism(epsilon / 2, domain=list(range(k2))),
        )
        product = compare_mechanisms(epsilon, domain=list(range(k1 * k2))).candidates[0]
        assert product.variance < pair, (k1, k2, epsilon)


def test_product_domain_labels_and_bad_separators() -> None:
    assert product_domain(["a", "b"], [1, 2]) == ["a|1", "a|2", "b|1", "b|2"]
    assert product_domain(["a", "b"], ["x", "y"], separator=" / ")[1] == "a / y"
    with pytest.raises(FrameLDPError, match="separator"):
        product_domain(["a|b", "c"], ["x", "y"])
    with pytest.raises(FrameLDPError, match="separator"):
        product_domain(["a", "b"], ["x", "y"], separator="")


def test_misaligned_or_bad_reports_are_refused() -> None:
    first, second = ORACLES["krr"](K1), ORACLES["oue"](K2)
    a, b = _values()
    source = RandomSource.from_seed(SEED)
    left = first.privatize_column(pa.array(a), column="a", source=source)["a"]
    right = second.privatize_column(pa.array(b), column="b", source=source)["b"]
    with pytest.raises(FrameLDPError, match="one pair per row"):
        joint_statistic(first, {"a": left}, second, {"b": right[:10]}, columns=("a", "b"))
    with pytest.raises(FrameLDPError, match="'b'"):
        joint_statistic(first, {"a": left}, second, {"b": left}, columns=("a", "b"))


@pytest.mark.parametrize("cells", [7, 1 << 22])
def test_joint_statistics_by_group_are_each_groups_own(
    monkeypatch: pytest.MonkeyPatch, cells: int
) -> None:
    """Every group's joint statistic from one pass equals the group's own, whether a chunk of
    rows holds one row (cells=7) or all of them; k-RR with OUE, so supports of both kinds."""
    monkeypatch.setattr(joint, "_CELLS", cells)
    first = frameldp.RandomizedResponse(1.0, domain=["a", "b", "c"])
    second = frameldp.OptimizedUnaryEncoding(1.0, domain=["x", "y"])
    rows = 400
    source = RandomSource.from_key(bytes(32))
    a = first.privatize_column(
        pa.array([["a", "b", "c"][i % 3] for i in range(rows)]), column="f", source=source
    )
    b = second.privatize_column(
        pa.array([["x", "y"][(i // 3) % 2] for i in range(rows)]), column="s", source=source
    )
    groups = np.array([(5 * i + i // 40) % 6 for i in range(rows)], dtype=np.int64)
    found = joint.joint_statistics_by_group(first, a, second, b, groups, 6, columns=("f", "s"))
    for g, statistic in enumerate(found):
        chosen = pa.array(np.flatnonzero(groups == g))
        own = joint_statistic(
            first,
            {n: v.take(chosen) for n, v in a.items()},
            second,
            {n: v.take(chosen) for n, v in b.items()},
            columns=("f", "s"),
        )
        np.testing.assert_array_equal(statistic.co_supports, own.co_supports)
        np.testing.assert_array_equal(statistic.first_supports, own.first_supports)
        np.testing.assert_array_equal(statistic.second_supports, own.second_supports)
        np.testing.assert_array_equal(statistic.first.parts[0], own.first.parts[0])
        assert statistic.rows == own.rows == len(chosen)
