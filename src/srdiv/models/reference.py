"""Reference orders that show what a collection gives without learning: a random order and the cosine.

* ``random``: a seeded random order of each query's candidates. Scores are drawn from a
  CPU generator seeded once per model, in the order ``list_scores`` is called, so ranking the
  same queries in the same batches gives the same order, on the CPU and on a GPU alike
  (a CUDA generator would draw other numbers from the same seed).
* ``cosine``: the candidates by the cosine of their vector with the query vector,
  ``cos(e_q, e_d)``, in the row's representation (the pseudo-document query vector the
  vector-only models, DALETOR and MDP-DIV, read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from srdiv.models.base import Batch, DiversityModel
from srdiv.registry import MODELS

if TYPE_CHECKING:
    from srdiv.features.bundle import BundleDims


@MODELS.register("random")
class RandomOrder(DiversityModel):
    """A seeded random order; no parameters, nothing to train."""

    ARG_RANGES = {"seed": "[0, 4294967295]"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""

    def __init__(self, dims: BundleDims, seed: int = 0):
        super().__init__()
        self._generator = torch.Generator(device="cpu").manual_seed(seed)

    def list_scores(self, batch: Batch) -> torch.Tensor:
        mask = batch["doc_mask"]
        return torch.rand(mask.shape, generator=self._generator, device="cpu").to(mask.device)


@MODELS.register("cosine")
class CosineOrder(DiversityModel):
    """Candidates by ``cos(e_q, e_d)``; no parameters, nothing to train."""

    def __init__(self, dims: BundleDims):
        super().__init__()

    def list_scores(self, batch: Batch) -> torch.Tensor:
        return F.cosine_similarity(batch["query_vec"][:, None, :], batch["doc_vec"], dim=-1)
