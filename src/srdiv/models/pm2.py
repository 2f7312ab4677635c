"""PM2 (Dang and Croft, SIGIR 2012) and its hierarchical form HPM2 (Hu et al., CIKM 2015).

PM2 fills the ranking like seats in a parliament (Sainte-Lague). Each intent
``i`` has votes ``v_i`` (its weight ``w_i``) and seats ``s_i``, the sum over the
selected documents ``C`` of their share ``P(d_j|i) / sum_i' P(d_j|i')``. With
quotients ``qt_i = v_i / (2 s_i + 1)`` and ``i* = argmax_i qt_i`` (first intent
on ties), a candidate scores (Dang and Croft, Alg. 1)::

    PM2(d) = lam * qt_{i*} P(d|i*) + (1 - lam) * sum_{i != i*} qt_i P(d|i)

The seats are a sum over the selected documents whatever the order in which
they were selected, so they are computed from the context in one step
(:func:`pm2_scores`). The scale of the votes does not change the ranking.

HPM2 is our reconstruction of Hu et al.'s hierarchical PM2: PM2 runs on each
layer of the intent hierarchy (level 1, level 2 with leaves copied down, see
:mod:`srdiv.models.unsupervised`), each layer with its own seats and ``i*``, and
``HPM2(d) = alpha * PM2_1(d) + (1 - alpha) * PM2_2(d)``, the same layer mixing
as HxQuAD. Where every level-1 suggestion is its own only child, HPM2 equals
PM2.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from srdiv.models.base import NEG_INF, Batch
from srdiv.models.unsupervised import ExplicitModel, Hierarchical, Layer, take_docs
from srdiv.registry import MODELS


def pm2_scores(layers: Sequence[Layer], mix: Sequence[float], lam: float,
               context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """The formula of the module docstring: context ``[B, L]``, candidates ``[B, M]`` -> ``[B, M]``."""
    scores: torch.Tensor | float = 0.0
    for layer, a in zip(layers, mix):
        total = layer.probs.sum(1, keepdim=True)  # [B, 1, D]
        share = layer.probs / total.clamp(min=1e-12)  # [B, K, D]
        seats = take_docs(share, context).sum(-1)  # [B, K]
        quotient = layer.weight / (2.0 * seats + 1.0)
        best = quotient.masked_fill(layer.weight <= 0, NEG_INF).argmax(1, keepdim=True)
        is_best = torch.zeros_like(quotient, dtype=torch.bool).scatter_(1, best, True)
        coef = torch.where(is_best, lam * quotient, (1.0 - lam) * quotient)
        scores = scores + a * (coef[..., None] * take_docs(layer.probs, candidates)).sum(1)
    assert isinstance(scores, torch.Tensor)   # a model has at least one layer
    return scores


@MODELS.register("pm2")
class PM2(ExplicitModel):
    """PM2 over the level-1 suggestions. Params: ``prior``, ``lam``, ``prob``."""

    ARG_ENDS = {"lam": {0: "the intents other than the top-quotient one only", 1: "the top-quotient intent only"}}

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        return pm2_scores(self.layers(batch), self.mix, self.lam, context, candidates)


@MODELS.register("hpm2")
class HPM2(Hierarchical, PM2):
    """HPM2 over two suggestion levels. Params: ``prior``, ``lam``, ``alpha``, ``prob``."""
