"""make slurm-smoke: the smoke DAG through workflow/profiles/slurm on a one-node SLURM cluster that the test
starts and stops (workflow/scripts/slurm_cluster.sh), with the same results as make smoke, byte for byte."""

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import BIN, fresh_clone

pytestmark = pytest.mark.slurm      # make test-slow runs these alone, after the other slow tests

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel")


def cannot_start() -> str | None:
    """Why the test cluster cannot start on this machine, or None."""
    if os.geteuid() != 0:
        return "needs root (slurmd starts each job as its user)"
    missing = [tool for tool in DAEMONS if shutil.which(tool) is None]
    if missing:
        return (f"needs Debian's SLURM and munge ({', '.join(missing)} not found): "
                "apt-get install slurmctld slurmd slurm-client munge (.ci/run does)")
    return None


def _skip_or_fail(reason: str) -> None:
    """Outside CI, a machine without the cluster skips the test; in CI (CI=true), it fails."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and the SLURM test cluster cannot start: {reason}")
    pytest.skip(reason)


def log_tails(cluster: Path, lines: int = 30) -> str:
    """The last lines of each of the cluster's daemon logs, for a failure's message."""
    return "".join(f"\n--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
                   for log in sorted(cluster.glob("*.log")))


def run_bounded(cmd: list, cwd: Path, timeout: int, cluster: Path, **kw) -> subprocess.CompletedProcess:
    """Run cmd in its own session; past timeout seconds, stop it all (the cluster's script stops its daemons on
    SIGTERM) and fail with the ends of its output and of the cluster's logs, instead of hanging the suite."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kw)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        pytest.fail(f"{' '.join(map(str, cmd))} ran past {timeout} s\n{(out + err)[-4000:]}{log_tails(cluster)}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.fixture(scope="module")
def slurm_project(tmp_path_factory):
    reason = cannot_start()
    if reason:
        _skip_or_fail(reason)
    return fresh_clone(tmp_path_factory.mktemp("slurm-project"))


@pytest.mark.slow
def test_the_cluster_runs_a_job_and_stops_what_it_started(slurm_project):
    state = slurm_project / "cluster"
    job = "sbatch --wait --parsable -p gpu --gpus=1 -o job.out --wrap 'echo ran in $SLURM_JOB_PARTITION with $SLURM_GPUS GPU'"
    pids = f"cat {state}/slurmctld.daemon {state}/slurmd.daemon {state}/munged.pid"
    cmd = ["bash", "workflow/scripts/slurm_cluster.sh", "run", str(state), "bash", "-c", f"{job} && {pids}"]
    out = run_bounded(cmd, slurm_project, 300, state)
    if out.returncode == 3:
        _skip_or_fail(out.stderr.strip())
    assert out.returncode == 0, out.stdout + out.stderr
    assert (slurm_project / "job.out").read_text() == "ran in gpu with 1 GPU\n"
    daemons = [int(pid) for pid in out.stdout.split()[-3:]]      # after the job's id
    assert len(daemons) == 3 and not [pid for pid in daemons if os.path.exists(f"/proc/{pid}")], daemons
    etc = "/etc/slurm/slurm.conf"      # the copy the script put there for the jobs' srun is gone again
    assert not os.path.exists(etc) or "ClusterName=srdiv-test" not in open(etc).read()


@pytest.mark.slow
def test_slurm_smoke_gives_make_smokes_results(slurm_project):
    """make smoke, then make slurm-smoke (the smoke DAG through the profile, every job a SLURM job, train jobs
    in the cluster's "gpu" partition), which compares metrics, tables and each job's run byte for byte."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    make = ["make", "-o", str(BIN.parent / ".srdiv-installed"), f"VENV={BIN.parent}"]
    cluster = slurm_project / "work/slurm-smoke/cluster"
    out = run_bounded(make + ["slurm-smoke"], slurm_project, 2400, cluster, env=env)
    log = out.stdout + out.stderr
    if "slurm_cluster.sh:" in log and out.returncode != 0 and "cluster up" not in log:
        _skip_or_fail(log[-2000:])
    assert out.returncode == 0, log[-5000:] + log_tails(cluster)
    assert "byte-identical to make smoke's" in log, log[-3000:]
    # a job the main scheduler starts logs "sched: Allocate JobId=N", one the backfill scheduler starts
    # "sched/backfill: _start_job: Started JobId=N"
    ctld = (cluster / "slurmctld.log").read_text()
    started = set(re.findall(r"(?:sched: Allocate|_start_job: Started) JobId=(\d+)", ctld))
    assert len(started) == log.count("has been submitted with SLURM jobid") > 0, sorted(started)
    assert re.search(r"in partition gpu, [1-9][0-9]* of them with a GPU", log), log[-3000:]


def test_a_command_past_its_time_fails_and_leaves_nothing_running(tmp_path):
    (tmp_path / "slurmctld.log").write_text("the controller's last line\n")
    cmd = ["bash", "-c", f"sleep 300 & echo $! > {tmp_path}/child; echo started; wait"]
    with pytest.raises(pytest.fail.Exception, match=r"ran past 2 s\nstarted\n\n--- slurmctld.log\nthe controller's"):
        run_bounded(cmd, tmp_path, 2, tmp_path)
    child = f"/proc/{(tmp_path / 'child').read_text().strip()}/stat"
    for _ in range(50):     # gone, or a zombie waiting for its reaper
        if not os.path.exists(child) or open(child).read().split(")")[-1].split()[0] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail("the command's background child still runs")
