"""Query suggestions from document text alone: completions ranked by popularity.

A search engine suggests what its users typed, and users type what they read:
``"bass guitar"`` is suggested for ``bass`` because many people searched for it.
With no query log, the text stands in for one. Every text is cut into
*segments* at punctuation (``, ; : . ! ? ( ) [ ] " /`` and line breaks), so a
phrase never spans a list of lemmas or two clauses; a segment's words are the
maximal runs of ``[a-z0-9]`` after lower-casing.

* **Level 1** (up to ``suggestions`` per query): the two-word phrases
  ``"<query> <w>"`` and ``"<w> <query>"`` of the segments, where ``w`` is a
  word of three or more letters (``[a-z]{3,}``), not a stopword, not the query
  word or its plural. Ranked by *popularity*, the number of documents whose
  text holds the phrase, then alphabetically; a phrase held by fewer than
  ``min_docs`` documents is not suggested.
* **Level 2** (up to ``refinements`` per level-1 suggestion): the three-word
  phrases that extend a level-1 phrase by one such word on either side, ranked
  the same way.

Nothing here reads judgments, subtopics, senses, tags or links: only the
documents' text fields and the query strings. So, as real suggestions do, the
builder repeats dominant intents and misses rare ones.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from srdiv.index.analysis import STOPWORDS, s_stem

SEGMENT = re.compile(r"[,;:.!?()\[\]\"/\n|]+")
WORD = re.compile(r"[a-z0-9]+")
COMPLETION = re.compile(r"[a-z]{3,}")
COLUMNS = ["qid", "sugg_id", "level", "parent", "text", "weight"]


@dataclass(frozen=True)
class CompletionSettings:
    """How many suggestions per query and per level-1 suggestion, and the popularity floor."""

    suggestions: int = 10
    refinements: int = 10
    min_docs: int = 2


def segments(text: str) -> list[list[str]]:
    """The word lists of a text's segments (see the module docstring)."""
    return [words for part in SEGMENT.split(text.lower()) if (words := WORD.findall(part))]


def phrase_popularity(texts: list[str], n: int) -> Counter:
    """Number of texts holding each ``n``-word phrase (space-joined) within one segment."""
    counts: Counter = Counter()
    for text in texts:
        found: set[str] = set()
        for words in segments(text):
            found.update(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
        counts.update(found)
    return counts


class Extensions:
    """The ``n``-word phrases of some texts, found by the ``n - 1`` words they extend on the left or right."""

    def __init__(self, texts: list[str], n: int) -> None:
        self.by_stem: dict[str, list[tuple[str, str, int]]] = {}
        for phrase, count in phrase_popularity(texts, n).items():
            head, _, last = phrase.rpartition(" ")
            first, _, tail = phrase.partition(" ")
            self.by_stem.setdefault(head, []).append((phrase, last, count))
            self.by_stem.setdefault(tail, []).append((phrase, first, count))

    def ranked(self, phrase: str, min_docs: int, limit: int) -> list[str]:
        """Up to ``limit`` extensions of ``phrase`` by one completing word, most popular first, then alphabetically.

        A completing word has three or more letters, is not a stopword, and is
        not (up to the plural) a word of ``phrase``.
        """
        taken = {s_stem(w) for w in phrase.split()}
        found = {(-count, longer) for longer, word, count in self.by_stem.get(phrase, ())
                 if count >= min_docs and COMPLETION.fullmatch(word) and word not in STOPWORDS
                 and s_stem(word) not in taken}
        return [longer for _, longer in sorted(found)[:limit]]


def completion_suggestions(texts: Iterable[str], queries: pd.DataFrame,
                           cfg: CompletionSettings = CompletionSettings()) -> pd.DataFrame:
    """The ``suggestions`` table (uniform weights) for ``queries`` (``qid, query``) from ``texts``.

    ``texts``: one string per document (its text fields joined). A multi-word
    query is completed the same way, by a word before or after the whole query.
    """
    texts = list(texts)
    phrases = {qid: " ".join(WORD.findall(query.lower())) for qid, query in zip(queries["qid"], queries["query"])}
    sizes = {len(p.split()) for p in phrases.values() if p}
    index = {n: Extensions(texts, n) for n in sorted({m + 1 for m in sizes} | {m + 2 for m in sizes})}
    rows = []
    for qid, q in phrases.items():
        if not q:
            continue
        n = len(q.split())
        for j, phrase in enumerate(index[n + 1].ranked(q, cfg.min_docs, cfg.suggestions), start=1):
            rows.append((qid, str(j), 1, "", phrase))
            rows.extend((qid, f"{j}.{i}", 2, str(j), refined) for i, refined in
                        enumerate(index[n + 2].ranked(phrase, cfg.min_docs, cfg.refinements), start=1))
    return pd.DataFrame([row + (1.0,) for row in rows], columns=COLUMNS)
