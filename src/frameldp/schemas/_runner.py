"""Running a schema one check at a time, collecting the failures of every check.

pandera's lazy report is built from all failure cases together, and its polars backend cannot
always build it: it casts every failure case to a string (invalid UTF-8 for the random bytes of
RAPPOR reports) and cannot stack a whole-column result (a boolean) with row values. Run one check
per schema instead, each stopping at its own failure (``lazy=False``), whose failure cases keep
their own dtype; the collected list is the lazy report.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import replace

from frameldp.schemas._declare import ColumnDeclaration, Failure, SchemaDeclaration

__all__ = ["pieces", "run_piecewise", "structure"]

Run = Callable[[SchemaDeclaration, bool], list[Failure]]
"""Validate a frame against a (piece of a) declaration, lazily or not; its failures."""


def structure(declaration: SchemaDeclaration) -> SchemaDeclaration:
    """The column names only: which must exist, and no others when strict."""
    columns = tuple(replace(column, nullable=True, rules=()) for column in declaration.columns)
    return replace(declaration, columns=columns)


def pieces(
    declaration: SchemaDeclaration, column: ColumnDeclaration
) -> Iterator[SchemaDeclaration]:
    """One schema per check of ``column``: its nulls, then each rule."""
    base = replace(column, required=True, nullable=True, rules=())
    if not column.nullable:
        yield replace(declaration, columns=(replace(base, nullable=False),), strict=False)
    for rule in column.rules:
        yield replace(declaration, columns=(replace(base, rules=(rule,)),), strict=False)


def run_piecewise(
    declaration: SchemaDeclaration, run: Run, *, present: Collection[object], lazy: bool
) -> list[Failure]:
    """The column names first, then each check of each present column, in declared order.

    A check that fails to run at all (pandera itself raising) is a failure too: a frame whose
    checks did not run is not valid.
    """
    failures = _guarded(run, structure(declaration), lazy, "schema")
    if failures and not lazy:
        return failures
    for column in declaration.columns:
        if column.name not in present:
            continue
        for piece in pieces(declaration, column):
            rule = piece.columns[0].rules
            found = _guarded(run, piece, False, rule[0].name if rule else "not_nullable")
            failures += found
            if found and not lazy:
                return failures
    return failures


def _guarded(run: Run, piece: SchemaDeclaration, lazy: bool, check: str) -> list[Failure]:
    try:
        return run(piece, lazy)
    except Exception as error:  # fail closed: an unchecked frame is not a valid one
        column = piece.columns[0].name if len(piece.columns) == 1 else None
        return [Failure(column, check, 1, [(f"{type(error).__name__}: {error}", None)])]
