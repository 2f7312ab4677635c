"""R-LTR, NTN (R-LTR-NTN / PAMM-NTN), the Plackett-Luce ranking probability and the PAMM objective."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from srdiv.features.bundle import random_bundle
from srdiv.models.base import greedy_rank
from srdiv.models.base import context_prefix_scores
from srdiv.models.rltr import NTN, RLTR
from srdiv.objectives.pamm import PAMM, pamm_loss
from srdiv.objectives.plackett_luce import ranking_log_prob
from srdiv.sampling.samples import SampleSettings, make_samples


def _tiny_batch(n_docs=3, feats=2, pair_feats=2, emb=2, seed=0):
    """One list of ``n_docs`` real candidates (float64) from a random bundle."""
    b = random_bundle(queries=1, docs=n_docs, feats=feats, div_feats=pair_feats, emb=emb, seed=seed, pad=False)
    return {k: v.double() if v.is_floating_point() else v for k, v in b.to_torch().items()}, b.dims


def _set(model, **values):
    with torch.no_grad():
        for name, value in values.items():
            getattr(model, name).copy_(torch.as_tensor(value, dtype=getattr(model, name).dtype))
    return model


# --- scores -----------------------------------------------------------------------------------

@pytest.mark.parametrize("aggregate, novelty", [("min", [1.0, 0.0]), ("max", [2.0, 5.0]), ("avg", [1.5, 2.5])])
def test_rltr_marginal_relevance_by_hand(aggregate, novelty):
    batch, dims = _tiny_batch()
    batch["rel_feat"][0] = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    div = torch.zeros(3, 3, 2, dtype=torch.float64)
    div[2, 0] = torch.tensor([1.0, 5.0])  # candidate 2 against selected 0
    div[2, 1] = torch.tensor([2.0, 0.0])  # candidate 2 against selected 1
    batch["div_feat"][0] = div
    model = _set(RLTR(dims, aggregate=aggregate).double(), relevance=[1.0, 2.0], novelty=[10.0, 1.0])
    empty = model.context_scores(batch, torch.zeros(1, 0, dtype=torch.long), torch.tensor([[0, 1, 2]]))
    assert empty.tolist() == [[1.0, 2.0, 3.0]]  # no novelty term while S is empty
    padded = model.context_scores(batch, torch.tensor([[-1, -1]]), torch.tensor([[0, 1, 2]]))
    assert padded.tolist() == [[1.0, 2.0, 3.0]]  # a context of padding only is empty too
    # context [0, -1, 1]: the padding entry is ignored
    scores = model.context_scores(batch, torch.tensor([[0, -1, 1]]), torch.tensor([[2]]))
    assert scores.item() == pytest.approx(3.0 + 10.0 * novelty[0] + novelty[1])


def test_ntn_max_pooling_picks_the_most_similar_selected_document():
    batch, dims = _tiny_batch(n_docs=4, emb=2)
    batch["doc_vec"][0] = torch.tensor([[1.0, 0.0], [0.2, 0.1], [0.9, 0.3], [0.0, 1.0]])
    batch["rel_feat"].zero_()
    w = torch.stack([torch.eye(2), torch.tensor([[0.0, 1.0], [0.0, 0.0]])])  # slice 1: v^T v_j; slice 2: v_1 v_j2
    model = _set(NTN(dims, slices=2).double(), tensor=w, novelty=[1.0, 0.0])
    context = torch.tensor([[1, 2, 3]])
    score = model.context_scores(batch, context, torch.tensor([[0]]))
    # slice 1 signals of candidate 0: tanh(0.2), tanh(0.9), tanh(0): document 2 wins
    assert score.item() == pytest.approx(math.tanh(0.9))
    _set(model, novelty=[0.0, 1.0])  # slice 2 signals: tanh(0.1), tanh(0.3), tanh(1.0): document 3 wins
    assert model.context_scores(batch, context, torch.tensor([[0]])).item() == pytest.approx(math.tanh(1.0))
    # only the winner of the max feeds the score: moving a loser below it changes nothing
    batch["doc_vec"][0, 1] = torch.tensor([0.0, -0.5])
    assert model.context_scores(batch, context, torch.tensor([[0]])).item() == pytest.approx(math.tanh(1.0))


@pytest.mark.parametrize("make", [
    lambda dims: RLTR(dims, aggregate="min"), lambda dims: RLTR(dims, aggregate="max"),
    lambda dims: RLTR(dims, aggregate="avg"), lambda dims: NTN(dims, slices=3, init_scale=0.3),
])
def test_rank_equals_generic_greedy_and_padding_never_changes_a_score(make):
    torch.manual_seed(0)
    bundle = random_bundle(queries=5, docs=9, emb=5, seed=3)
    batch = bundle.to_torch()
    model = make(bundle.dims)
    order = model.rank(batch)
    assert torch.equal(order, greedy_rank(model, batch))
    n_real = batch["doc_mask"].sum(1)
    assert ((order >= 0).sum(1) == n_real).all() and (order[-1, n_real[-1]:] == -1).all()
    for row in order:  # a permutation of the real candidates
        real = row[row >= 0]
        assert len(set(real.tolist())) == len(real)

    # garbage in every padded slot, and padding interleaved in the context, leave real scores unchanged
    context = order[:, :3]
    candidates = torch.arange(9).expand(5, 9)
    before = model.context_scores(batch, context, candidates)
    noisy = dict(batch)
    pad = ~batch["doc_mask"]
    for key in ("doc_vec", "rel_feat"):
        noisy[key] = torch.where(pad[..., None], torch.randn_like(batch[key]) * 100, batch[key])
    pair_pad = (pad[:, :, None] | pad[:, None, :])[..., None]
    noisy["div_feat"] = torch.where(pair_pad, torch.randn_like(batch["div_feat"]) * 100, batch["div_feat"])
    spaced = torch.full((5, 6), -1)
    spaced[:, ::2] = context
    after = model.context_scores(noisy, spaced, candidates)
    real = batch["doc_mask"]
    assert torch.allclose(before[real], after[real], atol=1e-6)

    # the running-aggregate prefix scores equal context_scores at every prefix (rankings of 2 lengths)
    short = torch.full_like(order, -1)
    short[:, :4] = order[:, :4].flip(1)
    rankings = torch.stack([order, short], 1)  # [B, N=2, L]
    fast, slow = model.prefix_scores(batch, rankings), context_prefix_scores(model, batch, rankings)
    assert fast.shape == (5, 2, 9, 9)
    real = batch["doc_mask"][:, None, None, :]
    assert torch.allclose(torch.where(real, fast, 0.0), torch.where(real, slow, 0.0), atol=1e-5)


# --- Plackett-Luce ranking probability ---------------------------------------------------------

def test_ranking_probabilities_sum_to_one_over_all_permutations():
    torch.manual_seed(1)
    batch, dims = _tiny_batch(n_docs=4, emb=3)
    model = NTN(dims, slices=2).double()
    perms = torch.tensor(list(itertools.permutations(range(4))))[None]  # [1, 24, 4]
    probs = ranking_log_prob(model, batch, perms).exp()
    assert probs.sum().item() == pytest.approx(1.0)
    top2 = torch.tensor(list(itertools.permutations(range(4), 2)))
    top2 = torch.cat([top2, torch.full((12, 2), -1)], 1)[None]  # top-2 rankings padded with -1
    assert ranking_log_prob(model, batch, top2).exp().sum().item() == pytest.approx(1.0)
    # [B, L] and [B, N, L] agree, one list or many
    assert ranking_log_prob(model, batch, perms[:, 5]).item() == pytest.approx(probs[0, 5].log().item())


# --- autograd against the paper's gradient equations ------------------------------------------

def _paper_gradients(x, v, omega, mu, w, ranking):
    """Gradients of -log Pr(Y|X) by NTN Eqs. 6-9 (numpy, one list, every candidate ranked)."""
    g_omega, g_mu, g_w = np.zeros_like(omega), np.zeros_like(mu), np.zeros_like(w)
    for r in range(len(ranking) - 1):
        chosen, rest = ranking[:r], ranking[r:]
        t = np.zeros((len(rest), len(mu)))  # Eq. 2 signals t of each remaining document
        omega_mat = np.zeros((len(rest),) + w.shape)  # Eq. 9 Omega of each remaining document, per slice
        if chosen:
            for a, k in enumerate(rest):
                bil = np.einsum("e,zef,jf->zj", v[k], w, v[chosen])  # [z, |S|]
                tau = bil.argmax(1)  # max-pooling position per slice (tanh is increasing)
                for i in range(len(mu)):
                    t[a, i] = np.tanh(bil[i, tau[i]])
                    omega_mat[a, i] = (1 - np.tanh(bil[i, tau[i]]) ** 2) * np.outer(v[k], v[chosen[tau[i]]])
        f = x[rest] @ omega + t @ mu
        p = np.exp(f - f.max())
        p /= p.sum()
        g_omega += p @ x[rest] - x[rest[0]]  # Eq. 6
        g_mu += p @ t - t[0]  # Eq. 7
        g_w += np.einsum("a,i,aief->ief", p, mu, omega_mat) - mu[:, None, None] * omega_mat[0]  # Eq. 8
    return g_omega, g_mu, g_w


def _autograd(model, loss):
    model.zero_grad()
    loss.backward()
    return [p.grad.numpy().copy() for p in (model.relevance, model.novelty, model.tensor)]


def test_rltr_ntn_autograd_equals_equations_6_to_9():
    torch.manual_seed(2)
    batch, dims = _tiny_batch(n_docs=5, feats=3, emb=3, seed=4)
    model = NTN(dims, slices=2, init_scale=0.5).double()
    ranking = [3, 0, 4, 1, 2]
    got = _autograd(model, -ranking_log_prob(model, batch, torch.tensor([ranking])).sum())
    want = _paper_gradients(batch["rel_feat"][0].numpy(), batch["doc_vec"][0].numpy(), model.relevance.detach().numpy(),
                            model.novelty.detach().numpy(), model.tensor.detach().numpy(), ranking)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_pamm_ntn_autograd_equals_equations_11_to_13():
    """One violating pair: the loss gradient is minus Algorithm 3's ascent direction Eqs. 11-13."""
    torch.manual_seed(3)
    batch, dims = _tiny_batch(n_docs=4, feats=2, emb=3, seed=5)
    model = NTN(dims, slices=2, init_scale=0.5).double()
    pos, neg = [2, 0, 3, 1], [1, 3, 0, 2]
    loss = pamm_loss(model, batch, torch.tensor([[pos]]), torch.tensor([[neg]]),
                     torch.tensor([[0.9]]), torch.tensor([[0.2]]))
    got = _autograd(model, loss)
    args = (batch["rel_feat"][0].numpy(), batch["doc_vec"][0].numpy(), model.relevance.detach().numpy(),
            model.novelty.detach().numpy(), model.tensor.detach().numpy())
    ascent = [-(gp - gn) for gp, gn in zip(_paper_gradients(*args, pos), _paper_gradients(*args, neg))]
    for g, a in zip(got, ascent):
        np.testing.assert_allclose(-g, a, rtol=1e-9, atol=1e-12)


# --- PAMM -------------------------------------------------------------------------------------

def test_pamm_updates_only_pairs_that_violate_the_margin():
    batch, dims = _tiny_batch(n_docs=3)
    batch["rel_feat"][0] = torch.tensor([[3.0, 0.0], [0.0, 0.0], [-3.0, 0.0]])
    model = _set(RLTR(dims).double(), relevance=[4.0, 0.0], novelty=[0.0, 0.0])
    pos, neg = torch.tensor([[[0, 1, 2]]]), torch.tensor([[[2, 1, 0], [1, 0, 2]]])
    log_p = ranking_log_prob(model, batch, torch.cat([pos, neg], 1))[0]
    p_pos, p_neg = log_p.exp()[0].item(), log_p.exp()[1:].tolist()
    assert p_pos > 0.99  # the model already prefers the positive ranking by far
    # margins E(Y+) - E(Y-) below P(Y+) - P(Y-): nothing to update, the loss is exactly zero
    loss = pamm_loss(model, batch, pos, neg, torch.tensor([[0.9]]), torch.tensor([[0.5, 0.6]]))
    assert loss.item() == 0.0
    loss.backward()
    assert all(p.grad is None or not p.grad.any() for p in model.parameters())
    # a margin of 1 > P(Y+) - P(Y-) for the second negative only: the loss is its log-ratio
    loss = pamm_loss(model, batch, pos, neg, torch.tensor([[1.0]]), torch.tensor([[0.5, 0.0]]))
    assert p_pos - p_neg[0] > 0.5 and p_pos - p_neg[1] <= 1.0
    assert loss.item() == pytest.approx(-(log_p[0] - log_p[2]).item())


def test_pamm_objective_batches_every_sampled_query_with_its_rankings():
    bundle = random_bundle(queries=7, docs=8, emb=4, seed=6)
    samples = make_samples(bundle.select([5, 1, 3, 0, 6, 2, 4]), SampleSettings(pamm_positive=2, pamm_negative=3), 0)
    objective = PAMM()
    objective.samples = samples
    prepared = objective.prepare(bundle, np.random.default_rng(0))
    data = bundle.to_torch()
    torch.manual_seed(0)
    model = RLTR(bundle.dims)
    seen = []
    for minibatch in objective.batches(prepared, len(bundle), 3, np.random.default_rng(1)):
        seen += minibatch.rows.tolist()
        assert minibatch.pos.shape == (len(minibatch.rows), 2, 8) and minibatch.neg_metric.shape == (len(minibatch.rows), 3)
        k = [samples.qids.tolist().index(bundle.qids[r]) for r in minibatch.rows]
        want = pamm_loss(model, {key: v[torch.as_tensor(minibatch.rows)] for key, v in data.items()},
                         torch.as_tensor(samples.pamm["pamm_pos"][k]).long(),
                         torch.as_tensor(samples.pamm["pamm_neg"][k]).long(),
                         torch.as_tensor(samples.pamm["pamm_pos_metric"][k]),
                         torch.as_tensor(samples.pamm["pamm_neg_metric"][k]))
        assert objective.loss(model, data, minibatch).item() == pytest.approx(want.item())
    assert sorted(seen) == list(range(7))
