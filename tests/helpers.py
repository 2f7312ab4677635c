"""Paths and markers the test modules share (``from helpers import ROOT``); ``conftest.py`` holds the
session fixtures."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
"""The repository: params.yaml, config/, data/, the Snakefile."""

BIN = Path(sys.executable).parent
"""The virtual environment's scripts: srdiv, snakemake, dvc."""

FIXTURES = ROOT / "tests" / "fixtures"
"""Small vendored inputs: a TREC Web Track slice, a WordNet slice, a DSSA-release sample."""

TREC_WEB = ROOT / "data" / "external" / "trec-web-2009-2012"
"""The vendored TREC Web Track 2009-2012 topics, qrels, folds and Lemur run."""

DSSA_SAMPLE = FIXTURES / "dssa-sample"
"""The DSSA feature release's 13-topic sample and its collection."""

COMMITTED_COLLECTIONS = [ROOT / "data" / "collections" / name for name in ("wordnet-div", "debian-facets")]
"""The collections the repository ships, by name: a collection a user imports or builds beside them in
``data/collections/`` (with documents or without) is theirs, and no test reads it."""


def copy_project(dest: Path) -> None:
    """The project as a fresh clone has it (tracked and not-ignored files) copied into ``dest``."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True,
                           cwd=ROOT, check=True).stdout.split()
    for name in files:
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def fresh_clone(dest: Path) -> Path:
    """:func:`copy_project`, committed to a new git repository at ``dest``: what a fresh clone has."""
    copy_project(dest)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "clone"]):
        subprocess.run(git + args, cwd=dest, check=True, capture_output=True)
    return dest


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
"""Marks a test (or a ``pytest.param``) that runs only where torch sees a CUDA device; CI has none."""

DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=needs_cuda)]
"""``@pytest.mark.parametrize("device", DEVICES)``: a test on the CPU, and on a CUDA device where there is one."""


def write_job(out: Path, row: str, fold: int, hparams: dict | None = None, timings: dict | None = None,
              rank: dict | None = None) -> None:
    """The records of a trained and ranked job (as ``srdiv train`` and ``srdiv rank`` write them), with changes."""
    identity = {"row": row, "fold": fold, "params": "p" * 64, "bundle": "b" * 64, "data": "d" * 64}
    out.mkdir(parents=True, exist_ok=True)
    records = {
        "hparams.json": {**identity, "seed": 0, "chosen": {}, "valid_measure": "alpha_nDCG@20", "valid": 0.5,
                         "grid": [{"point": {}, "valid": 0.5, "best_epoch": 0, "epochs": 0}],
                         "spec": {"train": {"epochs": 10}}, **(hparams or {})},
        "timings.json": {"train_seconds": 1.0, "restored_epochs": 0, "tune_points": 1, "device": "cpu",
                         "commit": "abc1234", **(timings or {})},
        "rank.json": {"rank_ms_per_query": 1.0, "test_queries": 3, "device": "cpu", "model": identity, **(rank or {})},
    }
    for name, record in records.items():
        (out / name).write_text(json.dumps(record))


def run_main(main, monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """Run the entry point ``main`` as the program ``srdiv ARGS``; return (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["srdiv", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cli_output(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """Run the real command line (:func:`srdiv.cli.main.main`) with ``args``; return (exit code, stdout, stderr)."""
    from srdiv.cli.main import main

    return run_main(main, monkeypatch, capsys, *args)


def cli(monkeypatch, capsys, *args) -> tuple[int, str]:
    """:func:`cli_output` without stdout: (exit code, stderr)."""
    code, _, err = cli_output(monkeypatch, capsys, *args)
    return code, err
