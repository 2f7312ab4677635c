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

import pandas as pd

from srdiv.io import InputError, write_parquet

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

OPTIONAL_TABLES = {"docs"}
DOC_GRAPH_COLUMNS = ("pagerank", "inlinks", "outlinks")


def conform(name: str, df: pd.DataFrame, path: str | os.PathLike = "<frame>") -> pd.DataFrame:
    """Check a table's required columns and cast them to the schema's dtypes.

    Extra columns are kept after the required ones (e.g. graph features in ``docs``).
    """
    spec = TABLES[name]
    missing = [c for c in spec if c not in df.columns]
    if missing:
        raise InputError(path, f"table '{name}' lacks columns {missing}")
    out = df[list(spec) + [c for c in df.columns if c not in spec]].copy()
    for col, dtype in spec.items():
        if dtype == "string":
            out[col] = out[col].astype(str).astype(object)
        else:
            out[col] = out[col].astype(dtype)
    return out.reset_index(drop=True)


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


def write_collection(coll: Collection, out_dir: str | os.PathLike) -> None:
    """Write every table of ``coll`` to ``out_dir/<table>.parquet`` (each atomically)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        df = getattr(coll, name)
        if df is None:
            continue
        write_parquet(conform(name, df), out_dir / f"{name}.parquet")


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
            raise InputError(file, f"collection table '{name}' not found")
        tables[name] = conform(name, pd.read_parquet(file), file)
    return Collection(**tables, path=path)
