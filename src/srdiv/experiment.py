"""The experiment: the ``train`` section, the ``models.<Row>`` entries of ``params.yaml``, the folds a run uses.

The bottom layer every later stage reads (sampling, training, gathering, the report).

A model row::

    DSSA:
      model: {name: dssa, args: {hidden: 50}}       # MODELS registry name and constructor keywords; ``args:
                                   # {prior: <Row>}`` is replaced by that row's trained model of the same fold
      objective: {name: list_pairwise, args: {}}    # OBJECTIVES registry name; absent: nothing to train
      optim: {name: adam, args: {lr: 0.001, weight_decay: 0.0}}   # adam | sgd | adagrad (lr 1e-3 by default)
      group: explicit              # initial | reference | unsupervised | implicit | explicit (tables): a
                                   # supervised model is explicit when it reads the query's subtopics
                                   # (suggestions), implicit when it relates documents without them
      train: {epochs: 30}          # per-row overrides of the ``train`` section
      tune: {model.args.lam: [0.1, 0.5], optim.args.lr: [0.001, 0.01]}
      variant_of: DSSA             # for ablation rows (tables), with ``variant: <label>``
      representation: lda          # which bundle the pipeline gives this row (not read here)

A ``tune`` key is the path in the row of the value it sets: ``model.args.<arg>``,
``objective.args.<arg>``, ``optim.args.<arg>``, ``train.<key>``; every point of
their Cartesian product (keys in file order) is trained and scored on the
validation fold.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Sequence

import pandas as pd

from srdiv.params import model_rows
from srdiv.registry import MODELS, OBJECTIVES, source_of


@dataclass(frozen=True)
class TrainSettings:
    """The ``train`` section: candidate depths, epochs, early stopping, batches, device.

    Defaults equal ``params.yaml``'s where it sets a key (``tests/test_defaults.py``)."""

    train_docs: int = 20
    rank_docs: int = 50
    epochs: int = 30
    patience: int = 5
    batch_size: int = 16
    rank_batch: int = 64
    device: str = "auto"
    valid_measure: str = "alpha_nDCG@20"

    @classmethod
    def from_params(cls, params: dict, overrides: dict | None = None) -> "TrainSettings":
        return cls(**{**(params.get("train") or {}), **(overrides or {})})


@dataclass(frozen=True)
class Component:
    """A row's ``model``, ``objective`` or ``optim``: a registry (or optimiser) name and its keywords."""

    name: str
    args: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, entry: Any, where: str) -> "Component":
        """``{name, args}`` of a resolved row (``where``: its dotted key, for the error)."""
        if not isinstance(entry, dict) or not entry.get("name"):
            raise ValueError(f"{where} must be {{name: ..., args: {{...}}}}, got {entry!r}")
        return cls(entry["name"], dict(entry.get("args") or {}))


_TUNED = {"model.args": "model", "objective.args": "objective", "optim.args": "optim", "train": "train"}
"""Where a ``tune`` path (``model.args.lam``) leads: the part of the spec its last name is set in."""


@dataclass(frozen=True)
class ModelSpec:
    """One ``models.<Row>`` entry, with the ``train`` section merged in."""

    row: str
    model: Component
    objective: Component | None = None
    group: str = ""
    optim: Component = field(default_factory=lambda: Component("adam"))
    train: TrainSettings = field(default_factory=TrainSettings)
    tune: dict = field(default_factory=dict)
    variant_of: str | None = None
    variant: str = ""
    representation: str | None = None

    @property
    def prior(self) -> str | None:
        """The row whose trained model this one takes as ``prior``."""
        return self.model.args.get("prior")

    def grid(self) -> list[dict[str, Any]]:
        """Every tuning point as ``{tune path: value}`` (one empty point without ``tune``)."""
        keys = list(self.tune)
        return [dict(zip(keys, values)) for values in itertools.product(*(self.tune[k] for k in keys))]

    def at(self, point: dict[str, Any]) -> "ModelSpec":
        """This spec with a tuning point applied."""
        args = {"model": dict(self.model.args), "objective": dict(self.objective.args) if self.objective else {},
                "optim": dict(self.optim.args), "train": {}}
        for path, value in point.items():
            head, _, name = path.rpartition(".")
            if head not in _TUNED:
                raise ValueError(f"models.{self.row}.tune: '{path}' is not a value the row can tune")
            args[_TUNED[head]][name] = value
        return replace(self, model=replace(self.model, args=args["model"]),
                       objective=self.objective and replace(self.objective, args=args["objective"]),
                       optim=replace(self.optim, args=args["optim"]), train=replace(self.train, **args["train"]))

    def imported_from(self) -> list[str]:
        """The ``import:`` entries (files or module names, as written) whose import registered this row's model
        or objective; none for srdiv's own components (:func:`srdiv.registry.source_of`)."""
        found = [source_of(MODELS, self.model.name), self.objective and source_of(OBJECTIVES, self.objective.name)]
        return list(dict.fromkeys(entry for entry in found if entry))

    def to_dict(self) -> dict:
        """JSON-ready form (written next to the model)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, saved: dict) -> "ModelSpec":
        """The inverse of :meth:`to_dict`."""
        parts = {key: Component(**saved[key]) if saved[key] else None for key in ("model", "objective", "optim")}
        return cls(**{**saved, **parts, "train": TrainSettings(**saved["train"])})


def run_rows(params: dict) -> list[str]:
    """The rows a run trains and reports: ``run_models`` (a list of rows, or ``all``)."""
    chosen = params.get("run_models", "all")
    rows = model_rows(params)
    if chosen == "all":
        return list(rows)
    unknown = [row for row in chosen if row not in rows]
    if unknown:
        raise KeyError(f"run_models names rows no params file gives: {', '.join(unknown)}")
    return list(chosen)


def model_spec(params: dict, row: str) -> ModelSpec:
    """The spec of ``models.<row>`` from the loaded ``params.yaml``."""
    models = model_rows(params)
    if row not in models:
        raise KeyError(f"no params file gives the row models.{row} (rows: {', '.join(models) or 'none'})")
    return _spec(params, row, models[row])


def model_specs(params: dict) -> dict[str, ModelSpec]:
    """The spec of every ``models`` row, in file order."""
    return {row: _spec(params, row, entry) for row, entry in model_rows(params).items()}


def _spec(params: dict, row: str, entry: dict) -> ModelSpec:
    """A resolved row (:func:`~srdiv.params.model_rows`) as a :class:`ModelSpec`."""
    known = {f.name for f in fields(ModelSpec)} - {"row"} | {"samples"}     # samples: read by srdiv samples
    unknown = set(entry) - known
    if unknown or "model" not in entry:
        raise ValueError(f"models.{row}: needs 'model'; unknown keys {sorted(unknown)}")
    values = {key: Component.parse(value, f"models.{row}.{key}") if key in ("model", "objective", "optim")
              else value for key, value in entry.items()}
    values["train"] = TrainSettings.from_params(params, entry.get("train"))
    values.pop("samples", None)          # read by ``srdiv samples --row`` (srdiv.sampling.samples.row_overrides)
    return ModelSpec(row=row, **values)


def in_folds(folds: pd.DataFrame, fold_ids: Sequence[int] | None) -> pd.DataFrame:
    """The ``qid, fold`` rows of ``fold_ids`` (a study's ``folds`` setting; all folds for None)."""
    return folds if fold_ids is None else folds[folds["fold"].isin([int(k) for k in fold_ids])]
