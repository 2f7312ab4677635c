"""DSSA / HDSSA (srdiv.models.dssa): equations on hand-set weights, masks, greedy ranking, I/O, gradients."""

import math

import numpy as np
import pytest
import torch

from srdiv.features.bundle import random_bundle
from srdiv.models.base import greedy_rank
from srdiv.models.dssa import DSSA, HDSSA
from srdiv.registry import MODELS

VARIANTS = [
    (DSSA, {}),
    (DSSA, {"cell": "vanilla", "attention": "dot", "hidden": 6, "similarity": "dot"}),
    (DSSA, {"cell": "gru", "max_pooling": False, "rnn_input": "vec+rel"}),
    (HDSSA, {"beta": "learned"}),
    (HDSSA, {"beta": "balanced", "cell": "gru"}),
    (DSSA, {"accumulate": True}),
    (DSSA, {"accumulate": True, "max_pooling": False}),
    (HDSSA, {"accumulate": True}),
    (HDSSA, {"levels": [1]}),
    (HDSSA, {"levels": [2], "beta": "balanced"}),
    (DSSA, {"normalize": True}),
    (HDSSA, {"normalize": True}),
]
IDS = ["dssa", "dssa-dot-vanilla", "dssa-rnn-gru", "hdssa", "hdssa-b", "dssa-cov", "dssa-rnn-cov", "hdssa-cov",
       "hdssa-1", "hdssa-2", "dssa-unit", "hdssa-unit"]


def make(cls, params, bundle, seed=0):
    torch.manual_seed(seed)
    return cls(bundle.dims, **params).eval()


def all_candidates(batch):
    n, d = batch["doc_mask"].shape
    return torch.arange(d).expand(n, d)


@pytest.fixture
def bundle():
    return random_bundle(queries=4, docs=7, subs=3, subs2=5, emb=6, seed=3)


def test_registered():
    assert MODELS.get("dssa") is DSSA and MODELS.get("hdssa") is HDSSA


@pytest.mark.parametrize("cls,params", VARIANTS, ids=IDS)
def test_shapes_and_finite(cls, params, bundle):
    model = make(cls, params, bundle)
    batch = bundle.to_torch()
    context = torch.tensor([[0, 1, -1], [2, -1, -1], [-1, -1, -1], [1, 3, 0]])
    candidates = torch.tensor([[2, 3], [0, 1], [4, -1], [2, 2]])
    scores = model.context_scores(batch, context, candidates)
    assert scores.shape == (4, 2) and torch.isfinite(scores).all()
    assert model.context_scores(batch, context[:, :0], candidates).shape == (4, 2)
    assert model.rank(batch).shape == (4, 7)


def test_equations_by_hand():
    """Eqs. 7-11 with dot similarity, W_a = 0 (attention from max-pooling only) and known w_r, w_p."""
    b = random_bundle(queries=1, docs=3, subs=2, emb=2, feats=2, pad=False, seed=0)
    b.query_vec[:] = [[1.0, 0.0]]
    b.sub_vec[:] = [[[0.0, 1.0], [1.0, 1.0]]]
    b.doc_vec[:] = [[[1.0, 2.0], [0.5, 0.0], [0.0, 1.0]]]
    b.rel_feat[:] = [[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]
    b.sub_feat[:] = [[[[2.0, 0.0], [0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 3.0], [0.0, 1.0]]]]
    b.sub_weight[:] = [[0.25, 0.75]]
    lam = 0.4
    model = DSSA(b.dims, lam=lam, similarity="dot", hidden=3, dropout=0.0).eval()
    with torch.no_grad():
        model.W_a.zero_()
        model.w_r.weight[:] = torch.tensor([[1.0, -1.0]])
        model.w_p.weight[:] = torch.tensor([[0.5, 1.0]])
    batch = b.to_torch()

    def expected(context, d):
        e, x = b.doc_vec[0], b.rel_feat[0]
        rel_q = e[d] @ b.query_vec[0] + x[d] @ [1.0, -1.0]
        rel_k = [e[d] @ b.sub_vec[0, k] + b.sub_feat[0, k, d] @ [1.0, -1.0] for k in range(2)]
        pooled = [max((b.sub_feat[0, k, j] @ [0.5, 1.0] for j in context), default=0.0) for k in range(2)]
        w = [b.sub_weight[0, k] * math.exp(pooled[k]) for k in range(2)]
        return (1 - lam) * rel_q + lam * sum(w[k] / sum(w) * rel_k[k] for k in range(2))

    for context in ([], [0], [1, 0]):
        ctx = torch.tensor([context], dtype=torch.long).reshape(1, len(context))
        got = model.context_scores(batch, ctx, torch.tensor([[0, 1, 2]]))[0]
        np.testing.assert_allclose(got.detach().numpy(), [expected(context, d) for d in range(3)], rtol=1e-5)


def test_first_position_uses_initial_weights(bundle):
    """With no selected document attention is the softmax of log initial weights (h_0 = 0)."""
    model = make(DSSA, {"lam": 1.0}, bundle)
    batch = bundle.to_torch()
    subs = model.subtopics(batch)
    coef = model.attention(model.encode(batch, torch.zeros(4, 0, dtype=torch.long)), subs, None)[:, 0]
    expect = torch.where(subs.layer == 1, subs.weight, 0.0)   # lam = 1: the query's layer weight is 0
    torch.testing.assert_close(coef, expect)


def test_lambda_zero_ignores_context(bundle):
    model = make(DSSA, {"lam": 0.0}, bundle)
    batch, cand = bundle.to_torch(), all_candidates(bundle.to_torch())
    a = model.context_scores(batch, torch.full((4, 2), -1), cand)
    b = model.context_scores(batch, torch.tensor([[0, 1]] * 4), cand)
    torch.testing.assert_close(a, b)
    c = make(DSSA, {"lam": 0.5}, bundle).context_scores(batch, torch.tensor([[0, 1]] * 4), cand)
    assert not torch.allclose(a, c)


def test_hdssa_initial_weights():
    """Query 1; level-1 0.5/0.5; level-2 = parent / #children; a childless level-1 repeated on layer 2."""
    b = random_bundle(queries=1, docs=3, subs=2, subs2=3, pad=False, seed=0)
    b.sub2_parent[:] = [[0, 0, -1]]
    b.sub2_mask[:] = [[True, True, False]]
    subs = make(HDSSA, {}, b).subtopics(b.to_torch())
    assert subs.layer.tolist() == [0, 1, 1, 2, 2, 2, 2, 2]
    assert subs.mask[0].tolist() == [True, True, True, True, True, False, False, True]
    torch.testing.assert_close(subs.weight[0] * subs.mask[0], torch.tensor([1, .5, .5, .25, .25, 0, 0, .5]))
    for layer in range(3):
        assert subs.weight[0][subs.mask[0] & (subs.layer == layer)].sum().item() == pytest.approx(1.0)


@pytest.mark.parametrize("cls,params", VARIANTS, ids=IDS)
def test_padding_never_changes_real_scores(cls, params, bundle):
    """Perturbing padded candidates and padded suggestions leaves real candidates' scores unchanged."""
    model = make(cls, params, bundle)
    context = torch.tensor([[1, 0, -1]] * 4)
    before = model.context_scores(bundle.to_torch(), context, all_candidates(bundle.to_torch()))

    rng = np.random.default_rng(0)
    noisy = bundle.select(np.arange(len(bundle)))
    pad_docs, pad_subs, pad_subs2 = ~noisy.doc_mask, ~noisy.sub_mask, ~noisy.sub2_mask
    for name, where in [("doc_vec", pad_docs), ("rel_feat", pad_docs), ("init_score", pad_docs),
                        ("sub_vec", pad_subs), ("sub_weight", pad_subs), ("sub_feat", pad_subs),
                        ("sub2_vec", pad_subs2), ("sub2_feat", pad_subs2)]:
        arr = getattr(noisy, name)
        arr[where] = rng.normal(0, 100, arr[where].shape)
    for name in ("sub_feat", "sub2_feat"):                    # [Q, K, D, F] at padded documents
        by_doc = getattr(noisy, name).transpose(0, 2, 1, 3)
        by_doc[pad_docs] = rng.normal(0, 100, by_doc[pad_docs].shape)
    noisy.sub2_parent[pad_subs2] = 0                          # a padded child never counts for its parent
    assert pad_docs.any() and pad_subs.any() and pad_subs2.any()
    after = model.context_scores(noisy.to_torch(), context, all_candidates(noisy.to_torch()))
    real = torch.as_tensor(noisy.doc_mask)
    torch.testing.assert_close(after[real], before[real], rtol=0, atol=1e-5)
    assert torch.equal(model.rank(noisy.to_torch()), model.rank(bundle.to_torch()))


def test_greedy_rank_builds_no_graph(bundle):
    """greedy_rank scores without autograd, whoever calls it (the model's scores need no gradient)."""
    model = make(*VARIANTS[0], bundle)
    seen = []
    scores = model.context_scores

    def recording(*args):
        seen.append(torch.is_grad_enabled())
        return scores(*args)

    model.context_scores = recording
    greedy_rank(model, bundle.to_torch())
    assert seen and not any(seen)


@pytest.mark.parametrize("cls,params", VARIANTS, ids=IDS)
def test_greedy_rank_is_brute_force(cls, params, bundle):
    """Incremental rank == generic greedy_rank, and at every step the chosen document has
    the highest context score of all remaining ones, each scored on its own."""
    model = make(cls, params, bundle)
    batch = bundle.to_torch()
    order = model.rank(batch)
    assert torch.equal(order, greedy_rank(model, batch))
    for q in range(len(bundle)):
        one = {k: v[q:q + 1] for k, v in batch.items()}
        chosen = [d for d in order[q].tolist() if d >= 0]
        assert sorted(chosen) == np.flatnonzero(bundle.doc_mask[q]).tolist()
        for t, d in enumerate(chosen):
            ctx = torch.tensor([chosen[:t]], dtype=torch.long).reshape(1, t)
            rest = chosen[t:]
            each = [model.context_scores(one, ctx, torch.tensor([[r]])).item() for r in rest]
            assert each[0] == pytest.approx(max(each), abs=1e-6)


@pytest.mark.parametrize("cls,params", VARIANTS, ids=IDS)
def test_state_dict_round_trip(cls, params, bundle, tmp_path):
    model = make(cls, params, bundle, seed=0)
    torch.save(model.state_dict(), tmp_path / "model.pt")
    other = make(cls, params, bundle, seed=1)
    other.load_state_dict(torch.load(tmp_path / "model.pt"))
    batch = bundle.to_torch()
    context = torch.tensor([[2, 0], [1, -1], [0, 3], [4, 1]])
    cand = all_candidates(batch)
    assert torch.equal(model.context_scores(batch, context, cand), other.context_scores(batch, context, cand))
    assert torch.equal(model.rank(batch), other.rank(batch))


def list_pairwise_loss(model, batch, context, d1, d2, y, w):
    """Weighted logistic loss on s(C, d1) - s(C, d2) (DSSA Eq. 16), for the test only."""
    s = model.context_scores(batch, context, torch.stack([d1, d2], 1))
    return (w * torch.nn.functional.binary_cross_entropy_with_logits(s[:, 0] - s[:, 1], y, reduction="none")).mean()


@pytest.mark.parametrize("cls,params", VARIANTS, ids=IDS)
def test_gradients_reach_every_parameter(cls, params, bundle):
    model = make(cls, params, bundle).train()
    batch = bundle.to_torch()
    context = torch.tensor([[0, 1, 2], [3, 1, -1], [-1, -1, -1], [2, 0, -1]])
    d1, d2 = torch.tensor([3, 0, 1, 1]), torch.tensor([4, 2, 0, 3])
    loss = list_pairwise_loss(model, batch, context, d1, d2, torch.tensor([1.0, 0.0, 1.0, 0.0]), torch.ones(4))
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_accumulated_coverage_by_hand():
    """Extension: a'_{t,i} gains sum_{j<t} log(1 - sigmoid(x_{d_j,i}^T w_c + b_c)); with W_a = 0 and no
    max-pooling the attention is w_i prod_j (1 - c(d_j, i)), renormalised (xQuAD's novelty)."""
    b = random_bundle(queries=1, docs=3, subs=2, emb=2, feats=1, pad=False, seed=0)
    b.sub_feat[:] = [[[[3.0], [0.0], [-1.0]], [[0.0], [2.0], [-1.0]]]]       # x_{d,i}: subtopic i, document d
    b.sub_weight[:] = [[0.5, 0.5]]
    model = DSSA(b.dims, lam=1.0, max_pooling=False, accumulate=True, hidden=3, dropout=0.0).eval()
    with torch.no_grad():
        model.W_a.zero_()
        model.w_c.weight[:] = 1.0
        model.w_c.bias[:] = -0.5
    batch = b.to_torch()
    subs = model.subtopics(batch)

    def sigmoid(z):
        return 1 / (1 + math.exp(-z))

    for context in ([], [0], [0, 2], [1, 0]):
        seq = torch.tensor([context], dtype=torch.long).reshape(1, len(context))
        coef = model.attention(model.encode(batch, seq), subs, model.pooled_coverage(subs, seq))[0, -1, 1:]
        keep = [0.5 * math.prod(1 - sigmoid(b.sub_feat[0, i, j, 0] - 0.5) for j in context) for i in range(2)]
        np.testing.assert_allclose(coef.detach().numpy(), np.array(keep) / sum(keep), rtol=1e-5)
    # the paper's max-pooling alone: a non-relevant document after a relevant one changes nothing
    paper = DSSA(b.dims, lam=1.0, hidden=3, dropout=0.0).eval()
    with torch.no_grad():
        paper.W_a.zero_()
        paper.w_p.weight[:] = 1.0
    pooled = paper.pooled_coverage(subs, torch.tensor([[0, 2]]))
    torch.testing.assert_close(pooled[0, 1, 1:], pooled[0, 2, 1:])


def test_hdssa_levels_pick_the_layers():
    b = random_bundle(queries=1, docs=3, subs=2, subs2=3, pad=False, seed=0)
    b.sub2_parent[:] = [[0, 0, -1]]
    b.sub2_mask[:] = [[True, True, False]]
    batch = b.to_torch()
    full = make(HDSSA, {}, b).subtopics(batch)
    one = make(HDSSA, {"levels": [1]}, b).subtopics(batch)
    two = make(HDSSA, {"levels": [2]}, b).subtopics(batch)
    assert one.layer.tolist() == [0, 1, 1] and two.layer.tolist() == [0, 1, 1, 1, 1, 1]
    torch.testing.assert_close(one.weight, full.weight[:, :3])
    torch.testing.assert_close(two.weight, torch.cat([full.weight[:, :1], full.weight[:, 3:]], 1))
    assert make(HDSSA, {"levels": [2]}, b).layer_weights().shape == (2,)
    with pytest.raises(ValueError, match="levels"):
        HDSSA(b.dims, levels=[3])


def test_hdssa_beta_balanced_vs_learned(bundle):
    learned, balanced = make(HDSSA, {"beta": "learned"}, bundle), make(HDSSA, {"beta": "balanced"}, bundle)
    names = {n for n, _ in learned.named_parameters()} - {n for n, _ in balanced.named_parameters()}
    assert names == {"beta_logits"}
    torch.testing.assert_close(learned.layer_weights(), torch.ones(3))
    batch, cand = bundle.to_torch(), all_candidates(bundle.to_torch())
    ctx = torch.tensor([[0, 1]] * 4)
    torch.testing.assert_close(learned.context_scores(batch, ctx, cand), balanced.context_scores(batch, ctx, cand))
    with torch.no_grad():
        learned.beta_logits[:] = torch.tensor([0.0, 0.0, 1.0])
    assert learned.layer_weights().sum().item() == pytest.approx(3.0)
    assert not torch.allclose(learned.context_scores(batch, ctx, cand), balanced.context_scores(batch, ctx, cand))


def test_bad_params(bundle):
    with pytest.raises(ValueError, match="hidden"):
        DSSA(bundle.dims, attention="dot", hidden=bundle.dims.emb + 1)
    with pytest.raises(ValueError, match="lam"):
        DSSA(bundle.dims, lam=1.5)
    with pytest.raises(TypeError):
        HDSSA(bundle.dims, lam=0.5)
    with pytest.raises(ValueError, match="beta"):
        HDSSA(bundle.dims, beta="half")


def test_learns_to_diversify():
    """A few list-pairwise steps on a bundle whose suggestion features reveal the subtopic
    labels: the trained model's top 3 covers (nearly) every subtopic, the untrained one's does not."""
    b = random_bundle(queries=8, docs=8, subs=3, subtopics=3, emb=4, feats=2, pad=False, seed=5)
    b.sub_feat[:] = 0.0
    b.sub_feat[..., 0] = b.labels.transpose(0, 2, 1)                 # x_{d,i_k}[0] = d covers subtopic k
    b.rel_feat[:] = 0.0
    batch = b.to_torch()
    torch.manual_seed(0)
    model = DSSA(b.dims, lam=0.9, hidden=4, dropout=0.0)
    rng = np.random.default_rng(0)

    def coverage(m):
        top = m.eval().rank(batch)[:, :3]
        return b.labels[np.arange(8)[:, None], top.numpy()].max(1).sum()

    start = coverage(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    labels = torch.as_tensor(b.labels)
    for _ in range(80):
        model.train()
        context = torch.as_tensor(np.stack([rng.permutation(8)[:2] for _ in range(8)]))
        d1, d2 = torch.as_tensor(rng.integers(0, 8, (2, 8)))
        covered = labels[torch.arange(8)[:, None], context].amax(1)              # [B, S]
        gain = lambda d: ((1 - covered) * labels[torch.arange(8), d]).sum(1)    # new subtopics
        g1, g2 = gain(d1), gain(d2)
        loss = list_pairwise_loss(model, batch, context, d1, d2, (g1 > g2).float(), (g1 - g2).abs())
        opt.zero_grad()
        loss.backward()
        opt.step()
    best = b.labels.max(1).sum()                                      # every subtopic covered
    assert start < best - 3 and coverage(model) >= best - 1


@pytest.mark.parametrize("cls", [DSSA, HDSSA])
def test_normalize_reads_directions_only(cls, bundle):
    """Extension: with ``normalize`` every vector is scaled to unit length first, so scaling any
    vector by a positive number changes no score and no ranking; without it, scores change."""
    batch = bundle.to_torch()
    gen = torch.Generator().manual_seed(1)
    scaled = {k: v * (0.1 + 10 * torch.rand(*v.shape[:-1], 1, generator=gen)) if k.endswith("_vec") else v
              for k, v in batch.items()}
    context, cand = torch.tensor([[0, 1, -1], [2, -1, -1], [-1, -1, -1], [1, 3, 0]]), all_candidates(batch)
    unit = make(cls, {"normalize": True}, bundle)
    torch.testing.assert_close(unit.context_scores(scaled, context, cand), unit.context_scores(batch, context, cand))
    assert torch.equal(unit.rank(scaled), unit.rank(batch))
    raw = make(cls, {}, bundle)
    assert not torch.allclose(raw.context_scores(scaled, context, cand), raw.context_scores(batch, context, cand))
    # unit vectors in: the two models (same weights) give the same scores
    ones = {k: torch.nn.functional.normalize(v, dim=-1) if k.endswith("_vec") else v for k, v in batch.items()}
    torch.testing.assert_close(raw.context_scores(ones, context, cand), unit.context_scores(batch, context, cand))
