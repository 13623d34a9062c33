"""Errors and warnings raised by frameldp.

Every error is a :class:`FrameLDPError` (a ``ValueError``) whose message names the column, the
parameter and the offending value, so an ETL log line is enough to fix the call. Errors are raised
before any output is produced: a failed call writes nothing and leaves the input unchanged.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, TypeVar

__all__ = [
    "BudgetExceededError",
    "DomainError",
    "DomainInferenceWarning",
    "FrameLDPError",
    "FrameLDPWarning",
    "InsecureSeedWarning",
    "LedgerError",
    "MechanismNotFoundError",
    "NoiseReuseError",
    "ParameterError",
    "UnknownBudgetError",
    "ValidationError",
    "caller_stacklevel",
    "default_marker",
    "renamed",
    "renamed_argument",
    "shown",
]

SHOWN_CHARS = 40
"""Longest rendering of a user's value in an error message (it may be private or a secret)."""


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` cut to at most ``limit`` characters, for error messages.

    A value in an error may be a person's private value or a secret pasted in the wrong place
    (a key file given as a domain file): errors quote a short prefix, never the whole value.

    >>> shown("x" * 1000)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (1000 chars)"
    >>> shown(2.5)
    '2.5'
    """
    try:
        text = repr(value)
    except Exception:  # a foreign object whose repr fails still gets a clear error
        text = f"<{type(value).__name__}>"
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, str | bytes | bytearray) else None
    suffix = f" ({size} {'chars' if isinstance(value, str) else 'bytes'})" if size else ""
    return text[:limit] + "…" + suffix


class FrameLDPError(ValueError):
    """Base class of every error frameldp raises on bad input.

    ``column`` names the column the error is about and ``parameter`` the parameter, when
    known; the message starts with ``column '...':`` whenever ``column`` is set.
    """

    def __init__(
        self, message: str = "", *, column: object = None, parameter: str | None = None
    ) -> None:
        super().__init__(message)
        self.column = column
        self.parameter = parameter

    def __str__(self) -> str:
        message = super().__str__()
        if self.column is None or message.startswith(f"column {shown(self.column)}"):
            return message
        return f"column {shown(self.column)}: {message}"

    def __reduce__(self) -> tuple[object, ...]:
        # Exceptions pickle their args only: keep the attributes across processes (Dask).
        return (_rebuilt, (type(self), self.args, dict(self.__dict__)))


def _rebuilt(
    cls: type[FrameLDPError], args: tuple[object, ...], state: dict[str, object]
) -> FrameLDPError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ParameterError(FrameLDPError):
    """A mechanism or estimator parameter is invalid (epsilon, f, max_weight, level, ...)."""


class DomainError(FrameLDPError):
    """A value is null or outside the public domain, or the domain itself is invalid."""


class MechanismNotFoundError(FrameLDPError):
    """``debias`` was asked for a column whose mechanism is neither given nor recorded."""


class NoiseReuseError(FrameLDPError):
    """Noise was about to be shared by two different rows, or a fresh key to leave the process:
    refused before anything is released (see :mod:`frameldp.core.randomness`)."""


class BudgetExceededError(FrameLDPError):
    """A release would take a ledger budget past its cap; nothing was recorded or released."""


class UnknownBudgetError(FrameLDPError):
    """A ledger was asked about a budget that was never set."""


class LedgerError(FrameLDPError):
    """A ledger file cannot be read or written: damaged, not a ledger, read-only, locked, or the
    disk is full. Names the file and what went wrong; a failed write recorded nothing."""


class ValidationError(FrameLDPError):
    """A frame failed its input or release schema; ``failures`` lists every failed check.

    Each failure is a dict with ``schema`` ("input" or "release"), ``column``, ``check``,
    ``value`` (the offending value, when there is one) and ``row`` (when known). The list may
    be capped; ``total`` counts every failure found.
    """

    def __init__(
        self,
        message: str,
        failures: list[dict[str, object]] | None = None,
        total: int | None = None,
    ) -> None:
        super().__init__(message)
        self.failures: list[dict[str, object]] = list(failures or [])
        self.total: int = len(self.failures) if total is None else total


class FrameLDPWarning(UserWarning):
    """Base class of frameldp warnings."""


class DomainInferenceWarning(FrameLDPWarning):
    """The domain was inferred from the data, which reveals which values occur."""


class UnknownValuesWarning(FrameLDPWarning):
    """``unknown="other"`` put more than :data:`~frameldp.core.encoding.OTHER_SHARE` of a
    batch's rows in the ``<other>`` bucket: the domain is likely wrong (the message names the
    most frequent values outside it)."""


class InsecureSeedWarning(FrameLDPWarning):
    """Reports were drawn from an integer ``seed=``: anyone who knows the seed can remove the
    noise. For tests and simulations only; every guarantee and file of such a run says so."""


def caller_stacklevel() -> int:
    """``stacklevel`` for :func:`warnings.warn` that points at the caller's code.

    Called from the function that warns; counts the frames inside frameldp above it, so the
    warning names the user's line however deep inside frameldp it was raised.
    """
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("frameldp"):
        frame = frame.f_back
        level += 1
    return level


def renamed(owner: str, old: str, new: str) -> None:
    """Warn (``DeprecationWarning``, at the caller's line) that ``owner``'s ``old`` is now
    called ``new``; the old name keeps working until it is removed in a later release."""
    warnings.warn(
        f"{owner}: {old} is renamed {new} (the old name will be removed in a later release)",
        DeprecationWarning,
        stacklevel=caller_stacklevel(),
    )


_T = TypeVar("_T")


def default_marker(value: _T) -> _T:
    """``value`` as an object of its own (of a subclass of its type): equal to it and shown
    like it in signatures, but told apart with ``is`` from the same value passed by a caller,
    so that :func:`renamed_argument` knows whether the new name was given."""
    kind = type(f"Default{type(value).__name__.title()}", (type(value),), {})
    marker: _T = kind(value)
    return marker


def renamed_argument(
    owner: str, old: str, new: str, *, old_value: Any, new_value: Any, default: Any
) -> Any:
    """The value of argument ``new`` when a caller may have used its earlier name ``old``
    (``old_value`` None: not used). The old name is warned about (:func:`renamed`); given
    together with a different value under the new name (``new_value`` is not ``default``, a
    :func:`default_marker`), it is refused. The marker itself becomes a plain value."""
    given = new_value is not default
    if old_value is None:
        return new_value if given else type(default).__mro__[1](default)
    renamed(owner, old, new)
    if given and new_value != old_value:
        raise ParameterError(
            f"{owner}: {new}={shown(new_value)} and {old}={shown(old_value)} disagree; pass "
            f"{new} only",
            parameter=new,
        )
    return old_value
