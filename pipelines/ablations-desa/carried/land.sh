#!/usr/bin/env bash
# Put the carried jobs back into the study's checkout RUNS (its shared inputs built, inputs.md5 checked) and
# run the commands that follow training: each job's evaluation, then, once all 50 jobs are in, gather and
# report. The commands are the ones Snakemake would run (a dry run's, every job forced), taken as printed, so
# the Snakefile stays their one source; Snakemake itself cannot run them here, as the carried jobs lack model.pt
# (the train rule's output). A job already in RUNS must hold the same files; one that differs stops the script.
#   bash land.sh RUNS
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RUNS=$(realpath "$1")
MODELS=work/wordnet-div/ablations-desa/models
cd "$RUNS"
export PATH=$RUNS/.venv/bin:$PATH

jobs=0
for dir in "$HERE"/models/*/fold*; do
  rel=${dir#"$HERE"/models/}; row=${rel%/fold*}; fold=${rel##*/fold}
  mkdir -p "$MODELS/$rel" logs/wordnet-div-ablations-desa/{train,evaluate} benchmarks/wordnet-div-ablations-desa/train
  for src in "$dir"/* "$HERE/logs/$row-fold$fold.log" "$HERE/benchmarks/$row-fold$fold.tsv"; do
    case $src in
      */logs/*) dst=logs/wordnet-div-ablations-desa/train/${src##*/} ;;
      */benchmarks/*) dst=benchmarks/wordnet-div-ablations-desa/train/${src##*/} ;;
      *) dst=$MODELS/$rel/${src##*/} ;;
    esac
    if [ -e "$dst" ]; then cmp -s "$src" "$dst" || { echo "land.sh: $dst differs from the carried $src" >&2; exit 2; }
    else cp -p "$src" "$dst"; fi
  done
  jobs=$((jobs + 1))
done

plan=$(mktemp); trap 'rm -f "$plan"' EXIT
snakemake -n -p --forceall --nolock --cores 1 --resources gpu=1 --configfile params.yaml config/ablations-desa.yaml > "$plan"
evaluated=0
while read -r cmd; do
  run=$(sed -E 's/.*--run ([^ ]+).*/\1/' <<< "$cmd")
  [ -f "$run" ] || continue                       # a job not carried yet
  bash -c "$cmd" || { echo "land.sh: failed: $cmd" >&2; exit 1; }
  evaluated=$((evaluated + 1))
done < <(sed -n 's/^Shell command: \(srdiv evaluate .*models.*\)$/\1/p' "$plan")
echo "land.sh: $jobs jobs carried, $evaluated evaluated"
[ "$evaluated" -eq 50 ] || { echo "land.sh: gather and report wait for all 50 jobs"; exit 0; }
for step in gather report; do
  cmd=$(sed -n "s/^Shell command: \(srdiv $step .*\)$/\1/p" "$plan")
  bash -c "$cmd" || { echo "land.sh: failed: $cmd" >&2; exit 1; }
done
echo "land.sh: results/wordnet-div-ablations-desa written"
