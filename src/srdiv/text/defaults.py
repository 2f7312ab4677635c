"""Settings of the ``embed``, ``pseudo_docs`` and ``features`` sections of ``params.yaml``, with their defaults.

The dataclasses below are the one home of the text stages' defaults (but BM25's and LMIR's ``k1``, ``b``,
``mu``, read from :data:`srdiv.index.scoring.DEFAULT_SCORING`); :data:`DEFAULTS` is their dict form.
Every text stage reads its parameters through :func:`stage_params`, which merges the file's section over
:data:`DEFAULTS`, so a key missing from ``params.yaml`` takes the built-in default and no other value. Where
both set a key they agree (``tests/test_defaults.py``), so a command run without ``--params`` makes the same
vectors as the pipeline; the schema (:mod:`srdiv.params.schema`) checks the same keys.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from srdiv.index.scoring import DEFAULT_SCORING
from srdiv.params import merge, section


@dataclass(frozen=True)
class Doc2VecSettings:
    """``embed.doc2vec``: gensim's Doc2Vec (PV-DBOW)."""

    vector_size: int = 100      # DSSA/DESA
    window: int = 8             # NTN and MDP-DIV (DSSA/DESA: 5); used only with dbow_words: 1
    dbow_words: int = 1         # 1 = also train skip-gram word vectors (0: pure DBOW, faster)
    alpha: float = 0.025        # learning rate (gensim's)
    min_alpha: float = 0.0001
    min_count: int = 2
    negative: int = 5
    epochs: int = 10
    workers: int = 1            # 1 = reproducible bit for bit; more threads train faster, not reproducibly


@dataclass(frozen=True)
class LdaSettings:
    """``embed.lda``: gensim's LDA."""

    num_topics: int = 100       # DSSA's best representation
    passes: int = 1
    iterations: int = 50
    chunksize: int = 2000
    no_below: int = 2           # drop terms in fewer documents
    no_above: float = 0.5       # drop terms in a larger share of documents


@dataclass(frozen=True)
class SvdSettings:
    """``embed.svd``: LSA on LDA's vocabulary (DSSA Table 8's SVD representation)."""

    num_topics: int = 100
    power_iters: int = 2        # gensim's randomized SVD: more iterations, closer to the exact SVD


@dataclass(frozen=True)
class EmbedSettings:
    """The ``embed`` section: one entry per document representation."""

    doc2vec: Doc2VecSettings = field(default_factory=Doc2VecSettings)
    lda: LdaSettings = field(default_factory=LdaSettings)
    svd: SvdSettings = field(default_factory=SvdSettings)


@dataclass(frozen=True)
class PseudoDocSettings:
    """The ``pseudo_docs`` section: vectors of queries and suggestions from their top documents."""

    z: int = 20                 # top-Z BM25 documents per query or suggestion
    field: str = "text"         # the field searched (see srdiv.text.documents.FIELDS)
    infer_epochs: int | None = None   # doc2vec inference epochs (None = training epochs)
    workers: int = 2            # inference processes (results do not depend on it)


@dataclass(frozen=True)
class FeatureSettings:
    """The ``features`` section (but ``diversity_vectors``, which only the workflow reads)."""

    rank_docs: int = 50         # candidates = top rank_docs of the initial run
    k1: float = DEFAULT_SCORING.k1      # BM25
    b: float = DEFAULT_SCORING.b        # BM25
    mu: float = DEFAULT_SCORING.mu      # LMIR Dirichlet prior
    max_subs: int = 10          # level-1 suggestions kept per query (bundle)
    max_subs2: int = 100        # level-2 suggestions kept per query (bundle)


SETTINGS = {"embed": EmbedSettings, "pseudo_docs": PseudoDocSettings, "features": FeatureSettings}
"""The settings class of each text section."""
DEFAULTS: dict[str, dict[str, Any]] = {name: asdict(cls()) for name, cls in SETTINGS.items()}
"""Each section's defaults as nested dicts, as :func:`stage_params` merges them."""


def stage_params(params: dict, name: str) -> dict[str, Any]:
    """Section ``name`` of the loaded params merged over :data:`DEFAULTS`, plus the global ``seed``."""
    out = merge(DEFAULTS[name], section(params, name))
    out["seed"] = int(params.get("seed", 0))
    return out
