"""The performance table: each row's training and ranking times, devices and convergence, from its jobs' records."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from srdiv.io import InputError, read_tsv
from srdiv.report.specs import RunSpec
from srdiv.train.records import check_job, read_record

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
    ``rank.json`` (``srdiv train --rank`` or ``srdiv rank``), ``hparams.json`` (the chosen point's best and
    last epochs) and ``<benchmarks_dir>/train/<key>-fold<k>.tsv`` (Snakemake ``benchmark:`` files: wall
    seconds ``s``, CPU seconds ``cpu_time``, peak memory ``max_rss`` in MB): a job's CPU seconds hardly move
    when other processes share its cores, its wall seconds do. The "(all folds)" columns are the row's whole
    search: its seconds and every trial's epochs, pruned ones included, summed over the folds. "trained on"
    counts the folds per training device (``timings.json``): train seconds on a GPU and on a CPU are not
    comparable; "copied" marks a study's job that copied the main run's identical model (``srdiv train
    --reuse``: train seconds are the main run's, job wall seconds the copy's), "N points at once" a job that
    trained N tune points side by side (its train seconds are wall seconds, not the sum over its processes).
    A job stopped and resumed has train seconds over all its sittings (``timings.json``) but job wall and CPU
    seconds of its last sitting only (the benchmark file). "best at last epoch" counts the folds whose
    chosen point was best at the last epoch its row allows: training that may not have converged. "folds"
    counts the jobs' records, which must cover ``folds`` (:func:`job_records`).
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
                               "train s (all folds)": frame["train_seconds"].sum(),
                               "rank ms/query (median)": frame["rank_ms_per_query"].median()})
            epochs = sum(g.get("epochs") or 0 for job in jobs for g in job["hparams.json"]["grid"])
            if epochs:
                record["epochs trained (all folds)"] = epochs
            ends = [e for e in (_best_at_last_epoch(job["hparams.json"]) for job in jobs) if e is not None]
            if ends:
                record["best at last epoch"] = f"{sum(ends)}/{len(ends)}"
        if benchmarks_dir is not None:
            bench = [read_tsv(p, ["s", "cpu_time", "max_rss"], sep="\t")
                     for p in sorted((benchmarks_dir / "train").glob(f"{spec.key}-fold*.tsv"))]
            if bench:
                frame = pd.concat(bench)
                record.update({"job wall s (median)": frame["s"].median(),
                               "job CPU s (median)": frame["cpu_time"].median(),
                               "job CPU s (all folds)": frame["cpu_time"].sum(),
                               "peak RSS MB (max)": frame["max_rss"].max()})
        if len(record) > 1:
            rows.append(record)
    frame = pd.DataFrame(rows)
    if "epochs trained (all folds)" in frame:       # a count, missing for rows that train nothing
        frame["epochs trained (all folds)"] = frame["epochs trained (all folds)"].astype("Int64")
    return frame


def _best_at_last_epoch(hparams: dict, path: Path | str = "hparams.json") -> bool | None:
    """Whether the chosen point's best validation epoch was the last its row allows (None: nothing trained)."""
    try:
        chosen = next((g for g in hparams["grid"] if g["point"] == hparams["chosen"]), None)
        if chosen is None or not chosen["epochs"]:
            return None
        return chosen["best_epoch"] >= hparams["spec"]["train"]["epochs"]
    except (KeyError, TypeError) as err:
        raise InputError(path, f"not an hparams.json of srdiv train (no {err})") from None


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
