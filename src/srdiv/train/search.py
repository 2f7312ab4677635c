"""The hyper-parameter search of a train job: an Optuna study in the job's folder, in batches.

A row's space (:meth:`srdiv.experiment.ModelSpec.space`) is searched by

- a seeded TPE sampler, ``search.trials`` trials, for a row that trains (an objective) unless its
  space is lists only with no more points than that;
- Optuna's grid sampler, every point in file order, otherwise (the unsupervised rows' weights).

The row's own values of the tuned parameters (the paper's) are the first trial where they lie in the
space. Trials are asked ``search.batch`` at a time (a setting, not the number of processes), trained
one after the other or side by side, and told in trial-number order. A trial's pruner sees only the
trials of earlier batches (an in-memory copy of them, :class:`Pruning`), and each ask gets a sampler
seeded by the seed and the trial's number: the trials, their scores and the chosen one are the same
whatever the number of processes, and after an interruption (the study is an SQLite file,
``study.db``, readable by ``optuna.load_study``), a rerun reuses the finished trials and re-runs the
batch that was in flight. Pruning compares a trial's validation score per epoch (``median``: below
the median of earlier completed trials at that epoch; ``halving``: successive halving, rungs at
epochs 1, 3, 9, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import FrozenTrial, TrialState

from srdiv.experiment import Dimension, ModelSpec, SearchSettings

STUDY_FILE = "study.db"
"""The job's study, in ``<out>/``: ``optuna.load_study(study_name="search", storage="sqlite:///<out>/study.db")``.
While the job runs it lives in ``<out>/tune/`` (with the trials' checkpoints), keyed by the job's
settings and inputs: a rerun continues it, a rerun with other settings starts afresh."""
STUDY_NAME = "search"
PRUNERS = ("median", "halving")

optuna.logging.set_verbosity(optuna.logging.WARNING)


class Pruned(Exception):
    """Raised by :class:`Pruning` to stop a trial: its score at ``epoch`` is not promising."""

    def __init__(self, epoch: int):
        super().__init__(f"pruned at epoch {epoch}")
        self.epoch = epoch


def distribution(dim: Dimension):
    """The Optuna distribution of a range."""
    if dim.values:
        return CategoricalDistribution(list(dim.values))
    low, high = dim.bounds()
    if dim.integer:
        return IntDistribution(int(low), int(high), log=dim.log, step=int(dim.step or 1))
    return FloatDistribution(low, high, log=dim.log, step=dim.step)


def make_pruner(settings: SearchSettings) -> optuna.pruners.BasePruner:
    """``median``: Optuna's median rule over the completed trials (from ``startup`` of them on);
    ``halving``: successive halving, minimum resource one epoch, reduction factor 3."""
    if settings.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=settings.startup, n_warmup_steps=0)
    if settings.pruner == "halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    raise ValueError(f"search.pruner must be one of {', '.join(PRUNERS)}, got {settings.pruner!r}")


class Pruning:
    """A trial's pruning monitor (a :data:`srdiv.train.trainer.Callback`): reports each epoch's validation
    score to an in-memory study holding only ``earlier`` (the trials of earlier batches) and raises
    :class:`Pruned` when the pruner says so. ``values``: the scores it saw; ``attrs``: what the pruner
    recorded for the trial (successive halving's rungs), copied into the job's study. A trial is not
    pruned at its ``last`` epoch (nothing left to save: it completes)."""

    def __init__(self, earlier: list[FrozenTrial], settings: SearchSettings, last: int = 0):
        self.study = optuna.create_study(direction="maximize", pruner=make_pruner(settings),
                                         sampler=optuna.samplers.RandomSampler(seed=0))
        self.study.add_trials(earlier)
        self.trial = self.study.ask()
        self.values: dict[int, float] = {}
        self.last = last

    def __call__(self, epoch: int, record: dict) -> None:
        self.values[epoch] = float(record["valid"])
        self.trial.report(float(record["valid"]), epoch)
        if epoch != self.last and self.trial.should_prune():
            raise Pruned(epoch)

    @property
    def attrs(self) -> dict:
        return self.study.get_trials(deepcopy=False)[-1].system_attrs


@dataclass
class Planned:
    """A trial to run: its number, point ``{tune path: value}`` and the earlier batches' trials."""

    number: int
    point: dict
    earlier: list[FrozenTrial] = field(repr=False, default_factory=list)


@dataclass
class Outcome:
    """What running a trial gave: ``value`` (its best validation score; for a pruned trial its last),
    the per-epoch ``values`` the pruner saw, ``pruned_at`` (0: not pruned), the pruner's ``attrs``."""

    value: float
    values: dict[int, float]
    pruned_at: int = 0
    attrs: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    """Kept as the trial's user attributes (epochs, best epoch, best score: ``hparams.json``'s record)."""


class Search:
    """The study of one job (see the module docstring): ``plan()`` the next batch, ``record()`` it."""

    def __init__(self, spec: ModelSpec, path: str | Path, seed: int, key: str = ""):
        self.spec, self.seed, self.settings = spec, seed, spec.search
        self.space = spec.space()
        self.distributions = {path: distribution(dim) for path, dim in self.space.items()}
        trained = spec.objective is not None
        grid = spec.grid() if spec.exhaustive() else None
        self.exhaustive = grid is not None and (not trained or len(grid) <= self.settings.trials)
        paper = spec.paper_point()
        if self.exhaustive:
            assert grid is not None   # exhaustive: a lists-only space
            self.fixed = ([paper] if paper in grid else []) + [p for p in grid if p != paper]
            self.n_trials = len(grid)
        else:
            self.fixed = [paper] if paper else []
            self.n_trials = self.settings.trials if self.space else 1
        self.batch = self.settings.batch
        path = Path(path)
        self.path, self.created = path, not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.storage = optuna.storages.RDBStorage(f"sqlite:///{path.resolve()}")
        self.study = optuna.create_study(storage=self.storage, study_name=STUDY_NAME, direction="maximize",
                                         load_if_exists=True)
        if self.study.user_attrs.get("key", key) != key:      # another job's (other settings or inputs)
            self.storage.remove_session()
            path.unlink()
            self.storage = optuna.storages.RDBStorage(f"sqlite:///{path.resolve()}")
            self.study = optuna.create_study(storage=self.storage, study_name=STUDY_NAME, direction="maximize")
        self.study.set_user_attr("key", key)
        self.study_id = self.storage.get_study_id_from_name(STUDY_NAME)

    @property
    def sampler_name(self) -> str:
        return "grid" if self.exhaustive else "tpe"

    def _sampler(self, number: int) -> optuna.samplers.BaseSampler:
        """The sampler of trial ``number``, seeded by the seed and the number (the same on a rerun)."""
        seed = (self.seed * 100_003 + number) % 2**32
        if self.exhaustive:
            return optuna.samplers.GridSampler({p: list(d.values) for p, d in self.space.items()}, seed=seed)
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=self.settings.startup)

    def trials(self) -> list[FrozenTrial]:
        return self.study.get_trials(deepcopy=False)

    def plan(self) -> list[Planned]:
        """The next batch (its trials asked, or those an interrupted sitting left running); empty when
        every trial is finished."""
        trials = self.trials()
        unfinished = [t.number for t in trials if not t.state.is_finished()]
        start = (unfinished[0] // self.batch) * self.batch if unfinished else len(trials)
        if start >= self.n_trials:
            return []
        end = min(start + self.batch, self.n_trials)
        while len(self.trials()) < end:
            number = len(self.trials())
            if not any(t.state == TrialState.WAITING for t in self.trials()) and number < len(self.fixed):
                self.study.enqueue_trial(self.fixed[number])
            study = optuna.load_study(study_name=STUDY_NAME, storage=self.storage, sampler=self._sampler(number))
            study.ask(self.distributions)
        earlier = [t for t in self.trials() if t.number < start and t.state.is_finished()]
        return [Planned(t.number, dict(t.params), earlier) for t in self.trials()
                if start <= t.number < end and not t.state.is_finished()]

    def record(self, number: int, outcome: Outcome) -> None:
        """Tell trial ``number`` its epochs' scores, the pruner's records, and its end."""
        trial_id = self.storage.get_trial_id_from_study_id_trial_number(self.study_id, number)
        for epoch, value in sorted(outcome.values.items()):
            self.storage.set_trial_intermediate_value(trial_id, epoch, value)
        for key, value in outcome.attrs.items():
            self.storage.set_trial_system_attr(trial_id, key, value)
        for key, value in outcome.info.items():
            self.storage.set_trial_user_attr(trial_id, key, value)
        if outcome.pruned_at:
            self.study.tell(number, state=TrialState.PRUNED)
        elif math.isfinite(outcome.value):
            self.study.tell(number, outcome.value)
        else:                       # diverged before its first validation: a failed trial
            self.study.tell(number, state=TrialState.FAIL)

    def run(self, run_batch: Callable[[list[Planned]], list[Outcome]]) -> list[FrozenTrial]:
        """Every batch run (``run_batch``: the planned trials' outcomes in their order) and recorded;
        returns the finished trials in number order."""
        while batch := self.plan():
            for planned, outcome in zip(batch, run_batch(batch)):
                self.record(planned.number, outcome)
        return self.trials()

    def discard_if_new(self) -> None:
        """Remove the study when this sitting created it and no trial finished (bad input found by the
        first trial leaves nothing behind), with its folder if that is then empty."""
        if self.created and not any(t.state.is_finished() for t in self.trials()):
            self.storage.remove_session()
            self.path.unlink(missing_ok=True)
            if not any(self.path.parent.iterdir()):
                self.path.parent.rmdir()

    def earlier(self, number: int) -> list[FrozenTrial]:
        """The trials the batch of trial ``number`` saw (to rerun it as it ran: its model's weights)."""
        start = (number // self.batch) * self.batch
        return [t for t in self.trials() if t.number < start and t.state.is_finished()]

    def best(self) -> FrozenTrial | None:
        """The completed trial of the highest score, the first of equals (None: none completed)."""
        done = [t for t in self.trials() if t.state == TrialState.COMPLETE]
        return max(done, key=lambda t: cast(float, t.value)) if done else None   # a completed trial has a value

    def summary(self) -> dict[str, Any]:
        """The search as ``hparams.json`` records it."""
        trials = self.trials()
        return {"sampler": self.sampler_name, "trials": len(trials),
                "pruned": sum(t.state == TrialState.PRUNED for t in trials), "pruner": self.settings.pruner,
                "batch": self.batch, "epochs": self.spec.train.epochs, "seed": self.seed,
                "space": {path: dim.describe() for path, dim in self.space.items()}}
