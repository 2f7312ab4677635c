"""The template model's tests (``docs/adding-a-model.md``): the overlay registers and checks it, a hand-worked
ranking, shapes and padding, and a few training steps with srdiv's own objective lowering its loss."""

from pathlib import Path

import numpy as np
import pytest
import torch

from srdiv.experiment import model_spec, run_rows
from srdiv.features.bundle import random_bundle
from srdiv.params import load_params
from srdiv.registry import MODELS, OBJECTIVES
from srdiv.train.rows import check_rows
from srdiv.train.trained import build_model

ROOT = Path(__file__).resolve().parents[1]
OVERLAY = [ROOT / "params.yaml", ROOT / "config" / "smoke.yaml", ROOT / "examples" / "linear-xquad.yaml"]


@pytest.fixture(scope="module")
def params():
    """The smoke setting with the example overlay, loaded from the repository root (where srdiv runs)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        return load_params(OVERLAY)


def test_the_overlay_registers_the_model_and_adds_its_row(params):
    from linear_xquad import LinearXQuAD     # the module `import:` loaded

    assert MODELS.get("linear-xquad") is LinearXQuAD
    assert run_rows(params) == ["Initial", "ListMLE", "xQuAD", "DSSA", "DESA", "LinearXQuAD"]
    check_rows(params, ["LinearXQuAD"])      # registered, and takes the keywords its row and ranges give
    spec = model_spec(params, "LinearXQuAD")
    space = spec.space()                      # searched: lam over [0, 1], the learning rate log-uniform
    assert list(space) == ["model.args.lam", "optim.args.lr"] and not spec.exhaustive()
    assert (space["model.args.lam"].low, space["model.args.lam"].high) == (0.0, 1.0) and space["optim.args.lr"].log
    assert spec.model.args == {"lam": 0.5}


def hand_worked(lam: float):
    """One query, three documents, two suggestions: document 0 is the most relevant and covers suggestion 1 only,
    document 1 covers suggestion 1, document 2 suggestion 2. Relevance is feature 0; theta = 5 on it."""
    bundle = random_bundle(queries=1, docs=3, subs=2, feats=2, pad=False)
    bundle.rel_feat[0, :, 0] = [3.0, 2.0, 1.0]
    bundle.sub_feat[0, 0, :, 0] = [3.0, 3.0, -3.0]
    bundle.sub_feat[0, 1, :, 0] = [-3.0, -3.0, 3.0]
    bundle.rel_feat[..., 1] = bundle.sub_feat[..., 1] = 0.0
    model = MODELS.get("linear-xquad")(bundle.dims, lam=lam)
    with torch.no_grad():
        model.theta.weight[:] = torch.tensor([[5.0, 0.0]])
    return model, bundle.to_torch()


def test_hand_worked_ranking(params):
    model, batch = hand_worked(lam=0.0)             # relevance alone: 0, 1, 2
    assert model.rank(batch).tolist() == [[0, 1, 2]]
    model, batch = hand_worked(lam=0.7)             # after 0, suggestion 1 is covered: 2 before 1
    assert model.rank(batch).tolist() == [[0, 2, 1]]
    scores = model.context_scores(batch, torch.tensor([[0]]), torch.tensor([[1, 2]]))
    p_query, p_sub = model.probabilities(batch)
    expected = [(0.3 * p_query[0, d] + 0.7 * 0.5 * sum(p_sub[0, k, d] * (1 - p_sub[0, k, 0]) for k in (0, 1))).item()
                for d in (1, 2)]
    np.testing.assert_allclose(scores[0].tolist(), expected, rtol=1e-6)


def test_shapes_and_padding(params):
    bundle = random_bundle(queries=4, docs=8, subs=3, seed=1)        # the last query: 5 documents, 2 suggestions
    model = build_model(model_spec(params, "LinearXQuAD"), bundle.dims)
    batch = bundle.to_torch()
    scores = model.context_scores(batch, torch.tensor([[0, -1]] * 4), torch.arange(8).expand(4, 8))
    assert scores.shape == (4, 8) and torch.isfinite(scores).all()
    order = model.rank(batch)
    assert order.shape == (4, 8)
    assert (order[-1, 5:] == -1).all() and sorted(order[-1, :5].tolist()) == [0, 1, 2, 3, 4]


def test_srdivs_objective_trains_it(params):
    bundle = random_bundle(queries=6, docs=8, subs=3, seed=2)
    spec = model_spec(params, "LinearXQuAD")
    torch.manual_seed(0)
    model = build_model(spec, bundle.dims)
    objective = OBJECTIVES.get(spec.objective.name)(**spec.objective.args)
    prepared = objective.prepare(bundle, np.random.default_rng(0))
    data = bundle.to_torch()
    batch = next(objective.batches(prepared, len(bundle), 6, np.random.default_rng(0)))
    optim = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        loss = objective.loss(model, data, batch)
        optim.zero_grad()
        loss.backward()
        assert model.theta.weight.grad.abs().sum() > 0
        optim.step()
        losses.append(loss.item())
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_lam_out_of_range_is_refused(params):
    with pytest.raises(ValueError, match=r"lam must be in \[0, 1\]"):
        MODELS.get("linear-xquad")(random_bundle().dims, lam=1.5)
