#!/usr/bin/env bash
# make slurm-smoke: the smoke DAG through workflow/profiles/slurm on a single-node SLURM cluster that
# workflow/scripts/slurm_cluster.sh starts (and stops) on this machine, in a fresh copy of the project under
# work/slurm-smoke; then its results are compared byte for byte with the checkout's `make smoke` results.
#
# The profile is used as a user would use it; only the cluster's own names are given on the command line:
# the default partition (cpu) and the train jobs' "GPU" partition (gpu), and squeue to poll job states (the
# test cluster keeps no accounting database, so it has no sacct). CONFIG: overlays, as for make smoke.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
RESULTS=results/wordnet-div-smoke
MODELS=work/wordnet-div-smoke/models
[ -f "$RESULTS/metrics.parquet" ] || { echo "slurm_smoke.sh: run make smoke first ($RESULTS)" >&2; exit 2; }

git rev-parse --git-dir >/dev/null 2>&1 || { echo "slurm_smoke.sh: needs a git checkout of the project" >&2; exit 2; }
DEST="$ROOT/work/slurm-smoke"
rm -rf "$DEST"
mkdir -p "$DEST/project"
# the project as a clone has it (tracked and not-ignored files), without work/ or results/ of the checkout
git ls-files -z -co --exclude-standard | while IFS= read -r -d '' name; do
  [ -f "$name" ] && [ ! -L "$name" ] && { mkdir -p "$DEST/project/$(dirname "$name")"; cp -p "$name" "$DEST/project/$name"; }
done

run_smoke() {
  cd "$DEST/project"
  # shellcheck disable=SC2086
  snakemake --profile workflow/profiles/slurm --configfile params.yaml config/smoke.yaml ${CONFIG:-} \
    --slurm-status-command squeue --slurm-init-seconds-before-status-checks 5 \
    --default-resources slurm_partition=cpu runtime=60 mem_mb=2000 \
    --set-resources train:slurm_partition=gpu train:runtime=60 train:mem_mb=2000
  # the jobs that asked for a GPU (the train jobs of rows that may run on CUDA), while the controller knows them
  scontrol show job | grep -c "TresPerJob=.*gres:gpu" > "$DEST/gpu-jobs" || true
}
export -f run_smoke
export DEST CONFIG
bash workflow/scripts/slurm_cluster.sh run "$DEST/cluster" bash -c run_smoke

# every job ran under SLURM: the controller's log has an allocation for each, the train jobs in partition gpu,
# those of rows that may run on CUDA (DESA in the smoke setting) with a GPU
trains=$(grep -c "Partition=gpu" "$DEST/cluster/slurmctld.log" || true)
echo "slurm_smoke.sh: $(grep -c "sched: Allocate" "$DEST/cluster/slurmctld.log") jobs allocated by slurmctld," \
     "$trains in partition gpu, $(cat "$DEST/gpu-jobs") of them with a GPU"
[ "$trains" -gt 0 ] || { echo "slurm_smoke.sh: no job ran in partition gpu" >&2; exit 1; }
[ "$(cat "$DEST/gpu-jobs")" -gt 0 ] || { echo "slurm_smoke.sh: no job asked for a GPU" >&2; exit 1; }

differ=0; compared=0
for name in "$RESULTS/metrics.parquet" "$RESULTS"/tables/* "$MODELS"/*/fold*/run.txt; do
  [ "$(basename "$name")" != performance.md ] || continue      # measured times, not results
  compared=$((compared + 1))
  cmp -s "$name" "$DEST/project/$name" || { echo "differs from make smoke's: $name" >&2; differ=1; }
done
[ "$differ" -eq 0 ] || exit 1
echo "slurm_smoke.sh: $compared files byte-identical to make smoke's (metrics, tables, every job's run)"
