"""``debian-facets``: an open faceted collection of running text, built from Debian's package indexes.

Every source package is a document (its binaries' descriptions joined); a word of
package names and synopses is a query; Debtags tags of the query's packages are
its official subtopics, so the labels come from curated metadata, not from the
text. Construction, in order (parameters in :class:`DebianFacetsConfig`):

1. **Documents**: one per source package of ``Packages``, ``docno``
   ``deb-<source>``; ``title`` = ``<source>: <synopsis of its main binary>`` (the
   binary named as the source, else the shortest name); ``body`` = the distinct
   paragraphs of the main binary's long description (``Translation-en``), then of
   each other binary's synopsis and long description, by name; ``url`` = the upstream homepage; ``anchor`` = the names of the source
   packages that depend on it (``Pre-Depends``, ``Depends``, ``Recommends``,
   virtual names through ``Provides``), at most ``anchor_links``, highest
   PageRank first; ``pagerank``, ``inlinks``, ``outlinks`` from that graph. A
   document's tags are the union of its binaries' tags. Untagged sources are
   left out (``untagged: leave-out``) or kept as non-relevant documents
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
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from srdiv.collection import settings
from srdiv.collection.debian_files import (
    Release,
    Vocabulary,
    index_file,
    read_packages,
    read_release,
    read_translations,
    read_vocabulary,
    sha256,
    verify,
)
from srdiv.collection.graph import anchor_texts, pagerank
from srdiv.collection.schema import Collection
from srdiv.collection.wordnet import doc_text, sample_and_fold
from srdiv.index.analysis import s_stem, tokenize, tokenize_many
from srdiv.index.sparse import FieldIndex, count_matrix
from srdiv.io import InputError

SUBTOPIC_FACETS = ("admin", "biology", "culture", "devel", "field", "game", "hardware", "interface", "mail",
                   "network", "office", "protocol", "science", "security", "sound", "uitoolkit", "use", "web",
                   "works-with", "works-with-format", "x11")
"""Facets whose tags may be subtopics: what a package is for, works with or runs as (data card: why the others not)."""
PACKAGING_TAGS = ("devel::library", "devel::doc", "x11::library")
"""Tags of those facets that say what kind of package it is (as ``role::`` does), not what it is for."""
UNTAGGED = ("leave-out", "non-relevant")
PLACEHOLDER_NAME = re.compile(r"need an extra tag", re.IGNORECASE)
"""The vocabulary's description of a tag that stands for a missing one (``<facet>::TODO``)."""


@dataclass(frozen=True)
class DebianFacetsConfig:
    """Every parameter of the build; ``collections: debian-facets:`` in params.yaml overrides them."""

    seed: int = 0                       # query subsample and folds
    architecture: str = "amd64"         # the Packages index read (binary-<architecture>)
    untagged: str = "leave-out"         # untagged source packages: leave-out | non-relevant
    anchor_links: int = 50              # names of depending sources in a document's anchor
    min_scope: int = 15                 # query: documents with the word in their title ...
    max_scope: int = 1000               # ... at least and at most
    min_name_docs: int = 1              # ... and source package names holding it as a word, at least
    min_adaptation: float = 0.22        # ... and bodies holding it twice among those holding it, at least
    run_fields: tuple[str, ...] = ("title", "body")
    k1: float = 1.2                     # BM25 of the initial run
    b: float = 0.75
    pool_depth: int = 100               # judged pool = stored run depth
    candidates: int = 50                # documents re-ranked (statistics of the data card)
    subtopic_facets: tuple[str, ...] = SUBTOPIC_FACETS
    excluded_tags: tuple[str, ...] = PACKAGING_TAGS
    placeholders: bool = False          # the vocabulary's placeholder tags may be subtopics (measurement only)
    min_tag_docs: int = 5               # pooled in-scope documents carrying a subtopic's tag, at least
    max_tag_share: float = 0.8          # ... and at most this share of the pooled in-scope tagged ones
    near_duplicate: float = 0.8         # Jaccard of two tags' pooled in-scope documents
    max_subtopics: int = 8
    min_subtopics: int = 3
    n_folds: int = 5
    max_queries: int | None = None      # seeded subsample of the kept queries (None = all)
    suggestions: int = 10               # level-1 suggestions per query
    refinements: int = 10               # level-2 suggestions per level-1 suggestion
    min_suggestion_docs: int = 2        # documents whose title holds a suggestion's words, at least
    pagerank_damping: float = 0.85

    @classmethod
    def from_params(cls, params: dict) -> "DebianFacetsConfig":
        """Defaults overridden by ``params["collections"]["debian-facets"]`` (unknown keys are an error)."""
        cfg = cls(**settings.overrides(cls, params, "debian-facets"))
        if cfg.untagged not in UNTAGGED:
            raise InputError("params.yaml", f"collections.debian-facets.untagged must be one of {UNTAGGED}")
        if not set(cfg.run_fields) <= {"title", "body", "anchor", "url"}:
            raise InputError("params.yaml", "collections.debian-facets.run_fields must be among title, body, anchor, url")
        if not 0.0 <= cfg.min_adaptation <= 1.0:
            raise InputError("params.yaml", "collections.debian-facets.min_adaptation must be in [0, 1]")
        return cfg


@dataclass(frozen=True)
class Indexes:
    """The archive indexes a build reads, with the snapshot they come from."""

    packages: pd.DataFrame
    translations: dict[tuple[str, str], str]
    vocabulary: Vocabulary
    release: Release
    checksums: dict[str, str] = field(default_factory=dict)   # file name -> SHA-256 as read


def read_indexes(directory: str | Path, architecture: str = "amd64") -> Indexes:
    """``Packages``, ``Translation-en`` (each plain or .xz/.gz/.bz2), ``vocabulary`` and ``InRelease`` of ``directory``.

    The two archive indexes must match the checksums ``InRelease`` lists for them.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(directory, "index directory not found (scripts/fetch_debian_indexes.sh fetches it)")
    release_file = directory / "InRelease"
    if not release_file.exists():
        raise InputError(release_file, "InRelease not found: it records the snapshot the indexes come from")
    release = read_release(release_file)
    packages, translations = index_file(directory, "Packages"), index_file(directory, "Translation-en")
    vocabulary = index_file(directory, "vocabulary")
    checksums = {
        f"main/binary-{architecture}/{packages.name}":
            verify(release, packages, f"main/binary-{architecture}/Packages", release_file),
        f"main/i18n/{translations.name}": verify(release, translations, "main/i18n/Translation-en", release_file),
    }
    checksums[f"debtags/{vocabulary.name}"] = sha256(vocabulary)
    return Indexes(read_packages(packages), read_translations(translations), read_vocabulary(vocabulary),
                   release, checksums)


# ---------------------------------------------------------------- documents
@dataclass(frozen=True)
class Documents:
    """The documents with what the build needs beside the ``docs`` table."""

    docs: pd.DataFrame                  # the docs table
    tags: list[list[str]]               # per document, its sorted tags
    untagged_sources: int               # untagged sources left out (0 when kept)


def _paragraphs(texts: list[str]) -> str:
    """The distinct paragraphs of ``texts``, in order, joined by blank lines."""
    seen: dict[str, None] = {}
    for text in texts:
        for para in text.split("\n\n"):
            if para.strip():
                seen.setdefault(para.strip(), None)
    return "\n\n".join(seen)


def _body(binaries: pd.DataFrame) -> str:
    """A source's body: its main binary's long description, then each other binary's synopsis and long one."""
    texts = [binaries["long"].iloc[0]]
    for synopsis, long in zip(binaries["synopsis"].iloc[1:], binaries["long"].iloc[1:]):
        texts += [synopsis, long]
    return _paragraphs(texts)


def dependency_graph(pk: pd.DataFrame, sources: pd.Index) -> sp.csr_matrix:
    """Boolean ``[sources, sources]``: a binary of the row source depends on one of the column source (no self-loops).

    A name that is a real package stands for its source; a virtual name for the sources of
    every package providing it.
    """
    real = pd.Series(pk["source"].to_numpy(), index=pk["package"].to_numpy())
    provided = pk[["source", "provides"]].explode("provides").dropna()
    provided = provided[~provided["provides"].isin(real.index)]
    target = pd.concat([pd.DataFrame({"name": real.index, "target": real.to_numpy()}),
                        provided.rename(columns={"provides": "name", "source": "target"})])
    deps = pk[["source", "depends"]].explode("depends").dropna().rename(columns={"depends": "name"})
    edges = deps.merge(target, on="name")[["source", "target"]]
    edges = edges[edges["source"] != edges["target"]].drop_duplicates()
    src, dst = sources.get_indexer(edges["source"]), sources.get_indexer(edges["target"])
    keep = (src >= 0) & (dst >= 0)
    n = len(sources)
    adj = sp.csr_matrix((np.ones(int(keep.sum()), dtype=bool), (src[keep], dst[keep])), shape=(n, n))
    adj.sum_duplicates()
    return adj


def build_docs(ix: Indexes, cfg: DebianFacetsConfig) -> Documents:
    """One document per source package (``Documents.docs`` in source-name order)."""
    pk = ix.packages.copy()
    pk["long"] = [ix.translations.get(key, "") for key in zip(pk["package"], pk["md5"])]
    pk["main"] = pk["package"] != pk["source"]
    pk["length"] = pk["package"].str.len()
    pk = pk.sort_values(["source", "main", "length", "package"]).reset_index(drop=True)
    groups = pk.groupby("source", sort=True)
    first = groups.head(1).set_index("source")
    tags = groups["tags"].agg(lambda ts: sorted(set(itertools.chain.from_iterable(ts))))
    homepage = pk[pk["homepage"] != ""].groupby("source")["homepage"].first()
    docs = pd.DataFrame({
        "docno": "deb-" + first.index.to_series(),
        "title": first.index + ": " + first["synopsis"],
        "body": groups[["synopsis", "long", "main"]].apply(_body),
        "url": homepage.reindex(first.index, fill_value="").to_numpy(),
    }).reset_index(drop=True)
    keep = np.ones(len(docs), dtype=bool)
    if cfg.untagged == "leave-out":
        keep = tags.str.len().to_numpy() > 0
    sources = first.index[keep]
    docs = docs[keep].reset_index(drop=True)
    adj = dependency_graph(pk[pk["source"].isin(sources)], sources)
    rank = pagerank(adj, cfg.pagerank_damping)
    docs["anchor"] = anchor_texts(adj, sources.to_numpy(), rank, cfg.anchor_links)   # sources are sorted by name
    docs["pagerank"] = rank
    docs["inlinks"] = np.asarray(adj.sum(axis=0)).ravel().astype(np.int64)
    docs["outlinks"] = np.asarray(adj.sum(axis=1)).ravel().astype(np.int64)
    docs = docs[["docno", "title", "body", "anchor", "url", "pagerank", "inlinks", "outlinks"]]
    return Documents(docs, tags[keep].tolist(), int((~keep).sum()))


# ------------------------------------------------------------------ queries
def title_words(titles: list[str]) -> tuple[sp.csr_matrix, pd.Index, dict[str, str]]:
    """Binary ``[docs, stems]`` of the titles' stems, the stems, and each stem's most frequent surface form."""
    surface = tokenize_many(titles, stem=False)
    forms = pd.Series(list(itertools.chain.from_iterable(surface)), dtype=object)
    counts = pd.DataFrame({"stem": forms.map(s_stem), "form": forms}).value_counts().reset_index()
    counts = counts.sort_values(["stem", "count", "form"], ascending=[True, False, True])
    form = dict(zip(counts.drop_duplicates("stem")["stem"], counts.drop_duplicates("stem")["form"]))
    stems = pd.Index(sorted(form), dtype=object)
    mat = count_matrix([[s_stem(t) for t in toks] for toks in surface], stems)
    mat.data[:] = 1.0
    return mat, stems, form


def adaptation(bodies: list[str], stems: pd.Index) -> np.ndarray:
    """``[stems]``: of the bodies holding the stem, the share holding it at least twice (0 where none holds it).

    Church's adaptation, Pr(k >= 2 | k >= 1) (Church, COLING 2000, "Empirical estimates of adaptation"):
    a word that names what a text is about tends to come back in it, a generic word
    ("simple", "create", "open") is used once in passing. It reads the documents' text only.
    """
    counts = count_matrix(tokenize_many(bodies), stems)
    holding = np.asarray((counts >= 1).sum(axis=0)).ravel()
    twice = np.asarray((counts >= 2).sum(axis=0)).ravel()
    return twice / np.maximum(holding, 1)


def candidate_queries(words: sp.csr_matrix, stems: pd.Index, form: dict[str, str], docs: pd.DataFrame,
                      cfg: DebianFacetsConfig) -> pd.DataFrame:
    """Query words, alphabetically by stem: ``stem, query, scope``, ``adaptation``.

    ``scope``: the indices of the documents whose title holds the word.

    ``docs``: the docs table (source package names from ``docno``, ``body`` for :func:`adaptation`).
    """
    df = np.asarray(words.sum(axis=0)).ravel()
    names = docs["docno"].str[len("deb-"):].tolist()
    in_names = np.asarray(count_matrix(tokenize_many(names), stems).astype(bool).sum(axis=0)).ravel()
    ok = (df >= cfg.min_scope) & (df <= cfg.max_scope) & (in_names >= cfg.min_name_docs)
    adapt = adaptation(docs["body"].tolist(), stems)
    ok &= adapt >= cfg.min_adaptation
    ok &= np.array([bool(re.fullmatch(r"[a-z]{3,}", s)) for s in stems])
    cols = np.flatnonzero(ok)
    by_col = words[:, cols].tocsc()
    return pd.DataFrame({
        "stem": stems[cols].to_numpy(),
        "query": [form[s] for s in stems[cols]],
        "scope": [by_col.indices[a:b] for a, b in zip(by_col.indptr[:-1], by_col.indptr[1:])],
        "adaptation": adapt[cols],
    })


def tag_words(tag: str) -> set[str]:
    """The analysed stems of a tag's name (``works-with::mail`` -> works, mail)."""
    return set(tokenize(tag))


def placeholder_tags(vocabulary: Vocabulary) -> set[str]:
    """Tags the vocabulary marks as standing for a missing tag: named ``...:TODO`` or described so.

    The vocabulary describes them "Need an extra tag". Debtags has one per facet (``admin::TODO``, ``devel::lang:TODO``): it says that the right tag
    does not exist yet, not what the package is about, so it is never a subtopic.
    """
    tags = vocabulary.tags
    return set(tags.loc[tags["name"].str.match(PLACEHOLDER_NAME) | tags["tag"].str.endswith(":TODO"), "tag"])


def choose_subtopics(pooled: pd.DataFrame, vocabulary: Vocabulary, cfg: DebianFacetsConfig) -> pd.DataFrame:
    """Official subtopics from ``pooled`` (``q, stem, doc, tag``: the tags of each pooled in-scope document).

    Returns ``q, tag, sid`` in subtopic order; queries with fewer than ``min_subtopics`` are absent.
    """
    excluded = set(cfg.excluded_tags) | (set() if cfg.placeholders else placeholder_tags(vocabulary))
    allowed = vocabulary.tags[vocabulary.tags["facet"].isin(cfg.subtopic_facets)
                              & ~vocabulary.tags["tag"].isin(excluded)]["tag"]
    words = {tag: tag_words(tag) for tag in allowed}
    tagged = pooled.groupby("q")["doc"].nunique()
    eligible = pooled[pooled["tag"].isin(words.keys())]
    eligible = eligible[np.array([stem not in words[tag] for stem, tag in zip(eligible["stem"], eligible["tag"])],
                                 dtype=bool)]
    counts = eligible.groupby(["q", "tag"]).size().rename("n").reset_index()
    counts = counts[(counts["n"] >= cfg.min_tag_docs)
                    & (counts["n"] <= cfg.max_tag_share * tagged.reindex(counts["q"]).to_numpy())]
    counts = counts.sort_values(["q", "n", "tag"], ascending=[True, False, True])
    docs_of = eligible.groupby(["q", "tag"])["doc"].agg(frozenset)
    rows = []
    for q, group in counts.groupby("q", sort=True):
        chosen: list[tuple[str, frozenset]] = []
        for tag in group["tag"]:
            docs = docs_of[(q, tag)]
            if all(len(docs & d) / len(docs | d) < cfg.near_duplicate for _, d in chosen):
                chosen.append((tag, docs))
            if len(chosen) == cfg.max_subtopics:
                break
        if len(chosen) >= cfg.min_subtopics:
            rows.extend((q, tag, str(i)) for i, (tag, _) in enumerate(chosen, start=1))
    return pd.DataFrame(rows, columns=["q", "tag", "sid"])


# -------------------------------------------------------------- suggestions
def build_suggestions(words: sp.csr_matrix, stems: pd.Index, form: dict[str, str], queries: pd.DataFrame,
                      cfg: DebianFacetsConfig) -> pd.DataFrame:
    """Query-log-like suggestions from the titles (names and synopses) of each query's scope.

    ``queries``: ``qid, stem, query, scope``. Level 1: ``"<query> <word>"`` for the words of the
    scope's titles held by at least ``min_suggestion_docs`` of them, by that count times the word's
    idf over all titles (a frequent phrase that is specific), ties alphabetical; up to
    ``suggestions``. Level 2: the level-1 string plus a word of the titles that hold both, ranked
    the same way; up to ``refinements``. Only title words are used: never a tag.
    """
    idf = np.log(words.shape[0] / np.maximum(np.asarray(words.sum(axis=0)).ravel(), 1.0))
    usable = np.array([bool(re.fullmatch(r"[a-z]{3,}", s)) for s in stems])
    rows = []
    for qid, stem, query, scope in queries[["qid", "stem", "query", "scope"]].itertuples(index=False):
        banned = {stems.get_loc(stem)}
        for j, (word, docs) in enumerate(_frequent(words, scope, idf, usable, banned, cfg, cfg.suggestions), 1):
            text = f"{query} {form[stems[word]]}"
            rows.append((qid, str(j), 1, "", text))
            refined = _frequent(words, docs, idf, usable, banned | {word}, cfg, cfg.refinements)
            rows.extend((qid, f"{j}.{i}", 2, str(j), f"{text} {form[stems[w]]}")
                        for i, (w, _) in enumerate(refined, start=1))
    return pd.DataFrame([row + (1.0,) for row in rows],
                        columns=["qid", "sugg_id", "level", "parent", "text", "weight"])


def _frequent(words: sp.csr_matrix, docs: np.ndarray, idf: np.ndarray, usable: np.ndarray, banned: set[int],
              cfg: DebianFacetsConfig, limit: int) -> list[tuple[int, np.ndarray]]:
    """Up to ``limit`` ``(word, documents of docs holding it)``: count >= min_suggestion_docs, by count x idf."""
    sub = words[docs]
    count = np.asarray(sub.sum(axis=0)).ravel()
    cand = np.flatnonzero((count >= cfg.min_suggestion_docs) & usable)
    cand = cand[~np.isin(cand, list(banned))]
    order = cand[np.lexsort((cand, -count[cand] * idf[cand]))][:limit]
    csc = sub[:, order].tocsc()
    return [(int(w), docs[csc.indices[a:b]]) for w, a, b in zip(order, csc.indptr[:-1], csc.indptr[1:])]


# -------------------------------------------------------------------- build
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
