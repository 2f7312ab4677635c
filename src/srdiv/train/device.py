"""Where a row's jobs run: the device they train and rank on, whether they take the pipeline's ``gpu``
resource, and how many of a row's trials one job trains at once.

Imports no torch: the Snakefile reads it while it builds the DAG (``workflow/rules/common.smk``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from srdiv.experiment import ModelSpec

if TYPE_CHECKING:
    import torch

GPU_GAIN = frozenset({"desa", "daletor", "ntn"})
"""The models (their registered names) whose training was measured well faster on a GPU than on one CPU thread
(``docs/benchmarks.md``: DESA 17x, DALETOR and PAMM-NTN 13x on an H100; DSSA 1x, MDP-DIV 0.3x): ``train.device:
auto`` puts their rows on CUDA when present and every other row on the CPU (:func:`row_device`). Names, not an
attribute of the classes, so that the Snakefile places the rows without importing the models and torch."""


def row_device(spec: ModelSpec) -> str:
    """The ``train.device`` a row's jobs run on: the row's own setting, except that ``auto`` (CUDA when
    present) stays ``auto`` only for a model of :data:`GPU_GAIN` and is ``cpu`` for every other one.
    ``uses_gpu`` says whether the jobs take the pipeline's ``gpu`` resource."""
    if spec.train.device == "auto" and spec.model.name not in GPU_GAIN:
        return "cpu"
    return spec.train.device


def uses_gpu(spec: ModelSpec) -> bool:
    """Whether a row's train job (which also ranks) may run on CUDA (:func:`row_device` ``auto`` or ``cuda[:k]``)."""
    return row_device(spec) == "auto" or row_device(spec).startswith("cuda")


def tune_workers(spec: ModelSpec, threads: int, device: torch.device | str = "cpu") -> int:
    """How many of a row's trials one job trains at once with ``threads`` CPU threads: one forked
    process per trial of a batch (``search.batch``), one torch thread each, for a row that trains on the
    CPU; 1 (the trials one after the other) for a row that trains nothing or runs on CUDA (forked
    processes cannot share a CUDA context). A trial's sampler and pruner see only the trials of earlier
    batches, so the chosen model is the one of a single thread whatever the number
    (:mod:`srdiv.train.search`, tests/test_search.py). ``device``: a ``torch.device`` or its name
    (``cpu``, ``cuda:1``), whose type is the part before the colon."""
    if spec.objective is None or str(device).partition(":")[0] != "cpu":
        return 1
    return max(1, min(threads, spec.search.batch))
