"""Tables as native frames: Arrow columns to a pandas or polars frame, labels of mixed types
kept as Python objects. pandas and polars are imported when a table is built in them."""

from __future__ import annotations

from typing import Any, Literal

import pyarrow as pa

__all__ = [
    "Backend",
    "NativeFrames",
    "escape",
    "label_array",
    "mixed",
    "native_frame",
    "risk_caption",
    "with_objects",
]

Backend = Literal["pandas", "polars"]
"""The library a table's ``frame`` is built in."""


def label_array(values: list[Any], kind: Any = None) -> pa.Array:
    """Labels or keys as one Arrow column: of ``kind`` when given, else inferred; labels of
    mixed types (integer categories and the ``OTHER`` string) as text."""
    if kind is not None and not pa.types.is_null(kind):
        return pa.array(values, type=kind)
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def native_frame(table: pa.Table, backend: Backend) -> Any:
    if backend == "polars":
        import polars as pl

        return pl.from_arrow(table)
    return table.to_pandas()


class NativeFrames:
    """``frame``, ``to_pandas()`` and ``to_polars()`` of a result whose rows are the Arrow
    table ``_arrow()``, in the result's ``backend``."""

    backend: Backend

    def _arrow(self) -> pa.Table:  # pragma: no cover - defined by every result
        raise NotImplementedError

    @property
    def frame(self) -> Any:
        """The result's rows as a native frame (pandas, or polars for polars reports)."""
        return native_frame(self._arrow(), self.backend)

    def to_pandas(self) -> Any:
        """:attr:`frame` as a pandas DataFrame."""
        return native_frame(self._arrow(), "pandas")

    def to_polars(self) -> Any:
        """:attr:`frame` as a polars DataFrame."""
        return native_frame(self._arrow(), "polars")


def mixed(values: list[Any]) -> bool:
    """True when labels mix types (e.g. integer categories plus the ``OTHER`` string)."""
    return len({type(v) for v in values if v is not None}) > 1


def with_objects(frame: Any, name: str, values: list[Any], backend: Backend) -> Any:
    """``frame`` with column ``name`` replaced by Python objects ``values``, in place."""
    if backend == "polars":
        import polars as pl

        return frame.with_columns(pl.Series(name, values, dtype=pl.Object))
    import pandas as pd

    frame[name] = pd.Series(values, dtype=object, index=frame.index)
    return frame


_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def risk_caption(caption: str, privacy: Any) -> str:
    """A table's caption followed by what its guarantee lets an attacker learn about one
    person (``privacy.risk_sentence()``), as HTML renderings show it."""
    if privacy is None:
        return caption
    return f"{caption}; from these reports, {privacy.risk_sentence()}"


def escape(text: str) -> str:
    """``text`` safe in HTML, as :func:`html.escape` makes it (whose module imports its table
    of entities: a cost ``import frameldp`` need not pay)."""
    return text.translate(_ESCAPES)
