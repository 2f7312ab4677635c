"""Collect every job's per-query metrics into one table for the report.

``results/<dataset>/metrics.parquet`` has the columns ``model, variant, fold,
qid, measure, value``: ``model`` is the row's ``variant_of`` (or the row name),
``variant`` its ``variant`` label (``""`` for main rows), as the report reads them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from srdiv.io import InputError, read_parquet
from srdiv.train.config import model_rows, run_rows

COLUMNS = ["model", "variant", "fold", "qid", "measure", "value"]


def gather_metrics(models_dir: str | Path, params: dict) -> pd.DataFrame:
    """Metrics of ``<models_dir>/<Row>/fold<k>/metrics.parquet`` for the rows and folds of ``params``.

    Rows are ``run_models`` (:func:`run_rows`); with a ``folds`` list every row must have every fold
    (a partial row would be averaged over fewer queries than the others), without one the folds found
    are read and rows without any are skipped.
    """
    models_dir = Path(models_dir)
    rows = model_rows(params)
    folds = params.get("folds")
    frames, labels = [], {}
    for row in run_rows(params):
        entry = rows[row]
        label = (entry.get("variant_of", row), entry.get("variant", ""))
        if label in labels:
            raise ValueError(f"models {labels[label]} and {row} both report as model/variant {label}")
        labels[label] = row
        if folds is None:
            paths = sorted((models_dir / row).glob("fold*/metrics.parquet"))
        else:
            paths = [models_dir / row / f"fold{int(k)}" / "metrics.parquet" for k in folds]
        for path in paths:
            fold = int(path.parent.name.removeprefix("fold"))
            frames.append(read_parquet(path).assign(model=label[0], variant=label[1], fold=fold))
    if not frames:
        raise InputError(models_dir, "no <Row>/fold<k>/metrics.parquet for any row of params.yaml")
    return pd.concat(frames, ignore_index=True)[COLUMNS]
