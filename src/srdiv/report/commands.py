"""``srdiv report``: tables, plots and README of one dataset from its metrics."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from srdiv.options import PARAMS


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        metrics: Path = typer.Option(..., help="metrics.parquet (model, variant, fold, qid, measure, value)."),
        params: List[Path] = PARAMS,
        out: Path = typer.Option(..., help="Results directory (tables/, plots/, README.md)."),
        models_dir: Optional[Path] = typer.Option(None, help="work/<dataset>/models: learning curves, timings."),
        benchmarks_dir: Optional[Path] = typer.Option(None, help="Snakemake benchmark records of the dataset."),
        collection: Optional[Path] = typer.Option(None, help="Collection, for the metric-at-k plot from run files."),
    ) -> None:
        """Write the paper-style tables (Markdown, LaTeX, HTML), plots and results README."""
        from srdiv.params import load_params
        from srdiv.report.builder import build_report, metric_at_k_from_runs

        values = load_params(params)
        at_k = None
        if collection is not None and models_dir is not None:
            at_k = metric_at_k_from_runs(collection, models_dir, values)
        written = build_report(metrics, values, params, out, models_dir, benchmarks_dir, at_k)
        typer.echo(f"wrote {len(written)} files under {out}")
