"""Statistics of many groups at once (frameldp.core.group_counting, group_statistics): equal to
each group's own, for any block size; stacked statistics merge as their groups do."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import frameldp
from frameldp.core import group_counting
from frameldp.core.collected import collect_columns
from frameldp.core.group_counting import group_bincount, group_bit_sums, group_sizes
from frameldp.core.group_statistics import estimates_by_group, statistics_by_group
from frameldp.core.mechanisms import GroupStatistics, Statistic
from frameldp.core.randomness import RandomSource


def _groups(rows: int, num_groups: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, num_groups, rows)
    groups[:num_groups] = np.arange(num_groups)  # every group holds a row
    return rng.permutation(groups).astype(np.int64)


def test_a_histogram_by_group_counts_each_groups_codes() -> None:
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 5, 1000)
    groups = _groups(1000, 9)
    counts = group_bincount(codes, groups, 9, 5)
    for g in range(9):
        np.testing.assert_array_equal(counts[g], np.bincount(codes[groups == g], minlength=5))
    np.testing.assert_array_equal(group_sizes(groups, 9), counts.sum(axis=1))


@pytest.mark.parametrize("block_bytes", [1, 24, 1 << 23])
def test_bit_sums_by_group_hold_for_any_block_of_rows(
    monkeypatch: pytest.MonkeyPatch, block_bytes: int
) -> None:
    """Blocks of one row, of a few rows (a group's rows span blocks) and of every row."""
    monkeypatch.setattr(group_counting, "_UNPACKED_BYTES", block_bytes)
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2, (500, 13), dtype=np.uint8)
    packed = np.packbits(bits, axis=1)
    groups = _groups(500, 17)
    sums = group_bit_sums(packed, groups, 17, 13)
    for g in range(17):
        np.testing.assert_array_equal(sums[g], bits[groups == g].sum(axis=0))
    assert group_bit_sums(packed[:0], groups[:0], 3, 13).shape == (3, 13)


def test_stacked_statistics_take_merge_and_repeat_as_their_groups() -> None:
    a = Statistic((np.array([1, 2]), np.array([0.5])), 3)
    b = Statistic((np.array([4, 0]), np.array([1.5])), 4)
    stacked = GroupStatistics.stack([a, b])
    np.testing.assert_array_equal(stacked[1].parts[0], b.parts[0])
    total = stacked.total()
    np.testing.assert_array_equal(total.parts[0], (a + b).parts[0])
    assert total.rows == 7
    swapped = stacked.take(np.array([1, 0]))
    np.testing.assert_array_equal(swapped[0].parts[0], b.parts[0])
    merged = stacked.concatenated(stacked).summed_by(np.array([0, 1, 1, 0]), 2)
    np.testing.assert_array_equal(merged[0].parts[0], (a + b).parts[0])
    np.testing.assert_array_equal(merged.rows, [7, 7])
    repeated = stacked.repeated(np.array([2, 3]))
    np.testing.assert_array_equal(repeated[1].parts[0], b.repeated(3).parts[0])
    assert repeated[0].rows == 6
    with pytest.raises(frameldp.ParameterError, match="do not add up"):
        stacked.concatenated(GroupStatistics.stack([Statistic((np.array([1]),), 1)]))


def test_a_sampled_column_keeps_its_own_statistic_by_group() -> None:
    """A column of a collect="sample" release forwards its oracle's attributes; its statistic
    (the rows that reported, and all rows) is not the oracle's, so groups are reduced with
    its own, group by group."""
    domain = ["a", "b", "c"]
    mechanisms = collect_columns(
        {
            "x": frameldp.RandomizedResponse(2.0, domain=domain),
            "y": frameldp.RandomizedResponse(2.0, domain=domain),
        },
        "sample",
    )
    column = mechanisms["x"]
    values = pa.array([domain[i % 3] for i in range(300)])
    reports = column.mechanism.privatize_column(
        values, column="x", source=RandomSource.from_key(bytes(32))
    )
    # A third of the rows did not report x: their report is null.
    reports = {"x": pa.array([None if i % 3 == 0 else v for i, v in enumerate(reports["x"])])}
    groups = _groups(300, 4)
    stacked = statistics_by_group(column, reports, groups, 4, column="x")
    estimates = estimates_by_group(column, stacked)
    for g in range(4):
        rows = pa.array(np.flatnonzero(groups == g))
        own = column.statistic({"x": reports["x"].take(rows)}, column="x")
        for got, expected in zip(stacked[g].parts, own.parts, strict=True):
            np.testing.assert_array_equal(got, expected)
        expected_estimate = column.finish(own)
        np.testing.assert_array_equal(estimates[g].counts, expected_estimate.counts)
        assert estimates[g].reporters == expected_estimate.reporters
