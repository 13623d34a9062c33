"""Dask runs on the synchronous scheduler in this suite (one process, deterministic order)."""

from __future__ import annotations

from collections.abc import Iterator

import dask
import pytest


@pytest.fixture(autouse=True)
def synchronous_dask() -> Iterator[None]:
    """Every test computes Dask graphs on the synchronous scheduler."""
    with dask.config.set(scheduler="synchronous"):
        yield
