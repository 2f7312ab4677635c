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
