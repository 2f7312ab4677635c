"""workflow/scripts/replay_schedule.py: the replay of a DAG under cores and gpu slots, on hand-worked cases."""

import importlib.util
import sys

from helpers import ROOT

spec = importlib.util.spec_from_file_location("replay_schedule", ROOT / "workflow" / "scripts" / "replay_schedule.py")
replay_schedule = sys.modules["replay_schedule"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(replay_schedule)
Job, replay = replay_schedule.Job, replay_schedule.replay


def test_jobs_wait_for_cores_gpu_slots_and_the_jobs_they_read():
    # a (10 s) -> b (30 s, gpu), c (20 s, gpu), d (5 s, cpu); e (1 s) reads b, c and d
    jobs = [Job("a", "samples", "", 1, []), Job("b", "train", "X", 1, [0]), Job("c", "train", "Y", 1, [0]),
            Job("d", "train", "Z", 1, [0]), Job("e", "report", "", 1, [1, 2, 3])]
    seconds, gpu = [10, 30, 20, 5, 1], [0, 1, 1, 0, 0]
    # 3 cores, 2 slots: b, c, d at 10; b ends at 40; e at 40-41; train span 10-40
    assert replay(jobs, seconds, gpu, cores=3, slots=2, longest_first=True) == (41, 10, 40)
    # one slot: b then c (longest first) -> 10 + 30 + 20, e ends at 61
    assert replay(jobs, seconds, gpu, cores=3, slots=1, longest_first=True) == (61, 10, 60)
    # one core: every job in turn, 10 + 30 + 20 + 5 + 1
    assert replay(jobs, seconds, gpu, cores=1, slots=2, longest_first=False)[0] == 66
    # shortest first on 2 cores, 2 slots: d and c at 10, d ends 15 -> b at 15, ends 45; e 45-46
    assert replay(jobs, seconds, gpu, cores=2, slots=2, longest_first=False) == (46, 10, 45)


def test_before_the_train_job_ranked_a_rank_job_followed_it():
    jobs = [Job("samples", "samples", "", 1, []), Job("train A 1", "train", "A", 1, [0]),
            Job("train B 1", "train", "B", 1, [0, 1]), Job("evaluate A 1", "evaluate", "A", 1, [1])]
    before = replay_schedule.with_rank_jobs(jobs)
    assert [(job.name, job.needs) for job in before] == [
        ("samples", []), ("train A 1", [0]), ("rank A 1", [1]),
        ("train B 1", [0, 1]),          # its prior's model, not the prior's run
        ("rank B 1", [3]), ("evaluate A 1", [2])]
