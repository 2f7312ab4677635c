"""One (model, fold) trial: tune on the validation fold and train (:func:`run_job`); :func:`srdiv.train.rank.rank_job`
then ranks the test fold.

Steps (fold protocol in :mod:`srdiv.features.folds`):

1. split the bundle's queries; training queries keep their top ``train_docs``
   candidates, validation and test queries their top ``rank_docs``;
   :class:`~srdiv.features.bundle.FeatureScaler` is fitted on the training
   queries only and applied to all three;
2. search the row's ``tune`` space (:mod:`srdiv.train.search`: an Optuna study in
   ``<out>/study.db``); each trial builds the model at its point (torch seed
   = ``seed``), trains it with its objective when it has trainable parameters
   (:class:`~srdiv.train.trainer.Trainer`, checkpoints under ``<out>/tune/``,
   pruned on its per-epoch validation score), and scores it on the validation
   queries (official alpha-nDCG@20); the best completed trial is kept (the
   first one on ties);
3. :func:`srdiv.train.rank.rank_job` ranks the test queries with the chosen model; ``srdiv
   evaluate --fold`` scores them.

A row with ``model: {args: {prior: <Row>}}`` gets that row's trained model of the
same fold (``<prior_dir>/model.pt``, frozen) as its ``prior`` constructor
argument. Outputs in ``<out>/`` (see :func:`run_job`).
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

import srdiv.objectives  # noqa: F401  (registers every objective)
from srdiv.collection.schema import Collection
from srdiv.experiment import ModelSpec, TrainSettings
from srdiv.features.bundle import Bundle, FeatureScaler
from srdiv.features.folds import FoldSplit, fold_queries, fold_split, folds_file, query_rows
from srdiv.io import InputError, atomic_path, verify, write_parquet, write_text
from srdiv.models.base import DiversityModel
from srdiv.models.ranking import RunScorer, rank_bundle, resolve_device, run_frame
from srdiv.provenance import git_commit
from srdiv.registry import OBJECTIVES
from srdiv.sampling.samples import Samples
from srdiv.train.device import row_device, tune_workers
from srdiv.train.digests import bundle_digest, checkpoint_key, inputs_digest, jsonable
from srdiv.train.pool import in_processes
from srdiv.train.records import check_identity, check_job_dir, fingerprint, identity, read_record
from srdiv.train.search import STUDY_FILE, Outcome, Planned, Pruned, Pruning, Search
from srdiv.train.trained import MODEL_FILE, Trained, build_model
from srdiv.train.trainer import Callback, Trainer, curve_frame, trainable

OUTPUTS = ("hparams.json", "timings.json", MODEL_FILE, "curve.parquet", STUDY_FILE)
"""Files of a finished training job, in ``<out>/`` (``rank_job`` adds ``run.txt`` and ``rank.json``)."""


@dataclass
class FoldData:
    """The training and validation bundles of one trial, standardised by a scaler fitted on the training
    queries (the test queries are read only by :func:`srdiv.train.rank.rank_job`)."""

    train: Bundle | None
    valid: Bundle
    scaler: FeatureScaler

    @classmethod
    def make(cls, bundle: Bundle, split: FoldSplit, settings: TrainSettings, train: bool = True) -> FoldData:
        """Training queries with their top ``train_docs``, validation queries with their top ``rank_docs``.
        Without ``train`` (a row that trains nothing) the scaler reads the training queries' feature arrays
        and no training copy is made (``train`` is None): the same scaler, less memory."""
        if train:
            data = fold_queries(bundle, split.train, settings.train_docs)
            scaler = FeatureScaler.fit(data)
            data = scaler.transform(data, inplace=True)
        else:
            cut = bundle.truncate(settings.train_docs)
            data, scaler = None, FeatureScaler.fit(cut, query_rows(cut, split.train))
        return cls(data, scaler.transform(fold_queries(bundle, split.valid, settings.rank_docs), inplace=True),
                   scaler)


@dataclass
class TunedPoint:
    """One trial after training: its point, spec, validation score, model weights (on the CPU; none for
    a pruned trial) and learning curve."""

    point: dict
    spec: ModelSpec
    valid: float
    best_epoch: int
    state: dict
    curve: pd.DataFrame
    diverged: int = 0
    number: int = 0
    pruned_at: int = 0

    def info(self) -> dict:
        """What the study keeps of the trial beside its scores (its user attributes)."""
        info = {"best_epoch": self.best_epoch, "epochs": len(self.curve),
                "best_valid": self.valid if math.isfinite(self.valid) else None}
        return {**info, "diverged": self.diverged} if self.diverged else info


def trial_summary(trial) -> dict:
    """A trial's record in ``hparams.json``'s ``grid``: number, point, state (complete, pruned, failed),
    best validation score (``valid``; null if it diverged before its first validation), best epoch,
    epochs trained, and the epoch it was pruned at or diverged in."""
    attrs = trial.user_attrs
    record = {"number": trial.number, "point": dict(trial.params), "state": trial.state.name.lower(),
              "valid": attrs.get("best_valid"), "best_epoch": attrs.get("best_epoch", 0),
              "epochs": attrs.get("epochs", 0)}
    extra = {key: attrs[key] for key in ("pruned_at", "diverged") if attrs.get(key)}
    return {**record, **extra}


def run_job(spec: ModelSpec, bundle: Bundle, collection: Collection, fold: int, out: str | Path, seed: int = 0,
            samples: Samples | None = None, prior: Trained | None = None, callbacks: Sequence[Callback] = (),
            progress: bool | None = None, reuse: str | Path | None = None, threads: int = 1) -> dict[str, Any]:
    """Tune and train ``spec`` on trial ``fold``; write the chosen model and its records under ``out``.

    ``reuse``: another job directory (a study passes the main run's); when it holds this very model
    (:func:`reuse_job`), that is copied instead of training again. ``threads``: CPU threads the job may
    use; a row training on the CPU trains up to that many trials at once (:func:`tune_workers`).

    Outputs: ``hparams.json`` (chosen point, its validation score, every trial in ``grid``
    (:func:`trial_summary`), the ``search``), ``study.db`` (the Optuna study; a rerun after an
    interruption continues it), ``timings.json`` (``train_seconds`` over the whole search: this sitting's wall time plus
    the recorded seconds of the epochs earlier sittings ran, ``restored_epochs`` of them),
    ``model.pt`` (:class:`Trained`), ``curve.parquet`` (``epoch, loss, valid,
    seconds`` of the chosen point; empty when nothing was trained). Returns
    the ``hparams.json`` content. :func:`srdiv.train.rank.rank_job` then ranks the test fold.
    """
    out = Path(out)
    check_job_dir(out, spec.row, fold, OUTPUTS)
    settings = spec.train
    split = fold_split(collection.folds, fold, folds_file(collection))
    device = resolve_device(row_device(spec))
    for name, qids in (("training", split.train), ("validation", split.valid)):
        if not collection.qrels["qid"].isin(set(qids)).any():
            raise InputError(folds_file(collection), f"trial {fold} has no judged topic among its {name} queries: "
                                                     "nothing to learn or measure")
    _check_prior_record(prior, fold)
    data = FoldData.make(bundle, split, settings, train=spec.objective is not None)
    prior_model = _prior_model(spec, prior, data.scaler, device)
    bundle_fp = bundle_digest(bundle)
    _check_prior_record(prior, fold, bundle_fp)
    scorer = RunScorer(collection.qrels, split.valid, [settings.valid_measure])
    start = time.perf_counter()
    inputs = inputs_digest(bundle, collection, samples, prior)
    record = {"row": spec.row, "fold": fold, "params": fingerprint({"spec": spec.to_dict(), "seed": seed}),
              "bundle": bundle_fp, "data": inputs}
    if reuse is not None and (hparams := reuse_job(Path(reuse), record, out)) is not None:
        return hparams
    for point in spec.corners():    # what the constructors check (DESA: heads divide d_model), before any training
        try:
            build_model(spec.at(point), data.valid.dims, prior_model)
        except (TypeError, ValueError, RuntimeError) as err:
            raise InputError("--model", f"row {spec.row} at {point or 'its settings'}: {err}") from None
    search = Search(spec, out / "tune" / STUDY_FILE, seed, key=checkpoint_key(spec, seed, fold, inputs))
    trials = Trials(spec, data, prior_model, device, seed, fold, inputs, out, scorer, samples, callbacks, progress,
                    search.n_trials, tune_workers(spec, threads, device))
    grid, best = _search(trials, search)
    train_seconds = time.perf_counter() - start + trials.restored[1]
    trained = Trained(best.spec, data.valid.dims, best.state, data.scaler, prior, record)
    bad = trained.non_finite() if math.isfinite(best.valid) else "validation score"
    if bad:
        raise InputError("--model", f"row {spec.row} fold {fold}: training ended with a {bad} that is not finite "
                                    "(NaN or infinite): it diverged; lower the learning rate")
    hparams = {**record, "seed": seed, "chosen": best.point,
               "valid_measure": settings.valid_measure, "valid": best.valid,
               "grid": [trial_summary(t) for t in grid], "search": search.summary(), "spec": best.spec.to_dict()}
    timings = {"train_seconds": train_seconds, "restored_epochs": trials.restored[0], "tune_points": len(grid),
               "tune_workers": trials.workers,
               "device": str(device), "commit": git_commit()}
    _save_job(out, search, trained, best.curve, hparams, timings)
    return hparams


@dataclass
class Trials:
    """The trials of one job: what they share (the row, its fold's data, the frozen prior, the device, where
    their checkpoints go), the trials trained in this sitting, and the epochs and seconds they restored
    from checkpoints of earlier sittings (``restored``)."""

    spec: ModelSpec
    data: FoldData
    prior_model: DiversityModel | None
    device: torch.device
    seed: int
    fold: int
    inputs: str
    out: Path
    scorer: RunScorer
    samples: Samples | None
    callbacks: Sequence[Callback]
    progress: bool | None
    n_trials: int
    workers: int
    tuned: dict[int, TunedPoint] = field(default_factory=dict)
    restored: list = field(default_factory=lambda: [0, 0.0])

    def validate(self, model: DiversityModel) -> float:
        """The row's validation measure of ``model`` on the validation queries."""
        settings = self.spec.train
        run = run_frame(self.data.valid, rank_bundle(model, self.data.valid, self.device, settings.rank_batch))
        return self.scorer.mean(run, settings.valid_measure)

    def tune(self, planned: Planned) -> tuple[TunedPoint, Outcome, int, float]:
        """A trial, trained (or only validated): its point, its outcome, the epochs and seconds it restored."""
        spec, data, seed, fold, device = self.spec, self.data, self.seed, self.fold, self.device
        i, point_spec = planned.number, spec.at(planned.point)
        torch.manual_seed(seed)
        model = build_model(point_spec, data.valid.dims, self.prior_model).to(device)
        if not (point_spec.objective and trainable(model)):
            valid = self.validate(model)
            tuned = TunedPoint(planned.point, point_spec, valid, 0, _cpu_state(model), curve_frame([]), number=i)
            return tuned, Outcome(valid, {}, info=tuned.info()), 0, 0.0
        objective = OBJECTIVES.get(point_spec.objective.name)(**point_spec.objective.args)
        objective.samples = self.samples
        pruning = Pruning(planned.earlier, spec.search, last=point_spec.train.epochs)
        trainer = Trainer(point_spec.train, point_spec.optim, device, seed, self.out / "tune" / f"point{i}.pt",
                          checkpoint_key(point_spec, seed, fold, self.inputs), self.callbacks, self.progress,
                          desc=f"{spec.row} fold{fold} trial {i + 1}/{self.n_trials}", monitors=[pruning])
        assert data.train is not None   # FoldData.make keeps it for a row with an objective
        try:
            fit = trainer.fit(model, objective, data.train, self.validate)
        except Pruned as stop:
            curve = curve_frame([{"epoch": e, "loss": math.nan, "valid": v, "seconds": math.nan}
                                 for e, v in sorted(pruning.values.items())])
            tuned = TunedPoint(planned.point, point_spec, max(pruning.values.values()),
                               max(pruning.values, key=pruning.values.__getitem__), {}, curve, number=i,
                               pruned_at=stop.epoch)
            info = {**tuned.info(), "pruned_at": stop.epoch}
            return tuned, Outcome(pruning.values[stop.epoch], pruning.values, stop.epoch, pruning.attrs, info), 0, 0.0
        tuned = TunedPoint(planned.point, point_spec, fit.valid, fit.epoch, _cpu_state(model), fit.curve, fit.diverged,
                           number=i)
        outcome = Outcome(fit.valid, pruning.values, 0, pruning.attrs, tuned.info())
        return tuned, outcome, fit.restored_epochs, fit.restored_seconds

    def run_batch(self, batch: list[Planned]) -> list[Outcome]:
        """One batch of the search, its trials side by side in ``workers`` processes (:func:`in_processes`)."""
        results = in_processes(lambda k: self.tune(batch[k]), len(batch), self.workers) \
            if self.workers > 1 and len(batch) > 1 else [self.tune(planned) for planned in batch]
        for point, _, epochs, seconds in results:
            self.tuned[point.number] = point
            self.restored[0] += epochs
            self.restored[1] += seconds
        return [outcome for _, outcome, _, _ in results]


def _search(trials: Trials, search: Search) -> tuple[list, TunedPoint]:
    """Run the search (its trials, of this sitting and earlier ones) and return them with the chosen trial's
    point, trained again from its checkpoint when an earlier sitting trained it."""
    spec, fold = trials.spec, trials.fold
    try:
        grid = search.run(trials.run_batch)
    except (Exception, SystemExit):     # bad input, or a user's component that raised or called sys.exit
        search.discard_if_new()
        raise
    chosen = search.best()
    if chosen is None:
        raise InputError("--model", f"row {spec.row} fold {fold}: every trial ended with a validation score that is "
                                    "not finite (NaN or infinite): it diverged; lower the learning rate")
    if chosen.number not in trials.tuned:          # trained in an earlier sitting: its weights are in its checkpoint
        point, _, _, _ = trials.tune(Planned(chosen.number, dict(chosen.params), search.earlier(chosen.number)))
        trials.tuned[chosen.number] = point
    return grid, trials.tuned[chosen.number]


def _save_job(out: Path, search: Search, trained: Trained, curve: pd.DataFrame, hparams: dict, timings: dict) -> None:
    """Write a finished job's :data:`OUTPUTS` and remove its checkpoints."""
    write_text(json.dumps(hparams, indent=2, default=jsonable) + "\n", out / "hparams.json")
    write_text(json.dumps(timings, indent=2) + "\n", out / "timings.json")
    write_parquet(curve, out / "curve.parquet")
    search.storage.remove_session()
    with atomic_path(out / STUDY_FILE) as tmp:
        shutil.copyfile(out / "tune" / STUDY_FILE, tmp)
    trained.save(out / MODEL_FILE)
    shutil.rmtree(out / "tune", ignore_errors=True)


def reuse_job(source: Path, record: dict, out: Path) -> dict | None:
    """Copy the job in ``source`` to ``out`` when it trained the model ``record`` names (the same row, fold,
    settings and seed, bundle and training data: :data:`~srdiv.train.records.IDENTITY`); None otherwise
    (nothing there, another model, or files srdiv did not write whole). Training is deterministic given
    those, so the copy is what training again would give, with the code that trained it (its
    ``timings.json`` names the commit, and ``reused_from`` the source). Returns the copied ``hparams.json``.
    """
    try:
        hparams, timings = read_record(source / "hparams.json"), read_record(source / "timings.json")
        if identity(hparams) != record:
            return None
        trained = Trained.load(source)
        for name in ("hparams.json", "curve.parquet", STUDY_FILE):
            verify(source / name, name, required=True)
    except (InputError, OSError):
        return None
    for name in ("hparams.json", "curve.parquet", STUDY_FILE):
        with atomic_path(out / name) as tmp:
            shutil.copyfile(source / name, tmp)
    write_text(json.dumps({**timings, "reused_from": str(source)}, indent=2) + "\n", out / "timings.json")
    trained.save(out / MODEL_FILE)
    shutil.rmtree(out / "tune", ignore_errors=True)      # an interrupted attempt's checkpoints
    print(f"{record['row']} fold {record['fold']}: the model of {source} (the same settings, seed and inputs), "
          "copied instead of trained again", file=sys.stderr, flush=True)
    return hparams


def _check_prior_record(prior: Trained | None, fold: int, bundle: str | None = None) -> None:
    """The prior was trained for this trial (and, given its fingerprint, on this bundle)."""
    if prior is None:
        return
    record = check_identity("--prior", prior.record)
    if record["fold"] != fold:
        raise InputError("--prior", f"the prior was trained for trial {record['fold']}, not {fold}: its "
                                    "training queries include this trial's test queries")
    if bundle is not None and record["bundle"] != bundle:
        raise InputError("--prior", f"the prior '{prior.spec.row}' was trained on another bundle")


def _prior_model(spec: ModelSpec, prior: Trained | None, scaler: FeatureScaler,
                 device: torch.device) -> DiversityModel | None:
    """The frozen prior model; it must have been trained on features standardised like ours."""
    if spec.prior is None or prior is None:
        return None  # build_model reports a missing prior
    theirs, ours = ((len(s.rel_mean), len(s.div_mean)) for s in (prior.scaler, scaler))
    if theirs != ours:
        raise InputError("--prior", f"prior '{prior.spec.row}' was trained on a bundle with {theirs[0]} relevance and "
                                    f"{theirs[1]} diversity features, this bundle has {ours[0]} and {ours[1]}")
    if prior.spec.row != spec.prior:
        raise InputError("--prior", f"model row {spec.row} wants prior '{spec.prior}', got a model of row "
                                    f"'{prior.spec.row}'")
    same = all(np.allclose(a, b) for a, b in zip(asdict(prior.scaler).values(), asdict(scaler).values()))
    if not same:
        raise InputError("--prior", f"prior '{spec.prior}' was trained with another feature scaler (fold or "
                                    "train_docs differ)")
    return prior.build(device)


def _cpu_state(model: DiversityModel) -> dict:
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}
