"""A planted collection: synthetic text whose subtopic structure, and so what every model reads, is known.

Each query has a query word of its own and ``subtopics`` aspects drawn from a shared pool of ``3 *
subtopics`` aspects, each aspect a vocabulary of its own pseudo-words (plus one background vocabulary every
document draws from). Its ``candidates`` documents are written from that structure:

- a relevant document is written from one of the query's aspects: its body mixes words of that aspect with
  background words and carries the query word 1 + Poisson(2) times; its title is the query word and two
  aspect words. It is relevant (grade 1) to that subtopic and no other. Half the candidates are relevant,
  shared among the subtopics in proportion to 1, 1/4, ..., 1/S^2 (the first subtopic dominates: 19, 4, 1,
  1 of 25 with four subtopics);
- a non-relevant candidate is written the same way from an aspect the query does not have, with the query
  word Poisson(1) times (it may match the query, as a first-stage false positive does);
- ``noise`` is the share of each document's aspect words drawn from another aspect instead (any of the
  pool's), and of each suggestion's words;
- suggestions: per subtopic one level-1 suggestion (the query word and two of its aspect's words) with two
  level-2 children (two more each);
- the initial run scores a document 0.5 rel + dominant + 3 noise N(0, 1) (rel, dominant: 0 or 1): the
  dominant subtopic's documents first, then the other relevant ones, some of each out of place; good, but
  not diversified. With noise 0.3 its top 20, on which the supervised rows train, holds non-relevant
  documents (about one in five) and the minor subtopics too; with noise 0 it would hold the dominant
  subtopic's documents only.
Nothing is planted in the features or vectors: the pipeline's text stages (doc2vec/LDA, pseudo-documents,
the 18 relevance features, diversity features) derive them from this text, so a model that learns here
learns from what the whole pipeline computes. Every candidate is judged, every relevant document is a
candidate, so the ideal re-ranking of the candidates scores alpha-nDCG@20 = 1. URLs name only the
document (no subtopic signal), and documents carry no link graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from srdiv.collection.schema import Collection
from srdiv.io import InputError

ASPECT_WORDS = 40       # words per aspect vocabulary
BACKGROUND_WORDS = 300  # words of the background vocabulary
BODY_ASPECT = 24        # aspect words per document body
BODY_BACKGROUND = 16    # background words per document body


@dataclass(frozen=True)
class PlantedConfig:
    """The knobs of :func:`build_planted` (params.yaml ``datasets.<name>.build``, ``kind: planted``)."""

    queries: int = 16       # topics, all judged
    subtopics: int = 4      # subtopics (aspects) per query
    candidates: int = 50    # documents per query: the initial run's length (half of them relevant)
    noise: float = 0.3      # share of a text's aspect words drawn from another aspect; run score noise
    folds: int = 2          # folds the queries are dealt into
    seed: int = 42

    def check(self, where: str = "planted") -> None:
        """An :class:`InputError` naming the first knob out of its range."""
        rules = [("queries", self.queries >= self.folds, f">= folds ({self.folds})"),
                 ("subtopics", self.subtopics >= 2, ">= 2"),
                 ("candidates", self.candidates >= 2 * self.subtopics, f">= 2 * subtopics ({2 * self.subtopics})"),
                 ("noise", 0.0 <= self.noise < 1.0, "in [0, 1)"),
                 ("folds", self.folds >= 2, ">= 2"),
                 ("seed", self.seed >= 0, ">= 0")]
        for name, ok, rule in rules:
            if not ok:
                raise InputError(where, f"--{name} {getattr(self, name)}: must be {rule}")


def pseudo_words(rng: np.random.Generator, n: int, taken: set[str]) -> list[str]:
    """``n`` new pronounceable words (consonant-vowel syllables ending in a consonant other than ``s``, which
    the stemmer would strip), none in ``taken`` (which they join)."""
    cons, vows, ends = list("bdfgklmnprtvz"), list("aeiou"), list("bdkmnprtx")
    out: list[str] = []
    while len(out) < n:
        syllables = rng.integers(2, 4)
        word = "".join(rng.choice(cons) + rng.choice(vows) for _ in range(syllables)) + rng.choice(ends)
        if word not in taken:
            taken.add(word)
            out.append(word)
    return out


def subtopic_sizes(relevant: int, subtopics: int) -> np.ndarray:
    """Relevant documents per subtopic, in proportion to 1, 1/4, ..., 1/S^2, each at least 1, summing to
    ``relevant``."""
    weights = 1.0 / np.arange(1, subtopics + 1) ** 2
    sizes = np.maximum(1, np.floor(relevant * weights / weights.sum())).astype(int)
    sizes[0] += relevant - sizes.sum()
    return sizes


def build_planted(cfg: PlantedConfig) -> Collection:
    """The planted collection of ``cfg`` (deterministic for ``cfg.seed``; see the module's description)."""
    cfg.check()
    rng = np.random.default_rng(cfg.seed)
    taken: set[str] = set()
    n_aspects = 3 * cfg.subtopics
    aspects = [pseudo_words(rng, ASPECT_WORDS, taken) for _ in range(n_aspects)]
    background = pseudo_words(rng, BACKGROUND_WORDS, taken)
    query_words = pseudo_words(rng, cfg.queries, taken)

    def aspect_words(aspect: int, n: int) -> list[str]:
        """``n`` words of ``aspect``, each from another aspect of the pool with probability ``noise``."""
        swap = rng.random(n) < cfg.noise
        source = np.where(swap, rng.integers(0, n_aspects, n), aspect)
        return [aspects[a][rng.integers(ASPECT_WORDS)] for a in source]

    topics, subtopics, suggestions, qrels, run, docs = [], [], [], [], [], []
    relevant = cfg.candidates // 2
    for q in range(cfg.queries):
        qid, word = str(q + 1), query_words[q]
        chosen = rng.permutation(n_aspects)
        mine, others = chosen[:cfg.subtopics], chosen[cfg.subtopics:]
        topics.append((qid, word, f"planted query {qid}: {cfg.subtopics} aspects of '{word}'", "faceted"))
        for s, aspect in enumerate(mine):
            sid = str(s + 1)
            subtopics.append((qid, sid, f"{word} " + " ".join(aspects[aspect][:8])))
            suggestions.append((qid, sid, 1, "", " ".join([word, *aspect_words(aspect, 2)]), 1.0))
            for j in range(2):
                suggestions.append((qid, f"{sid}.{j + 1}", 2, sid, " ".join([word, *aspect_words(aspect, 2)]), 1.0))
        # (subtopic index or -1, aspect) of each candidate: the relevant ones, then the rest
        labels = [(s, mine[s]) for s, size in enumerate(subtopic_sizes(relevant, cfg.subtopics)) for _ in range(size)]
        labels += [(-1, others[rng.integers(len(others))]) for _ in range(cfg.candidates - relevant)]
        score = []
        for d, (s, aspect) in enumerate(labels):
            docno = f"pl-{qid}-{d + 1:03d}"
            hits = 1 + rng.poisson(2.0) if s >= 0 else rng.poisson(1.0)
            body = aspect_words(aspect, BODY_ASPECT) + list(rng.choice(background, BODY_BACKGROUND)) + [word] * hits
            body = [body[i] for i in rng.permutation(len(body))]
            title = " ".join([word, *aspect_words(aspect, 2)])
            docs.append((docno, title, " ".join(body), " ".join(aspect_words(aspect, 3)), f"planted/{qid}/{docno}"))
            for t in range(cfg.subtopics):
                qrels.append((qid, str(t + 1), docno, int(t == s), int(t == s)))
            score.append(0.5 * (s >= 0) + 1.0 * (s == 0) + 3.0 * cfg.noise * rng.standard_normal())
        order = np.argsort(-np.asarray(score), kind="stable")
        run += [(qid, f"pl-{qid}-{i + 1:03d}", r + 1, score[i]) for r, i in enumerate(order)]
    deal = rng.permutation(cfg.queries)
    folds = [(str(q + 1), int(rank % cfg.folds) + 1) for rank, q in enumerate(deal)]

    def frame(rows, table):
        return pd.DataFrame(rows, columns=table)

    return Collection(
        topics=frame(topics, ["qid", "query", "description", "type"]),
        subtopics=frame(subtopics, ["qid", "sid", "text"]),
        suggestions=frame(suggestions, ["qid", "sugg_id", "level", "parent", "text", "weight"]),
        qrels=frame(qrels, ["qid", "sid", "docno", "grade", "rel"]),
        run=frame(run, ["qid", "docno", "rank", "score"]),
        folds=frame(folds, ["qid", "fold"]).sort_values("qid", key=lambda c: c.astype(int)).reset_index(drop=True),
        docs=frame(docs, ["docno", "title", "body", "anchor", "url"]))
