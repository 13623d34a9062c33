"""``ldp(reports).discover``: the same discovered table on every backend, from files and the CLI.

One test body per behaviour, run on every backend by the ``backend`` fixture.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import frameldp
from frameldp import ldp

from .conftest import Backend

WORDS = ["the", "café", "日本", "🙂ok", "a-very-long-word"]


def _data(n: int = 6000) -> dict[str, list[str]]:
    """Five heavy words (one cut at max_length = 6) in fixed shares, and rare ones."""
    shares = np.repeat(np.arange(5), [1500, 1200, 900, 800, 600])
    values = [WORDS[i] for i in shares] + [f"rare{i}" for i in range(n - shares.size)]
    return {"word": values, "row": [str(i) for i in range(n)]}


MECH = frameldp.PrefixExtending(6.0, max_length=6)


def _discovered(table: frameldp.FrequencyTable) -> pd.DataFrame:
    return table.to_pandas()


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    frame = ldp(pd.DataFrame(_data())).privatize({"word": MECH}, seed=11)
    return _discovered(ldp(frame).discover("word", top=5))


def test_every_backend_discovers_the_same_table(backend: Backend, reference: pd.DataFrame) -> None:
    """Reports are a function of (key, column, spec, row, value) only, so every backend writes
    the same reports and finds the same strings; at epsilon 6 and these shares (a level of about
    860 reports, a heavy word at least 86 of them against a standard error near 9), the five
    words are found, the long one cut."""
    native = backend.make(_data())
    before = backend.snapshot(native)

    reports = ldp(native).privatize({"word": MECH}, seed=11)
    table = ldp(reports).discover(top=5)

    assert backend.is_native(reports)
    backend.assert_unchanged(before, native)
    pd.testing.assert_frame_equal(_discovered(table), reference)
    assert set(reference["category"]) == {"the", "café", "日本", "🙂ok", "a-very"}
    assert reference.set_index("category")["truncated"].to_dict()["a-very"]
    assert table.privacy.seeded
    assert table.privacy.epsilon == MECH.privacy.epsilon


def test_discover_refuses_columns_it_cannot_search(backend: Backend) -> None:
    native = backend.make({"word": ["a", "b"] * 20, "row": ["1"] * 40})
    krr = ldp(native).krr("word", 1.0, domain=["a", "b"], seed=1)
    with pytest.raises(frameldp.MechanismNotFoundError, match="prefix-extending"):
        ldp(krr).discover("word")
    with pytest.raises(frameldp.ParameterError, match="PrefixExtending"):
        ldp(krr).discover("word", mechanism=frameldp.Rappor(1.0, domain=["a", "b"]))
    reports = ldp(native).privatize({"word": MECH}, seed=1)
    with pytest.raises(frameldp.ParameterError, match="top"):
        ldp(reports).discover("word", top=0)


def test_the_cli_discovers_the_frames_table(tmp_path: Path, reference: pd.DataFrame) -> None:
    from typer.testing import CliRunner

    from frameldp.cli import app

    pd.DataFrame(_data()).to_csv(tmp_path / "in.csv", index=False)
    for kind in ("csv", "parquet"):
        out = tmp_path / f"reports.{kind}"
        args = ["privatize", str(tmp_path / "in.csv"), str(out), "--column", "word"]
        args += ["--mechanism", "pem", "--epsilon", "6", "--max-length", "6", "--seed", "11"]
        assert CliRunner().invoke(app, args).exit_code == 0
        table = tmp_path / f"table-{kind}.csv"
        run = CliRunner().invoke(app, ["discover", str(out), "--top", "5", "--out", str(table)])
        assert run.exit_code == 0, run.output
        assert "INSECURE" in run.output
        assert "yes" in run.output
        written = pd.read_csv(table, keep_default_na=False)
        assert list(written["category"]) == list(reference["category"])
        np.testing.assert_allclose(written["count"], reference["count"])
        estimate = CliRunner().invoke(app, ["estimate", str(out)])
        assert estimate.exit_code == 1
        assert "frameldp discover" in estimate.output


def test_a_fresh_key_release_is_searched_as_one_release(backend: Backend) -> None:
    """The search reads the reports once per level; a lazy plan or Dask graph under a fresh key
    must not be executed per pass (new reports each time, and the ledger charged each time)."""
    ledger = frameldp.Ledger(":memory:")
    ledger.set_budget("b", epsilon=10.0)
    reports = ldp(backend.make(_data())).privatize({"word": MECH}, ledger=ledger, budget="b")
    table = ldp(reports).discover("word", top=5)
    assert ledger.spent("b") == pytest.approx(MECH.privacy.epsilon)
    assert {"the", "café"} <= set(table.to_pandas()["category"])


def test_bad_search_parameters_are_frameldp_errors() -> None:
    reports = ldp(pd.DataFrame(_data())).privatize({"word": MECH}, seed=1)
    for bad in ("0.05", None, 1.5, True):
        with pytest.raises(frameldp.ParameterError, match="significance"):
            ldp(reports).discover("word", significance=bad)
    for bad in (10**30, np.uint64(2**63), 2.0):
        with pytest.raises(frameldp.ParameterError, match="top"):
            ldp(reports).discover("word", top=bad)
