"""Every release file reads back anywhere (issue 37, item 3): the file matrix.

Each writer (pandas ``to_parquet``, polars ``write_parquet``, Dask ``to_parquet``, the command
line) × each reader (pandas, pyarrow, polars, DuckDB), in a process that never imported
frameldp (storage values), whole and with column subsets; then, with frameldp imported, every
file debiases to the same tables as the frame that was written. Spark's reader and writer are
in ``test_spark.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest
from tests.cli.conftest import invoke

import frameldp

DOMAINS = {"carrier": ["AA", "DL", "UA"], "dest": ["x", "y", "z"]}
MECHANISMS = {
    "carrier": frameldp.RandomizedResponse(2.0, domain=DOMAINS["carrier"]),
    "dest": frameldp.Rappor(2.0, domain=DOMAINS["dest"]),
}
WRITERS = ["pandas", "polars", "dask", "cli"]

# Run in a fresh interpreter (-I: no site customisation) that imports no frameldp module.
READ_PLAINLY = r"""
import json, sys
import duckdb, pandas as pd, polars as pl, pyarrow.parquet as pq

path, pattern = sys.argv[1], sys.argv[2]
def values(column):
    return sorted(bytes(v).hex() if isinstance(v, (bytes, bytearray)) else str(v) for v in column)
found = {
    "pandas": pd.read_parquet(path),
    "pandas-subset": pd.read_parquet(path, columns=["month", "carrier"]),
    "pandas-plain-subset": pd.read_parquet(path, columns=["month"]),
    "pyarrow": pq.read_table(path).to_pandas(),
    "polars": pl.read_parquet(pattern).to_pandas(),
    "polars-subset": pl.read_parquet(pattern, columns=["carrier"]).to_pandas(),
    "duckdb": duckdb.sql(f"select * from read_parquet('{pattern}')").df(),
}
assert not any(name.startswith("frameldp") for name in sys.modules), "frameldp was imported"
print(json.dumps({
    reader: {c: values(frame[c]) for c in ("carrier", "dest", "month") if c in frame}
    for reader, frame in found.items()
}))
"""


def _data() -> pd.DataFrame:
    rows = 300
    return pd.DataFrame(
        {
            "carrier": [DOMAINS["carrier"][i % 3] for i in range(rows)],
            "dest": [DOMAINS["dest"][(i // 3) % 3] for i in range(rows)],
            "month": [i % 12 for i in range(rows)],
        }
    )


def _write(writer: str, tmp_path: Path) -> tuple[Path, str, pd.DataFrame]:
    """The file (or directory) ``writer`` wrote, its glob, and the released frame in pandas."""
    if writer == "cli":
        source = tmp_path / "input.parquet"
        _data().to_parquet(source)
        for column, domain in DOMAINS.items():
            (tmp_path / f"{column}.txt").write_text("\n".join(domain))
        path = tmp_path / "cli.parquet"
        invoke(
            "privatize", source, path,
            "--column", "carrier", "--mechanism", "krr", "--epsilon", "2",
            "--domain-file", tmp_path / "carrier.txt",
            "--column", "dest", "--mechanism", "rappor", "--epsilon", "2",
            "--domain-file", tmp_path / "dest.txt",
            "--keep", "month", "--seed", "5",
        )  # fmt: skip
        return path, str(path), pd.read_parquet(path)
    if writer == "dask":
        released = dd.from_pandas(_data(), npartitions=3).ldp.privatize(MECHANISMS, seed=5)
        path = tmp_path / "dask"
        released.to_parquet(path, write_index=False)
        return path, str(path / "*.parquet"), released.compute()
    frame: Any = pl.from_pandas(_data()) if writer == "polars" else _data()
    released = frame.ldp.privatize(MECHANISMS, seed=5)
    path = tmp_path / f"{writer}.parquet"
    if writer == "polars":
        released.write_parquet(path)
        return path, str(path), released.to_pandas()
    released.to_parquet(path)
    return path, str(path), released


def _values(column: pd.Series) -> list[str]:
    return sorted(v.hex() if isinstance(v, bytes) else str(v) for v in column.tolist())


@pytest.mark.parametrize("writer", WRITERS)
def test_a_release_file_reads_without_frameldp(writer: str, tmp_path: Path) -> None:
    path, pattern, released = _write(writer, tmp_path)
    plain = released.ldp.plain()
    expected = {c: _values(plain[c]) for c in ("carrier", "dest", "month")}

    run = subprocess.run(
        [sys.executable, "-I", "-c", READ_PLAINLY, str(path), pattern],
        capture_output=True,
        text=True,
        check=False,
    )

    assert run.returncode == 0, run.stderr[-2000:]
    for reader, columns in json.loads(run.stdout).items():
        for column, values in columns.items():
            assert values == expected[column], (reader, column)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_release_file_debiases_to_the_same_tables(writer: str, tmp_path: Path) -> None:
    path, pattern, released = _write(writer, tmp_path)
    expected = {c: released.ldp.debias(c).frame for c in MECHANISMS}
    readers = {
        "pandas": lambda: pd.read_parquet(path),
        "pandas-subset": lambda: pd.read_parquet(path, columns=["carrier", "dest"]),
        "polars": lambda: pl.read_parquet(pattern),
        "dask": lambda: dd.read_parquet(path),
    }
    for reader, read in readers.items():
        frame = read()
        for column, table in expected.items():
            found = frame.ldp.debias(column).frame
            found = found.to_pandas() if isinstance(found, pl.DataFrame) else found
            pd.testing.assert_frame_equal(found, table, obj=f"{reader} {column}")
