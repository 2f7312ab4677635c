"""The data card (``README.md``) of ``debian-facets`` and the measurements behind its choices.

:func:`card_stats` measures the built tables (so the shipped card's statistics can be checked
against the shipped tables without the archive indexes); :func:`measure_choices` rebuilds with
the alternatives the card compares (every facet as a subtopic source; untagged packages kept;
each cleaning rule turned off); :func:`data_card` renders it all.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from srdiv.collection.debian import Build, DebianFacetsConfig, Indexes, build_debian_facets, placeholder_tags
from srdiv.collection.schema import Collection
from srdiv.collection.wordnet_card import _fmt, collection_stats
from srdiv.index.analysis import tokenize

COMMANDLINE = "interface::commandline"
"""The tag that is a subtopic of most queries (the card states its share)."""
ADAPTATION_SWEEP = (0.1, 0.15, 0.2, 0.25, 0.3)
"""Thresholds of the generic-word rule the card compares with the chosen one."""
MATCH_PRECISION = 0.5
"""A suggestion matches a subtopic when at least this share of its pooled in-scope documents is relevant to it."""


def suggestion_match(coll: Collection) -> dict[str, float]:
    """How well the level-1 suggestions point at the official subtopics.

    A suggestion's documents are the query's pooled in-scope documents (the query word in their
    title) whose title also holds the suggestion's added word; it *matches* a subtopic when at least
    :data:`MATCH_PRECISION` of them are relevant to it and that share is above the subtopic's share
    of all pooled in-scope documents.
    """
    title_words = pd.Series([set(tokenize(t)) for t in coll.docs["title"]], index=coll.docs["docno"])
    query = coll.topics.set_index("qid")["query"]
    relevant = coll.qrels[coll.qrels["rel"] > 0]
    level1 = coll.suggestions[coll.suggestions["level"] == 1]
    with_docs = matched = 0
    best, base_best = [], []
    covered: set[tuple[str, str]] = set()
    pool = coll.run.groupby("qid")["docno"].agg(list)
    rel_of = relevant.groupby(["qid", "sid"])["docno"].agg(set)
    sids = coll.subtopics.groupby("qid")["sid"].agg(list)
    for qid, text in zip(level1["qid"], level1["text"]):
        stem = tokenize(query[qid])
        added = set(tokenize(text)) - set(stem)
        scope = [d for d in pool[qid] if set(stem) <= title_words[d]]
        docs = {d for d in scope if added and added <= title_words[d]}
        if not docs:
            continue
        with_docs += 1
        share = {s: len(docs & rel_of.get((qid, s), set())) / len(docs) for s in sids[qid]}
        base = {s: len(set(scope) & rel_of.get((qid, s), set())) / len(scope) for s in sids[qid]}
        top = max(share, key=lambda s: (share[s], s))
        best.append(share[top])
        base_best.append(max(base.values()))
        hits = [s for s in sids[qid] if share[s] >= MATCH_PRECISION and share[s] > base[s]]
        matched += bool(hits)
        covered.update((qid, s) for s in hits)
    return {
        "level-1 suggestions with pooled in-scope documents": with_docs / max(len(level1), 1),
        "of those, matching a subtopic": matched / max(with_docs, 1),
        "subtopics matched by a level-1 suggestion": len(covered) / max(len(coll.subtopics), 1),
        "best subtopic share of a suggestion's documents (mean)": float(np.mean(best)) if best else 0.0,
        "best subtopic share of the query's documents (mean, baseline)": float(np.mean(base_best)) if best else 0.0,
    }


def card_stats(coll: Collection, cfg: DebianFacetsConfig) -> dict[str, float]:
    """The card's measured numbers: :func:`collection_stats`, document lengths and the suggestion match."""
    words = coll.docs["title"].str.split().str.len() + coll.docs["body"].str.split().str.len()
    stats = collection_stats(coll, cfg.candidates)
    stats = {
        **{k: v for k, v in stats.items() if k in ("queries", "documents")},
        "words per document (title and body, mean)": words.mean(),
        "words per document (median)": words.median(),
        **{k: v for k, v in stats.items() if k not in ("queries", "documents")},
    }
    stats.update({f"suggestions: {k}": v for k, v in suggestion_match(coll).items()})
    return stats


def stats_table(coll: Collection, cfg: DebianFacetsConfig) -> str:
    """The card's statistics as Markdown table rows."""
    return "\n".join(f"| {name} | {_fmt(value)} |" for name, value in card_stats(coll, cfg).items())


@dataclass(frozen=True)
class Choices:
    """What the card compares: per-facet numbers and the two treatments of untagged packages."""

    facets: pd.DataFrame                # facet, documents (share), subtopics (every facet allowed), allowed
    top_tags: pd.DataFrame              # tag, subtopics: the most chosen tags when every facet is allowed
    untagged: pd.DataFrame              # one row per treatment: the measured numbers
    rules: pd.DataFrame                 # one row per cleaning rule: the copy built without it, what it removes
    sweep: pd.DataFrame                 # min_adaptation, queries, subtopics (per query)
    generic: pd.DataFrame               # the words the generic-word rule removes: query, adaptation
    facts: pd.DataFrame                 # per build: commandline share, in-scope candidates with no subtopic


def _top_in_scope(coll: Collection, candidates: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The top ``candidates`` of the run, whether each is in its query's scope, and whether it is relevant."""
    top = coll.run[coll.run["rank"] <= candidates]
    title_words = dict(zip(coll.docs["docno"], (set(tokenize(t)) for t in coll.docs["title"])))
    stem = {q: set(tokenize(w)) for q, w in zip(coll.topics["qid"], coll.topics["query"])}
    in_scope = np.array([stem[q] <= title_words[d] for q, d in zip(top["qid"], top["docno"])], dtype=bool)
    relevant = set(map(tuple, coll.qrels.loc[coll.qrels["rel"] > 0, ["qid", "docno"]].to_numpy()))
    is_rel = np.array([(q, d) in relevant for q, d in zip(top["qid"], top["docno"])], dtype=bool)
    return top, in_scope, is_rel


def _untagged_row(build: Build, cfg: DebianFacetsConfig) -> dict[str, float]:
    coll = build.collection
    stats = collection_stats(coll, cfg.candidates)
    untagged_docnos = set(coll.docs["docno"][[not t for t in build.documents.tags]])
    top, in_scope, is_rel = _top_in_scope(coll, cfg.candidates)
    untagged = top["docno"].isin(untagged_docnos).to_numpy()
    tagged_scope = in_scope & ~untagged
    rate = is_rel[tagged_scope].mean() if tagged_scope.any() else 0.0
    n_q = len(coll.topics)
    return {
        "treatment": cfg.untagged,
        "documents": len(coll.docs),
        "queries": n_q,
        "untagged share of the top 50": untagged.mean(),
        "untagged in-scope per query (top 50)": (untagged & in_scope).sum() / n_q,
        "relevant share of tagged in-scope (top 50)": rate,
        "missed relevant per query (estimate)": rate * (untagged & in_scope).sum() / n_q,
        "relevant per query (top 50)": stats[f"relevant documents per query (top {cfg.candidates})"],
        "initial alpha_nDCG@20": stats[f"initial run (top {cfg.candidates}): alpha_nDCG@20"],
        "ideal alpha_nDCG@20": stats[f"ideal re-ranking of the top {cfg.candidates}: alpha_nDCG@20"],
    }


def facts(build: Build, cfg: DebianFacetsConfig) -> dict[str, float]:
    """Queries, subtopics, the share of queries with an ``interface::commandline`` subtopic, and the
    share of in-scope candidates (top ``candidates``) relevant to no subtopic."""
    coll = build.collection
    _, in_scope, is_rel = _top_in_scope(coll, cfg.candidates)
    commandline = build.subtopic_tags.loc[build.subtopic_tags["tag"] == COMMANDLINE, "qid"].nunique()
    return {
        "queries": len(coll.topics),
        "subtopics": len(coll.subtopics),
        f"queries with the {COMMANDLINE} subtopic": commandline / max(len(coll.topics), 1),
        f"in-scope candidates (top {cfg.candidates}) relevant to no subtopic":
            float((~is_rel[in_scope]).mean()) if in_scope.any() else 0.0,
    }


def _cleaning(ix: Indexes, build: Build, cfg: DebianFacetsConfig) -> tuple[pd.DataFrame, ...]:
    """Rebuild without each cleaning rule: what each removes, the generic-word threshold's sweep, the facts.

    A query's subtopics do not depend on the other queries, so the build without the generic-word
    rule gives every threshold's queries: those whose adaptation reaches it.
    """
    placeholders = placeholder_tags(ix.vocabulary)
    without = {"placeholder tags are never subtopics": build_debian_facets(ix, dataclasses.replace(cfg, placeholders=True)),
               "generic words are never queries": build_debian_facets(ix, dataclasses.replace(cfg, min_adaptation=0.0))}
    rules = []
    for rule, other in without.items():
        placeholder = other.subtopic_tags["tag"].isin(placeholders)
        rules.append({"rule": rule, "queries without it": len(other.collection.topics),
                      "subtopics without it": len(other.collection.subtopics),
                      "placeholder subtopics without it": int(placeholder.sum()),
                      "queries removed": len(other.collection.topics) - len(build.collection.topics),
                      "subtopics removed": len(other.collection.subtopics) - len(build.collection.subtopics)})
    every = without["generic words are never queries"]
    sizes = every.queries.assign(subtopics=every.queries["qid"].map(every.subtopic_tags.groupby("qid").size()))
    sweep = pd.DataFrame([{"min_adaptation": f"{t:g}", "queries": int((sizes["adaptation"] >= t).sum()),
                           "subtopics per query": sizes.loc[sizes["adaptation"] >= t, "subtopics"].mean()}
                          for t in sorted({0.0, *ADAPTATION_SWEEP, cfg.min_adaptation})])
    generic = sizes.loc[sizes["adaptation"] < cfg.min_adaptation, ["query", "adaptation"]]
    generic = generic.sort_values(["adaptation", "query"]).reset_index(drop=True)
    facts_rows = pd.DataFrame([{"build": name, **facts(b, cfg)} for name, b in
                               (("this copy", build), ("placeholder tags allowed", without[rules[0]["rule"]]),
                                ("generic words allowed", every))])
    return pd.DataFrame(rules), sweep, generic, facts_rows


def measure_choices(ix: Indexes, build: Build, cfg: DebianFacetsConfig) -> Choices:
    """Rebuild with every facet allowed, with the other treatment of untagged packages and without each
    cleaning rule, and measure them."""
    vocab = ix.vocabulary
    every = build_debian_facets(ix, dataclasses.replace(cfg, subtopic_facets=tuple(vocab.facets["facet"]),
                                                        excluded_tags=()))
    tags = pd.Series(build.documents.tags).explode().dropna()
    carried = tags.str.split("::").str[0].groupby(level=0).unique().explode().value_counts()
    chosen = every.subtopic_tags["tag"]
    facets = pd.DataFrame({"facet": vocab.facets["facet"]})
    facets["documents"] = facets["facet"].map(carried).fillna(0).to_numpy() / len(build.documents.tags)
    facets["subtopics"] = facets["facet"].map(chosen.str.split("::").str[0].value_counts()).fillna(0).astype(int)
    facets["allowed"] = facets["facet"].isin(cfg.subtopic_facets)
    facets = facets.sort_values(["subtopics", "documents", "facet"], ascending=[False, False, True])
    top_tags = chosen.value_counts().rename_axis("tag").reset_index(name="subtopics").head(12)
    other = "non-relevant" if cfg.untagged == "leave-out" else "leave-out"
    alternative = build_debian_facets(ix, dataclasses.replace(cfg, untagged=other))
    untagged = pd.DataFrame([_untagged_row(build, cfg),
                             _untagged_row(alternative, dataclasses.replace(cfg, untagged=other))])
    return Choices(facets.reset_index(drop=True), top_tags, untagged, *_cleaning(ix, build, cfg))


def _markdown(frame: pd.DataFrame) -> str:
    cells = [[_fmt(v) if isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) else
              ("yes" if v is True or v is np.True_ else "no" if v is False or v is np.False_ else str(v))
              for v in row] for row in frame.itertuples(index=False)]
    head = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * len(frame.columns)
    return head + "\n" + "\n".join("| " + " | ".join(row) + " |" for row in cells)


def data_card(build: Build, cfg: DebianFacetsConfig, choices: Choices) -> str:
    """The collection's ``README.md``: snapshot, construction, measured statistics and choices, licence."""
    coll, ix = build.collection, build.indexes
    rel = ix.release
    sums = "\n".join(f"| `{name}` | `{digest}` |" for name, digest in ix.checksums.items())
    params = "\n".join(f"| `{name}` | `{value}` |" for name, value in vars(cfg).items())
    excluded = ", ".join(f"`{f}`" for f in choices.facets["facet"] if f not in cfg.subtopic_facets)
    packaging = ", ".join(f"`{t}`" for t in cfg.excluded_tags)
    return f"""\
# debian-facets

An open *faceted* search result diversification collection of running text,
built from Debian's package indexes: a source package is a document (its
binaries' descriptions), a word of package names and synopses is a query, and
the Debtags tags of the query's packages are its official subtopics. The
labels come from curated metadata (Debtags), not from the text the models read.

## Archive snapshot

Debian {rel.version} ({rel.codename}) main, `InRelease` dated {rel.date}; the
Debtags vocabulary of the `debtags` package. SHA-256 of the files read (the
archive's checksums, as its `InRelease` lists them):

| file | SHA-256 |
|---|---|
{sums}

Rebuild it with

    scripts/fetch_debian_indexes.sh work/debian-indexes
    srdiv collection debian-facets --indexes work/debian-indexes --params params.yaml --out data/collections/debian-facets

The script fetches the indexes with apt from Debian's archive (bookworm main,
with `Acquire::Languages=en` so that `Translation-en` is downloaded) and the
`debtags` package, and checks them against the checksums above; the builder
checks `Packages` and `Translation-en` against the `InRelease` beside them. The
build is deterministic; the test suite rebuilds it when the indexes are present
and compares it with this copy. When the archive has moved to a later point
release, fetch the indexes of the date above from Debian's snapshot archive.

## Construction

1. **Documents**: one per source package (`docno` `deb-<source>`). `title` =
   `<source>: <synopsis of its main binary>` (the binary named as the source,
   else the shortest name); `body` = the distinct paragraphs of the main
   binary's long description (`Translation-en`), then of each other binary's
   synopsis and long description; `url` = the upstream homepage; `anchor` = the
   names of up to {cfg.anchor_links} source packages that depend on it, highest
   PageRank first. Links: a binary's `Pre-Depends`, `Depends` and `Recommends`
   (every alternative; a virtual name stands for the packages providing it)
   link its source to the target's source; `pagerank` (damping
   {cfg.pagerank_damping}), `inlinks` and `outlinks` come from that graph
   (distinct pairs, self-links dropped). A document's tags are the union of its
   binaries' Debtags (`Tag:` of `Packages`, architecture {cfg.architecture}).
   Untagged source packages: `{cfg.untagged}` (see below).
2. **Queries**: analysed words (`[a-z]{{3,}}`, S-stemmed) of the titles whose
   *scope*, the documents holding the word in their title (name or synopsis),
   has {cfg.min_scope} to {cfg.max_scope} documents, that are a word of at
   least {cfg.min_name_docs} source package name(s), and that are not generic:
   of the bodies holding the word, at least {cfg.min_adaptation:g} hold it twice
   (its *adaptation*, see below); the query string is the word's most
   frequent form. `type` = `faceted`, `description` = `Debian
   packages about '<word>'`.
3. **Initial run** (`run`): BM25 (k1 = {cfg.k1:g}, b = {cfg.b:g}) over
   {', '.join(cfg.run_fields)} (shared analyser: lowercase alphanumeric tokens,
   stopwords removed, S-stemmer), hits only, stored to depth
   {cfg.pool_depth}: all of it is the judged pool, its top {cfg.candidates} are
   the candidates re-rankers see.
4. **Official subtopics** (`subtopics`): tags of the allowed facets (below)
   that are not placeholders (below) and do not contain the query word, carried by at least {cfg.min_tag_docs}
   pooled in-scope documents and by at most {cfg.max_tag_share:g} of the pooled
   in-scope tagged ones (a tag nearly all of them carry is the query itself, not
   a facet of it); most frequent first, a tag whose pooled in-scope documents
   overlap a chosen tag's with Jaccard >= {cfg.near_duplicate:g} is a near
   duplicate and dropped; up to {cfg.max_subtopics}; queries with fewer than
   {cfg.min_subtopics} are dropped. `text` = the tag's name and description in
   the Debtags vocabulary. **Relevance**: a document is relevant to a subtopic
   when it is in the query's scope and carries the tag; `qrels` judge every
   (subtopic, pooled document) pair, grades 0/1. `qid`s number the kept
   queries alphabetically.
5. **Suggestions** (what the models see, as a query log would offer them):
   level 1, up to {cfg.suggestions} per query, `<query> <word>` for the words of
   the scope's titles (names and synopses) held by at least
   {cfg.min_suggestion_docs} of them, ranked by that count times the word's idf
   over all titles; level 2, up to {cfg.refinements} per level-1 suggestion, the
   level-1 string plus a word of the titles holding both, ranked the same way.
   Only title words are used, never a tag; `weight` is uniform.
6. **Folds**: the queries shuffled with seed {cfg.seed} and dealt into
   {cfg.n_folds} folds.

## Statistics

Measured on this copy by `srdiv.collection.debian_card.card_stats` (official
measures as TREC's ndeval computes them, alpha = beta = 0.5; words are
whitespace-separated). The last rows measure how the suggestions match the
facets: a level-1 suggestion's documents are the query's pooled in-scope
documents whose title also holds its added word; it matches a subtopic when at
least {MATCH_PRECISION:g} of them are relevant to it, above the subtopic's share of
all the query's pooled in-scope documents.

| statistic | value |
|---|---|
{stats_table(coll, cfg)}

## Which facets serve as subtopics

Facets that say what a package is for, works with or runs as may be
subtopics; facets that say what kind of package it is or how it is made are
tagging quirks for a query: `role` (program, shared library, development
library) splits nearly every scope the same way, `implemented-in` and `scope`
describe the code, not the need, and `made-of`, `suite`, `special`,
`system`, `iso15924`, `secteam`, `junior`, `accessibility` are rare or
administrative (tags outside the vocabulary, such as `privacy::`, have no
description and are never subtopics). Left out: {excluded}. Within allowed facets, {packaging}
repeat `role` (a library, documentation) and are left out too. Measured with
every facet and tag allowed (same rules otherwise): the share of documents
carrying a tag of the facet, and how many subtopics it would give.

{_markdown(choices.facets)}

The tags chosen most often when every facet is allowed:

{_markdown(choices.top_tags)}

## Cleaning rules

**Placeholder tags are never subtopics.** The vocabulary has a tag for a
missing tag in each facet: named `<facet>::TODO` (or `devel::lang:TODO`) and
described "Need an extra tag". It says that the right tag does not exist yet,
not what a package is about. The rule reads the vocabulary: a tag named
`...:TODO` or described so is a placeholder ({len(placeholder_tags(ix.vocabulary))} of its
{len(ix.vocabulary.tags)} tags). Where a placeholder was a subtopic, the next
eligible tag may take its place.

**Generic words are never queries.** A word that names what a package is
about tends to come back in its description; a generic word ("simple",
"create", "open") is used once in passing. The rule measures that from the
documents' text alone, never from tags or judgments: a word's *adaptation*
(Church, COLING 2000) is the share of the bodies holding it that hold it at
least twice (analysed tokens, as the initial run's); a word below
`min_adaptation` = {cfg.min_adaptation:g} is not a query.

Each rule measured by building this copy without it (everything else the same):

{_markdown(choices.rules)}

The queries (and mean subtopics per query) at other thresholds; a query's
subtopics do not depend on the other queries, so these come from the build
without the rule:

{_markdown(choices.sweep)}

The words the rule removes, with their adaptation:
{", ".join(f"{q} ({a:.3f})" for q, a in choices.generic.itertuples(index=False))}.

The threshold was chosen by measurement against an outside judge of
genericness: `scripts/measure_generic_words.py` labels each candidate word by
whether WordNet's sense-tagged uses of it are mostly as a noun, and measures,
at each threshold, the share of removed words used mostly as adjective, verb
or adverb and the share of those words removed
(`docs/debian-facets.md` holds its table and the choice).

The facts of the collection that the cleaning concerns, on this copy and on
the builds without each rule: how many queries have `{COMMANDLINE}` as a
subtopic (most Debian programs run on the command line, so a scope of programs
splits into command-line ones and others), and the share of the in-scope
candidates (the query word in their title, in the top {cfg.candidates}) that
carry none of their query's subtopic tags (they carry only tags that are not
subtopics: other facets, tags too rare in the scope or near duplicates):

{_markdown(choices.facts)}

## What the inputs give away, beside TREC

The repository's `docs/leakage.md` measures, for this collection, for
wordnet-div and for the TREC Web Track 2009-2012, what the suggestions and
relevance features a model reads tell about the judgments (method and
command on that page). The suggestions are phrases of the scope's titles and
read no tag. Where this collection's figures stand apart from TREC's, the
reason is its construction, not a path from the judgments to an input:

- *Title features separate relevant candidates better than on TREC.* A
  document is relevant only inside the query's scope, the packages whose title
  holds the query word, so a title match is part of what relevance means here,
  as a Web page about a topic names it in its title; the features read the
  title's text, not the tags.
- *Chance levels are higher.* A few tags (`interface::commandline` above all)
  are subtopics of most queries, so another query's subtopics often share a
  word with a suggestion; and nearly half the candidates are relevant, so
  naming a relevant one by chance is likelier than on TREC.
- *The official subtopics make weak aspects as text.* A subtopic's text is its
  tag's short description ("Command Line"), whose words seldom occur in
  package descriptions, so xQuAD gains little from them and the share of the
  oracle gain (figure 4) says little on this collection.

## Untagged packages

About half of the binary packages carry no Debtags, so no relevance can be
read from their tags. Kept in the collection, they would be judged
non-relevant to every subtopic whatever they are; left out, every candidate is
judged from its own tags. Measured on the two builds (the missed relevant
documents are estimated as the untagged in-scope candidates times the relevant
share of tagged in-scope candidates):

{_markdown(choices.untagged)}

This copy uses `{cfg.untagged}`: untagged source packages are not documents of
the collection, so the judgments are complete with respect to the tagging.

## Build parameters

`collections: debian-facets:` in `params.yaml` overrides these.

| parameter | value |
|---|---|
{params}

## Licence

Every document is the description of a package of Debian's main archive
area, which holds only software that meets the Debian Free Software
Guidelines; a package's description is part of its source (the
`debian/control` file) and is covered by the free licence under which Debian
distributes that package, which permits redistribution and modification. This collection
redistributes those descriptions unchanged (paragraphs of a source's binaries
joined) with the packages' names, homepages and relations, as Debian's archive
itself redistributes them in its `Packages` and `Translation-en` indexes. The
per-package copyright and licence of each description are in that package's
`copyright` file in Debian. The Debtags tags come from `Packages`; the
subtopic texts are the tag descriptions of the Debtags vocabulary in the
`debtags` package (GPL-2, Enrico Zini et al.).
"""
