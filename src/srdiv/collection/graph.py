"""Link graphs of a collection's documents: PageRank and anchor text, as a web crawl gives them."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def pagerank(adj: sp.csr_matrix, damping: float, tol: float = 1e-12, max_iter: int = 200) -> np.ndarray:
    """``[nodes]`` PageRank by power iteration; dangling nodes spread their mass uniformly."""
    n = adj.shape[0]
    out_deg = np.asarray(adj.sum(axis=1)).ravel()
    walk = sp.diags(np.where(out_deg > 0, 1.0 / np.maximum(out_deg, 1), 0.0)) @ adj.astype(np.float64)
    walk_t = walk.T.tocsr()
    rank = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        dangling = rank[out_deg == 0].sum()
        new = (1.0 - damping) / n + damping * (walk_t @ rank + dangling / n)
        done = np.abs(new - rank).sum() < tol
        rank = new
        if done:
            break
    return rank


def anchor_texts(adj: sp.csr_matrix, names: np.ndarray, rank: np.ndarray, limit: int) -> list[str]:
    """Per document, up to ``limit`` ``names`` of the documents linking to it (``adj [src, dst]``),
    highest PageRank first, then by position; joined by ``"; "``."""
    into = adj.T.tocsr()
    out = []
    for a, b in zip(into.indptr[:-1], into.indptr[1:]):
        src = into.indices[a:b]
        src = src[np.lexsort((src, -rank[src]))][:limit]
        out.append("; ".join(names[src]))
    return out
