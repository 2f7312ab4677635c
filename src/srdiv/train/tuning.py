"""One (model, fold) trial: tune on the validation fold and train (``run_job``), then rank the test fold (``rank_job``).

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
3. :func:`rank_job` ranks the test queries with the chosen model; ``srdiv
   evaluate --fold`` scores them.

A row with ``model: {args: {prior: <Row>}}`` gets that row's trained model of the
same fold (``<prior_dir>/model.pt``, frozen) as its ``prior`` constructor
argument. Outputs in ``<out>/`` (see :func:`run_job`).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import multiprocessing
import pickle
import shutil
import signal
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from multiprocessing.connection import wait
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

from srdiv.collection.schema import Collection
from srdiv.features.bundle import Bundle, BundleDims, FeatureScaler
from srdiv.features.folds import FoldSplit, fold_queries, fold_split, query_rows
from srdiv.io import (InputError, atomic_path, claim, digest, existing_file, load_torch, read_json, save_torch, verify,
                      write_parquet, write_text)
from srdiv.metrics.runs import RUN_FILE, write_trec_run
from srdiv.models.base import DiversityModel
from srdiv.provenance import git_commit
import srdiv.models  # noqa: F401  (registers every model)
import srdiv.objectives  # noqa: F401  (registers every objective)
from srdiv.experiment import ModelSpec, TrainSettings, model_spec
from srdiv.models.ranking import RunScorer, rank_bundle, resolve_device, run_frame
from srdiv.registry import MODELS, OBJECTIVES, culprit
from srdiv.sampling.samples import Samples
from srdiv.train.records import check_identity, fingerprint, identity, read_record
from srdiv.train.search import STUDY_FILE, Outcome, Planned, Pruned, Pruning, Search
from srdiv.train.trainer import Callback, Trainer, curve_frame, trainable

MODEL_FILE = "model.pt"
OUTPUTS = ("hparams.json", "timings.json", MODEL_FILE, "curve.parquet", STUDY_FILE)
"""Files of a finished training job, in ``<out>/`` (``rank_job`` adds ``run.txt`` and ``rank.json``)."""


def keywords(cls: type) -> set[str] | None:
    """The keyword arguments ``cls(...)`` accepts, following ``**params`` up the class chain.

    None when a ``**params`` reaches a constructor that takes anything (nothing to check).
    """
    names: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass in (object, torch.nn.Module):
            continue
        params = list(inspect.signature(klass.__init__).parameters.values())[1:]
        names |= {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"dims"}
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return None


def row_device(spec: ModelSpec) -> str:
    """The ``train.device`` a row's jobs run on: the row's own setting, except that ``auto`` (CUDA when
    present) stays ``auto`` only for a model whose training gains on a GPU (``gpu_gain``) and is ``cpu``
    for every other one. ``uses_gpu`` says whether the jobs take the pipeline's ``gpu`` resource."""
    if spec.train.device == "auto" and not MODELS.get(spec.model.name).gpu_gain:
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
    (:mod:`srdiv.train.search`, tests/test_search.py)."""
    if spec.objective is None or torch.device(device).type != "cpu":
        return 1
    return max(1, min(threads, spec.search.batch))


def check_rows(params: dict, rows: Sequence[str], where: str | Sequence[str | Path] = "params.yaml") -> None:
    """Every row's model and objective are registered, take the keywords the row gives them, and
    every value they get at every tuning point fits (:func:`srdiv.registry.check_args`, then the
    objective built with it). What a model's constructor checks against the data's sizes,
    :func:`run_job` checks before the first point trains.

    Run before any work starts (the Snakefile and ``srdiv train``): a mistake is one
    :class:`InputError` naming the row, the key and the last params file that sets the row or a row it
    extends (``where``: the params files in merge order, or one name for them all).
    """
    from srdiv.params import lineage
    from srdiv.registry import check_args

    sources = [] if isinstance(where, (str, Path)) else _row_sources(where)
    for row in rows:
        try:
            chain = set(lineage(params, row))
        except ValueError:          # a circular 'extends', reported below
            chain = {row}
        source = next((path for path, rows_set in sources if rows_set & chain),
                      sources[0][0] if sources else str(where))

        def fail(key: str, err: Exception) -> InputError:
            return InputError(source, f"models.{row}.{key}: {err.args[0] if err.args else err}")
        try:
            spec = model_spec(params, row)
            corners = spec.corners()        # the space parses (a bad range names its key)
            model = MODELS.get(spec.model.name)
            objective = OBJECTIVES.get(spec.objective.name) if spec.objective else None
        except (KeyError, ValueError) as err:
            raise InputError(source, f"models.{row}: {err.args[0]}") from None
        for section, cls in (("model", model), ("objective", objective)):
            component = getattr(spec, section)
            given = set(component.args if component else ()) | {
                path.rpartition(".")[2] for path in spec.tune if path.startswith(f"{section}.args.")}
            known = keywords(cls) if cls is not None else set()
            unknown = sorted(given - known) if known is not None else []
            if unknown:
                raise InputError(source, f"models.{row}.{section}.args: {cls.__name__ if cls else 'no objective'} "
                                         f"takes no {', '.join(unknown)} (it takes {', '.join(sorted(known)) or 'none'})")
        for point in corners:
            at = spec.at(point)
            try:
                check_args(model, {k: v for k, v in at.model.args.items() if k != "prior"})
            except ValueError as err:
                raise fail("model.args", err) from None
            if objective is not None:       # objectives are cheap to build: their values are checked here too
                try:
                    objective(**at.objective.args)
                except (TypeError, ValueError) as err:
                    raise fail("objective.args", err) from None


def _row_sources(paths: Sequence[str | Path]) -> list[tuple[str, set]]:
    """Each params file with the rows it sets, last file first."""
    from srdiv.params import read_yaml

    found = []
    for path in reversed(list(paths)):
        models = (read_yaml(path) or {}).get("models") or {}
        found.append((str(path), set(models) if isinstance(models, dict) else set()))
    return found


def build_model(spec: ModelSpec, dims: BundleDims, prior: DiversityModel | None = None) -> DiversityModel:
    """``Cls(dims, **args)`` of the spec's model, with ``args['prior']`` replaced by the ``prior`` model."""
    args = dict(spec.model.args)
    if "prior" in args:
        if prior is None:
            raise InputError("--prior", f"model row {spec.row} needs its prior '{args['prior']}' "
                                        "(srdiv train --prior DIR)")
        args["prior"] = prior
    return MODELS.get(spec.model.name)(dims, **args)


@dataclass
class Trained:
    """A trained model as saved in ``model.pt``: spec (at the chosen point), sizes, weights, scaler."""

    spec: ModelSpec
    dims: BundleDims
    state: dict
    scaler: FeatureScaler
    prior: "Trained | None" = None
    record: dict | None = None
    """What the model is (:data:`srdiv.train.records.IDENTITY`: row, fold, fingerprints of its settings,
    bundle and training data); None only for a model not trained by :func:`run_job`."""

    def to_dict(self) -> dict:
        return {"spec": json.dumps(self.spec.to_dict()), "dims": asdict(self.dims), "state": self.state,
                "scaler": {k: torch.as_tensor(v) for k, v in asdict(self.scaler).items()},
                "prior": self.prior.to_dict() if self.prior else None, "record": json.dumps(self.record)}

    @classmethod
    def from_dict(cls, saved: dict) -> "Trained":
        spec = ModelSpec.from_dict(json.loads(saved["spec"]))
        scaler = FeatureScaler(**{k: v.numpy() for k, v in saved["scaler"].items()})
        prior = cls.from_dict(saved["prior"]) if saved["prior"] else None
        record = json.loads(saved["record"]) if "record" in saved else None
        return cls(spec, BundleDims(**saved["dims"]), saved["state"], scaler, prior, record)

    def build(self, device: torch.device | str = "cpu") -> DiversityModel:
        """The model with its weights, frozen, in eval mode, on ``device``."""
        prior = self.prior.build(device) if self.prior else None
        model = build_model(self.spec, self.dims, prior)
        model.load_state_dict(self.state)
        return model.requires_grad_(False).eval().to(device)

    def save(self, path: str | Path) -> None:
        save_torch(self.to_dict(), path)

    def check_registered(self, where: str | Path) -> None:
        """The model of this row (and of its prior) is registered in this process; else one :class:`InputError`
        naming the model, its row and how to register it (a user's model trained with an ``import:`` list)."""
        trained = self
        while trained is not None:
            name = trained.spec.model.name
            if name not in MODELS.names():
                raise InputError(where, f"row {trained.spec.row}'s model '{name}' is not registered in this process: "
                                        "import the module that registers it first, as srdiv's commands do for an "
                                        "overlay's import: list (srdiv.registry.import_components(['my_model.py'], "
                                        "'my script'), or `import my_package.my_model`)")
            trained = trained.prior

    @classmethod
    def load(cls, path: str | Path) -> "Trained":
        """Read ``path`` (``model.pt``, or a job directory holding one)."""
        path = existing_file(path, MODEL_FILE, "trained model")
        saved = load_torch(path, "trained model (model.pt of srdiv train)")
        try:
            trained = cls.from_dict(saved)
            trained.check_registered(path)
            trained.build()      # a model or argument unknown, weights missing or of other shapes (made by hand)
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as err:
            reason = " ".join(str(err.args[0] if isinstance(err, KeyError) and err.args else err).split())
            raise InputError(path, f"not a model.pt of srdiv train ({type(err).__name__}: {reason[:300]})") from None
        bad = trained.non_finite()
        if bad:
            raise InputError(path, f"the model's {bad} holds values that are not finite (NaN or infinite)")
        verify(path, "trained model")
        check_identity(path, trained.record)
        if (path.parent / "hparams.json").is_file() and \
                identity(read_record(path.parent / "hparams.json")) != identity(trained.record):
            raise InputError(path, f"a model of row {trained.record['row']} fold {trained.record['fold']} other than "
                                   "the one its directory's hparams.json records (copied from another job?)")
        return trained

    def non_finite(self) -> str | None:
        """The name of the first weight (or scaler array) of this model or its prior that is not all finite."""
        arrays = {**{f"weight '{k}'": v for k, v in self.state.items() if torch.is_tensor(v) and v.is_floating_point()},
                  **{f"feature scaler '{k}'": torch.as_tensor(v) for k, v in asdict(self.scaler).items()}}
        bad = next((name for name, v in arrays.items() if not torch.isfinite(v).all()), None)
        return bad or (f"prior's {self.prior.non_finite()}" if self.prior and self.prior.non_finite() else None)


@dataclass
class FoldData:
    """The training and validation bundles of one trial, standardised by a scaler fitted on the training
    queries (the test queries are read only by :func:`rank_job`)."""

    train: Bundle | None
    valid: Bundle
    scaler: FeatureScaler

    @classmethod
    def make(cls, bundle: Bundle, split: FoldSplit, settings: TrainSettings, train: bool = True) -> "FoldData":
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
    the ``hparams.json`` content. :func:`rank_job` then ranks the test fold.
    """
    out = Path(out)
    check_job_dir(out, spec.row, fold, OUTPUTS)
    settings = spec.train
    split = fold_split(collection.folds, fold, _folds_file(collection))
    device = resolve_device(row_device(spec))
    for name, qids in (("training", split.train), ("validation", split.valid)):
        if not collection.qrels["qid"].isin(set(qids)).any():
            raise InputError(_folds_file(collection), f"trial {fold} has no judged topic among its {name} queries: "
                                                      "nothing to learn or measure")
    _check_prior_record(prior, fold)
    data = FoldData.make(bundle, split, settings, train=spec.objective is not None)
    prior_model = _prior_model(spec, prior, data.scaler, device)
    bundle_fp = bundle_digest(bundle)
    _check_prior_record(prior, fold, bundle_fp)
    valid_scorer = RunScorer(collection.qrels, split.valid, [settings.valid_measure])

    def validate(model: DiversityModel) -> float:
        run = run_frame(data.valid, rank_bundle(model, data.valid, device, settings.rank_batch))
        return valid_scorer.mean(run, settings.valid_measure)

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
    search = Search(spec, out / "tune" / STUDY_FILE, seed, key=_fingerprint(spec, seed, fold, inputs))

    def tune(planned: Planned) -> tuple[TunedPoint, Outcome, int, float]:
        """A trial, trained (or only validated): its point, its outcome, the epochs and seconds it restored."""
        i, point_spec = planned.number, spec.at(planned.point)
        torch.manual_seed(seed)
        model = build_model(point_spec, data.valid.dims, prior_model).to(device)
        if not (point_spec.objective and trainable(model)):
            valid = validate(model)
            tuned = TunedPoint(planned.point, point_spec, valid, 0, _cpu_state(model), curve_frame([]), number=i)
            return tuned, Outcome(valid, {}, info=tuned.info()), 0, 0.0
        objective = OBJECTIVES.get(point_spec.objective.name)(**point_spec.objective.args)
        objective.samples = samples
        pruning = Pruning(planned.earlier, spec.search, last=point_spec.train.epochs)
        trainer = Trainer(point_spec.train, point_spec.optim, device, seed, out / "tune" / f"point{i}.pt",
                          _fingerprint(point_spec, seed, fold, inputs), callbacks, progress,
                          desc=f"{spec.row} fold{fold} trial {i + 1}/{search.n_trials}", monitors=[pruning])
        try:
            fit = trainer.fit(model, objective, data.train, validate)
        except Pruned as stop:
            curve = curve_frame([{"epoch": e, "loss": math.nan, "valid": v, "seconds": math.nan}
                                 for e, v in sorted(pruning.values.items())])
            tuned = TunedPoint(planned.point, point_spec, max(pruning.values.values()),
                               max(pruning.values, key=pruning.values.get), {}, curve, number=i, pruned_at=stop.epoch)
            info = {**tuned.info(), "pruned_at": stop.epoch}
            return tuned, Outcome(pruning.values[stop.epoch], pruning.values, stop.epoch, pruning.attrs, info), 0, 0.0
        tuned = TunedPoint(planned.point, point_spec, fit.valid, fit.epoch, _cpu_state(model), fit.curve, fit.diverged,
                           number=i)
        outcome = Outcome(fit.valid, pruning.values, 0, pruning.attrs, tuned.info())
        return tuned, outcome, fit.restored_epochs, fit.restored_seconds

    workers = tune_workers(spec, threads, device)
    tuned: dict[int, TunedPoint] = {}
    restored = [0, 0.0]

    def run_batch(batch: list[Planned]) -> list[Outcome]:
        results = in_processes(lambda k: tune(batch[k]), len(batch), workers) if workers > 1 and len(batch) > 1 \
            else [tune(planned) for planned in batch]
        for point, _, epochs, seconds in results:
            tuned[point.number] = point
            restored[0] += epochs
            restored[1] += seconds
        return [outcome for _, outcome, _, _ in results]

    try:
        trials = search.run(run_batch)
    except (Exception, SystemExit):     # bad input, or a user's component that raised or called sys.exit
        search.discard_if_new()
        raise
    chosen = search.best()
    if chosen is None:
        raise InputError("--model", f"row {spec.row} fold {fold}: every trial ended with a validation score that is "
                                    "not finite (NaN or infinite): it diverged; lower the learning rate")
    if chosen.number not in tuned:          # trained in an earlier sitting: its weights are in its checkpoint
        point, _, _, _ = tune(Planned(chosen.number, dict(chosen.params), search.earlier(chosen.number)))
        tuned[chosen.number] = point
    restored_epochs, restored_seconds = restored
    train_seconds = time.perf_counter() - start + restored_seconds
    best = tuned[chosen.number]
    trained = Trained(best.spec, data.valid.dims, best.state, data.scaler, prior, record)
    bad = trained.non_finite() if math.isfinite(best.valid) else "validation score"
    if bad:
        raise InputError("--model", f"row {spec.row} fold {fold}: training ended with a {bad} that is not finite "
                                    "(NaN or infinite): it diverged; lower the learning rate")

    hparams = {**record, "seed": seed, "chosen": best.point,
               "valid_measure": settings.valid_measure, "valid": best.valid,
               "grid": [trial_summary(t) for t in trials], "search": search.summary(), "spec": best.spec.to_dict()}
    timings = {"train_seconds": train_seconds, "restored_epochs": restored_epochs, "tune_points": len(trials),
               "tune_workers": workers,
               "device": str(device), "commit": git_commit()}
    write_text(json.dumps(hparams, indent=2, default=_jsonable) + "\n", out / "hparams.json")
    write_text(json.dumps(timings, indent=2) + "\n", out / "timings.json")
    write_parquet(best.curve, out / "curve.parquet")
    search.storage.remove_session()
    with atomic_path(out / STUDY_FILE) as tmp:
        shutil.copyfile(out / "tune" / STUDY_FILE, tmp)
    trained.save(out / MODEL_FILE)
    shutil.rmtree(out / "tune", ignore_errors=True)
    return hparams


def in_processes(task: Callable[[int], Any], n: int, workers: int) -> list:
    """``[task(0), ..., task(n - 1)]``, each in a forked process (which reads the parent's data without a
    copy), at most ``workers`` at once, one torch thread each. A task's exception is raised here; a process
    that ends without an answer (killed: out of memory?) is an error naming its task; when this raises
    or is interrupted, the processes still running are stopped."""
    context = multiprocessing.get_context("fork")
    results: list = [None] * n
    todo, running = list(range(n)), {}
    try:
        while todo or running:
            while todo and len(running) < workers:
                i = todo.pop(0)
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_answer, args=(task, i, send), daemon=True)
                process.start()
                send.close()
                running[receive] = (i, process)
            for receive in wait(list(running)):
                i, process = running.pop(receive)
                try:
                    ok, value = pickle.loads(receive.recv_bytes())
                except EOFError:
                    process.join()
                    raise RuntimeError(f"the process of task {i + 1} of {n} ended (exit code {process.exitcode}) "
                                       "without an answer: killed, out of memory?") from None
                process.join()
                if not ok:
                    raise value
                results[i] = value
    finally:
        for _, process in running.values():
            process.terminate()
            process.join()
    return results


def _answer(task: Callable[[int], Any], i: int, send) -> None:
    """The forked process of :func:`in_processes`: ``task(i)`` on one thread, sent back with whether it
    succeeded (an error of a user's module names it: :func:`srdiv.registry.culprit`). Ctrl-C is the parent's to answer; SIGTERM (from the parent stopping it) ends it quietly."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    torch.set_num_threads(1)
    try:
        answer = (True, task(i))
    except (Exception, SystemExit) as err:   # a user's component that calls sys.exit is an error, not an answer
        err.culprit = culprit(err)           # which user's module raised it (its traceback is not sent back)
        answer = (False, err)
    try:                # plain pickle: the tensors' bytes, not torch's shared-memory handles to this process
        message = pickle.dumps(answer)
    except Exception as err:      # an answer that cannot be pickled: say what it was
        message = pickle.dumps((False, RuntimeError(f"task {i + 1}: {answer[1]!r} (not sent back: {err})")))
    send.send_bytes(message)
    send.close()


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


def rank_job(trained: Trained, bundle: Bundle, collection: Collection, fold: int, out: str | Path) -> dict[str, Any]:
    """Rank the test queries of trial ``fold`` with a trained model; write ``run.txt`` and ``rank.json``.

    The test candidates are standardised with the model's own (training-fold)
    scaler. ``rank.json`` holds ``rank_ms_per_query``, ``test_queries``,
    ``device``, the model's record and the run's SHA-256 (``run``). Evaluation is a separate step (``srdiv evaluate --fold``).
    """
    out = Path(out)
    check_identity("--model-dir", trained.record)
    if trained.record["fold"] != fold:
        raise InputError("--model-dir", f"the model was trained for trial {trained.record['fold']}, whose training "
                                        f"queries include the test queries of trial {fold}: rank it on its own fold")
    _check_dims(trained, bundle.dims, "--bundle")
    if bundle_digest(bundle) != trained.record["bundle"]:
        raise InputError("--bundle", f"the model of row {trained.spec.row} was trained on another bundle")
    check_job_dir(out, trained.spec.row, fold, (RUN_FILE, "rank.json"))
    settings = trained.spec.train
    device = resolve_device(row_device(trained.spec), f"--model-dir (row {trained.spec.row}'s recorded settings)")
    split = fold_split(collection.folds, fold, _folds_file(collection))
    test = trained.scaler.transform(fold_queries(bundle, split.test, settings.rank_docs), inplace=True)
    model = trained.build(device)
    start = time.perf_counter()
    orders = rank_bundle(model, test, device, settings.rank_batch)
    rank_ms = 1000 * (time.perf_counter() - start) / max(len(test), 1)
    timings = {"rank_ms_per_query": rank_ms, "test_queries": len(test), "device": str(device),
               "model": trained.record}
    write_trec_run(run_frame(test, orders), out / RUN_FILE, tag=trained.spec.row)
    timings["run"] = digest(out / RUN_FILE)       # what gather and report check the run against
    write_text(json.dumps(timings, indent=2) + "\n", out / "rank.json")
    return timings


def check_job_dir(out: Path, row: str, fold: int, names: Sequence[str]) -> None:
    """Before any work: ``out`` is no other job's directory (its ``hparams.json`` names another row or
    fold), and none of the files ``names`` there is one srdiv did not write (:func:`srdiv.io.claim`)."""
    if (out / "hparams.json").is_file():
        theirs = read_json(out / "hparams.json", "hparams.json")
        if (theirs.get("row"), theirs.get("fold")) != (row, fold):
            raise InputError(out, f"holds the model of row {theirs.get('row')} fold {theirs.get('fold')}, not of "
                                  f"row {row} fold {fold}; give this job its own directory")
    for name in names:
        claim(out / name)


def _check_prior_record(prior: Trained | None, fold: int, bundle: str | None = None) -> None:
    """The prior was trained for this trial (and, given its fingerprint, on this bundle)."""
    if prior is None:
        return
    check_identity("--prior", prior.record)
    if prior.record["fold"] != fold:
        raise InputError("--prior", f"the prior was trained for trial {prior.record['fold']}, not {fold}: its "
                                    "training queries include this trial's test queries")
    if bundle is not None and prior.record["bundle"] != bundle:
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


def _check_dims(trained: Trained, dims: BundleDims, where: str) -> None:
    """The model was trained on a bundle with the vector and feature sizes of this one."""
    for name in ("emb", "feats", "div_feats"):
        if getattr(trained.dims, name) != getattr(dims, name):
            raise InputError(where, f"the model of row {trained.spec.row} was trained on a bundle with {name} = "
                                    f"{getattr(trained.dims, name)}, this bundle has {getattr(dims, name)}")


def _folds_file(collection: Collection) -> str:
    return str(collection.path / "folds.parquet") if collection.path else "folds table"


def _fingerprint(spec: ModelSpec, seed: int, fold: int, inputs: str) -> str:
    """Identifies what a checkpoint was trained for (settings and the content digest of its inputs),
    so a changed config or changed data never resumes a stale one."""
    text = json.dumps({"spec": spec.to_dict(), "seed": seed, "fold": fold, "inputs": inputs}, sort_keys=True,
                      default=_jsonable)
    return hashlib.sha256(text.encode()).hexdigest()


def bundle_digest(bundle: Bundle) -> str:
    """SHA-256 of a bundle's arrays (what a model was trained on and is ranked with)."""
    return _content_digest([(f"bundle.{f.name}", getattr(bundle, f.name)) for f in fields(bundle)])


def inputs_digest(bundle: Bundle, collection: Collection, samples: Samples | None, prior: Trained | None) -> str:
    """SHA-256 of the content a training reads: the bundle's arrays, the collection's qrels and folds,
    the samples' arrays and the prior's weights (not file names or times)."""
    parts = [(f"bundle.{f.name}", getattr(bundle, f.name)) for f in fields(bundle)]
    parts += [("qrels", collection.qrels), ("folds", collection.folds)]
    if samples is not None:
        parts += [(f"samples.{f.name}", getattr(samples.list_pairwise, f.name)) for f in fields(samples.list_pairwise)]
        parts += [(f"samples.{key}", value) for key, value in sorted(samples.pamm.items())]
    while prior is not None:
        parts += [(f"prior.{key}", value) for key, value in sorted(prior.state.items())]
        prior = prior.prior
    return _content_digest(parts)


def _content_digest(parts: list[tuple[str, Any]]) -> str:
    """SHA-256 of named arrays, frames, tensors and plain values, in order."""
    digest = hashlib.sha256()

    def add(name: str, value: Any) -> None:
        digest.update(name.encode())
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
        if isinstance(value, pd.DataFrame):
            digest.update(pd.util.hash_pandas_object(value, index=False).to_numpy().tobytes())
        elif isinstance(value, np.ndarray):
            digest.update(str((value.dtype, value.shape)).encode())
            # the array's own bytes, viewed, not copied (the same bytes as .tobytes())
            digest.update(np.ascontiguousarray(value).reshape(-1).view(np.uint8) if value.dtype != object
                          else str(list(value)).encode())
        else:
            digest.update(json.dumps(value, sort_keys=True, default=_jsonable).encode())

    for name, value in parts:
        add(name, value)
    return digest.hexdigest()


def _cpu_state(model: DiversityModel) -> dict:
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def _jsonable(value: Any) -> Any:
    """numpy scalars in tuning grids -> Python numbers."""
    return value.item() if isinstance(value, np.generic) else str(value)
