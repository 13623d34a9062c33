"""The shuffle model on frames: ``ldp(reports).shuffle()`` and ``ldp(df).balcer_cheu()``.

``shuffle`` keeps the recorded report columns only (a Bloom column with its cohort column), in a
keyed uniformly random row order that is the same on every backend for the same key, and
``ldp.privacy`` of the result is amplified by shuffling its rows
(:func:`frameldp.amplify_by_shuffling`). ``balcer_cheu`` returns the shuffler's output of the
Balcer–Cheu histogram protocol: one row per message, keyed-permuted, whose ``debias`` carries the
central ``(epsilon, delta)`` guarantee.

Oracles: the multiset of report rows (a shuffle only reorders), plain pandas for the cross-backend
order, the core :class:`frameldp.BalcerCheu` for the messages (same key and label, no frame), and
:func:`frameldp.amplify_by_shuffling` of the unshuffled frame's own guarantee. The "differ"
assertions compare orders of at least 2,000 rows: two independent uniform orders of rows over 4
labels coincide with probability below 1e-100.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import polars.testing
import pytest
from scipy.special import logsumexp
from scipy.stats import binom, chisquare

import frameldp
from frameldp import ldp
from frameldp.accounting.amplification import binary_rr_shuffle_delta
from frameldp.core.mechanisms import Statistic

from .conftest import (
    BACKENDS,
    CARRIERS,
    NEAR_IDENTITY_EPSILON,
    ORIGINS,
    P_FAIL,
    Backend,
    Columns,
    bonferroni_z,
)

KEY = bytes(range(32))
SEED = 2025
OTHER_SEED = 2026

N = 10_000
"""Rows of the report frames: large enough that shuffling amplifies the composed local epsilon."""

URLS = ("https://a.example/", "https://b.example/x?y=1", "https://c.example/é", "")

MECHANISMS = {
    "carrier": frameldp.RandomizedResponse(2.0, domain=CARRIERS),
    "origin": frameldp.Rappor(epsilon=2.0, domain=ORIGINS),
    "url": frameldp.BloomRappor(f=0.5, p=0.5, q=0.75, num_bits=16, num_hashes=2, num_cohorts=4),
}
REPORTS = ("carrier", "origin", "url", "url_cohort")
"""The columns a shuffle keeps: every report column and the Bloom column's cohorts."""

DELTA = 1e-6

BC_EPSILON = 2.0
BC_DELTA = 1e-3
BC_N = 2_000
"""Balcer–Cheu at (2, 1e-3) needs n >= 400 ln(4 / 1e-3) / 2^2 = 829.4 rows (830)."""
BC_MINIMUM = 830


def report_data(n: int = N) -> Columns:
    """An identifier, three columns to privatize (over public domains / open strings), a fare."""
    return {
        "passenger_id": [f"P{i:06d}" for i in range(n)],
        "carrier": [CARRIERS[i % 3] for i in range(n)],
        "origin": [ORIGINS[(7 * i) % 5] for i in range(n)],
        "url": [URLS[(5 * i) % len(URLS)] for i in range(n)],
        "fare": [i / 4 for i in range(n)],
    }


def carrier_data(n: int = BC_N) -> Columns:
    """One column over ``CARRIERS`` ("WN" never occurs) and an identifier."""
    return {
        "passenger_id": [f"P{i:06d}" for i in range(n)],
        "carrier": [CARRIERS[i % 3] for i in range(n)],
    }


def privatized(native: Any) -> Any:
    return ldp(native).privatize(MECHANISMS, seed=SEED)


def columns_of(backend: Backend, native: Any) -> list[Any]:
    return backend.names(native)


def rows_of(
    backend: Backend, native: Any, columns: Sequence[str] = REPORTS
) -> list[tuple[Any, ...]]:
    """The rows of ``columns`` in frame order, as tuples of Python values (one collect)."""
    eager = backend.collect(native)
    return list(zip(*(backend.column_values(eager, c) for c in columns), strict=True))


def reference_order(data: Columns, **source: Any) -> list[tuple[Any, ...]]:
    """Rows of the reports shuffled on plain pandas (object strings): the cross-backend oracle."""
    reference = BACKENDS["pandas-numpy"]
    shuffled = ldp(privatized(reference.make(data))).shuffle(**source)
    return rows_of(reference, shuffled)


def carrier_codes(data: Columns) -> np.ndarray[Any, Any]:
    return np.array([CARRIERS.index(v) for v in data["carrier"]], dtype=np.int64)


def balcer_cheu(n: int = BC_N) -> frameldp.BalcerCheu:
    return frameldp.BalcerCheu(BC_EPSILON, BC_DELTA, n=n, domain=CARRIERS)


@functools.cache
def balcer_cheu_epsilon_at(delta: float) -> float:
    """The protocol's exact epsilon at ``delta`` (about 1 s of accounting: computed once)."""
    return balcer_cheu().privacy.epsilon_at(delta)


# ------------------------------------------------------------------------------ shuffle: columns


def test_shuffle_keeps_every_report_column_and_only_those(backend: Backend) -> None:
    reports = privatized(backend.make(report_data()))
    before = backend.snapshot(reports)

    shuffled = ldp(reports).shuffle(seed=SEED)

    assert backend.is_native(shuffled)
    assert sorted(columns_of(backend, shuffled)) == sorted(REPORTS)
    for column in REPORTS:
        assert backend.report_storage(shuffled, column) == backend.report_storage(reports, column)
    assert ldp(shuffled).mechanisms == ldp(reports).mechanisms
    assert backend.num_rows(shuffled) == N
    backend.assert_unchanged(before, reports)


def test_shuffle_reorders_the_report_rows_without_changing_them(backend: Backend) -> None:
    """The same multiset of (carrier, origin, url, cohort) rows, in another order."""
    reports = privatized(backend.make(report_data()))

    shuffled = ldp(reports).shuffle(seed=SEED)

    original, permuted = rows_of(backend, reports), rows_of(backend, shuffled)
    assert sorted(permuted) == sorted(original)
    assert permuted != original


def test_shuffle_resets_the_pandas_index(pandas_backend: Backend) -> None:
    """The index may identify people (here the passenger ids): it is replaced by 0..n-1."""
    reports = privatized(pandas_backend.make(report_data())).set_index("passenger_id")
    before = pandas_backend.snapshot(reports)

    shuffled = ldp(reports).shuffle(seed=SEED)

    pd.testing.assert_index_equal(shuffled.index, pd.RangeIndex(N))
    assert "passenger_id" not in shuffled.columns
    assert shuffled.index.name is None
    pandas_backend.assert_unchanged(before, reports)


# ---------------------------------------------------------------------------- shuffle: keyed


@pytest.mark.parametrize("source", [{"seed": SEED}, {"key": KEY}], ids=["seed", "key"])
def test_same_key_gives_the_same_order_on_every_backend(
    backend: Backend, source: dict[str, Any]
) -> None:
    data = report_data()
    reports = privatized(backend.make(data))

    first = rows_of(backend, ldp(reports).shuffle(**source))
    second = rows_of(backend, ldp(reports).shuffle(**source))

    assert first == second
    assert first == reference_order(data, **source)


def test_different_seeds_give_different_orders(backend: Backend) -> None:
    reports = privatized(backend.make(report_data()))

    first = rows_of(backend, ldp(reports).shuffle(seed=SEED))
    second = rows_of(backend, ldp(reports).shuffle(seed=OTHER_SEED))
    keyed = rows_of(backend, ldp(reports).shuffle(key=KEY))

    assert first != second
    assert first != keyed
    assert sorted(first) == sorted(second)


def test_chunked_input_gives_the_same_order(backend: Backend) -> None:
    """A frame stacked from two pieces (several chunks; a two-source LazyFrame plan) shuffles
    like the same rows in one piece: the order depends on (key, row position) only."""
    data = report_data()
    cut = 3_333
    pieces = [
        backend.make({name: values[:cut] for name, values in data.items()}),
        backend.make({name: values[cut:] for name, values in data.items()}),
    ]
    reports = privatized(backend.concat(pieces))

    shuffled = ldp(reports).shuffle(seed=SEED)

    assert rows_of(backend, shuffled) == reference_order(data, seed=SEED)


def test_a_lazy_frame_is_shuffled_when_asked() -> None:
    """A LazyFrame is shuffled when ``shuffle`` is called (it reads every report): collected
    twice and with either engine it gives one order; two shuffles without a key draw two
    orders of the same reports, with a key the same one."""
    reports = privatized(pl.LazyFrame(report_data()))

    shuffled = ldp(reports).shuffle(key=bytes(32))

    assert isinstance(shuffled, pl.LazyFrame)
    first = shuffled.collect(engine="streaming")
    polars.testing.assert_frame_equal(first, shuffled.collect(engine="streaming"))
    polars.testing.assert_frame_equal(first, shuffled.collect())
    polars.testing.assert_frame_equal(first, shuffled.collect(engine="in-memory"))
    assert first.rows() == ldp(reports).shuffle(key=bytes(32)).collect().rows()
    fresh = ldp(reports).shuffle()
    again = fresh.collect()
    assert again.equals(fresh.collect())
    assert sorted(again.rows()) == sorted(first.rows())
    # N rows in two independent uniform orders: equal with probability 1 / N!.
    assert not again.equals(ldp(reports).shuffle().collect())


def test_every_order_of_three_reports_is_equally_likely() -> None:
    """Three distinct reports (k-RR near the identity) shuffled under 3,000 seeds (pandas; the
    other backends give the same order for the same seed): a chi-square test over the 6 orders
    at ``P_FAIL``. It detects, with probability 1/2, any order whose probability is off from
    1/6 by 0.038 (noncentrality 32 against the critical value 35.9 at 5 degrees of freedom)."""
    backend = BACKENDS["pandas-numpy"]
    values = ["AA", "DL", "UA"]
    reports = ldp(backend.make({"carrier": values})).krr(
        "carrier", NEAR_IDENTITY_EPSILON, domain=CARRIERS, seed=SEED
    )
    assert backend.column_values(reports, "carrier") == values
    num_seeds = 3_000

    counts = Counter(
        tuple(backend.column_values(ldp(reports).shuffle(seed=seed), "carrier"))
        for seed in range(num_seeds)
    )

    orders = list(itertools.permutations(values))
    assert set(counts) <= set(orders)
    observed = [counts[order] for order in orders]
    assert chisquare(observed, [num_seeds / len(orders)] * len(orders)).pvalue > P_FAIL


# --------------------------------------------------------------------------- shuffle: privacy


def test_shuffled_frame_has_the_amplified_guarantee(backend: Backend) -> None:
    reports = privatized(backend.make(report_data()))
    local = ldp(reports).privacy

    shuffled = ldp(reports).shuffle(seed=SEED)

    privacy = ldp(shuffled).privacy
    expected = frameldp.amplify_by_shuffling(local, N)
    assert local.model == "local"
    assert privacy.model == "shuffle"
    assert privacy.parameters["reports"] == N
    assert privacy.parameters["local_epsilon"] == local.epsilon
    assert privacy.epsilon_at(DELTA) == expected.epsilon_at(DELTA)
    assert privacy.epsilon_at(DELTA) < local.epsilon
    assert ldp(reports).privacy == local  # the input keeps its local guarantee


def test_debias_of_a_shuffled_frame_carries_the_shuffled_guarantee(backend: Backend) -> None:
    """Counts do not depend on the order (the same estimates as before shuffling); the table's
    guarantee is the shuffled frame's."""
    reports = privatized(backend.make(report_data()))
    shuffled = ldp(reports).shuffle(seed=SEED)

    for column in ("carrier", "origin"):
        table = ldp(shuffled).debias(column)
        unshuffled = ldp(reports).debias(column)

        assert table.privacy == ldp(shuffled).privacy
        assert table.privacy.model == "shuffle"
        assert unshuffled.privacy.model == "local"
        assert table.estimate.counts.tolist() == unshuffled.estimate.counts.tolist()


@pytest.mark.parametrize("keep", ["passenger_id", ["passenger_id"]], ids=["str", "list"])
def test_keeping_an_identifier_warns_and_keeps_the_local_guarantee(
    backend: Backend, keep: Any
) -> None:
    reports = privatized(backend.make(report_data()))
    before = backend.snapshot(reports)

    with pytest.warns(frameldp.FrameLDPWarning, match="passenger_id"):
        shuffled = ldp(reports).shuffle(keep=keep, seed=SEED)

    assert backend.is_native(shuffled)
    assert sorted(columns_of(backend, shuffled)) == sorted([*REPORTS, "passenger_id"])
    pairs = ("passenger_id", "carrier")  # each identifier travels with its own report
    assert sorted(rows_of(backend, shuffled, pairs)) == sorted(rows_of(backend, reports, pairs))
    assert ldp(shuffled).privacy.model == "local"
    assert ldp(shuffled).privacy == ldp(reports).privacy
    assert ldp(shuffled).debias("carrier").privacy.model == "local"
    backend.assert_unchanged(before, reports)


def test_keeping_a_report_column_does_not_warn(backend: Backend) -> None:
    reports = privatized(backend.make(report_data()))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shuffled = ldp(reports).shuffle(keep=["carrier", "url_cohort"], key=bytes(32))

    assert sorted(columns_of(backend, shuffled)) == sorted(REPORTS)
    assert ldp(shuffled).privacy.model == "shuffle"


# ---------------------------------------------------------------------------- shuffle: errors


def test_shuffle_without_recorded_mechanisms_raises(backend: Backend) -> None:
    native = backend.make(report_data(64))
    before = backend.snapshot(native)

    with pytest.raises(frameldp.MechanismNotFoundError, match="shuffle"):
        ldp(native).shuffle(seed=SEED)
    backend.assert_unchanged(before, native)


def test_shuffle_of_balcer_cheu_messages_raises(backend: Backend) -> None:
    messages = ldp(backend.make(carrier_data())).balcer_cheu(
        "carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, seed=SEED
    )

    with pytest.raises(frameldp.ParameterError, match=r"'carrier'.*already the shuffler's output"):
        ldp(messages).shuffle(seed=SEED)


def test_missing_keep_column_raises_naming_it(backend: Backend) -> None:
    reports = privatized(backend.make(report_data(64)))

    with pytest.raises(frameldp.ParameterError, match="'no_such_column'"):
        ldp(reports).shuffle(keep=["no_such_column"], seed=SEED)


def test_shuffle_refuses_both_key_and_seed(backend: Backend) -> None:
    reports = privatized(backend.make(report_data(64)))

    with pytest.raises(frameldp.ParameterError, match="key= and seed="):
        ldp(reports).shuffle(key=KEY, seed=SEED)


# ------------------------------------------------------------------------------- balcer_cheu


def test_balcer_cheu_returns_the_shuffled_messages(backend: Backend) -> None:
    """Exactly the messages of the core protocol (same seed and label, no frame), permuted."""
    data = carrier_data()
    native = backend.make(data)
    before = backend.snapshot(native)

    messages = ldp(native).balcer_cheu("carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, seed=SEED)

    unshuffled = balcer_cheu().randomize(
        carrier_codes(data), source=frameldp.RandomSource.from_seed(SEED), label="carrier"
    )
    expected = [CARRIERS[code] for code in unshuffled]
    values = backend.column_values(messages, "carrier")
    assert backend.is_native(messages)
    assert columns_of(backend, messages) == ["carrier"]
    assert backend.num_rows(messages) == len(expected)
    assert set(values) <= set(CARRIERS)
    assert sorted(values) == sorted(expected)
    assert values != expected  # not grouped person by person
    backend.assert_unchanged(before, native)


def test_balcer_cheu_same_seed_same_messages_on_every_backend(backend: Backend) -> None:
    data = carrier_data()
    native = backend.make(data)

    def call(**source: Any) -> list[Any]:
        out = ldp(native).balcer_cheu("carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, **source)
        return backend.column_values(out, "carrier")

    reference = BACKENDS["pandas-numpy"].make(data)
    expected = BACKENDS["pandas-numpy"].column_values(
        ldp(reference).balcer_cheu("carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, seed=SEED),
        "carrier",
    )
    first = call(seed=SEED)
    assert first == expected
    assert call(seed=SEED) == first
    assert call(seed=OTHER_SEED) != first
    with pytest.raises(frameldp.ParameterError, match="key= is refused for Balcer–Cheu"):
        call(key=KEY)


def test_debias_of_messages_carries_the_central_guarantee(backend: Backend) -> None:
    data = carrier_data()
    messages = ldp(backend.make(data)).balcer_cheu(
        "carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, seed=SEED
    )

    table = ldp(messages).debias("carrier")

    mechanism = balcer_cheu()
    counts = mechanism.message_counts(
        carrier_codes(data), source=frameldp.RandomSource.from_seed(SEED), label="carrier"
    )
    assert isinstance(table, frameldp.FrequencyTable)
    assert type(table.frame) is backend.table_type()
    assert backend.column_values(table.frame, "category") == list(CARRIERS)
    assert (
        table.estimate.counts.tolist()
        == mechanism.debias(Statistic((counts,), int(counts.sum()))).counts.tolist()
    )
    assert table.privacy == mechanism.privacy.insecure()  # seed=: marked INSECURE
    assert table.privacy.model == "shuffle"
    assert table.privacy.epsilon_at(BC_DELTA) <= BC_EPSILON
    assert ldp(messages).privacy.model == "shuffle"


def test_balcer_cheu_estimates_are_unbiased(backend: Backend) -> None:
    """On 20,000 people every debiased count is within ``bonferroni_z(4)`` (5.16) standard
    errors ``sqrt(n p (1 - p))`` (20.2) of the true count at total ``P_FAIL``: this detects a
    bias of about 105 people (1.6% of the 6,667 holding each carrier; "WN" is held by nobody)."""
    n = 20_000
    data = carrier_data(n)
    messages = ldp(backend.make(data)).balcer_cheu(
        "carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, seed=SEED
    )

    table = ldp(messages).debias("carrier")

    p = balcer_cheu(n).noise_probability
    truth = np.bincount(carrier_codes(data), minlength=len(CARRIERS))
    z = (table.estimate.counts - truth) / math.sqrt(n * p * (1 - p))
    assert np.all(np.abs(z) < bonferroni_z(len(CARRIERS)))


def test_balcer_cheu_needs_enough_rows(backend: Backend) -> None:
    """n >= 400 ln(4 / delta) / epsilon^2: 830 rows at (2, 1e-3) pass, 829 are refused."""
    ldp(backend.make(carrier_data(BC_MINIMUM))).balcer_cheu(
        "carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, seed=SEED
    )
    native = backend.make(carrier_data(BC_MINIMUM - 1))

    with pytest.raises(frameldp.ParameterError, match=rf"'carrier'.*n=829.*= {BC_MINIMUM}\b"):
        ldp(native).balcer_cheu("carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, seed=SEED)


@pytest.mark.parametrize(
    ("column", "kwargs", "error", "match"),
    [
        ("carrier", {"epsilon": 2.5}, frameldp.ParameterError, r"'carrier'.*epsilon.*2\.5"),
        ("no_such_column", {}, frameldp.ParameterError, "'no_such_column' not found"),
        ("carrier", {"domain": ["AA", "DL"]}, frameldp.DomainError, "'carrier'.*'UA'"),
        ("carrier", {"delta": 1.0}, frameldp.ParameterError, "'carrier'.*delta"),
    ],
    ids=["epsilon-above-2", "missing-column", "value-outside-domain", "delta-1"],
)
def test_bad_balcer_cheu_call_raises(
    backend: Backend, column: str, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    native = backend.make(carrier_data())
    before = backend.snapshot(native)
    arguments = {"epsilon": BC_EPSILON, "delta": BC_DELTA, "domain": CARRIERS, **kwargs}

    with pytest.raises(error, match=match):
        ldp(native).balcer_cheu(column, seed=SEED, **arguments)
    assert issubclass(error, frameldp.FrameLDPError)
    backend.assert_unchanged(before, native)


# ------------------------------------------------------------------------------ balcer_cheu: ledger


# The charge is computed once for every backend (its epsilon at the budget's delta): an eager
# and a lazy frame cover both ways a release reaches the ledger.
@pytest.mark.parametrize("backend", ["pandas-numpy", "polars-lazy"], indirect=True)
def test_balcer_cheu_is_charged_to_a_budget_with_a_delta(backend: Backend, tmp_path: Path) -> None:
    """The spent epsilon is the protocol's exact epsilon at the budget's delta (one release)."""
    path = tmp_path / "budget.sqlite"
    ledger = frameldp.Ledger(path)
    ledger.set_budget("b", epsilon=1.0, delta=1e-5)

    ldp(backend.make(carrier_data())).balcer_cheu(
        "carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, seed=SEED, ledger=path, budget="b"
    )

    spent = ledger.spent("b")
    assert 0.0 < spent <= 1.0
    assert spent == balcer_cheu_epsilon_at(1e-5)
    assert len(ledger.history("b")) == 1


def test_balcer_cheu_is_refused_by_a_pure_budget(backend: Backend, tmp_path: Path) -> None:
    """A shuffle-model guarantee has no pure epsilon: a budget without delta cannot hold it, and
    nothing is recorded."""
    path = tmp_path / "budget.sqlite"
    ledger = frameldp.Ledger(path)
    ledger.set_budget("pure", epsilon=1.0)

    with pytest.raises(frameldp.BudgetExceededError, match="pure"):
        ldp(backend.make(carrier_data())).balcer_cheu(
            "carrier", BC_EPSILON, BC_DELTA, domain=CARRIERS, seed=SEED, ledger=path, budget="pure"
        )
    assert ledger.history("pure") == []
    assert ledger.spent("pure") == 0.0


# ------------------------------------------------------------------------- edge cases


def test_privacy_of_an_empty_shuffled_frame(backend: Backend) -> None:
    empty = backend.slice(backend.make(report_data(64)), 0, 0)  # typed columns, no rows
    reports = ldp(empty).privatize({c: MECHANISMS[c] for c in ("carrier", "origin")}, seed=SEED)
    local = ldp(reports).privacy

    shuffled = ldp(reports).shuffle(seed=SEED)

    assert backend.num_rows(shuffled) == 0
    assert ldp(shuffled).privacy.epsilon_at(DELTA) <= local.epsilon


def _krr_projection_delta(epsilon: float, epsilon0: float, k: int, n: int) -> float:
    """A lower bound on delta(epsilon) of ``n`` shuffled k-RR reports at ``epsilon0``.

    Everyone else holds value 0; one person holds 0 or 1. The number of reports equal to 1 (a
    post-processing of the shuffled reports) is ``Bin(n - 1, r) + Bernoulli(r or q)`` with
    ``r = 1 / (e^eps0 + k - 1)``, ``q = e^eps0 r``: its hockey-stick divergence, summed in log
    space with scipy, is at most that of the whole shuffled collection.
    """
    r = 1.0 / (math.exp(epsilon0) + k - 1)
    q = math.exp(epsilon0) * r
    ones = np.arange(n + 1)
    same = binom.logpmf(ones, n - 1, r)  # P[B = j]
    shifted = np.concatenate([[-np.inf], same[:-1]])  # P[B = j - 1]
    holds_0 = np.logaddexp(math.log(r) + shifted, math.log1p(-r) + same)
    holds_1 = np.logaddexp(math.log(q) + shifted, math.log1p(-q) + same)
    worst = 0.0
    for first, second in ((holds_0, holds_1), (holds_1, holds_0)):
        excess = first - (second + epsilon)
        above = excess > 0
        if above.any():
            terms = first[above] + np.log(-np.expm1(-excess[above]))
            worst = max(worst, float(np.exp(logsumexp(terms))))
    return worst


@pytest.mark.parametrize(
    ("epsilon", "epsilon0", "n"), [(0.1, 2.0, 3_000), (0.3, 1.0, 500), (0.05, 3.0, 10_000)]
)
def test_projection_bound_is_binary_rr_for_two_values(
    epsilon: float, epsilon0: float, n: int
) -> None:
    """For k = 2 the projection is the whole shuffled collection: the helper above equals
    frameldp's exact shuffled binary randomized response (computed separately)."""
    expected = binary_rr_shuffle_delta(epsilon, epsilon0, n)
    assert _krr_projection_delta(epsilon, epsilon0, 2, n) == pytest.approx(expected, rel=1e-9)


def test_concatenated_shuffled_collections_do_not_overclaim(pandas_backend: Backend) -> None:
    """Two daily collections of the same people, each shuffled, stacked by ``pd.concat``: the
    first ``n`` rows are the first day's shuffled frame, so the stack reveals at least as much,
    and its claimed epsilon at ``DELTA`` must respect the lower bound of that one day."""
    n, epsilon0, domain = 3_000, 2.0, CARRIERS[:3]
    native = pandas_backend.make(carrier_data(n))
    days = [
        ldp(ldp(native).krr("carrier", epsilon0, domain=domain, seed=day)).shuffle(seed=day)
        for day in (1, 2)
    ]
    one_day = ldp(days[0]).privacy.epsilon_at(DELTA)
    assert _krr_projection_delta(one_day, epsilon0, len(domain), n) <= DELTA

    both = pd.concat(days, ignore_index=True)

    privacy = ldp(both).privacy  # None: the two collections' records differ, pandas drops them
    claimed = math.inf if privacy is None else privacy.epsilon_at(DELTA)
    assert _krr_projection_delta(claimed, epsilon0, len(domain), n) <= DELTA


def test_a_frame_derived_from_one_shuffled_collection_keeps_its_guarantee(
    pandas_backend: Backend,
) -> None:
    """A subset or a repetition of one shuffled collection is a post-processing of it: it is
    amplified over the recorded number of reports, not over its own row count."""
    n = 3_000
    reports = ldp(pandas_backend.make(carrier_data(n))).krr(
        "carrier", 2.0, domain=CARRIERS[:3], seed=1
    )
    shuffled = ldp(reports).shuffle(seed=2)
    expected = ldp(shuffled).privacy.epsilon_at(DELTA)
    assert expected < 2.0

    for derived in (shuffled.head(10), pd.concat([shuffled, shuffled], ignore_index=True)):
        assert ldp(derived).privacy.epsilon_at(DELTA) == expected
    assert ldp(shuffled.head(10)).privacy.parameters["reports"] == n


def test_a_reused_shuffle_key_orders_different_frames_independently() -> None:
    """The order is bound to the rows' content: one key gives the same frame one order on
    pandas, polars eager and lazy, and two different frames of the same length independent
    orders (were it the same permutation, knowing one frame's order would undo the other's
    shuffle). The rows carry their index in ``fare``, so the order is read off exactly."""
    key = bytes(range(32))
    n = 200

    def order(frame: Any) -> list[float]:
        out = ldp(privatized(frame)).shuffle(keep="fare", key=key)
        if isinstance(out, pl.LazyFrame):
            out = out.collect()
        return list(out["fare"])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # keep= voids the shuffle guarantee: warned, not tested
        first = order(pd.DataFrame(report_data(n)))
        assert order(pl.DataFrame(report_data(n))) == first
        assert order(pl.LazyFrame(report_data(n))) == first
        other = report_data(n)
        other["carrier"] = list(reversed(other["carrier"]))
        second = order(pd.DataFrame(other))
    # Two independent uniform orders of 200 rows are equal with probability 1 / 200!.
    assert sorted(second) == sorted(first)
    assert second != first


@pytest.mark.parametrize("library", ["pandas", "polars-eager", "polars-lazy"])
def test_a_seeded_shuffle_is_marked_insecure(library: str) -> None:
    """An order drawn from seed= is known to whoever knows the seed: warned, and the amplified
    guarantee says INSECURE; a fresh order is not marked."""
    make = {"pandas": pd.DataFrame, "polars-eager": pl.DataFrame, "polars-lazy": pl.LazyFrame}
    reports = ldp(make[library](report_data(100))).privatize(MECHANISMS, key=bytes(32))

    with pytest.warns(frameldp.errors.InsecureSeedWarning, match="shuffle order"):
        seeded = ldp(reports).shuffle(seed=1)

    assert ldp(seeded).privacy.seeded
    assert "INSECURE" in str(ldp(seeded).privacy)
    assert not ldp(ldp(reports).shuffle()).privacy.seeded


def test_a_kept_list_column_is_shuffled_with_its_reports() -> None:
    """Kept columns of any type take part in the content-bound order (a list column raised
    pyarrow's ArrowNotImplementedError); pandas and polars agree on the order."""
    data = {"c": ["a", "b"] * 50, "tags": [[i, i + 1] for i in range(100)]}
    mechanisms = {"c": frameldp.RandomizedResponse(1.0, domain=["a", "b"])}
    orders = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # keep= voids the shuffle guarantee: warned, not tested
        for make in (pd.DataFrame, pl.DataFrame):
            reports = ldp(make(data)).privatize(mechanisms, key=bytes(32))
            shuffled = ldp(reports).shuffle(keep="tags", key=bytes(32))
            orders.append([tags[0] for tags in list(shuffled["tags"])])
    assert orders[0] == orders[1]
    assert sorted(orders[0]) == list(range(100))
