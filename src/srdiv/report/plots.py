"""Figures (PNG and SVG): learning curves, metric at k, per-query differences, sweeps."""

from __future__ import annotations

import textwrap
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
            fig.savefig(tmp, format=ext, dpi=120, bbox_inches="tight",
                        metadata={"Date": None} if ext == "svg" else None)
        paths.append(path)
    plt.close(fig)
    return paths


PANEL_RUNS = 8
"""At most this many runs share a panel, each in its own colour (tab10), so no two lines look alike."""

PAMM_NOTE = ("PAMM's loss, minus the sum over margin-violating (Y+, Y-) pairs of log P(Y+) - log P(Y-), is "
             "unbounded below: it keeps falling as the negative rankings become improbable, while the margin "
             "test (on probabilities of whole rankings, all tiny) stays violated.")


def panels_by_group(runs: list[str], groups: dict[str, str]) -> dict[str, list[str]]:
    """``{panel title: runs}``: runs grouped as the tables group them, at most :data:`PANEL_RUNS` a panel."""
    grouped: dict[str, list[str]] = {}
    for run in runs:
        grouped.setdefault(groups.get(run, ""), []).append(run)
    panels = {}
    for title, members in grouped.items():
        chunks = [members[i:i + PANEL_RUNS] for i in range(0, len(members), PANEL_RUNS)]
        for j, chunk in enumerate(chunks):
            panels[title + (f" ({j + 1}/{len(chunks)})" if len(chunks) > 1 else "")] = chunk
    return panels


def grid(n: int, ncols: int, panel: tuple[float, float], sharey: bool):
    """A figure of ``n`` panels, ``ncols`` to a row (unused cells hidden) -> (figure, axes list)."""
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel[0] * ncols, panel[1] * nrows), squeeze=False,
                             sharey=sharey)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return fig, list(axes.ravel()[:n])


def colour(i: int):
    return plt.get_cmap("tab10")(i % 10)


def legend_below(ax) -> None:
    """The panel's legend under its axes, where it covers no line."""
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)


def group_panels(series: dict[str, tuple[np.ndarray, np.ndarray]], groups: dict[str, str], reference: str | None,
                 xlabel: str, ylabel: str, marker: str | None, out_stem: Path, zero_line: bool = False) -> list[Path]:
    """One panel per group of runs (``series``: run -> (x, y)), the reference run dashed black in the
    others' panels for comparison; a shared y axis. Nothing to draw (one run only): no plot."""
    panels = panels_by_group(list(series), groups)
    if not panels:
        return []
    fig, axes = grid(len(panels), 3, (4.4, 3.6), sharey=True)
    for ax, (title, runs) in zip(axes, panels.items()):
        if reference in series and reference not in runs:
            ax.plot(*series[reference], color="black", linestyle="--", linewidth=1, label=f"{reference} (reference)")
        for i, run in enumerate(runs):
            ax.plot(*series[run], color=colour(i), marker=marker, markersize=3, linewidth=1.4, label=run)
        if zero_line:
            ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set(title=title, xlabel=xlabel)
        ax.title.set_fontsize(10)
        ax.grid(alpha=0.3)
        legend_below(ax)
    for ax in axes[::3]:
        ax.set_ylabel(ylabel)
    fig.tight_layout()
    return save(fig, out_stem)


def metric_at_k(values: pd.DataFrame, measure_name: str, out_stem: Path, groups: dict[str, str],
                reference: str | None = None) -> list[Path]:
    """Mean metric at cut-off k, a panel per group of runs; ``values``: run, k, value (averaged over queries)."""
    series = {run: (frame["k"].to_numpy(), frame["value"].to_numpy())
              for run, frame in values.groupby("run", sort=False)}
    return group_panels(series, groups, reference, "cut-off k", measure_name, ".", out_stem)


def per_query_differences(metrics: pd.DataFrame, runs: list[str], reference: str, measure: str,
                          out_stem: Path, groups: dict[str, str]) -> list[Path]:
    """Sorted per-query differences of ``measure`` between each run and ``reference``, a panel per group."""
    wide = per_query(metrics, measure)
    series = {}
    for run in runs:
        if run != reference and run in wide.columns and reference in wide.columns:
            diff = (wide[run] - wide[reference]).dropna().sort_values(ascending=False).to_numpy()
            series[run] = (np.arange(1, len(diff) + 1), diff)
    return group_panels(series, groups, None, "queries (sorted by difference)", f"{measure}: run − {reference}",
                        None, out_stem, zero_line=True)


def common_epochs(curves: pd.DataFrame) -> pd.DataFrame:
    """Mean ``loss`` and ``valid`` per epoch over the folds, for the epochs every fold reached.

    Folds stop early at different epochs; a mean over the folds still running would jump
    where one stops, so the mean ends at the shortest fold's last epoch."""
    last = curves.groupby("fold")["epoch"].max().min()
    return curves[curves["epoch"] <= last].groupby("epoch")[["loss", "valid"]].mean()


def learning_curves(curves: pd.DataFrame, out_stem: Path) -> list[Path]:
    """A panel per run: validation α-nDCG@20 (left axis) and training loss (right axis, the run's own
    scale), each fold thin and the mean over folds (:func:`common_epochs`) thick; ``curves``: run,
    fold, epoch, loss, valid."""
    runs = list(pd.unique(curves["run"]))
    fig, axes = grid(len(runs), 4, (3.6, 2.8), sharey=False)
    for ax, run in zip(axes, runs):
        own = curves[curves["run"] == run]
        loss_ax = ax.twinx()
        for _, fold in own.groupby("fold"):
            ax.plot(fold["epoch"], fold["valid"], color="tab:blue", linewidth=0.6, alpha=0.35)
            loss_ax.plot(fold["epoch"], fold["loss"], color="tab:orange", linewidth=0.6, alpha=0.35, linestyle="--")
        mean = common_epochs(own)
        ax.plot(mean.index, mean["valid"], color="tab:blue", linewidth=1.6)
        loss_ax.plot(mean.index, mean["loss"], color="tab:orange", linewidth=1.2, linestyle="--")
        ax.set_title(run, fontsize=10)
        ax.set_xlabel("epoch")
        ax.tick_params(axis="y", labelcolor="tab:blue", labelsize=8)
        loss_ax.tick_params(axis="y", labelcolor="tab:orange", labelsize=8)
        ax.grid(alpha=0.3)
    note = ("solid blue, left axis: validation α-nDCG@20; dashed orange, right axis: training loss (each run on "
            "its own scale); thin lines: each fold; thick lines: the mean over folds, up to the last epoch every "
            "fold reached. " + PAMM_NOTE)
    width = int(fig.get_figwidth() * 14)           # characters of 8-point text across the figure
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.text(0.01, 0.01, textwrap.fill(note, width), fontsize=8, va="bottom")
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
