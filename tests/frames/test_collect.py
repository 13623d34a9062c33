"""``privatize(..., collect="sample")``: one column per person, chosen under the call's key.

Statistical claims, each at ``P_FAIL`` split over its checks: which column a row reports is
uniform (Pearson chi-square); across ``RELEASES`` releases of one population, each bucket's
scaled count is unbiased and has the stated variance (z test of the mean error and chi-square
test of the errors standardized by each release's own standard error); a row whose values change
under a caller's key draws its column again (binomial: agreement ``1 / d``).
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import frameldp
from _stats import (
    P_FAIL,
    assert_binomial,
    assert_chisquare,
    assert_unbiased,
    assert_variance,
    z_bound,
)
from frameldp.accounting import SampledEvent
from frameldp.core import RandomSource
from frameldp.core.collected import CollectedBatch, collect_columns
from frameldp.core.encoding import Domain
from frameldp.frames.pipeline import row_content

from .conftest import CARRIERS, ORIGINS, Backend, reference_reports, small_data

KEY: Final = bytes(range(32))
RELEASES: Final = 60
COLUMNS: Final = ("carrier", "origin", "dest")


def _mechanisms(epsilon: float = 1.0) -> dict[str, Any]:
    return {
        "carrier": frameldp.RandomizedResponse(epsilon, domain=list(CARRIERS)),
        "origin": frameldp.OptimizedUnaryEncoding(2 * epsilon, domain=list(ORIGINS)),
    }


def test_every_engine_draws_the_pandas_reports_one_column_per_row(backend: Backend) -> None:
    data = small_data(60)
    frame = backend.make(data)
    snapshot = backend.snapshot(frame)

    def call(native: Any) -> Any:
        return frameldp.ldp(native).privatize(_mechanisms(), collect="sample", key=KEY)

    out = call(frame)
    backend.assert_unchanged(snapshot, frame)
    carriers = backend.column_values(out, "carrier")
    origins = backend.column_values(out, "origin")
    assert carriers == reference_reports(data, call, "carrier")
    assert origins == reference_reports(data, call, "origin")
    assert backend.column_values(out, "fare") == data["fare"]
    reported = [
        (c is not None and c == c) + (o is not None and o == o)
        for c, o in zip(carriers, origins, strict=True)
    ]
    assert reported == [1] * 60
    assert frameldp.ldp(out).privacy.epsilon == pytest.approx(2.0)

    def faked(native: Any) -> Any:
        return frameldp.ldp(native).privatize(_mechanisms(), collect="sample+fake", key=KEY)

    filled = faked(backend.make(data))
    for column in ("carrier", "origin"):
        assert backend.column_values(filled, column) == reference_reports(data, faked, column)
    table = frameldp.ldp(out).debias("carrier").to_pandas()
    assert table["count"].sum() == pytest.approx(60.0)


def _population(n: int = 3_000) -> pd.DataFrame:
    rng = np.random.default_rng(4)  # test data
    return pd.DataFrame(
        {
            "carrier": rng.choice(CARRIERS, n, p=[0.5, 0.3, 0.15, 0.05]),
            "origin": rng.choice(ORIGINS, n),
            "dest": rng.choice(ORIGINS, n, p=[0.4, 0.3, 0.1, 0.1, 0.1]),
        }
    )


def _three(epsilon: float = 2.0) -> dict[str, Any]:
    return {
        "carrier": frameldp.RandomizedResponse(epsilon, domain=list(CARRIERS)),
        "origin": frameldp.OptimizedUnaryEncoding(epsilon, domain=list(ORIGINS)),
        "dest": frameldp.SubsetSelection(epsilon, domain=list(ORIGINS)),
    }


def _prior(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """A public guess at each column's shares (RS+RFD): the truth, rounded, and not for
    ``carrier`` (uniform fakes beside prior ones)."""
    return {c: frame[c].value_counts(normalize=True).round(1).to_dict() for c in COLUMNS[1:]}


@pytest.mark.parametrize("strategy", ["sample", "sample+fake", "sample+fake prior"])
def test_the_reported_column_is_uniform_and_counts_are_unbiased_with_honest_errors(
    strategy: str,
) -> None:
    frame = _population()
    truth = {c: frame[c].value_counts() for c in COLUMNS}
    chosen = np.zeros(len(COLUMNS), dtype=np.int64)
    errors: dict[tuple[str, str], list[float]] = {}
    collect, _, prior = strategy.partition(" ")
    fake_prior = _prior(frame) if prior else None
    for seed in range(RELEASES):
        reports = frame.ldp.privatize(_three(), collect=collect, seed=seed, fake_prior=fake_prior)
        if strategy == "sample":
            chosen += reports[list(COLUMNS)].notna().to_numpy().sum(axis=0)
        else:
            real = _real_columns(frame, seed, _three(), fake_prior)
            chosen += np.bincount(real, minlength=len(COLUMNS))
        for column in COLUMNS:
            table = reports.ldp.debias(column).to_pandas()
            for label, count, error in zip(
                table["category"], table["count"], table["std_error"], strict=True
            ):
                errors.setdefault((column, label), []).append(
                    (count - truth[column].get(label, 0)) / error
                )
    assert_chisquare(chosen, np.full(len(COLUMNS), 1 / len(COLUMNS)), p_fail=P_FAIL / 3)
    checks = 2 * len(errors)
    for standardized in errors.values():
        mean = float(np.mean(standardized))
        assert_unbiased([mean], [0.0], [1.0 / RELEASES], p_fail=P_FAIL / 3 / checks)
        assert_variance(standardized, 1.0, p_fail=P_FAIL / 3 / checks)


def test_a_person_loses_the_largest_epsilon_and_the_ledger_charges_it(tmp_path: Any) -> None:
    mechanisms = {**_three(1.0), "dest": frameldp.SubsetSelection(3.0, domain=list(ORIGINS))}
    ledger = frameldp.Ledger(tmp_path / "ledger.db")
    ledger.set_budget("survey", epsilon=3.5)
    frame = _population(200)
    reports = frame.ldp.privatize(mechanisms, collect="sample", ledger=ledger, budget="survey")
    privacy = reports.ldp.privacy
    assert privacy.epsilon == pytest.approx(3.0)
    assert any(isinstance(event, SampledEvent) for event, _ in privacy.events)
    assert ledger.spent("survey") == pytest.approx(3.0)
    with pytest.raises(frameldp.BudgetExceededError):  # split would cost 5
        frame.ldp.privatize(mechanisms, ledger=ledger, budget="survey")
    # one composition for each person's column: below the split's composition at every delta
    split = frameldp.compose(m.privacy for m in mechanisms.values())
    assert privacy.epsilon_at(1e-6) < split.epsilon_at(1e-6)


def test_a_changed_row_draws_its_column_again_under_a_key() -> None:
    frame = _population(4_000)
    first = frame.ldp.privatize(_three(), collect="sample", key=KEY)
    again = frame.ldp.privatize(_three(), collect="sample", key=KEY)
    for column in COLUMNS:  # the same job on the same rows (another release id)
        assert first[column].tolist() == again[column].tolist()
    changed = frame.copy()
    changed["carrier"] = changed["carrier"].map({"AA": "DL", "DL": "UA", "UA": "WN", "WN": "AA"})
    moved = changed.ldp.privatize(_three(), collect="sample", key=KEY)
    same = (first.notna().to_numpy() == moved.notna().to_numpy()).all(axis=1)
    assert_binomial(int(same.sum()), len(frame), 1 / 3, p_fail=P_FAIL / 2)
    # (Attack review) another job on the same rows and key: another mechanism for one column
    other = {**_three(), "carrier": frameldp.RandomizedResponse(2.001, domain=list(CARRIERS))}
    redrawn = frame.ldp.privatize(other, collect="sample", key=KEY)
    same = (first.notna().to_numpy() == redrawn.notna().to_numpy()).all(axis=1)
    assert_binomial(int(same.sum()), len(frame), 1 / 3, p_fail=P_FAIL / 2)


def test_a_copied_or_dropped_column_states_no_less() -> None:
    """(Attack review) A copy of the low-epsilon column once gave it more weight in the
    mixture, and a lower epsilon at delta; each column now counts once, by the column it was
    privatized as, and a column the frame lacks counts as revealing nothing."""
    mechanisms = {**_three(1.0), "dest": frameldp.SubsetSelection(3.0, domain=list(ORIGINS))}
    reports = _population(300).ldp.privatize(mechanisms, collect="sample")
    whole = reports.ldp.privacy
    copied = reports.assign(carrier2=reports["carrier"], carrier3=reports["carrier"]).ldp.privacy
    assert copied.epsilon_at(1e-6) == pytest.approx(whole.epsilon_at(1e-6))
    assert copied.rho == pytest.approx(whole.rho)
    part = reports[["dest"]].ldp.privacy
    assert part.epsilon == pytest.approx(3.0)
    assert part.epsilon_at(1e-6) <= whole.epsilon_at(1e-6)


def test_joint_tables_and_bad_collections_are_refused() -> None:
    frame = _population(300)
    reports = frame.ldp.privatize(_three(), collect="sample")
    with pytest.raises(frameldp.ParameterError, match="both columns from each person"):
        reports.ldp.debias(["carrier", "origin"])
    two = dict(list(_three().items())[:1])
    with pytest.raises(frameldp.ParameterError, match="two or more columns"):
        frame.ldp.privatize(two, collect="sample")
    with pytest.raises(frameldp.ParameterError, match="collect must be"):
        frame.ldp.privatize(_three(), collect="sampled")
    bucket = Domain.coerce(list(CARRIERS), nulls="category", unknown="raise")
    nulls = frameldp.RandomizedResponse(1.0, domain=bucket)
    with pytest.raises(frameldp.ParameterError, match="null bucket as a null"):
        frame.ldp.privatize({**_three(), "carrier": nulls}, collect="sample")
    faked = frame.ldp.privatize({**_three(), "carrier": nulls}, collect="sample+fake")
    assert faked["carrier"].notna().sum() > 0
    rappor = frameldp.Rappor(1.0, domain=list(ORIGINS), max_weight=2)
    with pytest.raises(frameldp.ParameterError, match="not sets"):
        frame.ldp.privatize({**_three(), "origin": rappor}, collect="sample")
    memoized = frameldp.RandomizedResponse(1.0, domain=list(CARRIERS), epsilon_infinity=2.0)
    with pytest.raises(frameldp.ParameterError, match="cannot fake a memoized column"):
        frame.ldp.privatize({**_three(), "carrier": memoized}, collect="sample+fake")
    frozen = frameldp.RandomizedResponse(1.0, domain=list(CARRIERS), epsilon_infinity=1.0)
    people = frame.assign(person=np.arange(len(frame)))
    with pytest.raises(frameldp.ParameterError, match="adds no noise"):
        people.ldp.privatize({**_three(), "carrier": frozen}, collect="sample", user="person")
    for prior, match in [
        ({"fare": {"AA": 1.0}}, "not privatized here"),
        ({"origin": {"XXX": 1.0}}, "not one of its buckets"),
        ({"origin": {ORIGINS[0]: -1.0, ORIGINS[1]: 2.0}}, ">= 0"),
        ({"origin": {ORIGINS[0]: 0.0}}, "not all 0"),
        ({"origin": [0.5, 0.5]}, "mapping"),
        ({"origin": {ORIGINS[0]: 10**400}}, "finite"),
        ({"origin": {ORIGINS[0]: float("nan")}}, "finite"),
        ({"origin": {ORIGINS[0]: math.inf, ORIGINS[1]: -math.inf}}, "finite"),
        ({"origin": {ORIGINS[0]: 1j}}, "must be a number"),
        ({"origin": {ORIGINS[0]: 1e308, ORIGINS[1]: 1e308}}, None),  # no overflow: 1/2 each
    ]:
        if match is None:
            frame.ldp.privatize(_three(), collect="sample+fake", fake_prior=prior)
            continue
        with pytest.raises(frameldp.ParameterError, match=match):
            frame.ldp.privatize(_three(), collect="sample+fake", fake_prior=prior)
    with pytest.raises(frameldp.ParameterError, match=r"fake_prior \(--fake-prior\)"):
        frame.ldp.privatize(_three(), collect="sample", fake_prior={"origin": {ORIGINS[0]: 1}})
    wave = frameldp.SquareWave(1.0, bounds=(0, 10))
    numbers = frame.assign(fare=np.linspace(0, 10, len(frame)))
    with pytest.raises(frameldp.ParameterError, match="frequency oracles"):
        numbers.ldp.privatize({**_three(), "fare": wave}, collect="sample")
    assert math.isfinite(reports.ldp.debias("dest").to_pandas()["count"].sum())
    with pytest.raises(frameldp.ParameterError, match="amplification by shuffling"):
        reports.ldp.shuffle()


def test_tables_by_public_groups_are_the_tables_of_each_group() -> None:
    frame = _population(2_000).assign(region=lambda f: np.where(f.index % 3 == 0, "N", "S"))
    reports = frame.ldp.privatize(_three(), collect="sample", seed=5)
    grouped = reports.ldp.debias("origin", by="region").to_pandas()
    for region in ("N", "S"):
        alone = reports[reports["region"] == region].ldp.debias("origin").to_pandas()
        mine = grouped[grouped["region"] == region].drop(columns="region")
        pd.testing.assert_frame_equal(mine.reset_index(drop=True), alone)


def test_auto_samples_where_it_has_the_smaller_variance_at_the_same_guarantee() -> None:
    """Three columns at 1/3 each (a person's budget of 1, split): sampling each at 1 has the
    smaller total variance (docs/multiple_columns.md), and auto takes it; one column stays."""
    frame = _population(500)
    thirds = {c: type(m)(1 / 3, domain=m.domain) for c, m in _three().items()}
    chosen = frame.ldp.privatize(thirds, collect="auto", seed=2)
    assert chosen.ldp.privacy.epsilon == pytest.approx(1.0)
    assert (chosen[list(COLUMNS)].notna().sum(axis=1) == 1).all()
    budget = math.fsum(m.privacy.epsilon for m in thirds.values())  # what split costs
    sampled = frame.ldp.privatize(
        {c: type(m)(budget, domain=m.domain) for c, m in _three().items()},
        collect="sample",
        seed=2,
    )
    for column in COLUMNS:
        assert chosen[column].tolist() == sampled[column].tolist()
    alone = frame[["carrier"]].ldp.privatize({"carrier": thirds["carrier"]}, collect="auto")
    assert alone["carrier"].notna().all()


def _real_columns(
    frame: pd.DataFrame, seed: int, mechanisms: dict[str, Any], fake_prior: Any = None
) -> np.ndarray:
    """Which column each row of a seeded ``sample+fake`` release holds for real: the draw
    the release made (the test knows the seed)."""
    collected = collect_columns(mechanisms, "sample+fake", fake_prior)
    batch = CollectedBatch.draw(
        collected,
        RandomSource.from_seed(seed),
        0,
        len(frame),
        lambda names: row_content([pa.array(frame[c].to_numpy()) for c in names], len(frame)),
    )
    return batch.reporting


def test_fake_data_counts_are_unbiased_and_hide_the_real_column_as_far_as_epsilon_allows() -> None:
    """Every column holds a report; the counts are unbiased with honest errors (as above); an
    attacker who knows every value of a row and picks a column whose report equals its value
    finds the real column at most ``e^eps / (e^eps + d - 1)`` of the time (the posterior of
    the real column under k-RR with uniform fakes), one-sided z test at ``P_FAIL``."""
    frame, epsilon = _population(), 2.0
    mechanisms = {c: frameldp.RandomizedResponse(epsilon, domain=list(ORIGINS)) for c in COLUMNS}
    frame = frame.assign(carrier=frame["origin"].sample(frac=1.0, random_state=1).to_numpy())
    reports = frame.ldp.privatize(mechanisms, collect="sample+fake", seed=8)
    assert reports[list(COLUMNS)].notna().all().all()
    assert reports.ldp.privacy.epsilon == pytest.approx(epsilon)
    real = _real_columns(frame, 8, mechanisms)
    rng = np.random.default_rng(9)  # the attacker's tie-breaks
    matches = np.stack([reports[c].to_numpy() == frame[c].to_numpy() for c in COLUMNS], axis=1)
    weights = np.where(matches.any(axis=1, keepdims=True), matches, True) * rng.random(
        matches.shape
    )
    guesses = weights.argmax(axis=1)
    bound = math.exp(epsilon) / (math.exp(epsilon) + len(COLUMNS) - 1)
    hits, n = int((guesses == real).sum()), len(frame)
    assert hits <= n * bound + z_bound(P_FAIL) * math.sqrt(n * bound * (1 - bound))
    assert hits > n / len(COLUMNS)  # the fakes hide, but not perfectly


def test_a_group_without_reporters_has_no_estimate_and_auto_splits_numbers() -> None:
    """(Newcomer review) one row in a group: under ``sample`` it reported one column, so the
    other columns' tables by that group have no estimate there (NaN), and the rest of the
    table stands. A column that cannot be sampled makes ``auto`` split."""
    frame = _population(600).assign(region=["tiny"] + ["big"] * 599)
    reports = frame.ldp.privatize(_three(), collect="sample", seed=3)
    (unreported,) = [c for c in COLUMNS if pd.isna(reports.loc[0, c])][:1]
    table = reports.ldp.debias(unreported, by="region").to_pandas()
    assert table[table["region"] == "tiny"]["count"].isna().all()
    assert table[table["region"] == "big"]["count"].notna().all()
    numbers = frame.assign(fare=np.linspace(0, 10, len(frame)))
    mixed = {**_three(), "fare": frameldp.HybridMechanism(1.0, bounds=(0, 10))}
    split = numbers.ldp.privatize(mixed, collect="auto", seed=3)
    assert split[[*COLUMNS, "fare"]].notna().all().all()


def test_fake_values_follow_the_prior() -> None:
    """The fakes of a column with a prior are the mechanism's reports of values drawn from
    it: with no noise to speak of (eps = 12), the fake values' counts fit the prior
    (chi-square at ``P_FAIL``), and a bucket of share 0 is never drawn."""
    frame = _population(6_000)
    mechanisms = {c: frameldp.RandomizedResponse(12.0, domain=list(ORIGINS)) for c in COLUMNS}
    frame = frame.assign(carrier=frame["origin"].to_numpy())
    law = dict.fromkeys(ORIGINS, 0.0) | {ORIGINS[0]: 0.5, ORIGINS[1]: 0.3, ORIGINS[2]: 0.2}
    reports = frame.ldp.privatize(
        mechanisms, collect="sample+fake", seed=4, fake_prior={"origin": law}
    )
    real = _real_columns(frame, 4, mechanisms, fake_prior={"origin": law})
    fakes = reports["origin"].to_numpy()[real != COLUMNS.index("origin")]
    observed = pd.Series(fakes).value_counts().reindex(ORIGINS[:3]).fillna(0).to_numpy()
    assert observed.sum() >= len(fakes) - 0.01 * len(fakes)  # eps 12: hardly any moved
    assert_chisquare(observed, np.array([0.5, 0.3, 0.2]), p_fail=P_FAIL)
    table = reports.ldp.debias("origin")
    assert "1 in 3 real" in repr(table)
    shares = frameldp.ldp(frame).privatize(mechanisms, seed=5).ldp.debias("dest")
    again = frame.ldp.privatize(
        mechanisms,
        collect="sample+fake",
        seed=4,
        fake_prior={"dest": shares, "carrier": frame["carrier"].value_counts()},
    )  # an earlier release's table, and a public Series of weights, as priors
    assert again["dest"].notna().all()
    # a table of one sampled column states the mixture with the columns it does not read,
    # under a fresh key as under a seed
    fresh = frame.ldp.privatize(mechanisms, collect="sample").ldp.debias("origin").privacy
    seeded = reports.ldp.debias("origin").privacy
    assert fresh.mechanism == seeded.mechanism == "sampled"
    assert fresh.rho == pytest.approx(seeded.rho)


def test_memoized_columns_are_sampled_with_their_permanent_responses(tmp_path: Any) -> None:
    """A memoized column under ``sample`` reports exactly what the memoized mechanism reports
    under the same keys (its permanent response per (person, value) under ``memo_key``, its
    instantaneous noise under ``key``) on the rows that report it; each night charges the
    mixture of the columns' instantaneous responses (module docstring of
    :mod:`frameldp.accounting.events.sampled`), and the counts stay unbiased."""
    frame = _population(3_000).assign(person=lambda f: np.arange(len(f)))
    mechanisms = {
        "carrier": frameldp.RandomizedResponse(1.0, domain=list(CARRIERS), epsilon_infinity=3.0),
        "origin": frameldp.OptimizedUnaryEncoding(1.0, domain=list(ORIGINS), epsilon_infinity=3.0),
    }
    memo, key = bytes(range(32, 64)), KEY
    split = frame.ldp.privatize(mechanisms, user="person", memo_key=memo, key=key)
    ledger = frameldp.Ledger(tmp_path / "ledger.db")
    ledger.set_budget("nightly", epsilon=100.0)
    nights = [
        frame.ldp.privatize(
            mechanisms,
            collect="sample",
            user="person",
            memo_key=memo,
            key=key if night == 0 else None,
            ledger=ledger,
            budget="nightly",
        )
        for night in range(2)
    ]
    first = nights[0]
    for column in mechanisms:
        held = first[column].notna().to_numpy()
        assert 0 < held.sum() < len(frame)
        assert first[column][held].tolist() == split[column][held].tolist()
    instants = SampledEvent(
        [[(m.guarantee(memo="m").events[0][0], 1)] for m in mechanisms.values()]
    )
    assert first.ldp.privacy.epsilon == pytest.approx(instants.pure_epsilon)
    assert first.ldp.privacy.epsilon > max(m.privacy.epsilon for m in mechanisms.values())
    assert ledger.spent("nightly") == pytest.approx(2 * instants.pure_epsilon)
    table = nights[1].ldp.debias("carrier").to_pandas().set_index("category")
    truth = frame["carrier"].value_counts()
    for label, row in table.iterrows():
        z = (row["count"] - truth.get(label, 0)) / row["std_error"]
        assert abs(z) <= z_bound(P_FAIL / len(table) / 2)


def test_another_prior_is_another_job_under_a_key() -> None:
    """(Attack review) Under one caller's key, two collections that differ only in their
    priors draw their reporting columns again (binomial: agreement ``1 / d``), as another
    mechanism does; the same prior repeats them (the same job)."""
    frame = _population(3_000)
    one = {"origin": {ORIGINS[0]: 1.0, ORIGINS[1]: 1.0}}
    other = {"origin": {ORIGINS[0]: 1.0, ORIGINS[1]: 2.0}}
    first = _real_columns(frame, 3, _three(), fake_prior=one)
    again = _real_columns(frame, 3, _three(), fake_prior=one)
    moved = _real_columns(frame, 3, _three(), fake_prior=other)
    assert (first == again).all()
    assert_binomial(int((first == moved).sum()), len(frame), 1 / 3, p_fail=P_FAIL)
