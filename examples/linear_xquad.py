"""A template model from outside the package: a learned linear xQuAD (``docs/adding-a-model.md``).

The score of candidate ``d`` placed after the selected documents ``C`` is xQuAD's (Santos et al., WWW 2010,
Eq. 3-5), with both probabilities from one learned linear function of the 18 relevance features::

    S(d | C) = (1 - lam) P(d|q) + lam * sum_k w_k P(d|i_k) prod_{c in C} (1 - P(c|i_k))
    P(d|q)   = softmax_d(theta^T x_{d,q}),   P(d|i_k) = softmax_d(theta^T x_{d,i_k})

``w_k`` are the suggestions' weights (``sub_weight``); a query without suggestions ranks by ``P(d|q)``.
``theta`` is trained with any srdiv objective (the overlay uses ``mle``, the Plackett-Luce likelihood of the
ideal ranking); ``lam`` is a constructor keyword, so a row sets or tunes it (``model.args.lam``).

It registers itself under the name ``linear-xquad`` when imported: ``import: [examples/linear_xquad.py]`` in
an overlay (``examples/linear-xquad.yaml``) makes every srdiv command import it.
"""

from __future__ import annotations

import torch
from torch import nn

from srdiv.features.bundle import BundleDims
from srdiv.models.base import Batch, DiversityModel
from srdiv.models.unsupervised import list_probs, take_docs
from srdiv.registry import MODELS


@MODELS.register("linear-xquad")
class LinearXQuAD(DiversityModel):
    """xQuAD over a learned linear relevance function. Keyword: ``lam`` in [0, 1] (weight of the diversity term)."""

    sequential = True           # scores depend on the documents already selected: ranked greedily

    def __init__(self, dims: BundleDims, lam: float = 0.5):
        super().__init__()
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {lam}")
        self.lam = float(lam)
        self.theta = nn.Linear(dims.feats, 1, bias=False)

    def probabilities(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """``P(d|q)`` ``[B, D]`` and ``P(d|i_k)`` ``[B, K, D]``, softmax over each list's real candidates."""
        mask = batch["doc_mask"]                                               # [B, D]
        p_query = list_probs(self.theta(batch["rel_feat"]).squeeze(-1), mask, "softmax")
        p_sub = list_probs(self.theta(batch["sub_feat"]).squeeze(-1), mask[:, None, :], "softmax")
        return p_query, p_sub

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """``S(d | C)`` ``[B, M]`` of ``candidates`` ``[B, M]`` after ``context`` ``[B, L]`` (-1: padding)."""
        p_query, p_sub = self.probabilities(batch)
        weight = batch["sub_weight"] * batch["sub_mask"]                       # [B, K], 0 for padding
        not_covered = (1.0 - take_docs(p_sub, context)).prod(-1)               # [B, K]
        diversity = ((weight * not_covered)[..., None] * take_docs(p_sub, candidates)).sum(1)   # [B, M]
        return (1.0 - self.lam) * take_docs(p_query, candidates) + self.lam * diversity
