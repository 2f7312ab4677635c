"""The (model, fold) training job (srdiv/train: tuning, rank, device, pool, trained): fold protocol, params rows, tuning,
priors, outputs, resume, gather, CLI."""

import json
import multiprocessing
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from typer.testing import CliRunner

from helpers import ROOT
from srdiv.cli.main import app, main
from srdiv.collection.schema import Collection, write_collection
from srdiv.experiment import Component, ModelSpec, model_spec
from srdiv.features.bundle import random_bundle
from srdiv.features.folds import fold_split
from srdiv.io import InputError
from srdiv.metrics import evaluate_run, read_run
from srdiv.report.gather import gather_metrics
from srdiv.models.base import DiversityModel
from srdiv.models.initial import InitialRanking
from srdiv.models.listmle import ListMLE
from srdiv.models.ranking import resolve_device
from srdiv.registry import MODELS
from srdiv.train.device import GPU_GAIN, row_device, tune_workers, uses_gpu
from srdiv.train.pool import in_processes
from srdiv.train.rank import rank_job
from srdiv.train.trained import Trained
from srdiv.train.tuning import OUTPUTS, run_job
from srdiv.train.records import read_record


@MODELS.register("test-coverage")
class CoverageScorer(DiversityModel):
    """Scores ``lam * feature 0`` (no parameters): the tests put subtopic coverage in feature 0."""

    def __init__(self, dims, lam=1.0):
        super().__init__()
        self.lam = lam

    def list_scores(self, batch):
        return self.lam * batch["rel_feat"][..., 0]


@MODELS.register("test-prior-user")
class PriorUser(DiversityModel):
    """Ranks by its prior's relevance times ``sign``."""

    def __init__(self, dims, prior, sign=1.0):
        super().__init__()
        self.prior = prior
        self.sign = sign

    def list_scores(self, batch):
        return self.sign * self.prior.relevance(batch["rel_feat"])


def make_data(queries=15, docs=10, folds=5, seed=0):
    """A random bundle whose feature 0 is subtopic coverage, and a collection with its qrels and folds."""
    bundle = random_bundle(queries=queries, docs=docs, subtopics=4, seed=seed)
    bundle.rel_feat[..., 0] = bundle.labels.sum(-1) + 0.01 * np.random.default_rng(seed).random((queries, docs))
    q, d, s = np.nonzero(bundle.labels)
    qrels = pd.DataFrame({"qid": bundle.qids[q], "sid": [f"s{i}" for i in s], "docno": bundle.docnos[q, d],
                          "grade": 1, "rel": 1})
    fold_table = pd.DataFrame({"qid": bundle.qids, "fold": np.arange(queries) % folds + 1})
    topics = pd.DataFrame({"qid": bundle.qids, "query": "q", "description": "", "type": "faceted"})
    run = pd.DataFrame({"qid": np.repeat(bundle.qids, docs), "docno": bundle.docnos.ravel(),
                        "rank": np.tile(np.arange(1, docs + 1), queries), "score": 0.0})
    run = run[run["docno"] != ""]
    subtopics = qrels[["qid", "sid"]].drop_duplicates().assign(text="")
    empty = {"suggestions": pd.DataFrame(columns=["qid", "sugg_id", "level", "parent", "text", "weight"])}
    return bundle, Collection(topics=topics, qrels=qrels, run=run, folds=fold_table, subtopics=subtopics, **empty)


PARAMS = {
    "seed": 7,
    "train": {"train_docs": 6, "rank_docs": 10, "epochs": 4, "patience": 10, "batch_size": 4},
    "models": {
        "Initial": {"model": {"name": "initial"}, "group": "initial"},
        "ListMLE": {"model": {"name": "listmle"}, "objective": {"name": "mle"}, "group": "implicit",
                    "optim": {"name": "adam", "args": {"lr": 0.1}}},
        "Cover": {"model": {"name": "test-coverage"}, "tune": {"model.args.lam": [-1.0, 0.0, 1.0]}},
        "Prior": {"model": {"name": "test-prior-user", "args": {"prior": "ListMLE"}},
                  "tune": {"model.args.sign": [1.0, -1.0]}},
        "LP": {"model": {"name": "listmle"}, "objective": {"name": "list_pairwise"},
               "optim": {"name": "adam", "args": {"lr": 0.1}},
               "variant_of": "ListMLE", "variant": "list-pairwise"},
    },
}


# --- folds and params ------------------------------------------------------------------------------------

def test_five_fold_rotation_tests_each_query_once():
    folds = pd.DataFrame({"qid": [f"q{i}" for i in range(10)], "fold": np.arange(10) % 5 + 1})
    tested = []
    for k in range(1, 6):
        split = fold_split(folds, k)
        assert split.test == [f"q{k - 1}", f"q{k + 4}"]
        assert split.valid == [f"q{k % 5}", f"q{k % 5 + 5}"]
        assert len(split.train) == 6 and not set(split.train) & set(split.valid + split.test)
        tested += split.test
    assert sorted(tested) == sorted(folds["qid"])


def test_two_folds_validate_on_the_training_fold():
    folds = pd.DataFrame({"qid": ["a", "b", "c"], "fold": [1, 2, 1]})
    split = fold_split(folds, 2)
    assert split.test == ["b"] and split.train == ["a", "c"] and split.valid == ["a", "c"]
    with pytest.raises(InputError, match="fold 3 is not in the folds table"):
        fold_split(folds, 3)


def test_model_rows_grid_and_tune_paths():
    params = {"train": {"epochs": 9}, "models": {"M": {
        "model": {"name": "x", "args": {"lam": 0.1}}, "train": {"batch_size": 3},
        "tune": {"model.args.lam": [0.2, 0.3], "optim.args.lr": [0.1, 0.01], "train.epochs": [5]}}}}
    spec = model_spec(params, "M")
    assert spec.train.epochs == 9 and spec.train.batch_size == 3 and spec.train.train_docs == 20
    assert spec.optim == Component("adam") and spec.objective is None
    grid = spec.grid()
    assert len(grid) == 4 and grid[0] == {"model.args.lam": 0.2, "optim.args.lr": 0.1, "train.epochs": 5}
    point = spec.at(grid[3])
    assert point.model == Component("x", {"lam": 0.3}) and point.optim == Component("adam", {"lr": 0.01})
    assert point.train.epochs == 5
    assert spec.model.args == {"lam": 0.1}  # the row itself is unchanged
    with pytest.raises(ValueError):
        spec.at({"model.lam": 1})
    with pytest.raises(KeyError):
        model_spec(params, "N")
    with pytest.raises(ValueError):
        model_spec({"models": {"M": {"model": {"name": "x"}, "lr": 1}}}, "M")
    with pytest.raises(ValueError, match=r"models.M.model must be \{name: ..., args: \{...\}\}, got 'x'"):
        model_spec({"models": {"M": {"model": "x"}}}, "M")


def test_the_row_shape_parses_to_typed_components():
    from srdiv.params import load_params

    params = load_params([Path(__file__).resolve().parents[1] / "params.yaml"])
    dssa, daletor = model_spec(params, "DSSA"), model_spec(params, "DALETOR")
    assert dssa.model == Component("dssa", {"cell": "lstm", "hidden": 50, "attention": "general",
                                            "similarity": "general", "max_pooling": True, "dropout": 0.5})
    assert dssa.objective == Component("list_pairwise") and dssa.representation == "lda"
    assert dssa.optim == Component("adam", {"lr": 0.001, "weight_decay": 1.0e-5}) and dssa.train.batch_size == 256
    assert dssa.tune == {"model.args.lam": {"low": 0.0, "high": 1.0},
                         "optim.args.lr": {"low": 1.0e-4, "high": 0.3, "log": True}}
    assert daletor.objective == Component("daletor", {"metric": "alpha_dcg", "temperature": 0.1})
    assert daletor.optim == Component("adagrad", {"lr": 0.01})
    assert model_spec(params, "MMR").prior == "ListMLE" and model_spec(params, "Initial").objective is None
    point = dssa.at({"model.args.lam": 0.4, "optim.args.lr": 0.03})
    assert point.model.args["lam"] == 0.4 and point.optim == Component("adam", {"lr": 0.03, "weight_decay": 1.0e-5})
    assert ModelSpec.from_dict(json.loads(json.dumps(point.to_dict()))) == point     # as model.pt stores it


def test_a_row_extends_another_with_only_what_it_changes():
    from srdiv.params import model_rows

    base = {"model": {"name": "dssa", "args": {"cell": "lstm", "hidden": 50}}, "objective": {"name": "list_pairwise"},
            "train": {"batch_size": 256}, "tune": {"model.args.lam": [0.0, 1.0]}}
    rows = model_rows({"models": {
        "DSSA": base,
        "GRU": {"extends": "DSSA", "model": {"args": {"cell": "gru"}}, "variant": "GRU"},
        "GRU-MLE": {"extends": "GRU", "objective": {"name": "mle"}, "train": None,
                    "tune": {"model.args.lam": None, "optim.args.lr": [0.1]}},
        "H": {"extends": "GRU", "model": {"name": "hdssa", "args": {"hidden": None, "levels": [1]}}},
        "Gone": None}})
    assert rows["GRU"] == {**base, "model": {"name": "dssa", "args": {"cell": "gru", "hidden": 50}}, "variant": "GRU"}
    assert rows["GRU-MLE"] == {"model": {"name": "dssa", "args": {"cell": "gru", "hidden": 50}},
                               "objective": {"name": "mle"}, "tune": {"optim.args.lr": [0.1]}, "variant": "GRU"}
    assert rows["H"]["model"] == {"name": "hdssa", "args": {"cell": "gru", "levels": [1]}}
    assert list(rows) == ["DSSA", "GRU", "GRU-MLE", "H"] and rows["DSSA"] == base     # the base row is unchanged
    gru = model_spec({"models": {"DSSA": base, "G": {"extends": "DSSA", "model": {"args": {"cell": "gru"}}}}}, "G")
    dssa = model_spec({"models": {"DSSA": base}}, "DSSA")
    assert gru == replace(dssa, row="G", model=Component("dssa", {"cell": "gru", "hidden": 50}))   # one arg changed
    with pytest.raises(ValueError, match="circle"):
        model_rows({"models": {"A": {"extends": "B"}, "B": {"extends": "A"}}})
    with pytest.raises(ValueError, match="not a row"):
        model_rows({"models": {"A": {"extends": "Gone"}, "Gone": None}})


# --- rankers --------------------------------------------------------------------------------------------

def test_initial_ranker_keeps_initial_order_and_listmle_scores_any_features():
    bundle = random_bundle(queries=3, docs=5)
    batch = bundle.to_torch()
    order = InitialRanking(bundle.dims).rank(batch)
    assert order[0].tolist() == [0, 1, 2, 3, 4]
    assert order[2].tolist() == [0, 1, 2, -1, -1]
    model = ListMLE(bundle.dims)
    assert model.relevance(batch["sub_feat"]).shape == batch["sub_feat"].shape[:-1]
    assert model.list_scores(batch).shape == (3, 5)


# --- jobs -----------------------------------------------------------------------------------------------

def _job(tmp_path, row, bundle, coll, fold=1, **kw):
    """One trial as the pipeline runs it: ``srdiv train``, ``srdiv rank``, ``srdiv evaluate --fold``."""
    out = tmp_path / row / f"fold{fold}"
    hparams = run_job(model_spec(PARAMS, row), bundle, coll, fold, out, seed=7, progress=False, **kw)
    rank_job(Trained.load(out), bundle, coll, fold, out)
    coll_dir = tmp_path / "collection"
    if not coll_dir.exists():
        write_collection(coll, coll_dir)
    result = CliRunner().invoke(app, ["evaluate", "--collection", str(coll_dir), "--run", str(out / "run.txt"),
                                      "--fold", str(fold), "--out", str(out / "metrics.parquet")])
    assert result.exit_code == 0, result.output
    return hparams


def test_tuning_picks_the_validation_best_and_writes_every_output(tmp_path):
    bundle, coll = make_data()
    hparams = _job(tmp_path, "Cover", bundle, coll)
    out = tmp_path / "Cover" / "fold1"
    assert all((out / name).exists() for name in OUTPUTS) and not (out / "tune").exists()
    split = fold_split(coll.folds, 1)
    valid_qrels = coll.qrels[coll.qrels["qid"].isin(split.valid)]
    expected = []
    for lam in (-1.0, 0.0, 1.0):  # recompute each point's validation score independently
        order = np.argsort(-lam * bundle.select_qids(split.valid).rel_feat[..., 0], axis=1, kind="stable")
        valid = bundle.select_qids(split.valid)
        run = pd.DataFrame([(q, valid.docnos[i, d], r + 1) for i, q in enumerate(valid.qids)
                            for r, d in enumerate(order[i]) if valid.doc_mask[i, d]], columns=["qid", "docno", "rank"])
        scores = evaluate_run(run, valid_qrels)
        expected.append(scores.loc[scores["measure"] == "alpha_nDCG@20", "value"].mean())
    assert [g["valid"] for g in hparams["grid"]] == pytest.approx(expected)
    assert hparams["chosen"] == {"model.args.lam": 1.0} and hparams["valid"] == max(expected)
    assert json.loads((out / "hparams.json").read_text())["chosen"] == {"model.args.lam": 1.0}
    # test outputs: the run file re-evaluates to metrics.parquet; timings for the report
    metrics = pd.read_parquet(out / "metrics.parquet")
    assert list(metrics.columns) == ["run", "qid", "measure", "value"] and set(metrics["qid"]) == set(split.test)
    again = evaluate_run(read_run(out / "run.txt"), coll.qrels[coll.qrels["qid"].isin(split.test)])
    assert np.allclose(again.sort_values(["qid", "measure"])["value"], metrics.sort_values(["qid", "measure"])["value"])
    timings = json.loads((out / "timings.json").read_text())
    assert timings["tune_points"] == 3 and "train_seconds" in timings and timings["commit"]
    assert json.loads((out / "rank.json").read_text())["rank_ms_per_query"] >= 0
    assert list(pd.read_parquet(out / "curve.parquet").columns) == ["epoch", "loss", "valid", "seconds"]


def test_trained_model_and_prior_round_trip(tmp_path):
    bundle, coll = make_data()
    _job(tmp_path, "ListMLE", bundle, coll)
    listmle = Trained.load(tmp_path / "ListMLE" / "fold1")
    assert listmle.spec.row == "ListMLE" and len(pd.read_parquet(tmp_path / "ListMLE/fold1/curve.parquet")) == 4
    with pytest.raises(InputError, match="prior"):
        _job(tmp_path, "Prior", bundle, coll)
    hparams = _job(tmp_path, "Prior", bundle, coll, prior=listmle)
    assert [g["point"] for g in hparams["grid"]] == [{"model.args.sign": 1.0}, {"model.args.sign": -1.0}]
    # with sign +1 the ranker is its prior: the same validation score as the trained ListMLE
    listmle_valid = json.loads((tmp_path / "ListMLE/fold1/hparams.json").read_text())["valid"]
    assert hparams["grid"][0]["valid"] == pytest.approx(listmle_valid)
    saved = Trained.load(tmp_path / "Prior" / "fold1")
    saved.save(tmp_path / "again.pt")                        # same model, same bytes (DVC and git see no change)
    assert (tmp_path / "again.pt").read_bytes() == (tmp_path / "Prior" / "fold1" / "model.pt").read_bytes()
    model = saved.build()
    assert not any(p.requires_grad for p in model.parameters())
    assert torch.equal(model.prior.linear.weight, listmle.build().linear.weight)
    _job(tmp_path, "ListMLE", bundle, coll, fold=2)
    with pytest.raises(InputError, match="the prior was trained for trial 2, not 1"):  # a prior of another fold
        _job(tmp_path, "Prior", bundle, coll, fold=1, prior=Trained.load(tmp_path / "ListMLE" / "fold2"))


def test_job_resumes_after_a_killed_epoch_with_identical_metrics(tmp_path):
    bundle, coll = make_data()
    from srdiv.sampling.samples import SampleSettings, make_samples
    from srdiv.features.folds import fold_queries

    train = fold_queries(bundle, fold_split(coll.folds, 3).train, PARAMS["train"]["train_docs"])
    samples = make_samples(train, SampleSettings(permutations=2), [7, 3])
    _job(tmp_path / "full", "LP", bundle, coll, fold=3, samples=samples)

    def kill(epoch, record):
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _job(tmp_path / "cut", "LP", bundle, coll, fold=3, samples=samples, callbacks=[kill])
    cut_dir = tmp_path / "cut/LP/fold3"
    assert (cut_dir / "tune/point0.pt").exists() and not (cut_dir / "metrics.parquet").exists()
    trained_after_resume = []
    _job(tmp_path / "cut", "LP", bundle, coll, fold=3, samples=samples,
         callbacks=[lambda epoch, record: trained_after_resume.append(epoch)])
    assert trained_after_resume == [3, 4]
    timings = json.loads((cut_dir / "timings.json").read_text())
    curve = pd.read_parquet(cut_dir / "curve.parquet")
    assert timings["restored_epochs"] == 2 and timings["train_seconds"] >= curve["seconds"].sum()
    assert json.loads((tmp_path / "full/LP/fold3/timings.json").read_text())["restored_epochs"] == 0
    full = pd.read_parquet(tmp_path / "full/LP/fold3/metrics.parquet")
    cut = pd.read_parquet(tmp_path / "cut/LP/fold3/metrics.parquet")
    assert full.equals(cut)
    a, b = (pd.read_parquet(tmp_path / f"{x}/LP/fold3/curve.parquet") for x in ("full", "cut"))
    assert a[["epoch", "loss", "valid"]].equals(b[["epoch", "loss", "valid"]])


def test_a_resume_after_changed_inputs_starts_over(tmp_path):
    """The checkpoint's fingerprint covers the content of the samples (and bundle, qrels, folds, prior):
    killed, then restarted on other samples, the job trains from epoch 1 and ends as a clean run does."""
    bundle, coll = make_data()
    from srdiv.sampling.samples import SampleSettings, make_samples
    from srdiv.features.folds import fold_queries

    train = fold_queries(bundle, fold_split(coll.folds, 3).train, PARAMS["train"]["train_docs"])
    old, new = (make_samples(train, SampleSettings(permutations=2), [seed, 3]) for seed in (7, 8))

    def kill(epoch, record):
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _job(tmp_path / "cut", "LP", bundle, coll, fold=3, samples=old, callbacks=[kill])
    epochs = []
    _job(tmp_path / "cut", "LP", bundle, coll, fold=3, samples=new, callbacks=[lambda e, r: epochs.append(e)])
    assert epochs == [1, 2, 3, 4]
    _job(tmp_path / "clean", "LP", bundle, coll, fold=3, samples=new)
    a, b = (pd.read_parquet(tmp_path / f"{x}/LP/fold3/curve.parquet") for x in ("cut", "clean"))
    assert a[["epoch", "loss", "valid"]].equals(b[["epoch", "loss", "valid"]])


def test_gather_labels_rows_as_the_report_reads_them(tmp_path):
    bundle, coll = make_data()
    for row in ("Initial", "ListMLE"):
        for fold in (1, 2):
            _job(tmp_path, row, bundle, coll, fold=fold)
    (tmp_path / "Stale" / "fold1").mkdir(parents=True)
    table = gather_metrics(tmp_path, {"models": {"Initial": {}, "ListMLE": {}, "LP": {"variant_of": "ListMLE",
                                                                                       "variant": "lp"}}})
    assert list(table.columns) == ["model", "variant", "fold", "qid", "measure", "value"]
    assert set(table["model"]) == {"Initial", "ListMLE"} and set(table["variant"]) == {""}
    assert sorted(table["fold"].unique()) == [1, 2]
    with pytest.raises(InputError, match="both report as model/variant"):
        gather_metrics(tmp_path, {"models": {"ListMLE": {}, "X": {"variant_of": "ListMLE"}}})
    # run_models and folds choose what is read; a requested fold that is missing is an error
    only = gather_metrics(tmp_path, {"models": {"Initial": {}, "ListMLE": {}}, "run_models": ["ListMLE"],
                                     "folds": [2]})
    assert set(only["model"]) == {"ListMLE"} and set(only["fold"]) == {2}
    with pytest.raises(InputError, match="fold3"):
        gather_metrics(tmp_path, {"models": {"Initial": {}}, "folds": [1, 3]})


def test_commands_end_to_end(tmp_path):
    bundle, coll = make_data(folds=2)
    write_collection(coll, tmp_path / "coll")
    bundle.save(tmp_path / "bundle.npz")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(PARAMS))
    common = ["--collection", str(tmp_path / "coll"), "--params", str(tmp_path / "params.yaml")]
    runner = CliRunner()
    result = runner.invoke(app, ["samples", "--bundle", str(tmp_path / "bundle.npz"), "--fold", "2",
                                 "--out", str(tmp_path / "samples/fold2"), *common])
    assert result.exit_code == 0, result.output
    models = tmp_path / "models"
    for row, extra in (("ListMLE", []), ("LP", ["--samples", str(tmp_path / "samples/fold2")]),
                       ("Prior", ["--prior", str(models / "ListMLE/fold2")])):
        out = models / row / "fold2"
        result = runner.invoke(app, ["train", "--model", row, "--fold", "2", "--bundle", str(tmp_path / "bundle.npz"),
                                     "--out", str(out), "--no-progress", *common, *extra])
        assert result.exit_code == 0, result.output
        result = runner.invoke(app, ["rank", "--model-dir", str(out / "model.pt"), "--fold", "2", "--bundle",
                                     str(tmp_path / "bundle.npz"), "--collection", str(tmp_path / "coll"),
                                     "--out", str(out)])
        assert result.exit_code == 0, result.output
        result = runner.invoke(app, ["evaluate", "--collection", str(tmp_path / "coll"), "--run", str(out / "run.txt"),
                                     "--fold", "2", "--out", str(out / "metrics.parquet")])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["gather", "--models", str(models), "--params", str(tmp_path / "params.yaml"),
                                 "--out", str(tmp_path / "metrics.parquet")])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(tmp_path / "metrics.parquet")
    assert set(zip(table["model"], table["variant"])) == {("ListMLE", ""), ("ListMLE", "list-pairwise"), ("Prior", "")}


# --- devices and threads --------------------------------------------------------------------------------

def test_resolve_device_names_the_fix_when_cuda_is_missing(monkeypatch):
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    for name in ("cuda", "cuda:0"):
        with pytest.raises(InputError, match=r"params\.yaml: train\.device is 'cuda(:0)?' but no CUDA device is "
                                             r"available .*set train\.device to auto .* or cpu"):
            resolve_device(name)
    with pytest.raises(InputError, match="train.device 'gpu' is not a torch device; set train.device to auto"):
        resolve_device("gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("auto") == resolve_device("cuda") == torch.device("cuda")
    assert resolve_device("cuda:0") == torch.device("cuda:0")
    with pytest.raises(InputError, match=r"'cuda:1' but this machine has 1 CUDA device\(s\) \(cuda:0 to cuda:0\)"):
        resolve_device("cuda:1")


def test_auto_sends_only_the_rows_that_gain_on_a_gpu_there_and_any_row_can_be_forced():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    main = yaml.safe_load((ROOT / "config/main.yaml").read_text())["run_models"]
    on_gpu = {row for row in main if uses_gpu(model_spec(params, row))}
    assert on_gpu == {"DESA", "DALETOR", "R-LTR-NTN", "PAMM-NTN"}
    assert row_device(model_spec(params, "DESA")) == "auto" and row_device(model_spec(params, "DSSA")) == "cpu"
    params["models"]["DSSA"]["train"] = {**(params["models"]["DSSA"].get("train") or {}), "device": "cuda"}
    params["models"]["DESA"]["train"] = {**(params["models"]["DESA"].get("train") or {}), "device": "cpu"}
    assert row_device(model_spec(params, "DSSA")) == "cuda" and uses_gpu(model_spec(params, "DSSA"))
    assert row_device(model_spec(params, "DESA")) == "cpu" and not uses_gpu(model_spec(params, "DESA"))
    assert GPU_GAIN <= set(MODELS.names())      # each a registered model (a renamed one would train on the CPU)


def test_train_command_sets_threads_and_reports_a_missing_gpu_in_one_line(tmp_path, monkeypatch, capsys):
    bundle, coll = make_data(folds=2)
    write_collection(coll, tmp_path / "coll")
    bundle.save(tmp_path / "bundle.npz")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({**PARAMS, "train": {**PARAMS["train"], "device": "cuda"}}))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    threads = []
    monkeypatch.setattr(torch, "set_num_threads", threads.append)  # the test process keeps its own threads
    out = tmp_path / "models" / "ListMLE" / "fold2"
    monkeypatch.setattr(sys, "argv", ["srdiv", "train", "--model", "ListMLE", "--fold", "2", "--bundle",
                                      str(tmp_path / "bundle.npz"), "--collection", str(tmp_path / "coll"),
                                      "--params", str(tmp_path / "params.yaml"), "--out", str(out),
                                      "--no-progress", "--threads", "3"])
    with pytest.raises(SystemExit) as exit_:
        main()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert exit_.value.code == 2 and len(lines) == 1, lines
    assert "train.device is 'cuda' but no CUDA device is available" in lines[0]
    assert "set train.device to auto" in lines[0]
    assert threads == [3] and not out.exists()


def test_train_with_rank_writes_the_run_srdiv_rank_writes(tmp_path, monkeypatch):
    """``srdiv train --rank`` (one process per trained row, as the pipeline runs it) ranks the test fold
    from the saved model: the same run file as a separate ``srdiv rank``."""
    bundle, coll = make_data(folds=2)
    write_collection(coll, tmp_path / "coll")
    bundle.save(tmp_path / "bundle.npz")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(PARAMS))
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    common = ["--fold", "2", "--bundle", str(tmp_path / "bundle.npz"), "--collection", str(tmp_path / "coll")]
    out, apart = tmp_path / "models" / "ListMLE", tmp_path / "apart"
    result = CliRunner().invoke(app, ["train", "--model", "ListMLE", *common, "--params", str(tmp_path / "params.yaml"),
                                      "--out", str(out), "--no-progress", "--rank"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["rank", "--model-dir", str(out), *common, "--out", str(apart)])
    assert result.exit_code == 0, result.output
    assert (out / "run.txt").read_bytes() == (apart / "run.txt").read_bytes()
    assert json.loads((out / "rank.json").read_text())["test_queries"] == json.loads((apart / "rank.json").read_text())["test_queries"]


def test_a_training_without_a_progress_bar_logs_one_line_per_epoch(tmp_path, monkeypatch, capsys):
    bundle, coll = make_data(folds=2)
    write_collection(coll, tmp_path / "coll")
    bundle.save(tmp_path / "bundle.npz")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(PARAMS))
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    monkeypatch.setattr(sys, "argv", ["srdiv", "train", "--model", "Cover", "--fold", "2", "--bundle",
                                      str(tmp_path / "bundle.npz"), "--collection", str(tmp_path / "coll"),
                                      "--params", str(tmp_path / "params.yaml"), "--out", str(tmp_path / "out"),
                                      "--no-progress"])
    main()
    lines = [line for line in capsys.readouterr().err.splitlines() if " epoch " in line]
    assert lines == []                                       # Cover has no objective: nothing is trained
    monkeypatch.setattr(sys, "argv", [{"Cover": "ListMLE", str(tmp_path / "out"): str(tmp_path / "out2")}.get(a, a)
                                      for a in sys.argv])
    main()
    lines = [line for line in capsys.readouterr().err.splitlines() if " epoch " in line]
    assert len(lines) == PARAMS["train"]["epochs"] and lines[0].startswith("ListMLE fold2")
    assert "epoch 1/4: loss " in lines[0] and "(best)" in lines[0] and lines[0].endswith(" s")


def test_a_grid_point_that_diverges_is_an_early_stop_not_a_failed_job(tmp_path):
    """A learning rate far too high makes the loss non-finite: that point stops there, is recorded as diverged
    with the best epoch before it, and the grid goes on; a job whose every point diverged is an error."""
    bundle, coll = make_data()
    params = {**PARAMS, "models": {
        "SGD": {"model": {"name": "listmle"}, "objective": {"name": "mle"},
                "optim": {"name": "sgd", "args": {"lr": 0.1}}, "tune": {"optim.args.lr": [0.1, 1.0e38]}},
        "Wild": {"model": {"name": "listmle"}, "objective": {"name": "mle"},
                 "optim": {"name": "sgd", "args": {"lr": 1.0e38}}}}}
    out = tmp_path / "SGD"
    hparams = run_job(model_spec(params, "SGD"), bundle, coll, 1, out, seed=7, progress=False)
    calm, wild = hparams["grid"]
    assert "diverged" not in calm and wild["diverged"] >= 1 and wild["epochs"] == wild["diverged"] - 1
    assert wild["best_epoch"] <= wild["epochs"] and (wild["valid"] is None) == (wild["best_epoch"] == 0)
    assert hparams["chosen"] == {"optim.args.lr": 0.1} and hparams["valid"] == calm["valid"]
    assert read_record(out / "hparams.json")["grid"][1]["diverged"] == wild["diverged"]
    with pytest.raises(InputError, match="diverged; lower the learning rate"):
        run_job(model_spec(params, "Wild"), bundle, coll, 1, tmp_path / "Wild", seed=7, progress=False)


@MODELS.register("test-fails-at")
class FailsAt(ListMLE):
    """ListMLE whose training raises srdiv's input error at ``lr`` 1.0 (a point trained in another process)."""

    def __init__(self, dims, fail=False):
        super().__init__(dims)
        self.fail = fail

    def list_scores(self, batch):
        if self.fail and self.training:
            raise InputError("bad.tsv", "a reason from the point's process", line=3)
        return super().list_scores(batch)


def test_tune_points_trained_side_by_side_give_the_models_of_one_thread(tmp_path):
    """With ``threads`` the points of a CPU row train in that many forked processes at once; the chosen
    model, every point's record and the curve are those of the points trained one after the other."""
    bundle, coll = make_data()
    params = {**PARAMS, "search": {"batch": 5}, "models": {"Grid": {       # a batch of 5: up to 5 at once
        "model": {"name": "listmle"}, "objective": {"name": "mle"}, "optim": {"name": "sgd", "args": {"lr": 0.1}},
        "tune": {"optim.args.lr": [0.01, 0.1, 1.0, 10.0, 1.0e38]}}}}
    spec = model_spec(params, "Grid")
    assert tune_workers(spec, 8, torch.device("cpu")) == 5 and tune_workers(spec, 3, torch.device("cpu")) == 3
    assert tune_workers(spec, 8, torch.device("cuda")) == 1 and tune_workers(spec, 8, "cuda:0") == 1
    assert tune_workers(spec, 2) == 2    # the CPU unless told
    assert tune_workers(model_spec(PARAMS, "Cover"), 8, torch.device("cpu")) == 1    # nothing to train
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one = run_job(spec, bundle, coll, 1, tmp_path / "one", seed=7, progress=False)
        three = run_job(spec, bundle, coll, 1, tmp_path / "three", seed=7, progress=False, threads=3)
    finally:
        torch.set_num_threads(threads)
    assert one == three and one["grid"][4]["diverged"]
    assert [read_record(tmp_path / d / "timings.json")["tune_workers"] for d in ("one", "three")] == [1, 3]
    a, b = Trained.load(tmp_path / "one"), Trained.load(tmp_path / "three")
    assert a.state.keys() == b.state.keys() and all(torch.equal(a.state[k], b.state[k]) for k in a.state)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "one" / "curve.parquet").drop(columns="seconds"),
                                  pd.read_parquet(tmp_path / "three" / "curve.parquet").drop(columns="seconds"))
    assert not (tmp_path / "three" / "tune").exists()
    # an error in a point's process is the job's error, as the point would raise it alone
    failing = {**PARAMS, "models": {"Fails": {
        "model": {"name": "test-fails-at"}, "objective": {"name": "mle"}, "optim": {"name": "adam"},
        "tune": {"model.args.fail": [False, True]}}}}
    with pytest.raises(InputError, match=r"^bad.tsv:3: a reason from the point's process$"):
        run_job(model_spec(failing, "Fails"), bundle, coll, 1, tmp_path / "fails", seed=7, progress=False, threads=2)


def _square_or_fail(i):
    if i == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    if i == 2:
        raise ValueError("task three fails")
    if i == 3:
        time.sleep(600)
    return i * i


def test_in_processes_answers_in_order_names_a_killed_task_and_stops_the_others():
    assert in_processes(lambda i: i * i, 5, 2) == [0, 1, 4, 9, 16]
    with pytest.raises(RuntimeError, match="task 2 of 2 ended .*without an answer"):
        in_processes(_square_or_fail, 2, 2)
    start = time.monotonic()
    with pytest.raises(ValueError, match="task three fails"):     # task 4 sleeps 600 s: stopped, not waited for
        in_processes(lambda i: _square_or_fail(i + 1 if i else 3), 2, 2)
    assert time.monotonic() - start < 300 and multiprocessing.active_children() == []


def test_a_study_copies_the_main_runs_identical_model_and_trains_a_changed_one(tmp_path):
    bundle, coll = make_data()
    main_dir = tmp_path / "main" / "ListMLE" / "fold1"
    first = run_job(model_spec(PARAMS, "ListMLE"), bundle, coll, 1, main_dir, seed=7, progress=False)
    trained_epochs = []
    (tmp_path / "study" / "ListMLE" / "fold1" / "tune").mkdir(parents=True)   # an interrupted attempt's
    copied = run_job(model_spec(PARAMS, "ListMLE"), bundle, coll, 1, tmp_path / "study" / "ListMLE" / "fold1",
                     seed=7, progress=False, reuse=main_dir, callbacks=[lambda e, r: trained_epochs.append(e)])
    study_dir = tmp_path / "study" / "ListMLE" / "fold1"
    assert trained_epochs == [] and copied == first and not (tmp_path / "study/ListMLE/fold1/tune").exists()
    for name in ("model.pt", "hparams.json", "curve.parquet"):
        assert (study_dir / name).read_bytes() == (main_dir / name).read_bytes()
    timings = read_record(study_dir / "timings.json")
    assert timings["reused_from"] == str(main_dir) and Trained.load(study_dir).record == Trained.load(main_dir).record
    # another seed, or no main run: trained
    run_job(model_spec(PARAMS, "ListMLE"), bundle, coll, 1, tmp_path / "other", seed=8, progress=False,
            reuse=main_dir, callbacks=[lambda e, r: trained_epochs.append(e)])
    assert trained_epochs == [1, 2, 3, 4] and "reused_from" not in read_record(tmp_path / "other" / "timings.json")
    run_job(model_spec(PARAMS, "ListMLE"), bundle, coll, 1, tmp_path / "none", seed=7, progress=False,
            reuse=tmp_path / "missing", callbacks=[lambda e, r: trained_epochs.append(e)])
    assert trained_epochs == [1, 2, 3, 4] * 2
    # a main run whose model was changed since srdiv wrote it is not copied
    with open(main_dir / "model.pt", "ab") as fh:
        fh.write(b"\0")
    run_job(model_spec(PARAMS, "ListMLE"), bundle, coll, 1, tmp_path / "after", seed=7, progress=False,
            reuse=main_dir, callbacks=[lambda e, r: trained_epochs.append(e)])
    assert trained_epochs == [1, 2, 3, 4] * 3
