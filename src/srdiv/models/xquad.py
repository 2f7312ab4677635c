"""xQuAD (Santos, Macdonald, Ounis, WWW 2010) and its hierarchical form HxQuAD (Hu et al., CIKM 2015).

Both score a candidate ``d`` placed after the selected documents ``C`` with one
function, :func:`xquad_scores`::

    S(d) = (1 - lam) P(d|q) + lam * sum_l a_l sum_{i in I_l} w_i P(d|i) prod_{d_j in C} (1 - P(d_j|i))

* xQuAD: one layer, the level-1 suggestions with uniform weights ``w_i``
  (``sub_weight``), ``a_1 = 1`` (Santos et al. 2010, Eq. 3-5 with independent
  relevance of documents).
* HxQuAD: the layers of the intent hierarchy, level 1 and level 2 (leaves copied
  down, see :mod:`srdiv.models.unsupervised`), mixed with ``a_1 = alpha`` and
  ``a_2 = 1 - alpha``. This is our reconstruction of Hu et al.'s HxQuAD: each
  layer keeps its own coverage/novelty term and a layer weight controls the
  layers. Where every level-1 suggestion is its own only child, the two layers
  coincide and HxQuAD equals xQuAD for every alpha.

Probabilities come from the relevance prior (``prob``: softmax over the
candidate list by default).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from srdiv.models.base import Batch
from srdiv.models.unsupervised import ExplicitModel, Hierarchical, Layer, take_docs
from srdiv.registry import MODELS


def xquad_scores(p_query: torch.Tensor, layers: Sequence[Layer], mix: Sequence[float], lam: float,
                 context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """The formula of the module docstring: ``p_query`` ``[B, D]``, context ``[B, L]``, candidates ``[B, M]``
    -> ``[B, M]``."""
    diversity: torch.Tensor | float = 0.0
    for layer, a in zip(layers, mix):
        not_covered = (1.0 - take_docs(layer.probs, context)).prod(-1)  # [B, K]
        coverage = take_docs(layer.probs, candidates)  # [B, K, M]
        diversity = diversity + a * ((layer.weight * not_covered)[..., None] * coverage).sum(1)
    return (1.0 - lam) * take_docs(p_query, candidates) + lam * diversity


@MODELS.register("xquad")
class XQuAD(ExplicitModel):
    """xQuAD over the level-1 suggestions. Params: ``prior``, ``lam``, ``prob``."""

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        return xquad_scores(self.query_probs(batch), self.layers(batch), self.mix, self.lam, context, candidates)


@MODELS.register("hxquad")
class HxQuAD(Hierarchical, XQuAD):
    """HxQuAD over two suggestion levels. Params: ``prior``, ``lam``, ``alpha``, ``prob``."""
