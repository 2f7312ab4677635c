"""What the planted collection's bundles carry (docs/planted.md, the signal table).

For each bundle (``work/planted/bundle/<repr>.npz`` after ``make planted``) it prints, over the queries:
the mean per-query AUC of cos(query pseudo-document, document) and of the best single relevance feature
for relevant against non-relevant candidates; the mean cosine of two relevant documents of the same
subtopic and of different subtopics; and the share of relevant documents whose nearest level-1 suggestion
vector (cosine) is their own subtopic's (suggestion i is subtopic i in the planted collection).

    python benchmarks/measure_planted.py work/planted/bundle/doc2vec.npz work/planted/bundle/lda.npz
"""

from __future__ import annotations

import sys

import numpy as np

from srdiv.features.bundle import Bundle


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(a positive scores above a negative), ties counted half."""
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


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
    best = int(np.argmax(feat_auc))
    return (f"{path}: relevance AUC of cos(q, d) {cos_auc:.3f}; of the best feature ({b.feature_names[best]}) "
            f"{feat_auc[best]:.3f}; cosine of relevant documents, same subtopic {np.mean(same):.3f}, other "
            f"subtopics {np.mean(apart):.3f}; nearest level-1 suggestion is the own subtopic's for "
            f"{np.mean(nearest):.3f} of relevant documents")


if __name__ == "__main__":
    for bundle in sys.argv[1:]:
        print(measure(bundle))
