"""Public domains, policies for nulls and unknown values, and packed one-hot / k-hot encodings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameldp.core.encoding import (
    OTHER,
    Domain,
    count_bits,
    k_hot_packed,
    one_hot_packed,
    packed_width,
    unpack_bits,
    xor_one_hot,
)
from frameldp.core.parallel import threads
from frameldp.errors import DomainError, ParameterError, UnknownValuesWarning


class _CategoricalStandIn:
    """A tiny stand-in for a pandas CategoricalDtype / polars Enum: just ``.categories``."""

    def __init__(self, categories: object) -> None:
        self.categories = categories


# --- Domain ------------------------------------------------------------------------------------


def test_domain_from_list_tuple_and_categories_attribute() -> None:
    from_list = Domain.coerce(["AA", "DL", "UA"])
    assert from_list.categories == ("AA", "DL", "UA")
    assert from_list.size == 3
    assert from_list.labels == ("AA", "DL", "UA")
    assert Domain.coerce(("AA", "DL", "UA")) == from_list
    assert Domain.coerce(_CategoricalStandIn(["AA", "DL", "UA"])) == from_list
    assert Domain.coerce(iter(["AA", "DL", "UA"])) == from_list
    assert Domain.coerce(from_list) is from_list


def test_domain_coerce_overrides_policies_of_a_domain() -> None:
    base = Domain(("a", "b"))
    both = Domain.coerce(base, unknown="other", nulls="category")
    assert (both.unknown, both.nulls) == ("other", "category")
    assert Domain.coerce(both, nulls="raise") == Domain(("a", "b"), "other", "raise")


def test_domain_reserved_buckets_come_last() -> None:
    domain = Domain(("a", "b"), unknown="other", nulls="category")
    assert domain.size == 4
    assert domain.labels == ("a", "b", OTHER, None)
    assert (domain.other_code, domain.null_code) == (2, 3)
    nulls_only = Domain(("a",), nulls="category")
    assert nulls_only.labels == ("a", None)
    assert nulls_only.null_code == 1


@pytest.mark.parametrize(
    ("categories", "message"),
    [
        (["a", "b", "a"], "domain contains 'a' twice"),
        ([1, 2, 1], "domain contains 1 twice"),
        (["a", None], "domain contains a null at position 1"),
        (["a", math.nan, "b"], "domain contains a null at position 1"),
        (["a"], "domain must have at least 2 buckets, got \\['a'\\]"),
        ([], "domain must have at least 2 buckets, got \\[\\]"),
    ],
)
def test_bad_domains_raise_naming_the_value(categories: list[object], message: str) -> None:
    with pytest.raises(DomainError, match=message):
        Domain.coerce(categories)
    with pytest.raises(DomainError, match=message):
        Domain.coerce(_CategoricalStandIn(categories))


def test_one_category_is_enough_with_a_reserved_bucket() -> None:
    assert Domain(("a",), unknown="other").size == 2
    assert Domain((), unknown="other", nulls="category").labels == (OTHER, None)


def test_reserved_label_raises_when_other_bucket_is_used() -> None:
    with pytest.raises(DomainError, match="reserved label '<other>'"):
        Domain(("a", OTHER), unknown="other")
    assert Domain(("a", OTHER)).size == 2  # without the OTHER bucket the label is free


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"unknown": "drop"}, "unknown must be 'raise' or 'other', got 'drop'"),
        ({"nulls": "skip"}, "nulls must be 'raise' or 'category', got 'skip'"),
        ({"unknown": True}, "unknown must be 'raise' or 'other', got True"),
    ],
)
def test_bad_policies_raise_parameter_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        Domain(("a", "b"), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=message):
        Domain.coerce(["a", "b"], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("domain", "message"),
    [
        ("abc", "got the string 'abc'"),
        (b"ab", "got the string b'ab'"),
        (5, "domain must be a list of categories, got 5"),
        (_CategoricalStandIn(None), "has no categories"),
    ],
)
def test_coerce_rejects_non_lists(domain: object, message: str) -> None:
    with pytest.raises(DomainError, match=message):
        Domain.coerce(domain)


# --- resolve / encode --------------------------------------------------------------------------


def test_encode_plain_values() -> None:
    domain = Domain(("AA", "DL", "UA"))
    np.testing.assert_array_equal(domain.encode(["UA", "AA", "UA", "DL"]), [2, 0, 2, 1])
    assert domain.encode([]).shape == (0,)


@pytest.mark.parametrize("null", [None, math.nan, np.float64("nan")])
def test_nulls_raise_by_default_naming_column_and_row(null: object) -> None:
    domain = Domain(("a", "b"))
    with pytest.raises(
        DomainError, match="column 'carrier': null at row 2 \\(2 nulls in the 4 rows checked\\)"
    ):
        domain.encode(["a", "b", null, null], column="carrier")


def test_unknown_values_raise_by_default_naming_column_row_and_value() -> None:
    domain = Domain(("a", "b"))
    with pytest.raises(
        DomainError,
        match=r"column 'carrier': value 'zz' at row 1 is not in the domain "
        r".*\(2 such values in the 4 rows checked\)",
    ):
        domain.encode(["a", "zz", "b", "yy"], column="carrier")


def test_unknown_with_null_policy_category_still_raises_for_unknown() -> None:
    domain = Domain(("a", "b"), nulls="category")
    np.testing.assert_array_equal(domain.encode(["a", None, "b"]), [0, 2, 1])
    with pytest.raises(DomainError, match="value 'c' at row 2"):
        domain.encode(["a", None, "c"], column="x")


def test_nulls_with_unknown_policy_other_still_raise_for_nulls() -> None:
    domain = Domain(("a", "b"), unknown="other")
    np.testing.assert_array_equal(domain.encode(["c", "a"]), [2, 0])
    with pytest.raises(DomainError, match="column 'x': null at row 1"):
        domain.encode(["c", None], column="x")


def test_both_policies_map_to_reserved_buckets() -> None:
    domain = Domain(("a", "b"), unknown="other", nulls="category")
    codes = domain.encode(["b", None, "zz", "a", math.nan, 3])
    np.testing.assert_array_equal(codes, [1, 3, 2, 0, 3, 2])


def test_resolve_does_not_modify_its_input_and_only_names_offending_values() -> None:
    domain = Domain(("a", "b"), unknown="other", nulls="category")
    raw = np.array([0, -1, 1, -1], dtype=np.int64)
    null = np.array([False, True, False, False])
    asked: list[int] = []

    def value_at(row: int) -> object:
        asked.append(row)
        return "?"

    with pytest.warns(UnknownValuesWarning, match="25% of the rows"):
        codes = domain.resolve(raw, null, column="c", value_at=value_at)
    np.testing.assert_array_equal(codes, [0, 3, 1, 2])
    np.testing.assert_array_equal(raw, [0, -1, 1, -1])
    assert asked == [3]  # only the value outside the domain, named by the warning
    strict = Domain(("a", "b"))
    with pytest.raises(
        DomainError, match=r"value '\?' at row 1 .*\(2 such values in the 4 rows checked\)"
    ):
        strict.resolve(raw, np.zeros(4, dtype=bool), column="c", value_at=lambda row: "?")


def test_resolve_names_the_row_given_by_row_of() -> None:
    """``row_of`` maps a value's position to its frame row (e.g. batch offset, set cell)."""
    strict = Domain(("a", "b"))
    raw = np.array([0, -1, 1, -1], dtype=np.int64)
    with pytest.raises(
        DomainError, match=r"value 'v3' at row 102 .*\(2 such values in the 4 rows checked\)"
    ):
        strict.resolve(
            raw,
            np.zeros(4, dtype=bool),
            column="c",
            value_at=lambda i: f"v{i + 2}",
            row_of=lambda i: 100 + 2 * i,
        )
    with pytest.raises(
        DomainError, match=r"column 'c': null at row 105 \(1 nulls in the \d+ rows checked\)"
    ):
        strict.resolve(
            np.array([0, 1, -1], dtype=np.int64),
            np.array([False, False, True]),
            column="c",
            value_at=lambda i: None,
            row_of=lambda i: 101 + 2 * i,
        )


def test_as_reported_keeps_codes_and_labels() -> None:
    domain = Domain(("a", "b"), unknown="other", nulls="category")
    reported = domain.as_reported()
    assert reported.labels == domain.labels
    assert not reported.has_other
    np.testing.assert_array_equal(reported.encode(domain.labels), np.arange(domain.size))
    plain = Domain(("a", "b"), nulls="category")
    assert plain.as_reported() is plain


def test_to_json_round_trips() -> None:
    domain = Domain((1, 2.5, 7), unknown="other", nulls="category")
    spec = domain.to_json()
    assert spec == {"categories": [1, 2.5, 7], "unknown": "other", "nulls": "category"}
    assert Domain.coerce(spec["categories"], unknown=spec["unknown"], nulls=spec["nulls"]) == domain


# --- packed encodings ----------------------------------------------------------------------------


def _one_hot_oracle(codes: list[int], num_bits: int) -> np.ndarray:
    width = -(-num_bits // 8)
    out = np.zeros((len(codes), width), dtype=np.uint8)
    for row, code in enumerate(codes):
        out[row, code // 8] |= 1 << (7 - code % 8)
    return out


def _k_hot_oracle(cells: list[list[int]], num_bits: int) -> np.ndarray:
    width = -(-num_bits // 8)
    out = np.zeros((len(cells), width), dtype=np.uint8)
    for row, cell in enumerate(cells):
        for code in set(cell):
            out[row, code // 8] |= 1 << (7 - code % 8)
    return out


@pytest.mark.parametrize("num_bits", [1, 2, 7, 8, 9, 13, 64, 100])
def test_one_hot_packed_matches_oracle(num_bits: int) -> None:
    codes = [(7 * i + 3) % num_bits for i in range(50)] + [0, num_bits - 1]
    got = one_hot_packed(np.array(codes, dtype=np.int64), num_bits)
    assert got.shape == (len(codes), packed_width(num_bits))
    np.testing.assert_array_equal(got, _one_hot_oracle(codes, num_bits))
    np.testing.assert_array_equal(unpack_bits(got, num_bits).argmax(axis=1), codes)


@pytest.mark.parametrize("codes", [[-1, 0], [0, 13], [20]])
def test_one_hot_rejects_codes_out_of_range(codes: list[int]) -> None:
    with pytest.raises(DomainError, match="codes must be in \\[0, 13\\)"):
        one_hot_packed(np.array(codes, dtype=np.int64), 13)


def test_k_hot_packed_matches_oracle_and_counts_duplicates_once() -> None:
    cells = [[0, 12], [], [3, 3, 3], [12, 0, 5], [5], [1, 1, 2, 2, 2]]
    offsets = np.cumsum([0] + [len(cell) for cell in cells])
    codes = np.array([code for cell in cells for code in cell], dtype=np.int64)
    got = k_hot_packed(offsets, codes, 13, max_weight=3)
    np.testing.assert_array_equal(got, _k_hot_oracle(cells, 13))


def test_k_hot_packed_max_weight_exceeded_names_the_row() -> None:
    cells = [[0, 1], [2, 2, 2, 2], [0, 1, 2], [4, 5, 6, 7]]
    offsets = np.cumsum([0] + [len(cell) for cell in cells])
    codes = np.array([code for cell in cells for code in cell], dtype=np.int64)
    with pytest.raises(
        DomainError, match="column 'tags': row 2 holds 3 distinct items, more than max_weight=2"
    ):
        k_hot_packed(offsets, codes, 8, max_weight=2, column="tags")


def test_k_hot_packed_empty() -> None:
    got = k_hot_packed(np.array([0]), np.array([], dtype=np.int64), 9, max_weight=1)
    assert got.shape == (0, 2)


@pytest.mark.parametrize(("n", "num_bits"), [(0, 5), (1, 5), (254, 13), (256, 13), (1000, 77)])
def test_count_bits_matches_unpackbits_sum(n: int, num_bits: int) -> None:
    rng = np.random.default_rng(5)  # test data only, not privacy noise
    bits = rng.integers(0, 2, size=(n, num_bits), dtype=np.uint8)
    bits[: min(n, 600)] = 1  # all-ones runs longer than one 255-row block must not overflow
    packed = np.packbits(bits, axis=1)
    got = count_bits(packed, num_bits)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.unpackbits(packed, axis=1, count=num_bits).sum(0))


@pytest.mark.parametrize(("num_bits", "row"), [(5, [0b00000100]), (13, [0, 0b00000001])])
def test_count_bits_rejects_padding_bits_set(num_bits: int, row: list[int]) -> None:
    """Bits past ``num_bits`` in the last byte are never set by a mechanism with that many
    buckets: reports carrying them are refused rather than silently counted short."""
    packed = np.zeros((3, len(row)), dtype=np.uint8)
    packed[2] = row
    with pytest.raises(ParameterError, match=f"reports have bits set beyond bit {num_bits}:"):
        count_bits(packed, num_bits)
    np.testing.assert_array_equal(count_bits(np.zeros_like(packed), num_bits), [0] * num_bits)


def test_count_bits_rejects_wrong_shape() -> None:
    with pytest.raises(ParameterError, match="reports must have shape \\(n, 2\\) for 13 bits"):
        count_bits(np.zeros((4, 3), dtype=np.uint8), 13)
    with pytest.raises(ParameterError, match="got \\(4,\\)"):
        count_bits(np.zeros(4, dtype=np.uint8), 13)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_xor_one_hot_flips_each_rows_bit_on_any_number_of_threads(count: int) -> None:
    """Rows split into several thread ranges (65,536 rows each) flip exactly bit codes[i]."""
    rng = np.random.default_rng(11)  # test data only, not privacy noise
    num_bits, n = 13, 150_000
    codes = rng.integers(0, num_bits, size=n)
    packed = np.packbits(rng.integers(0, 2, size=(n, num_bits), dtype=np.uint8), axis=1)
    one_hot = np.packbits(np.eye(num_bits, dtype=np.uint8)[codes], axis=1)
    want = packed ^ one_hot
    with threads(count):
        got = xor_one_hot(packed, codes, num_bits)
    assert got is packed
    np.testing.assert_array_equal(got, want)


def test_count_bits_refuses_other_than_packed_bytes() -> None:
    for dtype in (np.bool_, np.int8, np.int64):
        with pytest.raises(
            ParameterError, match=f"packed bytes \\(uint8\\), got {np.dtype(dtype)}"
        ):
            count_bits(np.zeros((3000, 2), dtype=dtype), 16)


@pytest.mark.parametrize("rows", [8, 12])
def test_xor_one_hot_refuses_rows_that_do_not_match_the_codes(rows: int) -> None:
    with pytest.raises(ParameterError, match=r"must have shape \(10, 2\) for 10 codes"):
        xor_one_hot(np.zeros((rows, 2), dtype=np.uint8), np.arange(10), 16)
