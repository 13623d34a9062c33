"""Atomic file writes: a temporary file beside the target, renamed onto it once complete."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic"]


@contextlib.contextmanager
def atomic(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto it only once the block completes.

    If the block raises (Ctrl-C included), the temporary file is removed and ``path`` is left as
    it was. The file gets the mode a plain ``open`` would give it (``mkstemp`` makes it 0600).
    """
    target = Path(path)
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
    )
    os.close(descriptor)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        yield Path(temporary)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
