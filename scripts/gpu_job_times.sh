#!/usr/bin/env bash
# Per-job times of the main table on a GPU machine, for scripts/replay_schedule.py (one fold, < 10 minutes).
#
#   bash scripts/gpu_job_times.sh [OUT_DIR]          # default OUT_DIR: gpu-job-times/
#
# Runs, from the committed wordnet-div collection (the text stages' inputs travel with the work tree),
# the main table's DAG for fold 1 as a user's workstation would: `snakemake --cores $(nproc)
# --resources gpu=1`, the text stages and fold 1's samples first (timed as one phase), then every row's
# train job of fold 1, which ranks the fold's test queries too (the rows with `gpu_gain` on the GPU, four
# at a time; the others on the cores). It writes to OUT_DIR:
#   job-times.tsv   rule, row, device, seconds, source: each train job's wall seconds from its Snakemake
#                   benchmark record, the device from its timings.json (the replay's --times format)
#   phases.tsv      wall seconds of the text-stage phase and of the fold-1 training phase
#   machine.txt     nvidia-smi, CPU model and count, torch version, commit
#   snakemake-*.log the two Snakemake runs' logs (each job's start and end)
# Needs the pipeline's Python environment (`make install`, or the same packages on PATH) on the GPU
# machine: it stops in seconds, naming what is missing, if torch, gensim, snakemake or srdiv are not there.
set -euo pipefail
OUT=${1:-gpu-job-times}
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
{ nvidia-smi; lscpu | grep -E 'Model name|^CPU\(s\)'; python -c 'import torch, srdiv; print("torch", torch.__version__)'; \
  git rev-parse HEAD; } > "$OUT/machine.txt" 2>&1
CORES=$(nproc)
ROWS=$(python -c 'import yaml; print(" ".join(yaml.safe_load(open("config/main.yaml"))["run_models"]))')
OPTS="--rerun-incomplete --cores $CORES --resources gpu=1"   # after the targets: --resources takes several values

start=$(date +%s.%N)
snakemake work/wordnet-div/samples/fold1/samples.npz work/wordnet-div/bundle/doc2vec.npz work/wordnet-div/bundle/lda.npz $OPTS \
    > "$OUT/snakemake-text.log" 2>&1
text=$(python -c "import time; print(round(time.time() - $start, 1))")
start=$(date +%s.%N)
snakemake $(for row in $ROWS; do echo "work/wordnet-div/models/$row/fold1/rank.json"; done) $OPTS > "$OUT/snakemake-train.log" 2>&1
train=$(python -c "import time; print(round(time.time() - $start, 1))")
printf 'phase\tseconds\tcores\ntext stages and fold-1 samples\t%s\t%s\nfold-1 train jobs\t%s\t%s\n' \
    "$text" "$CORES" "$train" "$CORES" > "$OUT/phases.tsv"

python - "$OUT" "$CORES" $ROWS <<'EOF'
import json, sys
from pathlib import Path
import pandas as pd
out, cores, rows = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
lines = ["rule\trow\tdevice\tseconds\tsource"]
for row in rows:
    timings = json.loads(Path(f"work/wordnet-div/models/{row}/fold1/timings.json").read_text())
    device = "cuda" if timings["device"].startswith("cuda") else "cpu"
    bench = pd.read_csv(f"benchmarks/wordnet-div/train/{row}-fold1.tsv", sep="\t")
    lines.append(f"train\t{row}\t{device}\t{bench['s'].iloc[0]:.1f}\tgpu_job_times.sh: fold 1, train job (ranking "
                 f"included) Snakemake benchmark wall s, --cores {cores} --resources gpu=1 (machine.txt)")
(out / "job-times.tsv").write_text("\n".join(lines) + "\n")
print((out / "job-times.tsv").read_text())
EOF
cat "$OUT/phases.tsv"
