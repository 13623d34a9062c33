"""Every python example in the README runs (the quick start also runs as a doctest)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import frameldp
from frameldp.datasets import FLIGHTS_DOMAINS, load_flights

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
SNIPPETS = [block for block in BLOCKS if ">>>" not in block]


def test_readme_has_snippets() -> None:
    assert len(SNIPPETS) >= 2


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"block{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(snippet: str) -> None:
    """Run a README block with the names its prose introduces."""
    df = load_flights().head(5000)
    col = df["dest"]  # noqa: F841 - referenced by the snippets' `b"".join(col)` example
    namespace = {
        "frameldp": frameldp,
        "np": np,
        "df": df,
        "DESTS": FLIGHTS_DOMAINS["dest"],
        "CARRIERS": FLIGHTS_DOMAINS["carrier"],
        "SERVICES": FLIGHTS_DOMAINS["services"],
        "mechanism": frameldp.Rappor(epsilon=1.0, domain=FLIGHTS_DOMAINS["dest"]),
    }
    namespace["reports"] = df.ldp.rappor("dest", epsilon=1.0, domain=FLIGHTS_DOMAINS["dest"])
    exec(compile(snippet, str(README), "exec"), namespace)
