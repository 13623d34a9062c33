"""How every command fails on a user mistake.

A user mistake (missing column, bad epsilon, unreadable file, value outside the domain) is one
line on standard error, ``error: ...``, and exit status 1, never a traceback. Validation
failures add the list of failed checks (the first :data:`SHOWN` of them). Messages speak of
command-line options (``--nulls category``, not ``nulls='category'``) and quote values short
(:func:`frameldp.errors.shown`): a value may be private, or a secret in the wrong file.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import typer

from frameldp.errors import (
    FrameLDPError,
    FrameLDPWarning,
    InsecureSeedWarning,
    ValidationError,
    shown,
)

__all__ = ["SHOWN", "brief", "command_line_words", "fail", "user_errors", "warnings_as_lines"]

SHOWN = 20
"""Validation failures listed on standard error."""

USER_MISTAKES = (FrameLDPError, FrameLDPWarning, OSError)
"""What a wrong file, option or value raises (a warning only when warnings are errors), besides
the errors of the file readers (:func:`_reader_errors`)."""


def _reader_errors() -> tuple[type[BaseException], ...]:
    """pyarrow's and polars' errors (a file they cannot read), among the libraries imported:
    a command that never imported one cannot have raised its errors."""
    import sys

    found: list[type[BaseException]] = []
    if "pyarrow" in sys.modules:
        found.append(sys.modules["pyarrow"].ArrowException)
    if "polars" in sys.modules:
        found.append(sys.modules["polars"].exceptions.PolarsError)
    return tuple(found)


OPTIONS = {
    "nulls='category'": "--nulls category",
    "unknown='other'": "--unknown other",
    "memo_key=": "--memo-key-file",
    "clip=True": "--clip",
}
"""Python API words in frameldp's messages, and the options that say the same on the command
line."""

HINTS = {
    "not_nullable": "pass --nulls category to give nulls their own bucket (a numeric column "
    "has no null report: drop or impute its nulls)",
    "in_domain": "pass --unknown other to give values outside the domain their own bucket",
    "between": "pass --clip to clip numbers outside --bounds into them",
    "number": "a numeric mechanism takes a column of numbers",
}
"""What to do about a failed input check."""


def brief(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters (a usage error may quote a whole pasted value)."""
    return text if len(text) <= limit else text[:limit] + "…"


def command_line_words(message: str) -> str:
    """A frameldp message with the Python API's parameters named as command-line options."""
    for words, option in OPTIONS.items():
        message = message.replace(words, option)
    return message


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` on one line (plain text, no markup read into it); the exit
    to raise."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    return typer.Exit(code=1)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Report a user mistake as one line (plus the failed checks of a validation) and exit 1."""
    try:
        yield
    except ValidationError as error:
        typer.echo(f"error: {_with_hints(str(error), error)}", err=True)
        for failure in error.failures[:SHOWN]:
            where = f" row {failure['row']}" if failure.get("row") is not None else ""
            value = f" value {shown(failure['value'])}" if "value" in failure else ""
            typer.echo(
                f"  {failure.get('schema')} column {shown(failure.get('column'))}{where}: "
                f"{failure.get('check')}{value}",
                err=True,
            )
        if error.total > SHOWN:
            typer.echo(f"  ... and {error.total - SHOWN} more", err=True)
        raise typer.Exit(code=1) from None
    except Exception as error:
        if isinstance(error, _reader_errors()):
            from frameldp.cli._inputs import arrow_message

            raise fail(arrow_message(error)) from None
        if isinstance(error, USER_MISTAKES):
            raise fail(command_line_words(str(error))) from None
        raise


def _with_hints(message: str, error: ValidationError) -> str:
    """The summary of a failed input validation, with what the options can do about it."""
    checks = {
        "not_nullable" if failure.get("value", "") is None else str(failure.get("check"))
        for failure in error.failures
        if failure.get("schema") == "input"
    }
    hints = [hint for check, hint in HINTS.items() if check in checks]
    return "; ".join([message, *hints])


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """frameldp warnings as ``warning: ...`` lines on standard error, in command-line terms
    (warnings that a seed is insecure: one line, the command line's)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FrameLDPWarning)
        yield
    lines = []
    for warning in caught:
        # A seed's warning is said once, by the command, as it starts (commands.warn_seeded).
        message = command_line_words(str(warning.message))
        if not issubclass(warning.category, InsecureSeedWarning) and message not in lines:
            lines.append(message)
    for message in lines:
        typer.echo(f"warning: {message}", err=True)
