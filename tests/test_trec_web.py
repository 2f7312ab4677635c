"""The TREC Web Track 2009-2012 collection: trec_web from the vendored files, checked against their known shape."""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from srdiv.cli.main import main
from srdiv.collection.schema import load_collection
from srdiv.collection.trec_web import read_suggestions
from srdiv.metrics import evaluate_run, mean_measures
from helpers import COMMITTED_COLLECTIONS, FIXTURES, ROOT

DATA = ROOT / "data" / "external" / "trec-web-2009-2012"
MINI = FIXTURES / "trec-web-mini"


def test_topics_qrels_and_folds(trec_web):
    coll, notes = trec_web
    assert len(coll.topics) == 200 and coll.topics["qid"].is_unique
    assert len(coll.subtopics) == 243 + 218 + 168 + 195  # subtopics in the four topic files
    judged = set(coll.qrels["qid"])
    assert len(judged) == 198 and set(coll.topics["qid"]) - judged == {"95", "100"}
    assert {"95", "100"} <= set(coll.run["qid"])  # unjudged topics keep their run
    # folds: M2DIV's 196 assignments kept, the two judged topics it lacks added, unjudged ones left out
    m2div = {str(q): int(k[4:]) for k, qs in json.loads((DATA / "folds_m2div.json").read_text()).items() for q in qs}
    folds = dict(zip(coll.folds["qid"], coll.folds["fold"]))
    assert set(folds) == judged and all(folds[q] == f for q, f in m2div.items())
    assert folds["149"] == 4 and folds["168"] == 3  # smallest fold first (38 in fold 4), then lowest number
    assert sorted(pd.Series(folds).value_counts()) == [39, 39, 40, 40, 40]
    assert any("149" in n for n in notes) and any("95, 100" in n for n in notes)


def test_grades(trec_web):
    qrels = trec_web[0].qrels
    year = (qrels["qid"].astype(int) - 1) // 50
    assert qrels["grade"].min() == 0  # spam (-2) read as 0
    assert (qrels["rel"] == (qrels["grade"] > 0)).all()
    assert list(qrels.groupby(year)["grade"].max()) == [1, 1, 3, 4]  # 2011-2012 graded, kept
    assert len(qrels) == 27964 + 9006 + 64868 + 62394
    zero = qrels[qrels["sid"] == "0"]  # 2009's "relevant to no subtopic" rows, kept as ndeval reads them
    assert len(zero) == 21465 and (zero["grade"] == 0).all() and (zero["qid"].astype(int) <= 50).all()


def test_suggestions(trec_web):
    sugg = trec_web[0].suggestions
    assert (sugg["level"] == 1).sum() == 1893 and (sugg["level"] == 2).sum() == 13675
    assert not {"148", "149"} & set(sugg["qid"])
    level1 = sugg[sugg["level"] == 1]
    level2 = sugg[sugg["level"] == 2]
    assert (level1["parent"] == "").all() and level1["sugg_id"].str.fullmatch(r"\d+").all()
    assert (level2["sugg_id"].str.split(".").str[0] == level2["parent"]).all()
    assert set(zip(level2["qid"], level2["parent"])) <= set(zip(level1["qid"], level1["sugg_id"]))
    assert np.allclose(sugg.groupby(["qid", "level"])["weight"].sum(), 1.0)
    first = sugg.set_index(["qid", "sugg_id"])["text"]
    assert first[("1", "1")] == first[("1", "1.1")] == "obama family tree"  # repeated text kept


def test_run_keeps_lemur_order(trec_web):
    run = trec_web[0].run
    assert len(run) == 61721
    assert (run["rank"] == run.groupby("qid").cumcount() + 1).all()
    # topic 10's first document has rank 3 in the released file (spam removed above it)
    assert run[run["qid"] == "10"].iloc[0][["docno", "rank", "score"]].tolist() == [
        "clueweb09-en0011-69-11971", 1, -2.74056]


def test_lemur_reproduces_published_numbers(trec_web):
    coll = trec_web[0]
    means = mean_measures(evaluate_run(coll.run, coll.qrels))
    published = {"ERR_IA@20": 0.271, "alpha_nDCG@20": 0.369, "NRBP": 0.232, "P_IA@20": 0.153, "StRecall@20": 0.621}
    assert {m: round(means[m], 3) for m in published} == published


def test_suggestions_drop_empty_strings(tmp_path):
    xml = tmp_path / "s.xml"
    xml.write_text("""<webtrack><topic number="1"><query>q</query>
      <subtopic1 number="1"><suggestion>a</suggestion><subtopic2 number="1"> </subtopic2>
        <subtopic2 number="2">a b</subtopic2></subtopic1>
      <subtopic1 number="2"><suggestion></suggestion><subtopic2 number="1">orphan</subtopic2></subtopic1>
      <subtopic1 number="3"><suggestion>c</suggestion></subtopic1></topic></webtrack>""")
    sugg = read_suggestions(xml, {"1"})
    assert list(sugg["sugg_id"]) == ["1", "1.2", "3"]
    assert list(sugg["weight"]) == [0.5, 1.0, 0.5]


def test_cli_builds_mini_collection(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["srdiv", "collection", "trec-web", "--source", str(MINI),
                                      "--out", str(tmp_path / "coll")])
    main()
    captured = capsys.readouterr()
    assert "8 topics, 7 judged" in captured.out
    assert "topic 151 is judged but not in folds_m2div.json: assigned to fold 5" in captured.err
    coll = load_collection(tmp_path / "coll")
    assert coll.qids == ["1", "2", "51", "95", "101", "102", "151", "152"]
    assert coll.docs is None and set(coll.folds["fold"]) == {1, 2, 3, 4, 5}


def test_vendored_text_files_end_with_a_newline():
    """Concatenating vendored files (``cat runs/*.txt``) must never join two lines."""
    root = Path(__file__).resolve().parents[1]
    files = [p for base in (root / "data/external", *COMMITTED_COLLECTIONS, root / "tests/fixtures")
             for p in base.rglob("*")
             if p.is_file() and p.suffix in {".txt", ".json", ".xml", ".qrels", ".md", ".tsv", ".csv", ".emb"}]
    assert files
    assert [str(p.relative_to(root)) for p in files if p.stat().st_size and not p.read_bytes().endswith(b"\n")] == []
