"""``srdiv evaluate`` as ir_measures users expect: a qrels file instead of a collection, Holm-corrected tests,
and the tie rule of ``--by-score`` as ndeval ``-traditional`` or as pyndeval (ir_measures, pt.Experiment)."""


import numpy as np
import pandas as pd
import pytest

from helpers import FIXTURES, ROOT, cli_output
from srdiv.collection.schema import load_collection
from srdiv.metrics import evaluate_run
from srdiv.metrics.runs import order_run
from srdiv.metrics.stats import holm_adjust, paired_pvalues

MINI = FIXTURES / "trec-web-mini"
WORDNET = ROOT / "data" / "collections" / "wordnet-div"


def write_run(run: pd.DataFrame, path, ranks: bool = True) -> None:
    """A TREC run file; without ``ranks`` every line has rank 0, so only ``--by-score`` orders it."""
    rank = run["rank"] if ranks else 0
    path.write_text("".join(f"{q} Q0 {d} {r} {s!r} t\n" for q, d, r, s in
                            zip(run["qid"], run["docno"], rank if ranks else [rank] * len(run), run["score"])))


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    """The mini Web Track collection and its four qrels files as one TREC diversity qrels file."""
    from srdiv.collection.schema import write_collection
    from srdiv.collection.trec_web import build_trec_web

    root = tmp_path_factory.mktemp("mini")
    write_collection(build_trec_web(MINI)[0], root / "coll")
    (root / "qrels.txt").write_text("".join(p.read_text() for p in sorted((MINI / "qrels").glob("*.qrels"))))
    return root


def test_a_qrels_file_gives_the_collections_numbers(mini, tmp_path, monkeypatch, capsys):
    coll = load_collection(mini / "coll")
    write_run(coll.run, tmp_path / "run.txt")
    code, out, err = cli_output(monkeypatch, capsys, "evaluate", "--qrels", mini / "qrels.txt", "--run", tmp_path / "run.txt",
                         "--out", tmp_path / "q.parquet")
    assert code == 0, err
    code, out2, err = cli_output(monkeypatch, capsys, "evaluate", "--collection", mini / "coll", "--run",
                          tmp_path / "run.txt", "--out", tmp_path / "c.parquet")
    assert code == 0, err
    from_qrels, from_coll = (pd.read_parquet(tmp_path / f"{n}.parquet") for n in ("q", "c"))
    pd.testing.assert_frame_equal(from_qrels, from_coll)
    assert out == out2 and from_qrels["qid"].nunique() == coll.qrels["qid"].nunique()
    # a run topic the qrels lack is ignored, as ndeval does (a collection rejects it: not one of its topics)
    with (tmp_path / "run.txt").open("a") as f:
        f.write("99999 Q0 docX 1 1.0 t\n")
    code, _, err = cli_output(monkeypatch, capsys, "evaluate", "--qrels", mini / "qrels.txt", "--run", tmp_path / "run.txt",
                       "--topics", "1-50", "--out", tmp_path / "q2.parquet")
    assert code == 0, err
    assert set(pd.read_parquet(tmp_path / "q2.parquet")["qid"]) == {q for q in coll.qrels["qid"] if int(q) <= 50}


@pytest.mark.parametrize("args, why", [
    ((), "exactly one of --collection DIR and --qrels FILE"),
    (("--collection", "COLL"), "exactly one of --collection DIR and --qrels FILE"),
    (("--fold", "1"), "a qrels file has no folds"),
    (("--ties", "pyndeval"), "add --by-score"),
    (("--by-score", "--ties", "ascending"), "'ascending' is not one of ndeval, pyndeval"),
])
def test_evaluate_usage_errors(mini, tmp_path, monkeypatch, capsys, args, why):
    write_run(load_collection(mini / "coll").run, tmp_path / "run.txt")
    qrels = () if args == () else ("--qrels", mini / "qrels.txt")
    args = tuple(mini / "coll" if a == "COLL" else a for a in args)
    code, _, err = cli_output(monkeypatch, capsys, "evaluate", *qrels, *args, "--run", tmp_path / "run.txt",
                       "--out", tmp_path / "m.parquet")
    assert code == 2 and why in " ".join(err.split()), err
    assert not (tmp_path / "m.parquet").exists()


@pytest.mark.parametrize("line, why", [
    ("51 1 docA\n", "qrels.txt:2: expected 4 fields"),
    ("51 one docA 1\n", "qrels.txt:2: sid 'one' is not an integer"),
    ("51 1 docA 1\n", "qrels.txt:2: (qid, subtopic, docno) judged twice"),
])
def test_a_malformed_qrels_file_is_one_line(tmp_path, monkeypatch, capsys, line, why):
    (tmp_path / "qrels.txt").write_text("51 1 docA 1\n" + line)
    (tmp_path / "run.txt").write_text("51 Q0 docA 1 1.0 t\n")
    code, _, err = cli_output(monkeypatch, capsys, "evaluate", "--qrels", tmp_path / "qrels.txt", "--run",
                       tmp_path / "run.txt", "--out", tmp_path / "m.parquet")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and why in lines[0], err
    assert not (tmp_path / "m.parquet").exists()


def test_holm_marks_follow_the_adjusted_p_values(mini, tmp_path, monkeypatch, capsys):
    """Three runs against the first: a mark where the Holm-adjusted p (over the two compared runs) < alpha."""
    coll = load_collection(mini / "coll")
    rng = np.random.default_rng(3)
    runs = []
    for name in ("a", "b", "c"):
        shuffled = coll.run.assign(key=rng.random(len(coll.run))).sort_values(["qid", "key"])
        shuffled = shuffled.assign(rank=shuffled.groupby("qid").cumcount() + 1)
        write_run(shuffled, tmp_path / f"{name}.txt")
        runs += ["--run", tmp_path / f"{name}.txt"]
    runs += ["--run", tmp_path / "ideal.txt"]
    ideal = coll.qrels[coll.qrels["rel"] > 0].drop_duplicates(["qid", "docno"])
    write_run(ideal.assign(rank=ideal.groupby("qid").cumcount() + 1, score=1.0), tmp_path / "ideal.txt")
    code, out, err = cli_output(monkeypatch, capsys, "evaluate", "--collection", mini / "coll", *runs, "--holm",
                         "--alpha", "0.2", "--out", tmp_path / "m.parquet")
    assert code == 0, err
    metrics = pd.read_parquet(tmp_path / "m.parquet")
    wide = metrics[metrics["measure"] == "alpha_nDCG@20"].pivot(index="qid", columns="run", values="value")
    raw, adjusted = paired_pvalues(wide, "a"), paired_pvalues(wide, "a", holm=True)
    pd.testing.assert_series_equal(adjusted, holm_adjust(raw))
    assert (adjusted >= raw).all() and (adjusted > raw).any()
    for run in ("b", "c", "ideal"):
        line = next(line for line in out.splitlines() if line.startswith(f"{run}\t"))
        marked = line.split("\t")[2][-1] in "▲▼"
        assert marked == (adjusted[run] < 0.2), (run, adjusted[run], line)
    assert "Holm-corrected" in out


def test_hand_worked_ties():
    """Equal scores: ndeval -traditional (resultCompareByScore: strcmp(b, a)) puts the greater docno first,
    pyndeval (sorted by (-score, docno)) the smaller."""
    run = pd.DataFrame({"qid": "1", "docno": ["b", "a", "c", "d"], "score": [1.0, 2.0, 1.0, 1.0]})
    assert list(order_run(run)["docno"]) == ["a", "d", "c", "b"]
    assert list(order_run(run, ties="pyndeval")["docno"]) == ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match="ties must be one of ndeval, pyndeval"):
        order_run(run, ties="random")


def test_by_score_with_pyndeval_ties_gives_ir_measures_numbers(tmp_path, monkeypatch, capsys):
    """wordnet-div's initial run ties scores in most queries: ``--by-score --ties pyndeval`` gives, query for
    query and measure for measure, what ir_measures (pyndeval, as pt.Experiment calls it) gives on the scores;
    ``--by-score`` alone gives ndeval -traditional's order, which differs."""
    ir_measures = pytest.importorskip("ir_measures")
    coll = load_collection(WORDNET)
    run = coll.run
    assert run.groupby("qid")["score"].apply(lambda s: s.duplicated().any()).sum() > len(coll.topics) / 2
    write_run(run, tmp_path / "run.txt", ranks=False)
    (tmp_path / "qrels.txt").write_text("".join(f"{q} {s} {d} {g}\n" for q, s, d, g in
                                                coll.qrels[["qid", "sid", "docno", "grade"]].itertuples(index=False)))
    results = {}
    for ties in ("ndeval", "pyndeval"):
        code, _, err = cli_output(monkeypatch, capsys, "evaluate", "--qrels", tmp_path / "qrels.txt", "--run",
                           tmp_path / "run.txt", "--by-score", "--ties", ties, "--out", tmp_path / f"{ties}.parquet")
        assert code == 0, err
        results[ties] = pd.read_parquet(tmp_path / f"{ties}.parquet")
    measures = [ir_measures.parse_measure(m) for m in pd.unique(results["pyndeval"]["measure"])]
    qrels = pd.DataFrame({"query_id": coll.qrels["qid"], "doc_id": coll.qrels["docno"],
                          "relevance": coll.qrels["rel"].astype(int), "iteration": coll.qrels["sid"]})
    scored = pd.DataFrame({"query_id": run["qid"], "doc_id": run["docno"], "score": run["score"]})
    theirs = pd.DataFrame([(m.query_id, str(m.measure), m.value) for m in ir_measures.iter_calc(measures, qrels, scored)],
                          columns=["qid", "measure", "value"])
    both = results["pyndeval"].merge(theirs, on=["qid", "measure"], suffixes=("", "_ir"))
    assert len(both) == len(results["pyndeval"]) == len(theirs)
    np.testing.assert_allclose(both["value"], both["value_ir"], atol=1e-9)
    ndeval = results["ndeval"].merge(theirs, on=["qid", "measure"], suffixes=("", "_ir"))
    assert not np.allclose(ndeval["value"], ndeval["value_ir"])
    expected = evaluate_run(run.drop(columns="rank"), coll.qrels)   # the docno-descending order of evaluate_run
    pd.testing.assert_frame_equal(results["ndeval"].drop(columns="run"), expected, check_dtype=False)
