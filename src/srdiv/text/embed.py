"""Distributed document representations: doc2vec (PV-DBOW), LDA topic vectors and SVD (LSA).

DSSA (Section 4.1) represents a document by a vector e_d from SVD, LDA or
doc2vec; LDA with 100 topics was its best, and NTN used the PLSA analogue.
The paper does not say which matrix its SVD factorises; here it is latent
semantic analysis: a truncated SVD of the tf-idf weighted term counts (the
LDA vocabulary), a document's vector its coordinates in the top
``num_topics`` singular directions (gensim's ``LsiModel``, seeded).
DSSA/DESA train doc2vec with window 5, NTN and MDP-DIV with 8. Both models
learn from all documents (title, body, anchor and URL text analysed by
:func:`srdiv.index.analysis.tokenize`); queries and suggestions get theirs
from pseudo-documents (:mod:`srdiv.text.pseudo_docs`), never from their own
few words.

PV-DBOW learns document vectors only; ``window`` matters only with
``dbow_words: 1``, which also trains skip-gram word vectors (several times
slower). DSSA and DESA do not say which they used; NTN and MDP-DIV state
window 8 with word training. ``params.yaml`` sets ``dbow_words: 1, window: 8``:
on wordnet-div those vectors carry the most relevance signal of the settings
measured (docs/benchmarks.md), and the built-in defaults (:mod:`srdiv.text.defaults`) are the same.

Determinism: gensim trains doc2vec bit for bit reproducibly only with one
worker thread (``workers: 1``, the default); more threads are faster but
interleave updates nondeterministically. LDA runs in one process with a fixed
``random_state``. doc2vec inference (:func:`infer_doc2vec`) reseeds before
every text, so a vector depends on its text only (and runs in parallel
processes without changing a bit); LDA inference (:func:`lda_topics`)
reseeds before every chunk of rows, so the same rows give the same vectors.

Vector tables are Parquet with key columns and ``vector`` as ``list<float32>``
(:func:`write_vectors`, :func:`read_vectors`).
"""

from __future__ import annotations

import functools
import os
import signal
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp
from tqdm.auto import tqdm

from srdiv.io import InputError, atomic_dir, atomic_path, check_keys, verify


# ------------------------------------------------------------------ vector tables
def write_vectors(keys: pd.DataFrame, vectors: np.ndarray, path: str | os.PathLike) -> None:
    """Write ``keys`` (e.g. ``docno`` or ``qid, sugg_id``) with ``vectors [rows, E]`` as ``vector``."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    rows, dim = vectors.shape
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * dim)
    column = pa.ListArray.from_arrays(offsets, pa.array(vectors.ravel()))
    table = pa.Table.from_pandas(keys.reset_index(drop=True), preserve_index=False)
    table = table.append_column("vector", column)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_vectors(path: str | os.PathLike, keys: Sequence[str] = ()) -> tuple[pd.DataFrame, np.ndarray]:
    """Read a vector table: ``(keys frame, vectors [rows, E] float32)``; it must have the text key
    columns ``keys`` (and any), a list of numbers per row, all finite, and at least one row."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "vector table not found")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as err:
        raise InputError(path, f"not a readable Parquet table ({str(err).splitlines()[0]})") from None
    if "vector" not in table.column_names:
        raise InputError(path, "vector table lacks the 'vector' column")
    given = [c for c in table.column_names if c != "vector"]
    if not given or any(k not in given for k in keys) or not all(
            pa.types.is_string(table.schema.field(c).type) or pa.types.is_large_string(table.schema.field(c).type)
            for c in given):
        need = ", ".join(keys) if keys else "docno, or qid and sugg_id"
        raise InputError(path, f"vector table needs the text key columns {need}; has {given}")
    if table.num_rows == 0:
        raise InputError(path, "vector table has no rows")
    kind = table.schema.field("vector").type
    if not ((pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind))
            and (pa.types.is_floating(kind.value_type) or pa.types.is_integer(kind.value_type))):
        raise InputError(path, f"column 'vector' must hold lists of numbers, holds {kind}")
    column = table.column("vector").combine_chunks()
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0]) + 1
        raise InputError(path, f"vector in row {row} is missing")
    if pa.types.is_fixed_size_list(kind):
        column = pa.ListArray.from_arrays(pa.array(np.arange(len(column) + 1, dtype=np.int32) * kind.list_size),
                                          column.flatten())
    lengths = np.diff(column.offsets.to_numpy())
    dim = int(lengths[0]) if len(lengths) else 0
    if len(lengths) and (lengths != dim).any():
        raise InputError(path, "vectors of different lengths")
    vectors = column.flatten().to_numpy(zero_copy_only=False).astype(np.float64).reshape(len(lengths), dim)
    finite = np.isfinite(vectors).all(axis=1) & (np.abs(vectors) <= np.finfo(np.float32).max).all(axis=1)
    if not finite.all():
        raise InputError(path, f"vector in row {int(np.flatnonzero(~finite)[0]) + 1} has a value that is not a "
                               "finite float32")
    vectors = vectors.astype(np.float32)
    keys = table.drop(["vector"]).to_pandas()
    check_keys(path, keys, given, "vector table")
    return keys, vectors


def warn_zero(n: int, total: int, what: str) -> None:
    """Warn that ``n`` of ``total`` items fell back to zero vectors."""
    if n:
        warnings.warn(f"{n} of {total} {what}; their vectors are set to zero", stacklevel=3)


# ------------------------------------------------------------------------ doc2vec
def train_doc2vec(tokens: list[list[str]], params: dict, seed: int):
    """Train PV-DBOW (``dm=0``) paragraph vectors, one per document (tag = row index).

    ``params``: the ``embed.doc2vec`` section (vector_size, window, alpha,
    min_alpha, min_count, negative, epochs, workers, dbow_words).
    """
    from gensim.models.doc2vec import Doc2Vec, TaggedDocument

    corpus = [TaggedDocument(words, [i]) for i, words in enumerate(tokens)]
    return Doc2Vec(
        corpus, dm=0, dbow_words=int(params["dbow_words"]),
        vector_size=int(params["vector_size"]), window=int(params["window"]),
        alpha=float(params["alpha"]), min_alpha=float(params["min_alpha"]),
        min_count=int(params["min_count"]), negative=int(params["negative"]),
        epochs=int(params["epochs"]), workers=int(params["workers"]), seed=seed,
    )


def doc2vec_vectors(model, tokens: list[list[str]]) -> np.ndarray:
    """Trained document vectors ``[docs, E]``; a document with no word in the vocabulary gets zeros."""
    vectors = model.dv.vectors[: len(tokens)].astype(np.float32).copy()
    empty = np.array([not any(w in model.wv.key_to_index for w in words) for words in tokens], dtype=bool)
    vectors[empty] = 0.0
    warn_zero(int(empty.sum()), len(tokens), "documents have no word in the doc2vec vocabulary")
    return vectors


def _stable_hash(text: str) -> int:
    """A hash of ``text`` that is the same in every process (Python's ``hash`` of str is not)."""
    return zlib.crc32(text.encode("utf-8"))


def _infer_serial(model, token_lists: list[list[str]], seed: int, epochs: int | None) -> np.ndarray:
    """:func:`infer_doc2vec` in this process."""
    from gensim.models import doc2vec
    from gensim.models.keyedvectors import pseudorandom_weak_vector

    out = np.zeros((len(token_lists), model.vector_size), dtype=np.float32)
    known = model.wv.key_to_index
    start = functools.partial(pseudorandom_weak_vector, hashfxn=_stable_hash)
    with mock.patch.object(doc2vec, "pseudorandom_weak_vector", start):
        for i, words in enumerate(token_lists):
            if any(w in known for w in words):
                model.random = np.random.RandomState(seed)
                out[i] = model.infer_vector(words, epochs=epochs)
    return out


_worker_model = None
"""The model a worker process infers with (set once per process by :func:`_init_worker`)."""


def _init_worker(model) -> None:
    """A worker holds the model and ends quietly when the pool terminates it (SIGTERM's default action),
    whatever handler the parent had installed (srdiv's raises ``Terminated`` in the parent only)."""
    global _worker_model
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _worker_model = model


def _infer_in_worker(task: tuple[list[list[str]], int, int | None]) -> np.ndarray:
    return _infer_serial(_worker_model, *task)


def infer_doc2vec(model, token_lists: list[list[str]], seed: int, epochs: int | None = None,
                  workers: int = 1, chunk: int = 256, desc: str = "doc2vec inference") -> np.ndarray:
    """Infer vectors ``[texts, E]`` of new texts; a text with no known word gets zeros.

    gensim seeds a new text's starting vector with Python's per-process
    ``hash`` of the text and draws negative samples from the model's shared
    generator; here the start uses a process-independent hash and the
    generator is reset to ``seed`` before every text, so a vector depends on
    its text only: results are reproducible, independent of order, and the
    same with any number of ``workers`` (processes, ``chunk`` texts per task).
    """
    chunks = [token_lists[i:i + chunk] for i in range(0, len(token_lists), chunk)]
    bar = functools.partial(tqdm, total=len(chunks), desc=desc, leave=False)
    if workers <= 1 or len(chunks) <= 1:
        parts = [_infer_serial(model, part, seed, epochs) for part in bar(chunks)]
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(workers, _init_worker, (model,)) as pool:
            parts = list(bar(pool.imap(_infer_in_worker, [(part, seed, epochs) for part in chunks])))
    return np.concatenate(parts) if parts else np.zeros((0, model.vector_size), dtype=np.float32)


# ---------------------------------------------------------------------------- LDA
def prune_vocabulary(bow: sp.csr_matrix, no_below: int, no_above: float) -> np.ndarray:
    """Term columns kept for LDA: in at least ``no_below`` documents and at most a ``no_above`` share."""
    df = np.bincount(bow.indices, minlength=bow.shape[1])
    return np.flatnonzero((df >= no_below) & (df <= no_above * bow.shape[0]))


def train_lda(bow: sp.csr_matrix, terms: list[str], params: dict, seed: int):
    """Train LDA (Blei et al. 2003, online variational Bayes) on counts ``bow [docs, terms]``.

    ``params``: the ``embed.lda`` section (num_topics, passes, iterations, chunksize).
    ``terms`` name the columns of ``bow``.
    """
    from gensim.matutils import Sparse2Corpus
    from gensim.models import LdaModel

    return LdaModel(
        Sparse2Corpus(bow, documents_columns=False), id2word=dict(enumerate(terms)),
        num_topics=int(params["num_topics"]), passes=int(params["passes"]),
        iterations=int(params["iterations"]), chunksize=int(params["chunksize"]),
        random_state=seed,
    )


def lda_topics(model, bow: sp.csr_matrix, seed: int, chunk: int = 4096) -> np.ndarray:
    """Topic distributions ``[docs, topics]`` (normalised variational gamma); empty rows get zeros.

    ``bow [docs, terms]`` uses the model's term ids. The inference generator is
    reset to ``seed`` before each chunk of ``chunk`` rows.
    """
    from gensim.matutils import Sparse2Corpus

    out = np.zeros((bow.shape[0], model.num_topics), dtype=np.float32)
    bow = sp.csr_matrix(bow)
    for start in tqdm(range(0, bow.shape[0], chunk), desc="LDA inference", leave=False):
        part = bow[start:start + chunk]
        model.random_state = np.random.RandomState(seed)
        gamma, _ = model.inference(list(Sparse2Corpus(part, documents_columns=False)))
        out[start:start + part.shape[0]] = gamma / gamma.sum(axis=1, keepdims=True)
    out[bow.getnnz(axis=1) == 0] = 0.0
    return out


# ---------------------------------------------------------------------- SVD (LSA)
def train_svd(bow: sp.csr_matrix, terms: list[str], params: dict, seed: int):
    """Fit tf-idf weights and a rank-``num_topics`` truncated SVD of the weighted ``bow [docs, terms]``.

    ``params``: the ``embed.svd`` section (num_topics, power_iters). Returns ``(tfidf, lsi)``.
    """
    from gensim.matutils import Sparse2Corpus
    from gensim.models import LsiModel, TfidfModel

    corpus = Sparse2Corpus(bow, documents_columns=False)
    tfidf = TfidfModel(corpus, id2word=dict(enumerate(terms)))
    lsi = LsiModel(tfidf[corpus], id2word=dict(enumerate(terms)), num_topics=int(params["num_topics"]),
                   power_iters=int(params["power_iters"]), random_seed=seed)
    return tfidf, lsi


def svd_vectors(tfidf, lsi, bow: sp.csr_matrix) -> np.ndarray:
    """Coordinates ``[rows, num_topics]`` of the tf-idf weighted rows of ``bow`` (the models' term ids)
    in the SVD's topic space (fold-in); empty rows get zeros."""
    from gensim.matutils import Sparse2Corpus, corpus2dense

    corpus = lsi[tfidf[Sparse2Corpus(sp.csr_matrix(bow), documents_columns=False)]]
    return corpus2dense(corpus, num_terms=lsi.num_topics, num_docs=bow.shape[0]).T.astype(np.float32)


# ------------------------------------------------------------------------- stage
MODEL_FILES = {"doc2vec": "doc2vec.model", "lda": "lda.model", "tfidf": "tfidf.model", "svd": "svd.model"}
"""Trained models in the stage's output directory (gensim's own format, with companion files)."""


def save_model(model, out_dir: Path, name: str) -> None:
    """gensim ``save`` into a temporary folder, then move every file into ``out_dir`` (all or nothing).

    The same training writes the same bytes on any machine: gensim's records of the run are left out
    (:func:`_without_run_records`), and an LDA model is saved with gensim's fixed list of attributes kept
    apart (its default builds that list from a set, whose order changes from one process to the next)."""
    import tempfile

    from gensim.models import LdaModel

    _without_run_records(model)
    fixed_order = {"ignore": ()} if isinstance(model, LdaModel) else {}
    with tempfile.TemporaryDirectory(prefix=".save-", dir=out_dir) as tmp:
        model.save(str(Path(tmp) / name), **fixed_order)
        for file in sorted(Path(tmp).iterdir()):
            os.replace(file, out_dir / file.name)


def _without_run_records(model) -> None:
    """Drop what gensim records of a run from ``model`` and every gensim object it holds (a doc2vec model's
    word and document vectors, an LDA model's dictionary and state): the event log (``lifecycle_events``:
    dates, the machine's platform, seconds and words per second; None also stops further records) and
    word2vec's ``total_train_time``. Neither is read by training or inference."""
    from gensim.utils import SaveLoad

    todo, seen = [model], set()
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        obj.lifecycle_events = None
        if hasattr(obj, "total_train_time"):
            obj.total_train_time = 0.0
        todo.extend(value for value in vars(obj).values() if isinstance(value, SaveLoad))


def load_model(embed_dir: str | os.PathLike, kind: str):
    """Load a model saved by :func:`embed_documents`: ``doc2vec``, ``lda``, ``tfidf`` or ``svd``.

    gensim's ``load`` unpickles, which can run code: a model is loaded only from a directory whose
    every file is as ``srdiv embed`` wrote and recorded it (:func:`srdiv.io.verify`)."""
    from gensim.models import Doc2Vec, LdaModel, LsiModel, TfidfModel

    path = Path(embed_dir) / MODEL_FILES[kind]
    if not path.exists():
        raise InputError(path, f"trained {kind} model not found (run 'srdiv embed' first)")
    verify(embed_dir, "a directory of trained models", required=True)     # gensim unpickles: only srdiv's own
    cls = {"doc2vec": Doc2Vec, "lda": LdaModel, "tfidf": TfidfModel, "svd": LsiModel}[kind]
    try:
        return cls.load(str(path))
    except Exception as err:   # gensim unpickles: any failure means a file 'srdiv embed' did not write whole
        raise InputError(path, f"not a readable {kind} model of 'srdiv embed' ({type(err).__name__}: "
                               f"{str(err).splitlines()[0][:200] if str(err).strip() else ''}); run 'srdiv embed' "
                               "again") from None


def lda_terms(model) -> pd.Index:
    """The terms of a trained LDA model, in column order."""
    return pd.Index([model.id2word[i] for i in range(len(model.id2word))], dtype=object)


def embed_documents(docs: pd.DataFrame, params: dict, out_dir: str | os.PathLike) -> dict[str, float]:
    """Train doc2vec, LDA and SVD on ``docs``; write ``doc2vec.parquet``, ``lda.parquet``, ``svd.parquet``
    and the models into ``out_dir``, which is replaced as a whole (:func:`srdiv.io.atomic_dir`).

    ``params``: the ``embed`` section from :func:`srdiv.text.defaults.stage_params`.
    Returns seconds per step.
    """
    with atomic_dir(out_dir, marker="doc2vec.parquet") as tmp:
        return _embed_into(docs, params, tmp)


def _embed_into(docs: pd.DataFrame, params: dict, out_dir: Path) -> dict[str, float]:
    """:func:`embed_documents`'s work, into the (temporary) directory ``out_dir``."""
    import time

    from srdiv.index.analysis import tokenize_many
    from srdiv.index.sparse import count_matrix
    from srdiv.text.documents import TEXT_COLUMNS, join_columns

    seed, times = params["seed"], {}
    texts = join_columns(docs, TEXT_COLUMNS)
    keys = docs[["docno"]]

    tic = time.perf_counter()
    tokens = tokenize_many(texts)
    doc2vec = train_doc2vec(tokens, params["doc2vec"], seed)
    save_model(doc2vec, out_dir, MODEL_FILES["doc2vec"])
    write_vectors(keys, doc2vec_vectors(doc2vec, tokens), out_dir / "doc2vec.parquet")
    times["doc2vec"] = time.perf_counter() - tic

    tic = time.perf_counter()
    terms = pd.Index(sorted({tok for words in tokens for tok in words}), dtype=object)
    bow = count_matrix(tokens, terms)
    lda_params = params["lda"]
    keep = prune_vocabulary(bow, int(lda_params["no_below"]), float(lda_params["no_above"]))
    lda = train_lda(bow[:, keep], [terms[i] for i in keep], lda_params, seed)
    save_model(lda, out_dir, MODEL_FILES["lda"])
    topics = lda_topics(lda, bow[:, keep], seed)
    warn_zero(int((~topics.any(axis=1)).sum()), len(docs), "documents have no word in the LDA vocabulary")
    write_vectors(keys, topics, out_dir / "lda.parquet")
    times["lda"] = time.perf_counter() - tic

    tic = time.perf_counter()
    tfidf, svd = train_svd(bow[:, keep], [terms[i] for i in keep], params["svd"], seed)
    save_model(tfidf, out_dir, MODEL_FILES["tfidf"])
    save_model(svd, out_dir, MODEL_FILES["svd"])
    write_vectors(keys, svd_vectors(tfidf, svd, bow[:, keep]), out_dir / "svd.parquet")
    times["svd"] = time.perf_counter() - tic
    return times
