"""Fixtures of the ``frameldp privatize`` and ``frameldp estimate`` tests.

Every test works on real files in ``tmp_path``: the first rows of the embedded flights data
(``passenger_id``, ``origin``, ``dest``, ``carrier``, ``delay``; categorical columns, so Parquet
holds dictionary columns) written as CSV or Parquet, and the public domains written as domain
files. The command runs in process through typer's :class:`~typer.testing.CliRunner`
(``invoke``) or as a user runs it, the installed console script (``script``; a subprocess costs
about a second, so few tests use it).

The reference of every release is the in-memory pandas path, ``df.ldp.privatize({...},
seed=SEED)`` on the same rows (``in_memory``): the command must write exactly those reports.
Report files are read back with pyarrow alone (``released``: RAPPOR reports as ``bytes``, hex
decoded for CSV; k-RR reports as labels; cohorts as ints), not through the code under test.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import frameldp
from frameldp.accounting import PrivacyGuarantee
from frameldp.cli import app
from frameldp.core.mechanisms import Mechanism
from frameldp.datasets import FLIGHTS_DOMAINS, load_flights

ROWS = 3000
"""Rows of the default input file."""

SEED = 11
"""Seed of every reproducible run (the same in the command and in the reference)."""

EPSILON = 1.0
EPSILON_INFINITY = 4.0
"""Bloom RAPPOR: epsilon of the permanent response."""

COLUMN_OF = {"rappor": "dest", "krr": "carrier", "bloom": "dest"}
"""The column each mechanism privatizes in the single-column tests."""

MECHANISMS = tuple(COLUMN_OF)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Variables that would change what the commands print or which ledger they charge.
UNSET = ("FRAMELDP_LEDGER", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


@functools.cache
def _flights() -> pd.DataFrame:
    return load_flights().drop(columns="services")


def flights(rows: int = ROWS) -> pd.DataFrame:
    """The first ``rows`` flights (a fresh copy: tests may change it)."""
    return _flights().head(rows).copy()


def write_input(frame: pd.DataFrame, path: Path) -> Path:
    """``frame`` as a CSV or Parquet file (by suffix), without the index."""
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def mechanism(kind: str, column: str, epsilon: float = EPSILON) -> Mechanism:
    """The in-memory mechanism that ``--mechanism kind --epsilon epsilon`` builds for
    ``column`` (domain: the public flights domain; Bloom RAPPOR: the default sizes)."""
    if kind == "rappor":
        return frameldp.Rappor(epsilon, domain=FLIGHTS_DOMAINS[column])
    if kind == "krr":
        return frameldp.RandomizedResponse(epsilon, domain=FLIGHTS_DOMAINS[column])
    return frameldp.BloomRappor(epsilon, epsilon_infinity=EPSILON_INFINITY)


def options(
    kind: str, column: str, domains: dict[str, Path], epsilon: float = EPSILON
) -> list[Any]:
    """The command-line options of one column privatized by ``kind``."""
    out: list[Any] = ["--column", column, "--mechanism", kind, "--epsilon", epsilon]
    if kind == "bloom":
        return [*out, "--epsilon-infinity", EPSILON_INFINITY]
    return [*out, "--domain-file", domains[column]]


def seeded(guarantee: PrivacyGuarantee) -> PrivacyGuarantee:
    """The guarantee a ``--seed`` run records: marked insecure (``seeded``)."""
    return guarantee if guarantee.seeded else guarantee.insecure()


def in_memory(frame: pd.DataFrame, mechanisms: dict[str, Mechanism], **kwargs: Any) -> Any:
    """The reference release: the pandas path with the same seed."""
    return frame.ldp.privatize(mechanisms, seed=SEED, **kwargs)


def expected(reference: pd.DataFrame, column: str) -> list[Any]:
    """A column of the in-memory release as plain Python values (bytes, labels, ints)."""
    return pa.Array.from_pandas(reference[column]).to_pylist()


def released(path: Path, column: str) -> list[Any]:
    """A column of a release file as plain Python values, read with pyarrow only.

    CSV: RAPPOR reports are hex strings (``hex`` of the sidecar), decoded with
    :meth:`bytes.fromhex`; report labels are read as text; cohorts as integers.
    """
    if path.suffix == ".parquet":
        return pq.read_table(path, columns=[column]).column(column).to_pylist()
    hex_columns = json.loads((path.parent / (path.name + ".frameldp.json")).read_text())["hex"]
    textual = {} if column.endswith("_cohort") else {column: pa.string()}
    table = pacsv.read_csv(
        path,
        convert_options=pacsv.ConvertOptions(include_columns=[column], column_types=textual),
    )
    values = table.column(column).to_pylist()
    return [bytes.fromhex(v) for v in values] if column in hex_columns else values


def release_names(path: Path) -> list[str]:
    """The column names of a release file."""
    if path.suffix == ".parquet":
        return pq.read_schema(path).names
    return pacsv.read_csv(path).column_names


def leftovers(directory: Path) -> list[str]:
    """Temporary files (``.OUT.*.tmp``) left in ``directory``."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@dataclass(frozen=True)
class Run:
    """What one command did."""

    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = None


def invoke(*args: Any, env: dict[str, str] | None = None) -> Run:
    """``frameldp *args`` in process (paths and numbers become text)."""
    variables: dict[str, str | None] = {name: None for name in UNSET}
    variables.update({"COLUMNS": "200", **(env or {})})
    result = CliRunner().invoke(app, [str(a) for a in args], env=variables)
    exception = None if isinstance(result.exception, SystemExit) else result.exception
    return Run(result.exit_code, result.stdout, result.stderr, exception)


def script_environment() -> dict[str, str]:
    """The environment of a subprocess run of the console script."""
    variables = {k: v for k, v in os.environ.items() if k not in UNSET}
    variables.update({"COLUMNS": "200", "PYTHONIOENCODING": "utf-8"})
    return variables


def assert_user_error(run: Run, *fragments: str) -> str:
    """Exit status 1, nothing on stdout, one line ``error: ...`` on stderr holding every
    fragment, no traceback; returns the line."""
    assert run.exception is None, repr(run.exception)
    assert run.exit_code == 1, (run.stdout, run.stderr)
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def script() -> str:
    """The installed ``frameldp`` console script, beside the running interpreter."""
    command = shutil.which("frameldp", path=str(Path(sys.executable).parent))
    assert command is not None, "the frameldp console script is not installed"
    return command


@pytest.fixture
def domains(tmp_path: Path) -> dict[str, Path]:
    """A domain file per categorical flights column (one value per line), in ``domains/``;
    ``"airports"`` is a JSON list (the destinations, a superset of the origins)."""
    folder = tmp_path / "domains"
    folder.mkdir()
    files = {}
    for column in ("origin", "dest", "carrier", "delay"):
        files[column] = folder / f"{column}.txt"
        files[column].write_text("\n".join(FLIGHTS_DOMAINS[column]) + "\n\n")
    files["airports"] = folder / "airports.json"
    files["airports"].write_text(json.dumps(list(FLIGHTS_DOMAINS["dest"])))
    return files


MakeInput = Callable[..., Path]


@pytest.fixture
def make_input(tmp_path: Path) -> MakeInput:
    """``make_input(kind, rows=ROWS, frame=None, name="flights")``: an input file in
    ``tmp_path`` holding ``frame`` (default: the first ``rows`` flights)."""

    def make(
        kind: str, rows: int = ROWS, frame: pd.DataFrame | None = None, name: str = "flights"
    ) -> Path:
        data = flights(rows) if frame is None else frame
        return write_input(data, tmp_path / f"{name}.{kind}")

    return make
