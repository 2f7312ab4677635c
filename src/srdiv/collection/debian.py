"""``debian-facets``: an open faceted collection of running text, built from Debian's package indexes.

Every source package is a document (its binaries' descriptions joined); a word of
package names and synopses is a query; Debtags tags of the query's packages are
its official subtopics, so the labels come from curated metadata, not from the
text. Construction, in order (parameters in :class:`DebianFacetsConfig`):

1. **Documents**: one per source package of ``Packages``, ``docno``
   ``deb-<source>``; ``title`` = ``<source>: <synopsis of its main binary>`` (the
   binary named as the source, else the shortest name); ``body`` = the distinct
   paragraphs of the main binary's long description (``Translation-en``), then of
   each other binary's synopsis and long description, by name; ``url`` = the upstream
   homepage; ``anchor`` = the names of the source packages that depend on it
   (``Pre-Depends``, ``Depends``, ``Recommends``, virtual names through
   ``Provides``), at most ``anchor_links``, highest PageRank first;
   ``pagerank``, ``inlinks``, ``outlinks`` from that graph. A document's tags
   are the union of its binaries' tags. Untagged sources are left out
   (``untagged: leave-out``) or kept as non-relevant documents
   (``untagged: non-relevant``).
2. **Queries**: analysed words (``[a-z]{3,}`` stems) of the titles, whose
   *scope* (documents with the word in their title) holds ``min_scope`` to
   ``max_scope`` documents, and that are not generic: their adaptation
   (:func:`adaptation`, from the bodies' text alone) is at least
   ``min_adaptation``; the query string is the word's most frequent surface form.
3. **Initial run**: BM25 over ``run_fields`` (title and body), stored to
   ``pool_depth``: all of it is the judged pool, its top ``candidates`` are re-ranked.
4. **Official subtopics**: tags of the ``subtopic_facets``, in the vocabulary and
   not a placeholder there (:func:`placeholder_tags`), not naming the query word,
   carried by at least ``min_tag_docs`` pooled in-scope documents and by at most
   ``max_tag_share`` of the pooled in-scope tagged ones; most frequent first, a tag whose pooled in-scope documents
   overlap a chosen one's with Jaccard >= ``near_duplicate`` is dropped; up to
   ``max_subtopics``; queries with fewer than ``min_subtopics`` are dropped.
   A document is relevant to a subtopic when it is in the query's scope and
   carries the tag; qrels judge every (subtopic, pooled document).
5. **Suggestions** (:func:`build_suggestions`) from the scope's titles, and seeded folds.

The parameters are in :mod:`srdiv.collection.debian_config`, step 1 in :mod:`srdiv.collection.debian_docs`,
steps 2, 4 and 5 in :mod:`srdiv.collection.debian_topics`; :func:`build_debian_facets` runs them in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from srdiv.collection.debian_config import DebianFacetsConfig
from srdiv.collection.debian_docs import Documents, Indexes, build_docs, read_indexes
from srdiv.collection.debian_topics import build_suggestions, candidate_queries, choose_subtopics, title_words
from srdiv.collection.schema import Collection
from srdiv.collection.wordnet import doc_text, sample_and_fold
from srdiv.index.sparse import FieldIndex


@dataclass(frozen=True)
class Build:
    """A built collection with what its data card measures beside the tables."""

    collection: Collection
    documents: Documents
    queries: pd.DataFrame               # kept queries: q, qid, stem, query, scope, adaptation
    subtopic_tags: pd.DataFrame         # qid, sid, tag
    indexes: Indexes


def build_debian_facets(indexes: str | Path | Indexes, cfg: DebianFacetsConfig | None = None) -> Build:
    """Build the whole collection from the index directory (or already read indexes)."""
    cfg = cfg or DebianFacetsConfig()
    ix = indexes if isinstance(indexes, Indexes) else read_indexes(indexes, cfg.architecture)
    documents = build_docs(ix, cfg)
    docs = documents.docs
    words, stems, form = title_words(docs["title"].tolist())
    queries = candidate_queries(words, stems, form, docs, cfg)

    index = FieldIndex.from_texts(doc_text(docs, cfg.run_fields), k1=cfg.k1, b=cfg.b)
    top, scores = index.top_k(queries["query"].tolist(), cfg.pool_depth, "bm25")
    qi, rank0 = np.nonzero(top >= 0)
    pool = pd.DataFrame({"q": qi, "rank": rank0 + 1, "doc": top[qi, rank0], "score": scores[qi, rank0]})

    scope = queries["scope"].explode().astype(np.int64)
    scope = pd.DataFrame({"q": scope.index.to_numpy(), "doc": scope.to_numpy()})
    in_scope = pool.merge(scope, on=["q", "doc"])[["q", "doc"]]
    doc_tags = pd.Series(documents.tags).explode().dropna()
    doc_tags = pd.DataFrame({"doc": doc_tags.index.to_numpy(), "tag": doc_tags.to_numpy()})
    pooled = in_scope.merge(doc_tags, on="doc").assign(stem=lambda f: queries["stem"].to_numpy()[f["q"]])
    official = choose_subtopics(pooled, ix.vocabulary, cfg)

    kept = np.unique(official["q"].to_numpy())
    chosen, fold = sample_and_fold(len(kept), cfg)
    qid_of = pd.Series([str(i + 1) for i in range(len(kept))], index=kept)  # alphabetical numbering
    kept = kept[chosen]
    official = official[official["q"].isin(kept)]
    kept_queries = queries.iloc[kept].assign(q=kept, qid=qid_of[kept].to_numpy())

    docno = docs["docno"].to_numpy()
    topics = pd.DataFrame({"qid": kept_queries["qid"], "query": kept_queries["query"],
                           "description": [f"Debian packages about '{w}'" for w in kept_queries["query"]],
                           "type": "faceted"})
    tag_text = ix.vocabulary.tags.set_index("tag")
    subtopics = pd.DataFrame({"qid": qid_of[official["q"]].to_numpy(), "sid": official["sid"].to_numpy(),
                              "text": [". ".join(filter(None, (tag_text.at[t, "name"], tag_text.at[t, "text"])))
                                       for t in official["tag"]]})
    judged = official.merge(pool[["q", "doc"]], on="q")
    relevant = pooled.merge(official, on=["q", "tag"])[["q", "sid", "doc"]].assign(rel=1)
    judged = judged.merge(relevant, on=["q", "sid", "doc"], how="left").fillna({"rel": 0})
    judged["rel"] = judged["rel"].astype(np.int8)
    qrels = pd.DataFrame({"qid": qid_of[judged["q"]].to_numpy(), "sid": judged["sid"].to_numpy(),
                          "docno": docno[judged["doc"]], "grade": judged["rel"].to_numpy(),
                          "rel": judged["rel"].to_numpy()})
    run = pool[pool["q"].isin(kept)]
    run = pd.DataFrame({"qid": qid_of[run["q"]].to_numpy(), "docno": docno[run["doc"]],
                        "rank": run["rank"].to_numpy(), "score": run["score"].to_numpy()})
    folds = pd.DataFrame({"qid": topics["qid"].to_numpy(), "fold": fold})
    suggestions = build_suggestions(words, stems, form, kept_queries, cfg)
    coll = Collection(topics=topics.reset_index(drop=True), subtopics=subtopics, suggestions=suggestions,
                      qrels=qrels, run=run, folds=folds, docs=docs)
    subtopic_tags = pd.DataFrame({"qid": subtopics["qid"], "sid": subtopics["sid"], "tag": official["tag"].to_numpy()})
    return Build(coll, documents, kept_queries.reset_index(drop=True), subtopic_tags, ix)
