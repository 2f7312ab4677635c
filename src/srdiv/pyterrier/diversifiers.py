"""Re-rankers with srdiv's unsupervised diversification models (xQuAD, PM2, their hierarchical forms, MMR)."""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
import pandas as pd
import pyterrier as pt
import torch

from srdiv.collection.schema import Collection
from srdiv.features.bundle import Bundle
from srdiv.features.relevance import candidate_matrix
from srdiv.io import InputError
from srdiv.models.ranking import rank_bundle, run_frame
from srdiv.pyterrier.frames import CPU, as_collection, described, ranked, require, result_columns, with_ranks
from srdiv.registry import MODELS
from srdiv.text.documents import doc_positions
from srdiv.text.embed import read_vectors


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

    name: str                                   # the srdiv model (pt.Transformer's name attribute, set per class)
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
