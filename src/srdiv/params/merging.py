"""Params files merged left to right (``key+`` extending a list), dotted look-ups, and the ``models`` rows
resolved (``extends``, a null removing a key)."""

from __future__ import annotations

import copy
from typing import Any

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
    while (base := _mapping(raw, chain[-1]).get("extends")) is not None:
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
    for row in raw:
        _mapping(raw, row)
    return {row: _resolved(params, row) for row in raw}


def model_row(params: dict, row: str) -> dict | None:
    """One row resolved as :func:`model_rows` resolves it, None when no params file gives it; only the row and
    the rows it extends are read (the DAG asks for one row's settings per job)."""
    return None if (params.get("models") or {}).get(row) is None else _resolved(params, row)


def _resolved(params: dict, row: str) -> dict:
    """The row ``row`` (set in ``params``' models) merged over the rows it extends."""
    raw = params["models"]
    base, *changes = reversed(lineage(params, row))
    out = _merge_dropping_nulls({}, raw[base])      # an overlay's null removes a key of a base row too
    for name in changes:
        out = _merge_dropping_nulls(out, {k: v for k, v in raw[name].items() if k != "extends"})
    return out


def _mapping(raw: dict, row: str) -> dict:
    """The entry ``models.<row>`` ({} when absent or null); a ValueError when it is no mapping."""
    entry = raw.get(row)
    if entry is not None and not isinstance(entry, dict):
        raise ValueError(f"models.{row} must be a mapping, got {entry!r}")
    return entry or {}


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
