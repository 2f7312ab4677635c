"""The findings of docs/findings.md, computed from committed results: mean differences with paired t-tests.

    python -m srdiv.report.findings wordnet-div/DSSA:wordnet-div/xQuAD wordnet-div-oracle/DSSA:wordnet-div/DSSA

A side is ``<results directory under results/>/<row>``; ``A:B`` is "A - B" over the queries both were tested
on, which must be the same (each query once, in the test fold of its trial), with the two-tailed paired
t-test of the tables. Rows of two directories of one collection compare query by query (the oracle study
against the main table); rows of two collections do not compare.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pandas as pd

from srdiv.metrics.names import HEADLINE
from srdiv.metrics.stats import paired_pvalues, per_query
from srdiv.report.specs import with_run_labels

RESULTS = Path("results")


@cache
def _wide(results: Path, measure: str) -> pd.DataFrame:
    """``[queries, runs]`` of one measure in one results directory."""
    path = results / "metrics.parquet"
    if not path.exists():
        raise SystemExit(f"{path}: no such results (run its make target first)")
    return per_query(with_run_labels(pd.read_parquet(path)), measure)


def _side(name: str, measure: str, results: Path) -> pd.Series:
    directory, _, row = name.rpartition("/")
    wide = _wide(results / directory, measure)
    if row not in wide:
        raise SystemExit(f"{results / directory}: no row {row!r} (rows: {', '.join(wide.columns)})")
    return wide[row]


def compare(pairs: list[tuple[str, str]], measure: str = HEADLINE, results: Path = RESULTS) -> str:
    """A Markdown table: per pair, the two means, A - B, the paired t-test's p and the number of queries."""
    lines = [f"| {measure}: A - B | A | B | difference | p (paired t-test) | queries |",
             "|---|---:|---:|---:|---:|---:|"]
    for a, b in pairs:
        sides = {"A": _side(a, measure, results).dropna(), "B": _side(b, measure, results).dropna()}
        if set(sides["A"].index) != set(sides["B"].index):    # other queries: another collection, or a subset
            raise SystemExit(f"{a} and {b} were not tested on the same queries: no paired comparison")
        pair = pd.concat(sides, axis=1)
        p = paired_pvalues(pair, "B")["A"]
        lines.append(f"| {a} - {b} | {pair['A'].mean():.3f} | {pair['B'].mean():.3f} | "
                     f"{pair['A'].mean() - pair['B'].mean():+.3f} | {p:.2g} | {len(pair)} |")
    return "\n".join(lines)


def gain_shares(rows: list[str], realistic: str, oracle: str, base: str = "Initial",
                measure: str = HEADLINE, results: Path = RESULTS) -> str:
    """A Markdown table: per row, its mean with the ``realistic`` directory's aspects and with the ``oracle``
    directory's, each over ``base`` (the shared initial run), and the share of the oracle's gain the
    realistic aspects reach: ``(realistic - base) / (oracle - base)`` (the leakage page's figure 4, per row)."""
    lines = [f"| {measure} | {base} | with suggestions | with oracle aspects | share of the oracle gain |",
             "|---|---:|---:|---:|---:|"]
    for row in rows:
        real, orc = _side(f"{realistic}/{row}", measure, results), _side(f"{oracle}/{row}", measure, results)
        start = _side(f"{realistic}/{base}", measure, results)
        if not (set(real.dropna().index) == set(orc.dropna().index) == set(start.dropna().index)):
            raise SystemExit(f"{realistic}/{row} and {oracle}/{row} were not tested on the same queries")
        gain, top = real.mean() - start.mean(), orc.mean() - start.mean()
        share = f"{gain / top:.2f}" if top > 0 else "(no oracle gain)"
        lines.append(f"| {row} | {start.mean():.3f} | {real.mean():.3f} | {orc.mean():.3f} | {share} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(compare([(row, path) for row, path in (arg.split(":", 1) for arg in sys.argv[1:])]))
