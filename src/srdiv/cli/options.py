"""Command-line options several ``srdiv`` commands share, declared once."""

from __future__ import annotations

import typer

PARAMS_HELP = "params.yaml, then overlays merged over it in order (repeat --params)."

PARAMS = typer.Option(..., "--params", help=PARAMS_HELP)
"""``--params`` of a command that needs the configuration (training, sampling, the report)."""

OPTIONAL_PARAMS = typer.Option(None, "--params", help=PARAMS_HELP + " Without it: the built-in defaults.")
"""``--params`` of a command whose settings all have defaults (collections, text stages, features)."""

COLLECTION = typer.Option(..., help="Collection directory (one that 'srdiv collection ... --out DIR' wrote).")
DOCS = typer.Option(None, "--docs", help="Documents file (.jsonl/.parquet) used instead of the collection's.")
