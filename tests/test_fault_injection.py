"""Fault injection through the command line: one bad input per case, against every stage.

A small pipeline is built once through ``srdiv`` itself (collection, embed, pseudo-docs, features,
bundle, samples, a trained ListMLE, its run and metrics). Each case copies it, spoils one thing as a
user could (a file cut short, garbage bytes, a wrong column type, a NaN, an out-of-range number, an
empty table, an ``--out`` over an input, a params value), runs one command, and checks the rules of
issue 17: exit status 2, one line ``error: FILE[:LINE]: ...`` naming the file and what is wrong, no
traceback, and every file of the workspace as it was (no output replaced, none half-written, no
temporary file left).
"""

import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from srdiv.cli.main import main
from helpers import FIXTURES, ROOT
from tiny_text_collection import SMALL_EMBED, write_tiny

OVERLAY = {"train": {"epochs": 2, "train_docs": 6, "rank_docs": 6},
           "models": {"ListMLE": {"tune": {"optim.args.lr": None}}}}


def cli(*args) -> tuple[int, str]:
    """Run the real entry point in this process; (exit status, stderr)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    err = io.StringIO()
    argv, sys.argv = sys.argv, ["srdiv", *map(str, args)]
    try:
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    finally:
        sys.argv = argv
    return code, err.getvalue()


def P(d: Path) -> list:
    return ["--params", ROOT / "params.yaml", "--params", d / "small.yaml", "--params", d / "overlay.yaml"]


def C(d: Path) -> list:
    return ["--collection", d / "coll"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """Every stage's output on the tiny collection, made by the commands under test."""
    d = tmp_path_factory.mktemp("workspace")
    write_tiny(d / "coll")
    (d / "small.yaml").write_text(yaml.safe_dump(SMALL_EMBED))
    (d / "overlay.yaml").write_text(yaml.safe_dump(OVERLAY))
    model = d / "models" / "ListMLE" / "fold1"
    for args in (["embed", *C(d), *P(d), "--out", d / "embed"],
                 ["pseudo-docs", *C(d), *P(d), "--embed-dir", d / "embed", "--out", d / "pd"],
                 ["features", "relevance", *C(d), *P(d), "--out", d / "rel.parquet"],
                 ["features", "diversity", *C(d), *P(d), "--vectors", d / "embed/lda.parquet",
                  "--out", d / "div.parquet"],
                 BUNDLE(d), SAMPLES(d), TRAIN("ListMLE")(d), RANK(d),
                 ["evaluate", *C(d), "--run", model / "run.txt", "--fold", 1, "--out", model / "metrics.parquet"],
                 GATHER(d), REPORT(d)):
        code, err = cli(*args)
        assert code == 0, (args[:2], err[-3000:])
    return d


# ---------------------------------------------------------------------------------- commands


def BUNDLE(d):
    return ["bundle", *C(d), *P(d), "--doc-vectors", d / "embed/lda.parquet", "--pseudo-vectors", d / "pd/lda.parquet",
            "--relevance", d / "rel.parquet", "--diversity", d / "div.parquet", "--out", d / "bundle.npz"]


def SAMPLES(d):
    return ["samples", *C(d), *P(d), "--bundle", d / "bundle.npz", "--fold", 1, "--out", d / "samples/fold1"]


def TRAIN(row, *extra):
    return lambda d: ["train", *C(d), *P(d), "--bundle", d / "bundle.npz", "--fold", 1, "--model", row,
                      "--out", d / "models" / row / "fold1", "--no-progress",
                      *[d / e if isinstance(e, str) and "/" in e else e for e in extra]]


def RANK(d):
    model = d / "models/ListMLE/fold1"
    return ["rank", *C(d), "--bundle", d / "bundle.npz", "--fold", 1, "--model-dir", model, "--out", model]


def DIVERSITY(d):
    return ["features", "diversity", *C(d), *P(d), "--vectors", d / "embed/lda.parquet", "--out", d / "div.parquet"]


def RELEVANCE(d):
    return ["features", "relevance", *C(d), *P(d), "--out", d / "rel.parquet"]


def EVALUATE(d):
    model = d / "models/ListMLE/fold1"
    return ["evaluate", *C(d), "--run", model / "run.txt", "--fold", 1, "--out", model / "metrics.parquet"]


def GATHER(d):
    (d / "g.yaml").write_text("run_models: [ListMLE]\nfolds: [1]\n")
    return ["gather", "--models", d / "models", "--params", ROOT / "params.yaml", "--params", d / "g.yaml",
            "--out", d / "metrics.parquet"]


def REPORT(d):
    return ["report", "--metrics", d / "metrics.parquet", "--params", ROOT / "params.yaml", "--params", d / "g.yaml",
            "--out", d / "results", "--models-dir", d / "models", "--benchmarks-dir", d / "bench"]


def IMPORT(d):
    return ["import-dssa", "--collection", d / "release/collection", "--release", d / "release",
            "--embed-out", d / "imported/embed.parquet", "--pseudo-docs-out", d / "imported/pseudo.parquet",
            "--relevance-out", d / "imported/relevance.parquet"]


def SUBSET(queries=2, folds=2):
    return lambda d: ["collection", "subset", "--source", d / "coll", "--out", d / "sub", "--queries", queries,
                      "--folds", folds]


def out_at(command, target):
    """``command`` with its ``--out`` replaced by ``target`` (relative to the workspace)."""
    def replaced(d):
        args = command(d)
        args[args.index("--out") + 1] = d / target
        return args
    return replaced


# ---------------------------------------------------------------------------------- spoilers


def nothing(d):
    pass


def garbage(rel):
    return lambda d: (d / rel).write_bytes(b"\x00garbage\xff" * 10)


def cut_short(rel):
    return lambda d: (d / rel).write_bytes((d / rel).read_bytes()[: (d / rel).stat().st_size // 2])


def lines_kept(rel, n):
    """Keep the first ``n`` lines of a text file (``lines[:n]``: -1 drops the last)."""
    return lambda d: (d / rel).write_text("".join((d / rel).read_text().splitlines(keepends=True)[:n]))


def emptied(rel):
    return lambda d: (d / rel).write_bytes(b"")


def text(rel, content):
    return lambda d: (d / rel).write_text(content)


def table(rel, change):
    """Rewrite a Parquet table with ``change(frame)`` (which edits it in place or returns a new one)."""
    def spoil(d):
        frame = pd.read_parquet(d / rel)
        changed = change(frame)
        (frame if changed is None else changed).to_parquet(d / rel, index=False)
    return spoil


def arrays(rel, change):
    """Rewrite an .npz with ``change(dict of arrays)``."""
    def spoil(d):
        with np.load(d / rel, allow_pickle=False) as z:
            values = dict(z)
        change(values)
        with open(d / rel, "wb") as fh:
            np.savez(fh, **values)
    return spoil


def first_vector(value):
    """Set the first row's vector of a vector table to ``value``."""
    def change(frame):
        vectors = list(frame["vector"])
        vectors[0] = value(vectors[0])
        frame["vector"] = vectors
    return change


def fewer_features(values):
    """A bundle of 5 relevance features (a model trained on 18 does not fit it)."""
    for name in ("rel_feat", "sub_feat", "sub2_feat"):
        values[name] = values[name][..., :5]
    values["feature_names"] = values["feature_names"][:5]


def other_samples(d):
    """Samples of trial 2's training queries, beside trial 1's."""
    args = SAMPLES(d)
    args[args.index("--fold") + 1] = 2
    args[args.index("--out") + 1] = d / "samples/fold2"
    assert cli(*args)[0] == 0


def release(change):
    """A copy of the DSSA-release sample with ``change(directory)`` applied."""
    def spoil(d):
        shutil.copytree(FIXTURES / "dssa-sample", d / "release")
        change(d / "release")
    return spoil


def line_changed(name, number, new):
    """Replace line ``number`` (1-based) of a text file with the bytes ``new``."""
    def change(folder):
        lines = (folder / name).read_bytes().split(b"\n")
        lines[number - 1] = new
        (folder / name).write_bytes(b"\n".join(lines))
    return change


DOC = '{"docno": "d1", "title": "a", "body": "b", "anchor": "c", "url": "http://d.org/1"}'
"""One line of a documents file (JSON Lines)."""


def model_weights(change):
    """Rewrite the ListMLE model.pt with ``change(its state dict)`` applied."""
    def spoil(d):
        import torch

        path = d / "models/ListMLE/fold1/model.pt"
        saved = torch.load(path, weights_only=True)
        change(saved["state"])
        torch.save(saved, path)
    return spoil


def hand_model(change):
    """A model directory made by hand, ``hand/``: the ListMLE model.pt with ``change(saved dict, spec)`` applied."""
    def spoil(d):
        import json

        import torch

        (d / "hand").mkdir()
        saved = torch.load(d / "models/ListMLE/fold1/model.pt", weights_only=True)
        spec = json.loads(saved["spec"])
        change(saved, spec)
        saved["spec"] = json.dumps(spec)
        torch.save(saved, d / "hand/model.pt")
    return spoil


def HAND_RANK(d):
    return ["rank", *C(d), "--bundle", d / "bundle.npz", "--fold", 1, "--model-dir", d / "hand", "--out", d / "hand"]


def user_model(module: str, body: str, tune: bool = False):
    """An overlay importing ``module``.py (beside the workspace: importing it writes bytecode), which registers
    a ListMLE whose scores run ``body``, as the row ``Mine`` (``tune``: two points, each in its own process)."""
    def spoil(d):
        (d.parent / f"{module}.py").write_text(
            "import sys\nfrom srdiv.models.listmle import ListMLE\nfrom srdiv.registry import MODELS\n"
            f"@MODELS.register('{module}')\nclass Mine(ListMLE):\n    def list_scores(self, batch):\n        {body}\n")
        (d / "overlay.yaml").write_text(yaml.safe_dump({**OVERLAY, "import": [str(d.parent / f"{module}.py")], "models": {
            "Mine": {"extends": "ListMLE", "model": {"name": module},
                     **({"tune": {"optim.args.lr": [0.1, 0.01]}} if tune else {})}}}))
    return spoil


def unjudged_fold(fold):
    """The collection without the judgments of fold ``fold``'s topics."""
    def spoil(d):
        folds = pd.read_parquet(d / "coll/folds.parquet")
        topics = set(folds.loc[folds["fold"] == fold, "qid"])
        table("coll/qrels.parquet", lambda f: f[~f["qid"].isin(topics)])(d)
    return spoil


def replace_dir_by_file(rel):
    def spoil(d):
        shutil.rmtree(d / rel)
        (d / rel).write_text("not a directory")
    return spoil


# ---------------------------------------------------------------------------------- cases

CASES = [
    # bundle .npz: read by samples, train, rank
    ("samples: bundle of garbage", garbage("bundle.npz"), SAMPLES, "bundle.npz", "not a readable bundle file"),
    ("train: bundle cut short", cut_short("bundle.npz"), TRAIN("ListMLE"), "bundle.npz", "not a readable bundle file"),
    ("rank: empty bundle file", emptied("bundle.npz"), RANK, "bundle.npz", "not a readable bundle file"),
    ("rank: bundle is a directory", lambda d: ((d / "bundle.npz").unlink(), (d / "bundle.npz").mkdir()), RANK,
     "bundle.npz", "not found"),
    ("train: bundle lacks an array", arrays("bundle.npz", lambda a: a.pop("labels")), TRAIN("ListMLE"),
     "bundle.npz", "bundle file lacks arrays ['labels']"),
    ("train: NaN feature in the bundle", arrays("bundle.npz", lambda a: a["rel_feat"].__setitem__((1, 0, 0), np.nan)),
     TRAIN("ListMLE"), "bundle.npz", "array 'rel_feat' has a value that is not finite (row 2)"),
    ("rank: inf vector in the bundle", arrays("bundle.npz", lambda a: a["doc_vec"].__setitem__((0, 0, 0), np.inf)),
     RANK, "bundle.npz", "array 'doc_vec' has a value that is not finite (row 1)"),
    ("samples: bundle array of text", arrays("bundle.npz", lambda a: a.__setitem__("labels", a["labels"].astype(str))),
     SAMPLES, "bundle.npz", "array 'labels' is not numeric"),
    ("train: bundle arrays of different queries",
     arrays("bundle.npz", lambda a: a.__setitem__("labels", a["labels"][:1])), TRAIN("ListMLE"), "bundle.npz",
     "array 'labels' does not have one row per query"),
    # model.pt: read by rank and as a prior
    ("rank: model.pt of garbage", garbage("models/ListMLE/fold1/model.pt"), RANK, "model.pt",
     "not a readable trained model"),
    ("rank: model.pt cut short", cut_short("models/ListMLE/fold1/model.pt"), RANK, "model.pt",
     "not a readable trained model"),
    ("rank: empty model.pt", emptied("models/ListMLE/fold1/model.pt"), RANK, "model.pt", "not a readable trained model"),
    ("rank: no model", lambda d: shutil.rmtree(d / "models/ListMLE"), RANK, "ListMLE/fold1", "trained model not found"),
    ("train: prior of garbage", garbage("models/ListMLE/fold1/model.pt"),
     TRAIN("MMR", "--prior", "models/ListMLE/fold1"), "model.pt", "not a readable trained model"),
    ("train: prior missing", nothing, TRAIN("MMR"), "--prior", "model row MMR needs its prior 'ListMLE'"),
    # samples .npz
    ("train: samples of garbage", garbage("samples/fold1/samples.npz"), TRAIN("PAMM", "--samples", "samples/fold1"),
     "samples.npz", "not a readable samples file"),
    ("train: samples cut short", cut_short("samples/fold1/samples.npz"), TRAIN("PAMM", "--samples", "samples/fold1"),
     "samples.npz", "not a readable samples file"),
    ("train: samples missing", lambda d: shutil.rmtree(d / "samples"), TRAIN("PAMM", "--samples", "samples/fold1"),
     "samples", "samples file not found"),
    ("train: samples of another fold's queries",
     lambda d: other_samples(d),
     TRAIN("PAMM", "--samples", "samples/fold2"), "--samples", "samples do not match the training bundle"),
    ("train: samples needed but not given", nothing, TRAIN("PAMM"), "--samples", "objective pamm needs the fold's"),
    # vector tables: read by bundle and features diversity
    ("bundle: vectors cut short", cut_short("embed/lda.parquet"), BUNDLE, "lda.parquet", "not a readable Parquet"),
    ("bundle: empty vectors file", emptied("embed/lda.parquet"), BUNDLE, "lda.parquet", "not a readable Parquet"),
    ("bundle: NaN in a vector", table("embed/lda.parquet", first_vector(lambda v: np.full_like(v, np.nan))), BUNDLE,
     "lda.parquet", "vector in row 1 has a value that is not a finite float32"),
    ("diversity: float64 overflow in a vector",
     table("embed/lda.parquet", lambda f: f.assign(vector=[np.full(len(v), 1e300 if i == 0 else 0.0)
                                                            for i, v in enumerate(f["vector"])])), DIVERSITY,
     "lda.parquet", "vector in row 1 has a value that is not a finite float32"),
    ("diversity: vectors of text", table("embed/lda.parquet", lambda f: f.assign(vector="x")), DIVERSITY,
     "lda.parquet", "column 'vector' must hold lists of numbers"),
    ("bundle: vectors of different lengths", table("embed/lda.parquet", first_vector(lambda v: v[:2])), BUNDLE,
     "lda.parquet", "vectors of different lengths"),
    ("bundle: vectors without docno", table("embed/lda.parquet", lambda f: f.rename(columns={"docno": "doc"})),
     BUNDLE, "lda.parquet", "needs the text key columns docno"),
    ("diversity: vector table without rows", table("embed/lda.parquet", lambda f: f.iloc[:0]), DIVERSITY,
     "lda.parquet", "vector table has no rows"),
    ("bundle: pseudo vectors keyed by number", table("pd/lda.parquet", lambda f: f.assign(sugg_id=1)), BUNDLE,
     "pd/lda.parquet", "needs the text key columns qid, sugg_id"),
    # feature tables: read by bundle
    ("bundle: relevance cut short", cut_short("rel.parquet"), BUNDLE, "rel.parquet", "not a readable Parquet"),
    ("bundle: relevance feature of text", table("rel.parquet", lambda f: f.assign(**{f.columns[-1]: "x"})), BUNDLE,
     "rel.parquet", "is not numeric"),
    ("bundle: relevance lacks a feature", table("rel.parquet", lambda f: f.drop(columns=[f.columns[-1]])), BUNDLE,
     "rel.parquet", "feature table lacks columns"),
    ("bundle: relevance without rows", table("rel.parquet", lambda f: f.iloc[:0]), BUNDLE, "rel.parquet",
     "feature table has no rows"),
    ("bundle: NaN relevance feature", table("rel.parquet", lambda f: f.__setitem__(f.columns[-1], np.nan)), BUNDLE,
     "rel.parquet", "non-finite feature value in row 1"),
    ("bundle: inf diversity feature", table("div.parquet", lambda f: f.__setitem__(f.columns[-1], np.inf)), BUNDLE,
     "div.parquet", "non-finite feature value in row 1"),
    ("bundle: diversity feature of text", table("div.parquet", lambda f: f.assign(**{f.columns[-1]: "x"})), BUNDLE,
     "div.parquet", "is not numeric"),
    ("bundle: diversity keyed by number", table("div.parquet", lambda f: f.assign(qid=1)), BUNDLE, "div.parquet",
     "key column 'qid' is not text"),
    ("bundle: diversity lacks a feature", table("div.parquet", lambda f: f.drop(columns="url_sim")), BUNDLE,
     "div.parquet", "feature table lacks columns ['url_sim']"),
    ("bundle: diversity lacks subtopic_div", table("div.parquet", lambda f: f.drop(columns="subtopic_div")), BUNDLE,
     "div.parquet", "feature table lacks columns ['subtopic_div']"),
    ("bundle: diversity with a feature more", table("div.parquet", lambda f: f.assign(other_div=0.5)), BUNDLE,
     "div.parquet", "are not the expected"),
    ("bundle: diversity that does not record its features", table("div.parquet", lambda f: f.attrs.clear()), BUNDLE,
     "div.parquet", "does not record its feature columns"),
    # collection tables and documents
    ("evaluate: grade of text", table("coll/qrels.parquet", lambda f: f.assign(grade="high")), EVALUATE,
     "qrels.parquet", "grade 'high' in row 1 is not an integer in [0, 127]"),
    ("evaluate: folds cut short", cut_short("coll/folds.parquet"), EVALUATE, "folds.parquet", "not a readable Parquet"),
    ("train: fold out of range", table("coll/folds.parquet", lambda f: f.assign(fold=f["fold"].astype("int64") + 2**40)),
     TRAIN("ListMLE"), "folds.parquet", "fold 1099511627777 in row 1 is not an integer in [1, 127]"),
    ("relevance: documents cut short", cut_short("coll/docs.parquet"), RELEVANCE, "docs.parquet",
     "not a readable Parquet"),
    ("relevance: negative inlinks", table("coll/docs.parquet", lambda f: f.assign(inlinks=-1.0)), RELEVANCE,
     "docs.parquet", "column 'inlinks' of document"),
    ("relevance: document titles of numbers", table("coll/docs.parquet", lambda f: f.assign(title=5)), RELEVANCE,
     "docs.parquet", "column 'title' in row 1 is not text (got 5)"),
    ("relevance: --docs with a body of numbers",
     text("docs.jsonl", DOC + "\n\n" + DOC.replace('"b"', "3").replace("d1", "d2") + "\n"),
     lambda d: RELEVANCE(d) + ["--docs", d / "docs.jsonl"], "docs.jsonl:3", "column 'body' is not text (got 3)"),
    ("relevance: --docs with a docno of numbers", text("docs.jsonl", DOC.replace('"d1"', "7") + "\n"),
     lambda d: RELEVANCE(d) + ["--docs", d / "docs.jsonl"], "docs.jsonl:1", "column 'docno' is not text (got 7)"),
    ("diversity: links of numbers", table("coll/docs.parquet", lambda f: f.assign(links=[[1, 2]] * len(f))),
     DIVERSITY, "docs.parquet", "column 'links' in row 1 is not a list of docnos"),
    ("diversity: --docs with links of text", text("docs.jsonl", DOC.replace("}", ', "links": "d2"}') + "\n"),
     lambda d: DIVERSITY(d) + ["--docs", d / "docs.jsonl"], "docs.jsonl:1",
     "column 'links' is not a list of docnos (text) (got 'd2')"),
    ("relevance: --docs not UTF-8", lambda d: (d / "docs.jsonl").write_bytes(b'{"docno": "a"}\n{"docno": "\xff"}\n'),
     lambda d: RELEVANCE(d) + ["--docs", d / "docs.jsonl"], "docs.jsonl:2", "not UTF-8 text"),
    ("pseudo-docs: embed model of garbage", garbage("embed/lda.model"),
     lambda d: ["pseudo-docs", *C(d), *P(d), "--embed-dir", d / "embed", "--out", d / "pd"], "embed",
     "a directory of trained models was changed since srdiv wrote it"),
    ("pseudo-docs: an --embed-dir srdiv did not write", lambda d: shutil.copytree(d / "embed", d / "downloaded"),
     lambda d: ["pseudo-docs", *C(d), *P(d), "--embed-dir", d / "downloaded", "--out", d / "pd"], "downloaded",
     "a directory of trained models that srdiv did not record writing"),
    ("subset: no queries", nothing, SUBSET(queries=0), "coll", "--queries 0: choose 1 to 2"),
    ("subset: more queries than the collection", nothing, SUBSET(queries=1000), "coll", "--queries 1000: choose 1 to 2"),
    ("subset: one fold", nothing, SUBSET(folds=1), "coll", "--folds 1: choose 2 to 2"),
    ("import-dssa: document vectors not UTF-8", release(line_changed("doc.emb", 3, b"doc\xff\t0.5")), IMPORT,
     "doc.emb:3", "not UTF-8 text"),
    ("import-dssa: a vector value beyond float32", release(line_changed("query.emb", 2, b"some query\t1e300")), IMPORT,
     "query.emb:2", ""),
    ("import-dssa: relevance features of garbage", release(lambda f: (f / "rel_feat.csv").write_bytes(b"\xff\x00" * 9)),
     IMPORT, "rel_feat.csv", ""),
    ("import-dssa: candidates not JSON", release(lambda f: (f / "candidates.json").write_text("{'1': [}")),
     lambda d: IMPORT(d) + ["--candidates", d / "release/candidates.json"], "candidates.json:1", "malformed JSON"),
    ("import-dssa: one path for two outputs", release(lambda f: None),
     lambda d: [d / "imported/embed.parquet" if a == d / "imported/pseudo.parquet" else a for a in IMPORT(d)],
     "embed.parquet", "the same output is given twice"),
    ("import-dssa: --embed-out inside the release", release(lambda f: None),
     lambda d: [a if a != d / "imported/embed.parquet" else d / "release/doc.parquet" for a in IMPORT(d)],
     "doc.parquet", "lies inside the input directory"),
    # folds, runs and metrics
    ("train: a fold the collection lacks", nothing,
     lambda d: out_at(TRAIN("ListMLE"), "models/ListMLE/fold9")(d) + ["--fold", 9],
     "folds.parquet", "fold 9 is not in the folds table"),
    ("samples: a fold the collection lacks", nothing, lambda d: SAMPLES(d) + ["--fold", 9], "folds.parquet",
     "fold 9 is not in the folds table"),
    ("evaluate: run of binary garbage", garbage("models/ListMLE/fold1/run.txt"), EVALUATE, "run.txt", ""),
    ("gather: metrics cut short", cut_short("models/ListMLE/fold1/metrics.parquet"), GATHER, "metrics.parquet",
     "not a readable Parquet"),
    ("gather: metric value of text", table("models/ListMLE/fold1/metrics.parquet", lambda f: f.assign(value="x")),
     GATHER, "metrics.parquet", "value 'x' in row 1 is not a finite number"),
    ("gather: NaN metric value", table("models/ListMLE/fold1/metrics.parquet", lambda f: f.assign(value=np.nan)),
     GATHER, "metrics.parquet", "value nan in row 1 is not a finite number"),
    ("gather: metrics lack a column", table("models/ListMLE/fold1/metrics.parquet", lambda f: f.drop(columns="measure")),
     GATHER, "metrics.parquet", "metrics table lacks columns ['measure']"),
    ("gather: metrics without rows", table("models/ListMLE/fold1/metrics.parquet", lambda f: f.iloc[:0]), GATHER,
     "metrics.parquet", "metrics table has no rows"),
    ("report: metrics of garbage", garbage("models/ListMLE/fold1/metrics.parquet"),
     lambda d: ["report", "--metrics", d / "models/ListMLE/fold1/metrics.parquet", "--params", ROOT / "params.yaml",
                "--out", d / "results"], "metrics.parquet", "not a readable Parquet"),
    ("report: timings.json malformed", text("models/ListMLE/fold1/timings.json", '{"train_seconds": 1,\n'), REPORT,
     "timings.json:2", "malformed JSON"),
    ("report: hparams.json not an object", text("models/ListMLE/fold1/hparams.json", "[]"), REPORT, "hparams.json",
     "hparams.json must hold a JSON object"),
    ("report: hparams.json of something else", text("models/ListMLE/fold1/hparams.json", '{"row": "x"}'), REPORT,
     "hparams.json", "not an hparams.json of srdiv train"),
    ("report: benchmark record of garbage",
     lambda d: ((d / "bench/train").mkdir(parents=True), (d / "bench/train/ListMLE-fold1.tsv").write_text("x\ty\n1\n")),
     REPORT, "ListMLE-fold1.tsv", "table lacks columns ['s', 'cpu_time', 'max_rss']"),
    ("report: tables/ holds a file of its own", text("results/tables/notes.txt", "mine"), REPORT, "tables",
     "holds files the report does not write (notes.txt)"),
    ("report: new metrics, but a learning curve cut short (read after the new tables are made)",
     lambda d: (table("metrics.parquet", lambda f: f.assign(value=f["value"] / 2))(d),
                cut_short("models/ListMLE/fold1/curve.parquet")(d)),
     REPORT, "curve.parquet", "not a readable Parquet"),                # the old report stays whole
    # a model or prior trained on another bundle
    ("rank: a bundle with other feature sizes", arrays("bundle.npz", fewer_features), RANK, "--bundle",
     "trained on a bundle with feats = 18, this bundle has 5"),
    ("train: a prior trained on another bundle", arrays("bundle.npz", fewer_features),
     TRAIN("MMR", "--prior", "models/ListMLE/fold1"), "--prior",
     "was trained on a bundle with 18 relevance and 6 diversity features, this bundle has 5 and 6"),
    # outputs: never over an input, never inside an input directory, OS errors in one line
    ("bundle: --out is its relevance input", nothing, out_at(BUNDLE, "rel.parquet"), "rel.parquet",
     "the output is also an input"),
    ("bundle: --out inside the collection", nothing, out_at(BUNDLE, "coll/qrels.parquet"), "qrels.parquet",
     "lies inside the input directory"),
    ("evaluate: --out over the collection's qrels", nothing, out_at(EVALUATE, "coll/qrels.parquet"), "qrels.parquet",
     "lies inside the input directory"),
    ("relevance: --out over the documents", nothing, out_at(RELEVANCE, "coll/docs.parquet"), "docs.parquet",
     "lies inside the input directory"),
    ("embed: --out is the collection", nothing, lambda d: ["embed", *C(d), *P(d), "--out", d / "coll"], "coll",
     "the output is also an input"),
    ("pseudo-docs: --out is its embed directory", nothing,
     lambda d: ["pseudo-docs", *C(d), *P(d), "--embed-dir", d / "embed", "--out", d / "embed"], "embed",
     "the output is also an input"),
    ("rank: --out is the bundle", nothing, out_at(RANK, "bundle.npz"), "bundle.npz", "the output is also an input"),
    ("bundle: --out under a file", nothing, out_at(BUNDLE, "rel.parquet/bundle.npz"), "rel.parquet", ""),
    ("bundle: --out is a directory", lambda d: (d / "newdir").mkdir(), out_at(BUNDLE, "newdir"), "newdir", ""),
    ("gather: --out name too long", nothing, out_at(GATHER, "m" * 300 + ".parquet"), "mmmm", "too long"),
    ("train: --out directory is a file", lambda d: (d / "taken").write_text("x"), out_at(TRAIN("ListMLE"), "taken"),
     "taken", ""),
    # degenerate data is an error, not a number
    ("bundle: a docno twice in the vector table", table("embed/lda.parquet", lambda f: pd.concat([f, f.iloc[:1]])),
     BUNDLE, "lda.parquet", "vector table: docno 'bass-fish-0' appears twice (row 31)"),
    ("diversity: a null docno in the vector table", table("embed/lda.parquet", lambda f: f.assign(
        docno=[None, *f["docno"][1:]])), DIVERSITY, "lda.parquet", "vector table: key column 'docno' is null in row 1"),
    ("bundle: a candidate without a document vector", table("embed/lda.parquet", lambda f: f[f["docno"] != "bass-fish-4"]),
     BUNDLE, "lda.parquet", "document 'bass-fish-4' (candidate of topic '1') has no vector (1 of"),
    ("bundle: --fill other than none or zero", nothing, lambda d: BUNDLE(d) + ["--fill", "mean"], "--fill",
     "must be one of none, zero"),
    ("bundle: a relevance row twice", table("rel.parquet", lambda f: pd.concat([f, f.iloc[[3]]])), BUNDLE,
     "rel.parquet", "appears twice (row"),
    ("bundle: a null docno in the diversity table", table("div.parquet", lambda f: f.assign(
        docno_a=[*f["docno_a"][:-1], None])), BUNDLE, "div.parquet", "key column 'docno_a' is null"),
    ("rank: a model with a NaN weight", model_weights(lambda state: next(iter(state.values())).fill_(float("nan"))),
     RANK, "model.pt", "holds values that are not finite"),
    ("rank: a model made by hand, weights of other shapes", hand_model(lambda saved, spec: saved["state"].update(
        {next(iter(saved["state"])): __import__("torch").zeros(3, 3)})), HAND_RANK, "hand/model.pt",
     "not a model.pt of srdiv train (RuntimeError: Error(s) in loading state_dict for ListMLE: size mismatch"),
    ("rank: a model made by hand, no weights", hand_model(lambda saved, spec: saved.update(state={})), HAND_RANK,
     "hand/model.pt", "Missing key(s) in state_dict"),
    ("rank: a model made by hand, an unknown model", hand_model(lambda saved, spec: spec["model"].update(
        name="bogus")), HAND_RANK, "hand/model.pt", "model 'bogus' is not registered in this process"),
    ("rank: a model trained for a device this machine lacks", hand_model(lambda saved, spec: spec["train"].update(
        device="cuda:7")), HAND_RANK, "--model-dir (row ListMLE's recorded settings)", "train.device is 'cuda:7' but"),
    ("rank: a model made by hand, an unknown argument", hand_model(lambda saved, spec: spec["model"]["args"].update(
        bogus=1)), HAND_RANK, "hand/model.pt", "unexpected keyword argument 'bogus'"),
    ("train: a prior made by hand, no weights", hand_model(lambda saved, spec: saved.update(state={})),
     TRAIN("MMR", "--prior", "hand/model.pt"), "hand/model.pt", "Missing key(s) in state_dict"),
    ("samples: --row names no row", nothing, lambda d: SAMPLES(d) + ["--row", "Bogus"], "--row",
     "no params file gives the row models.Bogus"),
    # a user's component that stops the command: never success, one line naming its module
    ("train: a user's model calls sys.exit(0)", user_model("stops_at_once", "sys.exit(0)"), TRAIN("Mine"),
     "stops_at_once.py", "called sys.exit(0) while the command ran"),
    ("train: a user's model raises", user_model("raises_at_once", "raise ValueError('mine')"), TRAIN("Mine"),
     "raises_at_once.py", "raised ValueError: mine"),
    ("train: a user's model calls sys.exit(0) in a tuning process", user_model("stops_in_tuning", "sys.exit(0)",
                                                                            tune=True),
     lambda d: TRAIN("Mine")(d) + ["--threads", 2], "stops_in_tuning.py", "called sys.exit(0) while the command ran"),
    ("train: a prior with an infinite weight", model_weights(lambda state: next(iter(state.values())).fill_(
        float("inf"))), TRAIN("MMR", "--prior", "models/ListMLE/fold1"), "model.pt", "holds values that are not finite"),
    ("train: training (and validation) folds with no judged topic", unjudged_fold(2), TRAIN("ListMLE"), "folds.parquet",
     "trial 1 has no judged topic among its training queries"),
    ("evaluate: a fold with no judged topic", unjudged_fold(1), EVALUATE, "qrels.parquet",
     "no topic of fold 1 has judgments"),
    ("evaluate: a NaN score in a Parquet run",
     lambda d: pd.DataFrame({"qid": ["q1", "q1"], "docno": ["a", "b"], "score": [1.0, np.nan]}).to_parquet(d / "r.parquet"),
     lambda d: ["evaluate", *C(d), "--run", d / "r.parquet", "--out", d / "m.parquet"], "r.parquet", "score"),
    ("collection subset: a qrels row twice", table("coll/qrels.parquet", lambda f: pd.concat([f, f.iloc[:1]])), SUBSET(),
     "qrels.parquet", "appears twice"),
    # every artifact records what it is, and every consumer checks it
    ("rank: a model of another fold", lambda d: shutil.copytree(d / "models/ListMLE/fold1", d / "models/ListMLE/fold2"),
     lambda d: ["rank", *C(d), "--bundle", d / "bundle.npz", "--fold", 2, "--model-dir", d / "models/ListMLE/fold2",
                "--out", d / "models/ListMLE/fold2"], "--model-dir", "the model was trained for trial 1"),
    ("rank: a model.pt copied into another job's directory",
     lambda d: (cli(*TRAIN("Initial")(d)), shutil.copy(d / "models/ListMLE/fold1/model.pt", d / "models/Initial/fold1")),
     lambda d: ["rank", *C(d), "--bundle", d / "bundle.npz", "--fold", 1, "--model-dir", d / "models/Initial/fold1",
                "--out", d / "models/Initial/fold1"], "Initial/fold1/model.pt", "was changed since srdiv wrote it"),
    ("rank: a model.pt copied where no manifest records it",
     lambda d: (cli(*TRAIN("Initial")(d)), (d / "models/Initial/fold1/.srdiv-outputs.json").unlink(),
                shutil.copy(d / "models/ListMLE/fold1/model.pt", d / "models/Initial/fold1")),
     lambda d: ["rank", *C(d), "--bundle", d / "bundle.npz", "--fold", 1, "--model-dir", d / "models/Initial/fold1",
                "--out", d / "models/Initial/fold1"], "Initial/fold1/model.pt",
     "a model of row ListMLE fold 1 other than the one its directory's hparams.json records"),
    ("rank: a bundle other than the model's", arrays("bundle.npz", lambda a: a["rel_feat"].__setitem__((0, 0, 0), 0.5)),
     RANK, "--bundle", "the model of row ListMLE was trained on another bundle"),
    ("train: a prior of another fold", lambda d: shutil.copytree(d / "models/ListMLE/fold1", d / "models/ListMLE/fold2"),
     lambda d: ["train", *C(d), *P(d), "--bundle", d / "bundle.npz", "--fold", 2, "--model", "MMR", "--out",
                d / "models/MMR/fold2", "--prior", d / "models/ListMLE/fold2", "--no-progress"], "--prior",
     "the prior was trained for trial 1, not 2"),
    ("gather: a run placed under another row", lambda d: (
        shutil.copytree(d / "models/ListMLE", d / "models/Initial"),
        (d / "g2.yaml").write_text("run_models: [Initial]\nfolds: [1]\n")),
     lambda d: ["gather", "--models", d / "models", "--params", ROOT / "params.yaml", "--params", d / "g2.yaml",
                "--out", d / "metrics2.parquet"], "Initial/fold1/hparams.json",
     "records row ListMLE fold 1, but lies where row Initial fold 1 belongs"),
    ("gather: a run of another model", lambda d: text("models/ListMLE/fold1/rank.json", (
        d / "models/ListMLE/fold1/rank.json").read_text().replace('"fold": 1', '"fold": 2'))(d), GATHER,
     "rank.json", "the run was ranked with a model of row ListMLE fold 2"),
    ("gather: a run cut short since it was ranked", lines_kept("models/ListMLE/fold1/run.txt", 3), GATHER,
     "ListMLE/fold1/run.txt", "is not the run its rank.json records (cut short or changed since it was ranked)"),
    ("report: a run edited since it was ranked (no manifest beside it)", lambda d: (
        (d / "models/ListMLE/fold1/.srdiv-outputs.json").unlink(), lines_kept("models/ListMLE/fold1/run.txt", -1)(d)),
     REPORT, "ListMLE/fold1/run.txt", "is not the run its rank.json records"),
    ("report: the metric-at-k plot from a run cut short", lines_kept("models/ListMLE/fold1/run.txt", 2),
     lambda d: REPORT(d) + ["--collection", d / "coll"], "ListMLE/fold1/run.txt", "is not the run its rank.json"),
    ("gather: a run that is gone, though rank.json records it", lambda d: (d / "models/ListMLE/fold1/run.txt").unlink(),
     GATHER, "ListMLE/fold1/run.txt", "missing: the job's rank.json records a run"),
    ("evaluate: a null docno in a Parquet run",
     lambda d: pd.DataFrame({"qid": ["q1", "q1"], "docno": ["a", None], "score": [1.0, 2.0]}).to_parquet(d / "r.parquet"),
     lambda d: ["evaluate", *C(d), "--run", d / "r.parquet", "--out", d / "m.parquet"], "r.parquet",
     "docno is null (row 2)"),
    # a command never replaces a file it did not write (the manifest .srdiv-outputs.json records what it wrote)
    ("report: --out over a README the user wrote", lambda d: ((d / "mine").mkdir(), text("mine/README.md", "notes")(d)),
     out_at(REPORT, "mine"), "mine/README.md", "exists and srdiv did not write it"),
    ("report: --out over a README the user wrote that begins as the report's", lambda d: (
        (d / "mine").mkdir(), text("mine/README.md", "# Results: my notes\n")(d)), out_at(REPORT, "mine"),
     "mine/README.md", "exists and srdiv did not write it"),
    ("report: the results README edited by hand", text("results/README.md", "# Results: mine\n"), REPORT,
     "results/README.md", "was changed since srdiv wrote it"),
    ("train: --out at another row's directory", nothing, out_at(TRAIN("Initial"), "models/ListMLE/fold1"),
     "ListMLE/fold1", "holds the model of row ListMLE fold 1, not of row Initial fold 1"),
    ("train: --out over a model.pt that is not srdiv's",
     lambda d: ((d / "models/Initial/fold1").mkdir(parents=True), text("models/Initial/fold1/model.pt", "x")(d)),
     out_at(TRAIN("Initial"), "models/Initial/fold1"), "model.pt", "exists and srdiv did not write it"),
    ("rank: --out at another row's directory", lambda d: (d / "models/Other/fold1").mkdir(parents=True) or
     (d / "models/Other/fold1/hparams.json").write_text('{"row": "Other", "fold": 1}'),
     out_at(RANK, "models/Other/fold1"), "Other/fold1", "holds the model of row Other fold 1"),
    ("evaluate: --out over a file the user wrote", text("mine.parquet", "x"), out_at(EVALUATE, "mine.parquet"),
     "mine.parquet", "exists and srdiv did not write it"),
    ("bundle: --out over a bundle changed by hand", arrays("bundle.npz", lambda a: a["labels"].fill(0)), BUNDLE,
     "bundle.npz", "was changed since srdiv wrote it"),
    ("embed: a file of the user's in its output directory", text("embed/notes.txt", "mine"),
     lambda d: ["embed", *C(d), *P(d), "--out", d / "embed"], "embed/notes.txt", "srdiv did not write this file"),
    ("embed: a hidden file of the user's in its output directory", text("embed/.notes", "mine"),
     lambda d: ["embed", *C(d), *P(d), "--out", d / "embed"], "embed/.notes", "srdiv did not write this file"),
    ("pseudo-docs: --out a copy of an output (no record) with notes", lambda d: (
        shutil.copytree(d / "pd", d / "copy"), text("copy/notes.txt", "mine")(d)),
     lambda d: ["pseudo-docs", *C(d), *P(d), "--embed-dir", d / "embed", "--out", d / "copy"], "copy/doc2vec.parquet",
     "srdiv did not write this file"),
    ("embed: --out a symbolic link to a folder of the user's", lambda d: (
        (d / "mine").mkdir(), text("mine/doc2vec.parquet", "mine")(d), (d / "link").symlink_to(d / "mine")),
     lambda d: ["embed", *C(d), *P(d), "--out", d / "link"], "mine/doc2vec.parquet", "srdiv did not write this file"),
    ("gather: --out a symbolic link", lambda d: (d / "link.parquet").symlink_to(d / "metrics.parquet"),
     out_at(GATHER, "link.parquet"), "link.parquet", "exists and srdiv did not write it"),
    # params: checked once, at load, before any work
    ("train: params not UTF-8", lambda d: (d / "overlay.yaml").write_bytes(b"seed: 1\nnote: \xff\n"),
     TRAIN("ListMLE"), "overlay.yaml:2", "not UTF-8 text"),
    ("train: params YAML syntax", text("overlay.yaml", "train: {epochs: [\n"), TRAIN("ListMLE"), "overlay.yaml:2",
     "invalid YAML"),
    ("train: params seed beyond 32 bits", text("overlay.yaml", "seed: 100000000000000000000000\n"), TRAIN("ListMLE"),
     "overlay.yaml", "'seed' must be an integer in [0, 4294967295]"),
    ("train: params unknown key", text("overlay.yaml", "train: {epoch: 3}\n"), TRAIN("ListMLE"), "overlay.yaml",
     "unknown key 'train.epoch'"),
    ("train: params value of the wrong type", text("overlay.yaml", "train: {patience: many}\n"), TRAIN("ListMLE"),
     "overlay.yaml", "'train.patience' must be an integer"),
    ("train: objective value out of range",
     text("overlay.yaml", "models: {DALETOR: {objective: {args: {temperature: 0}}}}\n"), TRAIN("DALETOR"),
     "overlay.yaml", "models.DALETOR.objective.args: temperature must be > 0"),
    ("train: tuned objective value unknown",
     text("overlay.yaml", "models: {DALETOR: {tune: {objective.args.metric: [alpha_dcg, bogus]}}}\n"),
     TRAIN("DALETOR"), "overlay.yaml", "models.DALETOR.objective.args: metric must be one of"),
    ("embed: params unknown nested key", text("overlay.yaml", "embed: {doc2vec: {vectorsize: 3}}\n"),
     lambda d: ["embed", *C(d), *P(d), "--out", d / "embed"], "overlay.yaml", "unknown key 'embed.doc2vec.vectorsize'"),
    ("relevance: params file is a directory", lambda d: ((d / "overlay.yaml").unlink(), (d / "overlay.yaml").mkdir()),
     RELEVANCE, "overlay.yaml", ""),
]


def snapshot(d: Path) -> dict:
    return {p.relative_to(d): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name, spoil, command, where, why", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_loses_nothing(workspace, tmp_path, name, spoil, command, where, why):
    d = tmp_path / "w"
    shutil.copytree(workspace, d)
    spoil(d)
    args = command(d)
    before = snapshot(d)
    code, err = cli(*args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), err[-3000:]
    assert "Traceback" not in err
    assert where in lines[0] and why in lines[0], lines[0]
    after = snapshot(d)
    assert after.keys() == before.keys(), sorted(set(map(str, after)) ^ set(map(str, before)))  # no new, no lost file
    assert [p for p in before if after[p] != before[p]] == []                                   # none changed


# ---------------------------------------------------------------------------------- several outputs, one step


def interrupt_swap(monkeypatch, targets: list[Path], after: int, check=lambda: None):
    """``os.replace`` that raises KeyboardInterrupt right after the ``after``-th of the renames that move
    ``targets`` aside or into place (before the first, for 0), and calls ``check`` after every rename."""
    import os

    real, done = os.replace, []

    def replace(src, dst):
        swap = "interrupted" not in done and (
            Path(src) in targets or (Path(dst) in targets and not str(src).endswith(".old")))
        if swap and after == 0:
            done.append("interrupted")
            raise KeyboardInterrupt
        real(src, dst)
        check()
        if swap:
            done.append("renamed")
            if len(done) == after:
                done.append("interrupted")
                raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", replace)
    return done


def hidden_temps(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob(".*.tmp*"))


@pytest.mark.parametrize("after", range(7))
def test_import_dssa_replaces_its_three_tables_together(tmp_path, monkeypatch, after):
    """An interrupt before, between or right after any of the six renames that swap the three tables
    (three aside, three in) leaves the three old ones."""
    import os

    d = tmp_path
    release(lambda f: None)(d)
    assert cli(*IMPORT(d))[0] == 0
    outs = [d / "imported" / name for name in ("embed.parquet", "pseudo.parquet", "relevance.parquet")]
    before = {p: (p.read_bytes(), os.stat(p).st_ino) for p in outs}
    lines = (d / "release/doc.emb").read_text().split("\n")
    lines[0] = "\t".join(lines[0].split("\t")[:1] + ["0.5"] * (len(lines[0].split("\t")) - 1))
    (d / "release/doc.emb").write_text("\n".join(lines))                 # a release with other vectors
    with monkeypatch.context() as patch:
        done = interrupt_swap(patch, outs, after)
        assert cli(*IMPORT(d))[0] == 130
    assert done == ["renamed"] * after + ["interrupted"]
    assert {p: (p.read_bytes(), os.stat(p).st_ino) for p in outs} == before
    assert hidden_temps(d) == []
    assert cli(*IMPORT(d))[0] == 0
    assert outs[0].read_bytes() != before[outs[0]][0] and all(os.stat(p).st_ino != before[p][1] for p in outs)
    assert hidden_temps(d) == []


@pytest.mark.parametrize("after", range(4))
def test_an_interrupted_swap_leaves_outputs_as_they_were(tmp_path, monkeypatch, after):
    """Of a directory that existed and a file that did not, an interrupt at any point of the swap leaves
    the old directory and no file; uninterrupted, both new ones."""
    from srdiv.io import atomic_set

    old_dir, new_file = tmp_path / "out", tmp_path / "deeper/new.txt"

    def make(targets, content="new"):
        with atomic_set(targets) as made:
            (made[0] / "sub").mkdir(parents=True)
            (made[0] / "sub/a.txt").write_text(content)
            if len(made) > 1:
                made[1].write_text(content)

    make([old_dir], "old")
    manifest = (tmp_path / ".srdiv-outputs.json").read_bytes()

    with monkeypatch.context() as patch:
        done = interrupt_swap(patch, [old_dir, new_file], after)
        with pytest.raises(KeyboardInterrupt):
            make([old_dir, new_file])
    assert done == ["renamed"] * after + ["interrupted"]     # 1 aside, 2 in: every gap
    assert (old_dir / "sub/a.txt").read_text() == "old" and not new_file.exists()
    assert (tmp_path / ".srdiv-outputs.json").read_bytes() == manifest      # the record put back too
    assert hidden_temps(tmp_path) == []
    make([old_dir, new_file])
    assert (old_dir / "sub/a.txt").read_text() == "new" == new_file.read_text()


def test_report_replaces_readme_tables_and_plots_together(workspace, tmp_path, monkeypatch):
    """The report's three outputs are swapped with renames: while a README exists, the tables and plots
    beside it are of its own report; an interrupt puts the old report back; metrics.parquet is not touched."""
    import os

    d = tmp_path / "w"
    shutil.copytree(workspace, d)
    res = d / "results"
    shutil.copy(d / "metrics.parquet", res / "metrics.parquet")       # the input in the results directory
    args = REPORT(d)
    args[args.index("--metrics") + 1] = res / "metrics.parquet"
    assert cli(*args)[0] == 0
    pd.read_parquet(res / "metrics.parquet").assign(value=lambda f: f["value"] / 2).to_parquet(res / "metrics.parquet")
    metrics = ((res / "metrics.parquet").read_bytes(), os.stat(res / "metrics.parquet").st_ino)
    parts = ("README.md", "tables", "plots")
    old = {name: os.stat(res / name).st_ino for name in parts}
    before = snapshot(res)

    def one_report_at_a_time():
        if (res / "README.md").exists():
            readme_is_old = os.stat(res / "README.md").st_ino == old["README.md"]
            for name in ("tables", "plots"):
                assert (os.stat(res / name).st_ino == old[name]) == readme_is_old, name

    with monkeypatch.context() as patch:
        interrupt_swap(patch, [res / name for name in parts], 5, one_report_at_a_time)   # before the README arrives
        assert cli(*args)[0] == 130
    assert snapshot(res) == before and {name: os.stat(res / name).st_ino for name in parts} == old
    with monkeypatch.context() as patch:
        interrupt_swap(patch, [], -1, one_report_at_a_time)
        assert cli(*args)[0] == 0
    assert all(os.stat(res / name).st_ino != old[name] for name in parts)
    assert (res / "tables/main.md").read_bytes() != before[Path("tables/main.md")]
    assert ((res / "metrics.parquet").read_bytes(), os.stat(res / "metrics.parquet").st_ino) == metrics
    assert hidden_temps(d) == []


def test_the_next_run_removes_a_killed_runs_temporary_files(workspace, tmp_path):
    """SIGKILL leaves ``.NAME.XXXXXXXX.tmp`` beside an output; the next write of that output removes it,
    and only srdiv's temporary files of its own outputs."""
    d = tmp_path / "w"
    shutil.copytree(workspace, d)
    stale = [d / ".bundle.npz.k1ll3d_0.tmp", d / "results/.tables.k1ll3d_1.tmp", d / "results/.README.md.k1ll3d_2.tmp"]
    stale[0].write_bytes(b"half a bundle")
    (stale[1] / "tables").mkdir(parents=True)
    (stale[1] / "tables/main.md").write_text("half a table")
    (stale[2] / "README.md.old").mkdir(parents=True)
    others = [d / ".bundle.npz.notes", d / ".other.k1ll3d_3.tmp", d / ".bundle.npz.x.k1ll3d_4.tmp",
              d / "results/.plots.tmp"]
    for path in others:
        path.write_text("not a temporary file of this command's outputs")
    assert cli(*BUNDLE(d))[0] == 0
    assert cli(*REPORT(d))[0] == 0
    assert [p for p in stale if p.exists()] == []
    assert all(p.exists() for p in others) and hidden_temps(d) == sorted(others[1:])
    with np.load(d / "bundle.npz", allow_pickle=False) as new, np.load(workspace / "bundle.npz") as old:
        assert new.files == old.files and all(np.array_equal(new[k], old[k]) for k in old.files)
    assert (d / "results/README.md").read_text().startswith("# Results: results")


# ---------------------------------------------------------------------------------- every command, every input

def EMBED(d):
    return ["embed", *C(d), *P(d), "--out", d / "embed2"]


def PSEUDO(d):
    return ["pseudo-docs", *C(d), *P(d), "--embed-dir", d / "embed", "--out", d / "pd2"]


COLL = ["coll/topics.parquet", "coll/qrels.parquet", "coll/folds.parquet"]
READS = {
    "collection subset": (SUBSET(), [*COLL, "coll/subtopics.parquet", "coll/suggestions.parquet", "coll/run.parquet",
                                     "coll/docs.parquet"]),
    "evaluate": (EVALUATE, ["models/ListMLE/fold1/run.txt", *COLL]),
    "embed": (EMBED, ["coll/docs.parquet", "overlay.yaml"]),
    "pseudo-docs": (PSEUDO, ["embed/doc2vec.model", "embed/lda.model", "coll/suggestions.parquet"]),
    "features relevance": (RELEVANCE, ["coll/docs.parquet", "coll/run.parquet", "coll/suggestions.parquet"]),
    "features diversity": (DIVERSITY, ["embed/lda.parquet", "coll/docs.parquet"]),
    "bundle": (BUNDLE, ["embed/lda.parquet", "pd/lda.parquet", "rel.parquet", "div.parquet", "coll/run.parquet"]),
    "samples": (SAMPLES, ["bundle.npz", "coll/qrels.parquet", "coll/folds.parquet"]),
    "train": (TRAIN("ListMLE"), ["bundle.npz", "coll/qrels.parquet", "coll/folds.parquet", "overlay.yaml"]),
    "rank": (RANK, ["bundle.npz", "models/ListMLE/fold1/model.pt", "coll/folds.parquet"]),
    "gather": (GATHER, ["models/ListMLE/fold1/metrics.parquet"]),
    "report": (REPORT, ["metrics.parquet", "models/ListMLE/fold1/hparams.json", "models/ListMLE/fold1/timings.json",
                        "models/ListMLE/fold1/curve.parquet"]),
}
"""Each command, and the files it reads that a user could damage."""

KEY_COLUMN = {"metrics.parquet": "qid", "curve.parquet": "epoch", "docs.parquet": "docno"}
"""The column a table's "missing column" and "wrong type" damages take (else its first)."""


def _frame_damage(kind, name):
    def change(f):
        col = KEY_COLUMN.get(name, f.columns[0])
        if kind == "missing column":
            return f.drop(columns=col)
        if kind == "extra column":
            return f.assign(extra_column=1)
        if kind == "duplicate keys":
            return pd.concat([f, f.iloc[:1]], ignore_index=True)
        if kind == "wrong type":
            return f.assign(**{col: 7 if f[col].dtype == object or pd.api.types.is_string_dtype(f[col]) else "x"})
        numbers = [c for c in f.columns if pd.api.types.is_float_dtype(f[c]) and c != "loss"]   # a diverged epoch's
        col = numbers[0] if numbers else f.columns[0]
        values = f[col].astype(object) if not numbers else f[col].copy()
        values.iloc[0] = np.nan if numbers else None
        return f.assign(**{col: values})                     # NaN: a number NaN, else a null key
    return change


def _text_damage(kind, suffix):
    def spoil(path):
        data = path.read_bytes()
        lines = data.decode().splitlines(keepends=True)
        if suffix == ".json":
            value = {"missing column": "{}", "extra column": data.decode().replace("{", '{"extra": 1,', 1),
                     "wrong type": data.decode().replace(": ", ': "x" , "was": ', 1),
                     "duplicate keys": data.decode().replace("{", "{" + data.decode().split(",")[0].strip("{ \n") + ",", 1),
                     "NaN": data.decode().replace(": ", ": NaN, \"was\": ", 1)}[kind]
            path.write_text(value)
        elif suffix == ".yaml":
            path.write_text({"missing column": "train: {epochs: }\n" + data.decode(),
                             "extra column": data.decode() + "extra_key: 1\n",
                             "wrong type": "folds: x\n" + data.decode(), "duplicate keys": data.decode() + lines[0],
                             "NaN": "seed: .nan\n" + data.decode()}[kind])
        else:                                               # a TREC run: qid Q0 docno rank score tag
            fields = lines[0].split()
            changed = {"missing column": " ".join(fields[:-1]), "extra column": " ".join(fields + ["x"]),
                       "wrong type": " ".join(fields[:3] + ["x"] + fields[4:]), "duplicate keys": lines[0].strip(),
                       "NaN": " ".join(fields[:4] + ["nan"] + fields[5:])}[kind]
            path.write_text((changed + "\n" + "".join(lines[1:])) if kind != "duplicate keys"
                            else "".join(lines) + changed + "\n")
    return spoil


def _binary_damage(kind, suffix):
    def spoil(path):
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                values = dict(z)
            first = next(k for k in values if values[k].dtype.kind == "f")
            if kind == "missing column":
                values.pop(first)
            elif kind == "extra column":
                values["extra"] = np.zeros(3)
            elif kind == "wrong type":
                values[first] = values[first].astype(str)
            elif kind == "duplicate keys":
                values[first] = np.concatenate([values[first], values[first][:1]])
            else:
                values[first] = values[first].copy()
                values[first].flat[0] = np.nan
            with open(path, "wb") as fh:
                np.savez(fh, **values)
        elif kind == "NaN" and suffix == ".pt":
            model_weights(lambda state: next(iter(state.values())).fill_(float("nan")))(path.parents[3])
        else:                                               # model.pt, a gensim model: bytes not as written
            data = path.read_bytes()
            path.write_bytes({"missing column": b"", "extra column": data + b"\x00extra",
                              "wrong type": b"\x80\x04K\x07.", "duplicate keys": data + data,
                              "NaN": data[: len(data) // 3]}[kind])
    return spoil


DAMAGES = ["truncated", "missing column", "extra column", "wrong type", "duplicate keys", "NaN"]
ACCEPTABLE = {"extra column"}
"""Damage a command may take in its stride (a column or key it does not read); it still never shows a traceback."""


def damage(rel, kind):
    """Spoil the workspace file ``rel`` with one damage of ``kind``."""
    def spoil(d):
        path = d / rel
        if kind == "truncated":
            data = path.read_bytes()
            cut = len(data) // 2
            if path.suffix in (".txt", ".yaml"):               # in the middle of a line's first field
                cut = data.index(b"\n", cut) + 2
            path.write_bytes(data[:cut])
        elif path.suffix == ".parquet":
            table(rel, _frame_damage(kind, path.name))(d)
        elif path.suffix in (".json", ".yaml", ".txt"):
            _text_damage(kind, path.suffix)(path)
        else:
            _binary_damage(kind, path.suffix)(path)
    return spoil


WALK = [(f"{name}: {rel} {kind}", name, rel, kind) for name, (_, reads) in READS.items() for rel in reads
        for kind in DAMAGES]


@pytest.mark.slow          # about 250 cases, two minutes on two cores: `make test-slow` (CI runs both targets)
@pytest.mark.parametrize("case, name, rel, kind", WALK, ids=[w[0] for w in WALK])
def test_every_command_over_damaged_inputs(workspace, tmp_path, case, name, rel, kind):
    """Each command over each input it reads, damaged each way a file can be: one line ``error: ...`` naming
    the file, exit status 2, no traceback and nothing written (or, for a column it does not read, success)."""
    d = tmp_path / "w"
    shutil.copytree(workspace, d)
    damage(rel, kind)(d)
    args = READS[name][0](d)
    before = snapshot(d)
    code, err = cli(*args)
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("note:", "warning:"))]
    assert "Traceback" not in err, err[-3000:]
    if code == 0 and kind in ACCEPTABLE:
        return
    assert code == 2, err[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), err[-3000:]
    assert Path(rel).name in lines[0] or Path(rel).parent.name in lines[0], lines[0]
    assert snapshot(d) == before


@pytest.mark.slow
@pytest.mark.parametrize("name", list(READS))
def test_every_command_over_a_non_utf8_path(workspace, tmp_path, name):
    """Every path argument renamed to a name with a byte that is not UTF-8: the command works, or ends
    in one line (the byte shown as an escape), never a traceback."""
    import os

    d = tmp_path / "w"
    shutil.copytree(workspace, d)
    args = READS[name][0](d)
    odd = []
    for i, arg in enumerate(args):
        if isinstance(arg, Path) and arg.exists() and arg.parent == d and arg != d / "coll":
            target = d / (arg.name + os.fsdecode(b"\xff"))
            shutil.move(arg, target)
            args[i] = target
            odd.append(target)
    code, err = cli(*args)
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("note:", "warning:"))]
    assert "Traceback" not in err, err[-3000:]
    assert code == 0 or (code == 2 and len(lines) == 1 and lines[0].startswith("error: ")), err[-3000:]


def test_a_file_git_changed_is_replaced_a_hand_change_is_not(tmp_path):
    """An output srdiv wrote and git then changed (a pull or a merge, committed) may be written again: git holds
    what it replaces. The same change made by hand and not committed is refused, and the file kept."""
    import subprocess

    from srdiv.io import InputError, write_text

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       check=True, capture_output=True)

    git("init", "-q")
    out = tmp_path / "dvc.yaml"
    write_text("stages: {}\n", out)
    git("add", "dvc.yaml")
    git("commit", "-qm", "srdiv wrote it")
    out.write_text("stages: {pulled: {}}\n")
    git("commit", "-qam", "a pull changed it")
    write_text("stages: {again: {}}\n", out)                # git holds the replaced content
    assert out.read_text() == "stages: {again: {}}\n"
    git("commit", "-qam", "written again")
    out.write_text("stages: {mine: {}}\n")                  # by hand, not committed
    with pytest.raises(InputError, match="was changed since srdiv wrote it"):
        write_text("stages: {}\n", out)
    assert out.read_text() == "stages: {mine: {}}\n"


def test_a_folder_git_changed_is_replaced_a_hand_change_is_not(tmp_path):
    """The same for an output directory (a results folder): srdiv wrote it, a pull changed a file in it, and
    the report may write it again; a file in it changed by hand and not committed is refused, and kept."""
    import subprocess

    from srdiv.io import InputError, atomic_dir

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       check=True, capture_output=True)

    def write(text):
        with atomic_dir(out, "tables") as tmp:
            (tmp / "tables").mkdir()
            (tmp / "tables" / "main.md").write_text(text)

    git("init", "-q")
    out = tmp_path / "results"
    write("srdiv wrote it\n")
    git("add", "results/tables/main.md")
    git("commit", "-qm", "srdiv wrote it")
    (out / "tables" / "main.md").write_text("a pull changed it\n")
    git("commit", "-qam", "a pull changed it")
    write("written again\n")                               # git holds the replaced content
    assert (out / "tables" / "main.md").read_text() == "written again\n"
    git("commit", "-qam", "written again")
    (out / "tables" / "main.md").write_text("mine\n")       # by hand, not committed
    with pytest.raises(InputError, match="tables/main.md: was changed since srdiv wrote it"):
        write("srdiv wrote it\n")
    assert (out / "tables" / "main.md").read_text() == "mine\n"
