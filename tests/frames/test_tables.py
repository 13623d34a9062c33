"""Tables by public groups, joint tables of two privatized columns, and differences, on every
frame library: the same estimates as plain pandas, unbiased with honest standard errors, the
caller's frame type back, the input untouched, and report columns refused as group keys."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import frameldp
from _stats import P_FAIL, z_bound
from frameldp import ldp
from frameldp.core.joint import joint_variance
from frameldp.errors import FrameLDPError
from frameldp.results.table import TABLE_COLUMNS

from .conftest import CARRIERS, ORIGINS, Backend, small_data

GROUPS = 200  # replications: one group each
ROWS = 500  # rows per group
# Per group: carrier AA/DL/UA in 250/150/100; origin depends on the carrier.
JOINT = np.array([[150, 100, 0, 0, 0], [30, 30, 40, 50, 0], [20, 0, 0, 30, 50]])
CARRIER = frameldp.RandomizedResponse(2.0, domain=list(CARRIERS))
ORIGIN = frameldp.OptimizedUnaryEncoding(2.0, domain=list(ORIGINS))


def _replicated() -> dict[str, list[Any]]:
    """``GROUPS`` groups of ``ROWS`` rows, every group with the joint counts ``JOINT``."""
    cells = np.repeat(np.arange(JOINT.size), JOINT.ravel())
    carriers = [CARRIERS[c // len(ORIGINS)] for c in cells]
    origins = [ORIGINS[c % len(ORIGINS)] for c in cells]
    return {
        "rep": [g for g in range(GROUPS) for _ in range(ROWS)],
        "carrier": carriers * GROUPS,
        "origin": origins * GROUPS,
    }


@pytest.fixture(scope="module")
def replicated() -> dict[str, list[Any]]:
    return _replicated()


def _check_replicates(z: np.ndarray, cells: int) -> None:
    """``z``: (groups, cells) standardized errors. Per cell (Bonferroni over ``2 cells``): the
    mean is within ``z(p) / sqrt(groups)`` of 0 and the sum of squares within the two-sided
    chi-square(groups) quantiles."""
    p_fail = P_FAIL / (2 * cells)
    assert np.all(np.abs(z.mean(axis=0)) < z_bound(p_fail) / math.sqrt(len(z))), z.mean(axis=0)
    squares = (z**2).sum(axis=0)
    low, high = stats.chi2.ppf(p_fail / 2, len(z)), stats.chi2.isf(p_fail / 2, len(z))
    assert np.all((squares > low) & (squares < high)), squares / len(z)


def test_grouped_and_joint_tables_are_unbiased_with_honest_errors(
    backend: Backend, replicated: dict[str, list[Any]]
) -> None:
    """200 groups of 500 rows with the same true counts are 200 independent replications:
    per bucket (Bonferroni over the buckets), the standardized errors against the *stated*
    standard errors have mean 0 and unit variance. Detects, with probability 0.99, a bias of
    0.4 standard errors, or stated standard errors off by a factor 1.27 (variance 1.6).
    """
    native = backend.make(replicated)
    reports = ldp(native).privatize({"carrier": CARRIER, "origin": ORIGIN}, seed=16)

    flat = ldp(reports).debias("carrier", by="rep")
    assert isinstance(flat.frame, backend.table_type())
    assert [g.key for g in flat.groups] == [(g,) for g in range(GROUPS)]
    truth = np.array([250, 150, 100, 0])
    z = np.array([(g.estimate.counts - truth) / g.estimate.std_errors for g in flat.groups])
    _check_replicates(z, len(CARRIERS))

    joint = ldp(reports).debias(["carrier", "origin"], by="rep")
    truth = np.vstack([JOINT, np.zeros((1, len(ORIGINS)))]).ravel()  # WN never occurs
    # Cells whose true count is 0 in both margins have a near-zero stated error: use the
    # exact variance there (the plug-in is clipped to what counts can be).
    exact = joint_variance(
        truth.reshape(4, 5),
        truth.reshape(4, 5).sum(1),
        truth.reshape(4, 5).sum(0),
        ROWS,
        CARRIER,
        ORIGIN,
    ).ravel()
    z = np.array([(g.estimate.counts - truth) / np.sqrt(exact) for g in joint.groups])
    _check_replicates(z, truth.size)
    # Against the stated (plug-in) errors, where the truth is not 0 (there, clipping the
    # plug-in at 0 makes the stated error conservative).
    present = truth > 0
    z = np.array(
        [
            (g.estimate.counts - truth)[present] / g.estimate.std_errors[present]
            for g in joint.groups
        ]
    )
    _check_replicates(z, int(present.sum()))


def _reference(data: dict[str, list[Any]], call: Any, *args: Any, **kwargs: Any) -> Any:
    frame = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in data.items()})
    return ldp(call(frame)).debias(*args, **kwargs)


def _months(n: int) -> list[Any]:
    return [(None if i % 7 == 3 else 1 + i % 3) for i in range(n)]


def test_grouped_tables_equal_pandas_with_a_null_group(backend: Backend) -> None:
    data = {**small_data(120), "month": _months(120)}
    native = backend.make(data)
    before = backend.snapshot(native)

    def call(frame: Any) -> Any:
        return ldp(frame).privatize({"carrier": CARRIER}, seed=7)

    table = ldp(call(native)).debias("carrier", by="month", level=0.9)
    reference = _reference(data, call, "carrier", by="month", level=0.9)
    backend.assert_unchanged(before, native)
    assert isinstance(table.frame, backend.table_type())
    assert list(table.to_pandas().columns) == ["month", *TABLE_COLUMNS]
    assert [g.key for g in table.groups] == [(1,), (2,), (3,), (None,)]  # null group last
    assert [g.estimate.n for g in table.groups] == [
        sum(1 for m in data["month"] if m == key) for key in (1, 2, 3, None)
    ]
    for mine, theirs in zip(table.groups, reference.groups, strict=True):
        assert mine.key == theirs.key
        np.testing.assert_allclose(mine.estimate.counts, theirs.estimate.counts)
        np.testing.assert_allclose(mine.estimate.variances, theirs.estimate.variances)
    # all groups together is the flat table; each group is its own flat table
    flat = ldp(call(native)).debias("carrier", level=0.9)
    np.testing.assert_allclose(table.estimate.counts, flat.estimate.counts)
    assert table.n == flat.n == 120
    one = table.group(None)
    assert one.n == table.groups[-1].estimate.n
    assert not one.by
    frame = table.to_pandas()
    shares = frame["count"] / frame.groupby("month", dropna=False)["count"].transform("sum")
    np.testing.assert_allclose(frame["frequency"], shares, rtol=1e-12)


def test_grouped_by_two_columns_and_joint_tables_equal_pandas(backend: Backend) -> None:
    data = {**small_data(150), "month": _months(150), "half": [i % 2 for i in range(150)]}

    def call(frame: Any) -> Any:
        return ldp(frame).privatize({"carrier": CARRIER, "origin": ORIGIN}, seed=8)

    reports = call(backend.make(data))
    for args, kwargs in (
        (("carrier",), {"by": ["month", "half"]}),
        ((["carrier", "origin"],), {}),
        ((["origin", "carrier"],), {"by": "half"}),
    ):
        table = ldp(reports).debias(*args, **kwargs)
        reference = _reference(data, call, *args, **kwargs)
        pd.testing.assert_frame_equal(table.to_pandas(), reference.to_pandas())
        assert table.privacy == reference.privacy
    joint = ldp(reports).debias(["carrier", "origin"])
    assert list(joint.to_pandas().columns[:3]) == ["carrier", "origin", "count"]
    assert joint.privacy.epsilon == pytest.approx(CARRIER.privacy.epsilon + ORIGIN.privacy.epsilon)
    assert joint.privacy.seeded
    assert len(joint.labels) == len(CARRIERS) * len(ORIGINS)


def test_report_columns_are_refused_as_group_keys(backend: Backend) -> None:
    data = {**small_data(40), "month": _months(40)}
    reports = ldp(backend.make(data)).privatize({"carrier": CARRIER, "origin": ORIGIN}, seed=9)
    for by in ("carrier", "origin", ["month", "origin"]):
        with pytest.raises(FrameLDPError, match="public columns"):
            ldp(reports).debias("carrier", by=by)
    with pytest.raises(FrameLDPError, match="'nowhere'"):
        ldp(reports).debias("carrier", by="nowhere")
    with pytest.raises(FrameLDPError, match="named twice"):
        ldp(reports).debias("carrier", by=["month", "month"])
    with pytest.raises(FrameLDPError, match="share noise"):
        ldp(reports).debias(["carrier", "carrier"])
    with pytest.raises(FrameLDPError, match="'fare'"):
        ldp(reports).debias(["carrier", "fare"])


def test_a_joint_table_refuses_two_columns_that_share_noise(backend: Backend) -> None:
    """A report column twice, or with its own copy (a copy keeps the report type), shares its
    noise: the joint estimator, which multiplies the two reports' independent indicators, is
    then wrong by many standard errors (an off-diagonal sum of -2.7 million against a truth of
    0, max |z| 45, for 100,000 k-RR reports at epsilon 1 over 8 values). Both are refused, on
    their names and in either order; two columns privatized by the same mechanism are not."""
    data = {**small_data(40), "again": list(small_data(40)["carrier"])}
    native = backend.make(data)
    reports = ldp(native).privatize({"carrier": CARRIER, "again": CARRIER}, seed=9)
    copied = backend.with_copy(reports, "carrier", "copy")
    snapshot = backend.snapshot(copied)
    for pair in (["carrier", "copy"], ["copy", "carrier"], ["copy", "copy"]):
        with pytest.raises(FrameLDPError, match="share noise") as refused:
            ldp(copied).debias(pair)
        assert f"'{pair[0]}' and '{pair[1]}'" in str(refused.value)
        assert "assumes independent reports" in str(refused.value)
    with pytest.raises(FrameLDPError, match="reports of column 'carrier'"):
        ldp(copied).debias(["copy", "carrier"], by="fare")  # grouped tables too
    backend.assert_unchanged(snapshot, copied)
    table = ldp(copied).debias(["carrier", "again"])  # the same mechanism, independent noise
    assert len(table.labels) == len(CARRIERS) ** 2


def test_empty_groups_are_not_listed_and_an_empty_frame_is_refused() -> None:
    months = pd.Series(["jan", "feb"] * 20, dtype=pd.CategoricalDtype(["jan", "feb", "mar"]))
    frame = pd.DataFrame({"carrier": ["AA", "DL"] * 20, "month": months})
    reports = ldp(frame).privatize({"carrier": CARRIER}, seed=1)
    table = ldp(reports).debias("carrier", by="month")
    assert [g.key for g in table.groups] == [("feb",), ("jan",)]  # "mar" has no rows
    with pytest.raises(FrameLDPError, match="no reports"):
        ldp(reports.iloc[:0]).debias("carrier", by="month")


def test_a_joint_table_needs_frequency_oracle_reports() -> None:
    bloom = ldp(pd.DataFrame({"a": ["x", "y"] * 10, "b": ["u", "v"] * 10})).rappor(
        "b", 2.0, encoding="bloom", epsilon_infinity=4.0, num_bits=16, num_hashes=2, seed=3
    )
    bloom = ldp(bloom).krr("a", 1.0, domain=["x", "y"], seed=3)
    with pytest.raises(FrameLDPError, match="candidate strings"):
        ldp(bloom).debias(["a", "b"])


def test_differences_between_groups_have_honest_errors(replicated: dict[str, list[Any]]) -> None:
    """100 comparisons of disjoint pairs of the 200 identical groups: the Wald statistics are
    standard normal per bucket (mean and chi-square checks, Bonferroni over the buckets);
    detects stated errors off by a factor 1.3."""
    frame = pd.DataFrame(replicated)
    table = ldp(ldp(frame).privatize({"carrier": CARRIER}, seed=17)).debias("carrier", by="rep")
    comparisons = [table.compare(g, g + 1) for g in range(0, GROUPS, 2)]
    z = np.array([c.difference.z[:3] for c in comparisons])  # WN is never reported as truth
    p_fail = P_FAIL / 6
    assert np.all(np.abs(z.mean(axis=0)) < z_bound(p_fail) / math.sqrt(len(z)))
    squares = (z**2).sum(axis=0)
    assert np.all(squares < stats.chi2.isf(p_fail / 2, len(z)))
    assert np.all(squares > stats.chi2.ppf(p_fail / 2, len(z)))
    first = comparisons[0]
    expected = table.group(0).estimate.frequencies - table.group(1).estimate.frequencies
    np.testing.assert_allclose(first.difference.difference, expected)
    assert list(first.frame.columns[:2]) == ["category", "first"]
    assert first.privacy == table.privacy  # two groups of one table: each person once


def test_comparing_two_tables_composes_their_guarantees_and_finds_a_change() -> None:
    january = pd.DataFrame({"carrier": ["AA"] * 3000 + ["DL"] * 1000})
    february = pd.DataFrame({"carrier": ["AA"] * 2000 + ["DL"] * 2000})
    first = ldp(ldp(january).privatize({"carrier": CARRIER}, seed=1)).debias("carrier")
    second = ldp(ldp(february).privatize({"carrier": CARRIER}, seed=2)).debias("carrier")
    comparison = first.compare(second)
    assert comparison.privacy.epsilon == pytest.approx(2 * CARRIER.privacy.epsilon)
    changed = comparison.significant(0.99)
    assert set(changed["category"]) == {"AA", "DL"}  # a 25-point shift, 15 standard errors
    counts = first.compare(second, on="count")
    np.testing.assert_allclose(
        counts.difference.difference, first.estimate.counts - second.estimate.counts
    )
    with pytest.raises(FrameLDPError, match="itself"):
        first.compare(first)
    other = ldp(pd.DataFrame({"carrier": ["AA", "DL"]})).krr(
        "carrier", 1.0, domain=["AA", "DL"], seed=1
    )
    with pytest.raises(FrameLDPError, match="different buckets"):
        first.compare(ldp(other).debias("carrier"))


def test_review_findings_on_keys_names_and_refusals() -> None:
    """0.0 and -0.0 are one group (no rows lost); NaN keys are one findable group; integer
    column names and array-valued ``by`` work; a consistent table and clashing label names are
    refused by compare."""
    rr = frameldp.RandomizedResponse(1.0, domain=["x", "y"])
    signed = pd.DataFrame({"a": ["x"] * 10 + ["y"] * 10, "g": [0.0] * 10 + [-0.0] * 10})
    table = ldp(ldp(signed).privatize({"a": rr}, seed=1)).debias("a", by="g")
    assert table.n == 20
    assert [g.estimate.n for g in table.groups] == [20]
    nans = pd.DataFrame({"a": ["x", "y"] * 10, "g": pd.array([1.0, float("nan")] * 10)})
    grouped = ldp(ldp(nans).privatize({"a": rr}, seed=1)).debias("a", by="g")
    assert sum(g.estimate.n for g in grouped.groups) == 20
    numbered = pd.DataFrame({0: ["x", "y"] * 10, 1: ["x", "x", "y", "y"] * 5, 2: [1, 2] * 10})
    reports = ldp(numbered).privatize({0: rr, 1: rr}, seed=1)
    assert list(ldp(reports).debias(0, by=2).frame.columns[:2]) == [2, "category"]
    assert list(ldp(reports).debias([0, 1]).frame.columns[:2]) == [0, 1]
    keyed = ldp(pd.DataFrame({"a": ["x", "y"] * 10, "g": [1, 2] * 10})).privatize({"a": rr}, seed=1)
    assert ldp(keyed).debias("a", by=np.array(["g"])).n == 20
    with pytest.raises(FrameLDPError, match="unbiased"):
        ldp(keyed).debias("a", by="g").consistent().compare(1, 2)
    clashing = pd.DataFrame({"z": ["x", "y"] * 10, "p_value": ["x", "x", "y", "y"] * 5})
    joint = ldp(ldp(clashing).privatize({"z": rr, "p_value": rr}, seed=1)).debias(["z", "p_value"])
    with pytest.raises(FrameLDPError, match="clashes"):
        joint.compare(_other(joint))


def _other(table: Any) -> Any:
    """A second table of the same buckets (another night)."""
    from dataclasses import replace

    return replace(table)


def test_table_groups_read_like_the_tuple_they_were() -> None:
    """(Newcomer review) A table's groups are built when asked for, and still compare,
    concatenate, index and find like a tuple of TableGroup; group(key) finds its group by a
    dictionary, not a scan."""
    frame = pd.DataFrame({"x": np.arange(3000) % 4, "g": np.arange(3000) % 5})
    reports = frame.ldp.krr("x", 1.0, domain=[0, 1, 2, 3], seed=1)
    groups = reports.ldp.debias("x", by="g").groups
    assert len(groups) == 5
    assert groups == tuple(groups)
    assert groups[0] is groups[0]
    assert groups[0] in groups
    assert groups.index(groups[2]) == 2
    assert groups[-1].key == (4,)
    assert groups[1:3] == (groups[1], groups[2])
    assert groups + (groups[0],) == (*groups, groups[0])  # noqa: RUF005  # concatenation
    assert (groups[0],) + groups == (groups[0], *groups)  # noqa: RUF005
    assert "5 groups" in repr(groups)
    with pytest.raises(IndexError):
        groups[5]
    assert groups.find((3,)) is groups[3]
    assert groups.find((7,)) is None


def test_attack_review_grouped_tables_refuse_other_reports_and_merge_collapsed_keys(
    tmp_path: Any,
) -> None:
    """(Attack review) A table by groups checks bit reports' padding as the flat one does;
    key values that are one Python value (nanoseconds of a time64[ns]) are one group whatever
    the batches; keys of types that do not compare in Arrow sort in Python; a CSV file's
    batches hold at most --chunk-rows rows."""
    import pyarrow as pa

    from frameldp.cli._inputs import batches
    from frameldp.frames.grouping import sorted_order

    dom8 = list("abcdefgh")
    frame = pd.DataFrame({"x": [dom8[i % 8] for i in range(400)], "g": [i % 2 for i in range(400)]})
    reports = frame.ldp.privatize({"x": frameldp.OptimizedUnaryEncoding(1.0, domain=dom8)}, seed=1)
    plain = pa.Table.from_pandas(reports, preserve_index=False)
    plain = plain.cast(pa.schema([("x", pa.binary(1)), ("g", pa.int64())]))
    wrong = frameldp.OptimizedUnaryEncoding(1.0, domain=dom8[:5])
    for by in (None, "g"):
        with pytest.raises(FrameLDPError, match="bits set beyond bit 5"):
            frameldp.ldp(plain).debias("x", wrong, by=by)

    times = pa.array([1, 2] * 100, pa.time64("ns"))  # 1 ns and 2 ns: one datetime.time
    krr = frameldp.RandomizedResponse(1.0, domain=["a", "b"])
    table = pa.table({"x": ["a", "b"] * 100, "t": times})
    released = frameldp.ldp(table).privatize({"x": krr}, seed=1)
    whole = frameldp.ldp(released).debias("x", by="t")
    assert [group.estimate.n for group in whole.groups] == [200]
    reader = pa.RecordBatchReader.from_batches(
        released.schema, released.to_batches(max_chunksize=7)
    )
    batched = frameldp.ldp(reader).debias("x", by="t")
    np.testing.assert_array_equal(
        batched.groups[0].estimate.counts, whole.groups[0].estimate.counts
    )

    assert list(sorted_order([(2**63 + 1,), (0,), (2**63,)], (pa.int64(),))) == [1, 2, 0]

    path = tmp_path / "narrow.csv"
    path.write_text("x\n" + "a\n" * 3000)
    sizes = [batch.num_rows for batch in batches(path, ["x"], chunk_rows=800)]
    assert sizes == [800, 800, 800, 600]
