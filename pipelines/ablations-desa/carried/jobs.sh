#!/usr/bin/env bash
# Train the study's jobs listed in QUEUE ("<row> <fold>" a line), two side by side, each its own Snakemake
# invocation of the train rule, from the checkout RUNS (the study's code, its shared inputs built), and commit
# each finished job into the checkout CARRY (README.md here). No job starts after DEADLINE (seconds since the epoch).
#   bash jobs.sh QUEUE RUNS CARRY [DEADLINE]
set -u
QUEUE=$(realpath "$1"); RUNS=$(realpath "$2"); CARRY=$(realpath "$3"); DEADLINE=${4:-}
export OPENBLAS_CORETYPE=Haswell MKL_CBWR=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
export PYTHONPATH=$RUNS/src PATH=$RUNS/.venv/bin:$PATH
MODELS=work/wordnet-div/ablations-desa/models
LOG=$RUNS/logs/carried-jobs.log
mkdir -p "$(dirname "$LOG")"
cd "$RUNS" || exit 1

carry() {   # row fold: the finished job's files (not model.pt) into CARRY, committed
  local row=$1 fold=$2 dst=$CARRY/pipelines/ablations-desa/carried cpu
  mkdir -p "$dst/models/$row/fold$fold" "$dst/logs" "$dst/benchmarks"
  find "$MODELS/$row/fold$fold" -maxdepth 1 -type f ! -name model.pt ! -name '.*' -exec cp -p {} "$dst/models/$row/fold$fold/" \; \
    || return 1
  cp -p "logs/wordnet-div-ablations-desa/train/$row-fold$fold.log" "$dst/logs/" || return 1
  cp -p "benchmarks/wordnet-div-ablations-desa/train/$row-fold$fold.tsv" "$dst/benchmarks/" || return 1
  local rel=pipelines/ablations-desa/carried   # only this job's files, so no other edit is swept into its commit
  local paths=("$rel/models/$row/fold$fold" "$rel/logs/$row-fold$fold.log" "$rel/benchmarks/$row-fold$fold.tsv")
  cpu=$(lscpu | sed -n 's/^Model name: *//p')
  for _ in $(seq 1 20); do      # another git command may hold the index for a moment
    (cd "$CARRY" && git add -f -- "${paths[@]}" && { git diff --cached --quiet -- "${paths[@]}" || git commit -q \
      -m "DESA study: $row fold $fold carried (trained on a 2-core $cpu; its record, curve, study, run and logs, not model.pt)" \
      -- "${paths[@]}"; }) && return 0
    sleep 7
  done
  return 1
}

worker() {
  local w=$1 job row fold rc
  while true; do
    if [ -n "$DEADLINE" ] && [ "$(date +%s)" -gt "$DEADLINE" ]; then echo "$(date +%T) w$w past the deadline" >> "$LOG"; break; fi
    job=$(flock "$QUEUE.lock" bash -c "head -1 '$QUEUE'; sed -i 1d '$QUEUE'")
    [ -z "$job" ] && break
    read -r row fold <<< "$job"
    echo "$(date +%T) w$w start $row $fold" >> "$LOG"
    nice snakemake --cores 1 --resources gpu=1 --allowed-rules train --nolock --rerun-incomplete \
      "$MODELS/$row/fold$fold/run.txt" --configfile params.yaml config/ablations-desa.yaml >> "$LOG.w$w" 2>&1
    rc=$?
    echo "$(date +%T) w$w end $row $fold rc=$rc" >> "$LOG"
    if [ $rc -eq 0 ]; then carry "$row" "$fold" >> "$LOG" 2>&1 || echo "$(date +%T) carry failed: $row $fold" >> "$LOG"; fi
  done
}

worker 1 & sleep 20; worker 2 & wait
echo "$(date +%T) workers done" >> "$LOG"
