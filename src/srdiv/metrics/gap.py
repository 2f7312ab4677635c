"""The share of the gap between the initial run and the ideal re-ranking that a row closes.

``gap closed = (row - initial) / (ideal - initial)`` on the mean of a measure over the test queries, where
``ideal`` is ndeval's greedy alpha-DCG ideal re-ranking of each query's candidates
(:func:`srdiv.metrics.diversity.ideal_ranking`), scored by the same official measures as every run: 0 is the
initial run, 1 the best reachable re-ranking, below 0 worse than the initial run. The planted collection's
learning check (docs/planted.md) holds each trainable row to a share of it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from srdiv.metrics.diversity import ideal_ranking
from srdiv.metrics.evaluate import evaluate_run
from srdiv.metrics.names import HEADLINE

PLANTED_SHARE = 0.05
"""The share of the gap each trainable row must close on the planted collection: the smallest share of the room
above the initial run a supervised diversification row closes on the TREC Web Track in its papers (R-LTR,
(.403 - .369) / (1 - .369) = .054, DSSA TKDE Table 7), rounded down (docs/planted.md)."""


def ideal_run(run: pd.DataFrame, qrels: pd.DataFrame, depth: int) -> pd.DataFrame:
    """The greedy ideal re-ranking ``qid, docno, rank, score`` of each query's top ``depth`` candidates of ``run``."""
    cands = run[run["rank"] <= depth].sort_values(["qid", "rank"], kind="stable")
    qids = list(pd.unique(cands["qid"]))
    pos = cands.groupby("qid", sort=False).cumcount().to_numpy()
    row = pd.Index(qids).get_indexer(cands["qid"])
    sids = sorted(set(qrels["sid"]))
    labels = np.zeros((len(qids), int(pos.max()) + 1, len(sids)), dtype=np.int8)
    relevant = qrels[qrels["rel"] > 0]
    where = cands.assign(row=row, pos=pos).merge(relevant[["qid", "docno", "sid"]], on=["qid", "docno"])
    labels[where["row"], where["pos"], pd.Index(sids).get_indexer(where["sid"])] = 1
    docnos = np.full(labels.shape[:2], "", dtype=object)
    docnos[row, pos] = cands["docno"].to_numpy()
    order = ideal_ranking(labels)            # ties in candidate order; padding rows (no label) come last
    frames = []
    for i, qid in enumerate(qids):
        n = int((row == i).sum())
        ranked = [docnos[i, j] for j in order[i] if j < n]
        frames.append(pd.DataFrame({"qid": qid, "docno": ranked, "rank": np.arange(1, len(ranked) + 1),
                                    "score": -np.arange(1.0, len(ranked) + 1)}))
    return pd.concat(frames, ignore_index=True)


def gap_closed(metrics: pd.DataFrame, ideal: pd.DataFrame, measure: str = HEADLINE,
               initial: str = "Initial") -> pd.DataFrame:
    """Per row of ``metrics`` (``model, variant, fold, qid, measure, value``, :func:`srdiv.report.gather.read_metrics`):
    ``row, queries, value, initial, ideal, closed``, means of ``measure`` over the row's test queries.

    ``ideal``: per-query values of the ideal re-ranking (``qid, measure, value``, :func:`evaluate_run` of
    :func:`ideal_run`). The initial run and the ideal are averaged over the same queries as the row.
    """
    values = metrics[metrics["measure"] == measure]
    if initial not in set(values["model"]):
        raise ValueError(f"the metrics hold no row '{initial}' to measure the gap from")
    base = values[values["model"] == initial].set_index("qid")["value"]
    best = ideal[ideal["measure"] == measure].set_index("qid")["value"]
    out = []
    for model, rows in values[values["model"] != initial].groupby("model", sort=False):
        qids = rows["qid"]
        row, start, top = rows["value"].mean(), base.reindex(qids).mean(), best.reindex(qids).mean()
        out.append({"row": model, "queries": len(qids), "value": row, "initial": start, "ideal": top,
                    "closed": (row - start) / (top - start) if top > start else np.nan})
    return pd.DataFrame(out, columns=["row", "queries", "value", "initial", "ideal", "closed"])


def ideal_values(run: pd.DataFrame, qrels: pd.DataFrame, depth: int) -> pd.DataFrame:
    """Per-query official measures ``qid, measure, value`` of :func:`ideal_run`."""
    return evaluate_run(ideal_run(run, qrels, depth), qrels)
