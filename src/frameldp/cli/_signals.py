"""SIGTERM and Ctrl-C: a run stops cleanly before its commit, and finishes once committing.

A command that writes a release goes through two phases:

* **working** (reading, privatizing, writing temporary files, the ledger transaction open):
  SIGTERM exits through Python with status ``128 + 15`` and Ctrl-C raises
  :class:`KeyboardInterrupt`, so temporary files are removed and the ledger transaction is
  rolled back: nothing was released, nothing is charged, a retry is safe.
* **committing** (the ledger commit and the renames) and after: SIGTERM and Ctrl-C are
  ignored (``SIG_IGN``: the operating system drops them). The commit runs to its end and the
  command exits 0, as it would have without the signal: a scheduler that saw a failure would
  retry, and release and charge twice. In the console script they stay ignored until the
  process has exited: a Python handler would not do, because interpreter shutdown puts back the
  default disposition of every signal that has one, and a signal in the tenths of a second of
  module teardown after it killed committed runs (exit -15).

SIGKILL cannot be caught: see :mod:`frameldp._atomic` for the temporary files it leaves.
``FRAMELDP_TEST_PAUSE_AT`` (:func:`pause_at`) lets tests stop a run at a named point.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

__all__ = ["PAUSE_VARIABLE", "Commit", "committing", "install", "pause_at", "terminate_cleanly"]

PAUSE_VARIABLE = "FRAMELDP_TEST_PAUSE_AT"
"""Test hook: the name of a point (``start``, ``batch``, ``charged``, ``committed``) where a
run says ``frameldp: paused at POINT`` on standard error and waits for a signal."""

PAUSE_SECONDS = 120.0
"""Longest pause of the test hook before the run goes on by itself."""

HANDLED = (signal.SIGTERM, signal.SIGINT)


class _State:
    """What the handler does with a signal: act on it (working) or not (committing), and
    whether the commit has put ``SIG_IGN`` in its place."""

    def __init__(self) -> None:
        self.deferring = False
        self.ignoring = False
        self.installed = False
        self.received = 0


_STATE = _State()


def _handle(signum: int, frame: FrameType | None) -> Any:
    _STATE.received += 1
    if _STATE.deferring:
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    sys.exit(128 + signum)


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """SIGTERM and Ctrl-C handled as the module docstring says during the block (the handlers
    before it are restored after; a new command starts in the working phase)."""
    if _nested():  # the console script: its handlers (or the commit's SIG_IGN) stay
        yield
        return
    _STATE.deferring = False
    previous = {number: signal.signal(number, _handle) for number in HANDLED}
    try:
        yield
    finally:
        _STATE.ignoring = False
        for number, handler in previous.items():
            signal.signal(number, handler)


def install() -> None:
    """Handle SIGTERM and Ctrl-C as the module docstring says for the rest of the process (the
    console script): a signal arriving as the committed command exits is ignored too."""
    _STATE.deferring = False
    _STATE.ignoring = False
    _STATE.installed = True
    for number in HANDLED:
        signal.signal(number, _handle)


def _nested() -> bool:
    """Whether the process-wide handlers are installed (the console script's ``main``)."""
    return _STATE.installed and signal.getsignal(signal.SIGTERM) in (_handle, signal.SIG_IGN)


def _set_all(handler: Any) -> None:
    for number in HANDLED:
        signal.signal(number, handler)


class Commit:
    """The commit section of a run (see :func:`committing`)."""

    def begin(self) -> None:
        """From here on, signals are ignored: the commit runs to its end."""
        _STATE.deferring = True  # a signal caught before SIG_IGN is in place is ignored too
        if signal.getsignal(signal.SIGTERM) is _handle:  # a command's run, in the main thread
            _set_all(signal.SIG_IGN)
            _STATE.ignoring = True


@contextlib.contextmanager
def committing() -> Iterator[Commit]:
    """A run whose commit starts at ``begin()``. If the block then completes, the run has
    committed and signals stay ignored until the command ends (exit 0); if the block raises,
    signals act again and the command fails with that error."""
    try:
        yield Commit()
    except BaseException:
        _STATE.deferring = False
        if _STATE.ignoring:
            _STATE.ignoring = False
            _set_all(_handle)
        raise


def pause_at(point: str) -> None:
    """Test hook: when ``FRAMELDP_TEST_PAUSE_AT`` names ``point``, print ``frameldp: paused at
    POINT`` on standard error and wait until a signal is handled (or ``PAUSE_SECONDS``), then go
    on. It only waits: what the signal does is what it does at that point of any run."""
    if os.environ.get(PAUSE_VARIABLE) != point:
        return
    seen = _STATE.received
    if _STATE.ignoring:  # counted, still ignored (deferring): the hook sees it arrive
        _set_all(_handle)
    print(f"frameldp: paused at {point}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + PAUSE_SECONDS
    while _STATE.received == seen and time.monotonic() < deadline:
        time.sleep(0.01)
    if _STATE.ignoring:
        _set_all(signal.SIG_IGN)
