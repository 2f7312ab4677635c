"""Runs on disk: TREC run files and Parquet run tables, read and checked the way ndeval reads them.

A run frame has the columns ``qid, docno, rank, score`` (PyTerrier's names);
``rank`` starts at 1 within each ``qid``. The order of a run is ndeval's:

* by ``rank`` when the run has ranks (ndeval's default; TREC run files always do),
* otherwise by ``score`` descending, ties broken by ``docno``: descending by default (``ties="ndeval"``,
  the traditional trec_eval order, ndeval's ``-traditional``: its ``resultCompareByScore``), or ascending
  (``ties="pyndeval"``: pyndeval sorts every query's ``(docno, score)`` pairs by ``(-score, docno)``, so
  ir_measures and ``pt.Experiment`` give these numbers).

Diversity qrels (``qid subtopic docno grade``, ndeval's format) are read here too (:func:`read_qrels`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from srdiv.io import InputError, atomic_path, first_misfit, read_parquet

TREC_RUN_FIELDS = ("qid", "Q0", "docno", "rank", "score", "tag")
RUN_COLUMNS = ("qid", "docno", "rank", "score")
QRELS_FIELDS = ("qid", "sid", "docno", "grade")
TIES = {"ndeval": "docno descending (ndeval -traditional, trec_eval)",
        "pyndeval": "docno ascending (pyndeval: ir_measures, pt.Experiment)"}
"""How a run ordered by score breaks ties, by the tool whose order it is."""
RUN_FILE = "run.txt"
"""Name of the TREC run file a training job writes into each ``<model>/fold<k>`` directory."""


def read_fields(path: str | os.PathLike, names: tuple[str, ...]) -> pd.DataFrame:
    """Whitespace-separated text file -> string columns ``names`` plus its 1-based ``line``.

    Blank lines are skipped; a line with another number of fields, or a file
    without any line, raises :class:`InputError` naming the file and line.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    try:
        lines = pd.Series(path.read_text().splitlines(), dtype=object)
    except UnicodeDecodeError as err:
        raise InputError(path, f"not a text file ({err.reason})") from None
    fields = lines.str.split()
    count = fields.str.len().to_numpy()
    keep = count > 0
    if not keep.any():
        raise InputError(path, "empty file")
    bad = np.flatnonzero(keep & (count != len(names)))
    if bad.size:
        raise InputError(path, f"expected {len(names)} fields ({' '.join(names)}), found {count[bad[0]]}",
                         int(bad[0]) + 1)
    frame = pd.DataFrame(fields[keep].tolist(), columns=list(names))
    frame["line"] = np.flatnonzero(keep) + 1
    return frame


INT32 = (float(np.iinfo(np.int32).min), float(np.iinfo(np.int32).max))
"""Range of an integer field of a TREC file: ndeval and trec_eval read them as C ints."""


def parse_numbers(frame: pd.DataFrame, column: str, path: str | os.PathLike, integer: bool,
                  bounds: tuple[float, float] | None = None) -> pd.Series:
    """Column -> int64 (``integer``) or finite float64, failing at the first bad line.

    Integers must lie in ``bounds`` (default: a C int's range, as ndeval reads them), so no value
    is silently wrapped or rounded on its way to a narrower type.
    """
    low, high = bounds or (INT32 if integer else (-np.inf, np.inf))
    bad = first_misfit(frame[column].to_numpy(), integer, low, high)
    if bad is not None:
        kind = "an integer" if integer else "a finite number"
        value = frame[column].iloc[bad]
        span = f" in [{low:.0f}, {high:.0f}]" if integer else ""
        raise InputError(path, f"{column} '{value}' is not {kind}{span}{_where(frame, bad)}", _line(frame, bad))
    values = pd.to_numeric(frame[column]).to_numpy(np.float64)
    return pd.Series(values.astype(np.int64) if integer else values, index=frame.index)


def _line(frame: pd.DataFrame, i: int) -> int | None:
    """Source line of row ``i`` (None for tables without lines)."""
    return int(frame["line"].iloc[i]) if "line" in frame else None


def _where(frame: pd.DataFrame, i: int) -> str:
    """' (row N)' for tables without source lines, else ''."""
    return "" if "line" in frame else f" (row {i + 1})"


def check_run(run: pd.DataFrame, path: str | os.PathLike = "<run>", qids: Iterable[str] | None = None) -> None:
    """Raise :class:`InputError` for a run ndeval would reject or we cannot evaluate.

    Checks: at least one row; finite scores and integer ranks; a ``docno`` at
    most once per ``qid``; when ranks order the run, a rank at most once per
    ``qid``; with ``qids``, every ``qid`` among them (the collection's topics).
    """
    if len(run) == 0:
        raise InputError(path, "empty run")
    for column in ("rank", "score"):
        if column in run:
            parse_numbers(run, column, path, integer=column == "rank")
    if qids is not None:
        unknown = ~run["qid"].isin(set(qids)).to_numpy()
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            raise InputError(path, f"qid '{run['qid'].iloc[i]}' is not a topic of the collection{_where(run, i)}",
                             _line(run, i))
    for column in ("docno", "rank"):
        if column not in run:
            continue
        dup = run.duplicated(["qid", column]).to_numpy()
        if dup.any():
            i = int(np.flatnonzero(dup)[0])
            raise InputError(path, f"{column} '{run[column].iloc[i]}' appears twice for qid "
                                   f"'{run['qid'].iloc[i]}'{_where(run, i)}", _line(run, i))


def order_run(run: pd.DataFrame, ties: str = "ndeval") -> pd.DataFrame:
    """Sort a run in ndeval's order (see module docstring) and renumber ``rank`` 1..n per qid.

    ``ties`` (a key of :data:`TIES`): the docno order of equal scores in a run without ranks.
    Returns ``qid, docno, rank, score``; a run without scores gets ``score = -rank``.
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    topic = pd.factorize(run["qid"])[0]  # topics keep their first-appearance order
    if "rank" in run:
        keys = (run["rank"].to_numpy(), topic)
    else:
        docno = pd.factorize(run["docno"], sort=True)[0]
        keys = (-docno if ties == "ndeval" else docno, -run["score"].to_numpy(np.float64), topic)
    ordered = run.iloc[np.lexsort(keys)].reset_index(drop=True)
    rank = ordered.groupby("qid", sort=False).cumcount().to_numpy() + 1
    score = ordered["score"].to_numpy(np.float64) if "score" in ordered else -rank.astype(np.float64)
    return pd.DataFrame({"qid": ordered["qid"].astype(str).astype(object),
                         "docno": ordered["docno"].astype(str).astype(object),
                         "rank": rank.astype(np.int32), "score": score})


def read_trec_run(path: str | os.PathLike) -> pd.DataFrame:
    """TREC run file (``qid Q0 docno rank score tag``) -> ``qid, docno, rank, score, line`` (file order)."""
    frame = read_fields(path, TREC_RUN_FIELDS)
    frame["rank"] = parse_numbers(frame, "rank", path, integer=True)
    frame["score"] = parse_numbers(frame, "score", path, integer=False)
    return frame[["qid", "docno", "rank", "score", "line"]]


def read_run(path: str | os.PathLike, qids: Iterable[str] | None = None, by_score: bool = False,
             ties: str = "ndeval") -> pd.DataFrame:
    """Read and check a run -> ``qid, docno, rank, score`` in ndeval's order, rank from 1.

    ``path`` is a TREC run file or a Parquet table (``.parquet``) with
    ``qid, docno`` and ``score`` and/or ``rank``. With ``qids`` (the
    collection's topics) an unknown qid is an error. ``by_score`` ignores the
    file's ranks and orders by score, equal scores by ``ties`` (:data:`TIES`;
    ``"ndeval"`` is ndeval's ``-traditional``).
    """
    path = Path(path)
    if path.suffix == ".parquet":
        run = read_parquet(path)
        missing = {"qid", "docno"} - set(run.columns)
        if missing or not {"score", "rank"} & set(run.columns):
            raise InputError(path, f"run table needs qid, docno and score or rank; has {list(run.columns)}")
        run = run[[c for c in RUN_COLUMNS if c in run]].astype({"qid": str, "docno": str})
        for column in ("rank", "score"):
            if column in run:
                run[column] = parse_numbers(run, column, path, integer=column == "rank")
    else:
        run = read_trec_run(path)
    if by_score:
        if "score" not in run:
            raise InputError(path, "run has no scores to order by")
        run = run.drop(columns="rank", errors="ignore")
    check_run(run, path, qids)
    return order_run(run, ties)


def read_qrels(path: str | os.PathLike, qids: set[str] | None = None, with_lines: bool = False) -> pd.DataFrame:
    """Diversity qrels (``qid subtopic docno grade``, ndeval's format) -> ``qid, sid, docno, grade, rel``
    (and each judgment's 1-based ``line`` with ``with_lines``).

    Negative grades (spam) read as 0; ``rel = grade > 0``. A malformed line, a topic not in ``qids``
    (when given) or a (qid, subtopic, docno) judged twice raises :class:`InputError` with its line.
    """
    frame = read_fields(path, QRELS_FIELDS)
    sid = parse_numbers(frame, "sid", path, integer=True)
    grade = parse_numbers(frame, "grade", path, integer=True, bounds=(-128, 127))   # stored as int8
    problems = {
        "unknown topic": ~frame["qid"].isin(qids).to_numpy() if qids is not None else np.zeros(len(frame), bool),
        "negative subtopic": (sid < 0).to_numpy(),
        "(qid, subtopic, docno) judged twice": frame.duplicated(["qid", "sid", "docno"]).to_numpy(),
    }
    for problem, bad in problems.items():
        if bad.any():
            row = frame.iloc[int(np.flatnonzero(bad)[0])]
            raise InputError(path, f"{problem}: {' '.join(row[list(QRELS_FIELDS)])}", int(row["line"]))
    grade = grade.clip(lower=0)
    table = pd.DataFrame({"qid": frame["qid"], "sid": sid.astype(str), "docno": frame["docno"],
                          "grade": grade, "rel": (grade > 0).astype(np.int8)})
    return table.assign(line=frame["line"]) if with_lines else table


def write_trec_run(run: pd.DataFrame, path: str | os.PathLike, tag: str) -> None:
    """Write a run frame (``qid, docno, score`` and/or ``rank``) as a TREC run file, atomically.

    Rows are written in ndeval's order with ranks 1..n, so ndeval, trec_eval
    and :func:`read_run` all see the same ranking.
    """
    if any(ch.isspace() for ch in tag) or not tag:
        raise ValueError(f"run tag must be one non-empty word, got {tag!r}")
    check_run(run)
    ordered = order_run(run)
    lines = (ordered["qid"] + " Q0 " + ordered["docno"] + " " + ordered["rank"].astype(str) + " "
             + ordered["score"].astype(str) + f" {tag}\n")
    with atomic_path(path) as tmp:
        tmp.write_text("".join(lines))
