"""The engine of every in-memory frame library (pandas, polars DataFrames, pyarrow Tables).

A library whose rows are all in memory needs only an
:class:`~frameldp.frames.adapters.InMemoryAdapter` (columns to and from Arrow, rows taken in
a given order); :class:`InMemoryEngine` does the rest, through the one pipeline
(:func:`~frameldp.frames.pipeline.privatize_frame`): the whole frame is one batch, its rows
numbered from 0. Plumbing only: no formula lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import pyarrow as pa

from frameldp.core.columns import combined
from frameldp.core.mechanisms import (
    Mechanism,
    Statistic,
    UserDigests,
    memoizes,
    shared_user_digests,
)
from frameldp.core.randomness import RandomSource, content_sort_keys, resolve_source
from frameldp.errors import FrameLDPError
from frameldp.frames.adapters import InMemoryAdapter
from frameldp.frames.engine import Gather, LocalFrame, Privatization
from frameldp.frames.grouping import Grouped, Reduction, grouped_statistics, merge_grouped
from frameldp.frames.inputs import check_columns, require_column, user_id_type
from frameldp.frames.persons import (
    check_contributions,
    checked_ids,
    one_row_per_user,
    rows_per_key,
    rows_per_user,
    stated_people,
)
from frameldp.frames.pipeline import privatize_frame, row_content
from frameldp.frames.release import charging, memo_user_type, plan_release
from frameldp.frames.report_type import ReportMetadata, storage_of
from frameldp.results.native import Backend

__all__ = ["InMemoryEngine"]

_SEARCH_BATCH = 1 << 20  # reports a pass of a search reduces at once


class InMemoryEngine:
    """A frame whose rows are all in memory, read and written through its adapter."""

    one_machine: str | None = None

    def __init__(self, frame: Any, adapter: InMemoryAdapter) -> None:
        self.frame = frame
        self.adapter = adapter
        self.backend: Backend = adapter.backend

    def columns(self) -> list[Any]:
        return self.adapter.columns(self.frame)

    def report_columns(self) -> dict[Any, ReportMetadata]:
        return self.adapter.report_columns(self.frame)

    def recorded_shuffle(self) -> dict[str, Any]:
        return self.adapter.recorded_shuffle(self.frame)

    def num_rows(self) -> int:
        return self.adapter.num_rows(self.frame)

    def distinct(self, column: Any) -> pa.Array | pa.ChunkedArray:
        return self.adapter.to_arrow(self.frame, column)

    def gather(self, columns: list[Any]) -> LocalFrame:
        return LocalFrame(self.frame, self.adapter)

    def returned(self, frame: Any) -> Any:
        return frame

    def plain(self, *, text: bool) -> Any:
        return self.adapter.storage_view(self.frame, text=text)

    def unpack(self, column: str, mechanism: Mechanism) -> Any:
        return self.adapter.unpack(self.frame, column, mechanism)

    def privatize(self, request: Privatization) -> Any:
        """The whole frame as one batch, rows numbered from 0; with ``contributions="sample"``,
        one row of each person first."""
        mechanisms, user = request.mechanisms, request.user
        columns = self.columns()
        check_columns(columns, mechanisms, reports=self.report_columns())
        source = resolve_source(request.key, request.seed)
        frame, adapter = self.frame, self.adapter
        max_rows = request.max_rows_per_user
        sampled = check_contributions(request.contributions, user, max_rows) == "sample"
        if sampled and user is not None:  # check_contributions refused sampling without user
            require_column(columns, user)
            frame = self._one_row_per_user(mechanisms, user, source)
        ids: pa.Array | None = None
        digests: list[UserDigests] = []  # the release's user digests, once made

        def count() -> int:
            nonlocal ids
            ids = combined(storage_of(adapter.to_arrow(frame, user)))
            memoized = [column for column, m in mechanisms.items() if memoizes(m)]
            if memoized:
                # Digested once: each person's rows counted from the digests, which every
                # memoized column then reuses (shared_user_digests below). Ids or a memo key
                # that would be refused are counted as without memoization instead, so the
                # release refuses them where and in the order it always has.
                try:
                    checked_ids(ids, user)
                    user_id_type(ids.type, user)
                    memo = source
                    if request.memo_key is not None:
                        memo = RandomSource.from_memo_key(request.memo_key)
                    digests.append(UserDigests(ids, str(memoized[0]), user, 0, memo))
                except FrameLDPError:
                    digests.clear()
                else:
                    return rows_per_key(digests[0].person_keys())
            return rows_per_user([ids], user)

        counted = stated_people(user, max_rows, columns, count)
        user_type = memo_user_type(
            mechanisms, user, columns, lambda name: adapter.to_arrow(frame, name).type
        )
        release = plan_release(
            columns,
            mechanisms,
            source=source,
            user=user,
            memo_key=request.memo_key,
            rows_per_user=counted,
            num_rows=adapter.num_rows(frame),
            user_type=user_type,
        )
        with (
            charging(request.ledger, request.budget, release),
            shared_user_digests(digests[0] if digests else None),
        ):
            return privatize_frame(
                frame,
                mechanisms,
                specs=release.specs,
                source=source,
                user=user,
                memo=release.memo,
                user_ids=ids,
            )

    def _one_row_per_user(
        self, mechanisms: Mapping[str, Mechanism], user: str, source: RandomSource
    ) -> Any:
        """The frame with one row of each person, drawn by keys bound to the rows' position and
        content (the same job on the same input keeps the same rows)."""
        adapter, frame = self.adapter, self.frame
        num_rows = adapter.num_rows(frame)
        ids = adapter.to_arrow(frame, user)
        content = row_content([ids, *(adapter.to_arrow(frame, c) for c in mechanisms)], num_rows)
        rows = np.arange(num_rows, dtype=np.int64)
        keys = content_sort_keys(source.stream("contributions", str(user)), rows, content)
        return adapter.take(frame, self.columns(), one_row_per_user(ids, keys))

    def reduce(self, reduction: Reduction, by: tuple[str, ...]) -> Grouped:
        read = dict.fromkeys((*reduction.names, *by))
        arrays = {name: self.adapter.to_arrow(self.frame, name) for name in read}
        return grouped_statistics(arrays, reduction, by)

    def gatherer(self, names: tuple[str, ...], column: str) -> Gather:
        """The reports read once, then reduced batch by batch in every pass (bounded
        temporaries)."""
        arrays = {name: combined(self.adapter.to_arrow(self.frame, name)) for name in names}
        rows = len(arrays[names[0]])

        def gather(reduce: Callable[[Mapping[str, pa.Array]], Statistic]) -> Statistic:
            reduction = Reduction(names, reduce, column)
            total = Grouped()
            for start in range(0, max(rows, 1), _SEARCH_BATCH):
                batch = {name: part.slice(start, _SEARCH_BATCH) for name, part in arrays.items()}
                total = merge_grouped(total, grouped_statistics(batch, reduction, ()))
            return cast(Statistic, total.only())

        return gather
