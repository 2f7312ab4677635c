"""``srdiv evaluate`` as ir_measures users expect: a qrels file instead of a collection, Holm-corrected tests,
and the tie rule of ``--by-score`` as ndeval ``-traditional`` or as pyndeval (ir_measures, pt.Experiment)."""

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from helpers import FIXTURES, ROOT, cli_output, run_main
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


# ---- srdiv evaluate QRELS RUN [MEASURES...]: the command line of trec_eval and ir_measures ----

PLAIN = ["alpha_nDCG@20", "alpha_nDCG(alpha=0.25)@10", "ERR_IA@20", "nERR_IA@5", "NRBP", "nNRBP", "P_IA@20",
         "StRecall@20"]


@pytest.fixture(scope="module")
def wordnet_files(tmp_path_factory):
    """wordnet-div's qrels and initial run (ties in most queries) as TREC files, the run with its ranks."""
    coll = load_collection(WORDNET)
    root = tmp_path_factory.mktemp("plain")
    (root / "qrels.txt").write_text("".join(f"{q} {s} {d} {g}\n" for q, s, d, g in
                                            coll.qrels[["qid", "sid", "docno", "grade"]].itertuples(index=False)))
    write_run(coll.run, root / "run.txt")
    return coll, root / "qrels.txt", root / "run.txt"


def per_query(out: str) -> dict[tuple[str, str], float]:
    """``{(measure, qid): value}`` of trec_eval -q lines."""
    rows = [line.split("\t") for line in out.strip().splitlines()]
    assert all(len(row) == 3 for row in rows), out
    return {(m, q): float(v) for m, q, v in rows}


def quick(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """``srdiv evaluate ARGS`` as the program runs it (:func:`srdiv.cli.launch.main`: the plain form without typer)."""
    from srdiv.cli.launch import main

    return run_main(main, monkeypatch, capsys, "evaluate", *args)


def test_plain_form_equals_ir_measures_by_score_and_pyndeval_by_rank(wordnet_files, monkeypatch, capsys):
    ir_measures = pytest.importorskip("ir_measures")
    pyndeval = pytest.importorskip("pyndeval")
    coll, qrels, run = wordnet_files
    judged = pd.unique(coll.qrels["qid"])
    # by score, equal scores by docno ascending: ir_measures' numbers, every query and measure
    code, out, err = quick(monkeypatch, capsys, qrels, run, *PLAIN, "-q", "-p", "-1", "--by-score", "--ties", "pyndeval")
    assert code == 0, err
    assert "equal scores in" in err and "docno ascending" in err and len(err.strip().splitlines()) == 1
    ours = per_query(out)
    irq = pd.DataFrame({"query_id": coll.qrels["qid"], "doc_id": coll.qrels["docno"],
                        "relevance": coll.qrels["grade"].astype(int), "iteration": coll.qrels["sid"]})
    scored = pd.DataFrame({"query_id": coll.run["qid"], "doc_id": coll.run["docno"], "score": coll.run["score"]})
    measures = {ir_measures.parse_measure(name): name for name in PLAIN}
    by_alpha = {}        # one call per alpha: ir_measures gives one alpha to all the measures of a call
    for measure in measures:
        by_alpha.setdefault(measure.params.get("alpha"), []).append(measure)
    theirs = {}
    for group in by_alpha.values():
        for m in ir_measures.iter_calc(group, irq, scored):
            theirs.setdefault(measures[m.measure], {})[m.query_id] = m.value
    for name in PLAIN:
        assert set(theirs[name]) == set(judged), name
        assert max(abs(ours[(name, q)] - value) for q, value in theirs[name].items()) < 1e-12, name
    assert [line.split("\t")[1] for line in out.strip().splitlines()[-len(PLAIN):]] == ["all"] * len(PLAIN)
    # by the run's ranks (the default): pyndeval's numbers given the score -rank
    code, out, err = quick(monkeypatch, capsys, qrels, run, *PLAIN[:1], *PLAIN[2:], "-q", "-p", "-1")
    assert code == 0, err
    assert "ordered by the run's ranks" in err
    ours = per_query(out)
    names = {"alpha_nDCG@20": "alpha-nDCG@20", "ERR_IA@20": "ERR-IA@20", "nERR_IA@5": "nERR-IA@5", "NRBP": "NRBP",
             "nNRBP": "nNRBP", "P_IA@20": "P-IA@20", "StRecall@20": "strec@20"}
    evaluator = pyndeval.RelevanceEvaluator(
        [pyndeval.SubtopicQrel(q, s, d, int(g)) for q, s, d, g in
         coll.qrels[["qid", "sid", "docno", "grade"]].itertuples(index=False)], list(names.values()))
    theirs = evaluator.evaluate([pyndeval.ScoredDoc(q, d, -float(r)) for q, d, r in
                                 coll.run[["qid", "docno", "rank"]].itertuples(index=False)])
    for measure, name in names.items():
        assert max(abs(ours[(measure, q)] - theirs[q][name]) for q in theirs) < 1e-12, measure
    means = {m: float(v) for m, q, v in (line.split("\t") for line in out.strip().splitlines()) if q == "all"}
    assert means == pytest.approx({m: np.mean([ours[(m, q)] for q in judged]) for m in names}, rel=1e-12)
    # the same lines through the full command line (typer)
    code, full_out, full_err = cli_output(monkeypatch, capsys, "evaluate", qrels, run, *PLAIN[:1], *PLAIN[2:], "-q",
                                          "-p", "-1")
    assert (code, full_out, full_err) == (0, out, err)


@pytest.mark.parametrize("text, name", [
    ("alpha_nDCG@20", "alpha_nDCG@20"), ("alpha_nDCG(alpha=0.5)@10", "alpha_nDCG@10"),
    ("alpha_nDCG(alpha=0.25)@10", "alpha_nDCG(alpha=0.25)@10"), ("ERR_IA@20", "ERR_IA@20"), ("NRBP", "NRBP"),
    ("NRBP(beta=0.9,alpha=0.25)", "NRBP(beta=0.9,alpha=0.25)"), ("nNRBP(rel=1)", "nNRBP"), ("P_IA@5", "P_IA@5"),
    ("StRecall@20", "StRecall@20"), ("nERR_IA@3", "nERR_IA@3"),
])
def test_measure_names_as_ir_measures_writes_them(text, name):
    from srdiv.metrics.names import parse_measure

    parsed = parse_measure(text)
    assert parsed.name == name
    ir_measures = pytest.importorskip("ir_measures")
    assert str(ir_measures.parse_measure(text)) == name


@pytest.mark.parametrize("text, why", [
    ("nDCG@20", "unknown measure 'nDCG@20'"), ("alpha_nDCG", "needs a cutoff"), ("NRBP@20", "takes no cutoff"),
    ("alpha_nDCG@0", "needs a cutoff"), ("ERR_IA(alpha=0.3)@20", "parameter 'alpha=0.3' of ERR_IA"),
    ("alpha_nDCG(alpha=2)@20", "a value in [0, 1]"), ("alpha_nDCG(rel=2)@20", "parameter 'rel=2'"),
    ("alpha_nDCG@@2", "is not a measure"),
])
def test_a_bad_measure_is_one_line_and_exit_2(mini, monkeypatch, capsys, text, why, tmp_path):
    from srdiv.metrics.names import parse_measure

    with pytest.raises(ValueError, match=re.escape(why)):
        parse_measure(text)
    write_run(load_collection(mini / "coll").run, tmp_path / "run.txt")
    for runner in (quick, lambda *a: cli_output(*a[:2], "evaluate", *a[2:])):
        code, out, err = runner(monkeypatch, capsys, mini / "qrels.txt", tmp_path / "run.txt", "alpha_nDCG@20", text)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and why in err, err


def test_out_formats_hold_the_same_values(mini, monkeypatch, capsys, tmp_path):
    import json

    write_run(load_collection(mini / "coll").run, tmp_path / "run.txt")
    args = (mini / "qrels.txt", tmp_path / "run.txt", "alpha_nDCG@20", "NRBP")
    tables = {}
    for ext in ("tsv", "json", "parquet"):
        code, out, err = quick(monkeypatch, capsys, *args, "--out", tmp_path / f"m.{ext}")
        assert code == 0, err
        assert out.splitlines()[0].startswith("alpha_nDCG@20\tall\t")
    tables["tsv"] = pd.read_csv(tmp_path / "m.tsv", sep="\t", dtype={"qid": str})
    tables["json"] = pd.DataFrame(json.loads((tmp_path / "m.json").read_text()))
    tables["parquet"] = pd.read_parquet(tmp_path / "m.parquet")
    for table in tables.values():
        assert list(table.columns) == ["run", "qid", "measure", "value"] and set(table["measure"]) == {"alpha_nDCG@20", "NRBP"}
        pd.testing.assert_frame_equal(table.astype({"qid": str, "run": str, "measure": str}),
                                      tables["parquet"].astype({"qid": str, "run": str, "measure": str}))
    code, out, err = quick(monkeypatch, capsys, *args, "--out", tmp_path / "m.csv")
    assert code == 2 and "unknown output format '.csv'" in err and not (tmp_path / "m.csv").exists()
    # --out /dev/stdout: the TSV table on standard output, without the summary
    done = subprocess.run([sys.executable, "-c", "import sys; from srdiv.cli.launch import main; sys.argv[0] = 'srdiv'; main()",
                           "evaluate", *map(str, args), "--out", "/dev/stdout"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (tmp_path / "m.tsv").read_text()


def test_a_layout_the_quick_reader_declines_gives_the_same_lines(mini, monkeypatch, capsys, tmp_path):
    """Lines ending in ``\\r`` alone: read by srdiv.metrics.runs instead, to the same values; a rank written 3.0
    is refused there (ndeval's atoi and a number parser read such a field differently once it is 1e3 or 3.5),
    naming its line."""
    from srdiv.metrics.evaluate import DiversityEvaluator
    from srdiv.metrics.quick_read import Declined, quick_qrels, quick_run

    run = load_collection(mini / "coll").run
    write_run(run, tmp_path / "run.txt")
    (tmp_path / "tabs.txt").write_text("".join(f"{q}\tQ0\t{d}\t{r}\t{s!r}\tt\r" for q, d, r, s in
                                               zip(run["qid"], run["docno"], run["rank"], run["score"])))
    with pytest.raises(Declined):
        quick_run(tmp_path / "tabs.txt", DiversityEvaluator(quick_qrels(mini / "qrels.txt")), False, "ndeval")
    outs = [quick(monkeypatch, capsys, mini / "qrels.txt", tmp_path / name, "-q") for name in ("run.txt", "tabs.txt")]
    assert outs[0][0] == 0 and outs[0][1] == outs[1][1] and len(outs[0][1].splitlines()) > 17
    (tmp_path / "float.txt").write_text("".join(f"{q} Q0 {d} {r}.0 {s!r} t\n" for q, d, r, s in
                                                zip(run["qid"], run["docno"], run["rank"], run["score"])))
    code, _, err = quick(monkeypatch, capsys, mini / "qrels.txt", tmp_path / "float.txt")
    assert code == 2 and "float.txt:1: " in err and "rank" in err, err
    with (tmp_path / "tabs.txt").open("a") as f:
        f.write("51 Q0 docX 7 notanumber t\n")
    code, _, err = quick(monkeypatch, capsys, mini / "qrels.txt", tmp_path / "tabs.txt")
    assert code == 2 and f"tabs.txt:{len(run) + 1}: score 'notanumber'" in err, err


def test_the_plain_form_loads_neither_pandas_nor_typer(mini, tmp_path):
    """``srdiv evaluate QRELS RUN``: numpy and srdiv's measures only (what makes it start fast)."""
    write_run(load_collection(mini / "coll").run, tmp_path / "run.txt")
    code = ("import sys; from srdiv.cli.launch import main\n"
            f"sys.argv = ['srdiv', 'evaluate', {str(mini / 'qrels.txt')!r}, {str(tmp_path / 'run.txt')!r}, 'NRBP']\n"
            "main()\n"
            "print(sorted(m for m in ('pandas', 'pyarrow', 'typer', 'scipy', 'torch') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("NRBP\tall\t") and done.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize("where", ["run", "qrels"])
def test_the_plain_form_reads_a_leading_zero_topic_as_the_readers_do(monkeypatch, capsys, tmp_path, where):
    """Topic ``01`` is topic ``1`` in a run or qrels file, as the readers of srdiv.metrics.runs normalise it: the
    quick pass hands such a file to them, so the plain form never scores it as an unjudged topic."""
    qrels = "1 1 d1 1\n1 2 d2 1\n2 1 d3 1\n"
    run = "1 Q0 d2 1 3.0 t\n1 Q0 d1 2 2.0 t\n2 Q0 d3 1 1.0 t\n"
    plain = [tmp_path / "q.txt", tmp_path / "r.txt"]
    plain[0].write_text(qrels)
    plain[1].write_text(run)
    zero = [tmp_path / "q0.txt", tmp_path / "r0.txt"]
    zero[0].write_text(qrels.replace("1 ", "01 ", 1) if where == "qrels" else qrels)
    zero[1].write_text(run.replace("1 Q0", "01 Q0") if where == "run" else run)
    outs = [quick(monkeypatch, capsys, *files, "alpha_nDCG@20", "-q") for files in (plain, zero)]
    assert outs[0][0] == outs[1][0] == 0 and outs[0][1] == outs[1][1], outs
    assert "alpha_nDCG@20\t1\t" in outs[1][1]


def _variant(text: str, layout: str) -> str:
    """``text`` (single spaces, ``\\n``) written in another layout the quick pass reads."""
    if layout == "tabs":
        return text.replace(" ", "\t")
    if layout == "blanks":      # runs of blanks, a blank line, blanks at a line's ends
        return "\n" + text.replace(" ", " \t ").replace("\n", "  \n", 1)
    if layout == "crlf":
        return text.replace("\n", "\r\n")
    return text.rstrip("\n") if layout == "no last newline" else text


@pytest.mark.parametrize("layout", ["plain", "tabs", "blanks", "crlf", "no last newline"])
def test_the_quick_pass_gives_the_full_readers_values(wordnet_files, tmp_path, layout):
    """Every layout ndeval reads and the quick pass reads: the same per-query values bit for bit and the same
    tie count as the full reader (srdiv.metrics.runs), by rank and by score with either tie rule; the run's
    scores written in the forms a float parser reads (signs, exponents, 17 digits, no digit before the dot)."""
    from srdiv.metrics.evaluate import DiversityEvaluator, qrels_labels
    from srdiv.metrics.evaluate_files import full_run
    from srdiv.metrics.quick_read import quick_qrels, quick_run
    from srdiv.metrics.runs import read_qrels

    coll, qrels, run = wordnet_files
    forms = ["{!r}", "{:+.3e}", "{:.6f}", "{:.0f}", "{:.25f}"]
    text = "".join(f"{q} Q0 {d} {'+' if i % 7 == 0 else ''}{r} {forms[i % 5].format(s).replace('0.', '.', i % 2)} t\n"
                   for i, (q, d, r, s) in enumerate(zip(coll.run["qid"], coll.run["docno"], coll.run["rank"],
                                                        coll.run["score"])))
    (tmp_path / "run.txt").write_text(_variant(text, layout))
    (tmp_path / "qrels.txt").write_text(_variant(qrels.read_text(), layout))
    labels = quick_qrels(tmp_path / "qrels.txt")
    full = qrels_labels(read_qrels(tmp_path / "qrels.txt"))
    assert labels.qids == full.qids and list(labels.docnos.astype(str)) == full.docnos.to_pylist()
    for by_score, ties in ((False, "ndeval"), (True, "ndeval"), (True, "pyndeval")):
        evaluator = DiversityEvaluator(labels)
        quick = quick_run(tmp_path / "run.txt", evaluator, by_score, ties)
        slow = full_run(tmp_path / "run.txt", evaluator, by_score, ties)
        ours, theirs = (evaluator.values(c.topic, c.doc, c.rank) for c in (quick, slow))
        assert np.array_equal(ours.view(np.int64), theirs.view(np.int64)) and quick.tied == slow.tied > 0


@pytest.mark.parametrize("line, declined", [
    ("1 Q0 d9 4 2.5 t", False), ("1 Q0 d9 4 1_0 t", True), ("1 Q0 d9 4 nan t", True), ("1 Q0 d9 4 0x1 t", True),
    ("1 Q0 d9 4 1e400 t", True), ("1 Q0 d9 4.0 2.5 t", True), ("1 Q0 d1 4 2.5 t", True), ("1 Q0 d9 3 2.5 t", True),
    ("1 Q0 d9 4 2.5", True), ("1 Q0 d9 4 2.5 t\rx", True), ("1 Q0 d\0 4 2.5 t", True), ("01 Q0 d9 4 2.5 t", True),
    ("1 Q0 d9 123456789 2.5 t", True),
])
def test_the_quick_pass_declines_what_it_does_not_read_as_the_full_reader(tmp_path, line, declined):
    """A number it cannot read, a docno or rank twice, another width, a lone ``\\r``, NUL, topic ``01``, a rank
    of nine digits: the quick pass hands the file to the full reader (which reads it or names the line)."""
    from srdiv.metrics.evaluate import DiversityEvaluator
    from srdiv.metrics.quick_read import Declined, quick_qrels, quick_run

    (tmp_path / "qrels.txt").write_text("1 1 d1 1\n1 2 d2 1\n")
    (tmp_path / "run.txt").write_text(f"1 Q0 d1 1 3.0 t\n1 Q0 d2 2 3 t\n1 Q0 d3 3 2.5 t\n{line}\n")
    evaluator = DiversityEvaluator(quick_qrels(tmp_path / "qrels.txt"))
    if declined:
        with pytest.raises(Declined):
            quick_run(tmp_path / "run.txt", evaluator, False, "ndeval")
    else:
        assert quick_run(tmp_path / "run.txt", evaluator, False, "ndeval").tied == 1


def test_scores_are_the_numbers_a_float_parser_reads(tmp_path):
    """Digits over a power of ten (up to 8 on each side of the dot), or numpy's parser for any other form: the
    same float as Python's ``float`` bit for bit, on random numbers written with 1 to 17 digits."""
    from srdiv.metrics.quick_read import _blocks, _floats

    rng = np.random.default_rng(5)
    values = rng.normal(size=3000) * 10.0 ** rng.integers(-9, 9, 3000)
    texts = [f"{v:.{rng.integers(0, 17)}f}" if i % 3 else repr(float(v)) for i, v in enumerate(values)]
    texts += ["-0", "+.5", "5.", "-.25", "00012.50", "99999999.99999999", "9007199254740993", "1E5", "1.5e-7"]
    (tmp_path / "run.txt").write_text("".join(f"1 Q0 d{i} {i + 1} {t} x\n" for i, t in enumerate(texts)))
    read = np.concatenate([_floats(block, 4) for block in _blocks(tmp_path / "run.txt", 6)])
    assert np.array_equal(read.view(np.int64), np.array([float(t) for t in texts]).view(np.int64))
