"""Official evaluation from a run's relevant labels only (``topic, rank, subtopic`` triples), in memory
proportional to the run: the measures of :mod:`srdiv.metrics.diversity`, each value equal to the dense
computation over ``[topics, depth, subtopics]`` labels (the same gains summed in the same order)."""

from __future__ import annotations

import math

import numpy as np

from srdiv.metrics.diversity import ALPHA, BETA, BLOCK, CUTOFFS, _ratio, discount, row_order


def label_gains(topic: np.ndarray, rank: np.ndarray, col: np.ndarray,
                alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Novelty gains of a run from its relevant labels only: memory in proportion to the run.

    ``topic, rank, col [labels]``: one entry per (ranked document, subtopic it is relevant to), ``rank``
    from 1. Returns ``topic, rank, gain [docs]`` for each ranked relevant document, ``G(r)`` summed over
    its subtopics in column order as :func:`novelty_gains` sums the dense row, and ``first [labels]``,
    whether a label is its subtopic's first in the ranking (in the labels' order).
    """
    by_subtopic = row_order(topic, col, rank)
    t, c, r = topic[by_subtopic], col[by_subtopic], rank[by_subtopic]
    first = np.r_[True, (t[1:] != t[:-1]) | (c[1:] != c[:-1])] if len(t) else np.zeros(0, bool)
    index = np.arange(len(t))
    seen = index - np.maximum.accumulate(np.where(first, index, 0))  # c_s(r): this subtopic's labels above r
    in_order = np.empty_like(first)
    in_order[by_subtopic] = first
    by_rank = row_order(t, r, c)
    t, r, contribution = t[by_rank], r[by_rank], ((1.0 - alpha) ** seen.astype(np.float64))[by_rank]
    new_doc = np.flatnonzero(np.r_[True, (t[1:] != t[:-1]) | (r[1:] != r[:-1])]) if len(t) else index
    return t[new_doc], r[new_doc], np.add.reduceat(contribution, new_doc) if len(t) else contribution, in_order


def ideal_depth(cutoffs: tuple[int, ...], n_subtopics: float, beta: float | None = None) -> int | None:
    """Ranks of the ideal rankings the measures read: the largest cutoff, or with ``beta`` (NRBP, whole
    list) as many as decide NRBP to double precision (None: all).

    Past rank ``D`` each rank adds at most ``N * beta ** (r - 1)`` to NRBP's sum, ``N * beta ** D / (1 - beta)``
    in all, while rank 1 alone adds at least 1 (the ideal's first document is relevant). ``D`` keeps the
    rest under ``2 ** -60`` of the sum, below the last bit of a double, for ``N = n_subtopics`` (the most
    of any topic).
    """
    depth = max(cutoffs, default=1)
    if beta is None:
        return depth
    if not 0.0 <= beta < 1.0:
        return None
    if beta == 0.0:
        return depth
    tail = math.ceil((60 + math.log2(max(n_subtopics, 1.0) / (1.0 - beta))) / -math.log2(beta))
    return max(depth, tail)


class IdealValues:
    """The ideal rankings' values the normalised measures divide by, computed once for fixed qrels.

    ``topic, rank, col [labels]``: the relevant labels of :func:`greedy_ideal`'s rankings (as in
    :func:`label_gains`), ``n_subtopics [topics]`` the intents counted.
    """

    def __init__(self, topic: np.ndarray, rank: np.ndarray, col: np.ndarray, n_subtopics: np.ndarray,
                 alpha: float, beta: float, cutoffs: tuple[int, ...]):
        self.n = np.asarray(n_subtopics, dtype=np.float64)
        t, r, gain, _ = label_gains(topic, rank, col, alpha)
        self.dcg, self.err, total = _gain_sums(t, r, gain, int(r.max(initial=0)), len(self.n), beta, cutoffs)
        self.nrbp = _ratio((1.0 - (1.0 - alpha) * beta) * total, self.n)


def _gain_sums(t: np.ndarray, r: np.ndarray, gain: np.ndarray, depth: int, n_topics: int, beta: float,
               cutoffs: tuple[int, ...]) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray], np.ndarray]:
    """``({k: alpha-DCG@k}, {k: ERR-IA@k sum}, NRBP's sum over the whole list)``, each ``[topics]``, from
    the novelty gains of :func:`label_gains`, summed as the dense ``[topics, depth]`` gains are: cumulative
    sums in rank order; NRBP's over each padded row, ``depth`` values at a time."""
    dcg_gain = gain * discount(depth)[r - 1]
    err_gain = gain / np.arange(1, depth + 1)[r - 1]
    dcg, err = {}, {}
    for k in cutoffs:
        top = r <= k
        dcg[k] = np.bincount(t[top], weights=dcg_gain[top], minlength=n_topics)
        err[k] = np.bincount(t[top], weights=err_gain[top], minlength=n_topics)
    powers = beta ** np.arange(depth)
    total = np.zeros(n_topics)
    rows = max(1, BLOCK // max(depth, 1))  # padded rows summed a block at a time, as the dense row is summed
    for lo in range(0, n_topics, rows):
        block = (t >= lo) & (t < lo + rows)
        if block.any():
            dense = np.zeros((min(rows, n_topics - lo), depth))
            dense[t[block] - lo, r[block] - 1] = gain[block]
            total[lo:lo + rows] = (dense * powers).sum(axis=1)
    return dcg, err, total


def official_metrics(topic: np.ndarray, rank: np.ndarray, col: np.ndarray, depth: int, ideal: IdealValues,
                     alpha: float = ALPHA, beta: float = BETA,
                     cutoffs: tuple[int, ...] = CUTOFFS) -> dict[str, np.ndarray]:
    """Every official measure of a run from its relevant labels, in memory proportional to the run.

    ``topic, rank, col [labels]`` as in :func:`label_gains` (topics index ``ideal``'s), ``depth`` the
    run's longest ranking (NRBP reads the whole of it). Each value equals the dense computation over
    ``[topics, depth, subtopics]`` labels: the same gains summed in the same order (:func:`_gain_sums`).
    Returns ``{measure name: [topics]}`` with ir_measures' names (``alpha_nDCG@20``, ``ERR_IA@20``,
    ``nERR_IA@20``, ``NRBP``, ``nNRBP``, ``P_IA@20``, ``StRecall@20``).
    """
    n_topics = len(ideal.n)
    t, r, gain, first = label_gains(topic, rank, col, alpha)
    dcg, err, total = _gain_sums(t, r, gain, depth, n_topics, beta, cutoffs)
    out: dict[str, np.ndarray] = {}
    for k in cutoffs:
        label_top = rank <= k
        ranks = np.arange(1, k + 1)
        ideal_ideal = ((1.0 - alpha) ** (ranks - 1) / ranks).sum()  # every rank covers every intent
        out[f"alpha_nDCG@{k}"] = _ratio(dcg[k], ideal.dcg[k])
        out[f"ERR_IA@{k}"] = _ratio(err[k], ideal.n * ideal_ideal)
        out[f"nERR_IA@{k}"] = _ratio(err[k], ideal.err[k])
        out[f"P_IA@{k}"] = _ratio(np.bincount(topic[label_top], minlength=n_topics).astype(np.float64), k * ideal.n)
        out[f"StRecall@{k}"] = _ratio(np.bincount(topic[label_top & first], minlength=n_topics).astype(np.float64),
                                      ideal.n)
    out["NRBP"] = _ratio((1.0 - (1.0 - alpha) * beta) * total, ideal.n)
    out["nNRBP"] = _ratio(out["NRBP"], ideal.nrbp)
    return out
