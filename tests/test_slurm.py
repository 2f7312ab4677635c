"""make slurm-smoke: the smoke DAG through workflow/profiles/slurm on a one-node SLURM cluster that the test
starts and stops (workflow/scripts/slurm_cluster.sh), with the same results as make smoke, byte for byte."""

import os
import re
import shutil
import subprocess

import pytest

from helpers import BIN, fresh_clone

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
    out = subprocess.run(["bash", "workflow/scripts/slurm_cluster.sh", "run", str(state),
                          "bash", "-c", f"{job} && {pids}"],
                         capture_output=True, text=True, cwd=slurm_project, timeout=300)
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
    out = subprocess.run(make + ["slurm-smoke"], capture_output=True, text=True, cwd=slurm_project, env=env)
    log = out.stdout + out.stderr
    if "slurm_cluster.sh:" in log and out.returncode != 0 and "cluster up" not in log:
        _skip_or_fail(log[-2000:])
    assert out.returncode == 0, log[-5000:]
    assert "byte-identical to make smoke's" in log, log[-3000:]
    # a job the main scheduler starts logs "sched: Allocate JobId=N", one the backfill scheduler starts
    # "sched/backfill: _start_job: Started JobId=N"
    ctld = (slurm_project / "work/slurm-smoke/cluster/slurmctld.log").read_text()
    started = set(re.findall(r"(?:sched: Allocate|_start_job: Started) JobId=(\d+)", ctld))
    assert len(started) == log.count("has been submitted with SLURM jobid") > 0, sorted(started)
    assert re.search(r"in partition gpu, [1-9][0-9]* of them with a GPU", log), log[-3000:]
