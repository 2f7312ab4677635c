"""``srdiv evaluate`` beside the ``ir_measures`` command line and a pyndeval script, end to end and in process.

    python scripts/bench_evaluate_cli.py [--repeats 7] [--big-lines 2000000] [--big-repeats 3]

Inputs: each TREC Web Track year's diversity qrels and the Lemur run of that year
(``data/external/trec-web-2009-2012``), and a run of ``--big-lines`` lines made here against the 2012
qrels (every topic, documents drawn from the judged ones and made-up ones, random scores, ranks in score
order). Every tool computes the seventeen official measures (``srdiv.metrics.evaluate.MEASURES``).

* End to end, one process per call, run one after the other for each repeat: ``srdiv evaluate QRELS RUN
  MEASURES...``, ``ir_measures QRELS RUN MEASURES...`` and a pyndeval script (the files read line by line
  into pyndeval's tuples, ``pyndeval.ndeval``, the means printed). CPU seconds (user + system) and peak
  resident memory of each process come from GNU time (``/usr/bin/time``); wall seconds too.
* In process (CPU seconds of this process): pyndeval's ``RelevanceEvaluator(qrels, measures).evaluate(run)``
  on its tuples already in memory; srdiv's :func:`srdiv.metrics.evaluate_files.evaluate_files` from the
  files (read, checked, ideal rankings built, evaluated); and srdiv from its own coded arrays in memory
  (``DiversityEvaluator(labels).values(topic, doc, rank)``: ideal rankings built, run evaluated).
* Values: srdiv's per-query values against pyndeval's on the run ordered by its ranks (pyndeval given the
  score ``-rank``): the share of values bit-identical, and the largest difference in units in the last place.

Medians of the repeats; ratios are the other tool's time over srdiv's (above 1: srdiv faster).
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
from srdiv.metrics.evaluate_files import evaluate_files, quick_qrels, quick_run
from srdiv.metrics.names import parse_measure
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



def timed_process(command: list[str], report: Path) -> tuple[float, float, float]:
    """``(CPU s, wall s, peak MB)`` of one process running ``command`` (its output discarded), as GNU
    time measures it: this process, grown by the tuples it holds, would otherwise lend its own resident
    memory to the peak of the child it forks."""
    done = subprocess.run(["/usr/bin/time", "-o", str(report), "-f", "%U %S %e %M", *command],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}")
    user, system, wall, peak_kb = map(float, report.read_text().split()[-4:])
    return user + system, wall, peak_kb / 1024


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
    q = [pyndeval.SubtopicQrel(a, b, c, int(g)) for a, b, c, g in (line.split() for line in open(qrels))]
    r = [pyndeval.ScoredDoc(a, c, -float(rank) if by_rank else float(s))
         for a, _, c, rank, s, _ in (line.split() for line in open(run))]
    return q, r


def agreement(qrels: Path, run: Path, measures) -> tuple[float, int, int]:
    """``(share of bit-identical values, largest ulp apart, values compared)`` of srdiv and pyndeval by rank."""
    q, r = read_pyndeval(qrels, run, by_rank=True)
    theirs = pyndeval.RelevanceEvaluator(q, [ndeval_name(m) for m in MEASURES]).evaluate(r)
    ours = evaluate_files(qrels, run, measures)
    mine, other = [], []
    for qid, row in zip(ours.qids, ours.values):
        if qid in theirs:
            mine += list(row)
            other += [theirs[qid][ndeval_name(m)] for m in MEASURES]
    a, b = np.array(mine), np.array(other)
    ulp = np.abs(a.view(np.int64) - b.view(np.int64))
    return float((ulp == 0).mean()), int(ulp.max()), len(a)


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
        script = tmp / "pyndeval_script.py"
        script.write_text(PYNDEVAL_SCRIPT)
        inputs = [(f"wt{y}", TREC / "qrels" / f"{y}.diversity.qrels", TREC / "runs" / f"wt{y}.txt", args.repeats)
                  for y in (2009, 2010, 2011, 2012)]
        if args.big_lines:
            big_run(TREC / "qrels" / "2012.diversity.qrels", args.big_lines, tmp / "big.txt")
            inputs.append((f"{args.big_lines:,} lines", TREC / "qrels" / "2012.diversity.qrels", tmp / "big.txt",
                           args.big_repeats))
        end, inproc, agree = [], [], []
        for label, qrels, run, repeats in inputs:
            commands = {
                "srdiv evaluate": [str(BIN / "srdiv"), "evaluate", str(qrels), str(run), *MEASURES],
                "ir_measures": [str(BIN / "ir_measures"), str(qrels), str(run), *MEASURES],
                "pyndeval script": [sys.executable, str(script), str(qrels), str(run),
                                    *[ndeval_name(m) for m in MEASURES]],
            }
            samples = {name: [] for name in commands}
            for _ in range(repeats):
                for name, command in commands.items():
                    samples[name].append(timed_process(command, tmp / "time.txt"))
            end.append((label, sum(1 for _ in open(run)), {n: [statistics.median(s[i] for s in v) for i in range(3)]
                                                           for n, v in samples.items()}))
            q, r = read_pyndeval(qrels, run)
            names = [ndeval_name(m) for m in MEASURES]
            labels = quick_qrels(qrels)
            coded = quick_run(run, DiversityEvaluator(labels), False, "ndeval")
            times = {"pyndeval": [], "srdiv": [], "srdiv coded": []}
            for _ in range(repeats):
                start = time.process_time()
                pyndeval.RelevanceEvaluator(q, names).evaluate(r)
                times["pyndeval"].append(time.process_time() - start)
                start = time.process_time()
                evaluate_files(qrels, run, measures)
                times["srdiv"].append(time.process_time() - start)
                start = time.process_time()
                DiversityEvaluator(labels).values(coded.topic, coded.doc, coded.rank)
                times["srdiv coded"].append(time.process_time() - start)
            inproc.append((label, {n: statistics.median(v) for n, v in times.items()}))
            agree.append((label, *agreement(qrels, run, measures)))
    print(f"Machine: {cpu_name()}, {os.cpu_count()} cores, load average {load[0]:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end; numpy {np.__version__}, Python {platform.python_version()}; "
          f"medians of {args.repeats} repeats ({args.big_repeats} for the big run).\n")
    print("End to end, one process each: CPU s (wall s), peak MB; ratio = the other's CPU s / srdiv's\n")
    print("| run | lines | srdiv evaluate | ir_measures | ratio | pyndeval script | ratio "
          "| srdiv MB | ir_measures MB | pyndeval MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, lines, t in end:
        s, i, p = t["srdiv evaluate"], t["ir_measures"], t["pyndeval script"]
        print(f"| {label} | {lines:,} | {s[0]:.3f} ({s[1]:.3f}) | {i[0]:.3f} ({i[1]:.3f}) | {i[0] / s[0]:.2f}x "
              f"| {p[0]:.3f} ({p[1]:.3f}) | {p[0] / s[0]:.2f}x | {s[2]:.0f} | {i[2]:.0f} | {p[2]:.0f} |")
    print("\nIn process, CPU ms: pyndeval from its tuples in memory; srdiv from the files, and from its coded "
          "arrays in memory (evaluator made, run evaluated)\n")
    print("| run | pyndeval | srdiv, files | ratio | srdiv, coded | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, t in inproc:
        p, f, c = (1000 * t[k] for k in ("pyndeval", "srdiv", "srdiv coded"))
        print(f"| {label} | {p:.1f} | {f:.1f} | {p / f:.1f}x | {c:.1f} | {p / c:.1f}x |")
    print("\nValues against pyndeval by rank\n")
    print("| run | values | bit-identical | largest difference |")
    print("|---|---:|---:|---:|")
    for label, share, ulp, n in agree:
        print(f"| {label} | {n} | {100 * share:.1f} % | {ulp} ulp |")


if __name__ == "__main__":
    main()
