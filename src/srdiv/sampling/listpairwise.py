"""List-pairwise samples (DSSA, TKDE, Section 4.3.1 and Algorithm 1).

A sample ``(q, C, d1, d2, w, y)`` compares two rankings that share the
context ``C`` and differ only in their last document: ``r1 = [C, d1]``,
``r2 = [C, d2]``, with ``w = |M(r1) - M(r2)|`` and ``y = [M(r1) > M(r2)]``.
Contexts are the prefixes of length ``l = 0 .. n - 2`` of the ideal ranking
and of ``N`` random permutations drawn afresh for each length (GetPerms);
every pair of remaining documents whose metric differs is kept (GetPairs).
Length ``n - 1`` is skipped: one remaining document makes no pair.

Algorithm 1 collects samples in a set, so identical contexts of a query
(every empty context, repeated short prefixes) are kept once.

Storage is grouped by context so a model scores all candidates of a context
in one forward pass and the loss gathers the pairs:

* ``contexts [C, L]`` candidate indices (D axis), -1 padding; ``context_query [C]``;
* ``pairs [P, 2]``, ``pair_context [P]`` (sorted), ``weight [P]``, ``label [P]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from srdiv.sampling.targets import Metric, ideal_orders, score_rankings

TIE_TOLERANCE = 1e-9
"""Metric differences below this are ties (the same gain summed in another order)."""


@dataclass
class ListPairwiseSamples:
    """Samples of several queries; ``context_query`` indexes the queries they were drawn for."""

    contexts: np.ndarray
    context_query: np.ndarray
    pairs: np.ndarray
    pair_context: np.ndarray
    weight: np.ndarray
    label: np.ndarray


def list_pairwise_samples(labels: np.ndarray, doc_mask: np.ndarray, n_perms: int, metric: Metric,
                          rng: np.random.Generator, alpha: float = 0.5) -> ListPairwiseSamples:
    """GetSamples of Algorithm 1 for ``labels [Q, D, S]``, ``doc_mask [Q, D]``.

    ``metric`` is M (e.g. :func:`srdiv.sampling.targets.ranking_metric`);
    ``alpha`` is used for the greedy ideal ranking.
    """
    ideal = ideal_orders(labels, doc_mask, alpha)
    parts = [_query_samples(labels[q], doc_mask[q], ideal[q], n_perms, metric, rng) for q in range(len(labels))]
    width = max([p[0].shape[1] for p in parts] + [0])
    offsets = np.cumsum([0] + [len(p[0]) for p in parts])
    return ListPairwiseSamples(
        contexts=np.concatenate([_pad(p[0], width) for p in parts] or [np.zeros((0, 0))]).astype(np.int16),
        context_query=np.repeat(np.arange(len(parts)), np.diff(offsets)).astype(np.int32),
        pairs=np.concatenate([p[1] for p in parts] or [np.zeros((0, 2))]).astype(np.int16),
        pair_context=np.concatenate([p[2] + off for p, off in zip(parts, offsets)] or [[]]).astype(np.int32),
        weight=np.concatenate([p[3] for p in parts] or [[]]).astype(np.float32),
        label=np.concatenate([p[4] for p in parts] or [[]]).astype(np.int8),
    )


def _query_samples(labels: np.ndarray, mask: np.ndarray, ideal: np.ndarray, n_perms: int, metric: Metric,
                   rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Contexts ``[C, L]``, pairs ``[P, 2]``, pair_context, weight, label of one query.

    ``labels [D, S]``, ``mask [D]``, ``ideal [D]`` (-1 padding last). The
    rankings ``[C, d]`` of every length are scored in one metric call.
    """
    real = np.flatnonzero(mask)
    n = len(real)
    contexts = [_contexts(ideal, real, length, n_perms, rng) for length in range(n - 1)]
    remaining = [_remaining(ctx, real) for ctx in contexts]
    rankings = [np.concatenate([np.repeat(ctx[:, None], rem.shape[1], axis=1), rem[:, :, None]], axis=2)
                for ctx, rem in zip(contexts, remaining)]
    flat = np.concatenate([_pad(r.reshape(-1, r.shape[2]), n) for r in rankings] or [np.zeros((0, n), int)])
    values = np.split(score_rankings(labels[None], mask[None], flat[None], metric)[0],
                      np.cumsum([r.shape[0] * r.shape[1] for r in rankings])[:-1])
    parts = [_pairs(ctx, rem, val.reshape(rem.shape)) for ctx, rem, val in zip(contexts, remaining, values)]
    offsets = np.cumsum([0] + [len(p[0]) for p in parts])
    if not parts:
        return np.zeros((0, 0), int), np.zeros((0, 2), int), np.zeros(0, int), np.zeros(0), np.zeros(0, bool)
    return (np.concatenate([_pad(p[0], max(n - 2, 0)) for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] + off for p, off in zip(parts, offsets)]),
            np.concatenate([p[3] for p in parts]), np.concatenate([p[4] for p in parts]))


def _contexts(ideal: np.ndarray, real: np.ndarray, length: int, n_perms: int, rng: np.random.Generator) -> np.ndarray:
    """GetPerms: ``[C, length]`` prefixes of the ideal ranking and of N random permutations, each once."""
    perms = real[np.argsort(rng.random((n_perms, len(real))), axis=1)]
    contexts = np.concatenate([ideal[None, :length], perms[:, :length]])
    _, first = np.unique(contexts, axis=0, return_index=True)
    return contexts[np.sort(first)]


def _remaining(contexts: np.ndarray, real: np.ndarray) -> np.ndarray:
    """``[C, n - length]`` documents outside each context, in D-axis order."""
    taken = (contexts[:, :, None] == real).any(axis=1)
    return real[np.argsort(taken, axis=1, kind="stable")[:, : len(real) - contexts.shape[1]]]


def _pairs(contexts: np.ndarray, remaining: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """GetPairs: every pair of remaining documents whose ``values [C, m]`` = M([C, d]) differ."""
    first, second = np.triu_indices(remaining.shape[1], 1)
    diff = values[:, first] - values[:, second]
    ctx, pair = np.nonzero(np.abs(diff) > TIE_TOLERANCE)
    kept, pair_context = np.unique(ctx, return_inverse=True)
    pairs = np.stack([remaining[ctx, first[pair]], remaining[ctx, second[pair]]], axis=1)
    return contexts[kept], pairs, pair_context, np.abs(diff[ctx, pair]), diff[ctx, pair] > 0


def _pad(contexts: np.ndarray, width: int) -> np.ndarray:
    """Right-pad ``contexts [C, L]`` with -1 to ``[C, width]``."""
    return np.pad(contexts, ((0, 0), (0, width - contexts.shape[1])), constant_values=-1)
