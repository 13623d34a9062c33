"""What the input and release schemas check, independent of the frame library that runs them.

A :class:`SchemaDeclaration` lists, per column, whether it must exist, whether it may hold
nulls, and its rules (frozen dataclasses below). It is derived from mechanisms or their specs
only, never from the data: the domain is public, and so is the shape of the reports.
:mod:`frameldp.schemas.pandas` and :mod:`frameldp.schemas.polars` turn a declaration into a
pandera schema and run it; this module also turns what they found into a
:class:`~frameldp.errors.ValidationError`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Final, Literal

import pyarrow as pa

from frameldp.core.encoding import Domain, held_exactly, packed_width
from frameldp.core.mechanisms import (
    OPEN_DOMAIN,
    Capability,
    is_mechanism,
    mechanism_from_spec,
)
from frameldp.errors import FrameLDPError, ParameterError, ValidationError, shown

__all__ = [
    "CHECK_DESCRIPTIONS",
    "MAX_LISTED",
    "STRUCTURAL",
    "Absent",
    "Binary",
    "ColumnDeclaration",
    "Failure",
    "InDomain",
    "InLabels",
    "InRange",
    "Integer",
    "MaxWeight",
    "PackedWidth",
    "PaddingBits",
    "ReportRange",
    "Rule",
    "SchemaDeclaration",
    "SchemaKind",
    "Strings",
    "cohort_column_of",
    "declare_input",
    "declare_release",
    "held_numbers",
    "validation_error",
]

SchemaKind = Literal["input", "release"]
Role = Literal["privatized", "user", "reports", "cohorts", "reserved", "passthrough"]

STRUCTURAL: Final = ("column_in_dataframe", "column_in_schema")
"""pandera's checks of column names (their value is the column's name)."""

MAX_LISTED: Final = 100
"""Failures listed in ``ValidationError.failures`` per column and check (the message counts
them all)."""

_MESSAGE_LINES: Final = 5


# ------------------------------------------------------------------------------------ rules
# Each rule names the pandera check that runs it (``name``). ``whole_column`` rules judge the
# column at once (its dtype, its presence): a failure has no row, and its value is the dtype.


@dataclass(frozen=True)
class InDomain:
    """Input values are categories of the public domain (any value when ``open``).

    ``sets``: list cells are sets of values (RAPPOR), each item judged alone, a null item
    allowed when ``null_items`` (``nulls="category"``). Without ``sets`` a list cell fails.
    """

    categories: tuple[Hashable, ...]
    open: bool = False
    sets: bool = False
    null_items: bool = False
    name: ClassVar[str] = "in_domain"
    whole_column: ClassVar[bool] = False


def held_numbers(categories: tuple[Hashable, ...], dtype: Any) -> Any:
    """The numeric categories a column of numpy ``dtype`` holds exactly, as an array of it.

    A category the dtype would round, truncate or overflow (``2.5`` in an integer column,
    ``0.1`` in ``float32``) matches no value, as in ``privatize``
    (:meth:`~frameldp.core.encoding.Domain.held_by`): validation never coerces the domain.
    """
    held, _ = held_exactly(categories, dtype)
    return held


@dataclass(frozen=True)
class MaxWeight:
    """A set-valued cell holds at most ``max_weight`` distinct buckets.

    Items outside the categories all fall into one ``OTHER`` bucket when ``open``; a null item
    is the null bucket.
    """

    categories: tuple[Hashable, ...]
    max_weight: int
    open: bool = False
    name: ClassVar[str] = "max_weight"
    whole_column: ClassVar[bool] = False


@dataclass(frozen=True)
class Strings:
    """The column holds strings (Bloom RAPPOR hashes strings): a string or categorical dtype."""

    name: ClassVar[str] = "strings"
    whole_column: ClassVar[bool] = True


@dataclass(frozen=True)
class Absent:
    """The column must not exist (privatize would overwrite it)."""

    name: ClassVar[str] = "absent"
    whole_column: ClassVar[bool] = True


@dataclass(frozen=True)
class Binary:
    """The column holds bytes (fixed- or variable-width binary)."""

    name: ClassVar[str] = "binary"
    whole_column: ClassVar[bool] = True


@dataclass(frozen=True)
class PackedWidth:
    """Every value is exactly ``width`` bytes (a packed bit vector of the mechanism)."""

    width: int
    name: ClassVar[str] = "packed_width"
    whole_column: ClassVar[bool] = False


@dataclass(frozen=True)
class PaddingBits:
    """The bits past ``num_bits`` in the last byte are zero (``numpy.packbits`` padding)."""

    num_bits: int
    name: ClassVar[str] = "padding_bits"
    whole_column: ClassVar[bool] = False

    @property
    def width(self) -> int:
        """Bytes per report."""
        return packed_width(self.num_bits)

    @property
    def mask(self) -> int:
        """The padding bits of the last byte."""
        return 0xFF >> (self.num_bits % 8)


@dataclass(frozen=True)
class InLabels:
    """Report values are bucket labels (the categories, and ``OTHER`` when reported)."""

    labels: tuple[Hashable, ...]
    name: ClassVar[str] = "in_labels"
    whole_column: ClassVar[bool] = False


@dataclass(frozen=True)
class Integer:
    """The column has an integer dtype."""

    name: ClassVar[str] = "integer"
    whole_column: ClassVar[bool] = True


@dataclass(frozen=True)
class InRange:
    """Integer values in ``[low, high)`` (Bloom cohorts)."""

    low: int
    high: int
    name: ClassVar[str] = "cohort_range"
    whole_column: ClassVar[bool] = False


@dataclass(frozen=True)
class Number:
    """The column holds numbers: an integer, float or decimal dtype."""

    name: ClassVar[str] = "number"
    whole_column: ClassVar[bool] = True


@dataclass(frozen=True)
class Between:
    """Numbers in ``[low, high]`` (not NaN): a numeric mechanism's bounds (its input without
    ``clip``) or the range of its reports."""

    low: float
    high: float
    name: ClassVar[str] = "between"
    whole_column: ClassVar[bool] = False


@dataclass(frozen=True)
class ReportRange(InRange):
    """Integer reports in ``[low, high)`` (local hashing's ``seed * g + y``, Hadamard columns)."""

    name: ClassVar[str] = "report_range"


Rule = (
    Number
    | Between
    | InDomain
    | MaxWeight
    | Strings
    | Absent
    | Binary
    | PackedWidth
    | PaddingBits
    | InLabels
    | Integer
    | InRange
    | ReportRange
)

CHECK_DESCRIPTIONS: Final[dict[str, str]] = {
    "column_in_dataframe": "column missing",
    "column_in_schema": "neither a report nor a passthrough column",
    "not_nullable": "null value",
    InDomain.name: "value outside the public domain",
    MaxWeight.name: "more distinct items than max_weight",
    Strings.name: "Bloom RAPPOR needs a string column",
    Absent.name: "column would be overwritten by the cohort column",
    Binary.name: "reports must be binary",
    PackedWidth.name: "report of the wrong width",
    PaddingBits.name: "padding bits set",
    InLabels.name: "value is not a report label",
    Integer.name: "cohorts and integer reports must be integers",
    InRange.name: "cohort out of range",
    ReportRange.name: "report out of range",
}
"""A few words on each check, for messages (pandera's own checks included)."""


@dataclass(frozen=True)
class ColumnDeclaration:
    """One column of a schema: presence, nulls, rules, and where it comes from."""

    name: str
    role: Role
    required: bool = True
    nullable: bool = True
    rules: tuple[Rule, ...] = ()
    mechanism: str | None = None


@dataclass(frozen=True)
class SchemaDeclaration:
    """The columns of an input or release schema; ``strict``: no other column is allowed."""

    kind: SchemaKind
    columns: tuple[ColumnDeclaration, ...]
    strict: bool

    @property
    def title(self) -> str:
        """The pandera schema's name."""
        return f"frameldp {self.kind}"


# ------------------------------------------------------------------------ from mechanisms


def cohort_column_of(column: str, spec: Mapping[str, Any] | None = None) -> str:
    """The cohort column of a Bloom RAPPOR column: recorded in its spec, else
    ``{column}_cohort`` (the name ``privatize`` writes)."""
    recorded = (spec or {}).get("cohort_column")
    return str(recorded) if recorded else f"{column}_cohort"


def _resolve(column: str, value: Any) -> tuple[Any, dict[str, Any]]:
    """``(mechanism, spec)`` of a mechanism, a spec dict or the JSON text of a spec."""
    if is_mechanism(value):
        return value, value.to_spec()
    if isinstance(value, str | Mapping):
        try:
            spec = json.loads(value) if isinstance(value, str) else dict(value)
            return mechanism_from_spec(spec), spec
        except (FrameLDPError, KeyError, TypeError, ValueError) as error:
            raise ParameterError(
                f"column {shown(column)}: invalid mechanism spec: {error}"
            ) from None
    raise ParameterError(
        f"column {shown(column)}: expected a frameldp mechanism (Rappor, RandomizedResponse, "
        f"BloomRappor, BalcerCheu) or its spec, got {type(value).__name__}"
    )


def _resolve_all(mechanisms: Mapping[str, Any], what: str) -> dict[str, tuple[Any, dict[str, Any]]]:
    if not isinstance(mechanisms, Mapping):
        raise ParameterError(
            f"{what} needs a mapping {{column: mechanism}}, got {type(mechanisms).__name__}"
        )
    if not mechanisms:
        raise ParameterError(f"{what} needs at least one {{column: mechanism}} entry")
    return {column: _resolve(column, value) for column, value in mechanisms.items()}


def _domain_rules(mechanism: Any) -> tuple[Rule, ...]:
    domain: Domain = mechanism.domain
    sets = Capability.SETS in mechanism.capabilities
    rules: list[Rule] = [
        InDomain(domain.categories, domain.has_other, sets=sets, null_items=domain.has_null)
    ]
    if sets:
        rules.append(MaxWeight(domain.categories, mechanism.max_weight, domain.has_other))
    return tuple(rules)


def _require_categorical(column: str, mechanism: Any) -> None:
    """Validation declares the values and reports of categorical mechanisms (a public
    ``domain``, or an open domain of strings) and of numeric ones (public ``bounds``); another
    kind of estimator is refused."""
    if (OPEN_DOMAIN | {Capability.NUMERIC}) & mechanism.capabilities or isinstance(
        getattr(mechanism, "domain", None), Domain
    ):
        return
    raise ParameterError(
        f"column {shown(column)}: validation knows categorical mechanisms (a public domain or "
        f"an open domain of strings), not {mechanism.title}",
        column=column,
    )


def declare_input(mechanisms: Mapping[str, Any], *, user: str | None = None) -> SchemaDeclaration:
    """What ``privatize(mechanisms, user=user)`` needs of its input.

    Each privatized column exists and holds values of the public domain (any value with
    ``unknown="other"``), nulls only with ``nulls="category"``; RAPPOR columns may hold lists
    (sets of at most ``max_weight`` distinct buckets). A Bloom RAPPOR column holds strings and
    no nulls, and its cohort column does not exist yet. The ``user`` column (who is a person,
    for any mechanism) exists without nulls. Other columns are allowed.
    """
    resolved = _resolve_all(mechanisms, "an input schema")
    if user is not None and user in resolved:
        raise ParameterError(f"user column {user!r} cannot also be privatized")
    columns: list[ColumnDeclaration] = []
    for column, (mechanism, _) in resolved.items():
        _require_categorical(column, mechanism)
        name = mechanism.name
        # Mirrors privatize, which refuses what the mechanism cannot write (k-RR's OTHER label
        # among non-string categories).
        companions = list(mechanism.report_columns(column))[1:]
        if Capability.NUMERIC in mechanism.capabilities:  # numbers on public bounds
            bounds = mechanism.bounds
            number_rules: tuple[Rule, ...] = (Number(),)
            number_rules += (
                (Between(-math.inf, math.inf),)
                if mechanism.clip
                else (Between(bounds.lo, bounds.hi),)
            )
            columns.append(ColumnDeclaration(column, "privatized", True, False, number_rules, name))
        elif OPEN_DOMAIN & mechanism.capabilities:  # an open domain of strings
            columns.append(ColumnDeclaration(column, "privatized", True, False, (Strings(),), name))
        else:
            domain: Domain = mechanism.domain
            rules = _domain_rules(mechanism)
            columns.append(
                ColumnDeclaration(column, "privatized", True, domain.has_null, rules, name)
            )
        for companion in companions:
            if companion not in resolved:
                columns.append(ColumnDeclaration(companion, "reserved", False, True, (Absent(),)))
    if user is not None:
        columns.append(ColumnDeclaration(user, "user", True, False))
    return SchemaDeclaration("input", tuple(columns), strict=False)


def _passthrough_names(passthrough: Iterable[str] | str) -> list[str]:
    names = [passthrough] if isinstance(passthrough, str) else list(passthrough)
    return list(dict.fromkeys(names))


def declare_release(
    mechanisms_or_specs: Mapping[str, Any], *, passthrough: Iterable[str] | str = ()
) -> SchemaDeclaration:
    """What a release of reports may hold: the report columns, Bloom cohort columns and the
    ``passthrough`` columns, nothing else (strict).

    RAPPOR and Bloom RAPPOR reports are non-null binary values of exactly
    ``ceil(num_bits / 8)`` bytes with zero padding bits (prefix-extending reports: of their
    report width); k-RR reports and Balcer–Cheu messages
    are bucket labels (null only for the null bucket); integer reports (local hashing,
    Hadamard response) are non-null integers in ``[0, report_range)``; Bloom cohorts are
    integers in ``[0, num_cohorts)``. Passthrough columns may be absent.
    """
    resolved = _resolve_all(mechanisms_or_specs, "a release schema")
    columns: list[ColumnDeclaration] = []
    for column, (mechanism, spec) in resolved.items():
        _require_categorical(column, mechanism)
        name = mechanism.name
        kind = mechanism.report_columns(column)[column]
        if pa.types.is_fixed_size_binary(kind):
            rules: tuple[Rule, ...] = (Binary(), PackedWidth(kind.byte_width))
            if Capability.BIT_VECTORS in mechanism.capabilities and mechanism.num_bits % 8:
                rules += (PaddingBits(mechanism.num_bits),)
            columns.append(ColumnDeclaration(column, "reports", True, False, rules, name))
            if Capability.CANDIDATES in mechanism.capabilities:  # reports come in cohorts
                cohort = cohort_column_of(column, spec)
                cohort_rules = (Integer(), InRange(0, mechanism.num_cohorts))
                columns.append(
                    ColumnDeclaration(cohort, "cohorts", True, False, cohort_rules, name)
                )
            continue
        if Capability.NUMERIC in mechanism.capabilities:  # float reports near the bounds
            low, high = mechanism.report_bounds
            number_rules = (Number(), Between(low, high))
            columns.append(ColumnDeclaration(column, "reports", True, False, number_rules, name))
            continue
        if Capability.INTEGER_REPORTS in mechanism.capabilities:
            integer_rules = (Integer(), ReportRange(0, mechanism.report_range))
            columns.append(ColumnDeclaration(column, "reports", True, False, integer_rules, name))
            continue
        domain: Domain = mechanism.domain
        labels = tuple(label for label in domain.as_reported().labels if label is not None)
        columns.append(
            ColumnDeclaration(column, "reports", True, domain.has_null, (InLabels(labels),), name)
        )
    sampled = {c for c, (m, _) in resolved.items() if getattr(m, "collection", None) is not None}
    # A row of a sampled collection holds one column's report and nulls in the others.
    columns = [replace(c, nullable=True) if c.name in sampled else c for c in columns]
    declared = {c.name: c for c in columns}
    if len(declared) != len(columns):
        twice = sorted({c.name for c in columns if [d.name for d in columns].count(c.name) > 1})
        raise ParameterError(
            f"columns {twice} would be both report columns and Bloom cohort columns"
        )
    for column in _passthrough_names(passthrough):
        if column in declared:
            role = "report" if declared[column].role == "reports" else "Bloom cohort"
            raise ParameterError(
                f"passthrough column {shown(column)} is a {role} column of the release, always "
                "included and checked as such; passthrough names the other columns allowed"
            )
        columns.append(ColumnDeclaration(column, "passthrough", required=False))
    return SchemaDeclaration("release", tuple(columns), strict=True)


# ------------------------------------------------------------------------------ failures


@dataclass
class Failure:
    """Failures of one check on one column: the first few listed, all counted."""

    column: Any
    check: str
    count: int
    cases: list[tuple[object, object]]  # (value, row) of the first MAX_LISTED


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validation_error(kind: SchemaKind, failures: list[Failure]) -> ValidationError:
    """A :class:`ValidationError` listing ``failures``, with a short summary as its message."""
    listed = [
        {"schema": kind, "column": f.column, "check": f.check, "value": value, "row": row}
        for f in failures
        for value, row in f.cases[:MAX_LISTED]
    ]
    total = sum(f.count for f in failures)
    plural = "s" if total != 1 else ""
    lines = [f"{kind} schema: {total} failure{plural} in {len(failures)} check(s)"]
    for f in failures[:_MESSAGE_LINES]:
        what = CHECK_DESCRIPTIONS.get(f.check, f.check)
        line = f"- column {f.column!r}, check {f.check} ({what})"
        if f.cases and f.check not in STRUCTURAL:
            value, row = f.cases[0]
            line += f": {_short(value)}" + ("" if row is None else f" at row {row}")
        if f.count > 1:
            line += f" ({f.count} in all)"
        lines.append(line)
    if len(failures) > _MESSAGE_LINES:
        lines.append(f"- ... and {len(failures) - _MESSAGE_LINES} more check(s)")
    return ValidationError("\n".join(lines), listed, total)
