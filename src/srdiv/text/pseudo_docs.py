"""Query and suggestion representations from pseudo-documents (DSSA Section 4.1).

"We first retrieve top Z documents using some basic retrieval model (such as
BM25). These documents are concatenated as a pseudo document, then similar to
e_d, a distributed representation of size E_q is generated." Here the model is
BM25 over one field of the whole collection (``text`` by default), Z = 20
(DSSA Section 5.3), and the representation is inferred with the trained
doc2vec model and the trained LDA model (:mod:`srdiv.text.embed`).

Strings are the collection's queries (``sugg_id == ""``) and its level-1 and
level-2 suggestions. A string with no BM25 hit gets a zero vector (with a
warning that counts them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from srdiv.collection.schema import Collection
from srdiv.io import InputError, atomic_dir

STRING_COLUMNS = ["qid", "sugg_id", "text"]


def query_strings(coll: Collection) -> pd.DataFrame:
    """Every query and suggestion: ``qid, sugg_id, text`` (``sugg_id == ""`` is the query itself).

    Queries come first in topic order, then suggestions in table order.
    """
    queries = pd.DataFrame({"qid": coll.topics["qid"], "sugg_id": "", "text": coll.topics["query"]})
    return pd.concat([queries, coll.suggestions[STRING_COLUMNS]], ignore_index=True)


def concat_tokens(doc_tokens: list[list[str]], idx: np.ndarray) -> list[list[str]]:
    """Token lists of pseudo-documents: row ``i`` concatenates ``doc_tokens[j]`` for ``j`` in ``idx[i]``.

    ``idx [strings, Z]`` holds document rows, ``-1`` for no hit.
    """
    return [[tok for j in row if j >= 0 for tok in doc_tokens[j]] for row in idx]


def sum_rows(bow: sp.csr_matrix, idx: np.ndarray) -> sp.csr_matrix:
    """Bag of words ``[strings, terms]`` of pseudo-documents: the sum of the rows ``idx [strings, Z]``."""
    rows, cols = np.nonzero(idx >= 0)
    select = sp.csr_matrix((np.ones(len(rows)), (rows, idx[rows, cols])), shape=(idx.shape[0], bow.shape[0]))
    return sp.csr_matrix(select @ bow)


def retrieve(docs: pd.DataFrame, texts: list[str], params: dict) -> np.ndarray:
    """Top-Z BM25 documents ``[strings, Z]`` (rows of ``docs``, ``-1`` where fewer hits).

    ``params``: the ``pseudo_docs`` section (``z``, ``field``) and BM25's ``k1``, ``b``.
    """
    from srdiv.index.sparse import FieldIndex
    from srdiv.text.documents import FIELDS, join_columns

    field = params["field"]
    if field not in FIELDS:
        raise InputError("params.yaml", f"pseudo_docs.field must be one of {list(FIELDS)}, not {field!r}")
    index = FieldIndex.from_texts(join_columns(docs, FIELDS[field]), k1=params["k1"], b=params["b"])
    idx, _ = index.top_k(texts, int(params["z"]), "bm25")
    return idx


def pseudo_document_vectors(coll: Collection, docs: pd.DataFrame, embed_dir, params: dict,
                            out_dir) -> dict[str, float]:
    """Write ``doc2vec.parquet``, ``lda.parquet`` and ``svd.parquet`` (``qid, sugg_id, vector``) into
    ``out_dir``, which is replaced as a whole (:func:`srdiv.io.atomic_dir`).

    ``params``: :func:`srdiv.text.defaults.stage_params` of ``pseudo_docs``
    with BM25's ``k1`` and ``b`` added from ``features``. Returns seconds per step.
    """
    with atomic_dir(out_dir, marker="doc2vec.parquet") as tmp:
        return _pseudo_vectors_into(coll, docs, embed_dir, params, tmp)


def _pseudo_vectors_into(coll: Collection, docs: pd.DataFrame, embed_dir, params: dict, out_dir) -> dict[str, float]:
    """:func:`pseudo_document_vectors`' work, into the (temporary) directory ``out_dir``."""
    import time

    from srdiv.index.analysis import tokenize_many
    from srdiv.index.sparse import count_matrix
    from srdiv.text.documents import TEXT_COLUMNS, join_columns
    from srdiv.text.embed import infer_doc2vec, lda_terms, lda_topics, load_model, svd_vectors, warn_zero, write_vectors

    doc2vec, lda = load_model(embed_dir, "doc2vec"), load_model(embed_dir, "lda")
    strings = query_strings(coll)
    keys = strings[["qid", "sugg_id"]]
    seed, times = params["seed"], {}

    tic = time.perf_counter()
    idx = retrieve(docs, strings["text"].tolist(), params)
    warn_zero(int((idx[:, 0] < 0).sum()), len(strings), "queries and suggestions have no BM25 hit")
    used, local = np.unique(idx[idx >= 0], return_inverse=True)
    local_idx = np.full(idx.shape, -1, dtype=np.int64)
    local_idx[idx >= 0] = local
    texts = join_columns(docs.iloc[used], TEXT_COLUMNS)
    times["retrieve"] = time.perf_counter() - tic

    tic = time.perf_counter()
    tokens = tokenize_many(texts)
    unique_idx, same = np.unique(local_idx, axis=0, return_inverse=True)  # strings with the same top Z
    vectors = infer_doc2vec(doc2vec, concat_tokens(tokens, unique_idx), seed, params["infer_epochs"],
                            workers=int(params["workers"]), desc="pseudo-doc doc2vec")
    write_vectors(keys, vectors[same.ravel()], out_dir / "doc2vec.parquet")
    times["doc2vec"] = time.perf_counter() - tic

    tic = time.perf_counter()
    bow = sum_rows(count_matrix(tokens, lda_terms(lda)), unique_idx)
    write_vectors(keys, lda_topics(lda, bow, seed)[same.ravel()], out_dir / "lda.parquet")
    times["lda"] = time.perf_counter() - tic

    tic = time.perf_counter()     # the SVD shares LDA's vocabulary (srdiv.text.embed.embed_documents)
    tfidf, svd = load_model(embed_dir, "tfidf"), load_model(embed_dir, "svd")
    write_vectors(keys, svd_vectors(tfidf, svd, bow)[same.ravel()], out_dir / "svd.parquet")
    times["svd"] = time.perf_counter() - tic
    return times
