"""Maximum likelihood of the ideal ranking: ListMLE / R-LTR (NTN paper Eq. 5, DSSA Eqs. 17-18).

``L = - sum_q log P(r*_q)`` with ``r*_q`` the greedy alpha-DCG ideal ranking of
the query's training candidates (:func:`srdiv.metrics.targets.ideal_orders`)
and ``P`` the Plackett-Luce probability of
:func:`srdiv.objectives.plackett_luce.ranking_log_prob`: sequential models score
each position after the prefix of the ideal ranking above it
(``context_scores``); score-and-sort models through ``list_scores`` (their
``context_scores`` ignores the context), which is ListMLE (Xia et al., ICML
2008). The batch loss is the mean over the batch's queries.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import torch

from srdiv.features.bundle import Bundle
from srdiv.metrics.diversity import ALPHA
from srdiv.metrics.targets import ideal_orders
from srdiv.models.base import Batch, DiversityModel
from srdiv.objectives.base import Objective, take
from srdiv.objectives.plackett_luce import ranking_log_prob
from srdiv.registry import OBJECTIVES


class Rankings(NamedTuple):
    """Bundle rows ``[B]`` and their ideal rankings ``[B, D]`` (-1 padding)."""

    rows: np.ndarray
    order: np.ndarray


@OBJECTIVES.register("mle")
class PlackettLuceMLE(Objective):
    """Minus log Plackett-Luce probability of the ideal ranking. Param: ``alpha`` (0.5) of the ideal."""

    def __init__(self, alpha: float = ALPHA, **params: Any):
        super().__init__(alpha=alpha, **params)
        self.alpha = float(alpha)

    def prepare(self, bundle: Bundle, rng: np.random.Generator) -> np.ndarray:
        """``[Q, D]`` ideal rankings of the training queries."""
        return ideal_orders(bundle.labels, bundle.doc_mask, self.alpha)

    def batches(self, prepared: np.ndarray, n_queries: int, batch_size: int,
                rng: np.random.Generator) -> Iterator[Rankings]:
        for rows in super().batches(prepared, n_queries, batch_size, rng):
            yield Rankings(rows, prepared[rows])

    def loss(self, model: DiversityModel, data: Batch, minibatch: Rankings) -> torch.Tensor:
        batch = take(data, minibatch.rows)
        order = torch.as_tensor(minibatch.order, device=batch["doc_mask"].device)
        return -ranking_log_prob(model, batch, order).mean()
