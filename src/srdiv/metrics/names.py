"""Measure names: ir_measures' syntax is the identifier everywhere (command line, ``metrics.parquet``,
tables files), the papers' abbreviations only the labels of table headers and plots (:data:`LABELS`);
the names of the rules that order equal scores (:data:`TIES`); the headline measure (:data:`HEADLINE`) and the
significance level of the paired tests (:data:`SIGNIFICANCE`).

ir_measures writes a measure ``Name(param=value,...)@cutoff``, leaving out the parameters at their
defaults: ``alpha_nDCG@20``, ``alpha_nDCG(alpha=0.25)@10``, ``ERR_IA@20``, ``NRBP(beta=0.9)``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from srdiv.metrics.diversity import ALPHA, BETA

CUTOFF_FAMILIES = ("alpha_nDCG", "ERR_IA", "nERR_IA", "P_IA", "StRecall")
WHOLE_LIST = ("NRBP", "nNRBP")
HEADLINE = "alpha_nDCG@20"
"""The measure rows are chosen, checked and plotted by: validation, sweeps, the learning check, the cards."""
SIGNIFICANCE = 0.05
"""Level of the two-tailed paired t-tests that mark table cells (``report.alpha``, ``srdiv evaluate --alpha``)."""
TIES = {"ndeval": "docno descending (ndeval -traditional, trec_eval)",
        "pyndeval": "docno ascending (pyndeval: ir_measures, pt.Experiment)"}
"""How a run ordered by score breaks ties, by the tool whose order it is."""

PARAMETERS = {"alpha_nDCG": {"alpha": ALPHA}, "NRBP": {"alpha": ALPHA, "beta": BETA},
              "nNRBP": {"alpha": ALPHA, "beta": BETA}}
"""Each family's parameters besides ``rel`` (the grade from which a judgment counts, 1 here) and their
defaults, as ir_measures names them; the other families take none."""

LABELS = {
    "ERR_IA": "ERR-IA", "nERR_IA": "nERR-IA", "alpha_nDCG": "α-nDCG", "NRBP": "NRBP",
    "nNRBP": "nNRBP", "P_IA": "Pre-IA", "StRecall": "S-rec",
}
"""The papers' abbreviation of each family: the one place table headers and plots take their labels from."""

SYNTAX = re.compile(r"(?P<name>\w+)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>\d+))?")


class Measure(NamedTuple):
    """A parsed measure: ``name`` as ir_measures writes it, ``base`` the name evaluated
    (:data:`srdiv.metrics.evaluate.MEASURES`' form, ``alpha_nDCG@10``), and the α and β it is computed at."""

    name: str
    base: str
    alpha: float
    beta: float


def parse_measure(text: str) -> Measure:
    """``'alpha_nDCG(alpha=0.25)@10'`` -> :class:`Measure`; ValueError naming what is wrong otherwise."""
    match = SYNTAX.fullmatch(text.strip())
    known = ", ".join([*CUTOFF_FAMILIES, *WHOLE_LIST])
    if not match:
        raise ValueError(f"'{text}' is not a measure (Name, Name@cutoff or Name(param=value,...)@cutoff)")
    family, cutoff = match["name"], match["cutoff"]
    if family not in CUTOFF_FAMILIES and family not in WHOLE_LIST:
        raise ValueError(f"unknown measure '{text}'; known: {known}")
    if (family in CUTOFF_FAMILIES) != (cutoff is not None) or (cutoff is not None and int(cutoff) < 1):
        need = "needs a cutoff @k, k >= 1" if family in CUTOFF_FAMILIES else "takes no cutoff"
        raise ValueError(f"'{text}': {family} {need}")
    defaults, given = PARAMETERS.get(family, {}), {}
    for item in filter(None, (part.strip() for part in (match["params"] or "").split(","))):
        key, equals, value = (part.strip() for part in item.partition("="))
        try:
            number = float(value)
        except ValueError:
            number = None
        if key == "rel" and number == 1:
            continue
        if not equals or key not in defaults or number is None or not 0 <= number <= 1:
            what = "a value in [0, 1]" if key in defaults else f"one of {', '.join(defaults) or 'none'} (rel=1)"
            raise ValueError(f"'{text}': parameter '{item}' of {family} must be {what}")
        given[key] = number
    written = [f"{key}={int(value) if value.is_integer() else value!r}" for key, value in given.items()
               if value != defaults[key]]
    name = family + (f"({','.join(written)})" if written else "") + (f"@{cutoff}" if cutoff else "")
    values = {**defaults, **given}
    return Measure(name, family + (f"@{int(cutoff)}" if cutoff else ""), values.get("alpha", ALPHA),
                   values.get("beta", BETA))


def measure_label(measure: str) -> str:
    """A measure's label in tables and plots: ``alpha_nDCG@20`` -> ``α-nDCG@20``, ``P_IA@20`` -> ``Pre-IA@20``."""
    name, _, cut = measure.partition("@")
    label = LABELS.get(name, name)
    return f"{label}@{cut}" if cut else label
