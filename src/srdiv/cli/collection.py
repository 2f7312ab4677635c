"""``srdiv collection <name>``: build a collection in the common schema."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from srdiv.cli.options import OPTIONAL_PARAMS

if TYPE_CHECKING:
    from srdiv.collection.schema import Collection

collection_app = typer.Typer(no_args_is_help=True, help="Build a collection in the common schema.")


@collection_app.command("subset")
def subset(
    source: Path = typer.Option(..., help="Collection directory to subsample."),
    out: Path = typer.Option(..., help="Output collection directory."),
    queries: int = typer.Option(12, help="Number of judged queries to keep."),
    folds: int = typer.Option(2, help="Number of folds to re-split them into."),
    seed: int = typer.Option(42, help="Seed of the draw."),
    extra_docs: int = typer.Option(3000, help="Background documents kept beside the runs' and qrels' ones."),
) -> None:
    """Keep a seeded sample of queries (the pipeline's smoke setting)."""
    from srdiv.collection.schema import load_collection, write_collection
    from srdiv.collection.subset import subset_collection

    coll = load_collection(source, with_docs=True)
    write_collection(subset_collection(coll, queries, folds, seed, extra_docs), out)


@collection_app.command("planted")
def planted(
    out: Path = typer.Option(..., help="Output collection directory."),
    queries: int = typer.Option(16, help="Number of queries (all judged)."),
    subtopics: int = typer.Option(4, help="Subtopics (aspects) per query."),
    candidates: int = typer.Option(50, help="Documents per query: the initial run's length, half of them relevant."),
    noise: float = typer.Option(0.3, help="Share of a text's aspect words drawn from another aspect, in [0, 1); "
                                          "also the initial run's score noise."),
    folds: int = typer.Option(2, help="Number of folds the queries are dealt into."),
    seed: int = typer.Option(42, help="Seed of the whole construction."),
) -> None:
    """A synthetic collection whose subtopic structure is known: a check that each model learns
    (docs/planted.md)."""
    from srdiv.collection.planted import PlantedConfig, build_planted
    from srdiv.collection.schema import write_collection

    coll = build_planted(PlantedConfig(queries, subtopics, candidates, noise, folds, seed))
    write_collection(coll, out)
    _report_built(coll, out)


@collection_app.command("with-suggestions")
def with_suggestions(
    source: Path = typer.Option(..., help="Collection directory."),
    suggestions: Path = typer.Option(..., help="Parquet table of suggestions (qid, sugg_id, level, parent, text, "
                                               "weight)."),
    out: Path = typer.Option(..., help="Output collection directory."),
) -> None:
    """The collection with its suggestions replaced (e.g. wordnet-div's oracle aspects, a study of their own)."""
    from dataclasses import replace

    from srdiv.collection.schema import conform, load_collection, write_collection
    from srdiv.io import read_parquet

    coll = load_collection(source, with_docs=True)
    write_collection(replace(coll, suggestions=conform("suggestions", read_parquet(suggestions), suggestions)), out)


@collection_app.command("trec-web")
def trec_web(
    source: Path = typer.Option(Path("data/external/trec-web-2009-2012"),
                                help="Directory of the vendored TREC Web Track 2009-2012 files."),
    out: Path = typer.Option(..., help="Output collection directory."),
) -> None:
    """TREC Web Track 2009-2012 diversity task: topics, suggestions, qrels, Lemur run, folds (no docs)."""
    from srdiv.collection.schema import write_collection
    from srdiv.collection.trec_web import build_trec_web

    coll, notes = build_trec_web(source)
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    write_collection(coll, out)
    typer.echo(f"{len(coll.topics)} topics, {coll.qrels['qid'].nunique()} judged, "
               f"{len(coll.suggestions)} suggestions, {len(coll.run)} run rows -> {out}")


@collection_app.command("wordnet-div")
def wordnet_div(
    wordnet_dir: Path = typer.Option(Path("/usr/share/wordnet"),
                                     help="WordNet 3.0 database (data.noun, index.noun, ...)."),
    out: Path = typer.Option(..., help="Output collection directory (tables + README.md data card)."),
    params: list[Path] | None = OPTIONAL_PARAMS,
) -> None:
    """The open default collection built from WordNet 3.0 (see its data card)."""
    from srdiv.collection.schema import conform, write_collection
    from srdiv.collection.wordnet import WordnetDivConfig, build_wordnet_div
    from srdiv.collection.wordnet_card import ORACLE_FILE, data_card
    from srdiv.collection.wordnet_files import read_wordnet
    from srdiv.collection.wordnet_oracle import oracle_suggestions
    from srdiv.params import load_params

    cfg = WordnetDivConfig.from_params(load_params(params) if params else {})
    wn = read_wordnet(wordnet_dir)
    coll = build_wordnet_div(wn, cfg)
    oracle = conform("suggestions", oracle_suggestions(wn, coll, cfg))
    write_collection(coll, out, extra={"README.md": data_card(coll, cfg), ORACLE_FILE: oracle})
    _report_built(coll, out)


@collection_app.command("debian-facets")
def debian_facets(
    indexes: Path = typer.Option(..., help="Directory of Debian's InRelease, Packages and Translation-en (plain or "
                                           ".xz/.gz/.bz2) and the Debtags vocabulary "
                                           "(workflow/scripts/fetch_debian_indexes.sh)."),
    out: Path = typer.Option(..., help="Output collection directory (tables + README.md data card)."),
    params: list[Path] | None = OPTIONAL_PARAMS,
) -> None:
    """An open faceted collection of Debian package descriptions with Debtags subtopics (see its data card)."""
    from srdiv.collection.debian import DebianFacetsConfig, build_debian_facets, read_indexes
    from srdiv.collection.debian_card import data_card, measure_choices
    from srdiv.collection.schema import write_collection
    from srdiv.params import load_params

    cfg = DebianFacetsConfig.from_params(load_params(params) if params else {})
    ix = read_indexes(indexes, cfg.architecture)
    build = build_debian_facets(ix, cfg)
    coll = build.collection
    write_collection(coll, out, extra={"README.md": data_card(build, cfg, measure_choices(ix, build, cfg))})
    _report_built(coll, out)


@collection_app.command("import")
def import_files(
    topics: list[Path] = typer.Option(..., help="Topics: Web Track XML (subtopics inside) or TSV 'qid query "
                                                "[description [type]]'. Repeat for several files (one per year)."),
    qrels: list[Path] = typer.Option(..., help="TREC diversity qrels 'qid subtopic docno grade'. Repeatable."),
    run: list[Path] = typer.Option(..., help="The first-stage TREC run 'qid Q0 docno rank score tag'. Repeatable."),
    out: Path = typer.Option(..., help="Output collection directory."),
    subtopics: Path | None = typer.Option(None, help="TSV 'qid sid [text]' (needed with TSV topics; replaces "
                                                        "the XML topics' subtopics)."),
    suggestions: Path | None = typer.Option(None, help="Web Track query-suggestion XML, or TSV 'qid level parent "
                                                          "text' (a header may add sugg_id, weight)."),
    docs: Path | None = typer.Option(None, help="Documents, JSONL or Parquet (docs/user-documents.md)."),
    folds: Path | None = typer.Option(None, help="Folds file, 'qid fold' per line."),
    k_folds: int | None = typer.Option(None, help="Or deal the judged topics into this many folds at random."),
    seed: int = typer.Option(42, help="Seed of --k-folds."),
) -> None:
    """A collection from standard TREC-style files (formats: docs/collections.md); every malformed line is one
    error naming the file and the line."""
    from srdiv.collection.schema import write_collection
    from srdiv.collection.trec_files import import_collection
    from srdiv.text.documents import read_docs

    if (folds is None) == (k_folds is None):
        raise typer.BadParameter("give --folds FILE or --k-folds K (one of them)")
    try:
        coll, notes = import_collection(topics, qrels, run, subtopics, suggestions, folds, k_folds, seed,
                                        read_docs(docs) if docs is not None else None)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--k-folds") from None
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    write_collection(coll, out)
    typer.echo(f"{len(coll.topics)} topics, {coll.qrels['qid'].nunique()} judged, {len(coll.subtopics)} subtopics, "
               f"{len(coll.suggestions)} suggestions, {len(coll.run)} run rows"
               + (f", {len(coll.docs)} documents" if coll.docs is not None else "") + f" -> {out}")


@collection_app.command("export")
def export_files(
    collection: Path = typer.Option(..., help="Collection directory."),
    out: Path = typer.Option(..., help="Output directory: topics.tsv, subtopics.tsv, suggestions.tsv, qrels.txt, "
                                       "run.txt, folds.txt (and docs.parquet)."),
) -> None:
    """A collection as the TREC-style files `srdiv collection import` reads (and ndeval, trec_eval, ir_measures)."""
    from srdiv.collection.schema import load_collection
    from srdiv.collection.trec_files import export_collection

    export_collection(load_collection(collection, with_docs=True), out)
    typer.echo(f"-> {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(collection_app, name="collection")


def _report_built(coll: Collection, out: Path) -> None:
    """The line a builder prints: the built collection's sizes and where it went."""
    typer.echo(f"{len(coll.topics)} queries, {len(coll.subtopics)} subtopics, {len(coll.docs_table())} documents "
               f"-> {out}")
