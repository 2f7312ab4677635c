"""What the planted collection's bundles carry (docs/planted.md, the signal table).

For each bundle (``work/planted/bundle/<repr>.npz`` after ``make planted``) it prints, over the queries:
the mean per-query AUC of cos(query pseudo-document, document) and of the best single relevance feature
for relevant against non-relevant candidates; the mean cosine of two relevant documents of the same
subtopic and of different subtopics; and the share of relevant documents whose nearest level-1 suggestion
vector (cosine) is their own subtopic's (suggestion i is subtopic i in the planted collection); and what
the vectors alone give a re-ranker that learns nothing: mean alpha-nDCG@20 (against the candidates' greedy
ideal) of the candidates ranked by MMR over the vectors (relevance cos(q, d), redundancy the largest cosine
with a document above), for lam 0, 0.1, ..., 1 (lam 1 is the cosine order), beside the initial run's.

    python benchmarks/measure_planted.py work/planted/bundle/doc2vec.npz work/planted/bundle/lda.npz
"""

from __future__ import annotations

import sys

import numpy as np

from srdiv.features.bundle import Bundle
from srdiv.metrics.diversity import alpha_ndcg_candidates, rank_labels


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(a positive scores above a negative), ties counted half."""
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def mmr_orders(cos: np.ndarray, docs: np.ndarray, mask: np.ndarray, lam: float) -> np.ndarray:
    """``[queries, docs]`` MMR orders: lam * cos(q, d) - (1 - lam) * max cos(d, d_above); padding (-1) last."""
    orders = np.full(mask.shape, -1)
    for i in range(len(mask)):
        left = list(np.flatnonzero(mask[i]))
        redundancy = np.zeros(mask.shape[1])
        for t in range(len(left)):
            pick = left[int(np.argmax(lam * cos[i, left] - (1 - lam) * redundancy[left]))]
            orders[i, t] = pick
            left.remove(pick)
            redundancy = np.maximum(redundancy, docs[i] @ docs[i, pick]) if t else docs[i] @ docs[i, pick]
    return orders


def ndcg20(labels: np.ndarray, orders: np.ndarray) -> float:
    """Mean alpha-nDCG@20 of ``orders [queries, docs]`` against the greedy ideal of the candidates."""
    ranked = rank_labels(labels, np.clip(orders, 0, None)) * (orders >= 0)[..., None]
    return float(alpha_ndcg_candidates(ranked, labels).mean())


def measure(path: str) -> str:
    b = Bundle.load(path)
    docs, query, subs = unit(b.doc_vec), unit(b.query_vec), unit(b.sub_vec)
    rel = b.labels.any(-1) & b.doc_mask
    other = ~rel & b.doc_mask
    cos = np.einsum("qde,qe->qd", docs, query)
    cos_auc = np.mean([auc(cos[i][rel[i]], cos[i][other[i]]) for i in range(len(b))])
    feat_auc = [np.mean([auc(b.rel_feat[i, rel[i], f], b.rel_feat[i, other[i], f]) for i in range(len(b))])
                for f in range(b.rel_feat.shape[-1])]
    same, apart, nearest = [], [], []
    for i in range(len(b)):
        idx = np.flatnonzero(rel[i])
        sid = b.labels[i, idx].argmax(-1)
        sim = docs[i, idx] @ docs[i, idx].T
        eq = sid[:, None] == sid[None, :]
        same.append(sim[eq & ~np.eye(len(idx), dtype=bool)].mean())
        apart.append(sim[~eq].mean())
        nearest.append(((docs[i, idx] @ subs[i].T).argmax(-1) == sid).mean())
    labels = b.labels * b.doc_mask[..., None]
    initial = ndcg20(labels, np.where(b.doc_mask, np.arange(b.doc_mask.shape[1]), -1))
    mmr = {lam: ndcg20(labels, mmr_orders(cos, docs, b.doc_mask, lam)) for lam in np.round(np.linspace(0, 1, 11), 1)}
    top = max(mmr, key=mmr.get)
    best = int(np.argmax(feat_auc))
    return (f"{path}: relevance AUC of cos(q, d) {cos_auc:.3f}; of the best feature ({b.feature_names[best]}) "
            f"{feat_auc[best]:.3f}; cosine of relevant documents, same subtopic {np.mean(same):.3f}, other "
            f"subtopics {np.mean(apart):.3f}; nearest level-1 suggestion is the own subtopic's for "
            f"{np.mean(nearest):.3f} of relevant documents; alpha-nDCG@20 of MMR over the vectors (no training) "
            f"{mmr[top]:.3f} at lam {top} (lam 1, the cosine order: {mmr[1.0]:.3f}), "
            f"the initial run {initial:.3f}")


if __name__ == "__main__":
    for bundle in sys.argv[1:]:
        print(measure(bundle))
