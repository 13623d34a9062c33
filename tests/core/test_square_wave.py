"""Square Wave and the distributions it estimates.

Statistical claims: the reports of inputs uniform within one bucket fit the exact transition
kernel (Pearson chi-square over the output buckets, ``SAMPLES`` reports, at ``P_FAIL``); the
other checks compare an estimate from fixed seeds with the truth at tolerances stated where they
are made (EMS is biased by its smoothing, so no unbiasedness is claimed).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import frameldp
from _stats import P_FAIL, assert_chisquare
from frameldp.core import RandomSource, SquareWave
from frameldp.core.distribution import Distribution, ems, square_wave_kernel
from frameldp.core.mechanisms.square_wave import paper_half_width

BOUNDS: Final = (0.0, 100.0)
SAMPLES: Final = 200_000


def _reports(mechanism: SquareWave, values: np.ndarray, seed: int = 3) -> pa.Array:
    out = mechanism.privatize_column(
        pa.array(values), column="x", source=RandomSource.from_seed(seed)
    )
    return out["x"]


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_the_half_width_is_the_papers(epsilon: float) -> None:
    """``b`` of the realized window is Li et al.'s to within one cell of ``2**32``."""
    mechanism = SquareWave(epsilon, bounds=BOUNDS)
    assert mechanism.half_width == pytest.approx(paper_half_width(epsilon), rel=1e-8)
    assert mechanism.privacy.epsilon <= epsilon


def test_the_kernel_is_a_law_per_input_bucket() -> None:
    kernel = square_wave_kernel(16, 16, 0.3, 2.5, 1.0 / 1.6 * 0.5)
    np.testing.assert_allclose(kernel.sum(axis=0), 1.0)
    assert np.all(kernel > 0)


@pytest.mark.parametrize("epsilon", [0.5, 3.0])
def test_reports_follow_the_kernel(epsilon: float) -> None:
    """Inputs uniform within EMS's cell 3 (of 256): the output buckets fit column 3 of the
    kernel."""
    mechanism = SquareWave(epsilon, bounds=BOUNDS, buckets=16)
    assert mechanism.ems_cells == 256
    rng = np.random.default_rng(7)
    values = rng.uniform(3 / 256 * 100, 4 / 256 * 100, SAMPLES)
    statistic = mechanism.statistic({"x": _reports(mechanism, values)}, column="x")
    (counts,) = statistic.parts
    assert_chisquare(counts, mechanism.kernel[:, 3], p_fail=P_FAIL / 2)


def test_ems_recovers_a_distribution_and_its_quantiles() -> None:
    """50,000 values from Beta(2, 5) at epsilon 2: the estimated CDF is within 0.04 of the
    truth at every bucket end (Li et al. report Wasserstein errors of this order), and the
    quartiles within 3 units of 100."""
    rng = np.random.default_rng(11)
    values = 100 * rng.beta(2.0, 5.0, 50_000)
    mechanism = SquareWave(2.0, bounds=BOUNDS, buckets=32)
    reports = _reports(mechanism, values)
    estimate = mechanism.finish(mechanism.statistic({"x": reports}, column="x"))
    truth = np.searchsorted(np.sort(values), estimate.edges, side="right") / values.size
    assert np.max(np.abs(estimate.cdf() - truth)) < 0.04
    for q in (0.25, 0.5, 0.75):
        assert abs(estimate.quantile(q) - np.quantile(values, q)) < 3.0
        assert estimate.quantile_std_error(q) > 0
    assert abs(estimate.mean() - values.mean()) < 2.0
    assert estimate.range_share(0, 100) == pytest.approx(1.0)


def test_few_buckets_are_sums_of_the_fine_cells_and_keep_a_narrow_peak() -> None:
    """EMS runs on 256 cells whatever ``buckets`` asks: 64 buckets are the sums of 4 cells of
    the 256-bucket estimate from the same reports. On values from N(50, 3) at epsilon 4 (a
    peak two 64-buckets wide), the estimated CDF is within 0.02 of the truth at every bucket
    end; EMS over the 64 buckets themselves was 0.035 away (its smoothing blurs whole
    buckets)."""
    rng = np.random.default_rng(5)
    values = np.clip(rng.normal(50.0, 3.0, 50_000), *BOUNDS)
    coarse, fine = (SquareWave(4.0, bounds=BOUNDS, buckets=b) for b in (64, 256))
    assert coarse.ems_cells == fine.ems_cells == 256
    assert SquareWave(4.0, bounds=BOUNDS, buckets=100).ems_cells == 300
    reports = {"x": _reports(coarse, values)}
    estimate = coarse.finish(coarse.statistic(reports, column="x"))
    detailed = fine.finish(fine.statistic(reports, column="x"))
    np.testing.assert_allclose(
        estimate.frequencies, detailed.frequencies.reshape(64, 4).sum(axis=1), atol=1e-12
    )
    truth = np.searchsorted(np.sort(values), estimate.edges, side="right") / values.size
    assert np.max(np.abs(estimate.cdf() - truth)) < 0.02


def test_distribution_answers_are_consistent() -> None:
    edges = np.linspace(0.0, 10.0, 6)
    found = Distribution(edges, np.array([0.1, 0.2, 0.4, 0.2, 0.1]), 100, np.zeros((0, 5)))
    assert found.quantile(0.5) == pytest.approx(5.0)
    assert found.quantile(0.0) == 0.0
    assert found.quantile(1.0) == 10.0
    assert found.cdf(4.0) == pytest.approx(0.3)
    assert found.mean() == pytest.approx(5.0)
    assert found.range_share(2.0, 6.0) == pytest.approx(0.6)
    assert math.isnan(found.mean_std_error())
    with pytest.raises(frameldp.ParameterError, match="q must"):
        found.quantile(1.5)


def test_ems_of_no_reports_is_uniform() -> None:
    kernel = square_wave_kernel(8, 8, 0.2, 2.0, 0.5)
    np.testing.assert_allclose(ems(np.zeros(8), kernel, 1.0), 1 / 8)


def test_distribution_by_groups_range_count_and_mean() -> None:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"age": rng.integers(18, 90, 6_000), "g": rng.choice(["a", "b"], 6_000)})
    reports = frame.ldp.privatize({"age": SquareWave(3.0, bounds=(0, 100), buckets=20)}, seed=2)
    table = reports.ldp.distribution("age", by="g")
    assert sorted(set(table.frame["g"])) == ["a", "b"]
    assert len(table.frame) == 40
    flat = reports.ldp.distribution("age")
    assert 40 < flat.quantile(0.5) < 65
    quantiles = flat.quantiles([0.1, 0.5, 0.9])
    assert list(quantiles["value"]) == sorted(quantiles["value"])
    counted = reports.ldp.range_count("age", 18, 50)
    truth = int(((frame["age"] >= 18) & (frame["age"] <= 50)).sum())
    assert abs(counted.count - truth) < 6 * counted.std_error + 300
    mean = reports.ldp.mean("age")
    assert abs(mean.mean - frame["age"].mean()) < 5
    assert "distribution of age by g" in repr(table)
    assert "<table>" in table._repr_html_()


def test_distribution_of_mean_reports_is_refused() -> None:
    frame = pd.DataFrame({"age": [20.0, 30.0, 40.0]})
    reports = frame.ldp.privatize(
        {"age": frameldp.PiecewiseMechanism(1.0, bounds=(0, 100))}, seed=1
    )
    with pytest.raises(frameldp.ParameterError, match="SquareWave"):
        reports.ldp.distribution("age")


def test_plots_of_means_and_distributions(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"x": rng.uniform(0, 100, 2_000), "g": rng.choice(["a", "b"], 2_000)})
    waves = frame.ldp.privatize({"x": SquareWave(2.0, bounds=BOUNDS, buckets=16)}, seed=1)
    figure = waves.ldp.distribution("x").plot(truth=frame["x"])
    figure.savefig(tmp_path / "distribution.png")
    means = frame.ldp.privatize({"x": frameldp.HybridMechanism(2.0, bounds=BOUNDS)}, seed=1)
    grouped = means.ldp.mean("x", by="g")
    grouped.plot(truth=frame.groupby("g")["x"].mean().to_dict()).savefig(tmp_path / "means.png")
    assert (tmp_path / "distribution.png").stat().st_size > 0
    assert (tmp_path / "means.png").stat().st_size > 0
