"""srdiv's retrieval, diversifiers and trained models as PyTerrier transformers (``pip install srdiv[pyterrier]``).

Frames follow PyTerrier's conventions: topics ``qid, query``; results ``qid, query, docno, score, rank``
(rank from 0, best first). Nothing here needs Java.

* :class:`InitialRun`: a collection's own first-stage run (its ``run`` table) for the topics given; ``% k``
  keeps each query's top ``k``.
* :class:`Retriever`: srdiv's sparse index (:class:`srdiv.index.sparse.FieldIndex`: BM25, Dirichlet query
  likelihood, TF-IDF) over chosen document fields; retrieves the top ``k`` of topics, or scores the
  ``docno`` of each row when the input has one (a scorer).
* :class:`XQuAD`, :class:`PM2`, :class:`HxQuAD`, :class:`HPM2`, :class:`MMR`: re-rank each query's
  results with srdiv's models (:mod:`srdiv.models.xquad`, :mod:`srdiv.models.pm2`,
  :mod:`srdiv.models.mmr`). ``P(d|q)`` and ``P(d|i)`` come from the ``scorer`` transformer, which sees the
  query and each suggestion as a query of its own (:func:`string_qid`); its scores become probabilities
  within each list as in the pipeline (``prob``: softmax or minmax). Suggestions: a frame
  ``qid, subtopic, level, query`` (``parent`` for level 2, optional ``weight``) or a collection's.
* :class:`Relevance`: a trained relevance row of the pipeline (ListMLE, the prior of the unsupervised
  rows) over the pipeline's relevance features, as a scorer.
* :class:`TrainedModel`: any trained row of the pipeline re-ranks the candidates it has features for.
* :func:`qrels` and :data:`MEASURES` (the five of the main table; :data:`ALL_MEASURES`, all seventeen) evaluate
  with ``pt.Experiment`` by ir_measures' names; :func:`marked_table` formats its result as the tables do.

A frame lacking a column a transformer needs is one :class:`srdiv.io.InputError`. Every transformer has a
readable name (``str``/``repr``: ``XQuAD(lam=0.5)``, ``TrainedModel(DSSA, folds 1-5)``), which ``pt.Experiment``
writes in its ``name`` column for a pipeline (``(InitialRun(wordnet-div) >> RankCutoff(50) >> XQuAD(lam=0.5))``).

Modules: :mod:`~srdiv.pyterrier.frames` (frames, measures, names), :mod:`~srdiv.pyterrier.retrieval` (first
stage), :mod:`~srdiv.pyterrier.diversifiers`, :mod:`~srdiv.pyterrier.trained` (trained rows); every name above is
importable from ``srdiv.pyterrier``.
"""

import srdiv.models  # noqa: F401  (registers every model)
from srdiv.pyterrier.diversifiers import (
    HPM2,
    MMR,
    PM2,
    Diversifier,
    HxQuAD,
    ScorePrior,
    XQuAD,
    slots,
    string_qid,
    suggestion_frame,
)
from srdiv.pyterrier.frames import (
    ALL_MEASURES,
    CPU,
    MEASURES,
    RESULT_COLUMNS,
    as_collection,
    collection_name,
    described,
    folds_text,
    marked_table,
    qrels,
    ranked,
    require,
    result_columns,
    scored,
    topics,
    with_ranks,
)
from srdiv.pyterrier.retrieval import InitialRun, Retriever
from srdiv.pyterrier.trained import FoldModels, Relevance, TrainedModel

__all__ = [
    "ALL_MEASURES", "CPU", "HPM2", "MEASURES", "MMR", "PM2", "RESULT_COLUMNS", "Diversifier", "FoldModels", "HxQuAD",
    "InitialRun", "Relevance", "Retriever", "ScorePrior", "TrainedModel", "XQuAD", "as_collection", "collection_name",
    "described", "folds_text", "marked_table", "qrels", "ranked", "require", "result_columns", "scored", "slots",
    "string_qid", "suggestion_frame", "topics", "with_ranks",
]
