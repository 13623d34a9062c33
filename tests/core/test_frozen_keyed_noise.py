"""Reports under a caller's key, a seed or a memo key are frozen across versions.

A caller's key is reused on purpose (idempotent re-runs), and a memo key holds a person's
permanent responses for years: if a later frameldp drew other noise for the same (key, column,
row, value), re-running a job after an upgrade would release a second, independent report of
the same value, and a memoized person would lose the bound ``epsilon_infinity``. The digests
below were computed with frameldp before issue 19 changed the fresh-key sampler (the interval
algorithm), and must never change.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from frameldp.core import (
    HadamardResponse,
    LocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
    RandomSource,
    Rappor,
    SubsetSelection,
)

KEY = bytes(range(32))
CODES = (np.arange(5000, dtype=np.int64) * 7919) % 32
USERS = np.frombuffer(
    b"".join(hashlib.blake2b(str(i % 700).encode(), digest_size=16).digest() for i in range(5000)),
    dtype=np.uint8,
).reshape(-1, 16)

MECHANISMS = {
    "rappor": lambda **kw: Rappor(1.0, domain=range(32), **kw),
    "krr": lambda **kw: RandomizedResponse(1.0, domain=range(32), **kw),
    "oue": lambda **kw: OptimizedUnaryEncoding(1.0, domain=range(32), **kw),
    "olh": lambda **kw: LocalHashing(1.0, domain=range(32), **kw),
    "subset": lambda **kw: SubsetSelection(1.0, domain=range(32), **kw),
    "hadamard": lambda **kw: HadamardResponse(1.0, domain=range(32), **kw),
}

FROZEN = {
    "rappor-key": "205fcdbe5cbf1a6d",
    "rappor-seed": "541462b7c0cca0c5",
    "krr-key": "8a697c666bc94390",
    "krr-seed": "6aef94690ea3239c",
    "oue-key": "7149c0b76ac00a5b",
    "oue-seed": "10d405bf5e6d9900",
    "olh-key": "b44314cd283e6e15",
    "olh-seed": "3b53867c8e05b152",
    "subset-key": "a83296f38086af4e",
    "subset-seed": "775ddbac33c68b89",
    "hadamard-key": "c6653a688c713a39",
    "hadamard-seed": "56e1798a1ef92517",
    "rappor-memo": "01f167d64354a1cb",
    "krr-memo": "60d7c24fc417d491",
    "oue-memo": "f39644c5b9af1748",
    "subset-memo": "bb7b4decd9af18b8",
}


def _digest(reports: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(reports).tobytes()).hexdigest()[:16]


def _randomize(mechanism: object, source: RandomSource, **kwargs: object) -> np.ndarray:
    randomize = getattr(mechanism, "randomize_codes", None) or mechanism.randomize  # type: ignore[attr-defined]
    return randomize(CODES, source=source, label="c", **kwargs)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("kind", ["key", "seed"])
def test_keyed_reports_are_frozen(name: str, kind: str) -> None:
    source = RandomSource.from_key(KEY) if kind == "key" else RandomSource.from_seed(11)
    reports = _randomize(MECHANISMS[name](), source, row_start=123)
    assert _digest(reports) == FROZEN[f"{name}-{kind}"]


@pytest.mark.parametrize("name", ["rappor", "krr", "oue", "subset"])
def test_memoized_reports_are_frozen(name: str) -> None:
    mechanism = MECHANISMS[name](epsilon_infinity=3.0)
    reports = _randomize(
        mechanism,
        RandomSource.from_seed(3),
        row_start=5,
        users=USERS,
        memo=RandomSource.from_key(KEY),
    )
    assert _digest(reports) == FROZEN[f"{name}-memo"]
