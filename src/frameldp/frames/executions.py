"""A lazy release drawn with a fresh key is executed once.

A polars LazyFrame or a Dask graph that privatizes is a plan: nothing is drawn until it runs.
Its report types, and so its release id, are fixed when the plan is built, but with a fresh
key every run would draw new, independent reports. Two runs' outputs would then carry one
release id: stacked (``pl.concat``, one Parquet directory, ``pd.concat`` of two computations)
they would be read as one release, each person holding two reports while tables state one. So
a fresh-key plan runs once; a second run is refused, naming the release, before it draws
anything. To use the reports twice, keep the first run's output (``collect()``, ``persist()``,
or a file); to release again, plan again (a new release id, charged again).

A plan with a caller's ``key=`` may run again: it is the same job re-run on the same rows with
the same key, and gives the same reports (see :mod:`frameldp.core.randomness`).

Plumbing only: no formula lives here.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from frameldp.errors import ParameterError

__all__ = ["SingleExecution"]

_CLAIMED: set[str] = set()
_LOCK = threading.Lock()


class SingleExecution:
    """Admits the first run of release ``release`` and refuses every later one.

    In the process that planned the release, runs are counted in process memory. A copy sent
    to a Dask worker process asks the ``distributed`` scheduler (a named event that every
    worker of the cluster sees); in a process pool with no scheduler no run can be counted,
    and the run is refused (``where`` names the backend in the message). A Dask graph claims
    its run in its first task and every partition in its own task, since a cluster may reuse
    one task's result from memory in the next computation while it recomputes another.
    """

    def __init__(self, release: str, where: str) -> None:
        self.release = release
        self.where = where
        self._planned_in = os.getpid()

    def claim(self, part: int | None = None) -> None:
        """Record this run of the release (or of its ``part``-th partition), or raise if it
        ran before."""
        name = f"frameldp-release-{self.release}" + ("" if part is None else f"-{part}")
        if os.getpid() == self._planned_in:
            with _LOCK:
                if name in _CLAIMED:
                    raise self._refusal()
                _CLAIMED.add(name)
            return
        self._claim_on_cluster(name)

    def refuse_if_ran(self) -> None:
        """Raise if the release ran before, without claiming this run (in the planning
        process): a plan that claims its run once its first reports are drawn calls this
        first, so that a refused run draws nothing (and records no batch of reports)."""
        if os.getpid() == self._planned_in:
            with _LOCK:
                if f"frameldp-release-{self.release}" in _CLAIMED:
                    raise self._refusal()

    def _claim_on_cluster(self, name: str) -> None:
        worker = _distributed_worker()
        if worker is None:
            raise ParameterError(
                f"release {self.release}: {self.where} drew a fresh key, and this process "
                "(a process pool without a scheduler) cannot tell whether the release ran "
                "before; pass key=, or use the threaded or distributed scheduler"
            )
        import distributed

        with distributed.Lock(name):  # type: ignore[no-untyped-call]
            ran = distributed.Event(name)  # type: ignore[no-untyped-call]
            if ran.is_set():  # type: ignore[no-untyped-call]
                raise self._refusal()
            ran.set()  # type: ignore[no-untyped-call]

    def _refusal(self) -> ParameterError:
        return ParameterError(
            f"release {self.release} ran already: {self.where} drew a fresh key, so running "
            "it again would release every row again with new noise under the same release "
            "id, and stacked outputs would pass for one release. Keep the first run's output "
            "(collect it, persist it or write it, and read that), or privatize again for a new "
            "release (charged again)"
        )


def _distributed_worker() -> Any:
    """The ``distributed`` worker running this task (None: not on a cluster)."""
    try:
        import distributed
    except ImportError:
        return None
    try:
        return distributed.get_worker()
    except ValueError:
        return None
