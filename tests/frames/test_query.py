"""debias as one query (frames/query.py) over the split mechanism protocol: a randomizer and
an estimator whose additive statistic has integer or float parts, finished into an estimate
whose type picks the result (frameldp.results.result_of)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import frameldp
from frameldp.core.estimation import FrequencyEstimate
from frameldp.core.mechanisms import Capability, Statistic, mechanism_class, mechanism_names
from frameldp.core.randomness import RandomSource
from frameldp.errors import ParameterError
from frameldp.frames.methods import engine_for
from frameldp.frames.query import flat_query
from frameldp.results import (
    FrequencyTable,
    ResultContext,
    register_result,
    result_of,
    unregister_result,
)
from frameldp.results.keys import GroupKey


def test_float_parts_add_and_repeat_as_integer_parts_do():
    a = Statistic((np.array([1.5, -2.0]), np.array([3], dtype=np.int64)), rows=2)
    b = Statistic((np.array([0.25, 4.0]), np.array([1], dtype=np.int64)), rows=1)
    total = a + b
    np.testing.assert_array_equal(total.parts[0], [1.75, 2.0])
    np.testing.assert_array_equal(total.parts[1], [4])
    assert total.rows == 3
    tripled = b.repeated(3)
    np.testing.assert_array_equal(tripled.parts[0], [0.75, 12.0])
    assert tripled.rows == 3


def test_parts_of_another_kind_are_another_mechanism():
    counts = Statistic((np.array([1, 2], dtype=np.int64),), rows=3)
    sums = Statistic((np.array([1.0, 2.0]),), rows=3)
    with pytest.raises(ParameterError, match="different mechanisms"):
        counts + sums


ORACLES = [
    name
    for name in mechanism_names()
    if Capability.FREQUENCY_ORACLE in mechanism_class(name).capabilities
]


@pytest.mark.parametrize("name", ORACLES)
def test_every_oracle_finishes_its_statistic_into_its_debiased_counts(name):
    mechanism = mechanism_class(name)(2.0, domain=["a", "b", "c"])
    values = pa.array(["a", "b", "c", "a"] * 50)
    reports = mechanism.privatize_column(values, column="x", source=RandomSource.from_seed(7))
    statistic = mechanism.statistic(reports, column="x")
    finished = mechanism.finish(statistic)
    debiased = mechanism.debias(statistic)
    assert isinstance(finished, FrequencyEstimate)
    np.testing.assert_array_equal(finished.counts, debiased.counts)
    np.testing.assert_array_equal(finished.variances, debiased.variances)


# -- a new estimate type: the engine and the query need nothing new ---------------------------


@dataclass(frozen=True)
class MeanOfReports:
    """The mean of numeric report values with its standard error (an estimate type of this
    test: the protocol's extension point for issue 39's means)."""

    n: int
    mean: float
    std_error: float


GIVEN = frameldp.PrivacyGuarantee(1.0, "a release's recorded guarantee")


@dataclass(frozen=True)
class MeanResult:
    total: MeanOfReports
    groups: tuple[tuple[GroupKey, MeanOfReports], ...]
    column: Any


class Averaging:
    """An estimator whose statistic has float parts: the sum and the sum of squares of a
    float report column. No randomizer half: these reports are the values themselves."""

    def report_columns(self, column: str) -> dict[str, pa.DataType]:
        return {column: pa.float64()}

    def statistic(self, reports: Mapping[str, pa.Array], *, column: str) -> Statistic:
        values = np.asarray(reports[column].to_numpy(zero_copy_only=False), dtype=np.float64)
        parts = (np.array([values.sum()]), np.array([np.square(values).sum()]))
        return Statistic(parts, values.size)

    def finish(self, statistic: Statistic) -> MeanOfReports:
        n = statistic.rows
        mean = float(statistic.parts[0][0]) / n
        variance = float(statistic.parts[1][0]) / n - mean**2
        return MeanOfReports(n, mean, float(np.sqrt(max(variance, 0.0) / n)))


@pytest.fixture
def mean_results():
    @register_result(MeanOfReports)
    def build(
        total: MeanOfReports,
        keys: Sequence[GroupKey],
        estimates: Sequence[Any],
        context: ResultContext,
    ) -> MeanResult:
        assert context.privacy is GIVEN  # what the query was given
        return MeanResult(total, tuple(zip(keys, estimates, strict=True)), context.column)

    yield
    unregister_result(MeanOfReports)


def _values() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {"minutes": rng.normal(30.0, 8.0, 5000), "region": rng.choice(["n", "s", "w"], 5000)}
    )


@pytest.mark.parametrize("library", ["pandas", "polars", "pyarrow", "duckdb"])
def test_a_new_estimate_type_runs_by_groups_on_every_engine(library, mean_results):
    frame = _values()
    native: Any = {
        "pandas": lambda: frame,
        "polars": lambda: pytest.importorskip("polars").from_pandas(frame),
        "pyarrow": lambda: pa.Table.from_pandas(frame),
        "duckdb": lambda: pytest.importorskip("duckdb").from_df(frame),
    }[library]()
    query = flat_query("minutes", Averaging(), ["minutes"], ("region",))  # type: ignore[arg-type]
    result = query.run(engine_for(native), level=0.95, privacy=GIVEN)
    assert isinstance(result, MeanResult)
    expected = frame.groupby("region")["minutes"].mean()
    assert [key for key, _ in result.groups] == [("n",), ("s",), ("w",)]
    for (key,), estimate in result.groups:
        assert estimate.mean == pytest.approx(expected[key], rel=1e-12)
        assert estimate.n == int((frame["region"] == key).sum())
    assert result.total.mean == pytest.approx(frame["minutes"].mean(), rel=1e-12)
    assert result.total.n == len(frame)


def test_an_estimate_of_no_registered_type_is_refused():
    context = ResultContext(None, "x", 0.95, "pandas", None)
    with pytest.raises(ParameterError, match="no result type is registered for a MeanOfReports"):
        result_of(MeanOfReports(1, 0.0, 0.0), (), (), context)


def test_frequency_estimates_still_make_frequency_tables():
    reports = frameldp.ldp(pd.DataFrame({"x": list("abca") * 100})).krr(
        "x", epsilon=2.0, domain=list("abc"), seed=1
    )
    table = reports.ldp.debias("x")
    assert isinstance(table, FrequencyTable)
    assert table.n == 400


def test_the_nearest_registered_estimate_class_picks_the_result():
    """A subclass of FrequencyEstimate with a result type of its own gets it; one without gets
    its base's (a FrequencyTable)."""

    class Marked(FrequencyEstimate):
        pass

    mechanism = frameldp.RandomizedResponse(2.0, domain=["a", "b"])
    estimate = Marked(np.array([1.0, 2.0]), np.array([0.5, 0.5]), 3)
    context = ResultContext(mechanism, "x", 0.95, "pandas", mechanism.privacy)
    assert isinstance(result_of(estimate, (), (), context), FrequencyTable)
    register_result(Marked)(lambda total, keys, estimates, context: "marked")
    try:
        assert result_of(estimate, (), (), context) == "marked"
    finally:
        unregister_result(Marked)


def test_validation_refuses_a_mechanism_that_is_not_categorical(monkeypatch):
    """Validation declares categorical values and reports; another kind of estimator is a
    ParameterError naming the column (not an AttributeError on its missing domain)."""
    from frameldp.core.mechanisms import registry
    from frameldp.schemas import input_schema

    class NumericToy:
        title = "a numeric toy"
        capabilities = frozenset()

        def report_columns(self, column: str) -> dict[str, pa.DataType]:
            return {column: pa.float64()}

        def to_spec(self) -> dict[str, Any]:
            return {"mechanism": "numeric_toy"}

    monkeypatch.setitem(registry._REGISTRY, "numeric_toy", NumericToy)
    with pytest.raises(ParameterError, match=r"column 'minutes'.*not a numeric toy"):
        input_schema({"minutes": NumericToy()})
