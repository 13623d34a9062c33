"""polars LazyFrame: stays lazy, streams, and is a pure function of (key, row) across batches.

These behaviours exist only for LazyFrame, so the tests use polars directly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import polars.testing
import pytest

import frameldp
from _releases import as_one_release
from frameldp.datasets import FLIGHTS_DOMAINS

from .conftest import CARRIERS, ORIGINS, small_data

SERVICES = FLIGHTS_DOMAINS["services"]
STREAMING_ROWS = 300_000
SET_ROWS = 150_000  # set-valued cells build slowly: two morsels of the streaming engine


def _mechanisms() -> dict[str, Any]:
    return {
        "carrier": frameldp.Rappor(epsilon=1.0, domain=CARRIERS),
        "origin": frameldp.RandomizedResponse(1.0, domain=ORIGINS),
    }


def test_a_fresh_plan_runs_once_and_a_keyed_plan_reruns_alike() -> None:
    """Without key=, a plan is one release and runs once: a second collect is refused before it
    draws anything (it would release every row again under the same release id); planning
    again is a new release with independent reports. With key=, every collect (either engine)
    gives the same reports for the same rows."""
    lazy = pl.LazyFrame(small_data())

    reports = lazy.ldp.privatize(_mechanisms())

    assert isinstance(reports, pl.LazyFrame)
    first = reports.collect(engine="streaming")
    with pytest.raises(frameldp.ParameterError, match=r"release [0-9a-f]{32} ran already"):
        reports.collect(engine="in-memory")
    second = lazy.ldp.privatize(_mechanisms()).collect(engine="streaming")
    # 64 RAPPOR reports of 3 bits at epsilon 1 (each bit flipped with probability ~0.38): two
    # independent releases agree on every report with probability below 0.53**64 < 1e-17.
    assert not first["carrier"].equals(second["carrier"])
    assert first.schema != second.schema  # two release ids: they never pass for one
    assert first["carrier"].dtype.ext_storage() == pl.Binary
    assert first["origin"].dtype.ext_storage() == pl.String
    assert first.ldp.mechanisms == _mechanisms()

    keyed = lazy.ldp.privatize(_mechanisms(), key=bytes(range(32)))
    first = keyed.collect(engine="streaming")
    polars.testing.assert_frame_equal(first, keyed.collect(engine="streaming"))
    polars.testing.assert_frame_equal(first, keyed.collect(engine="in-memory"))


def _large_frame() -> pl.DataFrame:
    rows = np.arange(STREAMING_ROWS)
    carrier = np.array(CARRIERS)[(rows * 7) % len(CARRIERS)]
    origin = np.array(ORIGINS)[(rows * 11) % len(ORIGINS)]
    return pl.DataFrame({"carrier": carrier, "origin": origin, "row": rows}).with_columns(
        services=pl.concat_list(
            pl.lit(SERVICES[0]),
            pl.col("row").mod(len(SERVICES)).replace_strict(range(len(SERVICES)), SERVICES),
        )
    )


def test_streaming_batches_give_the_eager_reports() -> None:
    """300,000 rows run in several streaming batches and still equal the eager reports.

    Noise is addressed by (key, row index), so the batch boundaries must not matter. A
    pass-through map over the same plan records the batches polars actually used.
    """
    eager = _large_frame()
    mechanisms = {
        **_mechanisms(),
        "services": frameldp.Rappor(epsilon=3.0, domain=SERVICES, max_weight=2),
    }
    batch_lengths: list[int] = []

    def record(batch: pl.Series) -> pl.Series:
        batch_lengths.append(len(batch))
        return batch

    plan = eager.lazy().ldp.privatize(mechanisms, seed=99)
    streamed = plan.with_columns(
        pl.col("row").map_batches(record, return_dtype=pl.Int64, is_elementwise=True)
    ).collect(engine="streaming")

    assert len([n for n in batch_lengths if n]) > 1, batch_lengths
    assert sum(batch_lengths) == STREAMING_ROWS
    polars.testing.assert_frame_equal(
        as_one_release(streamed), as_one_release(eager.ldp.privatize(mechanisms, seed=99))
    )


def test_streaming_domain_error_names_the_row_of_the_frame() -> None:
    """300,000 rows are several streaming batches even on one thread (morsels of ~100k rows):
    the bad value at row 250,000 is reported at that row of the frame, not at its row within
    its batch."""
    carrier = np.array(CARRIERS)[np.arange(STREAMING_ROWS) % 3].astype(object)
    carrier[250_000] = "ZZ"
    lazy = pl.LazyFrame({"carrier": carrier.tolist()})

    with pytest.raises(frameldp.DomainError, match=r"'ZZ' at row 250000 "):
        lazy.ldp.krr("carrier", epsilon=1.0, domain=CARRIERS, seed=1).collect(engine="streaming")


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (["wifi", "spa"], r"value 'spa' at row 120000 "),
        (["wifi", None], r"null at row 120000 "),
        (None, r"null cell at row 120000;"),
        (["wifi", "meal", "lounge", "checked_bag"], r"row 120000 holds 4 distinct items"),
    ],
    ids=["unknown-item", "null-item", "null-cell", "too-many-items"],
)
def test_streaming_set_valued_errors_name_the_row_of_the_frame(
    cell: list[str | None] | None, message: str
) -> None:
    """As above for set-valued cells (150,000 rows: a morsel of about 100,000 and the rest):
    every error names the row of the frame."""
    cells: list[list[str | None] | None] = [["wifi"]] * SET_ROWS  # two morsels
    cells[SET_ROWS - 30_000] = cell
    lazy = pl.LazyFrame({"services": cells})

    with pytest.raises(frameldp.DomainError, match=f"column 'services': {message}"):
        lazy.ldp.rappor("services", epsilon=1.0, domain=SERVICES, max_weight=3).collect(
            engine="streaming"
        )


def test_a_limit_keeps_row_numbers_and_stops_reading() -> None:
    """``head(n)`` of a keyed plan gives the first n rows of its full collect (the limit is
    pushed into the input, rows keep their numbers), and ``head(0)`` none."""
    plan = pl.LazyFrame(small_data()).ldp.privatize(_mechanisms(), key=bytes(range(32)))

    full = plan.collect()

    polars.testing.assert_frame_equal(plan.head(5).collect(), full.head(5))
    polars.testing.assert_frame_equal(plan.slice(0, 17).collect(), full.head(17))
    assert plan.head(0).collect().height == 0
