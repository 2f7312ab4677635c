"""Objectives list_pairwise and mle on hand cases; the Trainer: optimisers, early stopping, bit-identical resume
(also on a CUDA device, where torch sees one)."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from srdiv.experiment import Component, TrainSettings
from srdiv.features.bundle import random_bundle
from srdiv.io import InputError
from srdiv.models.base import DiversityModel
from srdiv.models.listmle import ListMLE
from srdiv.objectives.list_pairwise import ListPairwise
from srdiv.objectives.mle import PlackettLuceMLE
from srdiv.sampling.list_pairwise_samples import ListPairwiseSamples
from srdiv.sampling.samples import Samples
from srdiv.train.trainer import Trainer, make_optimizer, trainable
from helpers import DEVICES


class FreeScores(DiversityModel):
    """Score-and-sort model with one free score per candidate (same for every query)."""

    def __init__(self, scores):
        super().__init__()
        self.s = nn.Parameter(torch.tensor(scores, dtype=torch.float64))

    def list_scores(self, batch):
        return self.s.expand(batch["doc_mask"].shape[0], -1)


class ContextPenalty(FreeScores):
    """Sequential: a candidate loses 1 for every context document with a smaller index (tests context passing)."""

    sequential = True

    def context_scores(self, batch, context, candidates):
        below = ((context[:, None, :] >= 0) & (context[:, None, :] < candidates[:, :, None])).sum(-1)
        return self.s[candidates.clamp(min=0)] - below


def _samples(bundle, contexts, context_query, pairs, pair_context, weight, label):
    """Samples where every context is its own sequence (the ``per_length`` layout)."""
    contexts = np.array(contexts, np.int16)
    lp = ListPairwiseSamples(contexts, np.array(context_query, np.int32), np.arange(len(contexts), dtype=np.int32),
                             (contexts >= 0).sum(1).astype(np.int16), np.array(pairs, np.int16),
                             np.array(pair_context, np.int32),
                             np.array(weight, np.float32), np.array(label, np.int8))
    return Samples(np.asarray(bundle.qids), lp, {}, {"n_docs": bundle.doc_mask.shape[1]})


def _one_batch(objective, bundle, size=100):
    prepared = objective.prepare(bundle, np.random.default_rng(0))
    return next(iter(objective.batches(prepared, len(bundle), size, np.random.default_rng(0))))


def test_list_pairwise_loss_value_and_gradient_signs():
    bundle = random_bundle(queries=1, docs=3, pad=False)
    objective = ListPairwise()
    # context [] : d0 beats d1 (w 0.5); context [] again is one context; d2 beats d1 (w 0.25, label 0 on (d1, d2))
    objective.samples = _samples(bundle, [[-1]], [0], [[0, 1], [1, 2]], [0, 0], [0.5, 0.25], [1, 0])
    model = FreeScores([1.0, 0.0, 2.0])
    loss = objective.loss(model, bundle.to_torch(), _one_batch(objective, bundle))
    softplus = lambda x: math.log1p(math.exp(x))  # noqa: E731
    assert loss.item() == pytest.approx((0.5 * softplus(-1.0) + 0.25 * softplus(0.0 - 2.0)) / 2, rel=1e-6)
    loss.backward()
    grad = model.s.grad.tolist()
    assert grad[0] < 0 and grad[1] > 0 and grad[2] < 0  # descent raises d0 and d2 above d1


def test_list_pairwise_scores_candidates_after_their_context():
    bundle = random_bundle(queries=2, docs=4, pad=False)
    objective = ListPairwise()
    # query 1, context [d0]: d2 scores s2 - 1, d1 scores s1 - 1, d3 scores s3 - 1, d0 scores s0
    objective.samples = _samples(bundle, [[0], [-1]], [1, 0], [[0, 2], [1, 3]], [0, 1], [1.0, 1.0], [1, 1])
    model = ContextPenalty([0.0, 0.0, 0.0, 0.0])
    batch = _one_batch(objective, bundle)
    assert sorted(batch.rows.tolist()) == [0, 1]
    loss = objective.loss(model, bundle.to_torch(), batch)
    # pair (0, 2) after [d0]: margin 0 - (0 - 1) = 1; pair (1, 3) after []: margin 0
    softplus = lambda x: math.log1p(math.exp(x))  # noqa: E731
    assert loss.item() == pytest.approx((softplus(-1.0) + softplus(0.0)) / 2, rel=1e-6)


@pytest.mark.parametrize("draw", ["per_length", "prefixes"])
def test_list_pairwise_batches_cover_every_pair_once_with_its_context(draw):
    bundle = random_bundle(queries=3, docs=5, seed=3)
    from srdiv.sampling.samples import SampleSettings, make_samples

    objective = ListPairwise()
    objective.samples = make_samples(bundle, SampleSettings(permutations=2, draw=draw), 0)
    lp = objective.samples.list_pairwise
    prepared = objective.prepare(bundle, np.random.default_rng(0))
    assert prepared.whole == (draw == "per_length")
    seen, sizes = [], []
    for batch in objective.batches(prepared, len(bundle), 7, np.random.default_rng(1)):
        sizes.append(len(batch.context_sequence))
        for local, pair in zip(batch.pair_context, batch.pairs):
            s, length = batch.context_sequence[local], batch.context_length[local]
            assert length < batch.sequences.shape[1] or batch.whole
            seen.append((batch.rows[s], tuple(batch.sequences[s, :length]), tuple(pair)))
    query_rows = objective.samples.query_rows(bundle)
    expected = [(query_rows[lp.context_query()[c]], tuple(lp.contexts()[c][lp.contexts()[c] >= 0]), tuple(p))
                for c, p in zip(lp.pair_context, lp.pairs)]
    assert sorted(seen) == sorted(expected)
    assert np.median(sizes) <= 2 * 7


def test_list_pairwise_context_fraction_visits_a_fresh_share_of_contexts_each_epoch():
    bundle = random_bundle(queries=3, docs=6, seed=3)
    from srdiv.sampling.samples import SampleSettings, make_samples

    objective = ListPairwise(context_fraction=0.25)
    objective.samples = make_samples(bundle, SampleSettings(permutations=3), 0)
    prepared = objective.prepare(bundle, np.random.default_rng(0))
    n_contexts = len(prepared.sequences)    # per_length: every context is a sequence
    rng = np.random.default_rng(1)

    def epoch():
        batches = list(objective.batches(prepared, len(bundle), 4, rng))
        visited = {(row, tuple(seq[seq >= 0])) for b in batches for row, seq in zip(b.rows, b.sequences)}
        return visited, sum(len(b.rows) for b in batches)

    (first, n1), (second, n2) = epoch(), epoch()
    assert n1 == n2 == round(0.25 * n_contexts)
    assert first != second
    with pytest.raises(ValueError, match="context_fraction"):
        ListPairwise(context_fraction=0.0)


def test_list_pairwise_without_samples_is_an_error():
    with pytest.raises(InputError, match="samples"):
        ListPairwise().prepare(random_bundle(), np.random.default_rng(0))


def test_mle_loss_is_minus_log_plackett_luce_of_the_ideal_ranking():
    bundle = random_bundle(queries=1, docs=3, subtopics=2, feats=1, pad=False)
    bundle.labels[:] = [[[0, 0], [1, 0], [0, 1]]]  # ideal: d1, d2, d0
    bundle.rel_feat[:] = [[[1.0], [0.0], [-1.0]]]
    model = ListMLE(bundle.dims)
    with torch.no_grad():
        model.linear.weight.fill_(0.5)
    objective = PlackettLuceMLE()
    loss = objective.loss(model, bundle.to_torch(), _one_batch(objective, bundle))
    s = {0: 0.5, 1: 0.0, 2: -0.5}
    lse = lambda *d: math.log(sum(math.exp(s[i]) for i in d))  # noqa: E731
    assert loss.item() == pytest.approx(-(s[1] - lse(1, 2, 0)) - (s[2] - lse(2, 0)), rel=1e-5)
    loss.backward()
    # d1 (x = 0) must move above d0 (x = 1): the weight on the feature must go down
    assert model.linear.weight.grad.item() > 0


def test_mle_gradient_for_two_documents_at_zero():
    bundle = random_bundle(queries=1, docs=2, subtopics=1, feats=1, pad=False)
    bundle.labels[:] = [[[1], [0]]]
    bundle.rel_feat[:] = [[[1.0], [0.0]]]
    model = ListMLE(bundle.dims)
    with torch.no_grad():
        model.linear.weight.zero_()
    objective = PlackettLuceMLE()
    loss = objective.loss(model, bundle.to_torch(), _one_batch(objective, bundle))
    assert loss.item() == pytest.approx(math.log(2))
    loss.backward()
    assert model.linear.weight.grad.item() == pytest.approx(-0.5)


# --- Trainer ------------------------------------------------------------------------------------------

class DropoutScorer(DiversityModel):
    """A small MLP with dropout over the relevance features (exercises the torch RNG on resume)."""

    def __init__(self, feats):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(feats, 8), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 1))

    def list_scores(self, batch):
        return self.net(batch["rel_feat"]).squeeze(-1)


def _validate(model):
    """A deterministic stand-in for validation: higher when feature 0 gets a larger score."""
    with torch.no_grad():
        x = torch.zeros(1, 2, model.net[0].in_features, device=model.net[0].weight.device)
        x[0, 0, 0] = 1.0
        scores = model.list_scores({"rel_feat": x})
    return float(scores[0, 0] - scores[0, 1])


def _train(tmp_path, epochs=6, callbacks=(), patience=100, name="ckpt.pt", fingerprint="a", device="cpu",
           optim=Component("adam", {"lr": 0.05}), monitors=()):
    bundle = random_bundle(queries=6, docs=5, seed=2)
    torch.manual_seed(0)
    model = DropoutScorer(bundle.dims.feats).to(device)
    settings = TrainSettings(epochs=epochs, patience=patience, batch_size=2)
    trainer = Trainer(settings, optim, torch.device(device), seed=1,
                      checkpoint=tmp_path / name, fingerprint=fingerprint, callbacks=callbacks, progress=False,
                      monitors=monitors)
    return model, trainer.fit(model, PlackettLuceMLE(), bundle, _validate)


class Kill(Exception):
    pass


@pytest.mark.parametrize("device", DEVICES)
def test_resume_after_a_killed_epoch_is_bit_identical(tmp_path, device):
    full_model, full = _train(tmp_path, name="full.pt", device=device)

    def kill(epoch, record):
        if epoch == 3:
            raise Kill

    with pytest.raises(Kill):
        _train(tmp_path, callbacks=[kill], name="cut.pt", device=device)
    trained_after_resume = []
    resumed_model, resumed = _train(tmp_path, name="cut.pt", device=device,
                                    callbacks=[lambda epoch, record: trained_after_resume.append(epoch)])
    assert trained_after_resume == [4, 5, 6]
    assert full.restored_epochs == 0 and full.restored_seconds == 0.0
    assert resumed.restored_epochs == 3    # the time of the killed sitting's epochs still counts
    assert resumed.restored_seconds == pytest.approx(resumed.curve["seconds"].iloc[:3].sum())
    assert resumed.curve["epoch"].tolist() == list(range(1, 7))
    assert resumed.curve[["loss", "valid"]].equals(full.curve[["loss", "valid"]])
    assert resumed.valid == full.valid and resumed.epoch == full.epoch
    for key, value in full_model.state_dict().items():
        assert torch.equal(value, resumed_model.state_dict()[key])


def test_a_checkpoint_for_other_settings_is_not_resumed(tmp_path):
    _train(tmp_path, epochs=2, name="x.pt", fingerprint="old")
    _, result = _train(tmp_path, epochs=3, name="x.pt", fingerprint="new")
    assert result.curve["epoch"].tolist() == [1, 2, 3]


def test_an_unreadable_checkpoint_is_ignored(tmp_path, capsys):
    _, clean = _train(tmp_path, epochs=3, name="clean.pt")
    (tmp_path / "x.pt").write_bytes(b"PK\x03\x04 cut short")
    _, result = _train(tmp_path, epochs=3, name="x.pt")
    assert result.curve[["epoch", "loss", "valid"]].equals(clean.curve[["epoch", "loss", "valid"]])
    assert "ignoring not a readable checkpoint" in capsys.readouterr().err


def test_early_stopping_keeps_the_best_state(tmp_path):
    model, result = _train(tmp_path, epochs=30, patience=2)
    curve = result.curve
    assert len(curve) < 30 and result.valid == curve["valid"].max()
    assert result.epoch == int(curve.loc[curve["valid"].idxmax(), "epoch"])
    assert (curve["valid"].iloc[-2:] <= result.valid).all() and len(curve) - result.epoch == 2
    assert _validate(model.eval()) == pytest.approx(result.valid)


def test_a_non_finite_loss_stops_training_and_a_resume_stops_there_too(tmp_path, capsys):
    too_fast = Component("sgd", {"lr": 1.0e30})
    model, result = _train(tmp_path, epochs=20, optim=too_fast)
    assert 1 <= result.diverged <= 20 and len(result.curve) == result.diverged - 1
    assert "non-finite loss" in capsys.readouterr().err
    epochs_after_resume = []
    _, again = _train(tmp_path, epochs=20, optim=too_fast, callbacks=[lambda e, r: epochs_after_resume.append(e)])
    assert epochs_after_resume == [] and again.diverged == result.diverged and again.valid == result.valid
    if result.epoch:                                          # it ends in its best epoch before the divergence
        assert _validate(model.eval()) == pytest.approx(result.valid)
    _, calm = _train(tmp_path, epochs=3, name="calm.pt")
    assert calm.diverged == 0


def test_optimisers_and_l2():
    params = [nn.Parameter(torch.ones(2))]
    assert isinstance(make_optimizer(params, Component("sgd", {"lr": 0.1, "momentum": 0.9})), torch.optim.SGD)
    adagrad = make_optimizer(params, Component("adagrad", {"lr": 0.1, "weight_decay": 0.01}))
    assert adagrad.defaults["weight_decay"] == 0.01 and adagrad.defaults["lr"] == 0.1
    with pytest.raises(ValueError):
        make_optimizer(params, Component("lbfgs"))


def test_trainable_ignores_frozen_submodules():
    bundle = random_bundle()
    frozen = ListMLE(bundle.dims).requires_grad_(False)
    holder = DiversityModel()
    holder.prior = frozen
    assert not trainable(holder) and trainable(ListMLE(bundle.dims))


def test_monitors_see_the_restored_epochs_too(tmp_path):
    """A monitor (the search's pruning) is called for every epoch in order, those a resumed run restored
    first, with their recorded scores; callbacks only for the epochs trained in this sitting."""
    whole = []
    _train(tmp_path, epochs=4, name="whole.pt", monitors=[lambda epoch, record: whole.append((epoch, record["valid"]))])

    def kill(epoch, record):
        if epoch == 2:
            raise Kill

    with pytest.raises(Kill):
        _train(tmp_path, epochs=4, callbacks=[kill], name="cut.pt")
    seen, trained = [], []
    _train(tmp_path, epochs=4, name="cut.pt", monitors=[lambda epoch, record: seen.append((epoch, record["valid"]))],
           callbacks=[lambda epoch, record: trained.append(epoch)])
    assert seen == whole and [e for e, _ in seen] == [1, 2, 3, 4] and trained == [3, 4]
