"""PAMM: perceptron-style probability margins between positive and negative rankings.

Xia et al., SIGIR 2015; NTN paper Section 4.2.4, Algorithm 3. For every
training list, every pair ``(Y+, Y-)`` of its ``tau+`` positive and ``tau-``
negative rankings (sampled once per fold, :mod:`srdiv.sampling.pamm_samples`, with
their metric ``E``, by default the candidate-normalised alpha-nDCG@20, ``alpha_nDCG_cand@20``) is checked::

    if  P(Y+|X) - P(Y-|X) <= E(Y+) - E(Y-):   theta <- theta + eta * grad log(P(Y+|X) / P(Y-|X))

with ``P`` the Plackett-Luce probability of Eq. 5
(:func:`srdiv.objectives.plackett_luce.ranking_log_prob`). Reconstruction as a loss
(Eqs. 11-13 are garbled in our copy; they are the gradient of
``log P(Y+) - log P(Y-)``, the difference of two Eq. 6-8 terms)::

    loss = -1/B sum_lists sum_{(Y+, Y-) violating} (log P(Y+|X) - log P(Y-|X))

The violation test uses probabilities, as Algorithm 3 does, and carries no
gradient, so gradient descent on this loss moves the parameters along the
algorithm's update direction summed over the violating pairs of a mini-batch
(all taken at the same parameters, where Algorithm 3 updates after each
pair). It is zero when no pair violates its margin. The mean over the B
lists of a mini-batch makes the step size independent of the batch size.

The rankings and their ``E`` come from the fold's samples
(``Objective.samples``, the ``samples`` section: ``pamm_positive``,
``pamm_negative``, ``pamm_metric``; the MDP-DIV paper used alpha-nDCG@10).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import torch

from srdiv.features.bundle import Bundle
from srdiv.io import InputError
from srdiv.models.base import Batch, DiversityModel
from srdiv.objectives.base import Objective, take
from srdiv.objectives.plackett_luce import ranking_log_prob
from srdiv.registry import OBJECTIVES


class Rankings(NamedTuple):
    """Bundle rows ``[B]`` with their positive / negative rankings ``[B, T, D]`` and metrics ``[B, T]``."""

    rows: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    pos_metric: np.ndarray
    neg_metric: np.ndarray


def pamm_loss(model: DiversityModel, batch: Batch, pos: torch.Tensor, neg: torch.Tensor,
              pos_metric: torch.Tensor, neg_metric: torch.Tensor) -> torch.Tensor:
    """The PAMM loss of ``B`` lists: ``pos [B, T+, L]``, ``neg [B, T-, L]`` rankings, metrics ``[B, T+]``,
    ``[B, T-]``."""
    log_p = ranking_log_prob(model, batch, torch.cat([pos, neg], 1))
    log_pos, log_neg = log_p[:, :pos.shape[1], None], log_p[:, None, pos.shape[1]:]
    with torch.no_grad():
        margin = pos_metric[:, :, None] - neg_metric[:, None, :]
        violated = log_pos.exp() - log_neg.exp() <= margin  # [B, T+, T-]
    return -torch.where(violated, log_pos - log_neg, 0.0).sum() / len(pos)


@OBJECTIVES.register("pamm")
class PAMM(Objective):
    """PAMM over the fold's positive and negative rankings (Algorithm 3). Needs the fold's samples."""

    def prepare(self, bundle: Bundle, rng: np.random.Generator) -> Rankings:
        if self.samples is None:
            raise InputError("--samples", "objective pamm needs the fold's samples (srdiv train --samples)")
        pamm = self.samples.pamm
        return Rankings(self.samples.query_rows(bundle), pamm["pamm_pos"].astype(np.int64),
                        pamm["pamm_neg"].astype(np.int64), pamm["pamm_pos_metric"], pamm["pamm_neg_metric"])

    def batches(self, prepared: Rankings, n_queries: int, batch_size: int,
                rng: np.random.Generator) -> Iterator[Rankings]:
        """Shuffled lists, ``batch_size`` per mini-batch, each with all its rankings."""
        for idx in super().batches(prepared, len(prepared.rows), batch_size, rng):
            yield Rankings(*(part[idx] for part in prepared))

    def loss(self, model: DiversityModel, data: Batch, minibatch: Rankings) -> torch.Tensor:
        batch = take(data, minibatch.rows)
        device = batch["doc_mask"].device
        pos, neg, pos_metric, neg_metric = (torch.as_tensor(x, device=device) for x in minibatch[1:])
        return pamm_loss(model, batch, pos, neg, pos_metric, neg_metric)
