"""``wordnet-div``: the open default ambiguity collection, built from WordNet 3.0.

Every synset is a document; an ambiguous noun is a query; its senses are the
official subtopics; a document is relevant to a sense when it lies under the
sense in WordNet's hierarchy. Construction, in order (parameters in
:class:`WordnetDivConfig`):

1. **Documents**: one per synset of every POS, ``docno`` ``wn-<pos>-<offset>``;
   ``title`` = lemma names; ``body`` = the gloss (definition and examples);
   ``anchor`` = titles of the synsets whose pointers reach this one; ``url`` =
   the first lemma (not the lexicographer file: relevant documents of one sense
   share theirs far more often than TREC's share a crawl file, ``docs/leakage.md``
   figure 5). ``pagerank``, ``inlinks``, ``outlinks``
   come from the pointer graph (distinct synset pairs, self-loops dropped).
2. **Queries**: single-word nouns (``[a-z]+``) with at least ``min_senses``
   noun senses spread over at least ``min_lexfiles`` lexicographer files.
3. **Relevance**: a synset is relevant to sense ``k`` when it is reached from
   ``k`` in 1..``relevance_depth`` steps over ``relevance_pointers``
   (hyponym, instance hyponym, member/substance/part meronym).
4. **Initial run**: Dirichlet query likelihood (``mu``) over title + body +
   anchor + url of every document, leaving out every synset that has the
   query word as a lemma (in any POS). The run is stored to depth
   ``pool_depth`` (100): all of it is the judged pool; its top 50 are the
   candidates that re-rankers see (``features.rank_docs``).
5. **Official subtopics**: the query's first ``max_subtopics`` senses (WordNet
   sense order) with a relevant document in the pool; queries with fewer than
   ``min_subtopics`` are dropped. qrels judge every (subtopic, pooled document).
6. **Suggestions** from the titles and glosses alone (:mod:`srdiv.collection.suggest`) and seeded folds.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
import scipy.sparse as sp

from srdiv.collection import settings
from srdiv.collection.graph import anchor_texts, pagerank
from srdiv.collection.schema import Collection, load_collection
from srdiv.collection.suggest import WORD, CompletionSettings, completion_suggestions, segments
from srdiv.collection.wordnet_files import WordNet, read_wordnet
from srdiv.index.analysis import STOPWORDS, s_stem, tokenize
from srdiv.index.scoring import DEFAULT_SCORING
from srdiv.index.sparse import FieldIndex
from srdiv.io import InputError

DEFAULT_WORDNET_DIR = Path("/usr/share/wordnet")
"""Where Debian's ``wordnet-base`` installs the WordNet 3.0 database."""
TEXT_FIELDS = ("title", "body", "anchor", "url")
"""The text fields of a document; all of them form its whole text."""


@dataclass(frozen=True)
class WordnetDivConfig:
    """Every parameter of the build; ``collections: wordnet-div:`` in params.yaml overrides them."""

    seed: int = 0                       # query subsample and folds
    min_senses: int = 3                 # query: noun senses ...
    min_lexfiles: int = 2               # ... over this many lexicographer files
    relevance_pointers: tuple[str, ...] = ("~", "~i", "%m", "%s", "%p")
    relevance_depth: int = 3
    mu: float = DEFAULT_SCORING.mu      # Dirichlet prior of the initial run
    run_fields: tuple[str, ...] = TEXT_FIELDS  # text the initial run searches
    pool_depth: int = 100               # judged pool = stored run depth
    candidates: int = 50                # documents re-ranked (statistics of the data card)
    max_subtopics: int = 8
    min_subtopics: int = 3
    n_folds: int = 5
    max_queries: int | None = None      # seeded subsample of the kept queries (None = all)
    suggestions: int = 10               # level-1 suggestions per query
    refinements: int = 10               # level-2 suggestions per level-1 suggestion
    refinement_pointers: tuple[str, ...] = ("~", "~i")
    pagerank_damping: float = 0.85
    anchor_links: int = 50              # titles of linking synsets in a document's anchor
    suggestion_min_docs: int = 2        # popularity floor of a suggestion (documents holding the phrase)

    @classmethod
    def from_params(cls, params: dict) -> WordnetDivConfig:
        """Defaults overridden by ``params["collections"]["wordnet-div"]`` (unknown keys are an error)."""
        overrides = settings.overrides(cls, params, "wordnet-div")
        if not set(overrides.get("run_fields", ())) <= set(TEXT_FIELDS):
            raise InputError("params.yaml", f"collections.wordnet-div.run_fields must be among {TEXT_FIELDS}")
        return cls(**overrides)


# ---------------------------------------------------------------- documents
def pointer_graph(wn: WordNet, symbols: tuple[str, ...] | None = None) -> sp.csr_matrix:
    """Boolean adjacency ``[synsets, synsets]`` of distinct pointers (of ``symbols``; all when None), no self-loops."""
    ptr = wn.pointers if symbols is None else wn.pointers[wn.pointers["symbol"].isin(symbols)]
    ptr = ptr[ptr["src"] != ptr["dst"]]
    n = len(wn.synsets)
    adj = sp.csr_matrix((np.ones(len(ptr), dtype=bool), (ptr["src"], ptr["dst"])), shape=(n, n))
    adj.sum_duplicates()
    return adj


def gloss_links(wn: WordNet, max_words: int = 3) -> sp.csr_matrix:
    """Boolean ``[synsets, synsets]``: a synset's gloss names a noun lemma of the other (running-text links).

    Each gloss is cut into segments (:func:`srdiv.collection.suggest.segments`) and read left to
    right; at each position the longest run of up to ``max_words`` words that is a noun lemma
    (lower-cased, ``_`` and ``-`` as spaces; the last word may be a plural, by the S-stemmer) is a
    link to that noun's first WordNet sense, its most frequent one, and reading resumes after it.
    A single stopword or one-letter word is never a link; links to oneself are dropped. No
    pointer of the database is read, so the graph is independent of the relevance definition.
    """
    first: dict[str, int] = {}
    for lemma, senses in wn.noun_senses.items():
        key = " ".join(WORD.findall(lemma.lower().replace("_", " ")))
        if key and len(key.split()) <= max_words:
            first.setdefault(key, int(senses[0]))
    src, dst = [], []
    for i, gloss in enumerate(wn.synsets["gloss"].tolist()):
        for words in segments(gloss):
            k = 0
            while k < len(words):
                step, target = 1, None
                for n in range(min(max_words, len(words) - k), 0, -1):
                    head, last = words[k:k + n - 1], words[k + n - 1]
                    if n == 1 and (last in STOPWORDS or len(last) < 2):
                        continue
                    target = first.get(" ".join(head + [last]), first.get(" ".join(head + [s_stem(last)])))
                    if target is not None:
                        src.append(i)
                        dst.append(target)
                        step = n
                        break
                k += step
    n_syn = len(wn.synsets)
    keep = np.array(src) != np.array(dst)
    adj = sp.csr_matrix((np.ones(int(keep.sum()), dtype=bool), (np.array(src)[keep], np.array(dst)[keep])),
                        shape=(n_syn, n_syn))
    adj.sum_duplicates()
    return adj


def build_docs(wn: WordNet, cfg: WordnetDivConfig) -> pd.DataFrame:
    """The ``docs`` table: text fields and link-graph features (:func:`gloss_links`), one row per synset."""
    syn = wn.synsets
    lemmas = syn["lemmas"].tolist()
    title = np.array([", ".join(ls).replace("_", " ") for ls in lemmas], dtype=object)
    adj = gloss_links(wn)
    rank = pagerank(adj, cfg.pagerank_damping)
    return pd.DataFrame({
        "docno": "wn-" + syn["pos"] + "-" + syn["offset"],
        "title": title,
        "body": syn["gloss"],
        "anchor": anchor_texts(adj, title, rank, cfg.anchor_links),
        "url": [ls[0] for ls in lemmas],
        "pagerank": rank,
        "inlinks": np.asarray(adj.sum(axis=0)).ravel().astype(np.int64),
        "outlinks": np.asarray(adj.sum(axis=1)).ravel().astype(np.int64),
    })


def doc_text(docs: pd.DataFrame, fields: tuple[str, ...] = TEXT_FIELDS) -> list[str]:
    """Each document's ``fields`` joined by newlines (default: the whole text)."""
    return ["\n".join(parts) for parts in zip(*(docs[f].tolist() for f in fields))]


# ------------------------------------------------------------------ queries
def candidate_queries(wn: WordNet, cfg: WordnetDivConfig) -> pd.DataFrame:
    """Ambiguous single-word nouns, alphabetically: ``word, senses`` (noun synset indices in sense order)."""
    lexfile = wn.synsets["lexfile"].to_numpy()
    rows = [
        (word, senses) for word, senses in sorted(wn.noun_senses.items())
        if re.fullmatch(r"[a-z]+", word) and len(senses) >= cfg.min_senses
        and len(set(lexfile[senses])) >= cfg.min_lexfiles and tokenize(word)
    ]
    return pd.DataFrame(rows, columns=["word", "senses"])


def own_entries(wn: WordNet, words: list[str]) -> list[np.ndarray]:
    """Per word, the synsets (any POS) holding it as a lemma: left out of its results."""
    lemma = wn.synsets["lemmas"].explode()
    lemma = pd.DataFrame({"lemma": lemma.str.lower().to_numpy(), "synset": lemma.index.to_numpy()})
    lemma = lemma[lemma["lemma"].isin(set(words))].drop_duplicates()
    groups = lemma.groupby("lemma")["synset"].agg(lambda s: np.sort(s.to_numpy()))
    return [groups[w] for w in words]


def own_entry_pairs(collection: Collection | str | os.PathLike) -> pd.DataFrame:
    """``qid, docno`` of the documents whose title lists the query word as a lemma: what step 4 leaves out of
    each query's initial run, found from a built collection's ``topics`` and ``docs`` (a directory or loaded)."""
    coll = collection if isinstance(collection, Collection) else load_collection(collection, with_docs=True)
    docs = coll.docs_table()
    lemmas = docs["title"].str.lower().str.split(", ").explode()
    hits = lemmas[lemmas.isin(set(coll.topics["query"]))]
    found = pd.DataFrame({"query": hits.to_numpy(), "docno": docs["docno"].to_numpy()[hits.index]})
    return coll.topics.merge(found)[["qid", "docno"]]


def reach_by_depth(adj: sp.csr_matrix, seeds: np.ndarray, depth: int) -> list[sp.csr_matrix]:
    """Boolean ``[seeds, synsets]`` matrices of the synsets first reached from each seed in 1, 2, ... depth steps."""
    n = adj.shape[0]
    seen = sp.csr_matrix((np.ones(len(seeds), dtype=bool), (np.arange(len(seeds)), seeds)),
                         shape=(len(seeds), n))
    frontier, levels = seen, []
    for _ in range(depth):
        frontier = (frontier @ adj).astype(bool)
        frontier = (frontier > seen).tocsr()  # drop synsets already reached
        frontier.eliminate_zeros()
        seen = (seen + frontier).astype(bool)
        levels.append(frontier)
    return levels


class QuerySample(Protocol):
    """What :func:`sample_and_fold` reads of a builder's settings (:class:`WordnetDivConfig` and others)."""

    @property
    def seed(self) -> int: ...

    @property
    def max_queries(self) -> int | None: ...

    @property
    def n_folds(self) -> int: ...


def sample_and_fold(n: int, cfg: QuerySample) -> tuple[np.ndarray, np.ndarray]:
    """Seeded choice of ``max_queries`` of ``n`` queries (all when None) and their folds.

    Returns ``chosen [kept]`` (ascending positions) and ``fold [kept]`` in
    ``1..n_folds``: the chosen queries shuffled and dealt round-robin, so fold
    sizes differ by at most one.
    """
    rng = np.random.default_rng(cfg.seed)
    chosen = np.arange(n)
    if cfg.max_queries is not None and cfg.max_queries < n:
        chosen = np.sort(rng.choice(n, size=cfg.max_queries, replace=False))
    fold = np.empty(len(chosen), dtype=np.int64)
    fold[rng.permutation(len(chosen))] = np.arange(len(chosen)) % cfg.n_folds + 1
    return chosen, fold


# -------------------------------------------------------------------- build
def build_wordnet_div(wordnet: str | Path | WordNet = DEFAULT_WORDNET_DIR,
                      cfg: WordnetDivConfig | None = None) -> Collection:
    """Build the whole collection from a WordNet database (read, or the directory to read it from)."""
    cfg = cfg or WordnetDivConfig()
    wn = wordnet if isinstance(wordnet, WordNet) else read_wordnet(wordnet)
    docs = build_docs(wn, cfg)
    queries = candidate_queries(wn, cfg)
    words = queries["word"].tolist()

    # initial run: query likelihood over the whole text, own entries left out
    index = FieldIndex.from_texts(doc_text(docs, cfg.run_fields), mu=cfg.mu)
    top, scores = index.top_k(words, cfg.pool_depth, "lmir", exclude=own_entries(wn, words))
    qi, rank0 = np.nonzero(top >= 0)
    pool = pd.DataFrame({"q": qi, "rank": rank0 + 1, "doc": top[qi, rank0], "score": scores[qi, rank0]})

    # relevance: sense subtrees, judged on the pool
    senses = queries["senses"].explode().astype(np.int64)
    senses = pd.DataFrame({"q": senses.index.to_numpy(), "synset": senses.to_numpy()})
    senses["sense"] = senses.groupby("q").cumcount() + 1
    levels = reach_by_depth(pointer_graph(wn, cfg.relevance_pointers), senses["synset"].to_numpy(),
                            cfg.relevance_depth)
    reach = sum(levels[1:], levels[0]).tocsr()  # [sense rows, synsets]
    n = len(docs)
    coo = reach.tocoo()
    rel_keys = np.sort(coo.row.astype(np.int64) * n + coo.col)  # sense row * n + doc
    judged = senses.reset_index(names="row").merge(pool[["q", "doc"]], on="q")
    judged["rel"] = np.isin(judged["row"] * n + judged["doc"], rel_keys).astype(np.int8)

    # official subtopics: first max_subtopics senses with a relevant pooled doc; queries with enough
    has_rel = judged.groupby(["q", "sense"])["rel"].max()
    official = has_rel[has_rel > 0].reset_index()[["q", "sense"]]
    official = official[official.groupby("q").cumcount() < cfg.max_subtopics]
    n_official = official.groupby("q").size()
    kept = n_official.index[n_official >= cfg.min_subtopics].to_numpy()
    qid_of = pd.Series([str(i + 1) for i in range(len(kept))], index=kept)  # alphabetical numbering
    chosen, fold = sample_and_fold(len(kept), cfg)
    kept = kept[chosen]
    official = official[official["q"].isin(kept)].copy()
    official["sid"] = (official.groupby("q").cumcount() + 1).astype(str)

    topics = pd.DataFrame({
        "qid": qid_of[kept].to_numpy(),
        "query": queries["word"].to_numpy()[kept],
        "description": [f"WordNet noun '{w}'" for w in queries["word"].to_numpy()[kept]],
        "type": "ambiguous",
    })
    gloss = wn.synsets["gloss"].to_numpy()
    sub = official.merge(senses, on=["q", "sense"])
    subtopics = pd.DataFrame({"qid": qid_of[sub["q"]].to_numpy(), "sid": sub["sid"].to_numpy(),
                              "text": gloss[sub["synset"]]})
    qrels = sub.merge(judged[["q", "sense", "doc", "rel"]], on=["q", "sense"])
    qrels = pd.DataFrame({"qid": qid_of[qrels["q"]].to_numpy(), "sid": qrels["sid"].to_numpy(),
                          "docno": docs["docno"].to_numpy()[qrels["doc"]],
                          "grade": qrels["rel"].to_numpy(), "rel": qrels["rel"].to_numpy()})
    run = pool[pool["q"].isin(kept)]
    run = pd.DataFrame({"qid": qid_of[run["q"]].to_numpy(), "docno": docs["docno"].to_numpy()[run["doc"]],
                        "rank": run["rank"].to_numpy(), "score": run["score"].to_numpy()})
    folds = pd.DataFrame({"qid": topics["qid"], "fold": fold})
    suggestions = completion_suggestions(
        doc_text(docs, ("title", "body")), topics,
        CompletionSettings(cfg.suggestions, cfg.refinements, cfg.suggestion_min_docs))
    return Collection(topics=topics, subtopics=subtopics, suggestions=suggestions, qrels=qrels,
                      run=run, folds=folds, docs=docs)
