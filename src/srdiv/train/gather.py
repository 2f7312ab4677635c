"""Collect every job's per-query metrics into one table for the report.

``results/<dataset>/metrics.parquet`` has the columns ``model, variant, fold,
qid, measure, value``: ``model`` is the row's ``variant_of`` (or the row name),
``variant`` its ``variant`` label (``""`` for main rows), as the report reads them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from srdiv.io import InputError, read_parquet
from srdiv.train.config import model_rows

COLUMNS = ["model", "variant", "fold", "qid", "measure", "value"]


def gather_metrics(models_dir: str | Path, params: dict) -> pd.DataFrame:
    """Metrics of ``<models_dir>/<Row>/fold<k>/metrics.parquet`` for every row of ``params['models']``."""
    models_dir = Path(models_dir)
    frames, labels = [], {}
    for row, entry in model_rows(params).items():
        label = (entry.get("variant_of", row), entry.get("variant", ""))
        if label in labels:
            raise ValueError(f"models {labels[label]} and {row} both report as model/variant {label}")
        labels[label] = row
        for path in sorted((models_dir / row).glob("fold*/metrics.parquet")):
            fold = int(path.parent.name.removeprefix("fold"))
            frames.append(read_parquet(path).assign(model=label[0], variant=label[1], fold=fold))
    if not frames:
        raise InputError(models_dir, "no <Row>/fold<k>/metrics.parquet for any row of params.yaml")
    return pd.concat(frames, ignore_index=True)[COLUMNS]
