"""Session-wide test ordering."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests marked slow first: with pytest-xdist's work stealing, a 20-second smoke
    run of a benchmark started last keeps one worker busy while the others sit idle."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
