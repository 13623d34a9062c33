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
import pandas as pd
import pyarrow as pa
import pytest

from frameldp.core import (
    BalcerCheu,
    BlockHadamardResponse,
    BloomRappor,
    HadamardResponse,
    LocalHashing,
    OptimizedUnaryEncoding,
    PrefixExtending,
    ProjectiveGeometryResponse,
    RandomizedResponse,
    RandomSource,
    Rappor,
    SubsetSelection,
)
from frameldp.core.randomness import MEMO_KEY_PREFIX

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
    "pgr": lambda **kw: ProjectiveGeometryResponse(1.0, domain=range(32), **kw),
    "block-hadamard": lambda **kw: BlockHadamardResponse(2.0, domain=range(32), block_size=8, **kw),
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
    "pgr-key": "765d38eb7bf57f8f",  # frozen when projective geometry response was added
    "pgr-seed": "97c9171bad189834",
    "block-hadamard-key": "a62077fe023e598c",  # frozen when block Hadamard response was added
    "block-hadamard-seed": "fac0f41608dd64dd",
    "rappor-memo": "01f167d64354a1cb",
    "krr-memo": "60d7c24fc417d491",
    "oue-memo": "f39644c5b9af1748",
    "subset-memo": "bb7b4decd9af18b8",
    "pgr-memo": "36ae77281a8b5a8f",
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


@pytest.mark.parametrize("name", ["rappor", "krr", "oue", "subset", "pgr"])
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


# --- whole columns: fused runs of rows, memoized users, open domains, the shuffle model -------

MEMO = bytes(range(1, 33))
BIG = 300_000  # k-RR runs of rows: more than two fused runs
CATEGORIES = [f"v{i}" for i in range(20)]
_CODES = (np.arange(BIG) * 7919 + (np.arange(BIG) // 13)) % 20
VALUES = pa.array([CATEGORIES[c] for c in _CODES])
USER_IDS = pa.array([f"u{i % 997}" for i in range(BIG)])
STRINGS = pa.array([f"site{i % 300}.example" for i in range(5_000)])

COLUMNS = {
    "krr": (lambda **kw: RandomizedResponse(1.0, domain=CATEGORIES, **kw), VALUES),
    "krr-k2": (
        lambda **kw: RandomizedResponse(1.0, domain=CATEGORIES[:2], **kw),
        pa.array([CATEGORIES[c % 2] for c in _CODES[:20_000]]),
    ),
    "bloom": (lambda **kw: BloomRappor(2.0, **kw), STRINGS),
    "olh": (lambda **kw: LocalHashing(1.0, domain=CATEGORIES, **kw), VALUES[:20_000]),
    "prefix": (lambda **kw: PrefixExtending(2.0, **kw), STRINGS),
    "balcer": (
        lambda **kw: BalcerCheu(2.0, 1e-6, n=20_000, domain=CATEGORIES, **kw),
        VALUES[:20_000],
    ),
}
MEMOIZED = {"krr": 3.0, "bloom": 4.0, "olh": 3.0}

FROZEN_COLUMNS = {
    "krr-key": "781bdc2b9ec5d339",
    "krr-seed": "b243b34fc2a293a6",
    "krr-memo": "cf341baab92871e8",
    "krr-two-stage": "30653ad4bae667b0",
    "krr-k2-key": "bd1880f8995a5db6",
    "krr-k2-seed": "9aed43589e6ae7ce",
    "bloom-key": "3e2be5a5a6b0e898",
    "bloom-seed": "db8e2983820c64ed",
    "bloom-memo": "685f6b38a810e6aa",
    "olh-key": "50783437ba10b32d",
    "olh-seed": "1c587ee69023a0c1",
    "olh-memo": "38b1edb91a575c8e",
    "olh-two-stage": "74ee6c036cb62882",
    "prefix-key": "30720a8f899303e4",
    "prefix-seed": "e18ca0c7482b808b",
    "balcer-key": "5042596e628cc6e3",
    "balcer-seed": "3e48d145be216a9c",
    # Memo scheme 3 (a key of frameldp.new_memo_key()): frozen when it was added.
    "bloom-memo-v3": "46135ff816385dec",
    "krr-memo-v3": "b0bde09a49c9bd68",
    "olh-memo-v3": "3522de89c233fe39",
}


def _column_digest(columns: dict[str, pa.Array]) -> str:
    digest = hashlib.sha256()
    for name in sorted(columns):
        digest.update(repr(columns[name].to_pylist()).encode())
    return digest.hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(COLUMNS))
@pytest.mark.parametrize("kind", ["key", "seed"])
def test_keyed_columns_are_frozen(name: str, kind: str) -> None:
    make, values = COLUMNS[name]
    source = RandomSource.from_key(KEY) if kind == "key" else RandomSource.from_seed(11)
    mechanism = make(epsilon_infinity=4.0) if name == "bloom" else make()
    reports = mechanism.privatize_column(values, column="c", source=source, row_start=17)
    assert _column_digest(reports) == FROZEN_COLUMNS[f"{name}-{kind}"]


@pytest.mark.parametrize("name", sorted(MEMOIZED))
def test_memoized_columns_are_frozen(name: str) -> None:
    make, values = COLUMNS[name]
    mechanism = make(epsilon_infinity=MEMOIZED[name])
    memoized = mechanism.privatize_column(
        values,
        column="c",
        source=RandomSource.from_seed(3),
        row_start=5,
        users=USER_IDS[: len(values)],
        user_column="u",
        memo=RandomSource.from_key(MEMO),
    )
    assert _column_digest(memoized) == FROZEN_COLUMNS[f"{name}-memo"]
    if name != "bloom":  # two stages, no memo: the permanent response is drawn per report
        two = mechanism.privatize_column(
            values, column="c", source=RandomSource.from_key(KEY), row_start=5
        )
        assert _column_digest(two) == FROZEN_COLUMNS[f"{name}-two-stage"]


@pytest.mark.parametrize("name", sorted(MEMOIZED))
def test_memoized_columns_under_a_scheme_3_memo_key_are_frozen(name: str) -> None:
    make, values = COLUMNS[name]
    memoized = make(epsilon_infinity=MEMOIZED[name]).privatize_column(
        values,
        column="c",
        source=RandomSource.from_seed(3),
        row_start=5,
        users=USER_IDS[: len(values)],
        user_column="u",
        memo=RandomSource.from_memo_key(MEMO_KEY_PREFIX + MEMO),
    )
    assert _column_digest(memoized) == FROZEN_COLUMNS[f"{name}-memo-v3"]


FROZEN_DENSE_SUBSETS_V3 = {64: "7d20c81540c0e88a", 1000: "724d92ff59e74ff0"}


@pytest.mark.parametrize(("k", "rows"), [(64, 20_000), (1000, 3_000)])
def test_dense_permanent_subsets_under_a_scheme_3_memo_key_are_frozen(k: int, rows: int) -> None:
    """Dense permanent subsets memoized under a scheme-3 memo key are drawn by
    ``permanent_subsets`` (Bernoulli bits and size corrections at each (person, value)'s
    address), not Floyd's algorithm: frozen from issue 41 on. k = 64 reads narrow Bernoulli
    rows and candidates that are all positions; k = 1000 wide rows, candidates past k that are
    rejected, and rows that need a second pool of candidates."""
    memo = RandomSource.from_memo_key(MEMO_KEY_PREFIX + MEMO)
    domain = [f"s{i}" for i in range(k)]
    mechanism = SubsetSelection(1.0, domain=domain, epsilon_infinity=3.0)
    assert mechanism._fast_permanent(memo)
    codes = (np.arange(rows) * 7919) % k
    memoized = mechanism.privatize_column(
        pa.array([domain[c] for c in codes]),
        column="c",
        source=RandomSource.from_seed(3),
        row_start=5,
        users=USER_IDS[:rows],
        user_column="u",
        memo=memo,
    )
    assert _column_digest(memoized) == FROZEN_DENSE_SUBSETS_V3[k]


@pytest.mark.filterwarnings("ignore::frameldp.InsecureSeedWarning")
def test_frames_and_buffers_are_frozen() -> None:
    """A pandas category column (the fast Arrow conversion), the same column as objects, and
    reports written into a caller's buffer under a key."""
    labels = [f"v{i}" for i in range(12)]
    raw = (np.arange(BIG) * 7919) % 12
    frame = pd.DataFrame(
        {"c": pd.Categorical.from_codes(raw, categories=[*labels[::-1], "unused"])}
    )
    for column in (frame, frame.astype(object)):
        reports = column.ldp.krr("c", 2.0, domain=labels, key=KEY)["c"].astype(object).tolist()
        assert hashlib.sha256(repr(reports).encode()).hexdigest()[:16] == "b70469fbe720ef40"
    mechanism = Rappor(1.0, domain=range(13))
    codes = (np.arange(3000) * 5) % 13
    out = np.zeros((3000, 2), dtype=np.uint8)
    mechanism.randomize_codes(
        codes, source=RandomSource.from_key(KEY), label="c", row_start=9, out=out
    )
    assert _digest(out) == "fd6bf9a84338ba5f"
