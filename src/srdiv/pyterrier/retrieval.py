"""First-stage transformers: a collection's own run, and srdiv's sparse index."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyterrier as pt

from srdiv.collection.schema import Collection
from srdiv.index.scoring import DEFAULT_SCORING
from srdiv.index.sparse import MODELS as RETRIEVAL_MODELS
from srdiv.index.sparse import FieldIndex
from srdiv.io import InputError
from srdiv.pyterrier.frames import (
    RESULT_COLUMNS,
    as_collection,
    collection_name,
    described,
    require,
    result_columns,
    scored,
)
from srdiv.text.documents import doc_positions, join_columns, load_docs


class InitialRun(pt.Transformer):
    """A collection's first-stage run (its ``run`` table: the initial ranking its qrels were made for, the
    candidates the pipeline's rows re-rank) as a result frame for the topics given (``qid``; a ``query`` column
    is kept, else the collection's query is used), in the topics' order: ranks from 0 in the run's order, the
    run's scores. ``InitialRun(coll) % 50`` keeps each query's top 50 by rank, the candidates the pipeline's rows
    re-rank (``rank_docs``). ``pt.Experiment`` orders results by score (ties by docno), not by rank: where the
    run's scores tie it measures another order than the run's (docs/pyterrier.md). A topic the run lacks is one
    :class:`InputError`."""

    def __init__(self, collection: Collection | str | os.PathLike):
        coll = as_collection(collection)
        self.name = collection_name(collection)
        run = coll.run.assign(qid=coll.run["qid"].astype(str)).sort_values(["qid", "rank"], kind="stable")
        self.run = run.assign(rank=run.groupby("qid").cumcount().to_numpy())[["qid", "docno", "score", "rank"]]
        self.queries = coll.topics.assign(qid=coll.topics["qid"].astype(str))[["qid", "query"]]

    def __repr__(self) -> str:
        return described(type(self).__name__, self.name)

    def transform_outputs(self, input_columns: list[str]) -> list[str]:
        require(pd.DataFrame(columns=list(input_columns)), ["qid"], f"{type(self).__name__} input")
        return RESULT_COLUMNS + [c for c in input_columns if c not in RESULT_COLUMNS]

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        who = type(self).__name__
        require(inp, ["qid"], f"{who} input")
        topics = inp.drop(columns=[c for c in ("docno", "score", "rank") if c in inp.columns])
        topics = topics.assign(qid=topics["qid"].astype(str)).drop_duplicates("qid")
        if "query" not in topics.columns:
            topics = topics.merge(self.queries, how="left")
        lost = sorted(set(topics["qid"]) - set(self.run["qid"]))
        if lost:
            raise InputError(who, f"the run of {self.name} has no documents for query '{lost[0]}'")
        out = topics.assign(order=np.arange(len(topics))).merge(self.run, on="qid")
        out = out.sort_values(["order", "rank"], kind="stable").drop(columns="order").reset_index(drop=True)
        return out[RESULT_COLUMNS + [c for c in out.columns if c not in RESULT_COLUMNS]]


class Retriever(pt.Transformer):
    """srdiv's sparse index over ``fields`` of the documents: ``model`` (``bm25``, ``lmir``, ``tfidf``;
    :mod:`srdiv.index.sparse`) with ``k1``, ``b``, ``mu``.

    Topics (``qid, query``) get their top ``k`` hits; ``exclude`` (``qid, docno``) lists documents never
    returned for a query. A frame with ``docno`` is scored row by row instead (a scorer for the diversifiers).
    ``docs``: a documents table or a collection directory holding one.
    """

    def __init__(self, docs: pd.DataFrame | str | os.PathLike, fields: Sequence[str] = ("title", "body"),
                 model: str = "bm25", k: int = 50, exclude: pd.DataFrame | None = None,
                 k1: float = DEFAULT_SCORING.k1, b: float = DEFAULT_SCORING.b, mu: float = DEFAULT_SCORING.mu):
        self.docs = docs if isinstance(docs, pd.DataFrame) else load_docs(docs)
        self.fields, self.model, self.k, self.exclude = tuple(fields), model, int(k), exclude
        if model not in RETRIEVAL_MODELS:
            raise InputError(type(self).__name__, f"unknown model '{model}' (models: {', '.join(RETRIEVAL_MODELS)})")
        self.index = FieldIndex.from_texts(join_columns(self.docs, self.fields), k1=k1, b=b, mu=mu)
        self.changed = {key: value for key, value in {"k1": k1, "b": b, "mu": mu}.items()
                        if value != getattr(DEFAULT_SCORING, key)}     # named in the repr when changed

    def __repr__(self) -> str:
        excluded = f"{len(self.exclude)} pairs" if self.exclude is not None else None
        return described(type(self).__name__, self.model, "+".join(self.fields), k=self.k, **self.changed,
                         exclude=excluded)

    def transform_outputs(self, input_columns: list[str]) -> list[str]:
        if "docno" in input_columns:
            return result_columns(input_columns, f"{type(self).__name__} input")
        return RESULT_COLUMNS

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        require(inp, ["qid", "query"], f"{type(self).__name__} input")
        if "docno" in inp.columns:
            string, texts = pd.factorize(inp["qid"].astype(str) + "\0" + inp["query"].astype(str))
            slot = pd.Series(string).groupby(string).cumcount().to_numpy()
            rows = np.full((len(texts), int(slot.max(initial=-1)) + 1), -1, np.int64)
            rows[string, slot] = doc_positions(self.docs, inp["docno"].to_numpy())
            scores = self.index.score([t.partition("\0")[2] for t in texts], self.model, rows)
            return scored(inp, scores[string, slot])
        queries = inp[["qid", "query"]].drop_duplicates("qid").reset_index(drop=True)
        exclude = None
        if self.exclude is not None:
            pos = self.exclude.assign(d=doc_positions(self.docs, self.exclude["docno"].to_numpy()))
            by_qid = pos[pos["d"] >= 0].groupby("qid")["d"].agg(np.asarray)
            exclude = [by_qid.get(q, np.zeros(0, np.int64)) for q in queries["qid"]]
        top, scores = self.index.top_k(queries["query"].tolist(), self.k, self.model, exclude=exclude)
        q, r = np.nonzero(top >= 0)
        return pd.DataFrame({"qid": queries["qid"].to_numpy()[q], "query": queries["query"].to_numpy()[q],
                             "docno": self.docs["docno"].to_numpy()[top[q, r]], "score": scores[q, r],
                             "rank": r})
