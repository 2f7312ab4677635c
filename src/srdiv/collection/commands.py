"""``srdiv collection <name>``: build a collection in the common schema."""

from __future__ import annotations

import typer

collection_app = typer.Typer(no_args_is_help=True, help="Build a collection in the common schema.")


def register(app: typer.Typer) -> None:
    app.add_typer(collection_app, name="collection")
