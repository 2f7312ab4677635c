"""The hyper-parameter search (srdiv.train.search): spaces, edges, the paper's point first, the same
result with one process or two, a resumed search equal to an uninterrupted one, pruning."""

import math

import optuna
import pytest
import torch

from srdiv.experiment import Dimension, SearchSettings, model_spec
from srdiv.io import InputError
from srdiv.train.rows import check_rows
from srdiv.train.tuning import run_job
from srdiv.train.search import Pruned, Pruning, STUDY_NAME
from helpers import ROOT
from test_train_job import PARAMS, make_data

SEARCHED = {**PARAMS, "search": {"trials": 6, "batch": 2, "startup": 2, "pruner": "median"}, "models": {
    "Searched": {"model": {"name": "listmle"}, "objective": {"name": "mle"},
                 "optim": {"name": "sgd", "args": {"lr": 0.1}},
                 "tune": {"optim.args.lr": {"low": 1.0e-3, "high": 10.0, "log": True}}}}}


def test_a_range_parses_to_its_kind_and_a_list_stays_a_choice():
    assert Dimension.parse([4, 16, 64], "k") == Dimension(values=(4, 16, 64))
    lr = Dimension.parse({"low": 1.0e-4, "high": 1.0, "log": True}, "k")
    assert (lr.low, lr.high, lr.log, lr.integer, lr.numeric) == (1.0e-4, 1.0, True, False, True)
    size = Dimension.parse({"low": 10, "high": 200, "step": 10, "int": True}, "k")
    assert (size.low, size.high, size.step, size.integer) == (10, 200, 10, True)
    assert isinstance(size.low, int) and size.describe() == "10-200 (int, step 10)"
    assert Dimension.parse({"low": 0.0, "high": 1.0}, "k").describe() == "0-1"


@pytest.mark.parametrize("value, message", [
    ({"low": 1.0, "high": 0.5}, "low \\(1.0\\) must be below high"),
    ({"low": 0.0, "high": 1.0, "log": True}, "a log range needs low > 0"),
    ({"low": 1, "high": 2.5, "int": True}, "an integer range needs whole"),
    ({"low": 0.0, "high": 1.0, "step": -0.1}, "step must be > 0"),
    ({"low": 0.0}, "must be \\{low: ..., high: ...\\}"),
    ({"low": 0.0, "high": 1.0, "scale": "log"}, "must be \\{low: ..., high: ...\\}"),
    ([], "a list of values or"),
])
def test_a_bad_range_is_one_input_error_naming_the_row_and_key(value, message):
    params = {**PARAMS, "models": {"Bad": {"model": {"name": "listmle"}, "objective": {"name": "mle"},
                                           "tune": {"optim.args.lr": value}}}}
    with pytest.raises(InputError, match=f"params.yaml: models.Bad.*optim.args.lr.*{message}"):
        check_rows(params, ["Bad"], "params.yaml")


def test_an_edge_is_the_outer_tenth_of_a_range_or_the_end_of_a_list():
    lr = Dimension(low=1.0e-4, high=1.0, log=True)          # log10 from -4 to 0: edges below -3.6, above -0.4
    assert lr.at_edge(1.5e-4) and lr.at_edge(0.5) and not lr.at_edge(1.0e-2) and not lr.at_edge(3.0e-4)
    lam = Dimension(low=0.0, high=1.0)
    assert lam.at_edge(0.0) and lam.at_edge(0.95) and not lam.at_edge(0.5) and not lam.at_edge(0.11)
    grid = Dimension(values=(4, 16, 64))
    assert grid.at_edge(4) and grid.at_edge(64) and not grid.at_edge(16) and not Dimension(values=(1,)).at_edge(1)


def test_the_paper_values_that_lie_in_the_space_are_the_first_trial(tmp_path):
    spec = model_spec(SEARCHED, "Searched")
    assert spec.paper_point() == {"optim.args.lr": 0.1}
    outside = {**SEARCHED["models"]["Searched"], "optim": {"name": "sgd", "args": {"lr": 100.0}}}
    assert model_spec({**SEARCHED, "models": {"S": outside}}, "S").paper_point() == {}
    bundle, coll = make_data()
    hparams = run_job(spec, bundle, coll, 1, tmp_path / "job", seed=7, progress=False)
    assert hparams["grid"][0]["point"] == {"optim.args.lr": 0.1} and hparams["grid"][0]["number"] == 0
    assert hparams["search"]["sampler"] == "tpe" and hparams["search"]["trials"] == 6 == len(hparams["grid"])
    assert all(1.0e-3 <= t["point"]["optim.args.lr"] <= 10.0 for t in hparams["grid"])


def test_one_process_or_two_give_the_same_trials_and_choice(tmp_path):
    spec = model_spec(SEARCHED, "Searched")
    bundle, coll = make_data()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one = run_job(spec, bundle, coll, 1, tmp_path / "one", seed=7, progress=False, threads=1)
        two = run_job(spec, bundle, coll, 1, tmp_path / "two", seed=7, progress=False, threads=2)
    finally:
        torch.set_num_threads(threads)
    assert one == two and len({t["point"]["optim.args.lr"] for t in one["grid"]}) > 1
    tables = [_trial_table(tmp_path / name / "study.db") for name in ("one", "two")]
    assert tables[0] == tables[1] and len(tables[0]) == 6


def test_an_interrupted_search_resumes_to_the_uninterrupted_result(tmp_path):
    spec = model_spec(SEARCHED, "Searched")
    bundle, coll = make_data()
    whole = run_job(spec, bundle, coll, 1, tmp_path / "whole", seed=7, progress=False)
    seen = []

    def kill(epoch, record):             # Ctrl-C in the middle of the third trial's training
        seen.append(epoch)
        if len(seen) == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_job(spec, bundle, coll, 1, tmp_path / "cut", seed=7, progress=False, callbacks=[kill])
    assert (tmp_path / "cut" / "tune" / "study.db").exists() and not (tmp_path / "cut" / "hparams.json").exists()
    finished = [t for t in _trial_table(tmp_path / "cut" / "tune" / "study.db") if t[3] != "RUNNING"]
    assert 1 <= len(finished) < 6
    trained = []
    resumed = run_job(spec, bundle, coll, 1, tmp_path / "cut", seed=7, progress=False,
                      callbacks=[lambda epoch, record: trained.append(epoch)])
    assert resumed == whole and len(trained) < sum(t["epochs"] for t in whole["grid"])   # finished trials reused
    assert _trial_table(tmp_path / "cut" / "study.db") == _trial_table(tmp_path / "whole" / "study.db")
    assert not (tmp_path / "cut" / "tune").exists()


@pytest.mark.parametrize("pruner", ["median", "halving"])
def test_a_hopeless_trial_is_pruned_and_a_good_one_is_not(pruner):
    good = [optuna.trial.create_trial(value=0.9, params={}, distributions={},
                                      intermediate_values={1: 0.8, 2: 0.85, 3: 0.9},
                                      system_attrs={"completed_rung_0": 0.8, "completed_rung_1": 0.9})
            for _ in range(3)]
    settings = SearchSettings(pruner=pruner, startup=2)
    hopeless = Pruning(good, settings)
    with pytest.raises(Pruned) as stop:
        for epoch in (1, 2, 3):
            hopeless(epoch, {"valid": 0.1})
    assert stop.value.epoch == 1 and hopeless.values == {1: 0.1}
    promising = Pruning(good, settings)
    for epoch in (1, 2, 3):
        promising(epoch, {"valid": 0.95})
    assert Pruning([], settings)(1, {"valid": 0.0}) is None       # the first batch: nothing to compare with


def test_a_search_records_pruned_trials_in_the_job_records(tmp_path):
    params = {**SEARCHED, "search": {**SEARCHED["search"], "trials": 8},
              "train": {**PARAMS["train"], "epochs": 6}}
    params["models"]["Searched"] = {**SEARCHED["models"]["Searched"],
                                    "tune": {"optim.args.lr": {"low": 1.0e-9, "high": 10.0, "log": True}}}
    bundle, coll = make_data()
    hparams = run_job(model_spec(params, "Searched"), bundle, coll, 1, tmp_path / "job", seed=7, progress=False)
    states = [t["state"] for t in hparams["grid"]]
    pruned = [t for t in hparams["grid"] if t["state"] == "pruned"]
    assert hparams["search"]["pruned"] == len(pruned) and set(states) <= {"complete", "pruned", "fail"}
    assert all(1 <= t["pruned_at"] == t["epochs"] < 6 for t in pruned)
    chosen = next(t for t in hparams["grid"] if t["point"] == hparams["chosen"])
    assert chosen["state"] == "complete" and math.isclose(chosen["valid"], hparams["valid"])


def _trial_table(path):
    study = optuna.load_study(study_name=STUDY_NAME, storage=f"sqlite:///{path}")
    return [(t.number, t.params, t.value, t.state.name, t.intermediate_values) for t in study.get_trials()]



def test_params_yaml_accepts_ranges_and_names_a_misspelt_one(tmp_path):
    from srdiv.params import load_params

    good = tmp_path / "good.yaml"
    good.write_text("models: {DSSA: {tune: {optim.args.lr: {low: 1.0e-4, high: 0.1, log: true}}}}\n"
                    "search: {trials: 5, pruner: halving}\n")
    params = load_params([ROOT / "params.yaml", good])
    spec = model_spec(params, "DSSA")
    assert spec.space()["optim.args.lr"] == Dimension(low=1.0e-4, high=0.1, log=True)
    assert spec.search == SearchSettings(trials=5, batch=2, startup=4, pruner="halving")
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: {DSSA: {tune: {optim.args.lr: {low: 1.0e-4, high: 0.1, scale: log}}}}\n")
    with pytest.raises(InputError, match="bad.yaml.*unknown key 'models.DSSA.tune.optim.args.lr.scale'"):
        load_params([ROOT / "params.yaml", bad])
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("search: {pruner: hyperband}\n")
    with pytest.raises(InputError, match="wrong.yaml.*'search.pruner' must be one of median, halving"):
        load_params([ROOT / "params.yaml", wrong])
