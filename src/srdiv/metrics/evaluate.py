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

from srdiv.metrics.diversity import ALPHA, BETA, CUTOFFS, ideal_ranking, official_metrics, rank_labels
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


def qrels_tensor(qrels: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray, pd.DataFrame]:
    """Relevant documents of every judged topic as labels, in ndeval's tie order.

    Returns ``qids [T]`` (qrels order), ``labels [T, docs, subtopics]`` 0/1
    (each topic's documents relevant to some subtopic, docno descending,
    padding rows zero), ``n_subtopics [T]`` (subtopics with a relevant
    document) and the relevant pairs ``qid, docno, t, col`` (topic index,
    subtopic column) to label a run with.
    """
    qids = list(pd.unique(qrels["qid"].astype(str)))
    topic_of = {q: i for i, q in enumerate(qids)}
    rel = qrels.loc[qrels["rel"] > 0, ["qid", "sid", "docno"]].astype(str).drop_duplicates()
    rel["t"] = rel["qid"].map(topic_of)
    rel["col"] = rel.groupby(["t", "sid"], sort=True).ngroup()
    rel["col"] -= rel.groupby("t")["col"].transform("min")  # subtopic column within its topic
    docs = rel[["t", "docno"]].drop_duplicates().sort_values(["t", "docno"], ascending=[True, False])
    docs["row"] = docs.groupby("t").cumcount()
    rel = rel.merge(docs, on=["t", "docno"])
    n_subtopics = np.bincount(rel.drop_duplicates(["t", "col"])["t"], minlength=len(qids)).astype(np.float64)
    labels = np.zeros((len(qids), int(docs["row"].to_numpy().max(initial=-1)) + 1, int(n_subtopics.max(initial=0))))
    labels[rel["t"], rel["row"], rel["col"]] = 1.0
    return qids, labels, n_subtopics, rel[["qid", "docno", "t", "col"]]


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
        self.qids, labels, self.n_subtopics, self.relevant = qrels_tensor(qrels)
        self.ideal = rank_labels(labels, ideal_ranking(labels, alpha))  # [T, docs, subtopics]

    def evaluate(self, run: pd.DataFrame) -> pd.DataFrame:
        """Per-query values -> long frame ``qid, measure, value`` for every judged topic.

        ``run``: ``qid, docno`` and ``rank`` and/or ``score``, the whole run
        (NRBP reads past rank 20).
        """
        check_run(run)
        ranked_run = order_run(run)
        ranked_run = ranked_run[ranked_run["qid"].isin(set(self.qids))]
        hits = ranked_run.merge(self.relevant, on=["qid", "docno"])
        depth = int(ranked_run["rank"].max()) if len(ranked_run) else 0
        ranked = np.zeros((len(self.qids), depth, self.ideal.shape[2]))
        ranked[hits["t"], hits["rank"] - 1, hits["col"]] = 1.0
        values = official_metrics(ranked, self.ideal, self.n_subtopics, self.alpha, self.beta, self.cutoffs)
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
