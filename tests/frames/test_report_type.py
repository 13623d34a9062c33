"""Report columns carry their mechanism in their type (``frameldp.reports``).

What is pinned here is what frameldp relies on in pyarrow 26, pandas 3.1 and polars 2.1
(whose extension-type API is marked unstable): an upgrade that changes it fails these tests,
loudly, instead of letting ``debias`` lose a column's mechanism.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameldp
from frameldp.frames.report_type import (
    EXTENSION_NAME,
    ReportMetadata,
    ReportType,
    as_reports,
    metadata_of,
)

CARRIERS = ("AA", "DL", "UA", "WN")
N = 400
KRR = frameldp.RandomizedResponse(1.0, domain=CARRIERS)
RAPPOR = frameldp.Rappor(epsilon=2.0, domain=CARRIERS)
KEY = bytes(range(32))


def _data() -> pd.DataFrame:
    rows = np.arange(N)
    return pd.DataFrame(
        {
            "carrier": np.array(CARRIERS)[(rows * 7) % 4],
            "dest": np.array(CARRIERS)[(rows * 3) % 4],
            "month": rows % 3,
        }
    )


def _reports() -> pd.DataFrame:
    return _data().ldp.privatize({"carrier": KRR, "dest": RAPPOR}, key=KEY)


def _table(frame: Any, column: str) -> pd.DataFrame:
    table = frame.ldp.debias(column)
    return table.to_pandas()[["category", "count", "std_error"]]


# -- the type ------------------------------------------------------------------------------------


def test_types_are_equal_only_with_equal_metadata() -> None:
    one = ReportType(pa.large_string(), ReportMetadata(KRR.to_spec(), "carrier"))
    same = ReportType(pa.large_string(), ReportMetadata(KRR.to_spec(), "carrier"))
    other = ReportType(pa.large_string(), ReportMetadata(RAPPOR.to_spec(), "carrier"))
    assert one == same
    assert hash(one) == hash(same)
    assert one != other
    assert str(one) == f"{EXTENSION_NAME}<randomized_response>"


def test_the_type_survives_ipc_and_parquet_and_is_read_without_registration(
    tmp_path: Path,
) -> None:
    array = as_reports(pa.array(["AA", "DL", None]), ReportMetadata(KRR.to_spec(), "carrier"))
    table = pa.table({"carrier": array})
    pq.write_table(table, tmp_path / "r.parquet")
    back = pq.read_table(tmp_path / "r.parquet")
    assert back.schema.field("carrier").type == array.type
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    assert pa.ipc.open_stream(sink.getvalue()).read_all().equals(table)
    # A reader that never registered the type sees the storage and the field metadata.
    field = pa.field(
        "carrier",
        pa.large_string(),
        metadata={
            b"ARROW:extension:name": EXTENSION_NAME.encode(),
            b"ARROW:extension:metadata": array.type.__arrow_ext_serialize__(),
        },
    )
    assert metadata_of(field.type, field.metadata) == array.type.metadata


def test_metadata_that_is_not_ours_is_a_frameldp_error() -> None:
    with pytest.raises(frameldp.ParameterError, match="not valid"):
        ReportMetadata.from_json(b"{not json")
    newer = json.dumps({"version": 99, "column": "c", "spec": {}})
    with pytest.raises(frameldp.ParameterError, match="newer frameldp"):
        ReportMetadata.from_json(newer)


# -- pandas --------------------------------------------------------------------------------------

PANDAS_OPERATIONS: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "merge": lambda f: f.merge(pd.DataFrame({"month": [0, 1, 2], "name": list("abc")})),
    "boolean filter": lambda f: f[f["month"] >= 0],
    "concat": lambda f: pd.concat([f.iloc[:100], f.iloc[100:]]),
    "copy": lambda f: f.copy(),
    "groupby first": lambda f: (
        f.assign(row=np.arange(len(f))).groupby("row", as_index=False).first()
    ),
}


@pytest.mark.parametrize("operation", list(PANDAS_OPERATIONS))
def test_pandas_operations_keep_the_mechanism(operation: str) -> None:
    reports = _reports()
    derived = PANDAS_OPERATIONS[operation](reports)
    assert derived.ldp.mechanisms == {"carrier": KRR, "dest": RAPPOR}
    for column in ("carrier", "dest"):
        pd.testing.assert_frame_equal(
            _table(derived, column).sort_values("category", ignore_index=True),
            _table(reports, column).sort_values("category", ignore_index=True),
        )


def test_pandas_concat_of_two_mechanisms_claims_neither() -> None:
    """Reports of ε = 1 and ε = 2 concatenated are no column of either mechanism."""
    one = _data().ldp.krr("carrier", 1.0, domain=CARRIERS)
    two = _data().ldp.krr("carrier", 2.0, domain=CARRIERS)
    mixed = pd.concat([one, two])
    assert mixed.ldp.mechanisms == {}
    with pytest.raises(frameldp.MechanismNotFoundError, match="'carrier'"):
        mixed.ldp.debias("carrier")


def test_re_privatizing_is_refused_by_the_column_type() -> None:
    reports = _data().ldp.rappor("carrier", encoding="bloom", epsilon=1.0, epsilon_infinity=2.0)
    renamed = reports.rename(columns={"carrier": "c", "carrier_cohort": "cohort"})
    for column in ("c", "cohort"):
        with pytest.raises(frameldp.ParameterError, match="already holds frameldp reports"):
            renamed.ldp.krr(column, 1.0, domain=CARRIERS)
    # The renamed cohort column is still found beside its reports.
    assert renamed.ldp.decode("c", candidates=list(CARRIERS)).n == N


# -- polars --------------------------------------------------------------------------------------

POLARS_OPERATIONS: dict[str, Callable[[pl.DataFrame], pl.DataFrame]] = {
    "lazy collect": lambda f: f.lazy().collect(),
    "with_columns": lambda f: f.with_columns((pl.col("month") * 2).alias("twice")),
    "filter": lambda f: f.filter(pl.col("month") >= 0),
    "concat": lambda f: pl.concat([f.head(100), f.tail(N - 100)]),
    "group_by first": lambda f: (
        f.with_row_index("row").group_by("row", maintain_order=True).first().drop("row")
    ),
}


@pytest.mark.parametrize("operation", list(POLARS_OPERATIONS))
def test_polars_operations_keep_the_mechanism(operation: str) -> None:
    reports = pl.from_pandas(_data()).ldp.privatize({"carrier": KRR, "dest": RAPPOR}, key=KEY)
    derived = POLARS_OPERATIONS[operation](reports)
    assert derived.ldp.mechanisms == {"carrier": KRR, "dest": RAPPOR}
    for column in ("carrier", "dest"):
        pd.testing.assert_frame_equal(_table(derived, column), _table(reports, column))


def test_parquet_files_cross_between_pandas_polars_and_dask(tmp_path: Path) -> None:
    """pandas writes, polars reads and writes, pandas and Dask read: every reader debiases
    without being told the mechanism, and finds the in-memory tables."""
    reports = _reports()
    reports.to_parquet(tmp_path / "pandas.parquet")
    by_polars = pl.read_parquet(tmp_path / "pandas.parquet")
    by_polars.write_parquet(tmp_path / "polars.parquet")
    readers = {
        "polars of pandas": by_polars,
        "polars lazy": pl.scan_parquet(tmp_path / "polars.parquet"),
        "pandas of polars": pd.read_parquet(tmp_path / "polars.parquet"),
        "dask of polars": dd.read_parquet(tmp_path / "polars.parquet"),
    }
    for name, frame in readers.items():
        assert frame.ldp.mechanisms == {"carrier": KRR, "dest": RAPPOR}, name
        for column in ("carrier", "dest"):
            pd.testing.assert_frame_equal(_table(frame, column), _table(reports, column))
    # Dask writes too (its partitions are typed by the same release).
    ddf = dd.from_pandas(_data(), npartitions=3).ldp.privatize({"carrier": KRR}, key=KEY)
    ddf.to_parquet(tmp_path / "dask")
    back = pd.read_parquet(tmp_path / "dask")
    assert back.ldp.mechanisms == {"carrier": KRR}
    pd.testing.assert_frame_equal(_table(back, "carrier"), _table(reports, "carrier"))


def test_an_expression_is_one_release_evaluated_once() -> None:
    """``pl.col(c).ldp.krr`` evaluated over the whole column keeps its mechanism; evaluated
    again (a second query), or per group (``group_by().agg``, ``over``: once per group, row
    positions restarting in each), it is refused before a second evaluation's reports leave."""
    frame = pl.from_pandas(_data())
    assert frame["month"].n_unique() > 1
    expression = pl.col("carrier").ldp.krr(1.0, domain=CARRIERS)
    evaluated = frame.with_columns(expression)
    assert evaluated.ldp.mechanisms == {"carrier": KRR}
    with pytest.raises(frameldp.ParameterError, match="ran already"):
        frame.with_columns(expression)
    for grouped in (
        lambda e: frame.with_columns(e.over("month")),
        lambda e: frame.group_by("month").agg(e),
    ):
        with pytest.raises(frameldp.ParameterError, match="ran already"):
            grouped(pl.col("carrier").ldp.krr(1.0, domain=CARRIERS))


# -- polars' extension API, as relied on -----------------------------------------------------


def test_polars_extension_api_as_relied_on() -> None:
    """The unstable polars 2.1 calls frameldp uses, and their behaviour."""
    metadata = ReportMetadata(KRR.to_spec(), "carrier").to_json()
    dtype = pl.Extension(EXTENSION_NAME, pl.String, metadata)
    series = pl.Series("carrier", ["AA", None]).ext.to(dtype)
    # The registered class is used for the name (frameldp registers it with the adapter).
    assert type(series.dtype).__name__ == "ReportsDtype"
    assert series.dtype.ext_name() == EXTENSION_NAME
    assert series.dtype.ext_metadata() == metadata
    assert series.dtype.ext_storage() == pl.String
    assert series.ext.storage().to_list() == ["AA", None]
    # Arrow in and out keep name and metadata (pyarrow then builds the registered type).
    assert isinstance(series.to_arrow().type, ReportType)
    assert pl.Series(series.to_arrow()).dtype == series.dtype
    frame = pl.DataFrame({"carrier": series, "g": [1, 1]})
    typed = frame.lazy().select(pl.col("carrier").ext.storage().ext.to(dtype)).collect()
    assert typed.schema["carrier"] == series.dtype
    # Two types with different metadata do not concatenate.
    other = pl.Series("carrier", ["AA"]).ext.to(pl.Extension(EXTENSION_NAME, pl.String, "{}"))
    with pytest.raises(pl.exceptions.SchemaError):
        pl.concat([frame.select("carrier"), pl.DataFrame({"carrier": other})])


def test_polars_cannot_export_an_extension_over_a_dictionary() -> None:
    """Why k-RR reports are stored as label values, not as an Enum: polars 2.1 cannot export
    such a column to Arrow (so neither ``to_arrow`` nor ``to_pandas``). When this test fails,
    polars has fixed it, and the storage may become the Enum (keep reading text storage)."""
    enum = pl.Enum(list(CARRIERS))
    series = pl.Series("carrier", ["AA"], dtype=enum).ext.to(pl.Extension(EXTENSION_NAME, enum))
    with pytest.raises(pa.ArrowInvalid, match="dictionary"):
        series.to_arrow()


# -- what a type must not be trusted for -----------------------------------------------------


def test_two_report_columns_of_one_name_are_refused() -> None:
    """``pd.concat(axis=1)`` of two releases: which one is 'carrier'? Neither is guessed."""
    one = _data().ldp.krr("carrier", 1.0, domain=CARRIERS)[["carrier"]]
    two = _data().ldp.krr("carrier", 3.0, domain=CARRIERS)[["carrier"]]
    both = pd.concat([one, two], axis=1)
    with pytest.raises(frameldp.ParameterError, match="2 columns of that name"):
        _ = both.ldp.privacy


def test_a_mechanism_other_than_the_recorded_one_is_refused() -> None:
    reports = _reports()
    other = frameldp.RandomizedResponse(0.5, domain=CARRIERS)
    with pytest.raises(frameldp.ParameterError, match=r"'carrier'.*epsilon=1.*epsilon=0\.5"):
        reports.ldp.debias("carrier", other)
    with pytest.raises(frameldp.ParameterError, match="'carrier'"):
        reports["carrier"].ldp.debias(other)
    with pytest.raises(frameldp.ParameterError, match="'carrier'"):
        reports.ldp.validate({"carrier": other, "dest": RAPPOR}, release=True)
    with pytest.raises(frameldp.ParameterError, match="'carrier'") as caught:
        reports.ldp.validate({"carrier": other.to_spec(), "dest": RAPPOR}, release=True)
    assert caught.value.column == "carrier"
    assert caught.value.parameter == "mechanism"
    # The recorded mechanism itself is accepted.
    assert reports.ldp.debias("carrier", KRR).n == N


def test_decode_refuses_a_bloom_mechanism_other_than_the_recorded_one() -> None:
    shape = {"num_bits": 32, "num_hashes": 2, "num_cohorts": 4}
    made = frameldp.BloomRappor(f=0.5, p=0.25, q=0.75, **shape)
    reports = _data().ldp.privatize({"carrier": made}, key=KEY)
    weaker = frameldp.BloomRappor(f=0.9, p=0.45, q=0.55, **shape)
    with pytest.raises(frameldp.ParameterError, match="not of the mechanism given"):
        reports.ldp.decode("carrier", candidates=list(CARRIERS), mechanism=weaker)
    assert reports.ldp.decode("carrier", candidates=list(CARRIERS), mechanism=made).n == N


def _two_releases(directory: Path) -> Path:
    directory.mkdir()
    _data().ldp.krr("carrier", 1.0, domain=CARRIERS).to_parquet(directory / "part-0.parquet")
    _data().ldp.krr("carrier", 5.0, domain=CARRIERS).to_parquet(directory / "part-1.parquet")
    return directory


def test_a_dask_dataset_of_two_releases_is_refused(tmp_path: Path) -> None:
    dataset = dd.read_parquet(_two_releases(tmp_path / "ds"))
    with pytest.raises(frameldp.ParameterError, match="another release"):
        dataset.ldp.debias("carrier")


def test_a_polars_scan_of_two_releases_is_refused(tmp_path: Path) -> None:
    scan = pl.scan_parquet(_two_releases(tmp_path / "ds") / "*.parquet")
    with pytest.raises(frameldp.ParameterError, match="different releases"):
        scan.ldp.debias("carrier")


@pytest.mark.parametrize(
    "metadata",
    [
        b'{"version": 1e999, "column": "c", "spec": {}}',
        b'{"column": "c", "spec": {}, "shuffled": {"reports": "lots"}}',
        b'{"column": "c", "spec": {}, "shuffled": {"reports": 1e999}}',
        b"\xff\xfe{",
    ],
)
def test_hostile_metadata_in_a_file_is_a_frameldp_error(tmp_path: Path, metadata: bytes) -> None:
    field = pa.field(
        "c",
        pa.large_string(),
        metadata={
            b"ARROW:extension:name": EXTENSION_NAME.encode(),
            b"ARROW:extension:metadata": metadata,
        },
    )
    pq.write_table(
        pa.table([pa.array(["AA"], pa.large_string())], schema=pa.schema([field])),
        tmp_path / "h.parquet",
    )
    frame = pd.read_parquet(tmp_path / "h.parquet")
    with pytest.raises(frameldp.ParameterError, match="not valid"):
        frame.ldp.debias("c")
    with pytest.raises(frameldp.ParameterError, match="not valid"):
        _ = frame.ldp.privacy
