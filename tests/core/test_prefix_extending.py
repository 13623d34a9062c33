"""The prefix extending method: prefix encoding, the hash family, extension counts, discovery.

Exact checks against brute force, and the search's recall and precision on a planted
distribution at a declared false-failure probability.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import norm

import frameldp
from _stats import P_FAIL
from frameldp.core.columns import bits_array
from frameldp.core.discovery import (
    CUT,
    END,
    allowed_extensions,
    encode_prefixes,
    extension_counts,
    extension_table,
    prefix_hashes,
    support_counts,
)
from frameldp.core.mechanisms import mechanism_from_spec
from frameldp.core.randomness import RandomSource

# Strings with 1- to 4-byte characters, one of exactly 8 bytes, and longer ones.
STRINGS = [
    "",
    "a",
    "é",
    "ab",
    "日本",
    "café",
    "🙂ok",
    "12345678",
    "naïveté!",
    "日本語テキスト",
    "abcdefghij",
]


def test_the_encoding_pads_ends_and_marks_cuts_on_character_boundaries() -> None:
    encoded = encode_prefixes(STRINGS, 8)
    assert encoded.shape == (len(STRINGS), 9)
    rows = {s: bytes(row) for s, row in zip(STRINGS, encoded, strict=True)}
    assert rows[""] == bytes([END] * 9)
    assert rows["café"] == "café".encode() + bytes([END] * 4)
    assert rows["12345678"] == b"12345678" + bytes([END])  # exactly max_length: complete
    assert rows["abcdefghij"] == b"abcdefgh" + bytes([CUT])
    # "naïveté!" is 10 bytes and its "é" would take bytes 7-8: cut before it.
    assert rows["naïveté!"] == "naïvet".encode() + bytes([END, CUT])
    assert rows["日本語テキスト"] == "日本".encode() + bytes([END, END, CUT])


def test_every_encoding_byte_is_an_allowed_extension_and_nothing_invalid_is() -> None:
    """Each byte of each encoding is allowed after its prefix; and a brute force over every
    byte sequence of length 3 shows that the allowed ones are exactly the prefixes of some
    encoding at max_length = 2 (valid UTF-8 that fits, then padding, then the marker)."""
    for max_length in (2, 3, 8):
        for row in encode_prefixes(STRINGS, max_length):
            for t in range(max_length + 1):
                assert allowed_extensions(row[None, :t], max_length)[0, row[t]]
    max_length = 2
    whole = {bytes(row) for row in encode_prefixes(_all_short_strings(), max_length)}
    # s followed by a character that does not fit is cut to s: its marker is CUT.
    reachable = whole | {row[:max_length] + bytes([CUT]) for row in whole}
    for length in range(1, 4):
        prefixes = sorted({s[:length] for s in reachable})
        heads = np.frombuffer(b"".join(p[:-1] for p in prefixes), np.uint8)
        allowed = allowed_extensions(heads.reshape(len(prefixes), length - 1), max_length)
        assert all(allowed[i, p[-1]] for i, p in enumerate(prefixes))
        if length < 3:
            longer = {s[: length + 1] for s in reachable}
            whole = np.frombuffer(b"".join(prefixes), np.uint8).reshape(len(prefixes), length)
            allowed = allowed_extensions(whole, max_length)
            for i, prefix in enumerate(prefixes):
                extended = {prefix + bytes([b]) for b in np.flatnonzero(allowed[i])}
                assert extended <= longer, prefix


def _all_short_strings() -> list[str]:
    """Every string of at most 2 UTF-8 bytes, and a few longer ones."""
    singles = [chr(c) for c in range(0x80)]
    doubles = [chr(c) for c in range(0x80, 0x800)]
    pairs = ["".join(pair) for pair in itertools.product(singles, repeat=2)]
    longer = ["日", "🙂", "abc", "aé", "éa"]
    return ["", *singles, *doubles, *pairs, *longer]


@pytest.mark.parametrize("num_buckets", [2, 5, 53, 131])
def test_extension_counts_equal_brute_force(num_buckets: int) -> None:
    rng = np.random.default_rng(7)
    table = extension_table(num_buckets)
    coefficients = rng.integers(0, table.shape[0], size=(300, 4))
    answers = rng.integers(0, num_buckets, size=300)
    prefixes = rng.integers(0, 256, size=(5, 3)).astype(np.uint8)
    counts = extension_counts(coefficients, answers, prefixes, num_buckets)
    expected = np.zeros((5, 256), dtype=np.int64)
    for p, b in itertools.product(range(5), range(256)):
        string = np.append(prefixes[p], np.uint8(b))
        hashes = table[coefficients, string[None, :]].sum(axis=1) % num_buckets
        expected[p, b] = np.sum(hashes == answers)
    np.testing.assert_array_equal(counts, expected)
    finals = support_counts(coefficients, answers, prefixes, num_buckets)
    hashes = prefix_hashes(coefficients, prefixes, num_buckets)
    np.testing.assert_array_equal(finals, (hashes == answers[:, None]).sum(axis=0))


@pytest.mark.parametrize("num_buckets", [2, 3, 5])
def test_two_prefixes_collide_under_exactly_one_in_g_coefficients(num_buckets: int) -> None:
    """Exact universality, by enumerating every coefficient of two positions."""
    table = extension_table(num_buckets).astype(np.int64)
    size = table.shape[0]
    pairs = [((0, 1), (0, 2)), ((97, 98), (98, 97)), ((0xC3, 0xA9), (0xFF, 0xFF))]
    for first, second in pairs:
        a, b = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
        one = (table[a, first[0]] + table[b, first[1]]) % num_buckets
        two = (table[a, second[0]] + table[b, second[1]]) % num_buckets
        assert np.sum(one == two) * num_buckets == size * size


def test_reports_carry_level_answer_and_only_the_coefficients_the_level_uses() -> None:
    mech = frameldp.PrefixExtending(2.0, max_length=5)
    reports = mech.randomize(
        ["abc"], np.zeros(4000, np.int64), source=RandomSource.from_seed(1), label="c"
    )
    levels = reports[:, 0]
    coefficients = reports[:, 2:].copy().view("<u2")
    assert set(np.unique(levels)) == set(range(6))
    past = np.arange(6)[None, :] > levels[:, None]
    assert np.all(coefficients[past] == 0)
    assert reports[:, 1].max() < mech.num_buckets
    assert coefficients.max() < mech.num_coefficients


def test_bad_parameters_and_reports_are_refused() -> None:
    for bad in (0, 255, 2.5, True, "8"):
        with pytest.raises(frameldp.ParameterError, match="max_length"):
            frameldp.PrefixExtending(1.0, max_length=bad)
    for bad in (4, 257, 1):
        with pytest.raises(frameldp.ParameterError, match="num_buckets"):
            frameldp.PrefixExtending(1.0, num_buckets=bad)
    with pytest.raises(frameldp.ParameterError, match="epsilon"):
        frameldp.PrefixExtending(-1.0)
    mech = frameldp.PrefixExtending(1.0, max_length=3)
    forged = np.zeros((2, mech.report_width), dtype=np.uint8)
    forged[1, 0] = 0
    forged[1, 2 + 2 * 2] = 1  # a coefficient past the level
    with pytest.raises(frameldp.errors.DomainError, match="row 1"):
        mech.statistic({"c": bits_array(forged)}, column="c")
    with pytest.raises(frameldp.errors.DomainError, match="strings"):
        mech.privatize_column(pa.array([1, 2]), column="c", source=RandomSource.from_seed(1))


HEAVY = ["the", "café", "日本", "🙂ok", "長い文字列です"]
"""Planted heavy strings: 1- to 4-byte characters, and one cut at max_length = 8."""


def _planted(n: int, rng: np.random.Generator) -> tuple[list[str], np.ndarray]:
    """60% of the people hold one of the heavy strings (12% each); the other 40% one of 5,000
    random 6-letter words (each first letter about 1.5%, each word about 0.008%)."""
    tail = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 6)) for _ in range(5000)]
    values = HEAVY + tail
    heavy = rng.integers(0, len(HEAVY), size=6 * n // 10)
    light = rng.integers(len(HEAVY), len(values), size=n - heavy.size)
    return values, rng.permutation(np.concatenate([heavy, light]))


def test_discovery_finds_exactly_the_planted_heavy_strings() -> None:
    """Recall and precision at a declared false-failure probability.

    n = 400,000 reports at epsilon 4 (g = 53), max_length 8: 9 levels of n_l ~ 44,400 reports,
    top = 5, width = 10. Two events, each of probability >= 1 - P_FAIL / 4 (normal
    approximation, as every unbiasedness test here):

    * every estimate the search computes (at most 9 * 10 * 256 candidates, each from the reports
      of its level, which took no part in choosing it) is within ``z sigma`` of its truth, with
      ``sigma = sqrt(n_l (p(1-p) + q(1-q))) / (p - q)`` bounding its standard deviation;
    * at every level, each heavy string has at least 12% of n_l minus ``z`` binomial standard
      deviations, and each first letter of the tail words at most 1.6% plus as many.

    Then at every level each heavy prefix (at least one heavy string's count) outranks every
    other prefix (only tail words' counts, at most the first letters'), and the at most 5 heavy
    prefixes fit the width: all are kept. At the last level the heavy strings' p-values are far
    below the threshold. A tail word's true count (below 0.01% of n_l, 0.02 sigma) moves its
    chance of a p-value below ``significance / candidates`` by a factor under 1.2, so with
    ``significance = P_FAIL / 4`` (family-wise) none is reported with probability
    >= 1 - 1.2 P_FAIL / 4. The counts are unbiased: each is within its Bonferroni bound.
    """
    rng = np.random.default_rng(2026)
    n = 400_000
    values, codes = _planted(n, rng)
    mech = frameldp.PrefixExtending(4.0, max_length=8)
    p, q = mech.support_probabilities
    level = n / mech.num_levels
    sigma = math.sqrt(level * (p * (1 - p) + q * (1 - q))) / (p - q)
    z = norm.isf(P_FAIL / 4 / (9 * 10 * 256 + 9 * 31))
    counting = math.sqrt(level * 0.12 * 0.88)
    assert 2 * z * sigma + 2 * z * counting < (0.12 - 0.016) * level  # the argument's margin
    reports = mech.randomize(values, codes, source=RandomSource.from_seed(5), label="c")
    array = bits_array(reports)
    found = mech.discover(
        lambda reduce: reduce({"c": array}), column="c", top=5, significance=P_FAIL / 4
    )
    assert set(found.labels) == {"the", "café", "日本", "🙂ok", "長い"}
    assert dict(zip(found.labels, found.truncated.tolist(), strict=True))["長い"] is True
    assert sum(found.truncated) == 1
    truth = np.bincount(codes, minlength=len(values))
    bound = norm.isf(P_FAIL / 2 / len(found.labels))
    for label, count, error in zip(found.labels, found.counts, found.std_errors, strict=True):
        true = truth[values.index("長い文字列です" if label == "長い" else label)]
        assert abs(count - true) / error < bound, (label, count, true, error)


def test_discovery_with_no_reports_at_the_last_level_finds_nothing() -> None:
    mech = frameldp.PrefixExtending(1.0, max_length=2)
    empty = bits_array(np.zeros((0, mech.report_width), dtype=np.uint8))
    found = mech.discover(lambda reduce: reduce({"c": empty}), column="c")
    assert found.labels == ()
    assert found.n == 0


def test_the_cut_marker_is_a_candidate_only_where_a_character_could_not_fit() -> None:
    prefixes = encode_prefixes(["ab", "abcde", "abcdefgh"], 8)[:, :8]
    allowed = allowed_extensions(prefixes, 8)
    assert allowed[:, END].all()
    assert allowed[:, CUT].tolist() == [False, True, True]  # 6 bytes free fit any character


def test_a_column_that_is_not_utf8_is_refused_naming_it() -> None:
    broken = pa.array([b"ok", b"\xff\xfe"], type=pa.binary()).cast(pa.string(), safe=False)
    mech = frameldp.PrefixExtending(1.0, max_length=4)
    with pytest.raises(frameldp.errors.DomainError, match=r"'c'.*UTF-8"):
        mech.privatize_column(broken, column="c", source=RandomSource.from_seed(1))


@pytest.mark.parametrize(
    "num_buckets", [math.nan, math.inf, -math.inf, 10**400, Decimal("sNaN"), Decimal("Infinity")]
)
def test_a_non_finite_bucket_count_is_a_parameter_error(num_buckets: object) -> None:
    """(Attack review) ``int(inf)`` raised a plain OverflowError, ``int(nan)`` a ValueError."""
    with pytest.raises(frameldp.ParameterError, match="num_buckets must be a prime"):
        frameldp.PrefixExtending(1.0, num_buckets=num_buckets)
    spec = {"mechanism": "prefix_extending", "epsilon": 1.0, "max_length": 4}
    with pytest.raises(frameldp.ParameterError):
        mechanism_from_spec({**spec, "num_buckets": float("inf")})
