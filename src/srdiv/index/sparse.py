"""A sparse term index over one text field of every document: TF-IDF, BM25, LMIR.

The index is the term-frequency matrix ``tf [docs, terms]`` (scipy CSR) of the
texts analysed by :func:`srdiv.index.analysis.tokenize`. Queries are analysed the
same way into a count matrix ``q [queries, terms]``; every model is then one
sparse product, no loop over terms or documents. With ``N`` documents,
``df(t)`` the number holding term ``t``, ``|d|`` a document's length in tokens,
``avgdl`` the mean length and ``q(t)`` the count of ``t`` in the query
(LETOR 3.0 definitions, Qin et al. 2010):

* ``tfidf``: ``sum_t q(t) * tf(t, d) * log(N / df(t))``.
* ``bm25``: ``sum_t q(t) * idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl))``
  with ``idf(t) = log(1 + (N - df + 0.5) / (df + 0.5))`` (always positive).
* ``lmir``: Dirichlet-smoothed query likelihood (Zhai & Lafferty 2001),
  ``sum_t q(t) * log((tf(t, d) + mu p(t|C)) / (|d| + mu))`` with ``p(t|C)`` the
  term's share of all tokens. A document lacking every query term still gets
  its (smoothed) score. Computed as
  ``sum_t q(t) log(1 + tf / (mu p(t|C)))`` (sparse part)
  ``+ sum_t q(t) log(mu p(t|C)) - |q| log(|d| + mu)`` (dense part).

Query terms absent from the whole field are dropped (their ``p(t|C)`` is 0, so
they would add the same ``-inf`` to every document). :meth:`FieldIndex.top_k`
returns *hits*: documents holding at least one query term, as an inverted
index would.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from srdiv.index.analysis import tokenize_many
from srdiv.index.scoring import DEFAULT_SCORING

MODELS = ("bm25", "tfidf", "lmir")




def count_matrix(token_lists: list[list[str]], terms: pd.Index) -> sp.csr_matrix:
    """Term counts ``[texts, terms]`` of analysed texts; tokens not in ``terms`` are dropped."""
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    flat = np.fromiter(itertools.chain.from_iterable(token_lists), dtype=object, count=int(lengths.sum()))
    term_ids = terms.get_indexer(flat) if len(flat) else np.zeros(0, dtype=np.int64)
    rows = np.repeat(np.arange(len(token_lists)), lengths)
    keep = term_ids >= 0
    mat = sp.csr_matrix(
        (np.ones(int(keep.sum())), (rows[keep], term_ids[keep])),
        shape=(len(token_lists), len(terms)),
    )
    mat.sum_duplicates()
    return mat


def _values_at(mat: sp.spmatrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``mat[rows, cols]`` for many pairs at once (0 where ``mat`` stores nothing)."""
    coo = mat.tocoo()
    keys = coo.row.astype(np.int64) * mat.shape[1] + coo.col
    order = np.argsort(keys)
    keys, vals = keys[order], coo.data[order]
    want = rows * mat.shape[1] + cols
    pos = np.searchsorted(keys, want)
    found = pos < len(keys)
    found[found] = keys[pos[found]] == want[found]
    out = np.zeros(len(want))
    out[found] = vals[pos[found]]
    return out


class FieldIndex:
    """Term-frequency index of one field with TF-IDF, BM25 and Dirichlet LM scoring."""

    def __init__(self, tf: sp.csr_matrix, terms: Sequence[str], *, k1: float = DEFAULT_SCORING.k1,
                 b: float = DEFAULT_SCORING.b, mu: float = DEFAULT_SCORING.mu):
        self.tf = sp.csr_matrix(tf, dtype=np.float64)
        self.terms = list(terms)
        self.vocab = pd.Index(self.terms, dtype=object)
        self.k1, self.b, self.mu = float(k1), float(b), float(mu)
        self.n_docs = self.tf.shape[0]
        self.doc_len = np.asarray(self.tf.sum(axis=1)).ravel()  # [docs]
        self.df = np.bincount(self.tf.indices, minlength=len(self.terms)).astype(np.float64)  # [terms]
        cf = np.asarray(self.tf.sum(axis=0)).ravel()
        self.p_coll = cf / max(cf.sum(), 1.0)  # [terms], p(t|C)
        self._weights: dict[str, sp.csr_matrix] = {}

    @classmethod
    def from_texts(cls, texts: Sequence[str], *, k1: float = DEFAULT_SCORING.k1, b: float = DEFAULT_SCORING.b,
                   mu: float = DEFAULT_SCORING.mu) -> FieldIndex:
        """Index ``texts`` (one per document, in document order)."""
        tokens = tokenize_many(texts)
        terms = pd.Index(sorted(set(itertools.chain.from_iterable(tokens))), dtype=object)
        return cls(count_matrix(tokens, terms), terms, k1=k1, b=b, mu=mu)

    # ----------------------------------------------------------------- scoring
    def _term_weights(self, model: str) -> sp.csr_matrix:
        """The model's per-(doc, term) weight ``[docs, terms]`` on the nonzeros of ``tf``."""
        if model not in MODELS:
            raise ValueError(f"unknown retrieval model {model!r}; expected one of {MODELS}")
        if model not in self._weights:
            tf = self.tf.tocoo()
            t, d, f = tf.col, tf.row, tf.data
            if model == "tfidf":
                w = f * np.log(self.n_docs / self.df[t])
            elif model == "bm25":
                idf = np.log1p((self.n_docs - self.df + 0.5) / (self.df + 0.5))
                avgdl = max(self.doc_len.mean(), 1e-12)
                norm = self.k1 * (1.0 - self.b + self.b * self.doc_len[d] / avgdl)
                w = idf[t] * f * (self.k1 + 1.0) / (f + norm)
            else:
                w = np.log1p(f / (self.mu * self.p_coll[t]))
            self._weights[model] = sp.csr_matrix((w, (d, t)), shape=self.tf.shape)
        return self._weights[model]

    def query_matrix(self, queries: Sequence[str]) -> sp.csr_matrix:
        """Query term counts ``[queries, terms]`` (terms outside the field dropped)."""
        return count_matrix(tokenize_many(queries), self.vocab)

    def _dense_part(self, q: sp.csr_matrix, model: str, rows: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """LMIR's part outside the nonzeros of ``tf`` for query ``rows`` x document ``docs``.

        ``rows`` and ``docs`` broadcast against each other; other models add 0.
        """
        shape = np.broadcast_shapes(rows.shape, docs.shape)
        if model != "lmir":
            return np.zeros(shape)
        log_p = np.zeros(q.shape[1])
        seen = self.p_coll > 0
        log_p[seen] = np.log(self.mu * self.p_coll[seen])
        const = q @ log_p  # [queries]
        q_len = np.asarray(q.sum(axis=1)).ravel()  # [queries]
        return const[rows] - q_len[rows] * np.log(self.doc_len[docs] + self.mu)

    def score(self, queries: Sequence[str], model: str,
              doc_idx: np.ndarray | None = None) -> np.ndarray:
        """Scores ``[queries, docs]`` of every document, or ``[queries, D]`` of ``doc_idx``.

        ``doc_idx [queries, D]`` holds document indices, ``-1`` for padding
        (scored 0).
        """
        q = self.query_matrix(queries)
        weights = self._term_weights(model)
        rows = np.arange(q.shape[0])[:, None]
        if doc_idx is None:
            docs = np.arange(self.n_docs)[None, :]
            return (q @ weights.T).toarray() + self._dense_part(q, model, rows, docs)
        doc_idx = np.asarray(doc_idx, dtype=np.int64).reshape(q.shape[0], -1)
        pad = doc_idx < 0
        docs = np.where(pad, 0, doc_idx)
        pair_rows = np.repeat(np.arange(q.shape[0]), docs.shape[1])
        sparse_part = np.asarray(q[pair_rows].multiply(weights[docs.ravel()]).sum(axis=1))
        out = sparse_part.reshape(docs.shape) + self._dense_part(q, model, rows, docs)
        return np.where(pad, 0.0, out)

    def top_k(self, queries: Sequence[str], k: int, model: str = "bm25",
              exclude: Sequence[np.ndarray] | None = None,
              batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best hits per query: ``(doc indices [queries, k], scores [queries, k])``.

        Hits are documents with at least one query term; ``exclude[i]`` lists
        document indices never returned for query ``i``. Ties go to the lower
        document index; missing places hold index ``-1`` and score ``-inf``.
        Queries are processed ``batch`` at a time to bound memory.
        """
        q_all = self.query_matrix(queries)
        weights = self._term_weights(model)
        out_idx = np.full((q_all.shape[0], k), -1, dtype=np.int64)
        out_score = np.full((q_all.shape[0], k), -np.inf)
        for start in range(0, q_all.shape[0], batch):
            q = q_all[start:start + batch]
            hits = (q @ self.tf.T).tocoo()  # structure = (query, doc) pairs sharing a term
            qi, di = hits.row.astype(np.int64), hits.col.astype(np.int64)
            if exclude is not None:
                banned = np.concatenate(
                    [i * self.n_docs + np.asarray(e, dtype=np.int64)
                     for i, e in enumerate(exclude[start:start + batch])]
                    + [np.zeros(0, dtype=np.int64)]
                )
                keep = ~np.isin(qi * self.n_docs + di, banned)
                qi, di = qi[keep], di[keep]
            scores = _values_at(q @ weights.T, qi, di) + self._dense_part(q, model, qi, di)
            order = np.lexsort((di, -scores, qi))  # by query, then score desc, then doc index
            qi, di, scores = qi[order], di[order], scores[order]
            place = np.arange(len(qi)) - np.searchsorted(qi, qi)
            take = place < k
            out_idx[start + qi[take], place[take]] = di[take]
            out_score[start + qi[take], place[take]] = scores[take]
        return out_idx, out_score

    # ------------------------------------------------------------- persistence
    def to_dir(self, path: str | os.PathLike) -> None:
        """Save the index as ``tf.npz`` + ``terms.json`` + ``params.json`` under ``path``."""
        from srdiv.io import atomic_path

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        with atomic_path(path / "tf.npz") as tmp:
            with open(tmp, "wb") as fh:
                sp.save_npz(fh, self.tf)
        with atomic_path(path / "terms.json") as tmp:
            tmp.write_text(json.dumps(self.terms))
        with atomic_path(path / "params.json") as tmp:
            tmp.write_text(json.dumps({"k1": self.k1, "b": self.b, "mu": self.mu}))

    @classmethod
    def from_dir(cls, path: str | os.PathLike) -> FieldIndex:
        """Load an index saved by :meth:`to_dir`."""
        from srdiv.io import InputError

        path = Path(path)
        for name in ("tf.npz", "terms.json", "params.json"):
            if not (path / name).exists():
                raise InputError(path / name, "index file not found")
        params = json.loads((path / "params.json").read_text())
        terms = json.loads((path / "terms.json").read_text())
        return cls(sp.load_npz(path / "tf.npz"), terms, **params)
