"""``srdiv report``: every table, plot and the results README of one dataset."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from srdiv.experiment import in_folds
from srdiv.io import InputError, atomic_set, committed, first_misfit, read_parquet, write_text
from srdiv.metrics.names import HEADLINE
from srdiv.metrics.runs import RUN_FILE
from srdiv.provenance import git_commit, machine
from srdiv.report import plots
from srdiv.report.performance import convergence_note, performance_table, training_commits, unbenchmarked_note
from srdiv.report.specs import GROUP_TITLES, POSITION_MEASURES, ReportConfig, RunSpec, run_specs, with_run_labels
from srdiv.report.tables import IncompleteEvidence, Table, frame_markdown, per_position_table, results_table
from srdiv.report.tuning import tuning_note, tuning_table
from srdiv.train.records import check_run_file, read_curve, read_record


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
        reference = spec.get("reference")
        ref = labels.get(reference, reference) if reference is not None else None
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
    metrics = read_metrics(metrics_path)
    try:
        tables = build_tables(metrics, params)
    except IncompleteEvidence as err:
        raise InputError(metrics_path, str(err)) from None
    written = write_tables(tables, table_dir)
    specs = run_specs(params)
    written += write_plots(metrics, params, specs, plot_dir, models_dir, metric_at_k)
    perf_md, tuning_md = write_job_tables(table_dir, models_dir, benchmarks_dir, specs,
                                          sorted(int(f) for f in metrics["fold"].unique()))
    lines = [
        *readme_head(name, metrics["qid"].nunique(), params_paths, models_dir, specs),
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


def read_metrics(metrics_path: Path) -> pd.DataFrame:
    """The per-query metrics table, checked: its columns, text where text belongs, whole folds >= 1, finite
    values, and one value per (model, variant, qid, measure); else one :class:`InputError`."""
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
    return metrics


def write_plots(metrics: pd.DataFrame, params: dict, specs: list[RunSpec], plot_dir: Path,
                models_dir: Path | None, metric_at_k: pd.DataFrame | None) -> list[Path]:
    """Every plot into the new directory ``plot_dir``: per-query differences to the reference run, the
    sweeps with two runs or more, alpha-nDCG@k, the learning curves."""
    cfg = ReportConfig.from_params(params)
    labelled = with_run_labels(metrics)
    labels = {s.key: s.label for s in specs}
    main_runs = [s.label for s in specs if not s.variant and s.label in set(labelled["run"])]
    plot_dir.mkdir(parents=True)
    reference = cfg.reference if cfg.reference in main_runs else (main_runs[0] if main_runs else None)
    groups = {s.label: GROUP_TITLES.get(s.group, s.group) for s in specs}
    written = []
    if reference is not None:
        written += plots.per_query_differences(labelled, main_runs, reference, HEADLINE,
                                               plot_dir / "per-query-differences", groups)
    panels = {name: {**spec, "points": {labels[k]: x for k, x in spec["runs"].items() if k in labels}}
              for name, spec in cfg.sweeps.items()}
    panels = {name: spec for name, spec in panels.items() if len(set(spec["points"]) & set(labelled["run"])) > 1}
    if panels:
        written += plots.sweeps(labelled, panels, HEADLINE, plot_dir / "sweeps")
    if metric_at_k is not None and not metric_at_k.empty:
        written += plots.metric_at_k(metric_at_k, "α-nDCG@k", plot_dir / "alpha-ndcg-at-k", groups, reference)
    if models_dir is not None:
        curves = []
        for spec in specs:
            for path in sorted((models_dir / spec.key).glob("fold*/curve.parquet")):
                curves.append(read_curve(path).assign(run=spec.label, fold=path.parent.name))
        if curves:
            written += plots.learning_curves(pd.concat(curves), plot_dir / "learning-curves")
    return written


def write_job_tables(table_dir: Path, models_dir: Path | None, benchmarks_dir: Path | None, specs: list[RunSpec],
                     folds: list[int]) -> tuple[str, str]:
    """``performance.md`` and ``tuning.md`` into ``table_dir``, from the jobs' records; their Markdown."""
    perf = performance_table(models_dir, benchmarks_dir, specs, folds)
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
    return perf_md, tuning_md


def readme_head(name: str, n_queries: int, params_paths: list[Path], models_dir: Path | None,
                specs: list[RunSpec]) -> list[str]:
    """The README's lines above its tables: title, what the tables hold, and where the numbers came from."""
    return [
        f"{README_TITLE.decode()}{name}", "",
        "Produced by `srdiv report` from the per-query metrics in `metrics.parquet`",
        "(columns model, variant, fold, qid, measure, value; official metrics, TREC ndeval definitions).",
        "Each query is tested once, in the test fold of its cross-validation trial; tables report the mean",
        f"over those {n_queries} queries.", "",
        *[f"- params file `{Path(p).as_posix()}`, hash `{params_hash(Path(p))}`" for p in params_paths],
        f"- report made at commit `{git_commit()}`",
        *training_commits(models_dir, specs),
        f"- date (UTC): {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M')}",
        f"- machine: {machine()}", "",
    ]


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
