"""``srdiv embed`` and ``srdiv pseudo-docs``: document and query/suggestion vectors."""

from __future__ import annotations

from pathlib import Path

import typer

from srdiv.cli.options import COLLECTION, DOCS
from srdiv.cli.options import OPTIONAL_PARAMS as PARAMS


def load_stage_params(paths: list[Path] | None, name: str) -> dict:
    """Section ``name`` of the merged params files over the code defaults (defaults alone without files)."""
    from srdiv.params import load_params
    from srdiv.text.defaults import stage_params

    return stage_params(load_params(paths) if paths else {}, name)


def report_times(stage: str, times: dict[str, float]) -> None:
    """One stderr line with the seconds each step took."""
    steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in times.items())
    typer.echo(f"{stage}: {steps}", err=True)


def embed(
    collection: Path = COLLECTION,
    docs: Path | None = DOCS,
    out: Path = typer.Option(..., help="Output directory (doc2vec.parquet, lda.parquet, svd.parquet, trained models)."),
    params: list[Path] | None = PARAMS,
) -> None:
    """Train doc2vec (PV-DBOW), LDA and SVD (LSA on tf-idf) on all documents; write their vectors and models."""
    from srdiv.text.documents import load_docs
    from srdiv.text.embed import embed_documents

    report_times("embed", embed_documents(load_docs(collection, docs), load_stage_params(params, "embed"), out))


def pseudo_docs(
    collection: Path = COLLECTION,
    docs: Path | None = DOCS,
    embed_dir: Path = typer.Option(..., help="Output directory of 'srdiv embed' (trained models)."),
    out: Path = typer.Option(..., help="Output directory (doc2vec.parquet, lda.parquet, svd.parquet)."),
    params: list[Path] | None = PARAMS,
) -> None:
    """doc2vec, LDA and SVD vectors of queries and suggestions from their top-Z BM25 pseudo-documents."""
    from srdiv.collection.schema import load_collection
    from srdiv.text.documents import load_docs
    from srdiv.text.pseudo_docs import pseudo_document_vectors

    features = load_stage_params(params, "features")
    stage = {**load_stage_params(params, "pseudo_docs"), "k1": features["k1"], "b": features["b"]}
    coll = load_collection(collection)
    report_times("pseudo-docs", pseudo_document_vectors(coll, load_docs(collection, docs), embed_dir, stage, out))


def register(app: typer.Typer) -> None:
    """Add ``embed`` and ``pseudo-docs`` to the CLI."""
    app.command("embed")(embed)
    app.command("pseudo-docs")(pseudo_docs)
