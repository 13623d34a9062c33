"""The privacy invariant for numeric reports: nothing is linked but a re-run of one job.

A Piecewise report is the centre of one of ``2**32`` cells; two independent reports of one
value coincide with probability below ``2**-20`` (the largest cell probability is ``A / T``,
at most ``e^eps / (H e^eps + M - H)`` with ``H`` about a quarter of ``M`` at epsilon 2), so
among ``ROWS`` pairs the expected number of coincidences is below ``ROWS * 2**-20 < 0.003``:
a test that allows at most 2 fails for independent noise with probability below ``1e-8``
(Poisson tail). Shared noise makes the reports of equal values equal in every row, and those of
different values move together; the rank correlation of independent reports of ``ROWS`` rows is
within ``z_bound(P_FAIL) / sqrt(rows - 1)`` of 0 at ``P_FAIL``, and shared noise gives a
correlation near 1.

Every engine draws the pandas reports bit for bit (``test_mechanism_contract.py``), so the
checks run on pandas; the person-unit checks run on the engines that count people.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import frameldp
from _engines import FRAMES
from _stats import P_FAIL, z_bound

ROWS: Final = 3000
KEY: Final = bytes(range(32))
MECHANISMS: Final = {
    "piecewise": frameldp.PiecewiseMechanism(2.0, bounds=(0, 100)),
    "square_wave": frameldp.SquareWave(2.0, bounds=(0, 100)),
    "hybrid": frameldp.HybridMechanism(2.0, bounds=(0, 100)),
}
"""The continuous mechanisms (Duchi et al.'s and stochastic rounding report few values: their
noise is that of binary and k-ary randomized response, checked by the categorical suite)."""


def _values(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 100, ROWS)


def _two_point(reports: np.ndarray) -> np.ndarray:
    """Reports that are one of Hybrid's two Duchi outputs (``50 +- 50 C``), which coincide by
    chance; the coincidence test counts the continuous reports only."""
    bound = MECHANISMS["hybrid"]._duchi.output_bound
    return np.isclose(np.abs(reports - 50.0), 50.0 * bound, rtol=1e-12, atol=0)


def _assert_unlinked(first: Any, second: Any) -> None:
    """``first`` and ``second`` are independent (reports of equal values, or of values that
    differ row by row only by a constant: the rank test needs reports whose law does not
    vary with the row)."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    continuous = ~_two_point(a) & ~_two_point(b)
    assert int(np.sum(a[continuous] == b[continuous])) <= 2, "reports coincide: shared noise"
    correlation = stats.spearmanr(a, b).statistic
    assert abs(correlation) < z_bound(P_FAIL) / math.sqrt(a.size - 1), correlation


@pytest.fixture(params=list(MECHANISMS))
def mechanism(request: pytest.FixtureRequest) -> Any:
    return MECHANISMS[request.param]


@pytest.mark.parametrize("key", [None, KEY])
def test_two_columns_of_equal_values_are_unlinked(mechanism: Any, key: bytes | None) -> None:
    values = np.full(ROWS, 40.0)
    frame = pd.DataFrame({"a": values, "b": values})
    released = frame.ldp.privatize({"a": mechanism, "b": mechanism}, key=key)
    _assert_unlinked(released["a"], released["b"])


def test_two_calls_are_unlinked(mechanism: Any) -> None:
    frame = pd.DataFrame({"a": np.full(ROWS, 40.0)})
    first = frame.ldp.privatize({"a": mechanism})
    second = frame.ldp.privatize({"a": mechanism})
    _assert_unlinked(first["a"], second["a"])


def test_equal_values_at_other_positions_of_a_keyed_release_are_unlinked(mechanism: Any) -> None:
    values = np.full(2 * ROWS, 40.0)
    released = pd.DataFrame({"a": values}).ldp.privatize({"a": mechanism}, key=KEY)
    _assert_unlinked(released["a"][:ROWS], released["a"][ROWS:])


def test_a_keyed_rerun_repeats_unchanged_rows_and_redraws_changed_ones(mechanism: Any) -> None:
    values = _values()
    values[::2] = 40.0  # the changed rows hold 40, then 77: their reports must be redrawn
    other = values.copy()
    other[::2] = (other[::2] + 37.0) % 100.0
    first = pd.DataFrame({"a": values}).ldp.privatize({"a": mechanism}, key=KEY)
    again = pd.DataFrame({"a": other}).ldp.privatize({"a": mechanism}, key=KEY)
    np.testing.assert_array_equal(first["a"][1::2], again["a"][1::2])
    _assert_unlinked(first["a"][::2], again["a"][::2])


@pytest.mark.parametrize("backend", ["pandas", "polars-eager", "dask"])
def test_a_persons_rows_compose(backend: str) -> None:
    """Three rows of one person are three independent reports: three times epsilon, in the
    release, the table and the ledger's charge."""
    frame = FRAMES[backend](
        {"user": np.repeat(np.arange(200), 3), "x": np.tile([1.0, 50.0, 99.0], 200)}
    )
    mechanism = frameldp.PiecewiseMechanism(1.0, bounds=(0, 100))
    released = frameldp.ldp(frame).privatize({"x": mechanism}, user="user", key=KEY)
    stated = frameldp.ldp(released).privacy.epsilon
    assert stated == pytest.approx(3 * mechanism.privacy.epsilon)
    assert stated >= 3 * mechanism.privacy.epsilon
    assert frameldp.ldp(released).mean("x").privacy.epsilon == stated
