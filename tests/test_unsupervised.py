"""Unsupervised baselines (MMR, xQuAD, PM2, HxQuAD, HPM2) on hand-worked cases, padding and batching."""

import math

import pytest
import torch

import srdiv.models  # noqa: F401  (registration)
from srdiv.features.bundle import random_bundle
from srdiv.models.unsupervised import intent_layers, list_probs
from srdiv.objectives.base import take
from srdiv.registry import MODELS

NAMES = ["mmr", "xquad", "pm2", "hxquad", "hpm2"]


class LogPrior:
    """Stand-in prior: score = log(feature 0), so softmax probabilities are feature 0 normalised."""

    def relevance(self, feats):
        return feats[..., 0].log()


class FeaturePrior:
    """Stand-in prior: score = feature 0."""

    def relevance(self, feats):
        return feats[..., 0]


class LinearPrior(torch.nn.Module):
    """Stand-in prior: a fixed random linear function of the features (a module, like ListMLE)."""

    def __init__(self, n_feats, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.linear = torch.nn.Linear(n_feats, 1)

    @torch.no_grad()
    def relevance(self, feats):
        return self.linear(feats).squeeze(-1)


def hand_batch(p_query, p_subs, weights=None, vecs=None, p_subs2=None, parents=None):
    """One query: P(d|q) ``[D]``, P(d|i_k) ``[K, D]`` given as feature 0; optional level 2."""
    p_query, p_subs = torch.tensor([p_query]), torch.tensor([p_subs])
    n_subs, n_docs = p_subs.shape[1:]
    p_subs2 = torch.tensor([p_subs2]) if p_subs2 is not None else torch.zeros(1, 0, n_docs)
    weights = torch.full((1, n_subs), 1.0 / n_subs) if weights is None else torch.tensor([weights])
    return {
        "doc_mask": torch.ones(1, n_docs, dtype=torch.bool),
        "doc_vec": torch.eye(n_docs)[None] if vecs is None else torch.tensor([vecs]),
        "rel_feat": p_query[..., None],
        "sub_feat": p_subs[..., None],
        "sub_mask": torch.ones(1, n_subs, dtype=torch.bool),
        "sub_weight": weights,
        "sub2_feat": p_subs2[..., None],
        "sub2_mask": torch.ones(p_subs2.shape[:2], dtype=torch.bool),
        "sub2_parent": torch.tensor([parents if parents is not None else []], dtype=torch.long),
    }


def make(name, prior, **params):
    return MODELS.get(name)(None, prior=prior, **params)


def scores_after(model, batch, context, candidates):
    return model.context_scores(batch, torch.tensor([context], dtype=torch.long),
                                torch.tensor([candidates], dtype=torch.long))[0].tolist()


# xQuAD: 2 subtopics, 4 docs. d0 covers subtopic 1, d2 subtopic 2, d1 is a weaker d0.
P_Q = [0.4, 0.3, 0.2, 0.1]
P_SUBS = [[0.55, 0.35, 0.05, 0.05], [0.1, 0.1, 0.45, 0.35]]


def test_xquad_picks_the_complementary_document_second():
    batch = hand_batch(P_Q, P_SUBS)
    model = make("xquad", LogPrior(), lam=1.0)
    # step 1: 0.5 P(d|q1) + 0.5 P(d|q2) = .325 .225 .25 .2 -> d0
    assert scores_after(model, batch, [], [0, 1, 2, 3]) == pytest.approx([0.325, 0.225, 0.25, 0.2])
    # after d0 the subtopics are left uncovered with .45 and .9
    expected = [0.5 * p1 * 0.45 + 0.5 * p2 * 0.9 for p1, p2 in zip(P_SUBS[0][1:], P_SUBS[1][1:])]
    assert expected == pytest.approx([0.12375, 0.21375, 0.16875])
    assert scores_after(model, batch, [0], [1, 2, 3]) == pytest.approx(expected)
    assert model.rank(batch)[0, :2].tolist() == [0, 2]


def test_xquad_lambda_zero_is_relevance_order():
    batch = hand_batch([0.1, 0.4, 0.2, 0.3], P_SUBS)
    assert make("xquad", LogPrior(), lam=0.0).rank(batch)[0].tolist() == [1, 3, 2, 0]


def test_pm2_seat_allocation_by_hand():
    p1, p2 = [0.6, 0.3, 0.05, 0.05], [0.1, 0.1, 0.5, 0.3]
    batch = hand_batch(P_Q, [p1, p2], weights=[0.7, 0.3])
    lam = 0.8
    model = make("pm2", LogPrior(), lam=lam)
    # no seats yet: quotients = votes (.7, .3), subtopic 1 wins
    assert scores_after(model, batch, [], [0, 1, 2, 3]) == pytest.approx(
        [lam * 0.7 * a + (1 - lam) * 0.3 * b for a, b in zip(p1, p2)])
    # seats after d0, d1: shares 6/7 + 3/4 and 1/7 + 1/4; quotient 2 (.168) now beats quotient 1 (.1661)
    s1, s2 = 6 / 7 + 0.75, 1 / 7 + 0.25
    qt1, qt2 = 0.7 / (2 * s1 + 1), 0.3 / (2 * s2 + 1)
    assert qt2 > qt1
    expected = [(1 - lam) * qt1 * p1[d] + lam * qt2 * p2[d] for d in (2, 3)]
    assert scores_after(model, batch, [0, 1], [2, 3]) == pytest.approx(expected)
    assert scores_after(model, batch, [1, 0], [2, 3]) == pytest.approx(expected)  # seats ignore order
    assert model.rank(batch)[0].tolist() == [0, 1, 2, 3]


def test_mmr_lambda_one_is_relevance_and_lower_lambda_demotes_a_duplicate():
    vecs = [[1.0, 0, 0], [2.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]  # d1 duplicates d0's direction
    batch = hand_batch([1.0, 0.9, 0.5, 0.0], P_SUBS, vecs=vecs)  # minmax keeps these values
    assert make("mmr", FeaturePrior(), lam=1.0).rank(batch)[0].tolist() == [0, 1, 2, 3]
    mmr = make("mmr", FeaturePrior(), lam=0.5)
    assert scores_after(mmr, batch, [], [0, 1, 2, 3]) == pytest.approx([0.5, 0.45, 0.25, 0.0])
    # after d0: 0.5 rel - 0.5 max cos = .45 - .5, .25 - 0, 0 - 0
    assert scores_after(mmr, batch, [0], [1, 2, 3]) == pytest.approx([-0.05, 0.25, 0.0])
    assert mmr.rank(batch)[0].tolist() == [0, 2, 3, 1]


def test_hierarchy_weights_and_leaf_copy():
    # level 1: i0 with children c0, c1; i1 without children (its own child)
    batch = hand_batch(P_Q, P_SUBS, weights=[0.6, 0.4], p_subs2=[[0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]],
                       parents=[0, 0])
    level1, level2 = intent_layers(LogPrior(), batch, "softmax", levels=2)
    assert level1.weight[0].tolist() == pytest.approx([0.6, 0.4, 0.0])  # the query slot is unused
    assert level2.weight[0].tolist() == pytest.approx([0.3, 0.3, 0.0, 0.4, 0.0])
    assert level2.probs[0, 3].tolist() == pytest.approx(P_SUBS[1])
    assert level2.probs[0, 0].tolist() == pytest.approx([0.7, 0.1, 0.1, 0.1])


def test_query_without_suggestions_ranks_by_relevance():
    batch = hand_batch([0.1, 0.4, 0.2, 0.3], P_SUBS)
    batch["sub_mask"][:] = False
    batch["sub2_mask"] = torch.zeros(1, 0, dtype=torch.bool)
    for name in ["xquad", "pm2", "hxquad", "hpm2"]:
        assert make(name, LogPrior(), lam=0.7).rank(batch)[0].tolist() == [1, 3, 2, 0], name


@pytest.fixture(scope="module")
def bundle():
    return random_bundle(queries=5, docs=9, subs=4, subs2=6, seed=3)


@pytest.fixture(scope="module")
def prior(bundle):
    return LinearPrior(bundle.dims.feats)


def models(prior):
    for name in NAMES:
        for prob in ["softmax", "minmax"]:
            params = {"lam": 0.6, "prob": prob} | ({"alpha": 0.3} if name in ("hxquad", "hpm2") else {})
            yield f"{name}-{prob}", make(name, prior, **params)


def test_hxquad_and_hpm2_reduce_to_flat_when_each_suggestion_is_its_own_child(bundle, prior):
    batch = bundle.to_torch()
    no_level2 = dict(batch, sub2_mask=torch.zeros_like(batch["sub2_mask"]))
    n_subs = batch["sub_mask"].shape[1]
    copies = dict(batch, sub2_feat=batch["sub_feat"], sub2_mask=batch["sub_mask"],
                  sub2_parent=torch.arange(n_subs).expand_as(batch["sub_mask"]).contiguous())
    context, candidates = torch.tensor([[4, 1, -1]] * len(bundle)), torch.arange(9).repeat(len(bundle), 1)
    for flat, hier in [("xquad", "hxquad"), ("pm2", "hpm2")]:
        expected = make(flat, prior, lam=0.6).context_scores(batch, context, candidates)
        for alpha in [0.0, 0.4, 1.0]:
            model = make(hier, prior, lam=0.6, alpha=alpha)
            for variant in (no_level2, copies):
                torch.testing.assert_close(model.context_scores(variant, context, candidates), expected)
        # alpha = 1 is the flat model whatever the level-2 suggestions
        torch.testing.assert_close(make(hier, prior, lam=0.6, alpha=1.0).context_scores(batch, context, candidates),
                                   expected)
        assert not torch.allclose(make(hier, prior, lam=0.6, alpha=0.0).context_scores(batch, context, candidates),
                                  expected)


def test_batched_ranking_equals_per_query_ranking(bundle, prior):
    batch = bundle.to_torch()
    for label, model in models(prior):
        order = model.rank(batch)
        assert order.shape == (len(bundle), 9)
        for q in range(len(bundle)):
            single = model.rank(take(batch, [q]))[0]
            assert torch.equal(order[q], single), (label, q)
            n_real = int(batch["doc_mask"][q].sum())
            assert sorted(order[q, :n_real].tolist()) == list(range(n_real)), label
            assert (order[q, n_real:] == -1).all(), label


def pad_with_garbage(batch, extra_docs=3, extra_subs=2, seed=0):
    """The batch with extra padded candidates and suggestions filled with random values."""
    g = torch.Generator().manual_seed(seed)

    def grow(x, dim, n, value=None):
        shape = list(x.shape)
        shape[dim] = n
        filler = torch.full(shape, value, dtype=x.dtype) if value is not None else torch.randn(shape, generator=g)
        return torch.cat([x, filler.to(x.dtype)], dim)

    out = dict(batch)
    out["doc_mask"] = grow(batch["doc_mask"], 1, extra_docs, False)
    out["doc_vec"] = grow(batch["doc_vec"], 1, extra_docs)
    out["rel_feat"] = grow(batch["rel_feat"], 1, extra_docs)
    for sub in ("sub", "sub2"):
        feat = grow(batch[f"{sub}_feat"], 2, extra_docs)
        out[f"{sub}_feat"] = grow(feat, 1, extra_subs)
        out[f"{sub}_mask"] = grow(batch[f"{sub}_mask"], 1, extra_subs, False)
    out["sub_weight"] = grow(batch["sub_weight"], 1, extra_subs)
    out["sub2_parent"] = grow(batch["sub2_parent"], 1, extra_subs, 0)
    return out


def test_padding_never_changes_a_score_or_the_ranking(bundle, prior):
    batch = bundle.to_torch()
    padded = pad_with_garbage(batch)
    context = torch.tensor([[2, 0, -1]] * len(bundle))
    candidates = torch.arange(9).repeat(len(bundle), 1)
    padded_candidates = torch.cat([candidates, torch.full((len(bundle), 2), -1)], 1)
    real = batch["doc_mask"]
    for label, model in models(prior):
        want = model.context_scores(batch, context, candidates)
        got = model.context_scores(padded, context, padded_candidates)[:, :9]
        torch.testing.assert_close(got[real], want[real], msg=label)
        assert torch.equal(model.rank(padded)[:, :9], model.rank(batch)), label


def test_models_are_sequential_without_parameters_and_check_params(prior):
    for label, model in models(prior):
        own = [name for name, _ in model.named_parameters() if not name.startswith("prior.")]
        assert model.sequential and not own, label
    with pytest.raises(ValueError):
        make("xquad", prior, prob="sigmoid")
    with pytest.raises(ValueError):
        make("hpm2", prior, alpha=1.5)
    with pytest.raises(TypeError):
        make("xquad", prior, alpha=0.5)


def test_list_probs_ignore_padding():
    scores = torch.tensor([[math.log(2.0), 0.0, 5.0]])
    mask = torch.tensor([[True, True, False]])
    assert list_probs(scores, mask, "softmax")[0].tolist() == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert list_probs(scores, mask, "minmax")[0].tolist() == pytest.approx([1.0, 0.0, 0.0])
    assert list_probs(torch.ones(1, 3), mask, "minmax")[0].tolist() == [0.0, 0.0, 0.0]
