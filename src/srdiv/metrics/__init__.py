"""Official diversity measures (equal to TREC's ndeval) and run files.

``evaluate_run`` gives per-query values of :data:`MEASURES`; the array
functions work on label tensors ``[lists, depth, subtopics]`` for training
rewards and tests; ``read_run`` / ``write_trec_run`` are how stages exchange runs.
"""

from srdiv.metrics.diversity import (
    CANDIDATE_NDCG,
    alpha_dcg,
    alpha_dcg_gains,
    alpha_ndcg_candidates,
    err_ia,
    ideal_ranking,
    novelty_gains,
    nrbp,
    official_metrics,
    precision_ia,
    rank_labels,
    s_recall,
)
from srdiv.metrics.evaluate import MEASURES, DiversityEvaluator, evaluate_run, mean_measures
from srdiv.metrics.runs import read_run, write_trec_run

__all__ = [
    "CANDIDATE_NDCG",
    "DiversityEvaluator",
    "MEASURES",
    "alpha_dcg",
    "alpha_dcg_gains",
    "alpha_ndcg_candidates",
    "err_ia",
    "evaluate_run",
    "ideal_ranking",
    "mean_measures",
    "novelty_gains",
    "nrbp",
    "official_metrics",
    "precision_ia",
    "rank_labels",
    "read_run",
    "s_recall",
    "write_trec_run",
]
