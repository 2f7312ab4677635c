"""``params.yaml``: the one configuration file, with optional overlay files.

Several files merge left to right (dicts recursively, everything else
replaced), so ``params.yaml`` + ``config/smoke.yaml`` is the smoke setting.
Snakemake reads the same files as its config; DVC tracks the same keys.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Sequence

import yaml

from srdiv.io import InputError


def merge(base: dict, overlay: dict) -> dict:
    """Recursive dict merge: ``overlay`` wins; nested dicts merge key by key."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def lookup(params: dict, dotted: str, default: Any = None) -> Any:
    """The value at a dotted key (``"models.DSSA.params"``), or ``default`` where a part is absent."""
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


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

    An overlay removes a row by setting it to null. A row with ``extends: BASE`` is BASE's
    resolved entry merged with the row's own keys (dicts key by key, as overlays merge; a key
    set to null is removed), so an ablation row states only what it changes.
    """
    raw = {row: entry for row, entry in (params.get("models") or {}).items() if entry is not None}
    for row, entry in raw.items():
        if not isinstance(entry, dict):
            raise ValueError(f"models.{row} must be a mapping, got {entry!r}")
    resolved = {}
    for row in raw:
        base, *changes = reversed(lineage(params, row))
        out = copy.deepcopy(raw[base])
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
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_dropping_nulls(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_params(paths: Sequence[str | os.PathLike] | str | os.PathLike) -> dict[str, Any]:
    """Load and merge one or more YAML params files."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    params: dict[str, Any] = {}
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(path, "params file not found")
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as err:
            line = getattr(getattr(err, "problem_mark", None), "line", None)
            raise InputError(path, f"invalid YAML: {err}", None if line is None else line + 1) from None
        if not isinstance(loaded, dict):
            raise InputError(path, "params file must hold a mapping")
        params = merge(params, loaded)
    return params


def section(params: dict, name: str) -> dict[str, Any]:
    """A top-level section (empty when absent), e.g. ``section(p, "embed")``."""
    value = params.get(name) or {}
    if not isinstance(value, dict):
        raise InputError("params.yaml", f"section '{name}' must be a mapping")
    return value
