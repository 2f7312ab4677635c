"""A row of ``params.yaml`` checked against the registries before any work (:func:`check_rows`), and that check
as the Snakefile makes it, remembered per setting and code (:func:`checked_rows`).

Imports no torch: the models and objectives (torch modules) are imported when a check runs, so a DAG built
again for a setting already checked reads its answer without them.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path

from srdiv.experiment import model_spec, model_specs
from srdiv.io import InputError
from srdiv.params import lineage, read_yaml
from srdiv.registry import ENTRY_POINT_GROUP, MODELS, OBJECTIVES, USER_MODULES, check_args
from srdiv.train.device import uses_gpu

SRC = Path(__file__).resolve().parent.parent
"""The srdiv package's source directory."""

MEMO_FILE = "srdiv-rows.json"
"""Where :func:`checked_rows` keeps its answers, in the directory it is given (the Snakefile: ``.snakemake``)."""

MEMO_KEEP = 32
"""How many answers (settings and code versions) :data:`MEMO_FILE` keeps, the latest ones."""


def keywords(cls: type) -> set[str] | None:
    """The keyword arguments ``cls(...)`` accepts, following ``**params`` up the class chain.

    None when a ``**params`` reaches a constructor that takes anything (nothing to check).
    """
    import torch

    names: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass in (object, torch.nn.Module):
            continue
        params = list(inspect.signature(vars(klass)["__init__"]).parameters.values())[1:]
        names |= {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"dims"}
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return None


def check_rows(params: dict, rows: Sequence[str], where: str | Sequence[str | Path] = "params.yaml") -> None:
    """Every row's model and objective are registered, take the keywords the row gives them, and
    every value they get at every tuning point fits (:func:`srdiv.registry.check_args`, then the
    objective built with it). What a model's constructor checks against the data's sizes,
    :func:`srdiv.train.tuning.run_job` checks before the first point trains.

    Run before any work starts (the Snakefile and ``srdiv train``): a mistake is one
    :class:`InputError` naming the row, the key and the last params file that sets the row or a row it
    extends (``where``: the params files in merge order, or one name for them all).
    """
    import srdiv.models  # noqa: F401  (registers every model)
    import srdiv.objectives  # noqa: F401  (registers every objective)

    sources = [] if isinstance(where, (str, Path)) else _row_sources(where)
    for row in rows:
        try:
            chain = set(lineage(params, row))
        except ValueError:          # a circular 'extends', reported below
            chain = {row}
        source = next((path for path, rows_set in sources if rows_set & chain),
                      sources[0][0] if sources else str(where))

        def fail(key: str, err: Exception) -> InputError:
            return InputError(source, f"models.{row}.{key}: {err.args[0] if err.args else err}")  # noqa: B023 (called in this iteration)
        try:
            spec = model_spec(params, row)
            corners = spec.corners()        # the space parses (a bad range names its key)
            model = MODELS.get(spec.model.name)
            objective = OBJECTIVES.get(spec.objective.name) if spec.objective else None
        except (KeyError, ValueError) as err:
            raise InputError(source, f"models.{row}: {err.args[0]}") from None
        for section, cls in (("model", model), ("objective", objective)):
            component = getattr(spec, section)
            given = set(component.args if component else ()) | {
                path.rpartition(".")[2] for path in spec.tune if path.startswith(f"{section}.args.")}
            known = keywords(cls) if cls is not None else set()
            unknown = sorted(given - known) if known is not None else []
            if unknown:
                assert known is not None   # unknown: found against the known keywords
                raise InputError(source, f"models.{row}.{section}.args: {cls.__name__ if cls else 'no objective'} "
                                         f"takes no {', '.join(unknown)} "
                                         f"(it takes {', '.join(sorted(known)) or 'none'})")
        for point in corners:
            at = spec.at(point)
            try:
                check_args(model, {k: v for k, v in at.model.args.items() if k != "prior"})
            except ValueError as err:
                raise fail("model.args", err) from None
            if objective is not None:       # objectives are cheap to build: their values are checked here too
                assert at.objective is not None   # spec.at keeps the row's objective
                try:
                    objective(**at.objective.args)
                except (TypeError, ValueError) as err:
                    raise fail("objective.args", err) from None


def _row_sources(paths: Sequence[str | Path]) -> list[tuple[str, set]]:
    """Each params file with the rows it sets, last file first."""
    found = []
    for path in reversed(list(paths)):
        models = (read_yaml(path) or {}).get("models") or {}
        found.append((str(path), set(models) if isinstance(models, dict) else set()))
    return found



def checked_rows(params: dict, rows: Sequence[str], where: Sequence[str | Path], memo: str | Path) -> dict[str, bool]:
    """:func:`check_rows` of ``rows``, then ``{row: whether its jobs take a gpu slot}``
    (:func:`~srdiv.train.device.uses_gpu`) for ``rows`` and the priors they need.

    The answer is kept in ``memo/``:data:`MEMO_FILE` under a digest of all it depends on (:func:`_memo_key`);
    the same setting and code again reads it there, without importing the models, the objectives and torch.
    A failed check keeps nothing: it fails again each time.
    """
    key, path = _memo_key(params, rows), Path(memo) / MEMO_FILE
    known = _read_memo(path)
    if key in known:
        return known[key]
    check_rows(params, rows, where)
    specs, placed = model_specs(params), list(rows)
    for row in placed:
        prior = specs[row].prior
        if prior and prior not in placed:
            placed.append(prior)
    answer = {row: uses_gpu(specs[row]) for row in placed}
    known.pop(key, None)
    _write_memo(path, dict(list({**known, key: answer}.items())[-MEMO_KEEP:]))
    return answer


def _memo_key(params: dict, rows: Sequence[str]) -> str:
    """SHA-256 of what :func:`checked_rows` answers from: the merged params, the rows, every source file of
    srdiv, the files of the modules an ``import:`` list registered (:data:`srdiv.registry.USER_MODULES`) and
    the installed :data:`~srdiv.registry.ENTRY_POINT_GROUP` entry points with their versions."""
    digest = hashlib.sha256(json.dumps([params, list(rows)], default=repr).encode())
    users = {getattr(sys.modules.get(name), "__file__", None) for name in USER_MODULES}
    files = sorted(SRC.rglob("*.py")) + sorted(Path(file) for file in users if file is not None)
    for file in files:
        digest.update(f"\0{file}\0".encode())
        digest.update(file.read_bytes())
    points = sorted((p.name, p.value, getattr(p.dist, "version", "")) for p in entry_points(group=ENTRY_POINT_GROUP))
    digest.update(json.dumps(points).encode())
    return digest.hexdigest()


def _read_memo(path: Path) -> dict[str, dict[str, bool]]:
    """The answers :func:`checked_rows` kept (none where the file is missing or not one it wrote)."""
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(known, dict):
        return {}
    return {key: answer for key, answer in known.items() if isinstance(answer, dict)
            and all(isinstance(row, str) and isinstance(gpu, bool) for row, gpu in answer.items())}


def _write_memo(path: Path, known: dict[str, dict[str, bool]]) -> None:
    """Replace ``path`` with ``known`` at once (a DAG built beside this one reads the old file or the new one);
    where it cannot be written, the next DAG checks again."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(known, indent=1) + "\n")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
