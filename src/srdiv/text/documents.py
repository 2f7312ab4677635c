"""Document text for the text stages: the collection's ``docs`` table or the user's own file.

A user with licensed ClueWeb09 text passes it as JSONL or Parquet with the
columns of the ``docs`` table (``docno, title, body, anchor, url`` and optional
``pagerank, inlinks, outlinks``); see ``docs/user-documents.md``. Every text
stage takes such a file through ``--docs`` in place of the collection's table.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from srdiv.collection.schema import TABLES, conform
from srdiv.io import InputError, read_parquet, read_text

TEXT_COLUMNS = ("title", "body", "anchor", "url")
"""The text columns of a document; all of them make the text that doc2vec and LDA learn from."""

FIELDS: dict[str, tuple[str, ...]] = {
    "anchor_text": ("anchor",),
    "body": ("body",),
    "text": ("title", "body"),
    "title": ("title",),
    "url_text": ("url",),
}
"""The five fields of the relevance features (DSSA release names) and the columns each joins.

``text`` is the whole document as a web page holds it: title and body (anchor
text is written by other pages; the URL is a field of its own).
"""


def _read_jsonl(path: Path) -> pd.DataFrame:
    """Read JSON Lines, naming the first bad line on failure; the frame's index is the line numbers."""
    records, numbers = [], []
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(path, f"invalid JSON: {err.msg}", number) from None
        if not isinstance(record, dict):
            raise InputError(path, "each line must be a JSON object", number)
        records.append(record)
        numbers.append(number)
    return pd.DataFrame.from_records(records, index=pd.Index(numbers, dtype=np.int64))


def _check_types(df: pd.DataFrame, path: Path, jsonl: bool) -> None:
    """Text columns hold text (null too, but for ``docno``), ``links`` lists of docnos (or null); else
    one :class:`InputError` naming the column and the line (JSON Lines) or row (Parquet)."""
    def text(value) -> bool:
        return isinstance(value, str)

    def links(value) -> bool:
        return isinstance(value, (list, tuple, np.ndarray)) and all(isinstance(v, str) for v in value)

    checks = [(col, text, "text") for col in TABLES["docs"]] + [("links", links, "a list of docnos (text)")]
    for col, fits, kind in checks:
        if col not in df.columns:
            continue
        values = df[col]
        ok = np.fromiter(map(fits, values), dtype=bool, count=len(values))
        if col != "docno":
            ok |= values.isna().to_numpy()
        if not ok.all():
            bad = int(np.argmin(ok))
            value = values.iloc[bad]
            value = value.item() if isinstance(value, np.generic) else value   # 5, not np.int64(5)
            where = {"line": int(df.index[bad])} if jsonl else {}
            row = "" if jsonl else f" in row {bad + 1}"
            raise InputError(path, f"column '{col}'{row} is not {kind} (got {value!r})", **where)


def read_docs(path: str | os.PathLike) -> pd.DataFrame:
    """Read a documents file (``.jsonl``/``.json`` lines or ``.parquet``) into the ``docs`` schema.

    Text columns must hold text, ``links`` lists of docnos (:func:`_check_types`); missing text (null)
    becomes ``""``; graph columns, when present, must be numeric.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(path, "documents file not found")
    if path.suffix in (".jsonl", ".json"):
        df = _read_jsonl(path)
    elif path.suffix == ".parquet":
        df = read_parquet(path)
    else:
        raise InputError(path, "documents file must end in .jsonl, .json or .parquet")
    _check_types(df, path, jsonl=path.suffix != ".parquet")
    for col in TABLES["docs"]:
        if col in df.columns and col != "docno":
            df[col] = df[col].fillna("")
    df = conform("docs", df, path)
    if len(df) == 0:
        raise InputError(path, "no documents")
    return df


def load_docs(collection_dir: str | os.PathLike, docs_file: str | os.PathLike | None = None) -> pd.DataFrame:
    """The documents of a collection, or those of ``docs_file`` when given (it wins)."""
    if docs_file is not None:
        return read_docs(docs_file)
    if not Path(collection_dir).is_dir():
        raise InputError(collection_dir, "collection directory not found")
    path = Path(collection_dir) / "docs.parquet"
    if not path.exists():
        raise InputError(path, "the collection has no document text; pass a documents file with --docs")
    return read_docs(path)


def join_columns(docs: pd.DataFrame, columns: tuple[str, ...]) -> list[str]:
    """One text per document: ``columns`` joined by spaces."""
    text = docs[columns[0]].astype(str)
    for col in columns[1:]:
        text = text + " " + docs[col].astype(str)
    return text.tolist()


def doc_positions(docs: pd.DataFrame, docnos) -> np.ndarray:
    """Row of each docno in ``docs``, ``-1`` when absent (same shape as ``docnos``)."""
    docnos = np.asarray(docnos, dtype=object)
    pos = pd.Index(docs["docno"]).get_indexer(docnos.ravel())
    return pos.reshape(docnos.shape).astype(np.int64)
