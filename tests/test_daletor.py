"""DALETOR (WWW 2021): smooth losses against the exact metrics, masks, GSF groups, training and ranking."""

import numpy as np
import pytest
import torch
import yaml

from srdiv.features.bundle import random_bundle
from srdiv.metrics import alpha_dcg, err_ia, ideal_ranking, rank_labels
from srdiv.models.daletor import DALETOR
from srdiv.registry import MODELS, OBJECTIVES
from srdiv.objectives.daletor import (
    CoverageSoftmax, SmoothDiversityLoss, WeightedRows, metric_weights, smooth_metric, soft_ranks,
)
from srdiv.experiment import model_spec
from srdiv.models.base import context_prefix_scores
from srdiv.train.trained import build_model
from srdiv.train.trainer import make_optimizer

SMALL = dict(hidden=[16, 8], head_size=8)
VARIANTS = {  # the paper's names (Tables 2-4)
    "DNN": dict(context="none"), "DNN-LC": dict(context="none", latent_cross=True),
    "DIN": dict(context="din"), "DIN-LC": dict(context="din", latent_cross=True),
    "GSF": dict(context="gsf", group_size=4), "GSF-LC": dict(context="gsf", group_size=3, latent_cross=True),
    "DIN-LC-F": dict(context="din", latent_cross=True, relevance_features=True),  # extension: + x_{d,q}
}
TF_RANKING_LABELS = [[[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]]
TF_RANKING_SCORES = [[3.0, 1.0, 2.0]]


def make(bundle, seed=0, **params):
    torch.manual_seed(seed)
    return DALETOR(bundle.dims, **{**SMALL, **params})


@pytest.fixture
def bundle():
    return random_bundle(queries=5, docs=9, subtopics=4, emb=6, seed=3)


def random_lists(seed=0, lists=6, docs=10, subtopics=4):
    """Labels, a mask with padded tails, and well separated distinct scores (float64)."""
    rng = np.random.default_rng(seed)
    mask = np.arange(docs)[None] < rng.integers(3, docs + 1, size=lists)[:, None]
    labels = (rng.random((lists, docs, subtopics)) < 0.4) * mask[..., None]
    scores = np.stack([rng.permutation(docs) for _ in range(lists)]).astype(float) + 0.1 * rng.random((lists, docs))
    return labels.astype(float), mask, scores


def exact(labels, mask, scores, metric):
    """The official metric of the ranking of the real documents by score (whole list)."""
    values = []
    for y, m, s in zip(labels, mask, scores):
        order = np.argsort(-s[m], kind="stable")
        ranked = y[m][order][None]
        if metric == "alpha_dcg":
            values.append(alpha_dcg(ranked, 0.5)[0])
        elif metric == "alpha_ndcg":
            ideal = rank_labels(y[m][None], ideal_ranking(y[m][None], 0.5))
            values.append(alpha_dcg(ranked, 0.5)[0] / alpha_dcg(ideal, 0.5)[0])
        else:
            values.append(err_ia(ranked, alpha=0.5, n_subtopics=np.array([y.shape[1]]))[0])
    return np.array(values)


def test_registered():
    assert MODELS.get("daletor") is DALETOR
    assert OBJECTIVES.get("daletor") is SmoothDiversityLoss and OBJECTIVES.get("softmax") is CoverageSoftmax


def test_tf_ranking_alpha_dcg_example():
    """TF-Ranking's documented AlphaDCGMetric example: 2.1963947 (ranking d0, d2, d1)."""
    labels = np.array(TF_RANKING_LABELS)
    assert alpha_dcg(labels[:, [0, 2, 1]], 0.5)[0] == pytest.approx(2.1963947, abs=1e-7)
    y, s = torch.tensor(labels), torch.tensor(TF_RANKING_SCORES, dtype=torch.float64)
    mask = torch.ones(1, 3, dtype=torch.bool)
    assert smooth_metric(s, y, mask, "alpha_dcg", temperature=1e-3).item() == pytest.approx(2.1963947, abs=1e-7)
    loss = SmoothDiversityLoss(temperature=1e-3)
    model = type("Fixed", (), {"list_scores": lambda self, batch: s})()
    value = loss.loss(model, {"labels": y, "doc_mask": mask}, WeightedRows(np.array([0]), np.ones(1)))
    assert value.item() == pytest.approx(-2.1963947, abs=1e-7)


def test_soft_ranks_hand_worked():
    """Eq. 7 at T = 1 for scores (0, ln 3): R = (1 + 3/4, 1 + 1/4), C of the bottom document = 3/4 y_top."""
    s = torch.tensor([[0.0, np.log(3.0)]], dtype=torch.float64)
    y = torch.tensor([[[1.0, 0.0], [1.0, 1.0]]], dtype=torch.float64)
    rank, cover = soft_ranks(s, y, torch.ones(1, 2, dtype=torch.bool), temperature=1.0)
    assert rank[0].tolist() == pytest.approx([1.75, 1.25])
    assert cover[0].tolist() == [pytest.approx([0.75, 0.75]), pytest.approx([0.25, 0.0])]


@pytest.mark.parametrize("metric", ["alpha_dcg", "alpha_ndcg", "err_ia"])
def test_smooth_metric_tends_to_exact_metric(metric):
    labels, mask, scores = random_lists(seed=4)
    weights = metric_weights(labels, mask, np.ones(labels.shape[::2], bool), metric)
    target = exact(labels, mask, scores, metric)
    sharp = smooth_metric(torch.tensor(scores), torch.tensor(labels), torch.tensor(mask), metric, 1e-3).numpy()
    assert weights * sharp == pytest.approx(target, abs=1e-9)
    smooth = smooth_metric(torch.tensor(scores), torch.tensor(labels), torch.tensor(mask), metric, 1.0).numpy()
    assert not np.allclose(weights * smooth, target, atol=1e-3)  # T matters


def test_err_ia_weight_uses_query_subtopics_and_list_length():
    labels = np.zeros((1, 4, 3))
    mask = np.array([[True, True, True, False]])
    label_mask = np.array([[True, True, False]])
    ideal_ideal = 1 + 0.5 / 2 + 0.25 / 3
    assert metric_weights(labels, mask, label_mask, "err_ia")[0] == pytest.approx(1 / (2 * ideal_ideal))
    assert metric_weights(labels, mask, label_mask, "alpha_ndcg")[0] == 0.0  # no relevant candidate


@pytest.mark.parametrize("metric", ["alpha_dcg", "err_ia"])
def test_gradients_finite_for_ties_and_padding(metric):
    labels = torch.tensor([[[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]])
    mask = torch.tensor([[True, True, True, False]])
    scores = torch.tensor([[0.5, 0.5, 0.5, float("nan")]], requires_grad=True)  # ties; padding holds garbage
    smooth_metric(scores, labels, mask, metric, 0.1).sum().backward()
    assert torch.isfinite(scores.grad).all() and scores.grad[0, 3] == 0
    assert scores.grad[0, 1] > 0  # the document covering both subtopics is pushed up


def test_gradcheck_smooth_metric():
    labels, mask, scores = random_lists(seed=5, lists=2, docs=5)
    s = torch.tensor(scores * 0.1, requires_grad=True)
    fn = lambda x: smooth_metric(x, torch.tensor(labels), torch.tensor(mask), "alpha_dcg", 0.5)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (s,))


def test_gumbel_noise_is_seeded_and_scaled(bundle):
    data, rows = bundle.to_torch(), WeightedRows(np.arange(5), np.ones(5))
    model = make(bundle).eval()
    plain = SmoothDiversityLoss().loss(model, data, rows)
    noisy = SmoothDiversityLoss(gumbel=10.0)
    torch.manual_seed(1)
    first = noisy.loss(model, data, rows)
    torch.manual_seed(1)
    assert noisy.loss(model, data, rows) == first and first != plain


def test_softmax_hand_worked():
    """Equal scores, coverage counts (2, 1, 0): loss = log 3; a list without relevant documents is ignored."""
    labels = torch.tensor([[[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]], [[0.0, 0.0]] * 3])
    data = {"labels": labels, "doc_mask": torch.ones(2, 3, dtype=torch.bool)}
    model = type("Zero", (), {"list_scores": lambda self, batch: torch.zeros(len(batch["labels"]), 3)})()
    assert CoverageSoftmax().loss(model, data, np.array([0, 1])).item() == pytest.approx(np.log(3.0))


@pytest.mark.parametrize("name", list(VARIANTS))
def test_variants_score_and_rank(bundle, name):
    model, data = make(bundle, **VARIANTS[name]).eval(), bundle.to_torch()
    scores = model.list_scores(data)
    assert scores.shape == (5, 9) and torch.isfinite(scores).all()
    assert (scores[~data["doc_mask"]] == 0).all()
    order = model.rank(data)
    for q, n in enumerate(bundle.doc_mask.sum(1)):
        assert sorted(order[q, :n].tolist()) == list(range(n)) and (order[q, n:] == -1).all()


def pad_with_garbage(data, extra=3, seed=0):
    """The batch with ``extra`` padded documents of random content appended."""
    g = torch.Generator().manual_seed(seed)
    out = dict(data)
    for key in ("doc_vec", "rel_feat", "labels"):
        x = data[key]
        out[key] = torch.cat([x, torch.randn(x.shape[0], extra, *x.shape[2:], generator=g)], 1)
    out["doc_mask"] = torch.cat([data["doc_mask"], torch.zeros(len(x), extra, dtype=torch.bool)], 1)
    return out


@pytest.mark.parametrize("name,training", [(v, False) for v in VARIANTS]
                         + [(v, True) for v in VARIANTS if not v.startswith("GSF")])  # GSF trains on random groups
def test_padding_never_changes_real_scores(bundle, name, training):
    model, data = make(bundle, **VARIANTS[name]).train(training), bundle.to_torch()
    padded = pad_with_garbage(data)
    a, b = model.list_scores(data), model.list_scores(padded)
    mask = data["doc_mask"]
    assert torch.allclose(a[mask], b[:, :9][mask], atol=1e-5)
    assert (b[:, 9:] == 0).all()


def test_dnn_scores_do_not_depend_on_other_documents(bundle):
    """DNN is univariate in evaluation: dropping a document leaves the others' scores unchanged."""
    model, data = make(bundle, latent_cross=True).eval(), bundle.to_torch()
    fewer = dict(data, doc_mask=data["doc_mask"].clone())
    fewer["doc_mask"][:, 0] = False
    assert torch.allclose(model.list_scores(data)[:, 1:], model.list_scores(fewer)[:, 1:], atol=1e-6)


def test_inputs(bundle):
    """x_i = [e_q; e_i; c_i; x_{d,q}] in that order."""
    data = bundle.to_torch()
    x = make(bundle, latent_cross=True, relevance_features=True).inputs(data)
    unit = lambda v: torch.nn.functional.normalize(v, dim=-1)  # noqa: E731  (Section 4.1)
    e_q, e_i = unit(data["query_vec"])[:, None].expand(-1, 9, -1), unit(data["doc_vec"])
    assert torch.equal(x, torch.cat([e_q, e_i, e_q * e_i, data["rel_feat"]], -1))
    assert make(bundle).inputs(data).shape == (5, 9, 12)


def test_din_scores_depend_on_the_list(bundle):
    model, data = make(bundle, context="din").eval(), bundle.to_torch()
    fewer = dict(data, doc_mask=data["doc_mask"].clone())
    fewer["doc_mask"][:, 0] = False
    assert not torch.allclose(model.list_scores(data)[:, 1:], model.list_scores(fewer)[:, 1:], atol=1e-4)


@pytest.mark.parametrize("g", [1, 3, 16])
def test_gsf_windows_cover_every_document_g_times(bundle, g):
    """GSF score = mean over the g windows of a document; checked with a tower that reports group sums."""
    model, data = make(bundle, context="gsf", group_size=g).eval(), bundle.to_torch()
    tag = torch.arange(9.0)[None].expand(5, -1)
    x = tag[..., None]  # feature = document index, so a window's logits can name its members
    model.tower = torch.nn.Identity()  # slot p's logit = index of the document in slot p
    scores = model.group_scores(x, data["doc_mask"])
    # each real document's logit is its own index in each of its g slots: the mean is the index itself
    assert torch.allclose(scores[data["doc_mask"]], tag[data["doc_mask"]])


@pytest.mark.parametrize("training", [False, True])
def test_gsf_of_one_document_is_the_dnn_scorer(bundle, training):
    """What ``ARG_ENDS`` says of group_size = 1: each document alone in its window, so GSF with the DNN's
    weights scores every list as the DNN does (in training too, whatever the shuffled order)."""
    data = bundle.to_torch()
    dnn, gsf = make(bundle, latent_cross=True), make(bundle, context="gsf", group_size=1, latent_cross=True)
    gsf.load_state_dict(dnn.state_dict())
    dnn.train(training), gsf.train(training)
    assert torch.allclose(gsf.list_scores(data), dnn.list_scores(data), atol=1e-6)


def test_gsf_training_groups_are_random_and_evaluation_groups_fixed(bundle):
    model, data = make(bundle, context="gsf", group_size=2, dropout=0.0), bundle.to_torch()
    model.eval()
    first = model.list_scores(data)
    assert torch.equal(first, model.list_scores(data))
    assert not torch.equal(first, make(bundle, context="gsf", group_size=2, group_seed=1).eval().list_scores(data))
    model.train()
    torch.manual_seed(0)
    a = model.group_order(data["doc_mask"])
    assert not torch.equal(a, model.group_order(data["doc_mask"]))


def test_prefix_scores_equal_the_generic_context_scores(bundle):
    """The R-LTR baseline's one-forward shortcut gives the Plackett-Luce scores of the generic path."""
    model, data = make(bundle, context="din").eval(), bundle.to_torch()
    rankings = torch.as_tensor(np.argsort(-bundle.labels.sum(-1), axis=1, kind="stable"))[:, None, :4]
    assert torch.allclose(model.prefix_scores(data, rankings), context_prefix_scores(model, data, rankings))


def test_invalid_params(bundle):
    with pytest.raises(ValueError, match="context"):
        DALETOR(bundle.dims, context="lstm")
    with pytest.raises(ValueError, match="metric"):
        SmoothDiversityLoss(metric="ndcg")
    with pytest.raises(ValueError, match="temperature"):
        SmoothDiversityLoss(temperature=0)


LOSSES = {"alpha-DCG": ("daletor", {}), "alpha-nDCG": ("daletor", {"metric": "alpha_ndcg"}),
          "ERR-IA": ("daletor", {"metric": "err_ia"}), "Gumbel": ("daletor", {"gumbel": 10.0}),
          "softmax": ("softmax", {}), "R-LTR": ("mle", {})}


@pytest.mark.parametrize("variant,loss", [(v, "alpha-DCG") for v in VARIANTS]
                         + [("DNN", k) for k in LOSSES if k != "alpha-DCG"])
def test_trains_a_few_steps_and_ranks(bundle, variant, loss):
    """Every variant with the alpha-DCG loss and DNN with every loss: finite losses that go down, then a ranking."""
    name, params = LOSSES[loss]
    objective = OBJECTIVES.get(name)(**params)
    model = make(bundle, **VARIANTS[variant])
    data, prepared = bundle.to_torch(), objective.prepare(bundle, np.random.default_rng(0))
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    batch = next(objective.batches(prepared, len(bundle), len(bundle), np.random.default_rng(0)))
    losses = []
    torch.manual_seed(0)
    for _ in range(8):
        model.train()
        value = objective.loss(model, data, batch)
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
        losses.append(value.item())
    assert np.isfinite(losses).all()
    if loss != "Gumbel" and not variant.startswith("GSF"):  # noisy scores or groups
        assert losses[-1] < losses[0]
    order = model.eval().rank(data)
    assert (order[:, 0] >= 0).all()


ROWS = yaml.safe_load("""
models:
  DALETOR:
    model: {name: daletor, args: {context: din, latent_cross: true}}
    objective: {name: daletor, args: {metric: alpha_dcg, temperature: 0.1}}
    group: implicit
    optim: {name: adagrad, args: {lr: 0.01}}
    train: {train_docs: 50}
  DALETOR-GSF-LC:
    model: {name: daletor, args: {context: gsf, latent_cross: true}}
    objective: {name: daletor}
    optim: {name: adagrad, args: {lr: 0.01}}
    tune: {model.args.group_size: [4, 16, 64]}
    variant_of: DALETOR
    variant: GSF-LC, alpha-DCG
  DALETOR-DNN-Gumbel:
    model: {name: daletor, args: {context: none}}
    objective: {name: daletor, args: {metric: alpha_dcg, temperature: 0.1, gumbel: 10.0}}
    optim: {name: adagrad, args: {lr: 0.01}}
  DALETOR-DNN-RLTR:
    model: {name: daletor, args: {context: none}}
    objective: {name: mle}
    optim: {name: adagrad, args: {lr: 0.01}}
""")


@pytest.mark.parametrize("row", list(ROWS["models"]))
def test_params_rows_build_and_give_a_finite_loss(bundle, row):
    """The proposed ``params.yaml`` rows construct through the harness (every tuning point)."""
    spec = model_spec(ROWS, row)
    for point in spec.grid():
        point_spec = spec.at(point)
        torch.manual_seed(0)
        model = build_model(point_spec, bundle.dims)
        objective = OBJECTIVES.get(point_spec.objective.name)(**point_spec.objective.args)
        prepared = objective.prepare(bundle, np.random.default_rng(0))
        batch = next(objective.batches(prepared, len(bundle), 4, np.random.default_rng(0)))
        optimizer = make_optimizer(model.parameters(), point_spec.optim)
        assert isinstance(optimizer, torch.optim.Adagrad)
        assert torch.isfinite(objective.loss(model, bundle.to_torch(), batch))


def test_inputs_are_unit_vectors_unless_told_otherwise():
    """Section 4.1: e_q and e_i are normalised, so scaling a vector never changes a score."""
    bundle = random_bundle(queries=2, docs=5, emb=4, seed=7)
    data = bundle.to_torch()
    scaled = dict(data, doc_vec=data["doc_vec"] * 3.0, query_vec=data["query_vec"] * 0.5)
    torch.manual_seed(0)
    model = DALETOR(bundle.dims, latent_cross=True).eval()
    x = model.inputs(data)
    emb = bundle.dims.emb
    real = data["doc_mask"]
    torch.testing.assert_close(x[..., :emb].norm(dim=-1)[real], torch.ones(int(real.sum())))
    torch.testing.assert_close(x[..., emb:2 * emb].norm(dim=-1)[real], torch.ones(int(real.sum())))
    torch.testing.assert_close(model.list_scores(scaled), model.list_scores(data))
    raw = DALETOR(bundle.dims, latent_cross=True, normalize=False).eval()
    assert torch.equal(raw.inputs(data)[..., emb:2 * emb], data["doc_vec"])


def test_gsf_evaluation_in_chunks_equals_one_pass(bundle, monkeypatch):
    """Ranking scores GSF windows a chunk at a time (bounded memory); the scores equal one pass over all."""
    import srdiv.models.daletor as daletor

    model, data = make(bundle, context="gsf", group_size=3, latent_cross=True).eval(), bundle.to_torch()
    whole = model.list_scores(data)
    monkeypatch.setattr(daletor, "EVAL_CHUNK", 2 * 3 * 3 * bundle.dims.emb)  # two windows per chunk
    assert torch.allclose(model.list_scores(data), whole, rtol=0, atol=1e-6)


def test_evaluation_normalises_inputs_by_the_training_statistics():
    """Ranking (eval mode) standardises the tower's input by the statistics training saw. Three Adagrad steps
    on one batch, the whole training set: the input batch norm's running mean and variance are that batch's
    (a cumulative average; PyTorch's default momentum 0.1 would leave them at 1 - 0.9^3 = .27 of the way from
    (0, 1), so a model trained for a few steps, as on 8 queries, would rank inputs scaled unlike training's)."""
    bundle = random_bundle(queries=4, docs=7, emb=5, seed=11)
    data = bundle.to_torch()
    model = make(bundle, context="none", latent_cross=True)
    objective = SmoothDiversityLoss()
    batch = WeightedRows(np.arange(len(bundle)), np.ones(len(bundle)))
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    for _ in range(3):
        model.train()
        optimizer.zero_grad()
        objective.loss(model, data, batch).backward()
        optimizer.step()
    x = model.inputs(data)[data["doc_mask"]].double()
    first = model.tower.net[0]
    torch.testing.assert_close(first.running_mean.double(), x.mean(0), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(first.running_var.double(), x.var(0), rtol=1e-4, atol=1e-6)
