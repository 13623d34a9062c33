"""How every command fails on a user mistake.

A user mistake (missing column, bad epsilon, unreadable file, value outside the domain) is one
line on standard error, ``error: ...``, and exit status 1, never a traceback. Validation
failures add the list of failed checks (the first :data:`SHOWN` of them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import polars as pl
import pyarrow as pa
import typer

from frameldp.errors import FrameLDPError, FrameLDPWarning, ValidationError

__all__ = ["SHOWN", "fail", "user_errors"]

SHOWN = 20
"""Validation failures listed on standard error."""

USER_MISTAKES = (
    FrameLDPError,
    FrameLDPWarning,
    OSError,
    pa.ArrowException,
    pl.exceptions.PolarsError,
)
"""What a wrong file, option or value raises (a warning only when warnings are errors)."""


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
        typer.echo(f"error: {error}", err=True)
        for failure in error.failures[:SHOWN]:
            where = f" row {failure['row']}" if failure.get("row") is not None else ""
            value = f" value {failure['value']!r}" if "value" in failure else ""
            typer.echo(
                f"  {failure.get('schema')} column {failure.get('column')!r}{where}: "
                f"{failure.get('check')}{value}",
                err=True,
            )
        if error.total > SHOWN:
            typer.echo(f"  ... and {error.total - SHOWN} more", err=True)
        raise typer.Exit(code=1) from None
    except USER_MISTAKES as error:
        raise fail(str(error)) from None
