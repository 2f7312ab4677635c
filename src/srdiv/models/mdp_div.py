"""MDP-DIV: diverse ranking as a continuous-state Markov decision process (Xia et al., SIGIR 2017, Section 4).

Equations as implemented (``B`` lists, ``D`` candidates, ``L`` = vector size
``E``, ``K`` hidden units; ``q = query_vec``, ``x = doc_vec``):

* initial state ``h_0 = sigmoid(V_q q)`` (Eq. 1);
* transition after selecting ``x_{m(a_t)}``:
  ``h_{t+1} = sigmoid(V x_{m(a_t)} + W h_t)`` (Eq. 2);
* policy over the remaining candidates
  ``pi(a | s_t) = softmax_a(x_{m(a)}^T U h_t)`` (Eq. 3).

All of ``V_q [K, L]``, ``V [K, L]``, ``W [K, K]`` and ``U [L, K]`` start
uniform in ``[-init_scale, init_scale]`` (Algorithm 1: ``[-1, 1]``).

Ranking (Algorithm 3) takes the arg-max action at each step;
:meth:`MDPDiv.rollout` also samples episodes (Algorithm 2) for the
``reinforce`` objective, batched over queries.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from srdiv.features.bundle import BundleDims
from srdiv.models.base import NEG_INF, Batch, DiversityModel
from srdiv.registry import MODELS


@MODELS.register("mdp_div")
class MDPDiv(DiversityModel):
    """The MDP-DIV policy: a recurrent user state ``h_t`` and a bilinear soft-max policy."""

    ARG_RANGES = {"hidden": "[1, inf)", "init_scale": "(0, inf)"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""

    sequential: ClassVar[bool] = True

    def __init__(self, dims: BundleDims, hidden: int = 5, init_scale: float = 1.0, representation: str = "doc2vec"):
        """``representation`` names the bundle the pipeline feeds (``bundle/<repr>.npz``)."""
        super().__init__()
        self.representation = representation
        self.query_state = nn.Parameter(torch.empty(hidden, dims.emb))  # V_q
        self.doc_state = nn.Parameter(torch.empty(hidden, dims.emb))  # V
        self.transition = nn.Parameter(torch.empty(hidden, hidden))  # W
        self.policy = nn.Parameter(torch.empty(dims.emb, hidden))  # U
        for p in self.parameters():
            nn.init.uniform_(p, -init_scale, init_scale)

    def initial_state(self, batch: Batch) -> torch.Tensor:
        """``h_0 = sigmoid(V_q q)`` ``[B, K]`` (Eq. 1)."""
        return torch.sigmoid(batch["query_vec"] @ self.query_state.T)

    def next_state(self, state: torch.Tensor, docs: torch.Tensor, moved: torch.Tensor) -> torch.Tensor:
        """``sigmoid(V x + W h)`` for the rows that selected ``docs [B, E]`` (``moved [B]``), else ``h`` (Eq. 2)."""
        new = torch.sigmoid(docs @ self.doc_state.T + state @ self.transition.T)
        return torch.where(moved[:, None], new, state)

    def scores(self, state: torch.Tensor, docs: torch.Tensor) -> torch.Tensor:
        """Policy logits ``x^T U h`` ``[B, M]`` of ``docs [B, M, E]`` in state ``[B, K]`` (Eq. 3)."""
        return ((docs @ self.policy) * state[:, None, :]).sum(-1)

    def context_scores(self, batch: Batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Logits of ``candidates [B, M]`` in the state reached after selecting ``context [B, L]``."""
        state = self.initial_state(batch)
        for t in range(context.shape[1]):
            state = self.next_state(state, _docs(batch, context[:, t]), context[:, t] >= 0)
        return self.scores(state, _docs(batch, candidates))

    def rollout(self, batch: Batch, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """One episode per list: ``order [B, D]`` (-1 padding last) and ``log pi(a_t | s_t)`` ``[B, D]`` (0 padding).

        With a ``generator`` the actions are sampled from the policy (Algorithm 2),
        otherwise the arg-max action is taken (Algorithm 3).
        """
        mask = batch["doc_mask"]
        n_lists, n_docs = mask.shape
        rows = torch.arange(n_lists, device=mask.device)
        state = self.initial_state(batch)
        remaining = mask.clone()
        order = torch.full((n_lists, n_docs), -1, dtype=torch.long, device=mask.device)
        steps = []
        for t in range(int(mask.sum(1).max())):
            active = remaining.any(1)
            logits = self.scores(state, batch["doc_vec"]).masked_fill(~(remaining | ~active[:, None]), NEG_INF)
            logp = logits.log_softmax(1)
            if generator is None:
                action = logits.argmax(1)
            else:
                action = torch.multinomial(logp.detach().exp(), 1, generator=generator)[:, 0]
            order[:, t] = torch.where(active, action, -1)
            steps.append(torch.where(active, logp[rows, action], 0.0))
            remaining[rows[active], action[active]] = False
            state = self.next_state(state, _docs(batch, action), active)
        pad = state.new_zeros(n_lists, n_docs - len(steps))
        return order, torch.cat([*[s[:, None] for s in steps], pad], 1)

    def rank(self, batch: Batch) -> torch.Tensor:
        """Algorithm 3: the most probable action at each step, batched over lists."""
        with torch.no_grad():
            return self.rollout(batch)[0]


def _docs(batch: Batch, index: torch.Tensor) -> torch.Tensor:
    """Document vectors at ``index [B]`` or ``[B, M]`` (-1 gives the first row; callers mask it)."""
    vec = batch["doc_vec"]
    if index.dim() == 1:
        return vec[torch.arange(vec.shape[0], device=vec.device), index.clamp(min=0)]
    return vec.gather(1, index.clamp(min=0)[..., None].expand(-1, -1, vec.shape[2]))
