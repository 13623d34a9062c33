"""Every python example in the README runs as pasted (the quick start also runs as a doctest)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
SNIPPETS = [block for block in BLOCKS if ">>>" not in block]


def test_readme_has_snippets() -> None:
    assert len(SNIPPETS) >= 2


def test_readme_snippets_run_in_order_when_pasted() -> None:
    """Every python block of the README, pasted into a fresh session one after the other,
    runs: the first defines the data and the domains the others use. The demo data is cut to
    20,000 rows here, for speed only."""
    namespace: dict[str, Any] = {}
    for i, snippet in enumerate(SNIPPETS):
        code = snippet.replace("load_flights()", "load_flights().head(20_000)")
        try:
            exec(compile(code, f"README python block {i}", "exec"), namespace)
        except Exception as error:  # name the block that fails, and why
            pytest.fail(f"README python block {i} fails after the ones before it: {error!r}")
