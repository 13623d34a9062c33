"""Who is a person: the rows each person holds in a release, counted from its user column.

With ``user=``, a person is the privacy unit (DESIGN.md): a release states the loss of the
person holding the most rows (:func:`frameldp.accounting.per_person`), so every backend counts
the rows of each user id before a report is drawn. ``max_rows_per_user=`` declares a bound
instead: the release states the loss of that many rows, and refuses a person holding more.

A release that counts its people in one pass and draws its reports in another (a LazyFrame, a
Dask graph, the command line) reads its input twice, and the input may change in between (a log
that grows, a file rewritten): the count would then understate a person's rows. So the counting
pass also takes the fingerprint of the user ids it counted (:class:`People`), and the drawing
pass refuses rows whose ids are not those (:meth:`People.refuse_other_ids`): a Dask partition
before it draws; a LazyFrame before it draws (one more read of its user column), while it reads
and once its input is read; the command line before its file and its ledger entry are
committed. Plumbing only: no formula lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from frameldp.core.columns import combined
from frameldp.errors import DomainError, ParameterError, shown
from frameldp.frames.fingerprint import Fingerprint, cell_hashes
from frameldp.frames.inputs import require_column
from frameldp.frames.report_type import storage_of

__all__ = [
    "CONTRIBUTIONS",
    "People",
    "check_contributions",
    "check_max_rows",
    "checked_ids",
    "counted_rows",
    "one_row_per_user",
    "refuse_other_ids",
    "refuse_sampling",
    "rows_per_key",
    "rows_per_user",
    "stated_people",
    "stated_rows",
]

CONTRIBUTIONS = ("all", "sample")
"""What ``contributions=`` takes: every row of a person, or one of them drawn at random."""


def check_max_rows(max_rows_per_user: Any, user: Any) -> int | None:
    """``max_rows_per_user`` checked: None, or an integer >= 1 given with ``user``."""
    if max_rows_per_user is None:
        return None
    if user is None:
        raise ParameterError(
            f"max_rows_per_user={shown(max_rows_per_user)} needs user= (the column that "
            "identifies people)"
        )
    valid = isinstance(max_rows_per_user, int) and not isinstance(max_rows_per_user, bool)
    if not valid or max_rows_per_user < 1:
        raise ParameterError(
            f"max_rows_per_user must be an integer >= 1, got {shown(max_rows_per_user)}"
        )
    return int(max_rows_per_user)


class People:
    """The user ids a release counted its people from: their number and fingerprint."""

    def __init__(self, user: Any) -> None:
        self.user = user
        self.ids = Fingerprint()

    def add(self, ids: pa.Array | pa.ChunkedArray) -> None:
        """Add a batch of user ids (integers, text or bytes; others are refused)."""
        _refuse_nested(ids.type, self.user)
        self.ids.add([ids])

    def refuse_other_ids(self, found: Fingerprint, *, whole: bool = True) -> None:
        """Refuse a drawing pass whose user ids (``found``, so far unless ``whole``) are not
        the ones counted: more of them, or, once the input is read, other ones."""
        refuse_other_ids(self.user, self.ids.hexdigest(), found, whole=whole)

    def checked(
        self,
        batches: Iterable[Any],
        ids: Callable[[Any], pa.Array | pa.ChunkedArray] | None = None,
        *,
        whole: bool = True,
    ) -> Iterator[Any]:
        """``batches`` of the drawing pass, each refused when the ids read so far outnumber
        the counted ones, and, after the last (when they are the ``whole`` input), refused
        when their ids are others. ``ids(batch)`` reads a batch's user ids (default: an Arrow
        record batch's user column)."""
        read = ids or (lambda batch: batch.column(self.user))
        found = Fingerprint()
        for batch in batches:
            found.add([read(batch)])
            self.refuse_other_ids(found, whole=False)
            yield batch
        if whole:
            self.refuse_other_ids(found)


def refuse_other_ids(user: Any, counted: str, found: Fingerprint, *, whole: bool = True) -> None:
    """Refuse user ids (``found``, so far unless ``whole``) that are not the ones whose
    fingerprint ``counted`` a release counted its people from (see the module docstring)."""
    rows = int(counted.split(":")[0])
    if found.rows > rows:
        changed = f"it counted {rows} rows, and {found.rows} are read now"
    elif whole and found.hexdigest() != counted:
        changed = f"its {rows} rows now hold other user ids"
    else:
        return
    raise ParameterError(
        f"user column {shown(user)}: the input changed since the release counted each "
        f"person's rows ({changed}): a person may hold more rows than the release states. "
        "Privatize again over the input as it is now (or over a copy that does not change)"
    )


def _refuse_nested(kind: pa.DataType, user: Any) -> None:
    """Refuse user ids of a nested type (lists, structs): one id must name one person."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_nested(kind):
        raise ParameterError(
            f"user column {shown(user)}: user ids must be integers, text or bytes, got "
            f"{shown(str(kind))}"
        )


def rows_per_user(
    batches: Iterable[pa.Array | pa.ChunkedArray], user: Any, *, people: People | None = None
) -> int:
    """The largest number of rows one user id holds over ``batches`` of the user column (1
    for no rows), each batch also added to ``people`` when given. A null id is refused:
    frameldp cannot tell whose row it is."""
    counts: pa.Table | None = None
    start = 0
    for batch in batches:
        if people is not None:
            people.add(batch)
        array = checked_ids(batch, user, start)
        start += len(array)
        if not len(array):
            continue
        part = _counts(array)
        if counts is not None:
            if counts.schema != part.schema:  # integers in one batch, text in another
                raise DomainError(
                    f"user column {shown(user)}: its batches hold user ids of different kinds "
                    f"(integers and text, or integers beyond 2**63); give every batch one type"
                )
            merged = pa.concat_tables([counts, part]).group_by("id").aggregate([("rows", "sum")])
            part = pa.table({"id": merged["id"], "rows": merged["rows_sum"]})
        counts = part
    if counts is None or not counts.num_rows:
        return 1
    return int(pc.max(counts["rows"]).as_py())


def checked_ids(batch: pa.Array | pa.ChunkedArray, user: Any, start: int = 0) -> pa.Array:
    """One batch of user ids (its first row being row ``start``), decoded; a null id (named by
    its row) or a nested type is refused: frameldp cannot tell whose row it is."""
    array = combined(storage_of(batch))
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if array.null_count:
        row = start + int(pc.index(array.is_null(), True).as_py())
        counted_rows(None, array.null_count, user, first_null=row)
    _refuse_nested(array.type, user)
    return array


def rows_per_key(keys: NDArray[np.int64] | NDArray[np.uint64]) -> int:
    """The most rows holding one key (1 for no rows): each person's rows counted from one key
    per row that is equal for the rows of one id (keys that merge two ids can only count
    more)."""
    if not keys.size:
        return 1
    if keys.dtype == np.int64 and keys.min() >= 0 and keys.max() < 8 * keys.size:  # codes
        return int(np.bincount(keys).max())
    return int(np.unique(keys, return_counts=True)[1].max())


def _counts(array: pa.Array) -> pa.Table:
    """``(id, rows)`` of one batch of user ids (no nulls), counted by sorting: integers by
    value, four times faster than Arrow's hash count (0.03 against 0.12 CPU s for 10^6 ids);
    text and bytes by a 64-bit hash of their value (:func:`~.fingerprint.cell_hashes`), three
    times faster than Arrow's hash count (0.43 s for 10^6 distinct strings). Two ids whose
    hashes collide are counted as one person: the count can only grow, so the rows per person
    a release states are never fewer than the truth."""
    if pa.types.is_integer(
        array.type
    ):  # every width alike: 32-bit ids in one batch, 64 in the next
        large = pa.types.is_unsigned_integer(array.type) and pc.max(array).as_py() >= 1 << 63
        kind = pa.uint64() if large else pa.int64()
        ids, rows = np.unique(array.cast(kind).to_numpy(), return_counts=True)
        return pa.table({"id": pa.array(ids, kind), "rows": pa.array(rows, pa.int64())})
    hashes, rows = np.unique(cell_hashes(array), return_counts=True)
    return pa.table({"id": pa.array(hashes, pa.uint64()), "rows": pa.array(rows, pa.int64())})


def counted_rows(largest: Any, nulls: Any, user: Any, *, first_null: int | None = None) -> int:
    """The rows per user a backend counted (``largest``: the most rows of one id, None for
    none), refusing rows without an id (``nulls`` of them, the first at row ``first_null``
    when known): frameldp cannot tell whose rows they are."""
    if nulls:
        where = "" if first_null is None else f" (first in row {first_null})"
        raise DomainError(
            f"user column {shown(user)}: {int(nulls)} rows have a null user id{where}; "
            "frameldp cannot tell whose rows they are. Fill or drop them first"
        )
    return 1 if largest is None or largest != largest else max(1, int(largest))


def stated_people(
    user: Any, max_rows_per_user: Any, columns: list[Any], count: Callable[[], int]
) -> int | None:
    """The rows per person a release states (None without ``user``): the bound checked, the
    user column found among ``columns``, and ``count()`` (a pass over the user column: the
    most rows one id holds) held to the bound (:func:`stated_rows`)."""
    bound = check_max_rows(max_rows_per_user, user)
    if user is None:
        return None
    require_column(columns, user)
    return stated_rows(count(), bound, user)


def stated_rows(counted: int, max_rows_per_user: int | None, user: Any) -> int:
    """The rows per person a release states: the declared bound (a person holding more is
    refused), else the largest number counted."""
    if max_rows_per_user is None:
        return counted
    if counted > max_rows_per_user:
        raise ParameterError(
            f"user column {shown(user)}: a person holds {counted} rows, above "
            f"max_rows_per_user={max_rows_per_user}"
        )
    return max_rows_per_user


def check_contributions(contributions: Any, user: Any, max_rows_per_user: Any) -> str:
    """``contributions`` checked: ``"all"``, or ``"sample"`` with ``user`` (and no bound)."""
    if contributions not in CONTRIBUTIONS:
        raise ParameterError(
            f"contributions must be one of {CONTRIBUTIONS}, got {shown(contributions)}"
        )
    if contributions == "sample" and user is None:
        raise ParameterError(
            "contributions='sample' needs user= (the column that identifies people)"
        )
    if contributions == "sample" and max_rows_per_user is not None:
        raise ParameterError(
            "contributions='sample' keeps one row per person: max_rows_per_user= says nothing more"
        )
    return str(contributions)


def refuse_sampling(contributions: Any, user: Any, max_rows_per_user: Any, where: str) -> None:
    """Check ``contributions`` for a frame that is not in memory (``where``: "a Dask
    DataFrame"), which cannot draw one row per person: ``"sample"`` is refused."""
    if check_contributions(contributions, user, max_rows_per_user) == "sample":
        raise ParameterError(
            "contributions='sample' draws one row per person from an in-memory frame; on "
            f"{where} collect first, or bound the rows with max_rows_per_user="
        )


def one_row_per_user(
    ids: pa.Array | pa.ChunkedArray, keys: NDArray[np.uint64]
) -> NDArray[np.int64]:
    """The row of each user id whose 128-bit ``keys`` row is the smallest: one uniformly random
    row per person under keyed, independent keys (central DP libraries bound a person's
    contributions the same way), in their original order."""
    rows_per_user([ids], "user")  # refuses null ids
    array = combined(storage_of(ids))
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    codes = pc.dictionary_encode(array).indices.to_numpy(zero_copy_only=False)
    order = np.lexsort((keys[:, 1], keys[:, 0]))
    _, first = np.unique(codes[order], return_index=True)
    return np.sort(order[first]).astype(np.int64)
