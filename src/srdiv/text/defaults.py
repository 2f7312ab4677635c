"""Defaults of the ``embed``, ``pseudo_docs`` and ``features`` sections of ``params.yaml``.

Every text stage reads its parameters through :func:`stage_params`, which
merges the file's section over these defaults, so a key missing from
``params.yaml`` takes the value written here and nowhere else. Where both set
a key they agree (``tests/test_defaults.py``), so a command run without
``--params`` makes the same vectors as the pipeline.
"""

from __future__ import annotations

from typing import Any

from srdiv.params import merge, section

DEFAULTS: dict[str, dict[str, Any]] = {
    "embed": {
        "doc2vec": {
            "vector_size": 100,   # DSSA/DESA
            "window": 8,          # NTN and MDP-DIV (DSSA/DESA: 5); used only with dbow_words: 1
            "dbow_words": 1,      # 1 = also train skip-gram word vectors (0: pure DBOW, faster)
            "alpha": 0.025,
            "min_alpha": 0.0001,
            "min_count": 2,
            "negative": 5,
            "epochs": 10,
            "workers": 1,         # 1 = reproducible bit for bit; more threads train faster, not reproducibly
        },
        "lda": {
            "num_topics": 100,    # DSSA's best representation
            "passes": 1,
            "iterations": 50,
            "chunksize": 2000,
            "no_below": 2,        # drop terms in fewer documents
            "no_above": 0.5,      # drop terms in a larger share of documents
        },
        "svd": {                  # LSA on LDA's vocabulary (DSSA Table 8's SVD representation)
            "num_topics": 100,
            "power_iters": 2,     # gensim's randomized SVD: more iterations, closer to the exact SVD
        },
    },
    "pseudo_docs": {
        "z": 20,                  # top-Z BM25 documents per query or suggestion
        "field": "text",          # the field searched (see srdiv.text.documents.FIELDS)
        "infer_epochs": None,     # doc2vec inference epochs (None = training epochs)
        "workers": 2,             # inference processes (results do not depend on it)
    },
    "features": {
        "rank_docs": 50,          # candidates = top rank_docs of the initial run
        "k1": 1.2,                # BM25
        "b": 0.75,                # BM25
        "mu": 2000.0,             # LMIR Dirichlet prior
        "max_subs": 10,           # level-1 suggestions kept per query (bundle)
        "max_subs2": 100,         # level-2 suggestions kept per query (bundle)
    },
}


def stage_params(params: dict, name: str) -> dict[str, Any]:
    """Section ``name`` of the loaded params merged over :data:`DEFAULTS`, plus the global ``seed``."""
    out = merge(DEFAULTS[name], section(params, name))
    out["seed"] = int(params.get("seed", 0))
    return out
