"""The command line, through its real entry points."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from scipy.stats import norm
from typer.testing import CliRunner

from _stats import P_FAIL  # the one false-failure probability of the suite
from frameldp.cli import app
from frameldp.cli.demo import run_demo


def test_demo_through_typer() -> None:
    result = CliRunner().invoke(app, ["demo", "--seed", "5", "--epsilon", "1", "--top", "3"])
    assert result.exit_code == 0, result.output
    assert "Summary" in result.output
    assert "RAPPOR" in result.output
    assert "12-ary RR" in result.output


def test_demo_installed_command() -> None:
    """`frameldp demo` as a user runs it (the console script of the installed package)."""
    command = shutil.which("frameldp", path=str(Path(sys.executable).parent))
    assert command is not None, "the frameldp console script is not installed"
    done = subprocess.run(
        [command, "demo", "--seed", "1", "--epsilon", "2", "--top", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "carrier" in done.stdout


def test_demo_estimates_are_within_their_errors() -> None:
    """Every bucket of every demo table lies within its Bonferroni-corrected normal bound.

    Detects a bias of a few standard errors in any bucket (e.g. a wrong flip probability in the
    debiasing, which shifts every bucket by far more).
    """
    results = run_demo(seed=11, epsilons=(0.5, 2.0), top=1, console=Console(file=None, quiet=True))
    buckets = sum(len(r.truth) for r in results)
    bound = norm.isf(P_FAIL / (2 * buckets))
    for result in results:
        assert np.abs(result.z_scores).max() < bound, (result.column, result.mechanism)
        assert result.table.privacy.epsilon <= result.mechanism.epsilon
