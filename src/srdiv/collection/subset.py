"""A seeded query subsample of a collection (the ``smoke`` setting of the pipeline)."""

from __future__ import annotations

import numpy as np

from srdiv.collection.schema import Collection
from srdiv.io import InputError


def subset_collection(coll: Collection, queries: int, folds: int, seed: int, extra_docs: int = 0) -> Collection:
    """Keep ``queries`` topics drawn with ``seed``, re-split into ``folds`` folds.

    Documents kept: every document the kept queries' run or qrels name, plus
    ``extra_docs`` others drawn with the same seed (background text for the
    embeddings and BM25 statistics).
    """
    judged = sorted(set(coll.qrels["qid"]) & set(coll.topics["qid"]))
    where = coll.path or "collection"
    if not 1 <= queries <= len(judged):
        raise InputError(where, f"--queries {queries}: choose 1 to {len(judged)} (the collection's judged topics)")
    if not 2 <= folds <= queries:
        raise InputError(where, f"--folds {folds}: choose 2 to {queries} (the number of queries kept)")
    if extra_docs < 0 or seed < 0:
        raise InputError(where, f"--extra-docs and --seed must be >= 0 (got {extra_docs}, {seed})")
    rng = np.random.default_rng(seed)
    keep = sorted(rng.choice(judged, size=queries, replace=False), key=judged.index)
    order = rng.permutation(len(keep))
    fold_of = {keep[i]: int(rank % folds) + 1 for rank, i in enumerate(order)}

    def only(df):
        return df[df["qid"].isin(fold_of)].reset_index(drop=True)

    run, qrels = only(coll.run), only(coll.qrels)
    docs = None
    if coll.docs is not None:
        needed = set(run["docno"]) | set(qrels["docno"])
        others = np.flatnonzero(~coll.docs["docno"].isin(needed).to_numpy())
        extra = set(coll.docs["docno"].to_numpy()[rng.choice(others, size=min(extra_docs, len(others)), replace=False)])
        docs = coll.docs[coll.docs["docno"].isin(needed | extra)].reset_index(drop=True)
    folds_df = only(coll.folds).assign(fold=lambda df: df["qid"].map(fold_of))
    return Collection(topics=only(coll.topics), subtopics=only(coll.subtopics), suggestions=only(coll.suggestions),
                      qrels=qrels, run=run, folds=folds_df, docs=docs)
