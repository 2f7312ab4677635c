"""``srdiv dvc-yaml``: the ``dvc.yaml`` files from the Snakemake DAG (:mod:`srdiv.cli.dvc_stages`, imported
only when the command runs: it reads Snakemake's workflow, which no other command needs)."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add ``srdiv dvc-yaml`` to the CLI."""

    @app.command("dvc-yaml")
    def dvc_yaml(
        config: list[Path] = typer.Option(..., "--config", help="params.yaml [+ overlays], as given to Snakemake."),
        study: list[Path] = typer.Option([], "--study", help="A study overlay (one with `study:`) over the first "
                                         "--config file: its stages go to pipelines/<study>/dvc.yaml. Repeatable."),
        out: Path = typer.Option(Path("dvc.yaml"), help="dvc.yaml to write for the --config setting."),
        wdir: str = typer.Option("", help="Stage working directory relative to --out (e.g. ../..)."),
        snakefile: Path = typer.Option(Path("Snakefile"), help="The Snakefile describing the DAG."),
    ) -> None:
        """Write dvc.yaml from the Snakemake DAG (one description of the pipeline), and one per study."""
        from srdiv.cli.dvc_stages import command_modules, generated, render_dvc_yamls
        from srdiv.io import write_text

        for path, text in render_dvc_yamls(snakefile, config, out, command_modules(app), wdir or None, study).items():
            write_text(text, path, legacy=generated)
