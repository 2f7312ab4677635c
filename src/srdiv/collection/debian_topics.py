"""``debian-facets`` queries, official subtopics and suggestions, from titles, bodies and Debtags."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import scipy.sparse as sp

from srdiv.collection.debian_config import DebianFacetsConfig
from srdiv.collection.debian_files import Vocabulary
from srdiv.index.analysis import s_stem, tokenize, tokenize_many
from srdiv.index.sparse import count_matrix

PLACEHOLDER_NAME = re.compile(r"need an extra tag", re.IGNORECASE)
"""The vocabulary's description of a tag that stands for a missing one (``<facet>::TODO``)."""


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

    The vocabulary describes them "Need an extra tag". Debtags has one per facet (``admin::TODO``,
    ``devel::lang:TODO``): it says that the right tag does not exist yet, not what the package is about, so it
    is never a subtopic.
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
    rows: list[tuple[str, str, str]] = []
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
