"""Per-method means and paired significance tests over per-query metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


def per_query(metrics: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Wide frame ``[queries, runs]`` of one measure (runs are ``run`` labels)."""
    sub = metrics[metrics["measure"] == measure]
    return sub.pivot_table(index="qid", columns="run", values="value", aggfunc="first")


def paired_pvalues(values: pd.DataFrame, reference: str, holm: bool = False) -> pd.Series:
    """Two-tailed paired t-test p-value of every run against ``reference``.

    ``values`` is ``[queries, runs]``; only queries present for both runs count.
    With ``holm`` the p-values are Holm-Bonferroni adjusted over the compared runs.
    Identical columns (zero variance of differences) get p = 1.
    """
    pvals = {}
    for run in values.columns:
        if run == reference:
            continue
        pair = values[[run, reference]].dropna()
        diff = pair[run] - pair[reference]
        if len(pair) < 2 or np.allclose(diff, diff.iloc[0] if len(diff) else 0.0):
            pvals[run] = 1.0
        else:
            pvals[run] = float(stats.ttest_rel(pair[run], pair[reference]).pvalue)
    p = pd.Series(pvals, dtype=float)
    return holm_adjust(p) if holm else p


def holm_adjust(p: pd.Series) -> pd.Series:
    """Holm-Bonferroni step-down adjusted p-values (monotone, capped at 1)."""
    if p.empty:
        return p
    order = p.sort_values()
    m = len(order)
    adjusted = np.maximum.accumulate((m - np.arange(m)) * order.to_numpy())
    return pd.Series(np.minimum(adjusted, 1.0), index=order.index).reindex(p.index)
