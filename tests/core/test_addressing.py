"""Who may share noise: the addressing of :mod:`frameldp.core.randomness`.

Two randomizations share noise only when they are the same job re-run on the same row (same
key, column, mechanism, position and value). These tests pin each input's role: the canonical
type-tagged label, the fresh key's one pass over distinct rows, the value binding of a caller's
key, and that no key is ever written by pickle.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import numpy as np
import pytest

from _stats import P_FAIL  # the one false-failure probability of the suite
from frameldp.core.randomness import (
    RandomSource,
    code_bytes,
    label_bytes,
    row_addresses,
    uniform_integers_at,
)
from frameldp.errors import NoiseReuseError, ParameterError

KEY = bytes(range(32))
HALF = 1 << 63


def _noise(source: RandomSource, label: tuple[object, ...], start: int, codes: list[int]) -> bytes:
    values = np.asarray(codes, dtype=np.int64)
    rows = source.rows(label, start, values.size, lambda: code_bytes(values))
    return rows.bernoulli("flip", HALF, 64).tobytes()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (1, "1"),
        (True, 1),
        (1.0, 1),
        (("a", "b"), "a\x1fb"),
        (("a", "b"), ("a", "b", None)),
        (b"x", "x"),
        (None, "None"),
        ("", ()),
    ],
)
def test_labels_are_type_tagged_and_injective(first: object, second: object) -> None:
    assert label_bytes([first]) != label_bytes([second])
    source = RandomSource.from_key(KEY)
    assert _noise(source, (first,), 0, [0]) != _noise(source, (second,), 0, [0])


def test_label_parts_do_not_run_together() -> None:
    assert label_bytes(["ab", "c"]) != label_bytes(["a", "bc"])


@pytest.mark.parametrize("label", [object(), [1], {"a": 1}, 1j])
def test_labels_without_a_canonical_identity_are_refused(label: object) -> None:
    with pytest.raises(ParameterError, match="column labels must be"):
        RandomSource.from_key(KEY).stream(label)


def test_keyed_noise_is_bound_to_position_and_value() -> None:
    """Same (position, value): same noise (a re-run). A changed value or position: other
    noise. 64 bits at 1/2 collide by chance with probability 2**-64."""
    source = RandomSource.from_key(KEY)
    label = ("col", "spec")
    base = _noise(source, label, 10, [3])
    assert _noise(RandomSource.from_key(KEY), label, 10, [3]) == base
    assert _noise(source, label, 10, [4]) != base
    assert _noise(source, label, 11, [3]) != base
    # Any chunking of a run gives the same rows.
    whole = _noise(source, label, 0, [5, 6, 7, 8])
    parts = _noise(source, label, 0, [5, 6]) + _noise(source, label, 2, [7, 8])
    assert whole == parts


def test_xor_of_keyed_reports_of_two_values_is_not_their_xor() -> None:
    """The attack of issue 13: two people at the same position under one key. With noise bound
    to the value, report XOR report equals value XOR value only by chance (each of 10**4 rows
    with probability 2**-64 for 64 fair noise bits)."""
    source = RandomSource.from_key(KEY)
    n = 10_000
    first = np.zeros(n, dtype=np.int64)
    second = np.ones(n, dtype=np.int64)
    a = source.rows(("c",), 0, n, lambda: code_bytes(first)).bernoulli("flip", HALF, 64)
    b = source.rows(("c",), 0, n, lambda: code_bytes(second)).bernoulli("flip", HALF, 64)
    assert not (a == b).all(axis=1).any()


def test_fresh_key_refuses_a_row_twice() -> None:
    source = RandomSource.fresh()
    _noise(source, ("c",), 0, [1, 2, 3])
    _noise(source, ("c",), 3, [1])  # the next rows: fine
    _noise(source, ("d",), 0, [1])  # another column: fine
    for start, size in [(0, 1), (2, 1), (3, 1), (1, 5)]:
        with pytest.raises(NoiseReuseError, match="randomized twice"):
            _noise(source, ("c",), start, [0] * size)
    _noise(source, ("c",), 4, [0, 0])


def test_fresh_key_merges_adjacent_runs() -> None:
    source = RandomSource.fresh()
    for start in range(0, 1000, 10):
        _noise(source, ("c",), start, [0] * 10)
    assert source._used[label_bytes(("c",))] == [(0, 1000)]


def test_fresh_keys_are_not_value_bound_but_never_reused() -> None:
    """A fresh key's noise depends on the position only (the fast CTR path): it is safe
    because the key is used once per row."""
    source = RandomSource.fresh()
    values = np.zeros(3, dtype=np.int64)
    rows = source.rows(("c",), 0, 3, lambda: pytest.fail("values read under a fresh key"))
    assert rows.bernoulli("flip", HALF, 8).shape == (3, 1)
    assert values.size == 3


def test_a_fresh_key_cannot_be_pickled_or_leave_the_process() -> None:
    source = RandomSource.fresh()
    with pytest.raises(NoiseReuseError, match="never serialized"):
        pickle.dumps(source)
    assert copy.deepcopy(source) is source
    assert copy.copy(source) is source


@pytest.mark.parametrize(
    "make", [lambda: RandomSource.from_key(KEY), lambda: RandomSource.from_seed(3)]
)
def test_a_callers_key_is_pickled_by_reference(make: object) -> None:
    source = make()  # type: ignore[operator]
    data = pickle.dumps(source)
    assert source.key not in data
    assert source.key.hex().encode() not in data
    back = pickle.loads(data)
    assert back.key == source.key
    assert back.kind == source.kind


def test_a_pickled_key_does_not_resolve_in_another_process() -> None:
    data = pickle.dumps(RandomSource.from_key(KEY))
    script = (
        "import pickle, sys\n"
        "from frameldp.errors import ParameterError\n"
        "try:\n"
        "    pickle.loads(sys.stdin.buffer.read())\n"
        "except ParameterError as error:\n"
        "    print('refused:', error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=data, capture_output=True, check=True, timeout=120
    )
    assert b"refused:" in done.stdout
    assert b"another process" in done.stdout


def test_row_addresses_are_a_prf_of_position_length_and_value() -> None:
    stream = RandomSource.from_key(KEY).stream("a")
    rows = np.array([0, 0, 1, 0], dtype=np.int64)
    values = np.array([[1, 2], [1, 3], [1, 2], [1, 2]], dtype=np.uint8)
    out = row_addresses(stream, rows, values)
    assert out.shape == (4, 16)
    assert (out[0] == out[3]).all()
    assert len({bytes(row) for row in out[:3]}) == 3
    # The length is part of the message: a trailing zero byte is another value.
    longer = row_addresses(stream, rows[:1], np.array([[1, 2, 0]], dtype=np.uint8))
    assert bytes(longer[0]) != bytes(out[0])


def test_uniform_integers_at_is_uniform() -> None:
    """Chi-square of 10**5 draws over k = 7 at P_FAIL: detects a bias of about 1% per value."""
    from scipy import stats

    stream = RandomSource.from_seed(5).stream("u")
    addresses = row_addresses(
        stream, np.arange(100_000, dtype=np.int64), np.zeros((100_000, 1), dtype=np.uint8)
    )
    draws = uniform_integers_at(stream, 7, addresses)
    counts = np.bincount(draws, minlength=7)
    assert stats.chisquare(counts).pvalue > P_FAIL
