"""``srdiv evaluate``: official diversity metrics of a run."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the metric commands to the CLI."""
