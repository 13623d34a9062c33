"""Projective geometry response: its geometry, its exact sampler's map and its exact server.

The geometry is checked against incidences computed directly (``<h, v> = 0`` over ``F_q``
for every pair of points); the server's transform against that direct count and against the
lookup. Nothing here is random but the histograms fed to the server (fixed seeds; any
histogram must give the exact counts). The sampler's law, the estimator and the privacy event
are checked in ``test_frequency_oracles.py``, ``test_empirical_audit.py`` and
``tests/accounting/test_ternary_events.py``; the protocol in ``test_mechanism_contract.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import frameldp
from frameldp.core.mechanisms.choice import mean_variance
from frameldp.core.mechanisms.projective_geometry import ProjectiveSpace, optimal_field

SPACES = [(2, 2), (2, 3), (2, 5), (3, 2), (3, 4), (5, 3), (7, 3), (3, 6)]


def _incidence(space: ProjectiveSpace) -> np.ndarray:
    points = space.coordinates(np.arange(space.points))
    return (points @ points.T) % space.q == 0


@pytest.mark.parametrize(("q", "t"), SPACES)
def test_points_are_numbered_one_to_one_and_form_a_symmetric_design(q: int, t: int) -> None:
    space = ProjectiveSpace(q, t)
    numbers = np.arange(space.points)
    points = space.coordinates(numbers)
    leading = points[np.arange(points.shape[0]), np.argmax(points != 0, axis=1)]
    assert (leading == 1).all()
    for scale in range(1, q):
        np.testing.assert_array_equal(space.numbers((points * scale) % q), numbers)
    incidence = _incidence(space).astype(np.int64)
    assert (incidence.sum(axis=1) == space.per_hyperplane).all()
    together = incidence @ incidence.T
    assert (together[~np.eye(space.points, dtype=bool)] == space.per_pair).all()


@pytest.mark.parametrize(("q", "t"), SPACES)
def test_the_sampler_map_hits_each_hyperplane_through_or_off_a_point_equally(
    q: int, t: int
) -> None:
    """Every digit string of the ``through`` draw gives a hyperplane through the point, each of
    the ``D`` exactly ``q - 1`` times; of the ``away`` draw, each of the ``q^(t-1)`` others
    exactly once: uniform draws give uniform hyperplanes."""
    space = ProjectiveSpace(q, t)
    incidence = _incidence(space)
    span = q ** (t - 1)
    for point in sorted({0, 1, space.points // 2, space.points - 1}):
        through = space.hyperplanes(
            np.full(span - 1, point), np.arange(1, span), np.zeros(span - 1, dtype=bool)
        )
        counts = np.bincount(through, minlength=space.points)
        np.testing.assert_array_equal(counts, np.where(incidence[point], q - 1, 0))
        away = space.hyperplanes(np.full(span, point), np.arange(span), np.ones(span, dtype=bool))
        counts = np.bincount(away, minlength=space.points)
        np.testing.assert_array_equal(counts, np.where(incidence[point], 0, 1))


@pytest.mark.parametrize(("q", "t"), SPACES)
def test_the_server_counts_exactly_by_transform_and_by_lookup(q: int, t: int) -> None:
    """Three groups' random histograms, one of a single report and an empty one: the support
    counts of the first ``k`` points (some spaces padded) equal the direct incidence count."""
    space = ProjectiveSpace(q, t)
    incidence = _incidence(space).astype(np.int64)
    rng = np.random.default_rng(q * 100 + t)
    histograms = rng.integers(0, 1000, size=(5, space.points))
    histograms[3] = 0
    histograms[3, space.points - 1] = 1
    histograms[4] = 0
    for k in sorted({2, space.points - 1, space.points} - {1}):
        expected = histograms @ incidence[:, :k]
        rows = histograms.sum(axis=1)
        np.testing.assert_array_equal(space._transformed(histograms, k), expected)
        np.testing.assert_array_equal(space.support_counts(histograms, k, rows), expected)
        looked_up = np.stack([space._looked_up(h, k) for h in histograms])
        np.testing.assert_array_equal(looked_up, expected)


def test_a_mechanism_server_equals_the_direct_count_beyond_the_first_block() -> None:
    """10^5 reports at k = 2000, epsilon = 2 (q = 7, t = 5, 2801 points): the support counts
    from the mechanism's own reports equal the count of reports whose hyperplane holds each
    value, computed from the coordinates."""
    mech = frameldp.ProjectiveGeometryResponse(2.0, domain=list(range(2000)))
    assert (mech.field_size, mech.dimension) == (7, 5)
    source = frameldp.RandomSource.from_key(bytes(range(32)))
    codes = np.random.default_rng(1).integers(0, 2000, 100_000)
    reports = mech.randomize(codes, source=source, label="c")
    histogram = np.bincount(reports, minlength=mech.num_points)
    space = ProjectiveSpace(7, 5)
    present = np.flatnonzero(histogram)
    holds = (space.coordinates(present) @ space.coordinates(np.arange(2000)).T) % 7 == 0
    expected = histogram[present] @ holds
    counts = mech.support_counts(histogram[None, :], np.array([100_000]))[0]
    np.testing.assert_array_equal(counts, expected)


@pytest.mark.parametrize(("k", "epsilon"), [(1024, 1.0), (16384, 1.0), (16384, 4.0), (22000, 4.0)])
def test_the_default_field_is_within_a_few_percent_of_subset_selection(
    k: int, epsilon: float
) -> None:
    """The variance averaged over the buckets (exact) within 2.5% of subset selection's at its
    optimal size, with reports of ``ceil(log2 k) + 4`` bits at most (Feldman et al.: 75.7
    against 76.5 at k = 22,000, epsilon = 4)."""
    domain = list(range(k))
    pgr = frameldp.ProjectiveGeometryResponse(epsilon, domain=domain)
    subsets = frameldp.SubsetSelection(epsilon, domain=domain)
    assert mean_variance(pgr, k) < 1.025 * mean_variance(subsets, k)
    assert pgr.report_bits <= (k - 1).bit_length() + 4
    assert pgr.privacy.epsilon <= epsilon * (1 + 1e-9)


def test_the_field_is_chosen_for_its_variance_and_its_server() -> None:
    """Near ``e^epsilon + 1`` and prime; the server's largest transform stays within its
    limit; a given field is kept; the space holds the domain."""
    for epsilon, k in ((1.0, 100), (4.0, 1000), (4.0, 10**6), (6.0, 50_000)):
        space = optimal_field(epsilon, k)
        assert space.points >= k
        assert space.transform_fits(10**6)
    assert optimal_field(4.0, 1000).q == 53
    mech = frameldp.ProjectiveGeometryResponse(1.0, domain=list(range(100)), field_size=11)
    assert (mech.field_size, mech.dimension, mech.num_points) == (11, 3, 133)


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"field_size": 4}, "field_size must be a prime"),
        ({"field_size": 1}, "field_size must be a prime"),
        ({"field_size": "7"}, "field_size must be a prime"),
        ({"field_size": True}, "field_size must be a prime"),
        ({"field_size": 2**31 - 1}, "a prime in \\[2, 1048576\\]"),
        ({"field_size": 2**61 - 1}, "a prime in \\[2, 1048576\\]"),
        ({"field_size": 65537, "domain": list(range(65539))}, "above 2\\*\\*32"),
        ({"epsilon": 1e-30}, "too small to realize"),
        ({"epsilon_infinity": 0.5}, "epsilon_infinity"),
    ],
)
def test_bad_parameters_are_refused_naming_them(arguments: dict, match: str) -> None:
    options = {"epsilon": 1.0, "domain": list("abcdefgh"), **arguments}
    epsilon = options.pop("epsilon")
    with pytest.raises(frameldp.ParameterError, match=match):
        frameldp.ProjectiveGeometryResponse(epsilon, **options)


def test_reports_of_another_range_are_refused() -> None:
    mech = frameldp.ProjectiveGeometryResponse(1.0, domain=list("abcdefgh"), field_size=2)
    assert mech.num_points == 15
    import pyarrow as pa

    with pytest.raises(frameldp.DomainError):
        mech.statistic({"c": pa.array([0, 15], type=pa.uint32())}, column="c")
