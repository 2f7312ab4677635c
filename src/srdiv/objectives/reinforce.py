"""REINFORCE for MDP-DIV (Xia et al., SIGIR 2017, Section 4.2, Algorithms 1-2).

Each mini-batch samples one episode per training list with the current policy
(``model.rollout(batch, generator)``, batched over lists, on the model's
device), scores it with the labels and returns the policy-gradient loss::

    loss = -1/B sum_lists sum_t gamma^t G_t log pi(a_t | s_t)       (Algorithm 1, Eq. 4)
    G_t  = sum_{k=0}^{M-1-t} gamma^k r_{t+k+1}

Rewards ``r_{t+1}`` (``reward`` param):

* ``alpha_dcg``: the alpha-DCG increment of position t + 1
  (:func:`srdiv.metrics.alpha_dcg_gains`), MDP-DIV(alpha-DCG);
* ``s_recall``: the S-recall increment (:func:`srdiv.metrics.s_recall` at
  successive cutoffs, subtopics counted over the candidate list),
  MDP-DIV(S-recall).

With ``gamma = 1``, ``G_0`` is alpha-DCG@M (or S-recall@M) of the episode.
``return_only=True`` is MDP-DIV(ReturnOnly) (Section 5.3.2): one update per
episode with the whole return, ``-G_0 sum_t log pi(a_t | s_t)``.

``episodes=n`` samples n episodes of each list per update and averages their
terms; ``baseline="mean"`` (a measured option, not the paper's estimator,
which is ``"none"``) subtracts from each episode's weight ``gamma^t G_t`` the
mean weight of the n episodes of its list at the same step t, the usual
variance-reducing baseline of REINFORCE (docs/planted.md, MDP-DIV). With
gamma = 1 every ``G_t`` is >= 0, so without it every sampled action is made
more likely.

Algorithm 1 moves the parameters after every step t of an episode. Here the
per-step terms of an episode are summed into one loss and one optimiser step:
this equals one pass of Algorithm 1's inner loop only if the parameters were
not updated between the steps (the per-step gradients are all taken at the
parameters that sampled the episode). The mean over the B lists of a
mini-batch makes the step size independent of the batch size.

Training curves (Figures 4-5): :meth:`Reinforce.epoch_end` returns the mean
alpha-DCG@M of the epoch's sampled episodes and of the arg-max rankings of the
training lists and of every bundle in ``monitor`` (e.g. the test queries).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol, cast

import numpy as np
import torch

from srdiv.features.bundle import Bundle
from srdiv.metrics import alpha_dcg, alpha_dcg_gains, rank_labels, s_recall
from srdiv.metrics.diversity import ALPHA
from srdiv.models.base import Batch, DiversityModel
from srdiv.models.ranking import rank_bundle
from srdiv.objectives.base import Objective, take
from srdiv.registry import OBJECTIVES

REWARDS = ("alpha_dcg", "s_recall")
BASELINES = ("none", "mean")


class Rollout(Protocol):
    """A model REINFORCE trains: one that samples episodes (:meth:`srdiv.models.mdp_div.MDPDiv.rollout`)."""

    def rollout(self, batch: Batch, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        ...


class Episodes(NamedTuple):
    """A mini-batch: the list rows and the seed of the episode sampler."""

    rows: np.ndarray
    seed: int


def ranked_labels(labels: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``[B, D, S]`` labels of ``labels [B, D, S]`` in ``order [B, D]``; -1 (padding) gets zeros."""
    return rank_labels(labels, np.clip(order, 0, None)) * (order >= 0)[..., None]


def step_rewards(labels: np.ndarray, order: np.ndarray, reward: str, alpha: float = ALPHA) -> np.ndarray:
    """``[B, D]`` reward ``r_{t+1}`` of each position of ``order [B, D]`` (-1 padding gets 0).

    ``labels [B, D, S]`` are the candidates' subtopic labels; the rewards are
    the increments of alpha-DCG or S-recall, so they sum to the metric at M.
    """
    ranked = ranked_labels(labels, order)
    if reward == "alpha_dcg":
        return alpha_dcg_gains(ranked, alpha)
    recall = np.stack([s_recall(ranked, k) for k in range(1, order.shape[1] + 1)], axis=1)
    return np.diff(recall, axis=1, prepend=0.0)


def returns(rewards: torch.Tensor, gamma: float) -> torch.Tensor:
    """``G_t = sum_k gamma^k r_{t+k+1}`` ``[B, D]`` of rewards ``[B, D]`` (Eq. 4)."""
    steps = torch.arange(rewards.shape[1], device=rewards.device, dtype=rewards.dtype)
    discount = gamma ** (steps[None, :] - steps[:, None]).clamp(min=0) * (steps[None, :] >= steps[:, None])
    return rewards @ discount.T


@OBJECTIVES.register("reinforce")
class Reinforce(Objective):
    """Policy gradient on sampled episodes. Params: ``reward``, ``gamma`` (1), ``alpha`` (0.5), ``return_only``,
    ``episodes`` (1) and ``baseline`` (``none``) per list and update.

    ``monitor``: named bundles whose arg-max alpha-DCG :meth:`epoch_end` reports.
    """

    ARG_RANGES = {"episodes": "[1, inf)"}
    """Allowed intervals of the constructor's arguments (:func:`srdiv.registry.check_args`)."""

    def __init__(self, reward: str = "alpha_dcg", gamma: float = 1.0, alpha: float = ALPHA,
                 return_only: bool = False, episodes: int = 1, baseline: str = "none", **params: Any):
        super().__init__(reward=reward, gamma=gamma, alpha=alpha, return_only=return_only, episodes=episodes,
                         baseline=baseline, **params)
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got '{reward}'")
        if baseline not in BASELINES:
            raise ValueError(f"baseline must be one of {BASELINES}, got '{baseline}'")
        if baseline == "mean" and episodes < 2:
            raise ValueError(f"baseline 'mean' needs episodes >= 2 (the mean of one episode is itself), got {episodes}")
        self.episodes = int(episodes)
        self.baseline = baseline
        self.reward = reward
        self.gamma = float(gamma)
        self.alpha = float(alpha)
        self.return_only = bool(return_only)
        self.monitor: dict[str, Bundle] = {}
        self._train: Bundle | None = None
        self._sampled: list[np.ndarray] = []

    def prepare(self, bundle: Bundle, rng: np.random.Generator) -> None:
        """Keep the training lists for the arg-max curve; episodes are sampled afresh in :meth:`loss`."""
        self._train = bundle

    def batches(self, prepared: Any, n_queries: int, batch_size: int, rng: np.random.Generator) -> Iterator[Episodes]:
        """Shuffled list rows, each mini-batch with its own sampler seed."""
        for rows in super().batches(prepared, n_queries, batch_size, rng):
            yield Episodes(rows, int(rng.integers(2**62)))

    def episode(self, model: DiversityModel, batch: Batch,
                seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample one episode per list: ``order``, ``log pi(a_t|s_t)`` and rewards, each ``[B, D]``."""
        device = batch["doc_mask"].device
        order, log_probs = cast(Rollout, model).rollout(batch, torch.Generator(device).manual_seed(seed))
        labels = (batch["labels"] * batch["doc_mask"][..., None]).cpu().numpy()
        rewards = step_rewards(labels, order.cpu().numpy(), self.reward, self.alpha)
        self._sampled.append(alpha_dcg(ranked_labels(labels, order.cpu().numpy()), self.alpha))
        return order, log_probs, torch.as_tensor(rewards, dtype=log_probs.dtype, device=device)

    def loss(self, model: DiversityModel, data: Batch, minibatch: Episodes) -> torch.Tensor:
        """``-mean_lists sum_t gamma^t G_t log pi(a_t | s_t)`` (ReturnOnly: ``-G_0 sum_t log pi``).

        With ``episodes = n`` the mean runs over the n episodes of each list too; ``baseline="mean"``
        subtracts, per list and step, the mean of the n episodes' weights.
        """
        batch = take(data, np.tile(minibatch.rows, self.episodes))   # [n * B]: episode k of list b at k * B + b
        _, log_probs, rewards = self.episode(model, batch, minibatch.seed)
        ret = returns(rewards, self.gamma)
        if self.return_only:
            weight = ret[:, :1].expand_as(ret)
        else:
            weight = self.gamma ** torch.arange(ret.shape[1], device=ret.device, dtype=ret.dtype) * ret
        if self.baseline == "mean":
            weight = weight.view(self.episodes, -1, weight.shape[1])
            weight = (weight - weight.mean(0, keepdim=True)).view(-1, weight.shape[2])
        return -(weight * log_probs).sum() / (self.episodes * len(minibatch.rows))

    def epoch_end(self, model: DiversityModel) -> dict[str, float]:
        """Mean alpha-DCG@M of this epoch's sampled episodes (``train_sample``) and of arg-max rankings.

        Arg-max columns: ``train_argmax`` and ``<name>_argmax`` for each bundle in
        :attr:`monitor` (Figure 5's train(sample), train(arg max), test(arg max)).
        """
        stats = {"train_sample": float(np.concatenate(self._sampled).mean()) if self._sampled else float("nan")}
        self._sampled = []
        device = next(model.parameters()).device
        named = ({"train": self._train} if self._train is not None else {}) | self.monitor
        for name, bundle in named.items():
            labels = bundle.labels * bundle.doc_mask[..., None]
            order = rank_bundle(model, bundle, device)
            stats[f"{name}_argmax"] = float(alpha_dcg(ranked_labels(labels, order), self.alpha).mean())
        return stats
