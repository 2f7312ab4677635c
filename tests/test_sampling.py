"""Sampling: ideal orders, DSSA list-pairwise samples (Algorithm 1), PAMM rankings, the samples file."""

import itertools
import math

import numpy as np
import pytest

from srdiv.features.bundle import random_bundle
from srdiv.io import InputError
from srdiv.metrics import alpha_dcg, alpha_ndcg_candidates
from srdiv.sampling.list_pairwise_samples import list_pairwise_samples
from srdiv.sampling.pamm_samples import pamm_rankings, random_orders
from srdiv.sampling.samples import Samples, SampleSettings, make_samples
from srdiv.metrics.targets import ideal_orders, ranking_metric, score_rankings

NDCG = ranking_metric("alpha_nDCG_cand@20")


def _m(labels, ranking):
    """M of one ranking (list of row indices) of one candidate list, straight from the official function."""
    return alpha_ndcg_candidates(labels[ranking][None], labels[None], 0.5, 20)[0]


# --- ideal orders ---------------------------------------------------------------------------------

def _dcg(labels, ranking):
    return alpha_dcg(labels[list(ranking)][None], 0.5)[0]


@pytest.mark.parametrize("seed", range(6))
def test_ideal_order_is_stepwise_greedy_and_bounded_by_brute_force(seed):
    rng = np.random.default_rng(seed)
    labels = (rng.random((5, 3)) < 0.45).astype(float)
    order = ideal_orders(labels[None], np.ones((1, 5), bool))[0]
    assert sorted(order) == list(range(5))
    perms = list(itertools.permutations(range(5)))
    # what greedy guarantees: each position takes a best next document given the ones above it
    for t in range(5):
        best_next = max(_dcg(labels, p[: t + 1]) for p in perms if list(p[:t]) == list(order[:t]))
        assert _dcg(labels, order[: t + 1]) == pytest.approx(best_next)
    # ... the best first document overall, and never more than the true optimum
    assert _dcg(labels, order[:1]) == pytest.approx(max(_dcg(labels, p[:1]) for p in perms))
    assert _dcg(labels, order) <= max(_dcg(labels, p) for p in perms) + 1e-12


def test_ideal_order_matches_brute_force_optimum_when_documents_cover_disjoint_subtopics():
    labels = np.array([[0, 0, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0]], float)
    order = ideal_orders(labels[None], np.ones((1, 4), bool))[0]
    best = max(_dcg(labels, p) for p in itertools.permutations(range(4)))
    assert _dcg(labels, order) == pytest.approx(best)
    assert list(order[:2]) == [1, 2]


def test_ideal_order_puts_padding_last_even_with_holes_in_the_mask():
    labels = np.array([[[0, 0], [0, 0], [1, 0], [0, 1], [0, 0]]], float)
    mask = np.array([[True, False, True, True, False]])
    order = ideal_orders(labels, mask)[0]
    assert list(order[:2]) == [2, 3]
    assert order[2] == 0 and list(order[3:]) == [-1, -1]


# --- list-pairwise samples -------------------------------------------------------------------------

def test_list_pairwise_hand_worked_query():
    """Docs d0, d1 cover subtopic a, d2 covers b (alpha = 0.5).

    Ideal ranking: d0 (tie with d1 and d2, first row), then d2 (gain 1 > 0.5), then d1,
    Z = alpha-DCG@20 of the ideal = 1 + 1/log2(3) + 0.5/log2(4).
    * empty context: every single document gains 1 -> no pair, context dropped;
    * context [d0]: M([d0, d1]) = (1 + 0.5/log2 3)/Z < M([d0, d2]) = (1 + 1/log2 3)/Z
      -> pair (d1, d2), label 0, weight 0.5/log2(3)/Z;
    * context [d1]: symmetric -> pair (d0, d2), label 0, same weight;
    * context [d2]: d0 and d1 tie -> no pair.
    Length 2 leaves one document: no pair.
    """
    labels = np.array([[[1, 0], [1, 0], [0, 1]]], float)
    mask = np.ones((1, 3), bool)
    z = 1 + 1 / math.log2(3) + 0.5 / math.log2(4)
    weight = 0.5 / math.log2(3) / z

    only_ideal = list_pairwise_samples(labels, mask, 0, NDCG, np.random.default_rng(0))
    assert only_ideal.contexts().tolist() == [[0]]
    assert only_ideal.pairs.tolist() == [[1, 2]]
    assert only_ideal.label.tolist() == [0]
    assert only_ideal.weight == pytest.approx([weight])

    many = list_pairwise_samples(labels, mask, 10, NDCG, np.random.default_rng(1))
    expected = {(0,): ([1, 2], 0), (1,): ([0, 2], 0)}
    contexts = [tuple(c[c >= 0]) for c in many.contexts()]
    assert len(set(contexts)) == len(contexts)  # Algorithm 1 collects a set
    assert contexts[0] == (0,) and set(contexts) <= set(expected)
    for c, pair, label, w in zip(many.pair_context, many.pairs, many.label, many.weight):
        assert (pair.tolist(), label) == expected[contexts[c]]
        assert w == pytest.approx(weight)


@pytest.mark.parametrize("draw", ["per_length", "prefixes"])
def test_list_pairwise_samples_agree_with_the_metric_and_are_complete(draw):
    bundle = random_bundle(queries=3, docs=6, subtopics=3, seed=4)
    lp = list_pairwise_samples(bundle.labels, bundle.doc_mask, 4, NDCG, np.random.default_rng(0), draw=draw)
    assert np.all(np.diff(lp.pair_context) >= 0)
    ideal = ideal_orders(bundle.labels, bundle.doc_mask)
    for c, context in enumerate(lp.contexts()):
        q = lp.context_query()[c]
        labels, real = bundle.labels[q], np.flatnonzero(bundle.doc_mask[q])
        ctx = [int(d) for d in context if d >= 0]
        assert len(ctx) <= len(real) - 2 and len(set(ctx)) == len(ctx) and set(ctx) <= set(real)
        values = {d: _m(labels, ctx + [d]) for d in real if d not in ctx}
        expected = {(a, b) for a, b in itertools.combinations(sorted(values), 2)
                    if abs(values[a] - values[b]) > 1e-9}
        mine = lp.pair_context == c
        assert {tuple(p) for p in lp.pairs[mine].tolist()} == expected
        for (a, b), w, y in zip(lp.pairs[mine], lp.weight[mine], lp.label[mine]):
            assert w == pytest.approx(abs(values[a] - values[b]), rel=1e-5)
            assert y == (values[a] > values[b])
    # every ideal prefix that yields a pair is a context of its query
    for q in range(len(bundle)):
        n = bundle.doc_mask[q].sum()
        have = {tuple(c[c >= 0]) for c, cq in zip(lp.contexts(), lp.context_query()) if cq == q}
        for length in range(n - 1):
            prefix = [int(d) for d in ideal[q, :length]]
            rest = [d for d in np.flatnonzero(bundle.doc_mask[q]) if d not in prefix]
            values = [_m(bundle.labels[q], prefix + [d]) for d in rest]
            if max(values) - min(values) > 1e-9:
                assert tuple(prefix) in have


def test_list_pairwise_is_seeded():
    bundle = random_bundle(queries=2, docs=6, seed=2)
    a = list_pairwise_samples(bundle.labels, bundle.doc_mask, 3, NDCG, np.random.default_rng(5))
    b = list_pairwise_samples(bundle.labels, bundle.doc_mask, 3, NDCG, np.random.default_rng(5))
    assert np.array_equal(a.contexts(), b.contexts()) and np.array_equal(a.pairs, b.pairs)


def test_prefix_draw_takes_every_context_from_n_plus_one_rankings_per_query():
    """``prefixes``: the contexts of a query are prefixes of its ideal ranking and N permutations drawn once;
    each is kept once; ``per_length`` draws afresh for every length (more distinct rankings)."""
    bundle = random_bundle(queries=4, docs=8, subtopics=3, seed=6)
    n_perms = 3
    lp = list_pairwise_samples(bundle.labels, bundle.doc_mask, n_perms, NDCG, np.random.default_rng(2),
                               draw="prefixes")
    ideal = ideal_orders(bundle.labels, bundle.doc_mask)
    contexts, query = lp.contexts(), lp.context_query()
    for q in range(len(bundle)):
        n = bundle.doc_mask[q].sum()
        sequences = lp.sequences[lp.sequence_query == q]
        assert len(sequences) == n_perms + 1 and list(sequences[0][:n]) == list(ideal[q, :n])
        for s in sequences:
            assert sorted(s[s >= 0]) == list(np.flatnonzero(bundle.doc_mask[q]))
        mine = [tuple(c[c >= 0]) for c in contexts[query == q]]
        assert len(set(mine)) == len(mine)
        assert all(any(tuple(s[:len(c)]) == c for s in sequences) for c in mine)
    # each context is the prefix of the sequence it names, shorter than that sequence's last useful length
    for c, s, length in zip(contexts, lp.context_sequence, lp.context_length):
        seq = lp.sequences[s]
        assert list(c[:length]) == list(seq[:length]) and (c[length:] == -1).all()
        assert length <= (seq >= 0).sum() - 2
    fresh = list_pairwise_samples(bundle.labels, bundle.doc_mask, n_perms, NDCG, np.random.default_rng(2))
    assert np.array_equal(fresh.context_sequence, np.arange(len(fresh.sequences)))
    assert len(fresh.sequences) > len(lp.sequences)
    with pytest.raises(ValueError, match="draw"):
        list_pairwise_samples(bundle.labels, bundle.doc_mask, 1, NDCG, np.random.default_rng(0), draw="fresh")


# --- PAMM rankings ---------------------------------------------------------------------------------

def test_pamm_positive_rankings_are_ideal_with_random_ties_and_negatives_are_permutations():
    labels = np.zeros((2, 5, 2))
    labels[0, 0, 0] = labels[0, 3, 1] = 1  # query 0: two relevant docs, three tied irrelevant ones
    mask = np.ones((2, 5), bool)
    mask[1, 3:] = False  # query 1: nothing relevant, two padded slots
    out = pamm_rankings(labels, mask, 6, 7, NDCG, np.random.default_rng(0))
    pos, neg = out["pamm_pos"], out["pamm_neg"]
    assert pos.shape == (2, 6, 5) and neg.shape == (2, 7, 5)
    assert all(set(r[:2]) == {0, 3} for r in pos[0])
    assert len({tuple(r) for r in pos[0]}) > 1  # ties broken differently
    assert out["pamm_pos_metric"][0] == pytest.approx(np.ones(6))
    for q, n in ((0, 5), (1, 3)):
        for r in np.concatenate([pos[q], neg[q]]):
            assert sorted(r[:n]) == list(np.flatnonzero(mask[q])) and (r[n:] == -1).all()
    expected = [_m(labels[0], list(r)) for r in neg[0]]
    assert out["pamm_neg_metric"][0] == pytest.approx(expected, rel=1e-6)
    assert (out["pamm_neg_metric"][1] == 0).all()


def test_score_rankings_treats_padding_as_unranked():
    labels = np.array([[[1, 0], [0, 1], [1, 1]]], float)
    mask = np.ones((1, 3), bool)
    orders = np.array([[[2, -1, -1], [2, 0, 1]]])
    got = score_rankings(labels, mask, orders, ranking_metric("alpha_DCG@20"))
    assert got[0] == pytest.approx([2.0, 2.0 + 0.5 / math.log2(3) + 0.5 / math.log2(4)])


def test_random_orders_keep_padding_last():
    mask = np.array([[True, False, True, True]])
    orders = random_orders(mask, 20, np.random.default_rng(0))[0]
    assert all(sorted(r[:3]) == [0, 2, 3] and r[3] == -1 for r in orders)


def test_unknown_metric_is_rejected():
    with pytest.raises(ValueError):
        ranking_metric("ERR_IA@20")
    with pytest.raises(ValueError, match="normalises over the candidates: alpha_nDCG_cand@k"):
        ranking_metric("alpha_nDCG@20")    # the official measure's name means the official normalisation


# --- the samples file -------------------------------------------------------------------------------

def test_samples_round_trip_and_query_rows(tmp_path):
    bundle = random_bundle(queries=3, docs=5, seed=1)
    samples = make_samples(bundle, SampleSettings(permutations=2, pamm_positive=2, pamm_negative=3), [7, 1])
    samples.save(tmp_path / "samples.npz")
    loaded = Samples.load(tmp_path)
    assert loaded.meta == samples.meta and loaded.meta["n_docs"] == 5
    assert np.array_equal(loaded.list_pairwise.pairs, samples.list_pairwise.pairs)
    assert np.array_equal(loaded.pamm["pamm_neg"], samples.pamm["pamm_neg"])
    assert loaded.query_rows(bundle.select([2, 0, 1])).tolist() == [1, 2, 0]
    with pytest.raises(InputError, match="do not match the training bundle"):
        loaded.query_rows(bundle.truncate(4))
    with pytest.raises(InputError, match="do not match the training bundle"):
        loaded.query_rows(bundle.select([0, 1]))


def test_a_row_samples_with_its_own_settings(tmp_path):
    """``models.<row>.samples`` overrides the section for that row; its samples live under their own key."""
    from srdiv.sampling.samples import SampleSettings, samples_key

    params = {"samples": {"permutations": 10, "draw": "prefixes"},
              "models": {"A": {"model": {"name": "dssa"}},
                         "B": {"model": {"name": "dssa"}, "samples": {"permutations": 3}}}}
    assert SampleSettings.from_params(params, "A").permutations == 10
    assert SampleSettings.from_params(params, "B") == SampleSettings(permutations=3, draw="prefixes")
    assert samples_key(params, "A") == "" and samples_key(params, "B") == "permutations3"
    bad = {**params, "models": {"C": {"model": {"name": "dssa"}, "samples": {"perms": 3}}}}
    with pytest.raises(ValueError, match="perms"):
        SampleSettings.from_params(bad, "C")
    bundle = random_bundle(queries=3, docs=6, subtopics=3, pad=False, seed=0)
    few = make_samples(bundle, SampleSettings.from_params(params, "B"), 0).list_pairwise
    many = make_samples(bundle, SampleSettings.from_params(params, "A"), 0).list_pairwise
    assert np.bincount(few.sequence_query).tolist() == [4, 4, 4]      # the ideal ranking and N = 3 permutations
    assert np.bincount(many.sequence_query).tolist() == [11, 11, 11]
