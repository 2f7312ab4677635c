"""The parameters of a ``debian-facets`` build (:mod:`srdiv.collection.debian`), with their defaults."""

from __future__ import annotations

from dataclasses import dataclass

from srdiv.collection import settings
from srdiv.index.scoring import DEFAULT_SCORING
from srdiv.io import InputError

SUBTOPIC_FACETS = ("admin", "biology", "culture", "devel", "field", "game", "hardware", "interface", "mail",
                   "network", "office", "protocol", "science", "security", "sound", "uitoolkit", "use", "web",
                   "works-with", "works-with-format", "x11")
"""Facets whose tags may be subtopics: what a package is for, works with or runs as (data card: why the others not)."""
PACKAGING_TAGS = ("devel::library", "devel::doc", "x11::library")
"""Tags of those facets that say what kind of package it is (as ``role::`` does), not what it is for."""
UNTAGGED = ("leave-out", "non-relevant")


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
    k1: float = DEFAULT_SCORING.k1      # BM25 of the initial run
    b: float = DEFAULT_SCORING.b
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
    def from_params(cls, params: dict) -> DebianFacetsConfig:
        """Defaults overridden by ``params["collections"]["debian-facets"]`` (unknown keys are an error)."""
        cfg = cls(**settings.overrides(cls, params, "debian-facets"))
        if cfg.untagged not in UNTAGGED:
            raise InputError("params.yaml", f"collections.debian-facets.untagged must be one of {UNTAGGED}")
        if not set(cfg.run_fields) <= {"title", "body", "anchor", "url"}:
            raise InputError("params.yaml",
                             "collections.debian-facets.run_fields must be among title, body, anchor, url")
        if not 0.0 <= cfg.min_adaptation <= 1.0:
            raise InputError("params.yaml", "collections.debian-facets.min_adaptation must be in [0, 1]")
        return cfg
