"""``srdiv features relevance|diversity``, ``srdiv import-dssa`` and ``srdiv bundle``."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from srdiv.cli.options import COLLECTION, DOCS
from srdiv.cli.options import OPTIONAL_PARAMS as PARAMS
from srdiv.cli.text import load_stage_params, report_times

features_app = typer.Typer(no_args_is_help=True, help="Relevance and diversity features of candidates.")


@features_app.command("relevance")
def relevance(
    collection: Path = COLLECTION,
    docs: Path | None = DOCS,
    out: Path = typer.Option(..., help="Output table (features/relevance.parquet)."),
    params: list[Path] | None = PARAMS,
) -> None:
    """The 18 DSSA Table 5 features of every (query or suggestion, candidate) pair."""
    from srdiv.collection.schema import load_collection
    from srdiv.features.relevance import relevance_features
    from srdiv.io import write_parquet
    from srdiv.text.documents import load_docs
    from srdiv.text.pseudo_docs import query_strings

    tic = time.perf_counter()
    coll = load_collection(collection)
    table = relevance_features(coll, load_docs(collection, docs), query_strings(coll),
                               load_stage_params(params, "features"))
    write_parquet(table, out)
    report_times("features relevance", {"total": time.perf_counter() - tic})


@features_app.command("diversity")
def diversity(
    collection: Path = COLLECTION,
    docs: Path | None = DOCS,
    vectors: Path = typer.Option(..., help="Document vectors of subtopic_div (e.g. embed/lda.parquet)."),
    out: Path = typer.Option(..., help="Output table (features/diversity.parquet)."),
    params: list[Path] | None = PARAMS,
) -> None:
    """Pairwise diversity features (DSSA Table 6); without any document text, subtopic_div only."""
    from srdiv.collection.schema import load_collection
    from srdiv.features.diversity import diversity_features
    from srdiv.io import write_parquet
    from srdiv.text.documents import load_docs
    from srdiv.text.embed import read_vectors

    tic = time.perf_counter()
    coll = load_collection(collection)
    has_text = docs is not None or (collection / "docs.parquet").exists()
    table = diversity_features(coll, load_docs(collection, docs) if has_text else None,
                               read_vectors(vectors, ["docno"]),
                               int(load_stage_params(params, "features")["rank_docs"]))
    write_parquet(table, out)
    report_times("features diversity", {"total": time.perf_counter() - tic})


def import_dssa(
    collection: Path = COLLECTION,
    release: Path = typer.Option(..., help="Directory with doc.emb, query.emb and rel_feat.csv."),
    candidates: Path | None = typer.Option(None, help="Release candidate lists as JSON, checked against the run."),
    embed_out: Path = typer.Option(..., help="Document vectors (embed/lda.parquet)."),
    pseudo_docs_out: Path = typer.Option(..., help="Query/suggestion vectors (pseudo_docs/lda.parquet)."),
    relevance_out: Path = typer.Option(..., help="Relevance features (features/relevance.parquet)."),
    params: list[Path] | None = PARAMS,
) -> None:
    """Read the precomputed DSSA release into the tables the text stages write (the three files replace
    the old ones together, or none does)."""
    from srdiv.collection.schema import load_collection
    from srdiv.features.dssa_import import check_candidates, import_release
    from srdiv.io import atomic_set, write_parquet
    from srdiv.text.embed import write_vectors

    coll = load_collection(collection)
    if candidates is not None:
        check_candidates(coll, candidates, int(load_stage_params(params, "features")["rank_docs"]))
    doc_vectors, pseudo_vectors, rel = import_release(coll, release)
    with atomic_set([embed_out, pseudo_docs_out, relevance_out]) as (embed_tmp, pseudo_tmp, relevance_tmp):
        write_vectors(*doc_vectors, embed_tmp)
        write_vectors(*pseudo_vectors, pseudo_tmp)
        write_parquet(rel, relevance_tmp)
    typer.echo(f"{len(doc_vectors[0])} document vectors, {len(pseudo_vectors[0])} query/suggestion vectors, "
               f"{len(rel)} feature rows", err=True)


def bundle(
    collection: Path = COLLECTION,
    doc_vectors: Path = typer.Option(..., help="Document vectors (embed/<repr>.parquet)."),
    pseudo_vectors: Path = typer.Option(..., help="Query/suggestion vectors (pseudo_docs/<repr>.parquet)."),
    relevance: Path = typer.Option(..., help="features/relevance.parquet."),
    diversity: Path = typer.Option(..., help="features/diversity.parquet."),
    out: Path = typer.Option(..., help="Output bundle (bundle/<repr>.npz)."),
    params: list[Path] | None = PARAMS,
    fill: str = typer.Option("none", help="A candidate or query without a vector or feature row: 'none' (an "
                                          "error naming it) or 'zero' (zeros, recorded in the bundle)."),
) -> None:
    """Assemble the training-ready bundle every model reads."""
    from srdiv.collection.schema import load_collection
    from srdiv.features.assemble import FILLS, build_bundle, read_feature_table
    from srdiv.features.relevance import FEATURE_NAMES, KEY_COLUMNS
    from srdiv.io import InputError
    from srdiv.text.embed import read_vectors

    if fill not in FILLS:
        raise InputError("--fill", f"must be one of {', '.join(FILLS)}, got {fill!r}")
    tic = time.perf_counter()
    stage = load_stage_params(params, "features")
    result = build_bundle(
        load_collection(collection), read_vectors(doc_vectors, ["docno"]),
        read_vectors(pseudo_vectors, ["qid", "sugg_id"]),
        read_feature_table(relevance, KEY_COLUMNS, FEATURE_NAMES),
        read_feature_table(diversity, ["qid", "docno_a", "docno_b"]), rank_docs=int(stage["rank_docs"]),
        max_subs=int(stage["max_subs"]), max_subs2=int(stage["max_subs2"]), fill=fill,
        files={"doc_vectors": str(doc_vectors), "pseudo_vectors": str(pseudo_vectors), "relevance": str(relevance),
               "diversity": str(diversity)},
    )
    result.save(out)
    filled = f" (filled with zeros: {'; '.join(result.filled)})" if result.filled else ""
    typer.echo(f"bundle: {result.dims} in {time.perf_counter() - tic:.1f} s -> {out}{filled}", err=True)


def register(app: typer.Typer) -> None:
    """Add ``features``, ``import-dssa`` and ``bundle`` to the CLI."""
    app.add_typer(features_app, name="features")
    app.command("import-dssa")(import_dssa)
    app.command("bundle")(bundle)
