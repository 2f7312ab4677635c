"""A tiny ambiguous-query collection with text, shared by the text-stage and feature tests.

Two queries, each with three senses; every sense has five documents whose
words come from the sense's own vocabulary. Query ``1`` ("bass") and ``2``
("java") have level-1 suggestions per sense and level-2 suggestions under
two of them. The run lists eight documents per query; qrels mark each
document relevant to its own sense. Document ``k`` of a sense links to
document ``k + 1`` of the same sense.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from srdiv.collection.schema import Collection, write_collection

SENSES = {
    "1": {"query": "bass", "senses": {
        "fish": "bass fish lake fishing striped perch angler water catch",
        "music": "bass guitar music instrument string band amplifier player",
        "voice": "bass voice singer choir opera low vocal range",
    }},
    "2": {"query": "java", "senses": {
        "island": "java island indonesia jakarta volcano travel beach asia",
        "coffee": "java coffee bean roast espresso cup brew arabica",
        "code": "java programming language code compiler class object virtual",
    }},
}
DOCS_PER_SENSE = 5
RUN_DOCS = 8


def tiny_collection(seed: int = 0) -> Collection:
    """The collection with its ``docs`` table (30 documents)."""
    rng = np.random.default_rng(seed)
    topics, subtopics, suggestions, qrels, run, docs = [], [], [], [], [], []
    for qid, spec in SENSES.items():
        topics.append((qid, spec["query"], f"about {spec['query']}", "ambiguous"))
        ranked = []
        for s, (sense, vocab) in enumerate(spec["senses"].items(), start=1):
            sid = str(s)
            words = vocab.split()
            subtopics.append((qid, sid, f"{spec['query']} {sense}"))
            suggestions.append((qid, sid, 1, "", f"{spec['query']} {sense}", 1 / 3))
            for j in range(1, 3 if s < 3 else 1):
                suggestions.append((qid, f"{sid}.{j}", 2, sid, f"{spec['query']} {sense} {words[j + 1]}", 0.0))
            for k in range(DOCS_PER_SENSE):
                docno = f"{spec['query']}-{sense}-{k}"
                body = " ".join(rng.choice(words, size=12))
                links = [f"{spec['query']}-{sense}-{k + 1}"] if k + 1 < DOCS_PER_SENSE else []
                docs.append((docno, f"{spec['query']} {sense}", body, f"{sense} {words[k % len(words)]}",
                             f"http://www.{sense}.example.org/page/{k}", 0.1 + k, float(k), float(2 * k), links))
                qrels.append((qid, sid, docno, 1, 1))
                ranked.append(docno)
        order = [ranked[i] for i in rng.permutation(len(ranked))[:RUN_DOCS]]
        run += [(qid, d, r, -float(r)) for r, d in enumerate(order, start=1)]
    sugg = pd.DataFrame(suggestions, columns=["qid", "sugg_id", "level", "parent", "text", "weight"])
    level2 = sugg["level"] == 2
    sugg.loc[level2, "weight"] = 1 / sugg[level2].groupby("qid")["qid"].transform("size")
    return Collection(
        topics=pd.DataFrame(topics, columns=["qid", "query", "description", "type"]),
        subtopics=pd.DataFrame(subtopics, columns=["qid", "sid", "text"]),
        suggestions=sugg,
        qrels=pd.DataFrame(qrels, columns=["qid", "sid", "docno", "grade", "rel"]),
        run=pd.DataFrame(run, columns=["qid", "docno", "rank", "score"]),
        folds=pd.DataFrame({"qid": ["1", "2"], "fold": [1, 2]}),
        docs=pd.DataFrame(docs, columns=["docno", "title", "body", "anchor", "url",
                                         "pagerank", "inlinks", "outlinks", "links"]),
    )


def write_tiny(path, seed: int = 0) -> Collection:
    """Write :func:`tiny_collection` to ``path`` and return it."""
    coll = tiny_collection(seed)
    write_collection(coll, path)
    return coll


SMALL_EMBED = {"embed": {"doc2vec": {"vector_size": 8, "epochs": 5, "min_count": 1, "window": 5, "dbow_words": 0},
                         "lda": {"num_topics": 4, "passes": 2, "no_below": 1, "no_above": 1.0},
                         "svd": {"num_topics": 4}},
               "pseudo_docs": {"z": 3}, "features": {"rank_docs": 6}, "seed": 7}
"""Params that keep the models tiny and the tests fast."""
