"""What every transformer shares: PyTerrier's frames (topics, qrels, results), the measures, readable names."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import torch

from srdiv.collection.schema import Collection, load_collection
from srdiv.io import InputError
from srdiv.metrics.evaluate import MEASURES as MEASURE_NAMES
from srdiv.metrics.names import SIGNIFICANCE
from srdiv.report.specs import MAIN_MEASURES

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


def marked_table(table: pd.DataFrame, level: float = SIGNIFICANCE, digits: int = 3) -> pd.DataFrame:
    """``pt.Experiment``'s result -> ``name`` and each measure's mean to ``digits`` places (in :data:`ALL_MEASURES`'
    order), as the report's tables write them: ▲ (▼) where the row's mean is above (below) the ``baseline``'s and
    its p-value is below ``level``.

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
            values += arrow.where(p.astype(float) < level, "")
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
