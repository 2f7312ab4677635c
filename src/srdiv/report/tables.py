"""Paper-style tables (DESA Table 2 / DSSA Table 7 and friends) in Markdown, LaTeX and HTML.

A :class:`Table` holds means per run and measure, the best value per column
(bold) and significance markers against a reference run (two-tailed paired
t-test, optionally Holm-corrected): ``▲`` significantly better, ``▼``
significantly worse.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd

from srdiv.metrics.names import SIGNIFICANCE, measure_label
from srdiv.metrics.stats import paired_pvalues, per_query

LATEX_MEASURES = {"α-nDCG": r"$\alpha$-nDCG"}
BETTER, WORSE = "▲", "▼"
LATEX_MARKERS = {BETTER: r"$^\blacktriangle$", WORSE: r"$^\blacktriangledown$"}


def md_cell(text: str) -> str:
    """A Markdown table cell: a ``|`` in it (a label such as "M = |X|") would end the cell, so it is escaped."""
    return str(text).replace("|", r"\|")


def frame_markdown(frame: pd.DataFrame, **kwargs) -> str:
    """``frame.to_markdown(index=False, **kwargs)`` with every text cell and header through :func:`md_cell`
    and missing values (NaN, None) as empty cells."""
    text = frame.map(lambda v: md_cell(v) if isinstance(v, str) else v).rename(columns=md_cell)
    return text.astype(object).where(text.notna(), None).to_markdown(index=False, missingval="", **kwargs)


@dataclass
class Table:
    """One table: ``values``/``markers``/``bold`` are frames ``[rows, columns]``."""

    title: str
    values: pd.DataFrame
    markers: pd.DataFrame
    bold: pd.DataFrame
    groups: list[str]
    note: str = ""
    digits: int = 3

    def cell(self, row: str, col: str) -> str:
        value = self.values.at[row, col]
        if pd.isna(value):
            return "–"
        text = f"{value:.{self.digits}f}"
        return text[1:] if text.startswith("0.") else text.replace("-0.", "-.")

    def to_markdown(self) -> str:
        cols = list(self.values.columns)
        lines = [f"### {self.title}", "", "| Method | " + " | ".join(measure_label(c) for c in cols) + " |",
                 "|---|" + "---:|" * len(cols)]
        previous = None
        for row, group in zip(self.values.index, self.groups):
            if group != previous and group:
                lines.append(f"| *{md_cell(group)}* |" + " |" * len(cols))
                previous = group
            cells = []
            for col in cols:
                text = self.cell(row, col) + self.markers.at[row, col]
                cells.append(f"**{text}**" if self.bold.at[row, col] else text)
            lines.append(f"| {md_cell(row)} | " + " | ".join(cells) + " |")
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        cols = list(self.values.columns)

        def esc(text: str) -> str:
            for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#")):
                text = text.replace(a, b)
            return text

        header = " & ".join(esc(LATEX_MEASURES.get(measure_label(c).split("@")[0], measure_label(c).split("@")[0])
                                + ("@" + c.split("@")[1] if "@" in c else "")) for c in cols)
        lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{esc(self.title)}}}",
                 r"\begin{tabular}{l" + "r" * len(cols) + "}", r"\toprule", f"Method & {header} \\\\", r"\midrule"]
        previous = None
        for row, group in zip(self.values.index, self.groups):
            if group != previous and group:
                if previous is not None:
                    lines.append(r"\midrule")
                previous = group
            cells = []
            for col in cols:
                text = self.cell(row, col)
                if self.bold.at[row, col]:
                    text = rf"\textbf{{{text}}}"
                cells.append(text + LATEX_MARKERS.get(self.markers.at[row, col], ""))
            lines.append(f"{esc(row)} & " + " & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        if self.note:
            lines.append(rf"\par\footnotesize {esc(self.note)}")
        lines.append(r"\end{table}")
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        cols = list(self.values.columns)
        out = [f"<table>\n<caption>{html.escape(self.title)}</caption>",
               "<thead><tr><th>Method</th>" + "".join(f"<th>{html.escape(measure_label(c))}</th>" for c in cols)
               + "</tr></thead>", "<tbody>"]
        previous = None
        for row, group in zip(self.values.index, self.groups):
            if group != previous and group:
                out.append(f'<tr><td colspan="{len(cols) + 1}"><em>{html.escape(group)}</em></td></tr>')
                previous = group
            cells = []
            for col in cols:
                text = html.escape(self.cell(row, col) + self.markers.at[row, col])
                cells.append(f"<td><b>{text}</b></td>" if self.bold.at[row, col] else f"<td>{text}</td>")
            out.append(f"<tr><td>{html.escape(row)}</td>" + "".join(cells) + "</tr>")
        out.append("</tbody>\n</table>")
        if self.note:
            out.append(f"<p>{html.escape(self.note)}</p>")
        return "\n".join(out) + "\n"


class IncompleteEvidence(ValueError):
    """A table would compare rows on different queries, or lacks its reference row."""


def results_table(
    metrics: pd.DataFrame, runs: list[str], groups: list[str], measures: list[str], title: str,
    reference: str | None = None, level: float = SIGNIFICANCE, holm: bool = False,
) -> Table:
    """Mean of each measure per run over the queries, best in bold, markers vs ``reference`` (p < ``level``).

    ``metrics`` has columns ``run, qid, measure, value`` (the test folds' union:
    each query once per run). Runs absent from ``metrics`` are dropped; a reference
    absent from them, or a row without a value for a query another row has, raises
    :class:`IncompleteEvidence` (a missing reference would silently drop every marker).
    """
    present = set(metrics["run"])
    keep = [(r, g) for r, g in zip(runs, groups) if r in present]
    runs = [r for r, _ in keep]
    if reference is not None and reference not in runs:
        raise IncompleteEvidence(f"table '{title}': its reference row '{reference}' has no metrics")
    values = pd.DataFrame(np.nan, index=runs, columns=measures)
    markers = pd.DataFrame("", index=runs, columns=measures)
    for measure in measures:
        wide = per_query(metrics[metrics["run"].isin(runs)], measure)
        gaps = wide.reindex(columns=runs).isna()
        if gaps.to_numpy().any():
            run = gaps.columns[gaps.any()][0]
            raise IncompleteEvidence(f"table '{title}': row '{run}' has no {measure} for {int(gaps[run].sum())} "
                                     f"of the {len(wide)} queries the other rows have (e.g. query "
                                     f"'{gaps.index[gaps[run]][0]}')")
        values[measure] = wide.mean().reindex(runs)
        if reference is not None and reference in wide.columns:
            pvals = paired_pvalues(wide, reference, holm=holm)
            delta = (wide.sub(wide[reference], axis=0)).mean()
            for run, p in pvals.items():
                if p < level:
                    markers.at[run, measure] = BETTER if delta[run] > 0 else WORSE
    best = values.max()
    bold = values.apply(lambda col: np.isclose(col, best[col.name]) & col.notna())
    note = ""
    if reference is not None and reference in runs:
        correction = ", Holm-corrected" if holm else ""
        note = (f"{BETTER}/{WORSE}: significantly better/worse than {reference} "
                f"(two-tailed paired t-test, p < {level}{correction}). Best per column in bold.")
    return Table(title, values, markers, bold, [g for _, g in keep], note)


def per_position_table(metrics: pd.DataFrame, model: str, baseline: str, measures: list[str]) -> Table:
    """DESA Table 4: total improvement (sum over queries) and improvement per position.

    For a measure at cut-off k, ``Total Imp.`` = sum over queries of
    (model - baseline) and ``Avg Imp.`` = Total Imp. / k.
    """
    values = pd.DataFrame(np.nan, index=["Total Imp.", "Avg Imp."], columns=measures)
    for measure in measures:
        wide = per_query(metrics, measure)
        if model in wide.columns and baseline in wide.columns:
            total = float((wide[model] - wide[baseline]).dropna().sum())
            cut = int(measure.split("@")[1])
            values.loc["Total Imp.", measure] = total
            values.loc["Avg Imp.", measure] = total / cut
    flags = pd.DataFrame(False, index=values.index, columns=measures)
    markers = pd.DataFrame("", index=values.index, columns=measures)
    return Table(f"Improvement of {model} over {baseline} per ranking position", values, markers, flags,
                 ["", ""], "Total Imp.: sum over queries of the metric difference; Avg Imp.: Total Imp. / k.")
