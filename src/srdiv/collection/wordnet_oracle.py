"""Oracle aspects of ``wordnet-div``: suggestions built from the sense structure that defines relevance.

These were the collection's suggestions until they were found to read the
judgments' own structure (the sense subtrees are the relevance closure, every
sense gets a turn, and 45.6% of level-2 strings named a relevant pooled
document). They are kept as a study of their own, the oracle study: aspects
drawn from the sense structure that defines relevance, which know more of the
judgments than the official subtopics' texts that the papers' upper bound
("official subtopics as aspects") reads; the collection's suggestions come
from text alone (:mod:`srdiv.collection.suggest`).

**Level 1** (at most ``suggestions`` per query): strings ``"<query> <word>"``.
Each noun sense ``k`` of the query (official subtopic or not) has a *profile*:
the words of its own synset, its subtree (the relevance closure) and its
hypernyms' lemma names, as counts ``c_k(t)`` over unstemmed tokens. A word's
contrast for sense ``k`` is::

    score_k(t) = (c_k(t) / |c_k| - max_{j != k} c_j(t) / |c_j|) * log(N / df(t))

(share in this profile minus the largest share in another sense's profile,
times the word's idf over all documents), so synonyms, hypernym lemmas and
subtree words compete on the same scale and only words most typical of one
sense score above 0. Senses take turns in WordNet sense order, each giving
its next best word, until the query has ``suggestions`` strings: with fewer
senses than slots a sense gives two (redundancy, as real suggestions have),
and non-official senses get strings too. The query word itself and its
plural are never the added word.

**Level 2** (at most ``refinements`` per level-1 suggestion): the level-1
string followed by the first lemma of a hyponym of its sense (within
``relevance_depth`` steps over ``refinement_pointers``, nearest first, then
by PageRank), minus words the level-1 string already has.

A suggestion carries no sense id and no relevance label; documents are ordered
by the PageRank of the WordNet pointer graph (every pointer), as when these were
the collection's suggestions.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import scipy.sparse as sp

from srdiv.collection.graph import pagerank
from srdiv.collection.schema import Collection
from srdiv.collection.wordnet import WordnetDivConfig, pointer_graph, reach_by_depth
from srdiv.collection.wordnet_files import WordNet
from srdiv.index.analysis import s_stem, tokenize_many
from srdiv.index.sparse import count_matrix

HYPERNYMS = ("@", "@i")


def _profiles(wn: WordNet, docs: pd.DataFrame, synsets: np.ndarray,
              reach: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray, list[str]]:
    """Row-normalised word shares ``[senses, words]``, idf ``[words]`` and the word list."""
    titles = tokenize_many(docs["title"], stem=False)
    bodies = tokenize_many(docs["body"], stem=False)
    words = sorted(set(itertools.chain.from_iterable(titles + bodies)))
    vocab = pd.Index(words, dtype=object)
    title, body = count_matrix(titles, vocab), count_matrix(bodies, vocab)
    n = len(docs)
    own = sp.csr_matrix((np.ones(len(synsets)), (np.arange(len(synsets)), synsets)), shape=(len(synsets), n))
    hyper = own @ pointer_graph(wn, HYPERNYMS).astype(np.float64)
    counts = (own + reach.astype(np.float64)) @ (title + body) + hyper @ title
    share = sp.diags(1.0 / np.maximum(np.asarray(counts.sum(axis=1)).ravel(), 1.0)) @ counts
    df = np.bincount((title + body).tocsr().indices, minlength=len(words))
    return share.tocsr(), np.log(n / np.maximum(df, 1)), words


def contrast_words(share: sp.csr_matrix, idf: np.ndarray, usable: np.ndarray, limit: int) -> list[np.ndarray]:
    """Per row of ``share [senses of one query, words]``, up to ``limit`` word ids of positive contrast, best first.

    ``usable [words]`` masks words that may be suggested. Ties go to the lower word id.
    """
    cols = np.unique(share.indices)
    cols = cols[usable[cols]]
    dense = share[:, cols].toarray()  # [K, C]
    if len(cols) == 0 or dense.shape[0] < 2:
        return [cols[:0] for _ in range(dense.shape[0])]
    top2 = -np.sort(-dense, axis=0)[:2]  # [2, C]
    best = dense.argmax(axis=0)
    other = np.where(np.arange(len(dense))[:, None] == best[None, :], top2[1], top2[0])
    score = (dense - other) * idf[cols]
    out = []
    for row in score:
        order = np.lexsort((cols, -row))
        out.append(cols[order[row[order] > 0][:limit]])
    return out


def oracle_suggestions(wn: WordNet, coll: Collection, cfg: WordnetDivConfig) -> pd.DataFrame:
    """The oracle ``suggestions`` table of a built ``wordnet-div`` (every noun sense of each topic's query)."""
    columns = ["qid", "sugg_id", "level", "parent", "text", "weight"]
    senses = pd.DataFrame({"qid": coll.topics["qid"], "query": coll.topics["query"],
                           "synset": [wn.noun_senses[q] for q in coll.topics["query"]]}).explode("synset")
    senses = senses.astype({"synset": np.int64}).reset_index(drop=True)
    if senses.empty:
        return pd.DataFrame(columns=columns)
    synsets = senses["synset"].to_numpy()
    levels = reach_by_depth(pointer_graph(wn, cfg.relevance_pointers), synsets, cfg.relevance_depth)
    reach = sum(levels[1:], levels[0]).tocsr()  # [senses, synsets]: the relevance closure
    docs = coll.docs_table().assign(pagerank=pagerank(pointer_graph(wn), cfg.pagerank_damping))
    share, idf, words = _profiles(wn, docs, synsets, reach)
    word_arr = np.array(words, dtype=object)
    vocab = {w: i for i, w in enumerate(words)}
    alpha = np.array([bool(re.fullmatch(r"[a-z]{3,}", w)) for w in words])
    stem_ids, stem_names = pd.factorize(pd.Series([s_stem(w) for w in words]))
    stem_of = {stem: i for i, stem in enumerate(stem_names)}
    hypos = _hyponym_lemmas(wn, docs, synsets, cfg)

    rows = []
    starts = np.flatnonzero(np.r_[True, senses["qid"].to_numpy()[1:] != senses["qid"].to_numpy()[:-1]])
    for start, stop in zip(starts, np.r_[starts[1:], len(senses)]):
        qid, query = senses["qid"].iloc[start], senses["query"].iloc[start]
        usable = alpha & (stem_ids != stem_of.get(s_stem(query), -1))  # not the query word or its plural
        usable[[vocab[w] for w in (query + "s", query + "es") if w in vocab]] = False
        picks = contrast_words(share[start:stop], idf, usable, cfg.suggestions)
        turns = [(r, k) for r in range(cfg.suggestions) for k in range(stop - start) if r < len(picks[k])]
        for j, (r, k) in enumerate(turns[:cfg.suggestions], start=1):
            text = f"{query} {word_arr[picks[k][r]]}"
            rows.append((qid, str(j), 1, "", text))
            rows.extend((qid, f"{j}.{i}", 2, str(j), refined)
                        for i, refined in enumerate(refinements(text, hypos[start + k], cfg.refinements), start=1))
    return pd.DataFrame([row + (1.0,) for row in rows], columns=columns)


def refinements(text: str, lemmas: list[str], limit: int) -> list[str]:
    """Up to ``limit`` distinct ``"<text> <lemma words not in text>"`` strings, in ``lemmas`` order."""
    seen = set(text.split())
    out: list[str] = []
    for lemma in lemmas:
        rest = " ".join(w for w in lemma.split() if w not in seen)
        if rest and f"{text} {rest}" not in out:
            out.append(f"{text} {rest}")
            if len(out) == limit:
                break
    return out


def _hyponym_lemmas(wn: WordNet, docs: pd.DataFrame, synsets: np.ndarray, cfg: WordnetDivConfig) -> list[list[str]]:
    """Per sense, first lemmas (lowercase) of its hyponyms: nearest first, then by PageRank."""
    levels = reach_by_depth(pointer_graph(wn, cfg.refinement_pointers), synsets, cfg.relevance_depth)
    parts = []
    for depth, level in enumerate(levels, start=1):
        coo = level.tocoo()
        parts.append(pd.DataFrame({"row": coo.row, "synset": coo.col, "depth": depth}))
    found = pd.concat(parts, ignore_index=True)
    found["pagerank"] = docs["pagerank"].to_numpy()[found["synset"]]
    found = found.sort_values(["row", "depth", "pagerank", "synset"], ascending=[True, True, False, True])
    first = wn.synsets["lemmas"].map(lambda ls: ls[0].replace("_", " ").lower()).to_numpy()
    lemma = first[found["synset"].to_numpy()]
    bounds = np.searchsorted(found["row"].to_numpy(), np.arange(len(synsets) + 1))
    return [lemma[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]
