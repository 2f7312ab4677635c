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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from srdiv.io import (
    InputError,
    atomic_path,
    first_misfit,
    integer_misfit,
    normal_ids,
    read_parquet,
    refuse_header,
    text_bytes,
)
from srdiv.metrics.names import TIES

TREC_RUN_FIELDS = ("qid", "Q0", "docno", "rank", "score", "tag")
RUN_COLUMNS = ("qid", "docno", "rank", "score")
QRELS_FIELDS = ("qid", "sid", "docno", "grade")
RUN_FILE = "run.txt"
"""Name of the TREC run file a training job writes into each ``<model>/fold<k>`` directory."""


BLANKS = " \t\n\v\f\r"
"""What separates the fields of a TREC line: C's ``isspace``, as ndeval and trec_eval split a line."""
_IS_BLANK = bytes(c in BLANKS.encode() for c in range(256))


def read_fields(path: str | os.PathLike, names: tuple[str, ...], keep: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Whitespace-separated text file -> string columns ``keep`` (default: all ``names``) and a 1-based ``line``.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r``; fields are separated by :data:`BLANKS`. Blank lines are
    skipped; a line with another number of fields than ``names``, or a file without any field, raises
    :class:`InputError` naming the file and line. No Python work per line: a file whose fields are
    separated by single spaces, one line each (what TREC tools write), is read by Arrow's CSV reader;
    any other, or one that reader refuses, is split on its bytes with numpy (which names the line).
    """
    path = Path(path)
    data = text_bytes(path)           # no byte-order mark; not UTF-8 names the line and byte
    keep = keep or names
    if not any(blank in data for blank in (b"\t", b"\r", b"\v", b"\f")):
        try:   # a line of another width is refused; a run of spaces or a blank line gives an empty field
            table = pa_csv.read_csv(
                pa.py_buffer(data), read_options=pa_csv.ReadOptions(column_names=list(names), use_threads=False),
                parse_options=pa_csv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False,
                                                  double_quote=False, ignore_empty_lines=False),
                convert_options=pa_csv.ConvertOptions(
                    column_types={name: pa.large_string() if name in keep else pa.large_binary() for name in names},
                    strings_can_be_null=False))
            if table.num_rows and all(pc.min(pc.binary_length(column)).as_py() > 0 for column in table.columns):
                frame = table.select(list(keep)).to_pandas()
                frame["line"] = np.arange(1, len(frame) + 1)
                return _checked_fields(frame, path, names)
        except pa.ArrowInvalid:
            pass
    byte = np.frombuffer(data, np.uint8)
    blank = np.frombuffer(data.translate(_IS_BLANK), bool)
    start = np.flatnonzero(blank[:-1] > blank[1:]) + 1                          # each field's first byte
    if len(byte) and not blank[0]:
        start = np.r_[0, start]
    line_end = byte == ord("\n")
    if b"\r" in data:                                                           # \r alone ends a line too
        line_end |= (byte == ord("\r")) & (np.r_[byte[1:], 0] != ord("\n"))
    count = np.diff(np.searchsorted(start, np.flatnonzero(line_end)), prepend=0, append=len(start))  # per line
    if not len(start):
        raise InputError(path, "empty file")
    bad = np.flatnonzero((count > 0) & (count != len(names)))
    if bad.size:
        raise InputError(path, f"expected {len(names)} fields ({' '.join(names)}), found {count[bad[0]]}",
                         int(bad[0]) + 1)
    # field i runs from its first byte to the next field's, the blanks after it trimmed
    fields = pa.LargeStringArray.from_buffers(len(start), pa.py_buffer(np.append(start, len(data))), pa.py_buffer(data))
    frame = pd.DataFrame({name: pc.utf8_rtrim(fields.take(np.arange(names.index(name), len(start), len(names))),
                                              characters=BLANKS).to_pandas()
                          for name in keep})
    frame["line"] = np.flatnonzero(count) + 1
    return _checked_fields(frame, path, names)


def _checked_fields(frame: pd.DataFrame, path: Path, names: tuple[str, ...]) -> pd.DataFrame:
    """No header line (:func:`srdiv.io.refuse_header`); qids as srdiv keeps them (:func:`srdiv.io.normal_ids`)."""
    if "qid" in frame:
        refuse_header(path, frame["qid"].iloc[0], int(frame["line"].iloc[0]), names)
        frame["qid"] = normal_ids(frame["qid"])
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
    numbers, parsed = _numbers(frame[column])
    bad = first_misfit(numbers, integer, low, high)
    if integer and frame[column].dtype.kind not in "iuf":      # written as ndeval reads an int, or refused
        misfit = integer_misfit(frame[column])
        parsed = parsed if misfit is None else min(parsed, misfit)
    if bad is not None or parsed < len(frame):
        bad = parsed if bad is None else min(bad, parsed)
        kind = "an integer" if integer else "a finite number"
        value = frame[column].iloc[bad]
        span = f" in [{low:.0f}, {high:.0f}]" if integer else ""
        raise InputError(path, f"{column} '{value}' is not {kind}{span}{_where(frame, bad)}", _line(frame, bad))
    return pd.Series(numbers.astype(np.int64) if integer else numbers, index=frame.index)


def _numbers(values: pd.Series) -> tuple[np.ndarray, int]:
    """``(float64 of the first n values, n)``: all of them, or up to the first text that is no number.

    Arrow-backed text is cast by Arrow (a decimal number as C's ``strtod`` reads it: ``3``,
    ``-2.5e-3``, ``inf``; not ``0x1F`` nor ``1_000``), in one call; the first value it cannot read
    is then found by halving. Other columns go through ``pd.to_numeric`` (NaN where no number).
    """
    if values.dtype.kind in "iuf":
        return values.to_numpy(np.float64), len(values)
    if not (isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow"):
        numbers = pd.to_numeric(values.astype(object), errors="coerce")
        return numbers.to_numpy(np.float64, na_value=np.nan), len(values)
    text = pa.array(values)
    try:
        return pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False), len(values)
    except pa.ArrowInvalid:
        good, bad = 0, len(text)   # text[:good] is read; text[good:bad] holds a value that is not
        while bad - good > 1:
            middle = (good + bad) // 2
            try:
                pc.cast(text[good:middle], pa.float64())
                good = middle
            except pa.ArrowInvalid:
                bad = middle
        return pc.cast(text[:good], pa.float64()).to_numpy(zero_copy_only=False), good


def _line(frame: pd.DataFrame, i: int) -> int | None:
    """Source line of row ``i`` (None for tables without lines)."""
    return int(frame["line"].iloc[i]) if "line" in frame else None


def _where(frame: pd.DataFrame, i: int) -> str:
    """' (row N)' for tables without source lines, else ''."""
    return "" if "line" in frame else f" (row {i + 1})"


class Ranking(NamedTuple):
    """A checked run in ndeval's order (:func:`rank_run`); every array is ``[rows]`` in the run's row order."""

    topic: np.ndarray    # code of the row's qid: qids[code]
    qids: pa.Array       # the run's qids, by first appearance
    doc: np.ndarray      # code of the row's docno: docnos[code]
    docnos: pa.Array     # the run's docnos, by first appearance
    rank: np.ndarray     # the row's rank from 1 within its qid, in ndeval's order
    order: np.ndarray    # the rows in ndeval's order: topics by first appearance, then rank


def arrow_text(values: pd.Series) -> pa.ChunkedArray:
    """``values`` as Arrow text (large_string), without a copy where pandas holds them in Arrow."""
    return pa.chunked_array(pa.array(values.astype(str))).cast(pa.large_string())


def text_codes(values: pd.Series | pa.ChunkedArray, sort: bool = False) -> tuple[np.ndarray, pa.Array]:
    """``(codes [rows], distinct texts)`` of ``values`` as text, as ``pd.factorize`` (one hash pass in Arrow).

    Equal texts share a code, numbered by first appearance, or with ``sort`` in byte (code point)
    order, as ``strcmp`` orders them.
    """
    text = values if isinstance(values, pa.ChunkedArray) else arrow_text(values)
    encoded = pc.dictionary_encode(text, null_encoding="encode").chunks   # one dictionary for every chunk
    codes = np.concatenate([np.zeros(0, np.int64)] + [chunk.indices.to_numpy() for chunk in encoded]).astype(np.int64)
    uniques = encoded[-1].dictionary if encoded else pa.array([], pa.large_string())
    if sort:
        order = pc.array_sort_indices(uniques).to_numpy()
        codes, uniques = _inverse(order)[codes], uniques.take(order)
    return codes, uniques


def text_order(texts: pa.Array) -> np.ndarray:
    """``[texts]`` position of each text in byte (code point) order, as ``strcmp`` orders them."""
    return _inverse(pc.array_sort_indices(texts).to_numpy())


def _inverse(permutation: np.ndarray) -> np.ndarray:
    """The permutation that undoes ``permutation``."""
    inverse = np.empty(len(permutation), np.int64)
    inverse[permutation] = np.arange(len(permutation))
    return inverse


def rank_run(run: pd.DataFrame, path: str | os.PathLike = "<run>", qids: Iterable[str] | None = None,
             ties: str = "ndeval") -> Ranking:
    """Check a run and find ndeval's order (see module docstring), in vectorised passes over codes.

    Checks, each failing with :class:`InputError` at the run's first bad row: at least one row; finite
    scores and integer ranks; with ``qids``, every ``qid`` among them (the collection's topics); a
    ``docno`` at most once per ``qid``; when ranks order the run, a rank at most once per ``qid``.
    ``ties`` (a key of :data:`TIES`): the docno order of equal scores in a run without ranks.
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    if len(run) == 0:
        raise InputError(path, "empty run")
    numbers = {column: parse_numbers(run, column, path, integer=column == "rank").to_numpy()
               for column in ("rank", "score") if column in run}
    topic, topics = text_codes(run["qid"])
    if qids is not None:
        known = pc.is_in(topics, value_set=pa.array([str(q) for q in qids], pa.large_string())).to_numpy(
            zero_copy_only=False)
        _fail_at_first(run, path, ~known[topic],
                       lambda i: f"qid '{run['qid'].iloc[i]}' is not a topic of the collection")
    doc, docnos = text_codes(run["docno"])
    pair = topic * (int(doc.max()) + 1) + doc                            # (qid, docno) as one integer
    ordered = np.sort(pair)
    if (ordered[1:] == ordered[:-1]).any():                              # then find the first repeat
        _fail_at_first(run, path, pd.Series(pair).duplicated().to_numpy(),
                       lambda i: f"docno '{run['docno'].iloc[i]}' appears twice for qid '{run['qid'].iloc[i]}'")
    if "rank" in numbers:
        keys: tuple[np.ndarray, ...] = (numbers["rank"], topic)
    else:
        by_docno = text_order(docnos)[doc]
        keys = (-by_docno if ties == "ndeval" else by_docno, -numbers["score"], topic)
    order = np.arange(len(run)) if _in_lexsort_order(keys) else np.lexsort(keys)
    sorted_topic = topic[order]
    if "rank" in numbers:
        sorted_rank = numbers["rank"][order]
        again = np.r_[False, (sorted_topic[1:] == sorted_topic[:-1]) & (sorted_rank[1:] == sorted_rank[:-1])]
        repeat = np.zeros(len(run), bool)
        repeat[order[again]] = True
        _fail_at_first(run, path, repeat,
                       lambda i: f"rank '{run['rank'].iloc[i]}' appears twice for qid '{run['qid'].iloc[i]}'")
    rank = np.empty(len(run), np.int64)
    rank[order] = _within_group(sorted_topic) + 1
    return Ranking(topic, topics, doc, docnos, rank, order)


def _fail_at_first(run: pd.DataFrame, path: str | os.PathLike, bad: np.ndarray, message: Callable[[int], str]) -> None:
    """:class:`InputError` ``message(row)`` at the run's first row where ``bad``."""
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(path, message(i) + _where(run, i), _line(run, i))


def _in_lexsort_order(keys: tuple[np.ndarray, ...]) -> bool:
    """Whether the rows are already in ``np.lexsort(keys)`` order with no two rows equal (the last key first)."""
    ahead, tied = np.zeros(len(keys[0]) - 1, bool), np.ones(len(keys[0]) - 1, bool)
    for key in reversed(keys):
        ahead |= tied & (key[1:] > key[:-1])
        tied &= key[1:] == key[:-1]
    return bool(ahead.all())


def _within_group(group: np.ndarray) -> np.ndarray:
    """Position of each entry among those of its group (``group`` sorted, or at least grouped)."""
    index = np.arange(len(group))
    if not len(group):
        return index
    return index - np.maximum.accumulate(np.where(np.r_[True, group[1:] != group[:-1]], index, 0))


def check_run(run: pd.DataFrame, path: str | os.PathLike = "<run>", qids: Iterable[str] | None = None) -> None:
    """Raise :class:`InputError` for a run ndeval would reject or we cannot evaluate (:func:`rank_run`'s checks)."""
    rank_run(run, path, qids)


def order_run(run: pd.DataFrame, ties: str = "ndeval") -> pd.DataFrame:
    """A checked run in ndeval's order (see module docstring), ``rank`` renumbered 1..n per qid.

    ``ties`` (a key of :data:`TIES`): the docno order of equal scores in a run without ranks.
    Returns ``qid, docno, rank, score``; a run without scores gets ``score = -rank``.
    """
    return _ranked_frame(run, rank_run(run, ties=ties))


def _ranked_frame(run: pd.DataFrame, ranking: Ranking) -> pd.DataFrame:
    """``qid, docno, rank, score`` of ``run`` in the order of its :class:`Ranking`."""
    order = ranking.order
    rank = ranking.rank[order]
    score = run["score"].to_numpy(np.float64)[order] if "score" in run else -rank.astype(np.float64)
    return pd.DataFrame({"qid": run["qid"].astype(str).take(order).reset_index(drop=True),
                         "docno": run["docno"].astype(str).take(order).reset_index(drop=True),
                         "rank": rank.astype(np.int32), "score": score})


def read_trec_run(path: str | os.PathLike) -> pd.DataFrame:
    """TREC run file (``qid Q0 docno rank score tag``) -> ``qid, docno, rank, score, line`` (file order)."""
    frame = read_fields(path, TREC_RUN_FIELDS, keep=("qid", "docno", "rank", "score"))
    frame["rank"] = parse_numbers(frame, "rank", path, integer=True)
    frame["score"] = parse_numbers(frame, "score", path, integer=False)
    return frame


def load_run(path: str | os.PathLike, by_score: bool = False) -> pd.DataFrame:
    """Read a run as it is on disk -> ``qid, docno`` and ``rank`` and/or ``score`` (and each row's
    ``line`` in a TREC file), in file order: its numbers parsed and checked, the rest left to
    :func:`rank_run`. ``by_score`` drops the ranks (see :func:`read_run`).
    """
    path = Path(path)
    if path.suffix == ".parquet":
        run = read_parquet(path)
        missing = {"qid", "docno"} - set(run.columns)
        if missing or not {"score", "rank"} & set(run.columns):
            raise InputError(path, f"run table needs qid, docno and score or rank; has {list(run.columns)}")
        run = run[[c for c in RUN_COLUMNS if c in run]]
        for column in ("qid", "docno"):      # a null is an error, not the text 'None'
            _fail_at_first(run, path, run[column].isna().to_numpy(), lambda i: f"{column} is null")  # noqa: B023 (called now)
        run = run.astype({"qid": str, "docno": str})
        run["qid"] = normal_ids(run["qid"])
        for column in ("rank", "score"):
            if column in run:
                run[column] = parse_numbers(run, column, path, integer=column == "rank")
    else:
        run = read_trec_run(path)
    if by_score:
        if "score" not in run:
            raise InputError(path, "run has no scores to order by")
        run = run.drop(columns="rank", errors="ignore")
    return run


def read_run(path: str | os.PathLike, qids: Iterable[str] | None = None, by_score: bool = False,
             ties: str = "ndeval") -> pd.DataFrame:
    """Read and check a run -> ``qid, docno, rank, score`` in ndeval's order, rank from 1.

    ``path`` is a TREC run file or a Parquet table (``.parquet``) with
    ``qid, docno`` and ``score`` and/or ``rank``. With ``qids`` (the
    collection's topics) an unknown qid is an error. ``by_score`` ignores the
    file's ranks and orders by score, equal scores by ``ties`` (:data:`TIES`;
    ``"ndeval"`` is ndeval's ``-traditional``).
    """
    run = load_run(path, by_score)
    return _ranked_frame(run, rank_run(run, path, qids, ties=ties))


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
