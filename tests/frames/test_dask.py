"""The ``.ldp`` accessor on Dask DataFrames.

The oracle is the pandas accessor on the computed frame (``ddf.compute()``, so both see the same
dtypes) with the same key: Dask must give exactly those reports, and exactly that debiased table,
whatever the partitioning (1, 3, 7 partitions, a repartitioned frame, a Parquet directory of
several files and row groups, partitions fused by the optimizer), however often it is computed,
and on the synchronous scheduler as on a two-process ``distributed.LocalCluster``. Reports are
compared exactly, so no statistical test is needed here: the pandas estimators are tested on
their own.
"""

from __future__ import annotations

import itertools
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameldp
from _releases import as_one_release, assert_frame_equal, assert_series_equal

from .conftest import CARRIERS, ORIGINS, untyped

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from frameldp.frames import _dask  # noqa: E402  (after the importorskip of dask)

KEY = bytes(range(32))
MEMO = bytes(range(100, 132))
SERVICES = ("wifi", "meal", "lounge", "checked_bag")
URLS = ("/home", "/search", "/cart", "/help")
BLOOM = {"num_bits": 16, "num_hashes": 2, "num_cohorts": 4, "f": 0.5, "p": 0.5, "q": 0.75}
LIST_OF_STRINGS = pd.ArrowDtype(pa.list_(pa.string()))

Call = Callable[[Any], Any]


@pytest.fixture(autouse=True)
def _synchronous() -> Iterator[None]:
    """Every test runs on the synchronous scheduler unless it asks for the cluster."""
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two worker processes, one thread each; closed when the module's tests are done."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            silence_logs=40,
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


def frame(n: int = 120) -> pd.DataFrame:
    """Strings over public domains, set-valued cells, URLs and their users, an untouched
    float."""
    rows = np.arange(n)
    services = [[SERVICES[i % 4], SERVICES[(i // 4) % 4]] if i % 5 else [] for i in rows]
    return pd.DataFrame(
        {
            "carrier": np.array(CARRIERS[:3])[rows % 3],
            "origin": np.array(ORIGINS)[(7 * rows) % 5],
            "services": pd.Series(services, dtype=LIST_OF_STRINGS),
            "url": np.array(URLS)[(rows * rows + rows // 3) % 4],
            "user_id": [f"user{i // 2:04d}" for i in rows],  # two rows per user
            "fare": rows / 4,
        }
    )


CALLS: dict[str, Call] = {
    "krr": lambda f: f.ldp.krr("carrier", 1.0, domain=CARRIERS, key=KEY),
    "rappor": lambda f: f.ldp.rappor("origin", 1.0, domain=ORIGINS, key=KEY),
    "rappor-sets": lambda f: f.ldp.rappor("services", 2.0, domain=SERVICES, max_weight=2, key=KEY),
    "bloom": lambda f: f.ldp.rappor("url", encoding="bloom", key=KEY, **BLOOM),
    "bloom-user": lambda f: f.ldp.rappor(
        "url", encoding="bloom", user="user_id", memo_key=MEMO, key=KEY, **BLOOM
    ),
    "privatize-all": lambda f: f.ldp.privatize(
        {
            "carrier": frameldp.RandomizedResponse(1.0, domain=CARRIERS),
            "origin": frameldp.Rappor(epsilon=1.0, domain=ORIGINS),
            "url": frameldp.BloomRappor(**BLOOM),
        },
        seed=7,
    ),
}


def assert_same_reports(ddf: Any, call: Call) -> pd.DataFrame:
    """``call(ddf)`` is a Dask frame computing (twice) to ``call(ddf.compute())``."""
    out = call(ddf)
    assert isinstance(out, dd.DataFrame)
    expected = call(ddf.compute())
    computed = out.compute()
    assert_frame_equal(computed, expected, check_exact=True)
    assert_frame_equal(out.compute(), computed, check_exact=True)
    assert_series_equal(
        as_one_release(out._meta).dtypes, as_one_release(expected).dtypes
    )  # the meta is right
    return computed


# ---------------------------------------------------------------------------- row addressing


@pytest.mark.parametrize("npartitions", [1, 3, 7])
@pytest.mark.parametrize("call", list(CALLS))
def test_reports_equal_the_pandas_reports(call: str, npartitions: int) -> None:
    data = frame()
    before = data.copy(deep=True)
    ddf = dd.from_pandas(data, npartitions=npartitions)

    assert_same_reports(ddf, CALLS[call])

    assert_frame_equal(data, before)


def test_threaded_scheduler_gives_the_same_reports_and_table() -> None:
    """Dask's default scheduler for frames runs partitions in parallel threads."""
    ddf = dd.from_pandas(frame(), npartitions=7)
    with dask.config.set(scheduler="threads"):
        computed = assert_same_reports(ddf, CALLS["privatize-all"])
        table = CALLS["privatize-all"](ddf).ldp.debias("carrier")
    assert_frame_equal(table.frame, computed.ldp.debias("carrier").frame)


def test_divisions_are_kept_and_partitions_compute_alone() -> None:
    """Each output partition is the matching slice of the pandas reports, even computed alone
    (its first global row comes from the lengths of the partitions before it)."""
    ddf = dd.from_pandas(frame(), npartitions=7)
    out = CALLS["privatize-all"](ddf)
    expected = CALLS["privatize-all"](ddf.compute())

    assert out.divisions == ddf.divisions
    for i in (0, 4, 6):
        part = out.partitions[i].compute()
        assert_frame_equal(part, expected.loc[part.index], check_exact=True)


@pytest.mark.parametrize("call", ["krr", "rappor-sets", "bloom-user"])
def test_repartitioned_input(call: str) -> None:
    """Uneven partitions from ``repartition``: rows keep their global position."""
    ddf = dd.from_pandas(frame(), npartitions=3).repartition(npartitions=5)
    assert ddf.optimize().npartitions == 5
    assert_same_reports(ddf, CALLS[call])


def _parquet_directory(path: Path, data: pd.DataFrame) -> Path:
    """Four files of uneven length (30, 10, 50, 30 rows), each in row groups of 8 rows.

    Written without pandas metadata: dask cannot read back the ``ArrowDtype`` list column's
    recorded dtype name (``data type 'list<item: string>[pyarrow]' not understood``).
    """
    path.mkdir()
    bounds = [0, 30, 40, 90, len(data)]
    for i, (start, stop) in enumerate(itertools.pairwise(bounds)):
        table = pa.Table.from_pandas(data.iloc[start:stop], preserve_index=False)
        table = table.replace_schema_metadata(None)
        pq.write_table(table, path / f"part.{i:02d}.parquet", row_group_size=8)
    return path


@pytest.mark.parametrize("split_row_groups", [False, True], ids=["per-file", "per-row-group"])
@pytest.mark.parametrize("call", ["krr", "rappor-sets", "bloom-user"])
def test_parquet_directory_of_several_files(
    tmp_path: Path, call: str, split_row_groups: bool
) -> None:
    ddf = dd.read_parquet(
        _parquet_directory(tmp_path / "data", frame()), split_row_groups=split_row_groups
    )
    assert ddf.npartitions == (17 if split_row_groups else 4)  # 4 + 2 + 7 + 4 row groups
    assert_same_reports(ddf, CALLS[call])


def test_partitions_fused_by_the_optimizer(tmp_path: Path) -> None:
    """Projecting one column of a wide Parquet frame lets dask-expr fuse its partitions when it
    lowers the graph: the reports follow the partitions that actually run, not ``npartitions``
    of the frame as written."""
    wide = frame().assign(**{f"x{i}": np.arange(120) for i in range(30)})
    ddf = dd.read_parquet(_parquet_directory(tmp_path / "wide", wide))["carrier"].to_frame()
    call = CALLS["krr"]
    # Precondition (dask 2026.8): the frame claims 4 partitions, 1 or 2 run.
    assert ddf.optimize().npartitions < ddf.npartitions == 4

    out = call(ddf)

    assert out.npartitions == ddf.optimize().npartitions
    assert_same_reports(ddf, call)


def test_projection_and_filter_after_privatize(tmp_path: Path) -> None:
    """Selecting or filtering the reports' frame acts on the privatized partitions: the rows
    keep the reports they had in the whole frame."""
    ddf = dd.read_parquet(_parquet_directory(tmp_path / "data", frame()))
    out = CALLS["privatize-all"](ddf)
    expected = CALLS["privatize-all"](ddf.compute())

    assert_frame_equal(out[["origin"]].compute(), expected[["origin"]])
    assert_series_equal(out["url"].compute(), expected["url"])
    cheap = out[out["fare"] < 10][["carrier", "url_cohort"]]
    assert_frame_equal(cheap.compute(), expected[expected["fare"] < 10][["carrier", "url_cohort"]])


def test_a_graph_without_a_key_computes_once(tmp_path: Path) -> None:
    """Without key or seed no key is in the graph: its one computation draws fresh keys and,
    with a ledger, is charged once, before its reports exist; a second computation is refused
    before it draws anything. A persisted frame is computed once and read as often as wanted;
    a new graph is a new release (independent noise, charged again). A release that could not
    be charged is refused when the graph is built."""
    ledger = frameldp.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("b", epsilon=2.5)
    ddf = dd.from_pandas(frame(), npartitions=3)

    out = ddf.ldp.rappor("origin", 1.0, domain=ORIGINS, ledger=ledger, budget="b")
    assert ledger.history("b") == []
    first = out.compute()
    assert len(ledger.history("b")) == 1
    with pytest.raises(frameldp.ParameterError, match=r"release [0-9a-f]{32} ran already"):
        out.compute()
    assert len(ledger.history("b")) == 1
    kept = ddf.ldp.rappor("origin", 1.0, domain=ORIGINS, ledger=ledger, budget="b").persist()
    assert len(ledger.history("b")) == 2
    assert_frame_equal(kept.compute(), kept.compute())
    assert len(ledger.history("b")) == 2
    # 120 reports of 5 bits, each flipped with probability ~0.38: a repeat has chance < 1e-50.
    assert not kept.compute()["origin"].astype(object).equals(first["origin"].astype(object))
    with pytest.raises(frameldp.BudgetExceededError):
        ddf.ldp.rappor("origin", 1.0, domain=ORIGINS, ledger=ledger, budget="b")
    assert len(ledger.history("b")) == 2


def test_row_ids_are_never_shared_between_partitions() -> None:
    """Seven partitions of one repeated value: were a row id reused (say, every partition
    starting at row 0), partitions would repeat each other's noise. With k-RR at epsilon 0.1
    over 4 values, two independent runs of 16 reports coincide with probability
    (sum_y P[y]**2)**16 < 0.26**16 < 1e-9, so all 21 pairs differ but with chance < 3e-8."""
    ddf = dd.from_pandas(pd.DataFrame({"carrier": ["AA"] * 119}), npartitions=7)
    reports = ddf.ldp.krr("carrier", 0.1, domain=CARRIERS, seed=3)

    parts = [reports.partitions[i].compute()["carrier"].tolist() for i in range(7)]
    assert min(len(p) for p in parts) >= 16
    assert len({tuple(p[:16]) for p in parts}) == 7


# ---------------------------------------------------------------------------- aggregation

ESTIMATED = {
    "krr": ("carrier", CALLS["krr"]),
    "rappor": ("origin", CALLS["rappor"]),
    "rappor-sets": ("services", CALLS["rappor-sets"]),
}


@pytest.mark.parametrize("npartitions", [1, 20])
@pytest.mark.parametrize("kind", list(ESTIMATED))
def test_debias_equals_the_pandas_debias(
    monkeypatch: pytest.MonkeyPatch, kind: str, npartitions: int
) -> None:
    """Counts are summed in a tree (here 3 at a time: 20 -> 7 -> 3 -> 1), each combine task
    receiving only counts, never reports; the table equals the pandas table exactly."""
    column, call = ESTIMATED[kind]
    combined: list[tuple[Any, ...]] = []
    merge = _dask.merge_grouped

    def spy(*partials: Any) -> Any:
        combined.append(partials)
        return merge(*partials)

    monkeypatch.setattr(_dask, "SPLIT_EVERY", 3)
    monkeypatch.setattr(_dask, "merge_grouped", spy)
    ddf = dd.from_pandas(frame(), npartitions=npartitions)

    table = call(ddf).ldp.debias(column, level=0.9)
    expected = call(ddf.compute()).ldp.debias(column, level=0.9)

    assert_frame_equal(table.frame, expected.frame, check_exact=True)
    assert (table.n, table.column, table.level) == (expected.n, column, 0.9)
    assert table.privacy == expected.privacy
    assert table.mechanism == expected.mechanism
    # 20 partial counts -> 6 x 3 + 2 -> 3 + 3 + 1 (carried up) -> 3 -> 1; one partition: none.
    tree = [3] * 6 + [2] + [3, 3] + [3] if npartitions == 20 else []
    assert sorted(len(c) for c in combined) == sorted(tree)
    for partials in combined:
        for grouped in partials:
            assert grouped.keys == [()]  # one table, no groups
            statistic = grouped.only()
            (counts,) = statistic.parts
            assert counts.shape == (len(table.frame),)
            assert isinstance(statistic.rows, int | np.integer)


def test_a_derived_frame_keeps_the_mechanism() -> None:
    """The report column's type (in the frame's meta) carries its mechanism: a projection or a
    filter of the privatized frame is debiased without it."""
    reports = CALLS["krr"](dd.from_pandas(frame(), npartitions=3))
    mechanism = frameldp.RandomizedResponse(1.0, domain=CARRIERS)

    for derived in (reports[["carrier"]], reports[reports["fare"] > 3.0]):
        assert derived.ldp.mechanisms == {"carrier": mechanism}
        assert_frame_equal(
            derived.ldp.debias("carrier").frame,
            derived.compute().ldp.debias("carrier", mechanism).frame,
        )


@pytest.mark.parametrize("npartitions", [1, 7])
def test_decode_equals_the_pandas_decode(npartitions: int) -> None:
    """Per-cohort bit sums add up over partitions: the decoded table is the pandas one."""
    ddf = dd.from_pandas(frame(4000), npartitions=npartitions)
    call = CALLS["bloom-user"]

    table = call(ddf).ldp.decode(candidates=[*URLS, "/other"], significance=1e-3)
    expected = call(ddf.compute()).ldp.decode(candidates=[*URLS, "/other"], significance=1e-3)

    assert_frame_equal(table.frame, expected.frame, check_exact=True)
    assert table.frame["category"].tolist()  # something was detected
    assert table.decoding is not None
    assert expected.decoding is not None
    assert table.decoding.unexplained == expected.decoding.unexplained
    assert table.privacy == expected.privacy


def test_unpack_is_lazy_and_equals_pandas() -> None:
    reports = CALLS["rappor-sets"](dd.from_pandas(frame(), npartitions=3))

    bits = reports.ldp.unpack("services")

    assert isinstance(bits, dd.DataFrame)
    expected = reports.compute().ldp.unpack(
        "services", frameldp.Rappor(epsilon=2.0, domain=SERVICES, max_weight=2)
    )
    assert_frame_equal(bits.compute(), expected)
    assert_series_equal(bits.dtypes, expected.dtypes)
    with pytest.raises(frameldp.ParameterError, match="column 'carrier': only RAPPOR"):
        CALLS["krr"](dd.from_pandas(frame(), npartitions=3)).ldp.unpack("carrier")


def test_privacy_composes_the_recorded_columns() -> None:
    ddf = dd.from_pandas(frame(), npartitions=3)
    call = CALLS["privatize-all"]

    assert call(ddf).ldp.privacy == call(ddf.compute()).ldp.privacy
    assert ddf.ldp.privacy is None


def test_to_parquet_records_the_mechanisms(tmp_path: Path) -> None:
    """docs/dask.md: each partition records its mechanisms, which ``to_parquet`` writes into
    the files, so pandas finds them when it reads the directory back."""
    reports = CALLS["privatize-all"](dd.from_pandas(frame(), npartitions=3))

    reports.to_parquet(tmp_path / "reports")
    # pandas reads its report dtype back, but not the Arrow list column ("services") from its
    # own metadata without dtype_backend="pyarrow" (which frameldp refuses): read the Arrow
    # schema only (the report types are there).
    back = pq.read_table(tmp_path / "reports").to_pandas(ignore_metadata=True)

    assert back.ldp.mechanisms == reports.ldp.mechanisms
    for column in ("carrier", "origin"):
        assert_frame_equal(back.ldp.debias(column).frame, reports.ldp.debias(column).frame)


def test_pd_read_parquet_reads_rappor_reports_back(tmp_path: Path) -> None:
    reports = CALLS["rappor"](dd.from_pandas(frame(), npartitions=3))
    # pandas cannot read back an Arrow list column from its own metadata: leave "services" out.
    reports.drop(columns=["services"]).to_parquet(tmp_path / "reports")

    # pandas reads its report dtype back, but not the Arrow list column ("services") from its
    # own metadata without dtype_backend="pyarrow" (which frameldp refuses): read the Arrow
    # schema only (the report types are there).
    back = pq.read_table(tmp_path / "reports").to_pandas(ignore_metadata=True)

    assert back.ldp.debias("origin").n == 120


def test_inferred_domain_warns_and_matches_pandas() -> None:
    ddf = dd.from_pandas(frame(), npartitions=7)
    call: Call = lambda f: f.ldp.rappor("services", 2.0, domain="infer", max_weight=2, seed=1)  # noqa: E731

    with pytest.warns(frameldp.DomainInferenceWarning, match=r"'services'.*\(4 values\)"):
        out = call(ddf)
    with pytest.warns(frameldp.DomainInferenceWarning):
        expected = call(ddf.compute())
    assert_frame_equal(out.compute(), expected)


# ---------------------------------------------------------------------------- ledger


@pytest.fixture
def ledger(tmp_path: Path) -> frameldp.Ledger:
    book = frameldp.Ledger(tmp_path / "budget.sqlite")
    book.set_budget("nightly", epsilon=2.5)
    return book


def test_each_computation_is_charged_once(ledger: frameldp.Ledger) -> None:
    """Building the graph charges nothing; its computation is one release, charged once
    however many partitions it has; a keyed graph computed again (debias) is charged again
    (the ledger cannot tell that it releases nothing new, and errs on the side of spending)."""
    ddf = dd.from_pandas(frame(), npartitions=3)

    reports = ddf.ldp.krr("carrier", 1.0, domain=CARRIERS, ledger=ledger, budget="nightly", key=KEY)

    assert ledger.history("nightly") == []
    reports.compute()
    [entry] = ledger.history("nightly")
    assert entry.description == "privatize carrier"
    reports.ldp.debias("carrier")
    assert len(ledger.history("nightly")) == 2


def test_over_budget_builds_nothing(ledger: frameldp.Ledger) -> None:
    ddf = dd.from_pandas(frame(), npartitions=3)
    ddf.ldp.krr("carrier", 2.0, domain=CARRIERS, ledger=ledger, budget="nightly").compute()

    with pytest.raises(frameldp.BudgetExceededError, match="nightly"):
        ddf.ldp.krr("carrier", 1.0, domain=CARRIERS, ledger=ledger, budget="nightly")
    assert len(ledger.history("nightly")) == 1


def test_a_domain_error_at_compute_leaves_the_release_charged(ledger: frameldp.Ledger) -> None:
    """The data is read at compute time, after the computation was charged (the ledger errs on
    the side of spending: partitions before the failing one may have been written). That
    computation was the release's one run: a second is refused, and not charged."""
    reports = dd.from_pandas(frame(), npartitions=3).ldp.krr(
        "carrier", 1.0, domain=["AA", "DL"], ledger=ledger, budget="nightly"
    )
    with pytest.raises(frameldp.DomainError, match=r"column 'carrier': value 'UA' at row"):
        reports.compute()
    with pytest.raises(frameldp.ParameterError, match="ran already"):
        reports.compute()
    assert len(ledger.history("nightly")) == 1


# ---------------------------------------------------------------------------- errors

ERRORS: dict[str, tuple[Call, type[frameldp.FrameLDPError], list[str]]] = {
    "missing-column": (
        lambda f: f.ldp.krr("nope", 1.0, domain=CARRIERS),
        frameldp.ParameterError,
        ["column 'nope' not found", "carrier"],
    ),
    "epsilon": (
        lambda f: f.ldp.rappor("carrier", -1.0, domain=CARRIERS),
        frameldp.ParameterError,
        ["column 'carrier'", "epsilon must be > 0", "-1.0"],
    ),
    "not-a-mechanism": (
        lambda f: f.ldp.privatize({"carrier": "krr"}),
        frameldp.ParameterError,
        ["column 'carrier'", "got str"],
    ),
    "key-and-seed": (
        lambda f: f.ldp.krr("carrier", 1.0, domain=CARRIERS, key=KEY, seed=1),
        frameldp.ParameterError,
        ["key=", "seed=", "got both"],
    ),
    "memo-key-without-permanent-response": (
        lambda f: f.ldp.privatize(
            {"carrier": frameldp.RandomizedResponse(1.0, domain=CARRIERS)},
            user="user_id",
            memo_key=bytes(32),
        ),
        frameldp.ParameterError,
        ["memo_key=", "permanent response"],
    ),
    "bloom-of-numbers": (
        lambda f: f.ldp.rappor("fare", encoding="bloom", **BLOOM),
        frameldp.DomainError,
        ["column 'fare'", "hashes strings", "double"],
    ),
    "ledger-without-budget": (
        lambda f: f.ldp.krr("carrier", 1.0, domain=CARRIERS, ledger="x.sqlite"),
        frameldp.ParameterError,
        ["ledger= and budget= go together"],
    ),
    "debias-level": (
        lambda f: CALLS["krr"](f).ldp.debias("carrier", level=1.5),
        frameldp.ParameterError,
        ["column 'carrier'", "level must be in (0, 1)", "1.5"],
    ),
    "debias-krr-as-rappor": (
        lambda f: CALLS["krr"](f).ldp.debias("carrier", frameldp.Rappor(1.0, domain=CARRIERS)),
        frameldp.ParameterError,
        ["column 'carrier'", "holds reports of randomized_response"],
    ),
    "debias-plain-krr-as-rappor": (
        lambda f: untyped(CALLS["krr"](f), "carrier").ldp.debias(
            "carrier", frameldp.Rappor(1.0, domain=CARRIERS)
        ),
        frameldp.DomainError,
        ["column 'carrier'", "binary"],
    ),
    "decode-without-bloom": (
        lambda f: f.ldp.decode(candidates=list(URLS)),
        frameldp.MechanismNotFoundError,
        ["decode", "none"],
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_raises_what_pandas_raises(case: str, ledger: frameldp.Ledger) -> None:
    """Raised when the call is made (nothing built, nothing charged, input unchanged), of the
    class and with the message pandas gives."""
    call, error, fragments = ERRORS[case]
    data = frame()
    before = data.copy(deep=True)
    ddf = dd.from_pandas(data, npartitions=3)
    name = ddf._name

    with pytest.raises(frameldp.FrameLDPError) as raised:
        call(ddf)
    with pytest.raises(frameldp.FrameLDPError) as by_pandas:
        call(ddf.compute())

    assert type(raised.value) is error
    assert str(raised.value) == str(by_pandas.value)
    for fragment in fragments:
        assert fragment in str(raised.value)
    assert ddf._name == name
    assert_frame_equal(data, before)
    assert ledger.history("nightly") == []


@pytest.mark.parametrize(
    ("column", "value", "call", "message"),
    [
        ("carrier", "ZZ", CALLS["krr"], r"column 'carrier': value 'ZZ' at row 101 "),
        ("services", ["wifi", "spa"], CALLS["rappor-sets"], r"value 'spa' at row 101 "),
        ("url", None, CALLS["bloom"], r"column 'url': null value at row 101 "),
    ],
    ids=["krr-outside-domain", "set-item-outside-domain", "bloom-null"],
)
def test_data_errors_surface_at_compute_naming_the_global_row(
    column: str, value: Any, call: Call, message: str
) -> None:
    """Row 101 is in the 6th of 7 partitions: the error names the frame row, as pandas does."""
    data = frame()
    data[column] = data[column].astype(object)
    data.at[101, column] = value
    if column == "services":
        data[column] = data[column].astype(LIST_OF_STRINGS)
    reports = call(dd.from_pandas(data, npartitions=7))

    with pytest.raises(frameldp.DomainError, match=message):
        reports.compute()
    with pytest.raises(frameldp.DomainError, match=message):
        call(data)


def test_a_domain_error_does_not_undercount_the_frame() -> None:
    """'UA' is in 40 of the 120 rows, 13 or 14 per partition: the message must not claim a
    partition's count for the whole frame (it may say 40, or name the partition)."""
    reports = dd.from_pandas(frame(), npartitions=3).ldp.krr("carrier", 1.0, domain=["AA", "DL"])

    with pytest.raises(frameldp.DomainError) as raised:
        reports.compute()

    message = str(raised.value)
    assert "such values in all" not in message or "(40 such values in all)" in message


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("shuffle", lambda f: f.ldp.shuffle(seed=1)),
        (
            "balcer_cheu",
            lambda f: f.ldp.balcer_cheu("origin", 2.0, 1e-2, domain=ORIGINS, seed=1),
        ),
    ],
)
def test_one_machine_methods_raise_and_point_to_pandas(method: str, call: Call) -> None:
    reports = CALLS["krr"](dd.from_pandas(frame(1000), npartitions=3))

    with pytest.raises(frameldp.ParameterError, match="one machine") as raised:
        call(reports)
    if method == "balcer_cheu":
        assert str(raised.value).startswith("column 'origin': ")

    assert f"ddf.compute().ldp.{method}(" in str(raised.value)
    # As suggested: the computed partitions carry the record (pandas keeps equal attrs in
    # concat), so the pandas accessor takes over.
    assert call(reports.compute()) is not None


# ---------------------------------------------------------------------------- distributed


def test_cluster_gives_the_pandas_reports_and_tables(client: Any) -> None:
    """Two worker processes: reports, debiased table and decoded table equal pandas'."""
    ddf = dd.from_pandas(frame(600), npartitions=7)
    with dask.config.set(scheduler=client), distributed.get_task_stream(client) as tasks:
        reports = CALLS["privatize-all"](ddf)
        computed = reports.compute()
        table = reports.ldp.debias("origin")
        decoded = reports.ldp.decode(candidates=list(URLS), significance=1e-3)

    workers = {task["worker"] for task in tasks.data}
    assert len(workers) == 2, workers  # the work did run on both worker processes

    expected = CALLS["privatize-all"](ddf.compute())
    assert_frame_equal(computed, expected, check_exact=True)
    assert_frame_equal(table.frame, expected.ldp.debias("origin").frame)
    assert_frame_equal(
        decoded.frame, expected.ldp.decode(candidates=list(URLS), significance=1e-3).frame
    )


def test_cluster_computes_a_fresh_key_release_once(client: Any) -> None:
    """On a cluster the tasks run in worker processes: they ask the scheduler whether the
    release (and each partition) ran, so a second computation is refused whichever worker
    runs it, unless the scheduler still holds the first one's results and hands them out
    again (the same reports: nothing new is released)."""
    reports = dd.from_pandas(frame(), npartitions=4).ldp.krr("carrier", 1.0, domain=CARRIERS)

    with dask.config.set(scheduler=client):
        first = reports.compute()
        for _ in range(3):
            again = _computed_or_refused(reports)
            if again is not None:
                assert_frame_equal(again, first, check_exact=True)


def _computed_or_refused(reports: dd.DataFrame) -> pd.DataFrame | None:
    """``reports`` computed, or None if frameldp refused to run the release again."""
    try:
        return reports.compute()
    except frameldp.ParameterError as refused:
        if "ran already" not in str(refused):
            raise
        return None


def test_cluster_keeps_the_error_type(client: Any) -> None:
    """A worker's DomainError reaches the caller as a DomainError naming the frame row."""
    data = frame()
    data.loc[101, "carrier"] = "ZZ"
    reports = CALLS["krr"](dd.from_pandas(data, npartitions=7))

    with (
        dask.config.set(scheduler=client),
        pytest.raises(frameldp.DomainError, match=r"'ZZ' at row 101 "),
    ):
        reports.compute()


# ---------------------------------------------------------------------------- registration


def test_registered_when_dask_is_installed() -> None:
    assert "dask" in frameldp.frames.register_accessors()
    assert isinstance(dd.from_pandas(frame(), npartitions=1).ldp, _dask.DaskFrameAccessor)


def test_frameldp_imports_without_dask() -> None:
    code = textwrap.dedent(
        """
        import sys

        class Blocker:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in ("dask", "distributed"):
                    raise ImportError(name + " is blocked")
                return None

        sys.meta_path.insert(0, Blocker())
        import pandas as pd
        import frameldp

        assert "dask" not in frameldp.frames.register_accessors()
        assert not [m for m in sys.modules if m.startswith("dask")]
        reports = pd.DataFrame({"c": ["a", "b"]}).ldp.krr("c", 1.0, domain=["a", "b"], seed=1)
        print(reports.ldp.debias("c").n)
        """
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"


def test_a_computation_in_other_processes_is_charged_once(tmp_path: Path) -> None:
    """The graph's first task charges the ledger in whichever process runs it: a ledger file
    travels by its path (a ``":memory:"`` ledger cannot leave its process and says so). A
    fresh-key graph is refused in a process pool, which cannot tell whether it ran before."""
    ledger = frameldp.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("b", epsilon=5.0)
    ddf = dd.from_pandas(frame(), npartitions=3)
    out = ddf.ldp.krr("carrier", 1.0, domain=CARRIERS, ledger=ledger, budget="b", key=KEY)

    computed = out.compute(scheduler="processes", num_workers=2)

    assert len(computed) == len(frame())
    assert len(ledger.history("b")) == 1
    fresh = ddf.ldp.krr("carrier", 1.0, domain=CARRIERS, ledger=ledger, budget="b")
    with pytest.raises(frameldp.ParameterError, match="process pool"):
        fresh.compute(scheduler="processes", num_workers=2)
    assert len(ledger.history("b")) == 1
    with pytest.raises(frameldp.ParameterError, match="cannot be sent to another process"):
        pickle.dumps(frameldp.Ledger(":memory:"))
