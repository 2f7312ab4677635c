#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for the tests (make slurm-smoke): munge, slurmctld and slurmd
# from Debian's packages (slurmctld slurmd slurm-client munge), run as root in the foreground (-D) in the
# background, without systemd or cgroups, with the configuration in workflow/slurm-test/slurm.conf.in and
# every state, log and pid file in one directory (the configuration is also copied to /etc/slurm/slurm.conf,
# where a job's own srun looks, and removed again; a slurm.conf of another cluster there stops the script).
#
#   workflow/scripts/slurm_cluster.sh run DIR CMD...   start the cluster in DIR, run CMD with SLURM_CONF set (sbatch,
#                                                      squeue and Snakemake's executor plugin talk to the cluster),
#                                                      stop everything it started, exit with CMD's status
#   workflow/scripts/slurm_cluster.sh start DIR        start it and leave it running (stop it with `stop DIR`)
#   workflow/scripts/slurm_cluster.sh stop DIR         stop what `start DIR` started
#
# One such cluster at a time on a machine: it listens on ports 6817-6818 (SLURM_TEST_PORT moves them) and
# uses /etc/slurm/slurm.conf.
#
# Exit status 3: the cluster cannot start here (not root, a daemon missing, or the node never came up);
# the reason is on stderr.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/../.." && pwd)"
TEMPLATE="$HERE/workflow/slurm-test/slurm.conf.in"      # and gres.conf beside it
PORT="${SLURM_TEST_PORT:-6817}"      # slurmctld; slurmd listens on the next port
ETC_CONF=/etc/slurm/slurm.conf       # where SLURM's commands look when SLURM_CONF is not set

die() { echo "slurm_cluster.sh: $*" >&2; exit 3; }

start() {
  local state="$1"
  [ "$(id -u)" -eq 0 ] || die "must run as root (slurmd starts jobs as their user)"
  for tool in munged mungekey slurmctld slurmd sbatch squeue sinfo scontrol; do
    command -v "$tool" >/dev/null || die "$tool not found: apt-get install slurmctld slurmd slurm-client munge"
  done
  mkdir -p "$state/ctld" "$state/slurmd"
  state="$(cd "$state" && pwd)"
  local cpus mem
  cpus="${SLURM_TEST_CPUS:-$(( $(nproc) > 8 ? $(nproc) : 8 ))}"     # the profile's set-threads ask for up to 8
  mem="$(awk '/^MemTotal/ {print int($2 / 1024)}' /proc/meminfo)"
  sed -e "s|@HOST@|$(hostname -s)|g" -e "s|@PORT@|$PORT|g" -e "s|@DPORT@|$((PORT + 1))|g" \
      -e "s|@STATE@|$state|g" -e "s|@CPUS@|$cpus|g" -e "s|@MEM@|$mem|g" "$TEMPLATE" > "$state/slurm.conf"
  sed -e "s|@STATE@|$state|g" "$HERE/workflow/slurm-test/gres.conf" > "$state/gres.conf"
  for i in 0 1 2 3; do ln -sfn /dev/null "$state/gpu$i"; done
  export SLURM_CONF="$state/slurm.conf"
  # a job's own srun (Snakemake's jobstep plugin) runs with no SLURM_* variables, so it reads the default
  # path: the configuration goes there too, unless a real cluster's is there
  if [ -f "$ETC_CONF" ] && ! grep -qx "ClusterName=srdiv-test" "$ETC_CONF"; then
    die "$ETC_CONF is another cluster's configuration: not replaced"
  fi
  mkdir -p "$(dirname "$ETC_CONF")"
  cp "$state/slurm.conf" "$ETC_CONF"

  [ -f "$state/munge.key" ] || mungekey --create --keyfile="$state/munge.key"
  chmod 600 "$state/munge.key"
  munged --force --key-file="$state/munge.key" --socket="$state/munge.socket" --pid-file="$state/munged.pid" \
         --log-file="$state/munged.log" --seed-file="$state/munged.seed" || die "munged did not start ($state/munged.log)"
  slurmctld -D -i > "$state/slurmctld.out" 2>&1 &
  echo $! > "$state/slurmctld.daemon"
  slurmd -D -N srdiv-node > "$state/slurmd.out" 2>&1 &
  echo $! > "$state/slurmd.daemon"
  local i
  for i in $(seq 60); do       # the node answers "idle" once slurmd has registered with the controller
    if sinfo -h -n srdiv-node -o %t 2>/dev/null | grep -qx idle; then
      echo "slurm_cluster.sh: cluster up in $state (SLURM_CONF=$SLURM_CONF; partitions cpu, gpu)"
      return 0
    fi
    sleep 1
  done
  tail -n 20 "$state"/slurmctld.log "$state"/slurmd.log >&2 2>/dev/null || true
  stop "$state"
  die "the node did not come up within 60 s (logs in $state)"
}

stop() {
  local state="$1" pidfile pid
  export SLURM_CONF="$state/slurm.conf"
  # jobs still running, then the daemons this script started (each by its recorded pid), munged last
  [ -f "$state/slurm.conf" ] && scancel --full --user="$(id -un)" >/dev/null 2>&1 || true
  for pidfile in "$state/slurmd.daemon" "$state/slurmctld.daemon" "$state/munged.pid"; do
    [ -f "$pidfile" ] || continue
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile"
  done
  if [ -f "$ETC_CONF" ] && cmp -s "$ETC_CONF" "$state/slurm.conf"; then rm -f "$ETC_CONF"; fi
}

case "${1:-}" in
  start) [ $# -eq 2 ] || die "usage: $0 start DIR"; start "$2" ;;
  stop)  [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  run)
    [ $# -ge 3 ] || die "usage: $0 run DIR CMD..."
    state="$2"; shift 2
    trap 'stop "$state"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    start "$state"
    status=0
    "$@" || status=$?
    exit "$status" ;;
  *) echo "usage: $0 {run DIR CMD...|start DIR|stop DIR}" >&2; exit 2 ;;
esac
