"""``params.yaml``: the one configuration file, with optional overlay files.

Several files merge left to right (dicts recursively, everything else
replaced), so ``params.yaml`` + ``config/smoke.yaml`` is the smoke setting.
A key written ``name+`` extends the list ``name`` of the files before it
instead of replacing it (``run_models+: [MyModel]`` adds a row to the
setting's rows). Snakemake reads the same files, merged the same way
(``workflow/rules/common.smk``); DVC tracks the same keys.

Every file is checked against :data:`SCHEMA` when it is loaded, before any
work starts: an unknown key, a value of the wrong type or out of range is one
:class:`~srdiv.io.InputError` naming the file and the dotted key. A file's
``import:`` list names the modules of models and objectives from outside the
package, imported as it is loaded (:func:`srdiv.registry.import_components`).
"""

from __future__ import annotations

import copy
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import yaml

from srdiv.io import InputError, read_text
from srdiv.registry import import_components


EXTEND = "+"
"""Suffix of a key whose list extends the list of the same key without it (``run_models+``)."""


def merge(base: dict, overlay: dict) -> dict:
    """Recursive dict merge: ``overlay`` wins; nested dicts merge key by key; ``key+: [...]`` appends its
    items to ``base[key]`` (a list; absent: the items alone), leaving out those already there. A ``key+``
    over a value that is not a list (``run_models: all``) leaves it as it is: ``all`` holds every row."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(key, str) and key.endswith(EXTEND) and isinstance(value, list):
            name = key[:-len(EXTEND)]
            current = out.get(name)
            if current is None or isinstance(current, list):
                current = list(current or [])
                out[name] = current + [copy.deepcopy(v) for v in value if v not in current]
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def lookup(params: dict, dotted: str, default: Any = None) -> Any:
    """The value at a dotted key (``"models.DSSA.model"``), or ``default`` where a part is absent."""
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


DATASET_DEFAULTS = {"representation": "doc2vec", "features": "text"}
"""What a ``datasets.<name>`` entry means where it leaves a key out: its rows read the doc2vec bundle, and
its features are computed from its text (not read from the DSSA release, ``features: dssa-release``)."""


def dataset_settings(params: dict) -> dict:
    """The ``datasets`` entry of ``params["dataset"]``, with :data:`DATASET_DEFAULTS` for the keys it leaves out."""
    return {**DATASET_DEFAULTS, **(params["datasets"][params["dataset"]] or {})}


def lineage(params: dict, row: str) -> list[str]:
    """``row`` and the rows it ``extends``, nearest first: their entries hold its settings."""
    raw = params.get("models") or {}
    chain = [row]
    while (base := (raw.get(chain[-1]) or {}).get("extends")) is not None:
        if base in chain:
            raise ValueError(f"models.{row}: 'extends' goes round in a circle ({' -> '.join(chain + [base])})")
        if raw.get(base) is None:
            raise ValueError(f"models.{chain[-1]} extends '{base}', which is not a row of models")
        chain.append(base)
    return chain


def model_rows(params: dict) -> dict[str, dict]:
    """The ``models`` rows in file order, resolved.

    An overlay removes a row by setting it to null, and a key of a row by setting the key to null
    (``tune: {optim.args.lr: null}``). A row with ``extends: BASE`` is BASE's resolved entry merged with
    the row's own keys (dicts key by key, as overlays merge; a key set to null is removed), so an
    ablation row states only what it changes.
    """
    raw = {row: entry for row, entry in (params.get("models") or {}).items() if entry is not None}
    for row, entry in raw.items():
        if not isinstance(entry, dict):
            raise ValueError(f"models.{row} must be a mapping, got {entry!r}")
    resolved = {}
    for row in raw:
        base, *changes = reversed(lineage(params, row))
        out = _merge_dropping_nulls({}, raw[base])      # an overlay's null removes a key of a base row too
        for name in changes:
            out = _merge_dropping_nulls(out, {k: v for k, v in raw[name].items() if k != "extends"})
        resolved[row] = out
    return resolved


def _merge_dropping_nulls(base: dict, overlay: dict) -> dict:
    """:func:`merge`, but a key set to null in ``overlay`` is removed."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = _merge_dropping_nulls(out[key] if isinstance(out.get(key), dict) else {}, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@dataclass(frozen=True)
class Check:
    """The type and range of one params value (see :data:`SCHEMA`).

    ``kind``: ``int``, ``number``, ``bool``, ``str``, ``list`` (of ``items``), ``record`` (the
    mapping ``keys``), ``table`` (any keys, values ``items``), ``paths`` (dotted paths to the values
    of the record ``keys``, each with a list of such values), ``any``; ``alternatives`` accepts a
    value that passes one of them. ``nullable``: null is allowed (an overlay removing a row or key).
    ``retired``: keys of a record's old form, with the form that replaced them. ``what``: how
    :meth:`describe` names the kind. ``above`` (``below``): the value must exceed ``low`` (stay under ``high``), not equal it.
    """

    kind: str
    low: float | None = None
    high: float | None = None
    above: bool = False
    below: bool = False
    choices: tuple = ()
    pattern: str | None = None
    items: "Check | None" = None
    keys: dict = field(default_factory=dict)
    alternatives: tuple = ()
    nullable: bool = False
    nonempty: bool = False
    retired: dict = field(default_factory=dict)
    what: str = ""

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


def _record(nullable_keys: bool = False, **keys: Check) -> Check:
    """A mapping with these keys (``nullable_keys``: each may be null, as in a row that ``extends``)."""
    if nullable_keys:
        keys = {k: _nullable(c) for k, c in keys.items()}
    return Check("record", keys=keys)


def _nullable(check: Check, nullable: bool = True) -> Check:
    return Check(**{**check.__dict__, "nullable": nullable})


def _table(items: Check) -> Check:
    return Check("table", items=items)


_BOOL, _ANY, _NAME = Check("bool"), Check("any"), _str()
MEASURE_NAME = r"(alpha_nDCG|ERR_IA|nERR_IA|P_IA|StRecall)@0*[1-9]\d*|n?NRBP"
"""The measure names ``srdiv.metrics.evaluate`` computes (any cutoff >= 1; a test holds the two together)."""
_MEASURE = Check(**{**_str(pattern=MEASURE_NAME).__dict__, "what": "a measure name (alpha_nDCG@20, ERR_IA@20, "
                                                               "nERR_IA@20, P_IA@20, StRecall@20, NRBP, nNRBP; any cutoff)"})
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
_OPTIM_ARGS = _record(nullable_keys=True, lr=Check("number", 0, None, above=True), weight_decay=_num(0))


def _component(key: str, name: Check, args: Check) -> Check:
    """A row's ``{name, args}`` entry ``key``: a model, objective or optimiser name and its keywords."""
    check = _record(nullable_keys=True, name=name, args=args)
    retired = {arg: f"write {key}: {{name: ..., args: {{{arg}: ...}}}}" for arg in args.keys}
    return Check(**{**check.__dict__, "what": "a mapping {name: ..., args: {...}}", "retired": retired})


_RANGE = _record(nullable_keys=True, low=_num(), high=_num(), log=_BOOL, int=_BOOL,
                 step=Check("number", 0, None, above=True))
"""A ``tune`` range ``{low, high, log, int, step}`` (its sense checked by :class:`srdiv.experiment.Dimension`)."""
_TUNABLE = _record(model=_record(args=_ARGS), objective=_record(args=_ARGS), optim=_record(args=_OPTIM_ARGS),
                   train=_record(**_TRAIN_KEYS))
"""The values a row's ``tune`` may set, by their path in the row (``model.args.lam``, ``train.epochs``)."""
_ROW = Check(**{**_record(
    nullable_keys=True,
    extends=_NAME, variant_of=_NAME, variant=Check("str"),
    model=_component("model", _NAME, _ARGS), objective=_component("objective", _NAME, _ARGS),
    optim=_component("optim", _str(*OPTIMIZERS), _OPTIM_ARGS),
    group=_str("initial", "reference", "unsupervised", "implicit", "explicit"),
    representation=_REPRESENTATION,
    train=_record(nullable_keys=True, **_TRAIN_KEYS),
    tune=Check("paths", keys=_TUNABLE.keys),
    samples=_record(nullable_keys=True, **_SAMPLE_KEYS),
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
        reference=_NAME, alpha=Check("number", 0, 1, above=True, below=True), holm=_BOOL, main_measures=_list(_MEASURE), cutoff_measures=_list(_MEASURE),
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
            found += _problems(item, check.items, f"{key}[{i}]")
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
            found += _problems(item, check.items, f"{key}.{name}")
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
            check = check.items
        else:
            return None
    return None if check.kind in ("record", "table") else check


def _paths(check: Check, prefix: str = "") -> list[str]:
    """The dotted paths :func:`_leaf` knows under ``check`` (``NAME`` for a table's keys)."""
    if check.kind == "record":
        return [p for name, sub in check.keys.items() for p in _paths(sub, f"{prefix}{name}.")]
    if check.kind == "table":
        return _paths(check.items, f"{prefix}NAME.")
    return [prefix.rstrip(".")]


def validate(params: dict, path: str | os.PathLike = "params.yaml") -> None:
    """Raise :class:`InputError` (naming ``path`` and the key) where ``params`` does not fit :data:`SCHEMA`."""
    problems = _problems(params, SCHEMA, "")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(path, problems[0] + more)


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader that refuses a key given twice in one mapping (YAML keeps the last silently)
    and an alias inside the node it names (a recursive structure)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._open: set[str] = set()

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent) and self.peek_event().anchor in self._open:
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, f"recursive alias *{event.anchor} (it lies inside "
                                                          f"&{event.anchor})", event.start_mark)
        return super().compose_node(parent, index)

    def _compose_open(self, compose, anchor):
        self._open.add(anchor)
        try:
            return compose(anchor)
        finally:
            self._open.discard(anchor)

    def compose_sequence_node(self, anchor):
        return self._compose_open(super().compose_sequence_node, anchor)

    def compose_mapping_node(self, anchor):
        return self._compose_open(super().compose_mapping_node, anchor)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (str, int, float, bool)) or key is None:
                    if key in seen:
                        raise yaml.constructor.ConstructorError(None, None, f"key {key!r} appears twice in one "
                                                                            "mapping", key_node.start_mark)
                    seen.add(key)
        return super().construct_mapping(node, deep)


def read_yaml(path: str | os.PathLike):
    """A YAML file's value; one :class:`InputError` naming the file and line when it is not UTF-8, not
    YAML, gives a key twice in one mapping or holds a recursive alias."""
    try:
        return yaml.load(read_text(path), Loader=_StrictLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = getattr(mark, "line", None)
        what = " ".join(str(getattr(err, "problem", None) or err).split())   # one line, not YAML's excerpt
        raise InputError(path, f"invalid YAML: {what}", None if line is None else line + 1) from None


def load_params(paths: Sequence[str | os.PathLike] | str | os.PathLike) -> dict[str, Any]:
    """Load and merge one or more YAML params files."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    params: dict[str, Any] = {}
    sources: dict = {}       # each reference run's name, each row run_models names: the last file giving it
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(path, "params file not found")
        if not path.is_file():
            raise InputError(path, "params file is not a file")
        loaded = read_yaml(path) or {}
        if not isinstance(loaded, dict):
            raise InputError(path, "params file must hold a mapping")
        validate(loaded, path)
        import_components([*(loaded.get("import") or []), *(loaded.get("import" + EXTEND) or [])], path)
        params = merge(params, loaded)
        sources.update({name: path for name in _reference_names(loaded)})
        for key in ("run_models", "run_models" + EXTEND):
            if isinstance(loaded.get(key), list):
                sources.update({("run_models", row): path for row in loaded[key] if isinstance(row, str)})
    _check_references(params, sources)
    _check_run_models(params, sources)
    return params


def _check_run_models(params: dict, sources: dict) -> None:
    """Each row ``run_models`` names is a row of ``models`` (where the files give ``models``); else one
    :class:`InputError` naming the last params file that names the row."""
    chosen = params.get("run_models")
    if not isinstance(chosen, list) or not isinstance(params.get("models"), dict):
        return
    try:
        rows = model_rows(params)
    except ValueError:                  # a row's own mistake, reported where the row is used
        return
    unknown = [row for row in chosen if row not in rows]
    if unknown:
        raise InputError(sources.get(("run_models", unknown[0]), "params.yaml"),
                         f"run_models names {unknown[0]!r}, which is not a row of models (rows: "
                         f"{', '.join(list(rows)[:8])}{', ...' if len(rows) > 8 else ''})")


REFERENCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
"""A name of ``report.reference_runs``: one word (it names a directory)."""


def _reference_names(params: dict) -> list:
    runs = (params.get("report") or {}).get("reference_runs") if isinstance(params.get("report"), dict) else None
    return list(runs) if isinstance(runs, dict) else []


def _check_references(params: dict, sources: dict) -> None:
    """Each name of ``report.reference_runs`` is one word and no row of ``models``; else one
    :class:`InputError` naming the last params file that gives the name."""
    rows = None
    for name in _reference_names(params):
        if not isinstance(name, str) or not REFERENCE_NAME.fullmatch(name):
            raise InputError(sources[name], f"report.reference_runs: name {name!r} must be one word of letters, "
                                            "digits and ._+- (it names a directory)")
        if rows is None:
            try:
                rows = model_rows(params)
            except ValueError:          # a row's own mistake, reported where the row is used
                rows = {}
        if name in rows:
            raise InputError(sources[name], f"report.reference_runs: {name!r} is also a row of models; give the run "
                                            "another name")


def setting_files(defaults: Sequence[str | os.PathLike], overlays: Sequence[str | os.PathLike]) -> list[str]:
    """The params files of a setting: the ``defaults`` (the Snakefile's ``configfile`` directives) and the
    ``overlays`` in order, each once, as paths relative to the working directory where they lie under it (the
    ``--params`` of the rules)."""
    cwd = Path.cwd().resolve()
    files: list[str] = []
    for path in [*map(Path, defaults), *map(Path, overlays)]:
        full = path.resolve()
        name = str(full.relative_to(cwd)) if full.is_relative_to(cwd) else str(full)
        if name not in files:
            files.append(name)
    return files


def section(params: dict, name: str) -> dict[str, Any]:
    """A top-level section (empty when absent), e.g. ``section(p, "embed")``."""
    value = params.get(name) or {}
    if not isinstance(value, dict):
        raise InputError("params.yaml", f"section '{name}' must be a mapping")
    return value
