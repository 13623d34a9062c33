"""pyarrow Tables and RecordBatchReaders through ``frameldp.ldp(obj)`` (frames/_arrow.py).

A Table is an in-memory frame: the same reports as pandas for the same key, the same tables,
every method of ``df.ldp``. A reader is streamed once: privatized batch by batch with rows
numbered across batches (the same reports as the whole table), charged once, and refused when
read again rather than read as empty.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameldp
from _releases import as_one_release
from frameldp.frames._arrow import StreamRelease
from frameldp.frames.engine import Privatization
from frameldp.frames.report_type import ReportType, storage_of

KEY = bytes(range(32))
CARRIERS = ("AA", "DL", "UA")
KRR = frameldp.RandomizedResponse(2.0, domain=CARRIERS)
RAPPOR = frameldp.Rappor(epsilon=2.0, domain=CARRIERS)


def _values(n: int = 3000) -> list[str]:
    return [CARRIERS[(i * 7) % 3] for i in range(n)]


def _table(n: int = 3000) -> pa.Table:
    return pa.table({"carrier": _values(n), "group": [i % 4 for i in range(n)]})


def _pandas(n: int = 3000) -> pd.DataFrame:
    return _table(n).to_pandas()


def _same_reports(ours: pa.ChunkedArray, pandas: pd.Series) -> bool:
    """Equal reports of one mechanism (their types equal but for the release id)."""
    theirs = pa.chunked_array([pa.array(pandas.array)])
    return bool(
        as_one_release(ours.combine_chunks()).equals(as_one_release(theirs.combine_chunks()))
    )


@pytest.mark.parametrize("mechanism", [KRR, RAPPOR], ids=["krr", "rappor"])
def test_a_table_gets_the_pandas_reports_and_tables(mechanism: object) -> None:
    table = _table()
    reports = frameldp.ldp(table).privatize({"carrier": mechanism}, key=KEY)
    expected = _pandas().ldp.privatize({"carrier": mechanism}, key=KEY)
    assert isinstance(reports, pa.Table)
    assert isinstance(reports.schema.field("carrier").type, ReportType)
    assert reports.column("group").equals(table.column("group"))  # passed through
    assert _same_reports(reports.column("carrier"), expected["carrier"])
    assert table.column("carrier").to_pylist() == _values()  # the input is not modified
    for by in (None, "group"):
        ours = frameldp.ldp(reports).debias("carrier", by=by).frame
        theirs = expected.ldp.debias("carrier", by=by).frame
        pd.testing.assert_frame_equal(ours, theirs)


def test_a_table_survives_parquet_and_offers_every_method(tmp_path: Path) -> None:
    reports = frameldp.ldp(_table()).rappor("carrier", 2.0, domain=CARRIERS, key=KEY)
    pq.write_table(reports, tmp_path / "reports.parquet")
    back = pq.read_table(tmp_path / "reports.parquet")
    assert frameldp.ldp(back).specs == frameldp.ldp(reports).specs
    assert frameldp.ldp(back).privacy == RAPPOR.privacy
    unpacked = frameldp.ldp(back).unpack("carrier")
    bits = np.column_stack([unpacked.column(i).to_numpy() for i in range(3)])
    pandas_bits = (
        _pandas().ldp.rappor("carrier", 2.0, domain=CARRIERS, key=KEY).ldp.unpack("carrier")
    )
    assert (bits == pandas_bits.to_numpy()).all()
    text = frameldp.ldp(back).plain(text=True).column("carrier").to_pylist()
    assert all(v.startswith("b") and len(v) == 4 for v in text)
    shuffled = frameldp.ldp(back.select(["carrier"])).shuffle(key=KEY)
    assert frameldp.ldp(shuffled).privacy != RAPPOR.privacy  # amplified by shuffling
    assert shuffled.num_rows == back.num_rows


def test_a_table_infers_its_domain_and_refuses_its_own_reports() -> None:
    reports = frameldp.ldp(_table()).krr("carrier", 1.0, domain="infer", key=KEY)
    assert frameldp.ldp(reports).mechanisms["carrier"].categories == list(CARRIERS)
    with pytest.raises(frameldp.ParameterError, match="already holds frameldp reports"):
        frameldp.ldp(reports).privatize({"carrier": KRR})


def test_a_table_with_a_repeated_name_is_refused_naming_it() -> None:
    table = pa.Table.from_arrays([pa.array(["AA"]), pa.array(["DL"])], names=["c", "c"])
    with pytest.raises(frameldp.ParameterError, match=r"'c'.*2 columns of that name"):
        frameldp.ldp(table).krr("c", 1.0, domain=CARRIERS)


def test_a_stream_is_privatized_batch_by_batch_as_the_whole_table() -> None:
    """Rows are numbered across batches of any size (DuckDB's relations stream this way with
    a caller's key; a reader takes none, see below)."""
    table = _table()
    sizes = [700, 0, 1, 1299, 1000]  # an empty batch among them
    starts = np.cumsum([0, *sizes])
    whole_batch = table.combine_chunks().to_batches()[0]
    batches = [whole_batch.slice(int(a), int(b - a)) for a, b in itertools.pairwise(starts)]
    request = Privatization({"carrier": KRR}, key=KEY)
    stream = StreamRelease(table.schema, iter(batches), request)
    streamed = list(stream.batches(charge=False))
    assert len(streamed) > 1  # never one table in memory
    whole = frameldp.ldp(table).privatize({"carrier": KRR}, key=KEY)
    ours = storage_of(pa.Table.from_batches(streamed).column("carrier")).combine_chunks()
    assert ours.equals(storage_of(whole.column("carrier")).combine_chunks())


def test_a_reader_is_debiased_batch_by_batch_and_read_once() -> None:
    reports = frameldp.ldp(_table()).krr("carrier", 2.0, domain=CARRIERS, key=KEY)
    reader = reports.to_reader(max_chunksize=500)
    table = frameldp.ldp(reader).debias("carrier", by="group")
    pd.testing.assert_frame_equal(
        table.frame, frameldp.ldp(reports).debias("carrier", by="group").frame
    )
    with pytest.raises(frameldp.ParameterError, match="was read already"):
        frameldp.ldp(reader).debias("carrier")


def test_a_fresh_key_reader_draws_when_read_and_is_charged_once(tmp_path: Path) -> None:
    ledger = frameldp.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("etl", epsilon=3.0)
    first = frameldp.ldp(_table().to_reader(max_chunksize=500))
    streamed = first.krr("carrier", 2.0, domain=CARRIERS, ledger=ledger, budget="etl")
    assert ledger.spent("etl") == 0.0  # nothing drawn yet
    out = streamed.read_all()
    assert ledger.spent("etl") == pytest.approx(2.0)
    again = frameldp.ldp(_table()).krr("carrier", 2.0, domain=CARRIERS, key=KEY)
    assert not storage_of(out.column("carrier")).equals(storage_of(again.column("carrier")))
    with pytest.raises(frameldp.BudgetExceededError):
        frameldp.ldp(_table().to_reader()).krr(
            "carrier", 2.0, domain=CARRIERS, ledger=ledger, budget="etl"
        )
    assert ledger.spent("etl") == pytest.approx(2.0)


def test_a_reader_with_user_states_each_persons_rows() -> None:
    table = pa.table({"carrier": _values(30), "user": [i % 10 for i in range(30)]})
    reports = frameldp.ldp(table.to_reader()).krr("carrier", 1.0, domain=CARRIERS, user="user")
    read = reports.read_all()
    privacy = frameldp.ldp(read).privacy
    assert privacy is not None
    assert privacy.epsilon == pytest.approx(
        3 * frameldp.RandomizedResponse(1.0, domain=CARRIERS).privacy.epsilon
    )
    assert frameldp.ldp(read).specs["carrier"]["rows_per_user"] == 3


def test_an_unsupported_object_is_a_frameldp_error_naming_it() -> None:
    with pytest.raises(frameldp.ParameterError, match=r"builtins\.dict"):
        frameldp.ldp({"carrier": ["AA"]})


def test_a_reader_read_for_domain_inference_is_privatized_from_that_read() -> None:
    reports = frameldp.ldp(_table().to_reader(max_chunksize=500)).krr(
        "carrier", 2.0, domain="infer"
    )
    assert reports.read_all().num_rows == 3000


def test_a_privatized_reader_the_caller_began_to_read_is_not_debiased_in_part() -> None:
    streamed = frameldp.ldp(_table().to_reader(max_chunksize=100)).privatize({"carrier": KRR})
    streamed.read_next_batch()
    with pytest.raises(frameldp.ParameterError, match="was read already"):
        frameldp.ldp(streamed).debias("carrier")


def test_a_reader_refuses_a_key_it_could_misnumber() -> None:
    """A reader the caller read in part would number its rows from 0 again: with a key, input
    row 65536 + i would get the noise a full run gives row i (the newcomer review found equal
    reports for equal values there)."""
    reader = _table().to_reader(max_chunksize=100)
    reader.read_next_batch()
    for given in ({"key": KEY}, {"seed": 1}):
        with pytest.raises(frameldp.ParameterError, match="fresh key"):
            frameldp.ldp(reader).privatize({"carrier": KRR}, **given)


def test_a_reader_refuses_a_row_bound_without_people_and_tables_refuse_validation() -> None:
    with pytest.raises(frameldp.ParameterError, match="needs user="):
        frameldp.ldp(_table().to_reader()).privatize({"carrier": KRR}, max_rows_per_user=2)
    with pytest.raises(frameldp.ParameterError, match=r"pl\.from_arrow"):
        frameldp.ldp(_table()).validate({"carrier": KRR})
