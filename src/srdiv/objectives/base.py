"""What a training objective is: its samples, its mini-batches, and its loss.

Objectives are registered by name in :data:`srdiv.registry.OBJECTIVES` and
chosen per model in ``params.yaml``. The trainer moves the whole training
bundle to the device once (``data``: a dict of tensors, see
:meth:`srdiv.features.bundle.Bundle.to_torch`) and then, every epoch, asks the
objective for mini-batches that index into it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from srdiv.features.bundle import Bundle
from srdiv.models.base import Batch, DiversityModel


class Objective:
    """Base class: subclasses implement the three steps below.

    ``samples`` holds the fold's precomputed training samples
    (:class:`srdiv.sampling.samples.Samples`: list-pairwise samples, PAMM
    rankings) when the job was given them; the harness sets it before
    :meth:`prepare`. ``samples.query_rows(bundle)`` maps its queries to rows.
    """

    samples: Any = None

    def __init__(self, **params: Any):
        self.params = params

    def prepare(self, bundle: Bundle, rng: np.random.Generator) -> Any:
        """Precompute what training needs from the training queries (e.g. samples)."""
        return None

    def batches(self, prepared: Any, n_queries: int, batch_size: int, rng: np.random.Generator) -> Iterator[Any]:
        """Yield one epoch of mini-batches (by default: shuffled query-row index arrays)."""
        rows = rng.permutation(n_queries)
        for start in range(0, n_queries, batch_size):
            yield rows[start:start + batch_size]

    def loss(self, model: DiversityModel, data: Batch, minibatch: Any) -> torch.Tensor:
        """A scalar loss to minimise for one mini-batch."""
        raise NotImplementedError


def take(data: Batch, rows: torch.Tensor | np.ndarray) -> Batch:
    """The batch restricted to query ``rows`` (indices into axis 0)."""
    rows = torch.as_tensor(rows, device=data["doc_mask"].device)
    return {k: v.index_select(0, rows) for k, v in data.items()}
