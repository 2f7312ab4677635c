"""Official diversity metrics: hand-worked cases, the greedy ideal, and equality with ndeval (pyndeval)."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from srdiv.metrics import (
    MEASURES,
    DiversityEvaluator,
    alpha_dcg,
    alpha_dcg_gains,
    alpha_ndcg_candidates,
    err_ia,
    evaluate_run,
    ideal_ranking,
    novelty_gains,
    rank_labels,
    s_recall,
)
from srdiv.metrics.diversity import CUTOFFS, greedy_ideal
from srdiv.metrics.official import IdealValues, ideal_depth
from srdiv.metrics.evaluate import qrels_labels
from srdiv.metrics.runs import order_run

pyndeval = pytest.importorskip("pyndeval")

NDEVAL_NAMES = {"alpha_nDCG": "alpha-nDCG", "ERR_IA": "ERR-IA", "nERR_IA": "nERR-IA", "P_IA": "P-IA",
                "StRecall": "strec", "NRBP": "NRBP", "nNRBP": "nNRBP"}


def ndeval_name(measure: str) -> str:
    base, _, k = measure.partition("@")
    return NDEVAL_NAMES[base] + (f"@{k}" if k else "")


def ndeval_evaluator(qrels: pd.DataFrame, measures=MEASURES, beta=0.5):
    """pyndeval's evaluator of ``qrels``: most of an oracle call's time, so a test of many runs builds it once."""
    return pyndeval.RelevanceEvaluator(
        [pyndeval.SubtopicQrel(q, s, d, int(g)) for q, s, d, g in
         qrels[["qid", "sid", "docno", "grade"]].itertuples(index=False)],
        [ndeval_name(m) for m in measures], beta=beta)


def ndeval(run: pd.DataFrame, qrels, measures=MEASURES, beta=0.5) -> pd.DataFrame:
    """The oracle: pyndeval on the run in our order (scores = -rank, so no ties to break differently);
    ``qrels`` a frame, or its :func:`ndeval_evaluator` for these ``measures`` and ``beta``."""
    ranked = order_run(run)
    evaluator = qrels if isinstance(qrels, pyndeval.RelevanceEvaluator) else ndeval_evaluator(qrels, measures, beta)
    scored = [pyndeval.ScoredDoc(q, d, -float(r)) for q, d, r in
              ranked.sort_values(["qid", "rank"])[["qid", "docno", "rank"]].itertuples(index=False)]
    return pd.DataFrame([(q, m, v[ndeval_name(m)]) for q, v in evaluator.evaluate(scored).items()
                         for m in measures], columns=["qid", "measure", "value"])


def assert_equal_to_ndeval(ours: pd.DataFrame, oracle: pd.DataFrame) -> None:
    """Per topic and measure within 1e-6 (ndeval's nNRBP is 0/0 = NaN for a topic with no relevant document; ours 0)."""
    both = ours.merge(oracle.fillna({"value": 0.0}), on=["qid", "measure"], suffixes=("", "_ndeval"))
    assert len(both) == len(oracle) > 0
    worst = (both["value"] - both["value_ndeval"]).abs().groupby(both["measure"]).max()
    assert (worst < 1e-6).all(), worst[worst >= 1e-6]


def qrels_frame(rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["qid", "sid", "docno", "grade"])
    frame["grade"] = frame["grade"].clip(lower=0)
    return frame.assign(rel=(frame["grade"] > 0).astype(int))


# ---------------------------------------------------------------- hand-worked


def test_alpha_dcg_tf_ranking_example():
    # TF-Ranking's AlphaDCGMetric docstring: labels [[0,1],[1,0],[1,1]], scores [3,1,2], alpha 0.5.
    labels = np.array([[0, 1], [1, 0], [1, 1]])
    ranked = labels[np.argsort([-3, -1, -2])][None]
    # 1/log2(2) + (1 + 0.5)/log2(3) + 0.5/log2(4): ndeval's discount log(2)/log(1 + r)
    assert alpha_dcg(ranked)[0] == pytest.approx(2.1963947, abs=1e-6)
    assert alpha_dcg(ranked)[0] == pytest.approx(1 + 1.5 / np.log2(3) + 0.5 / 2, abs=1e-12)
    assert np.allclose(np.cumsum(alpha_dcg_gains(ranked), axis=1)[0], [alpha_dcg(ranked, k=k)[0] for k in (1, 2, 3)])


HAND_QRELS = qrels_frame([
    ("7", "1", "d1", 1), ("7", "1", "d2", 2), ("7", "2", "d2", 1), ("7", "2", "d3", 1),
    ("7", "1", "d4", 0), ("7", "2", "d4", -2), ("7", "3", "d5", 0),  # d4 judged non-relevant, subtopic 3 never relevant
])
HAND_RUN = pd.DataFrame({"qid": "7", "docno": ["d4", "d1", "d2", "d9", "d3"], "rank": [1, 2, 3, 4, 5]})


def test_hand_worked_topic():
    # Run labels (s1, s2): d4 00, d1 10, d2 11, d9 (unjudged) 00, d3 01 -> gains G = 0, 1, 1.5, 0, 0.5.
    # Ideal: d2 (gain 2), then d1 and d3 tie at 0.5 -> greatest docno d3, then d1: gains 2, 0.5, 0.5.
    # Two intents (subtopic 3 has no relevant document, so it does not count).
    got = evaluate_run(HAND_RUN, HAND_QRELS).set_index("measure")["value"]
    dcg5 = 1 / np.log2(3) + 1.5 / np.log2(4) + 0.5 / np.log2(6)
    ideal5 = 2 + 0.5 / np.log2(3) + 0.5 / np.log2(4)
    err5 = 1 / 2 + 1.5 / 3 + 0.5 / 5
    expected = {
        "alpha_nDCG@5": dcg5 / ideal5,
        "ERR_IA@5": err5 / (2 * (1 + 0.5 / 2 + 0.25 / 3 + 0.125 / 4 + 0.0625 / 5)),
        "nERR_IA@5": err5 / (2 + 0.5 / 2 + 0.5 / 3),
        "NRBP": (1 - 0.5 * 0.5) / 2 * (1 * 0.5 + 1.5 * 0.25 + 0.5 * 0.0625),
        "nNRBP": (1 * 0.5 + 1.5 * 0.25 + 0.5 * 0.0625) / (2 + 0.5 * 0.5 + 0.5 * 0.25),
        "P_IA@5": 4 / (5 * 2),
        "P_IA@10": 4 / (10 * 2),
        "StRecall@5": 1.0,
    }
    for measure, value in expected.items():
        assert got[measure] == pytest.approx(value, abs=1e-12), measure
    assert_equal_to_ndeval(evaluate_run(HAND_RUN, HAND_QRELS), ndeval(HAND_RUN, HAND_QRELS))


def test_short_prefixes_and_list_level_functions():
    ranked = np.array([[[0, 0], [1, 0], [1, 1], [0, 0], [0, 1]]])
    assert s_recall(ranked, 2)[0] == 0.5 and s_recall(ranked, 3)[0] == 1.0
    assert s_recall(ranked, 2, n_subtopics=np.array([4.0]))[0] == 0.25
    # ERR-IA@3 = (1/2 + 1.5/3) / (2 * (1 + 0.5/2 + 0.25/3))
    assert err_ia(ranked, 3)[0] == pytest.approx(1.0 / (2 * (1 + 0.25 + 0.25 / 3)))
    assert np.all(err_ia(np.zeros((2, 4, 3)), 3) == 0)  # no relevant document: 0, not NaN


def test_ideal_tie_break_follows_ndeval_and_greedy_is_not_optimal():
    # a={2,4}, b={1,3}, c={3,4} all gain 2 at rank 1. ndeval breaks the tie to the greatest
    # docno (c); then a or b gain only 1.5, whereas a then b would gain 2 + 2.
    qrels = qrels_frame([("1", s, d, 1) for d, subs in {"a": "24", "b": "13", "c": "34"}.items() for s in subs])
    run = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c"], "rank": [1, 2, 3]})
    got = evaluate_run(run, qrels, ["alpha_nDCG@2"])["value"].iloc[0]
    assert got == pytest.approx((2 + 2 / np.log2(3)) / (2 + 1.5 / np.log2(3)), abs=1e-12)
    assert got > 1  # ndeval's greedy ideal is not the optimum, so alpha-nDCG can exceed 1
    assert_equal_to_ndeval(evaluate_run(run, qrels), ndeval(run, qrels))


def test_topics_ndeval_conventions():
    qrels = pd.concat([HAND_QRELS, qrels_frame([("8", "1", "x", 1), ("9", "1", "y", 0)])])
    run = pd.concat([HAND_RUN, pd.DataFrame({"qid": ["99"], "docno": ["x"], "rank": [1]})])
    out = evaluate_run(run, qrels)
    assert list(pd.unique(out["qid"])) == ["7", "8", "9"]  # every qrels topic; run-only topic 99 ignored
    assert (out.loc[out["qid"] != "7", "value"] == 0).all()  # left out of the run / nothing relevant: 0
    assert len(out) == 3 * len(MEASURES)


def test_score_ties_broken_by_docno_descending():
    run = pd.DataFrame({"qid": "1", "docno": ["b", "a", "c", "d"], "score": [1.0, 2.0, 1.0, 1.0]})
    assert list(order_run(run)["docno"]) == ["a", "d", "c", "b"]
    ranked = pd.DataFrame({"qid": "1", "docno": ["b", "a"], "rank": [1, 5], "score": [0.0, 9.0]})
    assert list(order_run(ranked)["docno"]) == ["b", "a"]  # ranks, when given, win (ndeval's default)


def test_unknown_measure_rejected():
    with pytest.raises(ValueError, match="unknown measure"):
        evaluate_run(HAND_RUN, HAND_QRELS, ["alpha-nDCG@20"])


# ---------------------------------------------------------------- ideal ranking


def reference_greedy(labels: np.ndarray, alpha=0.5) -> list[int]:
    """ndeval's greedy written plainly, for one list: largest gain, ties to the earliest row."""
    weight, order = np.ones(labels.shape[1]), []
    for _ in range(len(labels)):
        gains = [-1.0 if i in order else float(labels[i] @ weight) for i in range(len(labels))]
        order.append(int(np.argmax(gains)))
        weight = np.where(labels[order[-1]] > 0, weight * (1 - alpha), weight)
    return order


def random_lists(seed, n_lists=200, max_docs=6, max_subtopics=4):
    rng = np.random.default_rng(seed)
    labels = (rng.random((n_lists, max_docs, max_subtopics)) < rng.uniform(0.1, 0.7, (n_lists, 1, 1))).astype(int)
    n_docs = rng.integers(1, max_docs + 1, n_lists)
    labels[np.arange(max_docs)[None, :] >= n_docs[:, None]] = 0  # padding rows
    return labels, n_docs


def test_ideal_ranking_is_the_greedy_batched():
    labels, _ = random_lists(0)
    order = ideal_ranking(labels)
    assert order.shape == labels.shape[:2]
    for i in range(len(labels)):
        assert list(order[i]) == reference_greedy(labels[i])
    assert np.array_equal(ideal_ranking(labels, depth=3), order[:, :3])


@pytest.mark.parametrize("block", [2**20, 40])
def test_ideal_ranking_in_blocks_of_topics_and_with_wide_patterns(monkeypatch, block):
    from srdiv.metrics import diversity

    monkeypatch.setattr(diversity, "BLOCK", block)        # 40: the greedy runs over several blocks of topics
    labels, _ = random_lists(4, n_lists=30, max_docs=8, max_subtopics=70)   # patterns of two int64 words
    order = ideal_ranking(labels)
    for i in range(len(labels)):
        assert list(order[i]) == reference_greedy(labels[i])


def test_ideal_ranking_against_brute_force():
    labels, n_docs = random_lists(1, n_lists=60)
    greedy = np.cumsum(alpha_dcg_gains(rank_labels(labels, ideal_ranking(labels))), axis=1)
    for i in range(len(labels)):
        perms = np.array(list(itertools.permutations(range(n_docs[i]))))
        every = np.cumsum(alpha_dcg_gains(labels[i][perms]), axis=1)  # [perms, docs]
        best = every.max(axis=0)
        assert np.all(greedy[i, : n_docs[i]] <= best + 1e-12)  # greedy never beats the optimum
        assert greedy[i, 0] == pytest.approx(best[0])  # and takes the best first document
    # the undiscounted gain of a whole list does not depend on its order
    assert np.allclose(novelty_gains(rank_labels(labels, ideal_ranking(labels))).sum(1), novelty_gains(labels).sum(1))


def test_greedy_ideal_equals_ndeval_ideal():
    # Rows sorted by docno descending: our ideal ranking submitted as a run must score 1
    # on every normalised measure at every cutoff (ndeval's ideal has the same gains).
    labels, n_docs = random_lists(2, n_lists=40)
    rows = []
    for i in range(len(labels)):
        for j in range(n_docs[i]):
            rows += [(str(i), str(s + 1), f"doc{9 - j}", int(labels[i, j, s])) for s in range(labels.shape[2])]
    qrels = qrels_frame(rows)
    order = ideal_ranking(labels)
    run = pd.DataFrame([(str(i), f"doc{9 - order[i, r]}", r + 1) for i in range(len(labels))
                        for r in range(n_docs[i])], columns=["qid", "docno", "rank"])
    measures = [f"alpha_nDCG@{k}" for k in range(1, 7)] + [f"nERR_IA@{k}" for k in range(1, 7)] + ["nNRBP"]
    oracle = ndeval(run, qrels, measures)
    judged = oracle.groupby("qid")["value"].transform("max") > 0
    assert np.allclose(oracle.loc[judged, "value"], 1.0)
    assert_equal_to_ndeval(evaluate_run(run, qrels, measures), oracle)


def test_alpha_ndcg_candidates_uses_candidate_ideal():
    candidates = np.array([[[1, 0], [1, 0], [0, 0]]])
    best = rank_labels(candidates, np.array([[1, 0, 2]]))
    assert alpha_ndcg_candidates(best, candidates, k=3)[0] == pytest.approx(1.0)
    worst = rank_labels(candidates, np.array([[2, 0, 1]]))
    assert alpha_ndcg_candidates(worst, candidates, k=3)[0] == pytest.approx(
        (1 / np.log2(3) + 0.5 / 2) / (1 + 0.5 / np.log2(3)))


# ---------------------------------------------------------------- against ndeval


def test_random_topics_equal_ndeval():
    # Synthetic topics: graded and spam judgments, subtopic 0 rows, unjudged run documents,
    # runs shorter than 5 and longer than 20, random docnos (tie-breaking at work).
    rng = np.random.default_rng(3)
    qrels_rows, run_rows = [], []
    for t in range(60):
        docs = [f"clueweb-{x:05d}" for x in rng.choice(100000, size=rng.integers(3, 40), replace=False)]
        n_sub = rng.integers(1, 6)
        for d in docs:
            grades = rng.choice([-2, 0, 0, 1, 1, 2, 3], size=n_sub)
            qrels_rows += [(str(t), str(s + 1), d, int(g)) for s, g in enumerate(grades)]
            if grades.max() <= 0 and rng.random() < 0.3:
                qrels_rows.append((str(t), "0", d, 0))
        pool = docs + [f"unjudged-{t}-{i}" for i in range(10)]
        shown = rng.permutation(pool)[: rng.integers(1, len(pool) + 1)]
        run_rows += [(str(t), d, r + 1) for r, d in enumerate(shown)]
    qrels = qrels_frame(qrels_rows)
    run = pd.DataFrame(run_rows, columns=["qid", "docno", "rank"])
    assert_equal_to_ndeval(evaluate_run(run, qrels), ndeval(run, qrels))
    # a patient user (beta 0.9) shows that NRBP reads the whole run, past rank 20
    assert_equal_to_ndeval(evaluate_run(run, qrels, ["NRBP", "nNRBP"], beta=0.9),
                           ndeval(run, qrels, ["NRBP", "nNRBP"], beta=0.9))


@pytest.fixture(scope="module")
def trec(trec_web):
    """The TREC Web Track collection with its Lemur run, built once for the session (conftest)."""
    return trec_web[0]


@pytest.fixture(scope="module")
def trec_oracle(trec):
    """pyndeval's evaluator of the TREC qrels (:func:`ndeval_evaluator`), built once for the module."""
    return ndeval_evaluator(trec.qrels)


def test_lemur_run_equals_ndeval(trec, trec_oracle):
    ours = evaluate_run(trec.run, trec.qrels)
    assert ours["qid"].nunique() == 198
    assert_equal_to_ndeval(ours, ndeval(trec.run, trec_oracle))


def test_ideal_rankings_stop_where_the_measures_stop_reading():
    """Cutoffs alone read the ideal's top k; NRBP reads ranks while beta ** r can still move its sum's last bit."""
    assert ideal_depth((5, 10, 20), 6.0) == 20
    # N beta^D / (1 - beta) <= 2^-60 with N = 6, beta = 1/2: D >= 60 + log2(12) = 63.6
    assert ideal_depth((5, 10, 20), 6.0, 0.5) == 64
    assert ideal_depth((5, 10, 20), 6.0, 0.0) == 20
    assert ideal_depth((5,), 1.0, 0.9) == math.ceil((60 + math.log2(10)) / -math.log2(0.9))
    assert ideal_depth((5, 10, 20), 6.0, 1.0) is None


def test_the_cut_ideal_gives_the_whole_ideals_values_bit_for_bit(trec):
    """The TREC qrels hold topics with up to 666 relevant documents: the greedy stops at 64 ranks, and
    every value the measures divide by is the one of the whole ideal ranking."""
    labels = qrels_labels(trec.qrels)
    row = len(labels.docnos) - 1 - labels.doc
    assert np.bincount(labels.topic).max() > 600
    for beta in (0.5, 0.9):
        rank = greedy_ideal(labels.topic, row, labels.col)
        whole = IdealValues(labels.topic, rank, labels.col, labels.n_subtopics, 0.5, beta, CUTOFFS)
        cut = DiversityEvaluator(trec.qrels, beta=beta).ideal
        assert cut.nrbp.view(np.int64).tolist() == whole.nrbp.view(np.int64).tolist()
        for k in CUTOFFS:
            assert cut.dcg[k].view(np.int64).tolist() == whole.dcg[k].view(np.int64).tolist()
            assert cut.err[k].view(np.int64).tolist() == whole.err[k].view(np.int64).tolist()


def test_permuted_lemur_runs_equal_ndeval(trec, trec_oracle):
    evaluator = DiversityEvaluator(trec.qrels)
    relevant = trec.qrels.loc[trec.qrels["rel"] > 0, ["qid", "docno"]].drop_duplicates().assign(relevant=True)
    lemur = trec.run.merge(relevant, on=["qid", "docno"], how="left").fillna({"relevant": False})
    for seed in range(6):
        rng = np.random.default_rng(seed)
        run = lemur.sample(frac=1.0, random_state=seed).reset_index(drop=True)
        if seed % 2:  # favour relevant documents, so that the top 20 is not all zeros
            boost = run["relevant"].to_numpy(float) * rng.random(len(run))
            run = run.iloc[np.argsort(-boost, kind="stable")].reset_index(drop=True)
        if seed == 4:  # short runs
            run = run[run.groupby("qid").cumcount() < rng.integers(1, 25)]
        run["rank"] = run.groupby("qid").cumcount() + 1
        assert_equal_to_ndeval(evaluator.evaluate(run), ndeval(run, trec_oracle))


def test_measure_names_are_ir_measures_names(trec):
    ir_measures = pytest.importorskip("ir_measures")
    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    assert [str(m) for m in measures] == MEASURES
    # topic 2 is judged but left out of the run: both average over every judged topic, counting it as 0
    judged = trec.qrels[trec.qrels["qid"].isin(["1", "2", "51", "101", "151"])]
    run = trec.run[trec.run["qid"].isin(["1", "51", "101", "151"])]
    qrels = judged.rename(columns={"qid": "query_id", "docno": "doc_id", "grade": "relevance", "sid": "iteration"})
    scored = order_run(run).assign(score=lambda f: -f["rank"].astype(float))
    qrels = qrels[["query_id", "iteration", "doc_id", "relevance"]]
    scored = scored.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    ours = evaluate_run(run, judged).groupby("measure")["value"].mean()
    got = ir_measures.calc_aggregate(measures, qrels, scored)
    for m in measures:
        assert got[m] == pytest.approx(ours[str(m)], abs=1e-6), m


def test_a_million_line_ranking_is_evaluated_in_memory_proportional_to_the_run():
    """50 topics x 10 subtopics, one topic ranked a million documents deep: labels as a dense
    [topics, depth, subtopics] tensor would take 4 GB; the evaluation holds the run, not that."""
    import tracemalloc

    rng = np.random.default_rng(3)
    qrels = qrels_frame([(str(q), str(s), f"d{q}-{d}", 1) for q in range(50) for s in range(10)
                         for d in rng.choice(40, 6, replace=False)])
    deep = pd.DataFrame({"qid": "0", "docno": [f"d0-{d}" for d in range(1_000_000)]})   # relevant ones in the top 40
    run = pd.concat([deep, pd.DataFrame({"qid": "1", "docno": [f"d1-{d}" for d in range(30)]})], ignore_index=True)
    run["rank"] = run.groupby("qid").cumcount() + 1
    evaluator = DiversityEvaluator(qrels)
    tracemalloc.start()
    ours = evaluator.evaluate(run)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 600e6, f"peak {peak / 1e6:.0f} MB"
    small = run[run["rank"] <= 20_000]   # pyndeval on a part of it (its own cost), every value equal
    assert_equal_to_ndeval(evaluator.evaluate(small), ndeval(small, qrels))
    assert set(ours["qid"]) == {str(q) for q in range(50)}
    nrbp = ours[(ours["measure"] == "NRBP")].set_index("qid")["value"]
    assert nrbp["0"] > 0 and nrbp["1"] > 0 and nrbp["2"] == 0
