"""``srdiv evaluate`` (official diversity metrics of one or more runs) and ``srdiv gather`` (every row's
per-query test metrics in one table)."""

from __future__ import annotations

from pathlib import Path

import typer

from srdiv.cli.options import PARAMS
from srdiv.metrics.names import HEADLINE, SIGNIFICANCE


def register(app: typer.Typer) -> None:
    """Add the metric commands to the CLI."""
    app.command("evaluate")(evaluate)
    app.command("gather")(gather)
    app.command("learning-check")(learning_check)


def evaluate(
    files: list[str] | None = typer.Argument(None, metavar="[QRELS RUN] [MEASURE]...", show_default=False,
                                                help="A TREC diversity qrels file, a run file and the measures in "
                                                     "ir_measures' names (alpha_nDCG@20, "
                                                     "'alpha_nDCG(alpha=0.25)@10', ERR_IA@20, nERR_IA@20, NRBP, "
                                                     "nNRBP, P_IA@20, StRecall@20; default all seventeen "
                                                     "official ones), as ir_measures takes them. With --qrels or "
                                                     "--collection, only the measures."),
    run: list[Path] | None = typer.Option(None, help="TREC run file, or a Parquet run table (qid, docno, score"
                                                        "[, rank]). Repeat to compare runs: the first is the "
                                                        "reference of the paired t-tests."),
    out: Path | None = typer.Option(None, help="Also write the per-query values, long form run, qid, measure, "
                                                  "value, in the format of the extension: .tsv, .parquet or .json "
                                                  "(a device such as /dev/stdout: TSV)."),
    per_query: bool = typer.Option(False, "-q", "--per-query", help="QRELS RUN form: each topic's lines before "
                                                                    "the means, as trec_eval -q prints them."),
    places: int = typer.Option(4, "-p", "--places", help="QRELS RUN form: decimals printed (-1: every digit)."),
    collection: Path | None = typer.Option(None, help="Collection directory (srdiv collection ... --out DIR "
                                                         "writes one): its qrels, topics and folds."),
    qrels: Path | None = typer.Option(None, help="TREC diversity qrels file (qid subtopic docno grade), instead "
                                                    "of --collection: the topics are the judged ones."),
    by_score: bool = typer.Option(False, "--by-score",
                                  help="Order by score, not by the run's ranks; equal scores as --ties says."),
    ties: str = typer.Option("ndeval", help="With --by-score, the order of equal scores: 'ndeval' (docno "
                                            "descending: ndeval -traditional, trec_eval) or 'pyndeval' (docno "
                                            "ascending: ir_measures and pt.Experiment). A note on standard "
                                            "error says when equal scores were ordered, and by which rule."),
    fold: int | None = typer.Option(None, help="Evaluate only the topics of this fold (a trial's test queries; "
                                                  "needs --collection)."),
    topics: str | None = typer.Option(None, help="Evaluate only these topics: qids and numeric ranges, e.g. "
                                                    "'1-50' (Web Track 2009) or '51,53-60'."),
    level: float = typer.Option(SIGNIFICANCE, "--alpha",
                                help="Significance level of the paired t-tests (several runs)."),
    holm: bool = typer.Option(False, "--holm", help="Holm-Bonferroni correction of the paired t-tests over the "
                                                    "runs compared with the first (as report.holm, pt.Experiment's "
                                                    "correction='holm')."),
) -> None:
    """Official diversity measures of a run (ndeval's numbers), as trec_eval and ir_measures print them.

    srdiv evaluate QRELS RUN [MEASURES...] prints 'measure all value' lines (-q: each topic's first).
    With --qrels or --collection and --run (repeatable), one line per run of the means; several runs are
    marked ▲ (▼) where significantly better (worse) than the first: two-tailed paired t-test over the
    evaluated topics, p < alpha, as in the report's tables.
    """
    files = files or []
    if collection is None and qrels is None and not run:
        if len(files) < 2:
            raise typer.BadParameter("give QRELS RUN [MEASURES...], or --qrels FILE (or --collection DIR) and --run")
        from srdiv.metrics.evaluate_files import run_command

        run_command(Path(files[0]), Path(files[1]), files[2:], per_query, by_score, ties, places, out)
        return
    evaluate_runs(files, run, out, collection, qrels, by_score, ties, fold, topics, level, holm, per_query)


def evaluate_runs(files: list[str], run: list[Path] | None, out: Path | None, collection: Path | None,
                  qrels: Path | None, by_score: bool, ties: str, fold: int | None, topics: str | None,
                  level: float, holm: bool, per_query: bool) -> None:
    """``srdiv evaluate``'s form with ``--qrels`` or ``--collection`` and ``--run`` (repeatable): one line of
    means per run, paired t-tests against the first."""
    import pandas as pd

    from srdiv.io import InputError, write_parquet
    from srdiv.metrics.evaluate import DiversityEvaluator
    from srdiv.metrics.evaluate_files import out_format, write_values
    from srdiv.metrics.names import parse_measure
    from srdiv.metrics.runs import TIES, load_run

    if not run:
        raise typer.BadParameter("give the run to evaluate", param_hint="--run")
    if per_query:
        raise typer.BadParameter("prints per-query lines in the QRELS RUN form", param_hint="-q")
    if not 0 < level < 1:
        raise InputError("--alpha", f"the significance level must lie in (0, 1), got {level}")
    if (collection is None) == (qrels is None):
        raise typer.BadParameter("give exactly one of --collection DIR and --qrels FILE")
    if ties not in TIES:
        raise typer.BadParameter(f"'{ties}' is not one of {', '.join(TIES)}", param_hint="--ties")
    if ties != "ndeval" and not by_score:
        raise typer.BadParameter("orders equal scores of a run ordered by score: add --by-score", param_hint="--ties")
    try:
        measures = [parse_measure(m) for m in files] or None
    except ValueError as err:
        raise InputError("measure", str(err)) from None
    if measures and any(m.name != m.base for m in measures):
        raise typer.BadParameter("measures with parameters are evaluated in the QRELS RUN form")
    if out is not None:
        out_format(out)
    judged, qids, source = judgments(collection, qrels, fold)
    if fold is not None and judged.empty:
        assert collection is not None   # judgments(): a qrels file has no folds
        raise InputError(collection / "qrels.parquet", f"no topic of fold {fold} has judgments")
    if topics is not None:
        judged = judged[judged["qid"].isin(topic_list(topics, qids, source))]
        if judged.empty:
            raise InputError(source, f"none of the topics {topics} has judgments")
    evaluator, results, notes = DiversityEvaluator(judged, measures and [m.base for m in measures]), [], []
    names = run_names(run)
    for name, path in zip(names, run):
        loaded = load_run(path, by_score)
        values = evaluator.evaluate(loaded, path, qids if collection is not None else None, ties)
        missing = set(values["qid"]) - set(loaded["qid"].unique())
        if missing:
            notes.append(f"note: {name}: {len(missing)} judged topics have no results in the run and score 0")
        results.append(values.assign(run=name))
    results = pd.concat(results, ignore_index=True)[["run", "qid", "measure", "value"]]
    if out is not None and out_format(out) == ".parquet":
        write_parquet(results, out)
    elif out is not None:
        write_values({column: results[column].tolist() for column in results}, out)
    for note in notes:
        typer.echo(note, err=True)
    typer.echo(summary(results, names, level, holm))


def judgments(collection: Path | None, qrels: Path | None, fold: int | None):
    """``(qrels table, topic ids, the file to name in errors)`` from a collection directory (its folds
    narrowing them to ``fold``) or a TREC diversity qrels file (every judged topic)."""
    from srdiv.collection.schema import load_collection
    from srdiv.io import InputError
    from srdiv.metrics.runs import read_qrels

    if qrels is not None:
        if fold is not None:
            raise typer.BadParameter("a qrels file has no folds: use --collection, or --topics", param_hint="--fold")
        table = read_qrels(qrels)
        return table, list(dict.fromkeys(table["qid"])), qrels
    assert collection is not None   # the command gives exactly one of them
    coll = load_collection(collection)
    table = coll.qrels
    if fold is not None:
        chosen = set(coll.folds.loc[coll.folds["fold"] == fold, "qid"])
        if not chosen:
            raise InputError(collection / "folds.parquet", f"no topic in fold {fold}")
        table = table[table["qid"].isin(chosen)]
    return table, coll.qids, collection / "topics.parquet"


def run_names(paths: list[Path]) -> list[str]:
    """A name per run: its file name without the suffix, or the path as given where two share a name."""
    stems = [p.stem for p in paths]
    return [stem if stems.count(stem) == 1 else str(p) for stem, p in zip(stems, paths)]


def topic_list(spec: str, qids: list[str], source: Path) -> set[str]:
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
            what = "collection" if source.suffix == ".parquet" else "qrels"
            raise InputError(source, f"no topic of the {what} matches '{item}'")
        chosen |= found
    return chosen


def summary(results, names: list[str], level: float, holm: bool = False) -> str:
    """One line per run: topics and the means of the @20 measures (and those without a cut-off),
    marked against the first run (``holm``: Holm-corrected p-values over the runs, per measure)."""
    import pandas as pd

    from srdiv.metrics.evaluate import mean_measures
    from srdiv.metrics.stats import paired_pvalues

    measures = [m for m in pd.unique(results["measure"]) if m.endswith("@20") or "@" not in m]
    lines = ["run\ttopics\t" + "\t".join(measures)]
    marks = {}
    for measure in measures:
        wide = results[results["measure"] == measure].pivot(index="qid", columns="run", values="value")
        p = paired_pvalues(wide, names[0], holm=holm) if len(names) > 1 else {}
        diff = wide.mean() - wide[names[0]].mean()
        marks[measure] = {run: ("▲" if diff[run] > 0 else "▼") if p.get(run, 1.0) < level else "" for run in names}
    for name in names:
        means = mean_measures(results[results["run"] == name])
        topics = results.loc[results["run"] == name, "qid"].nunique()
        lines.append(f"{name}\t{topics}\t" + "\t".join(f"{means[m]:.4f}{marks[m][name]}" for m in measures))
    if len(names) > 1:
        test = "paired t-test, Holm-corrected p" if holm else "paired t-test, p"
        lines.append(f"▲/▼: significantly better/worse than {names[0]} ({test} < {level})")
    return "\n".join(lines)


def gather(
    models: Path = typer.Option(..., help="Directory of model outputs, e.g. work/<dataset>/models."),
    params: list[Path] = PARAMS,
    out: Path = typer.Option(..., help="Output Parquet, e.g. results/<dataset>/metrics.parquet."),
    references: Path | None = typer.Option(None, help="Directory of <name>/metrics.parquet of the "
                                                         "report.reference_runs (srdiv evaluate)."),
    collection: Path | None = typer.Option(None, help="Collection whose folds place the reference runs' queries."),
) -> None:
    """Collect every row's per-query test metrics (model, variant, fold, qid, measure, value)."""
    import pandas as pd

    from srdiv.io import write_parquet
    from srdiv.params import load_params
    from srdiv.report.gather import gather_metrics, reference_metrics, reference_runs
    from srdiv.train.records import check_job

    values = load_params(params)
    table = gather_metrics(models, values, check_job)
    names = reference_runs(values)
    if names:
        if references is None or collection is None:
            raise typer.BadParameter("report.reference_runs needs --references and --collection")
        from srdiv.collection.schema import load_collection

        folds = load_collection(collection).folds
        table = pd.concat([table, reference_metrics({n: references / n / "metrics.parquet" for n in names},
                                                    folds, values.get("folds"))], ignore_index=True)
    write_parquet(table, out)
    typer.echo(f"gather: {table['model'].nunique()} models, {table['qid'].nunique()} queries -> {out}", err=True)


def learning_check(
    metrics: Path = typer.Option(..., help="Gathered per-query test metrics, e.g. results/planted/metrics.parquet "
                                           "(srdiv gather)."),
    collection: Path = typer.Option(..., help="The collection the rows ran on, e.g. work/planted/collection."),
    share: float | None = typer.Option(None, help="Share of the gap between the initial run and the ideal re-ranking "
                                           "each row must close (default: 0.05, docs/planted.md: how it was chosen)."),
    measure: str = typer.Option(HEADLINE, help="The measure of the gap."),
    depth: int = typer.Option(50, help="Candidates re-ranked per query (params.yaml train.rank_docs)."),
    rows: list[str] | None = typer.Option(None, "--row", help="Rows to check (repeatable; default: every row "
                                                                  "of --metrics but the initial run)."),
) -> None:
    """Each row's share of the gap between the initial run and the ideal re-ranking it closes, and whether it
    reaches --share (exit 1 when a row falls short): the planted collection's learning check."""
    from srdiv.collection.schema import load_collection
    from srdiv.io import read_parquet
    from srdiv.metrics.gap import PLANTED_SHARE, gap_closed, ideal_values

    share = PLANTED_SHARE if share is None else share
    coll = load_collection(collection)
    table = gap_closed(read_parquet(metrics), ideal_values(coll.run, coll.qrels, depth), measure)
    if rows:
        missing = sorted(set(rows) - set(table["row"]))
        if missing:
            raise typer.BadParameter(f"{metrics} has no rows {missing}", param_hint="--row")
        table = table[table["row"].isin(rows)]
    table = table.assign(passed=table["closed"] >= share)
    typer.echo(f"row\tqueries\t{measure}\tinitial\tideal\tgap closed\t>= {share:g}")
    for r in table.itertuples():
        typer.echo(f"{r.row}\t{r.queries}\t{r.value:.4f}\t{r.initial:.4f}\t{r.ideal:.4f}\t{r.closed:.3f}\t"
                   + ("pass" if r.passed else "FAIL"))
    failed = list(table.loc[~table["passed"], "row"])
    typer.echo(f"{len(table) - len(failed)} of {len(table)} rows pass" + (f"; failing: {', '.join(failed)}"
                                                                          if failed else ""), err=True)
    if failed:
        raise typer.Exit(1)
