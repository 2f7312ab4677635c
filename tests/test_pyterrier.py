"""srdiv.pyterrier: each transformer ranks as the pipeline does, bad frames are one error, pt.Experiment scores as
``srdiv evaluate``. Skipped without PyTerrier (the ``pyterrier`` extra)."""

import warnings

import numpy as np
import pandas as pd
import pytest

pt = pytest.importorskip("pyterrier")

from helpers import ROOT  # noqa: E402
from srdiv import pyterrier as spt  # noqa: E402
from srdiv.collection.schema import load_collection  # noqa: E402
from srdiv.experiment import model_spec  # noqa: E402
from srdiv.features.assemble import build_bundle  # noqa: E402
from srdiv.features.diversity import diversity_features  # noqa: E402
from srdiv.features.relevance import relevance_features  # noqa: E402
from srdiv.index.sparse import FieldIndex  # noqa: E402
from srdiv.io import InputError  # noqa: E402
from srdiv.metrics import evaluate_run, read_run  # noqa: E402
from srdiv.text.documents import join_columns  # noqa: E402
from srdiv.text.pseudo_docs import query_strings  # noqa: E402
from srdiv.train.rank import rank_job  # noqa: E402
from srdiv.train.trained import Trained  # noqa: E402
from srdiv.train.tuning import run_job  # noqa: E402
from tiny_text_collection import write_tiny  # noqa: E402

RANK_DOCS = 6
PARAMS = {
    "seed": 7,
    "train": {"train_docs": RANK_DOCS, "rank_docs": RANK_DOCS, "epochs": 2, "patience": 5, "batch_size": 4,
              "device": "cpu"},
    "models": {
        "ListMLE": {"model": {"name": "listmle"}, "objective": {"name": "mle"},
                    "optim": {"name": "adam", "args": {"lr": 0.1}}},
        "MMR": {"model": {"name": "mmr", "args": {"prior": "ListMLE", "prob": "minmax"}},
                "tune": {"model.args.lam": [0.3, 0.7]}},
        "xQuAD": {"model": {"name": "xquad", "args": {"prior": "ListMLE", "prob": "softmax"}},
                  "tune": {"model.args.lam": [0.2, 0.9]}},
        "PM2": {"model": {"name": "pm2", "args": {"prior": "ListMLE", "prob": "softmax"}},
                "tune": {"model.args.lam": [0.2, 0.9]}},
        "HxQuAD": {"model": {"name": "hxquad", "args": {"prior": "ListMLE", "prob": "minmax"}},
                   "tune": {"model.args.lam": [0.5, 1.0], "model.args.alpha": [0.0, 0.5]}},
        "HPM2": {"model": {"name": "hpm2", "args": {"prior": "ListMLE", "prob": "softmax"}},
                 "tune": {"model.args.lam": [0.5, 1.0], "model.args.alpha": [0.0, 0.5]}},
    },
}
DIVERSIFIERS = {"xQuAD": spt.XQuAD, "PM2": spt.PM2, "HxQuAD": spt.HxQuAD, "HPM2": spt.HPM2}


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """The tiny text collection through the pipeline's stages: features, bundle, every row trained and ranked
    on both folds (``<models>/<Row>/fold<k>/`` with ``model.pt`` and ``run.txt``, as ``make run`` leaves them)."""
    root = tmp_path_factory.mktemp("pipeline")
    coll = write_tiny(root / "collection")
    rng = np.random.default_rng(0)
    strings = query_strings(coll)
    doc_vectors = (coll.docs[["docno"]], rng.random((len(coll.docs), 3)).astype(np.float32))
    pseudo = (strings[["qid", "sugg_id"]], rng.random((len(strings), 3)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        relevance = relevance_features(coll, coll.docs, strings, {"rank_docs": RANK_DOCS, "k1": 1.2, "b": 0.75,
                                                                  "mu": 2000.0})
        diversity = diversity_features(coll, None, doc_vectors, RANK_DOCS)
    # a little noise keeps the candidates' scores apart: an exact tie is broken by float rounding, which
    # differs between scoring a list at once (the bundle) and pair by pair (a scorer)
    names = relevance.columns[3:]
    relevance[names] += 1e-3 * rng.random((len(relevance), len(names)))
    bundle = build_bundle(coll, doc_vectors, pseudo, relevance, diversity, rank_docs=RANK_DOCS)
    models = root / "models"
    for row in PARAMS["models"]:
        for fold in (1, 2):
            out = models / row / f"fold{fold}"
            prior = Trained.load(models / "ListMLE" / f"fold{fold}") if row != "ListMLE" else None
            run_job(model_spec(PARAMS, row), bundle, coll, fold, out, seed=7, prior=prior, progress=False)
            rank_job(Trained.load(out), bundle, coll, fold, out)
    run = coll.run[coll.run["rank"] <= RANK_DOCS].merge(coll.topics[["qid", "query"]])
    results = run.assign(rank=run["rank"] - 1)[["qid", "query", "docno", "score", "rank"]]
    return {"coll": coll, "dir": root / "collection", "models": models, "bundle": bundle, "relevance": relevance,
            "doc_vectors": doc_vectors, "results": results}


def pipeline_order(pipeline, row, fold=None):
    """``{qid: docnos}`` of the row's test runs (of one fold, or all)."""
    run = pd.concat([read_run(pipeline["models"] / row / f"fold{k}" / "run.txt") for k in ([fold] if fold else [1, 2])])
    return run.groupby("qid")["docno"].agg(list).to_dict()


def order(frame):
    frame = frame.sort_values(["qid", "rank"])
    return frame.groupby("qid")["docno"].agg(list).to_dict()


def fold_results(pipeline, fold):
    folds = pipeline["coll"].folds
    return pipeline["results"][pipeline["results"]["qid"].isin(folds.loc[folds["fold"] == fold, "qid"])]


@pytest.mark.parametrize("row", list(DIVERSIFIERS))
def test_a_diversifier_over_the_trained_prior_ranks_as_the_pipeline_row(pipeline, row):
    scorer = spt.Relevance(pipeline["models"] / "ListMLE", pipeline["relevance"], pipeline["dir"])
    for fold in (1, 2):
        args = Trained.load(pipeline["models"] / row / f"fold{fold}").spec.model.args
        chosen = {k: v for k, v in args.items() if k in ("lam", "alpha", "prob")}
        out = DIVERSIFIERS[row](scorer, pipeline["dir"], **chosen).transform(fold_results(pipeline, fold))
        assert order(out) == pipeline_order(pipeline, row, fold)
        assert list(out.columns[:5]) == ["qid", "query", "docno", "score", "rank"]
        assert (out.groupby("qid")["rank"].min() == 0).all()


def test_mmr_over_document_vectors_ranks_as_the_pipeline_row(pipeline):
    scorer = spt.Relevance(pipeline["models"] / "ListMLE", pipeline["relevance"], pipeline["dir"])
    keys, matrix = pipeline["doc_vectors"]
    column = pipeline["results"].merge(keys.assign(doc_vec=list(matrix)))
    for fold in (1, 2):
        lam = Trained.load(pipeline["models"] / "MMR" / f"fold{fold}").spec.model.args["lam"]
        from_table = spt.MMR(scorer, vectors=pipeline["doc_vectors"], lam=lam).transform(fold_results(pipeline, fold))
        from_column = spt.MMR(scorer, lam=lam).transform(column[column["qid"].isin(from_table["qid"])])
        assert order(from_table) == order(from_column) == pipeline_order(pipeline, "MMR", fold)


@pytest.mark.parametrize("row", ["ListMLE", "xQuAD", "HPM2"])
def test_a_trained_row_ranks_as_srdiv_rank(pipeline, row):
    model = spt.TrainedModel(pipeline["models"] / row, pipeline["bundle"], pipeline["dir"])
    assert order(model.transform(pipeline["results"])) == pipeline_order(pipeline, row)
    first = pt.Transformer.from_df(pipeline["results"])
    out = (first >> model).transform(spt.topics(pipeline["dir"]))
    assert order(out) == pipeline_order(pipeline, row)


def test_a_trained_row_ranks_a_subset_of_its_candidates(pipeline):
    model = spt.TrainedModel(pipeline["models"] / "xQuAD", pipeline["bundle"], pipeline["dir"])
    results = pipeline["results"]
    some = results[results["rank"] % 2 == 0]
    expected = {q: [d for d in docs if d in set(some["docno"])] for q, docs in pipeline_order(pipeline, "xQuAD").items()}
    assert order(model.transform(some)) == expected
    with pytest.raises(InputError, match="not among the candidates"):
        model.transform(pd.concat([some, results.iloc[:1].assign(docno="elsewhere")]))


def test_the_retriever_is_srdivs_index_and_scores_given_documents(pipeline):
    docs = pipeline["coll"].docs
    retriever = spt.Retriever(docs, fields=("title", "body"), model="lmir", k=4)
    topics = spt.topics(pipeline["dir"])
    out = retriever.transform(topics)
    top, scores = FieldIndex.from_texts(join_columns(docs, ("title", "body"))).top_k(topics["query"].tolist(), 4,
                                                                                   "lmir")
    assert out["docno"].tolist() == docs["docno"].to_numpy()[top.ravel()].tolist()
    np.testing.assert_allclose(out["score"], scores.ravel())
    rescored = retriever.transform(out.drop(columns=["score", "rank"]).iloc[::-1])
    np.testing.assert_allclose(rescored.sort_values(["qid", "rank"])["score"], scores.ravel())
    excluded = spt.Retriever(docs, ("title", "body"), "lmir", k=4, exclude=out[out["rank"] == 0][["qid", "docno"]])
    assert order(excluded.transform(topics)) == {q: d[1:] + [docs["docno"].to_numpy()[top_5]]
                                                 for (q, d), top_5 in zip(order(out).items(), _fifth(docs, topics))}


def _fifth(docs, topics):
    top, _ = FieldIndex.from_texts(join_columns(docs, ("title", "body"))).top_k(topics["query"].tolist(), 5, "lmir")
    return top[:, 4]


def test_the_retriever_as_scorer_of_a_diversifier(pipeline):
    scorer = spt.Retriever(pipeline["coll"].docs, fields=("title", "body", "anchor"), model="bm25")
    out = (pt.Transformer.from_df(pipeline["results"]) >> spt.XQuAD(scorer, pipeline["dir"], lam=0.9)).transform(
        spt.topics(pipeline["dir"]))
    assert order(out).keys() == {"1", "2"}
    assert {q: sorted(d) for q, d in order(out).items()} == {q: sorted(d) for q, d in order(pipeline["results"]).items()}


def test_frames_missing_columns_are_one_input_error(pipeline):
    scorer = spt.Relevance(pipeline["models"] / "ListMLE", pipeline["relevance"], pipeline["dir"])
    results = pipeline["results"]
    with pytest.raises(InputError, match=r"XQuAD input: frame lacks columns \['query'\]"):
        spt.XQuAD(scorer, pipeline["dir"]).transform(results.drop(columns="query"))
    with pytest.raises(InputError, match=r"suggestions input: frame lacks columns \['level'\]"):
        spt.PM2(scorer, pd.DataFrame({"qid": ["1"], "subtopic": ["1"], "query": ["bass fish"]}))
    with pytest.raises(InputError, match=r"level-2 suggestions input: frame lacks columns \['parent'\]"):
        spt.HxQuAD(scorer, pd.DataFrame({"qid": ["1"], "subtopic": ["1.1"], "level": [2], "query": ["bass fish"]}))
    with pytest.raises(InputError, match=r"MMR input: frame lacks columns \['doc_vec'\]"):
        spt.MMR(scorer).transform(results)
    with pytest.raises(InputError, match=r"TrainedModel input: frame lacks columns \['docno'\]"):
        spt.TrainedModel(pipeline["models"] / "PM2", pipeline["bundle"], pipeline["dir"]).transform(
            spt.topics(pipeline["dir"]))
    with pytest.raises(InputError, match=r"Retriever input: frame lacks columns \['query'\]"):
        spt.Retriever(pipeline["coll"].docs).transform(results[["qid"]])
    with pytest.raises(InputError, match="scorer output: frame lacks columns"):
        spt.XQuAD(pt.apply.generic(lambda df: df[["qid", "docno"]]), pipeline["dir"]).transform(results)


def test_a_suggestion_frame_gives_the_collections_ranking(pipeline):
    scorer = spt.Relevance(pipeline["models"] / "ListMLE", pipeline["relevance"], pipeline["dir"])
    frame = pipeline["coll"].suggestions.rename(columns={"sugg_id": "subtopic", "text": "query"})
    frame = frame[["qid", "subtopic", "level", "query", "parent"]]
    results = pipeline["results"]
    assert order(spt.HPM2(scorer, frame, lam=0.5).transform(results)) == order(
        spt.HPM2(scorer, pipeline["dir"], lam=0.5).transform(results))


def test_pt_experiment_scores_as_srdiv_evaluate():
    """ir_measures (pyndeval) through pt.Experiment and srdiv's official measures agree on the committed
    collection's initial run, every measure, every query, when the scores give the run's order (srdiv's
    transformers give distinct scores). Tied scores: ir_measures orders them by docno ascending, ndeval's
    traditional order (srdiv's, for a run without ranks) descending, and a TREC run file by its ranks."""
    coll = load_collection(ROOT / "data" / "collections" / "wordnet-div")
    run = coll.run[coll.run["rank"] <= 50].merge(coll.topics[["qid", "query"]])

    def experiment(run):
        table = pt.Experiment([pt.Transformer.from_df(run)], spt.topics(coll), spt.qrels(coll), spt.ALL_MEASURES,
                              names=["Initial"], perquery=True)
        return table.merge(evaluate_run(run, coll.qrels), on=["qid", "measure"], suffixes=("_pt", ""))

    both = experiment(run.assign(score=-run["rank"].astype(float)))
    assert len(both) == len(coll.topics) * len(spt.ALL_MEASURES) and len(spt.ALL_MEASURES) == 17
    np.testing.assert_allclose(both["value_pt"], both["value"], atol=1e-9)
    assert both.loc[both["measure"] == "alpha_nDCG@20", "value"].mean() == pytest.approx(0.5804, abs=5e-5)
    ties = run.sort_values(["qid", "score", "docno"], ascending=[True, False, True])
    both = experiment(ties.assign(rank=ties.groupby("qid").cumcount() + 1))
    np.testing.assert_allclose(both["value_pt"], both["value"], atol=1e-9)


def test_the_marked_table_writes_means_and_holm_marks():
    """The five measures of the main table; ▲/▼ from pt.Experiment's own (Holm-corrected) test against the baseline."""
    from srdiv.collection.wordnet import own_entry_pairs

    coll = load_collection(ROOT / "data" / "collections" / "wordnet-div", with_docs=True)
    assert [str(m) for m in spt.MEASURES] == ["ERR_IA@20", "alpha_nDCG@20", "NRBP", "P_IA@20", "StRecall@20"]
    run = coll.run[coll.run["rank"] <= 50].merge(coll.topics[["qid", "query"]])
    worse = run.assign(score=run["rank"].astype(float))          # the initial run reversed
    same = run.assign(score=-run["rank"].astype(float) + 0.5)    # the same order
    table = pt.Experiment([pt.Transformer.from_df(run.assign(score=-run["rank"].astype(float))),
                           pt.Transformer.from_df(worse), pt.Transformer.from_df(same)],
                          spt.topics(coll), spt.qrels(coll), spt.MEASURES, names=["initial", "reversed", "same"],
                          baseline=0, correction="holm")
    marked = spt.marked_table(table).set_index("name")
    assert list(marked.columns) == ["alpha_nDCG@20", "ERR_IA@20", "NRBP", "P_IA@20", "StRecall@20"]
    assert marked.loc["initial", "alpha_nDCG@20"] == "0.580"
    assert marked.loc["reversed", "alpha_nDCG@20"].endswith("▼") and not marked.loc["same"].str.contains("▲|▼").any()
    plain = spt.marked_table(pt.Experiment([pt.Transformer.from_df(worse)], spt.topics(coll), spt.qrels(coll),
                                           spt.MEASURES, names=["reversed"]))
    assert not plain.drop(columns="name").stack().str.contains("▲|▼").any()
    # the pairs the initial run leaves out (the data card's step 4): no run document is one of them
    left_out = own_entry_pairs(coll)
    assert len(left_out) >= len(coll.topics) and left_out.merge(coll.run, on=["qid", "docno"]).empty


def test_the_initial_run_is_the_collections_run_for_the_topics_given(pipeline):
    """Ranks from 0 in the run's order, the run's scores, the topics' order and columns; ``% k`` keeps the top k
    by rank; a topic the run lacks is one error."""
    initial = spt.InitialRun(pipeline["dir"])
    topics = spt.topics(pipeline["dir"]).iloc[::-1]
    out = (initial % RANK_DOCS).transform(topics)
    expected = pipeline["results"].set_index("qid").loc[topics["qid"]].reset_index()
    pd.testing.assert_frame_equal(out, expected[["qid", "query", "docno", "score", "rank"]], check_dtype=False)
    whole = initial.transform(topics[["qid"]])
    assert len(whole) == len(pipeline["coll"].run) and (whole.groupby("qid")["rank"].min() == 0).all()
    assert list(whole.columns) == ["qid", "query", "docno", "score", "rank"]          # the query looked up
    with pytest.raises(InputError, match="InitialRun: the run of .* has no documents for query 'nowhere'"):
        initial.transform(pd.DataFrame({"qid": ["nowhere"], "query": ["x"]}))
    with pytest.raises(InputError, match=r"InitialRun input: frame lacks columns \['qid'\]"):
        initial.transform(pd.DataFrame({"query": ["x"]}))


def test_the_initial_run_feeds_a_trained_row_as_srdiv_rank(pipeline):
    model = spt.TrainedModel(pipeline["models"] / "xQuAD", pipeline["bundle"], pipeline["dir"])
    out = (spt.InitialRun(pipeline["dir"]) % RANK_DOCS >> model).transform(spt.topics(pipeline["dir"]))
    assert order(out) == pipeline_order(pipeline, "xQuAD")


def test_every_transformer_has_a_readable_name_and_pt_experiment_uses_it(pipeline):
    d, models = pipeline["dir"], pipeline["models"]
    scorer = spt.Relevance(models / "ListMLE", pipeline["relevance"], d)
    retriever = spt.Retriever(pipeline["coll"].docs, fields=("title", "body"), model="lmir", k=4, mu=500.0)
    names = [
        (spt.InitialRun(ROOT / "data" / "collections" / "wordnet-div"), "InitialRun(wordnet-div)"),
        (spt.InitialRun(load_collection(ROOT / "data" / "collections" / "debian-facets")), "InitialRun(debian-facets)"),
        (retriever, "Retriever(lmir, title+body, k=4, mu=500.0)"),
        (spt.Retriever(pipeline["coll"].docs, exclude=pipeline["results"].iloc[:3]),
         "Retriever(bm25, title+body, k=50, exclude=3 pairs)"),
        (scorer, "Relevance(ListMLE, folds 1-2)"),
        (spt.XQuAD(scorer, d, lam=0.5), "XQuAD(lam=0.5)"),
        (spt.PM2(scorer, d, lam=0.2, prob="minmax"), "PM2(lam=0.2, prob=minmax)"),
        (spt.HxQuAD(scorer, d, lam=1.0, alpha=0.5), "HxQuAD(lam=1.0, alpha=0.5)"),
        (spt.HPM2(scorer, d, lam=0.5), "HPM2(lam=0.5)"),
        (spt.MMR(scorer, vectors=pipeline["doc_vectors"], lam=0.3), "MMR(lam=0.3)"),
        (spt.MMR(scorer, lam=0.3, prob="softmax"), "MMR(lam=0.3, prob=softmax)"),
        (spt.TrainedModel(models / "xQuAD", pipeline["bundle"], d), "TrainedModel(xQuAD, folds 1-2)"),
        (spt.TrainedModel(models / "PM2" / "fold2", pipeline["bundle"]), "TrainedModel(PM2, fold 2)"),
    ]
    assert [(str(t), repr(t)) for t, _ in names] == [(name, name) for _, name in names]
    initial = spt.InitialRun(d) % RANK_DOCS
    model = spt.TrainedModel(models / "xQuAD", pipeline["bundle"], d)
    table = pt.Experiment([initial, initial >> model], spt.topics(d), spt.qrels(d), spt.MEASURES)
    assert table["name"].tolist() == [f"(InitialRun({d.parent.name}) >> RankCutoff({RANK_DOCS}))",
                                      f"(InitialRun({d.parent.name}) >> RankCutoff({RANK_DOCS}) >> "
                                      "TrainedModel(xQuAD, folds 1-2))"]


def test_a_trained_model_whose_model_is_not_registered_fails_when_made(pipeline, monkeypatch):
    from srdiv.registry import MODELS

    monkeypatch.delitem(MODELS._items, "listmle")     # as in a process that never imported the row's module
    for make in (lambda: spt.TrainedModel(pipeline["models"] / "ListMLE", pipeline["bundle"], pipeline["dir"]),
                 lambda: spt.TrainedModel(pipeline["models"] / "xQuAD", pipeline["bundle"], pipeline["dir"]),  # prior
                 lambda: spt.Relevance(pipeline["models"] / "ListMLE", pipeline["relevance"], pipeline["dir"])):
        with pytest.raises(InputError, match=r"fold1/model.pt: row ListMLE's model 'listmle' is not registered in this "
                                             r"process: import the module that registers it first.*import_components"):
            make()


def test_the_docs_own_model_snippet_runs_over_rows_trained_here(pipeline, tmp_path):
    """docs/pyterrier.md's own-model snippet, unchanged, where a smoke run with the template model would leave its
    files (``work/wordnet-div-smoke/``: the collection, the bundle, the xQuAD and LinearXQuAD rows): here the
    tiny collection (its run cut to the bundle's candidates) and rows trained on it, LinearXQuAD among them. Its rows carry the transformers' names."""
    import dataclasses
    import re
    import shutil
    import subprocess
    import sys

    from srdiv.collection.schema import write_collection
    from srdiv.registry import import_components

    page = (ROOT / "docs" / "pyterrier.md").read_text()
    code = next(m[1] for m in re.finditer(r"^```python\n(.*?)^```$", page, re.S | re.M) if "LinearXQuAD" in m[1])
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "linear_xquad.py", tmp_path / "examples")
    work = tmp_path / "work" / "wordnet-div-smoke"
    (work / "models").mkdir(parents=True)
    coll = pipeline["coll"]        # the run cut to the candidates the bundle has, as a smoke run's top 50
    write_collection(dataclasses.replace(coll, run=coll.run[coll.run["rank"] <= RANK_DOCS]), work / "collection")
    (work / "models" / "xQuAD").symlink_to(pipeline["models"] / "xQuAD")
    pipeline["bundle"].save(work / "bundle" / "doc2vec.npz")
    import_components([str(ROOT / "examples" / "linear_xquad.py")], "test")
    params = {**PARAMS, "models": {"LinearXQuAD": {"model": {"name": "linear-xquad", "args": {"lam": 0.5}},
                                                   "objective": {"name": "mle"},
                                                   "optim": {"name": "adam", "args": {"lr": 0.1}}}}}
    for fold in (1, 2):
        run_job(model_spec(params, "LinearXQuAD"), pipeline["bundle"], pipeline["coll"], fold,
                work / "models" / "LinearXQuAD" / f"fold{fold}", seed=7, progress=False)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    first = "(InitialRun(wordnet-div-smoke) >> RankCutoff(50)"
    rows = [line.strip() for line in done.stdout.splitlines()[1:]]
    assert [row.split(")", 2)[:2] for row in rows] == [["(InitialRun(wordnet-div-smoke", " >> RankCutoff(50"]] * 3
    for name in (f"{first})", f"{first} >> TrainedModel(xQuAD, folds 1-2))",
                 f"{first} >> TrainedModel(LinearXQuAD, folds 1-2))"):
        assert sum(row.startswith(name + " ") for row in rows) == 1, (name, done.stdout)
