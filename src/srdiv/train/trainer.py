"""One training loop for every torch model: epochs of objective mini-batches, early stopping, resume.

Each epoch runs the objective's mini-batches, then scores the model on the
validation queries (a callable: official alpha-nDCG@20 in the harness), keeps
the best state, and writes a checkpoint (model, optimiser, RNG states, epoch,
best state, learning curve). Training stops after ``patience`` epochs without
improvement, after ``epochs``, or at an epoch whose loss is not finite (the
model diverged: an early stop, recorded as ``diverged``); the model ends in its
best state.

A run killed after any epoch and started again with the same checkpoint path
resumes from the last finished epoch and ends bit-identical to an
uninterrupted run: the objective's samples are prepared from their own seed,
and the mini-batch generator and torch RNG states travel in the checkpoint.
A checkpoint written for other settings or inputs (``fingerprint``) is ignored.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from srdiv.experiment import Component, TrainSettings
from srdiv.features.bundle import Bundle
from srdiv.io import InputError, load_torch, save_torch
from srdiv.models.base import DiversityModel
from srdiv.objectives.base import Objective
from srdiv.params import OPTIMIZERS

CURVE_COLUMNS = ["epoch", "loss", "valid", "seconds"]

Callback = Callable[[int, dict], None]
"""Called after each epoch's checkpoint with ``(epoch, curve record)``; may raise to stop training.
A trainer's ``monitors`` are called the same way for every epoch, those a resumed run restored
included (first, in order): a decision they take on the curve (pruning) is the same after a resume."""


def make_optimizer(parameters, optim: Component) -> torch.optim.Optimizer:
    """``optim.name`` (adam | sgd | adagrad) with ``optim.args``: ``lr`` (1e-3 unless given), ``weight_decay``
    (L2, 0 unless given), other keywords as given."""
    if optim.name not in OPTIMIZERS:
        raise ValueError(f"unknown optimiser '{optim.name}' (known: {', '.join(OPTIMIZERS)})")
    args = dict(optim.args)
    # float(): YAML reads "1e-3" (no dot) as a string
    return getattr(torch.optim, OPTIMIZERS[optim.name])(parameters, lr=float(args.pop("lr", 1e-3)),
                                                        weight_decay=float(args.pop("weight_decay", 0.0)), **args)


def curve_frame(records: list[dict]) -> pd.DataFrame:
    """The learning curve: ``epoch`` (int), ``loss``, ``valid``, ``seconds`` (float), one row per epoch."""
    return pd.DataFrame(records, columns=CURVE_COLUMNS).astype(
        {"epoch": "int64", "loss": "float64", "valid": "float64", "seconds": "float64"})


def trainable(model: DiversityModel) -> bool:
    """Whether the model has parameters to train (a frozen prior does not count)."""
    return any(p.requires_grad for p in model.parameters())


@dataclass
class FitResult:
    """Best validation score, its epoch and the learning curve (``CURVE_COLUMNS``); ``restored_epochs``
    and ``restored_seconds``: the epochs an earlier sitting ran (restored from the checkpoint) and their
    recorded seconds."""

    valid: float
    epoch: int
    curve: pd.DataFrame
    restored_epochs: int = 0
    restored_seconds: float = 0.0
    diverged: int = 0
    """The epoch whose loss was not finite (0: none); training stopped there, the best epoch before it kept."""


class Trainer:
    """Trains a model with an objective; see the module docstring."""

    def __init__(self, settings: TrainSettings, optim: Component, device: torch.device, seed: int = 0,
                 checkpoint: str | Path | None = None, fingerprint: str = "",
                 callbacks: Sequence[Callback] = (), progress: bool | None = None, desc: str = "train",
                 monitors: Sequence[Callback] = ()):
        self.settings = settings
        self.optim = optim
        self.device = device
        self.seed = seed
        self.checkpoint = Path(checkpoint) if checkpoint else None
        self.fingerprint = fingerprint
        self.callbacks = list(callbacks)
        self.monitors = list(monitors)
        self.progress = progress
        self.desc = desc

    def fit(self, model: DiversityModel, objective: Objective, train: Bundle,
            validate: Callable[[DiversityModel], float]) -> FitResult:
        """Train ``model`` (already on the device) on ``train``; ``validate(model)`` is higher-is-better."""
        data = train.to_torch(self.device)
        prepared = objective.prepare(train, np.random.default_rng([self.seed, 1]))
        optimizer = make_optimizer([p for p in model.parameters() if p.requires_grad], self.optim)
        batch_rng = np.random.default_rng([self.seed, 2])
        torch.manual_seed(self.seed)
        state: dict[str, Any] = {"epoch": 0, "best_valid": -math.inf, "best_epoch": 0, "best_state": _copy_state(model),
                 "bad_epochs": 0, "curve": [], "done": False}
        saved = self._load()
        if saved is not None:
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
            batch_rng.bit_generator.state = saved["batch_rng"]
            torch.set_rng_state(saved["torch_rng"])
            if torch.cuda.is_available() and saved["cuda_rng"]:
                torch.cuda.set_rng_state_all(saved["cuda_rng"])
            state = saved["state"]
        n_restored = len(state["curve"])   # epochs an earlier sitting ran
        for record in state["curve"]:
            for monitor in self.monitors:
                monitor(record["epoch"], record)
        epochs = self.settings.epochs
        bar = tqdm(total=epochs, initial=state["epoch"], desc=self.desc, leave=False,
                   disable=None if self.progress is None else not self.progress)
        while not state["done"] and state["epoch"] < epochs:
            start = time.perf_counter()
            epoch = state["epoch"] + 1
            try:
                loss = self._epoch(model, objective, optimizer, data, prepared, len(train), batch_rng, epoch)
            except FloatingPointError as err:   # diverged: an early stop, recorded (a resumed run stops here too)
                state.update(done=True, diverged=epoch)
                self._save(model, optimizer, batch_rng, state)
                print(f"{err}: stopped; the best epoch before it ({state['best_epoch'] or 'none'}) is kept",
                      file=sys.stderr, flush=True)
                break
            model.eval()
            valid = float(validate(model))
            record = {"epoch": epoch, "loss": loss, "valid": valid, "seconds": time.perf_counter() - start}
            state["curve"].append(record)
            if valid > state["best_valid"]:
                state.update(best_valid=valid, best_epoch=epoch, best_state=_copy_state(model), bad_epochs=0)
            else:
                state["bad_epochs"] += 1
            state["epoch"] = epoch
            state["done"] = state["bad_epochs"] >= self.settings.patience or epoch >= epochs
            self._save(model, optimizer, batch_rng, state)
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}", valid=f"{valid:.4f}")
            if bar.disable:   # no bar (a log file, --no-progress): one line per epoch instead
                best = " (best)" if state["best_epoch"] == epoch else ""
                print(f"{self.desc} epoch {epoch}/{epochs}: loss {loss:.4f}, valid {valid:.4f}{best}, "
                      f"{record['seconds']:.1f} s", file=sys.stderr, flush=True)
            for callback in self.monitors + self.callbacks:
                callback(epoch, record)
        bar.close()
        model.load_state_dict(state["best_state"])
        return FitResult(state["best_valid"], state["best_epoch"], curve_frame(state["curve"]), n_restored,
                         sum(r["seconds"] for r in state["curve"][:n_restored]), state.get("diverged", 0))

    def _epoch(self, model: DiversityModel, objective: Objective, optimizer: torch.optim.Optimizer, data, prepared,
               n_queries: int, rng: np.random.Generator, epoch: int) -> float:
        """One pass over the objective's mini-batches; returns the mean batch loss."""
        model.train()
        losses = []
        for minibatch in objective.batches(prepared, n_queries, self.settings.batch_size, rng):
            loss = objective.loss(model, data, minibatch)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"{self.desc}: non-finite loss {loss.item()} in epoch {epoch}")
            model.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return float(np.mean(losses)) if losses else float("nan")

    def _save(self, model, optimizer, batch_rng, state) -> None:
        if self.checkpoint is None:
            return
        payload = {
            "fingerprint": self.fingerprint, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "batch_rng": batch_rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [], "state": state,
        }
        save_torch(payload, self.checkpoint, legacy=lambda path: True)   # the job's own tune/ (it removes it whole)

    def _load(self) -> dict | None:
        if self.checkpoint is None or not self.checkpoint.exists():
            return None
        try:
            saved = load_torch(self.checkpoint, "checkpoint", map_location=self.device)
        except InputError as err:   # not one this trainer wrote whole (checkpoints are written atomically)
            print(f"{self.desc}: ignoring {err.reason}; training from epoch 1", file=sys.stderr, flush=True)
            return None
        if not isinstance(saved, dict) or saved.get("fingerprint") != self.fingerprint:
            return None
        # map_location moved the RNG states to the device; torch sets them from CPU byte tensors only
        saved["torch_rng"] = saved["torch_rng"].cpu()
        saved["cuda_rng"] = [state.cpu() for state in saved["cuda_rng"]]
        return saved


def _copy_state(model: DiversityModel) -> dict:
    """A detached copy of the model's state dict."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
