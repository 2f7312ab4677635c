"""The settings schema: every key ``params.yaml`` and its overlays may hold, with its type and range
(:data:`SCHEMA`), and :func:`validate`, which checks a file against it."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from srdiv.io import InputError
from srdiv.params.merging import EXTEND


@dataclass(frozen=True)
class Check:
    """The type and range of one params value (see :data:`SCHEMA`).

    ``kind``: ``int``, ``number``, ``bool``, ``str``, ``list`` (of ``items``), ``record`` (the
    mapping ``keys``), ``table`` (any keys, values ``items``), ``paths`` (dotted paths to the values
    of the record ``keys``, each with a list of such values), ``any``; ``alternatives`` accepts a
    value that passes one of them. ``nullable``: null is allowed (an overlay removing a row or key).
    ``retired``: keys of a record's old form, with the form that replaced them. ``what``: how
    :meth:`describe` names the kind. ``above`` (``below``): the value must exceed ``low`` (stay under ``high``),
    not equal it.
    """

    kind: str
    low: float | None = None
    high: float | None = None
    above: bool = False
    below: bool = False
    choices: tuple = ()
    pattern: str | None = None
    items: Check | None = None
    keys: dict = field(default_factory=dict)
    alternatives: tuple = ()
    nullable: bool = False
    nonempty: bool = False
    retired: dict = field(default_factory=dict)
    what: str = ""

    @property
    def each(self) -> Check:
        """A list's or table's ``items`` check (the kinds built with one)."""
        assert self.items is not None, f"a {self.kind} check without items"
        return self.items

    def describe(self) -> str:
        if self.alternatives:
            return " or ".join(alt.describe() for alt in self.alternatives)
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        names = {"int": "an integer", "number": "a number", "bool": "true or false", "str": "a string",
                 "list": "a list", "record": "a mapping", "table": "a mapping", "paths": "a mapping",
                 "any": "a value"}
        text = self.what or names[self.kind]
        if self.pattern:
            text += f" matching {self.pattern}"
        if self.low is not None and self.high is not None:
            text += f" in {'(' if self.above else '['}{self.low}, {self.high}{')' if self.below else ']'}"
        elif self.low is not None:
            text += f" {'>' if self.above else '>='} {self.low}"
        return text


def _int(low: int | None = None, high: int | None = None) -> Check:
    return Check("int", low, high)


def _num(low: float | None = None, high: float | None = None) -> Check:
    return Check("number", low, high)


def _str(*choices: str, pattern: str | None = None) -> Check:
    return Check("str", choices=choices, pattern=pattern)


def _list(items: Check, nonempty: bool = True) -> Check:
    return Check("list", items=items, nonempty=nonempty)


def _record(**keys: Check) -> Check:
    """A mapping with these keys."""
    return Check("record", keys=keys)


def _nullable_record(**keys: Check) -> Check:
    """A mapping with these keys, each of which may be null (as in a row that ``extends``)."""
    return _record(**{k: _nullable(c) for k, c in keys.items()})


def _nullable(check: Check, nullable: bool = True) -> Check:
    return Check(**{**check.__dict__, "nullable": nullable})


def _table(items: Check) -> Check:
    return Check("table", items=items)


_BOOL, _ANY, _NAME = Check("bool"), Check("any"), _str()
MEASURE_NAME = r"(alpha_nDCG|ERR_IA|nERR_IA|P_IA|StRecall)@0*[1-9]\d*|n?NRBP"
"""The measure names ``srdiv.metrics.evaluate`` computes (any cutoff >= 1; a test holds the two together)."""
_MEASURE = Check(**{**_str(pattern=MEASURE_NAME).__dict__,
                    "what": "a measure name (alpha_nDCG@20, ERR_IA@20, nERR_IA@20, P_IA@20, StRecall@20, NRBP, nNRBP; "
                            "any cutoff)"})
REPRESENTATIONS = ("doc2vec", "lda", "svd")
"""The document vectors ``srdiv embed`` writes (``<name>.parquet``), which a row or a dataset may read."""
_REPRESENTATION = _str(*REPRESENTATIONS)
_TRAIN_KEYS = dict(train_docs=_int(1), rank_docs=_int(1), epochs=_int(1), patience=_int(1), batch_size=_int(1),
                   rank_batch=_int(1), device=_str(pattern=r"auto|cpu|cuda(:\d+)?|mps"), valid_measure=_MEASURE)
_SAMPLE_METRIC = _str(pattern=r"(alpha_nDCG_cand|alpha_DCG)@\d+")
_SAMPLE_KEYS = dict(permutations=_int(0), draw=_str("prefixes", "per_length"), metric=_SAMPLE_METRIC,
                    alpha=_num(0, 1), pamm_positive=_int(1), pamm_negative=_int(1), pamm_metric=_SAMPLE_METRIC)
OPTIMIZERS = {"adam": "Adam", "sgd": "SGD", "adagrad": "Adagrad"}
"""Optimiser names a row's ``optim.name`` may take, each with its ``torch.optim`` class (``srdiv.train.trainer``)."""
_ARGS = _table(Check("any", nullable=True))                 # a registry class's keywords (checked by check_rows)
_OPTIM_ARGS = _nullable_record(lr=Check("number", 0, None, above=True), weight_decay=_num(0))


def _component(key: str, name: Check, args: Check) -> Check:
    """A row's ``{name, args}`` entry ``key``: a model, objective or optimiser name and its keywords."""
    check = _nullable_record(name=name, args=args)
    retired = {arg: f"write {key}: {{name: ..., args: {{{arg}: ...}}}}" for arg in args.keys}
    return Check(**{**check.__dict__, "what": "a mapping {name: ..., args: {...}}", "retired": retired})


_RANGE = _nullable_record(low=_num(), high=_num(), log=_BOOL, int=_BOOL,
                 step=Check("number", 0, None, above=True))
"""A ``tune`` range ``{low, high, log, int, step}`` (its sense checked by :class:`srdiv.experiment.Dimension`)."""
_TUNABLE = _record(model=_record(args=_ARGS), objective=_record(args=_ARGS), optim=_record(args=_OPTIM_ARGS),
                   train=_record(**_TRAIN_KEYS))
"""The values a row's ``tune`` may set, by their path in the row (``model.args.lam``, ``train.epochs``)."""
_ROW = Check(**{**_nullable_record(
    extends=_NAME, variant_of=_NAME, variant=Check("str"),
    model=_component("model", _NAME, _ARGS), objective=_component("objective", _NAME, _ARGS),
    optim=_component("optim", _str(*OPTIMIZERS), _OPTIM_ARGS),
    group=_str("initial", "reference", "unsupervised", "implicit", "explicit"),
    representation=_REPRESENTATION,
    train=_nullable_record(**_TRAIN_KEYS),
    tune=Check("paths", keys=_TUNABLE.keys),
    samples=_nullable_record(**_SAMPLE_KEYS),
).__dict__, "nullable": True, "retired": {
    "params": "the model's keywords are model: {name: ..., args: {...}}",
    "objective_params": "the objective's keywords are objective: {name: ..., args: {...}}"}})
_TABLE_SPEC = _record(title=_NAME, reference=_NAME, runs=_list(_NAME), note=_NAME)
SCHEMA = Check(**{**_record(
    seed=_int(0, 2**32 - 1), dataset=_NAME, study=_NAME, folds=_list(_int(1)),
    **{"import": _list(_NAME)},
    run_models=Check("any", alternatives=(_str("all"), _list(_NAME))), gpu_jobs=_int(1), train_threads=_int(1),
    datasets=_table(Check(**{**_record(
        collection=_NAME, representation=_REPRESENTATION, features=_str("text", "dssa-release"),
        dssa_release=_NAME, docs=_NAME,
        build=_record(kind=_str("subset", "trec-web", "with-suggestions", "planted"), source=_NAME, queries=_int(1),
                      folds=_int(2), extra_docs=_int(0), suggestions=_NAME, subtopics=_int(2), candidates=_int(4),
                      noise=Check("number", 0, 1, above=False, below=True))).__dict__, "nullable": True})),
    collections=_table(_table(_ANY)),      # checked by the builder (WordnetDivConfig: unknown keys are an error)
    embed=_record(
        doc2vec=_record(vector_size=_int(1), window=_int(1), dbow_words=_int(0, 1), alpha=_num(0), min_alpha=_num(0),
                        min_count=_int(1), negative=_int(0), epochs=_int(1), workers=_int(1)),
        lda=_record(num_topics=_int(1), passes=_int(1), iterations=_int(1), chunksize=_int(1), no_below=_int(1),
                    no_above=_num(0, 1)),
        svd=_record(num_topics=_int(1), power_iters=_int(0))),
    pseudo_docs=_record(z=_int(1), field=_NAME, infer_epochs=Check("int", 1, nullable=True), workers=_int(1)),
    features=_record(rank_docs=_int(1), k1=_num(0), b=_num(0, 1), mu=_num(0), diversity_vectors=_REPRESENTATION,
                     max_subs=_int(1), max_subs2=_int(1)),
    samples=_record(**_SAMPLE_KEYS),
    train=_record(**_TRAIN_KEYS),
    search=_record(trials=_int(1), batch=_int(1), startup=_int(0), pruner=_str("median", "halving")),
    models=_table(_ROW),
    report=_record(
        reference=_NAME, alpha=Check("number", 0, 1, above=True, below=True), holm=_BOOL,
        main_measures=_list(_MEASURE), cutoff_measures=_list(_MEASURE),
        ablations=_table(_TABLE_SPEC), per_position=_record(model=_NAME, baseline=_NAME),
        reference_runs=_table(_NAME), note=_NAME,
        sweeps=_table(_record(title=_NAME, x=_NAME, runs=_table(_num())))),
).__dict__, "retired": {
    "params_files": "not needed any more: the files given (snakemake --configfile, srdiv --params) are the setting"}})
"""Every key ``params.yaml`` and its overlays may hold, with its type and range."""


def _fits(value: Any, check: Check) -> bool:
    """Whether ``value`` (not null) has ``check``'s type, range and choices (containers: not their items)."""
    if check.alternatives:
        return any(_fits(value, alt) and not _problems(value, alt, "") for alt in check.alternatives)
    if check.kind == "any":
        return True
    if check.kind == "bool":
        return isinstance(value, bool)
    if check.kind in ("int", "number"):
        types = (int,) if check.kind == "int" else (int, float)
        if isinstance(value, bool) or not isinstance(value, types) or not math.isfinite(value):
            return False
        return ((check.low is None or value > check.low or (value == check.low and not check.above))
                and (check.high is None or value < check.high or (value == check.high and not check.below)))
    if check.kind == "str":
        return (isinstance(value, str) and (not check.choices or value in check.choices)
                and (check.pattern is None or re.fullmatch(check.pattern, value) is not None))
    if check.kind == "list":
        return isinstance(value, list) and bool(value or not check.nonempty)
    return isinstance(value, dict)


def _problems(value: Any, check: Check, key: str) -> list[str]:
    """``"key: what is wrong"`` for ``value`` and everything inside it (empty when it fits)."""
    if value is None:
        return [] if check.nullable else [f"'{key}' must be {check.describe()}, got null"]
    if not _fits(value, check):
        return [f"'{key}' must be {check.describe()}, got {value!r}"]
    found: list[str] = []
    if check.kind == "list":
        for i, item in enumerate(value):
            found += _problems(item, check.each, f"{key}[{i}]")
    elif check.kind == "record":
        for name, item in value.items():
            sub = f"{key}.{name}" if key else str(name)
            base = str(name)[:-len(EXTEND)] if str(name).endswith(EXTEND) else None
            if base is not None and base in check.keys and (lists := _list_checks(check.keys[base])):
                found += _problems(item, lists[0], sub)
            elif name in check.retired:
                found.append(f"'{sub}' is the old form: {check.retired[name]}")
            elif name not in check.keys:
                found.append(f"unknown key '{sub}' (known: {', '.join(check.keys)})")
            else:
                found += _problems(item, check.keys[name], sub)
    elif check.kind == "table":
        for name, item in value.items():
            found += _problems(item, check.each, f"{key}.{name}")
    elif check.kind == "paths":
        root = Check("record", keys=check.keys)
        for path, item in value.items():
            leaf = _leaf(root, str(path))
            if leaf is None:
                found.append(f"unknown path '{path}' in '{key}' (known: {', '.join(_paths(root))})")
            elif isinstance(item, dict):        # a range {low, high, ...} (srdiv.experiment.Dimension)
                found += _problems(item, _RANGE, f"{key}.{path}")
            else:
                found += _problems(item, Check("list", items=_nullable(leaf, False), nonempty=True, nullable=True),
                                   f"{key}.{path}")
    return found


def _list_checks(check: Check) -> list[Check]:
    """The list forms ``check`` accepts (itself, or its list alternatives): what a ``key+`` may hold."""
    return [c for c in (check.alternatives or (check,)) if c.kind == "list"]


def _leaf(check: Check, path: str) -> Check | None:
    """The check of the value at dotted ``path`` under the record ``check`` (None: no such single value)."""
    for part in path.split("."):
        if check.kind == "record" and part in check.keys:
            check = check.keys[part]
        elif check.kind == "table":
            check = check.each
        else:
            return None
    return None if check.kind in ("record", "table") else check


def _paths(check: Check, prefix: str = "") -> list[str]:
    """The dotted paths :func:`_leaf` knows under ``check`` (``NAME`` for a table's keys)."""
    if check.kind == "record":
        return [p for name, sub in check.keys.items() for p in _paths(sub, f"{prefix}{name}.")]
    if check.kind == "table":
        return _paths(check.each, f"{prefix}NAME.")
    return [prefix.rstrip(".")]


def validate(params: dict, path: str | os.PathLike = "params.yaml") -> None:
    """Raise :class:`InputError` (naming ``path`` and the key) where ``params`` does not fit :data:`SCHEMA`."""
    problems = _problems(params, SCHEMA, "")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(path, problems[0] + more)
