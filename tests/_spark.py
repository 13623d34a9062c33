"""One Spark per test process, classic or Connect, switched on demand.

pyspark picks classic or Connect functions from one process-wide switch
(``SPARK_CONNECT_MODE_ENABLED``), so a process holds one mode at a time: :func:`session` stops
the other mode's session before starting the one asked for. Tests ask through the ``spark`` and
``spark_connect`` fixtures (``tests/conftest.py``) or the ``spark`` and ``spark-connect``
engines (``tests/_engines.py``); pytest runs a module's tests together, so a worker switches
rarely. Both run two cores in one JVM, with workers running this interpreter.

PySpark replaces the SIGINT handler with one that cancels the context's jobs; after ``stop()``
that handler meets a closed gateway, so a test worker interrupted at shutdown printed a py4j
traceback. The previous handler is put back once a session stops.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from typing import Any

CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    # The JIT's first tier only and one GC thread: the tests' jobs are small, and the JVM's
    # optimizing compiler and parallel collector took a core of their own beside the workers.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}

_ACTIVE: dict[str, Any] = {}  # {"mode": "classic" | "connect", "session": ..., "interrupt": ...}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _classic() -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("frameldp-tests")
    for name, value in CONF.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    return spark


_PENDING: list[Any] = []  # cached relations whose finalizer ran, released at stop()


def _defer_cached_relation_release() -> None:
    """Run pyspark's ``CachedRemoteRelation.__del__`` from ``stop()`` instead of the garbage
    collector: its gRPC call, made inside another thread's start, waits forever for a thread
    that needs the lock the start holds (a test worker hung so with pyspark 4.3; frameldp
    releases its own checkpoints explicitly, ``frames/_spark.py``). The finalizer keeps the
    relation (resurrecting it) for ``stop()`` to release."""
    from pyspark.sql.connect.plan import CachedRemoteRelation

    if getattr(CachedRemoteRelation.__del__, "deferred", False):
        return
    original = CachedRemoteRelation.__del__

    def deferred(self: Any) -> None:
        _PENDING.append((original, self))

    deferred.deferred = True  # type: ignore[attr-defined]
    CachedRemoteRelation.__del__ = deferred  # type: ignore[method-assign]


def _release_pending() -> None:
    while _PENDING:
        original, relation = _PENDING.pop()
        original(relation)


def _connect() -> Any:
    """A Connect session to a local server on a free port (the default port would collide
    between test workers)."""
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    _defer_cached_relation_release()

    port = _free_port()
    RemoteSession._start_connect_server(
        "local[2]", {"spark.connect.grpc.binding.port": str(port), **CONF}
    )
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    return RemoteSession.builder.remote(f"sc://localhost:{port}").getOrCreate()


def session(mode: str) -> Any:
    """The process's Spark session in ``mode`` (``"classic"`` or ``"connect"``)."""
    if _ACTIVE.get("mode") == mode:
        return _ACTIVE["session"]
    stop()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    interrupt = signal.getsignal(signal.SIGINT)
    spark = _classic() if mode == "classic" else _connect()
    _ACTIVE.update(mode=mode, session=spark, interrupt=interrupt)
    return spark


def stop() -> None:
    """Stop the active session (and a Connect server's own session)."""
    if not _ACTIVE:
        return
    from pyspark.sql import SparkSession

    if _ACTIVE["mode"] == "connect":
        _release_pending()
    _ACTIVE["session"].stop()
    if _ACTIVE["mode"] == "connect":
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        server = SparkSession._instantiatedSession
        if server is not None:
            server.stop()
    signal.signal(signal.SIGINT, _ACTIVE["interrupt"])
    _ACTIVE.clear()
