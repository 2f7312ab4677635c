"""Ranking bundles with a model and scoring the runs with the official measures.

Ranking runs :meth:`srdiv.models.base.DiversityModel.rank` on batches of
queries on the model's device; a run frame has the columns ``qid, docno,
rank, score`` (score = number of candidates minus rank + 1, so the TREC file
reproduces the order). Evaluation uses :class:`srdiv.metrics.evaluate.DiversityEvaluator`
against the collection qrels of the ranked queries only, so validation is the
official alpha-nDCG@20 of the validation queries.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from srdiv.features.bundle import Bundle
from srdiv.io import InputError
from srdiv.metrics.evaluate import DiversityEvaluator
from srdiv.models.base import DiversityModel


def resolve_device(name: str = "auto", where: str = "params.yaml") -> torch.device:
    """``auto`` picks CUDA when present, else the CPU; any other name is passed to torch.

    A name torch does not know, or a CUDA device this machine does not have,
    is an :class:`~srdiv.io.InputError` on ``train.device``, naming ``where`` it is set (before any work).
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    fix = "set train.device to auto (CUDA when present, else the CPU) or cpu"
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise InputError(where, f"train.device '{name}' is not a torch device; {fix}") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(where, f"train.device is '{name}' but no CUDA device is available "
                                    f"(torch.cuda.is_available() is False); {fix}")
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise InputError(where, f"train.device is '{name}' but this machine has {count} CUDA "
                                    f"device(s) (cuda:0 to cuda:{count - 1}); {fix}")
    return device


@torch.no_grad()
def rank_bundle(model: DiversityModel, bundle: Bundle, device: torch.device, batch_size: int = 64) -> np.ndarray:
    """``[Q, D]`` candidate order of every query (best first, -1 padding last), in eval mode.

    ``model`` must already be on ``device``; batches of ``batch_size`` queries are moved there.
    """
    was_training = model.training
    model.eval()
    orders = []
    for start in range(0, len(bundle), batch_size):
        part = bundle.select(np.arange(start, min(start + batch_size, len(bundle))))
        orders.append(model.rank(part.to_torch(device)).cpu().numpy())
    model.train(was_training)
    return np.concatenate(orders) if orders else np.zeros((0, bundle.doc_mask.shape[1]), np.int64)


def run_frame(bundle: Bundle, orders: np.ndarray) -> pd.DataFrame:
    """Run ``qid, docno, rank, score`` of ``orders [Q, D]`` over the bundle's candidates."""
    real = orders >= 0
    rows = np.nonzero(real)[0]
    docnos = np.take_along_axis(bundle.docnos, np.clip(orders, 0, None), axis=1)[real]
    rank = (np.cumsum(real, axis=1))[real]
    return pd.DataFrame({
        "qid": np.asarray(bundle.qids, dtype=object)[rows],
        "docno": docnos.astype(object),
        "rank": rank.astype(np.int32),
        "score": (real.sum(1)[rows] - rank + 1).astype(np.float64),
    })


class RunScorer:
    """Official measures of runs over a fixed set of queries (the ideal rankings are built once)."""

    def __init__(self, qrels: pd.DataFrame, qids, measures: list[str] | None = None):
        self.evaluator = DiversityEvaluator(qrels[qrels["qid"].isin(set(qids))], measures)

    def per_query(self, run: pd.DataFrame) -> pd.DataFrame:
        """Long frame ``qid, measure, value``."""
        return self.evaluator.evaluate(run)

    def mean(self, run: pd.DataFrame, measure: str) -> float:
        """Mean of one measure over the queries."""
        values = self.per_query(run)
        return float(values.loc[values["measure"] == measure, "value"].mean())
