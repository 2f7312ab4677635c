"""Build settings of a collection from ``collections: <name>:`` in params.yaml."""

from __future__ import annotations

import dataclasses
from typing import Any

from srdiv.io import InputError


def overrides(cls: type, params: dict, name: str) -> dict[str, Any]:
    """``params["collections"][name]`` checked against the fields of dataclass ``cls``, lists as tuples.

    An unknown key is an :class:`InputError` naming ``collections.<name>``.
    """
    given = dict((params.get("collections") or {}).get(name) or {})
    unknown = sorted(set(given) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise InputError("params.yaml", f"unknown keys in collections.{name}: {unknown}")
    return {key: tuple(value) if isinstance(value, list) else value for key, value in given.items()}
