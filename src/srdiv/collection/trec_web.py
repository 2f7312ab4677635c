"""The TREC Web Track 2009-2012 diversity collection from its public files.

Reads ``data/external/trec-web-2009-2012/`` (see its README for sources and
formats) into the common schema (:mod:`srdiv.collection.schema`), without
``docs`` (ClueWeb09 text is licensed):

* topics / subtopics: the 200 NIST topics and their official subtopics;
  topics 95 and 100 have no judgments, so they stay in ``topics`` (and in the
  run) but have no qrels and no fold.
* qrels: the four diversity qrels; ``grade`` is the judged grade with spam
  (-2) read as 0, ``rel = grade > 0`` (2011-2012 grades are kept in
  ``grade``). The 2009 rows with subtopic ``0`` (a document relevant to no
  subtopic) are kept as they are: like ndeval, the metrics count only
  subtopics with a relevant document, so ``0`` never counts.
* suggestions: Google suggestions of ``query_suggestion.xml``; level 1 ids
  ``"i"``, level 2 ids ``"i.j"`` with parent ``"i"``; weight 1/count within
  (topic, level). Empty strings are dropped (with their level-2 children for
  a level-1 item). The first level-2 item often repeats its parent's text: it
  is kept, it is the data. Topics 148 and 149 have none.
* run: the released Indri/Lemur ranking, ranks renumbered 1..n in the file's
  rank order (spam removal left gaps); scores kept.
* folds: M2DIV's 5-fold split (``fold1``..``fold5`` -> 1..5). Its 196 topics
  miss two judged ones (149, 168); every judged topic missing from the split
  goes, in qid order, to the then smallest fold (lowest number on ties), so
  cross-validation covers all 198 judged topics.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from srdiv.collection.schema import Collection
from srdiv.io import BOM, InputError, normal_id, read_json, text_bytes
from srdiv.metrics.runs import check_run, order_run, read_qrels, read_trec_run

DEFAULT_SOURCE = Path("data/external/trec-web-2009-2012")
YEARS = (2009, 2010, 2011, 2012)


def _text(element: ET.Element | None) -> str:
    """Element text with whitespace runs collapsed to one space ("" when absent)."""
    return " ".join((element.text or "").split()) if element is not None else ""


def _parse_xml(path: Path) -> ET.Element:
    """Root of an XML file; a syntax error names its line."""
    data = path.read_bytes() if path.is_file() else text_bytes(path)     # (text_bytes: "file not found")
    declared = re.match(rb"\s*<\?xml[^>]*encoding=[\"']([^\"']+)", data.removeprefix(BOM))
    if declared is None or declared[1].lower().replace(b"-", b"") == b"utf8":
        data = text_bytes(path)        # UTF-8: a byte that is not names its line (else the declared encoding's)
    try:
        return ET.fromstring(data)
    except ET.ParseError as err:
        raise InputError(path, f"malformed XML: {err.msg}", err.position[0]) from None


def read_topics(path: str | os.PathLike) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One NIST topic file -> ``topics`` (qid, query, description, type) and ``subtopics`` (qid, sid, text)."""
    path = Path(path)
    topics, subtopics = [], []
    for topic in _parse_xml(path).iter("topic"):
        qid, query = normal_id(topic.get("number", "").strip()), _text(topic.find("query"))
        if not qid.isdigit() or not query:
            raise InputError(path, f"topic '{qid}' lacks a number or a query")
        topics.append((qid, query, _text(topic.find("description")), topic.get("type", "")))
        subtopics += [(qid, normal_id(sub.get("number", "").strip()), _text(sub)) for sub in topic.iter("subtopic")]
    if not topics:
        raise InputError(path, "no <topic> elements")
    return (pd.DataFrame(topics, columns=["qid", "query", "description", "type"]),
            pd.DataFrame(subtopics, columns=["qid", "sid", "text"]))


def read_suggestions(path: str | os.PathLike, qids: set[str]) -> pd.DataFrame:
    """Two-level suggestions XML -> ``qid, sugg_id, level, parent, text, weight``."""
    path = Path(path)
    rows, seen = [], set()
    for topic in _parse_xml(path).iter("topic"):
        qid = normal_id(topic.get("number", "").strip())
        if qid not in qids or qid in seen:
            raise InputError(path, f"suggestions for unknown or repeated topic '{qid}'")
        seen.add(qid)
        for sub1 in topic.iter("subtopic1"):
            i, text = sub1.get("number", ""), _text(sub1.find("suggestion"))
            if not text:
                continue
            rows.append((qid, i, 1, "", text))
            rows += [(qid, f"{i}.{sub2.get('number', '')}", 2, i, _text(sub2))
                     for sub2 in sub1.iter("subtopic2") if _text(sub2)]
    frame = pd.DataFrame(rows, columns=["qid", "sugg_id", "level", "parent", "text"])
    frame["weight"] = 1.0 / frame.groupby(["qid", "level"])["text"].transform("size")
    return frame


def read_folds(path: str | os.PathLike, judged: list[str], qids: set[str]) -> tuple[pd.DataFrame, list[str]]:
    """M2DIV split ``{"fold1": [qid, ...], ...}`` -> ``qid, fold`` covering every judged topic.

    Judged topics missing from the split go, in qid order, to the then
    smallest fold (lowest fold number on ties). Returns the table and a note
    per assigned topic.
    """
    path = Path(path)
    split = read_json(path, "file", object)
    if not isinstance(split, dict) or not all(re.fullmatch(r"fold[1-5]", k) for k in split):
        raise InputError(path, "expected an object with keys fold1..fold5")
    folds = {normal_id(str(q)): int(k[4:]) for k, members in split.items() for q in members}
    if sum(len(m) for m in split.values()) != len(folds) or not set(folds) <= qids:
        raise InputError(path, "a topic is listed twice or is not a topic of the collection")
    sizes = {f: 0 for f in range(1, 6)}
    for f in folds.values():
        sizes[f] += 1
    notes = []
    for qid in sorted(set(judged) - set(folds), key=int):
        fold = min(sizes, key=lambda f: (sizes[f], f))
        folds[qid], sizes[fold] = fold, sizes[fold] + 1
        notes.append(f"topic {qid} is judged but not in {path.name}: assigned to fold {fold}")
    table = pd.DataFrame({"qid": list(folds), "fold": list(folds.values())})
    return table.sort_values("qid", key=lambda q: q.astype(int), kind="stable"), notes


def build_trec_web(source: str | os.PathLike = DEFAULT_SOURCE) -> tuple[Collection, list[str]]:
    """All tables of the collection from ``source``; returns it and notes for the user."""
    source = Path(source)
    parts = [read_topics(source / "topics" / f"wt{year}.topics.xml") for year in YEARS]
    topics = pd.concat([p[0] for p in parts], ignore_index=True)
    subtopics = pd.concat([p[1] for p in parts], ignore_index=True)
    qids = set(topics["qid"])
    if len(qids) != len(topics):
        raise InputError(source / "topics", "a topic number appears twice")
    qrels = pd.concat([read_qrels(source / "qrels" / f"{year}.diversity.qrels", qids) for year in YEARS],
                      ignore_index=True)
    runs = []
    for year in YEARS:
        path = source / "runs" / f"wt{year}.txt"
        run = read_trec_run(path)
        check_run(run, path, qids)
        runs.append(order_run(run))
    judged = list(pd.unique(qrels["qid"]))
    folds, notes = read_folds(source / "folds_m2div.json", judged, qids)
    unjudged = sorted(qids - set(judged), key=int)
    notes.append(f"topics without judgments (kept in topics and run, no fold): {', '.join(unjudged)}")
    coll = Collection(
        topics=topics, subtopics=subtopics,
        suggestions=read_suggestions(source / "query_suggestion.xml", qids),
        qrels=qrels, run=pd.concat(runs, ignore_index=True), folds=folds,
    )
    return coll, notes
