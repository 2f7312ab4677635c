"""DSSA's list-pairwise loss (TKDE, Section 4.3.1, Eq. 16) over the fold's precomputed samples.

For a sample ``(C, d1, d2, w, y)`` (:mod:`srdiv.sampling.listpairwise`) with
``s1``, ``s2`` the scores of ``d1``, ``d2`` placed right after the context
``C``, ``P(r1, r2) = 1 / (1 + exp(s2 - s1))`` and the loss is the weighted
logistic loss::

    L = - sum_q sum_o w_o (y_o log P(r1, r2) + (1 - y_o) log(1 - P(r1, r2))),   w_o = |M(r1) - M(r2)|

A mini-batch is a set of contexts (``batch_size`` counts contexts): the model
scores every candidate of each context in one ``context_scores`` call, and the
loss gathers the pairs of those contexts. The batch loss is the sum above
divided by the number of pairs in the batch (a constant rescaling of the
learning rate per batch).

``context_fraction`` (default 1: every context, as Algorithm 1) lets an
epoch visit a random fraction of the contexts, drawn afresh each epoch: a
compute budget for machines without a GPU (``config/cpu-ablations.yaml``), not part
of the paper.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from srdiv.features.bundle import Bundle
from srdiv.models.base import Batch, DiversityModel
from srdiv.registry import OBJECTIVES
from srdiv.train.objective import Objective, take


class PairBatch(NamedTuple):
    """Contexts ``[B, L]`` with their bundle rows ``[B]``; pairs ``[P, 2]`` with their context in ``B``."""

    rows: np.ndarray
    contexts: np.ndarray
    pair_context: np.ndarray
    pairs: np.ndarray
    weight: np.ndarray
    label: np.ndarray


class Prepared(NamedTuple):
    """All samples of the training queries; the pairs of context c are ``start[c]:start[c + 1]``."""

    rows: np.ndarray
    contexts: np.ndarray
    start: np.ndarray
    pairs: np.ndarray
    weight: np.ndarray
    label: np.ndarray


@OBJECTIVES.register("list_pairwise")
class ListPairwise(Objective):
    """Weighted logistic loss over pairs of documents sharing a context. Needs the fold's samples.

    Args:
        context_fraction: the share of the fold's contexts one epoch visits, in (0, 1].
    """

    def __init__(self, context_fraction: float = 1.0):
        if not 0.0 < context_fraction <= 1.0:
            raise ValueError(f"list_pairwise: context_fraction must be in (0, 1], got {context_fraction}")
        super().__init__(context_fraction=context_fraction)
        self.context_fraction = context_fraction

    def prepare(self, bundle: Bundle, rng: np.random.Generator) -> Prepared:
        if self.samples is None:
            raise ValueError("objective list_pairwise needs the fold's samples (srdiv train --samples)")
        lp = self.samples.list_pairwise
        start = np.searchsorted(lp.pair_context, np.arange(len(lp.contexts) + 1))
        return Prepared(self.samples.query_rows(bundle)[lp.context_query], lp.contexts.astype(np.int64), start,
                        lp.pairs.astype(np.int64), lp.weight, lp.label.astype(np.float32))

    def batches(self, prepared: Prepared, n_queries: int, batch_size: int,
                rng: np.random.Generator) -> Iterator[PairBatch]:
        """Shuffled contexts (``context_fraction`` of them), ``batch_size`` per mini-batch, each with all its pairs."""
        order = rng.permutation(len(prepared.contexts))
        order = order[:max(1, round(self.context_fraction * len(order)))]
        for first in range(0, len(order), batch_size):
            ctx = order[first:first + batch_size]
            begin, count = prepared.start[ctx], np.diff(prepared.start)[ctx]
            local = np.repeat(np.arange(len(ctx)), count)
            pair_ids = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count) + np.repeat(begin, count)
            contexts = prepared.contexts[ctx]
            width = int((contexts >= 0).sum(1).max(initial=0))
            yield PairBatch(prepared.rows[ctx], contexts[:, :width], local, prepared.pairs[pair_ids],
                            prepared.weight[pair_ids], prepared.label[pair_ids])

    def loss(self, model: DiversityModel, data: Batch, minibatch: PairBatch) -> torch.Tensor:
        batch = take(data, minibatch.rows)
        device = batch["doc_mask"].device
        mask = batch["doc_mask"]
        candidates = torch.where(mask, torch.arange(mask.shape[1], device=device), -1)
        scores = model.context_scores(batch, torch.as_tensor(minibatch.contexts, device=device), candidates)
        local = torch.as_tensor(minibatch.pair_context, device=device)
        pairs = torch.as_tensor(minibatch.pairs, device=device)
        margin = scores[local, pairs[:, 0]] - scores[local, pairs[:, 1]]
        weight = torch.as_tensor(minibatch.weight, device=device, dtype=margin.dtype)
        label = torch.as_tensor(minibatch.label, device=device, dtype=margin.dtype)
        return (weight * F.binary_cross_entropy_with_logits(margin, label, reduction="none")).sum() / len(label)
