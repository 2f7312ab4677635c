"""A model's own ``prefix_scores`` (one encoding per ranking) equals scoring every prefix with ``context_scores``."""

import numpy as np
import pytest
import torch

from srdiv.features.bundle import random_bundle
from srdiv.models.base import context_prefix_scores
from srdiv.models.desa import DESA
from srdiv.models.dssa import DSSA, HDSSA

DESA_SMALL = dict(d_model=16, heads=4, d_ff=24, pos_dim=4, dropout=0.0)
MODELS = {
    "dssa": (DSSA, {"lam": 0.6}),
    "dssa-dot-vanilla": (DSSA, {"cell": "vanilla", "attention": "dot", "hidden": 6, "similarity": "dot"}),
    "dssa-rnn-gru": (DSSA, {"cell": "gru", "max_pooling": False, "rnn_input": "vec+rel"}),
    "hdssa": (HDSSA, {"beta": "learned"}),
    "dssa-coverage": (DSSA, {"accumulate": True}),
    "hdssa-2-coverage": (HDSSA, {"levels": [2], "accumulate": True}),
    "desa": (DESA, DESA_SMALL),
    "desa-2-2": (DESA, {**DESA_SMALL, "dec_layers": 2}),
    "desa-original": (DESA, {**DESA_SMALL, "subtopics": "original"}),
    "desa-scores": (DESA, {**DESA_SMALL, "enc_layers": 3, "dec_layers": 0, "subtopics": "scores"}),
    "desa-none-nopos": (DESA, {**DESA_SMALL, "dec_layers": 0, "subtopics": "none", "pos_dim": 0}),
}


def _rankings(bundle, n_rankings, seed):
    """``[B, N, L]`` random rankings of each list's real candidates, some cut short (-1 padding at the end)."""
    rng = np.random.default_rng(seed)
    width = bundle.doc_mask.shape[1]
    out = np.full((len(bundle), n_rankings, width), -1)
    for b in range(len(bundle)):
        real = np.flatnonzero(bundle.doc_mask[b])
        for n in range(n_rankings):
            keep = len(real) if n % 2 == 0 else max(1, len(real) - 2)
            out[b, n, :keep] = rng.permutation(real)[:keep]
    return torch.as_tensor(out)


@pytest.mark.parametrize("name", MODELS)
def test_prefix_scores_equal_context_scores_of_every_prefix(name):
    cls, params = MODELS[name]
    bundle = random_bundle(queries=3, docs=7, subs=4, subs2=5, emb=6, seed=2)
    torch.manual_seed(0)
    model = cls(bundle.dims, **params).eval()
    batch, rankings = bundle.to_torch(), _rankings(bundle, 3, seed=1)
    fast, slow = model.prefix_scores(batch, rankings), context_prefix_scores(model, batch, rankings)
    assert fast.shape == slow.shape == (3, 3, 7, 7)
    # compare where it is defined: real candidates outside the prefix, at every prefix of the real ranking
    picked = torch.nn.functional.one_hot(rankings.clamp(min=0), 7) * (rankings >= 0)[..., None]
    before = (picked.cumsum(2) - picked) > 0
    placed = (rankings >= 0)[..., None]
    defined = batch["doc_mask"][:, None, None, :] & ~before & placed
    torch.testing.assert_close(fast[defined], slow[defined], rtol=1e-5, atol=1e-5)
    assert torch.isfinite(fast).all()
    assert model.prefix_scores(batch, rankings[:, :, :0]).shape == (3, 3, 0, 7)


@pytest.mark.parametrize("name", ["dssa", "desa"])
def test_prefix_scores_gradients_equal_the_generic_ones(name):
    cls, params = MODELS[name]
    bundle = random_bundle(queries=2, docs=6, subs=3, emb=6, seed=4)
    rankings = _rankings(bundle, 2, seed=3)
    grads = []
    for scores_of in (lambda m, b: m.prefix_scores(b, rankings), lambda m, b: context_prefix_scores(m, b, rankings)):
        torch.manual_seed(0)
        model = cls(bundle.dims, **params).eval()
        picked, placed = rankings.clamp(min=0)[..., None], (rankings >= 0)[..., None]
        next_doc = scores_of(model, bundle.to_torch()).gather(-1, picked)      # the score of the next document
        (next_doc * placed).sum().backward()
        grads.append({k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for k in grads[0]:
        torch.testing.assert_close(grads[0][k], grads[1][k], rtol=1e-4, atol=1e-5)
