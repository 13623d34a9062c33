"""``frameldp shuffle``: the shuffler of the shuffle model, for a file of reports.

Reads CSV or Parquet, keeps the report columns only (those recorded in a Parquet file written
from a privatized pandas frame, or the ``--column`` ones), permutes the rows with the keyed
CSPRNG and writes the result atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import typer

import frameldp  # noqa: F401 (registers the .ldp accessor)
from frameldp._atomic import atomic
from frameldp.cli._errors import user_errors
from frameldp.cli._files import read_key
from frameldp.core.randomness import permutation
from frameldp.errors import FrameLDPWarning, ParameterError
from frameldp.frames._common import METADATA_KEY, SHUFFLED_KEY, shuffle_record, shuffle_stream


def _read(path: Path) -> pd.DataFrame:
    if path.suffix.lower() == ".parquet":
        # Binary (RAPPOR) columns stay Arrow binary, as the pandas accessor writes them (a
        # `frameldp privatize` file holds fixed-width ones); the attrs (recorded mechanisms)
        # are restored from the pandas metadata.
        table = pq.read_table(path)
        binary = [i for i, field in enumerate(table.schema) if _is_binary(field.type)]
        for i in binary:
            table = table.set_column(i, table.field(i).name, table.column(i).cast(pa.binary()))
        frame = table.to_pandas(types_mapper=_binary_dtype, ignore_metadata=True)
        attrs = (table.schema.metadata or {}).get(b"PANDAS_ATTRS")  # written by to_parquet
        frame.attrs = json.loads(attrs) if attrs else {}
        return frame
    if path.suffix.lower() == ".csv":
        return pd.read_csv(path)
    raise ParameterError(f"{path}: expected a .csv or .parquet file")


def _is_binary(arrow_type: pa.DataType) -> bool:
    return pa.types.is_fixed_size_binary(arrow_type) or pa.types.is_binary(arrow_type)


def _binary_dtype(arrow_type: pa.DataType) -> pd.ArrowDtype | None:
    return pd.ArrowDtype(arrow_type) if _is_binary(arrow_type) else None


def shuffle_file(
    source: Path,
    target: Path,
    *,
    columns: list[str],
    keep: list[str],
    seed: int | None,
    key_file: Path | None,
) -> pd.DataFrame:
    """Shuffle ``source`` into ``target``; returns the shuffled frame."""
    if target.suffix.lower() not in (".csv", ".parquet"):
        raise ParameterError(f"{target}: expected a .csv or .parquet output file")
    frame = _read(source)
    key = read_key(key_file)
    if frame.ldp.mechanisms:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FrameLDPWarning)
            out = frame.ldp.shuffle(
                keep=keep + [c for c in columns if c not in keep], key=key, seed=seed
            )
        for warning in caught:
            typer.echo(f"warning: {warning.message}", err=True)
    elif columns:
        missing = [c for c in columns + keep if c not in frame.columns]
        if missing:
            raise ParameterError(
                f"column {missing[0]!r} not found; columns are {list(frame.columns)}"
            )
        order = permutation(shuffle_stream(key, seed), len(frame))
        out = frame[columns + keep].iloc[order].reset_index(drop=True)
        out.attrs = {METADATA_KEY: {SHUFFLED_KEY: shuffle_record(keep, len(frame))}}
    else:
        raise ParameterError(
            f"{source}: no report columns are recorded in this file; name them with --column"
        )
    with atomic(target) as temporary:
        if target.suffix.lower() == ".parquet":
            out.to_parquet(temporary)
        else:
            out.to_csv(temporary, index=False)
    return out


def run_shuffle(
    source: Path,
    target: Path,
    columns: list[str],
    keep: list[str],
    seed: int | None,
    key_file: Path | None,
    delta: float,
) -> None:
    """The command: shuffle, then report what the analyst of ``target`` can learn."""
    with user_errors():
        out = shuffle_file(source, target, columns=columns, keep=keep, seed=seed, key_file=key_file)
    typer.echo(f"wrote {len(out)} shuffled rows, columns {list(out.columns)}, to {target}")
    guarantee = out.ldp.privacy
    if guarantee is not None and guarantee.shuffled:
        local = guarantee.parameters["local_epsilon"]
        typer.echo(
            f"central ε = {guarantee.epsilon_at(delta):.6g} at δ = {delta:g} "
            f"(local ε0 = {local:.6g}, amplified by shuffling {len(out)} reports, one per person)"
        )
