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
    precision_ia,
    rank_labels,
    s_recall,
)
from srdiv.metrics.evaluate import MEASURES, DiversityEvaluator, evaluate_run, mean_measures
from srdiv.metrics.official import official_metrics


def __getattr__(name: str):
    """``read_run`` and ``write_trec_run``, imported when first used: :mod:`srdiv.metrics.runs` loads pandas
    and pyarrow, which ``srdiv evaluate QRELS RUN`` (:mod:`srdiv.metrics.evaluate_files`) does without."""
    if name in ("read_run", "write_trec_run"):
        from srdiv.metrics import runs

        return getattr(runs, name)
    raise AttributeError(f"module 'srdiv.metrics' has no attribute {name!r}")


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
