"""DALETOR's losses (Yan et al., WWW 2021, Section 3): smooth alpha-DCG, alpha-nDCG, ERR-IA; softmax baseline.

Smooth metrics (Eqs. 6-9), for scores ``s [B, D]``, subtopic labels
``y [B, D, S]`` and real candidates ``m [B, D]``, with
``P_ij = sigmoid((s_j - s_i) / T)`` (j ranked above i) over real ``j != i``:

* soft rank ``R_i = 1 + sum_j P_ij`` and soft coverage ``C_il = sum_j y_jl P_ij`` (Eq. 7);
* soft novelty gain ``G_i = sum_l y_il (1 - alpha) ** C_il``;
* alpha-DCG: ``sum_i G_i / log2(1 + R_i)`` (Eq. 8, before the minus sign);
* alpha-nDCG: the same times ``1 / alpha-DCG`` of the greedy ideal ranking of
  the query's candidates (:func:`srdiv.metrics.ideal_ranking`, whole list);
* ERR-IA: ``sum_i G_i / R_i`` times ``1 / (N sum_{r=1..n} (1 - alpha) ** (r - 1) / r)``
  (Eq. 5 with ndeval's normalisation, as :func:`srdiv.metrics.err_ia`: ``N``
  the query's subtopics, ``label_mask``, and ``n`` its candidates). With
  alpha = 0.5 this is Eq. 5 up to the constant the paper mentions.

As ``T -> 0`` each tends to the exact metric of the ranking by score over the
whole candidate list (no cutoff). The loss is minus the smooth metric,
averaged over the batch's queries (Eq. 8). With ``gumbel = beta`` the scores
are first replaced by ``beta (s + g)``, ``g`` standard Gumbel noise, one draw
per step (Eq. 9, the expectation estimated by one sample as in Bruch et al.,
WSDM 2020). The per-query constants (``1 / ideal``, ``1 / (N ...)``) are
computed once in :meth:`SmoothDiversityLoss.prepare`.

The paper's other baselines: ``softmax`` here (listwise softmax
cross-entropy with the number of subtopics a document covers as its label),
and R-LTR = the harness's ``mle`` objective (ListMLE over the greedy ideal
ordering, :mod:`srdiv.objectives.mle`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import torch

from srdiv.features.bundle import Bundle
from srdiv.metrics.diversity import ALPHA, alpha_dcg, ideal_ranking, rank_labels
from srdiv.models.base import Batch, DiversityModel
from srdiv.objectives.base import Objective, take
from srdiv.registry import OBJECTIVES

SMOOTH_METRICS = ("alpha_dcg", "alpha_ndcg", "err_ia")


def soft_ranks(scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor,
               temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 7: soft ranks ``R [B, D]`` and soft subtopic coverage above each document ``C [B, D, S]``.

    Padded documents count for nothing; their own values are meaningless.
    """
    s = torch.where(mask, scores, torch.zeros_like(scores))  # a padded score (even NaN) never enters
    others = mask[:, None, :] & ~torch.eye(mask.shape[1], dtype=torch.bool, device=mask.device)
    above = torch.sigmoid((s[:, None, :] - s[:, :, None]) / temperature) * others  # [B, i, j]
    return 1.0 + above.sum(-1), above @ (labels * mask[..., None])


def smooth_metric(scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, metric: str = "alpha_dcg",
                  temperature: float = 0.1, alpha: float = ALPHA) -> torch.Tensor:
    """``[B]`` unnormalised smooth metric: ``sum_i G_i / log2(1 + R_i)`` (alpha-DCG, alpha-nDCG) or ``/ R_i`` (ERR-IA).

    Multiply by :func:`metric_weights` for alpha-nDCG and ERR-IA.
    """
    if metric not in SMOOTH_METRICS:
        raise ValueError(f"metric must be one of {SMOOTH_METRICS}, got {metric!r}")
    rank, cover = soft_ranks(scores, labels, mask, temperature)
    gain = (labels * (1.0 - alpha) ** cover).sum(-1)  # G_i
    discount = rank if metric == "err_ia" else torch.log2(1.0 + rank)
    return torch.where(mask, gain / discount, torch.zeros_like(gain)).sum(-1)


def metric_weights(labels: np.ndarray, doc_mask: np.ndarray, label_mask: np.ndarray, metric: str = "alpha_dcg",
                   alpha: float = ALPHA) -> np.ndarray:
    """``[Q]`` per-query constant of the metric (0 where the normaliser is 0): see the module docstring."""
    labels = labels * doc_mask[:, :, None]
    if metric == "alpha_dcg":
        return np.ones(len(labels))
    if metric == "alpha_ndcg":
        norm = alpha_dcg(rank_labels(labels, ideal_ranking(labels, alpha)), alpha)
    elif metric == "err_ia":
        ranks = np.arange(1, labels.shape[1] + 1)
        ideal_ideal = np.cumsum((1.0 - alpha) ** (ranks - 1) / ranks)  # at each list length n
        n_docs = doc_mask.sum(1)
        norm = label_mask.sum(1) * np.where(n_docs > 0, ideal_ideal[np.maximum(n_docs, 1) - 1], 0.0)
    else:
        raise ValueError(f"metric must be one of {SMOOTH_METRICS}, got {metric!r}")
    return np.divide(1.0, norm, out=np.zeros(len(labels)), where=norm > 0)


class WeightedRows(NamedTuple):
    """Bundle rows ``[B]`` of a mini-batch and their per-query metric constants ``[B]``."""

    rows: np.ndarray
    weight: np.ndarray


@OBJECTIVES.register("daletor")
class SmoothDiversityLoss(Objective):
    """Minus a smooth diversity metric of the whole candidate list (Eqs. 8-9).

    Params: ``metric`` (one of :data:`SMOOTH_METRICS`, default alpha_dcg),
    ``temperature`` T (0.1), ``alpha`` (0.5), ``gumbel`` beta (None: no noise;
    the paper's Gumbel-alpha-DCG uses 10).
    """

    def __init__(self, metric: str = "alpha_dcg", temperature: float = 0.1, alpha: float = ALPHA,
                 gumbel: float | None = None, **params: Any):
        super().__init__(metric=metric, temperature=temperature, alpha=alpha, gumbel=gumbel, **params)
        if metric not in SMOOTH_METRICS:
            raise ValueError(f"metric must be one of {SMOOTH_METRICS}, got {metric!r}")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.metric, self.temperature, self.alpha = metric, float(temperature), float(alpha)
        self.gumbel = None if gumbel is None else float(gumbel)

    def prepare(self, bundle: Bundle, rng: np.random.Generator) -> np.ndarray:
        """``[Q]`` per-query constants of the training queries."""
        return metric_weights(bundle.labels, bundle.doc_mask, bundle.label_mask, self.metric, self.alpha)

    def batches(self, prepared: np.ndarray, n_queries: int, batch_size: int,
                rng: np.random.Generator) -> Iterator[WeightedRows]:
        for rows in super().batches(prepared, n_queries, batch_size, rng):
            yield WeightedRows(rows, prepared[rows])

    def loss(self, model: DiversityModel, data: Batch, minibatch: WeightedRows) -> torch.Tensor:
        batch = take(data, minibatch.rows)
        scores = model.list_scores(batch)
        if self.gumbel is not None:  # Eq. 9: g = -log(E), E ~ Exp(1), is standard Gumbel
            noise = -torch.empty_like(scores).exponential_().clamp_min(1e-20).log()
            scores = self.gumbel * (scores + noise)
        value = smooth_metric(scores, batch["labels"], batch["doc_mask"], self.metric, self.temperature, self.alpha)
        return -(torch.as_tensor(minibatch.weight, dtype=value.dtype, device=value.device) * value).mean()


@OBJECTIVES.register("softmax")
class CoverageSoftmax(Objective):
    """Listwise softmax cross-entropy, label = number of subtopics a candidate covers (paper's DNN (softmax)).

    ``L_q = - sum_i (k_i / sum_j k_j) log softmax(s)_i`` over real candidates,
    ``k_i = sum_l y_il``; averaged over the batch's queries with a relevant
    candidate (a list without one has no target).
    """

    def loss(self, model: DiversityModel, data: Batch, minibatch: np.ndarray) -> torch.Tensor:
        batch = take(data, minibatch)
        mask = batch["doc_mask"]
        covered = (batch["labels"] * mask[..., None]).sum(-1)  # k_i [B, D]
        total = covered.sum(-1)
        logp = model.list_scores(batch).masked_fill(~mask, float("-inf")).log_softmax(-1)
        per_list = -torch.where(covered > 0, covered * logp, torch.zeros_like(logp)).sum(-1) / total.clamp(min=1)
        has_target = total > 0
        return (per_list * has_target).sum() / has_target.sum().clamp(min=1)
