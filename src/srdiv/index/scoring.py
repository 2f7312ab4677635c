"""The scoring models' parameters and their one default (:data:`DEFAULT_SCORING`), apart from
:mod:`srdiv.index.sparse` so that settings classes read them without importing scipy and pandas."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scoring:
    """The models' parameters: BM25's ``k1`` and ``b``, LMIR's Dirichlet prior ``mu``."""

    k1: float = 1.2
    b: float = 0.75
    mu: float = 2000.0


DEFAULT_SCORING = Scoring()
"""The one home of the defaults of ``k1``, ``b`` and ``mu``; every other default of them is read from here."""
