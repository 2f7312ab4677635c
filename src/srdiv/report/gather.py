"""Collect every job's per-query metrics into one table for the report.

``results/<dataset>/metrics.parquet`` has the columns ``model, variant, fold,
qid, measure, value``: ``model`` is the row's ``variant_of`` (or the row name),
``variant`` its ``variant`` label (``""`` for main rows), as the report reads them.
Runs named in ``report.reference_runs`` (TREC run files a user adds, e.g. runs that authors
released with their papers) join as rows of their own, each query in the fold that tests it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from srdiv.experiment import in_folds, model_rows, run_rows
from srdiv.io import InputError, check_keys, first_misfit, read_parquet
from srdiv.params import REFERENCE_NAME

COLUMNS = ["model", "variant", "fold", "qid", "measure", "value"]


def read_metrics(path: str | Path) -> pd.DataFrame:
    """One ``srdiv evaluate`` output (``qid, measure, value``), checked: text ``qid`` and ``measure``,
    every value a finite number, each (run,) query and measure once, at least one row; else one
    :class:`InputError` naming ``path``."""
    values = read_parquet(path)
    missing = [c for c in ("qid", "measure", "value") if c not in values.columns]
    if missing:
        raise InputError(path, f"metrics table lacks columns {missing} (an 'srdiv evaluate' output has qid, "
                               "measure, value)")
    if values.empty:
        raise InputError(path, "metrics table has no rows")
    for col in ("qid", "measure"):
        if not (pd.api.types.is_string_dtype(values[col]) or pd.api.types.is_object_dtype(values[col])):
            raise InputError(path, f"column '{col}' is not text ({values[col].dtype})")
    bad = first_misfit(values["value"].to_numpy(), integer=False)
    if bad is not None or pd.api.types.is_bool_dtype(values["value"]):
        value = values["value"].iloc[bad or 0]
        value = value.item() if hasattr(value, "item") else value     # nan, not np.float64(nan)
        raise InputError(path, f"value {value!r} in row {(bad or 0) + 1} is not a finite number")
    check_keys(path, values, [c for c in ("run", "qid", "measure") if c in values.columns], "metrics table")
    return values.assign(value=pd.to_numeric(values["value"]).astype("float64"))


def reference_runs(params: dict) -> dict[str, Path]:
    """``report.reference_runs``: row name -> run file (TREC run or Parquet run table).

    A name is one word of letters, digits and ``._+-`` (it names a directory) that is not
    also a row of ``models``.
    """
    runs = (params.get("report") or {}).get("reference_runs") or {}
    if not isinstance(runs, dict):
        raise ValueError(f"report.reference_runs must map row names to run files, got {runs!r}")
    rows = model_rows(params)
    for name, path in runs.items():
        if not isinstance(name, str) or not REFERENCE_NAME.fullmatch(name):
            raise ValueError(f"report.reference_runs: name {name!r} must be one word of letters, digits and ._+-")
        if name in rows:
            raise ValueError(f"report.reference_runs: {name!r} is also a row of models; give the run another name")
        if not isinstance(path, str) or not path:
            raise ValueError(f"report.reference_runs.{name}: expected a run file path, got {path!r}")
    return {name: Path(path) for name, path in runs.items()}


def reference_metrics(metrics: dict[str, Path], folds: pd.DataFrame, fold_ids: list[int] | None) -> pd.DataFrame:
    """Per-query metrics of whole-collection runs (``srdiv evaluate`` output) as rows of the tables.

    ``folds``: the collection's ``qid, fold``. Each query is reported in its test fold, and only
    the queries of ``fold_ids`` (all folds with None) are kept, as the trained rows are.
    """
    folds = in_folds(folds, fold_ids)
    frames = []
    for name, path in metrics.items():
        values = read_metrics(path)
        frames.append(values.merge(folds[["qid", "fold"]], on="qid").assign(model=name, variant=""))
    return pd.concat(frames, ignore_index=True)[COLUMNS] if frames else pd.DataFrame(columns=COLUMNS)


def gather_metrics(models_dir: str | Path, params: dict,
                   check: Callable[[Path, str, int], object] | None = None) -> pd.DataFrame:
    """Metrics of ``<models_dir>/<Row>/fold<k>/metrics.parquet`` for the rows and folds of ``params``.

    Rows are ``run_models`` (:func:`run_rows`); with a ``folds`` list every row must have every fold
    (a partial row would be averaged over fewer queries than the others), without one the folds found
    are read and rows without any are skipped. ``check(directory, row, fold)`` holds each job
    directory's records to its row and fold before its metrics are read.
    """
    models_dir = Path(models_dir)
    rows = model_rows(params)
    folds = params.get("folds")
    frames, labels = [], dict[tuple[str, str], str]()
    for row in run_rows(params):
        entry = rows[row]
        label = (entry.get("variant_of", row), entry.get("variant", ""))
        if label in labels:
            raise InputError("params", f"models {labels[label]} and {row} both report as model/variant {label}")
        labels[label] = row
        if folds is None:
            paths = sorted((models_dir / row).glob("fold*/metrics.parquet"))
        else:
            paths = [models_dir / row / f"fold{int(k)}" / "metrics.parquet" for k in folds]
        for path in paths:
            fold = int(path.parent.name.removeprefix("fold"))
            if check is not None:
                check(path.parent, row, fold)
            frames.append(read_metrics(path).assign(model=label[0], variant=label[1], fold=fold))
    if not frames:
        raise InputError(models_dir, "no <Row>/fold<k>/metrics.parquet for any row of params.yaml")
    return pd.concat(frames, ignore_index=True)[COLUMNS]
