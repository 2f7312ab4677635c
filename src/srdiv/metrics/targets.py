"""Training targets from subtopic labels: ideal orders and the metric M that scores rankings.

Both wrap the official implementations in :mod:`srdiv.metrics.diversity`
(greedy ideal ranking, DSSA's candidate-normalised alpha-nDCG) so that
sampling, objectives and evaluation agree on one definition. Shapes: ``Q``
lists (queries), ``D`` candidates, ``S`` subtopics, ``L`` ranking depth.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from srdiv.metrics.diversity import ALPHA, alpha_dcg, alpha_ndcg_candidates, ideal_ranking

Metric = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``M(ranked [T, L, S], candidates [D, S]) -> [T]``: values of T rankings of one candidate list."""


def ideal_orders(labels: np.ndarray, doc_mask: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """``[Q, D]`` greedy alpha-DCG ideal order of each candidate list, padding (-1) last.

    ``labels [Q, D, S]``, ``doc_mask [Q, D]``. Padded candidates have no
    relevant label, so the greedy only takes them once every remaining gain is
    zero; moving them to the end therefore leaves the real documents' order
    as the greedy built it.
    """
    order = ideal_ranking(labels * doc_mask[:, :, None], alpha)
    real = np.take_along_axis(doc_mask, order, axis=1)
    order = np.take_along_axis(order, np.argsort(~real, axis=1, kind="stable"), axis=1)
    return np.where(np.sort(~real, axis=1), -1, order)


def ranking_metric(name: str, alpha: float = ALPHA) -> Metric:
    """The metric M named in ``params.yaml``: ``alpha_nDCG_cand@k`` or ``alpha_DCG@k``.

    ``alpha_nDCG_cand@k`` is DSSA's candidate-list-normalised alpha-nDCG
    (:func:`srdiv.metrics.diversity.alpha_ndcg_candidates`, :data:`~srdiv.metrics.diversity.CANDIDATE_NDCG`):
    a perfect re-ranking of the candidates scores 1. It is not the official ``alpha_nDCG@k``, whose
    ideal ranks every judged document, so that name is refused here. ``alpha_DCG@k`` is unnormalised.
    """
    base, _, cut = name.partition("@")
    if not cut.isdigit() or base not in ("alpha_nDCG_cand", "alpha_DCG"):
        hint = (" (the sampling metric normalises over the candidates: alpha_nDCG_cand@k)" if base == "alpha_nDCG"
                else "")
        raise ValueError(f"unknown sampling metric '{name}' (use alpha_nDCG_cand@k or alpha_DCG@k){hint}")
    k = int(cut)
    if base == "alpha_DCG":
        return lambda ranked, candidates: alpha_dcg(ranked, alpha, k)
    # one candidate list for all T rankings: its ideal is computed once and broadcast
    return lambda ranked, candidates: alpha_ndcg_candidates(ranked, candidates[None], alpha, k)


def score_rankings(labels: np.ndarray, doc_mask: np.ndarray, orders: np.ndarray, metric: Metric) -> np.ndarray:
    """``[Q, T]`` value of ``T`` rankings per list: ``orders [Q, T, L]`` index the D axis (-1 padding).

    ``labels [Q, D, S]`` and ``doc_mask [Q, D]``; a ranking may stop early
    (a context plus one candidate) and is scored against the whole list.
    """
    labels = labels * doc_mask[:, :, None]
    ranked = np.take_along_axis(labels[:, None], np.clip(orders, 0, None)[..., None], axis=2)
    ranked = ranked * (orders >= 0)[..., None]
    return np.stack([metric(ranked[q], labels[q]) for q in range(len(labels))]).reshape(orders.shape[:2])
