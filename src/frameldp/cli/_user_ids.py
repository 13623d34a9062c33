"""The user column of ``frameldp privatize``, read with the id type its memo recorded.

A memo's name binds the canonical type of the user ids (``"integer"``, ``"text"`` or
``"bytes"``, :func:`~frameldp.frames.inputs.user_id_type`): ``7`` and ``"7"`` are digested
apart, so they draw independent permanent responses and must never be charged as one memo. A
CSV file has no types (the command line reads its columns as text), while a Parquet file of the
same people may hold integers. So that a nightly job alternating the two keeps every person's
permanent responses, the run looks up which type the ledger charged under this memo key
before, and reads the user column as that type: decimal text as integers, integers as their
decimal text. Text that is not an integer's one decimal spelling (``"007"``, ``"7.0"``), and
any change to or from bytes, is refused with an error that names the recorded type. Without a
ledger nothing is recorded: the column is read as the file gives it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc

from frameldp.accounting import Ledger
from frameldp.core.mechanisms import Mechanism, Memoizing, memoizes
from frameldp.core.randomness import RandomSource
from frameldp.errors import ParameterError, shown
from frameldp.frames.inputs import USER_ID_TYPES, user_id_type

__all__ = ["read_user_type", "with_user_type"]

_ARROW = {"integer": pa.int64(), "text": pa.large_string()}


def _charged_memos(ledger: Path, budget: str) -> set[str]:
    """The memo names of every release charged to ``budget`` (a sampled collection's among
    its columns' events)."""
    memos: set[str] = set()
    for spend in Ledger(ledger).history(budget):
        for event, _ in spend.guarantee.events:
            memos.update(_memos_of(event))
    return memos


def _memos_of(event: object) -> Iterator[str]:
    memo = getattr(event, "memo", None)  # memoized events name their memo
    if isinstance(memo, str):
        yield memo
    for part in getattr(event, "components", ()):  # a sampled collection's columns
        for inner, _ in part:
            yield from _memos_of(inner)


def read_user_type(
    given: pa.DataType,
    user: str,
    mechanisms: Mapping[str, Mechanism],
    *,
    memo_key: bytes | None,
    ledger: Path | None,
    budget: str | None,
) -> str:
    """The id type to read ``user`` as: the one the ledger charged this memo key's columns
    under, or (nothing recorded) the file's own, ``given``; a change that is not a
    conversion between integers and their decimal text is refused."""
    own = user_id_type(given, user)
    if memo_key is None or ledger is None or budget is None or not ledger.is_file():
        return own
    memo = RandomSource.from_memo_key(memo_key)
    charged = _charged_memos(ledger, budget)
    recorded = {
        kind
        for column, mechanism in mechanisms.items()
        if memoizes(mechanism)
        for kind in USER_ID_TYPES
        if cast(Memoizing, mechanism).memo_id(memo, column, user_type=kind) in charged
    }
    if not recorded or own in recorded:
        return own
    kind = " and ".join(sorted(recorded))
    if {kind, own} <= set(_ARROW):
        return kind
    raise ParameterError(
        f"user column {shown(user)}: the ledger's budget {shown(budget)} charged this memo key "
        f"with {kind} user ids, and this input holds {own}. Ids of another type draw new "
        f"permanent responses (another memo): write the user column as {kind}, or use another "
        "memo key"
    )


def with_user_type(
    chunks: Iterator[pa.RecordBatch], user: str, kind: str, *, row_start: int = 0
) -> Iterator[pa.RecordBatch]:
    """``chunks`` with the user column read as ``kind`` (see the module docstring)."""
    row = row_start
    for batch in chunks:
        index = batch.schema.get_field_index(user)
        ids = batch.column(index)
        if user_id_type(ids.type, user) != kind:
            converted = _converted(ids, user, kind, row)
            batch = batch.set_column(index, pa.field(user, converted.type), converted)
        row += batch.num_rows
        yield batch


def _converted(ids: pa.Array, user: str, kind: str, row_start: int) -> pa.Array:
    """Integers as their decimal text, or decimal text as integers (exactly one spelling)."""
    if kind == "text":
        return pc.cast(ids, _ARROW["text"])
    try:
        numbers = pc.cast(ids, _ARROW["integer"])
        exact = pc.all(pc.fill_null(pc.equal(pc.cast(numbers, ids.type), ids), True)).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        exact = False
    if exact:
        return cast(pa.Array, numbers)
    text = ids.to_pylist()
    bad = next((i for i, v in enumerate(text) if v is not None and not _decimal(v)), 0)
    raise ParameterError(
        f"user column {shown(user)}, row {row_start + bad}: id {shown(text[bad])} is not an "
        "integer's decimal text, and this memo key's ids were integers: write the user column "
        "as integers, or use another memo key"
    )


def _decimal(text: str) -> bool:
    """Whether ``text`` is an int64's one decimal spelling."""
    try:
        return str(int(text)) == text and -(2**63) <= int(text) < 2**63
    except ValueError:
        return False
