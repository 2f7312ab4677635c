"""The data card (``README.md``) of ``wordnet-div``, generated from the built collection.

:func:`collection_stats` measures the collection; :func:`data_card` renders the
card from those numbers and the build parameters, so the shipped card can be
checked byte for byte against the shipped tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from srdiv.collection.schema import Collection
from srdiv.collection.wordnet import WordnetDivConfig

ORACLE_FILE = "oracle-suggestions.parquet"
"""The sense-structure aspects (:mod:`srdiv.collection.wordnet_oracle`), written beside the tables: the oracle study's."""
CARD_MEASURES = ("alpha_nDCG@5", "alpha_nDCG@10", "alpha_nDCG@20", "ERR_IA@20", "nERR_IA@20",
                 "NRBP", "nNRBP", "P_IA@20", "StRecall@20")
"""Official measures of the initial run reported on the card."""

WORDNET_LICENSE = """\
This software and database is being provided to you, the LICENSEE, by
Princeton University under the following license.  By obtaining, using
and/or copying this software and database, you agree that you have
read, understood, and will comply with these terms and conditions.:

Permission to use, copy, modify and distribute this software and
database and its documentation for any purpose and without fee or
royalty is hereby granted, provided that you agree to comply with
the following copyright notice and statements, including the disclaimer,
and that the same appear on ALL copies of the software, database and
documentation, including modifications that you make for internal
use or for distribution.

WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved.

THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON
UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES, EXPRESS OR
IMPLIED.  BY WAY OF EXAMPLE, BUT NOT LIMITATION, PRINCETON
UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES OF MERCHANT-
ABILITY OR FITNESS FOR ANY PARTICULAR PURPOSE OR THAT THE USE
OF THE LICENSED SOFTWARE, DATABASE OR DOCUMENTATION WILL NOT
INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS, TRADEMARKS OR
OTHER RIGHTS.

The name of Princeton University or Princeton may not be used in
advertising or publicity pertaining to distribution of the software
and/or database.  Title to copyright in this software, database and
any associated documentation shall at all times remain with
Princeton University and LICENSEE agrees to preserve same.
"""
"""The WordNet 3.0 licence (as Debian's ``wordnet-base`` ships it), reproduced on every copy."""


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
    """Run frame ``qid, docno, rank`` of candidates ``docnos [Q, D]`` re-ordered by ``order [Q, D]`` (padding dropped)."""
    ranked = np.take_along_axis(docnos, order, axis=1)
    real = np.arange(ranked.shape[1]) < (docnos != "").sum(axis=1, keepdims=True)  # candidates come first
    q, r = np.nonzero(real)
    return pd.DataFrame({"qid": np.array(coll.qids, dtype=object)[q], "docno": ranked[q, r], "rank": r + 1})


def collection_stats(coll: Collection, candidates: int) -> dict[str, float]:
    """The card's numbers: sizes, per-query averages, official metrics of the initial run and of the ideal re-ranking."""
    from srdiv.metrics import evaluate_run, ideal_ranking, mean_measures

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
    stats[f"ideal re-ranking of the top {candidates}: alpha_nDCG@20"] = mean_measures(
        evaluate_run(ideal, coll.qrels, ["alpha_nDCG@20"]))["alpha_nDCG@20"]
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
    return f"""\
# wordnet-div

An open search result diversification collection built from WordNet 3.0:
every synset is a document, ambiguous nouns are the queries, their senses the
official subtopics. Rebuild it with

    srdiv collection wordnet-div --wordnet-dir /usr/share/wordnet --out data/collections/wordnet-div

(the WordNet 3.0 database of Debian's `wordnet-base` package; add
`--params params.yaml` when it has a `collections: wordnet-div:` section).
The build is deterministic; the test suite rebuilds it and compares it with
this copy.

## Construction

1. **Documents**: one per synset of every part of speech. `docno` is
   `wn-<pos>-<offset>` (`n`, `v`, `a` (satellites included), `r`); `title` =
   the lemma names; `body` = the gloss (definition and examples); `url` =
   the first lemma (`bass`), without the lexicographer file (see "What the
   inputs give away"). Links come from
   running text, as on the web, and never from WordNet's pointers (whose
   closure defines relevance): a gloss that names a noun lemma (longest match
   of up to three words, the last one possibly plural; a lone stopword is not a
   name) links to that noun's first sense, its most frequent one. `anchor` =
   the titles of the synsets linking to this one, at most
   {cfg.anchor_links}, highest PageRank first; `pagerank` (damping
   {cfg.pagerank_damping}), `inlinks` and `outlinks` come from the same link
   graph (distinct synset pairs, self-links dropped).
2. **Queries**: single-word nouns (`[a-z]+`) with at least {cfg.min_senses}
   noun senses spread over at least {cfg.min_lexfiles} lexicographer files;
   `type` = `ambiguous`, `description` = `WordNet noun '<word>'`.
3. **Relevance**: a synset is relevant to sense *k* when it is reached from
   *k* in 1 to {cfg.relevance_depth} steps over the pointers
   `{' '.join(cfg.relevance_pointers)}` (hyponym, instance hyponym, member /
   substance / part meronym). Grades are 0/1.
4. **Initial run** (`run`): Dirichlet-smoothed query likelihood (mu =
   {cfg.mu:g}) over the fields {', '.join(cfg.run_fields)} of every document
   (shared analyser: lowercase alphanumeric tokens, stopwords removed,
   S-stemmer), returning only documents that contain the query word and
   leaving out every synset that has the query word as a lemma (in any part
   of speech). It is stored to depth {cfg.pool_depth}: all of it is the judged
   pool, its top {cfg.candidates} are the candidates re-rankers see. A query
   word found in fewer documents has a shorter run.
5. **Official subtopics** (`subtopics`): the query's first
   {cfg.max_subtopics} senses (WordNet sense order) with a relevant document
   in the pool, `text` = the sense's gloss; queries with fewer than
   {cfg.min_subtopics} are dropped. `qrels` judge every (subtopic, pooled
   document) pair. `qid`s number the kept queries alphabetically.
6. **Suggestions** (what the models see) come from the titles and glosses
   alone, as a query log ranks completions by popularity
   (`srdiv.collection.suggest`): level 1, up to {cfg.suggestions} per query,
   the two-word phrases `<query> <w>` and `<w> <query>` found within one
   segment of text (segments end at punctuation), `w` a word of three or more
   letters, not a stopword, not the query word or its plural, ranked by the
   number of documents holding the phrase (at least
   {cfg.suggestion_min_docs}); level 2, up to {cfg.refinements} per level-1
   suggestion, the three-word phrases extending it by one such word, ranked the
   same way. No sense, pointer, subtopic or judgment is read, so suggestions
   repeat dominant senses and miss rare ones, as real suggestions do; `weight`
   is uniform.
7. **Folds**: the queries shuffled with seed {cfg.seed} and dealt into
   {cfg.n_folds} folds.

## Statistics

Measured on this copy by `srdiv.collection.wordnet_card.collection_stats`
(official measures as TREC's ndeval computes them, alpha = beta = 0.5).

| statistic | value |
|---|---|
{table}

## What the inputs give away, beside TREC

The repository's `docs/leakage.md` measures, for this collection, for its
sense-structure aspects, for debian-facets and for the TREC Web Track 2009-2012 (the
vendored topics, subtopics and Google suggestions; the DSSA release's 13-topic
feature slice), what the suggestions and relevance features a model reads
tell about the judgments (method and command on that page). In short:
suggestions match subtopics and name relevant candidates about as often as
TREC's do, and far less than the sense-structure aspects; the anchor field, once the
strongest shortcut (anchor BM25 per-topic AUC .92 when built from the relevance
pointers), now separates relevant from non-relevant candidates less than
TREC's anchor text does, since most candidates have no inlink. With a fixed
relevance function (figure 4) xQuAD falls below the initial run with these
suggestions and rises above it with the sense-structure aspects: the suggestions are
noisy, as real ones are, and a model must learn which ones to trust.

The `url` field no longer carries the lexicographer file (`noun.animal/...`).
With it, relevant candidates of one subtopic shared their url's first segment
in .944 of pairs against .305 across subtopics (figure 5 of `docs/leakage.md`,
measured on the collection as committed before the change), and the URL
features, doc2vec and LDA read it. TREC's public files hold no url; their
nearest analogue, the ClueWeb09 crawl file a docno names, is shared by .077 of
same-subtopic pairs against .061 across subtopics (every judged topic, top 50
of the vendored run). The lexicographer file told far more than that, so the
url is the first lemma alone; `docs/leakage.md` gives the figure for this copy.

## Sense-structure aspects (the oracle study)

`{ORACLE_FILE}` holds the suggestions this collection had before they were
found to read the judgments' structure (`srdiv.collection.wordnet_oracle`):
each sense of the query, official or not, takes turns giving its most typical
word from a profile of its synset, its subtree (the relevance closure) and its
hypernyms; a level-2 string adds the first lemma of a hyponym of its sense.
They are aspects drawn from the sense structure that defines relevance, not
from the official subtopics' texts, as the upper bound diversification papers
report ("official subtopics as aspects") is: they know more of the judgments
than subtopic texts would. The pipeline reads them only in the
`wordnet-div-oracle` dataset (`make run-oracle`), never in the main table.

## Build parameters

`collections: wordnet-div:` in `params.yaml` overrides these.

| parameter | value |
|---|---|
{params}

## Licence

The documents, titles, glosses and relations come from WordNet 3.0, whose
licence permits redistribution with the following notice:

```
{WORDNET_LICENSE}```
"""
