"""MMR, maximal marginal relevance (Carbonell and Goldstein, SIGIR 1998).

A candidate ``d`` placed after the selected documents ``C`` scores::

    MMR(d) = lam * P(d|q) - (1 - lam) * max_{d_j in C} cos(e_d, e_{d_j})

with ``P(d|q)`` the relevance prior as probabilities (``prob``: ``minmax`` by
default, so relevance lies in ``[0, 1]`` like the cosine similarity it is
traded against) and ``e_d`` the document vectors ``doc_vec``. The maximum over
an empty ``C`` is 0 (novelty ``1 - max cos`` is 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from srdiv.models.base import NEG_INF, Batch
from srdiv.models.unsupervised import PriorModel, take_docs
from srdiv.registry import MODELS

if TYPE_CHECKING:
    from srdiv.features.bundle import BundleDims
    from srdiv.models.listmle import ListMLE


@MODELS.register("mmr")
class MMR(PriorModel):
    """MMR with cosine document similarity. Params: ``prior``, ``lam``, ``prob``."""

    ARG_ENDS = {"lam": {0: "the redundancy penalty alone", 1: "its relevance prior alone"}}

    def __init__(self, dims: BundleDims, prior: ListMLE, lam: float = 0.5, prob: str = "minmax"):
        super().__init__(dims, prior, lam=lam, prob=prob)

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        unit = F.normalize(batch["doc_vec"], dim=-1).transpose(1, 2)  # [B, E, D]
        similarity = take_docs(unit, candidates).transpose(1, 2) @ take_docs(unit, context)  # [B, M, L]
        similarity = similarity.masked_fill((context < 0)[:, None, :], NEG_INF)
        redundancy = torch.cat([similarity, similarity.new_full((*candidates.shape, 1), NEG_INF)], -1).amax(-1)
        redundancy = redundancy.masked_fill(redundancy == NEG_INF, 0.0)  # empty context
        return self.lam * take_docs(self.query_probs(batch), candidates) - (1.0 - self.lam) * redundancy
