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

import os
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from srdiv.metrics.diversity import ALPHA, BETA, CUTOFFS, greedy_ideal, row_order
from srdiv.metrics.names import CUTOFF_FAMILIES, WHOLE_LIST
from srdiv.metrics.official import IdealValues, ideal_depth, official_metrics

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

MEASURES: list[str] = (
    [f"{name}@{k}" for name in CUTOFF_FAMILIES[:3] for k in CUTOFFS]
    + list(WHOLE_LIST)
    + [f"{name}@{k}" for name in CUTOFF_FAMILIES[3:] for k in CUTOFFS]
)
"""The official measures with ir_measures' names: alpha-nDCG, ERR-IA, nERR-IA @5/10/20, NRBP, nNRBP, P-IA,
S-recall @5/10/20."""


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


class QrelsLabels(NamedTuple):
    """Relevant labels of diversity qrels, coded (:func:`qrels_labels`, :func:`coded_labels`); label arrays
    are ``[labels]``."""

    qids: list[str]              # the judged topics, in qrels order
    n_subtopics: np.ndarray      # [topics] subtopics with a relevant document
    docnos: pa.Array | Sequence  # the relevant documents, in byte order (Arrow text, or bytes)
    topic: np.ndarray            # index in qids
    doc: np.ndarray              # index in docnos
    col: np.ndarray              # the subtopic's position among its topic's, by sid


def qrels_labels(qrels: pd.DataFrame) -> QrelsLabels:
    """One label per relevant (topic, document, subtopic) of ``qrels`` (``qid, sid, docno, rel``),
    sorted by topic, subtopic, document; every judged topic counts, even one without a relevant label."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from srdiv.metrics.runs import arrow_text, text_codes

    qid = arrow_text(qrels["qid"])
    qids = pc.unique(qid)                                   # in qrels order
    relevant = pa.table({"qid": qid, "sid": arrow_text(qrels["sid"]), "docno": arrow_text(qrels["docno"])})
    relevant = relevant.filter(qrels["rel"].to_numpy() > 0)
    topic = pc.index_in(relevant["qid"], value_set=qids).to_numpy(zero_copy_only=False).astype(np.int64)
    sid = text_codes(relevant["sid"], sort=True)[0]
    doc, docnos = text_codes(relevant["docno"], sort=True)
    return coded_labels(qids.to_pylist(), topic, sid, doc, docnos)


def coded_labels(qids: list[str], topic: np.ndarray, sid: np.ndarray, doc: np.ndarray, docnos: Sequence) -> QrelsLabels:
    """:class:`QrelsLabels` of the relevant labels ``topic, sid, doc [labels]`` (codes: ``topic`` indexes
    ``qids``, ``sid`` numbers the subtopic ids in byte order of their text, ``doc`` indexes ``docnos``, the
    relevant documents in byte order); a label may repeat."""
    topic, sid, doc = _unique_rows(topic, sid, doc)
    new_topic, new_pair = _changes(topic), _changes(topic, sid)
    pair = np.cumsum(new_pair) - 1                                       # (topic, subtopic) pairs in order
    col = pair - np.maximum.accumulate(np.where(new_topic, pair, 0))     # a pair's position in its topic
    n_subtopics = np.bincount(topic[new_pair], minlength=len(qids)).astype(np.float64)
    return QrelsLabels(qids, n_subtopics, docnos, topic, doc, col)


def _changes(*columns: np.ndarray) -> np.ndarray:
    """``[rows]`` whether each row of sorted ``columns`` differs from the row before (the first does)."""
    new = np.zeros(len(columns[0]), dtype=bool)
    new[:1] = True
    for column in columns:
        new[1:] |= column[1:] != column[:-1]
    return new


def _unique_rows(*columns: np.ndarray) -> tuple[np.ndarray, ...]:
    """The distinct rows of integer ``columns``, sorted by the first column, then the second, ..."""
    order = row_order(*columns)
    sorted_columns = [column[order] for column in columns]
    new = _changes(*sorted_columns)
    return tuple(column[new] for column in sorted_columns)


class DiversityEvaluator:
    """Official measures against fixed qrels: the ideal rankings are built once, runs evaluated many times.

    ``qrels``: the collection schema ``qid, sid, docno, grade, rel``, or their :class:`QrelsLabels`.
    ``measures``: names from :data:`MEASURES` (default all; any cutoff >= 1
    works, ndeval itself stops at 20). Memory follows the qrels and the run,
    never topics x depth x subtopics.
    """

    def __init__(self, qrels: pd.DataFrame | QrelsLabels, measures: list[str] | None = None,
                 alpha: float = ALPHA, beta: float = BETA):
        self.measures = list(MEASURES if measures is None else measures)
        self.cutoffs = measure_cutoffs(self.measures)
        self.alpha, self.beta = alpha, beta
        labels = qrels if isinstance(qrels, QrelsLabels) else qrels_labels(qrels)
        self.qids, self.docnos = labels.qids, labels.docnos
        # ties go to the greatest docno: rows by docno descending; ranks past what the measures read are left out
        nrbp = beta if set(self.measures) & set(WHOLE_LIST) else None
        depth = ideal_depth(self.cutoffs, labels.n_subtopics.max(initial=0.0), nrbp)
        rank = greedy_ideal(labels.topic, len(self.docnos) - 1 - labels.doc, labels.col, alpha, depth)
        ranked = rank > 0
        self.ideal = IdealValues(labels.topic[ranked], rank[ranked], labels.col[ranked], labels.n_subtopics,
                                 alpha, beta, self.cutoffs)
        # the labels grouped by (topic, document), sorted: a run document's labels are found by binary search
        order = row_order(labels.topic, labels.doc, labels.col)
        key = (labels.topic * len(self.docnos) + labels.doc)[order]
        starts = np.flatnonzero(_changes(key))
        self.pairs = key[starts]
        self.pair_start, self.pair_count = starts, np.diff(np.r_[starts, len(key)])
        self.label_topic, self.label_col = labels.topic[order], labels.col[order]

    def evaluate(self, run: pd.DataFrame, path: str | os.PathLike = "<run>", qids: Iterable[str] | None = None,
                 ties: str = "ndeval") -> pd.DataFrame:
        """Per-query values -> long frame ``qid, measure, value`` for every judged topic.

        ``run``: ``qid, docno`` and ``rank`` and/or ``score``, the whole run (NRBP reads past rank 20),
        in any order: checked and ordered by :func:`srdiv.metrics.runs.rank_run` (errors name ``path``;
        with ``qids``, a qid not among them is one; ``ties``: equal scores without ranks).
        Memory grows with the run, not with topics x depth x subtopics.
        """
        import pandas as pd
        import pyarrow as pa

        from srdiv.metrics.runs import rank_run

        ranking = rank_run(run, path, qids, ties)
        values = self.values(*self.codes(ranking), ranking.rank)
        topics = pa.array(self.qids, pa.large_string())
        return pd.DataFrame({
            "qid": topics.take(np.repeat(np.arange(len(self.qids)), len(self.measures))).to_pandas(),
            "measure": pa.array(self.measures * len(self.qids), pa.large_string()).to_pandas(),
            "value": values.ravel(),
        })

    def codes(self, ranking) -> tuple[np.ndarray, np.ndarray]:
        """``(topic, doc) [rows]`` of a :class:`srdiv.metrics.runs.Ranking`'s rows as :meth:`values` takes them."""
        import pyarrow as pa

        docnos = self.docnos if isinstance(self.docnos, (pa.Array, pa.ChunkedArray)) else pa.array(self.docnos)
        return (_positions(ranking.qids, pa.array(self.qids, pa.large_string()))[ranking.topic],   # -1: not judged
                _positions(ranking.docnos, docnos.cast(pa.large_string()))[ranking.doc])  # -1: relevant to nothing

    def values(self, topic: np.ndarray, doc: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """``[topics, measures]`` values (topics as :attr:`qids`, measures as :attr:`measures`) of a ranked run.

        ``topic, doc, rank [rows]``: each row's topic (index in :attr:`qids`, -1 for one without
        judgments), document (index in :attr:`docnos`, -1 for one relevant to nothing) and rank from 1
        within its topic (ndeval's order, :func:`srdiv.metrics.runs.rank_run`).
        """
        depth = int(rank[topic >= 0].max(initial=0))
        judged = np.flatnonzero((topic >= 0) & (doc >= 0))
        key = topic[judged].astype(np.int64) * len(self.docnos) + doc[judged]
        pair = np.minimum(np.searchsorted(self.pairs, key), max(len(self.pairs) - 1, 0))
        hit = judged[self.pairs[pair] == key] if len(self.pairs) else judged[:0]
        pair = pair[self.pairs[pair] == key] if len(self.pairs) else pair[:0]
        count = self.pair_count[pair]
        within = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        label = np.repeat(self.pair_start[pair], count) + within
        values = official_metrics(self.label_topic[label], np.repeat(rank[hit], count), self.label_col[label], depth,
                                  self.ideal, self.alpha, self.beta, self.cutoffs)
        return np.stack([values[m] for m in self.measures], axis=1).reshape(len(self.qids), len(self.measures))


def _positions(values, known) -> np.ndarray:
    """``[values]`` position of each text (Arrow) among ``known`` (distinct), -1 where it is not one of them."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.index_in(values, value_set=known), -1).to_numpy().astype(np.int64)


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
    import pandas as pd

    order = list(pd.unique(results["measure"]))
    return results.groupby("measure", sort=False)["value"].mean().reindex(order)
