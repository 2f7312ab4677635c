"""A collection from standard TREC-style files (``srdiv collection import``), and a collection back to them
(``srdiv collection export``). The formats are on their own page, ``docs/collections.md``:

* topics: Web Track topics XML (``<topic number="1" type="faceted"><query>..</query><description>..
  </description><subtopic number="1">..</subtopic></topic>``, subtopics included), or TSV ``qid query
  [description [type]]``;
* subtopics: TSV ``qid sid [text]`` (needed with TSV topics; with XML topics it replaces theirs);
* qrels: TREC diversity qrels ``qid subtopic docno grade`` (:func:`srdiv.metrics.runs.read_qrels`);
* run: a TREC run ``qid Q0 docno rank score tag`` (ordered by its ranks, renumbered 1..n);
* suggestions: Web Track query-suggestion XML (:func:`srdiv.collection.trec_web.read_suggestions`), or TSV
  ``qid level parent text`` (a header line may add ``sugg_id`` and ``weight`` columns);
* folds: whitespace-separated ``qid fold``, or ``k`` folds dealt at random (``seed``) over the judged topics.

Every file is read by :func:`srdiv.io.text_lines` / :func:`srdiv.io.text_bytes` (a byte-order mark, CRLF or CR
line ends and trailing blanks alike; a byte that is not UTF-8 names its line); digit-only topic ids lose their
leading zeros (:func:`srdiv.io.normal_id`). TSV files are tab-separated, one record a line, blank lines skipped;
a first line whose fields are column names (starting with ``qid``) names the columns, else they come in the
order above (a first line starting with another column name is refused). In text, ``\\t``,
``\\n``, ``\\r`` and ``\\\\`` stand for a tab, a line break, a carriage return and a backslash. Every
malformed or inconsistent line stops the import with one :class:`~srdiv.io.InputError` naming the file and
the line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from srdiv.collection.schema import Collection, conform
from srdiv.collection.trec_web import read_suggestions, read_topics
from srdiv.io import HEADER_WORDS, TRAILING, InputError, atomic_dir, normal_ids, text_lines, write_parquet, write_text
from srdiv.metrics.runs import (
    check_run,
    order_run,
    parse_numbers,
    read_fields,
    read_qrels,
    read_trec_run,
    write_trec_run,
)

TSV_COLUMNS = {   # (required, optional) columns, in their positional order
    "topics": (("qid", "query"), ("description", "type")),
    "subtopics": (("qid", "sid"), ("text",)),
    "suggestions": (("qid", "level", "parent", "text"), ("sugg_id", "weight")),
}
"""The columns of each TSV file: required ones first, then optional ones (``sugg_id`` and ``weight`` of the
suggestions only by a header line)."""

_ESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def unescape(text: str) -> str:
    """``\\t``, ``\\n``, ``\\r``, ``\\\\`` -> tab, line break, carriage return, backslash (others kept)."""
    return re.sub(r"\\([\\tnr])", lambda m: _ESCAPES[m[1]], text) if "\\" in text else text


def escape(text: str) -> str:
    """The inverse of :func:`unescape`, for one TSV field."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def read_tsv_records(path: str | os.PathLike, kind: str) -> pd.DataFrame:
    """A TSV file of ``kind`` (:data:`TSV_COLUMNS`) -> its columns as strings (unescaped) and the 1-based ``line``."""
    path = Path(path)
    required, optional = TSV_COLUMNS[kind]
    known = required + optional
    rows = [(number, line.split("\t")) for number, line in text_lines(path, trailing="")]
    if not rows:
        raise InputError(path, "empty file")
    columns = list(required + (optional if kind != "suggestions" else ()))
    if rows[0][1][0].lower() in HEADER_WORDS and rows[0][1][0] != "qid":
        raise InputError(path, f"header line: its first column must be named qid (columns: {', '.join(known)}); "
                               f"got {', '.join(rows[0][1])}", rows[0][0])
    if rows[0][1][0] == "qid":               # a header line names the columns
        line, header = rows.pop(0)
        _trim(header, 1)
        unknown = [c for c in header if c not in known]
        missing = [c for c in required if c not in header]
        if unknown or missing or len(set(header)) < len(header):
            raise InputError(path, f"header: columns must be {', '.join(required)} and any of "
                                   f"{', '.join(optional)}, each once; got {', '.join(header)}", line)
        columns = header
        low, high = max(header.index(c) for c in required) + 1, len(header)   # trailing blanks may end a line early
    else:
        low, high = len(required), len(columns)
    for line, fields in rows:
        _trim(fields, low)
        if not low <= len(fields) <= high:
            span = str(low) if low == high else f"{low} to {high}"
            raise InputError(path, f"expected {span} tab-separated fields ({' '.join(columns[:high])}), "
                                   f"found {len(fields)}", line)
    frame = pd.DataFrame([fields + [""] * (len(columns) - len(fields)) for _, fields in rows], columns=columns)
    for column in columns:
        frame[column] = frame[column].map(unescape)
    for column in optional if kind != "suggestions" else ():   # a header may leave optional text columns out
        if column not in frame:
            frame[column] = ""
    frame["line"] = [line for line, _ in rows]
    frame["qid"] = normal_ids(frame["qid"])
    _fail_at(frame, ~frame["qid"].str.fullmatch(r"\S+").to_numpy(), path,
             lambda row: f"qid '{row['qid']}' is empty or holds spaces")
    return frame


def _trim(fields: list[str], keep: int) -> None:
    """Drop a TSV line's trailing blanks (:data:`srdiv.io.TRAILING`, tabs too) in place: its blank last fields,
    down to ``keep`` fields (a required one left empty is reported as such), and the blanks ending the last."""
    while len(fields) > keep and not fields[-1].strip(TRAILING):
        fields.pop()
    fields[-1] = fields[-1].rstrip(TRAILING)


def _fail_at(frame: pd.DataFrame, bad: np.ndarray, path: str | os.PathLike, what) -> None:
    """Raise at the first row where ``bad`` holds: ``what(row)`` names the problem."""
    if bad.any():
        row = frame.iloc[int(np.flatnonzero(bad)[0])]
        raise InputError(path, what(row), int(row["line"]))


def _unknown_topics(frame: pd.DataFrame, qids: set[str], path: str | os.PathLike) -> None:
    _fail_at(frame, ~frame["qid"].isin(qids).to_numpy(), path,
             lambda row: f"qid '{row['qid']}' is not a topic of the topics file")


def _is_xml(path: Path) -> bool:
    return path.suffix.lower() == ".xml"


def read_topic_file(path: str | os.PathLike) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Topics XML (with its subtopics) or TSV (subtopics None) -> ``topics`` and ``subtopics``."""
    path = Path(path)
    if _is_xml(path):
        topics, subtopics = read_topics(path)
        if topics["qid"].duplicated().any():
            raise InputError(path, f"topic '{topics.loc[topics['qid'].duplicated(), 'qid'].iloc[0]}' appears twice")
        return topics, subtopics
    frame = read_tsv_records(path, "topics")
    _fail_at(frame, (frame["query"].str.strip() == "").to_numpy(), path,
             lambda row: f"topic '{row['qid']}' has no query")
    _fail_at(frame, frame["qid"].duplicated().to_numpy(), path, lambda row: f"topic '{row['qid']}' appears twice")
    return frame[["qid", "query", "description", "type"]], None


def read_subtopic_file(path: str | os.PathLike, qids: set[str]) -> pd.DataFrame:
    """TSV ``qid sid [text]`` -> ``subtopics``; ``sid`` a whole number, as in the qrels (``01`` reads as ``1``);
    an unknown topic, a subtopic that is not a whole number or one listed twice names its line."""
    frame = read_tsv_records(path, "subtopics")
    _unknown_topics(frame, qids, path)
    frame["sid"] = parse_numbers(frame, "sid", path, integer=True, bounds=(0, 2**31 - 1)).astype(str)  # as qrels'
    _fail_at(frame, frame.duplicated(["qid", "sid"]).to_numpy(), path,
             lambda row: f"subtopic '{row['sid']}' of topic '{row['qid']}' appears twice")
    return frame[["qid", "sid", "text"]]


def read_suggestion_file(path: str | os.PathLike, qids: set[str]) -> pd.DataFrame:
    """Web Track suggestions XML, or TSV ``qid level parent text`` (header: ``sugg_id``, ``weight`` too).

    Without ``sugg_id``, level-1 suggestions are numbered ``1, 2, ...`` per topic in file order and a level-2
    one is ``<parent>.<j>``; ``parent`` names the level-1 suggestion's id (so, its number). Without
    ``weight``, every suggestion of a topic's level weighs the same (1 / their number).
    """
    path = Path(path)
    if _is_xml(path):
        return read_suggestions(path, qids)
    frame = read_tsv_records(path, "suggestions")
    _unknown_topics(frame, qids, path)
    level = parse_numbers(frame, "level", path, integer=True, bounds=(1, 2))
    frame["level"] = level
    _fail_at(frame, ((level == 1) & (frame["parent"] != "")).to_numpy(), path,
             lambda row: f"a level-1 suggestion has no parent (got '{row['parent']}')")
    _fail_at(frame, (frame["text"].str.strip() == "").to_numpy(), path, lambda row: "empty suggestion text")
    if "sugg_id" not in frame:
        first = frame["level"] == 1
        frame["sugg_id"] = ""
        frame.loc[first, "sugg_id"] = (frame[first].groupby("qid").cumcount() + 1).astype(str)
        second = ~first
        number = frame[second].groupby(["qid", "parent"]).cumcount() + 1
        frame.loc[second, "sugg_id"] = frame.loc[second, "parent"] + "." + number.astype(str)
    _fail_at(frame, (frame["sugg_id"].str.strip() == "").to_numpy(), path, lambda row: "empty sugg_id")
    _fail_at(frame, frame.duplicated(["qid", "sugg_id"]).to_numpy(), path,
             lambda row: f"suggestion '{row['sugg_id']}' of topic '{row['qid']}' appears twice")
    parents = pd.MultiIndex.from_frame(frame.loc[frame["level"] == 1, ["qid", "sugg_id"]])
    orphan = (frame["level"] == 2) & ~pd.MultiIndex.from_frame(frame[["qid", "parent"]]).isin(parents)
    _fail_at(frame, orphan.to_numpy(), path,
             lambda row: f"parent '{row['parent']}' is not a level-1 suggestion of topic '{row['qid']}'")
    if "weight" in frame:
        frame["weight"] = parse_numbers(frame, "weight", path, integer=False)
        _fail_at(frame, (frame["weight"] < 0).to_numpy(), path, lambda row: f"weight {row['weight']} is negative")
    else:
        frame["weight"] = 1.0 / frame.groupby(["qid", "level"])["text"].transform("size")
    return frame[["qid", "sugg_id", "level", "parent", "text", "weight"]]


def read_fold_file(path: str | os.PathLike, qids: set[str]) -> pd.DataFrame:
    """``qid fold`` per line (whitespace-separated) -> ``folds``; folds are whole numbers from 1."""
    frame = read_fields(path, ("qid", "fold"))
    frame["fold"] = parse_numbers(frame, "fold", path, integer=True, bounds=(1, 127))
    _unknown_topics(frame, qids, path)
    _fail_at(frame, frame["qid"].duplicated().to_numpy(), path, lambda row: f"topic '{row['qid']}' is listed twice")
    return frame[["qid", "fold"]]


def deal_folds(judged: list[str], k: int, seed: int) -> pd.DataFrame:
    """``k`` folds of the judged topics: a seeded random order dealt round robin (sizes differ by at most one)."""
    if not 2 <= k <= min(len(judged), 127):
        raise ValueError(f"folds must be between 2 and the number of judged topics ({len(judged)}), got {k}")
    order = np.random.default_rng(seed).permutation(len(judged))
    fold = np.empty(len(judged), np.int64)
    fold[order] = np.arange(len(judged)) % k + 1
    return pd.DataFrame({"qid": judged, "fold": fold})


def import_collection(topics: Sequence[str | os.PathLike], qrels: Sequence[str | os.PathLike],
                      run: Sequence[str | os.PathLike], subtopics: str | os.PathLike | None = None,
                      suggestions: str | os.PathLike | None = None, folds: str | os.PathLike | None = None,
                      k_folds: int | None = None, seed: int = 42,
                      docs: pd.DataFrame | None = None) -> tuple[Collection, list[str]]:
    """The collection of these files (see the module docstring) and notes for the user.

    ``topics``, ``qrels`` and ``run`` may be several files each (one per year of a track), read in order.
    ``folds`` (a file) or ``k_folds`` (dealt with ``seed``) gives the folds; ``docs``, a documents table read
    by :func:`srdiv.text.documents.read_docs`, is kept as the collection's text.
    """
    if (folds is None) == (k_folds is None):
        raise ValueError("give the folds as a file or as a number of folds to deal, not both or neither")
    parts, qids = [], set[str]()
    for path in topics:
        table, subs = read_topic_file(path)
        again = table[table["qid"].isin(qids)]
        if len(again):
            raise InputError(path, f"topic '{again['qid'].iloc[0]}' is in an earlier topics file too")
        qids |= set(table["qid"])
        parts.append((table, subs))
    topic_table = pd.concat([t for t, _ in parts], ignore_index=True)
    if subtopics is not None:
        sub_table = read_subtopic_file(subtopics, qids)
    elif all(subs is not None for _, subs in parts):
        sub_table = pd.concat([subs for _, subs in parts], ignore_index=True)
        twice = sub_table[sub_table.duplicated(["qid", "sid"])]
        if len(twice):
            raise InputError(topics[0], f"subtopic '{twice['sid'].iloc[0]}' of topic '{twice['qid'].iloc[0]}' "
                                        "appears twice")
    else:
        raise InputError(topics[0], "TSV topics carry no subtopics: give the subtopics file too")
    known = pd.MultiIndex.from_frame(sub_table[["qid", "sid"]].astype(str))
    judgments = []
    for path in qrels:
        judged = read_qrels(path, qids, with_lines=True)
        stray = (judged["rel"] > 0) & ~pd.MultiIndex.from_frame(judged[["qid", "sid"]]).isin(known)
        _fail_at(judged, stray.to_numpy(), path,
                 lambda row: f"document '{row['docno']}' is judged relevant to subtopic '{row['sid']}' of topic "
                             f"'{row['qid']}', which the subtopics lack")
        judgments.append(judged.drop(columns="line"))
    judged = pd.concat(judgments, ignore_index=True)
    twice = judged[judged.duplicated(["qid", "sid", "docno"])]
    if len(twice):
        raise InputError(qrels[-1], f"({' '.join(twice[['qid', 'sid', 'docno']].iloc[0])}) is judged in an earlier "
                                    "qrels file too")
    rankings, ranked = [], set[str]()
    for path in run:
        ranking = read_trec_run(path)
        check_run(ranking, path, qids)
        _fail_at(ranking, ranking["qid"].isin(ranked).to_numpy(), path,
                 lambda row: f"topic '{row['qid']}' is ranked in an earlier run file too")
        ranked |= set(ranking["qid"])
        rankings.append(order_run(ranking))
    ranking = pd.concat(rankings, ignore_index=True)
    suggestion_table = (read_suggestion_file(suggestions, qids) if suggestions is not None else
                        pd.DataFrame(columns=["qid", "sugg_id", "level", "parent", "text", "weight"]))
    has_judgments = set(judged["qid"])
    judged_qids = [q for q in topic_table["qid"] if q in has_judgments]
    if folds is not None:
        fold_table = read_fold_file(folds, qids)
    else:
        assert k_folds is not None   # checked above: the folds file or k_folds
        fold_table = deal_folds(judged_qids, k_folds, seed)
    unjudged = [q for q in topic_table["qid"] if q not in has_judgments]
    in_folds = set(fold_table["qid"])
    unfolded = [q for q in judged_qids if q not in in_folds]
    notes = [f"{len(found)} {what}: {', '.join(found[:10])}{' ...' if len(found) > 10 else ''}"
             for found, what in ((unjudged, "topics without judgments (kept, not evaluated)"),
                                 (unfolded, "judged topics are in no fold (never tested)")) if found]
    if suggestions is None:
        notes.append("no suggestions: the explicit models see each query as its only intent")
    coll = Collection(topics=topic_table, subtopics=sub_table, suggestions=suggestion_table,
                      qrels=judged, run=ranking, folds=fold_table, docs=docs)
    return coll, notes


EXPORT_FILES = {"topics": "topics.tsv", "subtopics": "subtopics.tsv", "suggestions": "suggestions.tsv",
                "qrels": "qrels.txt", "run": "run.txt", "folds": "folds.txt", "docs": "docs.parquet"}
"""The files :func:`export_collection` writes, by table."""


def tsv(frame: pd.DataFrame, columns: list[str]) -> str:
    """``frame``'s ``columns`` as TSV with a header line, text escaped, numbers as Python writes them (exact)."""
    cells = [[repr(float(v)) for v in frame[c]] if frame[c].dtype.kind == "f" else [escape(str(v)) for v in frame[c]]
             for c in columns]
    return "".join("\t".join(fields) + "\n" for fields in [columns, *zip(*cells)])


def export_collection(coll: Collection, out_dir: str | os.PathLike) -> None:
    """Write ``coll`` as the files :func:`import_collection` reads (:data:`EXPORT_FILES`), the directory as a
    whole. Subtopic ids must be whole numbers (the qrels format's); an empty run or qrels cannot be written."""
    sids = pd.concat([coll.subtopics["sid"], coll.qrels["sid"]]).astype(str)
    odd = sids[~sids.str.fullmatch(r"\d+")]
    if len(odd):
        raise InputError(coll.path or "<collection>", f"subtopic id '{odd.iloc[0]}' is not a whole number, as TREC "
                                                      "diversity qrels need")
    with atomic_dir(out_dir, marker=EXPORT_FILES["topics"]) as tmp:
        write_text(tsv(coll.topics, ["qid", "query", "description", "type"]), tmp / EXPORT_FILES["topics"])
        write_text(tsv(coll.subtopics, ["qid", "sid", "text"]), tmp / EXPORT_FILES["subtopics"])
        write_text(tsv(coll.suggestions, ["qid", "sugg_id", "level", "parent", "text", "weight"]),
                   tmp / EXPORT_FILES["suggestions"])
        qrels = coll.qrels
        write_text("".join(f"{q} {s} {d} {g}\n" for q, s, d, g in zip(qrels["qid"], qrels["sid"], qrels["docno"],
                                                                      qrels["grade"])), tmp / EXPORT_FILES["qrels"])
        write_trec_run(coll.run, tmp / EXPORT_FILES["run"], tag="srdiv")
        write_text("".join(f"{q} {f}\n" for q, f in zip(coll.folds["qid"], coll.folds["fold"])),
                   tmp / EXPORT_FILES["folds"])
        if coll.docs is not None:
            write_parquet(conform("docs", coll.docs), tmp / EXPORT_FILES["docs"])
