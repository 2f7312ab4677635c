"""Quick check of the wordnet-div suggestions: does a plain xQuAD over them beat the initial run?

Not the project's xQuAD (that is ``srdiv.models.xquad``): a minimal greedy
(Santos et al., WWW 2010, Eq. 3) with uniform suggestion weights::

    score(d) = (1 - lam) P(d|q) + lam * sum_i P(s_i|q) P(d|s_i) prod_{d' in S} (1 - P(d'|s_i))

where ``P(d|q)`` and ``P(d|s_i)`` are BM25 scores over the whole document text,
divided by their maximum over the query's candidates (the run's top 50).
Prints official alpha-nDCG@20 of the initial run, of xQuAD for several
``lam``, and of the ideal re-ranking of the candidates.

    python benchmarks/wordnet_xquad_check.py data/collections/wordnet-div [FIELDS]

FIELDS (comma-separated, default the whole text) chooses the fields BM25 indexes,
e.g. ``title,body,url`` (the initial run's fields: no anchor text).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from srdiv.collection.schema import load_collection
from srdiv.collection.wordnet import doc_text
from srdiv.collection.wordnet_card import candidate_labels, reranked_run
from srdiv.index.sparse import FieldIndex
from srdiv.metrics import evaluate_run, ideal_ranking, mean_measures

CANDIDATES = 50


def _normalise(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Scores divided by their maximum over the last axis (0 where masked or all zero)."""
    scores = np.where(mask, np.maximum(scores, 0.0), 0.0)
    top = scores.max(axis=-1, keepdims=True)
    return np.divide(scores, top, out=np.zeros_like(scores), where=top > 0)


def xquad(p_query: np.ndarray, p_sugg: np.ndarray, mask: np.ndarray, lam: float) -> np.ndarray:
    """Greedy xQuAD order ``[queries, docs]`` from ``p_query [Q, D]`` and ``p_sugg [Q, S, D]``."""
    n_q, n_s, n_d = p_sugg.shape
    weight = (p_sugg.sum(axis=2) > 0) / np.maximum((p_sugg.sum(axis=2) > 0).sum(1, keepdims=True), 1)
    novelty = np.ones((n_q, n_s))
    free = mask.copy()
    order = np.zeros((n_q, n_d), dtype=np.int64)
    rows = np.arange(n_q)
    for r in range(n_d):
        div = np.einsum("qs,qsd->qd", weight * novelty, p_sugg)
        score = np.where(free, (1 - lam) * p_query + lam * div, -np.inf)
        best = score.argmax(axis=1)
        order[:, r] = best
        free[rows, best] = False
        novelty *= 1.0 - p_sugg[rows, :, best]
    return order


def main(path: str, fields: tuple[str, ...] | None = None) -> None:
    coll = load_collection(path, with_docs=True)
    index = FieldIndex.from_texts(doc_text(coll.docs, fields) if fields else doc_text(coll.docs))
    docnos, labels = candidate_labels(coll, CANDIDATES)  # [Q, C], [Q, C, S]
    pos = pd.Series(np.arange(len(coll.docs)), index=coll.docs["docno"])
    mask = docnos != ""
    cand = pos.reindex(docnos.ravel()).fillna(-1).to_numpy(np.int64).reshape(docnos.shape)  # -1 = padding
    p_query = _normalise(index.score(coll.topics["query"].tolist(), "bm25", cand), mask)
    sugg = coll.suggestions[coll.suggestions["level"] == 1]
    slot = sugg.groupby("qid").cumcount().to_numpy()
    rows = pd.Series(np.arange(len(coll.qids)), index=coll.qids)[sugg["qid"]].to_numpy()
    p_sugg = np.zeros((len(coll.qids), slot.max() + 1, CANDIDATES))  # [Q, S, C]
    p_sugg[rows, slot] = _normalise(index.score(sugg["text"].tolist(), "bm25", cand[rows]), mask[rows])

    def ndcg(order: np.ndarray) -> float:
        run = reranked_run(coll, docnos, order)
        return mean_measures(evaluate_run(run, coll.qrels, ["alpha_nDCG@20"]))["alpha_nDCG@20"]

    print(f"initial run            alpha-nDCG@20 = {ndcg(np.tile(np.arange(CANDIDATES), (len(mask), 1))):.4f}")
    for lam in (0.25, 0.5, 0.75, 1.0):
        print(f"xQuAD lambda = {lam:<4}     alpha-nDCG@20 = {ndcg(xquad(p_query, p_sugg, mask, lam)):.4f}")
    print(f"ideal top-{CANDIDATES} re-ranking  alpha-nDCG@20 = {ndcg(ideal_ranking(labels)):.4f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/collections/wordnet-div",
         tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else None)
