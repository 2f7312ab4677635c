"""Import the precomputed DSSA feature release in place of the text stages (TREC Web Track).

The release (Jiang et al., data of DSSA) has, in one directory:

* ``doc.emb``: ``docno<TAB>v1<TAB>...<TAB>vE`` per line, LDA document vectors;
* ``query.emb``: ``query string<TAB>v1...vE``, the pseudo-document vectors of
  queries and suggestions, keyed by their text;
* ``rel_feat.csv``: header ``query,doc,<18 features>`` (DSSA Table 5, the names
  of :data:`srdiv.features.relevance.FEATURE_NAMES`), one row per (query
  string, document);
* optionally the candidate lists (the release pickles them; only a JSON
  conversion ``{qid: [docno, ...]}`` is read here, never a pickle).

Query strings map to ``(qid, sugg_id)`` through the collection: every query
and suggestion whose text equals a release string (compared lowercased, with
whitespace runs collapsed) takes its rows, so a string shared by two topics
serves both. Strings of the collection absent from the release (the release
has no level-2 suggestions) are counted in a warning and left out; the bundle
then masks them.

Outputs are the tables the text stages write: ``embed/lda.parquet``,
``pseudo_docs/lda.parquet`` and ``features/relevance.parquet``. The diversity
features then come from ``srdiv features diversity`` without ``--docs``: only
the vector-based ``subtopic_div`` can be computed without text.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from srdiv.collection.schema import Collection
from srdiv.features.relevance import FEATURE_NAMES, candidates
from srdiv.io import InputError, read_json, read_text, read_tsv
from srdiv.text.pseudo_docs import query_strings

RELEASE_FILES = ("doc.emb", "query.emb", "rel_feat.csv")


def normalise(text: pd.Series) -> pd.Series:
    """Lowercase with whitespace runs collapsed: the key that matches release strings."""
    return text.astype(str).str.lower().str.split().str.join(" ")


def read_emb(path: str | os.PathLike) -> tuple[list[str], np.ndarray]:
    """A ``key<TAB>floats`` file -> ``(keys, vectors [rows, E] float32)``; a bad line is named."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    keys: list[str] = []
    rows: list[np.ndarray] = []
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        line = line.rstrip("\r")
        if not line:
            continue
        key, *values = line.split("\t")
        try:
            vector = np.array(values, dtype=np.float64)
        except ValueError:
            raise InputError(path, "a vector value is not a number", number) from None
        if rows and len(vector) != len(rows[0]):
            raise InputError(path, f"expected {len(rows[0])} values, found {len(vector)}", number)
        if not len(vector) or not (np.abs(vector) <= np.finfo(np.float32).max).all():
            raise InputError(path, "empty vector or a value that is not a finite float32", number)
        keys.append(key)
        rows.append(vector)
    if not rows:
        raise InputError(path, "no vectors")
    if len(set(keys)) != len(keys):
        raise InputError(path, "a key appears twice")
    return keys, np.stack(rows).astype(np.float32)


def read_rel_feat(path: str | os.PathLike) -> pd.DataFrame:
    """``rel_feat.csv`` -> ``query, docno`` + the 18 features (header checked, values finite)."""
    path = Path(path)
    frame = read_tsv(path, [], dtype={"query": str, "doc": str}, keep_default_na=False)
    expected = ["query", "doc"] + FEATURE_NAMES
    if list(frame.columns) != expected:
        raise InputError(path, f"header must be {','.join(expected)}", 1)
    values = frame[FEATURE_NAMES].apply(pd.to_numeric, errors="coerce")
    bad = ~np.isfinite(values.to_numpy(dtype=np.float64)).all(axis=1)
    if bad.any():
        raise InputError(path, "a feature is not a finite number", int(np.flatnonzero(bad)[0]) + 2)
    return pd.concat([frame[["query"]], frame[["doc"]].rename(columns={"doc": "docno"}),
                      values.astype(np.float32)], axis=1)


def match_strings(coll: Collection, release_keys: pd.Series) -> pd.DataFrame:
    """``qid, sugg_id, norm`` for every collection string found among ``release_keys`` (warns on the rest).

    ``norm`` is the matching key (:func:`normalise`).
    """
    strings = query_strings(coll).assign(norm=lambda f: normalise(f["text"]))
    found = strings["norm"].isin(set(normalise(release_keys)))
    if not found.all():
        levels = coll.suggestions.set_index(["qid", "sugg_id"])["level"]
        lost = strings.loc[~found, ["qid", "sugg_id"]]
        kind = levels.reindex(pd.MultiIndex.from_frame(lost)).fillna(0).astype(int).to_numpy()
        counts = pd.Series(kind).map({0: "queries", 1: "level-1", 2: "level-2"}).value_counts()
        detail = ", ".join(f"{n} {name}" for name, n in counts.items())
        warnings.warn(f"{len(lost)} of {len(strings)} queries and suggestions are not in the release "
                      f"({detail}); they are left out", stacklevel=2)
    return strings.loc[found, ["qid", "sugg_id", "norm"]].reset_index(drop=True)


def check_candidates(coll: Collection, path: str | os.PathLike, rank_docs: int) -> None:
    """Warn when the release's candidate lists (JSON) differ from the run's top ``rank_docs``."""
    path = Path(path)
    lists = read_json(path, "file", object)
    if not isinstance(lists, dict):
        raise InputError(path, "expected an object {qid: [docno, ...]}")
    run = candidates(coll, rank_docs).groupby("qid")["docno"].agg(list)
    differ = [q for q, docs in lists.items() if run.get(str(q), []) != list(docs)[:rank_docs]]
    if differ:
        warnings.warn(f"{len(differ)} of {len(lists)} release candidate lists differ from the run's top "
                      f"{rank_docs} (e.g. topic {differ[0]}); the run's are used", stacklevel=2)


def import_release(coll: Collection, release_dir: str | os.PathLike
                   ) -> tuple[tuple[pd.DataFrame, np.ndarray], tuple[pd.DataFrame, np.ndarray], pd.DataFrame]:
    """Read a release directory into ``(doc vectors, pseudo-doc vectors, relevance table)``.

    Doc vectors: ``(docno frame, [docs, E])``; pseudo-doc vectors:
    ``(qid/sugg_id frame, [strings, E])``; relevance: ``qid, sugg_id, docno`` + 18 features.
    """
    release_dir = Path(release_dir)
    docnos, doc_vecs = read_emb(release_dir / "doc.emb")
    keys, query_vecs = read_emb(release_dir / "query.emb")
    if doc_vecs.shape[1] != query_vecs.shape[1]:
        raise InputError(release_dir / "query.emb", f"vectors of size {query_vecs.shape[1]}, "
                         f"documents' are {doc_vecs.shape[1]}")
    rel = read_rel_feat(release_dir / "rel_feat.csv")

    matched = match_strings(coll, pd.Series(keys))
    position = pd.Series(np.arange(len(keys)), index=normalise(pd.Series(keys))).groupby(level=0).first()
    pseudo = (matched[["qid", "sugg_id"]], query_vecs[position[matched["norm"]].to_numpy()])
    rel = rel.assign(norm=normalise(rel["query"])).drop(columns="query")
    relevance = matched.merge(rel, on="norm").drop(columns="norm")
    return (pd.DataFrame({"docno": docnos}), doc_vecs), pseudo, relevance
