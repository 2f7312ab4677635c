"""The rows of a report: ``params.yaml``'s model entries and reference runs, and its ``report`` section."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from srdiv.experiment import model_rows, run_rows
from srdiv.metrics.names import SIGNIFICANCE
from srdiv.report.gather import reference_runs

GROUP_TITLES = {
    "initial": "Initial ranking",
    "reference": "Reference orders (no learning)",
    "unsupervised": "Unsupervised",
    "implicit": "Supervised implicit",
    "explicit": "Supervised explicit",
    "published": "Reference runs (report.reference_runs)",
}
MAIN_MEASURES = ["ERR_IA@20", "alpha_nDCG@20", "NRBP", "P_IA@20", "StRecall@20"]
CUTOFF_MEASURES = ["ERR_IA@5", "ERR_IA@10", "alpha_nDCG@5", "alpha_nDCG@10", "StRecall@5", "StRecall@10"]
POSITION_MEASURES = ["ERR_IA@5", "ERR_IA@10", "ERR_IA@20", "alpha_nDCG@5", "alpha_nDCG@10", "alpha_nDCG@20"]


@dataclass
class RunSpec:
    """One row of the tables: a ``params.yaml`` model entry, or a run file of ``report.reference_runs``."""

    key: str
    model: str
    variant: str
    group: str
    run_file: Path | None = None

    @property
    def label(self) -> str:
        return self.model if not self.variant else f"{self.model} ({self.variant})"


@dataclass
class ReportConfig:
    """The ``report`` section of params.yaml, with defaults."""

    reference: str | None = None
    alpha: float = SIGNIFICANCE      # params.yaml's key: the significance level of the tables' markers
    holm: bool = False
    main_measures: list[str] = field(default_factory=lambda: list(MAIN_MEASURES))
    cutoff_measures: list[str] = field(default_factory=lambda: list(CUTOFF_MEASURES))
    ablations: dict[str, dict] = field(default_factory=dict)
    per_position: dict | None = None
    reference_runs: dict[str, str] = field(default_factory=dict)
    sweeps: dict[str, dict] = field(default_factory=dict)
    note: str = ""          # what sets this setting's data apart, under its main and cut-off tables

    @classmethod
    def from_params(cls, params: dict) -> ReportConfig:
        section = dict(params.get("report") or {})
        return cls(**section)


def run_specs(params: dict) -> list[RunSpec]:
    """The rows of ``run_models`` in params order, grouped as the papers group methods, then the reference runs."""
    specs = []
    rows = model_rows(params)
    for key in run_rows(params):
        entry = rows[key]
        model = entry.get("variant_of", key)
        specs.append(RunSpec(key, model, entry.get("variant", ""), entry.get("group", "")))
    specs += [RunSpec(name, name, "", "published", path) for name, path in reference_runs(params).items()]
    order = list(GROUP_TITLES)
    return sorted(specs, key=lambda s: order.index(s.group) if s.group in order else len(order))


def with_run_labels(metrics: pd.DataFrame) -> pd.DataFrame:
    """Add the ``run`` label column (``model`` or ``model (variant)``) to a metrics frame."""
    run = metrics["model"].where(metrics["variant"].fillna("") == "",
                                 metrics["model"] + " (" + metrics["variant"].fillna("") + ")")
    return metrics.assign(run=run)
