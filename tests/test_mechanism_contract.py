"""The contract every registered mechanism keeps, checked for each one through the protocol.

Parametrized over :func:`frameldp.core.mechanisms.mechanism_names`: a new mechanism is held to
all of it once it has an entry in ``EXAMPLES`` (``test_every_registered_mechanism_has_an_example``
fails until it does). Each check goes through the protocol only (``report_columns``,
``privatize_column``, ``statistic``, ``debias``, ``to_spec``, ``capabilities``), never through a
mechanism's class.

Probabilistic claims: two draws of ``ROWS`` reports under different keys (or stream labels) are
compared whole. For every example here, two independent draws of one row's report agree with
probability at most 0.9 (k-RR at epsilon 1 over 4 labels: 0.32; RAPPOR over 4 bits: 0.08; OUE
over 4 bits below 0.4; local hashing, a seed of 9 and one of 3 hash values, below 0.2; subset
selection, 2 of 4 values, below 0.6; Hadamard response, one of 8 columns, below 0.35; projective
geometry response, one of 4 points at q = 3 (k-RR over 4 values), 0.32; block Hadamard response,
one of 8 outputs in blocks of 2, below 0.3; the Bloom
and Balcer-Cheu reports less), so two independent draws agree on all ``ROWS`` = 800 rows
with probability below 0.9**800 < 1e-36, far below ``P_FAIL``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameldp
from _engines import ENGINES, FRAMES, stored
from _stats import P_FAIL
from frameldp.core.group_statistics import estimates_by_group, statistics_by_group
from frameldp.core.mechanisms import (
    OPEN_DOMAIN,
    Capability,
    mechanism_class,
    mechanism_from_spec,
    mechanism_names,
)
from frameldp.core.randomness import RandomSource
from frameldp.frames.pipeline import privatize_columns
from frameldp.frames.report_type import ReportMetadata, as_reports, storage_of

ROWS = 800
CATEGORIES = ["AA", "DL", "UA", "WN"]
KEY, OTHER_KEY = bytes(range(32)), bytes(range(1, 33))
assert 0.9**ROWS < P_FAIL


@dataclass(frozen=True)
class Example:
    """A small instance of a mechanism, valid input values, and a value it must refuse."""

    mechanism: Any
    values: list[Any]
    bad: Any
    users: bool = False  # memoizing: privatize with a user column


def _values() -> list[str]:
    return [CATEGORIES[(7 * i) % 4] for i in range(ROWS)]


BOUNDS = (0, 100)


def _numbers() -> list[float]:
    """Numbers on ``BOUNDS``, its ends included."""
    return [float((37 * i) % 101) for i in range(ROWS)]


EXAMPLES: dict[str, Callable[[], Example]] = {
    "rappor": lambda: Example(frameldp.Rappor(epsilon=1.0, domain=CATEGORIES), _values(), "XX"),
    "randomized_response": lambda: Example(
        frameldp.RandomizedResponse(1.0, domain=CATEGORIES), _values(), "XX"
    ),
    "bloom_rappor": lambda: Example(
        frameldp.BloomRappor(1.0, epsilon_infinity=2.0, num_bits=32, num_cohorts=4),
        [f"/url/{i % 9}" for i in range(ROWS)],
        None,
        users=True,
    ),
    "balcer_cheu": lambda: Example(
        frameldp.BalcerCheu(2.0, 1e-2, n=ROWS, domain=CATEGORIES), _values(), "XX"
    ),
    "optimized_unary_encoding": lambda: Example(
        frameldp.OptimizedUnaryEncoding(1.0, domain=CATEGORIES), _values(), "XX"
    ),
    "local_hashing": lambda: Example(
        frameldp.LocalHashing(1.0, domain=CATEGORIES), _values(), "XX"
    ),
    "subset_selection": lambda: Example(
        frameldp.SubsetSelection(1.0, domain=CATEGORIES, subset_size=2), _values(), "XX"
    ),
    "hadamard_response": lambda: Example(
        frameldp.HadamardResponse(1.0, domain=CATEGORIES), _values(), "XX"
    ),
    "block_hadamard_response": lambda: Example(
        frameldp.BlockHadamardResponse(1.0, domain=CATEGORIES, block_size=2), _values(), "XX"
    ),
    "projective_geometry_response": lambda: Example(
        frameldp.ProjectiveGeometryResponse(1.0, domain=CATEGORIES), _values(), "XX"
    ),
    "prefix_extending": lambda: Example(
        frameldp.PrefixExtending(1.0, max_length=6), [f"/u/{i % 9}é" for i in range(ROWS)], None
    ),
    "duchi": lambda: Example(frameldp.DuchiMechanism(1.0, bounds=BOUNDS), _numbers(), 120.5),
    "piecewise": lambda: Example(frameldp.PiecewiseMechanism(1.0, bounds=BOUNDS), _numbers(), -0.5),
    "hybrid": lambda: Example(frameldp.HybridMechanism(2.0, bounds=BOUNDS), _numbers(), 101),
    "stochastic_rounding": lambda: Example(
        frameldp.StochasticRounding(2.0, bounds=BOUNDS, levels=4), _numbers(), float("nan")
    ),
    "square_wave": lambda: Example(
        frameldp.SquareWave(1.0, bounds=BOUNDS, buckets=8), _numbers(), None
    ),
}


def _longitudinal(name: str) -> Callable[[], Example]:
    """The example of ``name`` with a permanent response at epsilon_inf 3, memoized per user."""

    def build() -> Example:
        base = EXAMPLES[name]()
        spec = {**base.mechanism.to_spec(), "epsilon_infinity": 3.0}
        return Example(mechanism_from_spec(spec), base.values, base.bad, users=True)

    return build


LONGITUDINAL_EXAMPLES = {
    f"{name}-longitudinal": _longitudinal(name)
    for name in (
        "rappor",
        "randomized_response",
        "optimized_unary_encoding",
        "local_hashing",
        "subset_selection",
        "projective_geometry_response",
        "stochastic_rounding",
    )
}
"""Every mechanism that memoizes on request, longitudinal: the contract holds for them too."""


def test_every_registered_mechanism_has_an_example() -> None:
    assert sorted(EXAMPLES) == mechanism_names()
    memoizing = [
        n for n in mechanism_names() if Capability.MEMOIZATION in mechanism_class(n).capabilities
    ]
    assert sorted([*LONGITUDINAL_EXAMPLES, "bloom_rappor-longitudinal"]) == sorted(
        f"{name}-longitudinal" for name in memoizing
    )


@pytest.fixture(params=[*mechanism_names(), *LONGITUDINAL_EXAMPLES])
def example(request: pytest.FixtureRequest) -> Example:
    return {**EXAMPLES, **LONGITUDINAL_EXAMPLES}[request.param]()


def _privatize(
    example: Example,
    values: list[Any],
    *,
    key: bytes = KEY,
    column: str = "c",
    row_start: int = 0,
) -> dict[str, pa.Array]:
    """The report columns of ``values`` (rows ``row_start, ...``), as the mechanism wrote them."""
    users = None
    memo = None
    if example.users:
        users = pa.array([f"u{(row_start + i) // 2}" for i in range(len(values))])
        memo = RandomSource.from_key(OTHER_KEY)
    return example.mechanism.privatize_column(
        pa.array(values),
        column=column,
        source=RandomSource.from_key(key),
        row_start=row_start,
        users=users,
        user_column="user" if users is not None else None,
        memo=memo,
    )


def _rows(reports: dict[str, pa.Array]) -> list[tuple[Any, ...]]:
    return list(zip(*(array.to_pylist() for array in reports.values()), strict=True))


# -- the calls line up -------------------------------------------------------------------------


def test_spec_round_trips_through_json(example: Example) -> None:
    spec = json.loads(json.dumps(example.mechanism.to_spec()))
    assert spec["mechanism"] == example.mechanism.name
    assert mechanism_from_spec(spec) == example.mechanism


def test_reports_have_the_declared_columns_and_types(example: Example) -> None:
    declared = example.mechanism.report_columns("c")
    assert next(iter(declared)) == "c"
    reports = _privatize(example, example.values)
    assert list(reports) == list(declared)
    for name, array in reports.items():
        assert array.type == declared[name], name


def test_batches_give_the_reports_of_the_whole_column(example: Example) -> None:
    """Reports are addressed by global row: any batching gives the same reports, and the
    statistics of the batches add up to the whole column's."""
    if Capability.SHUFFLER_MESSAGES in example.mechanism.capabilities:
        pytest.skip("shuffle-model messages are drawn for all people at once")
    whole = _privatize(example, example.values)
    cut = 217
    first = _privatize(example, example.values[:cut])
    second = _privatize(example, example.values[cut:], row_start=cut)
    assert _rows(first) + _rows(second) == _rows(whole)
    statistic = example.mechanism.statistic(whole, column="c")
    parts = example.mechanism.statistic(first, column="c") + example.mechanism.statistic(
        second, column="c"
    )
    assert parts.rows == statistic.rows == ROWS
    for got, expected in zip(parts.parts, statistic.parts, strict=True):
        if expected.dtype.kind == "f":  # sums of floats: equal to the rounding of their order
            np.testing.assert_allclose(got, expected, rtol=1e-12)
        else:
            np.testing.assert_array_equal(got, expected)


def test_the_statistics_and_estimates_of_many_groups_are_each_groups_own(
    example: Example,
) -> None:
    """A table by groups reduces and debiases every group at once where the mechanism can
    (``GroupEstimator``): exactly what each group's rows give on their own (integer parts and
    the estimates bit for bit; float sums to the rounding of their order)."""
    if example.mechanism.capabilities & OPEN_DOMAIN:
        pytest.skip("open-domain reports are decoded or searched whole, not by group")
    reports = _privatize(example, example.values)
    groups = np.array([(3 * i + i // 50) % 7 for i in range(ROWS)], dtype=np.int64)
    stacked = statistics_by_group(example.mechanism, reports, groups, 7, column="c")
    estimates = estimates_by_group(example.mechanism, stacked)
    assert len(stacked) == len(estimates) == 7
    for group in range(7):
        rows = pa.array(np.flatnonzero(groups == group))
        own = example.mechanism.statistic(
            {name: array.take(rows) for name, array in reports.items()}, column="c"
        )
        assert stacked[group].rows == own.rows == len(rows)
        for got, expected in zip(stacked[group].parts, own.parts, strict=True):
            if expected.dtype.kind == "f":
                np.testing.assert_allclose(got, expected, rtol=1e-12)
            else:
                np.testing.assert_array_equal(got, expected)
        found, expected_estimate = estimates[group], example.mechanism.finish(own)
        assert type(found) is type(expected_estimate)
        for field in dataclasses.fields(expected_estimate):
            got, expected = getattr(found, field.name), getattr(expected_estimate, field.name)
            if isinstance(expected, np.ndarray):
                np.testing.assert_array_equal(got, expected)  # the same arithmetic
            else:
                assert got == expected, field.name


def test_keys_and_columns_separate_the_noise(example: Example) -> None:
    """The same key on the same rows repeats the reports; another key, or another column, draws
    independent ones (equal whole with probability below 1e-36, see the module docstring)."""
    reports = _rows(_privatize(example, example.values))
    assert _rows(_privatize(example, example.values)) == reports
    assert _rows(_privatize(example, example.values, key=OTHER_KEY)) != reports
    assert _rows(_privatize(example, example.values, column="d")) != reports


def test_the_estimate_is_the_mechanisms_natural_one(example: Example) -> None:
    if Capability.CANDIDATES in example.mechanism.capabilities:
        decoded = example.mechanism.decode_statistic(
            example.mechanism.statistic(_privatize(example, example.values), column="c"),
            [f"/url/{i}" for i in range(9)],
        )
        assert decoded is not None
        return
    if Capability.DISCOVERY in example.mechanism.capabilities:
        reports = _privatize(example, example.values)
        found = example.mechanism.discover(lambda reduce: reduce(reports), column="c", top=3)
        assert len(found.labels) == len(found.counts) <= 3
        assert found.n == ROWS
        with pytest.raises(frameldp.ParameterError, match="discover"):
            example.mechanism.debias(example.mechanism.statistic(reports, column="c"))
        return
    statistic = example.mechanism.statistic(_privatize(example, example.values), column="c")
    if Capability.MEAN in example.mechanism.capabilities:
        estimate = example.mechanism.finish(statistic)
        assert estimate.n == ROWS
        assert BOUNDS[0] - 10 * estimate.std_error < estimate.mean
        assert estimate.mean < BOUNDS[1] + 10 * estimate.std_error
        return
    if Capability.NUMERIC in example.mechanism.capabilities:  # a distribution
        estimate = example.mechanism.finish(statistic)
        assert estimate.n == ROWS
        assert estimate.frequencies.sum() == pytest.approx(1.0)
        assert BOUNDS[0] <= estimate.quantile(0.5) <= BOUNDS[1]
        return
    estimate = example.mechanism.debias(statistic)
    assert len(estimate.counts) == len(example.mechanism.categories)
    assert np.all(np.isfinite(estimate.counts))


def test_bad_input_is_a_frameldp_error_naming_the_column(example: Example) -> None:
    with pytest.raises(frameldp.FrameLDPError, match="'c'"):
        _privatize(example, [*example.values[:10], example.bad])


# -- the report type travels --------------------------------------------------------------------


def _readers() -> tuple[Any, ...]:
    """Every engine that reads a Parquet file: pandas, polars, pyarrow and DuckDB."""
    return (pd.read_parquet, pl.read_parquet, pq.read_table, lambda p: duckdb.read_parquet(str(p)))


def test_the_report_type_round_trips_through_pandas_polars_and_parquet(
    example: Example, tmp_path: Path
) -> None:
    spec = example.mechanism.to_spec()
    typed = privatize_columns(
        {"c": pa.array(example.values), "user": pa.array([f"u{i // 2}" for i in range(ROWS)])},
        {"c": example.mechanism},
        specs={"c": spec},
        source=RandomSource.from_key(KEY),
        user="user" if example.users else None,
        memo=RandomSource.from_key(OTHER_KEY) if example.users else None,
    )
    frame = pd.DataFrame({name: a.to_pandas() for name, a in typed.items()})
    frame.to_parquet(tmp_path / "pandas.parquet")
    pl.read_parquet(tmp_path / "pandas.parquet").write_parquet(tmp_path / "polars.parquet")
    back = pq.read_table(tmp_path / "polars.parquet")
    for part, (name, array) in enumerate(typed.items()):
        column = back.column(name)
        assert column.type.metadata == ReportMetadata(spec, "c", part)
        assert storage_of(column).to_pylist() == storage_of(array).to_pylist()
    if {Capability.CANDIDATES, Capability.SHUFFLER_MESSAGES} & example.mechanism.capabilities:
        return
    if Capability.DISCOVERY in example.mechanism.capabilities:
        expected = pd.DataFrame({"c": frame["c"]}).ldp.discover("c", top=3).to_pandas()
        for reader in _readers():
            found = frameldp.ldp(reader(tmp_path / "polars.parquet")).discover("c", top=3)
            pd.testing.assert_frame_equal(found.to_pandas(), expected)
        return
    expected = pd.DataFrame({"c": frame["c"]}).ldp.debias("c").to_pandas()
    for reader in _readers():
        table = frameldp.ldp(reader(tmp_path / "polars.parquet")).debias("c")
        pd.testing.assert_frame_equal(table.to_pandas(), expected)


def test_as_reports_keeps_the_values(example: Example) -> None:
    reports = _privatize(example, example.values)
    for part, (name, array) in enumerate(reports.items()):
        typed = as_reports(array, ReportMetadata(example.mechanism.to_spec(), "c", part))
        assert storage_of(typed).to_pylist() == array.to_pylist(), name


# -- every engine draws the same reports and tables --------------------------------------------


def _engine_examples() -> dict[str, Example]:
    """Every example that runs on every engine (Balcer–Cheu's shuffler needs one machine)."""
    examples = {name: build() for name, build in {**EXAMPLES, **LONGITUDINAL_EXAMPLES}.items()}
    return {
        name: example
        for name, example in examples.items()
        if Capability.SHUFFLER_MESSAGES not in example.mechanism.capabilities
    }


def _releases(make: Callable[[dict[str, list[Any]]], Any]) -> list[tuple[Any, dict[str, Any]]]:
    """Three keyed releases of one frame holding a column per example: one of the fresh
    mechanisms, one (with ``user=`` and a memo key) of the memoizing ones, and one sampling a
    column per row among frequency oracles (``collect="sample"``: its nulls in every engine's
    types)."""
    examples = _engine_examples()
    data: dict[str, list[Any]] = {name: example.values for name, example in examples.items()}
    data["user"] = [f"u{i // 2}" for i in range(ROWS)]
    frame = make(data)
    out = []
    for memoized in (False, True):
        chosen = {n: e.mechanism for n, e in examples.items() if e.users == memoized}
        extra: dict[str, Any] = {"user": "user", "memo_key": OTHER_KEY} if memoized else {}
        out.append((frameldp.ldp(frame).privatize(chosen, key=KEY, **extra), chosen))
    # one oracle per kind of report column: labels, packed bits, integers
    oracles = {
        n: examples[n].mechanism
        for n in ("randomized_response", "optimized_unary_encoding", "local_hashing")
    }
    # the fakes of "sample+fake" are drawn by the same pipeline (tests/frames/test_collect.py)
    out.append((frameldp.ldp(frame).privatize(oracles, key=KEY, collect="sample"), oracles))
    return out


def _tables(release: Any, chosen: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Every table a release's reports give: debiased counts, or discovered strings."""
    tables = {}
    reports = frameldp.ldp(release)
    for name, mechanism in chosen.items():
        if Capability.DISCOVERY in mechanism.capabilities:
            tables[name] = reports.discover(name, top=3).to_pandas()
        elif Capability.CANDIDATES not in mechanism.capabilities:
            tables[name] = reports.debias(name).to_pandas()
    return tables


@functools.cache
def _pandas_releases() -> list[tuple[Any, dict[str, Any], dict[str, pd.DataFrame]]]:
    """pandas' releases and their tables, drawn once per worker (every engine compares to
    them; keyed, so they are the same each time)."""
    return [
        (release, chosen, _tables(release, chosen))
        for release, chosen in _releases(FRAMES["pandas"])
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_draws_the_pandas_reports_and_tables(engine: str) -> None:
    """One keyed release per engine of a frame holding every example: its report columns are
    bit-identical to pandas', and so are its tables (the same reductions, flat)."""
    found = _releases(FRAMES[engine])
    for (ours, chosen), (theirs, _, expected) in zip(found, _pandas_releases(), strict=True):
        for name in chosen:
            assert stored(ours, name) == stored(theirs, name), name
        tables = _tables(ours, chosen)
        for name, table in expected.items():
            pd.testing.assert_frame_equal(tables[name], table, obj=name)
