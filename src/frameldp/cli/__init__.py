"""The ``frameldp`` command line (typer)."""

from __future__ import annotations

from frameldp.cli._signals import install
from frameldp.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the ``frameldp`` command."""
    install()
    app()
