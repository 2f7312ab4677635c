"""The experiment: the ``train`` section, the ``models.<Row>`` entries of ``params.yaml``, the folds a run uses.

The bottom layer every later stage reads (sampling, training, gathering, the report).

A model row::

    DSSA:
      model: dssa                  # MODELS registry name
      objective: list_pairwise     # OBJECTIVES registry name; absent: nothing to train
      group: explicit              # initial | reference | unsupervised | implicit | explicit (tables)
      params: {hidden: 50}         # constructor keywords; ``prior: <Row>`` is replaced
                                   # by that row's trained model of the same fold
      objective_params: {}         # objective constructor keywords
      optim: {name: adam, lr: 0.001, weight_decay: 0.0}
      train: {epochs: 30}          # per-row overrides of the ``train`` section
      tune: {lam: [0.1, 0.5], optim.lr: [0.001, 0.01]}
      variant_of: DSSA             # for ablation rows (tables), with ``variant: <label>``
      representation: lda          # which bundle the pipeline gives this row (not read here)

``tune`` keys name a model parameter, or ``optim.<key>``,
``objective.<key>``, ``train.<key>``; every point of their Cartesian product
(keys in file order) is trained and scored on the validation fold.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Sequence

import pandas as pd

from srdiv.params import model_rows


@dataclass(frozen=True)
class TrainSettings:
    """The ``train`` section: candidate depths, epochs, early stopping, batches, device."""

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
class ModelSpec:
    """One ``models.<Row>`` entry, with the ``train`` section merged in."""

    row: str
    model: str
    objective: str | None = None
    group: str = ""
    params: dict = field(default_factory=dict)
    objective_params: dict = field(default_factory=dict)
    optim: dict = field(default_factory=lambda: {"name": "adam", "lr": 1e-3})
    train: TrainSettings = field(default_factory=TrainSettings)
    tune: dict = field(default_factory=dict)
    variant_of: str | None = None
    variant: str = ""
    representation: str | None = None

    @property
    def prior(self) -> str | None:
        """The row whose trained model this one takes as ``prior``."""
        return self.params.get("prior")

    def grid(self) -> list[dict[str, Any]]:
        """Every tuning point as ``{tune key: value}`` (one empty point without ``tune``)."""
        keys = list(self.tune)
        return [dict(zip(keys, values)) for values in itertools.product(*(self.tune[k] for k in keys))]

    def at(self, point: dict[str, Any]) -> "ModelSpec":
        """This spec with a tuning point applied."""
        parts: dict[str, dict] = {"params": dict(self.params), "optim": dict(self.optim),
                                  "objective": dict(self.objective_params), "train": {}}
        for key, value in point.items():
            section, _, name = key.rpartition(".")
            if section not in ("", "optim", "objective", "train"):
                raise ValueError(f"models.{self.row}.tune: unknown section in '{key}'")
            parts[section or "params"][name] = value
        return replace(self, params=parts["params"], optim=parts["optim"], objective_params=parts["objective"],
                       train=replace(self.train, **parts["train"]))

    def to_dict(self) -> dict:
        """JSON-ready form (written next to the model)."""
        return asdict(self)


def run_rows(params: dict) -> list[str]:
    """The rows a run trains and reports: ``run_models`` (a list of rows, or ``all``)."""
    chosen = params.get("run_models", "all")
    rows = model_rows(params)
    if chosen == "all":
        return list(rows)
    unknown = [row for row in chosen if row not in rows]
    if unknown:
        raise KeyError(f"run_models names rows params.yaml does not have: {', '.join(unknown)}")
    return list(chosen)


def model_spec(params: dict, row: str) -> ModelSpec:
    """The spec of ``models.<row>`` from the loaded ``params.yaml``."""
    models = model_rows(params)
    if row not in models:
        raise KeyError(f"params.yaml has no models.{row} (rows: {', '.join(models) or 'none'})")
    entry = dict(models[row])
    known = {"model", "objective", "group", "params", "objective_params", "optim", "train", "tune",
             "variant_of", "variant", "representation", "samples"}
    unknown = set(entry) - known
    if unknown or "model" not in entry:
        raise ValueError(f"models.{row}: needs 'model'; unknown keys {sorted(unknown)}")
    entry["train"] = TrainSettings.from_params(params, entry.get("train"))
    entry.pop("samples", None)           # read by ``srdiv samples --row`` (srdiv.sampling.samples.row_overrides)
    entry = {k: v for k, v in entry.items() if v is not None}
    return ModelSpec(row=row, **entry)


def in_folds(folds: pd.DataFrame, fold_ids: Sequence[int] | None) -> pd.DataFrame:
    """The ``qid, fold`` rows of ``fold_ids`` (a study's ``folds`` setting; all folds for None)."""
    return folds if fold_ids is None else folds[folds["fold"].isin([int(k) for k in fold_ids])]
