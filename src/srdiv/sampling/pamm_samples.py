"""Positive and negative rankings for PAMM (Xia et al., SIGIR 2015; NTN paper Section 4.2.4, Algorithm 3).

PAMM enlarges the Plackett-Luce probability margin between positive rankings
``Y+`` and negative rankings ``Y-`` of a query by at least ``E(Y+) - E(Y-)``
(E = alpha-nDCG@20 here, as in the NTN paper), with tau+ = 5 and tau- = 20
rankings per query. The papers do not spell out the sampler; ours:

* a positive ranking is the greedy alpha-DCG ideal ranking with ties broken
  at random (the candidates are shuffled before the greedy, whose ties go to
  the earliest row). Every positive is thus ideal under the greedy, and the
  ``tau+`` of them differ wherever documents tie (redundant or irrelevant ones);
* a negative ranking is a uniformly random permutation of the candidates.

Rankings cover the whole candidate list: ``[Q, tau, D]`` indices into the
D axis, padding (-1) last.
"""

from __future__ import annotations

import numpy as np

from srdiv.metrics.diversity import ALPHA
from srdiv.metrics.targets import Metric, ideal_orders, score_rankings


def random_orders(doc_mask: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``[Q, n, D]`` uniformly random orders of each list's real candidates, padding (-1) last."""
    perm = _shuffle(doc_mask, n, rng)
    return np.where(_real_positions(doc_mask)[:, None], perm, -1)


def positive_rankings(labels: np.ndarray, doc_mask: np.ndarray, n: int, rng: np.random.Generator,
                      alpha: float = ALPHA) -> np.ndarray:
    """``[Q, n, D]`` greedy ideal rankings of ``labels [Q, D, S]`` with random tie-breaking."""
    n_lists, n_docs, _ = labels.shape
    perm = _shuffle(doc_mask, n, rng).reshape(-1, n_docs)
    shuffled = np.take_along_axis(np.repeat(labels, n, axis=0), perm[:, :, None], axis=1)
    order = ideal_orders(shuffled, np.repeat(_real_positions(doc_mask), n, axis=0), alpha)
    back = np.take_along_axis(perm, np.clip(order, 0, None), axis=1)
    return np.where(order >= 0, back, -1).reshape(n_lists, n, n_docs)


def _shuffle(doc_mask: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``[Q, n, D]`` permutations of the D axis: real candidates in random order, then padding."""
    keys = np.where(doc_mask[:, None, :], rng.random((len(doc_mask), n, doc_mask.shape[1])), np.inf)
    return np.argsort(keys, axis=2, kind="stable")


def _real_positions(doc_mask: np.ndarray) -> np.ndarray:
    """``[Q, D]`` True at the first ``n_q`` positions (where a permutation holds real candidates)."""
    return np.arange(doc_mask.shape[1]) < doc_mask.sum(1)[:, None]


def pamm_rankings(labels: np.ndarray, doc_mask: np.ndarray, n_pos: int, n_neg: int, metric: Metric,
                  rng: np.random.Generator, alpha: float = ALPHA) -> dict[str, np.ndarray]:
    """``pamm_pos [Q, tau+, D]``, ``pamm_neg [Q, tau-, D]`` and their metric values ``[Q, tau]``."""
    pos = positive_rankings(labels, doc_mask, n_pos, rng, alpha)
    neg = random_orders(doc_mask, n_neg, rng)
    return {
        "pamm_pos": pos.astype(np.int16),
        "pamm_pos_metric": score_rankings(labels, doc_mask, pos, metric).astype(np.float32),
        "pamm_neg": neg.astype(np.int16),
        "pamm_neg_metric": score_rankings(labels, doc_mask, neg, metric).astype(np.float32),
    }
