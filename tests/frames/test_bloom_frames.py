"""Bloom-filter RAPPOR on frames: ``ldp(df).rappor(col, encoding="bloom", ...)`` and ``decode``.

One test body per behaviour, run on every backend by the ``backend`` fixture: the caller's frame
type comes back, the input is unchanged, the same key (and memo key) gives the same reports and
cohorts everywhere, memoized permanent responses follow (user, value) and not rows, decoding
recovers planted frequencies, bad calls raise frameldp errors that name the column, and the ledger
folds memoized nightly releases.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pandas as pd
import polars as pl
import polars.testing
import pyarrow as pa
import pytest
from scipy.stats import norm

import frameldp
from _releases import as_one_release
from frameldp import ldp
from frameldp.accounting import per_person

from .conftest import (
    BACKENDS,
    CARRIERS,
    ORIGINS,
    P_FAIL,
    Backend,
    bonferroni_z,
    reference_reports,
    unpacked,
)

Call = Callable[..., Any]

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
MEMO = bytes(range(100, 132))
OTHER_MEMO = bytes(range(200, 232))

URLS = ("https://a.example/", "https://b.example/x?y=1", "https://c.example/é", "")
"""Report strings: query strings, non-ASCII and the empty string are strings like any other."""

PAPER = {"f": 0.5, "p": 0.5, "q": 0.75}
"""RAPPOR's example setting (Erlingsson et al. 2014): epsilon_1 = 1.0743, epsilon_inf = 4.3944."""

SMALL = {"num_bits": 20, "num_hashes": 2, "num_cohorts": 8, **PAPER}
"""A small Bloom filter (20 bits: the last report byte has 4 padding bits)."""


def bloom_data(n: int = 48) -> dict[str, list[Any]]:
    """``n`` rows of 12 users (``user_id``), URLs, and two untouched columns."""
    return {
        "url": [URLS[(5 * i) % len(URLS)] for i in range(n)],
        "user_id": [f"user{i % 12:02d}" for i in range(n)],
        "carrier": [CARRIERS[i % 3] for i in range(n)],
        "fare": [i / 4 for i in range(n)],
    }


def reports_and_cohorts(backend: Backend, native: Any) -> tuple[list[bytes], list[int]]:
    return backend.column_values(native, "url"), backend.column_values(native, "url_cohort")


# ---------------------------------------------------------------------------- reproducibility

CALLS: dict[str, dict[str, Any]] = {
    "user-memo-key": {"user": "user_id", "memo_key": MEMO, "key": KEY},
    "user-memo-seed": {"user": "user_id", "memo_key": MEMO, "seed": 17},
    "no-user-key": {"key": KEY},
    "no-user-seed-rappor-hash": {"seed": 17, "hash_scheme": "rappor"},
}


@pytest.mark.parametrize("call", list(CALLS))
def test_same_keys_give_the_same_reports_and_cohorts_on_every_backend(
    backend: Backend, call: str
) -> None:
    """Reports and cohorts equal those of plain pandas for the same key, seed and memo key; the
    caller's frame type comes back with the reports in place of ``url``, a ``url_cohort`` int64
    column at the end, the other columns as they were and the input unchanged."""
    kwargs = {**SMALL, **CALLS[call]}
    data = bloom_data()
    native = backend.make(data)
    before = backend.snapshot(native)

    reports = ldp(native).rappor("url", encoding="bloom", **kwargs)

    assert backend.is_native(reports)
    assert reports is not native
    assert backend.names(reports) == [*data, "url_cohort"]
    assert backend.report_storage(reports, "url") == backend.rappor_storage(SMALL["num_bits"])
    assert backend.report_storage(reports, "url_cohort") == pa.int64()
    for other in ("user_id", "carrier", "fare"):
        assert backend.column_values(reports, other) == data[other]
    values, cohorts = reports_and_cohorts(backend, reports)
    assert not unpacked(values, 24)[:, SMALL["num_bits"] :].any()  # padding bits stay zero
    assert set(cohorts) <= set(range(SMALL["num_cohorts"]))

    def call_reference(frame: Any) -> Any:
        return ldp(frame).rappor("url", encoding="bloom", **kwargs)

    assert values == reference_reports(data, call_reference, "url")
    assert cohorts == reference_reports(data, call_reference, "url_cohort")
    # A plan collected twice, or the call repeated, gives the same reports, never fresh noise.
    assert reports_and_cohorts(backend, reports) == (values, cohorts)
    again = ldp(native).rappor("url", encoding="bloom", **kwargs)
    assert reports_and_cohorts(backend, again) == (values, cohorts)
    backend.assert_unchanged(before, native)


def test_a_different_key_gives_different_reports(backend: Backend) -> None:
    """The instantaneous response is redrawn under another key (the permanent one is shared):
    each of the 48 x 20 report bits agrees under both keys with probability at most
    q**2 + (1 - q)**2 = 0.625, all of them with probability below 1e-190."""
    native = backend.make(bloom_data())
    kwargs = {**SMALL, "user": "user_id", "memo_key": MEMO}

    first = ldp(native).rappor("url", encoding="bloom", key=KEY, **kwargs)
    second = ldp(native).rappor("url", encoding="bloom", key=OTHER_KEY, **kwargs)

    assert backend.column_values(first, "url") != backend.column_values(second, "url")
    # Cohorts come from the memo key and the user id only.
    assert backend.column_values(first, "url_cohort") == backend.column_values(second, "url_cohort")


def test_lazy_streaming_batches_give_the_eager_reports() -> None:
    """A LazyFrame long enough to be streamed in many batches gives the reports and cohorts of
    the eager frame, with and without users (noise is addressed by frame row and (user, value),
    never by batch)."""
    n = 300_000
    rows = np.arange(n)
    frame = pl.DataFrame(
        {
            "url": np.array(URLS)[(rows * 7) % len(URLS)],
            "user_id": (rows % 5_000).astype(np.int64),
        }
    )
    for kwargs in ({"user": "user_id", "memo_key": MEMO}, {}):
        eager = ldp(frame).rappor("url", encoding="bloom", seed=4, **SMALL, **kwargs)
        lazy = ldp(frame.lazy()).rappor("url", encoding="bloom", seed=4, **SMALL, **kwargs)
        polars.testing.assert_frame_equal(
            as_one_release(lazy.collect(engine="streaming")), as_one_release(eager)
        )


# ---------------------------------------------------------------------------- memoization

NO_INSTANTANEOUS = {"num_bits": 32, "num_hashes": 2, "num_cohorts": 8, "f": 0.5, "p": 0.0, "q": 1.0}
"""p = 0, q = 1: a report is its permanent response, so memoization is visible directly."""


def _memo_data() -> dict[str, list[Any]]:
    """12 users with two URLs each, every (user, URL) pair on two rows (48 rows)."""
    pairs = [(f"user{u:02d}", URLS[(u + j) % len(URLS)]) for u in range(12) for j in (0, 1)]
    rows = pairs + pairs[::-1]
    return {
        "user_id": [user for user, _ in rows],
        "url": [url for _, url in rows],
        "row": list(range(len(rows))),
    }


def _one_row_per_user(data: dict[str, list[Any]]) -> list[dict[str, list[Any]]]:
    """``data`` split into blocks holding one row of each user (its n-th row in block n)."""
    seen: dict[Any, int] = {}
    blocks: dict[int, list[int]] = {}
    for i, user in enumerate(data["user_id"]):
        seen[user] = seen.get(user, -1) + 1
        blocks.setdefault(seen[user], []).append(i)
    return [{name: [v[i] for i in rows] for name, v in data.items()} for rows in blocks.values()]


def _by_pair(
    backend: Backend, releases: Sequence[Any]
) -> tuple[dict[tuple[str, str], bytes], dict[str, int]]:
    """The report of each (user, URL) and the cohort of each user over ``releases``, checking
    they are unique."""
    by_pair: dict[tuple[str, str], set[bytes]] = {}
    by_user: dict[str, set[int]] = {}
    for reports in releases:
        users = backend.column_values(reports, "user_id")
        urls = backend.column_values(reports, "url_source")
        values = backend.column_values(reports, "url")
        cohorts = backend.column_values(reports, "url_cohort")
        for user, url, value, cohort in zip(users, urls, values, cohorts, strict=True):
            by_pair.setdefault((user, url), set()).add(value)
            by_user.setdefault(user, set()).add(cohort)
    assert all(len(found) == 1 for found in by_pair.values()), "one report per (user, value)"
    assert all(len(found) == 1 for found in by_user.values()), "one cohort per user"
    return (
        {pair: found.pop() for pair, found in by_pair.items()},
        {user: found.pop() for user, found in by_user.items()},
    )


def test_memoized_reports_follow_user_and_value_not_rows(backend: Backend) -> None:
    """Without instantaneous noise, releases with different keys but the same memo key give
    every (user, value) one report and every user one cohort, however the rows are ordered; a
    different memo key gives other reports and cohorts. Each release holds one row per person:
    two rows of one person without instantaneous noise would reveal which share a value (an
    unbounded loss, refused: tests/privacy/test_person_unit.py).

    Under two memo keys, one (user, value) gets equal 32-bit permanent responses with
    probability at most 0.625**32 < 3e-7 (same cohort and bits; f = 0.5), all 24 pairs below
    1e-150; all 12 users the same cohort with probability 8**-12 < 1e-10.
    """
    data = _memo_data()
    data = {**data, "url_source": data["url"]}
    blocks = _one_row_per_user(data)
    order = np.random.default_rng(3).permutation(len(blocks[0]["row"]))  # test data, not noise
    shuffled = [{name: [values[i] for i in order] for name, values in b.items()} for b in blocks]
    natives = [backend.make(block) for block in blocks]
    reordered = [backend.make(block) for block in shuffled[::-1]]
    before = backend.snapshot(natives[0])

    def call(frame: Any, **kwargs: Any) -> Any:
        return ldp(frame).rappor(
            "url", encoding="bloom", user="user_id", **NO_INSTANTANEOUS, **kwargs
        )

    first = [call(native, memo_key=MEMO, key=KEY) for native in natives]
    second = [call(native, memo_key=MEMO, key=bytes(reversed(KEY))) for native in reordered]
    other = [call(native, memo_key=OTHER_MEMO, key=KEY) for native in natives]

    pairs, cohorts = _by_pair(backend, first)
    assert _by_pair(backend, second) == (pairs, cohorts)
    other_pairs, other_cohorts = _by_pair(backend, other)
    assert other_pairs.keys() == pairs.keys()
    assert other_pairs != pairs
    assert other_cohorts != cohorts
    # The recorded guarantee names the memo (a public HMAC of the memo key), not the key.
    assert ldp(first[0]).privacy == ldp(second[0]).privacy
    assert ldp(first[0]).privacy != ldp(other[0]).privacy
    assert MEMO.hex() not in str(ldp(first[0]).privacy)
    backend.assert_unchanged(before, natives[0])


def test_without_user_every_row_gets_a_fresh_permanent_response(backend: Backend) -> None:
    """Without ``user=`` identical rows are independent reports (fresh cohort and permanent
    response per row): 48 copies of one URL give more than one distinct report. Under the null
    of one shared report, 47 more rows would all have to repeat a 32-bit report whose bits are
    each uncertain with probability >= 0.25: below 0.75**(32 * 47) ~ 1e-188."""
    native = backend.make({"url": [URLS[0]] * 48})

    reports = ldp(native).rappor("url", encoding="bloom", **NO_INSTANTANEOUS, key=KEY)

    assert len(set(backend.column_values(reports, "url"))) > 1
    assert ldp(reports).privacy.parameters.get("memo") is None


def test_user_without_memo_key_warns_that_memoization_is_per_call(backend: Backend) -> None:
    """With ``user=`` and a secret call key but no memo key, frameldp warns (docs/bloom.md)."""
    native = backend.make(bloom_data())

    with pytest.warns(frameldp.FrameLDPWarning, match="memo_key"):
        ldp(native).rappor("url", encoding="bloom", user="user_id", key=KEY, **SMALL)


# ---------------------------------------------------------------------------- decoding

CANDIDATES = [f"https://site{j:02d}.example/page" for j in range(20)]
PLANTED = {CANDIDATES[j]: share for j, share in enumerate((0.4, 0.25, 0.15, 0.1, 0.1))}
DECODE_ROWS = 60_000
DECODE = {"num_bits": 64, "num_hashes": 2, "num_cohorts": 16, "f": 0.5, "p": 0.25, "q": 0.75}


def _planted_data() -> dict[str, list[Any]]:
    urls = [url for url, share in PLANTED.items() for _ in range(round(share * DECODE_ROWS))]
    return {"url": urls, "user_id": [f"u{i}" for i in range(len(urls))]}


_DECODED: dict[str, pd.DataFrame] = {}


def _reference_table() -> pd.DataFrame:
    """The decoded table of plain pandas (computed once)."""
    if "reference" not in _DECODED:
        reference = BACKENDS["pandas-numpy"].make(_planted_data())
        reports = ldp(reference).rappor(
            "url", encoding="bloom", user="user_id", memo_key=MEMO, seed=5, **DECODE
        )
        _DECODED["reference"] = (
            ldp(reports).decode(candidates=CANDIDATES, significance=P_FAIL, level=0.9).to_pandas()
        )
    return _DECODED["reference"]


def test_decode_recovers_planted_frequencies(backend: Backend) -> None:
    """Five URLs planted at 40/25/15/10/10% of 60,000 reports among 20 candidates: all five are
    detected, each count within ``bonferroni_z(5)`` (5.3) standard errors of the truth, and no
    absent candidate is detected at ``significance=P_FAIL`` (family-wise).

    Standard errors are about 345 reports here: a bias of 5.3 SE (~1,800 reports, 3% of n) is
    detected. The smallest planted count is ~17 SE, so missing it (it must clear the 5.3 SE
    Bonferroni detection threshold) has probability far below P_FAIL. Every backend gives the
    table of plain pandas exactly (same reports, same arithmetic).
    """
    data = _planted_data()
    native = backend.make(data)
    mechanism = frameldp.BloomRappor(**DECODE)

    reports = ldp(native).rappor(
        "url", encoding="bloom", user="user_id", memo_key=MEMO, seed=5, **DECODE
    )
    before = backend.snapshot(reports)
    table = ldp(reports).decode(candidates=CANDIDATES, significance=P_FAIL, level=0.9)

    assert isinstance(table, frameldp.FrequencyTable)
    assert isinstance(table.frame, backend.table_type())
    assert list(table.frame.columns) == [
        "category",
        "count",
        "frequency",
        "std_error",
        "ci_low",
        "ci_high",
        "p_value",
    ]
    frame = table.to_pandas().set_index("category")
    n = len(data["url"])
    assert table.n == n
    assert table.column == "url"
    assert sorted(frame.index) == sorted(PLANTED)
    truth = np.array([PLANTED[c] * DECODE_ROWS for c in frame.index])
    z = np.abs(frame["count"].to_numpy() - truth) / frame["std_error"].to_numpy()
    assert (z < bonferroni_z(len(PLANTED))).all(), dict(zip(frame.index, z, strict=True))
    np.testing.assert_allclose(frame["frequency"], frame["count"] / n, rtol=1e-12)
    half = float(mpmath.sqrt(2) * mpmath.erfinv(0.9)) * frame["std_error"]
    np.testing.assert_allclose(frame["ci_high"] - frame["count"], half, rtol=1e-9)
    np.testing.assert_allclose(frame["count"] - frame["ci_low"], half, rtol=1e-9)
    assert (frame["p_value"] < P_FAIL / len(CANDIDATES)).all()
    assert table.decoding is not None
    assert table.decoding.labels == list(table.frame["category"])
    # Every report holds a candidate: the unexplained share is 0 up to its standard error.
    decoding = table.decoding
    assert abs(decoding.unexplained) < norm.isf(P_FAIL / 2) * decoding.unexplained_std_error
    assert table.privacy.epsilon == mechanism.privacy.epsilon
    assert table.privacy.epsilon_infinity == mechanism.privacy.epsilon_infinity
    assert table.mechanism == mechanism
    pd.testing.assert_frame_equal(table.to_pandas(), _reference_table(), check_exact=True)
    backend.assert_unchanged(before, reports)


def test_decode_takes_the_column_and_mechanism_explicitly(backend: Backend) -> None:
    """``decode("url", mechanism=...)`` works on a frame derived from the reports (polars frames
    forget their mechanisms) and equals ``decode()`` on the frame privatize returned."""
    native = backend.make(bloom_data(200))
    mechanism = frameldp.BloomRappor(**SMALL)
    reports = ldp(native).privatize({"url": mechanism}, seed=2)
    derived = (
        reports.select(["url", "url_cohort"])  # an Arrow table
        if backend.arrow
        else reports[["url", "url_cohort"]]
        if backend.library == "pandas"
        else reports.select("url", "url_cohort")
    )

    recorded = ldp(reports).decode(candidates=list(URLS))
    explicit = ldp(derived).decode("url", candidates=list(URLS), mechanism=mechanism)

    pd.testing.assert_frame_equal(explicit.to_pandas(), recorded.to_pandas(), check_exact=True)


# ---------------------------------------------------------------------------- privacy


def _paper_epsilons(f: float, p: float, q: float, h: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """``(epsilon_1, epsilon_inf)`` of Erlingsson et al. 2014, Thm. 1 and 2, at 50 digits."""
    with mpmath.workdps(50):
        f, p, q = mpmath.mpf(f), mpmath.mpf(p), mpmath.mpf(q)
        q_star = (1 - f / 2) * q + f / 2 * p
        p_star = f / 2 * q + (1 - f / 2) * p
        one = h * mpmath.log(q_star * (1 - p_star) / (p_star * (1 - q_star)))
        infinity = 2 * h * mpmath.log((1 - f / 2) / (f / 2))
        return one, infinity


def test_reports_know_their_one_report_and_longitudinal_epsilons(backend: Backend) -> None:
    """``ldp(reports).privacy``: epsilon is epsilon_1, epsilon_infinity the longitudinal bound,
    both the paper's closed forms rounded up (1.0743 and 4.3944 at f=.5, p=.5, q=.75, h=2)."""
    native = backend.make(bloom_data(12))  # one row per person

    reports = ldp(native).rappor(
        "url", encoding="bloom", user="user_id", memo_key=MEMO, seed=1, **SMALL
    )

    privacy = ldp(reports).privacy
    one, infinity = _paper_epsilons(0.5, 0.5, 0.75, 2)
    assert one <= privacy.epsilon <= one * (1 + 1e-12)
    assert infinity <= privacy.epsilon_infinity <= infinity * (1 + 1e-12)
    assert round(privacy.epsilon, 4) == 1.0743
    assert round(privacy.epsilon_infinity, 4) == 4.3944
    memo = frameldp.RandomSource.from_key(MEMO)
    assert privacy.parameters["memo"] == frameldp.BloomRappor(**SMALL).memo_id(
        memo, "url", user_type="text"
    )


def test_epsilons_may_be_given_instead_of_probabilities(backend: Backend) -> None:
    """``epsilon=`` and ``epsilon_infinity=`` realize noise at least as strong as asked: the
    guarantee is at most the targets (within float rounding of the closed forms)."""
    native = backend.make(bloom_data())

    reports = ldp(native).rappor(
        "url", encoding="bloom", epsilon=1.0, epsilon_infinity=4.0, num_bits=20, seed=1
    )

    privacy = ldp(reports).privacy
    assert 1.0 - 1e-9 <= privacy.epsilon <= 1.0
    assert 4.0 - 1e-9 <= privacy.epsilon_infinity <= 4.0
    assert ldp(reports).mechanisms["url"] == frameldp.BloomRappor(
        1.0, epsilon_infinity=4.0, num_bits=20
    )


def test_pandas_reports_follow_row_positions_whatever_the_index(pandas_backend: Backend) -> None:
    """A reversed, duplicated or string index is kept, and the reports are those of the same
    rows under the default index (noise is addressed by position, not label)."""
    native = pandas_backend.make(bloom_data())
    kwargs = {**SMALL, "user": "user_id", "memo_key": MEMO, "seed": 3}
    expected = ldp(native).rappor("url", encoding="bloom", **kwargs)

    for index in (list(range(48))[::-1], [0] * 48, [f"r{i}" for i in range(48)]):
        indexed = native.set_axis(index)
        reports = ldp(indexed).rappor("url", encoding="bloom", **kwargs)
        assert list(reports.index) == index
        assert reports["url"].tolist() == expected["url"].tolist()
        assert reports["url_cohort"].tolist() == expected["url_cohort"].tolist()


def test_privatize_mixes_bloom_with_rappor_and_krr(backend: Backend) -> None:
    """One ``privatize`` call with a Bloom, a one-hot RAPPOR and a k-RR column gives each column
    the reports of its own shortcut under the same key, and composes their guarantees."""
    data = {**bloom_data(), "origin": [ORIGINS[i % 5] for i in range(48)]}
    native = backend.make(data)
    before = backend.snapshot(native)
    bloom = frameldp.BloomRappor(**SMALL)
    rappor = frameldp.Rappor(epsilon=1.0, domain=CARRIERS)
    krr = frameldp.RandomizedResponse(2.0, domain=ORIGINS)
    mechanisms = {"url": bloom, "carrier": rappor, "origin": krr}

    reports = ldp(native).privatize(mechanisms, user="user_id", memo_key=MEMO, key=KEY)

    assert backend.is_native(reports)
    assert backend.names(reports) == [*data, "url_cohort"]
    assert ldp(reports).mechanisms == mechanisms
    alone = ldp(native).rappor(
        "url", encoding="bloom", user="user_id", memo_key=MEMO, key=KEY, **SMALL
    )
    assert reports_and_cohorts(backend, reports) == reports_and_cohorts(backend, alone)
    carrier = ldp(native).rappor("carrier", epsilon=1.0, domain=CARRIERS, key=KEY)
    origin = ldp(native).krr("origin", 2.0, domain=ORIGINS, key=KEY)
    assert backend.column_values(reports, "carrier") == backend.column_values(carrier, "carrier")
    assert backend.column_values(reports, "origin") == backend.column_values(origin, "origin")
    # Every user holds 4 rows: with user=, each column states one person's 4 reports.
    rows = 4
    expected = frameldp.compose(
        [ldp(alone).privacy, per_person(rappor.privacy, rows), per_person(krr.privacy, rows)]
    )
    assert ldp(reports).privacy == expected
    backend.assert_unchanged(before, native)


# ---------------------------------------------------------------------------- ledger

BUDGET = "nightly"
NIGHTS = 10


@pytest.fixture
def ledger(tmp_path: Path) -> frameldp.Ledger:
    """A SQLite ledger with one pure budget of epsilon 5 (between 4 and 5 one-report epsilons)."""
    book = frameldp.Ledger(tmp_path / "ledger.sqlite")
    book.set_budget(BUDGET, epsilon=5.0)
    return book


def test_memoized_nightly_releases_are_charged_each_persons_loss(
    backend: Backend, ledger: frameldp.Ledger
) -> None:
    """Nightly releases of the same people (one row each) under one memo key: the first
    night costs epsilon_1; two nights of one person share permanent responses that reveal
    whether the value changed, so they cost the person more than epsilon_1 twice, and past
    epsilon_inf as nights accumulate (tests/privacy/test_person_unit.py). The second night's
    per-person bound (every bit of both reports' instantaneous responses) is over the cap of
    5: refused, recording nothing. (Before issue 36 the nights folded under epsilon_inf.)"""
    native = backend.make(bloom_data(12))
    mechanism = frameldp.BloomRappor(**SMALL)

    def night(seed: int) -> Any:
        reports = ldp(native).rappor(
            "url",
            encoding="bloom",
            user="user_id",
            memo_key=MEMO,
            seed=seed,
            ledger=ledger,
            budget=BUDGET,
            **SMALL,
        )
        return backend.collect(reports)

    night(0)
    assert ledger.spent(BUDGET) == mechanism.privacy.epsilon
    with pytest.raises(frameldp.BudgetExceededError):
        night(1)
    assert len(ledger.history(BUDGET)) == 1
    assert ledger.spent(BUDGET) == mechanism.privacy.epsilon


def test_unmemoized_releases_compose_and_the_fifth_is_refused(
    backend: Backend, ledger: frameldp.Ledger
) -> None:
    """Without ``user=`` each night has a fresh permanent response: epsilon_1 = 1.0743 per night
    composes, four nights spend 4.297 and the fifth (5.371 > 5) raises BudgetExceededError,
    records nothing and returns nothing."""
    native = backend.make(bloom_data())
    epsilon_1 = frameldp.BloomRappor(**SMALL).privacy.epsilon

    def night(seed: int) -> Any:
        reports = ldp(native).rappor(
            "url", encoding="bloom", seed=seed, ledger=ledger, budget=BUDGET, **SMALL
        )
        return backend.collect(reports) if backend.lazy else reports  # a plan is charged when run

    for seed in range(4):
        night(seed)
    spent = ledger.spent(BUDGET)
    assert spent == pytest.approx(4 * epsilon_1, rel=1e-12)

    with pytest.raises(frameldp.BudgetExceededError, match=f"budget '{BUDGET}'"):
        night(4)

    assert len(ledger.history(BUDGET)) == 4
    assert ledger.spent(BUDGET) == spent


# ---------------------------------------------------------------------------- errors

BLOOM = frameldp.BloomRappor(**SMALL)


def _bloom(column: str = "url", **kwargs: Any) -> Call:
    def call(frame: Any, **extra: Any) -> Any:
        return ldp(frame).rappor(column, encoding="bloom", **{**SMALL, **kwargs, **extra})

    return call


def _with(data: dict[str, list[Any]], **changes: Any) -> dict[str, list[Any]]:
    """``data`` with some cells replaced: ``{column: {row: value}}``, or whole new columns."""
    out = {name: list(values) for name, values in data.items()}
    for name, change in changes.items():
        if isinstance(change, dict):
            for row, value in change.items():
                out[name][row] = value
        else:
            out[name] = list(change)
    return out


BASE = bloom_data()

# name -> (data, call, error class, substrings of the message), or a pytest.param of those
ERRORS: dict[str, Any] = {
    "int-column": (
        _with(BASE, visits=list(range(48))),
        _bloom("visits"),
        frameldp.DomainError,
        ["column 'visits'", "strings", "int64"],
    ),
    "null-value": (
        _with(bloom_data(12), url={7: None}),  # one row per person: within the budget
        _bloom(user="user_id", memo_key=MEMO, seed=1),
        frameldp.DomainError,
        ["column 'url'", "null", "row 7"],
    ),
    "null-user": pytest.param(
        _with(bloom_data(12), user_id={3: None}),
        _bloom(user="user_id", memo_key=MEMO, seed=1),
        frameldp.DomainError,
        ["'user_id'", "null", "row 3"],
    ),
    "missing-user-column": (
        BASE,
        _bloom(user="uid", memo_key=MEMO),
        frameldp.ParameterError,
        ["column 'uid' not found", "user_id"],
    ),
    "missing-value-column": (
        BASE,
        _bloom("link"),
        frameldp.ParameterError,
        ["column 'link' not found"],
    ),
    "memo-key-with-onehot": (
        BASE,
        lambda f, **kw: ldp(f).rappor("url", 1.0, domain=URLS, memo_key=MEMO, **kw),
        frameldp.ParameterError,
        ["column 'url'", "memo_key", "needs user="],
    ),
    "p-with-onehot": (
        BASE,
        lambda f, **kw: ldp(f).rappor("url", 1.0, domain=URLS, p=0.5, **kw),
        frameldp.ParameterError,
        ["column 'url'", "p", "encoding='bloom'"],
    ),
    "domain-with-bloom": (
        BASE,
        _bloom(domain=URLS),
        frameldp.ParameterError,
        ["column 'url'", "domain", "encoding='bloom'"],
    ),
    "bad-encoding": (
        BASE,
        lambda f, **kw: ldp(f).rappor("url", 1.0, domain=URLS, encoding="blom", **kw),
        frameldp.ParameterError,
        ["column 'url'", "encoding", "'blom'"],
    ),
    "memo-key-without-user": pytest.param(
        BASE,
        _bloom(memo_key=MEMO),
        frameldp.ParameterError,
        ["column 'url'", "memo_key", "user"],
    ),
    "cohort-column-taken": (
        _with(BASE, url_cohort=[0] * 48),
        _bloom(),
        frameldp.ParameterError,
        ["column 'url'", "'url_cohort'", "already exists"],
    ),
    "user-also-privatized": (
        BASE,
        lambda f, **kw: ldp(f).privatize({"url": BLOOM, "user_id": BLOOM}, user="user_id", **kw),
        frameldp.ParameterError,
        ["'user_id'", "cannot also be privatized"],
    ),
    "num-bits-zero": (
        BASE,
        _bloom(num_bits=0),
        frameldp.ParameterError,
        ["column 'url'", "num_bits", "0"],
    ),
    "reference-hash-too-wide": (
        BASE,
        _bloom(num_bits=512, hash_scheme="rappor"),
        frameldp.ParameterError,
        ["column 'url'", "num_bits", "512"],
    ),
    "bad-hash": (
        BASE,
        _bloom(hash_scheme="sha1"),
        frameldp.ParameterError,
        ["column 'url'", "hash_scheme", "'sha1'"],
    ),
    "p-equals-q": (
        BASE,
        _bloom(p=0.5, q=0.5),
        frameldp.ParameterError,
        ["column 'url'", "p and q must differ"],
    ),
    "f-zero": (
        BASE,
        _bloom(f=0.0),
        frameldp.ParameterError,
        ["column 'url'", "f must be in (0, 1]", "0.0"],
    ),
    "epsilon-over-infinity": (
        BASE,
        _bloom(f=None, p=None, q=None, epsilon=3.0, epsilon_infinity=2.0),
        frameldp.ParameterError,
        ["column 'url'", "epsilon", "epsilon_infinity=2.0", "3.0"],
    ),
    "epsilon-without-infinity": (
        BASE,
        _bloom(f=None, p=None, q=None, epsilon=1.0),
        frameldp.ParameterError,
        ["column 'url'", "epsilon_infinity=None"],
    ),
}


@pytest.mark.parametrize(("data", "call", "error", "fragments"), list(ERRORS.values()), ids=ERRORS)
def test_bad_bloom_calls_raise_and_change_nothing(
    backend: Backend,
    ledger: frameldp.Ledger,
    data: dict[str, list[Any]],
    call: Call,
    error: type[frameldp.FrameLDPError],
    fragments: list[str],
) -> None:
    """The error is a frameldp error of the right class whose message names the column and the
    parameter or value; the input is unchanged and nothing is recorded in the ledger (a
    LazyFrame's data errors surface at collect, which charges only once the first batch of
    reports exists: docs/privacy.md)."""
    native = backend.make(data)
    before = backend.snapshot(native)

    def attempt() -> None:
        plan = call(native, ledger=ledger, budget=BUDGET)
        if backend.lazy:
            assert ledger.history(BUDGET) == []  # a plan is charged when it is executed
            backend.collect(plan)

    with pytest.raises(error) as raised:
        attempt()

    for fragment in fragments:
        assert fragment in str(raised.value)
    if not backend.dask:  # a Dask graph is charged when built; its data is read at compute
        assert ledger.history(BUDGET) == []
    backend.assert_unchanged(before, native)


def _reports(frame: Any) -> Any:
    return ldp(frame).rappor("url", encoding="bloom", seed=1, **SMALL)


DECODE_ERRORS: dict[str, tuple[Call, type[frameldp.FrameLDPError], list[str]]] = {
    "debias-bloom-reports": (
        lambda f: ldp(_reports(f)).debias("url"),
        frameldp.ParameterError,
        ["column 'url'", "decode('url', candidates="],
    ),
    "debias-with-bloom-mechanism": (
        lambda f: ldp(_reports(f)).debias("url", BLOOM),
        frameldp.ParameterError,
        ["column 'url'", "decode("],
    ),
    "decode-without-bloom-columns": (
        lambda f: ldp(f).decode(candidates=list(URLS)),
        frameldp.MechanismNotFoundError,
        ["decode", "none"],
    ),
    "decode-column-without-bloom": (
        lambda f: ldp(f).decode("url", candidates=list(URLS)),
        frameldp.MechanismNotFoundError,
        ["column 'url'", "mechanism"],
    ),
    "decode-onehot-reports": (
        lambda f: ldp(ldp(f).rappor("carrier", 1.0, domain=CARRIERS, seed=1)).decode(
            candidates=list(CARRIERS)
        ),
        frameldp.MechanismNotFoundError,
        ["decode", "none"],
    ),
    "decode-two-bloom-columns-without-column": (
        lambda f: ldp(ldp(f).privatize({"url": BLOOM, "carrier": BLOOM}, seed=1)).decode(
            candidates=list(URLS)
        ),
        frameldp.MechanismNotFoundError,
        ["decode needs the report column", "'carrier'", "'url'"],
    ),
    "decode-with-rappor-mechanism": (
        lambda f: ldp(_reports(f)).decode(
            "url", candidates=list(URLS), mechanism=frameldp.Rappor(epsilon=1.0, domain=URLS)
        ),
        frameldp.ParameterError,
        ["column 'url'", "BloomRappor", "Rappor"],
    ),
    "decode-without-cohort-column": (
        lambda f: ldp(f).decode("url", candidates=list(URLS), mechanism=BLOOM),
        frameldp.ParameterError,
        ["column 'url_cohort' not found"],
    ),
    "decode-non-string-candidate": (
        lambda f: ldp(_reports(f)).decode(candidates=["a", 3]),
        frameldp.DomainError,
        ["candidates must be strings", "3", "position 1"],
    ),
    "decode-no-candidates": (
        lambda f: ldp(_reports(f)).decode(candidates=[]),
        frameldp.ParameterError,
        ["candidates", "none"],
    ),
    "decode-significance-one": (
        lambda f: ldp(_reports(f)).decode(candidates=list(URLS), significance=1.0),
        frameldp.ParameterError,
        ["significance", "1.0"],
    ),
}


@pytest.mark.parametrize(
    ("call", "error", "fragments"), list(DECODE_ERRORS.values()), ids=DECODE_ERRORS
)
def test_bad_decode_calls_raise_and_change_nothing(
    backend: Backend, call: Call, error: type[frameldp.FrameLDPError], fragments: list[str]
) -> None:
    """Decoding errors point to ``decode`` / name the column; the input is unchanged."""
    native = backend.make(bloom_data())
    before = backend.snapshot(native)

    with pytest.raises(error) as raised:
        call(native)

    for fragment in fragments:
        assert fragment in str(raised.value)
    backend.assert_unchanged(before, native)


def test_decode_names_one_of_two_bloom_columns(backend: Backend) -> None:
    """With two Bloom columns, ``decode(column)`` decodes that one (against its own cohorts)."""
    native = backend.make(bloom_data(200))
    reports = ldp(native).privatize({"url": BLOOM, "carrier": BLOOM}, seed=1)

    table = ldp(reports).decode("carrier", candidates=list(CARRIERS))

    assert table.column == "carrier"
    assert backend.column_values(reports, "carrier_cohort") != backend.column_values(
        reports, "url_cohort"
    )


def test_pandas_series_refuses_bloom_rappor(pandas_backend: Backend) -> None:
    """A Series cannot hold reports and cohorts: ``ldp(series).privatize(BloomRappor)`` raises."""
    native = pandas_backend.make(bloom_data())
    before = pandas_backend.snapshot(native)

    with pytest.raises(frameldp.ParameterError, match=r"column 'url': Bloom RAPPOR.*frame"):
        ldp(native["url"]).privatize(BLOOM, seed=1)

    pandas_backend.assert_unchanged(before, native)


def test_polars_expression_refuses_bloom_rappor() -> None:
    """Neither can an expression: ``pl.col(c).ldp.privatize(BloomRappor)`` raises when built."""
    with pytest.raises(frameldp.ParameterError, match=r"column 'url': Bloom RAPPOR.*frame"):
        pl.col("url").ldp.privatize(BLOOM, seed=1)


def test_lazy_null_error_names_the_frame_row() -> None:
    """docs/guide.md: LazyFrame errors name the frame row. A null at row 200,000 of a frame
    streamed in batches is reported at row 200,000 (as one-hot RAPPOR does)."""
    n = 300_000
    urls: list[str | None] = [URLS[0]] * n
    urls[200_000] = None
    lazy = pl.LazyFrame({"url": urls}, schema={"url": pl.String})

    with pytest.raises(frameldp.DomainError, match=r"row 200000 \(1 in this batch of rows\)"):
        ldp(lazy).rappor("url", encoding="bloom", seed=1, **SMALL).collect(engine="streaming")


def test_lazy_null_error_is_raised_at_collect() -> None:
    """The documented behaviour that does hold: the error is a DomainError at collect."""
    lazy = pl.LazyFrame({"url": [URLS[0], None]}, schema={"url": pl.String})
    plan = ldp(lazy).rappor("url", encoding="bloom", seed=1, **SMALL)

    with pytest.raises(frameldp.DomainError, match=r"column 'url'.*null"):
        plan.collect()
