"""Print the papers' comparisons on a results directory: mean α-nDCG@20 difference and paired t-test.

    python scripts/findings.py results/wordnet-div [more pairs as A:B ...]

Each pair A:B is "A - B" over the queries both rows were tested on (each query once, in its test
fold), with the two-tailed paired t-test the report's tables use. The default pairs are the papers'
claims the README discusses.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from srdiv.metrics.stats import paired_pvalues, per_query
from srdiv.report.builder import with_run_labels

PAIRS = [("DSSA", "xQuAD"), ("HDSSA", "HxQuAD"), ("DESA", "DSSA"), ("R-LTR-NTN", "R-LTR"), ("PAMM-NTN", "PAMM"),
         ("DALETOR", "Cosine"), ("MDP-DIV", "Random"), ("Cosine", "Initial"), ("Cosine", "Random"),
         ("ListMLE", "Initial"), ("HDSSA", "DSSA")]


def main(results: Path, pairs: list[tuple[str, str]], measure: str = "alpha_nDCG@20") -> None:
    metrics = with_run_labels(pd.read_parquet(results / "metrics.parquet"))
    wide = per_query(metrics, measure)
    print(f"| {measure}: A - B | A | B | difference | p (paired t-test) | queries |")
    print("|---|---:|---:|---:|---:|---:|")
    for a, b in pairs:
        if a not in wide or b not in wide:
            print(f"| {a} - {b} | (not in {results}) | | | | |")
            continue
        pair = wide[[a, b]].dropna()
        p = paired_pvalues(pair, b)[a]
        print(f"| {a} - {b} | {pair[a].mean():.3f} | {pair[b].mean():.3f} | {pair[a].mean() - pair[b].mean():+.3f} "
              f"| {p:.2g} | {len(pair)} |")


if __name__ == "__main__":
    extra = [tuple(arg.split(":", 1)) for arg in sys.argv[2:]]
    main(Path(sys.argv[1]), extra or PAIRS)
