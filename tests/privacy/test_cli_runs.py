"""``frameldp privatize``: runs and batches never share noise; a keyed re-run is idempotent.

The command runs in process (typer's CliRunner, as in tests/cli/) on Parquet files in
``tmp_path``; releases are read back with pyarrow alone. "Unlinked" is the XOR test of
``_linkage.py`` at ``P_FAIL = 1e-6`` per test (split evenly between its comparisons); it detects
shared noise in 5% of 3000 rows with probability 0.99.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from typer.testing import CliRunner

from _engines import FRAMES, LOCAL, reports
from _stats import P_FAIL
from frameldp.cli import app

from ._linkage import DOMAIN, EPSILON, KEY, ROWS, assert_unlinked, changed, ldp, people, subset


class Job:
    """``frameldp privatize`` of column ``c`` with RAPPOR over :data:`DOMAIN`, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.domain = folder / "domain.txt"
        self.domain.write_text("\n".join(DOMAIN) + "\n")
        self.key = folder / "secret.key"
        self.key.write_bytes(KEY)
        self.runs = 0

    def run(self, values: list[str], *, chunk_rows: int, keyed: bool = False) -> list[bytes]:
        """Write ``values`` as the input file, run the command, return the released reports."""
        self.runs += 1
        source = self.folder / f"in{self.runs}.parquet"
        target = self.folder / f"out{self.runs}.parquet"
        pq.write_table(pa.table({"c": values}), source, row_group_size=1000)
        args = ["privatize", source, target, "--column", "c", "--mechanism", "rappor"]
        args += ["--epsilon", EPSILON, "--domain-file", self.domain, "--chunk-rows", chunk_rows]
        args += ["--key-file", self.key] if keyed else []
        result = CliRunner().invoke(
            app, [str(a) for a in args], env={"FRAMELDP_LEDGER": None, "COLUMNS": "200"}
        )
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        out: list[bytes] = pq.read_table(target, columns=["c"]).column("c").to_pylist()
        return out


@pytest.fixture
def job(tmp_path: Path) -> Job:
    """A privatize job writing its files in ``tmp_path``."""
    return Job(tmp_path)


def test_two_runs_are_unlinked(job: Job) -> None:
    """The same file privatized twice without ``--key-file``: unlinked (P_FAIL)."""
    values = people()

    assert_unlinked(job.run(values, chunk_rows=500), job.run(values, chunk_rows=500), values)


def test_batches_of_one_run_are_unlinked(job: Job) -> None:
    """Three equal blocks, each starting a batch (``--chunk-rows 3000``, row groups of 1000):
    block 0 is unlinked from blocks 1 and 2, with and without a key (P_FAIL / 4 each)."""
    values = people()
    for keyed in (False, True):
        out = job.run(values * 3, chunk_rows=ROWS, keyed=keyed)
        for block in (1, 2):
            later = out[block * ROWS : (block + 1) * ROWS]
            assert_unlinked(out[:ROWS], later, values, p_fail=P_FAIL / 4)


def test_keyed_runs_are_the_keyed_in_memory_release_whatever_the_batch_size(job: Job) -> None:
    """``--key-file`` in batches of 333, 1000 and 5000 rows: exactly the reports of
    ``df.ldp.rappor(..., key=...)`` on every frame backend (deterministic)."""
    values = people()
    expected = [
        reports(ldp(FRAMES[b]({"c": values})).rappor("c", EPSILON, domain=DOMAIN, key=KEY), "c")
        for b in LOCAL  # the Spark engines: tests/privacy/test_keyed.py
    ]

    for chunk_rows in (333, 1000, 5000):
        assert job.run(values, chunk_rows=chunk_rows, keyed=True) == expected[0]
    assert all(other == expected[0] for other in expected)


def test_a_keyed_rerun_after_rows_changed(job: Job) -> None:
    """Two keyed runs, every even row changed in between (and another batch size): unchanged
    rows keep their reports, changed rows are unlinked (P_FAIL)."""
    values = people(2 * ROWS)
    new, mask = changed(values)
    first = job.run(values, chunk_rows=1000, keyed=True)
    second = job.run(new, chunk_rows=777, keyed=True)

    assert subset(first, ~mask) == subset(second, ~mask)
    assert_unlinked(
        subset(first, mask), subset(second, mask), subset(values, mask), subset(new, mask)
    )
