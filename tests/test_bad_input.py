"""Bad input to ``srdiv collection trec-web`` and ``srdiv evaluate``: one clear line, exit 2, no output left."""

import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from srdiv.cli.main import main
from srdiv.io import InputError
from srdiv.metrics import evaluate_run, read_run, write_trec_run
from helpers import FIXTURES, cli

MINI = FIXTURES / "trec-web-mini"
GOOD_RUN = """51 Q0 docA 1 3.5 t
51 Q0 docB 2 2.5 t
1 Q0 docC 1 1.0 t
"""


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
    (GOOD_RUN + "1  docD 2 0.5 t\n", "run.txt:4", "expected 6 fields (qid Q0 docno rank score tag), found 5"),
    (GOOD_RUN + "1 Q0 docD 2 0.5 t \n1 Q0 docE 3 0.5 t x\n", "run.txt:5", "found 7"),
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
    assert header.split("\t")[:4] == ["run", "topics", "alpha_nDCG@20", "ERR_IA@20"] and values.startswith("run\t7\t")
    assert "run: 5 judged topics have no results" in captured.err
    metrics = pd.read_parquet(out)
    assert list(metrics.columns) == ["run", "qid", "measure", "value"] and metrics["qid"].nunique() == 7


def test_evaluate_several_runs_and_a_topic_subset(collection, tmp_path, monkeypatch, capsys):
    from srdiv.collection.schema import load_collection
    from srdiv.metrics.stats import paired_pvalues

    coll = load_collection(collection)
    judged = coll.qrels[coll.qrels["rel"] > 0]
    (tmp_path / "a.txt").write_text(GOOD_RUN)
    best = judged.drop_duplicates(["qid", "docno"]).assign(rank=lambda f: f.groupby("qid").cumcount() + 1)
    (tmp_path / "b.txt").write_text("".join(f"{r.qid} Q0 {r.docno} {r.rank} {10 - r.rank} b\n" for r in best.itertuples()))
    monkeypatch.setattr(sys, "argv", ["srdiv", "evaluate", "--collection", str(collection), "--run",
                                      str(tmp_path / "a.txt"), "--run", str(tmp_path / "b.txt"),
                                      "--out", str(tmp_path / "m.parquet")])
    main()
    out = capsys.readouterr().out
    metrics = pd.read_parquet(tmp_path / "m.parquet")
    assert list(pd.unique(metrics["run"])) == ["a", "b"]
    for name in ("a", "b"):                      # each run's values are those of evaluating it alone
        alone = evaluate_run(read_run(tmp_path / f"{name}.txt"), coll.qrels)
        mine = metrics[metrics["run"] == name].drop(columns="run").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, alone.reset_index(drop=True))
    wide = metrics[metrics["measure"] == "alpha_nDCG@20"].pivot(index="qid", columns="run", values="value")
    expected = "▲" if paired_pvalues(wide, "a")["b"] < 0.05 else ""
    b_line = next(line for line in out.splitlines() if line.startswith("b\t"))
    assert b_line.split("\t")[2] == f"{wide['b'].mean():.4f}{expected}" and "paired t-test" in out
    # a topic subset: only those topics are evaluated
    numeric = sorted((q for q in coll.qids if q.isdigit()), key=int)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection, "--run", tmp_path / "a.txt",
                    "--topics", f"{numeric[0]}-{numeric[1]}", "--out", tmp_path / "s.parquet")
    assert code == 0, err
    chosen = set(pd.read_parquet(tmp_path / "s.parquet")["qid"])
    assert chosen and chosen <= {q for q in numeric if int(numeric[0]) <= int(q) <= int(numeric[1])}
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection, "--run", tmp_path / "a.txt",
                    "--topics", "9999", "--out", tmp_path / "s2.parquet")
    assert_fails(code, err, "topics.parquet", "no topic of the collection matches '9999'")


def test_evaluate_on_a_source_directory_says_how_to_build_a_collection(tmp_path, monkeypatch, capsys):
    (tmp_path / "run.txt").write_text(GOOD_RUN)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", MINI, "--run", tmp_path / "run.txt",
                    "--out", tmp_path / "m.parquet")
    assert_fails(code, err, "topics.parquet", "srdiv collection trec-web --source DIR --out COLLECTION")


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


def test_run_file_fields_split_on_any_blanks_and_line_end(tmp_path):
    # tabs, runs of blanks, leading and trailing blanks, \r\n, a lone \r and no final line end (as C's isspace)
    (tmp_path / "run.txt").write_bytes(b"51 Q0 docA 1 3.5 t\r\n\n  51\tQ0  d\xc3\xb3cB 2 2.5e0 t  \r1 Q0 docC 1 1 t")
    from srdiv.metrics.runs import read_trec_run
    run = read_trec_run(tmp_path / "run.txt")
    assert list(run["qid"]) == ["51", "51", "1"] and list(run["docno"]) == ["docA", "d\u00f3cB", "docC"]
    assert list(run["rank"]) == [1, 2, 1] and list(run["score"]) == [3.5, 2.5, 1.0] and list(run["line"]) == [1, 3, 4]
    (tmp_path / "bad.txt").write_bytes(b"51 Q0 docA 1 3.5 t\r\n\r\n51 Q0 docB 2\t2.5 t x\n")
    with pytest.raises(InputError, match=r"bad.txt:3: expected 6 fields .*found 7"):
        read_trec_run(tmp_path / "bad.txt")
    (tmp_path / "bad.txt").write_bytes(b"51 Q0 docA 1 3.5 t\n51 Q0 doc\xff 2 2.5 t\n")
    with pytest.raises(InputError, match=r"bad.txt:2: not UTF-8 text \(byte 0xff at byte offset 28\)"):
        read_trec_run(tmp_path / "bad.txt")


@pytest.mark.parametrize("bad", [0, 1, 499, 998, 999])
def test_the_first_bad_number_of_a_long_run_is_named(tmp_path, bad):
    lines = [f"1 Q0 d{i} {i + 1} {-i / 7} t" for i in range(1000)]
    lines[bad] = f"1 Q0 d{bad} {bad + 1} 0x1F t"
    lines[(bad + 300) % 1000] = f"1 Q0 d{bad} {bad + 1} nope t"    # a later one is not named
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    first = min(bad, (bad + 300) % 1000)
    value = "0x1F" if first == bad else "nope"
    with pytest.raises(InputError, match=rf"run.txt:{first + 1}: score '{value}' is not a finite number"):
        read_run(tmp_path / "run.txt")


# ------------------------------------------------------------------ values that do not fit (rule: check before narrowing)


def tampered(collection: Path, tmp_path: Path, table: str, change) -> Path:
    """A copy of ``collection`` with ``change(frame)`` applied to one table (in place, or the frame it returns)."""
    copy = tmp_path / "tampered"
    shutil.copytree(collection, copy)
    frame = pd.read_parquet(copy / f"{table}.parquet")
    changed = change(frame)
    frame = frame if changed is None else changed
    frame.to_parquet(copy / f"{table}.parquet", index=False)
    return copy


@pytest.mark.parametrize("table, change, why", [
    ("qrels", lambda f: f.__setitem__("grade", f["grade"].astype("int64") + 300),
     "table 'qrels': grade 301 in row 1 is not an integer in [0, 127]"),
    ("qrels", lambda f: f.__setitem__("rel", f["rel"].astype("int64") * 2), "rel 2 in row 1 is not an integer in [0, 1]"),
    ("run", lambda f: f.__setitem__("rank", f["rank"].astype("int64") + 2**31), "rank 2147483649 in row 1"),
    ("run", lambda f: f.__setitem__("rank", f["rank"] - 1), "rank 0 in row 1 is not an integer in [1, 2147483647]"),
    ("run", lambda f: f.__setitem__("score", float("nan")), "score nan in row 1 is not a finite number"),
    ("folds", lambda f: f.__setitem__("fold", f["fold"].astype("float64") + 0.5), "fold 1.5 in row 1 is not an integer"),
    ("suggestions", lambda f: f.__setitem__("level", 3), "level 3 in row 1 is not an integer in [1, 2]"),
    ("qrels", lambda f: f.__setitem__("qid", "999"), "qid '999' in row 1 is not a topic of the collection"),
    ("run", lambda f: f.__setitem__("qid", "999"), "run.parquet: qid '999' in row 1 is not a topic"),
    ("qrels", lambda f: f.__setitem__("sid", ["77", *f["sid"][1:]]), "which the topic's subtopics lack"),
    ("run", lambda f: f.iloc[:0], "table 'run' is empty"),
])
def test_collection_tables_are_range_checked_on_load(collection, tmp_path, monkeypatch, capsys, table, change, why):
    coll = tampered(collection, tmp_path, table, change)
    (tmp_path / "run.txt").write_text(GOOD_RUN)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", coll, "--run", tmp_path / "run.txt",
                    "--out", tmp_path / "m.parquet")
    assert_fails(code, err, str(coll), why)
    assert not (tmp_path / "m.parquet").exists()


def test_unreadable_parquet_is_one_line(collection, tmp_path, monkeypatch, capsys):
    copy = tmp_path / "coll"
    shutil.copytree(collection, copy)
    (copy / "qrels.parquet").write_bytes(b"PAR1 not really a table")
    (tmp_path / "run.txt").write_text(GOOD_RUN)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", copy, "--run", tmp_path / "run.txt",
                    "--out", tmp_path / "m.parquet")
    assert_fails(code, err, "qrels.parquet", "not a readable Parquet table")


@pytest.mark.parametrize("line, why", [
    ("1 Q0 docD 3000000000 0.5 t\n", "rank '3000000000' is not an integer in [-2147483648, 2147483647]"),
    ("1 Q0 docD 2.5 0.5 t\n", "rank '2.5' is not an integer"),
    ("1 Q0 docD 2 inf t\n", "score 'inf' is not a finite number"),
    ("1 Q0 docD 2 1e400 t\n", "score '1e400' is not a finite number"),
])
def test_run_numbers_must_fit(collection, tmp_path, monkeypatch, capsys, line, why):
    (tmp_path / "run.txt").write_text(GOOD_RUN + line)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection, "--run", tmp_path / "run.txt",
                    "--out", tmp_path / "m.parquet")
    assert_fails(code, err, "run.txt:4", why)


def test_qrels_grade_must_fit_its_column(tmp_path, monkeypatch, capsys):
    source = corrupt(tmp_path, "qrels/2010.diversity.qrels", None, "51 1 clueweb09-x 300\n")
    code, err = cli(monkeypatch, capsys, "collection", "trec-web", "--source", source, "--out", tmp_path / "c")
    assert_fails(code, err, "2010.diversity.qrels:86", "grade '300' is not an integer in [-128, 127]")


@pytest.mark.parametrize("column, value, why", [
    ("pagerank", float("inf"), "column 'pagerank' of document 'a' is not a finite number >= 0"),
    ("inlinks", -1, "column 'inlinks' of document 'a' is not a finite number >= 0"),
])
def test_document_graph_values_must_be_finite(tmp_path, column, value, why):
    from srdiv.text.documents import read_docs

    docs = pd.DataFrame({"docno": ["a"], "title": ["t"], "body": ["b"], "anchor": [""], "url": ["u"], column: [value]})
    docs.to_parquet(tmp_path / "docs.parquet")
    with pytest.raises(InputError, match=re.escape(why)):
        read_docs(tmp_path / "docs.parquet")
    docs.iloc[:0].to_parquet(tmp_path / "empty.parquet")
    with pytest.raises(InputError, match="no documents"):
        read_docs(tmp_path / "empty.parquet")


def test_vectors_must_be_finite(tmp_path):
    import numpy as np

    from srdiv.text.embed import read_vectors, write_vectors

    vectors = np.ones((3, 4), dtype=np.float32)
    vectors[2, 1] = np.nan
    write_vectors(pd.DataFrame({"docno": ["a", "b", "c"]}), vectors, tmp_path / "v.parquet")
    with pytest.raises(InputError, match="vector in row 3 has a value that is not a finite float32"):
        read_vectors(tmp_path / "v.parquet")


# ------------------------------------------------------------------ outputs whole, never over their inputs


def test_out_that_is_an_input_is_refused(collection, tmp_path, monkeypatch, capsys):
    (tmp_path / "run.txt").write_text(GOOD_RUN)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection, "--run", tmp_path / "run.txt",
                    "--out", tmp_path / "run.txt")
    assert_fails(code, err, "run.txt", "the output is also an input")
    assert (tmp_path / "run.txt").read_text() == GOOD_RUN


@pytest.mark.parametrize("where, why", [
    (lambda src: src, "the output is also an input"),
    (lambda src: src.parent, "the output contains the input"),
    (lambda src: src / "inner", "lies inside the input"),
])
def test_collection_out_over_its_source_is_refused(collection, tmp_path, monkeypatch, capsys, where, why):
    source = tmp_path / "src" / "coll"
    shutil.copytree(collection, source)
    before = {p.name: p.read_bytes() for p in source.iterdir()}
    code, err = cli(monkeypatch, capsys, "collection", "subset", "--source", source, "--out", where(source),
                    "--queries", 2, "--folds", 2)
    assert_fails(code, err, str(where(source)), why)
    assert {p.name: p.read_bytes() for p in source.iterdir()} == before


def test_collection_out_with_other_files_is_refused(collection, tmp_path, monkeypatch, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    code, err = cli(monkeypatch, capsys, "collection", "subset", "--source", collection, "--out", out,
                    "--queries", 2, "--folds", 2)
    assert_fails(code, err, "mine/notes.txt", "srdiv did not write this file")
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_an_interrupted_collection_write_leaves_the_old_one(collection, tmp_path, monkeypatch):
    import srdiv.collection.schema as schema
    from srdiv.collection.schema import load_collection, write_collection

    out = tmp_path / "coll"
    write_collection(load_collection(collection), out)          # srdiv's, recorded
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    record = (tmp_path / ".srdiv-outputs.json").read_bytes()
    coll = load_collection(collection)
    coll.run = coll.run.assign(score=coll.run["score"] + 1.0)   # a different collection
    written = []

    def write_some(df, path):
        if len(written) == 3:
            raise KeyboardInterrupt
        written.append(path)
        df.to_parquet(path)

    monkeypatch.setattr(schema, "write_parquet", write_some)
    with pytest.raises(KeyboardInterrupt):
        write_collection(coll, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before     # the old collection, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == [".srdiv-outputs.json", "coll"]   # no temporary directory
    assert (tmp_path / ".srdiv-outputs.json").read_bytes() == record                     # and the record as it was
    monkeypatch.undo()
    write_collection(coll, out)                                          # uninterrupted: the new one, whole
    assert load_collection(out).run["score"].equals(coll.run["score"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".srdiv-outputs.json", "coll"]


# ------------------------------------------------------------------ params validated at load


BAD_PARAMS = [
    ("train: {epochs: 0}\n", "'train.epochs' must be an integer >= 1, got 0"),
    ("train: {batch_size: 0}\n", "'train.batch_size' must be an integer >= 1, got 0"),
    ("train: {epochs: 3.5}\n", "'train.epochs' must be an integer >= 1, got 3.5"),
    ("train: {device: gpu}\n", "'train.device' must be a string matching"),
    ("train: {epoch: 3}\n", "unknown key 'train.epoch'"),
    ("trian: {epochs: 3}\n", "unknown key 'trian'"),
    ("samples: {draw: sometimes}\n", "'samples.draw' must be one of prefixes, per_length"),
    ("folds: [0, 1]\n", "'folds[0]' must be an integer >= 1, got 0"),
    ("embed: {doc2vec: {vector_size: -5}}\n", "'embed.doc2vec.vector_size' must be an integer >= 1"),
    ("report: {holm: 'yes'}\n", "'report.holm' must be true or false"),
    ("models: {DSSA: {optim: {name: adamw}}}\n", "'models.DSSA.optim.name' must be one of adam, sgd, adagrad"),
    ("models: {DSSA: {optim: {args: {lr: 1e-3}}}}\n", "'models.DSSA.optim.args.lr' must be a number > 0, got '1e-3'"),
    ("models: {DSSA: {tune: {model.args.lam: []}}}\n", "'models.DSSA.tune.model.args.lam' must be a list"),
    ("models: {DSSA: {tune: {optim.args.lr: ['1e-3']}}}\n",
     "'models.DSSA.tune.optim.args.lr[0]' must be a number > 0, got '1e-3'"),
    ("models: {DSSA: {group: best}}\n", "'models.DSSA.group' must be one of"),
    ("models: {DSSA: {modle: dssa}}\n", "unknown key 'models.DSSA.modle'"),
    ("models: {DSSA: {model: {name: dsa}}}\n", "models.DSSA: unknown model 'dsa'"),
    ("models: {DSSA: {model: {args: {hiden: 50}}}}\n", "models.DSSA.model.args: DSSA takes no hiden"),
    ("models: {DSSA: {tune: {model.args.lamb: [0.5]}}}\n", "models.DSSA.model.args: DSSA takes no lamb"),
    ("models: {DSSA: {objective: {name: listpairwise}}}\n", "models.DSSA: unknown objective 'listpairwise'"),
    ("models: {DSSA-GRU: {extends: DSA}}\n", "extends 'DSA', which is not a row of models"),
    # a tune key is the path in the row of the value it sets
    ("models: {DSSA: {tune: {optim.args.lr: [0.01], train.epoch: [3]}}}\n",
     "unknown path 'train.epoch' in 'models.DSSA.tune' (known: model.args.NAME, objective.args.NAME, "
     "optim.args.lr, optim.args.weight_decay, train.train_docs,"),
    ("models: {DSSA: {tune: {lam: [0.5]}}}\n", "unknown path 'lam' in 'models.DSSA.tune' (known: model.args.NAME,"),
    ("models: {DSSA: {tune: {optim.lr: [0.1]}}}\n", "unknown path 'optim.lr' in 'models.DSSA.tune'"),
    ("models: {DSSA: {tune: {model.name: [dssa, hdssa]}}}\n", "unknown path 'model.name' in 'models.DSSA.tune'"),
    # the old row form names the new one
    ("models: {DSSA: {params: {hidden: 50}}}\n",
     "'models.DSSA.params' is the old form: the model's keywords are model: {name: ..., args: {...}}"),
    ("models: {DSSA: {objective_params: {reward: s_recall}}}\n",
     "'models.DSSA.objective_params' is the old form: the objective's keywords are objective: {name: ..., "
     "args: {...}}"),
    ("models: {DSSA: {optim: {name: adam, lr: 0.01}}}\n",
     "'models.DSSA.optim.lr' is the old form: write optim: {name: ..., args: {lr: ...}}"),
    ("models: {DSSA: {model: dssa}}\n", "'models.DSSA.model' must be a mapping {name: ..., args: {...}}, got 'dssa'"),
    ("- a list\n", "params file must hold a mapping"),
    # every value a component gets, at every tuning point, against its declared type and range
    ("models: {DSSA: {model: {args: {hidden: 0}}}}\n", "models.DSSA.model.args: hidden must lie in [1, inf), got 0"),
    ("models: {DSSA: {model: {args: {hidden: 2.5}}}}\n", "models.DSSA.model.args: hidden must be an integer"),
    ("models: {DSSA: {model: {args: {dropout: 1.0}}}}\n", "models.DSSA.model.args: dropout must lie in [0, 1)"),
    ("models: {DSSA: {model: {args: {dropout: .nan}}}}\n", "dropout must be a finite number, got nan"),
    ("models: {DSSA: {tune: {model.args.lam: [0.5, 1.5]}}}\n", "models.DSSA.model.args: lam must lie in [0, 1], got 1.5"),
    ("models: {DSSA: {model: {args: {max_pooling: 'yes'}}}}\n", "max_pooling must be true or false"),
    ("models: {DSSA: {optim: {args: {lr: 0}}}}\n", "'models.DSSA.optim.args.lr' must be a number > 0, got 0"),
    ("models: {DSSA: {optim: {args: {lr: .inf}}}}\n", "'models.DSSA.optim.args.lr' must be a number > 0, got inf"),
    ("models: {DSSA: {tune: {optim.args.lr: [0.1, -0.1]}}}\n", "must be a number > 0, got -0.1"),
    ("models: {DSSA: {train: {valid_measure: alpha_nDCG@0}}}\n", "'models.DSSA.train.valid_measure' must be a measure"),
    ("train: {valid_measure: nDCG@20}\n", "'train.valid_measure' must be a measure name"),
    ("report: {main_measures: [alpha-nDCG@20]}\n", "'report.main_measures[0]' must be a measure name"),
    ("report: {alpha: 0}\n", "'report.alpha' must be a number in (0, 1), got 0"),
    ("train: {device: tpu}\n", "'train.device' must be a string matching"),
    # YAML that would be read silently wrong: a key twice, an alias inside itself
    ("train: {epochs: 3}\ntrain: {patience: 2}\n", "key 'train' appears twice in one mapping"),
    ("models:\n  DSSA:\n    model: {name: dssa}\n    model: {name: hdssa}\n", "key 'model' appears twice"),
    ("report: &r {ablations: {x: *r}}\n", "recursive alias *r"),
    # a learning rate that overflows a float; rows and reference runs named in an overlay
    ("models: {DSSA: {optim: {args: {lr: 1.0e+400}}}}\n", "'models.DSSA.optim.args.lr' must be a number > 0, got inf"),
    ("models: {DSSA: {optim: {args: {lr: .inf}}}}\n", "'models.DSSA.optim.args.lr' must be a number > 0, got inf"),
    ("run_models: [DSSA, Bogus]\n", "run_models names 'Bogus', which is not a row of models"),
    ("report: {reference_runs: {'bad name': x.txt}}\n", "report.reference_runs: name 'bad name' must be one word"),
    ("report: {reference_runs: {../up: x.txt}}\n", "report.reference_runs: name '../up' must be one word"),
    ("report: {reference_runs: {DSSA: x.txt}}\n", "report.reference_runs: 'DSSA' is also a row of models"),
]


@pytest.mark.parametrize("overlay, why", BAD_PARAMS)
def test_bad_params_stop_training_before_any_work(tmp_path, monkeypatch, capsys, overlay, why):
    row = "DSSA-GRU" if "DSSA-GRU" in overlay else "DSSA"
    (tmp_path / "bad.yaml").write_text(overlay)
    code, err = cli(monkeypatch, capsys, "train", "--model", row, "--fold", 1, "--bundle", tmp_path / "none.npz",
                    "--collection", tmp_path / "none", "--params", Path("params.yaml").resolve(),
                    "--params", tmp_path / "bad.yaml", "--out", tmp_path / "out")
    assert_fails(code, err, "bad.yaml", why)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


@pytest.mark.parametrize("overlay, where", [
    ("train: {epochs: 3}\ntrain: {patience: 2}\n", "bad.yaml:2"),
    ("models:\n  DSSA:\n    model: {name: dssa}\n    model: {name: hdssa}\n", "bad.yaml:4"),
    ("report:\n  ablations: &a\n    x: [*a]\n", "bad.yaml:3"),
])
def test_yaml_mistakes_name_the_line(tmp_path, monkeypatch, capsys, overlay, where):
    (tmp_path / "bad.yaml").write_text(overlay)
    code, err = cli(monkeypatch, capsys, "train", "--model", "DSSA", "--fold", 1, "--bundle", tmp_path / "none.npz",
                    "--collection", tmp_path / "none", "--params", Path("params.yaml").resolve(),
                    "--params", tmp_path / "bad.yaml", "--out", tmp_path / "out")
    assert_fails(code, err, where, "invalid YAML")


def test_a_row_mistake_names_the_file_that_sets_the_row(tmp_path, monkeypatch, capsys):
    """The row is set in the first overlay, the last one sets something else: the first is named."""
    (tmp_path / "rows.yaml").write_text("models: {Mine: {extends: DSSA, model: {args: {hidden: -1}}}}\n")
    (tmp_path / "other.yaml").write_text("train: {epochs: 2}\n")
    code, err = cli(monkeypatch, capsys, "train", "--model", "Mine", "--fold", 1, "--bundle", tmp_path / "none.npz",
                    "--collection", tmp_path / "none", "--params", Path("params.yaml").resolve(),
                    "--params", tmp_path / "rows.yaml", "--params", tmp_path / "other.yaml", "--out", tmp_path / "out")
    assert_fails(code, err, "rows.yaml", "models.Mine.model.args: hidden must lie in [1, inf), got -1")


@pytest.mark.parametrize("alpha", ["0", "1", "1.5", "-0.1", "nan"])
def test_evaluate_alpha_is_a_significance_level(collection, tmp_path, monkeypatch, capsys, alpha):
    (tmp_path / "run.txt").write_text(GOOD_RUN)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection, "--run", tmp_path / "run.txt",
                    "--out", tmp_path / "m.parquet", "--alpha", alpha)
    assert_fails(code, err, "--alpha", "the significance level must lie in (0, 1)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.txt"]


def test_every_shipped_params_file_fits_the_schema():
    from srdiv.params import load_params, model_rows
    from srdiv.train.rows import check_rows

    root = Path(__file__).resolve().parents[1]
    for overlay in [None, *sorted((root / "config").glob("*.yaml"))]:
        files = [root / "params.yaml"] + ([overlay] if overlay else [])
        params = load_params(files)
        check_rows(params, list(model_rows(params)))


def test_the_schema_knows_the_evaluators_measures():
    import re

    from srdiv.metrics.evaluate import MEASURES, measure_cutoffs
    from srdiv.params import MEASURE_NAME

    for name in [*MEASURES, "alpha_nDCG@7", "StRecall@100", "nERR_IA@1"]:
        assert re.fullmatch(MEASURE_NAME, name), name
        measure_cutoffs([name])
    for name in ["alpha_nDCG@0", "nDCG@20", "NRBP@5", "alpha-nDCG@20", "ERR_IA", "StRecall@-1"]:
        assert not re.fullmatch(MEASURE_NAME, name), name
        with pytest.raises(ValueError):
            measure_cutoffs([name])


def test_every_optimiser_of_the_schema_is_a_torch_optimiser():
    import torch

    from srdiv.experiment import Component
    from srdiv.params import OPTIMIZERS
    from srdiv.train.trainer import make_optimizer

    weight = torch.nn.Parameter(torch.zeros(2))
    for name, cls in OPTIMIZERS.items():
        made = make_optimizer([weight], Component(name, {"lr": 0.5}))
        assert type(made) is getattr(torch.optim, cls) and made.defaults["lr"] == 0.5


def test_an_output_that_cannot_be_written_is_one_line(collection, tmp_path, monkeypatch, capsys):
    (tmp_path / "run.txt").write_text(GOOD_RUN)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection, "--run", tmp_path / "run.txt",
                    "--out", tmp_path / "run.txt" / "m.parquet")
    assert_fails(code, err, "run.txt", "File exists")   # the OS: a file stands where a directory must be


def test_the_same_run_twice_and_a_path_not_utf8_are_one_line_before_any_work(collection, tmp_path, monkeypatch,
                                                                             capsys):
    """``--run A --run A`` (the same file, however written) and a path whose bytes are not UTF-8 stop the
    command at once: nothing written."""
    import os

    (tmp_path / "run.txt").write_text(GOOD_RUN)
    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/\xff.txt"))
    odd.write_text(GOOD_RUN)
    for args, where, why in (
            (["--run", tmp_path / "run.txt", "--run", tmp_path / "." / "run.txt"], "run.txt", "given twice as --run"),
            (["--run", odd], "\\udcff.txt", "the path is not valid UTF-8")):
        code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection, *args, "--out",
                        tmp_path / "m.parquet")
        assert_fails(code, err, where, why)
    code, err = cli(monkeypatch, capsys, "evaluate", "--collection", collection, "--run", tmp_path / "run.txt",
                    "--out", Path(os.fsdecode(os.fsencode(tmp_path) + b"/\xfe.parquet")))
    assert_fails(code, err, "\\udcfe.parquet", "the path is not valid UTF-8")
    assert sorted(os.listdir(os.fsencode(tmp_path))) == [b"run.txt", b"\xff.txt"]


@pytest.mark.parametrize("args, why", [
    (["train", "--device", "cuda:7", "--model", "ListMLE"], "No such option: --device (see 'srdiv train --help')"),
    (["nosuch"], "No such command 'nosuch'. (see 'srdiv --help')"),
    (["collection", "import", "--topics", "x", "--out", "y"], "Missing option '--qrels'."),
    (["evaluate", "--run", "x", "--out", "y"], "give exactly one of --collection DIR and --qrels FILE"),
])
def test_a_usage_error_is_one_line_too(monkeypatch, capsys, args, why):
    """An option srdiv lacks (there is no ``--device``: ``train.device`` sets it), a command it lacks, a
    missing or contradictory option: one line ``error: ...`` naming where to look, exit status 2."""
    code, err = cli(monkeypatch, capsys, *args)
    assert_fails(code, err, "error: ", why)


@pytest.mark.parametrize("overlay", ["train: {device: cuda}\n", "models: {ListMLE: {train: {device: 'cuda:7'}}}\n"])
def test_a_device_the_machine_lacks_names_the_file_that_sets_it(tmp_path, monkeypatch, capsys, overlay):
    """``train.device`` naming CUDA on a machine without it: one line naming the overlay that sets it, before
    the bundle is read."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    (tmp_path / "dev.yaml").write_text(overlay)
    (tmp_path / "other.yaml").write_text("train: {epochs: 2}\n")
    code, err = cli(monkeypatch, capsys, "train", "--model", "ListMLE", "--fold", 1, "--bundle", tmp_path / "none.npz",
                    "--collection", tmp_path / "none", "--params", Path("params.yaml").resolve(),
                    "--params", tmp_path / "dev.yaml", "--params", tmp_path / "other.yaml", "--out", tmp_path / "out")
    assert_fails(code, err, "dev.yaml", "but no CUDA device is available")
    assert not (tmp_path / "out").exists()
