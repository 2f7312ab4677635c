"""Intent-aware diversity measures on label tensors, computed as TREC's ndeval computes them.

Every function takes subtopic labels of ranked lists, ``ranked [lists, depth,
subtopics]`` (0/1, row ``r`` is the document at rank ``r + 1``, padding rows
all zero), and is batched over lists with numpy: no loop over documents.
Official evaluation (:func:`srdiv.metrics.official.official_metrics`) takes the same labels as
``topic, rank, subtopic`` triples of the relevant ones only, so that a run a
million documents deep costs memory in proportion to the run.

With ``c_s(r)`` the number of documents above rank ``r`` relevant to subtopic
``s``, the *novelty gain* of rank ``r`` is (Clarke et al., SIGIR 2008, Eq. 3
with J = 1)::

    G(r) = sum_s rel_s(r) * (1 - alpha) ** c_s(r)

and ndeval (version 4.5) builds every measure from it, with ``N`` the number of
subtopics that have at least one relevant document (ndeval ignores the others):

* alpha-DCG@k = sum_{r<=k} G(r) / log2(1 + r); alpha-nDCG@k divides it by the
  alpha-DCG@k of the greedy ideal ranking (:func:`ideal_ranking`).
* ERR-IA@k = sum_{r<=k} G(r) / r, divided by ndeval's collection-independent
  "ideal ideal" ``N * sum_{r<=k} (1 - alpha) ** (r - 1) / r`` (every rank
  covering every subtopic). With alpha = 0.5 the sum is the ERR-IA of
  Chapelle et al. (CIKM 2009) with stopping probability 1/2, times 2.
  nERR-IA@k divides the sum by the ideal ranking's instead. (ndeval leaves
  ERR-IA@1 unnormalised, a quirk of its loop; here @1 is normalised too.)
* NRBP = (1 - (1 - alpha) * beta) / N * sum_r G(r) * beta ** (r - 1) over the
  whole list, not only the top 20 (Clarke et al., ICTIR 2009);
  nNRBP divides by the ideal ranking's NRBP.
* P-IA@k = sum_{r<=k} sum_s rel_s(r) / (k * N) (Agrawal et al., WSDM 2009).
* S-recall@k = |{s : covered in the top k}| / N (Zhai et al., SIGIR 2003).

Where ``n_subtopics`` is not given it is the number of subtopic columns that
hold a relevant label in the list itself; official evaluation passes the
count from the qrels (:class:`srdiv.metrics.evaluate.DiversityEvaluator`).
A list with ``N = 0`` scores 0 everywhere.
"""

from __future__ import annotations

import math

import numpy as np

ALPHA = 0.5
"""The novelty gain's alpha (Clarke et al., SIGIR 2008): every official measure's and every training target's."""
BETA = 0.5
CUTOFFS = (5, 10, 20)
BLOCK = 2**20
"""Entries of the largest array a batched step holds (topics x patterns, NRBP's topics x depth)."""
CANDIDATE_NDCG = "alpha_nDCG_cand@20"
"""Name of DSSA's training metric (:func:`alpha_ndcg_candidates`); never an official number."""


def _labels(ranked: np.ndarray) -> np.ndarray:
    """0/1 float64 copy of a ``[lists, depth, subtopics]`` label tensor."""
    ranked = np.asarray(ranked)
    if ranked.ndim != 3:
        raise ValueError(f"labels must be [lists, depth, subtopics], got shape {ranked.shape}")
    return (ranked > 0).astype(np.float64)


def _at(cumulative: np.ndarray, k: int | None) -> np.ndarray:
    """``[lists]`` value at cutoff ``k`` of a ``[lists, depth]`` cumulative sum (lists shorter than k keep their
    total)."""
    n_lists, depth = cumulative.shape
    if k is not None and k < 1:
        raise ValueError(f"cutoff must be >= 1, got {k}")
    if depth == 0:
        return np.zeros(n_lists)
    return cumulative[:, (depth if k is None else min(k, depth)) - 1]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den``, 0 where ``den`` is 0."""
    num = np.asarray(num, dtype=np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=np.asarray(den) > 0)


def row_order(*columns: np.ndarray) -> np.ndarray:
    """Order that sorts the rows of non-negative integer ``columns`` by the first, then the second, ...

    As ``np.lexsort(columns[::-1])`` for distinct rows (equal rows come together, in any order), but one
    argsort of a combined int64 key where the key fits, several times faster.
    """
    spans = [int(c.max(initial=0)) + 1 for c in columns]
    if math.prod(spans) >= 2**63:
        return np.lexsort(columns[::-1])
    key = np.zeros(len(columns[0]), np.int64)
    for column, span in zip(columns, spans):
        key = key * span + column
    return np.argsort(key)


def distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted distinct values, [values] index of each among them)``, as ``np.unique(values,
    return_inverse=True)``, which imports ``numpy.ma`` (60 ms of ``srdiv evaluate``'s start)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new = np.r_[True, ordered[1:] != ordered[:-1]] if len(ordered) else np.zeros(0, bool)
    inverse = np.empty(len(values), np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse


def _n(ranked: np.ndarray, n_subtopics: np.ndarray | None) -> np.ndarray:
    """``[lists]`` intent count: given, or the columns of ``ranked`` holding a relevant label."""
    if n_subtopics is not None:
        return np.asarray(n_subtopics, dtype=np.float64)
    return _labels(ranked).any(axis=1).sum(axis=1).astype(np.float64)


def discount(depth: int) -> np.ndarray:
    """``[depth]`` rank discount ``1 / log2(1 + r)``, r = 1..depth, as ndeval computes it."""
    return np.log(2.0) / np.log(np.arange(2, depth + 2, dtype=np.float64))


def novelty_gains(ranked: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """``[lists, depth]`` novelty gain ``G(r)`` of each rank (Clarke et al. 2008, Eq. 3)."""
    rel = _labels(ranked)
    seen = np.cumsum(rel, axis=1) - rel  # c_s(r): relevant documents strictly above r
    return (rel * (1.0 - alpha) ** seen).sum(axis=2)


def alpha_dcg_gains(ranked: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """``[lists, depth]`` discounted gains ``G(r) / log2(1 + r)``; their cumsum is alpha-DCG@t.

    Used for rewards and sampling: the gain of a position given the ranks above it.
    """
    gains = novelty_gains(ranked, alpha)
    return gains * discount(gains.shape[1])


def _dcg(gains: np.ndarray, k: int | None) -> np.ndarray:
    """``[lists]`` alpha-DCG@k from novelty gains ``[lists, depth]``."""
    return _at(np.cumsum(gains * discount(gains.shape[1]), axis=1), k)


def _err(gains: np.ndarray, k: int | None) -> np.ndarray:
    """``[lists]`` unnormalised ERR-IA@k, ``sum_{r<=k} G(r) / r``."""
    return _at(np.cumsum(gains / np.arange(1, gains.shape[1] + 1), axis=1), k)


def _nrbp(gains: np.ndarray, alpha: float, beta: float, n: np.ndarray) -> np.ndarray:
    """``[lists]`` NRBP over the whole list from novelty gains."""
    total = (gains * beta ** np.arange(gains.shape[1])).sum(axis=1)
    return _ratio((1.0 - (1.0 - alpha) * beta) * total, n)


def alpha_dcg(ranked: np.ndarray, alpha: float = ALPHA, k: int | None = None) -> np.ndarray:
    """``[lists]`` unnormalised alpha-DCG@k (whole list when ``k`` is None)."""
    return _dcg(novelty_gains(ranked, alpha), k)


def err_ia(ranked: np.ndarray, k: int | None = None, alpha: float = ALPHA,
           n_subtopics: np.ndarray | None = None) -> np.ndarray:
    """``[lists]`` ERR-IA@k with ndeval's collection-independent normalisation (whole list when ``k`` is None)."""
    gains = novelty_gains(ranked, alpha)
    k = gains.shape[1] if k is None else k
    ranks = np.arange(1, k + 1)
    ideal_ideal = ((1.0 - alpha) ** (ranks - 1) / ranks).sum()  # every rank covers every intent
    return _ratio(_err(gains, k), _n(ranked, n_subtopics) * ideal_ideal)


def nrbp(ranked: np.ndarray, alpha: float = ALPHA, beta: float = BETA,
         n_subtopics: np.ndarray | None = None) -> np.ndarray:
    """``[lists]`` NRBP over the whole list (Clarke et al., ICTIR 2009)."""
    return _nrbp(novelty_gains(ranked, alpha), alpha, beta, _n(ranked, n_subtopics))


def precision_ia(ranked: np.ndarray, k: int, n_subtopics: np.ndarray | None = None) -> np.ndarray:
    """``[lists]`` intent-aware precision P-IA@k (uniform intent weights)."""
    hits = _labels(ranked)[:, :k].sum(axis=(1, 2))
    return _ratio(hits, k * _n(ranked, n_subtopics))


def s_recall(ranked: np.ndarray, k: int | None = None, n_subtopics: np.ndarray | None = None) -> np.ndarray:
    """``[lists]`` subtopic recall S-recall@k: share of intents covered in the top k."""
    covered = _labels(ranked)[:, :k].any(axis=1).sum(axis=1)
    return _ratio(covered, _n(ranked, n_subtopics))


def ideal_ranking(labels: np.ndarray, alpha: float = ALPHA, depth: int | None = None) -> np.ndarray:
    """``[lists, depth]`` row indices of ndeval's greedy alpha-DCG ideal ranking (:func:`greedy_ideal`).

    ``labels [lists, docs, subtopics]`` (0/1, padding rows all zero). Ties go to the earliest row:
    ndeval prefers the greatest docno, so rows sorted by docno *descending* reproduce it. A list
    with ``m`` relevant rows takes them in its first ``m`` ranks (a relevant row's gain stays
    positive while alpha < 1), then its other rows in row order, as the greedy would.
    """
    rel = _labels(labels)
    n_lists, n_docs, _ = rel.shape
    depth = n_docs if depth is None else min(depth, n_docs)
    lists, rows, cols = np.nonzero(rel)
    rank = greedy_ideal(lists, rows, cols, alpha, depth)
    greedy = np.zeros((n_lists, depth), dtype=np.int64)
    greedy[lists[rank > 0], rank[rank > 0] - 1] = rows[rank > 0]
    relevant = rel.any(axis=2)
    rest = np.argsort(relevant, axis=1, kind="stable")  # rows relevant to nothing first, in row order
    shift = np.arange(depth) - relevant.sum(axis=1)[:, None]  # position among the rest
    tail = np.take_along_axis(rest, np.clip(shift, 0, n_docs - 1), axis=1)
    return np.where(shift >= 0, tail, greedy)


def greedy_ideal(topic: np.ndarray, row: np.ndarray, col: np.ndarray, alpha: float = ALPHA,
                 depth: int | None = None) -> np.ndarray:
    """``[labels]`` rank (from 1) of each label's document in ndeval's greedy ideal ranking of its topic
    (0 for a document the greedy leaves below ``depth``, when given).

    ``topic, row, col [labels]``: the relevant labels, one per distinct (topic, document row,
    subtopic column); ``row`` orders a topic's documents as ties break (the earliest wins: ndeval
    prefers the greatest docno). At each rank the greedy takes the remaining document of largest
    novelty gain ``G`` given those taken (Clarke et al. 2008: the optimum is NP-hard, ndeval settles
    for this). Documents relevant to the same subtopic columns (a *pattern*) differ only in their row,
    so the greedy chooses among patterns, each offering its earliest document left: one product of the
    topics' subtopic weights ``[topics, subtopics]`` with the patterns ``[subtopics, patterns]`` a rank.

    The loop runs over ranks, batched over the topics of a block (memory follows the labels);
    topics go by decreasing number of documents, so those still choosing are a prefix.
    """
    if not len(topic):
        return np.zeros(0, np.int64)
    by_doc = row_order(topic, row)
    t, r = topic[by_doc], row[by_doc]
    doc = np.empty(len(topic), np.int64)        # documents numbered by topic, then row
    doc[by_doc] = np.cumsum(np.r_[True, (t[1:] != t[:-1]) | (r[1:] != r[:-1])]) - 1
    n_docs = int(doc.max(initial=-1)) + 1
    doc_topic = np.zeros(n_docs, np.int64)
    doc_topic[doc] = topic
    # a document's pattern: the bits of its subtopic columns, 63 to an int64 word
    words = np.zeros((n_docs, int(col.max(initial=0)) // 63 + 1), np.int64)
    np.add.at(words, (doc, col // 63), np.left_shift(1, col % 63, dtype=np.int64))
    by_words = row_order(*words.T)
    new = np.r_[True, (words[by_words][1:] != words[by_words][:-1]).any(axis=1)]
    pattern = np.empty(n_docs, np.int64)
    pattern[by_words] = np.cumsum(new) - 1
    pattern_words = words[by_words[new]]
    by_pattern = row_order(doc_topic, pattern, np.arange(n_docs))   # documents by topic, pattern, row
    group = np.r_[True, (doc_topic[by_pattern][1:] != doc_topic[by_pattern][:-1])
                  | (pattern[by_pattern][1:] != pattern[by_pattern][:-1])]
    following = np.empty(n_docs, np.int64)                   # the next document of the same topic and pattern
    following[by_pattern] = np.where(np.r_[group[1:], True], n_docs, np.r_[by_pattern[1:], 0])
    first = by_pattern[group]                                # each (topic, pattern)'s first document
    size = np.bincount(doc_topic)
    closes = np.where(following < n_docs, 0.0, -np.inf)      # added to a pattern's gain once it has no document left

    doc_rank = np.zeros(n_docs, np.int64)
    by_size = np.argsort(-size, kind="stable")
    rows = max(1, BLOCK // max(len(pattern_words), int(col.max()) + 1))   # blocks of [topics, patterns or subtopics]
    for lo in range(0, int(np.count_nonzero(size)), rows):
        block = by_size[lo:lo + rows]
        local = np.full(len(size), -1)
        local[block] = np.arange(len(block))
        mine = local[doc_topic[first]] >= 0
        used, slot = distinct(pattern[first[mine]])
        nxt = np.full((len(block), len(used)), n_docs)       # each pattern's next document
        nxt[local[doc_topic[first[mine]]], slot] = first[mine]
        closed = np.where(nxt < n_docs, 0.0, -np.inf)
        subtopic = np.arange(int(col[local[topic] >= 0].max()) + 1)
        relevant = ((pattern_words[used][:, subtopic // 63] >> (subtopic % 63)) & 1).T.astype(np.float64)  # [S, P]
        shrink = np.where(relevant.T > 0, 1.0 - alpha, 1.0)   # [patterns, subtopics]
        weight = np.ones((len(block), len(subtopic)))         # (1 - alpha) ** c_s per topic and subtopic
        m = size[block]
        ranks = int(m[0]) if depth is None else min(depth, int(m[0]))
        active = np.searchsorted(-m, -np.arange(ranks), side="left")      # topics with more than r documents
        chosen = np.zeros((len(block), ranks), np.int64)
        lists = np.arange(len(block))
        slots = lists * len(used)                             # a topic's first slot in nxt.flat
        for r, a in enumerate(active):
            gain = weight[:a] @ relevant
            gain += closed[:a]
            top = gain[lists[:a], gain.argmax(axis=1)]
            best = np.where(gain == top[:, None], nxt[:a], n_docs).argmin(axis=1)   # the earliest document of the best
            where = slots[:a] + best
            chosen[:a, r] = pick = nxt.take(where)
            nxt.put(where, following.take(pick))
            closed.put(where, closes.take(pick))
            weight[:a] *= shrink.take(best, axis=0)
        taken = np.arange(ranks) < m[:, None]
        doc_rank[chosen[taken]] = np.nonzero(taken)[1] + 1
    return doc_rank[doc]


def rank_labels(labels: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``[lists, depth, subtopics]`` labels of ``labels [lists, docs, subtopics]`` in ``order [lists, depth]``."""
    return np.take_along_axis(np.asarray(labels), np.asarray(order)[:, :, None], axis=1)


def alpha_ndcg_candidates(ranked: np.ndarray, candidates: np.ndarray, alpha: float = ALPHA,
                          k: int = 20) -> np.ndarray:
    """``[lists]`` alpha-nDCG@k normalised by the ideal ranking of the candidate list.

    DSSA's training and model-selection metric (report it as
    ``alpha_nDCG_cand@k``, :data:`CANDIDATE_NDCG`): ``candidates [lists,
    docs, subtopics]`` are the labels of the documents the model could rank,
    so a perfect re-ranking scores 1. Official numbers normalise by the ideal
    over every judged document (:func:`srdiv.metrics.evaluate.evaluate_run`).
    """
    ideal = rank_labels(candidates, ideal_ranking(candidates, alpha, depth=k))
    return _ratio(alpha_dcg(ranked, alpha, k), alpha_dcg(ideal, alpha, k))
