"""The 18 relevance features of DSSA Table 5 for (query or suggestion, candidate) pairs.

TF-IDF, BM25 and LMIR (Dirichlet) on each of five fields (anchor, body, whole
text, title, URL; :data:`srdiv.text.documents.FIELDS`) plus PageRank,
#inlinks and #outlinks. Scoring is :class:`srdiv.index.sparse.FieldIndex`;
names and column order are those of the DSSA release's ``rel_feat.csv``, so a
computed table and an imported one (:mod:`srdiv.features.dssa_import`) are
interchangeable. Values are raw; training standardises them
(:class:`srdiv.features.bundle.FeatureScaler`).

Fallbacks (each counted in a warning): a candidate missing from the
documents and a document whose field is empty score 0 on that field; graph
columns absent from the documents are 0.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from srdiv.collection.schema import DOC_GRAPH_COLUMNS, Collection
from srdiv.index.sparse import FieldIndex
from srdiv.text.documents import FIELDS, doc_positions, join_columns

RETRIEVAL_MODELS = ("bm25", "lmir", "tfidf")
FEATURE_NAMES = [f"{field}-{model}" for field in FIELDS for model in RETRIEVAL_MODELS] + list(DOC_GRAPH_COLUMNS)
"""The 18 feature columns, in the release's order."""

KEY_COLUMNS = ["qid", "sugg_id", "docno"]


def candidates(coll: Collection, rank_docs: int) -> pd.DataFrame:
    """The top ``rank_docs`` documents of the initial run per query: ``qid, docno, rank, score``."""
    run = coll.run.sort_values(["qid", "rank"], kind="stable")
    return run[run["rank"] <= rank_docs].reset_index(drop=True)


def candidate_matrix(cands: pd.DataFrame, qids: list[str]) -> np.ndarray:
    """Docnos ``[queries, D]`` in rank order (``""`` padding), ``D`` = the longest list."""
    pos = cands.groupby("qid", sort=False).cumcount().to_numpy()
    row = pd.Index(qids).get_indexer(cands["qid"])
    keep = row >= 0
    out = np.full((len(qids), int(pos.max()) + 1 if len(pos) else 0), "", dtype=object)
    out[row[keep], pos[keep]] = cands["docno"].to_numpy()[keep]
    return out


def warn_missing(n: int, total: int, what: str, fallback: str) -> None:
    """Warn about ``n`` of ``total`` items needing a fallback."""
    if n:
        warnings.warn(f"{n} of {total} {what}; {fallback}", stacklevel=3)


def relevance_features(coll: Collection, docs: pd.DataFrame, strings: pd.DataFrame,
                       params: dict, batch: int = 2048) -> pd.DataFrame:
    """Features of every (string, candidate of the string's query) pair.

    ``strings``: ``qid, sugg_id, text`` (see :func:`srdiv.text.pseudo_docs.query_strings`).
    ``params``: the ``features`` section (``rank_docs``, ``k1``, ``b``, ``mu``).
    Returns ``qid, sugg_id, docno`` + :data:`FEATURE_NAMES`, strings in the
    given order and candidates in rank order.
    """
    cands = candidates(coll, int(params["rank_docs"]))
    qids = list(pd.unique(strings["qid"]))
    cand = candidate_matrix(cands, qids)[pd.Index(qids).get_indexer(strings["qid"])]  # [N, D]
    real = cand != ""
    doc_idx = np.where(real, doc_positions(docs, cand), -1)  # [N, D]
    unique_cands = cands.drop_duplicates(["qid", "docno"])
    missing = doc_positions(docs, unique_cands["docno"].to_numpy()) < 0
    warn_missing(int(missing.sum()), len(unique_cands), "candidates are missing from the documents",
                 "their features are 0")

    texts = strings["text"].tolist()
    feats = np.zeros(real.shape + (len(FEATURE_NAMES),), dtype=np.float32)  # [N, D, F]
    used = np.unique(doc_idx[doc_idx >= 0])
    for f, (field, columns) in enumerate(tqdm(FIELDS.items(), desc="relevance fields", leave=False)):
        index = FieldIndex.from_texts(join_columns(docs, columns), k1=params["k1"], b=params["b"],
                                      mu=params["mu"])
        empty = index.doc_len == 0
        warn_missing(int(empty[used].sum()), len(used), f"candidate documents have an empty {field} field",
                     f"their {field}-* features are 0")
        field_idx = np.where((doc_idx >= 0) & ~empty[np.maximum(doc_idx, 0)], doc_idx, -1)
        for m, model in enumerate(RETRIEVAL_MODELS):
            col = f * len(RETRIEVAL_MODELS) + m
            for start in range(0, len(texts), batch):
                part = slice(start, start + batch)
                feats[part, :, col] = index.score(texts[part], model, field_idx[part])

    graph = [c for c in DOC_GRAPH_COLUMNS if c in docs.columns]
    warn_missing(len(DOC_GRAPH_COLUMNS) - len(graph), len(DOC_GRAPH_COLUMNS),
                 "graph columns (pagerank, inlinks, outlinks) are absent from the documents", "they are 0")
    for c in graph:
        values = docs[c].to_numpy(dtype=np.float32)
        feats[:, :, FEATURE_NAMES.index(c)] = np.where(doc_idx >= 0, values[np.maximum(doc_idx, 0)], 0.0)

    rows, slots = np.nonzero(real)
    out = strings[["qid", "sugg_id"]].iloc[rows].reset_index(drop=True)
    out["docno"] = cand[rows, slots]
    return pd.concat([out, pd.DataFrame(feats[rows, slots], columns=FEATURE_NAMES)], axis=1)
