"""``srdiv evaluate``: official diversity metrics of one or more runs."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    """Add the metric commands to the CLI."""
    app.command("evaluate")(evaluate)


def evaluate(
    collection: Path = typer.Option(..., help="Collection directory (srdiv collection ... --out DIR writes one)."),
    run: list[Path] = typer.Option(..., help="TREC run file, or a Parquet run table (qid, docno, score[, rank]). "
                                             "Repeat to compare runs: the first is the reference of the paired "
                                             "t-tests."),
    out: Path = typer.Option(..., help="Output Parquet: per-query values, long form run, qid, measure, value."),
    by_score: bool = typer.Option(False, "--by-score",
                                  help="Order by score, ties by docno descending (ndeval -traditional), not by rank."),
    fold: Optional[int] = typer.Option(None, help="Evaluate only the topics of this fold (a trial's test queries)."),
    topics: Optional[str] = typer.Option(None, help="Evaluate only these topics: qids and numeric ranges, e.g. "
                                                    "'1-50' (Web Track 2009) or '51,53-60'."),
    alpha: float = typer.Option(0.05, help="Significance level of the paired t-tests (several runs)."),
) -> None:
    """Per-query official diversity measures of each RUN (ndeval's numbers); prints their means.

    With several runs, each row is marked ▲ (▼) where it is significantly better (worse) than the
    first run: two-tailed paired t-test over the evaluated topics, p < alpha, as in the report's tables.
    """
    import pandas as pd

    from srdiv.collection.schema import load_collection
    from srdiv.io import InputError, write_parquet
    from srdiv.metrics.evaluate import DiversityEvaluator
    from srdiv.metrics.runs import read_run

    coll = load_collection(collection)
    names = run_names(run)
    qrels = coll.qrels
    if fold is not None:
        chosen = set(coll.folds.loc[coll.folds["fold"] == fold, "qid"])
        if not chosen:
            raise InputError(collection / "folds.parquet", f"no topic in fold {fold}")
        qrels = qrels[qrels["qid"].isin(chosen)]
    if topics is not None:
        qrels = qrels[qrels["qid"].isin(topic_list(topics, coll.qids, collection))]
        if qrels.empty:
            raise InputError(collection / "qrels.parquet", f"none of the topics {topics} has judgments")
    evaluator, results, notes = DiversityEvaluator(qrels), [], []
    for name, path in zip(names, run):
        ranked = read_run(path, qids=coll.qids, by_score=by_score)
        values = evaluator.evaluate(ranked)
        missing = set(values["qid"]) - set(ranked["qid"])
        if missing:
            notes.append(f"note: {name}: {len(missing)} judged topics have no results in the run and score 0")
        results.append(values.assign(run=name))
    results = pd.concat(results, ignore_index=True)[["run", "qid", "measure", "value"]]
    write_parquet(results, out)
    for note in notes:
        typer.echo(note, err=True)
    typer.echo(summary(results, names, alpha))


def run_names(paths: list[Path]) -> list[str]:
    """A name per run: its file name without the suffix, or the path as given where two share a name."""
    stems = [p.stem for p in paths]
    return [stem if stems.count(stem) == 1 else str(p) for stem, p in zip(stems, paths)]


def topic_list(spec: str, qids: list[str], collection: Path) -> set[str]:
    """``'1-50,53'`` -> the collection's qids named (a range takes the numeric qids within it)."""
    from srdiv.io import InputError

    chosen: set[str] = set()
    for item in (part.strip() for part in spec.split(",")):
        low, dash, high = item.partition("-")
        if dash and low.isdigit() and high.isdigit():
            found = {q for q in qids if q.isdigit() and int(low) <= int(q) <= int(high)}
        else:
            found = {item} & set(qids)
        if not found:
            raise InputError(collection / "topics.parquet", f"no topic of the collection matches '{item}'")
        chosen |= found
    return chosen


def summary(results, names: list[str], alpha: float) -> str:
    """One line per run: topics and the means of the @20 measures (and those without a cut-off),
    marked against the first run."""
    import pandas as pd

    from srdiv.metrics.evaluate import mean_measures
    from srdiv.metrics.stats import paired_pvalues

    measures = [m for m in pd.unique(results["measure"]) if m.endswith("@20") or "@" not in m]
    lines = ["run\ttopics\t" + "\t".join(measures)]
    marks = {}
    for measure in measures:
        wide = results[results["measure"] == measure].pivot(index="qid", columns="run", values="value")
        p = paired_pvalues(wide, names[0]) if len(names) > 1 else {}
        diff = wide.mean() - wide[names[0]].mean()
        marks[measure] = {run: ("▲" if diff[run] > 0 else "▼") if p.get(run, 1.0) < alpha else "" for run in names}
    for name in names:
        means = mean_measures(results[results["run"] == name])
        topics = results.loc[results["run"] == name, "qid"].nunique()
        lines.append(f"{name}\t{topics}\t" + "\t".join(f"{means[m]:.4f}{marks[m][name]}" for m in measures))
    if len(names) > 1:
        lines.append(f"▲/▼: significantly better/worse than {names[0]} (paired t-test, p < {alpha})")
    return "\n".join(lines)
