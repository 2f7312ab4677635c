"""DESA: Diversity Encoder with Self-Attention (Qin, Dou and Wen, CIKM 2020, Section 3).

Equations as implemented (``B`` lists, ``D`` candidates, ``K`` suggestions,
``F`` relevance features, ``d`` = ``d_model``):

* Input (Section 3.3.1): ``e_t = W_in [d_t; p_rank(t)]`` where ``d_t`` is the
  document vector and ``p`` an optional learnable embedding of the document's
  initial-ranking position (concatenated, then projected to ``d``). Suggestion
  pseudo-document vectors use the same projection with a zero position part.
* Encoder block MSB (Eqs. 7-9): ``X = LN(H + Drop(MultiHead(H, H, H)))``,
  ``MSB(H) = LN(X + Drop(FFN(X)))``, ``FFN(x) = W_2 ReLU(W_1 x)``; scaled
  dot-product attention (Eq. 4), ``heads`` heads (Eqs. 5-6).
  ``H_enc_D = SelfAttnEnc(D)`` and ``H_enc_I = SelfAttnEnc(I)`` share weights.
* Decoder block (Eqs. 10-11): the same block with queries = documents and
  keys = values = subtopics: ``X = LN(H + Drop(MultiHead(H, H_I, H_I)))`` then
  the FFN sublayer. There is no document-document attention in the decoder.
* Subtopic scores (Section 3.2 (4)): ``s_{d,q_k} = w_r^T x_{d,q_k}``, 0 for a
  padded suggestion.
* Final score (Eqs. 2-3): ``v_t = [x_{d,q}; h_enc_t; h_dec_t; s_{d,q_1..q_K}]``,
  ``s_t = w_v^T v_t`` (``scorer="linear"``, as Eq. 3 reads in our copy of the
  paper, whose text of this part is partly garbled) or a one-hidden-layer ReLU
  MLP (``scorer="mlp"``).

Variants (Table 3), through ``subtopics``: ``"encoded"`` (default, the decoder
attends to encoded suggestions), ``"original"`` (to projected, not encoded,
suggestions), ``"scores"`` (no decoder, ``v = [x_q; h_enc; s_q1..qK]``) and
``"none"`` (the SetRank adaptation, ``v = [x_q; h_enc]``); ``enc_layers`` and
``dec_layers`` give the (L_enc, L_dec) rows.

Ranking (Section 3.6): the whole candidate list in initial-run order, no
sequence mask, one forward per query, sort by score (:meth:`DESA.list_scores`).
Training (Section 3.5) uses :meth:`DESA.context_scores` with the sequence mask.
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from srdiv.features.bundle import BundleDims
from srdiv.models.base import Batch, DiversityModel
from srdiv.registry import MODELS

SUBTOPIC_MODES = ("encoded", "original", "scores", "none")
"""Table 3 settings: Encoded Subtopics, Original Subtopics, Relevance Scores, No Subtopics."""


class AttentionBlock(nn.Module):
    """Multi-head attention of ``x`` over ``memory`` then a ReLU feed-forward network (Eqs. 8-9, 11).

    Each sublayer has dropout, a residual connection and a LayerNorm (post-norm,
    as in the paper). Self-attention is ``memory = x``.
    """

    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}")
        self.heads = heads
        self.query = nn.Linear(d_model, d_model)
        self.key_value = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.norm_attn = nn.LayerNorm(d_model)
        self.norm_ffn = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """``x [B, T, d]`` attends to ``memory [B, S, d]`` where ``allowed [B, T, S]`` is True.

        Every row of ``allowed`` must hold at least one True (else softmax is NaN).
        """
        b, t, d = x.shape
        q = self.split(self.query(x)).transpose(1, 2)
        k, v = (z.transpose(1, 2) for z in self.keys(memory))
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed[:, None])  # Eq. 4, [B, H, T, d/H]
        return self.sublayers(x, heads.transpose(1, 2).reshape(b, t, d))

    def split(self, z: torch.Tensor) -> torch.Tensor:
        """``[..., d]`` -> ``[..., H, d/H]``."""
        return z.view(*z.shape[:-1], self.heads, z.shape[-1] // self.heads)

    def keys(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values ``[..., S, H, d/H]`` of ``memory [..., S, d]``."""
        k, v = self.key_value(memory).chunk(2, dim=-1)
        return self.split(k), self.split(v)

    def sublayers(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """Output projection, residual and LayerNorm, then the FFN sublayer (Eqs. 8-9), row by row."""
        x = self.norm_attn(x + self.drop(self.out(attended)))
        return self.norm_ffn(x + self.drop(self.ffn(x)))


@MODELS.register("desa")
class DESA(DiversityModel):
    """DESA encoder-decoder scorer; see the module docstring for the equations.

    Args:
        dims: bundle sizes (``emb`` E, ``feats`` F, ``subs`` K).
        d_model: attention width (paper: 256); heads: H (8); d_ff: feed-forward width (400).
        enc_layers, dec_layers: L_enc, L_dec (paper's best: 2, 1). ``dec_layers`` must be 0
            for ``subtopics`` "scores" and "none" (no decoder) and >= 1 otherwise.
        subtopics: one of :data:`SUBTOPIC_MODES` (Table 3).
        pos_dim: size of the initial-rank position embedding concatenated to the
            document vector (0 = none). max_positions: ranks from ``max_positions`` on share
            the last embedding, so a model trained on the top 20 never meets an untrained
            position when it re-ranks the top 50 (keep it at ``train.train_docs``).
        dropout: dropout of every sublayer.
        scorer: "linear" (Eq. 3) or "mlp" (hidden layer of ``scorer_hidden`` ReLU units).
    """

    ARG_RANGES = {"d_model": "[1, inf)", "heads": "[1, inf)", "d_ff": "[1, inf)", "enc_layers": "[0, inf)",
                  "dec_layers": "[0, inf)", "pos_dim": "[0, inf)", "max_positions": "[1, inf)", "dropout": "[0, 1)",
                  "scorer_hidden": "[1, inf)"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""

    sequential = False

    def __init__(
        self, dims: BundleDims, d_model: int = 256, heads: int = 8, d_ff: int = 400,
        enc_layers: int = 2, dec_layers: int = 1, subtopics: str = "encoded",
        pos_dim: int = 16, max_positions: int = 20, dropout: float = 0.1,
        scorer: str = "linear", scorer_hidden: int = 64,
    ):
        super().__init__()
        if subtopics not in SUBTOPIC_MODES:
            raise ValueError(f"subtopics must be one of {SUBTOPIC_MODES}, got {subtopics!r}")
        has_decoder = subtopics in ("encoded", "original")
        if has_decoder != (dec_layers > 0):
            raise ValueError(f"subtopics={subtopics!r} needs dec_layers {'>= 1' if has_decoder else '= 0'}")
        if scorer not in ("linear", "mlp"):
            raise ValueError(f"scorer must be 'linear' or 'mlp', got {scorer!r}")
        self.subtopics = subtopics
        self.pos_dim = pos_dim
        self.position = nn.Embedding(max_positions, pos_dim) if pos_dim else None
        self.project = nn.Linear(dims.emb + pos_dim, d_model)
        block = lambda: AttentionBlock(d_model, heads, d_ff, dropout)  # noqa: E731
        self.encoder = nn.ModuleList(block() for _ in range(enc_layers))
        self.decoder = nn.ModuleList(block() for _ in range(dec_layers))
        self.sub_rel = nn.Linear(dims.feats, 1, bias=False) if subtopics != "none" else None  # w_r
        n_in = dims.feats + d_model + (d_model if has_decoder else 0) + (dims.subs if self.sub_rel else 0)
        self.score = (nn.Linear(n_in, 1) if scorer == "linear" else
                      nn.Sequential(nn.Linear(n_in, scorer_hidden), nn.ReLU(), nn.Linear(scorer_hidden, 1)))

    def list_scores(self, batch: Batch) -> torch.Tensor:
        """Scores ``[B, D]`` of the whole candidate list, every real candidate seeing every other (Section 3.6)."""
        mask = batch["doc_mask"]
        allowed = mask[:, None, :] | _eye(mask.shape[1], mask.device)
        targets = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
        return self._scores(batch, allowed, targets)

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores ``[B, M]`` of each candidate placed right after ``context`` ``[B, L]`` (-1 = padding).

        One forward scores all M candidates of a context. It is the forward of
        the sequence ``[context..., candidate]`` under the training sequence mask
        (Section 3.5.2) for every candidate at once: context document i attends
        to context documents at ranks <= its own, each candidate to the whole
        context and itself, never to another candidate. Since attention is
        order-free and positions are initial-run ranks, the documents stay in
        their candidate-list slots and only the attention mask encodes the order.

        The context's own scores are then equal in both rankings of a
        list-pairwise sample ``([C, d1], [C, d2])``, so the difference of the
        ranking scores (Eq. 12) is the difference of the candidates' scores,
        ``s_r1 - s_r2 = s_d1 - s_d2`` (Eq. 14). Padded candidates score 0; a
        candidate already in the context gets its score at its context rank.
        """
        b, n_docs = batch["doc_mask"].shape
        device = context.device
        slot = lambda idx: torch.where(idx >= 0, idx, n_docs)  # noqa: E731  (padding -> dummy slot D)
        rank = torch.full((b, n_docs + 1), n_docs, dtype=torch.long, device=device)
        rank.scatter_(1, slot(context), torch.arange(context.shape[1], device=device).expand_as(context))
        rank = rank[:, :n_docs]  # context rank of each slot, D if not in the context
        in_context = rank < n_docs
        is_candidate = torch.zeros((b, n_docs + 1), dtype=torch.bool, device=device)
        is_candidate.scatter_(1, slot(candidates), True)
        is_candidate = is_candidate[:, :n_docs] & ~in_context
        sees_earlier = in_context[:, :, None] & (rank[:, None, :] <= rank[:, :, None])
        allowed = in_context[:, None, :] & (sees_earlier | is_candidate[:, :, None])
        scores = self._scores(batch, allowed | _eye(n_docs, device), candidates.clamp(min=0))
        return scores.masked_fill(candidates < 0, 0.0)

    def prefix_scores(self, batch: Batch, rankings: torch.Tensor) -> torch.Tensor:
        """Scores ``[B, N, L, D]`` of every candidate after each prefix ``rankings[b, n, :t]`` (Section 3.5.2).

        The same numbers as :meth:`context_scores` for each prefix, with the work a ranking's
        prefixes share done once: a ranking's documents are encoded once under the causal
        mask (document t sees the ranking up to itself, whatever comes after), the suggestions
        once per list, and only the candidates outside each prefix are encoded, each attending
        to the prefix's encodings and to itself. Documents inside a prefix score 0.
        """
        n_lists, n_rankings, depth = rankings.shape
        mask = batch["doc_mask"]
        n_docs = mask.shape[1]
        if depth == 0:
            return batch["doc_vec"].new_zeros(n_lists, n_rankings, 0, n_docs)
        flat = rankings.reshape(-1, depth)                                    # [R, L]
        lists = torch.arange(n_lists, device=flat.device).repeat_interleave(n_rankings)
        valid = flat >= 0
        picked = F.one_hot(flat.clamp(min=0), n_docs).bool() & valid[..., None]
        before = (picked.cumsum(1) - picked.long()) > 0                       # [R, L, D]: in the prefix of t
        rows_r, rows_t, rows_d = torch.nonzero(mask[lists][:, None, :] & ~before & valid[..., None], as_tuple=True)
        slot = rows_t * n_docs + rows_d                                       # place of a row in its ranking
        h = self._embed(batch)                                                # [B, D, d]
        seq_at, row_at = (lists[:, None], flat.clamp(min=0)), (lists[rows_r], rows_d)
        seq, y = h[seq_at], h[row_at]                                         # [R, L, d], [rows, d]
        steps = torch.arange(depth, device=flat.device)
        causal = (steps[None, :] <= steps[:, None])[None] & (valid[:, None, :] | _eye(depth, flat.device))
        prefix = (steps[None, :] < steps[:, None])[rows_t]                    # [rows, L]: keys of the prefix
        for i, block in enumerate(cast("list[AttentionBlock]", self.encoder)):   # a ModuleList is untyped
            if i == 0:  # the first layer's inputs are the candidates' embeddings: project each once, then gather
                q, (k, v) = block.split(block.query(h)), block.keys(h)        # [B, D, H, d/H]
                q, k_self, v_self, k, v = q[row_at], k[row_at], v[row_at], k[seq_at], v[seq_at]
            else:
                q, (k_self, v_self), (k, v) = block.split(block.query(y)), block.keys(y), block.keys(seq)
            y = block.sublayers(y, _grouped_attention(q, k, v, rows_r, slot, depth * n_docs, prefix, (k_self, v_self)))
            if i + 1 < len(self.encoder):
                seq = block(seq, seq, causal)
        dec = self._decode_rows(batch, y, lists, rows_r, slot, depth * n_docs) if self.decoder else None
        scores = self._final(batch, lists[rows_r], rows_d, y, dec)
        out = scores.new_zeros(n_lists * n_rankings, depth, n_docs)
        out[rows_r, rows_t, rows_d] = scores
        return out.reshape(n_lists, n_rankings, depth, n_docs)

    def _embed(self, batch: Batch) -> torch.Tensor:
        """``e_t = W_in [d_t; p_rank(t)]`` of every candidate slot: ``[B, D, d]`` (Section 3.3.1)."""
        doc_vec = batch["doc_vec"]
        b, n_docs, _ = doc_vec.shape
        if self.position is not None:
            ranks = torch.arange(n_docs, device=doc_vec.device).clamp(max=self.position.num_embeddings - 1)
            doc_vec = torch.cat([doc_vec, self.position(ranks).expand(b, -1, -1)], dim=-1)
        return self.project(doc_vec)

    def _scores(self, batch: Batch, allowed: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Eqs. 2-3 for the candidates ``targets [B, M]``, encoding docs with mask ``allowed [B, D, D]``."""
        b, m = targets.shape
        h = self._embed(batch)
        for block in self.encoder:
            h = block(h, h, allowed)
        lists = torch.arange(b, device=targets.device)
        rows = lists.repeat_interleave(m)
        h_enc = _take(h, targets).reshape(b * m, -1)                          # [B M, d]
        slot = torch.arange(m, device=targets.device).repeat(b)
        dec = self._decode_rows(batch, h_enc, lists, rows, slot, m) if self.decoder else None
        return self._final(batch, rows, targets.reshape(-1), h_enc, dec).reshape(b, m)

    def _final(self, batch: Batch, lists: torch.Tensor, docs: torch.Tensor, h_enc: torch.Tensor,
               h_dec: torch.Tensor | None) -> torch.Tensor:
        """``s = w_v^T [x_{d,q}; h_enc; h_dec; s_{d,q_1..q_K}]`` (Eqs. 2-3) of rows (list, doc): ``[rows]``."""
        parts = [batch["rel_feat"][lists, docs], h_enc] + ([h_dec] if h_dec is not None else [])
        if self.sub_rel is not None:
            s_sub = self.sub_rel(batch["sub_feat"]).squeeze(-1) * batch["sub_mask"][:, :, None]  # [B, K, D]
            parts.append(s_sub[lists, :, docs])                               # [rows, K]
        return self.score(torch.cat(parts, dim=-1)).squeeze(-1)

    def _decode_rows(self, batch: Batch, y: torch.Tensor, group_list: torch.Tensor, group: torch.Tensor,
                     slot: torch.Tensor, n_slots: int) -> torch.Tensor:
        """``H_dec`` of document rows ``y [rows, d]``: they attend to the (encoded or projected)
        suggestions of their list (Eqs. 10-11). Row i sits at ``slot[i]`` of group ``group[i]``
        (a list or a ranking), whose list is ``group_list[group]``."""
        sub_vec, sub_mask = batch["sub_vec"], batch["sub_mask"]
        if self.position is not None:
            sub_vec = torch.cat([sub_vec, sub_vec.new_zeros(*sub_vec.shape[:2], self.pos_dim)], dim=-1)
        h_sub = self.project(sub_vec)  # [B, K, d]
        if self.subtopics == "encoded":
            allowed = sub_mask[:, None, :] | _eye(sub_mask.shape[1], sub_mask.device)
            for block in self.encoder:
                h_sub = block(h_sub, h_sub, allowed)
        # A list without suggestions attends to its padding (avoiding NaN) and gets h_dec = 0.
        has_subs = sub_mask.any(dim=1)
        lists = group_list[group]
        keys_ok = (sub_mask | ~has_subs[:, None])[lists]                       # [rows, K]
        for block in cast("list[AttentionBlock]", self.decoder):
            k, v = block.keys(h_sub[group_list])                              # [G, K, H, d/H]
            y = block.sublayers(y, _grouped_attention(block.split(block.query(y)), k, v, group, slot, n_slots,
                                                      keys_ok))
        return y * has_subs[lists, None]


def _grouped_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, group: torch.Tensor, slot: torch.Tensor,
                       n_slots: int, allowed: torch.Tensor, self_kv: tuple[torch.Tensor, torch.Tensor] | None = None
                       ) -> torch.Tensor:
    """Scaled dot-product attention (Eq. 4) of query rows ``q [rows, H, e]`` over the keys and values
    ``k, v [G, S, H, e]`` of their group, where ``allowed [rows, S]``; with ``self_kv`` (``[rows, H, e]``
    each) a row also attends to its own key and value. Returns ``[rows, H e]``.

    Row i sits at ``slot[i]`` (< ``n_slots``) of group ``group[i]``, so the products run as dense
    batched matrix products, one per group."""
    n_groups, n_keys, heads, width = k.shape
    scale = width ** -0.5
    padded = q.new_zeros(n_groups, n_slots, heads, width)
    padded[group, slot] = q
    logits = torch.einsum("gnhe,gshe->gnhs", padded, k)[group, slot] * scale    # [rows, H, S]
    logits = logits.masked_fill(~allowed[:, None, :], float("-inf"))
    if self_kv is not None:
        logits = torch.cat([logits, (q * self_kv[0]).sum(-1, keepdim=True) * scale], -1)
    weights = logits.softmax(-1)
    spread = weights.new_zeros(n_groups, n_slots, heads, n_keys)
    spread[group, slot] = weights[..., :n_keys]
    out = torch.einsum("gnhs,gshe->gnhe", spread, v)[group, slot]              # [rows, H, e]
    if self_kv is not None:
        out = out + weights[..., n_keys:] * self_kv[1]
    return out.reshape(len(q), heads * width)


def _eye(n: int, device) -> torch.Tensor:
    return torch.eye(n, dtype=torch.bool, device=device)


def _take(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``x [B, D, ...]`` at ``idx [B, M]`` along axis 1 -> ``[B, M, ...]``."""
    return x[torch.arange(x.shape[0], device=x.device)[:, None], idx]
