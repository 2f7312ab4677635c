"""Shared pieces of the unsupervised baselines MMR, xQuAD, PM2, HxQuAD and HPM2.

These re-rankers have no trainable parameters of their own. They turn a fixed
relevance function, the prior (ListMLE trained without diversity, as in DSSA
Section 5.3 and NTN Section 5), into probabilities, and greedily select
documents (:func:`srdiv.models.base.greedy_rank`).

Relevance probabilities (``prob`` parameter), per ranked list (one list per
query, one per suggestion), over its real candidates, padding 0:

* ``softmax``: ``P(d|i) = exp s(d,i) / sum_d' exp s(d',i)``, the Plackett-Luce
  top-one probability the ListMLE scores are trained for (sums to 1);
* ``minmax``: ``P(d|i) = (s(d,i) - min) / (max - min)`` in ``[0, 1]`` (0 for
  every candidate when all scores are equal).

Intents (:func:`intent_layers`): level 1 are the suggestions ``sub_*`` with
weights ``sub_weight``; a query without any suggestion is its own single
intent (weight 1), so explicit models then rank by relevance. Level 2 are the
suggestions ``sub2_*``; a level-2 suggestion gets its parent's weight divided by
the parent's number of children, and a level-1 intent without children is its
own child (its probabilities and weight are copied to level 2), so both levels
carry the whole weight 1 (Hu et al., CIKM 2015, hierarchy made complete by
copying leaves down).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch

from srdiv.models.base import NEG_INF, Batch, DiversityModel

if TYPE_CHECKING:
    from srdiv.features.bundle import BundleDims
    from srdiv.models.listmle import ListMLE

PROBS = ("softmax", "minmax")


def list_probs(scores: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """Relevance probabilities ``[..., D]`` of ``scores`` ``[..., D]`` within each list (``mask`` broadcasts)."""
    mask = mask.expand_as(scores)
    if how == "softmax":
        return scores.masked_fill(~mask, NEG_INF).softmax(-1).nan_to_num(0.0)
    lo = scores.masked_fill(~mask, float("inf")).amin(-1, keepdim=True)
    hi = scores.masked_fill(~mask, NEG_INF).amax(-1, keepdim=True)
    return torch.where(mask, (scores - lo) / (hi - lo).clamp(min=1e-12), 0.0)


def take_docs(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values[b, ..., index[b, j]]``: ``[B, ..., D]`` at ``index`` ``[B, N]`` -> ``[B, ..., N]``; -1 gives 0."""
    index = index.view(index.shape[0], *([1] * (values.dim() - 2)), index.shape[1])
    index = index.expand(*values.shape[:-1], index.shape[-1])
    return values.gather(-1, index.clamp(min=0)).masked_fill(index < 0, 0.0)


@dataclass
class Layer:
    """One layer of intents: ``probs`` ``[B, K, D]`` = P(d|i_k), ``weight`` ``[B, K]`` (0 for padding)."""

    probs: torch.Tensor
    weight: torch.Tensor


def intent_layers(prior, batch: Batch, how: str, levels: int) -> list[Layer]:
    """The first ``levels`` (1 or 2) intent layers of a batch, as described in the module docstring."""
    docs = batch["doc_mask"][:, None, :]
    sub_mask = batch["sub_mask"]
    no_subs = ~sub_mask.any(1, keepdim=True)
    scores = torch.cat([prior.relevance(batch["sub_feat"]), prior.relevance(batch["rel_feat"])[:, None]], 1)
    weight = torch.cat([batch["sub_weight"] * sub_mask, no_subs.to(scores.dtype)], 1)  # [B, K + 1]
    probs = list_probs(scores, docs, how) * (weight > 0)[..., None]
    layers = [Layer(probs, weight)]
    if levels == 1:
        return layers
    child = batch["sub2_mask"] & (batch["sub2_parent"] >= 0)
    parent = batch["sub2_parent"].clamp(min=0)
    n_children = torch.zeros_like(weight).scatter_add_(1, parent, child.to(weight.dtype))
    child_weight = (weight / n_children.clamp(min=1)).gather(1, parent) * child
    child_probs = list_probs(prior.relevance(batch["sub2_feat"]), docs, how) * (child_weight > 0)[..., None]
    leaf_weight = weight * (n_children == 0)
    layers.append(Layer(
        torch.cat([child_probs, probs * (leaf_weight > 0)[..., None]], 1),
        torch.cat([child_weight, leaf_weight], 1),
    ))
    return layers


class PriorModel(DiversityModel):
    """A greedy re-ranker over a relevance prior ``prior`` (anything with ``relevance(feats [..., F]) -> [...]``).

    Params: ``lam`` the relevance/diversity trade-off lambda, ``prob`` how scores
    become probabilities (``softmax`` or ``minmax``, module docstring).
    """

    ARG_RANGES = {"lam": "[0, 1]"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""
    ARG_ENDS = {"lam": {0: "its relevance prior alone", 1: "the diversity term alone"}}
    """What an argument at an end of its allowed interval makes of the model (the tuning table says it)."""

    sequential: ClassVar[bool] = True

    def __init__(self, dims: BundleDims, prior: ListMLE, lam: float = 0.5, prob: str = "softmax"):
        super().__init__()
        if prob not in PROBS:
            raise ValueError(f"prob must be one of {PROBS}, got '{prob}'")
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must lie in [0, 1], got {lam}")
        self.prior = prior
        self.lam = float(lam)
        self.prob = prob

    def query_probs(self, batch: Batch) -> torch.Tensor:
        """P(d|q) ``[B, D]`` from the query features ``rel_feat``."""
        return list_probs(self.prior.relevance(batch["rel_feat"]), batch["doc_mask"], self.prob)


class ExplicitModel(PriorModel):
    """A prior model over weighted intent layers, mixed with weights ``mix`` (flat models: one layer)."""

    mix: tuple[float, ...] = (1.0,)

    def layers(self, batch: Batch) -> list[Layer]:
        """The intent layers this model mixes (``len(mix)`` levels)."""
        return intent_layers(self.prior, batch, self.prob, levels=len(self.mix))


class Hierarchical(ExplicitModel):
    """Base of HxQuAD and HPM2 (listed before their flat model): two intent levels mixed as
    ``alpha * level1 + (1 - alpha) * level2``.

    ``alpha = 1`` is the flat model on level-1 suggestions; ``alpha = 0`` uses level 2 only.
    """

    ARG_RANGES = {"alpha": "[0, 1]"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""
    ARG_ENDS = {"alpha": {0: "level-2 suggestions only", 1: "level-1 suggestions only"}}

    def __init__(self, dims: BundleDims, prior: ListMLE, lam: float = 0.5, alpha: float = 0.5,
                 prob: str = "softmax"):
        super().__init__(dims, prior, lam=lam, prob=prob)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.alpha = float(alpha)
        self.mix = (self.alpha, 1.0 - self.alpha)
