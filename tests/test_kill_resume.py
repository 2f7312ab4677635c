"""A training killed with SIGKILL in the middle of an epoch, started again, ends bit-identical to an
uninterrupted one: through the command line, as separate processes (``srdiv train`` then ``srdiv rank``).
Linux: the child's state and CPU time are read from ``/proc``.

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
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
    common = ["--fold", str(FOLD), "--bundle", str(bundle or inputs / "bundle.npz"),
              "--collection", str(inputs / "coll"), "--out", str(out), "--threads", "1"]
    if stage == "train":
        return [str(SRDIV), "train", "--model", "Drop", "--params", str(inputs / "params.yaml"), "--no-progress",
                *common]
    return [str(SRDIV), "rank", "--model-dir", str(out), *common]


def env() -> dict:
    """The subprocess imports this checkout's srdiv, as the test process does."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}


EPOCH = re.compile(r"Drop fold1 .*epoch (\d+)/")
"""The line ``srdiv train --no-progress`` logs after each epoch's checkpoint."""
TICK = os.sysconf("SC_CLK_TCK")


def proc_stat(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` from its third field (the state) on; the name before it may hold spaces."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system, all its threads) process ``pid`` has run: unlike wall time, not
    stretched by other processes on the machine."""
    fields = proc_stat(pid)
    return (int(fields[11]) + int(fields[12])) / TICK


def pause(proc: subprocess.Popen) -> float:
    """Stop ``proc`` (SIGSTOP) and wait until its main thread, the one that trains and checkpoints, is
    stopped: the CPU seconds it has run."""
    os.kill(proc.pid, signal.SIGSTOP)
    while True:
        assert proc.poll() is None, "the training ended while it was being paused"
        if proc_stat(proc.pid)[0] == "T":
            return cpu_seconds(proc.pid)
        time.sleep(0.001)


@contextmanager
def training(inputs: Path, out: Path, bundle: Path | None = None) -> Iterator[subprocess.Popen]:
    """``srdiv train`` as a child process with its log on a pipe; killed after 300 s, or when the block
    ends with it still running."""
    proc = subprocess.Popen(command(inputs, out, "train", bundle), env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        yield proc
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stderr.close()


def read_log(proc: subprocess.Popen, until: int = 0) -> tuple[dict[int, float], str]:
    """``proc``'s log read to its end, or to its line for epoch ``until``: the epochs it logged, each with
    the CPU seconds ``proc`` had run when the line was read, and the text read."""
    epochs, lines = {}, []
    for line in proc.stderr:
        lines.append(line)
        if m := EPOCH.search(line):
            epochs[int(m.group(1))] = cpu_seconds(proc.pid)
            if int(m.group(1)) == until:
                break
    return epochs, "".join(lines)


def run(inputs: Path, out: Path, rank: bool = True, bundle: Path | None = None) -> dict[int, float]:
    """``srdiv train`` then ``srdiv rank``: the epochs the training logged, each with the CPU seconds it
    had run when the line was read (:func:`read_log`)."""
    with training(inputs, out, bundle) as proc:
        epochs, log = read_log(proc)
        assert proc.wait() == 0, log[-3000:]
    if rank:
        done = subprocess.run(command(inputs, out, "rank", bundle), env=env(), capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
    return epochs


def finished_epochs(checkpoint: Path) -> int:
    return int(torch.load(checkpoint, map_location="cpu", weights_only=True)["state"]["epoch"])


SHARE = 0.5
"""Where in epoch 2 the kill lands: this share of epoch 2's CPU time in the uninterrupted run."""


@pytest.mark.slow  # four trainings of a 400-query bundle as separate processes
def test_a_training_killed_mid_epoch_resumes_to_the_same_bytes(inputs, tmp_path):
    """The kill lands inside epoch 2, after some of its optimiser steps, decided by events and by the
    child's own CPU time, not by a share of a wall time (which a loaded machine stretches for the child
    and not for the test, or the other way round). The uninterrupted run gives the CPU seconds epoch 2
    takes: between its log lines for epochs 1 and 2, of which optimiser steps take 95% and validation and
    the checkpoint the rest. The run to kill is paused (SIGSTOP) once it logs epoch 1, a line it writes
    right after that checkpoint; it then runs in slices, paused after each, until it has spent ``SHARE``
    of that CPU time past the pause, so past the end of epoch 1 whatever the load; paused there, its
    checkpoint must still say epoch 1, and SIGKILL ends it where it stands. The child's CPU time does not
    count the time others ran: a loaded machine only makes the slices take longer. Production code shows
    nothing inside an epoch (one line per epoch with ``--no-progress``), and no hook is added for a test."""
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    cpu = run(inputs, whole)
    assert list(cpu) == list(range(1, EPOCHS + 1))

    checkpoint = cut / "tune" / "point0.pt"
    with training(inputs, cut) as proc:
        epochs, log = read_log(proc, until=1)
        assert 1 in epochs, log[-3000:]
        spent = pause(proc)                                 # epoch 1 is checkpointed: epoch 2 starts now
        assert finished_epochs(checkpoint) == 1
        target = spent + SHARE * (cpu[2] - cpu[1])
        while spent < target:
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(max((target - spent) / 2, 0.005))    # less CPU than is left, even on two threads
            spent = pause(proc)
        assert finished_epochs(checkpoint) == 1, "epoch 2 ended before the kill"
        proc.kill()                                         # SIGKILL: no handler, no finally, no clean-up
        assert proc.wait(timeout=30) == -signal.SIGKILL
        assert not EPOCH.search(proc.stderr.read())         # it logged no other epoch
    assert finished_epochs(checkpoint) == 1
    assert not [name for name in OUTPUTS if (cut / name).exists()]   # nothing under a final name but
    assert sorted(p.name for p in cut.iterdir()) == ["tune"]          # the (whole, loadable) checkpoint

    changed = tmp_path / "changed"                      # the same checkpoint, but one input value differs:
    shutil.copytree(cut, changed)                       # the job starts over
    bundle = Bundle.load(inputs / "bundle.npz")     # read-only memory maps: change a copy
    rel_feat = np.array(bundle.rel_feat)
    rel_feat[0, 0, 0] += 1.0
    replace(bundle, rel_feat=rel_feat).save(tmp_path / "changed.npz")
    assert list(run(inputs, changed, rank=False, bundle=tmp_path / "changed.npz")) == list(range(1, EPOCHS + 1))

    assert list(run(inputs, cut)) == list(range(2, EPOCHS + 1))   # the same command: resumes, epoch 2 again
    for name in ("model.pt", "hparams.json", "run.txt"):
        assert (cut / name).read_bytes() == (whole / name).read_bytes(), name
    a, b = (pd.read_parquet(d / "curve.parquet") for d in (whole, cut))
    pd.testing.assert_frame_equal(a[["epoch", "loss", "valid"]], b[["epoch", "loss", "valid"]], check_exact=True)
    assert not (cut / "tune").exists()
