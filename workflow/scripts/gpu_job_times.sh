#!/usr/bin/env bash
# Per-job times of the main table on a GPU machine, for workflow/scripts/replay_schedule.py.
#
#   bash workflow/scripts/gpu_job_times.sh [OUT_DIR] [fold1|all]     # defaults: gpu-job-times/, fold1
#
# Runs the main table's DAG (params.yaml + config/main.yaml) as a user's workstation would:
# `snakemake --cores $(nproc) --resources gpu=1`. Phase 1 makes the text stages, the bundles and fold 1's
# samples (from the committed wordnet-div collection; outputs already there and up to date are kept, so
# text-stage outputs copied from another machine and marked up to date with `snakemake --touch` are not
# made again; they weigh about 300 MB and the bundles 2 x 264 MB). Phase 2 is, with `fold1`, every row's
# train job of fold 1, which ranks the fold's test queries too (on a quiet 2-core machine phase 1 takes
# about 6.5 minutes and fold 1's longest job, DSSA on the CPU, about 5: allow 15 minutes); with `all`, the whole main table, as `make run`
# (every fold, the evaluations and the report in results/wordnet-div). The rows of
# `srdiv.train.device.GPU_GAIN` train on the GPU, `gpu_jobs` at a time; the others on the cores. TIME_LIMIT (seconds for both phases, default
# 3600; a GPU lease is often short) stops the phase running when it is spent (SIGTERM to Snakemake), and
# the script still writes the times of the jobs that finished (a row whose job was stopped has no line).
# It writes to OUT_DIR:
#   job-times.tsv   rule, row, device, seconds, source (the replay's --times format): each rule's median wall
#                   seconds over the jobs that ran, from Snakemake's benchmark records; the device of a train
#                   job from its timings.json
#   phases.tsv      wall seconds of each phase, its exit status and the jobs it ran
#   machine.txt     nvidia-smi, CPU model and count, torch version, commit
#   snakemake-*.log the two Snakemake runs' logs (each job's start and end)
# CONFIG (overlays after config/main.yaml, as `make run CONFIG=...`) changes the settings, for example
# workflow/scripts/gpu_job_times.yaml, which trains doc2vec with the machine's cores so that phase 1 fits a short
# lease (the vectors then differ from the committed ones: a timing run, not a result).
# Needs the pipeline's Python environment (`make install`, or the same packages on PATH) on the GPU
# machine: it stops in seconds, naming what is missing, if torch, gensim, snakemake or srdiv are not there.
set -euo pipefail
OUT=${1:-gpu-job-times}
SCOPE=${2:-fold1}
case $SCOPE in fold1|all) ;; *) echo "gpu_job_times: scope must be fold1 or all, not '$SCOPE'"; exit 2;; esac
mkdir -p "$OUT"
[ -x .venv/bin/python ] && export PATH="$PWD/.venv/bin:$PATH"
python - <<'EOF' || { echo "gpu_job_times: cannot run on this machine (above)"; exit 2; }
import importlib.util, sys
missing = [m for m in ("torch", "gensim", "snakemake", "srdiv") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"missing Python packages: {', '.join(missing)}")
import torch
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")
EOF
command -v snakemake >/dev/null && command -v srdiv >/dev/null \
    || { echo "gpu_job_times: snakemake and srdiv must be on PATH"; exit 2; }
{ nvidia-smi; lscpu | grep -E 'Model name|^CPU\(s\)'; python -c 'import sys, torch, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "numpy", numpy.__version__)'; \
  git rev-parse HEAD 2>/dev/null || echo "commit: not a git checkout (${SRDIV_COMMIT:-SRDIV_COMMIT not set})"; \
  echo "settings: params.yaml config/main.yaml ${CONFIG:-}"; } \
    > "$OUT/machine.txt" 2>&1 || true
CORES=$(nproc)
ROWS=$(python -c 'import yaml; print(" ".join(yaml.safe_load(open("config/main.yaml"))["run_models"]))')
OPTS="--configfile params.yaml config/main.yaml ${CONFIG:-} --rerun-incomplete --cores $CORES --resources gpu=1"
END=$(( $(date +%s) + ${TIME_LIMIT:-3600} - 15 ))   # 15 s kept to write the times
left() { local s=$(( END - $(date +%s) )); echo $(( s > 1 ? s : 1 )); }

phase() {   # phase NAME LOG LIMIT TARGETS...: run Snakemake, append the phase's wall time and status
    local name=$1 log=$2 limit=$3; shift 3
    local start status=0
    start=$(date +%s.%N)
    echo "gpu_job_times: $name: started $(date -u +%T), at most ${limit} s"
    timeout --signal=TERM --kill-after=5 "$limit" snakemake "$@" $OPTS > "$OUT/$log" 2>&1 || status=$?
    python - "$name" "$start" "$status" "$OUT/$log" "$CORES" >> "$OUT/phases.tsv" <<'EOF'
import re, sys, time
from collections import Counter
name, start, status, log, cores = sys.argv[1:]
jobs = Counter(re.findall(r"^(?:local)?rule (\w+):", open(log).read(), flags=re.M))
print(f"{name}\t{time.time() - float(start):.1f}\t{status}\t{cores}\t"
      + ", ".join(f"{rule} {n}" for rule, n in sorted(jobs.items())))
EOF
    tail -n 1 "$OUT/phases.tsv"     # progress on the console, which may be all a short GPU lease returns
    return 0
}

STARTED=$(date +%s)   # benchmark records older than this (a checkout's committed ones) are not this run's
printf 'phase\tseconds\texit\tcores\tjobs started\n' > "$OUT/phases.tsv"
phase "text stages, bundles and fold-1 samples" snakemake-text.log "$(left)" \
    work/wordnet-div/samples/fold1/samples.npz work/wordnet-div/bundle/doc2vec.npz work/wordnet-div/bundle/lda.npz
if [ "$SCOPE" = fold1 ]; then
    phase "fold-1 train jobs" snakemake-train.log "$(left)" \
        $(for row in $ROWS; do echo "work/wordnet-div/models/$row/fold1/rank.json"; done)
else
    phase "the main table (make run)" snakemake-train.log "$(left)"
fi

python - "$OUT" "$CORES" "$SCOPE" "$STARTED" <<'EOF'
import json, sys
from pathlib import Path
import pandas as pd
out, cores, scope, started = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
def this_run(path):     # written by this run's jobs, not a record that came with the checkout
    return path.exists() and path.stat().st_mtime >= started
where = f"gpu_job_times.sh {scope}, --cores {cores} --resources gpu=1 (machine.txt)"
lines = ["rule\trow\tdevice\tseconds\tsource"]
bench = Path("benchmarks/wordnet-div")
for rule in ("embed", "pseudo_docs", "features_relevance", "features_diversity"):
    if this_run(bench / f"{rule}.tsv"):
        s = pd.read_csv(bench / f"{rule}.tsv", sep="\t")["s"].iloc[0]
        lines.append(f"{rule}\t*\tcpu\t{s:.1f}\t{where}: Snakemake benchmark wall s")
samples = sorted(f for f in (bench / "samples").glob("*.tsv") if this_run(f))
if samples:
    s = pd.concat(pd.read_csv(f, sep="\t") for f in samples)["s"].median()
    lines.append(f"samples\t*\tcpu\t{s:.1f}\t{where}: median of {len(samples)} jobs")
times = {}
for record in sorted((bench / "train").glob("*-fold*.tsv")):
    row, fold = record.stem.rsplit("-fold", 1)
    timings = Path(f"work/wordnet-div/models/{row}/fold{fold}/timings.json")
    if not (this_run(record) and this_run(timings)):    # not run here, or stopped by TIME_LIMIT
        continue
    device = "cuda" if json.loads(timings.read_text())["device"].startswith("cuda") else "cpu"
    times.setdefault((row, device), []).append(pd.read_csv(record, sep="\t")["s"].iloc[0])
for (row, device), seconds in times.items():
    lines.append(f"train\t{row}\t{device}\t{pd.Series(seconds).median():.1f}\t{where}: train job (ranking "
                 f"included), median of {len(seconds)} folds' Snakemake benchmark wall s")
(out / "job-times.tsv").write_text("\n".join(lines) + "\n")
print((out / "job-times.tsv").read_text())
EOF
cat "$OUT/phases.tsv"
