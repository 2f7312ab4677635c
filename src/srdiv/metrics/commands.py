"""``srdiv evaluate``: official diversity metrics of a run."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    """Add the metric commands to the CLI."""
    app.command("evaluate")(evaluate)


def evaluate(
    collection: Path = typer.Option(..., help="Collection directory (qrels.parquet, topics.parquet)."),
    run: Path = typer.Option(..., help="TREC run file, or a Parquet run table (qid, docno, score[, rank])."),
    out: Path = typer.Option(..., help="Output Parquet: per-query values, long form qid, measure, value."),
    by_score: bool = typer.Option(False, "--by-score",
                                  help="Order by score, ties by docno descending (ndeval -traditional), not by rank."),
    fold: Optional[int] = typer.Option(None, help="Evaluate only the topics of this fold (a trial's test queries)."),
) -> None:
    """Per-query official diversity measures of RUN (ndeval's numbers); prints their means."""
    from srdiv.collection.schema import load_collection
    from srdiv.io import InputError, write_parquet
    from srdiv.metrics.evaluate import evaluate_run, mean_measures
    from srdiv.metrics.runs import read_run

    coll = load_collection(collection)
    ranked = read_run(run, qids=coll.qids, by_score=by_score)
    qrels = coll.qrels
    if fold is not None:
        topics = set(coll.folds.loc[coll.folds["fold"] == fold, "qid"])
        if not topics:
            raise InputError(collection / "folds.parquet", f"no topic in fold {fold}")
        qrels = qrels[qrels["qid"].isin(topics)]
    results = evaluate_run(ranked, qrels)
    write_parquet(results, out)

    judged = set(results["qid"])
    missing = judged - set(ranked["qid"])
    if missing:
        typer.echo(f"note: {len(missing)} judged topics have no results in the run and score 0", err=True)
    means = mean_measures(results)
    shown = [m for m in means.index if m.endswith("@20") or "@" not in m]
    typer.echo("topics\t" + "\t".join(shown))
    typer.echo(f"{len(judged)}\t" + "\t".join(f"{means[m]:.4f}" for m in shown))
