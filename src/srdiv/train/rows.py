"""A row of ``params.yaml`` checked against the registries before any work (:func:`check_rows`): by
``srdiv train`` for its row, and by ``srdiv check-rows`` for every row of a run before its first job (the
Snakefile's onstart handler).

Imports no torch: the models and objectives (torch modules) are imported when a check runs.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path

from srdiv.experiment import model_spec
from srdiv.io import InputError
from srdiv.params import lineage, read_yaml
from srdiv.registry import MODELS, OBJECTIVES, check_args


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


def check_rows(params: dict, rows: Sequence[str], where: str | Sequence[str | Path] = "params.yaml") -> dict[str, int]:
    """Every row's model and objective are registered, take the keywords the row gives them, and
    every value they get at every tuning point fits (:func:`srdiv.registry.check_args`, then the
    objective built with it); ``{row: the tuning points checked}``. What a model's constructor checks
    against the data's sizes, :func:`srdiv.train.tuning.run_job` checks before the first point trains.

    Run before any work starts (``srdiv check-rows`` before a Snakemake run's first job, and ``srdiv
    train``): a mistake is one :class:`InputError` naming the row, the key and the last params file that
    sets the row or a row it extends (``where``: the params files in merge order, or one name for them all).
    """
    import srdiv.models  # noqa: F401  (registers every model)
    import srdiv.objectives  # noqa: F401  (registers every objective)

    sources = [] if isinstance(where, (str, Path)) else _row_sources(where)
    checked: dict[str, int] = {}
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
        checked[row] = len(corners)
    return checked


def _row_sources(paths: Sequence[str | Path]) -> list[tuple[str, set]]:
    """Each params file with the rows it sets, last file first."""
    found = []
    for path in reversed(list(paths)):
        models = (read_yaml(path) or {}).get("models") or {}
        found.append((str(path), set(models) if isinstance(models, dict) else set()))
    return found

