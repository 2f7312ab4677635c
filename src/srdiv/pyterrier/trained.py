"""Trained rows of the pipeline as transformers: a relevance row as a scorer, any row as a re-ranker."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import torch

from srdiv.collection.schema import Collection
from srdiv.features.bundle import Bundle
from srdiv.features.folds import fold_queries
from srdiv.io import InputError
from srdiv.models.ranking import rank_bundle, run_frame
from srdiv.pyterrier.diversifiers import string_qid
from srdiv.pyterrier.frames import CPU, as_collection, folds_text, require, result_columns, scored, with_ranks
from srdiv.train.trained import MODEL_FILE, Trained


class FoldModels:
    """A trained row: ``<dir>/fold<k>/model.pt`` per trial, each query ranked by the model of the fold that
    tests it (as ``srdiv rank``), or one ``model.pt`` for every query."""

    def __init__(self, path: str | os.PathLike, collection: Collection | str | os.PathLike | None = None):
        path = Path(path)
        files = sorted(path.glob(f"fold*/{MODEL_FILE}"))
        self.fold_of: dict[str, int] | None = None      # None: one model for every query
        if not files:
            only = Trained.load(path)
            assert only.record is not None   # Trained.load checked it
            self.models: dict[int, Trained] = {only.record["fold"]: only}
            return
        self.models = {int(f.parent.name.removeprefix("fold")): Trained.load(f) for f in files}
        for fold, trained in self.models.items():
            assert trained.record is not None   # Trained.load checked it
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
        return f"{trained.spec.row}, {folds_text(list(self.models))}"

    def groups(self, qids: Sequence[str], where: str) -> list[tuple[Trained, list[str]]]:
        """``(model, its queries)`` for ``qids``; a query no model tests is an :class:`InputError`."""
        if self.fold_of is None:
            return [(next(iter(self.models.values())), list(qids))]
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
            relevance = getattr(trained.build(), "relevance", None)
            if relevance is None:
                raise InputError(type(self).__name__, f"row {trained.spec.row} has no relevance function")
            part = topic.isin(qids).to_numpy()
            z = (x[part] - trained.scaler.rel_mean) / trained.scaler.rel_std
            with torch.no_grad():
                scores[part] = relevance(torch.as_tensor(z, dtype=torch.float32)).numpy()
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
