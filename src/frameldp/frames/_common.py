"""What the pandas and polars adapters share: building mechanisms, finding them again, errors.

Plumbing only: no formula lives here.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import Ledger, PrivacyGuarantee, compose
from frameldp.core.encoding import Domain, NullPolicy, UnknownPolicy, unpack_bits
from frameldp.core.mechanisms import RandomizedResponse, Rappor, mechanism_from_spec
from frameldp.errors import FrameLDPError, MechanismNotFoundError, ParameterError
from frameldp.frames._arrow import infer_domain, packed_from_arrow

__all__ = [
    "METADATA_KEY",
    "SUPPORTED",
    "FrameMethods",
    "IdentityRegistry",
    "LedgerLike",
    "Supported",
    "ValueShortcuts",
    "build_krr",
    "build_rappor",
    "charging",
    "check_columns",
    "column_context",
    "find_mechanism",
    "guarantee_of",
    "labels_without_null",
    "mechanisms_of",
    "require_column",
    "unpack_reports",
]

METADATA_KEY = "frameldp"
"""Key under which mechanism specs are recorded (pandas ``attrs``, Parquet metadata)."""

LedgerLike = Ledger | str | os.PathLike[str]
"""A :class:`~frameldp.Ledger` or the path of its SQLite file."""

SUPPORTED = (Rappor, RandomizedResponse)
Supported = Rappor | RandomizedResponse
"""The mechanisms the frame adapters can apply to a column."""


@contextlib.contextmanager
def column_context(column: str) -> Iterator[None]:
    """Prefix a frameldp error raised for ``column`` with the column's name."""
    try:
        yield
    except FrameLDPError as error:
        message = str(error)
        if message.startswith(f"column {column!r}"):
            raise
        raise type(error)(f"column {column!r}: {message}") from None


def require_column(columns: list[Any], column: Any) -> None:
    """``column`` exists, or a :class:`ParameterError` listing the columns."""
    if column not in columns:
        raise ParameterError(f"column {column!r} not found; columns are {columns}")


def check_columns(columns: list[Any], mechanisms: Mapping[str, Any]) -> None:
    """Every column exists and every mechanism is one frameldp can apply to a frame."""
    if not mechanisms:
        raise ParameterError("privatize needs at least one {column: mechanism} entry")
    for column, mechanism in mechanisms.items():
        require_column(columns, column)
        if not isinstance(mechanism, SUPPORTED):
            raise ParameterError(
                f"column {column!r}: expected a frameldp mechanism (Rappor, "
                f"RandomizedResponse), got {type(mechanism).__name__}"
            )


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
) -> Rappor:
    """A :class:`Rappor` for ``column``; errors name the column."""
    with column_context(column):
        return Rappor(
            epsilon,
            f=f,
            domain=_domain(domain, unknown, nulls, column, data),
            max_weight=max_weight,
        )


def build_krr(
    column: str,
    data: Callable[[], pa.Array | pa.ChunkedArray],
    epsilon: float,
    *,
    domain: Any,
    unknown: UnknownPolicy | None,
    nulls: NullPolicy | None,
) -> RandomizedResponse:
    """A :class:`RandomizedResponse` for ``column``; errors name the column."""
    with column_context(column):
        return RandomizedResponse(epsilon, domain=_domain(domain, unknown, nulls, column, data))


def mechanisms_of(specs: Mapping[str, Any] | None) -> dict[str, Supported]:
    """Mechanisms rebuilt from recorded specs."""
    return {column: mechanism_from_spec(spec) for column, spec in (specs or {}).items()}


def find_mechanism(
    column: str, given: Supported | None, recorded: Mapping[str, Any] | None
) -> Supported:
    """The explicit mechanism, else the one recorded for ``column``, else a clear error."""
    if given is not None:
        if not isinstance(given, SUPPORTED):
            raise ParameterError(
                f"column {column!r}: mechanism must be a frameldp mechanism, got "
                f"{type(given).__name__}"
            )
        return given
    specs = recorded or {}
    if column in specs:
        mechanism: Supported = mechanism_from_spec(specs[column])
        return mechanism
    known = f" (recorded: {sorted(specs)})" if specs else ""
    raise MechanismNotFoundError(
        f"column {column!r}: no mechanism recorded for this column{known}; pass it "
        "explicitly, e.g. debias(column, frameldp.Rappor(epsilon=..., domain=...))"
    )


def unpack_reports(
    array: pa.Array | pa.ChunkedArray, mechanism: Supported, column: str
) -> tuple[NDArray[np.uint8], list[str]]:
    """RAPPOR reports as an ``(n, k)`` 0/1 array, with column names ``column=label``."""
    if not isinstance(mechanism, Rappor):
        raise ParameterError(f"column {column!r}: only RAPPOR reports are bit vectors")
    with column_context(column):
        packed = packed_from_arrow(array, mechanism.num_bits, column)
    names = [f"{column}={label}" for label in mechanism.domain.labels]
    return unpack_bits(packed, mechanism.num_bits), names


def charging(
    ledger: LedgerLike | None, budget: str | None, mechanisms: Mapping[str, Supported]
) -> contextlib.AbstractContextManager[object]:
    """Check a release against ``budget`` before producing it; record it once produced.

    Entered before any report is drawn (an over-budget release raises
    :class:`~frameldp.errors.BudgetExceededError` and produces nothing) and left after the
    reports exist (a failure in between records nothing). A no-op without a ledger.
    """
    if ledger is None and budget is None:
        return contextlib.nullcontext()
    if ledger is None or budget is None:
        raise ParameterError(
            f"ledger= and budget= go together; got ledger={ledger!r}, budget={budget!r}"
        )
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    guarantee = compose(m.privacy for m in mechanisms.values())
    return book.charge(
        budget, guarantee, description="privatize " + ", ".join(map(str, mechanisms))
    )


def guarantee_of(specs: Mapping[str, Any] | None) -> PrivacyGuarantee | None:
    """Composition of the guarantees of every recorded report column (None if none)."""
    mechanisms = mechanisms_of(specs)
    if not mechanisms:
        return None
    return compose(m.privacy for m in mechanisms.values())


class IdentityRegistry:
    """Specs recorded for frame objects that cannot carry metadata (polars frames).

    Keyed by object identity and dropped when the object is garbage collected, so only the very
    frame ``privatize`` returned is known; a frame derived from it must be given the mechanism.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], dict[str, Any]]] = {}

    def put(self, frame: Any, specs: Mapping[str, Any]) -> None:
        """Record ``specs`` for ``frame``."""
        key = id(frame)
        ref = weakref.ref(frame, lambda _: self._entries.pop(key, None))
        self._entries[key] = (ref, dict(specs))

    def get(self, frame: Any) -> dict[str, Any]:
        """Specs recorded for ``frame`` (empty when none)."""
        entry = self._entries.get(id(frame))
        if entry is None or entry[0]() is not frame:
            return {}
        return dict(entry[1])


def labels_without_null(domain: Domain) -> list[Hashable]:
    """Report categories: every bucket label except the null bucket (shown as null)."""
    return [
        label
        for code, label in enumerate(domain.labels)
        if not (domain.has_null and code == domain.null_code)
    ]


class FrameMethods:
    """What every frame accessor shares: ``rappor`` / ``krr`` and the recorded mechanisms.

    The pandas accessor and the polars namespaces provide the column names, a column as Arrow
    (only read for ``domain="infer"``), the recorded specs, and ``privatize``.
    """

    def _specs(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def mechanisms(self) -> dict[str, Supported]:
        """Mechanisms recorded for the report columns of this frame."""
        return mechanisms_of(self._specs())

    @property
    def privacy(self) -> PrivacyGuarantee | None:
        """Per-person guarantee of all recorded report columns (basic composition)."""
        return guarantee_of(self._specs())

    def _column_arrow(self, column: str) -> pa.Array | pa.ChunkedArray:
        raise NotImplementedError

    def _columns(self) -> list[Any]:
        raise NotImplementedError

    def privatize(
        self,
        mechanisms: Mapping[str, Supported],
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        raise NotImplementedError

    def rappor(
        self,
        column: str,
        epsilon: float | None = None,
        *,
        f: float | None = None,
        domain: Any,
        max_weight: int = 1,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        """Replace ``column`` by RAPPOR reports (see :class:`frameldp.Rappor`)."""
        require_column(self._columns(), column)
        mechanism = build_rappor(
            column,
            lambda: self._column_arrow(column),
            epsilon,
            f=f,
            domain=domain,
            max_weight=max_weight,
            unknown=unknown,
            nulls=nulls,
        )
        return self.privatize({column: mechanism}, key=key, seed=seed, ledger=ledger, budget=budget)

    def krr(
        self,
        column: str,
        epsilon: float,
        *,
        domain: Any,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        """Replace ``column`` by k-ary randomized response reports."""
        require_column(self._columns(), column)
        mechanism = build_krr(
            column,
            lambda: self._column_arrow(column),
            epsilon,
            domain=domain,
            unknown=unknown,
            nulls=nulls,
        )
        return self.privatize({column: mechanism}, key=key, seed=seed, ledger=ledger, budget=budget)


class ValueShortcuts:
    """``rappor`` / ``krr`` on one column of values: a pandas Series, a polars expression.

    Subclasses provide the name used in errors and stream labels, the values as Arrow (only
    read for ``domain="infer"``) and ``privatize``.
    """

    @property
    def _name(self) -> str:
        raise NotImplementedError

    def _values_arrow(self) -> pa.Array | pa.ChunkedArray:
        raise NotImplementedError

    def privatize(
        self,
        mechanism: Supported,
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        raise NotImplementedError

    def rappor(
        self,
        epsilon: float | None = None,
        *,
        f: float | None = None,
        domain: Any,
        max_weight: int = 1,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        """RAPPOR reports of these values (see :class:`frameldp.Rappor`)."""
        mechanism = build_rappor(
            self._name,
            self._values_arrow,
            epsilon,
            f=f,
            domain=domain,
            max_weight=max_weight,
            unknown=unknown,
            nulls=nulls,
        )
        return self.privatize(mechanism, key=key, seed=seed, ledger=ledger, budget=budget)

    def krr(
        self,
        epsilon: float,
        *,
        domain: Any,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        """k-ary randomized response reports of these values."""
        mechanism = build_krr(
            self._name, self._values_arrow, epsilon, domain=domain, unknown=unknown, nulls=nulls
        )
        return self.privatize(mechanism, key=key, seed=seed, ledger=ledger, budget=budget)
