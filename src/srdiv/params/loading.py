"""Params files read (strict YAML), checked against the schema and merged, with the checks that span files."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from srdiv.io import InputError, read_text
from srdiv.params.merging import EXTEND, merge, model_rows
from srdiv.params.schema import validate
from srdiv.registry import import_components


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
