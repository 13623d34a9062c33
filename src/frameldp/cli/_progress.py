"""Progress bars of rows for long commands (rich, on standard error, on a terminal only)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["rows_progress"]


@contextlib.contextmanager
def rows_progress(
    label: str, total: int | None, *, show: bool = True
) -> Iterator[Callable[[int], None]]:
    """A callback advancing a bar of ``total`` rows (``None``: unknown), drawn on standard error
    only when it is a terminal, so logs and pipes stay clean."""
    console = Console(stderr=True)
    if not show or not console.is_terminal:
        yield lambda rows: None
        return
    columns = [TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda rows: bar.advance(task, rows)
