"""List-pairwise samples (DSSA, TKDE, Section 4.3.1 and Algorithm 1).

A sample ``(q, C, d1, d2, w, y)`` compares two rankings that share the
context ``C`` and differ only in their last document: ``r1 = [C, d1]``,
``r2 = [C, d2]``, with ``w = |M(r1) - M(r2)|`` and ``y = [M(r1) > M(r2)]``.
Contexts are the prefixes of length ``l = 0 .. n - 2`` of the ideal ranking
and of ``N`` random permutations (GetPerms); every pair of remaining
documents whose metric differs is kept (GetPairs). Length ``n - 1`` is
skipped: one remaining document makes no pair.

Where the permutations come from (``draw``, a ``samples`` setting):

* ``"per_length"``: ``N`` fresh permutations for every context length, as
  Algorithm 1 is written (GetPerms is called inside the loop over lengths);
* ``"prefixes"``: ``N`` permutations drawn once per query, whose prefixes of
  every length are the contexts. Each length still sees ``N`` uniformly random
  prefixes, so the expected loss of Eq. 16 is unchanged; contexts of one query
  are now prefixes of a few shared rankings, which a model encodes once
  (:meth:`srdiv.models.base.DiversityModel.prefix_scores`).

Algorithm 1 collects samples in a set, so identical contexts of a query
(every empty context, repeated short prefixes) are kept once in both draws.

Storage: a context is a prefix of a stored *sequence*, and its pairs are
contiguous, so a model encodes each sequence once and scores the candidates
after each of its prefixes:

* ``sequences [S, L]`` rankings (candidate indices on the D axis, -1 padding),
  ``sequence_query [S]``;
* ``context_sequence [C]``, ``context_length [C]``: context ``c`` is
  ``sequences[context_sequence[c], :context_length[c]]``;
* ``pairs [P, 2]``, ``pair_context [P]`` (sorted), ``weight [P]``, ``label [P]``.

With ``per_length`` every context is its own sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from srdiv.metrics.diversity import ALPHA
from srdiv.metrics.targets import Metric, ideal_orders, score_rankings

TIE_TOLERANCE = 1e-9
"""Metric differences below this are ties (the same gain summed in another order)."""

DRAWS = ("per_length", "prefixes")


@dataclass
class ListPairwiseSamples:
    """Samples of several queries; ``sequence_query`` indexes the queries they were drawn for."""

    sequences: np.ndarray
    sequence_query: np.ndarray
    context_sequence: np.ndarray
    context_length: np.ndarray
    pairs: np.ndarray
    pair_context: np.ndarray
    weight: np.ndarray
    label: np.ndarray

    def contexts(self) -> np.ndarray:
        """Every context as ``[C, L]`` candidate indices, -1 padding."""
        ctx = self.sequences[self.context_sequence].astype(np.int64)
        return np.where(np.arange(ctx.shape[1]) < self.context_length[:, None], ctx, -1)

    def context_query(self) -> np.ndarray:
        """``[C]`` query of each context."""
        return self.sequence_query[self.context_sequence]


def list_pairwise_samples(labels: np.ndarray, doc_mask: np.ndarray, n_perms: int, metric: Metric,
                          rng: np.random.Generator, alpha: float = ALPHA, draw: str = "per_length"
                          ) -> ListPairwiseSamples:
    """GetSamples of Algorithm 1 for ``labels [Q, D, S]``, ``doc_mask [Q, D]``.

    ``metric`` is M (e.g. :func:`srdiv.metrics.targets.ranking_metric`);
    ``alpha`` is used for the greedy ideal ranking; ``draw`` is one of :data:`DRAWS`.
    """
    if draw not in DRAWS:
        raise ValueError(f"samples: draw must be one of {DRAWS}, got {draw!r}")
    ideal = ideal_orders(labels, doc_mask, alpha)
    parts = [_query_samples(labels[q], doc_mask[q], ideal[q], n_perms, metric, rng, draw == "prefixes")
             for q in range(len(labels))]
    width = max([p[0].shape[1] for p in parts] + [0])
    seq_offsets = np.cumsum([0] + [len(p[0]) for p in parts])
    ctx_offsets = np.cumsum([0] + [len(p[1]) for p in parts])
    return ListPairwiseSamples(
        sequences=np.concatenate([_pad(p[0], width) for p in parts] or [np.zeros((0, 0))]).astype(np.int16),
        sequence_query=np.repeat(np.arange(len(parts)), np.diff(seq_offsets)).astype(np.int32),
        context_sequence=_concat([p[1] for p in parts], seq_offsets).astype(np.int32),
        context_length=_concat([p[2] for p in parts]).astype(np.int16),
        pairs=np.concatenate([p[3] for p in parts] or [np.zeros((0, 2))]).astype(np.int16),
        pair_context=_concat([p[4] for p in parts], ctx_offsets).astype(np.int32),
        weight=_concat([p[5] for p in parts]).astype(np.float32),
        label=_concat([p[6] for p in parts]).astype(np.int8),
    )


def _query_samples(labels: np.ndarray, mask: np.ndarray, ideal: np.ndarray, n_perms: int, metric: Metric,
                   rng: np.random.Generator, prefixes: bool) -> tuple[np.ndarray, ...]:
    """Sequences ``[S, L]``, context_sequence, context_length, pairs ``[P, 2]``, pair_context, weight,
    label of one query.

    ``labels [D, S]``, ``mask [D]``, ``ideal [D]`` (-1 padding last). The
    rankings ``[C, d]`` of every length are scored in one metric call.
    """
    real = np.flatnonzero(mask)
    n = len(real)
    shared = _rankings(ideal, real, n_perms, rng) if prefixes else None
    origins, contexts = [], []
    for length in range(n - 1):
        drawn = shared if shared is not None else _rankings(ideal, real, n_perms, rng)   # shared: prefixes
        _, first = np.unique(drawn[:, :length], axis=0, return_index=True)
        origins.append(np.sort(first))
        contexts.append(drawn[origins[-1], :length])
    remaining = [_remaining(ctx, real) for ctx in contexts]
    rankings = [np.concatenate([np.repeat(ctx[:, None], rem.shape[1], axis=1), rem[:, :, None]], axis=2)
                for ctx, rem in zip(contexts, remaining)]
    flat = np.concatenate([_pad(r.reshape(-1, r.shape[2]), n) for r in rankings] or [np.zeros((0, n), int)])
    values = np.split(score_rankings(labels[None], mask[None], flat[None], metric)[0],
                      np.cumsum([r.shape[0] * r.shape[1] for r in rankings])[:-1])
    parts = [_pairs(rem, val.reshape(rem.shape)) for rem, val in zip(remaining, values)]
    if not parts:
        empty = np.zeros(0, int)
        return np.zeros((0, 0), int), empty, empty, np.zeros((0, 2), int), empty, np.zeros(0), np.zeros(0, bool)
    lengths = np.concatenate([np.full(len(p[0]), length) for length, p in enumerate(parts)])
    if shared is not None:
        sequences = shared
        context_sequence = np.concatenate([origin[p[0]] for origin, p in zip(origins, parts)])
    else:
        sequences = np.concatenate([_pad(ctx[p[0]], max(n - 2, 0)) for ctx, p in zip(contexts, parts)])
        context_sequence = np.arange(len(sequences))
    offsets = np.cumsum([0] + [len(p[0]) for p in parts])
    return (sequences, context_sequence, lengths, np.concatenate([p[1] for p in parts]),
            _concat([p[2] for p in parts], offsets),
            np.concatenate([p[3] for p in parts]), np.concatenate([p[4] for p in parts]))


def _rankings(ideal: np.ndarray, real: np.ndarray, n_perms: int, rng: np.random.Generator) -> np.ndarray:
    """GetPerms: ``[1 + N, n]`` the ideal ranking and N random permutations of the real candidates."""
    perms = real[np.argsort(rng.random((n_perms, len(real))), axis=1)]
    return np.concatenate([ideal[None, :len(real)], perms])


def _remaining(contexts: np.ndarray, real: np.ndarray) -> np.ndarray:
    """``[C, n - length]`` documents outside each context, in D-axis order."""
    taken = (contexts[:, :, None] == real).any(axis=1)
    return real[np.argsort(taken, axis=1, kind="stable")[:, : len(real) - contexts.shape[1]]]


def _pairs(remaining: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """GetPairs: every pair of remaining documents whose ``values [C, m]`` = M([C, d]) differ.

    Returns the kept contexts (those with a pair), pairs, pair_context (into the kept ones), weight, label.
    """
    first, second = np.triu_indices(remaining.shape[1], 1)
    diff = values[:, first] - values[:, second]
    ctx, pair = np.nonzero(np.abs(diff) > TIE_TOLERANCE)
    kept, pair_context = np.unique(ctx, return_inverse=True)
    pairs = np.stack([remaining[ctx, first[pair]], remaining[ctx, second[pair]]], axis=1)
    return kept, pairs, pair_context, np.abs(diff[ctx, pair]), diff[ctx, pair] > 0


def _concat(arrays: list[np.ndarray], offsets: np.ndarray | None = None) -> np.ndarray:
    """Concatenate per-query index arrays, adding each query's ``offsets`` (global numbering)."""
    if offsets is not None:
        arrays = [a + off for a, off in zip(arrays, offsets)]
    return np.concatenate(arrays or [np.zeros(0)])


def _pad(contexts: np.ndarray, width: int) -> np.ndarray:
    """Right-pad ``contexts [C, L]`` with -1 to ``[C, width]``."""
    return np.pad(contexts, ((0, 0), (0, width - contexts.shape[1])), constant_values=-1)
