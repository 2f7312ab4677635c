"""The tuning table: each row's search, the folds' choices, the edges they hit, and the note beside it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

import srdiv.models  # noqa: F401  (registers every model: what their arguments' ends mean)
from srdiv.experiment import Dimension
from srdiv.registry import MODELS
from srdiv.report.performance import job_records
from srdiv.report.specs import RunSpec


@dataclass
class TuningInfo:
    """What the tuning note says beside the table (:func:`tuning_table`): each row's validation measure,
    each search budget with its rows, what a mixing weight or a size at an end of what its model allows
    makes of its row (``(what is at an end, meaning)``: its rows), and the rows with a learning-rate or
    size edge on three folds or more."""

    measures: dict[str, str] = field(default_factory=dict)
    budgets: dict[str, list[str]] = field(default_factory=dict)
    meanings: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    flagged: list[str] = field(default_factory=list)


EDGE_FOLDS = 3
"""A row with a learning-rate or size edge on this many folds or more is flagged (search it again, wider),
unless the edge is an end of what the row's model allows (``ARG_ENDS``: an answer, no wider range exists)."""


def tuning_table(models_dir: Path | None, specs: list[RunSpec]) -> tuple[pd.DataFrame, TuningInfo]:
    """The search of each row, one table row per (row, tuned parameter): its range, the folds' choices
    in fold order (an edge of the range marked ``*``: :meth:`srdiv.experiment.Dimension.at_edge`),
    the trials run and pruned per fold, and how many folds chose an edge; with :class:`TuningInfo`.
    Reads ``<models_dir>/<key>/fold<k>/hparams.json``."""
    rows, info = [], TuningInfo()
    for spec in specs:
        jobs = [job["hparams.json"] for job in job_records(models_dir, spec)]
        trials = [_tuning_record(hparams) for hparams in jobs]
        for name in dict.fromkeys(name for _, chosen, _ in trials for name in chosen):
            dim = _dimension(jobs, name)
            if dim is None:
                continue
            chosen = [c.get(name) for _, c, _ in trials]
            edges = [dim.at_edge(v) for v in chosen]
            ends = _model_ends(jobs[0], name)
            rows.append({"Method": spec.label, "parameter": name, "range": dim.describe(),
                         "folds": ", ".join(str(fold) for fold, _, _ in trials),
                         "chosen": ", ".join(f"{_short(v)}*" if e else _short(v) for v, e in zip(chosen, edges)),
                         "trials (pruned)": ", ".join(_trial_counts(h) for h in jobs),
                         "at an edge": f"{sum(edges)}/{len(chosen)}"})
            scale = _scale_parameter(name, dim)
            widenable = sum(e and v not in ends for v, e in zip(chosen, edges))
            if widenable >= EDGE_FOLDS and scale:
                info.flagged.append(f"{spec.label} ({name})")
            if ends:
                at_end = "A size at the end of what its model allows" if scale else "A mixing weight at an end"
                meaning = "; ".join(f"{name.rpartition('.')[2]} = {v}: {text}" for v, text in ends.items())
                info.meanings.setdefault((at_end, meaning), []).append(spec.label)
        if trials:
            info.measures[spec.label] = ", ".join(dict.fromkeys(hparams["valid_measure"] for hparams in jobs))
            for budget in dict.fromkeys(_budget(h) for h in jobs if _budget(h)):
                info.budgets.setdefault(budget, []).append(spec.label)
    columns = ["Method", "parameter", "range", "folds", "chosen", "trials (pruned)", "at an edge"]
    return pd.DataFrame(rows, columns=columns), info


def _tuning_record(hparams: dict) -> tuple[int, dict, list[dict]]:
    """``(fold, chosen point, every trial's point)`` of a checked ``hparams.json``."""
    return hparams["fold"], hparams["chosen"], [g["point"] for g in hparams["grid"]]


def _dimension(jobs: list[dict], name: str):
    """The range of parameter ``name`` as the jobs' row declares it (``spec.tune``); for a record without
    it, the values its trials took as a list. None when fewer than two values were possible."""
    declared = next((h["spec"]["tune"][name] for h in jobs if name in (h.get("spec") or {}).get("tune", {})), None)
    if declared is not None:
        dim = Dimension.parse(declared, name)
        return dim if dim.numeric or len(dim.values) > 1 else None
    values = {point[name] for h in jobs for point in (g["point"] for g in h["grid"]) if name in point}
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return Dimension(values=tuple(sorted(values, key=None if numeric else str))) if len(values) > 1 else None


def _short(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _trial_counts(hparams: dict) -> str:
    """``run (pruned)`` of one job's search."""
    pruned = sum(g.get("state") == "pruned" for g in hparams["grid"])
    return f"{len(hparams['grid'])} ({pruned})"


def _scale_parameter(name: str, dim) -> bool:
    """A learning rate, weight decay or size (an integer), whose best value may lie beyond its range (not a
    mixing weight, whose ends are answers)."""
    leaf = name.rpartition(".")[2]
    return leaf in ("lr", "weight_decay") or dim.integer or (
        bool(dim.values) and all(isinstance(v, int) and not isinstance(v, bool) for v in dim.values))


def _model_ends(hparams: dict, name: str) -> dict:
    """``{value: what it makes of the row}`` for the ends of its allowed interval that the row's model
    declares for argument ``name`` (``ARG_ENDS``, following the class chain); empty for anything else."""
    head, _, leaf = name.rpartition(".")
    model = ((hparams.get("spec") or {}).get("model") or {}).get("name")
    if head != "model.args" or model not in MODELS.names():
        return {}
    ends: dict[str, dict] = {}
    for klass in reversed(MODELS.get(model).__mro__):
        ends.update(getattr(klass, "ARG_ENDS", {}))
    return ends.get(leaf, {})


def _budget(hparams: dict) -> str:
    """One job's search budget in words ('' for a record without a search)."""
    search = hparams.get("search")
    if not search or not search.get("space"):
        return ""
    if search["sampler"] == "grid":
        return "every point of the row's lists (a grid)"
    spec = hparams.get("spec") or {}
    budget = spec.get("search") or {}
    epochs = f"{search['epochs']} epoch{'s' if search['epochs'] != 1 else ''}"
    share = ((spec.get("objective") or {}).get("args") or {}).get("context_fraction", 1.0)
    if share < 1.0:   # srdiv.objectives.list_pairwise: an epoch visits a share of the contexts
        epochs += f" of {share:g} of the contexts each"
    return (f"{budget.get('trials', search['trials'])} TPE trials, each of at most {epochs}, "
            f"{search['pruner']} pruning, batches of {search['batch']}")


def tuning_note(info: TuningInfo) -> str:
    """What the tuning table shows: the validation measure of its rows (one name when all rows share it,
    else each measure with its rows), the search budgets, the meaning of mixing weights at their ends,
    and the rows flagged for an edge (:class:`TuningInfo`)."""
    rows: dict[str, list[str]] = {}
    for label, measure in info.measures.items():
        rows.setdefault(measure, []).append(label)
    named = next(iter(rows)) if len(rows) == 1 else "; ".join(f"{m}: {', '.join(labels)}" for m, labels in rows.items())
    budgets = "; ".join(f"{budget} ({', '.join(labels)})" for budget, labels in info.budgets.items())
    lines = [f"Each fold searched its row's range on its own validation queries ({named}); \"chosen\" lists "
             "the folds' values in the order of \"folds\", a value at an edge of its range marked * (the outer "
             "tenth of a numeric range, of its logarithm for a log range; the first or last value of a list). "
             "\"Trials (pruned)\": the trials each fold ran, and how many of them were stopped early for a "
             "validation score below the earlier trials'."]
    if budgets:
        lines.append(f"Search budget: {budgets}.")
    for (at_end, meaning), labels in info.meanings.items():
        lines.append(f"{at_end} is an answer, not a range too narrow ({', '.join(labels)}): {meaning}.")
    flagged = ", ".join(info.flagged) or "none"
    lines.append(f"Rows choosing an edge of a learning-rate or size range on {EDGE_FOLDS} folds or more (search them "
                 f"again with a wider range): {flagged}.")
    return "\n\n".join(lines)
