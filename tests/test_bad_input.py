"""Bad input to ``srdiv collection trec-web`` and ``srdiv evaluate``: one clear line, exit 2, no output left."""

import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from srdiv.cli import main
from srdiv.io import InputError
from srdiv.metrics import evaluate_run, read_run, write_trec_run

MINI = Path(__file__).resolve().parent / "fixtures" / "trec-web-mini"
GOOD_RUN = """51 Q0 docA 1 3.5 t
51 Q0 docB 2 2.5 t
1 Q0 docC 1 1.0 t
"""


def cli(monkeypatch, capsys, *args) -> tuple[int, str]:
    """Run the real entry point; return (exit code, stderr)."""
    monkeypatch.setattr(sys, "argv", ["srdiv", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    from srdiv.collection.schema import write_collection
    from srdiv.collection.trec_web import build_trec_web

    out = tmp_path_factory.mktemp("coll")
    write_collection(build_trec_web(MINI)[0], out)
    return out


def assert_fails(code: int, err: str, where: str, why: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2
    assert len(lines) == 1 and where in lines[0] and why in lines[0], err


# ------------------------------------------------------------------ evaluate


@pytest.mark.parametrize("text, where, why", [
    (GOOD_RUN + "1 Q0 docD 2 0.5\n", "run.txt:4", "expected 6 fields"),
    (GOOD_RUN + "1 Q0 docD 2 high t\n", "run.txt:4", "score 'high' is not a finite number"),
    (GOOD_RUN + "1 Q0 docD two 0.5 t\n", "run.txt:4", "rank 'two' is not an integer"),
    (GOOD_RUN + "999 Q0 docD 1 0.5 t\n", "run.txt:4", "qid '999' is not a topic"),
    (GOOD_RUN + "\n51 Q0 docA 3 0.5 t\n", "run.txt:5", "docno 'docA' appears twice for qid '51'"),
    (GOOD_RUN + "1 Q0 docD 1 0.5 t\n", "run.txt:4", "rank '1' appears twice for qid '1'"),
    ("", "run.txt", "empty file"),
    ("\n  \n", "run.txt", "empty file"),
])
def test_evaluate_rejects_bad_run_file(collection, tmp_path, monkeypatch, capsys, text, where, why):
    (tmp_path / "run.txt").write_text(text)
    out = tmp_path / "metrics.parquet"
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection,
                    "--run", tmp_path / "run.txt", "--out", out)
    assert_fails(code, err, where, why)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.txt"]  # no output, no temporary file


def test_evaluate_rejects_bad_parquet_run(collection, tmp_path, monkeypatch, capsys):
    pd.DataFrame({"qid": ["1"], "doc": ["x"], "score": [1.0]}).to_parquet(tmp_path / "run.parquet")
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection,
                    "--run", tmp_path / "run.parquet", "--out", tmp_path / "m.parquet")
    assert_fails(code, err, "run.parquet", "needs qid, docno and score or rank")
    pd.DataFrame({"qid": ["1", "1"], "docno": ["x", "x"], "score": [1.0, 0.5]}).to_parquet(tmp_path / "run.parquet")
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection,
                    "--run", tmp_path / "run.parquet", "--out", tmp_path / "m.parquet")
    assert_fails(code, err, "run.parquet", "docno 'x' appears twice for qid '1' (row 2)")
    assert not (tmp_path / "m.parquet").exists()


def test_evaluate_missing_collection(tmp_path, monkeypatch, capsys):
    (tmp_path / "run.txt").write_text(GOOD_RUN)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", tmp_path / "nowhere",
                    "--run", tmp_path / "run.txt", "--out", tmp_path / "m.parquet")
    assert_fails(code, err, "nowhere", "collection directory not found")


def test_evaluate_good_run(collection, tmp_path, monkeypatch, capsys):
    (tmp_path / "run.txt").write_text(GOOD_RUN)
    out = tmp_path / "m.parquet"
    monkeypatch.setattr(sys, "argv", ["srdiv", "evaluate", "--collection", str(collection),
                                      "--run", str(tmp_path / "run.txt"), "--out", str(out)])
    main()
    captured = capsys.readouterr()
    header, values = captured.out.strip().splitlines()
    assert header.split("\t")[:3] == ["topics", "alpha_nDCG@20", "ERR_IA@20"] and values.startswith("7\t")
    assert "5 judged topics have no results" in captured.err
    metrics = pd.read_parquet(out)
    assert list(metrics.columns) == ["qid", "measure", "value"] and metrics["qid"].nunique() == 7


# ------------------------------------------------------------------ collection


def corrupt(tmp_path: Path, relative: str, text: str | None = None, append: str = "") -> Path:
    """A copy of the mini source with one file replaced (``text``) or extended (``append``)."""
    source = tmp_path / "source"
    shutil.copytree(MINI, source)
    target = source / relative
    target.write_text((target.read_text() if text is None else text) + append)
    return source


@pytest.mark.parametrize("relative, text, append, where, why", [
    ("qrels/2009.diversity.qrels", None, "1 1 clueweb09-x\n", "2009.diversity.qrels:105", "expected 4 fields"),
    ("qrels/2010.diversity.qrels", None, "51 1 clueweb09-x high\n", "2010.diversity.qrels:86",
     "grade 'high' is not an integer"),
    ("qrels/2011.diversity.qrels", None, "7 1 clueweb09-x 1\n", "2011.diversity.qrels:401", "unknown topic"),
    ("qrels/2012.diversity.qrels", "", "", "2012.diversity.qrels", "empty file"),
    ("runs/wt2009.txt", None, "1 Q0 clueweb09-x 31 -9.0\n", "wt2009.txt:61", "expected 6 fields"),
    ("topics/wt2011.topics.xml", None, "<topic>", "wt2011.topics.xml:", "malformed XML"),
    ("folds_m2div.json", '{"fold1": [1,\n}', "", "folds_m2div.json:2", "malformed JSON"),
    ("folds_m2div.json", '{"fold1": [1], "fold2": [1]}', "", "folds_m2div.json", "listed twice"),
])
def test_collection_rejects_bad_source(tmp_path, monkeypatch, capsys, relative, text, append, where, why):
    source = corrupt(tmp_path, relative, text, append)
    out = tmp_path / "coll"
    code, err = cli(monkeypatch, capsys, "collection", "trec-web", "--source", source, "--out", out)
    assert_fails(code, err, where, why)
    assert not out.exists()  # nothing is written before every input has been read


def test_frames_are_checked_too():
    qrels = pd.DataFrame({"qid": ["1"], "sid": ["1"], "docno": ["a"], "grade": [1], "rel": [1]})
    run = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "a"], "score": [2.0, 1.0]})
    with pytest.raises(InputError, match="docno 'a' appears twice"):
        evaluate_run(run, qrels)
    with pytest.raises(InputError, match="empty run"):
        evaluate_run(run.iloc[:0], qrels)


def test_trec_run_round_trip(tmp_path):
    run = pd.DataFrame({"qid": ["2", "2", "2", "10"], "docno": ["b", "a", "c", "z"], "score": [1.0, 1.0, 3.25, 0.1]})
    write_trec_run(run, tmp_path / "run.txt", tag="mine")
    lines = (tmp_path / "run.txt").read_text().splitlines()
    assert lines[:3] == ["2 Q0 c 1 3.25 mine", "2 Q0 b 2 1.0 mine", "2 Q0 a 3 1.0 mine"]  # ties: docno descending
    back = read_run(tmp_path / "run.txt")
    assert list(back["docno"]) == ["c", "b", "a", "z"] and list(back["rank"]) == [1, 2, 3, 1]
    with pytest.raises(ValueError, match="one non-empty word"):
        write_trec_run(run, tmp_path / "bad.txt", tag="two words")
    assert not (tmp_path / "bad.txt").exists()
