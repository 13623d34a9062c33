"""Checking a privatize call's columns and building mechanisms from the shortcuts' arguments.

Plumbing only: no formula lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from frameldp.core.encoding import Domain, NullPolicy, UnknownPolicy
from frameldp.core.mechanisms import (
    Capability,
    Mechanism,
    is_mechanism,
    mechanism_class,
)
from frameldp.errors import (
    ParameterError,
    shown,
)
from frameldp.frames.pipeline import column_context, infer_domain
from frameldp.frames.report_type import ReportMetadata, refuse_reports

__all__ = [
    "METADATA_KEY",
    "build_krr",
    "build_rappor",
    "check_columns",
    "require_column",
    "user_id_type",
]


METADATA_KEY = "frameldp"
"""Key under which mechanism specs are recorded (pandas ``attrs``, Parquet metadata)."""


def require_column(columns: list[Any], column: Any) -> None:
    """``column`` exists once, or a :class:`ParameterError` listing the columns."""
    if column not in columns:
        listed = ", ".join(shown(name) for name in columns[:20])
        more = f", … ({len(columns)} columns)" if len(columns) > 20 else ""
        raise ParameterError(
            f"column {shown(column)} not found; columns are [{listed}{more}]", column=column
        )
    if columns.count(column) > 1:
        raise ParameterError(
            f"column {shown(column)}: the frame has {columns.count(column)} columns of that "
            "name; rename them so that each report column is one column"
        )


def check_columns(
    columns: list[Any],
    mechanisms: Mapping[str, Any],
    *,
    frame: bool = True,
    reports: Mapping[Any, ReportMetadata] | None = None,
) -> None:
    """Every column exists, holds no reports yet, and every mechanism is one frameldp can
    apply to it.

    Bloom RAPPOR writes a cohort column beside its reports, so it needs a frame
    (``frame=False`` for a Series or an expression refuses it). A column whose type says it
    holds reports already (``reports``; re-running ``r2 = r1.ldp.krr("carrier", ...)``) is
    refused: randomizing
    reports again would make ``debias`` estimate the distribution of the reports, not of the
    values, and release the column twice.
    """
    if not isinstance(mechanisms, Mapping):
        raise ParameterError(
            f"privatize takes a mapping {{column: mechanism}}, got {type(mechanisms).__name__}"
        )
    if not mechanisms:
        raise ParameterError("privatize needs at least one {column: mechanism} entry")
    for column, mechanism in mechanisms.items():
        require_column(columns, column)
        if reports and column in reports:
            refuse_reports(column, reports[column])
        if not is_mechanism(mechanism):
            raise ParameterError(
                f"column {shown(column)}: expected a frameldp mechanism (Rappor, BloomRappor, "
                f"RandomizedResponse, ...), got {type(mechanism).__name__}"
            )
        if Capability.SHUFFLER_MESSAGES in mechanism.capabilities:
            raise ParameterError(
                f"column {shown(column)}: {mechanism.title} sends the shuffle model's messages, "
                "not one report per row; use df.ldp.balcer_cheu(...)"
            )
        if len(mechanism.report_columns(column)) > 1 and not frame:
            raise ParameterError(
                f"column {shown(column)}: {mechanism.title} writes reports and "
                f"{', '.join(list(mechanism.report_columns(column))[1:])}; apply it to a frame "
                f"(df.ldp.privatize({{{shown(column)}: ...}}))"
            )
    _check_written_names(mechanisms)


def _check_written_names(mechanisms: Mapping[str, Any]) -> None:
    """No two privatized columns write a column of one name (a Bloom cohort column and another
    column's reports); a cohort column that would overwrite a column of the frame is refused by
    :func:`~frameldp.frames.release.plan_release`."""
    writer: dict[Any, Any] = {}
    for column, mechanism in mechanisms.items():
        for name in mechanism.report_columns(column):
            if name in writer:
                raise ParameterError(
                    f"column {shown(column)}: its reports need a column {shown(name)}, which "
                    f"column {shown(writer[name])}'s reports need too; rename one of them first",
                    column=column,
                )
            writer[name] = column


def _domain(
    domain: Any,
    unknown: UnknownPolicy | None,
    nulls: NullPolicy | None,
    column: str,
    data: Callable[[], pa.Array | pa.ChunkedArray],
) -> Domain:
    if isinstance(domain, str) and domain == "infer":
        domain = infer_domain(data(), column)
    return Domain.coerce(domain, unknown=unknown, nulls=nulls)


def build_rappor(
    column: str,
    data: Callable[[], pa.Array | pa.ChunkedArray],
    epsilon: float | None,
    *,
    f: float | None,
    domain: Any,
    max_weight: int,
    unknown: UnknownPolicy | None,
    nulls: NullPolicy | None,
    epsilon_infinity: float | None = None,
) -> Mechanism:
    """A RAPPOR mechanism for ``column`` (longitudinal with ``epsilon_infinity``); errors name
    the column."""
    with column_context(column):
        mechanism: Mechanism = mechanism_class("rappor")(
            epsilon,
            f=f,
            domain=_domain(domain, unknown, nulls, column, data),
            max_weight=max_weight,
            epsilon_infinity=epsilon_infinity,
        )
    return mechanism


def build_krr(
    column: str,
    data: Callable[[], pa.Array | pa.ChunkedArray],
    epsilon: float,
    *,
    domain: Any,
    unknown: UnknownPolicy | None,
    nulls: NullPolicy | None,
    epsilon_infinity: float | None = None,
) -> Mechanism:
    """A k-ary randomized response mechanism for ``column`` (longitudinal with
    ``epsilon_infinity``); errors name the column."""
    with column_context(column):
        mechanism: Mechanism = mechanism_class("randomized_response")(
            epsilon,
            domain=_domain(domain, unknown, nulls, column, data),
            epsilon_infinity=epsilon_infinity,
        )
    return mechanism


USER_ID_TYPES = ("integer", "text", "bytes")
"""The canonical types of user ids: each is digested under its own tag
(:func:`frameldp.core.randomness.digests`), so ``7`` and ``"7"`` are different people."""


def user_id_type(kind: pa.DataType | None, user: Any) -> str:
    """The canonical type (``"integer"``, ``"text"`` or ``"bytes"``) of a user column of Arrow
    type ``kind``. It is part of the memo's name: ids of another type draw other permanent
    responses, so they must never be charged as the same memo. Floats are refused, whole or
    not (a float holds integers exactly only up to 2**53, and the same id written as text or
    integer elsewhere would be another person); so is a type that names none of the three (a
    pandas ``object`` column of no Arrow type, booleans)."""
    if kind is not None and pa.types.is_dictionary(kind):
        kind = kind.value_type
    if kind is not None and pa.types.is_integer(kind):
        return "integer"
    if kind is not None and (
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    ):
        return "text"
    if kind is not None and (
        pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
        or pa.types.is_binary_view(kind)
    ):
        return "bytes"
    if kind is None or pa.types.is_null(kind):
        held = "Python objects of no one Arrow type (cast the column to integers or strings)"
    elif pa.types.is_floating(kind):
        held = f"{kind} (cast whole-number ids to integers)"
    else:
        held = str(kind)
    raise ParameterError(
        f"user column {shown(user)}: user ids must be integers, text or bytes, got {held}"
    )
