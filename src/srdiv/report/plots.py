"""Figures (PNG and SVG): learning curves, metric at k, per-query differences, sweeps."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "srdiv"   # SVG element ids from a fixed salt: same plot, same bytes
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

from srdiv.io import atomic_path  # noqa: E402
from srdiv.metrics.stats import per_query  # noqa: E402


def save(fig, out_stem: Path) -> list[Path]:
    """Write ``fig`` as ``<stem>.png`` and ``<stem>.svg`` (atomically) and close it."""
    paths = []
    for ext in ("png", "svg"):
        path = out_stem.with_suffix(f".{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=120, bbox_inches="tight", metadata={"Date": None} if ext == "svg" else None)
        paths.append(path)
    plt.close(fig)
    return paths


def style(i: int) -> dict:
    """Line style of the ``i``-th run: ten colours, then the same colours dashed, then dotted."""
    return {"color": plt.get_cmap("tab10")(i % 10), "linestyle": ("-", "--", ":")[(i // 10) % 3]}


def learning_curves(curves: pd.DataFrame, out_stem: Path) -> list[Path]:
    """Validation metric and training loss per epoch; ``curves``: run, fold, epoch, loss, valid."""
    fig, (ax_loss, ax_valid) = plt.subplots(1, 2, figsize=(11, 4))
    for i, (run, frame) in enumerate(curves.groupby("run", sort=False)):
        mean = frame.groupby("epoch")[["loss", "valid"]].mean()
        ax_loss.plot(mean.index, mean["loss"], label=run, **style(i))
        ax_valid.plot(mean.index, mean["valid"], label=run, **style(i))
    # Losses differ by orders of magnitude between objectives (PAMM's is unbounded below): symlog axis.
    ax_loss.set(xlabel="epoch", ylabel="training loss (mean over folds, symlog)", yscale="symlog")
    ax_valid.set(xlabel="epoch", ylabel="validation α-nDCG@20 (mean over folds)")
    ax_valid.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return save(fig, out_stem)


def metric_at_k(values: pd.DataFrame, measure_name: str, out_stem: Path) -> list[Path]:
    """Mean metric at cut-off k per run; ``values``: run, k, value (already averaged over queries)."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (run, frame) in enumerate(values.groupby("run", sort=False)):
        ax.plot(frame["k"], frame["value"], marker=".", label=run, **style(i))
    ax.set(xlabel="cut-off k", ylabel=measure_name)
    ax.legend(fontsize=7, ncol=2)
    return save(fig, out_stem)


def per_query_differences(metrics: pd.DataFrame, runs: list[str], reference: str, measure: str,
                          out_stem: Path) -> list[Path]:
    """Sorted per-query differences of ``measure`` between each run and ``reference``."""
    wide = per_query(metrics, measure)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    shown = [run for run in runs if run != reference and run in wide.columns and reference in wide.columns]
    for i, run in enumerate(shown):
        diff = (wide[run] - wide[reference]).dropna().sort_values(ascending=False).to_numpy()
        ax.plot(range(1, len(diff) + 1), diff, label=run, **style(i))
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set(xlabel="queries (sorted by difference)", ylabel=f"{measure}: run − {reference}")
    ax.legend(fontsize=7, ncol=2)
    return save(fig, out_stem)


def sweeps(metrics: pd.DataFrame, panels: dict[str, dict], measure: str, out_stem: Path) -> list[Path]:
    """One panel per sweep: mean ``measure`` over queries with its 95% t-interval against the swept value.

    ``panels``: name -> ``{title, x, points: {run label: x value}}``; runs absent from ``metrics`` are left out.
    """
    wide = per_query(metrics, measure)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6), squeeze=False)
    for ax, spec in zip(axes[0], panels.values()):
        points = sorted((x, run) for run, x in spec["points"].items() if run in wide.columns)
        xs = np.array([x for x, _ in points], dtype=float)
        values = [wide[run].dropna() for _, run in points]
        means = np.array([v.mean() for v in values])
        half = np.array([stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)) for v in values])
        ax.errorbar(xs, means, yerr=half, marker="o", capsize=3, color="tab:blue")
        ax.set(title=spec.get("title", ""), xlabel=spec.get("x", ""), ylabel=f"{measure} (mean, 95% CI)")
        ax.set_xticks(xs)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return save(fig, out_stem)
