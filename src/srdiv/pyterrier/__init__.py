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
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Sequence

import ir_measures
import numpy as np
import pandas as pd
import pyterrier as pt
import torch

import srdiv.models  # noqa: F401  (registers every model)
from srdiv.collection.schema import Collection, load_collection
from srdiv.features.bundle import Bundle
from srdiv.features.relevance import candidate_matrix
from srdiv.index.sparse import MODELS as RETRIEVAL_MODELS
from srdiv.index.sparse import FieldIndex
from srdiv.io import InputError
from srdiv.metrics.evaluate import MEASURES as MEASURE_NAMES
from srdiv.models.base import DiversityModel
from srdiv.models.ranking import rank_bundle, run_frame
from srdiv.registry import MODELS
from srdiv.report.builder import MAIN_MEASURES
from srdiv.text.documents import doc_positions, join_columns, load_docs
from srdiv.text.embed import read_vectors
from srdiv.features.folds import fold_queries
from srdiv.train.job import MODEL_FILE, Trained

MEASURES = [ir_measures.parse_measure(name) for name in MAIN_MEASURES]
"""The five measures of the main table as ir_measures objects (``ERR_IA@20``, ``alpha_nDCG@20``, ``NRBP``,
``P_IA@20``, ``StRecall@20``), for ``pt.Experiment``."""
ALL_MEASURES = [ir_measures.parse_measure(name) for name in MEASURE_NAMES]
"""Every official measure srdiv computes (``srdiv evaluate``'s seventeen: @5, @10, @20 and NRBP, nNRBP)."""

CPU = torch.device("cpu")


def require(frame: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    """An :class:`InputError` at ``where`` naming the columns the frame lacks."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(where, f"frame lacks columns {missing} (it has {list(frame.columns)})")


def as_collection(collection: Collection | str | os.PathLike) -> Collection:
    """A loaded collection, or the collection directory at that path."""
    return collection if isinstance(collection, Collection) else load_collection(collection)


def qrels(collection: Collection | str | os.PathLike) -> pd.DataFrame:
    """The collection's diversity qrels for ``pt.Experiment``: ``qid, docno, label, iteration`` (the subtopic)."""
    table = as_collection(collection).qrels
    return pd.DataFrame({"qid": table["qid"], "docno": table["docno"], "label": table["rel"].astype(int),
                         "iteration": table["sid"]})


def topics(collection: Collection | str | os.PathLike) -> pd.DataFrame:
    """The collection's topics as PyTerrier topics ``qid, query``."""
    return as_collection(collection).topics[["qid", "query"]].copy()


def marked_table(table: pd.DataFrame, alpha: float = 0.05, digits: int = 3) -> pd.DataFrame:
    """``pt.Experiment``'s result -> ``name`` and each measure's mean to ``digits`` places (in :data:`ALL_MEASURES`'
    order), as the report's tables write them: ▲ (▼) where the row's mean is above (below) the ``baseline``'s and its p-value is below ``alpha``.

    The p-value is the one ``pt.Experiment`` computed (paired t-test), after its ``correction`` (e.g. ``"holm"``)
    when it made one; a row whose test has no p-value (no difference on any query) is not marked, nor is any row
    of a result without a ``baseline``.
    """
    require(table, ["name"], "marked_table input")
    tails = (" +", " -", " p-value", " reject", " p-value corrected")
    measures = [c for c in table.columns if c != "name" and not c.endswith(tails)]
    known = {name: i for i, name in enumerate(MEASURE_NAMES)}      # pt.Experiment's column order varies by run
    measures.sort(key=lambda m: (known.get(m, len(known)), m))
    out = table[["name"]].copy()
    for m in measures:
        values = table[m].map(f"{{:.{digits}f}}".format)
        p = table.get(f"{m} p-value corrected", table.get(f"{m} p-value"))
        if p is not None:
            baseline = table.loc[table[f"{m} +"].isna(), m].iloc[0]
            arrow = (table[m] > baseline).map({True: "▲", False: "▼"})
            values += arrow.where(p.astype(float) < alpha, "")
        out[m] = values
    return out


def ranked(results: pd.DataFrame) -> pd.DataFrame:
    """Results in each query's order (by ``rank`` when present, else by ``score`` descending, stable)."""
    key = ["qid", "rank"] if "rank" in results.columns else ["qid", "score"]
    return results.sort_values(key, ascending=[True, "rank" in results.columns], kind="stable")


RESULT_COLUMNS = ["qid", "query", "docno", "score", "rank"]


def result_columns(input_columns: Sequence[str], where: str) -> list[str]:
    """A re-ranker's output columns (``transform_outputs``, PyTerrier's inspection): the input's, results first."""
    require(pd.DataFrame(columns=list(input_columns)), ["qid", "docno"], where)
    front = [c for c in RESULT_COLUMNS if c in input_columns or c in ("score", "rank")]
    return front + [c for c in input_columns if c not in front]


def scored(frame: pd.DataFrame, scores: np.ndarray) -> pd.DataFrame:
    """``frame`` with ``scores``, each query's rows best first with ranks from 0 (ties in input order)."""
    frame = frame.assign(score=scores).sort_values(["qid", "score"], ascending=[True, False], kind="stable")
    return frame.assign(rank=frame.groupby("qid").cumcount().to_numpy()).reset_index(drop=True)


def with_ranks(run: pd.DataFrame, inputs: pd.DataFrame) -> pd.DataFrame:
    """``run`` (``qid, docno, rank`` from 1, ``score``) with PyTerrier's 0-based ranks and the inputs' other columns."""
    extra = inputs.drop(columns=[c for c in ("score", "rank") if c in inputs.columns])
    out = run.assign(rank=run["rank"] - 1).merge(extra, on=["qid", "docno"], how="left")
    front = [c for c in RESULT_COLUMNS if c in out.columns]
    return out[front + [c for c in out.columns if c not in front]]


def described(name: str, *values, **keywords) -> str:
    """``name(v1, v2, k=v)``: a transformer's readable name from its settings (``None`` values left out)."""
    parts = [str(v) for v in values if v is not None] + [f"{k}={v}" for k, v in keywords.items() if v is not None]
    return f"{name}({', '.join(parts)})"


def folds_text(folds: Sequence[int]) -> str:
    """``fold 1``, ``folds 1-5`` (a run of consecutive folds) or ``folds 1, 3``."""
    folds = sorted(folds)
    if len(folds) == 1:
        return f"fold {folds[0]}"
    consecutive = folds == list(range(folds[0], folds[-1] + 1))
    return f"folds {folds[0]}-{folds[-1]}" if consecutive else f"folds {', '.join(map(str, folds))}"


def collection_name(collection: Collection | str | os.PathLike) -> str:
    """The name a collection goes by: its directory's (``data/collections/<name>``), or the dataset's for the
    pipeline's copy (``work/<dataset>/collection``); ``collection`` for one loaded without a path."""
    path = Path(collection) if not isinstance(collection, Collection) else collection.path
    if path is None:
        return "collection"
    return path.parent.name if path.name == "collection" and path.parent.name else path.name


# ----------------------------------------------------------------------------------------------- first stage
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


# ----------------------------------------------------------------------------------------------- first stage
class Retriever(pt.Transformer):
    """srdiv's sparse index over ``fields`` of the documents: ``model`` (``bm25``, ``lmir``, ``tfidf``;
    :mod:`srdiv.index.sparse`) with ``k1``, ``b``, ``mu``.

    Topics (``qid, query``) get their top ``k`` hits; ``exclude`` (``qid, docno``) lists documents never
    returned for a query. A frame with ``docno`` is scored row by row instead (a scorer for the diversifiers).
    ``docs``: a documents table or a collection directory holding one.
    """

    def __init__(self, docs: pd.DataFrame | str | os.PathLike, fields: Sequence[str] = ("title", "body"),
                 model: str = "bm25", k: int = 50, exclude: pd.DataFrame | None = None,
                 k1: float = 1.2, b: float = 0.75, mu: float = 2000.0):
        self.docs = docs if isinstance(docs, pd.DataFrame) else load_docs(docs)
        self.fields, self.model, self.k, self.exclude = tuple(fields), model, int(k), exclude
        if model not in RETRIEVAL_MODELS:
            raise InputError(type(self).__name__, f"unknown model '{model}' (models: {', '.join(RETRIEVAL_MODELS)})")
        self.index = FieldIndex.from_texts(join_columns(self.docs, self.fields), k1=k1, b=b, mu=mu)
        defaults = {"k1": 1.2, "b": 0.75, "mu": 2000.0}          # those of the signature: named when changed
        self.changed = {key: value for key, value in {"k1": k1, "b": b, "mu": mu}.items() if value != defaults[key]}

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


# ------------------------------------------------------------------------------------------------ diversifiers
def string_qid(qid: pd.Series, subtopic: pd.Series) -> pd.Series:
    """The qid a scorer sees for a query (``qid``) or one of its suggestions (``qid/subtopic``)."""
    return qid.where(subtopic == "", qid + "/" + subtopic)


def suggestion_frame(suggestions: pd.DataFrame | Collection | str | os.PathLike) -> pd.DataFrame:
    """Suggestions as ``qid, subtopic, level, query, parent, weight`` (a collection's ``sugg_id`` is the subtopic)."""
    if not isinstance(suggestions, pd.DataFrame):
        table = as_collection(suggestions).suggestions
        suggestions = table.rename(columns={"sugg_id": "subtopic", "text": "query"})
    require(suggestions, ["qid", "subtopic", "level", "query"], "suggestions input")
    if (suggestions["level"] == 2).any():
        require(suggestions, ["parent"], "level-2 suggestions input")
    frame = suggestions.assign(**{c: suggestions[c].astype(str) for c in ("qid", "subtopic")})
    frame = frame.assign(parent=frame.get("parent", pd.Series("", index=frame.index)).fillna("").astype(str),
                         weight=frame.get("weight", pd.Series(1.0, index=frame.index)).astype(float))
    return frame[["qid", "subtopic", "level", "query", "parent", "weight"]]


def slots(frame: pd.DataFrame, qids: pd.Index) -> tuple[pd.DataFrame, int]:
    """``frame`` rows of known queries with their query row ``q`` and ``slot`` (order within the query); the width."""
    frame = frame.assign(q=qids.get_indexer(frame["qid"]))
    frame = frame[frame["q"] >= 0]
    frame = frame.assign(slot=frame.groupby("qid", sort=False).cumcount().to_numpy())
    return frame, max(int(frame["slot"].max()) + 1 if len(frame) else 0, 1)


class ScorePrior:
    """The relevance prior of :class:`srdiv.models.unsupervised.PriorModel` when the one feature is the score."""

    @staticmethod
    def relevance(feats: torch.Tensor) -> torch.Tensor:
        return feats[..., 0]


class Diversifier(pt.Transformer):
    """Re-ranks each query's results with the srdiv model ``name`` (see the module docstring)."""

    name: ClassVar[str]
    levels: ClassVar[int] = 1
    default_prob: ClassVar[str] = "softmax"     # named in the transformer's name only when another is given

    def __init__(self, scorer: pt.Transformer, suggestions: pd.DataFrame | Collection | str | os.PathLike,
                 lam: float = 0.5, prob: str = "softmax", **params):
        self.scorer = scorer
        self.suggestions = suggestion_frame(suggestions)
        self.model = MODELS.get(self.name)(None, prior=ScorePrior(), lam=lam, prob=prob, **params)
        self.settings = {"lam": lam, **({} if prob == self.default_prob else {"prob": prob}), **params}

    def __repr__(self) -> str:
        return described(type(self).__name__, **self.settings)

    def transform_outputs(self, input_columns: list[str]) -> list[str]:
        return result_columns(input_columns, f"{type(self).__name__} input")

    def transform(self, results: pd.DataFrame) -> pd.DataFrame:
        require(results, ["qid", "query", "docno", "score"], f"{type(self).__name__} input")
        bundle = self.bundle(ranked(results.assign(qid=results["qid"].astype(str))))
        return with_ranks(run_frame(bundle, rank_bundle(self.model, bundle, CPU)), results)

    def bundle(self, results: pd.DataFrame) -> Bundle:
        """The scorer's scores of every (query or suggestion, candidate) as a one-feature :class:`Bundle`."""
        qids = pd.Index(pd.unique(results["qid"]))
        cand = candidate_matrix(results, list(qids))  # [Q, D]
        doc_mask = cand != ""
        sugg = self.suggestions
        level1, n_subs = slots(sugg[sugg["level"] == 1], qids)
        parents = level1.set_index(["qid", "subtopic"])["slot"]
        level2 = sugg[sugg["level"] == 2].assign(
            parent_slot=parents.reindex(pd.MultiIndex.from_frame(sugg.loc[sugg["level"] == 2, ["qid", "parent"]]))
            .to_numpy())
        level2, n_subs2 = slots(level2[level2["parent_slot"].notna()] if self.levels == 2 else level2.iloc[:0], qids)

        queries = results.drop_duplicates("qid")[["qid", "query"]].assign(subtopic="", q=np.arange(len(qids)), slot=0)
        strings = pd.concat([queries.assign(layer=0), level1.assign(layer=1), level2.assign(layer=2)],
                            ignore_index=True)
        scores = self.score(results, strings, cand)  # [strings, D]
        n_q, n_d = cand.shape
        feats = [np.zeros((n_q, n_d, 1), np.float32), np.zeros((n_q, n_subs, n_d, 1), np.float32),
                 np.zeros((n_q, n_subs2, n_d, 1), np.float32)]
        for layer, target in enumerate(feats):
            part = (strings["layer"] == layer).to_numpy()
            index = (strings["q"][part],) if layer == 0 else (strings["q"][part], strings["slot"][part])
            target[index] = scores[part][..., None]
        masks = [np.zeros((n_q, n), bool) for n in (n_subs, n_subs2)]
        masks[0][level1["q"], level1["slot"]] = True
        masks[1][level2["q"], level2["slot"]] = True
        weight = np.zeros((n_q, n_subs), np.float32)
        weight[level1["q"], level1["slot"]] = level1["weight"]
        weight /= np.maximum(weight.sum(1, keepdims=True), 1e-12)
        parent = np.full((n_q, n_subs2), -1, np.int64)
        parent[level2["q"], level2["slot"]] = level2["parent_slot"].astype(np.int64)
        doc_vec = self.vectors(results, cand)
        zeros = np.zeros
        return Bundle(
            qids=np.asarray(qids, dtype=str), docnos=cand.astype(str), doc_mask=doc_mask, doc_vec=doc_vec,
            query_vec=zeros((n_q, doc_vec.shape[2]), np.float32), rel_feat=feats[0],
            init_score=zeros((n_q, n_d), np.float32), sub_vec=zeros((n_q, n_subs, 1), np.float32),
            sub_feat=feats[1], sub_mask=masks[0], sub_weight=weight, sub2_vec=zeros((n_q, n_subs2, 1), np.float32),
            sub2_feat=feats[2], sub2_mask=masks[1], sub2_parent=parent,
            div_feat=zeros((n_q, n_d, n_d, 0), np.float32), labels=zeros((n_q, n_d, 0), np.float32),
            label_mask=zeros((n_q, 0), bool),
        )

    def score(self, results: pd.DataFrame, strings: pd.DataFrame, cand: np.ndarray) -> np.ndarray:
        """``[strings, D]`` scorer scores of each string's candidates; a candidate the scorer leaves out
        gets the lowest score of its list (no better than the worst one it returned)."""
        rows, slots_ = np.nonzero(cand[strings["q"].to_numpy()] != "")
        pairs = pd.DataFrame({"qid": string_qid(strings["qid"], strings["subtopic"]).to_numpy()[rows],
                              "query": strings["query"].to_numpy()[rows],
                              "docno": cand[strings["q"].to_numpy()[rows], slots_]})
        if "text" in results.columns:
            pairs = pairs.assign(text=pairs[["docno"]].merge(results.drop_duplicates("docno")[["docno", "text"]],
                                                             how="left")["text"].to_numpy())
        out = self.scorer.transform(pairs)
        require(out, ["qid", "docno", "score"], f"{type(self).__name__} scorer output")
        got = pairs.merge(out[["qid", "docno", "score"]].drop_duplicates(["qid", "docno"]), how="left")["score"]
        got = got.fillna(got.groupby(pairs["qid"].to_numpy()).transform("min")).fillna(0.0)
        scores = np.zeros(cand[strings["q"].to_numpy()].shape, np.float32)
        scores[rows, slots_] = got.to_numpy(np.float32)
        return scores

    def vectors(self, results: pd.DataFrame, cand: np.ndarray) -> np.ndarray:
        """Document vectors ``[Q, D, E]`` of the candidates (MMR's); the other models read none."""
        return np.zeros(cand.shape + (1,), np.float32)


class XQuAD(Diversifier):
    """xQuAD (:mod:`srdiv.models.xquad`): ``lam``, ``prob``."""

    name = "xquad"


class HxQuAD(Diversifier):
    """HxQuAD over two suggestion levels (:mod:`srdiv.models.xquad`): ``lam``, ``alpha``, ``prob``."""

    name, levels = "hxquad", 2


class PM2(Diversifier):
    """PM2 (:mod:`srdiv.models.pm2`): ``lam``, ``prob``."""

    name = "pm2"


class HPM2(Diversifier):
    """HPM2 over two suggestion levels (:mod:`srdiv.models.pm2`): ``lam``, ``alpha``, ``prob``."""

    name, levels = "hpm2", 2


class MMR(Diversifier):
    """MMR (:mod:`srdiv.models.mmr`) over document vectors: a ``doc_vec`` column of the results, or
    ``vectors`` (a vector table file of the pipeline, ``embed/<repr>.parquet``, or ``(keys, matrix)``).
    MMR reads no suggestions."""

    name, default_prob = "mmr", "minmax"

    def __init__(self, scorer: pt.Transformer, vectors: tuple | str | os.PathLike | None = None,
                 lam: float = 0.5, prob: str = "minmax"):
        super().__init__(scorer, pd.DataFrame(columns=["qid", "subtopic", "level", "query"]), lam=lam, prob=prob)
        self.table = read_vectors(vectors) if isinstance(vectors, (str, os.PathLike)) else vectors

    def vectors(self, results: pd.DataFrame, cand: np.ndarray) -> np.ndarray:
        if self.table is None:
            require(results, ["doc_vec"], f"{type(self).__name__} input")
            first = results.drop_duplicates("docno")
            keys, matrix = first[["docno"]], np.stack(first["doc_vec"].to_numpy()).astype(np.float32)
        else:
            keys, matrix = self.table
        rows = np.where(cand != "", doc_positions(keys, cand), -1)
        lost = (cand != "") & (rows < 0)
        if lost.any():
            raise InputError("MMR vectors", f"no vector for document '{cand[lost][0]}'")
        return np.where(rows[..., None] >= 0, matrix[np.maximum(rows, 0)], 0.0).astype(np.float32)


# ---------------------------------------------------------------------------------------------- trained rows
class FoldModels:
    """A trained row: ``<dir>/fold<k>/model.pt`` per trial, each query ranked by the model of the fold that
    tests it (as ``srdiv rank``), or one ``model.pt`` for every query."""

    def __init__(self, path: str | os.PathLike, collection: Collection | str | os.PathLike | None = None):
        path = Path(path)
        files = sorted(path.glob(f"fold*/{MODEL_FILE}"))
        if not files:
            self.models, self.fold_of = {None: Trained.load(path)}, None
            return
        self.models = {int(f.parent.name.removeprefix("fold")): Trained.load(f) for f in files}
        for fold, trained in self.models.items():
            if trained.record["fold"] != fold:      # a model of another fold has seen this fold's test queries
                raise InputError(path / f"fold{fold}" / MODEL_FILE, f"a model of fold {trained.record['fold']}, "
                                                                    f"not of fold {fold}")
        if collection is None:
            raise InputError(path, "a row with one model per fold needs the collection (its folds table)")
        folds = as_collection(collection).folds
        self.fold_of = dict(zip(folds["qid"].astype(str), folds["fold"].astype(int)))

    def __str__(self) -> str:
        """``DSSA, folds 1-5``: the row and the folds it has models of."""
        trained = next(iter(self.models.values()))
        folds = [trained.record["fold"]] if self.fold_of is None else list(self.models)
        return f"{trained.spec.row}, {folds_text(folds)}"

    def groups(self, qids: Sequence[str], where: str) -> list[tuple[Trained, list[str]]]:
        """``(model, its queries)`` for ``qids``; a query no model tests is an :class:`InputError`."""
        if self.fold_of is None:
            return [(self.models[None], list(qids))]
        fold = pd.Series([self.fold_of.get(q) for q in qids], index=list(qids), dtype=object)
        lost = [q for q, f in fold.items() if f not in self.models]
        if lost:
            raise InputError(where, f"no trained model tests query '{lost[0]}' (folds with a model: "
                                    f"{sorted(self.models)})")
        return [(self.models[f], list(group.index)) for f, group in fold.groupby(fold, sort=True)]


class Relevance(pt.Transformer):
    """A trained relevance row (``relevance(x)``: ListMLE, the pipeline's prior of MMR, xQuAD, PM2, ...) scoring
    (query or suggestion, candidate) pairs from the pipeline's relevance features
    (``features/relevance.parquet``), standardised with the model's scaler; missing features are 0, as in the
    bundle. The scorer that makes the diversifiers rank as the pipeline's rows."""

    def __init__(self, row: str | os.PathLike, features: pd.DataFrame | str | os.PathLike,
                 collection: Collection | str | os.PathLike | None = None):
        self.models = FoldModels(row, collection)
        table = features if isinstance(features, pd.DataFrame) else pd.read_parquet(features)
        require(table, ["qid", "sugg_id", "docno"], "relevance features input")
        self.names = [c for c in table.columns if c not in ("qid", "sugg_id", "docno")]
        self.features = table.assign(qid=string_qid(table["qid"].astype(str), table["sugg_id"].astype(str)),
                                     topic=table["qid"].astype(str)).drop_duplicates(["qid", "docno"])
        self.topic_of = dict(zip(self.features["qid"], self.features["topic"]))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.models})"

    def transform_outputs(self, input_columns: list[str]) -> list[str]:
        return result_columns(input_columns, f"{type(self).__name__} input")

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        require(inp, ["qid", "docno"], f"{type(self).__name__} input")
        rows = inp[["qid", "docno"]].astype(str).merge(self.features, how="left")
        x = rows[self.names].fillna(0.0).to_numpy(np.float32)
        topic = rows["qid"].map(self.topic_of).fillna(rows["qid"])
        scores = np.zeros(len(inp))
        for trained, qids in self.models.groups(list(pd.unique(topic)), type(self).__name__):
            model = trained.build()
            if not hasattr(model, "relevance"):
                raise InputError(type(self).__name__, f"row {trained.spec.row} has no relevance function")
            part = topic.isin(qids).to_numpy()
            z = (x[part] - trained.scaler.rel_mean) / trained.scaler.rel_std
            with torch.no_grad():
                scores[part] = model.relevance(torch.as_tensor(z, dtype=torch.float32)).numpy()
        return scored(inp, scores)


class TrainedModel(pt.Transformer):
    """A trained row of the pipeline (``work/<dataset>/models/<Row>``) re-ranking each query's results with the
    model of the fold that tests it, over the bundle's features (``work/<dataset>/bundle/<repr>.npz``): the
    pipeline's ``srdiv rank``. Results may hold a subset of a query's bundle candidates, not other documents.
    A row whose model (or prior's) no module of this process registered is an :class:`InputError` here, not
    when it first ranks: import a model from outside srdiv first (docs/pyterrier.md)."""

    def __init__(self, row: str | os.PathLike, bundle: Bundle | str | os.PathLike,
                 collection: Collection | str | os.PathLike | None = None):
        self.models = FoldModels(row, collection)
        self.features = bundle if isinstance(bundle, Bundle) else Bundle.load(bundle)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.models})"

    def transform_outputs(self, input_columns: list[str]) -> list[str]:
        return result_columns(input_columns, f"{type(self).__name__} input")

    def transform(self, results: pd.DataFrame) -> pd.DataFrame:
        who = type(self).__name__
        require(results, ["qid", "docno"], f"{who} input")
        results = results.assign(qid=results["qid"].astype(str))
        unknown = sorted(set(results["qid"]) - set(self.features.qids))
        if unknown:
            raise InputError(who, f"the bundle has no features for query '{unknown[0]}'")
        runs = []
        for trained, qids in self.models.groups(list(pd.unique(results["qid"])), who):
            part = trained.scaler.transform(fold_queries(self.features, qids, trained.spec.train.rank_docs),
                                            inplace=True)
            wanted = pd.MultiIndex.from_frame(results.loc[results["qid"].isin(qids), ["qid", "docno"]])
            keys = pd.MultiIndex.from_arrays([np.repeat(part.qids, part.docnos.shape[1]), part.docnos.ravel()])
            lost = wanted[~wanted.isin(keys)]
            if len(lost):
                raise InputError(who, f"document '{lost[0][1]}' of query '{lost[0][0]}' is not among the candidates "
                                      f"the pipeline has features for")
            part.doc_mask = part.doc_mask & keys.isin(wanted).reshape(part.doc_mask.shape)
            runs.append(run_frame(part, rank_bundle(trained.build(), part, CPU, trained.spec.train.rank_batch)))
        return with_ranks(pd.concat(runs, ignore_index=True), results)
