"""Dask runs on the synchronous scheduler in this suite (one process, deterministic order); a
module that names ``quiet`` in ``pytestmark`` silences frameldp's advisory warnings."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import dask
import pytest

import frameldp


@pytest.fixture(autouse=True)
def synchronous_dask() -> Iterator[None]:
    """Every test computes Dask graphs on the synchronous scheduler."""
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture
def quiet() -> Iterator[None]:
    """frameldp's advisory warnings (FrameLDPWarning) silenced for the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", frameldp.FrameLDPWarning)
        yield
