"""The data card (``README.md``) of ``debian-facets`` and the measurements behind its choices.

:func:`card_stats` measures the built tables (so the shipped card's statistics can be checked
against the shipped tables without the archive indexes); :func:`measure_choices` rebuilds with
the alternatives the card compares (every facet as a subtopic source; untagged packages kept;
each cleaning rule turned off); :func:`data_card` renders it all into ``templates/debian_card.md``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from srdiv.collection.debian import Build, DebianFacetsConfig, build_debian_facets
from srdiv.collection.debian_docs import Indexes
from srdiv.collection.debian_topics import placeholder_tags
from srdiv.collection.schema import Collection
from srdiv.collection.templates import fill
from srdiv.collection.wordnet_card import _fmt, collection_stats
from srdiv.index.analysis import tokenize
from srdiv.metrics.names import HEADLINE

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
    docs = coll.docs_table()
    title_words = pd.Series([set(tokenize(t)) for t in docs["title"]], index=docs["docno"])
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
    docs = coll.docs_table()
    words = docs["title"].str.split().str.len() + docs["body"].str.split().str.len()
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
    docs = coll.docs_table()
    title_words = dict(zip(docs["docno"], (set(tokenize(t)) for t in docs["title"])))
    stem = {q: set(tokenize(w)) for q, w in zip(coll.topics["qid"], coll.topics["query"])}
    in_scope = np.array([stem[q] <= title_words[d] for q, d in zip(top["qid"], top["docno"])], dtype=bool)
    relevant = set(map(tuple, coll.qrels.loc[coll.qrels["rel"] > 0, ["qid", "docno"]].to_numpy()))
    is_rel = np.array([(q, d) in relevant for q, d in zip(top["qid"], top["docno"])], dtype=bool)
    return top, in_scope, is_rel


def _untagged_row(build: Build, cfg: DebianFacetsConfig) -> dict[str, float | str]:
    coll = build.collection
    stats = collection_stats(coll, cfg.candidates)
    untagged_docnos = set(coll.docs_table()["docno"][[not t for t in build.documents.tags]])
    top, in_scope, is_rel = _top_in_scope(coll, cfg.candidates)
    untagged = top["docno"].isin(untagged_docnos).to_numpy()
    tagged_scope = in_scope & ~untagged
    rate = is_rel[tagged_scope].mean() if tagged_scope.any() else 0.0
    n_q = len(coll.topics)
    return {
        "treatment": cfg.untagged,
        "documents": len(coll.docs_table()),
        "queries": n_q,
        "untagged share of the top 50": untagged.mean(),
        "untagged in-scope per query (top 50)": (untagged & in_scope).sum() / n_q,
        "relevant share of tagged in-scope (top 50)": rate,
        "missed relevant per query (estimate)": rate * (untagged & in_scope).sum() / n_q,
        "relevant per query (top 50)": stats[f"relevant documents per query (top {cfg.candidates})"],
        f"initial {HEADLINE}": stats[f"initial run (top {cfg.candidates}): {HEADLINE}"],
        f"ideal {HEADLINE}": stats[f"ideal re-ranking of the top {cfg.candidates}: {HEADLINE}"],
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
    without = {"placeholder tags are never subtopics":
               build_debian_facets(ix, dataclasses.replace(cfg, placeholders=True)),
               "generic words are never queries": build_debian_facets(ix, dataclasses.replace(cfg, min_adaptation=0.0))}
    rules: list[dict[str, Any]] = []
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


def _cell(v: object) -> str:
    """A number as the card writes numbers, a truth value as yes or no, anything else as its text."""
    if isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)):
        return _fmt(v.item() if isinstance(v, np.number) else v)
    return "yes" if v is True or v is np.True_ else "no" if v is False or v is np.False_ else str(v)


def _markdown(frame: pd.DataFrame) -> str:
    cells = [[_cell(v) for v in row] for row in frame.itertuples(index=False)]
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
    return fill("debian_card", cfg=cfg, rel=rel, sums=sums, params=params, excluded=excluded, packaging=packaging,
                run_fields=", ".join(cfg.run_fields), MATCH_PRECISION=MATCH_PRECISION, COMMANDLINE=COMMANDLINE,
                stats=stats_table(coll, cfg), placeholders=len(placeholder_tags(ix.vocabulary)),
                vocabulary_tags=len(ix.vocabulary.tags),
                generic=", ".join(f"{q} ({a:.3f})" for q, a in choices.generic.itertuples(index=False)),
                **{name: _markdown(getattr(choices, name))
                   for name in ("facets", "top_tags", "rules", "sweep", "facts", "untagged")})
