"""Shuffling a frame of reports: which columns it keeps, what it records, its order.

Plumbing only: no formula lives here.
"""

from __future__ import annotations

import secrets
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import PrivacyGuarantee, amplify_by_shuffling
from frameldp.accounting.guarantee import INSECURE
from frameldp.core.mechanisms import (
    Capability,
    mechanism_from_spec,
)
from frameldp.core.randomness import (
    KeyedStream,
    content_sort_keys,
    permutation_from_keys,
    resolve_source,
)
from frameldp.errors import (
    FrameLDPWarning,
    InsecureSeedWarning,
    MechanismNotFoundError,
    ParameterError,
    caller_stacklevel,
    shown,
)
from frameldp.frames.fingerprint import fingerprint_of, recorded_fingerprint
from frameldp.frames.inputs import (
    require_column,
)
from frameldp.frames.lookup import (
    report_names,
)
from frameldp.frames.pipeline import row_content
from frameldp.frames.release import (
    guarantee_of,
    recorded_rows_per_user,
)

__all__ = [
    "SHUFFLED_KEY",
    "kept_columns",
    "plan_shuffle",
    "refuse_other_rows",
    "refuse_repeated_rows",
    "released_rows",
    "shuffle_keys",
    "shuffle_order",
    "shuffle_record",
    "shuffle_stream",
    "shuffled_columns",
    "shuffled_privacy",
]


SHUFFLED_KEY = "shuffled"
"""Key under which a shuffled frame records ``{"reports": n, "kept": [...], "collection": id}``."""


def shuffled_columns(specs: Mapping[str, Any]) -> list[Any]:
    """The report columns (Bloom cohorts included) of a frame whose recorded ``specs`` may be
    shuffled, or a refusal before any row is read: no report column, shuffler messages, or
    memoized reports (a person may hold several correlated rows)."""
    if not specs:
        raise MechanismNotFoundError(
            "shuffle needs a frame of reports that records its mechanisms (the frame privatize "
            "returned); nothing here is known to be a report column"
        )
    reports: list[Any] = []
    for column, spec in specs.items():
        mechanism = mechanism_from_spec(spec)
        if Capability.SHUFFLER_MESSAGES in mechanism.capabilities:
            raise ParameterError(
                f"column {shown(column)}: {mechanism.title} messages are already the shuffler's "
                "output"
            )
        if spec.get("memo"):
            raise ParameterError(
                f"column {shown(column)}: its reports share memoized permanent responses per "
                "user, so a person may hold several correlated rows; amplification by shuffling "
                "counts each row as an independent person. Shuffle one-report-per-person "
                "releases (privatize without user=)"
            )
        if spec.get("collection"):
            raise ParameterError(
                f"column {shown(column)}: each row reported one column of "
                f"{spec['collection'].get('columns')} (collect='sample'), so about 1/d of the "
                "rows hold its reports: amplification by shuffling over every row would "
                "overstate the crowd that hides a person. Shuffle a release of every column "
                "(collect='split')"
            )
        reports += report_names(column, mechanism, spec)
    return reports


def plan_shuffle(
    columns: list[Any],
    specs: Mapping[str, Any],
    keep: Any,
    rows: int | None,
    *,
    seed: int | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """The columns a shuffled frame keeps, and what the frame records of its shuffle.

    Kept are every report column (Bloom cohorts included) and the explicitly ``keep``-ed ones,
    which void the shuffle guarantee (warned, and recorded as ``"kept"``). ``rows`` is the
    number of shuffled reports (``None`` when a lazy frame counts them on use); see
    :func:`shuffle_record`. An order drawn from ``seed`` is recorded as ``"seeded"`` (its
    amplified guarantee is then marked insecure) and warned about.
    """
    reports = shuffled_columns(specs)
    for column in reports:
        require_column(columns, column)
    if rows is not None:
        refuse_repeated_rows(specs, rows)
    kept = kept_columns(columns, keep)
    extra = [column for column in kept if column not in reports]
    if extra:
        warnings.warn(
            f"shuffle keeps columns {extra}: they travel with each report, so the shuffle-model "
            "guarantee does not hold (the frame keeps its local guarantee only)",
            FrameLDPWarning,
            stacklevel=caller_stacklevel(),
        )
    record = shuffle_record(extra, rows)
    if seed is not None:
        warnings.warn(
            f"shuffle order drawn from seed=: {INSECURE}. Use seed= for tests and simulations only",
            InsecureSeedWarning,
            stacklevel=caller_stacklevel(),
        )
        record["seeded"] = True
    return reports + extra, record


def kept_columns(columns: list[Any], keep: Any) -> list[Any]:
    """The columns ``keep`` names (one name or a list), each in ``columns`` and named once."""
    if isinstance(keep, str):
        kept = [keep]
    elif isinstance(keep, Iterable):
        kept = list(keep)
    else:
        raise ParameterError(
            f"keep= takes a column name or a list of names, got {shown(keep)}", parameter="keep"
        )
    for i, column in enumerate(kept):
        require_column(columns, column)
        if column in kept[:i]:
            raise ParameterError(f"keep= names column {shown(column)} twice", parameter="keep")
    return kept


def shuffle_record(kept: list[Any], rows: int | None) -> dict[str, Any]:
    """What a shuffled frame records: the kept extra columns, the number of shuffled reports,
    and a fresh identifier of this collection.

    A frame derived from one shuffled collection alone (a subset, a copy, rows repeated) is a
    post-processing of it and keeps its guarantee, amplified over the *recorded* ``reports``.
    The identifier makes the records of two collections differ even when their mechanisms and
    sizes agree, so pandas drops the record when they are concatenated, instead of claiming
    amplification over rows that are not one per person.
    """
    return {"kept": list(kept), "reports": rows, "collection": secrets.token_hex(16)}


def shuffle_stream(key: bytes | None, seed: int | None) -> KeyedStream:
    """The keyed stream whose per-row keys order a shuffle."""
    return resolve_source(key, seed).stream("shuffle")


def shuffle_keys(
    stream: KeyedStream, rows: NDArray[np.int64], columns: list[pa.Array | pa.ChunkedArray]
) -> NDArray[np.uint64]:
    """128-bit sort keys of rows bound to their position and to the content of ``columns``
    (:func:`~frameldp.core.randomness.content_sort_keys`): a reused key orders two different
    frames independently, and the same frame (in any chunking) the same way."""
    return content_sort_keys(stream, rows, row_content(columns, len(rows)))


def shuffle_order(
    columns: list[pa.Array | pa.ChunkedArray], num_rows: int, key: bytes | None, seed: int | None
) -> NDArray[np.int64]:
    """The order of a shuffle of ``num_rows`` rows of ``columns``: a uniformly random
    permutation (a fresh key unless ``key``/``seed``), bound to the rows' content."""
    rows = np.arange(num_rows, dtype=np.int64)
    return permutation_from_keys(shuffle_keys(shuffle_stream(key, seed), rows, columns))


def released_rows(specs: Mapping[str, Any] | None) -> int | None:
    """The fewest rows any recorded release of these columns had (None: not recorded, as by
    a lazy plan or a distributed frame, whose rows are counted as they are read)."""
    counts = [_recorded_rows(column, spec) for column, spec in (specs or {}).items()]
    found = [count for count in counts if count is not None]
    return min(found) if found else None


def _recorded_rows(column: Any, spec: Mapping[str, Any]) -> int | None:
    """The row count a release recorded for ``column`` (None: none recorded)."""
    if "rows" not in spec:
        return None
    rows = spec["rows"]
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        raise ParameterError(
            f"column {shown(column)}: the recorded row count of its release must be an "
            f"integer >= 0, got {shown(rows)}",
            column=column,
        )
    return rows


def refuse_repeated_rows(specs: Mapping[str, Any], rows: int) -> None:
    """Refuse to shuffle more rows than the release held: rows were repeated, and a shuffle
    would count a person's copies as other people (a larger crowd, a smaller stated loss)."""
    for column, spec in specs.items():
        released = _recorded_rows(column, spec)
        if released is not None and rows > released:
            raise ParameterError(
                f"column {shown(column)}: the frame holds {rows} rows of a release of "
                f"{released}: rows were repeated, and amplification by shuffling would "
                "count a person's copies as other people. Shuffle the release as privatized "
                "(stack several with frameldp.concat_releases)"
            )


def refuse_other_rows(
    specs: Mapping[str, Any], read: Callable[[Any], pa.Array | pa.ChunkedArray]
) -> None:
    """Refuse to shuffle rows that are not exactly the rows of their release: a row repeated,
    even in place of a dropped one, would make a shuffle count one person's copies as other
    people. The release's rows are known by their fingerprint
    (:func:`~frameldp.frames.fingerprint.recorded_fingerprint`: recorded by an in-memory release
    or a file, or drawn batch by batch in this process); a release whose rows are not known is
    refused too. ``read(name)`` is the frame's column ``name``."""
    for column, spec in specs.items():
        recorded = recorded_fingerprint(spec, column)
        if recorded is None:
            raise ParameterError(
                f"column {shown(column)}: frameldp cannot tell whether these rows are the rows "
                "of their release, each once: the release records no readable fingerprint of "
                "its rows (it was drawn batch by batch in another process: a cluster's "
                "workers, or a file not written by frameldp privatize). A shuffle counts every "
                "row as another person, so shuffle a release in the process that drew it (a "
                "LazyFrame or a Dask frame computed here, or ldp.shuffle on the lazy frame "
                "itself), or a file written by frameldp privatize"
            )
        names = report_names(column, mechanism_from_spec(spec), spec)
        found = fingerprint_of([read(name) for name in names])
        if found != recorded:
            held, released = found.split(":")[0], recorded.split(":")[0]
            raise ParameterError(
                f"column {shown(column)}: the frame's {held} rows are not the {released} rows "
                "of its release (rows were repeated, dropped or changed since): a shuffle "
                "counts every row as another person, so it takes a release as privatized, "
                "whole (privatize a subset on its own to shuffle it; stack releases with "
                "frameldp.concat_releases)"
            )


def shuffled_privacy(
    specs: Mapping[str, Any] | None, shuffled: Mapping[str, Any] | None, rows: int | None
) -> PrivacyGuarantee | None:
    """The recorded columns' guarantee, amplified by shuffling when the frame was shuffled
    without extra columns (local otherwise).

    The number of shuffled reports is the one recorded at shuffle time (``rows``, the frame's
    current row count, only when none was recorded); with no reports there is nothing to
    amplify and the local guarantee is returned.
    """
    local = guarantee_of(specs)
    if local is None or not shuffled or shuffled.get("kept") or local.shuffled:
        return local
    reports = shuffled.get("reports")
    reports = rows if reports is None else int(reports)
    released = released_rows(specs)
    if reports is not None and released is not None:
        reports = min(reports, released)  # rows repeated after a lazy shuffle are no one new
    if not reports:
        return local
    # A person holding r reports is one randomizer of r messages: the shuffle hides them among
    # the people, at least ceil(reports / r) of them (shuffling messages one by one is a
    # post-processing of shuffling each person's messages together).
    reports = -(-reports // recorded_rows_per_user((specs or {}).values()))
    amplified = amplify_by_shuffling(local, reports)
    # A seeded order is known to whoever knows the seed: the shuffle hides nothing from them.
    return amplified.insecure() if shuffled.get("seeded") else amplified
