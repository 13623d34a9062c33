"""Regressions of issue 13 on every frame backend: a domain entry is never coerced to the
column's type (defect 8), unordered domains are refused (9), an out-of-domain error quotes a
short value (6), and an all-null categorical column gives reports (12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import frameldp
from frameldp import ldp
from frameldp.cli import app

from .conftest import DASK_PARTITIONS, NEAR_IDENTITY_EPSILON, Backend


def counts(backend: Backend, reports: Any, column: str) -> dict[Any, float]:
    """Debiased count per bucket label, rounded (near identity they are exact)."""
    table = ldp(reports).debias(column)
    labels = backend.column_values(table.frame, "category")
    values = backend.column_values(table.frame, "count")
    return dict(zip(labels, [round(v, 6) for v in values], strict=True))


# --- defect 8: exact matching, no coercion ---------------------------------------------------


def test_an_int_value_is_never_reported_as_a_float_category(backend: Backend) -> None:
    """``domain=[1, 2.5]`` on an int column truncated 2.5 to 2, so 2 was reported as 2.5."""
    native = backend.make({"v": [1, 2, 2, 3]})
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match=r"value 2 at row \d is not in the domain"):
        backend.collect(ldp(native).krr("v", NEAR_IDENTITY_EPSILON, domain=[1, 2.5], seed=1))
    reports = ldp(native).rappor(
        "v", NEAR_IDENTITY_EPSILON, domain=[1, 2.5], unknown="other", seed=1
    )

    assert counts(backend, reports, "v") == {1: 1, 2.5: 0, frameldp.OTHER: 3}
    backend.assert_unchanged(before, native)


def test_numbers_match_the_category_they_equal(backend: Backend) -> None:
    """A float column's 3.0 is the category 3, an int column's 3 the category 3.0."""
    floats = backend.make({"v": [1.5, 3.0, 3.0]})
    ints = backend.make({"v": [3, 3, 1]})

    from_floats = ldp(floats).krr("v", NEAR_IDENTITY_EPSILON, domain=[1.5, 3], seed=1)
    from_ints = ldp(ints).rappor("v", NEAR_IDENTITY_EPSILON, domain=[1.5, 3.0], unknown="other")

    assert backend.column_values(from_floats, "v") == [1.5, 3, 3]
    assert counts(backend, from_ints, "v") == {1.5: 0, 3.0: 2, frameldp.OTHER: 1}


def test_krr_reports_carry_float_labels_exactly(backend: Backend) -> None:
    """An int column over ``domain=[1.5, 3]``: a report moved to 1.5 must read 1.5."""
    native = backend.make({"v": [3] * 200})

    reports = ldp(native).krr("v", 0.1, domain=[1.5, 3], seed=1)

    assert set(backend.column_values(reports, "v")) == {1.5, 3}


@pytest.mark.parametrize("unknown", ["raise", "other"])
def test_a_polars_expression_over_a_float_domain(unknown: str) -> None:
    """It raised polars' ``InvalidOperationError`` (the UDF had no return dtype)."""
    frame = pl.DataFrame({"v": [1.5, 3.0]})

    def reports() -> pl.DataFrame:
        return frame.select(
            pl.col("v").ldp.krr(NEAR_IDENTITY_EPSILON, domain=[1.5, 3], unknown=unknown)
        )

    if unknown == "other":
        with pytest.raises(frameldp.ParameterError, match="needs string categories"):
            reports()
    else:
        assert reports()["v"].to_list() == [1.5, 3.0]


def test_labels_that_form_no_arrow_column_are_refused() -> None:
    """(Fuzzer) ``domain=[-2**63, 0.0]`` raised pyarrow's ArrowInvalid: an integer beyond
    2**53 beside a float makes no one column of labels."""
    frame = pl.DataFrame({"x": [-(2**63), 0]})
    with pytest.raises(frameldp.ParameterError, match=r"column 'x': .* labels of one type"):
        frame.ldp.krr("x", 1.0, domain=[-(2**63), 0.0])


@pytest.mark.parametrize("unknown", ["raise", "other"])
def test_a_domain_mixing_strings_and_numbers_is_refused(backend: Backend, unknown: str) -> None:
    """``domain=["a", "b", 1]`` sent every value to ``<other>`` (or said 'a' is not in it)."""
    native = backend.make({"c": ["a", "b", "a"]})
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match=r"must all be strings.*1 \(int\) at position 2"):
        ldp(native).rappor("c", 1.0, domain=["a", "b", 1], unknown=unknown)
    backend.assert_unchanged(before, native)


def test_categories_of_another_type_than_the_column_are_refused(backend: Backend) -> None:
    """String categories on an int column matched nothing: every value went to ``<other>``."""
    native = backend.make({"zip": [10001, 10002, 10001]})
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match=r"column 'zip'.*can never equal.*str categ"):
        backend.collect(
            ldp(native).rappor("zip", 1.0, domain=["10001", "10002"], unknown="other", seed=1)
        )
    backend.assert_unchanged(before, native)


# --- defect 9: sets and dicts ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "match"),
    [({"a", "b"}, r"sorted\(\.\.\.\) if you mean a set"), ({"a": 0, "b": 1}, "keys")],
    ids=["set", "dict"],
)
def test_a_set_or_dict_domain_is_refused(backend: Backend, domain: Any, match: str) -> None:
    native = backend.make({"c": ["a", "b", "a"]})
    before = backend.snapshot(native)

    with pytest.raises(frameldp.DomainError, match=match):
        ldp(native).krr("c", 1.0, domain=domain)
    backend.assert_unchanged(before, native)


# --- defect 6: a private value outside the domain -------------------------------------------


def test_an_out_of_domain_value_is_quoted_short(backend: Backend) -> None:
    native = backend.make({"c": ["a", "x" * 1_000_000]})

    with pytest.raises(frameldp.DomainError, match=r"\(1000000 chars\) at row 1") as error:
        backend.collect(ldp(native).krr("c", 1.0, domain=["a", "b"], seed=1))

    assert "x" * 41 not in str(error.value)
    assert "unknown='other'" in str(error.value)


# --- defect 12: all-null categorical columns ------------------------------------------------


def all_null_categorical(backend: Backend, kind: str) -> Any:
    """Two null rows of a categorical column with no category at all (an empty Arrow
    dictionary) or with the public ones (pandas Categorical / polars Categorical or Enum)."""
    categories = [] if kind == "empty" else ["a", "b"]
    if backend.library == "pandas":
        series = pd.Series(pd.Categorical([None, None], categories=categories))
        frame = pd.DataFrame({"c": series})
        return dd.from_pandas(frame, npartitions=DASK_PARTITIONS) if backend.dask else frame
    dtype = pl.Categorical() if kind == "empty" else pl.Enum(categories)
    frame = pl.DataFrame({"c": pl.Series("c", [None, None], dtype=dtype)})
    return frame.lazy() if backend.lazy else frame


@pytest.mark.parametrize("kind", ["empty", "categories"])
@pytest.mark.parametrize("method", ["rappor", "krr"])
def test_an_all_null_categorical_column_gives_null_bucket_reports(
    backend: Backend, method: str, kind: str
) -> None:
    """It raised ``IndexError``: the empty dictionary was indexed for the null slots."""
    native = all_null_categorical(backend, kind)

    reports = getattr(ldp(native), method)(
        "c", NEAR_IDENTITY_EPSILON, domain=["a", "b"], nulls="category", seed=1
    )

    assert counts(backend, reports, "c") == {"a": 0, "b": 0, None: 2}


def test_the_cli_privatizes_an_all_null_dictionary_parquet_column(tmp_path: Path) -> None:
    column = pa.DictionaryArray.from_arrays(
        pa.array([None, None, None], type=pa.int32()), pa.array([], type=pa.string())
    )
    pq.write_table(pa.table({"c": column}), tmp_path / "in.parquet")
    (tmp_path / "domain.txt").write_text("a\nb\n")
    arguments = ["privatize", tmp_path / "in.parquet", tmp_path / "out.parquet", "--column", "c"]
    arguments += ["--mechanism", "krr", "--epsilon", NEAR_IDENTITY_EPSILON, "--seed", 1]
    arguments += ["--domain-file", tmp_path / "domain.txt", "--nulls", "category"]

    run = CliRunner().invoke(app, [str(argument) for argument in arguments])

    assert run.exit_code == 0, (run.stderr, run.exception)
    assert pq.read_table(tmp_path / "out.parquet").column("c").to_pylist() == [None] * 3


@pytest.mark.parametrize("call", ["krr", "privatize", "rappor"])
def test_two_pandas_columns_of_one_name_are_refused(call: str) -> None:
    """They raised ``KeyError: 0`` (issue 13, defect 15)."""
    import pandas as pd

    frame = pd.DataFrame([["AA", "DL"], ["DL", "AA"]], columns=["c", "c"])
    before = frame.copy()
    calls = {
        "krr": lambda: ldp(frame).krr("c", 1.0, domain=["AA", "DL"]),
        "privatize": lambda: ldp(frame).privatize(
            {"c": frameldp.RandomizedResponse(1.0, domain=["AA", "DL"])}
        ),
        "rappor": lambda: ldp(frame).rappor("c", 1.0, domain=["AA", "DL"]),
    }
    with pytest.raises(frameldp.ParameterError, match=r"column 'c': the frame has 2 columns"):
        calls[call]()
    pd.testing.assert_frame_equal(frame, before)
