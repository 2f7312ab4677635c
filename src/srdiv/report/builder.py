"""``srdiv report``: every table, plot and the results README of one dataset."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

import srdiv.models  # noqa: F401  (registers every model: their mixing weights' meanings)
from srdiv.experiment import Dimension, in_folds, model_rows, run_rows
from srdiv.io import InputError, atomic_set, committed, first_misfit, read_parquet, read_tsv, write_text
from srdiv.report.gather import reference_runs
from srdiv.metrics.runs import RUN_FILE
from srdiv.provenance import git_commit, machine
from srdiv.report import plots
from srdiv.registry import MODELS
from srdiv.report.tables import IncompleteEvidence, Table, frame_markdown, per_position_table, results_table
from srdiv.train.records import check_job, check_run_file, read_curve, read_record

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
    alpha: float = 0.05
    holm: bool = False
    main_measures: list[str] = field(default_factory=lambda: list(MAIN_MEASURES))
    cutoff_measures: list[str] = field(default_factory=lambda: list(CUTOFF_MEASURES))
    ablations: dict[str, dict] = field(default_factory=dict)
    per_position: dict | None = None
    reference_runs: dict[str, str] = field(default_factory=dict)
    sweeps: dict[str, dict] = field(default_factory=dict)
    note: str = ""          # what sets this setting's data apart, under its main and cut-off tables

    @classmethod
    def from_params(cls, params: dict) -> "ReportConfig":
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


def build_tables(metrics: pd.DataFrame, params: dict) -> dict[str, Table]:
    """Every table, keyed by file stem (``main``, ``cutoffs``, ``ablation-<name>``, ``per-position``)."""
    cfg = ReportConfig.from_params(params)
    metrics = with_run_labels(metrics)
    specs = run_specs(params)
    main = [s for s in specs if not s.variant]
    tables = {
        "main": results_table(metrics, [s.label for s in main], [GROUP_TITLES.get(s.group, s.group) for s in main],
                              cfg.main_measures, "Performance of all approaches (test folds' union)",
                              cfg.reference, cfg.alpha, cfg.holm),
        "cutoffs": results_table(metrics, [s.label for s in main],
                                 [GROUP_TITLES.get(s.group, s.group) for s in main], cfg.cutoff_measures,
                                 "Performance at cut-offs 5 and 10", cfg.reference, cfg.alpha, cfg.holm),
    }
    if cfg.note:   # e.g. where the oracle study's aspects come from (config/oracle.yaml)
        for table in tables.values():
            table.note = f"{table.note}\n\n{cfg.note}".strip()
    labels = {s.key: s.label for s in specs}
    present = set(metrics["run"])
    published = [s.label for s in specs if s.group == "published" and s.label in present]
    for name, spec in cfg.ablations.items():
        rows = [run for run in (labels.get(k, k) for k in spec["runs"]) if run in present]
        if len(rows) < 2:  # a study that ran at most one of this table's rows: nothing to compare
            continue
        rows += published
        ref = labels.get(spec.get("reference"), spec.get("reference"))
        table = results_table(metrics, rows, [""] * len(rows), cfg.main_measures, spec.get("title", name), ref,
                              cfg.alpha, cfg.holm)
        if spec.get("note"):   # where rows differ in more than the one thing the table varies
            table.note = f"{table.note}\n\n{spec['note']}".strip()
        tables[f"ablation-{name}"] = table
    if cfg.per_position:
        model = labels.get(cfg.per_position["model"], cfg.per_position["model"])
        baseline = labels.get(cfg.per_position["baseline"], cfg.per_position["baseline"])
        if {model, baseline} <= set(metrics["run"]):
            tables["per-position"] = per_position_table(metrics, model, baseline, POSITION_MEASURES)
    return tables


def write_tables(tables: dict[str, Table], out_dir: Path) -> list[Path]:
    """Each table as ``<stem>.md``, ``<stem>.tex`` and ``<stem>.html``."""
    written = []
    for stem, table in tables.items():
        for ext, render in (("md", table.to_markdown), ("tex", table.to_latex), ("html", table.to_html)):
            path = out_dir / f"{stem}.{ext}"
            write_text(render(), path)
            written.append(path)
    return written


def params_hash(params_path: Path) -> str:
    """SHA-256 (first 12 hex digits) of the params file's bytes."""
    return hashlib.sha256(params_path.read_bytes()).hexdigest()[:12]


JOB_RECORDS = ("hparams.json", "timings.json", "rank.json")
"""The records of a trained and ranked job the report reads."""


def job_records(models_dir: Path | None, spec: RunSpec, folds: list[int] | None = None) -> list[dict[str, dict]]:
    """The records of each fold of a row (``<models_dir>/<key>/fold<k>/``), in fold order, checked: every
    record there and whole, of this row and fold (:func:`srdiv.train.records.check_job`), and, when the
    row has any, one job for each of ``folds`` (the folds the metrics hold): never a median over fewer."""
    if models_dir is None:
        return []
    found = {}
    for directory in (models_dir / spec.key).glob("fold*"):
        if directory.is_dir() and directory.name[4:].isdigit() and any((directory / n).exists() for n in JOB_RECORDS):
            missing = [n for n in JOB_RECORDS if not (directory / n).is_file()]
            if missing:
                raise InputError(directory / missing[0], "missing: the job's records are incomplete (train and rank "
                                                         "it again)")
            fold = int(directory.name[4:])
            check_job(directory, spec.key, fold)
            found[fold] = {name: read_record(directory / name) for name in JOB_RECORDS}
    lacking = sorted(set(folds or []) - set(found)) if found else []
    if lacking:
        raise InputError(models_dir / spec.key / f"fold{lacking[0]}", f"row {spec.label} has no job records for "
                                                                      f"fold {lacking[0]}, which the metrics hold")
    return [found[fold] for fold in sorted(found)]


def training_commits(models_dir: Path | None, specs: list[RunSpec]) -> list[str]:
    """README lines: the commit(s) each trained row's folds were trained at (``timings.json``)."""
    if models_dir is None:
        return []
    rows_at: dict[str, list[str]] = {}
    for spec in specs:
        commits = {job["timings.json"]["commit"] for job in job_records(models_dir, spec)}
        for commit in sorted(commits):
            rows_at.setdefault(commit, []).append(spec.label)
    return [f"- rows trained at commit `{commit}`: {', '.join(rows)}" for commit, rows in rows_at.items()]


def _device_label(timings: dict) -> str:
    """A job's training device as the performance table names it: with the tune points it trained at once
    and whether it was copied (``timings.json``)."""
    label = timings["device"]
    if timings.get("tune_workers", 1) > 1:
        label += f", {timings['tune_workers']} points at once"
    return label + (", copied" if "reused_from" in timings else "")


def performance_table(models_dir: Path | None, benchmarks_dir: Path | None, specs: list[RunSpec],
                      folds: list[int] | None = None) -> pd.DataFrame:
    """Median train seconds and ranking ms per query over folds, with Snakemake benchmark records.

    Reads ``<models_dir>/<key>/fold<k>/timings.json`` (``srdiv train``),
    ``rank.json`` (``srdiv train --rank`` or ``srdiv rank``), ``hparams.json`` (the chosen point's best and last epochs)
    and ``<benchmarks_dir>/train/<key>-fold<k>.tsv`` (Snakemake ``benchmark:`` files: wall
    seconds ``s``, peak memory ``max_rss`` in MB). "trained on" counts the folds per training device
    (``timings.json``): train seconds on a GPU and on a CPU are not comparable; "copied" marks a study's
    job that copied the main run's identical model (``srdiv train --reuse``: train seconds are the main
    run's, job wall seconds the copy's), "N points at once" a job that trained N tune points side by side
    (its train seconds are wall seconds, not the sum over its processes). A job stopped and
    resumed has train seconds over all its sittings (``timings.json``) but job wall seconds of its
    last sitting only (the benchmark file). "best at last epoch" counts the folds whose chosen point
    was best at the last epoch its row allows: training that may not have converged. "folds" counts the
    jobs' records, which must cover ``folds`` (:func:`job_records`).
    """
    rows = []
    for spec in specs:
        record: dict = {"Method": spec.label}
        if models_dir is not None:
            jobs = job_records(models_dir, spec, folds)
            timings = [{**job["rank.json"], **job["timings.json"]} for job in jobs]   # the training device
            timings = [{**t, "device": _device_label(t)} for t in timings]
            if timings:
                frame = pd.DataFrame(timings)
                devices = sorted(frame["device"].value_counts().items())
                record.update({"folds": len(frame),
                               "trained on": ", ".join(f"{device} ({n})" for device, n in devices),
                               "train s (median)": frame["train_seconds"].median(),
                               "rank ms/query (median)": frame["rank_ms_per_query"].median()})
            ends = [_best_at_last_epoch(job["hparams.json"]) for job in jobs]
            ends = [e for e in ends if e is not None]
            if ends:
                record["best at last epoch"] = f"{sum(ends)}/{len(ends)}"
        if benchmarks_dir is not None:
            bench = [read_tsv(p, ["s", "max_rss"], sep="\t") for p in sorted((benchmarks_dir / "train").glob(f"{spec.key}-fold*.tsv"))]
            if bench:
                frame = pd.concat(bench)
                record.update({"job wall s (median)": frame["s"].median(), "peak RSS MB (max)": frame["max_rss"].max()})
        if len(record) > 1:
            rows.append(record)
    return pd.DataFrame(rows)


def _best_at_last_epoch(hparams: dict, path: Path | str = "hparams.json") -> bool | None:
    """Whether the chosen point's best validation epoch was the last its row allows (None: nothing trained)."""
    try:
        chosen = next((g for g in hparams["grid"] if g["point"] == hparams["chosen"]), None)
        if chosen is None or not chosen["epochs"]:
            return None
        return chosen["best_epoch"] >= hparams["spec"]["train"]["epochs"]
    except (KeyError, TypeError) as err:
        raise InputError(path, f"not an hparams.json of srdiv train (no {err})") from None


@dataclass
class TuningInfo:
    """What the tuning note says beside the table (:func:`tuning_table`): each row's validation measure,
    each search budget with its rows, what a mixing weight at an end makes of its row, and the rows
    with a learning-rate or size edge on three folds or more."""

    measures: dict[str, str] = field(default_factory=dict)
    budgets: dict[str, list[str]] = field(default_factory=dict)
    meanings: dict[str, list[str]] = field(default_factory=dict)
    flagged: list[str] = field(default_factory=list)


EDGE_FOLDS = 3
"""A row with a learning-rate or size edge on this many folds or more is flagged (search it again, wider)."""


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
            rows.append({"Method": spec.label, "parameter": name, "range": dim.describe(),
                         "folds": ", ".join(str(fold) for fold, _, _ in trials),
                         "chosen": ", ".join(f"{_short(v)}*" if e else _short(v) for v, e in zip(chosen, edges)),
                         "trials (pruned)": ", ".join(_trial_counts(h) for h in jobs),
                         "at an edge": f"{sum(edges)}/{len(chosen)}"})
            if sum(edges) >= EDGE_FOLDS and _scale_parameter(name, dim):
                info.flagged.append(f"{spec.label} ({name})")
            meaning = _weight_meaning(jobs[0], name)
            if meaning:
                info.meanings.setdefault(meaning, []).append(spec.label)
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
    values = sorted(values, key=None if numeric else str)
    return Dimension(values=tuple(values)) if len(values) > 1 else None


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


def _weight_meaning(hparams: dict, name: str) -> str:
    """``"lam = 0: ...; lam = 1: ..."`` for a mixing weight of the row's model that declares its ends."""
    head, _, leaf = name.rpartition(".")
    model = ((hparams.get("spec") or {}).get("model") or {}).get("name")
    if head != "model.args" or model not in MODELS.names():
        return ""
    ends = {}
    for klass in reversed(MODELS.get(model).__mro__):
        ends.update(getattr(klass, "WEIGHT_ENDS", {}))
    if leaf not in ends:
        return ""
    return f"{leaf} = 0: {ends[leaf][0]}; {leaf} = 1: {ends[leaf][1]}"


def _budget(hparams: dict) -> str:
    """One job's search budget in words ('' for a record without a search)."""
    search = hparams.get("search")
    if not search or not search.get("space"):
        return ""
    if search["sampler"] == "grid":
        return "every point of the row's lists (a grid)"
    budget = (hparams.get("spec") or {}).get("search") or {}
    epochs = f"{search['epochs']} epoch{'s' if search['epochs'] != 1 else ''}"
    return (f"{budget.get('trials', search['trials'])} TPE trials, each of at most {epochs}, "
            f"{search['pruner']} pruning, batches of {search['batch']}")


def convergence_note(perf: pd.DataFrame) -> str:
    """One line: how many trained (row, fold) pairs were best at their last allowed epoch."""
    if "best at last epoch" not in perf:
        return ""
    counts = perf["best at last epoch"].dropna().str.split("/", expand=True).astype(int)
    last, total = int(counts[0].sum()), int(counts[1].sum())
    return (f"Trained (row, fold) pairs whose chosen point was best at the last epoch allowed: {last} of {total} "
            f"({last / total:.0%}); the others stopped early or peaked before their last epoch.")


def unbenchmarked_note(perf: pd.DataFrame) -> str:
    """One line where a row with timings has no Snakemake benchmark record (empty job wall s)."""
    if "job wall s (median)" not in perf or "folds" not in perf:
        return ""
    if not perf.loc[perf["folds"].notna(), "job wall s (median)"].isna().any():
        return ""
    return ("An empty job wall s and peak RSS: the row's trainings have no Snakemake benchmark record "
            "(trained outside this workflow's rules).")


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
    for meaning, labels in info.meanings.items():
        lines.append(f"A mixing weight at an end is an answer, not a range too narrow ({', '.join(labels)}): {meaning}.")
    flagged = ", ".join(info.flagged) or "none"
    lines.append(f"Rows choosing an edge of a learning-rate or size range on {EDGE_FOLDS} folds or more (search them "
                 f"again with a wider range): {flagged}.")
    return "\n\n".join(lines)


REPORT_SUFFIXES = {".md", ".tex", ".html", ".png", ".svg"}
"""Kinds of file the report writes into ``tables/`` and ``plots/``."""

README_TITLE = b"# Results: "
"""How the results README begins."""


def _earlier_report(path: Path) -> bool:
    """Whether ``path`` (``README.md``, ``tables/``, ``plots/``), which no manifest records, is a report's
    of an srdiv that kept none (a fresh clone's committed one): a README that begins as the report's and
    that git holds as it is, a directory of report files only (git's hold on each is checked by
    :func:`srdiv.io.claim`)."""
    if path.is_dir():
        return all(p.is_file() and p.suffix in REPORT_SUFFIXES for p in path.iterdir())
    with open(path, "rb") as fh:
        return path.name == "README.md" and fh.read(len(README_TITLE)) == README_TITLE and committed(path)


def build_report(metrics_path: Path, params: dict, params_paths: list[Path], out_dir: Path,
                 models_dir: Path | None = None, benchmarks_dir: Path | None = None,
                 metric_at_k: pd.DataFrame | None = None) -> list[Path]:
    """Write tables (``tables/``), plots (``plots/``) and ``README.md`` under ``out_dir``.

    ``params_paths``: the params file and its overlays, merged in order into ``params``; the README
    names each with its hash. The three are made beside their places and replace the earlier
    report's together (:func:`srdiv.io.atomic_set`; the README leaves first and arrives last), so
    an error or an interrupt leaves the earlier report as it was, and a README always lies beside
    the tables it names. Other files of ``out_dir`` (its ``metrics.parquet``) are not touched;
    ``tables/`` and ``plots/`` are the report's own, and refused when they hold other files.
    """
    out_dir = Path(out_dir)
    for folder in (out_dir / "tables", out_dir / "plots"):
        others = sorted(p.name for p in folder.iterdir() if p.suffix not in REPORT_SUFFIXES or not p.is_file()) \
            if folder.is_dir() else []
        if others:
            raise InputError(folder, f"holds files the report does not write ({', '.join(others[:3])}); "
                                     f"move them elsewhere, the report replaces this directory")
    with atomic_set([out_dir / "README.md", out_dir / "tables", out_dir / "plots"],
                    legacy=_earlier_report) as (readme, table_dir, plot_dir):
        _write_report(metrics_path, params, params_paths, readme, table_dir, plot_dir, out_dir.name, models_dir,
                      benchmarks_dir, metric_at_k)
    return sorted([out_dir / "README.md", *(out_dir / "tables").iterdir(), *(out_dir / "plots").iterdir()])


def _write_report(metrics_path: Path, params: dict, params_paths: list[Path], readme: Path, table_dir: Path,
                  plot_dir: Path, name: str, models_dir: Path | None, benchmarks_dir: Path | None,
                  metric_at_k: pd.DataFrame | None) -> None:
    """The report's files at ``readme``, in ``table_dir`` and ``plot_dir`` (``name``: the results directory's)."""
    metrics = read_parquet(metrics_path)
    missing = {"model", "variant", "fold", "qid", "measure", "value"} - set(metrics.columns)
    if missing:
        raise InputError(metrics_path, f"metrics table lacks columns {sorted(missing)}")
    for col in ("model", "variant", "qid", "measure"):
        if not (pd.api.types.is_string_dtype(metrics[col]) or pd.api.types.is_object_dtype(metrics[col])) or \
                not metrics[col].map(lambda v: isinstance(v, str)).all():
            raise InputError(metrics_path, f"column '{col}' is not text ({metrics[col].dtype})")
    if first_misfit(metrics["fold"].to_numpy(), integer=True, low=1) is not None:
        raise InputError(metrics_path, "column 'fold' does not hold whole numbers >= 1")
    bad = ~np.isfinite(pd.to_numeric(metrics["value"], errors="coerce").to_numpy(np.float64))
    twice = metrics.duplicated(["model", "variant", "qid", "measure"]).to_numpy()
    for rows, what in ((bad, "is not a finite number"), (twice, "appears twice")):
        if rows.any():
            r = with_run_labels(metrics[rows]).iloc[0]
            raise InputError(metrics_path, f"row '{r['run']}': {r['measure']} of query '{r['qid']}' {what} "
                                           f"({int(rows.sum())} such values)")
    cfg = ReportConfig.from_params(params)
    try:
        tables = build_tables(metrics, params)
    except IncompleteEvidence as err:
        raise InputError(metrics_path, str(err)) from None
    written = write_tables(tables, table_dir)

    labelled = with_run_labels(metrics)
    specs = run_specs(params)
    labels = {s.key: s.label for s in specs}
    main_runs = [s.label for s in specs if not s.variant and s.label in set(labelled["run"])]
    plot_dir.mkdir(parents=True)
    reference = cfg.reference if cfg.reference in main_runs else (main_runs[0] if main_runs else None)
    groups = {s.label: GROUP_TITLES.get(s.group, s.group) for s in specs}
    if reference is not None:
        written += plots.per_query_differences(labelled, main_runs, reference, "alpha_nDCG@20",
                                               plot_dir / "per-query-differences", groups)
    panels = {name: {**spec, "points": {labels[k]: x for k, x in spec["runs"].items() if k in labels}}
              for name, spec in cfg.sweeps.items()}
    panels = {name: spec for name, spec in panels.items() if len(set(spec["points"]) & set(labelled["run"])) > 1}
    if panels:
        written += plots.sweeps(labelled, panels, "alpha_nDCG@20", plot_dir / "sweeps")
    if metric_at_k is not None and not metric_at_k.empty:
        written += plots.metric_at_k(metric_at_k, "α-nDCG@k", plot_dir / "alpha-ndcg-at-k", groups, reference)
    if models_dir is not None:
        curves = []
        for spec in specs:
            for path in sorted((models_dir / spec.key).glob("fold*/curve.parquet")):
                curves.append(read_curve(path).assign(run=spec.label, fold=path.parent.name))
        if curves:
            written += plots.learning_curves(pd.concat(curves), plot_dir / "learning-curves")

    perf = performance_table(models_dir, benchmarks_dir, specs, sorted(int(f) for f in metrics["fold"].unique()))
    notes = [note for note in (convergence_note(perf), unbenchmarked_note(perf)) if note]
    if "best at last epoch" in perf:
        perf["best at last epoch"] = perf["best at last epoch"].fillna("")   # rows with nothing to train
    perf_md = frame_markdown(perf, floatfmt=".1f") if not perf.empty else "No timings recorded."
    perf_md = "\n\n".join([perf_md, *notes])
    write_text(perf_md + "\n", table_dir / "performance.md")
    tuning, tuning_info = tuning_table(models_dir, specs)
    tuning_md = (frame_markdown(tuning) + "\n\n" + tuning_note(tuning_info)) if not tuning.empty else \
        "No tuning grids recorded."
    write_text(tuning_md + "\n", table_dir / "tuning.md")

    n_queries = metrics["qid"].nunique()
    lines = [
        f"{README_TITLE.decode()}{name}", "",
        "Produced by `srdiv report` from the per-query metrics in `metrics.parquet`",
        "(columns model, variant, fold, qid, measure, value; official metrics, TREC ndeval definitions).",
        "Each query is tested once, in the test fold of its cross-validation trial; tables report the mean",
        f"over those {n_queries} queries.", "",
        *[f"- params file `{Path(p).as_posix()}`, hash `{params_hash(Path(p))}`" for p in params_paths],
        f"- report made at commit `{git_commit()}`",
        *training_commits(models_dir, specs),
        f"- date (UTC): {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M')}",
        f"- machine: {machine()}", "",
        "## Tables", "",
        *[f"- [{stem}](tables/{stem}.md) ([LaTeX](tables/{stem}.tex), [HTML](tables/{stem}.html))" for stem in tables],
        "- [performance](tables/performance.md)", "- [tuning](tables/tuning.md)", "",
        tables["main"].to_markdown(), "",
        "## Performance", "", perf_md, "",
        "## Tuning", "", tuning_md, "",
        "## Plots", "",
        *[f"- [{p.stem}](plots/{p.name})" for p in written if p.suffix == ".png"], "",
    ]
    write_text("\n".join(lines), readme)


"""Name of the test-queries TREC run the trainer writes in each ``<model>/fold<k>/`` directory."""


def metric_at_k_from_runs(collection: Path, models_dir: Path, params: dict, max_k: int = 20,
                          family: str = "alpha_nDCG") -> pd.DataFrame:
    """Mean ``family@k`` for k = 1..max_k per main run, from the runs of all test folds.

    A reference run is scored on the queries of the run's folds (``params['folds']``), as in the tables.
    """
    from srdiv.collection.schema import load_collection
    from srdiv.metrics import evaluate_run, read_run

    coll = load_collection(collection)
    qrels, folds = coll.qrels, in_folds(coll.folds, params.get("folds"))
    measures = [f"{family}@{k}" for k in range(1, max_k + 1)]
    rows = []
    for spec in run_specs(params):
        files = [spec.run_file] if spec.run_file else sorted((models_dir / spec.key).glob(f"fold*/{RUN_FILE}"))
        if spec.variant or not files:
            continue
        for f in files if not spec.run_file else ():     # each job's run is the one its rank.json records
            if (f.parent / "rank.json").is_file():
                check_run_file(f.parent, read_record(f.parent / "rank.json"))
        run = pd.concat([read_run(f) for f in files])
        tested = set(folds["qid"]) if spec.run_file else set(run["qid"])
        per_query = evaluate_run(run, qrels[qrels["qid"].isin(tested)], measures)
        means = per_query.groupby("measure", sort=False)["value"].mean()
        rows += [{"run": spec.label, "k": k, "value": means[f"{family}@{k}"]} for k in range(1, max_k + 1)]
    return pd.DataFrame(rows, columns=["run", "k", "value"])
