"""MDP-DIV: the policy, episodes, rewards and the REINFORCE gradient against the paper's equations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from srdiv.features.bundle import random_bundle
from srdiv.metrics import alpha_dcg, rank_labels, s_recall
from srdiv.models.base import greedy_rank
from srdiv.models.mdp_div import MDPDiv
from srdiv.objectives.reinforce import Episodes, Reinforce, returns, step_rewards


def _data(queries=6, docs=9, emb=5, seed=0, double=False):
    bundle = random_bundle(queries=queries, docs=docs, emb=emb, subtopics=4, seed=seed)
    batch = bundle.to_torch()
    if double:
        batch = {k: v.double() if v.is_floating_point() else v for k, v in batch.items()}
    return bundle, batch


def test_episodes_never_select_a_document_twice_and_pad_last():
    bundle, batch = _data()
    torch.manual_seed(0)
    model = MDPDiv(bundle.dims, hidden=3)
    n_real = batch["doc_mask"].sum(1)
    for seed in range(8):
        order, log_probs = model.rollout(batch, torch.Generator().manual_seed(seed))
        for row, n in zip(order, n_real):
            assert sorted(row[:n].tolist()) == list(range(n))  # each real candidate exactly once
            assert (row[n:] == -1).all()
        assert (log_probs <= 0).all() and (log_probs[order < 0] == 0).all()
        # the last real step has a single action left: probability 1
        assert torch.allclose(log_probs[torch.arange(6), n_real - 1], torch.zeros(6), atol=1e-6)
    same = [model.rollout(batch, torch.Generator().manual_seed(7))[0] for _ in range(2)]
    assert torch.equal(*same)  # the seed fixes the episode


def test_rank_takes_the_argmax_action_as_the_generic_greedy():
    bundle, batch = _data(seed=1)
    torch.manual_seed(1)
    model = MDPDiv(bundle.dims, hidden=5)
    assert torch.equal(model.rank(batch), greedy_rank(model, batch))


def test_padding_never_changes_a_score():
    bundle, batch = _data(seed=2)
    torch.manual_seed(2)
    model = MDPDiv(bundle.dims, hidden=4)
    order = model.rank(batch)
    candidates = torch.arange(9).expand(6, 9)
    before = model.context_scores(batch, order[:, :3], candidates)
    noisy = dict(batch)
    noisy["doc_vec"] = torch.where(batch["doc_mask"][..., None], batch["doc_vec"], 50.0)
    spaced = torch.full((6, 5), -1)
    spaced[:, [0, 2, 3]] = order[:, :3]
    after = model.context_scores(noisy, spaced, candidates)
    assert torch.allclose(before[batch["doc_mask"]], after[batch["doc_mask"]], atol=1e-6)


@pytest.mark.parametrize("reward", ["alpha_dcg", "s_recall"])
def test_rewards_sum_to_the_final_metric_when_gamma_is_one(reward):
    bundle, batch = _data(seed=3)
    order = np.array([np.random.default_rng(q).permutation(9) for q in range(6)])
    order[-1, batch["doc_mask"][-1].sum():] = -1
    order[-1, :5] = np.random.default_rng(9).permutation(5)
    labels = bundle.labels * bundle.doc_mask[..., None]
    rewards = step_rewards(labels, order, reward)
    assert (rewards[order < 0] == 0).all()
    g0 = returns(torch.as_tensor(rewards), 1.0)[:, 0].numpy()
    ranked = rank_labels(labels, np.clip(order, 0, None)) * (order >= 0)[..., None]
    want = alpha_dcg(ranked, 0.5) if reward == "alpha_dcg" else s_recall(ranked)
    np.testing.assert_allclose(g0, want, rtol=1e-12)


def test_discounted_returns_by_hand():
    g = returns(torch.tensor([[1.0, 2.0, 3.0]]), 0.5)
    assert g.tolist() == [[1.0 + 0.5 * 2.0 + 0.25 * 3.0, 2.0 + 0.5 * 3.0, 3.0]]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _paper_policy_gradients(q, x, vq, v, w, u, order, weight):
    """``sum_t weight_t * grad log pi(a_t|s_t)`` by MDP-DIV Eq. 5 and its recursive state derivatives (numpy).

    Jacobians ``J[k, i, j] = d h_k / d theta_ij`` follow Section 4.2:
    ``d h_0/d V_q = diag(h_0(1-h_0)) I q``, ``d h_t/d V_q = diag(h_t(1-h_t)) W d h_{t-1}/d V_q``,
    ``d h_t/d V = diag(h_t(1-h_t)) (I x_{m(a_{t-1})} + W d h_{t-1}/d V)``, likewise ``W`` with ``h_{t-1}``.
    """
    k_dim = len(w)
    eye = np.eye(k_dim)
    h = _sigmoid(vq @ q)
    j_vq = (h * (1 - h))[:, None, None] * eye[:, :, None] * q[None, None, :]
    j_v, j_w = np.zeros((k_dim,) + v.shape), np.zeros((k_dim,) + w.shape)
    grads = [np.zeros_like(p) for p in (vq, v, w, u)]
    remaining = list(range(len(x)))
    for t, a in enumerate(order):
        f = x[remaining] @ u @ h
        pi = np.exp(f - f.max())
        pi /= pi.sum()
        for p, a_prime in zip(pi, remaining):  # grad f(a_t) - sum_a pi(a) grad f(a)
            coef = weight[t] * ((a_prime == a) - p)
            ux = u.T @ x[a_prime]  # d f / d h
            grads[0] += coef * np.einsum("k,kij->ij", ux, j_vq)
            grads[1] += coef * np.einsum("k,kij->ij", ux, j_v)
            grads[2] += coef * np.einsum("k,kij->ij", ux, j_w)
            grads[3] += coef * np.outer(x[a_prime], h)  # grad_U f = x h^T
        remaining.remove(a)
        h_prev, h = h, _sigmoid(v @ x[a] + w @ h)
        d = (h * (1 - h))[:, None, None]
        j_vq = d * np.einsum("km,mij->kij", w, j_vq)
        j_v = d * (eye[:, :, None] * x[a][None, None, :] + np.einsum("km,mij->kij", w, j_v))
        j_w = d * (eye[:, :, None] * h_prev[None, None, :] + np.einsum("km,mij->kij", w, j_w))
    return grads


@pytest.mark.parametrize("return_only", [False, True])
def test_reinforce_autograd_equals_the_papers_policy_gradient(return_only):
    bundle, data = _data(queries=2, docs=5, emb=3, seed=4, double=True)
    torch.manual_seed(4)
    model = MDPDiv(bundle.dims, hidden=2).double()
    objective = Reinforce(reward="alpha_dcg", return_only=return_only)
    minibatch = Episodes(np.array([0, 1]), seed=11)
    order, _, rewards = objective.episode(model, data, minibatch.seed)
    model.zero_grad()
    objective.loss(model, data, minibatch).backward()
    want = [np.zeros(p.shape) for p in model.parameters()]
    for q in range(2):
        n = int(data["doc_mask"][q].sum())
        g = returns(rewards[q:q + 1], 1.0)[0].numpy()
        weight = np.full(n, g[0]) if return_only else g[:n]
        params = [p.detach().numpy() for p in (model.query_state, model.doc_state, model.transition, model.policy)]
        grads = _paper_policy_gradients(data["query_vec"][q].numpy(), data["doc_vec"][q, :n].numpy(), *params,
                                        order[q, :n].tolist(), weight)
        for total, g_q in zip(want, grads):
            total -= g_q / 2  # loss = -mean over the 2 lists (gradient ascent -> descent)
    got = [model.query_state.grad, model.doc_state.grad, model.transition.grad, model.policy.grad]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-9, atol=1e-12)


def test_epoch_end_reports_sampled_and_argmax_alpha_dcg():
    bundle, data = _data(seed=5)
    torch.manual_seed(5)
    model = MDPDiv(bundle.dims, hidden=3)
    objective = Reinforce(reward="s_recall")
    objective.prepare(bundle, np.random.default_rng(0))
    objective.monitor = {"test": bundle.select([0, 1])}
    sampled = []
    for seed, rows in [(1, np.array([0, 2, 4])), (2, np.array([1, 3, 5]))]:
        objective.loss(model, data, Episodes(rows, seed))
        order, _, _ = Reinforce().episode(model, {k: v[torch.as_tensor(rows)] for k, v in data.items()}, seed)
        labels = bundle.labels[rows] * bundle.doc_mask[rows, :, None]
        sampled.append(alpha_dcg(rank_labels(labels, np.clip(order.numpy(), 0, None)) * (order.numpy() >= 0)[..., None]))
    stats = objective.epoch_end(model)
    assert set(stats) == {"train_sample", "train_argmax", "test_argmax"}
    assert stats["train_sample"] == pytest.approx(np.concatenate(sampled).mean())
    order = model.rank(data).numpy()
    labels = bundle.labels * bundle.doc_mask[..., None]
    argmax = alpha_dcg(rank_labels(labels, np.clip(order, 0, None)) * (order >= 0)[..., None])
    assert stats["train_argmax"] == pytest.approx(argmax.mean())
    assert stats["test_argmax"] == pytest.approx(argmax[:2].mean())
    assert np.isnan(objective.epoch_end(model)["train_sample"])  # reset after each epoch


def test_step_rewards_are_the_alpha_dcg_increments_by_hand():
    # doc 0 covers subtopic 0, doc 1 subtopics 0 and 1, doc 2 none; episode order 1, 0, 2, then padding
    labels = np.array([[[1, 0], [1, 1], [0, 0], [0, 0]]], dtype=float)
    order = np.array([[1, 0, 2, -1]])
    rewards = step_rewards(labels, order, "alpha_dcg", alpha=0.5)
    # r_1 = (1 + 1) / log2(2); r_2 = (1 - 0.5)^1 / log2(3) (subtopic 0 seen once); r_3 = 0; padding 0
    want = [2.0, 0.5 / np.log2(3.0), 0.0, 0.0]
    np.testing.assert_allclose(rewards, [want], rtol=1e-12)
    np.testing.assert_allclose(returns(torch.as_tensor(rewards), 1.0).numpy(),
                               [[2.0 + want[1], want[1], 0.0, 0.0]], rtol=1e-12)


def test_rollout_log_probs_are_the_masked_softmax_of_the_ranking_path_state():
    bundle, batch = _data(seed=6)
    torch.manual_seed(6)
    model = MDPDiv(bundle.dims, hidden=3)
    order, log_probs = model.rollout(batch, torch.Generator().manual_seed(3))
    candidates = torch.arange(9).expand(6, 9)
    remaining = batch["doc_mask"].clone()
    for t in range(9):
        active = order[:, t] >= 0
        logits = model.context_scores(batch, order[:, :t], candidates).masked_fill(~remaining, float("-inf"))
        probs = logits.softmax(1)
        assert (probs[active][~remaining[active]] == 0).all()   # chosen and padding documents: no probability
        want = probs[active, order[active, t]].log()
        assert torch.allclose(log_probs[active, t], want, atol=1e-6)
        remaining[active, order[active, t]] = False


def test_one_update_makes_a_rewarded_episode_more_likely():
    bundle, batch = _data(queries=1, seed=7)
    batch["labels"] = torch.ones_like(batch["labels"])   # every action earns a positive return
    torch.manual_seed(7)
    model = MDPDiv(bundle.dims, hidden=3)
    objective = Reinforce()
    minibatch = Episodes(np.array([0]), seed=5)
    order, before, _ = objective.episode(model, batch, minibatch.seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    optimizer.zero_grad()
    objective.loss(model, batch, minibatch).backward()
    optimizer.step()
    # log pi of the same action sequence, re-scored with the updated parameters
    candidates = torch.arange(9)[None]
    remaining = batch["doc_mask"].clone()
    total = 0.0
    with torch.no_grad():
        for t in range(9):
            logits = model.context_scores(batch, order[:, :t], candidates).masked_fill(~remaining, float("-inf"))
            total += float(logits.log_softmax(1)[0, order[0, t]])
            remaining[0, order[0, t]] = False
    assert total > float(before.sum())   # gradient ascent on G_t log pi


def test_ties_keep_the_initial_run_order():
    bundle, batch = _data(seed=8)
    batch["doc_vec"] = torch.ones_like(batch["doc_vec"])   # every candidate scores the same at every step
    model = MDPDiv(bundle.dims, hidden=3)
    order = model.rank(batch)
    n_real = batch["doc_mask"].sum(1)
    for row, n in zip(order, n_real):
        assert row[:n].tolist() == list(range(n)) and (row[n:] == -1).all()


def test_the_row_reads_the_papers_doc2vec_vectors_on_every_collection():
    # Section 5.1: query and document vectors from doc2vec, whatever the dataset's default bundle (the planted
    # collection's is LDA); only the LDA variant reads LDA
    from pathlib import Path

    from srdiv.experiment import model_spec
    from srdiv.params import load_params

    params = load_params([Path(__file__).resolve().parents[1] / "params.yaml"])
    for row in ("MDP-DIV", "MDP-DIV-PaperEstimator", "MDP-DIV-SRecall", "MDP-DIV-ReturnOnly", "MDP-DIV-M20",
                "MDP-DIV-K100"):
        assert model_spec(params, row).representation == "doc2vec", row
    assert model_spec(params, "MDP-DIV-LDA").representation == "lda"


def test_mean_baseline_cancels_returns_every_episode_shares():
    bundle, batch = _data(queries=3, seed=9)
    batch["labels"] = torch.ones_like(batch["labels"])   # every order of a list earns the same rewards
    torch.manual_seed(9)
    model = MDPDiv(bundle.dims, hidden=3)
    minibatch = Episodes(np.array([0, 2]), seed=4)
    plain = Reinforce(episodes=4).loss(model, batch, minibatch)
    assert plain.item() > 0                               # -G log pi with G > 0 and log pi < 0
    loss = Reinforce(episodes=4, baseline="mean").loss(model, batch, minibatch)
    loss.backward()
    assert loss.item() == pytest.approx(0.0, abs=1e-6)
    assert all(torch.allclose(p.grad, torch.zeros_like(p), atol=1e-6) for p in model.parameters())


def test_mean_baseline_weights_by_hand():
    bundle, batch = _data(queries=2, docs=4, seed=10, double=True)
    torch.manual_seed(10)
    model = MDPDiv(bundle.dims, hidden=2).double()
    objective = Reinforce(episodes=3, baseline="mean")
    minibatch = Episodes(np.array([1, 0]), seed=6)
    # the 3 episodes of each list, as the objective samples them: rows tiled, one sampler
    tiled = {k: v[torch.as_tensor([1, 0, 1, 0, 1, 0])] for k, v in batch.items()}
    _, log_probs, rewards = Reinforce().episode(model, tiled, minibatch.seed)
    g = returns(rewards, 1.0).view(3, 2, -1)
    want = -((g - g.mean(0)) * log_probs.view(3, 2, -1)).sum() / 6
    assert objective.loss(model, batch, minibatch).item() == pytest.approx(want.item(), rel=1e-12)


def test_reinforce_rejects_a_baseline_it_cannot_form():
    with pytest.raises(ValueError, match="episodes >= 2"):
        Reinforce(baseline="mean")
    with pytest.raises(ValueError, match="baseline must be one of"):
        Reinforce(baseline="median", episodes=4)
