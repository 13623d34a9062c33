"""Session-wide test ordering, and the Spark sessions (``tests/_spark.py``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

import _spark


def _spark_rank(item: pytest.Item) -> int:
    """0: uses classic Spark; 1: Spark Connect; 2: no Spark."""
    if "spark-connect" in item.nodeid or "test_spark_connect.py" in item.nodeid:
        return 1
    if "test_spark.py" in item.nodeid or re.search(r"[\[-]spark[\]-]", item.nodeid):
        return 0
    return 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests marked slow first: with pytest-xdist's work stealing, a 20-second smoke
    run of a benchmark started last keeps one worker busy while the others sit idle. The Spark
    tests go first of all, classic then Connect: the first worker's queue starts with them and
    an idle worker steals from the end of a queue, so one worker runs them all and starts a
    Spark session (a JVM, seconds to start) once per mode."""
    items.sort(key=lambda item: (_spark_rank(item), item.get_closest_marker("slow") is None))


@pytest.fixture
def spark() -> Any:
    """The test process's classic Spark session (local, two cores)."""
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[spark]'")
    return _spark.session("classic")


@pytest.fixture
def spark_connect() -> Any:
    """The test process's Spark Connect session, to a local server on a free port."""
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")
    return _spark.session("connect")


@pytest.fixture(autouse=True)
def _no_spark_beyond_its_tests(request: pytest.FixtureRequest) -> None:
    """Stop the process's Spark session before the first test that does not use Spark (the
    Spark tests run first): a JVM and PySpark's signal handler left running would meet the
    forks, signals and subprocesses of later tests."""
    if _spark_rank(request.node) == 2:
        _spark.stop()


@pytest.fixture(scope="session", autouse=True)
def _stop_spark() -> Iterator[None]:
    """Stop whichever Spark session the process started, once every test has run."""
    yield
    _spark.stop()
