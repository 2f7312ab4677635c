"""The one interface every ranker implements, and the generic batched ranking.

Two kinds of ranker share it:

* score-and-sort models (``sequential = False``) implement :meth:`list_scores`:
  one score per candidate, ranking = sort;
* greedy sequential models (``sequential = True``: DSSA, R-LTR, NTN, MDP-DIV,
  MMR, xQuAD, PM2, ...) implement :meth:`context_scores`: the score of each
  candidate given the ordered context of already selected documents. Ranking
  picks the best remaining candidate step by step, batched over all candidates
  and all queries of a batch.

A batch is the dict of tensors of :meth:`srdiv.features.bundle.Bundle.to_torch`
(keys ``doc_vec`` ``[B, D, E]``, ``rel_feat`` ``[B, D, F]``, ``sub_feat``
``[B, K, D, F]``, ``doc_mask`` ``[B, D]``, ...). Contexts and candidates are
index tensors into the D axis with -1 for padding.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

import torch
from torch import nn

Batch = dict[str, torch.Tensor]
NEG_INF = float("-inf")


class DiversityModel(nn.Module):
    """Base class of every diversification model (trainable or not)."""

    sequential: ClassVar[bool] = False

    def list_scores(self, batch: Batch) -> torch.Tensor:
        """Scores ``[B, D]`` of every candidate (score-and-sort models)."""
        raise NotImplementedError(f"{type(self).__name__} is sequential; use context_scores")

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores ``[B, M]`` of ``candidates`` ``[B, M]`` placed right after ``context`` ``[B, L]``.

        The default ignores the context: right for score-and-sort models.
        """
        scores = self.list_scores(batch)
        return scores.gather(1, candidates.clamp(min=0))

    def prefix_scores(self, batch: Batch, rankings: torch.Tensor) -> torch.Tensor:
        """``[B, N, L, D]`` scores of every candidate right after ``rankings[b, n, :t]``, for ``rankings [B, N, L]``
        (-1 padding at the end). Scores of a candidate already in the prefix, and at positions t
        where the ranking is padding, are finite but unspecified.

        Used by the Plackett-Luce objectives (every prefix of a ranking) and the list-pairwise
        objective (contexts that are prefixes of shared sequences). The default is
        :func:`context_prefix_scores`; models that encode a ranking once override it.
        """
        return context_prefix_scores(self, batch, rankings)

    def rank(self, batch: Batch) -> torch.Tensor:
        """Candidate indices ``[B, D]``, best first, padding (-1) last."""
        mask = batch["doc_mask"]
        if not self.sequential:
            scores = self.list_scores(batch).masked_fill(~mask, NEG_INF)
            order = scores.argsort(dim=1, descending=True, stable=True)
            return torch.where(mask.gather(1, order), order, torch.full_like(order, -1))
        return greedy_rank(self, batch)


def repeat_lists(batch: Batch, n: int) -> Batch:
    """The batch with each list repeated ``n`` times in a row (``[B, ...]`` -> ``[B n, ...]``): one row per
    ranking of ``rankings [B, n, L]``."""
    if n == 1:
        return batch
    rows = torch.arange(batch["doc_mask"].shape[0], device=batch["doc_mask"].device).repeat_interleave(n)
    return {k: v.index_select(0, rows) for k, v in batch.items()}


def context_prefix_scores(model: DiversityModel, batch: Batch, rankings: torch.Tensor) -> torch.Tensor:
    """:meth:`DiversityModel.prefix_scores` the generic way: the batch is repeated for the N
    rankings of a list and ``context_scores`` runs once per position t, batched over lists,
    rankings and candidates."""
    n_lists, n_rankings, depth = rankings.shape
    batch = repeat_lists(batch, n_rankings)
    flat = rankings.reshape(-1, depth)
    n_docs = batch["doc_mask"].shape[1]
    candidates = torch.arange(n_docs, device=flat.device).expand(flat.shape[0], -1)
    steps = [model.context_scores(batch, flat[:, :t], candidates) for t in range(depth)]
    return torch.stack(steps, 1).reshape(n_lists, n_rankings, depth, n_docs)


class ContextScorer(Protocol):
    """What :func:`greedy_rank` needs of a model: :meth:`DiversityModel.context_scores`."""

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor: ...


@torch.no_grad()
def greedy_rank(model: ContextScorer, batch: Batch) -> torch.Tensor:
    """Greedy sequential selection (DSSA Section 4.3.2), batched over queries and candidates.

    At step t every remaining candidate is scored after the t selected ones and
    the best is appended. Models with cheaper incremental state override this.
    """
    mask = batch["doc_mask"]
    n_queries, n_docs = mask.shape
    candidates = torch.arange(n_docs, device=mask.device).expand(n_queries, n_docs)
    order = torch.full((n_queries, n_docs), -1, dtype=torch.long, device=mask.device)
    remaining = mask.clone()
    for t in range(int(mask.sum(1).max())):
        scores = model.context_scores(batch, order[:, :t], candidates)
        scores = scores.masked_fill(~remaining, NEG_INF)
        best = scores.argmax(dim=1)
        active = remaining.any(dim=1)
        order[:, t] = torch.where(active, best, order[:, t])
        remaining[torch.arange(n_queries, device=mask.device)[active], best[active]] = False
    return order
