"""Report columns answer ordinary operations like any column (issue 37, items 1, 2, 4 and 6).

One body per operation, run over every backend: the operation on a frame of reports gives the
same result as the same operation on the frame's storage values (``ldp.plain()``), raises no
foreign exception, and the report type comes back where the result still holds the reports.
Spark's twin is in ``test_spark.py`` (one worker runs every Spark test). The polars operations
that polars' engine refuses on any extension type are pinned as strict xfails, with the route
that works (``pl.col(c).ext.storage()``, or ``ldp.plain()`` for files) tested beside them.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import polars as pl
import pytest

import frameldp
from frameldp.errors import FrameLDPError

DOMAIN = ["AA", "DL", "UA", "WN"]
KINDS = {
    "krr": frameldp.RandomizedResponse(1.0, domain=DOMAIN),
    "rappor": frameldp.Rappor(1.0, domain=DOMAIN),
    "hadamard": frameldp.HadamardResponse(1.0, domain=DOMAIN),
}


def _data(rows: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "c": rng.choice(DOMAIN, size=rows),
            "g": rng.choice(["east", "west"], size=rows),
            "x": np.arange(rows),
        }
    )


def _reports(kind: str) -> pd.DataFrame:
    return _data().ldp.privatize({"c": KINDS[kind]}, seed=3)


def _a_report(frame: pd.DataFrame) -> Any:
    """A value the report column holds (its storage value)."""
    return frame["c"].iloc[0]


def _plain(values: Any) -> Any:
    """Report values as their storage values (a report array has ``plain()``)."""
    array = getattr(values, "array", values)
    return array.plain() if hasattr(array, "plain") else None


def _normalized(result: Any) -> Any:
    """``result`` with report columns as their storage values (computed, for Dask)."""
    if hasattr(result, "compute"):
        result = result.compute()
    if isinstance(result, pd.DataFrame):
        return result.ldp.plain()
    plain = _plain(result)
    if isinstance(result, pd.Series) and plain is not None:
        return pd.Series(plain, index=result.index, name=result.name)
    if isinstance(result, pd.Index) and plain is not None:
        return pd.Index(plain, name=result.name)
    if isinstance(result, pd.api.extensions.ExtensionArray) and plain is not None:
        return plain
    if isinstance(result, tuple):
        return tuple(_normalized(part) for part in result)
    return result


def assert_same(result: Any, expected: Any) -> None:
    result, expected = _normalized(result), _normalized(expected)
    if isinstance(result, tuple):
        for got, want in zip(result, expected, strict=True):
            assert_same(got, want)
    elif isinstance(result, pd.DataFrame):
        pd.testing.assert_frame_equal(result, expected, check_index_type=False)
    elif isinstance(result, pd.Series):
        pd.testing.assert_series_equal(result, expected, check_index_type=False)
    elif isinstance(result, pd.Index):
        pd.testing.assert_index_equal(result, expected, exact=False)
    elif isinstance(result, np.ndarray | pd.api.extensions.ExtensionArray):
        np.testing.assert_array_equal(np.asarray(result), np.asarray(expected))
    else:
        assert result == expected


# -- pandas and Dask: one body per operation --------------------------------------------------

# Each operation takes (frame, a report value) and returns what pandas returns. ``text``: the
# result is text, compared with the same operation on the text form (ldp.plain(text=True)).
_Op = Callable[[Any, Any], Any]
PANDAS_OPS: dict[str, tuple[_Op, bool]] = {
    "unique": (lambda f, v: f["c"].unique(), False),
    "value_counts": (lambda f, v: f["c"].value_counts(), False),
    "nunique": (lambda f, v: f["c"].nunique(), False),
    "factorize": (lambda f, v: pd.factorize(f["c"]), False),
    "isin": (lambda f, v: f["c"].isin([v]), False),
    "eq": (lambda f, v: f["c"] == v, False),
    "ne": (lambda f, v: f["c"] != v, False),
    "filter": (lambda f, v: f[f["c"] == v], False),
    "groupby-keys": (lambda f, v: f.groupby("c")["x"].sum(), False),
    "groupby-size": (lambda f, v: f.groupby(["g", "c"]).size(), False),
    "sort_values": (lambda f, v: f.sort_values(["c", "x"]), False),
    "argsort": (lambda f, v: f["c"].argsort(), False),
    "drop_duplicates": (lambda f, v: f[["c"]].drop_duplicates(), False),
    "duplicated": (lambda f, v: f["c"].duplicated(), False),
    "describe": (lambda f, v: f.describe(include="all"), False),
    "merge-key": (lambda f, v: f.merge(f[["c"]].drop_duplicates().assign(y=1), on="c"), False),
    "min-max": (lambda f, v: (f["c"].min(), f["c"].max()), False),
    "to_numpy": (lambda f, v: f["c"].to_numpy(), False),
    "tolist": (lambda f, v: f["c"].tolist(), False),
    "astype-str": (lambda f, v: f["c"].astype(str), True),
    "astype-object": (lambda f, v: f["c"].astype(object), True),
    "to_csv": (lambda f, v: f.to_csv(index=False), True),
    "repr": (lambda f, v: repr(f), True),
    "html": (lambda f, v: f._repr_html_(), True),
}

DASK_OPS = {
    name: PANDAS_OPS[name]
    for name in (
        "unique",
        "value_counts",
        "nunique",
        "isin",
        "eq",
        "ne",
        "filter",
        "groupby-keys",
        "groupby-size",
        "drop_duplicates",
        "merge-key",
        "astype-str",
        "astype-object",
    )
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", PANDAS_OPS)
def test_pandas_operation_equals_it_on_the_storage_values(name: str, kind: str) -> None:
    operation, text = PANDAS_OPS[name]
    reports = _reports(kind)
    before = reports.copy()
    value = _a_report(reports)

    result = operation(reports, value)

    plain = reports.ldp.plain(text=text)
    if name == "describe" and kind == "hadamard":
        # Integer reports are codes, not quantities: pandas describes them as categories.
        plain = plain.astype({"c": object})
    assert_same(result, operation(plain, value))
    pd.testing.assert_frame_equal(reports, before)


def _dask(frame: pd.DataFrame) -> dd.DataFrame:
    return dd.from_pandas(frame, npartitions=3)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", DASK_OPS)
def test_dask_operation_equals_it_on_the_storage_values(name: str, kind: str) -> None:
    operation, text = DASK_OPS[name]
    reports = _dask(_data()).ldp.privatize({"c": KINDS[kind]}, seed=3)
    value = _a_report(reports.compute())

    result = _normalized(operation(reports, value))

    expected = _normalized(operation(reports.ldp.plain(text=text), value))
    if name in ("unique", "merge-key", "drop_duplicates"):
        # Dask places distinct values and joined rows by their hash, which differs between a
        # report column and a plain one: the same rows, in another order.
        result, expected = _rows_sorted(result), _rows_sorted(expected)
    elif isinstance(result, pd.DataFrame | pd.Series):  # partitions come back in their order
        result, expected = result.sort_index(), expected.sort_index()
    assert_same(result, expected)


def _rows_sorted(values: Any) -> Any:
    if isinstance(values, pd.DataFrame):
        return values.sort_values(list(values.columns)).reset_index(drop=True)
    return pd.Series(values).sort_values().reset_index(drop=True)


@pytest.mark.parametrize("kind", KINDS)
def test_row_selections_keep_the_report_type(kind: str) -> None:
    """Results that still hold the release's reports, row for row, keep its type (and its
    privacy); results that are not reports do not claim it."""
    reports = _reports(kind)
    value = _a_report(reports)
    kept = {
        "filter": reports[reports["c"] == value],
        "sort": reports.sort_values("c"),
        "drop_duplicates": reports.drop_duplicates("c"),
        "unique": pd.DataFrame({"c": reports["c"].unique()}),
        "concat": pd.concat([reports.head(3), reports.tail(3)]),
    }
    for name, frame in kept.items():
        assert frame.ldp.mechanisms == reports.ldp.mechanisms, name
    not_reports = {
        "mask": (reports["c"] == value).to_frame("c"),
        "value_counts": reports["c"].value_counts().index.to_frame(name="c"),
        "astype": reports["c"].astype(str).to_frame(),
    }
    for name, frame in not_reports.items():
        assert frame.ldp.mechanisms == {}, name


def test_bit_reports_show_as_bits() -> None:
    reports = _reports("rappor")
    shown = repr(reports["c"].head(3))
    first = np.unpackbits(np.frombuffer(_a_report(reports), dtype=np.uint8), count=len(DOMAIN))
    assert "b" + "".join(map(str, first)) in shown
    assert "b'" not in shown
    assert "b'" not in reports.head()._repr_html_()


def test_values_are_not_made_into_reports() -> None:
    """Values given the report dtype stay plain values; nulls take the type; a write of values
    into a report column is refused, naming the column."""
    reports = _reports("krr")
    assert pd.DataFrame({"c": pd.Series(["AA"], dtype=reports["c"].dtype)}).ldp.mechanisms == {}
    nulls = pd.DataFrame({"c": pd.Series([None, None], dtype=reports["c"].dtype)})
    assert nulls.ldp.mechanisms == reports.ldp.mechanisms
    with pytest.raises(FrameLDPError, match="column 'c'"):
        reports.loc[0, "c"] = "AA"


def test_a_join_on_sorted_report_keys() -> None:
    """pandas joins monotonic keys through an index join, which rebuilds the keys."""
    reports = _reports("krr").sort_values("c")
    keys = reports[["c"]].drop_duplicates().assign(y=1)
    joined = reports.merge(keys, on="c")
    assert joined.ldp.mechanisms == reports.ldp.mechanisms
    assert len(joined) == len(reports)


@pytest.mark.parametrize("kind", KINDS)
def test_csv_reads_back_to_the_same_table(kind: str) -> None:
    """to_csv writes every report kind as text that read_csv then debias(column, mechanism)
    turns into the same table (pandas, and polars through ldp.plain(text=True), in CSV and
    newline-delimited JSON)."""
    reports = _reports(kind)
    expected = reports.ldp.debias("c").frame
    mechanism = KINDS[kind]

    back = pd.read_csv(io.StringIO(reports.to_csv(index=False)))
    pd.testing.assert_frame_equal(back.ldp.debias("c", mechanism).frame, expected)

    plain = pl.from_pandas(reports).ldp.plain(text=True)
    text, lines = plain.write_csv(), plain.write_ndjson()
    for reader, written in (
        (pd.read_csv, text),
        (pl.read_csv, text),
        (pl.read_ndjson, lines),
        (lambda f: pd.read_json(f, lines=True), lines),
    ):
        table = reader(io.StringIO(written)).ldp.debias("c", mechanism)
        pd.testing.assert_frame_equal(_pandas(table.frame), expected)


def _pandas(frame: Any) -> pd.DataFrame:
    return frame.to_pandas() if isinstance(frame, pl.DataFrame) else frame


# -- polars, eager and lazy ---------------------------------------------------------------------

POLARS_WORK: dict[str, Callable[[Any, Any], Any]] = {
    "series-unique": lambda f, v: _collected(f)["c"].unique().sort().to_frame(),
    "group_by": lambda f, v: f.group_by("c").agg(pl.col("x").sum()).sort("x"),
    "join-reports": lambda f, v: f.join(f.select("c", "x"), on="c").sort("x", "x_right"),
    "unique": lambda f, v: f.unique().sort("x"),
    "sort": lambda f, v: f.sort("c", "x"),
    "n_unique": lambda f, v: f.select(pl.col("c").n_unique()),
    "value_counts": lambda f, v: f.select(pl.col("c").value_counts(sort=True)).unnest("c"),
    "filter-storage": lambda f, v: f.filter(pl.col("c").ext.storage() == v),
    "is_in-storage": lambda f, v: f.filter(pl.col("c").ext.storage().is_in([v])),
    "cast-storage": lambda f, v: f.select(pl.col("c").ext.storage().cast(pl.Binary)),
}
POLARS_REFUSED: dict[str, Callable[[Any, Any], Any]] = {
    "eq": lambda f, v: f.filter(pl.col("c") == v),
    "series-eq": lambda f, v: f["c"] == v,
    "is_in": lambda f, v: f.filter(pl.col("c").is_in([v])),
    "cast-binary": lambda f, v: f.select(pl.col("c").cast(pl.Binary)),
    "join-plain": lambda f, v: f.join(pl.DataFrame({"c": [v]}).lazy().collect(), on="c"),
    "write_csv": lambda f, v: f.write_csv() if isinstance(f, pl.DataFrame) else f.collect(),
}


def _polars_reports(kind: str, lazy: bool) -> Any:
    frame = pl.from_pandas(_data())
    frame = frame.lazy() if lazy else frame
    return frame.ldp.privatize({"c": KINDS[kind]}, seed=3)


def _collected(frame: Any) -> Any:
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def _polars_value(reports: Any) -> Any:
    return _collected(reports.ldp.plain())["c"][0]


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", POLARS_WORK)
def test_polars_operation_equals_it_on_the_storage_values(name: str, kind: str, lazy: bool) -> None:
    operation = POLARS_WORK[name]
    reports = _polars_reports(kind, lazy)
    value = _polars_value(reports)

    result = _collected(operation(reports, value))

    expected = _collected(operation(reports.ldp.plain(), value))
    assert result.ldp.plain().equals(expected)
    if "c" in result.columns and result.schema["c"] != expected.schema["c"]:
        # The result still holds the reports: their type (and the release) came back.
        assert result.ldp.mechanisms == _collected(reports).ldp.mechanisms


@pytest.mark.xfail(
    strict=True,
    reason="polars 2.1 refuses comparisons, is_in, casts, joins with a plain column and CSV "
    "on any extension type, in its Rust engine (no Python hook): use pl.col(c).ext.storage() "
    "or ldp.plain() (docs/guide.md, 'Working with report columns')",
)
@pytest.mark.parametrize("kind", ["krr"])
@pytest.mark.parametrize("name", POLARS_REFUSED)
def test_polars_refuses_on_extension_types(name: str, kind: str) -> None:
    reports = _polars_reports(kind, lazy=False)
    POLARS_REFUSED[name](reports, _polars_value(reports))


@pytest.mark.parametrize("kind", KINDS)
def test_polars_to_pandas_keeps_the_report_type(kind: str) -> None:
    reports = _polars_reports(kind, lazy=False)
    back = reports.to_pandas()
    assert back.ldp.mechanisms == reports.ldp.mechanisms
    pd.testing.assert_frame_equal(
        back.ldp.debias("c").frame, reports.ldp.debias("c").frame.to_pandas()
    )


# -- what the attack review of issue 37 found ---------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_fill_values_make_plain_columns(kind: str) -> None:
    """A fill value (reindex, shift, insert) or a null filled from another row is no report:
    the result claims no release."""
    reports = _reports(kind)
    fill = "AA" if kind == "krr" else (1 if kind == "hadamard" else b"\x80")
    nulls = reports.assign(c=reports["c"].where(reports["x"] % 10 != 3))
    results = {
        "reindex": reports[["c"]].reindex(range(len(reports) + 5), fill_value=fill),
        "shift-back": reports.assign(c=reports["c"].shift(-5, fill_value=fill)),
        "shift": reports.assign(c=reports["c"].shift(5, fill_value=fill)),
        "ffill": nulls.ffill(limit=1),
        "bfill": nulls.bfill(),
        "fillna": nulls.fillna({"c": fill}),
    }
    if kind == "krr":
        results["insert"] = pd.DataFrame({"c": pd.Index(reports["c"]).insert(0, fill)})
    for name, frame in results.items():
        assert frame.ldp.mechanisms == {}, name
        repr(frame)  # shows, whatever it holds
    kept = reports.reindex(range(len(reports) + 5))  # a null fill
    assert kept.ldp.mechanisms == reports.ldp.mechanisms


def test_counts_and_null_writes_through_a_frame() -> None:
    reports = _reports("rappor")
    assert reports.groupby(reports["x"] % 3).count()["c"].sum() == len(reports)
    reports.loc[5, "c"] = None  # a null passes, through the frame's column
    assert reports["c"].isna().sum() == 1
    assert reports.ldp.mechanisms
    with pytest.raises(FrameLDPError, match="'c'"):
        reports.ldp.debias("c")


def test_text_of_a_slice_with_nulls() -> None:
    reports = _reports("rappor")
    sliced = reports.assign(c=reports["c"].where(reports["x"] != 5)).iloc[1:]
    text = sliced["c"].astype(str)
    assert text.isna().sum() == 1
    plain = sliced.ldp.plain(text=True)["c"]
    pd.testing.assert_series_equal(text, plain.astype(str), check_dtype=False)


def test_groupby_keys_of_bit_reports_are_their_values() -> None:
    reports = _reports("rappor")
    sums = reports.groupby("c")["x"].sum()
    assert sums[sums.index[0]] == sums.iloc[0]


def test_a_frame_read_with_the_pyarrow_backend_is_refused_with_the_fix(tmp_path: Any) -> None:
    """pandas holds reports read with dtype_backend="pyarrow" as ArrowDtype of the report type:
    no pandas operation runs on it and no write into it is checked, so frameldp refuses it."""
    path = tmp_path / "reports.parquet"
    _reports("krr").to_parquet(path)
    with pytest.raises(FrameLDPError, match="dtype_backend"):
        pd.read_parquet(path, dtype_backend="pyarrow").ldp.debias("c")
    assert pd.read_parquet(path).ldp.debias("c").n == len(_data())


@pytest.mark.parametrize("kind", KINDS)
def test_duckdb_reads_csv_and_parquet_releases_back(kind: str, tmp_path: Any) -> None:
    """DuckDB reads the text form as text (it would read ``0b0100`` as an integer), and its
    BLOBs reach pandas as ``bytearray``, which debias takes as bytes."""
    import duckdb

    reports = _reports(kind)
    expected = reports.ldp.debias("c").frame
    reports.to_csv(tmp_path / "r.csv", index=False)
    reports.to_parquet(tmp_path / "r.parquet")
    for path in ("r.csv", "r.parquet"):
        back = duckdb.sql(f"select * from '{tmp_path / path}'").df()
        table = back.ldp.debias("c", KINDS[kind])
        pd.testing.assert_frame_equal(table.frame, expected, obj=path)
