"""``srdiv report``: tables, plots and README of one dataset from its metrics."""

from __future__ import annotations

from pathlib import Path

import typer

from srdiv.cli.options import PARAMS


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        metrics: Path = typer.Option(..., help="metrics.parquet (model, variant, fold, qid, measure, value)."),
        params: list[Path] = PARAMS,
        out: Path = typer.Option(..., help="Results directory (tables/, plots/, README.md)."),
        models_dir: Path | None = typer.Option(None, help="work/<dataset>/models: learning curves, timings."),
        benchmarks_dir: Path | None = typer.Option(None, help="Snakemake benchmark records of the dataset."),
        collection: Path | None = typer.Option(None, help="Collection, for the metric-at-k plot from run files."),
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

    @app.command("leakage")
    def leakage(
        collection: list[Path] = typer.Option(..., help="Collection directory (repeat for several)."),
        params: list[Path] = PARAMS,
        trec: Path = typer.Option(Path("data/external/trec-web-2009-2012"), help="The TREC Web Track 2009-2012 files."),
        dssa_slice: Path = typer.Option(..., help="Directory with a slice of the DSSA release: rel_feat.csv and "
                                                  "collection/ (its topics in the common schema)."),
        oracle: list[Path] = typer.Option([], help="A suggestions table inside a collection's directory, measured "
                                                   "as a column of its own (oracle aspects; repeatable)."),
        out: Path = typer.Option(..., help="Markdown file: the figures beside TREC's."),
    ) -> None:
        """What collections' suggestions and features give away about their judgments, beside TREC."""
        from dataclasses import replace

        from srdiv.collection.schema import conform, load_collection
        from srdiv.collection.trec_web import build_trec_web
        from srdiv.features.dssa_import import read_rel_feat
        from srdiv.io import InputError, read_parquet, write_text
        from srdiv.params import load_params
        from srdiv.report.leakage import leakage_page, measure_collection, measure_trec

        features = load_params(params)["features"]
        colls = {path: load_collection(path, with_docs=True) for path in collection}
        extra = {}
        for path in oracle:
            owner = next((c for c in colls if path.resolve().parent == c.resolve()), None)
            if owner is None:
                raise InputError(path, "an --oracle table must lie in the directory of a --collection")
            extra[owner] = conform("suggestions", read_parquet(path), path)
        trec_coll, _ = build_trec_web(trec)
        release = load_collection(dssa_slice / "collection")
        columns = {"TREC Web Track 2009-2012": measure_trec(
            trec_coll, release, read_rel_feat(dssa_slice / "rel_feat.csv"), int(features["rank_docs"]))}
        for path, coll in colls.items():
            columns[path.name] = measure_collection(coll, coll.docs, features)
            if path in extra:
                columns[f"{path.name}, oracle aspects"] = measure_collection(
                    replace(coll, suggestions=extra[path]), coll.docs, features)
        command = " ".join(["srdiv leakage", *(f"--collection {c}" for c in collection), "--params",
                            " --params ".join(map(str, params)), f"--dssa-slice {dssa_slice}",
                            *(f"--oracle {o}" for o in oracle), f"--out {out}"])
        write_text(leakage_page(columns, command), out)
        typer.echo(f"wrote {out}")
