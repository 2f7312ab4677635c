"""The collection schema shared by every dataset.

A collection is a directory of zstd-compressed Parquet tables:

==============  ==========================================================  ==========
table           columns                                                     required
==============  ==========================================================  ==========
topics          qid, query, description, type                               yes
subtopics       qid, sid, text            (official intents)                 yes
suggestions     qid, sugg_id, level, parent, text, weight                    yes
qrels           qid, sid, docno, grade, rel                                  yes
run             qid, docno, rank, score   (initial ranking, rank from 1)     yes
folds           qid, fold                 (fold in 1..5)                     yes
docs            docno, title, body, anchor, url [, pagerank, inlinks,        no
                outlinks]
==============  ==========================================================  ==========

Conventions (PyTerrier / ir_measures): ``qid``, ``sid``, ``docno`` and
``sugg_id`` are strings; ``rank`` starts at 1; ``grade`` is the judged grade
with negative grades (spam) read as 0; ``rel`` is ``grade > 0`` as an int.
``suggestions.level`` is 1 or 2; a level-2 suggestion names its level-1
``parent`` (its ``sugg_id``), level-1 suggestions have ``parent == ""``;
``weight`` is the suggestion's prior weight (uniform unless the source says
otherwise). Suggestions are what the models see; ``subtopics`` and ``qrels``
are for evaluation and training labels only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from srdiv.io import InputError, atomic_dir, check_keys, first_misfit, read_parquet, write_parquet, write_text

TABLES: dict[str, dict[str, str]] = {
    "topics": {"qid": "string", "query": "string", "description": "string", "type": "string"},
    "subtopics": {"qid": "string", "sid": "string", "text": "string"},
    "suggestions": {
        "qid": "string",
        "sugg_id": "string",
        "level": "int8",
        "parent": "string",
        "text": "string",
        "weight": "float64",
    },
    "qrels": {"qid": "string", "sid": "string", "docno": "string", "grade": "int8", "rel": "int8"},
    "run": {"qid": "string", "docno": "string", "rank": "int32", "score": "float64"},
    "folds": {"qid": "string", "fold": "int8"},
    "docs": {"docno": "string", "title": "string", "body": "string", "anchor": "string", "url": "string"},
}
"""Required columns and dtypes of each table (``docs`` may carry graph columns too)."""

RANGES: dict[str, dict[str, tuple[float, float]]] = {
    "suggestions": {"level": (1, 2), "weight": (0.0, np.inf)},
    "qrels": {"grade": (0, np.iinfo(np.int8).max), "rel": (0, 1)},
    "run": {"rank": (1, np.iinfo(np.int32).max)},
    "folds": {"fold": (1, np.iinfo(np.int8).max)},
}
"""Allowed values of numeric columns (inclusive), besides fitting their dtype and being finite."""

KEYS: dict[str, list[str]] = {"topics": ["qid"], "subtopics": ["qid", "sid"], "suggestions": ["qid", "sugg_id"],
                              "qrels": ["qid", "sid", "docno"], "run": ["qid", "docno"], "folds": ["qid"],
                              "docs": ["docno"]}
"""The columns that identify a row of each table: never null, never twice the same."""

OPTIONAL_TABLES = {"docs"}
DOC_GRAPH_COLUMNS = ("pagerank", "inlinks", "outlinks")


def conform(name: str, df: pd.DataFrame, path: str | os.PathLike = "<frame>") -> pd.DataFrame:
    """Check a table's required columns and cast them to the schema's dtypes.

    A numeric value is cast only when it fits: a number (finite), a whole number for an integer
    column, within the dtype and :data:`RANGES`; anything else is an :class:`InputError` naming
    the column and row, never a silently wrapped or truncated value. Key columns (:data:`KEYS`) hold
    no null and no two rows the same keys. Extra columns are kept after the required ones (e.g.
    graph features in ``docs``, which must be finite numbers >= 0).
    """
    spec = TABLES[name]
    missing = [c for c in spec if c not in df.columns]
    if missing:
        raise InputError(path, f"table '{name}' lacks columns {missing}")
    out = df[list(spec) + [c for c in df.columns if c not in spec]].copy()
    check_keys(path, out, KEYS[name], f"table '{name}'")
    for col, dtype in spec.items():
        if dtype == "string":
            out[col] = out[col].astype(str).astype(object)
        else:
            out[col] = checked_numbers(out[col], dtype, RANGES.get(name, {}).get(col), f"table '{name}'", path)
    for col in DOC_GRAPH_COLUMNS if name == "docs" else ():
        if col in out.columns:
            bad = first_misfit(out[col].to_numpy(), integer=False, low=0.0)
            if bad is not None:
                raise InputError(path, f"column '{col}' of document {out['docno'].iloc[bad]!r} is not a finite "
                                       f"number >= 0 (got {out[col].iloc[bad]!r})")
            values = pd.to_numeric(out[col])      # whole counts stay integers (as the open collections hold them)
            out[col] = values if values.dtype.kind in "iu" else values.astype(np.float64)
    return out.reset_index(drop=True)


def checked_numbers(values: pd.Series, dtype: str, bounds: tuple[float, float] | None, what: str,
                    path: str | os.PathLike) -> pd.Series:
    """``values`` as ``dtype`` when every one is finite, whole for an integer dtype, and within
    the dtype's range and ``bounds``; else :class:`InputError` naming the first that is not."""
    integer = np.issubdtype(np.dtype(dtype), np.integer)
    low, high = bounds if bounds else (-np.inf, np.inf)
    if integer:
        low, high = max(low, np.iinfo(dtype).min), min(high, np.iinfo(dtype).max)
    bad = first_misfit(values.to_numpy(), integer, low, high)
    if bad is not None:
        kind = "an integer" if integer else "a finite number"
        span = f" in [{low:.0f}, {high:.0f}]" if integer else f" in [{low:g}, {high:g}]"
        value = values.iloc[bad]
        value = value.item() if hasattr(value, "item") else value   # 301, not np.int64(301)
        raise InputError(path, f"{what}: {values.name} {value!r} in row {bad + 1} is not {kind}{span}")
    return pd.to_numeric(values).astype(dtype)


@dataclass
class Collection:
    """The tables of one dataset (``docs`` is None when no text is available)."""

    topics: pd.DataFrame
    subtopics: pd.DataFrame
    suggestions: pd.DataFrame
    qrels: pd.DataFrame
    run: pd.DataFrame
    folds: pd.DataFrame
    docs: pd.DataFrame | None = None
    path: Path | None = None

    @property
    def qids(self) -> list[str]:
        """Query ids in topic order."""
        return list(self.topics["qid"])

    def docs_table(self) -> pd.DataFrame:
        """The ``docs`` table; an :class:`InputError` naming the collection when it has none."""
        if self.docs is None:
            raise InputError(self.path or "<collection>", "the collection has no docs table (docs.parquet)")
        return self.docs


def check_references(coll: Collection, path: str | os.PathLike = "<collection>") -> None:
    """Every table speaks of the collection's topics, and every relevant judgment of a subtopic of its topic.

    A qrels, run, folds or suggestions row for a qid that is not a topic, or a judgment with
    ``rel > 0`` for a (qid, sid) that ``subtopics`` lacks, is an :class:`InputError`: dropping it
    would silently change every metric. (Non-relevant judgments may name other subtopic ids: TREC
    2009 judges documents relevant to no subtopic as subtopic 0.) Empty topics, qrels, run or folds
    are errors too: they would replace a collection with one nothing can be measured on.
    """
    for name in ("topics", "qrels", "run", "folds"):
        if len(getattr(coll, name)) == 0:
            raise InputError(Path(path) / f"{name}.parquet", f"table '{name}' is empty")
    topics = set(coll.topics["qid"])
    for name in ("subtopics", "suggestions", "qrels", "run", "folds"):
        table = getattr(coll, name)
        unknown = ~table["qid"].isin(topics).to_numpy()
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            raise InputError(Path(path) / f"{name}.parquet",
                             f"qid '{table['qid'].iloc[i]}' in row {i + 1} is not a topic of the collection")
    known = pd.MultiIndex.from_frame(coll.subtopics[["qid", "sid"]].astype(str))
    relevant = coll.qrels[coll.qrels["rel"] > 0]
    unknown = ~pd.MultiIndex.from_frame(relevant[["qid", "sid"]].astype(str)).isin(known)
    if unknown.any():
        row = relevant.iloc[int(np.flatnonzero(unknown)[0])]
        raise InputError(Path(path) / "qrels.parquet",
                         f"document '{row['docno']}' is judged relevant to subtopic '{row['sid']}' of topic "
                         f"'{row['qid']}', which the topic's subtopics lack")


def write_collection(coll: Collection, out_dir: str | os.PathLike,
                     extra: dict[str, str | pd.DataFrame] | None = None) -> None:
    """Write every table of ``coll`` to ``out_dir/<table>.parquet``, the directory as a whole.

    The tables are checked (:func:`conform`, :func:`check_references`) and written to a
    temporary directory that replaces ``out_dir`` only when complete, so an interrupt or an
    error leaves the old collection or the new one, never a mix. ``extra``: files written with
    them, text or a Parquet table (``{"README.md": data card, "oracle-suggestions.parquet": frame}``).
    """
    tables = {name: conform(name, getattr(coll, name)) for name in TABLES if getattr(coll, name) is not None}
    check_references(Collection(**tables), out_dir)
    with atomic_dir(out_dir, marker="topics.parquet") as tmp:
        for name, df in tables.items():
            write_parquet(df, tmp / f"{name}.parquet")
        for name, content in (extra or {}).items():
            if isinstance(content, pd.DataFrame):
                write_parquet(content, tmp / name)
            else:
                write_text(content, tmp / name)


def load_collection(path: str | os.PathLike, with_docs: bool = False) -> Collection:
    """Load a collection directory written by :func:`write_collection`."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(path, "collection directory not found")
    tables: dict[str, pd.DataFrame | None] = {}
    for name in TABLES:
        file = path / f"{name}.parquet"
        if name in OPTIONAL_TABLES and (not with_docs or not file.exists()):
            tables[name] = None
            continue
        if not file.exists():
            hint = (" (a collection is a directory of Parquet tables: build one with 'srdiv collection trec-web "
                    "--source DIR --out COLLECTION' for the TREC Web Track files, or see 'srdiv collection --help')")
            raise InputError(file, f"collection table '{name}' not found{hint if name == 'topics' else ''}")
        tables[name] = conform(name, read_parquet(file), file)
    coll = Collection(**tables, path=path)
    check_references(coll, path)
    return coll
