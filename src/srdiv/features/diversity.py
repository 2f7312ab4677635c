"""Pairwise document diversity features for R-LTR and PAMM (DSSA Table 6, after Zhu et al. 2014).

For every pair of candidates of a query (the top ``rank_docs`` of the initial run):

==================  ============================================================
``subtopic_div``    Euclidean distance of the documents' topic vectors (Table 6
                    uses SVD; the default here is the LDA vectors of
                    ``embed/lda.parquet``, any vector table will do)
``text_div``        1 - cosine of the body TF-IDF vectors (``tf * log(N / df)``)
``title_div``       the same on the title
``anchor_div``      the same on the anchor text
``link_sim``        Jaccard overlap of the closed link neighbourhoods
                    N(x) = {x} + documents x links to or is linked from: 1 when
                    two documents link only to each other, > 0 when they link to
                    each other or share a neighbour, 0 otherwise
``url_sim``         the share of leading URL components in common (scheme
                    dropped, host first): ``common prefix / longer URL``
==================  ============================================================

Links come from the optional ``links`` column of the documents (a list of
docnos the document points to; for ``wordnet-div``, the synset's WordNet
pointers play the role of hyperlinks when the collection carries them).
Without the column ``link_sim`` is left out, with a warning. Without document text (the DSSA release)
only ``subtopic_div`` can be computed, and only it is written. The table records which features it
holds (:data:`RECORDED_FEATURES`), so one that lost a column later is refused rather than read as a
smaller set.

Fallbacks: a missing or empty field is a zero vector, whose cosine with
anything is 0 (diversity 1); a document without a vector is the zero vector.
The table holds each unordered pair once (``docno_a`` ranked above
``docno_b``); the features are symmetric and a document's pair with itself is
not stored (the bundle holds zeros there).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from tqdm.auto import tqdm

from srdiv.collection.schema import Collection
from srdiv.features.relevance import candidate_matrix, candidates, warn_missing
from srdiv.index.sparse import FieldIndex
from srdiv.text.documents import doc_positions, join_columns

TEXT_FEATURES = {"text_div": "body", "title_div": "title", "anchor_div": "anchor"}
"""Cosine-diversity features and the document column each reads."""

RECORDED_FEATURES = "feature_columns"
"""Key of the table's ``attrs`` (kept in its Parquet file) naming the feature columns it was made with,
which depend on the text available: :func:`srdiv.features.assemble.read_feature_table` holds a table to them."""


def euclidean(vectors: np.ndarray) -> np.ndarray:
    """Pairwise distances ``[Q, D, D]`` of ``vectors [Q, D, E]``."""
    sq = (vectors ** 2).sum(-1)
    d2 = sq[:, :, None] + sq[:, None, :] - 2 * np.einsum("qae,qbe->qab", vectors, vectors)
    return np.sqrt(np.maximum(d2, 0.0))


def cosine_diversity(tf: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """``1 - cos`` of TF-IDF vectors ``[Q, D, D]``; ``tf [docs, terms]``, ``rows [Q, D]`` (-1 = zero vector)."""
    n_docs = tf.shape[0]
    df = np.bincount(tf.indices, minlength=tf.shape[1])
    idf = np.log(n_docs / np.maximum(df, 1))
    x = sp.csr_matrix(tf[np.maximum(rows.ravel(), 0)].multiply(idf[None, :]))
    norm = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    norm[rows.ravel() < 0] = 0.0
    x = sp.diags(np.divide(1.0, norm, out=np.zeros_like(norm), where=norm > 0)) @ x
    n_q, n_d = rows.shape
    out = np.empty((n_q, n_d, n_d), dtype=np.float32)
    for q in range(n_q):
        block = x[q * n_d:(q + 1) * n_d]
        out[q] = np.clip(1.0 - (block @ block.T).toarray(), 0.0, 1.0)  # rounding can leave -1e-16
    return out


def link_similarity(docs: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Jaccard of closed link neighbourhoods ``[Q, D, D]`` from ``docs["links"]``; ``rows [Q, D]``."""
    links = docs["links"].explode().dropna()
    src = np.asarray(links.index, dtype=np.int64)
    dst = doc_positions(docs, links.to_numpy())
    src, dst = src[dst >= 0], dst[dst >= 0]
    n = len(docs)
    loops = np.arange(n)
    adj = sp.csr_matrix((np.ones(2 * len(src) + n), (np.r_[src, dst, loops], np.r_[dst, src, loops])),
                        shape=(n, n))
    adj.data[:] = 1.0  # duplicates summed to > 1: back to a 0/1 matrix
    x = sp.csr_matrix(sp.diags((rows.ravel() >= 0).astype(float)) @ adj[np.maximum(rows.ravel(), 0)])
    size = np.asarray(x.sum(axis=1)).ravel()
    n_q, n_d = rows.shape
    out = np.zeros((n_q, n_d, n_d), dtype=np.float32)
    for q in range(n_q):
        part = slice(q * n_d, (q + 1) * n_d)
        inter = (x[part] @ x[part].T).toarray()
        union = size[part][:, None] + size[part][None, :] - inter
        out[q] = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    return out


def url_similarity(urls: pd.Series, rows: np.ndarray) -> np.ndarray:
    """Shared leading URL components over the longer URL ``[Q, D, D]``; ``rows [Q, D]`` (-1 = no URL)."""
    parts = (urls.str.lower().str.replace(r"^[a-z][a-z0-9+.-]*://", "", regex=True).str.strip("/")
             .str.split("/", expand=True))
    parts = parts.where(parts.notna() & (parts != ""))
    prefix = pd.Series("", index=parts.index)
    ids = np.full((len(urls), max(parts.shape[1], 1)), -1, dtype=np.int64)  # [docs, depth]
    for k in parts.columns:
        prefix = prefix + "/" + parts[k].fillna("")
        ids[:, k] = np.where(parts[k].notna(), pd.factorize(prefix)[0], -1)
    cand = np.where(rows[..., None] >= 0, ids[np.maximum(rows, 0)], -1)  # [Q, D, depth]
    length = (cand >= 0).sum(-1)
    common = ((cand[:, :, None] == cand[:, None, :]) & (cand[:, :, None] >= 0)).sum(-1)
    longer = np.maximum(length[:, :, None], length[:, None, :])
    return np.divide(common, longer, out=np.zeros(common.shape), where=longer > 0).astype(np.float32)


def diversity_features(coll: Collection, docs: pd.DataFrame | None, vectors: tuple[pd.DataFrame, np.ndarray],
                       rank_docs: int) -> pd.DataFrame:
    """Feature table ``qid, docno_a, docno_b`` + features for each unordered candidate pair.

    ``vectors``: ``(keys with docno, [docs, E])`` from :func:`srdiv.text.embed.read_vectors`.
    ``docs``: the documents, or None when there is no text (vector feature only).
    """
    qids = coll.qids
    cand = candidate_matrix(candidates(coll, rank_docs), qids)  # [Q, D] docnos
    real = cand != ""
    keys, matrix = vectors
    vec_rows = np.where(real, doc_positions(keys, cand), -1)
    n_cands = int(real.sum())
    warn_missing(int((real & (vec_rows < 0)).sum()), n_cands, "candidates have no vector",
                 "they are the zero vector in subtopic_div")
    vecs = np.where(vec_rows[..., None] >= 0, matrix[np.maximum(vec_rows, 0)], 0.0)
    feats = {"subtopic_div": euclidean(vecs.astype(np.float64)).astype(np.float32)}

    if docs is None:
        warnings.warn("no document text: only the vector-based subtopic_div is computed", stacklevel=2)
    else:
        rows = np.where(real, doc_positions(docs, cand), -1)
        warn_missing(int((real & (rows < 0)).sum()), n_cands, "candidates are missing from the documents",
                     "their text, link and URL features use empty documents")
        for name, column in tqdm(TEXT_FEATURES.items(), desc="diversity fields", leave=False):
            index = FieldIndex.from_texts(join_columns(docs, (column,)))
            empty = np.where(rows >= 0, index.doc_len[np.maximum(rows, 0)] == 0, False) & real
            warn_missing(int(empty.sum()), n_cands, f"candidates have an empty {column} field",
                         f"their {name} is 1 (zero vector)")
            feats[name] = cosine_diversity(index.tf, rows)
        if "links" in docs.columns:
            feats["link_sim"] = link_similarity(docs, rows)
        else:
            warnings.warn("the documents have no 'links' column: link_sim is left out", stacklevel=2)
        feats["url_sim"] = url_similarity(docs["url"].astype(str), rows)

    a, b = np.triu_indices(cand.shape[1], k=1)
    pair = real[:, a] & real[:, b]  # [Q, pairs]
    q_idx, p_idx = np.nonzero(pair)
    out = pd.DataFrame({
        "qid": np.asarray(qids, dtype=object)[q_idx],
        "docno_a": cand[q_idx, a[p_idx]], "docno_b": cand[q_idx, b[p_idx]],
    })
    for name, values in feats.items():
        out[name] = values[q_idx, a[p_idx], b[p_idx]]
    out.attrs[RECORDED_FEATURES] = list(feats)
    return out
