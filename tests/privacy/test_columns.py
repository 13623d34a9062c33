"""Two columns, two column labels or two mechanisms never share noise, with or without ``key=``.

Under a caller's key the stream label (column, mechanism) is all that separates two columns of
equal values at equal positions, so these are the cases where a shared key could link them.
Each comparison is the XOR test of ``_linkage.py`` at ``P_FAIL = 1e-6`` per test (split
evenly between its comparisons); it detects shared noise in 5% of 3000 rows with probability
0.99.
"""

from __future__ import annotations

import itertools

import pandas as pd  # type: ignore[import-untyped]
import pytest

import frameldp
from _engines import FRAMES, LOCAL, SPARK, collected, reports
from _stats import P_FAIL
from frameldp.core.encoding import Domain

from ._linkage import DOMAIN, EPSILON, KEY, MECHANISM, assert_unlinked, ldp, people

KEYS = pytest.mark.parametrize("key", [None, KEY], ids=["fresh", "key"])


COLUMN_CASES = [
    *(pytest.param(b, k, id=f"{b}-{'key' if k else 'fresh'}") for b in LOCAL for k in (None, KEY)),
    *(pytest.param(b, KEY, id=f"{b}-key", marks=pytest.mark.slow) for b in SPARK),
]
"""Every engine, fresh and keyed; the Spark engines keyed only (a fresh key is drawn by the
same code on every engine, and a Spark case takes seconds)."""


@pytest.mark.parametrize(("backend", "key"), COLUMN_CASES)
def test_two_columns_of_equal_values_are_unlinked(backend: str, key: bytes | None) -> None:
    """Columns ``a`` and ``b`` hold the same values: their reports are unlinked."""
    values = people()
    frame = FRAMES[backend]({"a": values, "b": values})
    out = collected(ldp(frame).privatize({"a": MECHANISM, "b": MECHANISM}, key=key))

    assert_unlinked(reports(out, "a"), reports(out, "b"), values)


@KEYS
def test_pandas_column_labels_1_and_str_1_are_unlinked(key: bytes | None) -> None:
    """The labels ``1`` and ``"1"`` are different columns: in one frame, in two frames and as
    Series names, their reports of equal values are unlinked (P_FAIL / 3 each)."""
    values = people()
    both = ldp(pd.DataFrame({1: values, "1": values})).privatize(
        {1: MECHANISM, "1": MECHANISM}, key=key
    )
    number = ldp(pd.DataFrame({1: values})).rappor(1, EPSILON, domain=DOMAIN, key=key)
    text = ldp(pd.DataFrame({"1": values})).rappor("1", EPSILON, domain=DOMAIN, key=key)
    series = [
        ldp(pd.Series(values, name=name)).rappor(EPSILON, domain=DOMAIN, key=key)
        for name in (1, "1")
    ]

    assert_unlinked(reports(both, 1), reports(both, "1"), values, p_fail=P_FAIL / 3)
    assert_unlinked(reports(number, 1), reports(text, "1"), values, p_fail=P_FAIL / 3)
    assert_unlinked(reports(series[0], 1), reports(series[1], "1"), values, p_fail=P_FAIL / 3)


@KEYS
def test_two_mechanisms_on_one_column_are_unlinked(key: bytes | None) -> None:
    """RAPPOR at epsilon 1 and at epsilon 2 on one column: unlinked. (Shared uniforms would
    make a row's flips agree with probability about 0.63 instead of p0 ~ 0.096.)"""
    values = people()
    other = frameldp.Rappor(2.0, domain=Domain.coerce(list(DOMAIN)))
    frame = FRAMES["pandas"]({"c": values})
    first = ldp(frame).privatize({"c": MECHANISM}, key=key)
    second = ldp(frame).privatize({"c": other}, key=key)

    assert_unlinked(
        reports(first, "c"), reports(second, "c"), values, mechanisms=(MECHANISM, other)
    )


def test_pandas_labels_of_different_types_are_unlinked() -> None:
    """Under one key, single-column frames labelled ``1``, ``"1"``, ``b"1"`` and ``("1",)``
    (four different columns to pandas) give pairwise unlinked reports (P_FAIL / 6 each)."""
    values = people()
    labels: list[object] = [1, "1", b"1", ("1",)]
    released = []
    for label in labels:
        frame = pd.DataFrame({"c": values}).set_axis([label], axis="columns")
        out = ldp(frame).privatize({label: MECHANISM}, key=KEY)
        released.append(reports(out.iloc[:, 0], label))

    for first, second in itertools.combinations(released, 2):
        assert_unlinked(first, second, values, p_fail=P_FAIL / 6)
