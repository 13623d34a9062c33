"""Fixtures of the schema tests: the frame backends of the frames suite, and failure helpers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import frameldp
from frames.conftest import BACKENDS, Backend  # one test body on every frame library

__all__ = ["Backend", "checks", "failures"]


SCHEMA_BACKENDS = {
    name: backend
    for name, backend in BACKENDS.items()
    if not getattr(backend, "dask", False) and not getattr(backend, "arrow", None)
}
"""The backends validation supports (pandas and polars: not Dask, Arrow or DuckDB, which
validation refuses)."""


@pytest.fixture(params=list(SCHEMA_BACKENDS), ids=list(SCHEMA_BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    """pandas (object, pyarrow and categorical strings), polars eager and polars lazy."""
    return SCHEMA_BACKENDS[request.param]


def failures(call: Callable[[], Any]) -> frameldp.ValidationError:
    """The ValidationError ``call`` raises (failing the test if it returns)."""
    with pytest.raises(frameldp.ValidationError) as info:
        call()
    return info.value


def checks(error: frameldp.ValidationError) -> set[tuple[Any, str]]:
    """``{(column, check)}`` of every listed failure."""
    return {(f["column"], str(f["check"])) for f in error.failures}
