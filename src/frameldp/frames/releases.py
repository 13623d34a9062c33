"""Rows of several releases read as one collection, composed per person: ``concat_releases``.

Every release records a random release id in the type of its report columns (DESIGN.md), so the
columns of two releases (two nights, two files) have different types: pandas ``concat`` turns
them into ``object`` columns, which no longer claim to hold reports, and polars ``concat``
refuses them. Rows of two releases are therefore never debiased as one release, whose guarantee
would understate what a person holding a report in each lost.

:func:`concat_releases` stacks them on purpose. The releases must use one mechanism per column
(same spec, but for the release's own records), and the result's type records every release id
and the rows each person holds over all of them: counted from ``user=`` when the frames keep a
user column, else the sum of each release's rows per person (anyone may be in every release).
Plumbing only: the guarantee comes from :func:`frameldp.accounting.per_person`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import pyarrow as pa

from frameldp.core.columns import combined
from frameldp.errors import ParameterError, shown
from frameldp.frames.adapters import in_memory_adapter_for
from frameldp.frames.fingerprint import recorded_fingerprint, summed
from frameldp.frames.inputs import user_id_type
from frameldp.frames.lookup import mechanism_spec
from frameldp.frames.persons import rows_per_user
from frameldp.frames.release import recorded_rows_per_user
from frameldp.frames.report_type import (
    RELEASE_SEPARATOR,
    ReportMetadata,
    ReportType,
    release_ids,
    storage_of,
)

__all__ = ["concat_releases", "stacked_types"]


def concat_releases(frames: Sequence[Any], *, user: str | None = None) -> Any:
    """The rows of ``frames`` (releases of one library, with the same columns) one below the
    other, their report columns typed to record every release and the rows per person.

    With ``user``, the column identifying people in every frame, a person's rows are counted
    over all the frames; without it, each person is taken to hold their release's rows in
    every release (the releases compose). The pandas index is reset.
    """
    frames = list(frames)
    if not frames:
        raise ParameterError("concat_releases needs at least one frame")
    adapter = in_memory_adapter_for(frames[0])
    columns = adapter.columns(frames[0])
    for frame in frames[1:]:
        if type(frame) is not type(frames[0]) or adapter.columns(frame) != columns:
            raise ParameterError(
                f"concat_releases: every frame must be a {type(frames[0]).__name__} with the "
                f"columns {shown(columns)}; got {shown(adapter.columns(frame))}"
            )
    reports = [adapter.report_columns(frame) for frame in frames]
    if user is not None and user not in columns:
        raise ParameterError(f"concat_releases: user column {shown(user)} is not in the frames")
    if user is not None and user in reports[0]:
        raise ParameterError(f"concat_releases: user column {shown(user)} holds reports")
    rows = None
    if user is not None:
        ids = [_canonical_ids(adapter.to_arrow(frame, user), user) for frame in frames]
        kinds = {str(array.type) for array in ids}
        if len(kinds) > 1:
            raise ParameterError(
                f"concat_releases: user column {shown(user)} holds ids of different types "
                f"({', '.join(sorted(kinds))}): cast them to one type first, so that a person "
                "is one id in every frame"
            )
        # A release's recorded count is a floor: a person held that many rows in it.
        recorded = recorded_rows_per_user(meta.spec for found in reports for meta in found.values())
        rows = max(rows_per_user(ids, user), recorded)
    types = stacked_types(reports, rows)
    out: dict[Any, pa.Array] = {}
    for name in columns:
        arrays = [combined(storage_of(adapter.to_arrow(frame, name))) for frame in frames]
        stacked = pa.concat_arrays([array.cast(arrays[0].type) for array in arrays])
        if name in types:
            kind = ReportType(stacked.type, types[name])
            stacked = pa.ExtensionArray.from_storage(kind, stacked)
        out[name] = stacked
    return adapter.from_arrow(out)


_CANONICAL_IDS = {"integer": pa.int64(), "text": pa.large_string(), "bytes": pa.large_binary()}


def _canonical_ids(array: pa.Array | pa.ChunkedArray, user: str) -> pa.Array:
    """A frame's user ids in their canonical Arrow type (64-bit integers, large text or bytes),
    so that one id is one person in every frame, whatever width or encoding each one used."""
    values = combined(storage_of(array))
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values.cast(_CANONICAL_IDS[user_id_type(values.type, user)])


def stacked_types(
    releases: Sequence[Mapping[Any, ReportMetadata]], rows: int | None = None
) -> dict[Any, ReportMetadata]:
    """The report types of the rows of several releases stacked (``{column: metadata}`` of
    each, in order): one mechanism per column, every release id recorded, and ``rows`` rows
    per person (counted from a user column), else each release's rows per person added up."""
    if rows is None:
        rows = sum(
            recorded_rows_per_user(meta.spec for meta in found.values()) for found in releases
        )
    names = list(releases[0])
    for found in releases[1:]:
        if sorted(map(str, found)) != sorted(map(str, names)):
            raise ParameterError(
                f"the releases hold other report columns: {shown(names)} and {shown(list(found))}"
            )
    return {
        name: _stacked_metadata(name, [found.get(name) for found in releases], rows)
        for name in names
    }


def _stacked_metadata(name: Any, found: list[ReportMetadata | None], rows: int) -> ReportMetadata:
    """One column's metadata over every release: one mechanism, every release id."""
    if any(meta is None for meta in found):
        raise ParameterError(
            f"column {shown(name)}: holds reports in some frames and not in others"
        )
    metas = [meta for meta in found if meta is not None]
    first = metas[0]
    for meta in metas[1:]:
        if mechanism_spec(meta.spec) != mechanism_spec(first.spec) or meta.part != first.part:
            raise ParameterError(
                f"column {shown(name)}: the releases use different mechanisms; debias each "
                "release on its own and compose their guarantees (frameldp.compose)"
            )
        if (meta.spec.get("memo"), meta.spec.get("seeded")) != (
            first.spec.get("memo"),
            first.spec.get("seeded"),
        ):
            raise ParameterError(
                f"column {shown(name)}: the releases differ in their memo or seed records; "
                "debias each release on its own"
            )
    if any(meta.shuffled for meta in metas):
        raise ParameterError(
            f"column {shown(name)}: a shuffled release cannot be stacked with others (its "
            "amplification holds for its own rows only); stack the releases, then shuffle"
        )
    ids = sorted({release for meta in metas for release in release_ids(meta.spec)})
    spec = {**first.spec, "rows_per_user": rows}
    spec.pop("rows", None)
    if all("rows" in meta.spec for meta in metas):
        spec["rows"] = sum(int(meta.spec["rows"]) for meta in metas)
    # The stacked rows are the releases' rows together (a shuffle checks that it gets them).
    spec.pop("fingerprint", None)
    prints = [recorded_fingerprint(meta.spec, meta.column) for meta in metas]
    if all(found is not None for found in prints):
        spec["fingerprint"] = summed(cast(list[str], prints))
    if ids:
        spec["release"] = RELEASE_SEPARATOR.join(ids)
    return ReportMetadata(spec, first.column, first.part)
