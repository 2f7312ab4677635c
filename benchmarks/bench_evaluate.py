"""srdiv's evaluator beside pyndeval on the TREC Web Track Lemur run: medians, ratio, machine.

    python benchmarks/bench_evaluate.py [--repeats 15]

The collection is built from the vendored TREC files (``data/external/trec-web-2009-2012``: 198 judged
topics of the 200, the Lemur run of Hu et al.). Two runs: the whole Lemur run (up to 962 documents a
topic) and its top 50. For each, in one process, one after the other:

* ``pyndeval``: ``RelevanceEvaluator(qrels, measures).evaluate(run)`` (ndeval's C code: it reads the
  qrels and builds its ideal rankings each time) on qrels and run already as pyndeval objects;
* ``srdiv, ideal built once``: ``DiversityEvaluator.evaluate(run frame)`` with the evaluator made before;
* ``srdiv, ideal built``: the evaluator (ideal rankings) made, then the run frame checked and evaluated;
* ``srdiv evaluate``: what the command does with one run: the TREC run file read (``load_run``), then
  checked, ordered and evaluated by an evaluator made for it (``DiversityEvaluator(qrels).evaluate(run,
  path, qids)``).

Both compute the same measures (``MEASURES``: alpha-nDCG, ERR-IA, nERR-IA, P-IA, S-recall @5/10/20,
NRBP, nNRBP); the values are checked equal (1e-9) before timing. Times are CPU seconds of this process
(``time.process_time``): every step is single-threaded, and CPU time is what another job on the machine
changes least.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyndeval

from srdiv.collection.trec_web import build_trec_web
from srdiv.metrics.evaluate import MEASURES, DiversityEvaluator
from srdiv.metrics.runs import load_run, order_run, write_trec_run
from srdiv.provenance import cpu_name

ROOT = Path(__file__).resolve().parents[1]
NDEVAL = {"alpha_nDCG": "alpha-nDCG", "ERR_IA": "ERR-IA", "nERR_IA": "nERR-IA", "P_IA": "P-IA",
          "StRecall": "strec", "NRBP": "NRBP", "nNRBP": "nNRBP"}


def ndeval_name(measure: str) -> str:
    base, _, k = measure.partition("@")
    return NDEVAL[base] + (f"@{k}" if k else "")


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(1000 * (time.process_time() - start))
    return statistics.median(times)



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    coll, _ = build_trec_web(ROOT / "data" / "external" / "trec-web-2009-2012")
    qrels = coll.qrels
    nd_qrels = [pyndeval.SubtopicQrel(q, s, d, int(g))
                for q, s, d, g in qrels[["qid", "sid", "docno", "grade"]].itertuples(index=False)]
    names = [ndeval_name(m) for m in MEASURES]
    whole = order_run(coll.run)
    print(f"Machine: {cpu_name()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"numpy {np.__version__}, pandas {pd.__version__}; CPU ms, medians of {args.repeats} runs.\n")
    print("| run | lines | depth | pyndeval | srdiv, ideal built once | ratio | srdiv, ideal built | ratio "
          "| srdiv evaluate (file read) | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for label, run in (("Lemur, whole", whole), ("Lemur, top 50", whole[whole["rank"] <= 50])):
            path = Path(tmp) / "run.txt"
            write_trec_run(run, path, tag="lemur")
            scored = [pyndeval.ScoredDoc(q, d, -float(r)) for q, d, r in run[["qid", "docno", "rank"]].itertuples(index=False)]
            evaluator = DiversityEvaluator(qrels)

            def ours():
                return evaluator.evaluate(run)

            def built():
                return DiversityEvaluator(qrels).evaluate(run)

            def command():
                return DiversityEvaluator(qrels).evaluate(load_run(path), path, coll.qids)

            def oracle():
                return pyndeval.RelevanceEvaluator(nd_qrels, names).evaluate(scored)

            got = command().pivot(index="qid", columns="measure", values="value")
            want = pd.DataFrame({q: {m: v[ndeval_name(m)] for m in MEASURES} for q, v in oracle().items()}).T
            diff = (got.loc[want.index, MEASURES] - want[MEASURES].fillna(0.0)).abs().to_numpy().max()
            if diff > 1e-9:
                raise SystemExit(f"{label}: srdiv and pyndeval differ by {diff}")
            nd, once, build, cmd = (median_ms(fn, args.repeats) for fn in (oracle, ours, built, command))
            print(f"| {label} | {len(run)} | {int(run['rank'].max())} | {nd:.1f} | {once:.1f} | {nd / once:.1f}x "
                  f"| {build:.1f} | {nd / build:.1f}x | {cmd:.1f} | {nd / cmd:.1f}x |")


if __name__ == "__main__":
    main()
