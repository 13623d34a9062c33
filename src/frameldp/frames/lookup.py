"""Finding the mechanism of a report column: the recorded one, or an explicit one that agrees.

Plumbing only: no formula lives here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.core.columns import packed_bits
from frameldp.core.encoding import unpack_bits
from frameldp.core.mechanisms import (
    Capability,
    Decoder,
    Discoverer,
    FrequencyEstimator,
    Mechanism,
    is_mechanism,
    mechanism_class,
    mechanism_from_spec,
)
from frameldp.errors import (
    MechanismNotFoundError,
    ParameterError,
    shown,
)
from frameldp.frames.pipeline import column_context
from frameldp.frames.report_type import described, storage_of

__all__ = [
    "find_decoder",
    "find_discoverer",
    "find_mechanism",
    "mechanism_spec",
    "mechanisms_of",
    "refuse_other_mechanism",
    "report_names",
    "unpack_reports",
]


def mechanisms_of(specs: Mapping[str, Any] | None) -> dict[str, Mechanism]:
    """Mechanisms rebuilt from recorded specs."""
    return {column: mechanism_from_spec(spec) for column, spec in (specs or {}).items()}


def find_mechanism(column: str, given: Mechanism | None, recorded: Mapping[str, Any] | None) -> Any:
    """The explicit mechanism, else the one recorded for ``column``, else a clear error; a
    mechanism decoded against candidates is refused (``decode`` is its estimator)."""
    specs = recorded or {}
    if given is not None and not is_mechanism(given):
        raise ParameterError(
            f"column {shown(column)}: mechanism must be a frameldp mechanism, got "
            f"{type(given).__name__}"
        )
    if given is not None and column in specs:
        refuse_other_mechanism(column, given, specs[column])
    if given is None and column in specs:
        given = mechanism_from_spec(specs[column])
    if given is None:
        known = f" (recorded: {sorted(specs)})" if specs else ""
        raise MechanismNotFoundError(
            f"column {shown(column)}: no mechanism recorded for this column{known}; pass it "
            "explicitly, e.g. debias(column, frameldp.Rappor(epsilon=..., domain=...)). A column "
            "loses its report type when it is read from text (CSV, JSON), made plain, merged "
            "on with a plain column, or concatenated with another release (stack releases with "
            "frameldp.concat_releases, which composes their guarantees per person)"
        )
    if Capability.CANDIDATES in given.capabilities:
        raise ParameterError(
            f"column {shown(column)}: {given.title} reports are decoded against candidate "
            f"strings: use decode({shown(column)}, candidates=[...])"
        )
    return given


_RELEASE_KEYS = (
    "seeded",
    "memo",
    "cohort_column",
    "rows_per_user",
    "release",
    "rows",
    "fingerprint",
)
"""What a release adds to a mechanism's spec (not part of the mechanism)."""


def mechanism_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The mechanism's own spec in a recorded one (without what the release added)."""
    return {k: v for k, v in spec.items() if k not in _RELEASE_KEYS}


def refuse_other_mechanism(column: Any, given: Mechanism, spec: Mapping[str, Any]) -> None:
    """Refuse a mechanism other than the one a column's type records: the reports would be
    debiased (and their guarantee stated) as another mechanism's."""
    recorded = mechanism_spec(spec)
    wanted = given.to_spec()
    if wanted != recorded:
        differ = sorted(k for k in {*recorded, *wanted} if recorded.get(k) != wanted.get(k))
        raise ParameterError(
            f"column {shown(column)}: holds reports of {described(spec)}, not of the "
            f"mechanism given ({described(wanted)}; they differ in {', '.join(differ)}); drop "
            "mechanism= to use the recorded one",
            column=column,
            parameter="mechanism",
        )


def unpack_reports(
    array: pa.Array | pa.ChunkedArray, mechanism: Mechanism, column: str
) -> tuple[NDArray[np.uint8], list[str]]:
    """Bit-vector reports as an ``(n, k)`` 0/1 array, with column names ``column=label``."""
    labels = cast(FrequencyEstimator, mechanism).categories  # bit vectors are frequencies
    if Capability.BIT_VECTORS not in mechanism.capabilities or not labels:
        raise ParameterError(
            f"column {shown(column)}: only RAPPOR reports (bit vectors over a domain) unpack; "
            f"{mechanism.title} reports are not"
        )
    with column_context(column):
        packed = packed_bits(storage_of(array), len(labels), column)
    names = [f"{column}={label}" for label in labels]
    return unpack_bits(packed, len(labels)), names


def find_decoder(
    column: str | None, given: Mechanism | None, recorded: Mapping[str, Any] | None
) -> tuple[str, Decoder, list[str], str | None]:
    """The report column to decode against candidates: ``(column, mechanism, its report
    columns, memo)``.

    ``column`` may be omitted when exactly one such column is recorded.
    """
    column, mechanism, names, memo = _find_capable(
        column,
        given,
        recorded,
        Capability.CANDIDATES,
        verb="decode",
        kind="Bloom RAPPOR",
        expected="BloomRappor",
        example="decode(column, candidates=..., mechanism=frameldp.BloomRappor(...))",
    )
    return column, cast(Decoder, mechanism), names, memo


def find_discoverer(
    column: str | None, given: Mechanism | None, recorded: Mapping[str, Any] | None
) -> tuple[str, Discoverer, list[str]]:
    """The report column to discover frequent strings in: ``(column, mechanism, its report
    columns)``; ``column`` may be omitted when exactly one such column is recorded."""
    column, mechanism, names, _ = _find_capable(
        column,
        given,
        recorded,
        Capability.DISCOVERY,
        verb="discover",
        kind="prefix-extending",
        expected="PrefixExtending",
        example="discover(column, mechanism=frameldp.PrefixExtending(...))",
    )
    return column, cast(Discoverer, mechanism), names


def _find_capable(
    column: str | None,
    given: Mechanism | None,
    recorded: Mapping[str, Any] | None,
    capability: Capability,
    *,
    verb: str,
    kind: str,
    expected: str,
    example: str,
) -> tuple[str, Mechanism, list[str], str | None]:
    """The report column whose mechanism has ``capability`` (:func:`find_decoder`)."""
    specs = {
        c: s
        for c, s in (recorded or {}).items()
        if capability in mechanism_class(str(s.get("mechanism"))).capabilities
    }
    if column is None:
        if len(specs) != 1:
            found = sorted(specs) if specs else "none"
            raise MechanismNotFoundError(
                f"{verb} needs the report column: {kind} columns recorded here: {found}"
            )
        column = next(iter(specs))
    spec = specs.get(column, {})
    if given is not None:
        if not is_mechanism(given) or capability not in given.capabilities:
            raise ParameterError(
                f"column {shown(column)}: {verb} needs a {kind} mechanism ({expected}), got "
                f"{type(given).__name__}"
            )
        if spec:
            refuse_other_mechanism(column, given, spec)
        mechanism = given
    elif spec:
        mechanism = mechanism_from_spec(spec)
    else:
        raise MechanismNotFoundError(
            f"column {shown(column)}: no {kind} mechanism recorded for this column; pass it, "
            f"e.g. {example}"
        )
    return column, mechanism, report_names(column, mechanism, spec), spec.get("memo")


def report_names(column: str, mechanism: Mechanism, spec: Mapping[str, Any] | None) -> list[str]:
    """The report columns of ``column`` in a frame or file: the mechanism's, the companion
    column renamed where the spec records another name (``"cohort_column"``, as the reference
    RAPPOR reader writes)."""
    names = list(mechanism.report_columns(column))
    recorded = (spec or {}).get("cohort_column")
    if len(names) > 1 and isinstance(recorded, str):
        names[1] = recorded
    return names
