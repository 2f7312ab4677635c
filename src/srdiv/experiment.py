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
      tune: {model.args.lam: {low: 0.0, high: 1.0}, optim.args.lr: {low: 1.0e-4, high: 1.0, log: true}}
      variant_of: DSSA             # for ablation rows (tables), with ``variant: <label>``
      representation: lda          # which bundle the pipeline gives this row (not read here)

A ``tune`` key is the path in the row of the value it sets: ``model.args.<arg>``,
``objective.args.<arg>``, ``optim.args.<arg>``, ``train.<key>`` (not ``train.epochs``: the
epoch cap is the ``train`` section's, the same for every row); its value is the parameter's range
(:class:`Dimension`): a list of values to choose from, or ``{low, high}`` with ``log: true``
(log-uniform), ``int: true`` (integers) and ``step: s`` as options. A row whose ranges are all lists
is searched exhaustively (every point of their Cartesian product, keys in file order); a row with a
numeric range is sampled, ``search.trials`` trials (:mod:`srdiv.train.search`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import pandas as pd

from srdiv.metrics.names import HEADLINE
from srdiv.params import model_row, model_rows
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
    valid_measure: str = HEADLINE

    @classmethod
    def from_params(cls, params: dict, overrides: dict | None = None) -> TrainSettings:
        return cls(**{**(params.get("train") or {}), **(overrides or {})})


@dataclass(frozen=True)
class SearchSettings:
    """The ``search`` section: the one budget of every trained row's search (:mod:`srdiv.train.search`).

    ``trials`` per job (a row whose space is lists only, with no more points, tries each point once);
    ``batch``: trials asked, trained (side by side where the job has threads) and told together, which
    fixes the result whatever the number of processes; ``startup``: trials the TPE sampler draws at
    random, and completed trials the median rule waits for; ``pruner``: ``median`` or ``halving``. The
    epoch cap is the ``train`` section's ``epochs``."""

    trials: int = 10
    batch: int = 2
    startup: int = 4
    pruner: str = "median"

    @classmethod
    def from_params(cls, params: dict) -> SearchSettings:
        return cls(**(params.get("search") or {}))


@dataclass(frozen=True)
class Component:
    """A row's ``model``, ``objective`` or ``optim``: a registry (or optimiser) name and its keywords."""

    name: str
    args: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, entry: Any, where: str) -> Component:
        """``{name, args}`` of a resolved row (``where``: its dotted key, for the error)."""
        if not isinstance(entry, dict) or not entry.get("name"):
            raise ValueError(f"{where} must be {{name: ..., args: {{...}}}}, got {entry!r}")
        return cls(entry["name"], dict(entry.get("args") or {}))


@dataclass(frozen=True)
class Dimension:
    """One tuned parameter's range: ``values`` (a list: a choice among them, searched exhaustively when
    every range of the row is one), or ``low``-``high`` (uniform; ``log``: log-uniform, for learning
    rates and weight decay; ``integer``: whole numbers, for sizes; ``step``: a lattice from ``low``)."""

    values: tuple = ()
    low: float | None = None
    high: float | None = None
    log: bool = False
    integer: bool = False
    step: float | None = None

    KEYS = ("low", "high", "log", "int", "step")

    @classmethod
    def parse(cls, value: Any, where: str) -> Dimension:
        """A ``tune`` value: a nonempty list, or ``{low, high, log?, int?, step?}`` (``where``: its key)."""
        if isinstance(value, list) and value:
            return cls(values=tuple(value))
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be a list of values or {{low: ..., high: ...}}, got {value!r}")
        unknown = sorted(set(value) - set(cls.KEYS))
        if unknown or "low" not in value or "high" not in value:
            raise ValueError(f"{where} must be {{low: ..., high: ...}} with log, int or step as options, got {value!r}")
        low, high, step = value["low"], value["high"], value.get("step")
        log, integer = value.get("log", False), value.get("int", False)
        numbers = [v for v in (low, high, step) if v is not None]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in numbers) \
                or not all(isinstance(v, bool) for v in (log, integer)):
            raise ValueError(f"{where}: low, high, step must be finite numbers, log and int true or false; "
                             f"got {value!r}")
        if not low < high:
            raise ValueError(f"{where}: low ({low}) must be below high ({high})")
        if log and (low <= 0 or step is not None):
            raise ValueError(f"{where}: a log range needs low > 0 and no step, got {value!r}")
        if step is not None and step <= 0:
            raise ValueError(f"{where}: step must be > 0, got {step}")
        if integer and not all(float(v).is_integer() for v in numbers):
            raise ValueError(f"{where}: an integer range needs whole low, high and step, got {value!r}")
        cast = int if integer else float
        return cls(low=cast(low), high=cast(high), log=log, integer=integer,
                   step=None if step is None else cast(step))

    @property
    def numeric(self) -> bool:
        """A ``low``-``high`` range (not a list)."""
        return not self.values

    def ends(self) -> tuple:
        """The values :func:`srdiv.train.rows.check_rows` builds a model with: a list's every value, a
        range's two ends."""
        return self.values or (self.low, self.high)

    def bounds(self) -> tuple[float, float]:
        """A range's ``low`` and ``high`` (:meth:`parse` sets both when there are no ``values``)."""
        assert self.low is not None and self.high is not None, "a list of values has no low-high range"
        return self.low, self.high

    def at_edge(self, value: Any) -> bool:
        """Whether ``value`` lies at an edge of this range: a list's first or last value (of two or more),
        the outer tenth of a range (of its log range for ``log``)."""
        if self.values:
            return len(self.values) > 1 and value in (self.values[0], self.values[-1])
        low, high = self.bounds()
        scale = math.log if self.log else float
        span = scale(high) - scale(low)
        where = (scale(value) - scale(low)) / span
        return where <= 0.1 or where >= 0.9

    def describe(self) -> str:
        """The range as the tuning table shows it (``0.0001-1 (log)``, ``10-200 (int)``, ``a, b, c``)."""
        if self.values:
            return ", ".join(map(str, self.values))
        kind = [k for k, on in (("log", self.log), ("int", self.integer)) if on]
        kind += [f"step {self.step:g}"] if self.step else []
        return f"{self.low:g}-{self.high:g}" + (f" ({', '.join(kind)})" if kind else "")


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
    search: SearchSettings = field(default_factory=SearchSettings)
    variant_of: str | None = None
    variant: str = ""
    representation: str | None = None

    @property
    def prior(self) -> str | None:
        """The row whose trained model this one takes as ``prior``."""
        return self.model.args.get("prior")

    def space(self) -> dict[str, Dimension]:
        """The row's search space: ``{tune path: Dimension}`` in file order."""
        return {path: Dimension.parse(value, f"models.{self.row}.tune.{path}") for path, value in self.tune.items()}

    def exhaustive(self) -> bool:
        """Whether the space is lists only (searched point by point; a row without ``tune``: one point)."""
        return not any(dim.numeric for dim in self.space().values())

    def grid(self) -> list[dict[str, Any]]:
        """Every point of a lists-only space as ``{tune path: value}`` (one empty point without ``tune``)."""
        space = self.space()
        if not self.exhaustive():
            raise ValueError(f"models.{self.row}.tune: a numeric range has no grid; it is sampled")
        return [dict(zip(space, values)) for values in itertools.product(*(dim.values for dim in space.values()))]

    def corners(self) -> list[dict[str, Any]]:
        """The points :func:`srdiv.train.rows.check_rows` checks: every combination of each range's
        :meth:`Dimension.ends` (a lists-only space: its grid)."""
        space = self.space()
        return [dict(zip(space, values)) for values in itertools.product(*(dim.ends() for dim in space.values()))]

    def paper_point(self) -> dict[str, Any]:
        """The row's own values (its ``model.args``, ``optim.args``, ...: the paper's) of the tuned
        parameters it gives, those that lie in their range: the search's first trial."""
        point = {}
        for path, dim in self.space().items():
            head, _, name = path.rpartition(".")
            part = getattr(self, _TUNED.get(head, "row"), None)
            given = (vars(part) if head == "train" else part.args) if part is not None else {}
            value = given.get(name)
            if dim.values:
                if value in dim.values:
                    point[path] = value
            elif (isinstance(value, (int, float)) and not isinstance(value, bool)
                  and dim.bounds()[0] <= value <= dim.bounds()[1]
                  and (not dim.integer or float(value).is_integer())):
                point[path] = int(value) if dim.integer else value
        return point

    def at(self, point: dict[str, Any]) -> ModelSpec:
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
    def from_dict(cls, saved: dict) -> ModelSpec:
        """The inverse of :meth:`to_dict`."""
        parts = {key: Component(**saved[key]) if saved[key] else None for key in ("model", "objective", "optim")}
        return cls(**{**saved, **parts, "train": TrainSettings(**saved["train"]),
                      "search": SearchSettings(**saved.get("search", {}))})


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
    """The spec of ``models.<row>`` from the loaded ``params.yaml`` (only that row and the rows it extends are
    resolved: a check of every row asks for each)."""
    entry = model_row(params, row)
    if entry is None:
        raise KeyError(f"no params file gives the row models.{row} (rows: {', '.join(model_rows(params)) or 'none'})")
    return _spec(params, row, entry)


def model_specs(params: dict) -> dict[str, ModelSpec]:
    """The spec of every ``models`` row, in file order."""
    return {row: _spec(params, row, entry) for row, entry in model_rows(params).items()}


def _spec(params: dict, row: str, entry: dict) -> ModelSpec:
    """A resolved row (:func:`~srdiv.params.model_rows`) as a :class:`ModelSpec`."""
    known = {f.name for f in fields(ModelSpec)} - {"row", "search"} | {"samples"}     # samples: read by srdiv samples
    unknown = set(entry) - known
    if unknown or "model" not in entry:
        raise ValueError(f"models.{row}: needs 'model'; unknown keys {sorted(unknown)}")
    values: dict[str, Any] = {key: Component.parse(value, f"models.{row}.{key}")
                              if key in ("model", "objective", "optim") else value for key, value in entry.items()}
    values["train"] = TrainSettings.from_params(params, entry.get("train"))
    values["search"] = SearchSettings.from_params(params)
    values.pop("samples", None)          # read by ``srdiv samples --row`` (srdiv.sampling.samples.row_overrides)
    return ModelSpec(row=row, **values)


def in_folds(folds: pd.DataFrame, fold_ids: Sequence[int] | None) -> pd.DataFrame:
    """The ``qid, fold`` rows of ``fold_ids`` (a study's ``folds`` setting; all folds for None)."""
    return folds if fold_ids is None else folds[folds["fold"].isin([int(k) for k in fold_ids])]
