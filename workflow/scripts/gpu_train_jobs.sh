#!/usr/bin/env bash
# Train some rows of a setting on a GPU machine that has Python and torch but neither Snakemake nor the
# pipeline's inputs, and bring the trained jobs back as the `train` rule would have left them here.
# Meant for a study's GPU rows (DESA's Table 3: `CONFIG=config/ablations-desa.yaml`) on a machine reached by
# short calls that each carry the checkout plus a few MiB, and return a few files.
#
#   here:     bash workflow/scripts/gpu_train_jobs.sh pack ROW...     inputs and commands into work/gpu-carry/<part>/
#   GPU:      bash workflow/scripts/gpu_train_jobs.sh train OUT       every part carried so far joined and checked, the jobs
#                                                                      trained PARALLEL at a time until LIMIT seconds, the
#                                                                      finished ones packed; OUT gets the first packs
#   GPU:      bash workflow/scripts/gpu_train_jobs.sh fetch OUT       OUT gets the next packs
#   here:     bash workflow/scripts/gpu_train_jobs.sh unpack DIR...   the packs' jobs into work/ and logs/
#
# `pack` asks Snakemake (`--until train`, dry run) for the setting's train commands, keeps those of the rows
# named, and refuses if the dry run would also run another rule (an input here is missing or out of date:
# make it first) or if a job may be copied from the main run here (`--reuse`). It gzips what the commands
# read that the checkout does not hold (bundle, samples, a built collection, a prior) and cuts it into parts
# of at most 63 MiB less the checkout's own files (PART_BYTES to choose), a folder each, with the inputs'
# MD5 checksums, the commands and the commit. Each part travels in its own call, to the same path there
# (work/gpu-carry/<part>), the last one with `train`; the machine keeps what earlier calls brought only
# while it stays warm.
# `train` runs PARALLEL (default 4) jobs side by side, THREADS (default 3) CPU threads each, until LIMIT
# (default 540) seconds; it skips a job whose rank.json is there, so a second `train` call resumes the rest
# (a job stopped mid-way from its last finished epoch). The jobs name the packed commit (SRDIV_COMMIT: the
# copy there may have no .git). A pack holds at most two jobs (a DESA job's files are about 6 MB); a call
# returns at most 7 packs, 60 MiB, and status.tsv.
# `unpack` puts each job's files in place (times set to now, so Snakemake takes them as newer than their
# inputs) and refuses a pack set holding a job already here; then the setting's target (`make run-<study>`)
# evaluates them, trains what is left on the CPU and writes the report. The jobs' records hold the content
# digests of their inputs (bundle, samples, qrels), which were checked by checksum there.
set -euo pipefail
CARRY=work/gpu-carry
PACKS=work/gpu-return
cmd=${1:-}; shift || true

die() { echo "gpu_train_jobs: $*" >&2; exit 2; }
job_dir() { sed -E 's/.*--out ([^ ]+).*/\1/'; }   # of train commands on stdin: each job's directory
job_log() { sed -E 's/.* 2> ([^ ]+)$/\1/'; }        # and its log
export -f job_dir job_log

pack() {
    [ $# -gt 0 ] || die "pack: name the rows to train (e.g. DESA-1-1 DESA-3-1)"
    [ -x .venv/bin/snakemake ] && export PATH="$PWD/.venv/bin:$PATH"
    [ ! -e "$CARRY" ] || die "pack: $CARRY exists (an earlier pack); remove it first"
    git rev-parse HEAD >/dev/null 2>&1 || die "pack: run it in a git checkout of srdiv (the jobs record its commit)"
    local dry; dry=$(mktemp)
    # shellcheck disable=SC2086
    snakemake -n -p --nolock --until train --cores 16 --resources gpu=1 \
        --configfile params.yaml ${CONFIG:-config/ablations-desa.yaml} > "$dry" 2>&1 \
        || { cat "$dry" >&2; die "pack: the dry run failed (above)"; }
    local others; others=$(awk '/^Job stats:/ {on=1; next} on && NF == 0 {on=0}
        on && $2 ~ /^[0-9]+$/ && $1 != "train" && $1 != "total" {print $1}' "$dry" | sort -u | tr '\n' ' ')
    [ -z "$others" ] || die "pack: the dry run would also run: $others (make those outputs here first)"
    mkdir -p "$CARRY/1"
    local row found
    for row in "$@"; do
        grep -E "^Shell command: srdiv train --model $row --fold " "$dry" | sed 's/^Shell command: //' \
            >> "$CARRY/1/jobs.txt" || die "pack: no train job of row '$row' left to run in this setting"
    done
    local reuse
    for reuse in $(grep -oE -- '--reuse [^ ]+' "$CARRY/1/jobs.txt" | awk '{print $2}'); do
        [ ! -f "$reuse/hparams.json" ] || { rm -r "$CARRY"; die "pack: $reuse exists: the study may copy that job from the main run here (--reuse), so it does not go to the GPU"; }
    done
    found=$(wc -l < "$CARRY/1/jobs.txt")
    rm -f "$dry"
    git rev-parse HEAD > "$CARRY/1/commit.txt"
    [ -z "$(git status --porcelain --untracked-files=no)" ] || echo "gpu_train_jobs: the checkout has uncommitted changes; the jobs record $(cat "$CARRY/1/commit.txt")" >&2
    # what the commands read (--bundle, --samples, --collection, --prior) and the checkout does not hold, in one
    # gzipped tar cut into parts
    local inputs="" path
    for path in $(grep -oE -- '--(bundle|samples|collection|prior) [^ ]+' "$CARRY/1/jobs.txt" | awk '{print $2}' | sort -u); do
        [ -n "$(git ls-files -- "$path")" ] || inputs="$inputs $path"
    done
    find $inputs -type f | sort | xargs md5sum > "$CARRY/1/inputs.md5"
    local stage; stage=$(mktemp -d)
    tar -C . -cf - $inputs | gzip -1 > "$stage/inputs.tar.gz"
    # a call carries the checkout's files (tracked, and untracked ones git does not ignore) and one part: 64 MiB
    local tree part
    tree=$({ git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
    part=${PART_BYTES:-$(( 63 * 1048576 - tree ))}
    [ -n "${PART_BYTES:-}" ] || [ "$part" -ge 4194304 ] \
        || die "pack: the checkout's files ($(( tree / 1048576 )) MiB) leave under 4 MiB of a call's 64 for the inputs"
    split -b "$part" -d -a 2 "$stage/inputs.tar.gz" "$stage/inputs.tar.gz."
    local n=0 piece
    for piece in "$stage"/inputs.tar.gz.*; do
        n=$((n + 1)); mkdir -p "$CARRY/$n"; mv "$piece" "$CARRY/$n/"
    done
    rm -r "$stage"
    echo "$n" > "$CARRY/1/parts.txt"
    echo "gpu_train_jobs: $found jobs, inputs in $n parts ($(du -sh "$CARRY" | cut -f1)) under $CARRY"
    echo "  there (a copy of this checkout), one call per part, each while the machine still holds the parts before:"
    echo "    send $CARRY/1 .. $CARRY/$n, one a call, into the same paths there"
    echo "    with part $n: LIMIT=540 bash workflow/scripts/gpu_train_jobs.sh train DIR   (DIR: a folder whose files come back)"
    echo "    then, while it says packs are left: bash workflow/scripts/gpu_train_jobs.sh fetch DIR"
    echo "  here: bash workflow/scripts/gpu_train_jobs.sh unpack DIR...; then the setting's target evaluates and reports"
}

train() {
    local out=${1:?train: OUT}
    local end=$(( $(date +%s) + ${LIMIT:-540} ))
    [ -f "$CARRY/1/jobs.txt" ] || die "train: no $CARRY/1/jobs.txt (the first part was not carried, or the machine went cold)"
    local n k
    n=$(cat "$CARRY/1/parts.txt")
    for k in $(seq 1 "$n"); do
        ls "$CARRY/$k"/inputs.tar.gz.* >/dev/null 2>&1 || die "train: part $k of $n missing: carry it again (all parts, in one warm sitting)"
    done
    if ! md5sum --quiet -c "$CARRY/1/inputs.md5" >/dev/null 2>&1; then
        cat "$CARRY"/*/inputs.tar.gz.* | gunzip | tar -xf -
        md5sum --quiet -c "$CARRY/1/inputs.md5" || die "train: the joined inputs fail their checksums"
    fi
    python3 - <<'EOF' || die "train: missing Python packages (above): install them there, or carry their wheels (optuna needs SQLAlchemy, greenlet, alembic, Mako and colorlog)"
import importlib.util, sys
missing = [m for m in ("torch", "numpy", "pandas", "pyarrow", "scipy", "typer", "yaml", "tqdm", "optuna")
           if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"missing: {', '.join(missing)}")
import torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available(), flush=True)
EOF
    # srdiv from the checkout's src (the copy there is not installed), with the commit it was packed at
    local bin; bin=$(mktemp -d)
    printf '#!/bin/sh\nexec python3 -c "import sys; from srdiv.cli.launch import main; sys.argv[0] = \\"srdiv\\"; main()" "$@"\n' > "$bin/srdiv"
    chmod +x "$bin/srdiv"
    export PATH="$bin:$PATH" PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" SRDIV_COMMIT
    SRDIV_COMMIT=$(cat "$CARRY/1/commit.txt")
    mkdir -p "$out"
    printf 'job\texit\tseconds\n' > "$out/status.tsv"
    local threads=${THREADS:-3}
    # each line: the rule's command with this machine's threads; skipped when the job's rank.json is there
    sed -E "s/--threads [0-9]+/--threads $threads/" "$CARRY/1/jobs.txt" | tr '\n' '\0' \
        | END=$end OUT_STATUS="$out/status.tsv" xargs -0 -P "${PARALLEL:-4}" -I{} bash -c '
        job=$1; dir=$(job_dir <<< "$job"); log=$(job_log <<< "$job")
        [ -f "$dir/rank.json" ] && exit 0
        left=$(( END - $(date +%s) )); [ "$left" -gt 10 ] || exit 0
        mkdir -p "$(dirname "$log")"; start=$(date +%s); status=0
        timeout --signal=TERM --kill-after=10 "$left" bash -c "$job" || status=$?
        printf "%s\t%s\t%s\n" "$dir" "$status" "$(( $(date +%s) - start ))" >> "$OUT_STATUS"
        echo "$dir: exit $status after $(( $(date +%s) - start )) s" >&2' _ {}
    # the jobs finished and not packed by an earlier call (rank.json is written last), two a pack: the job's
    # directory (its tune checkpoints left out) and its log
    mkdir -p "$PACKS"; touch "$PACKS/packed.txt"
    local done_dirs=() fresh=() dir
    while IFS= read -r dir; do
        [ -f "$dir/rank.json" ] || continue
        done_dirs+=("$dir")
        grep -qxF -- "$dir" "$PACKS/packed.txt" || fresh+=("$dir")
    done < <(job_dir < "$CARRY/1/jobs.txt")
    local i=0
    while [ $i -lt ${#fresh[@]} ]; do
        local members=() logs=() d
        for d in "${fresh[@]:$i:2}"; do
            members+=("$d")
            logs+=("$(grep -F -- "--out $d " "$CARRY/1/jobs.txt" | job_log)")
        done
        # named after its first job (ROW-foldK), unique across calls
        tar -cf "$PACKS/pack-$(basename "$(dirname "${members[0]}")")-$(basename "${members[0]}").tar" --exclude=tune \
            "${members[@]}" "${logs[@]}"
        printf '%s\n' "${members[@]}" >> "$PACKS/packed.txt"
        i=$((i + 2))
    done
    echo "gpu_train_jobs: ${#done_dirs[@]} of $(wc -l < "$CARRY/1/jobs.txt") jobs finished, ${#fresh[@]} of them packed now"
    fetch "$out"
}

fetch() {   # the packs not yet fetched into OUT: at most 7 files and 60 MiB (the status file is the 8th)
    local out=${1:?fetch: OUT} sent=0 count=0 pack size
    mkdir -p "$out"
    for pack in "$PACKS"/pack-*.tar; do
        [ -e "$pack" ] || break
        size=$(stat -c %s "$pack")
        [ $count -lt 7 ] && [ $((sent + size)) -le $((60 * 1048576)) ] || break
        mv "$pack" "$out/"; sent=$((sent + size)); count=$((count + 1))
    done
    echo "gpu_train_jobs: $count packs in $out; $(ls "$PACKS" | grep -c '^pack-' || true) left for fetch"
}

unpack() {
    [ $# -gt 0 ] || die "unpack: name the folders holding the packs"
    local pack member
    for pack in $(find "$@" -name 'pack-*.tar' | sort); do
        for member in $(tar -tf "$pack" | grep -E '/rank\.json$'); do
            [ ! -e "$(dirname "$member")/hparams.json" ] || die "unpack: $(dirname "$member") is already here ($pack); nothing of it unpacked"
        done
    done
    for pack in $(find "$@" -name 'pack-*.tar' | sort); do
        tar -xf "$pack" --touch
        echo "gpu_train_jobs: unpacked $(tar -tf "$pack" | grep -cE '/rank\.json$') jobs of $pack"
    done
}

case $cmd in
    pack|train|fetch|unpack) "$cmd" "$@" ;;
    *) sed -n "2,12p" "$0"; exit 2 ;;
esac
