"""pandera schemas for what goes into ``privatize`` and what comes out of it.

- :func:`input_schema`: each privatized column exists and holds values of the public domain,
  nulls only where the domain has a null bucket (``nulls="category"``), any value where it has
  an ``OTHER`` bucket (``unknown="other"``); RAPPOR columns may hold lists of at most
  ``max_weight`` distinct buckets; Bloom RAPPOR columns hold strings, no nulls; the ``user``
  column exists, no nulls. Other columns are allowed.
- :func:`release_schema`: the report columns, Bloom cohort columns and the explicitly allowed
  ``passthrough`` columns, and nothing else (a raw sensitive column left behind fails). RAPPOR
  reports are non-null binary values of exactly ``ceil(num_bits / 8)`` bytes, padding bits
  zero; k-RR reports are bucket labels; cohorts are integers in ``[0, num_cohorts)``.

Both are derived from mechanisms or their specs alone (:mod:`frameldp.schemas._declare`), then
built for pandas (:mod:`frameldp.schemas.pandas`) or polars (:mod:`frameldp.schemas.polars`).
:func:`validate_input` and :func:`validate_release` run them, collect every failure and raise
one :class:`~frameldp.errors.ValidationError`; ``df.ldp.validate(...)`` calls them.

>>> import pandas as pd, frameldp
>>> from frameldp.schemas import validate_input
>>> mechanisms = {"carrier": frameldp.RandomizedResponse(2.0, domain=["AA", "DL", "UA"])}
>>> frame = pd.DataFrame({"carrier": ["AA", "XX", None]})
>>> try:
...     validate_input(frame, mechanisms)
... except frameldp.ValidationError as error:
...     print(error)
input schema: 2 failures in 2 check(s)
- column 'carrier', check not_nullable (null value): None at row 2
- column 'carrier', check in_domain (value outside the public domain): 'XX' at row 1
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal, TypeVar

from frameldp.errors import ParameterError
from frameldp.frames.adapters import adapter_for
from frameldp.schemas._declare import (
    ColumnDeclaration,
    Failure,
    SchemaDeclaration,
    declare_input,
    declare_release,
    validation_error,
)

__all__ = [
    "ColumnDeclaration",
    "SchemaDeclaration",
    "declare_input",
    "declare_release",
    "input_schema",
    "release_schema",
    "validate_input",
    "validate_release",
]

Backend = Literal["pandas", "polars"]
_Frame = TypeVar("_Frame")


@contextmanager
def _pandera_quietly() -> Iterator[None]:
    """pandera imports ``pyspark.pandas`` whenever pyspark is installed (``frameldp[spark]``),
    when a schema is first built or run, and pyspark 4 warns at that import that it is not
    tested with pandas 3. Validation does not use pandas-on-Spark: that one warning is not
    shown (a pandas job would print a Spark warning)."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="PySpark does not yet fully support", category=FutureWarning
        )
        yield


def _build(declaration: SchemaDeclaration, backend: str) -> Any:
    with _pandera_quietly():
        if backend == "pandas":
            from frameldp.schemas import pandas

            return pandas.build_schema(declaration)
        if backend == "polars":
            from frameldp.schemas import polars

            return polars.build_schema(declaration)
    raise ParameterError(f"backend must be 'pandas' or 'polars', got {backend!r}")


def input_schema(
    mechanisms: Mapping[str, Any], *, backend: Backend = "pandas", user: str | None = None
) -> Any:
    """The pandera ``DataFrameSchema`` an input of ``privatize(mechanisms, user=user)`` meets.

    ``mechanisms`` maps columns to mechanisms (or their specs). ``backend`` picks
    ``pandera.pandas`` or ``pandera.polars``. Columns not named are allowed.
    """
    return _build(declare_input(mechanisms, user=user), backend)


def release_schema(
    mechanisms_or_specs: Mapping[str, Any],
    *,
    backend: Backend = "pandas",
    passthrough: Iterable[str] | str = (),
) -> Any:
    """The strict pandera ``DataFrameSchema`` a release of these reports meets.

    Exactly the report columns (and Bloom cohort columns) plus the ``passthrough`` ones, which
    may be absent; a passthrough name that is a report column raises
    :class:`~frameldp.errors.ParameterError`.
    """
    return _build(declare_release(mechanisms_or_specs, passthrough=passthrough), backend)


def _run(frame: Any, declaration: SchemaDeclaration, lazy: bool) -> list[Failure]:
    kind = f"{type(frame).__module__}.{type(frame).__qualname__}"
    expected = "validation takes a pandas DataFrame or a polars DataFrame or LazyFrame"
    advice = (
        "validate a DataFrame (of a Dask frame: a computed partition or chunk; of a Spark "
        "frame: a collected sample, sdf.limit(n).toPandas(); of a pyarrow Table or DuckDB "
        "relation: pl.from_arrow(...)) instead"
    )
    try:
        adapter = adapter_for(frame)  # the frame's library, by its registered native type
    except ParameterError:
        raise ParameterError(f"{expected}, got {kind}; {advice}") from None
    with _pandera_quietly():
        if adapter.backend == "polars":  # a DataFrame or a LazyFrame (streamed)
            from frameldp.schemas import polars

            return polars.run_schema(frame, declaration, lazy=lazy)
        of_pandas = type(frame).__module__.partition(".")[0] == "pandas"
        if of_pandas and adapter.in_memory:  # a DataFrame (not a pyarrow Table)
            from frameldp.schemas import pandas

            return pandas.run_schema(frame, declaration, lazy=lazy)
    raise ParameterError(f"{expected}, got {kind}; {advice}")


def _validate(frame: _Frame, declaration: SchemaDeclaration, lazy: bool) -> _Frame:
    failures = _run(frame, declaration, bool(lazy))
    if not lazy:
        failures = failures[:1]  # pandera may report several columns at once, even so
    if failures:
        raise validation_error(declaration.kind, failures)
    return frame


def validate_input(
    frame: _Frame, mechanisms: Mapping[str, Any], *, user: str | None = None, lazy: bool = True
) -> _Frame:
    """``frame`` itself if it meets :func:`input_schema`, else a
    :class:`~frameldp.errors.ValidationError` listing every failure (the first only when
    ``lazy=False``). The frame is not modified; a LazyFrame's checked columns are collected
    (streaming)."""
    return _validate(frame, declare_input(mechanisms, user=user), lazy)


def validate_release(
    frame: _Frame,
    mechanisms_or_specs: Mapping[str, Any],
    *,
    passthrough: Iterable[str] | str = (),
    lazy: bool = True,
) -> _Frame:
    """``frame`` itself if it meets :func:`release_schema`, else a
    :class:`~frameldp.errors.ValidationError` listing every failure (the first only when
    ``lazy=False``)."""
    return _validate(frame, declare_release(mechanisms_or_specs, passthrough=passthrough), lazy)
