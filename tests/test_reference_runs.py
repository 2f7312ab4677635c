"""report.reference_runs: run files made elsewhere become rows of every table, scored like the trained rows."""

import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

from srdiv.cli.main import app
from srdiv.collection.schema import Collection, write_collection
from srdiv.metrics import evaluate_run, read_run
from srdiv.report.gather import reference_runs
from srdiv.report.builder import build_tables, metric_at_k_from_runs
from helpers import BIN, ROOT, write_job



def make_collection(queries=8, docs=6, folds=2, seed=0):
    """Random graded subtopic qrels over ``docs`` documents per query, 2 folds, an initial run by docno."""
    rng = np.random.default_rng(seed)
    qids = [f"q{i}" for i in range(queries)]
    qrels = [(q, f"s{s}", f"{q}-d{d}", 1, 1) for q in qids for d in range(docs) for s in range(3) if rng.random() < .3]
    qrels = pd.DataFrame(qrels, columns=["qid", "sid", "docno", "grade", "rel"])
    run = pd.DataFrame([(q, f"{q}-d{d}", d + 1, float(docs - d)) for q in qids for d in range(docs)],
                       columns=["qid", "docno", "rank", "score"])
    subtopics = qrels[["qid", "sid"]].drop_duplicates().assign(text="")
    empty = {"suggestions": pd.DataFrame(columns=["qid", "sugg_id", "level", "parent", "text", "weight"])}
    return Collection(topics=pd.DataFrame({"qid": qids, "query": "q", "description": "", "type": "faceted"}),
                      qrels=qrels, run=run, folds=pd.DataFrame({"qid": qids, "fold": np.arange(queries) % folds + 1}),
                      subtopics=subtopics, **empty)


def write_run(run: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{r.qid} Q0 {r.docno} {r.rank} {r.score} tag\n" for r in run.itertuples()))
    return path


PARAMS = {
    "models": {"Initial": {"model": {"name": "initial"}, "group": "initial"},
               "Other": {"model": {"name": "initial"}, "group": "unsupervised", "variant_of": "Initial",
                         "variant": "copy"}},
    "report": {"reference": "Initial",
               "ablations": {"abl": {"title": "An ablation", "reference": "Initial", "runs": ["Initial", "Other"]}}},
}


def test_a_reference_run_is_a_row_of_every_table_in_its_queries_test_folds(tmp_path):
    coll = make_collection()
    write_collection(coll, tmp_path / "coll")
    runner = CliRunner()
    models = tmp_path / "models"
    for row in ("Initial", "Other"):          # the trained rows: each fold's test queries
        for fold in (1, 2):
            tested = coll.folds.loc[coll.folds["fold"] == fold, "qid"]
            write_run(coll.run[coll.run["qid"].isin(tested)], models / row / f"fold{fold}" / "run.txt")
            result = runner.invoke(app, ["evaluate", "--collection", str(tmp_path / "coll"), "--run",
                                         str(models / row / f"fold{fold}" / "run.txt"), "--fold", str(fold),
                                         "--out", str(models / row / f"fold{fold}" / "metrics.parquet")])
            assert result.exit_code == 0, result.output
            write_job(models / row / f"fold{fold}", row, fold)       # the job's records, as srdiv train and rank
    reverse = coll.run.assign(rank=lambda r: 7 - r["rank"], score=lambda r: -r["score"])
    published = write_run(reverse, tmp_path / "runs" / "reversed.txt")
    params = {**PARAMS, "report": {**PARAMS["report"], "reference_runs": {"Reversed": str(published)}}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))

    result = runner.invoke(app, ["evaluate", "--collection", str(tmp_path / "coll"), "--run", str(published),
                                 "--out", str(tmp_path / "refs" / "Reversed" / "metrics.parquet")])
    assert result.exit_code == 0, result.output
    gather = ["gather", "--models", str(models), "--params", str(tmp_path / "params.yaml"),
              "--out", str(tmp_path / "metrics.parquet")]
    assert runner.invoke(app, gather).exit_code != 0         # the reference run needs its metrics and folds
    result = runner.invoke(app, gather + ["--references", str(tmp_path / "refs"), "--collection",
                                          str(tmp_path / "coll")])
    assert result.exit_code == 0, result.output

    metrics = pd.read_parquet(tmp_path / "metrics.parquet")
    rows = metrics[metrics["model"] == "Reversed"]
    assert set(rows["variant"]) == {""}
    folds = dict(zip(coll.folds["qid"], coll.folds["fold"]))
    assert (rows["fold"] == rows["qid"].map(folds)).all()          # each query in the fold that tests it
    expected = evaluate_run(read_run(published), coll.qrels)
    expected = expected[expected["measure"] == "alpha_nDCG@20"].set_index("qid")["value"]

    tables = build_tables(metrics, params)
    main = tables["main"]
    assert list(main.values.index) == ["Initial", "Reversed"]
    assert main.groups[-1] == "Reference runs (report.reference_runs)"
    assert main.values.at["Reversed", "alpha_nDCG@20"] == pytest.approx(expected.mean())
    assert "Reversed" in tables["cutoffs"].values.index
    assert list(tables["ablation-abl"].values.index) == ["Initial", "Initial (copy)", "Reversed"]
    initial = metrics[(metrics["model"] == "Initial") & (metrics["variant"] == "")
                      & (metrics["measure"] == "alpha_nDCG@20")].set_index("qid")["value"]
    test = stats.ttest_rel(expected[initial.index], initial)               # the same paired test as a trained row
    marker = ("▲" if test.statistic > 0 else "▼") if test.pvalue < 0.05 else ""
    assert main.markers.at["Reversed", "alpha_nDCG@20"] == marker

    at_k = metric_at_k_from_runs(tmp_path / "coll", models, params)
    assert at_k.query("run == 'Reversed' and k == 20")["value"].item() == pytest.approx(expected.mean())


def test_reference_run_names_are_checked():
    assert reference_runs(PARAMS) == {}
    assert reference_runs({**PARAMS, "report": {"reference_runs": {"A.b+1": "x.txt"}}}) == {"A.b+1": Path("x.txt")}
    for bad, match in (({"my run": "x.txt"}, "one word"), ({"Initial": "x.txt"}, "also a row"),
                       ({"A": None}, "run file path"), (["x.txt"], "must map")):
        with pytest.raises(ValueError, match=match):
            reference_runs({**PARAMS, "report": {"reference_runs": bad}})


def test_the_dag_scores_a_reference_run_once_and_gathers_it(tmp_path):
    run = write_run(make_collection().run, tmp_path / "published.txt")
    overlay = tmp_path / "refs.yaml"
    overlay.write_text(yaml.safe_dump({"report": {"reference_runs": {"Published": str(run)}}}))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "snakemake"), "-n", "--forceall", "--cores", "1", "--configfile", "params.yaml",
                          "config/smoke.yaml", str(overlay)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "rule evaluate_reference" in log
    assert "work/wordnet-div-smoke/reference_runs/Published/metrics.parquet" in log
