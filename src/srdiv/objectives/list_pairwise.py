"""DSSA's list-pairwise loss (TKDE, Section 4.3.1, Eq. 16) over the fold's precomputed samples.

For a sample ``(C, d1, d2, w, y)`` (:mod:`srdiv.sampling.list_pairwise_samples`) with
``s1``, ``s2`` the scores of ``d1``, ``d2`` placed right after the context
``C``, ``P(r1, r2) = 1 / (1 + exp(s2 - s1))`` and the loss is the weighted
logistic loss::

    L = - sum_q sum_o w_o (y_o log P(r1, r2) + (1 - y_o) log(1 - P(r1, r2))),   w_o = |M(r1) - M(r2)|

A mini-batch is a set of the samples' sequences with all their contexts
(each context a prefix of a sequence) and all those contexts' pairs; it holds
about ``batch_size`` contexts. The model scores every candidate after every
prefix of the sequences in one
:meth:`~srdiv.models.base.DiversityModel.prefix_scores` call (or, when every
context is a whole sequence, the ``per_length`` draw, after each context in one
``context_scores`` call), and the loss gathers the pairs. The batch loss is the sum above divided by the
number of pairs in the batch (a constant rescaling of the learning rate per
batch).

``context_fraction`` (default 1: every context, as Algorithm 1) lets an
epoch visit a random share of the sequences (with their contexts), drawn
afresh each epoch: a compute budget, not part of the paper.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from srdiv.features.bundle import Bundle
from srdiv.io import InputError
from srdiv.models.base import Batch, DiversityModel
from srdiv.objectives.base import Objective, take
from srdiv.registry import OBJECTIVES


class PairBatch(NamedTuple):
    """Sequences ``[B, L]`` with their bundle rows ``[B]``; contexts ``[C]`` as (local sequence, length);
    pairs ``[P, 2]`` with their context in ``C``."""

    rows: np.ndarray
    sequences: np.ndarray
    context_sequence: np.ndarray
    context_length: np.ndarray
    pair_context: np.ndarray
    pairs: np.ndarray
    weight: np.ndarray
    label: np.ndarray
    whole: bool


class Prepared(NamedTuple):
    """All samples of the training queries, grouped: the contexts of sequence s are
    ``seq_contexts[seq_start[s]:seq_start[s + 1]]``, the pairs of context c ``pair_start[c]:pair_start[c + 1]``."""

    rows: np.ndarray
    sequences: np.ndarray
    seq_start: np.ndarray
    seq_contexts: np.ndarray
    context_length: np.ndarray
    pair_start: np.ndarray
    pairs: np.ndarray
    weight: np.ndarray
    label: np.ndarray
    whole: bool


@OBJECTIVES.register("list_pairwise")
class ListPairwise(Objective):
    """Weighted logistic loss over pairs of documents sharing a context. Needs the fold's samples.

    Args:
        context_fraction: the share of the fold's sequences (with their contexts) one epoch visits, in (0, 1].
    """

    def __init__(self, context_fraction: float = 1.0):
        if not 0.0 < context_fraction <= 1.0:
            raise ValueError(f"list_pairwise: context_fraction must be in (0, 1], got {context_fraction}")
        super().__init__(context_fraction=context_fraction)
        self.context_fraction = context_fraction

    def prepare(self, bundle: Bundle, rng: np.random.Generator) -> Prepared:
        if self.samples is None:
            raise InputError("--samples", "objective list_pairwise needs the fold's samples (srdiv train --samples)")
        lp = self.samples.list_pairwise
        seq_contexts = np.argsort(lp.context_sequence, kind="stable")
        seq_start = np.searchsorted(lp.context_sequence[seq_contexts], np.arange(len(lp.sequences) + 1))
        pair_start = np.searchsorted(lp.pair_context, np.arange(len(lp.context_sequence) + 1))
        whole = bool(np.array_equal(lp.context_sequence, np.arange(len(lp.sequences)))
                     and np.array_equal(lp.context_length, (lp.sequences >= 0).sum(1)))
        return Prepared(self.samples.query_rows(bundle)[lp.sequence_query], lp.sequences.astype(np.int64),
                        seq_start, seq_contexts, lp.context_length.astype(np.int64), pair_start,
                        lp.pairs.astype(np.int64), lp.weight, lp.label.astype(np.float32), whole)

    def batches(self, prepared: Prepared, n_queries: int, batch_size: int,
                rng: np.random.Generator) -> Iterator[PairBatch]:
        """Shuffled sequences with contexts (``context_fraction`` of them), about ``batch_size`` contexts each."""
        n_seq = len(prepared.sequences)
        used = np.flatnonzero(np.diff(prepared.seq_start) > 0)          # sequences with at least one context
        order = used[rng.permutation(len(used))]
        order = order[:max(1, round(self.context_fraction * len(order)))] if len(order) else order
        per_seq = len(prepared.seq_contexts) / max(len(used), 1)
        step = max(1, round(batch_size / per_seq)) if n_seq else 1
        for first in range(0, len(order), step):
            seqs = order[first:first + step]
            ctx = prepared.seq_contexts[_ranges(prepared.seq_start, seqs)]
            ctx_seq = np.repeat(np.arange(len(seqs)), np.diff(prepared.seq_start)[seqs])
            pair_ids = _ranges(prepared.pair_start, ctx)
            pair_ctx = np.repeat(np.arange(len(ctx)), np.diff(prepared.pair_start)[ctx])
            lengths = prepared.context_length[ctx]
            width = int(lengths.max(initial=0)) + (0 if prepared.whole else 1)  # prefix_scores: lengths < width
            yield PairBatch(prepared.rows[seqs], prepared.sequences[seqs][:, :width], ctx_seq, lengths, pair_ctx,
                            prepared.pairs[pair_ids], prepared.weight[pair_ids], prepared.label[pair_ids],
                            prepared.whole)

    def loss(self, model: DiversityModel, data: Batch, minibatch: PairBatch) -> torch.Tensor:
        batch = take(data, minibatch.rows)
        device = batch["doc_mask"].device
        mask = batch["doc_mask"]
        candidates = torch.where(mask, torch.arange(mask.shape[1], device=device), -1)
        tensor = lambda x: torch.as_tensor(x, device=device)  # noqa: E731
        sequences = tensor(minibatch.sequences)
        if minibatch.whole:                                                   # context c = sequence c
            scores = model.context_scores(batch, sequences, candidates)       # [C, D]
        else:
            scores = model.prefix_scores(batch, sequences[:, None])[:, 0]     # [S, L, D]
            scores = scores[tensor(minibatch.context_sequence), tensor(minibatch.context_length)]
        local, pairs = tensor(minibatch.pair_context), tensor(minibatch.pairs)
        margin = scores[local, pairs[:, 0]] - scores[local, pairs[:, 1]]
        weight = torch.as_tensor(minibatch.weight, device=device, dtype=margin.dtype)
        label = torch.as_tensor(minibatch.label, device=device, dtype=margin.dtype)
        return (weight * F.binary_cross_entropy_with_logits(margin, label, reduction="none")).sum() / len(label)


def _ranges(start: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The concatenated index ranges ``start[i]:start[i + 1]`` of every ``i`` in ``ids``."""
    begin, count = start[ids], np.diff(start)[ids]
    return np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count) + np.repeat(begin, count)
