"""ListMLE (Xia et al., ICML 2008): a linear relevance function trained with Plackett-Luce likelihood.

The score of candidate ``d`` for query (or suggestion) ``q`` is ``w^T x_{d,q}``
over the 18 relevance features (DSSA Table 5); ranking sorts by it. It is
trained with the ``mle`` objective on the ideal ordering of the training
candidates (minus log Plackett-Luce probability, R-LTR Eq. 5 with a relevance
only score). The unsupervised baselines (MMR, xQuAD, PM2, ...) use the trained
model as their relevance prior through :meth:`ListMLE.relevance`, also on the
suggestion features ``x_{d,i}``. No bias: Plackett-Luce is shift invariant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from srdiv.models.base import Batch, DiversityModel
from srdiv.registry import MODELS

if TYPE_CHECKING:
    from srdiv.features.bundle import BundleDims


@MODELS.register("listmle")
class ListMLE(DiversityModel):
    """Linear relevance ``w^T x`` (score-and-sort). No params besides the bundle sizes."""

    def __init__(self, dims: BundleDims):
        super().__init__()
        self.linear = nn.Linear(dims.feats, 1, bias=False)

    def relevance(self, feats: torch.Tensor) -> torch.Tensor:
        """Scores ``[...]`` of relevance features ``feats [..., F]`` (query or suggestion features)."""
        return self.linear(feats).squeeze(-1)

    def list_scores(self, batch: Batch) -> torch.Tensor:
        return self.relevance(batch["rel_feat"])
