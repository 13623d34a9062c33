"""The variances of split, sampled and sampled-with-fake-data collections, against simulation.

Statistical claims: for each strategy and bucket, ``REPLICATES`` simulated releases of one fixed
population (k-ary randomized response drawn with numpy's ``default_rng``, test noise) have
errors whose mean is zero and whose variance is the formula's (a two-sided z test and a
chi-square test per bucket, each at ``P_FAIL / (2 k)`` per strategy).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pytest

import frameldp
from _stats import P_FAIL, assert_unbiased, assert_variance
from frameldp.core.collection import (
    Collection,
    OracleNoise,
    sample_count_variance,
    sample_fake_count_variance,
    split_count_variance,
    total_variance,
)
from frameldp.core.mechanisms.choice import mean_variance
from frameldp.errors import ParameterError

K: Final = 4
N: Final = 600
COLUMNS: Final = 3
REPLICATES: Final = 3_000
VALUES: Final = np.repeat(np.arange(K), [300, 180, 90, 30])  # one fixed population
TRUTH: Final = np.bincount(VALUES, minlength=K).astype(np.float64)


def _noise(epsilon: float = 1.0) -> OracleNoise:
    return OracleNoise.of(frameldp.RandomizedResponse(epsilon, domain=list(range(K))))


def _krr(values: np.ndarray, noise: OracleNoise, rng: np.random.Generator) -> np.ndarray:
    """k-RR reports of ``values`` (any shape) at the noise's ``(p, q)``."""
    keep = rng.random(values.shape) < noise.p
    other = (values + 1 + rng.integers(0, K - 1, values.shape)) % K
    return np.where(keep, values, other)


def _counts(reports: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Reports per bucket, per replicate (rows), of the reports where ``mask``."""
    weights = np.ones(reports.shape) if mask is None else mask.astype(np.float64)
    return np.stack([((reports == b) * weights).sum(axis=1) for b in range(K)], axis=1)


def _check(estimates: np.ndarray, variances: np.ndarray) -> None:
    for bucket in range(K):
        errors = estimates[:, bucket] - TRUTH[bucket]
        spread = np.full(errors.shape, variances[bucket] / errors.size)
        assert_unbiased([errors.mean()], [0.0], [spread[0]], p_fail=P_FAIL / (2 * K))
        assert_variance(errors, variances[bucket], p_fail=P_FAIL / (2 * K))


def test_split_counts_have_the_formulas_variance() -> None:
    noise, rng = _noise(), np.random.default_rng(1)
    reports = _krr(np.broadcast_to(VALUES, (REPLICATES, N)), noise, rng)
    estimates = (_counts(reports) - N * noise.q) / (noise.p - noise.q)
    _check(estimates, split_count_variance(noise, TRUTH, N))


def test_sampled_counts_scaled_to_n_have_the_formulas_variance() -> None:
    """Each release: 200 of the 600 people (a simple random sample) report the column."""
    noise, rng, reporters = _noise(2.0), np.random.default_rng(2), 200
    chosen = np.argsort(rng.random((REPLICATES, N)), axis=1)[:, :reporters]
    reports = _krr(VALUES[chosen], noise, rng)
    scaled = N / reporters * (_counts(reports) - reporters * noise.q) / (noise.p - noise.q)
    _check(scaled, sample_count_variance(noise, TRUTH / N, N, reporters))


@pytest.mark.parametrize("prior", [None, np.array([0.1, 0.2, 0.3, 0.4])])
def test_counts_under_fake_data_have_the_formulas_variance(prior: np.ndarray | None) -> None:
    """Each report is real with probability 1/3, else k-RR of a value drawn from the prior."""
    noise, rng = _noise(2.0), np.random.default_rng(3)
    law = np.full(K, 1.0 / K) if prior is None else prior
    real = rng.random((REPLICATES, N)) < 1 / COLUMNS
    fakes = rng.choice(K, size=(REPLICATES, N), p=law)
    reports = _krr(np.where(real, VALUES, fakes), noise, rng)
    debiased = (_counts(reports) - N * noise.q) / (noise.p - noise.q)
    estimates = COLUMNS * debiased - (COLUMNS - 1) * N * law
    _check(estimates, sample_fake_count_variance(noise, TRUTH / N, N, COLUMNS, law))


def test_total_variances_rank_the_strategies() -> None:
    """Split's total is k times the mean variance ``choose_mechanism`` ranks by; sampling
    beats splitting a budget of 4 over five columns, and fake data costs about d times
    sampling's variance."""
    budget, d = 4.0, 5
    whole = frameldp.RandomizedResponse(budget, domain=list(range(K)))
    part = frameldp.RandomizedResponse(budget / d, domain=list(range(K)))
    split = total_variance("split", [OracleNoise.of(part)] * d)
    assert split == pytest.approx(d * K * mean_variance(part, K))
    sample = total_variance("sample", [OracleNoise.of(whole)] * d)
    fake = total_variance("sample+fake", [OracleNoise.of(whole)] * d)
    assert sample < split
    assert fake > (d - 1) * sample  # about d times: fakes are noise in every column
    with pytest.raises(frameldp.ParameterError, match="two or more"):
        total_variance("sample", [OracleNoise.of(whole)])
    with pytest.raises(frameldp.ParameterError, match="collect must be"):
        total_variance("spread", [OracleNoise.of(whole)] * 2)  # type: ignore[arg-type]


def test_a_tampered_recorded_prior_is_refused() -> None:
    """A recorded collection whose prior holds an integer beyond any float, negative shares
    or shares not adding up to 1 is a frameldp error, not an OverflowError."""
    base = {"strategy": "sample+fake", "columns": ["a", "b"]}
    for priors in ([[10**400, 1], None], [[-0.5, 1.5], None], [[0.2, 0.2], None]):
        with pytest.raises(ParameterError):
            Collection.from_spec({**base, "priors": priors})
    assert Collection.from_spec({**base, "priors": [[0.25, 0.75], None]}).law("a", 2)[1] == 0.75
