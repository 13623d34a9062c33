"""Session-wide test ordering."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests marked slow first: with pytest-xdist's work stealing, a 20-second smoke
    run of a benchmark started last keeps one worker busy while the others sit idle. The Spark
    tests go first of all: the first worker's queue starts with them and an idle worker steals
    from the end of a queue, so one worker runs them all and only one Spark session (a JVM,
    seconds to start) is started."""
    items.sort(
        key=lambda item: (
            item.get_closest_marker("slow") is None,
            "test_spark.py" not in item.nodeid,
        )
    )
