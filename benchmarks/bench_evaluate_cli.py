"""``srdiv evaluate`` beside the ``ir_measures`` command line and a pyndeval script, end to end and in process.

    python benchmarks/bench_evaluate_cli.py [--repeats 7] [--big-lines 2000000] [--big-repeats 3]

Inputs: each TREC Web Track year's diversity qrels and the Lemur run of that year
(``data/external/trec-web-2009-2012``), and a run of ``--big-lines`` lines made here against the 2012
qrels (every topic, documents drawn from the judged ones and made-up ones, random scores, ranks in score
order). Every tool computes the seventeen official measures (``srdiv.metrics.evaluate.MEASURES``).

* End to end, one process per call, the three run one after the other in each repeat: ``srdiv evaluate QRELS
  RUN MEASURES...``, ``ir_measures QRELS RUN MEASURES...`` and a pyndeval script (the files read line by line
  into pyndeval's tuples, ``pyndeval.ndeval``, the means printed). Each process runs under GNU time
  (``/usr/bin/time``), which gives its peak resident memory; its CPU seconds (user + system) are those this
  script reads for the finished GNU time process (``os.wait4``, to the microsecond), less GNU time's own
  (the median of it running ``true``). All three load compiled bytecode from one cache folder
  (``PYTHONPYCACHEPREFIX``, filled by a first, untimed call of each): none compiles its sources in the timed calls.
* In process (CPU seconds of this process), two comparisons. From the files: pyndeval's script's work (the
  files read into its tuples, then ``RelevanceEvaluator(qrels, measures).evaluate(run)``) beside srdiv's
  :func:`srdiv.metrics.evaluate_files.evaluate_files` (the files read and checked, the ideal rankings
  built, the run evaluated). From memory: pyndeval's ``evaluate`` on its tuples already made beside srdiv
  on its coded arrays (``DiversityEvaluator(labels).values(topic, doc, rank)``: ideal rankings built, run
  evaluated).
* Values: srdiv's per-query values against pyndeval's, by rank (pyndeval given the score ``-rank``) and by
  score (srdiv ``--by-score --ties pyndeval``, pyndeval on the scores, as the script gives them): the share of
  values bit-identical, and the largest difference in units in the last place.

Medians of the repeats; ratios are the other tool's time (or memory) over srdiv's (above 1: srdiv faster, or
smaller).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyndeval

from srdiv.metrics.evaluate import MEASURES, DiversityEvaluator
from srdiv.metrics.evaluate_files import evaluate_files
from srdiv.metrics.names import parse_measure
from srdiv.metrics.quick_read import quick_qrels, quick_run
from srdiv.provenance import cpu_name

ROOT = Path(__file__).resolve().parents[1]
TREC = ROOT / "data" / "external" / "trec-web-2009-2012"
BIN = Path(sys.executable).parent
NDEVAL = {"alpha_nDCG": "alpha-nDCG", "ERR_IA": "ERR-IA", "nERR_IA": "nERR-IA", "P_IA": "P-IA",
          "StRecall": "strec", "NRBP": "NRBP", "nNRBP": "nNRBP"}
PYNDEVAL_SCRIPT = '''
import sys
import pyndeval
qrels, run = [], []
with open(sys.argv[1]) as f:
    for line in f:
        q, s, d, g = line.split()
        qrels.append(pyndeval.SubtopicQrel(q, s, d, int(g)))
with open(sys.argv[2]) as f:
    for line in f:
        q, _, d, r, s, _ = line.split()
        run.append(pyndeval.ScoredDoc(q, d, float(s)))
measures = sys.argv[3:]
values = pyndeval.ndeval(qrels, run, measures)
for m in measures:
    print(m, "all", sum(v[m] for v in values.values()) / len(values), sep="\\t")
'''


def ndeval_name(measure: str) -> str:
    base, _, k = measure.partition("@")
    return NDEVAL[base] + (f"@{k}" if k else "")


def timed_process(command: list[str], report: Path, env: dict) -> tuple[float, float, float]:
    """``(CPU s, wall s, peak MB)`` of one process running ``command`` under GNU time (its output discarded);
    GNU time gives the peak: this process, grown by the tuples it holds, would otherwise lend its own resident
    memory to the peak of the child it forks."""
    start = time.perf_counter()
    child = subprocess.Popen(["/usr/bin/time", "-o", str(report), "-f", "%M", *command], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"failed: {' '.join(command)}")
    return usage.ru_utime + usage.ru_stime, wall, float(report.read_text().split()[-1]) / 1024


def big_run(qrels: Path, lines: int, path: Path) -> None:
    """A TREC run of ``lines`` lines over the judged topics of ``qrels``: every judged document and made-up
    ones, random scores (the judged ones' 3 higher on average), ranks in score order."""
    rng = np.random.default_rng(60)
    judged = {}
    for line in qrels.read_text().splitlines():
        q, _, d, _ = line.split()
        judged.setdefault(q, set()).add(d)
    per_topic = lines // len(judged)
    with path.open("w") as out:
        for q, docs in judged.items():
            docs = sorted(docs)
            made_up = [f"made-up-{q}-{i:08d}" for i in range(per_topic - len(docs))]
            chosen = np.array(docs + made_up)
            scores = rng.normal(size=per_topic) + 3.0 * (np.arange(per_topic) < len(docs))   # judged ones higher
            order = np.argsort(-scores, kind="stable")
            out.write("".join(f"{q} Q0 {d} {r} {s:.6f} big\n"
                              for r, (d, s) in enumerate(zip(chosen[order], scores[order]), 1)))


def read_pyndeval(qrels: Path, run: Path, by_rank: bool = False):
    """The pyndeval script's reading: the files' lines split into pyndeval's tuples."""
    q = []
    with open(qrels) as f:
        for line in f:
            a, b, c, g = line.split()
            q.append(pyndeval.SubtopicQrel(a, b, c, int(g)))
    r = []
    with open(run) as f:
        for line in f:
            a, _, c, rank, s, _ = line.split()
            r.append(pyndeval.ScoredDoc(a, c, -float(rank) if by_rank else float(s)))
    return q, r


def agreement(qrels: Path, run: Path, measures, by_score: bool) -> tuple[float, int, int]:
    """``(share of bit-identical values, largest ulp apart, values compared)`` of srdiv and pyndeval, by the
    run's ranks or (``by_score``) by its scores, equal scores by docno ascending as pyndeval orders them."""
    q, r = read_pyndeval(qrels, run, by_rank=not by_score)
    theirs = pyndeval.RelevanceEvaluator(q, [ndeval_name(m) for m in MEASURES]).evaluate(r)
    ours = evaluate_files(qrels, run, measures, by_score, "pyndeval" if by_score else "ndeval")
    mine, other = [], []
    for qid, row in zip(ours.qids, ours.values):
        if qid in theirs:
            mine += list(row)
            other += [theirs[qid][ndeval_name(m)] for m in MEASURES]
    a, b = np.array(mine), np.array(other)
    ulp = np.abs(a.view(np.int64) - b.view(np.int64))
    return float((ulp == 0).mean()), int(ulp.max()), len(a)


def end_to_end(qrels: Path, run: Path, repeats: int, tmp: Path, env: dict, overhead: float) -> dict:
    """``{tool: [CPU s, wall s, peak MB]}`` medians of ``repeats`` calls of each tool, one after the other."""
    commands = {
        "srdiv evaluate": [str(BIN / "srdiv"), "evaluate", str(qrels), str(run), *MEASURES],
        "ir_measures": [str(BIN / "ir_measures"), str(qrels), str(run), *MEASURES],
        "pyndeval script": [sys.executable, str(tmp / "pyndeval_script.py"), str(qrels), str(run),
                            *[ndeval_name(m) for m in MEASURES]],
    }
    samples = {name: [] for name in commands}
    for name, command in commands.items():         # bytecode into the cache folder, untimed
        timed_process(command, tmp / "time.txt", env)
    for _ in range(repeats):
        for name, command in commands.items():
            samples[name].append(timed_process(command, tmp / "time.txt", env))
    return {n: [statistics.median(s[i] for s in v) - (overhead if i == 0 else 0) for i in range(3)]
            for n, v in samples.items()}


def in_process(qrels: Path, run: Path, measures, repeats: int) -> dict:
    """CPU seconds (medians of ``repeats``) of each tool's work in this process, from the files and from memory."""
    names = [ndeval_name(m) for m in MEASURES]
    labels = quick_qrels(qrels)
    coded = quick_run(run, DiversityEvaluator(labels), False, "ndeval")
    times = {"pyndeval, files": [], "srdiv, files": [], "pyndeval, memory": [], "srdiv, memory": []}
    for _ in range(repeats):
        start = time.process_time()
        q, r = read_pyndeval(qrels, run)
        read = time.process_time()
        pyndeval.RelevanceEvaluator(q, names).evaluate(r)
        done = time.process_time()
        times["pyndeval, files"].append(done - start)
        times["pyndeval, memory"].append(done - read)
        del q, r
        start = time.process_time()
        evaluate_files(qrels, run, measures)
        times["srdiv, files"].append(time.process_time() - start)
        start = time.process_time()
        DiversityEvaluator(labels).values(coded.topic, coded.doc, coded.rank)
        times["srdiv, memory"].append(time.process_time() - start)
    return {n: statistics.median(v) for n, v in times.items()}


def gnu_time_overhead(tmp: Path, env: dict) -> float:
    """Median CPU seconds of GNU time running ``true``: its own share of every timed call."""
    return statistics.median(timed_process(["true"], tmp / "time.txt", env)[0] for _ in range(21))


def print_tables(args, load: tuple[float, float], overhead: float, end: list, inproc: list, agree: list) -> None:
    print(f"Machine: {cpu_name()}, {os.cpu_count()} cores, load average {load[0]:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end; numpy {np.__version__}, Python {platform.python_version()}; "
          f"medians of {args.repeats} repeats ({args.big_repeats} for the big run); GNU time's own "
          f"{1000 * overhead:.1f} ms subtracted from each CPU time.\n")
    print("End to end, one process each: CPU s (wall s), peak MB; ratio = the other's / srdiv's\n")
    print("| run | lines | srdiv evaluate | ir_measures | ratio | pyndeval script | ratio "
          "| srdiv MB | ir_measures MB | ratio | pyndeval MB | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, lines, t in end:
        s, i, p = t["srdiv evaluate"], t["ir_measures"], t["pyndeval script"]
        print(f"| {label} | {lines:,} | {s[0]:.3f} ({s[1]:.3f}) | {i[0]:.3f} ({i[1]:.3f}) | {i[0] / s[0]:.2f}x "
              f"| {p[0]:.3f} ({p[1]:.3f}) | {p[0] / s[0]:.2f}x | {s[2]:.1f} | {i[2]:.1f} | {i[2] / s[2]:.2f} "
              f"| {p[2]:.1f} | {p[2] / s[2]:.2f} |")
    print("\nIn process, CPU ms. From the files: pyndeval = the script's reading into tuples + its evaluation; "
          "srdiv = evaluate_files (read, checked, ideal rankings built, evaluated). From memory: pyndeval on its "
          "tuples; srdiv on its coded arrays (ideal rankings built, evaluated)\n")
    print("| run | pyndeval, files | srdiv, files | ratio | pyndeval, memory | srdiv, memory | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, t in inproc:
        pf, sf, pm, sm = (1000 * t[k] for k in ("pyndeval, files", "srdiv, files", "pyndeval, memory", "srdiv, memory"))
        print(f"| {label} | {pf:.1f} | {sf:.1f} | {pf / sf:.1f}x | {pm:.1f} | {sm:.1f} | {pm / sm:.1f}x |")
    print("\nValues against pyndeval, every judged topic and measure\n")
    print("| run | order | values | bit-identical | largest difference |")
    print("|---|---|---:|---:|---:|")
    for label, order, share, ulp, n in agree:
        print(f"| {label} | {order} | {n} | {100 * share:.1f} % | {ulp} ulp |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--big-lines", type=int, default=2_000_000)
    parser.add_argument("--big-repeats", type=int, default=3)
    args = parser.parse_args()
    measures = [parse_measure(m) for m in MEASURES]
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        (tmp / "pyndeval_script.py").write_text(PYNDEVAL_SCRIPT)
        overhead = gnu_time_overhead(tmp, env)
        inputs = [(f"wt{y}", TREC / "qrels" / f"{y}.diversity.qrels", TREC / "runs" / f"wt{y}.txt", args.repeats)
                  for y in (2009, 2010, 2011, 2012)]
        if args.big_lines:
            big_run(TREC / "qrels" / "2012.diversity.qrels", args.big_lines, tmp / "big.txt")
            inputs.append((f"{args.big_lines:,} lines", TREC / "qrels" / "2012.diversity.qrels", tmp / "big.txt",
                           args.big_repeats))
        end, inproc, agree = [], [], []
        for label, qrels, run, repeats in inputs:
            lines = sum(1 for _ in open(run))
            end.append((label, lines, end_to_end(qrels, run, repeats, tmp, env, overhead)))
            inproc.append((label, in_process(qrels, run, measures, repeats)))
            for by_score in (False, True):
                agree.append((label, "by score" if by_score else "by rank", *agreement(qrels, run, measures, by_score)))
    print_tables(args, load, overhead, end, inproc, agree)


if __name__ == "__main__":
    main()
