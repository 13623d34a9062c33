"""The fingerprint of a release's rows (:mod:`frameldp.frames.fingerprint`): it names the
multiset of rows whatever their order, chunking or storage type, and changes when a row is
repeated in place of another; batches drawn in this process add up, each input row once."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest

from frameldp.frames.fingerprint import (
    Fingerprint,
    _row_hashes,
    cell_hashes,
    drawn_fingerprint,
    fingerprint_of,
    record_drawn,
    summed,
)

RNG = np.random.default_rng(7)
WORDS = [bytes(RNG.integers(0, 256, 3, dtype=np.uint8)) for _ in range(500)]


def _storages() -> dict[str, list[pa.Array]]:
    """One column of 500 rows in every storage it may have, equal by value."""
    ints = RNG.integers(0, 2**40, 500)
    labels = [f"v{i % 7}" for i in range(500)]
    return {
        "binary": [
            pa.array(WORDS, pa.binary(3)),
            pa.array(WORDS, pa.binary()),
            pa.array(WORDS, pa.large_binary()),
        ],
        "integer": [pa.array(ints, pa.int64()), pa.array(ints, pa.uint64())],
        "small integer": [
            pa.array(ints % 1000, pa.uint32()),
            pa.array(ints % 1000, pa.int64()),
        ],
        "text": [
            pa.array(labels, pa.string()),
            pa.array(labels, pa.large_string()),
            pa.array(labels).dictionary_encode(),
        ],
        "text with nulls": [
            pa.array([None if i % 5 == 0 else x for i, x in enumerate(labels)]),
            pa.array([None if i % 5 == 0 else x for i, x in enumerate(labels)], pa.large_string()),
        ],
    }


@pytest.mark.parametrize("kind", _storages())
def test_equal_values_give_one_fingerprint_in_any_storage_order_or_chunking(kind: str) -> None:
    storages = _storages()[kind]
    expected = fingerprint_of([storages[0]])
    order = pa.array(RNG.permutation(500))
    for array in storages:
        assert fingerprint_of([array]) == expected
        assert fingerprint_of([array.take(order)]) == expected
        assert fingerprint_of([pa.chunked_array([array[:123], array[123:]])]) == expected
        assert fingerprint_of([array.slice(0, 500)]) == expected
    batches = Fingerprint()
    batches.add([storages[0][:200]])
    batches.add([storages[0][200:]])
    assert batches.hexdigest() == expected
    assert expected.startswith("500:")


@pytest.mark.parametrize("kind", _storages())
def test_a_row_repeated_in_place_of_another_changes_it(kind: str) -> None:
    array = _storages()[kind][0]
    distinct = next(i for i in range(1, 500) if array[i] != array[0])
    repeated = array.take(pa.array([0, *range(1, distinct), 0, *range(distinct + 1, 500)]))
    assert len(repeated) == 500
    assert fingerprint_of([repeated]) != fingerprint_of([array])


def test_rows_of_several_parts_are_hashed_together() -> None:
    """A Bloom report and its cohort are one row: swapping cohorts between two rows keeps each
    column's multiset but changes the rows'."""
    reports = pa.array(WORDS[:4], pa.binary(3))
    cohorts = pa.array([0, 1, 2, 3])
    swapped = pa.array([1, 0, 2, 3])
    assert fingerprint_of([reports, cohorts]) != fingerprint_of([reports, swapped])


def test_an_empty_column_has_the_empty_fingerprint() -> None:
    assert fingerprint_of([pa.array([], pa.binary(2))]) == fingerprint_of([])


def test_fingerprints_add_up_and_read_back() -> None:
    array = pa.array([f"r{i % 7}" for i in range(300)])
    whole = fingerprint_of([array])
    parts = [fingerprint_of([array.slice(0, 100)]), fingerprint_of([array.slice(100)])]
    assert summed(parts) == whole
    assert Fingerprint.from_hexdigest(whole).hexdigest() == whole
    with pytest.raises(ValueError, match="invalid literal"):
        Fingerprint.from_hexdigest("12:zz:00")


def test_batches_drawn_in_this_process_count_each_input_row_once() -> None:
    """A batch recorded again over the same input rows (a keyed re-run) replaces the first;
    batches over other boundaries (a re-run in other batch sizes) replace every batch they
    overlap, so an input row is never counted twice."""
    array = pa.array(np.arange(300) % 11)
    release = uuid.uuid4().hex
    assert drawn_fingerprint(release, "c") is None
    record_drawn(release, "c", 0, 100, [array.slice(0, 100)])
    record_drawn(release, "c", 100, 200, [array.slice(100)])
    assert drawn_fingerprint(release, "c") == fingerprint_of([array])
    record_drawn(release, "c", 0, 100, [array.slice(0, 100)])  # the same batch, again
    assert drawn_fingerprint(release, "c") == fingerprint_of([array])
    record_drawn(release, "c", 50, 100, [array.slice(50, 100)])  # overlaps both
    assert drawn_fingerprint(release, "c") == fingerprint_of([array.slice(50, 100)])
    assert drawn_fingerprint(release, "other") is None


@pytest.mark.parametrize("kind", _storages())
def test_labels_hashed_by_distinct_value_give_the_row_by_row_sums(kind: str) -> None:
    """Text and dictionaries are fingerprinted from their value counts: the sums must be those
    of hashing every row."""
    for array in _storages()[kind]:
        rows = _row_hashes([array])
        with np.errstate(over="ignore"):
            first = int(rows.sum(dtype=np.uint64))
            second = int((rows * (rows | np.uint64(1))).sum(dtype=np.uint64))
        assert fingerprint_of([array]) == f"{len(array)}:{first:016x}:{second:016x}"


def test_cell_hashes_of_text_of_many_widths_are_frozen() -> None:
    """Fingerprints are stored in report types and files and recomputed by later versions, so
    the hashes of text and bytes of every width are frozen: these values were computed by the
    width-by-width hash this one replaced (words read at each row's offset, every width at
    once), for short, word-sized, multi-word and long cells, UTF-8 included."""
    values = ["", "a", "user-7", "exactly8", "nine char", "x" * 16, "y" * 33, "é", "user-1234567"]
    text = [
        0xB583C4659B177A57, 0xA9ADD8FE16E26D1F, 0xD127B934A29F32F4, 0xE8996C17214FE894,
        0x212A5057FA395972, 0xCB884B15D535594F, 0x211F2B6D5087DD1B, 0x06426F4469C218EA,
        0xB9E253CF0693179D,
    ]  # fmt: skip
    binary = [
        0x9363AA5FA7F2E367, 0x8144D629EBEAA8C3, 0xDDB48461905A57EF, 0xA367D18CA467BA1F,
        0x9ACA4A5CC163027C, 0x8268C1F401B13BE1, 0x576161DBBBF12408, 0x3C9EA88AEFE68F8C,
        0x00B287EA9646EF30,
    ]  # fmt: skip
    for kind in (pa.string(), pa.large_string()):
        assert cell_hashes(pa.array(values, kind)).tolist() == text
        assert cell_hashes(pa.array(values[::-1], kind)).tolist() == text[::-1]
        assert cell_hashes(pa.array(["pad", *values], kind).slice(1)).tolist() == text
    encoded = [value.encode() for value in values]
    assert cell_hashes(pa.array(encoded, pa.large_binary())).tolist() == binary
