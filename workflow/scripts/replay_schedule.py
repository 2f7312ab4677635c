"""Replay the main table's Snakemake DAG with measured per-job times: the expected wall time of a run.

    python workflow/scripts/replay_schedule.py [--times docs/job-times.tsv [gpu-job-times/job-times.tsv]]
        [--cores 2 8 16] [--configfile params.yaml config/main.yaml] [--points docs/job-points.tsv]
    python workflow/scripts/replay_schedule.py --write-points work/wordnet-div/models > docs/job-points.tsv

The DAG is Snakemake's own (every job of ``snakemake --forceall`` for the settings, with the threads and
``gpu`` slots each job declares and the jobs whose outputs it reads). Each job takes its time from
``--times`` (a TSV written by hand from committed measurements or by ``workflow/scripts/gpu_job_times.sh``:
``rule, row, device, seconds, source``; ``row`` ``*`` for every row, ``device`` ``cpu`` or ``cuda``),
and the replay starts jobs as Snakemake's scheduler may: a job starts when every job it reads from has
finished and its threads and ``gpu`` slots fit in what is free (``--cores``, ``--resources gpu=N``).
Snakemake does not know how long a job takes, so among ready jobs of the same priority its choice is,
for the wall time, arbitrary: the replay gives two orders, longest job first and shortest job first, as
the good and bad end of what a run can give.

Three settings of the pipeline are compared, for each core count, with no GPU (``make run CORES=C``:
``--resources gpu=C``) and with one (``--cores C --resources gpu=1``):

* ``one lane``: a rank job of its own after every train job (``srdiv rank``: a process that loads the
  bundle again), every train and rank job takes one ``gpu`` slot and a GPU has one slot, and with a GPU
  every row trains there (``train.device: auto`` before rows had their own device);
* ``device per row``: the train job ranks the test queries itself (``rank_in_train``: the ranking without
  the process start and bundle load); the jobs of rows that run on CUDA (:func:`srdiv.train.device.uses_gpu`)
  take one of a GPU's ``gpu_jobs`` slots, the other rows' jobs none, and run on the CPU; one core each;
* ``points side by side`` (today's Snakefile): as ``device per row``, and a train job of a row training on
  the CPU takes the cores Snakemake gives it (``train_threads``) and trains that many tune points at once,
  and the train jobs of a row that is another row's prior start first (their ``priority``, which
  Snakemake's scheduler puts before everything else when it picks among ready jobs).
  Its time is the job's time with its training part scaled by the points' schedule: the points' epoch
  counts (``--points``: each (row, fold)'s ``hparams.json`` of the committed main run) given out in grid
  order to the first free process, the longest process over all the epochs; the rest of the job (process
  start, bundle load: the ``rank`` time less ``rank_in_train``) is not scaled.

A row with no ``cuda`` time in ``--times`` is replayed on a GPU with its CPU time (printed). GPU jobs
that share a GPU are replayed as if each had it alone; process start and bundle loading are part of each
job's time.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from srdiv.experiment import model_specs
from srdiv.params import load_params
from srdiv.train.device import uses_gpu
from srdiv.cli.dvc_stages import snakemake_jobs

ROOT = Path(__file__).resolve().parents[2]

ROW_RULES = ("train", "rank", "evaluate")
"""Rules with one job per (row, fold)."""


@dataclass
class Job:
    """One job of the DAG: its rule, row (per-row rules), threads and the jobs it waits for."""

    name: str
    rule: str
    row: str
    threads: int
    needs: list[int]
    fold: str = ""
    priority: int = 0


def dag(configfiles: list[Path], cores: int) -> list[Job]:
    """The jobs of the DAG in Snakemake's topological order, each with the indices of the jobs it reads from."""
    jobs = snakemake_jobs(ROOT / "Snakefile", configfiles, cores=cores)
    made = {str(path): i for i, job in enumerate(jobs) for path in job.output}
    out = []
    for job in jobs:
        row = job.wildcards.get("model", "") if job.rule.name in ROW_RULES else ""
        needs = sorted({made[str(path)] for path in job.input if str(path) in made})
        fold = job.wildcards.get("fold", "")
        out.append(Job(f"{job.rule.name} {row} {fold}".strip(), job.rule.name, row, job.threads, needs, fold,
                       job.priority))
    return out


def with_rank_jobs(jobs: list[Job]) -> list[Job]:
    """The DAG as it was before the train job ranked: a ``rank`` job after each ``train`` job; a job that
    read the train job's run (``evaluate``, ``report``) reads the rank job's, one that reads its model (a
    row with that prior) still the train job's."""
    out: list[Job] = []
    model_of: dict[int, int] = {}
    run_of: dict[int, int] = {}
    for i, job in enumerate(jobs):
        made = model_of if job.rule == "train" else run_of
        out.append(replace(job, needs=[made.get(j, model_of.get(j)) for j in job.needs]))
        model_of[i] = run_of[i] = len(out) - 1
        if job.rule == "train":
            out.append(replace(job, name=job.name.replace("train", "rank", 1), rule="rank", threads=1,
                               needs=[len(out) - 1]))
            run_of[i] = len(out) - 1
    return out


def load_times(paths: list[Path]) -> pd.DataFrame:
    """``rule, row, device, seconds, source`` of every measured (or derived) job time; where two files time
    the same (rule, row, device), the later file's line is used."""
    frames = []
    for path in paths:
        times = pd.read_csv(path, sep="\t", comment="#", dtype={"row": str})
        missing = {"rule", "row", "device", "seconds", "source"} - set(times.columns)
        if missing:
            sys.exit(f"{path}: missing columns {sorted(missing)}")
        frames.append(times)
    return pd.concat(frames, ignore_index=True)


def job_seconds(times: pd.DataFrame, job: Job, device: str, fallbacks: set) -> float:
    """The job's time on ``device``: its row's line, else the rule's ``*`` line; on cuda, else the CPU time."""
    for dev in ([device, "cpu"] if device == "cuda" else ["cpu"]):
        for row in (job.row, "*"):
            hit = times[(times["rule"] == job.rule) & (times["row"] == row) & (times["device"] == dev)]
            if len(hit):
                if dev != device:
                    fallbacks.add(f"{job.rule} {job.row}")
                return float(hit["seconds"].iloc[-1])
    raise SystemExit(f"no time for rule {job.rule} (row {job.row or '-'}) on {device} in --times")


def write_points(models: Path) -> None:
    """Print ``row, fold, epochs`` (the epochs each tune point trained, in grid order) of every job of
    ``models`` (``work/<dataset>/models``) that trained more than one point."""
    print("# Epochs of each tune point (grid order) of the main table's train jobs, for workflow/scripts/replay_schedule.py;")
    print(f"# written by --write-points from {models}/<row>/fold<k>/hparams.json.")
    print("row\tfold\tepochs")
    for path in sorted(models.glob("*/fold*/hparams.json")):
        hparams = json.loads(path.read_text())
        epochs = [point["epochs"] for point in hparams["grid"]]
        if len(epochs) > 1 and any(epochs):
            print(f"{hparams['row']}\t{hparams['fold']}\t{','.join(map(str, epochs))}")


def load_points(path: Path) -> dict[tuple[str, str], list[int]]:
    """``(row, fold) -> epochs of each tune point`` from a ``--write-points`` file."""
    points = pd.read_csv(path, sep="\t", comment="#", dtype=str)
    return {(r.row, r.fold): [int(e) for e in r.epochs.split(",")] for r in points.itertuples()}


def side_by_side(seconds: float, fixed: float, epochs: list[int], workers: int) -> float:
    """A train job's time when its tune points train ``workers`` at once: each point, in grid order, goes to
    the first free process; the training part (``seconds - fixed``) scales as the longest process's epochs
    over all epochs."""
    if workers <= 1 or len(epochs) <= 1 or not sum(epochs):
        return seconds
    ends = [0] * workers
    for e in epochs:
        heapq.heapreplace(ends, ends[0] + e)
    return fixed + (seconds - fixed) * max(ends) / sum(epochs)


def replay(jobs: list[Job], seconds: list[float], gpu: list[int], cores: int, slots: int,
           longest_first: bool) -> tuple[float, float, float]:
    """Wall time of the DAG, and the first start and last end of its train and rank jobs (their span)."""
    waiting = [len(job.needs) for job in jobs]
    users = [[] for _ in jobs]
    for i, job in enumerate(jobs):
        for j in job.needs:
            users[j].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    running: list[tuple[float, int]] = []
    free_cores, free_slots, now = cores, slots, 0.0
    first, last = float("inf"), 0.0
    while ready or running:
        ready.sort(key=lambda i: (-jobs[i].priority, -seconds[i] if longest_first else seconds[i], i))
        for i in list(ready):
            threads = min(jobs[i].threads, cores)
            if threads <= free_cores and gpu[i] <= free_slots:
                ready.remove(i)
                free_cores -= threads
                free_slots -= gpu[i]
                heapq.heappush(running, (now + seconds[i], i))
                if jobs[i].rule in ("train", "rank"):
                    first = min(first, now)
        now, i = heapq.heappop(running)
        free_cores += min(jobs[i].threads, cores)
        free_slots += gpu[i]
        if jobs[i].rule in ("train", "rank"):
            last = max(last, now)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    return now, first, last


def minutes(s: float) -> str:
    return f"{s / 60:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--times", nargs="+", type=Path, default=[ROOT / "docs" / "job-times.tsv"],
                        help="TSV files of job times; a later file's line wins")
    parser.add_argument("--cores", nargs="+", type=int, default=[2, 8, 16])
    parser.add_argument("--configfile", nargs="+", type=Path, default=[ROOT / "params.yaml", ROOT / "config/main.yaml"])
    parser.add_argument("--points", type=Path, default=ROOT / "docs" / "job-points.tsv",
                        help="epochs of each tune point per (row, fold) (written by --write-points)")
    parser.add_argument("--write-points", type=Path, metavar="MODELS",
                        help="print the --points file of a models directory (work/<dataset>/models) and stop")
    args = parser.parse_args()
    if args.write_points:
        return write_points(args.write_points)
    times = load_times(args.times)
    points = load_points(args.points)
    params = load_params([str(p) for p in args.configfile])
    specs = model_specs(params)
    gpu_jobs = int(params.get("gpu_jobs", 1))
    fallbacks: set = set()
    print(f"Replay of {' + '.join(p.name for p in args.configfile)} with the job times of {' + '.join(p.name for p in args.times)} "
          f"(machine of this replay: {platform.machine()}, {os.cpu_count()} cores; the times are those of the "
          f"machines named in the file). Minutes: whole DAG (span of the train and rank jobs), ready jobs started longest / shortest first.\n")
    settings = ("one lane", "device per row", "points side by side")
    print("| cores | GPU | " + " | ".join(f"{name}: {order}" for name in settings
                                          for order in ("longest first", "shortest first")) + " |")
    print("|---:|---|" + "---|" * 2 * len(settings))
    fixed = job_seconds(times, Job("", "rank", "", 1, []), "cpu", fallbacks) - \
        job_seconds(times, Job("", "rank_in_train", "", 1, []), "cpu", fallbacks)
    bound: dict[tuple[int, bool], float] = {}
    for cores in args.cores:
        now = dag(args.configfile, cores)
        one_thread = [replace(j, threads=1, priority=0) if j.rule == "train" else j for j in now]
        dags = {"one lane": with_rank_jobs(one_thread), "device per row": one_thread, "points side by side": now}
        for has_gpu in (False, True):
            cells = []
            for setting, jobs in dags.items():
                lane = setting == "one lane"
                on_gpu = [has_gpu and job.rule in ("train", "rank") and (lane or uses_gpu(specs[job.row]))
                          for job in jobs]
                seconds = [job_seconds(times, job, "cuda" if g else "cpu", fallbacks) for job, g in zip(jobs, on_gpu)]
                if not lane:   # the train job ranks its test fold itself
                    ranking = Job("", "rank_in_train", "", 1, [])
                    seconds = [s + (job_seconds(times, ranking, "cpu", fallbacks) if job.rule == "train" else 0.0)
                               for job, s in zip(jobs, seconds)]
                    seconds = [side_by_side(s, fixed, points.get((job.row, job.fold), []),
                                            min(job.threads, cores)) if job.rule == "train" else s
                               for job, s in zip(jobs, seconds)]
                    gpu = [int(job.rule == "train" and uses_gpu(specs[job.row])) for job in jobs]
                else:
                    gpu = [int(job.rule in ("train", "rank")) for job in jobs]
                per_gpu = 1 if lane else gpu_jobs
                slots = per_gpu if has_gpu else cores * per_gpu
                for longest in (True, False):
                    wall, first, last = replay(jobs, seconds, gpu, cores, slots, longest)
                    cells.append(f"{minutes(wall)} ({minutes(last - first)})")
                if not lane:   # every train job holds its cores (a GPU job one) for its time, whatever the order
                    bound[cores, has_gpu] = sum(s * min(j.threads, cores) for j, s in zip(jobs, seconds)
                                                if j.rule == "train") / cores
            print(f"| {cores} | {'one' if has_gpu else 'none'} | " + " | ".join(cells) + " |")
    print(f"\nJobs: {len(dags['one lane'])} in one lane, {len(now)} with a device per row. Cores of a train job "
          f"with {cores} cores: " + ", ".join(sorted({f"{j.row} {j.threads}" for j in now
                                                       if j.rule == "train" and j.threads > 1})))
    print("\nNo order trains faster than the train jobs' core-seconds over the cores (points side by side; a GPU "
          "job holds one core): " + "; ".join(f"{c} cores {'and one GPU' if g else 'without a GPU'}: {minutes(b)} min"
                                             for (c, g), b in bound.items()) + ".")
    if fallbacks:
        by_rule: dict[str, list[str]] = {}
        for item in sorted(fallbacks):
            rule, _, row = item.partition(" ")
            by_rule.setdefault(rule, []).append(row)
        print(f"\nReplayed on the GPU with their CPU time (no cuda line in --times): "
              + "; ".join(f"{rule} jobs of {', '.join(rows)}" for rule, rows in by_rule.items()))


if __name__ == "__main__":
    main()
