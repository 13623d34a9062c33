"""How many bytes a batch of reports takes, and the refusal of a batch that cannot fit in memory.

Unary encodings (RAPPOR, OUE, subset selection) write one bit per bucket: at ``k = 10^6`` a report
is 125 KB, and 10^5 rows of them are 12.5 GB. frameldp refuses such a batch before drawing any
report, naming the column and what would fit, instead of failing with numpy's ``MemoryError``
(or the system's out-of-memory killer) half way (issue 41). An engine that holds every batch's
reports at once (a DuckDB relation's reports come back as one Arrow table) checks all its rows;
a streaming engine checks each batch. The budget is a quarter of the memory this process may
use (the machine's, or a container's limit where smaller): the packed reports, their Arrow
column and the frame they are returned in are held together for a moment, about three times
the reports' bytes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import pyarrow as pa

from frameldp.core.mechanisms.registry import is_mechanism
from frameldp.errors import ParameterError, shown

__all__ = ["check_report_memory", "memory_budget", "report_bytes"]

# The physical memory assumed where the system does not say.
_FALLBACK_MEMORY: Final = 8 << 30
_CGROUP_V2: Final = "/sys/fs/cgroup/memory.max"
_CGROUP_V1: Final = "/sys/fs/cgroup/memory/memory.limit_in_bytes"


def memory_budget() -> int:
    """A quarter of the memory this process may use, in bytes: the machine's physical memory,
    or a container's limit (cgroup ``memory.max``) where it is smaller; of 8 GiB where neither
    can be read."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = 0
    limits = [int(total)] if total > 0 else []
    limit = _cgroup_limit()
    if limit is not None:
        limits.append(limit)
    return (min(limits) if limits else _FALLBACK_MEMORY) // 4


def _cgroup_limit() -> int | None:
    """The cgroup (v2, else v1) memory limit of this process, when there is one."""
    for path in (_CGROUP_V2, _CGROUP_V1):
        try:
            with open(path) as file:
                text = file.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < 1 << 60:  # v1 writes a huge number for none
            return int(text)
    return None


def report_bytes(mechanism: Any, column: str = "c") -> int:
    """The bytes one row's reports of ``mechanism`` take: fixed-width binary columns (bit
    vectors) and numbers; columns of variable width count 0."""
    total = 0
    for kind in mechanism.report_columns(column).values():
        storage = kind.value_type if pa.types.is_dictionary(kind) else kind
        if pa.types.is_fixed_size_binary(storage):
            total += storage.byte_width
        elif pa.types.is_integer(storage) or pa.types.is_floating(storage):
            total += storage.bit_width // 8
    return total


def check_report_memory(mechanisms: Mapping[Any, Any], rows: int) -> None:
    """Refuse, before any report is drawn, a batch of ``rows`` rows whose reports would take
    more than :func:`memory_budget`, naming the widest column."""
    sizes = {
        column: report_bytes(m, str(column))
        for column, m in mechanisms.items()
        if is_mechanism(m)  # anything else is refused by the release's own checks
    }
    if not sizes:
        return
    needed = rows * sum(sizes.values())
    budget = memory_budget()
    if needed <= budget:
        return
    column = max(sizes, key=lambda name: sizes[name])
    mechanism = mechanisms[column]
    fitting = max(1, budget // max(1, sum(sizes.values())))
    raise ParameterError(
        f"column {shown(column)}: {mechanism.title} writes {sizes[column]:,} bytes a report, and "
        f"{rows:,} rows of reports would take {_size(needed)}, more than {_size(budget)} (a "
        f"quarter of this machine's {_size(4 * budget)} of memory): use a mechanism of short "
        "reports (local hashing: a few bytes a report at nearly the same variance; "
        "frameldp.compare_mechanisms(..., n=rows) compares them), or privatize at most "
        f"{fitting:,} rows at a time (a file with frameldp privatize --chunk-rows {fitting})",
        column=column,
    )


def _size(nbytes: int) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{nbytes:,} bytes"
