"""Atomic file writes: a temporary file beside the target, renamed onto it once complete.

A temporary file is named ``.TARGET.HOST-PID-RANDOM.tmp``: ``HOST`` is a short hash of this
machine's name and ``PID`` the writing process. A process killed outright (SIGKILL, the OOM
killer, a power cut) cannot remove its temporary file, which may hold reports and raw ``--keep``
columns; every later write into the same directory removes the temporary files that processes of
this machine left behind and that no longer run (:func:`remove_stale`). A live process's file, or
one written from another machine sharing the directory, is left alone (a reused pid only delays
the removal).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from frameldp.errors import ParameterError

__all__ = ["atomic", "check_target", "remove_stale", "replace", "temporary"]

HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
"""Tag of this machine in temporary file names (a hash: the name itself is not written)."""

_TEMPORARY = re.compile(r"^\..+\.(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[^.]+\.tmp$")


def _running(pid: int) -> bool:
    """Whether process ``pid`` of this machine still runs (when in doubt: yes)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # PermissionError: it runs, as another user
        return True
    return True


def remove_stale(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files of dead processes of this machine from ``directory``;
    returns them. Unreadable directories and files that cannot be removed are skipped."""
    removed = []
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            found = _TEMPORARY.match(entry.name)
            if found is None or found["host"] != HOST or _running(int(found["pid"])):
                continue
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def check_target(path: str | os.PathLike[str], role: str = "output") -> None:
    """Refuse, before any work, a target that cannot be replaced by a file (a directory)."""
    target = Path(path)
    if target.exists() and not target.is_file():
        kind = "a directory" if target.is_dir() else "not a regular file"
        raise ParameterError(f"{role} {str(target)!r} is {kind}: it cannot be replaced by a file")


@contextlib.contextmanager
def temporary(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A new empty temporary file beside ``path``, removed when the block ends unless it was
    renamed (see :func:`replace`). Stale temporary files of the directory are removed first.

    The file gets the mode a plain ``open`` would give it (``mkstemp`` makes it 0600).
    """
    target = Path(path)
    remove_stale(target.parent)
    descriptor, name = tempfile.mkstemp(
        prefix=f".{target.name}.{HOST}-{os.getpid()}-", suffix=".tmp", dir=target.parent
    )
    os.close(descriptor)
    created = Path(name)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(created, 0o666 & ~umask)
        yield created
    finally:
        created.unlink(missing_ok=True)


def replace(temporary_path: Path, target: str | os.PathLike[str]) -> None:
    """Rename a complete temporary file onto ``target``; an error names the target."""
    try:
        os.replace(temporary_path, target)
    except OSError as error:
        raise OSError(
            error.errno, f"cannot replace {str(target)!r}: {error.strerror or error}"
        ) from None


@contextlib.contextmanager
def atomic(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto it only once the block completes.

    If the block raises (Ctrl-C included), the temporary file is removed and ``path`` is left as
    it was. A ``path`` that is a directory is refused before the block runs.
    """
    check_target(path)
    with temporary(path) as created:
        yield created
        replace(created, path)
