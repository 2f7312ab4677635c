"""Official diversity measures (equal to TREC's ndeval) and run files.

``evaluate_run`` gives per-query values of :data:`MEASURES`; the array
functions work on label tensors ``[lists, depth, subtopics]`` for training
rewards and tests; ``read_run`` / ``write_trec_run`` are how stages exchange runs.
"""

import importlib

_HOMES = {
    "srdiv.metrics.diversity": ("CANDIDATE_NDCG", "alpha_dcg", "alpha_dcg_gains", "alpha_ndcg_candidates", "err_ia",
                                "ideal_ranking", "novelty_gains", "nrbp", "official_metrics", "precision_ia",
                                "rank_labels", "s_recall"),
    "srdiv.metrics.evaluate": ("MEASURES", "DiversityEvaluator", "evaluate_run", "mean_measures"),
    "srdiv.metrics.runs": ("read_run", "write_trec_run"),
}
"""Where each name of :data:`__all__` lives: imported when first used, so that a module of this package
(``srdiv evaluate``'s, :mod:`srdiv.metrics.evaluate_command`) loads without pandas and pyarrow."""


def __getattr__(name: str):
    home = next((module for module, names in _HOMES.items() if name in names), None)
    if home is None:
        raise AttributeError(f"module 'srdiv.metrics' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


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
