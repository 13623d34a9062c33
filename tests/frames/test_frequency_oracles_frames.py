"""The frequency oracles of the variance frontier on every frame library, and the automatic
choice: the same reports and tables as on plain pandas, the caller's frame type back, the input
untouched, and consistent tables in the caller's library."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import frameldp
from frameldp import ldp

from .conftest import ORIGINS, Backend, reference_reports, small_data

MECHANISMS: dict[str, Callable[[], Any]] = {
    "oue": lambda: frameldp.OptimizedUnaryEncoding(1.0, domain=ORIGINS),
    "olh": lambda: frameldp.LocalHashing(1.0, domain=ORIGINS),
    "blh": lambda: frameldp.LocalHashing(1.0, domain=ORIGINS, num_buckets=2),
    "subset": lambda: frameldp.SubsetSelection(1.0, domain=ORIGINS),
    "hadamard": lambda: frameldp.HadamardResponse(1.0, domain=ORIGINS),
    "auto": lambda: frameldp.choose_mechanism(0.5, domain=ORIGINS),
}


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_backend_privatizes_and_debiases_alike(backend: Backend, name: str) -> None:
    mechanism = MECHANISMS[name]()
    data = small_data(96)
    native = backend.make(data)
    before = backend.snapshot(native)

    def call(frame: Any) -> Any:
        return ldp(frame).privatize({"origin": mechanism}, seed=5)

    reports = call(native)
    assert backend.is_native(reports)
    assert backend.column_values(reports, "origin") == reference_reports(data, call, "origin")
    assert backend.column_values(reports, "fare") == data["fare"]
    backend.assert_unchanged(before, native)

    table = ldp(reports).debias("origin")
    reference = ldp(call(_pandas(data))).debias("origin")
    assert table.n == 96
    assert table.mechanism == mechanism
    np.testing.assert_allclose(table.estimate.counts, reference.estimate.counts)
    np.testing.assert_allclose(table.estimate.variances, reference.estimate.variances)
    assert list(table.to_pandas()["category"]) == list(ORIGINS)

    consistent = table.consistent("ibu")
    counts = consistent.estimate.counts
    assert counts.min() >= 0
    assert counts.sum() == pytest.approx(96, rel=1e-9)
    assert type(consistent.frame) is type(table.frame)
    assert np.isnan(consistent.estimate.variances).all()
    np.testing.assert_allclose(table.estimate.counts, reference.estimate.counts)  # unchanged


def _pandas(data: Any) -> Any:
    import pandas as pd

    return pd.DataFrame(data)


def test_the_automatic_choice_is_a_mechanism_like_any_other() -> None:
    """``choose_mechanism`` returns a registered mechanism whose spec rebuilds it, so reports
    written with it are self-describing."""
    mechanism = frameldp.choose_mechanism(4.0, domain=[f"v{i}" for i in range(200)])
    assert frameldp.mechanism_from_spec(mechanism.to_spec()) == mechanism
    comparison = frameldp.compare_mechanisms(4.0, domain=[f"v{i}" for i in range(200)], n=1000)
    assert comparison.best == mechanism
    assert comparison.records()[0]["chosen"]
    assert mechanism.name in comparison.explain()


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_release_schema_checks_integer_reports(library: str) -> None:
    """Local hashing and Hadamard reports are integers in ``[0, report_range)``: a value
    outside is a ``report_range`` failure naming the row."""
    import pandas as pd
    import polars as pl

    from frameldp.schemas import validate_release

    mechanism = frameldp.HadamardResponse(1.0, domain=ORIGINS)  # 8 columns
    good = {"origin": [0, 7, 3]}
    bad = {"origin": [0, 8, 3]}
    make = pd.DataFrame if library == "pandas" else pl.DataFrame
    validate_release(make(good), {"origin": mechanism})
    with pytest.raises(frameldp.ValidationError, match=r"report_range.*8"):
        validate_release(make(bad), {"origin": mechanism})
    with pytest.raises(frameldp.ValidationError, match="integer"):
        validate_release(make({"origin": ["ATL", "BOS", "DEN"]}), {"origin": mechanism})
