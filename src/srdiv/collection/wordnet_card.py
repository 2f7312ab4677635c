"""The data card (``README.md``) of ``wordnet-div``, generated from the built collection.

:func:`collection_stats` measures the collection; :func:`data_card` renders the
card from those numbers and the build parameters, so the shipped card can be
checked byte for byte against the shipped tables. Its text, with the WordNet 3.0
licence as Debian's ``wordnet-base`` ships it, is ``templates/wordnet_card.md``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from srdiv.collection.schema import Collection
from srdiv.collection.templates import fill
from srdiv.collection.wordnet import WordnetDivConfig

ORACLE_FILE = "oracle-suggestions.parquet"
"""The sense-structure aspects (:mod:`srdiv.collection.wordnet_oracle`), written beside the tables: the oracle
study's."""
CARD_MEASURES = ("alpha_nDCG@5", "alpha_nDCG@10", "alpha_nDCG@20", "ERR_IA@20", "nERR_IA@20",
                 "NRBP", "nNRBP", "P_IA@20", "StRecall@20")
"""Official measures of the initial run reported on the card."""


def candidate_labels(coll: Collection, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The run's top ``depth`` per topic: ``docnos [Q, depth]`` (``""`` padding) and labels ``[Q, depth, S]``.

    Topics in ``coll.qids`` order; label column ``s`` is the topic's ``s``-th
    subtopic in ``subtopics`` order.
    """
    qids = coll.qids
    row = pd.Series(np.arange(len(qids)), index=qids)
    top = coll.run[coll.run["rank"] <= depth]
    docnos = np.full((len(qids), depth), "", dtype=object)
    docnos[row[top["qid"]].to_numpy(), top["rank"].to_numpy() - 1] = top["docno"].to_numpy()
    col = coll.subtopics.assign(col=coll.subtopics.groupby("qid").cumcount())[["qid", "sid", "col"]]
    rel = coll.qrels[coll.qrels["rel"] > 0].merge(col, on=["qid", "sid"]).merge(top, on=["qid", "docno"])
    labels = np.zeros((len(qids), depth, int(col["col"].max()) + 1))
    labels[row[rel["qid"]].to_numpy(), rel["rank"].to_numpy() - 1, rel["col"].to_numpy()] = 1.0
    return docnos, labels


def reranked_run(coll: Collection, docnos: np.ndarray, order: np.ndarray) -> pd.DataFrame:
    """Run frame ``qid, docno, rank`` of candidates ``docnos [Q, D]`` re-ordered by ``order [Q, D]`` (padding
    dropped)."""
    ranked = np.take_along_axis(docnos, order, axis=1)
    real = np.arange(ranked.shape[1]) < (docnos != "").sum(axis=1, keepdims=True)  # candidates come first
    q, r = np.nonzero(real)
    return pd.DataFrame({"qid": np.array(coll.qids, dtype=object)[q], "docno": ranked[q, r], "rank": r + 1})


def collection_stats(coll: Collection, candidates: int) -> dict[str, float]:
    """The card's numbers: sizes, per-query averages, official metrics of the initial run and of the ideal
    re-ranking."""
    from srdiv.metrics import evaluate_run, ideal_ranking, mean_measures
    from srdiv.metrics.names import HEADLINE

    per_query = lambda s: s.reindex(coll.qids, fill_value=0)  # noqa: E731
    n_sub = per_query(coll.subtopics.groupby("qid").size())
    relevant = coll.qrels.loc[coll.qrels["rel"] > 0, ["qid", "docno"]].drop_duplicates()
    top = coll.run[coll.run["rank"] <= candidates]
    sugg = coll.suggestions
    stats = {
        "queries": len(coll.topics),
        "documents": len(coll.docs) if coll.docs is not None else 0,
        "subtopics per query": n_sub.mean(),
        "subtopics per query (min)": n_sub.min(),
        "subtopics per query (max)": n_sub.max(),
        "judged (pooled) documents per query": per_query(coll.run.groupby("qid").size()).mean(),
        f"candidates per query (top {candidates})": per_query(top.groupby("qid").size()).mean(),
        f"candidates per query (top {candidates}, min)": per_query(top.groupby("qid").size()).min(),
        "relevant documents per query (pool)": per_query(relevant.groupby("qid").size()).mean(),
        f"relevant documents per query (top {candidates})":
            per_query(top.merge(relevant).groupby("qid").size()).mean(),
        "relevant documents per subtopic (pool)": (coll.qrels["rel"] > 0).sum() / len(coll.subtopics),
        "level-1 suggestions per query": per_query(sugg[sugg["level"] == 1].groupby("qid").size()).mean(),
        "level-2 suggestions per query": per_query(sugg[sugg["level"] == 2].groupby("qid").size()).mean(),
    }
    initial = mean_measures(evaluate_run(top, coll.qrels, list(CARD_MEASURES)))
    stats.update({f"initial run (top {candidates}): {m}": initial[m] for m in CARD_MEASURES})
    docnos, labels = candidate_labels(coll, candidates)
    ideal = reranked_run(coll, docnos, ideal_ranking(labels))
    stats[f"ideal re-ranking of the top {candidates}: {HEADLINE}"] = mean_measures(
        evaluate_run(ideal, coll.qrels, [HEADLINE]))[HEADLINE]
    return stats


def _fmt(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.4f}" if abs(value) < 1 else f"{value:.2f}"


def data_card(coll: Collection, cfg: WordnetDivConfig) -> str:
    """The collection's ``README.md``: construction rules, measured statistics, licence."""
    stats = collection_stats(coll, cfg.candidates)
    table = "\n".join(f"| {name} | {_fmt(value)} |" for name, value in stats.items())
    params = "\n".join(f"| `{name}` | `{value}` |" for name, value in vars(cfg).items())
    return fill("wordnet_card", cfg=cfg, table=table, params=params, ORACLE_FILE=ORACLE_FILE,
                relevance_pointers=" ".join(cfg.relevance_pointers), run_fields=", ".join(cfg.run_fields))
