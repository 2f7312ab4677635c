"""The initial run as a ranker: "Lemur" on the TREC Web Track data, "Initial" elsewhere.

Bundles keep the candidates in initial-run order (best first), so the initial
ranking is the D-axis order itself; scoring by position (not by the run's
score) keeps that order even where the run's scores tie.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from srdiv.models.base import Batch, DiversityModel
from srdiv.registry import MODELS

if TYPE_CHECKING:
    from srdiv.features.bundle import BundleDims


@MODELS.register("initial")
class InitialRanking(DiversityModel):
    """Returns the initial-run order; no parameters, nothing to train."""

    def __init__(self, dims: BundleDims):
        super().__init__()

    def list_scores(self, batch: Batch) -> torch.Tensor:
        mask = batch["doc_mask"]
        return -torch.arange(mask.shape[1], device=mask.device, dtype=torch.float32).expand(mask.shape)
