"""Longitudinal k-RR through the accessors: the same call on every backend memoizes permanent
responses per (user, value), and the guarantee names the memo, never the key."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.stats import norm

import frameldp
from _stats import P_FAIL
from frameldp import ldp

from .conftest import Backend

DOMAIN = ["AA", "DL", "UA", "WN", "B6"]
MEMO, OTHER_MEMO = bytes(range(32)), bytes(range(1, 33))
KEY = bytes([5] * 32)


def _data(n: int = 600) -> dict[str, list[Any]]:
    return {"uid": [f"u{i}" for i in range(n)], "carrier": [DOMAIN[(3 * i) % 5] for i in range(n)]}


def _by_user(backend: Backend, frame: Any) -> dict[str, Any]:
    return dict(
        zip(
            backend.column_values(frame, "uid"),
            backend.column_values(frame, "carrier"),
            strict=True,
        )
    )


def test_memoized_krr_follows_user_and_value_on_every_backend(backend: Backend) -> None:
    """With epsilon = epsilon_inf there is no instantaneous noise: the reports are the
    permanent responses. Rows reversed and another key give every user the same report; another
    memo key changes them (600 users, each equal with probability below 0.6: all equal below
    1e-130)."""
    data = _data()
    reversed_data = {name: values[::-1] for name, values in data.items()}
    native, reordered = backend.make(data), backend.make(reversed_data)
    before = backend.snapshot(native)

    def call(frame: Any, memo: bytes, key: bytes) -> Any:
        return ldp(frame).krr(
            "carrier",
            1.0,
            domain=DOMAIN,
            epsilon_infinity=1.0,
            user="uid",
            memo_key=memo,
            key=key,
        )

    first = call(native, MEMO, KEY)
    second = call(reordered, MEMO, bytes(32))
    other = call(native, OTHER_MEMO, KEY)

    assert backend.is_native(first)
    backend.assert_unchanged(before, native)
    assert _by_user(backend, first) == _by_user(backend, second)
    assert _by_user(backend, other) != _by_user(backend, first)
    g = ldp(first).privacy
    assert g.epsilon_infinity == pytest.approx(1.0)
    assert g == ldp(second).privacy != ldp(other).privacy
    assert MEMO.hex() not in str(g)


def test_memoized_krr_debiases_without_bias(backend: Backend) -> None:
    """epsilon 1, epsilon_inf 4, 600 users: each debiased count within its Bonferroni bound of
    the truth (120 each)."""
    native = backend.make(_data())
    reports = ldp(native).krr(
        "carrier", 1.0, domain=DOMAIN, epsilon_infinity=4.0, user="uid", memo_key=MEMO, seed=2
    )
    table = ldp(reports).debias("carrier").to_pandas()
    z = norm.isf(P_FAIL / 2 / 5)
    assert np.all(np.abs(table["count"] - 120) < z * table["std_error"])


def test_user_without_epsilon_infinity_is_refused(backend: Backend) -> None:
    native = backend.make(_data(20))
    with pytest.raises(frameldp.ParameterError, match="permanent response"):
        ldp(native).krr("carrier", 1.0, domain=DOMAIN, user="uid", memo_key=MEMO)


LONGITUDINAL = {
    "rappor": lambda: frameldp.Rappor(1.0, domain=DOMAIN, epsilon_infinity=1.0),
    "optimized_unary_encoding": lambda: frameldp.OptimizedUnaryEncoding(
        1.0, domain=DOMAIN, epsilon_infinity=1.0
    ),
    "local_hashing": lambda: frameldp.LocalHashing(1.0, domain=DOMAIN, epsilon_infinity=1.0),
    "subset_selection": lambda: frameldp.SubsetSelection(1.0, domain=DOMAIN, epsilon_infinity=1.0),
}


@pytest.mark.parametrize("name", LONGITUDINAL)
def test_every_longitudinal_mechanism_memoizes_on_every_backend(
    backend: Backend, name: str
) -> None:
    """As for k-RR: with epsilon = epsilon_inf the reports are the permanent responses, the same
    per user for rows reversed and another key, different under another memo key (600 users,
    each equal by chance with probability below 0.6); the guarantee names the memo."""
    data = _data()
    native = backend.make(data)
    reordered = backend.make({column: values[::-1] for column, values in data.items()})
    before = backend.snapshot(native)
    mechanism = LONGITUDINAL[name]()

    def call(frame: Any, memo: bytes, key: bytes) -> Any:
        return ldp(frame).privatize({"carrier": mechanism}, user="uid", memo_key=memo, key=key)

    first = call(native, MEMO, KEY)
    backend.assert_unchanged(before, native)
    assert _by_user(backend, first) == _by_user(backend, call(reordered, MEMO, bytes(32)))
    assert _by_user(backend, first) != _by_user(backend, call(native, OTHER_MEMO, KEY))
    g = ldp(first).privacy
    assert g.epsilon_infinity == pytest.approx(1.0)
    assert MEMO.hex() not in str(g)


@pytest.mark.parametrize("name", LONGITUDINAL)
def test_every_longitudinal_mechanism_debiases_without_bias(backend: Backend, name: str) -> None:
    """epsilon 1, epsilon_inf 4, 600 users: each debiased count within its Bonferroni bound of
    the truth (120 each)."""
    mechanism = type(LONGITUDINAL[name]())(1.0, domain=DOMAIN, epsilon_infinity=4.0)
    native = backend.make(_data())
    reports = ldp(native).privatize({"carrier": mechanism}, user="uid", memo_key=MEMO, seed=2)
    table = ldp(reports).debias("carrier").to_pandas()
    z = norm.isf(P_FAIL / 2 / 5)
    assert np.all(np.abs(table["count"] - 120) < z * table["std_error"])


def test_one_hot_rappor_takes_the_longitudinal_keywords(backend: Backend) -> None:
    """``rappor(encoding="onehot")`` takes epsilon_infinity, user and memo_key as k-RR does:
    the same reports as the mechanism passed to privatize."""
    native = backend.make(_data(50))
    shortcut = ldp(native).rappor(
        "carrier", 1.0, domain=DOMAIN, epsilon_infinity=3.0, user="uid", memo_key=MEMO, key=KEY
    )
    mechanism = frameldp.Rappor(1.0, domain=DOMAIN, epsilon_infinity=3.0)
    direct = ldp(native).privatize({"carrier": mechanism}, user="uid", memo_key=MEMO, key=KEY)
    assert _by_user(backend, shortcut) == _by_user(backend, direct)
    assert ldp(shortcut).privacy.epsilon_infinity == pytest.approx(3.0)


def test_a_memoized_table_carries_the_memoized_guarantee(backend: Backend) -> None:
    """The debiased table states the release's guarantee (its memo, epsilon_inf); debiasing
    with the one-stage mechanism is refused, naming the parameter that differs (its end-to-end
    probabilities differ)."""
    mechanism = frameldp.OptimizedUnaryEncoding(1.0, domain=DOMAIN, epsilon_infinity=3.0)
    native = backend.make(_data(100))
    reports = ldp(native).privatize({"carrier": mechanism}, user="uid", memo_key=MEMO, key=KEY)
    table = ldp(reports).debias("carrier")
    assert table.privacy == ldp(reports).privacy
    assert table.privacy.epsilon_infinity == pytest.approx(3.0)
    one_stage = frameldp.OptimizedUnaryEncoding(1.0, domain=DOMAIN)
    with pytest.raises(frameldp.ParameterError, match="differ in epsilon_infinity"):
        ldp(reports).debias("carrier", one_stage)


def test_memoized_reports_are_not_shuffled(backend: Backend) -> None:
    """Shuffling amplification counts each row as an independent person; memoized rows of one
    user share a permanent response, so shuffle refuses them (and writes nothing)."""
    if backend.dask:
        pytest.skip("Dask refuses shuffle altogether (tests/frames/test_dask.py)")
    native = backend.make(_data(40))
    mechanism = frameldp.RandomizedResponse(1.0, domain=DOMAIN, epsilon_infinity=3.0)
    reports = ldp(native).privatize({"carrier": mechanism}, user="uid", memo_key=MEMO)
    with pytest.raises(frameldp.ParameterError, match="memoized permanent responses"):
        ldp(reports).shuffle()


def test_the_memo_name_binds_the_user_ids_type(backend: Backend) -> None:
    """The same people as integers and as their decimal text are digested apart, so their
    permanent responses are independent: the memo names differ, and four nights alternating
    them are charged as two memos of two reports each (each a person's two instantaneous
    responses). Float ids are refused, whole numbers too."""
    people = list(range(300))
    carriers = [DOMAIN[(3 * i) % 5] for i in people]
    ledger = frameldp.Ledger(":memory:")
    ledger.set_budget("nightly", epsilon=100.0)
    names = []
    for ids in (people, [str(i) for i in people]) * 2:
        reports = ldp(backend.make({"uid": ids, "carrier": carriers})).krr(
            "carrier",
            1.0,
            domain=DOMAIN,
            epsilon_infinity=3.0,
            user="uid",
            memo_key=MEMO,
            ledger=ledger,
            budget="nightly",
        )
        backend.collect(reports)
        names.append(ldp(reports).privacy.parameters["memo"])
    assert names[0] != names[1]
    assert names[:2] == names[2:]
    instant, uses = frameldp.RandomizedResponse(
        1.0, domain=DOMAIN, epsilon_infinity=3.0
    )._instant_event()
    assert instant is not None
    assert ledger.spent("nightly") == pytest.approx(2 * 2 * uses * instant.pure_epsilon)
    floats = backend.make({"uid": [float(i) for i in people], "carrier": carriers})
    with pytest.raises(frameldp.FrameLDPError, match="user ids must be integers, text or bytes"):
        backend.collect(
            ldp(floats).krr(
                "carrier", 1.0, domain=DOMAIN, epsilon_infinity=3.0, user="uid", memo_key=MEMO
            )
        )


@pytest.mark.parametrize("scheme", [2, 3])
@pytest.mark.parametrize("ids", ["text", "integer"])
def test_an_in_memory_release_digests_its_users_once_for_counting_and_every_column(
    scheme: int, ids: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pandas release with two memoized columns digests its user ids once: the rows of each
    person are counted from those digests (person 0 holds 3 rows: the release states 3) and
    both columns reuse them. Its reports are what each column's mechanism draws alone from the
    raw ids under the same key and memo key, so sharing changes no report."""
    import pandas as pd
    import pyarrow as pa

    from frameldp.core.mechanisms import _memo
    from frameldp.core.randomness import RandomSource

    memo = MEMO if scheme == 2 else frameldp.core.randomness.MEMO_KEY_PREFIX + MEMO
    n = 400
    people = [0, 0, 0, *range(1, n - 2)]  # person 0 holds three rows
    uid = [f"p{i}" for i in people] if ids == "text" else people
    frame = pd.DataFrame(
        {
            "uid": uid,
            "a": [DOMAIN[i % 5] for i in range(n)],
            "b": [DOMAIN[(7 * i) % 5] for i in range(n)],
        }
    )
    mechanisms = {
        "a": frameldp.RandomizedResponse(1.0, domain=DOMAIN, epsilon_infinity=3.0),
        "b": frameldp.OptimizedUnaryEncoding(1.0, domain=DOMAIN, epsilon_infinity=3.0),
    }
    made = []
    original = _memo.UserDigests.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append(args[0])
        original(self, *args, **kwargs)

    monkeypatch.setattr(_memo.UserDigests, "__init__", counted)
    reports = ldp(frame).privatize(mechanisms, user="uid", memo_key=memo, key=KEY)
    assert len(made) == 1
    specs = ldp(reports).specs
    assert specs["a"]["rows_per_user"] == specs["b"]["rows_per_user"] == 3
    storage = ldp(reports).plain()
    for column, mechanism in mechanisms.items():
        alone = mechanism.privatize_column(
            pa.array(frame[column]),
            column=column,
            source=RandomSource.from_key(KEY),
            users=pa.array(frame["uid"]),
            user_column="uid",
            memo=RandomSource.from_memo_key(memo),
        )[column]
        assert list(storage[column]) == alone.to_pylist()
    assert len(made) == 3  # the two columns drawn alone: no shared digests outside a release


def test_bad_user_ids_are_refused_in_the_order_and_place_they_always_were() -> None:
    """(Attack review) An in-memory release counts its people from the user digests, but user
    ids that digesting would refuse (bytes that are not UTF-8 in a text column) are counted as
    without memoization: the release then refuses a bad value of the column first, and the
    bad ids inside the column's context (the error names it), with nothing charged."""
    import pandas as pd
    import pyarrow as pa

    from frameldp.core.randomness import MEMO_KEY_PREFIX

    ledger = frameldp.Ledger(":memory:")
    ledger.set_budget("nightly", epsilon=100.0)
    bad_ids = pa.array([b"u1", b"\xff\xfe", b"u3"], pa.binary()).cast(pa.string(), safe=False)
    frame = pd.DataFrame({"u": pd.arrays.ArrowExtensionArray(bad_ids), "x": ["AA", "Q", "DL"]})
    mech = frameldp.RandomizedResponse(1.0, domain=DOMAIN, epsilon_infinity=3.0)
    for memo in (MEMO, MEMO_KEY_PREFIX + MEMO):
        with pytest.raises(frameldp.FrameLDPError, match="'Q'"):
            ldp(frame).privatize(
                {"x": mech}, user="u", memo_key=memo, ledger=ledger, budget="nightly"
            )
        fixed = frame.assign(x=["AA", "UA", "DL"])
        with pytest.raises(frameldp.FrameLDPError, match="UTF-8") as raised:
            ldp(fixed).privatize(
                {"x": mech}, user="u", memo_key=memo, ledger=ledger, budget="nightly"
            )
        assert raised.value.column == "x"
    assert ledger.spent("nightly") == 0
