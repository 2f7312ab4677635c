"""DESA (CIKM 2020): shapes, masks, the training sequence mask, variants, save/load, gradients."""

import pytest
import torch

from srdiv.features.bundle import random_bundle
from srdiv.models.desa import DESA
from srdiv.registry import MODELS

SMALL = dict(d_model=16, heads=4, d_ff=24, pos_dim=4, dropout=0.0)
VARIANTS = [  # DESA Table 3 rows
    dict(enc_layers=1, dec_layers=1), dict(enc_layers=2, dec_layers=1), dict(enc_layers=3, dec_layers=1),
    dict(enc_layers=1, dec_layers=2), dict(enc_layers=2, dec_layers=2),
    dict(enc_layers=3, dec_layers=0, subtopics="none"), dict(enc_layers=3, dec_layers=0, subtopics="scores"),
    dict(subtopics="original"), dict(scorer="mlp", scorer_hidden=8), dict(pos_dim=0),
]


def make(bundle, seed=0, **params):
    torch.manual_seed(seed)
    return DESA(bundle.dims, **{**SMALL, **params}).eval()


@pytest.fixture
def bundle():
    return random_bundle(queries=3, docs=7, subs=4, emb=6, seed=1)


def test_registered():
    assert MODELS.get("desa") is DESA


@pytest.mark.parametrize("params", VARIANTS)
def test_variants_shapes_and_rank(bundle, params):
    model, data = make(bundle, **params), bundle.to_torch()
    scores = model.list_scores(data)
    assert scores.shape == (3, 7) and torch.isfinite(scores).all()
    order = model.rank(data)
    n_real = bundle.doc_mask.sum(1)
    for q in range(3):
        assert sorted(order[q, :n_real[q]].tolist()) == list(range(n_real[q]))
        assert (order[q, n_real[q]:] == -1).all()
    ctx = torch.tensor([[0, 2], [1, -1], [-1, -1]])
    cand = torch.tensor([[1, 3, 4], [0, 2, -1], [0, 1, 2]])
    ctx_scores = model.context_scores(data, ctx, cand)
    assert ctx_scores.shape == (3, 3) and torch.isfinite(ctx_scores).all()
    assert ctx_scores[1, 2] == 0  # padded candidate


@pytest.mark.parametrize("bad", [dict(subtopics="none", dec_layers=1), dict(subtopics="encoded", dec_layers=0),
                                 dict(subtopics="nope"), dict(scorer="tree"), dict(heads=3)])
def test_invalid_params(bundle, bad):
    with pytest.raises(ValueError):
        make(bundle, **bad)


def test_hand_worked_linear_score(bundle):
    """Only the subtopic-score block of Eq. 2 is weighted: s_t = sum_k x_{d,q_k}[0] over real suggestions + 0.5."""
    model = make(bundle, subtopics="scores", dec_layers=0)
    with torch.no_grad():
        model.score.weight.zero_()
        model.score.weight[0, -bundle.dims.subs:] = 1.0
        model.score.bias.fill_(0.5)
        model.sub_rel.weight.zero_()
        model.sub_rel.weight[0, 0] = 1.0
    data = bundle.to_torch()
    data["sub_feat"][2, -1] = 100.0  # padded suggestion of the last query: must be ignored
    expected = (data["sub_feat"][..., 0] * data["sub_mask"][:, :, None]).sum(1) + 0.5
    torch.testing.assert_close(model.list_scores(data), expected)


@pytest.mark.parametrize("params", [dict(), dict(subtopics="original"), dict(scorer="mlp")])
def test_padding_never_changes_real_scores(bundle, params):
    model, data = make(bundle, **params), bundle.to_torch()
    assert not data["doc_mask"][2].all() and not data["sub_mask"][2].all()
    ref = model.list_scores(data)
    ctx, cand = torch.tensor([[0, 1]] * 3), torch.tensor([[2, 3]] * 3)
    ref_ctx = model.context_scores(data, ctx, cand)
    pad_doc, pad_sub = ~data["doc_mask"][2], ~data["sub_mask"][2]
    noisy = {k: v.clone() for k, v in data.items()}
    noisy["doc_vec"][2, pad_doc] = 50.0
    noisy["rel_feat"][2, pad_doc] = -30.0
    noisy["sub_vec"][2, pad_sub] = 40.0
    noisy["sub_feat"][2, pad_sub] = 20.0
    noisy["sub_feat"][2, :, pad_doc] = 20.0
    real = data["doc_mask"]
    torch.testing.assert_close(model.list_scores(noisy)[real], ref[real])
    torch.testing.assert_close(model.context_scores(noisy, ctx, cand), ref_ctx)


def test_list_without_suggestions_is_finite(bundle):
    model, data = make(bundle), bundle.to_torch()
    data["sub_mask"][1] = False
    assert torch.isfinite(model.list_scores(data)).all()
    assert torch.isfinite(model.context_scores(data, torch.tensor([[0]] * 3), torch.tensor([[1, 2]] * 3))).all()


def test_context_scores_equal_explicit_causal_sequence(bundle):
    """Each candidate's score equals the last score of the sequence [context..., candidate] under a
    standard lower-triangular sequence mask (Section 3.5.2); other candidates never matter."""
    model, data = make(bundle, enc_layers=2, pos_dim=0), bundle.to_torch()
    context, candidates = [4, 0, 5], [1, 3, 2]
    got = model.context_scores(data, torch.tensor([context] * 3), torch.tensor([candidates] * 3))[0]
    causal = torch.tril(torch.ones(4, 4, dtype=torch.bool))[None]
    for m, cand in enumerate(candidates):
        seq = torch.tensor(context + [cand])
        one = {k: v[:1] for k, v in data.items()}
        one.update(doc_vec=one["doc_vec"][:, seq], rel_feat=one["rel_feat"][:, seq],
                   sub_feat=one["sub_feat"][:, :, seq], doc_mask=one["doc_mask"][:, seq])
        seq_scores = model._scores(one, causal, torch.arange(4)[None])[0]
        torch.testing.assert_close(got[m], seq_scores[-1])
        # a later document never changes an earlier one's score
        one["doc_vec"] = one["doc_vec"].clone()
        one["doc_vec"][0, -1] += 5.0
        later = model._scores(one, causal, torch.arange(4)[None])[0]
        torch.testing.assert_close(later[:-1], seq_scores[:-1])
        assert not torch.allclose(later[-1], seq_scores[-1])


def test_other_candidates_and_context_order(bundle):
    model, data = make(bundle, enc_layers=2), bundle.to_torch()
    ctx, cand = torch.tensor([[0, 1]] * 3), torch.tensor([[2, 3, 4]] * 3)
    ref = model.context_scores(data, ctx, cand)
    noisy = {k: v.clone() for k, v in data.items()}
    noisy["doc_vec"][:, 4] += 3.0  # another candidate
    torch.testing.assert_close(model.context_scores(noisy, ctx, cand)[:, :2], ref[:, :2])
    alone = model.context_scores(data, ctx, cand[:, :1])
    torch.testing.assert_close(alone[:, 0], ref[:, 0])
    noisy["doc_vec"][:, 1] += 3.0  # a context document: it does matter
    assert not torch.allclose(model.context_scores(noisy, ctx, cand)[:, 0], ref[:, 0])
    with_context = model.context_scores(data, ctx, torch.tensor([[0, 1, 2, 3, 4]] * 3))  # as the loss asks
    torch.testing.assert_close(with_context[:, 2:], ref)
    swapped = model.context_scores(data, ctx.flip(1), cand)  # order matters through the sequence mask
    assert not torch.allclose(swapped, ref)


def test_empty_context_equals_single_document_forward(bundle):
    model, data = make(bundle), bundle.to_torch()
    cand = torch.tensor([[0, 3, 5]] * 3)
    got = model.context_scores(data, torch.empty(3, 0, dtype=torch.long), cand)
    for m in range(3):
        alone = dict(data, doc_mask=torch.zeros_like(data["doc_mask"]))
        alone["doc_mask"][:, cand[0, m]] = True
        torch.testing.assert_close(got[:, m], model.list_scores(alone)[:, cand[0, m]])


def test_save_load_round_trip(bundle, tmp_path):
    model, data = make(bundle, seed=3), bundle.to_torch()
    torch.save(model.state_dict(), tmp_path / "desa.pt")
    other = make(bundle, seed=4)
    assert not torch.allclose(other.list_scores(data), model.list_scores(data))
    other.load_state_dict(torch.load(tmp_path / "desa.pt", weights_only=True))
    torch.testing.assert_close(other.list_scores(data), model.list_scores(data))


@pytest.mark.parametrize("params", VARIANTS)
def test_gradients_reach_every_parameter(bundle, params):
    model, data = make(bundle, **params), bundle.to_torch()
    model.train()
    ctx, cand = torch.tensor([[0, 1], [2, -1], [-1, -1]]), torch.tensor([[2, 3], [0, 1], [1, 2]])
    scores = model.context_scores(data, ctx, cand)
    scores.square().sum().backward()  # not a score difference: that leaves output biases without gradient
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_ranks_beyond_max_positions_share_one_embedding(bundle):
    """Swapping two documents swaps their scores when they share a position embedding, not otherwise."""
    model, data = make(bundle, max_positions=3), bundle.to_torch()
    ref = model.list_scores(data)[0]

    def swapped(i, j):
        perm = torch.arange(7)
        perm[[i, j]] = perm[[j, i]]
        moved = dict(data, doc_vec=data["doc_vec"][:, perm], rel_feat=data["rel_feat"][:, perm],
                     sub_feat=data["sub_feat"][:, :, perm])
        return model.list_scores(moved)[0][perm]

    torch.testing.assert_close(swapped(4, 5), ref)
    assert not torch.allclose(swapped(0, 1), ref)
