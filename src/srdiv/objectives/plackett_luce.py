"""Plackett-Luce probability of whole rankings under a sequential model (R-LTR, PAMM, MLE, NTN).

For a sequential model with marginal score ``f(d, S) = context_scores`` the
probability of a ranking ``Y`` is the product over positions of a soft-max
over the documents not yet placed (NTN paper Eq. 5, DSSA Eq. 17)::

    P(Y | X) = prod_r exp f(Y(r), S_{r-1}) / sum_{d in X \\ S_{r-1}} exp f(d, S_{r-1})

with ``S_{r-1}`` the top ``r - 1`` documents of ``Y``. ``X`` are the real
candidates of the list (``doc_mask``), so a ranking of every candidate gives
Eq. 5 exactly and a shorter one (-1 padding at the end) the probability of its
top positions.

The scores of every candidate after every prefix of a ranking come from
:meth:`~srdiv.models.base.DiversityModel.prefix_scores` (by default
``context_scores`` once per position; R-LTR, NTN, DSSA and DESA encode a
ranking once).
"""

from __future__ import annotations

import torch

from srdiv.models.base import NEG_INF, Batch, DiversityModel


def ranking_log_prob(model: DiversityModel, batch: Batch, rankings: torch.Tensor) -> torch.Tensor:
    """``log P(Y | X)`` of ``rankings`` ``[B, L]`` or ``[B, N, L]`` (indices into D, -1 padding) -> ``[B]`` /
    ``[B, N]``."""
    n_lists, depth = rankings.shape[0], rankings.shape[-1]
    flat = rankings.reshape(n_lists, -1, depth)
    scores = model.prefix_scores(batch, flat)  # [B, N, L, D]
    placed = flat >= 0
    picked = torch.nn.functional.one_hot(flat.clamp(min=0), scores.shape[-1]) * placed[..., None]
    before = (picked.cumsum(2) - picked) > 0  # placed above position t
    available = batch["doc_mask"][:, None, None, :] & ~before
    logp = scores.masked_fill(~(available | ~placed[..., None]), NEG_INF).log_softmax(-1)
    step = logp.gather(-1, flat.clamp(min=0)[..., None])[..., 0]
    return torch.where(placed, step, 0.0).sum(-1).reshape(rankings.shape[:-1])
