"""Relational learning to rank: R-LTR (Zhu et al., SIGIR 2014) and its neural tensor novelty (NTN).

Both score a candidate ``d_i`` after the selected documents ``S`` with the
marginal relevance of NTN paper Section 4 (``B`` lists, ``D`` candidates,
``F`` relevance features, ``P`` pairwise features)::

    f(d_i, S) = w_r^T x_i + w_n^T h_S(P_i)                        (NTN Eq. 3)

where ``P [B, D, D, P]`` holds one feature vector per document pair and
``h_S`` aggregates the rows ``P[i, j]`` of the selected ``j in S``
(``min``, ``max`` or ``avg``). While ``S`` is empty there is no novelty term.

* R-LTR (:class:`RLTR`): ``P`` are the handcrafted pairwise diversity
  features ``div_feat`` (DSSA Table 6); ``h_S = min`` is the paper's
  R-LTR_min (Section 5.1 of the NTN paper). Trained with ``mle`` (Eq. 5);
  PAMM is the same model trained with ``pamm``.
* NTN (:class:`NTN`, Section 3.2, Eqs. 1-2, 4): ``P`` is learned from the
  document vectors ``v = doc_vec`` (doc2vec or LDA) by a bilinear tensor
  layer with ``z`` slices, ``P[i, j, k] = tanh(v_i^T W^[k] v_j)`` (Eq. 1, no
  linear term and no bias, as in the paper), ``h_S = max`` (max-pooling,
  Eq. 2) and ``w_n = mu`` the linear layer, so
  ``f(d, S) = w^T x + mu^T max_{j in S} tanh(v^T W^[1:z] v_j)`` (Eq. 4).
  R-LTR-NTN is NTN trained with ``mle``, PAMM-NTN with ``pamm``.

Parameters start as random values in ``[0, init_scale]`` (Algorithm 2 line 1:
``[0, 1]``). The hand-written gradients of Eqs. 6-9 and 11-13 are left to
autograd; ``tests/test_rltr_ntn.py`` checks both agree.

Scores after every prefix of a training ranking (:meth:`RelationalLTR.prefix_scores`,
for the Plackett-Luce losses) use running min / max / mean along the ranking;
``context_scores`` is their last row, and ranking (Algorithm 1) keeps the same
running aggregate while it selects.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from srdiv.features.bundle import BundleDims
from srdiv.models.base import Batch, DiversityModel
from srdiv.registry import MODELS

AGGREGATES = ("min", "max", "avg")


class RelationalLTR(DiversityModel):
    """The marginal relevance ``w_r^T x_i + w_n^T h_S(P_i)`` over some pairwise features ``P``."""

    ARG_RANGES = {"init_scale": "(0, inf)"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""

    sequential: ClassVar[bool] = True

    def __init__(self, dims: BundleDims, pair_dim: int, aggregate: str, init_scale: float):
        super().__init__()
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got '{aggregate}'")
        self.aggregate = aggregate
        self.init_scale = float(init_scale)
        self.relevance = nn.Parameter(torch.empty(dims.feats))  # w_r (omega)
        self.novelty = nn.Parameter(torch.empty(pair_dim))  # w_n (mu)

    def reset_parameters(self) -> None:
        """Random values in ``[0, init_scale]`` (NTN Algorithm 2, line 1)."""
        for p in self.parameters():
            nn.init.uniform_(p, 0.0, self.init_scale)

    def pairs(self, batch: Batch) -> torch.Tensor:
        """Pairwise features ``[B, D, D, P]``: row ``[b, i, j]`` relates candidate i to a selected j."""
        raise NotImplementedError

    def prefix_scores(self, batch: Batch, rankings: torch.Tensor) -> torch.Tensor:
        """``[B, N, L, D]`` = ``context_scores`` of every candidate after each prefix of ``rankings [B, N, L]``.

        The same numbers, with ``h_S`` taken as a running min / max / mean along
        each ranking: one gather of ``P`` per ranking instead of one per prefix.
        """
        pairs = self.pairs(batch)
        n_lists, n_rankings, depth = rankings.shape
        n_docs, n_pairs = pairs.shape[1], pairs.shape[3]
        index = rankings.clamp(min=0).reshape(n_lists, 1, -1, 1).expand(-1, n_docs, -1, n_pairs)
        sel = pairs.gather(2, index).reshape(n_lists, n_docs, n_rankings, depth, n_pairs)  # [B, D, N, L, P]
        valid = (rankings >= 0)[:, None, :, :, None]
        seen = valid.long().cumsum(3)  # valid documents in Y[:t + 1]
        if self.aggregate == "min":
            running = sel.masked_fill(~valid, float("inf")).cummin(3).values
        elif self.aggregate == "max":
            running = sel.masked_fill(~valid, float("-inf")).cummax(3).values
        else:
            running = (sel * valid).cumsum(3) / seen.clamp(min=1)
        before = torch.cat([torch.zeros_like(running[:, :, :, :1]), running[:, :, :, :-1]], 3)  # h over Y[:t]
        agg = torch.where(seen > valid.long(), before, 0.0)  # empty S: no novelty term
        scores = (batch["rel_feat"] @ self.relevance)[:, :, None, None] + agg @ self.novelty  # [B, D, N, L]
        return scores.permute(0, 2, 3, 1)

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """``f(d, S)`` ``[B, M]`` of ``candidates [B, M]`` after ``context [B, L]`` (-1 padding), Eq. 3.

        The prefix scores of the context followed by one more position, at that position.
        """
        ranking = torch.cat([context, context.new_full((len(context), 1), -1)], 1)[:, None]  # [B, 1, L + 1]
        return self.prefix_scores(batch, ranking)[:, 0, -1].gather(1, candidates.clamp(min=0))

    @torch.no_grad()
    def rank(self, batch: Batch) -> torch.Tensor:
        """Algorithm 1 (greedy maximal marginal relevance), incrementally.

        ``h_S`` is kept as running state (min / max / sum of the selected
        documents' pair features, the cumulative operations of
        :meth:`prefix_scores` taken one step at a time), so a step costs
        ``O(D P)``; the order equals :func:`srdiv.models.base.greedy_rank`'s.
        """
        pairs = self.pairs(batch)
        mask = batch["doc_mask"]
        rows = torch.arange(mask.shape[0], device=mask.device)
        relevance = batch["rel_feat"] @ self.relevance
        order = torch.full_like(mask, -1, dtype=torch.long)
        remaining = mask.clone()
        running, count = None, 0
        for t in range(int(mask.sum(1).max())):
            scores = relevance
            if running is not None:
                scores = scores + (running / count if self.aggregate == "avg" else running) @ self.novelty
            best = scores.masked_fill(~remaining, float("-inf")).argmax(1)
            active = remaining.any(1)
            order[:, t] = torch.where(active, best, -1)
            remaining[rows[active], best[active]] = False
            new = pairs[rows, :, best]  # [B, D, P]: every candidate against the selected document
            if running is None:
                running = new
            elif self.aggregate == "min":
                running = torch.minimum(running, new)
            elif self.aggregate == "max":
                running = torch.maximum(running, new)
            else:
                running = running + new
            count += 1
        return order


@MODELS.register("rltr")
class RLTR(RelationalLTR):
    """R-LTR / PAMM: novelty from the handcrafted pairwise features ``div_feat`` (``aggregate`` = h_S)."""

    def __init__(self, dims: BundleDims, aggregate: str = "min", init_scale: float = 1.0):
        super().__init__(dims, dims.div_feats, aggregate, init_scale)
        self.reset_parameters()

    def pairs(self, batch: Batch) -> torch.Tensor:
        return batch["div_feat"]


@MODELS.register("ntn")
class NTN(RelationalLTR):
    """R-LTR-NTN / PAMM-NTN: novelty from a bilinear tensor layer of ``slices`` slices over ``doc_vec``."""

    ARG_RANGES = {"slices": "[1, inf)"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""

    def __init__(self, dims: BundleDims, slices: int = 7, init_scale: float = 1.0, representation: str = "doc2vec"):
        """``representation`` names the bundle the pipeline feeds (``bundle/<repr>.npz``: doc2vec or LDA)."""
        super().__init__(dims, slices, "max", init_scale)
        self.representation = representation
        self.tensor = nn.Parameter(torch.empty(slices, dims.emb, dims.emb))  # W^[1:z]
        self.reset_parameters()

    def pairs(self, batch: Batch) -> torch.Tensor:
        """``tanh(v_i^T W^[k] v_j)`` ``[B, D, D, z]`` (Eq. 1) for every candidate pair."""
        v = batch["doc_vec"]
        left = torch.einsum("bie,kef->bkif", v, self.tensor)  # v_i^T W^[k]: [B, z, D, E]
        return torch.tanh(left @ v.transpose(1, 2)[:, None]).permute(0, 2, 3, 1)
