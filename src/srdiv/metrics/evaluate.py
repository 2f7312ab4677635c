"""Official per-query diversity measures of a run frame against diversity qrels (ndeval's conventions).

* Topics: every topic in the qrels counts (ndeval ``-c``); a judged topic the
  run leaves out scores 0, run topics without judgments are ignored.
* Subtopics: those with at least one relevant document (``rel > 0``); intents
  weigh the same.
* Documents: a run document without a relevant judgment is non-relevant.
* Ideal ranking: ndeval's greedy over the topic's relevant documents, ties to
  the greatest docno (:func:`srdiv.metrics.diversity.ideal_ranking`).
* Run order: by rank when the run has ranks, else by score with ties broken
  by docno descending (:func:`srdiv.metrics.runs.order_run`).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from srdiv.metrics.diversity import ALPHA, BETA, CUTOFFS, IdealValues, ideal_ranking, official_metrics, rank_labels
from srdiv.metrics.runs import check_run, order_run

CUTOFF_FAMILIES = ("alpha_nDCG", "ERR_IA", "nERR_IA", "P_IA", "StRecall")
WHOLE_LIST = ("NRBP", "nNRBP")
MEASURES: list[str] = (
    [f"{name}@{k}" for name in CUTOFF_FAMILIES[:3] for k in CUTOFFS]
    + list(WHOLE_LIST)
    + [f"{name}@{k}" for name in CUTOFF_FAMILIES[3:] for k in CUTOFFS]
)
"""The official measures with ir_measures' names: alpha-nDCG, ERR-IA, nERR-IA @5/10/20, NRBP, nNRBP, P-IA, S-recall @5/10/20."""


def measure_cutoffs(measures: list[str]) -> tuple[int, ...]:
    """Cutoffs the measure names need; raises ValueError for a name we do not compute."""
    cutoffs = set()
    for name in measures:
        match = re.fullmatch(r"(\w+)@(\d+)", name)
        if match and match[1] in CUTOFF_FAMILIES and int(match[2]) >= 1:
            cutoffs.add(int(match[2]))
        elif name not in WHOLE_LIST:
            raise ValueError(f"unknown measure {name!r}; known: {', '.join(MEASURES)} (any cutoff >= 1)")
    return tuple(sorted(cutoffs))


def qrels_tensor(qrels: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray, pd.Index, np.ndarray]:
    """Relevant documents of every judged topic as labels, in ndeval's tie order.

    Returns ``qids [T]`` (qrels order), ``labels [T, docs, subtopics]`` 0/1
    (each topic's documents relevant to some subtopic, docno descending,
    padding rows zero), ``n_subtopics [T]`` (subtopics with a relevant
    document), ``docnos`` (the relevant documents) and ``relevant [3, pairs]``:
    topic index, ``docnos`` index and subtopic column of every relevant
    (document, subtopic) pair, to label a run with.
    """
    topic, uniques = pd.factorize(qrels["qid"].astype(str))  # topics in qrels order
    qids = [str(q) for q in uniques]
    keep = qrels["rel"].to_numpy() > 0
    t = topic[keep].astype(np.int64)
    sid, _ = pd.factorize(qrels.loc[keep, "sid"].astype(str), sort=True)
    doc, docnos = pd.factorize(qrels.loc[keep, "docno"].astype(str), sort=True)
    t, sid, doc = _unique_rows(t, sid, doc)
    cols = _unique_rows(t, sid)                          # (topic, subtopic) pairs, subtopics by sid within a topic
    col_of = _within_topic(cols[0])
    col = col_of[_lookup(cols, (t, sid))]
    rows = _unique_rows(t, len(docnos) - 1 - doc)          # a topic's documents by docno descending
    row = _within_topic(rows[0])[_lookup(rows, (t, len(docnos) - 1 - doc))]
    n_subtopics = np.bincount(cols[0], minlength=len(qids)).astype(np.float64)
    labels = np.zeros((len(qids), int(row.max(initial=-1)) + 1, int(n_subtopics.max(initial=0))))
    labels[t, row, col] = 1.0
    return qids, labels, n_subtopics, pd.Index(docnos), np.stack([t, doc, col])


def _unique_rows(*columns: np.ndarray) -> tuple[np.ndarray, ...]:
    """The distinct rows of integer ``columns``, sorted by the first column, then the second, ..."""
    if not len(columns[0]):
        return columns
    order = np.lexsort(columns[::-1])
    sorted_cols = [c[order] for c in columns]
    new = np.zeros(len(order), dtype=bool)
    new[0] = True
    for c in sorted_cols:
        new[1:] |= c[1:] != c[:-1]
    return tuple(c[new] for c in sorted_cols)


def _within_topic(topic: np.ndarray) -> np.ndarray:
    """Position of each entry among those of its topic (``topic`` sorted)."""
    index = np.arange(len(topic))
    return index - np.maximum.accumulate(np.where(np.r_[True, topic[1:] != topic[:-1]], index, 0)) if len(topic) else index


def _lookup(table: tuple[np.ndarray, ...], rows: tuple[np.ndarray, ...]) -> np.ndarray:
    """Index in the sorted distinct ``table`` (of :func:`_unique_rows`) of each row of ``rows``."""
    width = [int(max(c.max(initial=0), r.max(initial=0))) + 1 for c, r in zip(table, rows)]
    def key(columns):
        out = np.zeros(len(columns[0]), dtype=np.int64)
        for c, w in zip(columns, width):
            out = out * w + c
        return out
    return np.searchsorted(key(table), key(rows))


class DiversityEvaluator:
    """Official measures against fixed qrels: the ideal rankings are built once, runs evaluated many times.

    ``qrels``: the collection schema ``qid, sid, docno, grade, rel``.
    ``measures``: names from :data:`MEASURES` (default all; any cutoff >= 1
    works, ndeval itself stops at 20).
    """

    def __init__(self, qrels: pd.DataFrame, measures: list[str] | None = None,
                 alpha: float = ALPHA, beta: float = BETA):
        self.measures = list(MEASURES if measures is None else measures)
        self.cutoffs = measure_cutoffs(self.measures)
        self.alpha, self.beta = alpha, beta
        self.qids, labels, self.n_subtopics, self.docnos, (topic, doc, col) = qrels_tensor(qrels)
        self.ideal = IdealValues(rank_labels(labels, ideal_ranking(labels, alpha)), self.n_subtopics, alpha, beta,
                                 self.cutoffs)
        # the relevant labels grouped by (topic, document): a run document's labels are found by hash lookups
        self.topics = pd.Index(self.qids)
        key = topic * len(self.docnos) + doc
        order = np.argsort(key, kind="stable")
        key = key[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else key
        self.pairs = pd.Index(key[starts])
        self.pair_start, self.pair_count = starts, np.diff(np.r_[starts, len(key)])
        self.label_topic, self.label_col = topic[order], col[order]

    def evaluate(self, run: pd.DataFrame) -> pd.DataFrame:
        """Per-query values -> long frame ``qid, measure, value`` for every judged topic.

        ``run``: ``qid, docno`` and ``rank`` and/or ``score``, the whole run
        (NRBP reads past rank 20). Memory grows with the run, not with topics x depth x subtopics.
        """
        check_run(run)
        ranked_run = order_run(run)
        topic = self.topics.get_indexer(ranked_run["qid"])
        depth = int(ranked_run["rank"].to_numpy()[topic >= 0].max(initial=0))
        doc = self.docnos.get_indexer(ranked_run["docno"])
        pair = np.where((topic >= 0) & (doc >= 0),
                        self.pairs.get_indexer(topic.astype(np.int64) * len(self.docnos) + doc), -1)
        hit = np.flatnonzero(pair >= 0)
        count = self.pair_count[pair[hit]]
        within = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        label = np.repeat(self.pair_start[pair[hit]], count) + within
        rank = np.repeat(ranked_run["rank"].to_numpy(np.int64)[hit], count)
        values = official_metrics(self.label_topic[label], rank, self.label_col[label], depth, self.ideal,
                                  self.alpha, self.beta, self.cutoffs)
        return pd.DataFrame({
            "qid": np.repeat(np.array(self.qids, dtype=object), len(self.measures)),
            "measure": np.tile(np.array(self.measures, dtype=object), len(self.qids)),
            "value": np.stack([values[m] for m in self.measures], axis=1).ravel(),
        })


def evaluate_run(run: pd.DataFrame, qrels: pd.DataFrame, measures: list[str] | None = None,
                 alpha: float = ALPHA, beta: float = BETA) -> pd.DataFrame:
    """Per-query official measures of ``run`` -> long frame ``qid, measure, value`` for every judged topic.

    Values equal ndeval's (pyndeval) to floating-point precision; see the
    module docstring for the conventions and :class:`DiversityEvaluator` to
    evaluate many runs against the same qrels.
    """
    return DiversityEvaluator(qrels, measures, alpha, beta).evaluate(run)


def mean_measures(results: pd.DataFrame) -> pd.Series:
    """Mean of each measure over the topics of a long ``qid, measure, value`` frame (measure order kept)."""
    order = list(pd.unique(results["measure"]))
    return results.groupby("measure", sort=False)["value"].mean().reindex(order)
