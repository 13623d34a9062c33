"""Threads change the wall time, never the reports, the errors or the guarantee.

k-RR on a frame runs its fused runs of rows (``FUSED_ROWS`` each) on the thread setting's
threads; RAPPOR's sampler splits its bytes. Seeded noise is addressed by (row, value), so two
runs with different thread counts can be compared report for report.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import frameldp
from frameldp.core.columns import FUSED_ROWS
from frameldp.errors import DomainError, ParameterError

LABELS = [f"v{j}" for j in range(12)]
ROWS = 2 * FUSED_ROWS + 12_345  # three runs of rows, the last one short


def _frame(rows: int = ROWS) -> pd.DataFrame:
    codes = (np.arange(rows) * 7) % len(LABELS)
    return pd.DataFrame({"c": pd.Categorical.from_codes(codes, categories=LABELS)})


@pytest.mark.filterwarnings("ignore::frameldp.InsecureSeedWarning")
def test_reports_are_the_same_for_every_thread_count() -> None:
    """(The byte stream of a fresh key is checked on 1, 2 and 3 threads in
    tests/core/test_interval_sampler.py.)"""
    frame = _frame()
    before = frame.copy()
    releases = []
    for count in (1, 2, 3):
        with frameldp.threads(count):
            reports = frame.ldp.krr("c", 2.0, domain=LABELS, seed=7)
        releases.append(reports["c"].astype(object).tolist())
    assert releases[0] == releases[1] == releases[2]
    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize("count", [1, 2])
def test_the_first_bad_row_is_named_whatever_the_threads(count: int) -> None:
    """Bad values in the second and third runs of rows: the error names the first one (what a
    single pass names), on any number of threads, and no report is returned."""
    frame = _frame().astype({"c": object})
    frame.loc[FUSED_ROWS + 5, "c"] = "unknown-1"
    frame.loc[2 * FUSED_ROWS + 9, "c"] = "unknown-2"
    with frameldp.threads(count), pytest.raises(DomainError) as raised:
        frame.ldp.krr("c", 2.0, domain=LABELS)
    assert f"'unknown-1' at row {FUSED_ROWS + 5}" in str(raised.value)
    assert f"2 such values in the {ROWS} rows checked" in str(raised.value)  # every row's count


def test_memoized_krr_checks_values_before_user_ids() -> None:
    """With user ids, every value is checked before any id (the order of a single pass): a
    bad value at row 2 is named, not the null id at row 1."""
    from frameldp.core import RandomizedResponse, RandomSource

    mechanism = RandomizedResponse(1.0, domain=LABELS, epsilon_infinity=3.0)
    with pytest.raises(DomainError, match="'zz' at row 2"):
        mechanism.privatize_column(
            pa.array(["v1", "v2", "zz"]),
            column="c",
            source=RandomSource.fresh(),
            users=pa.array(["a", None, "b"]),
            user_column="u",
            memo=RandomSource.fresh(),
        )


def test_user_ids_without_epsilon_infinity_are_refused_even_on_no_rows() -> None:
    from frameldp.core import RandomizedResponse, RandomSource

    with pytest.raises(ParameterError, match="users are only used with epsilon_infinity"):
        RandomizedResponse(1.0, domain=LABELS).privatize_column(
            pa.array([], pa.string()),
            column="c",
            source=RandomSource.fresh(),
            users=pa.array([], pa.string()),
            user_column="u",
        )


def test_a_bad_frameldp_threads_warns_at_the_callers_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``FRAMELDP_THREADS`` that is no thread count is warned about at the line that called
    frameldp (issue 36: it named a line of frameldp.core.parallel), and every core is used."""
    monkeypatch.setattr(frameldp.core.parallel, "_default", None)  # a CLI test may have set it
    monkeypatch.setenv("FRAMELDP_THREADS", "many")
    with pytest.warns(frameldp.FrameLDPWarning, match="FRAMELDP_THREADS") as caught:
        frame = _frame().ldp.krr("c", 2.0, domain=LABELS, key=bytes(32))
    assert len(frame) == ROWS
    assert {warning.filename for warning in caught} == {__file__}
