"""A training killed with SIGKILL in the middle of an epoch, started again, ends bit-identical to an
uninterrupted one: through the command line, as separate processes (``srdiv train`` then ``srdiv rank``).

SIGKILL runs no clean-up at all, so this checks what the in-process resume test cannot: that every file
under its final name is whole (the checkpoint included) and that the checkpoint alone carries everything
the resumed epochs depend on (weights, optimiser moments, the mini-batch generator, torch's RNG, which the
dropout of the row below draws from). The same checkpoint met with a changed input starts over.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from srdiv.collection.schema import Collection, write_collection
from srdiv.features.bundle import Bundle, random_bundle
from srdiv.train.tuning import OUTPUTS

SRDIV = Path(sys.executable).parent / "srdiv"
EPOCHS = 4
QUERIES = 400
FOLD = 1
PARAMS = {
    "seed": 11,
    "train": {"train_docs": 30, "rank_docs": 30, "epochs": EPOCHS, "patience": EPOCHS, "batch_size": 1},
    "models": {"Drop": {"model": {"name": "daletor", "args": {"context": "none", "hidden": [32, 16], "dropout": 0.3}},
                        "objective": {"name": "daletor"}, "group": "implicit",
                        "optim": {"name": "adam", "args": {"lr": 0.01}}}},
}
"""One row whose every epoch draws from every RNG a resume must restore: shuffled mini-batches of one
query (the batch generator) and dropout (torch's RNG); one query per step makes an epoch long enough
(many optimiser steps) to be killed in the middle of."""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A bundle of 400 queries x 30 candidates and its collection (qrels from the bundle's labels, 5 folds)."""
    root = tmp_path_factory.mktemp("inputs")
    bundle = random_bundle(queries=QUERIES, docs=30, subtopics=4, seed=3)
    q, d, s = np.nonzero(bundle.labels)
    qrels = pd.DataFrame({"qid": bundle.qids[q], "sid": [f"s{i}" for i in s], "docno": bundle.docnos[q, d],
                          "grade": 1, "rel": 1})
    docs = bundle.doc_mask.shape[1]
    run = pd.DataFrame({"qid": np.repeat(bundle.qids, docs), "docno": bundle.docnos.ravel(),
                        "rank": np.tile(np.arange(1, docs + 1), len(bundle)), "score": 0.0})
    write_collection(Collection(
        topics=pd.DataFrame({"qid": bundle.qids, "query": "q", "description": "", "type": "faceted"}),
        subtopics=qrels[["qid", "sid"]].drop_duplicates().assign(text=""),
        suggestions=pd.DataFrame(columns=["qid", "sugg_id", "level", "parent", "text", "weight"]),
        qrels=qrels, run=run[run["docno"] != ""],
        folds=pd.DataFrame({"qid": bundle.qids, "fold": np.arange(len(bundle)) % 5 + 1})), root / "coll")
    bundle.save(root / "bundle.npz")
    (root / "params.yaml").write_text(yaml.safe_dump(PARAMS))
    return root


def command(inputs: Path, out: Path, stage: str, bundle: Path | None = None) -> list[str]:
    common = ["--fold", str(FOLD), "--bundle", str(bundle or inputs / "bundle.npz"), "--collection", str(inputs / "coll"),
              "--out", str(out), "--threads", "1"]
    if stage == "train":
        return [str(SRDIV), "train", "--model", "Drop", "--params", str(inputs / "params.yaml"), "--no-progress",
                *common]
    return [str(SRDIV), "rank", "--model-dir", str(out), *common]


def env() -> dict:
    """The subprocess imports this checkout's srdiv, as the test process does."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}


def run(inputs: Path, out: Path, stages=("train", "rank"), bundle: Path | None = None) -> list[str]:
    """``srdiv train`` then ``srdiv rank``; the epochs the training ran (its log lines)."""
    logs = []
    for stage in stages:
        done = subprocess.run(command(inputs, out, stage, bundle), env=env(), capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        logs += done.stderr.splitlines()
    return [int(m.group(1)) for m in map(re.compile(r"Drop fold1 .*epoch (\d+)/").search, logs) if m]


def finished_epochs(checkpoint: Path) -> int:
    return int(torch.load(checkpoint, map_location="cpu", weights_only=True)["state"]["epoch"])


@pytest.mark.slow  # four trainings of a 400-query bundle as separate processes
def test_a_training_killed_mid_epoch_resumes_to_the_same_bytes(inputs, tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert run(inputs, whole) == list(range(1, EPOCHS + 1))
    epoch_seconds = pd.read_parquet(whole / "curve.parquet")["seconds"].to_numpy()
    assert len(epoch_seconds) == EPOCHS

    checkpoint = cut / "tune" / "point0.pt"
    proc = subprocess.Popen(command(inputs, cut, "train"), env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not checkpoint.exists():                    # epoch 1 is checkpointed: epoch 2 starts now
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint after 120 s"
            time.sleep(0.005)
        time.sleep(epoch_seconds[1] / 2)                  # half way through epoch 2
        proc.kill()                                       # SIGKILL: no handler, no finally, no clean-up
        proc.wait(timeout=30)
        proc.stderr.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    finished = finished_epochs(checkpoint)            # 1, unless the machine was slow to kill
    assert 1 <= finished < EPOCHS, "the kill did not land inside the training"
    assert not [name for name in OUTPUTS if (cut / name).exists()]   # nothing under a final name but
    assert sorted(p.name for p in cut.iterdir()) == ["tune"]          # the (whole, loadable) checkpoint

    changed = tmp_path / "changed"                      # the same checkpoint, but one input value differs:
    shutil.copytree(cut, changed)                       # the job starts over
    bundle = Bundle.load(inputs / "bundle.npz")     # read-only memory maps: change a copy
    rel_feat = np.array(bundle.rel_feat)
    rel_feat[0, 0, 0] += 1.0
    replace(bundle, rel_feat=rel_feat).save(tmp_path / "changed.npz")
    assert run(inputs, changed, ("train",), tmp_path / "changed.npz") == list(range(1, EPOCHS + 1))

    assert run(inputs, cut) == list(range(finished + 1, EPOCHS + 1))   # the same command: resumes
    for name in ("model.pt", "hparams.json", "run.txt"):
        assert (cut / name).read_bytes() == (whole / name).read_bytes(), name
    a, b = (pd.read_parquet(d / "curve.parquet") for d in (whole, cut))
    pd.testing.assert_frame_equal(a[["epoch", "loss", "valid"]], b[["epoch", "loss", "valid"]], check_exact=True)
    assert not (cut / "tune").exists()
