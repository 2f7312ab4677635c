"""Every row of params.yaml trains, ranks and evaluates on the real DSSA-format sample (13 TREC topics).

This is the TREC path of the pipeline (``features: dssa-release``) at its
smallest: the release's vectors (25-d in the sample), its 18 relevance
features, vector-only diversity features, one trial, one epoch.
"""

import warnings

import numpy as np
import pytest

from srdiv.experiment import Dimension, model_rows, model_spec
from srdiv.features.assemble import build_bundle
from srdiv.features.diversity import diversity_features
from srdiv.metrics.evaluate import evaluate_run
from srdiv.metrics.runs import read_run
from srdiv.params import load_params
from srdiv.sampling.samples import SampleSettings, make_samples
from srdiv.features.folds import fold_queries, fold_split, select_queries
from srdiv.train.rank import rank_job
from srdiv.train.trained import Trained
from srdiv.train.tuning import run_job
from helpers import ROOT

PARAMS = load_params(ROOT / "params.yaml")
FOLD = 3  # test 16, 41, 42; validation 6, 22, 136; training the other 7 topics


def _small(params: dict) -> dict:
    """params.yaml with one epoch, two permutations and one point of every search space (a list's first
    value, a range's low end)."""
    rows = {}
    for row, entry in model_rows(params).items():
        entry = {**entry, "tune": {k: list(Dimension.parse(v, k).ends()[:1]) for k, v in (entry.get("tune") or {}).items()},
                 "train": {**(entry.get("train") or {}), "epochs": 1}}
        if entry["model"].get("args", {}).get("attention") == "dot":  # "dot" needs hidden = vector size (25 here)
            entry["model"] = {**entry["model"], "args": {**entry["model"]["args"], "hidden": 25}}
        rows[row] = entry
    return {**params, "models": rows, "samples": {**params["samples"], "permutations": 2}}


SMALL = _small(PARAMS)


@pytest.fixture(scope="module")
def release(dssa_sample, dssa_release):
    coll, (docs, pseudo, rel) = dssa_sample, dssa_release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vector-only diversity
        bundle = build_bundle(coll, docs, pseudo, rel, diversity_features(coll, None, docs, rank_docs=50),
                              rank_docs=50)
    train = fold_queries(bundle, fold_split(coll.folds, FOLD).train, SMALL["train"]["train_docs"])
    samples = make_samples(train, SampleSettings.from_params(SMALL), [0, FOLD])
    return coll, bundle, samples, {}


@pytest.mark.parametrize("row", list(model_rows(PARAMS)))
def test_every_row_trains_ranks_and_evaluates_on_the_release_sample(release, row, tmp_path):
    coll, bundle, samples, trained = release
    spec = model_spec(SMALL, row)
    if spec.prior and spec.prior not in trained:
        pytest.skip(f"needs {spec.prior} first")  # parametrisation keeps params order: priors come first
    out = tmp_path / row
    run_job(spec, bundle, coll, FOLD, out, seed=1, samples=samples, prior=trained.get(spec.prior), progress=False)
    trained[row] = Trained.load(out)
    rank_job(trained[row], bundle, coll, FOLD, out)
    run = read_run(out / "run.txt")
    assert set(run["qid"]) == {"16", "41", "42"}
    test = select_queries(bundle, ["16", "41", "42"])
    assert run.groupby("qid")["docno"].nunique().tolist() == test.doc_mask.sum(1).tolist()
    metrics = evaluate_run(run, coll.qrels, ["alpha_nDCG@20"])
    assert np.isfinite(metrics["value"]).all()
