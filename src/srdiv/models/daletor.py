"""DALETOR scorers: DNN, DIN and GSF over distributed representations (Yan et al., WWW 2021, Section 4).

Equations as implemented (``B`` lists, ``D`` candidates, ``E`` vector size):

* Inputs (Section 4.1): the query vector ``e_q`` (the query's pseudo-document,
  ``query_vec``), the document vectors ``e_i`` (``doc_vec``), both L2-normalised
  ("dense normalized vectors"; ``normalize=False`` feeds them as they come), and, with
  ``latent_cross``, the latent cross ``c_i = e_i * e_q`` (Eq. 10, element-wise).
  Per document ``x_i = [e_q; e_i]`` or ``[e_q; e_i; c_i]``. Subtopics are never
  an input: labels only enter the loss (:mod:`srdiv.objectives.daletor`).
* Scorer (Figure 1): a tower of fully connected layers 256-128-64 then one
  output unit; batch normalisation of the input and after every hidden layer,
  then ReLU (the layout of TF-Ranking's ``create_tower``). Batch statistics
  are taken over the real documents only: the tower runs on the gathered real
  rows ``x[doc_mask]``, so padding never changes a real score, in training or
  in evaluation; evaluation uses the cumulative average of the training
  batches' statistics (:class:`Tower`).
* ``context="none"`` (DNN): ``s_i = tower(x_i)``, a univariate scorer.
* ``context="din"`` (DIN, Section 4.2, Eqs. 11-13): ``h_0 = ReLU(W_in x_j)`` of
  size ``z`` = ``head_size``; ``L`` = ``layers`` times
  ``h_l = LayerNorm(h_{l-1} + Drop(MHSA(h_{l-1})))`` with ``H`` = ``heads``
  heads of size ``z`` (Eq. 11: ``softmax(Q K^T / sqrt z) V``) whose
  concatenation is projected back to ``z`` (Eq. 12); padded documents are
  masked as keys. ``a_i = h_L``, ``s_i = tower([x_i; a_i])`` (Eq. 13). As in
  TF-Ranking's ``DocumentInteractionAttention``.
* ``context="gsf"`` (groupwise scoring functions, Ai et al., ICTIR 2019): the
  real documents of a list are put in a cyclic order ``pi`` and each of the
  ``n`` windows ``G_k = (pi_k, ..., pi_{k+g-1})`` (indices mod ``n``, ``g`` =
  ``group_size``) is scored jointly, ``tower([x_{G_k,1}; ...; x_{G_k,g}]) ->
  g`` logits; a document lies in exactly ``g`` windows and its score is the mean
  of its logits over them (TF-Ranking's rolling-window groups). In training
  ``pi`` is a fresh random shuffle every forward (torch RNG, seeded and
  checkpointed by the trainer); in evaluation it is fixed: the real documents
  are sorted by keys ``u[v]``, ``u`` uniform draws of ``numpy
  default_rng(group_seed)`` and ``v`` the document's index among the real
  ones, so a list's scores depend only on its own documents and the seed.

Extension (not in the paper): with ``relevance_features`` the document's
standardised query-document relevance features ``x_{d,q}`` (``rel_feat``,
DSSA Table 5) are appended to ``x_i``; the paper's model reads the vectors only.

The names of the paper (Tables 2-4) map to ``context`` and ``latent_cross``:
DNN = (none, False), DNN-LC = (none, True), DIN, DIN-LC = din, GSF, GSF-LC =
gsf; "-LC" adds ``c_i`` to the scorer's input and, for DIN, to the attention
input (Section 4.3). ``dropout`` (not given in the paper) applies after every
hidden layer of the tower and inside attention.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from srdiv.features.bundle import BundleDims
from srdiv.models.base import Batch, DiversityModel
from srdiv.registry import MODELS

CONTEXTS = ("none", "din", "gsf")
"""Listwise context of the scorer: none (DNN), DIN self-attention, GSF groups."""

EVAL_CHUNK = 1 << 22
"""Values (rows x width, about 16 MB of float32) the GSF tower takes at once when evaluating."""


class Tower(nn.Module):
    """``BN(input)``, then ``[Linear, BN, ReLU, Dropout]`` per hidden size, then ``Linear(-> n_out)``.

    Runs on rows ``[N, n_in]`` (real documents or real groups only), so the
    batch statistics never see padding. The statistics evaluation uses are the
    cumulative average of every training batch's (``momentum=None``): with an
    exponential average (PyTorch's momentum 0.1) a run of few steps, such as
    an epoch of one batch on a few training queries, would rank with statistics
    still near their initial (0, 1), inputs scaled unlike training's.
    """

    def __init__(self, n_in: int, hidden: Sequence[int], n_out: int, dropout: float):
        super().__init__()
        layers: list[nn.Module] = [nn.BatchNorm1d(n_in, momentum=None)]
        for n_prev, n_next in zip([n_in, *hidden[:-1]], hidden):
            layers += [nn.Linear(n_prev, n_next), nn.BatchNorm1d(n_next, momentum=None), nn.ReLU(),
                       nn.Dropout(dropout)]
        layers.append(nn.Linear(hidden[-1] if hidden else n_in, n_out))
        self.net = nn.Sequential(*layers)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        return self.net(rows)


class SelfAttention(nn.Module):
    """One DIN layer: ``LayerNorm(h + Drop(MHSA(h)))`` with ``heads`` heads of size ``width`` (Eqs. 11-12)."""

    def __init__(self, width: int, heads: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * heads * width)
        self.out = nn.Linear(heads * width, width)  # W_out, b_out of Eq. 12
        self.norm = nn.LayerNorm(width)
        self.dropout = dropout

    def forward(self, h: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """``h [B, D, z]``; ``allowed [B, 1, D, D]`` True where document i may attend to j."""
        b, d, z = h.shape
        q, k, v = self.qkv(h).view(b, d, 3, self.heads, z).permute(2, 0, 3, 1, 4)  # each [B, H, D, z]
        drop = self.dropout if self.training else 0.0
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=drop)
        out = self.out(heads.transpose(1, 2).reshape(b, d, self.heads * z))
        return self.norm(h + F.dropout(out, drop, self.training))


@MODELS.register("daletor")
class DALETOR(DiversityModel):
    """DALETOR score-and-sort model; see the module docstring for the equations.

    Args:
        dims: bundle sizes (``emb`` E).
        context: one of :data:`CONTEXTS` (DNN, DIN, GSF).
        latent_cross: add ``c_i = e_i * e_q`` to the inputs ("-LC" rows).
        relevance_features: add the relevance features ``x_{d,q}`` to the inputs (extension).
        hidden: hidden sizes of the scoring tower (paper: 256, 128, 64).
        layers, heads, head_size: DIN's L, H, z (paper: 2, 2, 256).
        group_size: GSF's g (paper: tuned over 4, 16, 64).
        group_seed: seed of GSF's fixed evaluation groups.
        dropout: dropout of the tower and of attention.
        normalize: L2-normalise ``e_q`` and ``e_i`` before anything else (Section 4.1).
    """

    ARG_RANGES = {"hidden": "[1, inf)", "layers": "[0, inf)", "heads": "[1, inf)", "head_size": "[1, inf)",
                  "group_size": "[1, inf)", "group_seed": "[0, 4294967295]", "dropout": "[0, 1)"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""
    ARG_ENDS = {"group_size": {1: "each document scored alone (GSF is then the DNN scorer)"}}
    """What an argument at an end of its allowed interval makes of the model (the tuning table says it)."""

    sequential = False

    def __init__(self, dims: BundleDims, context: str = "none", latent_cross: bool = False,
                 relevance_features: bool = False, hidden: Sequence[int] = (256, 128, 64), layers: int = 2,
                 heads: int = 2, head_size: int = 256, group_size: int = 4, group_seed: int = 0, dropout: float = 0.0,
                 normalize: bool = True):
        super().__init__()
        self.normalize = normalize
        if context not in CONTEXTS:
            raise ValueError(f"context must be one of {CONTEXTS}, got {context!r}")
        if context == "gsf" and group_size < 1:
            raise ValueError(f"group_size must be >= 1, got {group_size}")
        self.context = context
        self.latent_cross = latent_cross
        self.relevance_features = relevance_features
        self.group_size = group_size if context == "gsf" else 1
        self.group_seed = group_seed
        n_in = (3 if latent_cross else 2) * dims.emb + (dims.feats if relevance_features else 0)
        n_tower = n_in
        if context == "din":
            self.din_input = nn.Linear(n_in, head_size)
            self.din = nn.ModuleList(SelfAttention(head_size, heads, dropout) for _ in range(layers))
            n_tower += head_size
        self.tower = Tower(n_tower * self.group_size, list(hidden), self.group_size, dropout)

    def inputs(self, batch: Batch) -> torch.Tensor:
        """``x [B, D, 2E or 3E (+ F)]``: ``[e_q; e_i]`` or ``[e_q; e_i; c_i]`` (then ``x_{d,q}``)."""
        doc, query = batch["doc_vec"], batch["query_vec"]
        if self.normalize:                                   # Section 4.1: unit vectors (padding stays 0)
            doc, query = F.normalize(doc, dim=-1), F.normalize(query, dim=-1)
        query = query[:, None, :].expand_as(doc)
        parts = [query, doc, doc * query] if self.latent_cross else [query, doc]
        if self.relevance_features:
            parts.append(batch["rel_feat"])
        return torch.cat(parts, dim=-1)

    def list_scores(self, batch: Batch) -> torch.Tensor:
        """Scores ``[B, D]`` of every candidate; padded candidates score 0."""
        mask = batch["doc_mask"]
        x = self.inputs(batch)
        if self.context == "din":
            x = torch.cat([x, self.listwise_context(x, mask)], dim=-1)
        if self.context == "gsf":
            return self.group_scores(x, mask)
        return x.new_zeros(mask.shape).masked_scatter(mask, self.tower(x[mask])[:, 0])

    def prefix_scores(self, batch: Batch, rankings: torch.Tensor) -> torch.Tensor:
        """``[B, N, L, D]`` scores after every prefix of ``rankings [B, N, L]``: the list scores, whatever the prefix.

        Lets the R-LTR baseline (``mle`` objective,
        :func:`srdiv.objectives.plackett_luce.ranking_log_prob`) score a list with
        one forward instead of one per position.
        """
        return self.list_scores(batch)[:, None, None, :].expand(*rankings.shape, -1)

    def listwise_context(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """DIN's ``a [B, D, z]``: real documents attend to the real documents of their list."""
        eye = torch.eye(mask.shape[1], dtype=torch.bool, device=mask.device)
        allowed = (mask[:, None, :] | eye)[:, None]  # a padded row sees itself too: never an empty softmax
        h = F.relu(self.din_input(x))
        for layer in self.din:
            h = layer(h, allowed)
        return h

    def group_scores(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """GSF: mean over the ``g`` windows holding each real document of its logit in the window."""
        b, d, _ = x.shape
        g = self.group_size
        n = mask.sum(1)
        order = self.group_order(mask)  # [B, D] real documents first, in cyclic order pi
        window = torch.arange(d, device=x.device)[:, None] + torch.arange(g, device=x.device)  # [D, g]
        slots = window[None] % n.clamp(min=1)[:, None, None]  # [B, D, g] positions in pi
        members = order.gather(1, slots.reshape(b, -1)).view(b, d, g)  # document in slot p of window k
        real = torch.arange(d, device=x.device)[None] < n[:, None]  # [B, D]: n windows per list
        lists, first = real.nonzero(as_tuple=True)                      # [W] list and first slot of each window
        logits = self.window_logits(x, lists, members[lists, first])   # [W, g]
        logits = x.new_zeros(b, d, g).masked_scatter(real[..., None], logits)
        return x.new_zeros(b, d).scatter_add(1, members.reshape(b, -1), logits.reshape(b, -1)) / g

    def window_logits(self, x: torch.Tensor, lists: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        """The tower on windows ``members [W, g]`` of ``lists [W]``: logits ``[W, g]``.

        In evaluation the batch norms use their running statistics, so each window's logits
        are independent of the others: windows are gathered and scored a chunk at a time
        (at most :data:`EVAL_CHUNK` input values), which changes no number and bounds the
        memory of ranking with wide windows (g = 64 makes rows of 64 documents' inputs). In
        training the batch statistics span all windows, so they run at once.
        """
        step = max(1, len(lists) if self.training else EVAL_CHUNK // (members.shape[1] * x.shape[2]))
        return torch.cat([self.tower(x[lists[i:i + step, None], members[i:i + step]].flatten(1))  # [w, g n_in]
                          for i in range(0, max(len(lists), 1), step)])

    def group_order(self, mask: torch.Tensor) -> torch.Tensor:
        """``[B, D]`` the real documents in GSF's cyclic order, then the padded ones.

        Training: random keys from the torch RNG. Evaluation: fixed keys
        ``u[v]`` (module docstring), independent of batch and padding.
        """
        if self.training:
            keys = torch.rand(mask.shape, device=mask.device)
        else:
            u = torch.as_tensor(np.random.default_rng(self.group_seed).random(mask.shape[1]), device=mask.device)
            keys = u[(mask.cumsum(1) - 1).clamp(min=0)]
        return keys.masked_fill(~mask, float("inf")).argsort(dim=1, stable=True)
