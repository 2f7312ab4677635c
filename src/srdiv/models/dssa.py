"""DSSA-RNNMP and hierarchical DSSA (Jiang et al., TKDE, Sections 4.1-4.2).

A document's score at rank t is a mix of its relevance to the query and to every suggestion ("subtopic"), weighted
by attention a_{t,k} that moves away from subtopics the already selected documents cover. Both models are one
network seen through *layers* of subtopics (the paper: "DSSA based on a flat list of subtopics is a special case of
HDSSA"):

* :class:`DSSA`: layer 0 = the query, layer 1 = the level-1 suggestions. Attention is normalised within each layer
  (so the query's is always 1) and the layer weights are beta = (1 - lambda, lambda): Eq. (9)-(10).
* :class:`HDSSA`: layer 0 = the query as root subtopic, layer 1 = level-1 suggestions, layer 2 = level-2
  suggestions. One softmax over all subtopics of all layers (Eq. 13) and layer weights beta, balanced (HDSSA-B) or
  learned (HDSSA): Eq. (15). lambda disappears.

Per subtopic i (the query included) and candidate d, as implemented:

    relevance   r(d, i) = S'(e_d, e_i) + x_{d,i}^T w_r                 (Eq. 10-11)
                S'(e_d, e_i) = e_d^T W_s e_i ("general") | e_d . e_i ("dot")
    attention   a'_{t,i} = A'(h_{t-1}, e_i) + max_{j<t} x_{d_j,i}^T w_p  (Eq. 5-7)
                A'(h, e) = h^T W_a e ("general") | -h . e ("dot", needs hidden == emb)
                the max over no selected document is 0 (first position: initial weights)
                a_{t,i} = w_i exp(a'_{t,i}) / sum_{j in scope(i)} w_j exp(a'_{t,j})  (Eq. 8, 13)
    score       s_{d,t} = sum_i beta_{layer(i)} a_{t,i} r(d, i)              (Eq. 9, 15)
    state       h_t = cell(h_{t-1}, e_{d_t}), h_0 = 0 (vanilla / GRU / LSTM)  (Eq. 5)

The representation (LDA or doc2vec, Table 8) is the bundle the pipeline feeds (a row's ``representation:`` key picks
``bundle/<repr>.npz``); the network only sees its vectors.

Choices where the paper is silent or garbled (each one is a parameter):

* ``rnn_input``: the RNN reads the document vector e_d (``"vec"``, Fig. 2 and Eq. 5); ``"vec+rel"`` also feeds the
  query features x_{d,q}.
* ``dropout``: applied to h_{t-1} before attention (the paper says dropout 0.5, not where).
* ``attention="dot"``: the paper writes A' with a minus sign ("similar h and e mean the subtopic is satisfied, so
  lower attention"); kept.
* HDSSA initial weights: query 1, each level-1 suggestion its ``sub_weight`` (uniform, summing to 1), each level-2
  suggestion its parent's weight split evenly over the parent's children (Section 5.1, Eq. 14). A level-1 suggestion
  without children is repeated on layer 2 as its own only child (Section 4.2), so every layer's initial weights sum
  to 1.
* HDSSA learned beta = L * softmax(theta), theta = 0 at start: positive, starts balanced; the overall scale is
  absorbed by W_s and w_r. Balanced beta = 1.
* HDSSA ``levels`` (Table 10): (1, 2) is HDSSA; (1,) HDSSA-1 (query and level-1 layers), (2,) HDSSA-2 (query and
  level-2 layers, childless level-1 suggestions repeated there as in HDSSA).

Extension, not in the paper (``accumulate=True``, off by default). Eq. (7)'s max-pooling cannot say "a selected
document already covers subtopic i": after a relevant and then a non-relevant document the max is unchanged, and
attention depends on the state h alone. ``accumulate`` adds xQuAD's not-yet-covered probability to the attention:

    a'_{t,i} += sum_{j<t} log(1 - c(d_j, i)),   c(d, i) = sigmoid(x_{d,i}^T w_c + b_c)

so a_{t,i} is proportional to w_i exp(A' + max-pool) prod_{j<t} (1 - c(d_j, i)).

Extension, not in the paper (``normalize=True``, off by default): the query, suggestion and document vectors are
L2-normalised before anything reads them, as DALETOR (Section 4.1) does with its inputs. It tests whether a
representation falls behind because of its vectors' scale rather than what they point at: S' and A' are bilinear in
the vectors, so their scale sets the scale of the relevance and attention logits (on wordnet-div, a document's
doc2vec norm times a suggestion's is about 80 times the same product for LDA).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from srdiv.features.bundle import BundleDims
from srdiv.models.base import NEG_INF, Batch, DiversityModel, repeat_lists
from srdiv.registry import MODELS

VECTORS = ("query_vec", "doc_vec", "sub_vec", "sub2_vec")
"""The batch's representation vectors ``[B, ..., E]`` (``normalize`` makes them unit vectors)."""

CELLS = {"vanilla": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}
"""The recurrent cell of Eq. (5), run as one fused pass over a sequence (``batch_first``)."""


@dataclass
class Subtopics:
    """The query and suggestions of a batch as one flat list of ``T`` subtopics.

    vec ``[B, T, E]`` (e_i), mask ``[B, T]``, weight ``[B, T]`` initial
    importance w_i, layer ``[T]`` long (layer index, set by :func:`_stack`),
    feats: the features x_{d,i} ``[B, T_g, D, F]`` of each group of subtopics,
    kept apart (not concatenated) so that only their projections are copied.
    """

    vec: torch.Tensor
    mask: torch.Tensor
    weight: torch.Tensor
    feats: list[torch.Tensor]
    layer: torch.Tensor | None = None

    def project(self, w: nn.Linear) -> torch.Tensor:
        """x_{d,i}^T w for every subtopic and candidate: ``[B, T, D]``."""
        return torch.cat([w(f).squeeze(-1) for f in self.feats], 1)


class SubtopicAttentionRanker(DiversityModel):
    """What DSSA and HDSSA share: encoder, attention, scoring, greedy ranking.

    Subclasses say which subtopics form which layers (:meth:`subtopics`), the
    layer weights beta (:meth:`layer_weights`) and whether attention is one
    softmax over all layers (``joint_softmax``) or one per layer.

    Params (Table 8 settings): ``cell`` vanilla | gru | lstm, ``hidden`` U,
    ``attention`` (A') and ``similarity`` (S') general | dot, ``max_pooling``
    (False: DSSA-RNN), ``rnn_input`` vec | vec+rel, ``dropout`` on h_{t-1};
    ``accumulate``: the coverage extension of the module docstring (not in the paper);
    ``normalize``: unit input vectors (the other extension of the module docstring, not in the paper).
    """

    ARG_RANGES = {"hidden": "[1, inf)", "dropout": "[0, 1)"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""

    sequential: ClassVar[bool] = True
    joint_softmax: ClassVar[bool] = False
    beta: torch.Tensor      # the layer weights where a subclass keeps them as a buffer

    def __init__(
        self, dims: BundleDims, *, cell: str = "lstm", hidden: int = 50, attention: str = "general",
        similarity: str = "general", max_pooling: bool = True, rnn_input: str = "vec",
        dropout: float = 0.5, accumulate: bool = False, normalize: bool = False,
    ):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {sorted(CELLS)}, got {cell!r}")
        if attention not in ("general", "dot") or similarity not in ("general", "dot"):
            raise ValueError("attention and similarity must be 'general' or 'dot'")
        if attention == "dot" and hidden != dims.emb:
            raise ValueError(f"attention='dot' compares h with e_i: hidden must equal the vector size {dims.emb}")
        if rnn_input not in ("vec", "vec+rel"):
            raise ValueError(f"rnn_input must be 'vec' or 'vec+rel', got {rnn_input!r}")
        self.max_pooling = max_pooling
        self.normalize = normalize
        self.rnn_input = rnn_input
        self.cell = CELLS[cell]((dims.emb + dims.feats) if rnn_input == "vec+rel" else dims.emb, hidden,
                                batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.w_r = nn.Linear(dims.feats, 1, bias=False)
        self.w_p = nn.Linear(dims.feats, 1, bias=False) if max_pooling else None
        self.w_c = nn.Linear(dims.feats, 1) if accumulate else None
        self.W_a = _bilinear(hidden, dims.emb) if attention == "general" else None
        self.W_s = _bilinear(dims.emb, dims.emb) if similarity == "general" else None

    def subtopics(self, batch: Batch) -> Subtopics:
        raise NotImplementedError

    def layer_weights(self) -> torch.Tensor:
        """beta ``[layers]``."""
        raise NotImplementedError

    def inputs(self, batch: Batch) -> Batch:
        """The batch the network reads: with ``normalize``, its :data:`VECTORS` L2-normalised (padding stays 0)."""
        if not self.normalize:
            return batch
        return {**batch, **{k: F.normalize(batch[k], dim=-1) for k in VECTORS if k in batch}}

    def relevance(self, batch: Batch, subs: Subtopics) -> torch.Tensor:
        """r(d, i) = S'(e_d, e_i) + x_{d,i}^T w_r (Eq. 10-11) of every candidate: ``[B, T, D]``."""
        e_d = batch["doc_vec"] if self.W_s is None else batch["doc_vec"] @ self.W_s   # [B, D, E]
        rel = subs.vec @ e_d.transpose(1, 2) + subs.project(self.w_r)
        return rel.masked_fill(~subs.mask[..., None], 0.0)

    def coverage(self, subs: Subtopics) -> torch.Tensor:
        """x_{d,i}^T w_p of every candidate, the signal max-pooled in Eq. (7): ``[B, T, D]``."""
        assert self.w_p is not None   # called with max_pooling only
        return subs.project(self.w_p)

    def uncovered(self, subs: Subtopics) -> torch.Tensor:
        """log(1 - c(d, i)) of every candidate, summed over the selected ones (extension): ``[B, T, D]``."""
        assert self.w_c is not None   # called with accumulate only
        return -F.softplus(subs.project(self.w_c))                          # log(1 - sigmoid(z)) = -softplus(z)

    def attention(self, h: torch.Tensor, subs: Subtopics, pooled: torch.Tensor | None) -> torch.Tensor:
        """beta_{layer(i)} a_{t,i} ``[B, J, T]`` from states h ``[B, J, U]`` and the max-pooled signal ``[B, J, T]``."""
        h = self.dropout(h)
        vec_t = subs.vec.transpose(1, 2)                                     # [B, E, T]
        logits = (h @ self.W_a) @ vec_t if self.W_a is not None else -(h @ vec_t)   # A', Eq. (6)
        if pooled is not None:
            logits = logits + pooled                                         # Eq. (7)
        logits = logits + subs.weight.clamp_min(1e-30).log()[:, None]        # w_i exp(.), Eq. (8)
        assert subs.layer is not None   # subtopics() returns stacked layers (_stack)
        scope = torch.zeros_like(subs.layer) if self.joint_softmax else subs.layer
        return _scoped_softmax(logits, subs.mask[:, None], scope) * self.layer_weights()[subs.layer]

    def rnn_inputs(self, batch: Batch, docs: torch.Tensor) -> torch.Tensor:
        """What the RNN reads for ``docs`` ``[B, N]``: ``[B, N, E (+F)]``."""
        x = _rows(batch["doc_vec"], docs)
        return torch.cat([x, _rows(batch["rel_feat"], docs)], -1) if self.rnn_input == "vec+rel" else x

    def encode(self, batch: Batch, sequences: torch.Tensor) -> torch.Tensor:
        """h_l after the first l documents of each sequence ``[B, L]``, l = 0..L: ``[B, L+1, U]`` (Eq. 5, h_0 = 0).

        One fused recurrent pass; states past a sequence's padding are meaningless."""
        h_0 = batch["doc_vec"].new_zeros(sequences.shape[0], 1, self.cell.hidden_size)
        if sequences.shape[1] == 0:
            return h_0
        out, _ = self.cell(self.rnn_inputs(batch, sequences))
        return torch.cat([h_0, out], 1)

    def pooled_coverage(self, subs: Subtopics, sequences: torch.Tensor) -> torch.Tensor | None:
        """What the selected documents add to a'_{t,i} after the first l of each sequence, l = 0..L:
        ``[B, L+1, T]`` (0 for l = 0). Eq. (7)'s max_{j<=l} x_{d_j,i}^T w_p, plus with ``accumulate``
        sum_{j<=l} log(1 - c(d_j, i)); None when there is neither."""
        terms = []
        if self.max_pooling:
            terms.append(_cols(self.coverage(subs), sequences).cummax(2).values)    # [B, T, L]
        if self.w_c is not None:
            terms.append(_cols(self.uncovered(subs), sequences).cumsum(2))
        if not terms:
            return None
        signal = sum(terms[1:], terms[0])
        return torch.cat([signal.new_zeros(*signal.shape[:2], 1), signal], 2).transpose(1, 2)

    def prefix_scores(self, batch: Batch, rankings: torch.Tensor) -> torch.Tensor:
        """s_{d,t} ``[B, N, L, D]`` of every candidate after each prefix ``rankings[b, n, :t]`` of
        ``rankings [B, N, L]`` (-1 padding at the end): one fused recurrent pass per ranking, and
        the attention of all its prefixes at once."""
        n_lists, n_rankings, depth = rankings.shape
        batch = repeat_lists(self.inputs(batch), n_rankings)
        if depth == 0:
            return batch["doc_vec"].new_zeros(n_lists, n_rankings, 0, batch["doc_mask"].shape[1])
        flat = rankings.reshape(-1, depth)[:, :depth - 1]                     # the last document starts no prefix
        subs = self.subtopics(batch)
        coef = self.attention(self.encode(batch, flat), subs, self.pooled_coverage(subs, flat))  # [BN, L, T]
        scores = coef @ self.relevance(batch, subs)                           # [BN, L, D], Eq. (9)
        return scores.reshape(n_lists, n_rankings, depth, -1)

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """s_{d,t} of ``candidates`` ``[B, M]`` after ``context`` ``[B, L]`` (right-padded with -1) -> ``[B, M]``.

        Padded candidates get a finite, meaningless score."""
        ranking = torch.cat([context, context.new_full((len(context), 1), -1)], 1)[:, None]   # [B, 1, L + 1]
        scores = self.prefix_scores(batch, ranking)[:, 0]                     # [B, L + 1, D]
        after = scores[torch.arange(len(context), device=context.device), (context >= 0).sum(1)]
        return after.gather(1, candidates.clamp(min=0))

    @torch.no_grad()
    def rank(self, batch: Batch) -> torch.Tensor:
        """Greedy selection (Section 4.3.2) with incremental state: one RNN step and one
        max-pooling update per selected document. Same result as :func:`greedy_rank`."""
        batch = self.inputs(batch)
        mask = batch["doc_mask"]
        n_queries, n_docs = mask.shape
        rows = torch.arange(n_queries, device=mask.device)
        docs = torch.arange(n_docs, device=mask.device).expand(n_queries, n_docs)
        subs = self.subtopics(batch)
        rel = self.relevance(batch, subs)                                     # [B, T, D]
        signal = self.coverage(subs) if self.max_pooling else None            # [B, T, D]
        uncovered = self.uncovered(subs) if self.w_c is not None else None    # [B, T, D]
        inputs = self.rnn_inputs(batch, docs)                                 # [B, D, in]
        h = inputs.new_zeros(n_queries, 1, self.cell.hidden_size)             # h_0 [B, 1, U]
        state, pooled, acc = None, None, None
        order = torch.full((n_queries, n_docs), -1, dtype=torch.long, device=mask.device)
        remaining = mask.clone()
        for t in range(int(mask.sum(1).max())):
            added: torch.Tensor | None = pooled if acc is None else (acc if pooled is None else pooled + acc)
            scores = _mix(self.attention(h, subs, added)[:, 0], rel)
            best = scores.masked_fill(~remaining, NEG_INF).argmax(1)
            active = remaining.any(1)
            order[:, t] = torch.where(active, best, order[:, t])
            remaining[rows[active], best[active]] = False
            h, state = self.cell(inputs[rows, best][:, None], state)
            if signal is not None:
                chosen = signal[rows, :, best][:, None]                       # [B, 1, T]
                pooled = chosen if pooled is None else torch.maximum(pooled, chosen)
            if uncovered is not None:
                chosen = uncovered[rows, :, best][:, None]
                acc = chosen if acc is None else acc + chosen
        return order


@MODELS.register("dssa")
class DSSA(SubtopicAttentionRanker):
    """DSSA-RNNMP (Section 4.1): query and level-1 suggestions, trade-off ``lam`` (lambda, Eq. 9).

    ``max_pooling=False`` is DSSA-RNN (Table 8). Other parameters: see
    :class:`SubtopicAttentionRanker` and the module docstring.
    """

    ARG_RANGES = {"lam": "[0, 1]"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""
    ARG_ENDS = {"lam": {0: "the query layer alone (relevance)", 1: "the subtopic layer alone (diversity)"}}

    def __init__(self, dims: BundleDims, *, lam: float = 0.5, **params):
        super().__init__(dims, **params)
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {lam}")
        self.register_buffer("beta", torch.tensor([1.0 - lam, lam]))

    def subtopics(self, batch: Batch) -> Subtopics:
        """Layer 0: the query (weight 1); layer 1: level-1 suggestions (``sub_weight``)."""
        return _stack([[_query_as_subtopic(batch)], [_level1(batch)]])

    def layer_weights(self) -> torch.Tensor:
        return self.beta


@MODELS.register("hdssa")
class HDSSA(SubtopicAttentionRanker):
    """HDSSA-RNNMP (Section 4.2): query, level-1 and level-2 suggestions as three layers.

    ``beta="learned"`` is HDSSA, ``beta="balanced"`` is HDSSA-B. There is no lambda:
    the query's attention plays its role. ``levels`` (Table 10): the suggestion levels
    that form layers after the query's, (1, 2) for HDSSA, (1,) HDSSA-1, (2,) HDSSA-2.
    """

    joint_softmax = True

    def __init__(self, dims: BundleDims, *, beta: str = "learned", levels: tuple[int, ...] = (1, 2), **params):
        super().__init__(dims, **params)
        levels = tuple(levels)
        if not levels or len(set(levels)) != len(levels) or not set(levels) <= {1, 2}:
            raise ValueError(f"levels must be (1, 2), (1,) or (2,), got {levels!r}")
        self.levels = tuple(sorted(levels))
        self.n_layers = 1 + len(self.levels)
        if beta == "learned":
            self.beta_logits = nn.Parameter(torch.zeros(self.n_layers))
        elif beta == "balanced":
            self.register_buffer("beta", torch.ones(self.n_layers))
        else:
            raise ValueError(f"beta must be 'learned' or 'balanced', got {beta!r}")

    def layer_weights(self) -> torch.Tensor:
        if hasattr(self, "beta_logits"):
            return self.n_layers * torch.softmax(self.beta_logits, 0)
        return self.beta

    def subtopics(self, batch: Batch) -> Subtopics:
        """Query (1), level-1 (``sub_weight``), level-2 (parent weight / #children, Eq. 14);
        childless level-1 suggestions are repeated on the level-2 layer. Only ``levels`` form layers."""
        level1 = _level1(batch)
        parent = batch["sub2_parent"]                                         # [B, K2]
        mask2 = batch["sub2_mask"] & (parent >= 0)
        children = torch.zeros_like(level1.weight).scatter_add(1, parent.clamp(min=0), mask2.float())
        share = level1.weight / children.clamp(min=1)                         # [B, K]
        weight2 = torch.where(mask2, share.gather(1, parent.clamp(min=0)), 0.0)
        level2 = Subtopics(batch["sub2_vec"], mask2, weight2, [batch["sub2_feat"]])
        childless = Subtopics(level1.vec, level1.mask & (children == 0), level1.weight, level1.feats)
        layers = {1: [level1], 2: [level2, childless]}
        return _stack([[_query_as_subtopic(batch)], *(layers[k] for k in self.levels)])


def _bilinear(rows: int, cols: int) -> nn.Parameter:
    """A bilinear map W [rows, cols] (Xavier-initialised)."""
    return nn.Parameter(nn.init.xavier_uniform_(torch.empty(rows, cols)))


def _rows(x: torch.Tensor, docs: torch.Tensor) -> torch.Tensor:
    """``x`` ``[B, D, ...]`` at ``docs`` ``[B, N]`` (-1 -> doc 0) -> ``[B, N, ...]``."""
    idx = docs.clamp(min=0).reshape(*docs.shape, *([1] * (x.dim() - 2)))
    return x.gather(1, idx.expand(*docs.shape, *x.shape[2:]))


def _cols(x: torch.Tensor, docs: torch.Tensor) -> torch.Tensor:
    """``x`` ``[B, T, D]`` at ``docs`` ``[B, N]`` (-1 -> doc 0) -> ``[B, T, N]``."""
    return x.gather(2, docs.clamp(min=0)[:, None, :].expand(x.shape[0], x.shape[1], docs.shape[1]))


def _mix(coef: torch.Tensor, rel: torch.Tensor) -> torch.Tensor:
    """s_d = sum_i coef_i r(d, i): ``coef [B, T]``, ``rel [B, T, N]`` -> ``[B, N]`` (Eq. 9, 15)."""
    return (coef[:, None, :] @ rel).squeeze(1)


def _query_as_subtopic(batch: Batch) -> Subtopics:
    """The query as a subtopic: e_q, x_{d,q}, weight 1."""
    n = batch["query_vec"].shape[0]
    ones = batch["query_vec"].new_ones(n, 1)
    return Subtopics(batch["query_vec"][:, None], ones.bool(), ones, [batch["rel_feat"][:, None]])


def _level1(batch: Batch) -> Subtopics:
    return Subtopics(batch["sub_vec"], batch["sub_mask"], batch["sub_weight"], [batch["sub_feat"]])


def _stack(layers: list[list[Subtopics]]) -> Subtopics:
    """Concatenate subtopic groups along T; the groups of ``layers[l]`` form layer ``l``."""
    parts = [p for groups in layers for p in groups]
    sizes = [sum(p.mask.shape[1] for p in groups) for groups in layers]
    device = parts[0].mask.device
    layer = torch.tensor([i for i, n in enumerate(sizes) for _ in range(n)], dtype=torch.long, device=device)
    return Subtopics(
        vec=torch.cat([p.vec for p in parts], 1), mask=torch.cat([p.mask for p in parts], 1),
        weight=torch.cat([p.weight for p in parts], 1).float(), feats=[f for p in parts for f in p.feats],
        layer=layer,
    )


def _scoped_softmax(logits: torch.Tensor, mask: torch.Tensor, scope: torch.Tensor) -> torch.Tensor:
    """Softmax of ``logits`` ``[..., T]`` within each scope ``[T]`` over ``mask``-ed entries;
    masked entries and empty scopes get 0."""
    groups = F.one_hot(scope).bool()                                          # [T, G]
    x = logits.masked_fill(~mask, NEG_INF)
    top = x[..., None].masked_fill(~groups, NEG_INF).amax(-2)                 # [..., G]
    top = torch.where(torch.isinf(top), 0.0, top).detach()
    e = torch.exp(x - top[..., scope])
    total = (e[..., None] * groups).sum(-2)                                   # [..., G]
    return e / total[..., scope].clamp_min(1e-30)
