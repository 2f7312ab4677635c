"""Assemble the stage outputs of one dataset into the training-ready :class:`Bundle`.

Per query (topic order): candidates are the top ``rank_docs`` of the initial
run in rank order; ``doc_vec`` from the document vectors, ``query_vec`` and
the suggestion vectors from the pseudo-document vectors; relevance features
of the query and of every kept suggestion; pairwise diversity features;
labels from the qrels' ``rel`` against the official subtopics (qrels rows of
other subtopic ids, like TREC 2009's ``0``, are not labels).

Suggestions: level 1 in table order, the first ``max_subs`` that have a
vector, weighted uniformly; level 2, the first ``max_subs2`` (in table order)
whose parent was kept, with the parent's index. A suggestion without a
pseudo-document vector (e.g. level 2 in the DSSA release) is left out and
counted in a warning. A candidate without a document vector, a query without a
pseudo-document vector, a (query or suggestion, candidate) pair without
relevance features or a candidate pair without diversity features is an error
naming the first one, unless ``fill="zero"`` (``srdiv bundle --fill zero``):
then they are zeros, counted in a warning and recorded in the bundle file
(:data:`srdiv.features.bundle.FILL_KEY`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from srdiv.collection.schema import Collection
from srdiv.features.bundle import Bundle
from srdiv.features.diversity import RECORDED_FEATURES
from srdiv.features.relevance import candidate_matrix, candidates, warn_missing
from srdiv.io import InputError, check_keys, read_parquet
from srdiv.text.defaults import FeatureSettings
from srdiv.text.documents import doc_positions

Vectors = tuple[pd.DataFrame, np.ndarray]
"""A vector table: key frame and ``[rows, E]`` (see :func:`srdiv.text.embed.read_vectors`)."""


def _slots(frame: pd.DataFrame, qids: list[str], cap: int) -> pd.DataFrame:
    """``frame`` rows kept per query (the first ``cap``, in order) with ``q`` and ``slot`` columns."""
    frame = frame.assign(q=pd.Index(qids).get_indexer(frame["qid"]))
    frame = frame[frame["q"] >= 0]
    frame = frame.assign(slot=frame.groupby("qid", sort=False).cumcount().to_numpy())
    return frame[frame["slot"] < cap].reset_index(drop=True)


def _lookup(keys: pd.DataFrame, matrix: np.ndarray, wanted: pd.DataFrame, on: list[str]) -> np.ndarray:
    """Rows of ``matrix`` for the ``wanted`` keys; ``-1`` where absent."""
    index = pd.MultiIndex.from_frame(keys[on].astype(str))
    return index.get_indexer(pd.MultiIndex.from_frame(wanted[on].astype(str)))


def read_feature_table(path, keys: list[str], names: list[str] | None = None) -> pd.DataFrame:
    """A feature table (``features relevance`` or ``features diversity`` output) checked before use:
    the text ``keys`` columns, numeric feature columns (exactly ``names``, or when None exactly those
    the table records it was made with: :data:`srdiv.features.diversity.RECORDED_FEATURES`), at least
    one row, every value finite; else one :class:`InputError` naming ``path``."""
    frame = read_parquet(path)
    if names is None:
        names = frame.attrs.get(RECORDED_FEATURES)
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise InputError(path, "the table does not record its feature columns (not made by this version of "
                                   "'srdiv features diversity'); make it again")
    missing = [c for c in keys + names if c not in frame.columns]
    if missing:
        raise InputError(path, f"feature table lacks columns {missing}")
    columns = [c for c in frame.columns if c not in keys]
    if columns != names:
        raise InputError(path, f"feature columns {columns} are not the expected {names}")
    if not columns:
        raise InputError(path, "feature table has no feature columns")
    for col in columns:
        if not pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col]):
            raise InputError(path, f"feature column '{col}' is not numeric ({frame[col].dtype})")
    for col in keys:
        if not (pd.api.types.is_string_dtype(frame[col]) or pd.api.types.is_object_dtype(frame[col])):
            raise InputError(path, f"key column '{col}' is not text ({frame[col].dtype})")
    if frame.empty:
        raise InputError(path, "feature table has no rows")
    check_keys(path, frame, keys, "feature table")
    _feature_columns(frame, keys, str(path))
    return frame


def _feature_columns(frame: pd.DataFrame, keys: list[str], name: str) -> list[str]:
    columns = [c for c in frame.columns if c not in keys]
    values = frame[columns].to_numpy(dtype=np.float64)
    if not np.isfinite(values).all():
        row = int(np.flatnonzero(~np.isfinite(values).all(axis=1))[0])
        raise InputError(name, f"non-finite feature value in row {row + 1}")
    return columns


FILLS = ("none", "zero")
"""What :func:`build_bundle` does with a missing vector or feature row: refuse (``none``) or use zeros."""


def build_bundle(coll: Collection, doc_vectors: Vectors, pseudo_vectors: Vectors, relevance: pd.DataFrame,
                 diversity: pd.DataFrame, rank_docs: int = FeatureSettings.rank_docs,
                 max_subs: int = FeatureSettings.max_subs, max_subs2: int = FeatureSettings.max_subs2,
                 fill: str = "none", files: dict[str, str] | None = None) -> Bundle:
    """The bundle of every topic of ``coll`` (shapes in :class:`srdiv.features.bundle.Bundle`).

    ``doc_vectors``: keys ``docno``; ``pseudo_vectors``: keys ``qid, sugg_id``
    (``""`` = the query); ``relevance``: ``qid, sugg_id, docno`` + F features;
    ``diversity``: ``qid, docno_a, docno_b`` + R features. ``fill`` (:data:`FILLS`): a missing row is an
    :class:`InputError` naming it and its table (``files``: the file of each argument, by its name), or
    zeros, listed in the bundle's ``filled``.
    """
    if fill not in FILLS:
        raise ValueError(f"fill must be one of {', '.join(FILLS)}, got {fill!r}")
    files = {name: name for name in ("doc_vectors", "pseudo_vectors", "relevance", "diversity")} | (files or {})
    gap = _Gaps(fill, files)
    qids = coll.qids
    cand, d_pos, init_score = _candidates(coll, qids, rank_docs)
    doc_mask = cand != ""
    doc_vec = _doc_vectors(doc_vectors, cand, qids, gap)
    strings, vectors = _suggestion_vectors(coll, pseudo_vectors, qids, max_subs, max_subs2, gap)
    names, (rel_feat, sub_feat, sub2_feat) = _relevance_features(
        relevance, strings, d_pos, cand.shape, (vectors["sub_mask"].shape[1], vectors["sub2_mask"].shape[1]), gap)
    div_names, div_feat = _diversity_features(diversity, d_pos, cand, qids, gap)
    labels, label_mask = _labels(coll, qids, d_pos, cand.shape)
    bundle = Bundle(
        qids=np.asarray(qids, dtype=str), docnos=cand.astype(str), doc_mask=doc_mask, doc_vec=doc_vec,
        rel_feat=rel_feat, init_score=init_score, sub_feat=sub_feat, sub2_feat=sub2_feat, **vectors,
        div_feat=div_feat, labels=labels, label_mask=label_mask,
        feature_names=names, div_feature_names=div_names,
    )
    bundle.filled = tuple(gap.filled)
    return bundle


class _Gaps:
    """What :func:`build_bundle` does with missing rows (``fill``: :data:`FILLS`), and those it filled."""

    def __init__(self, fill: str, files: dict[str, str]):
        self.fill, self.files = fill, files
        self.filled: list[str] = []

    def __call__(self, missing: np.ndarray, total: int, what: str, source: str, first) -> None:
        """``missing`` [items] of ``total``: an error naming the first (``first(i)``), or zeros, recorded."""
        n = int(missing.sum())
        if not n:
            return
        if self.fill == "none":
            raise InputError(self.files[source], f"{first(int(np.argmax(missing)))} ({n} of {total} {what}): give "
                                                 "--fill zero to use zeros")
        warn_missing(n, total, what, "their values are zero (--fill zero)")
        self.filled.append(f"{n} of {total} {what}: zero")


def _candidates(coll: Collection, qids: list[str], rank_docs: int) -> tuple[np.ndarray, pd.DataFrame, np.ndarray]:
    """The candidates ``[Q, D]`` (``""`` padding), each one's ``qid, docno, d`` (its column), and the initial
    run's scores ``[Q, D]``."""
    cands = candidates(coll, rank_docs)
    empty = sorted(set(qids) - set(cands["qid"]))
    if empty:
        raise InputError("run.parquet", f"{len(empty)} topics have no candidate documents (e.g. {empty[0]})")
    cand = candidate_matrix(cands, qids)  # [Q, D]
    doc_mask = cand != ""
    n_q, n_d = cand.shape
    d_pos = pd.DataFrame({"qid": np.repeat(qids, n_d), "docno": cand.ravel(), "d": np.tile(np.arange(n_d), n_q)})
    d_pos = d_pos[doc_mask.ravel()]

    init_score = np.zeros((n_q, n_d), dtype=np.float32)
    init_score[doc_mask] = (cands.set_index(["qid", "docno"])["score"]
                            .groupby(level=[0, 1]).first()
                            .reindex(pd.MultiIndex.from_frame(d_pos[["qid", "docno"]])).to_numpy())
    return cand, d_pos, init_score


def _doc_vectors(doc_vectors: Vectors, cand: np.ndarray, qids: list[str], gap: _Gaps) -> np.ndarray:
    """``doc_vec [Q, D, E]`` of the candidates ``cand [Q, D]``."""
    doc_mask = cand != ""
    n_d = cand.shape[1]
    keys, matrix = doc_vectors
    rows = np.where(doc_mask, doc_positions(keys, cand), -1)
    lacking = (doc_mask & (rows < 0)).ravel()
    gap(lacking, int(doc_mask.sum()), "candidates have no document vector", "doc_vectors",
        lambda i: f"document '{cand.ravel()[i]}' (candidate of topic '{qids[i // n_d]}') has no vector")
    return np.where(rows[..., None] >= 0, matrix[np.maximum(rows, 0)], 0.0).astype(np.float32)


def _suggestion_vectors(coll: Collection, pseudo_vectors: Vectors, qids: list[str], max_subs: int, max_subs2: int,
                        gap: _Gaps) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The query and the kept suggestions as ``qid, sugg_id, q, slot, layer`` (layer 0 the query, 1 and 2 the
    levels), and the bundle's query and suggestion arrays (``query_vec``, ``sub_*``, ``sub2_*``)."""
    n_q = len(qids)
    p_keys, p_matrix = pseudo_vectors
    queries = pd.DataFrame({"qid": qids, "sugg_id": ""})
    q_rows = _lookup(p_keys, p_matrix, queries, ["qid", "sugg_id"])
    gap(q_rows < 0, n_q, "queries have no pseudo-document vector", "pseudo_vectors",
        lambda i: f"topic '{qids[i]}' has no pseudo-document vector (sugg_id '')")
    query_vec = np.where(q_rows[:, None] >= 0, p_matrix[np.maximum(q_rows, 0)], 0.0).astype(np.float32)

    sugg = coll.suggestions.assign(row=lambda f: _lookup(p_keys, p_matrix, f, ["qid", "sugg_id"]))
    warn_missing(int((sugg["row"] < 0).sum()), len(sugg), "suggestions have no pseudo-document vector",
                 "they are left out")
    sugg = sugg[sugg["row"] >= 0]
    level1 = _slots(sugg[sugg["level"] == 1], qids, max_subs)
    parents = level1.set_index(["qid", "sugg_id"])["slot"]
    level2 = sugg[sugg["level"] == 2].assign(
        parent_slot=lambda f: parents.reindex(pd.MultiIndex.from_frame(f[["qid", "parent"]])).to_numpy())
    level2 = _slots(level2[level2["parent_slot"].notna()], qids, max_subs2)

    def layer(kept: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        size = max(int(kept["slot"].max()) + 1 if len(kept) else 0, 1)
        mask = np.zeros((n_q, size), dtype=bool)
        vec = np.zeros((n_q, size, p_matrix.shape[1]), dtype=np.float32)
        mask[kept["q"], kept["slot"]] = True
        vec[kept["q"], kept["slot"]] = p_matrix[kept["row"].to_numpy()]
        return mask, vec

    sub_mask, sub_vec = layer(level1)
    sub_weight = (sub_mask / np.maximum(sub_mask.sum(1, keepdims=True), 1)).astype(np.float32)
    sub2_mask, sub2_vec = layer(level2)
    sub2_parent = np.full(sub2_mask.shape, -1, dtype=np.int64)
    sub2_parent[level2["q"], level2["slot"]] = level2["parent_slot"].astype(np.int64)
    strings = pd.concat([queries.assign(q=np.arange(n_q), slot=0, layer=0),
                         level1[["qid", "sugg_id", "q", "slot"]].assign(layer=1),
                         level2[["qid", "sugg_id", "q", "slot"]].assign(layer=2)], ignore_index=True)
    return strings, dict(query_vec=query_vec, sub_vec=sub_vec, sub_mask=sub_mask, sub_weight=sub_weight,
                         sub2_vec=sub2_vec, sub2_mask=sub2_mask, sub2_parent=sub2_parent)


def _relevance_features(relevance: pd.DataFrame, strings: pd.DataFrame, d_pos: pd.DataFrame, shape: tuple[int, int],
                        widths: tuple[int, int], gap: _Gaps) -> tuple[list[str], list[np.ndarray]]:
    """The feature names and ``rel_feat [Q, D, F]``, ``sub_feat [Q, K, D, F]``, ``sub2_feat [Q, K2, D, F]``: the
    relevance features of the query (layer 0) and of the kept suggestions (``strings``; ``widths``: K, K2)."""
    n_q, n_d = shape
    key_cols = ["qid", "sugg_id", "docno"]
    names = _feature_columns(relevance, key_cols, "features/relevance.parquet")
    targets = [np.zeros((n_q, n_d, len(names)), dtype=np.float32),
               np.zeros((n_q, widths[0], n_d, len(names)), dtype=np.float32),
               np.zeros((n_q, widths[1], n_d, len(names)), dtype=np.float32)]
    rel = relevance.merge(strings, on=["qid", "sugg_id"]).merge(d_pos, on=["qid", "docno"])
    rel = rel.drop_duplicates(["qid", "sugg_id", "docno"])
    wanted = strings[["qid", "sugg_id"]].merge(d_pos[["qid", "docno"]], on="qid")    # every pair, in order
    have = pd.MultiIndex.from_frame(rel[key_cols])
    lacking = ~pd.MultiIndex.from_frame(wanted[key_cols]).isin(have) if len(wanted) else np.zeros(0, bool)
    gap(np.asarray(lacking), len(wanted), "(query or suggestion, candidate) pairs have no relevance features",
        "relevance", lambda i: f"document '{wanted['docno'].iloc[i]}' has no relevance features for topic "
                               f"'{wanted['qid'].iloc[i]}' (sugg_id '{wanted['sugg_id'].iloc[i]}')")
    values = rel[names].to_numpy(dtype=np.float32)
    for level, target in enumerate(targets):
        part = (rel["layer"] == level).to_numpy()
        if level == 0:
            target[rel["q"][part], rel["d"][part]] = values[part]
        else:
            target[rel["q"][part], rel["slot"][part], rel["d"][part]] = values[part]
    return names, targets


def _diversity_features(diversity: pd.DataFrame, d_pos: pd.DataFrame, cand: np.ndarray, qids: list[str],
                        gap: _Gaps) -> tuple[list[str], np.ndarray]:
    """The feature names and ``div_feat [Q, D, D, R]`` of the candidate pairs (symmetric, zero diagonal)."""
    doc_mask = cand != ""
    n_q, n_d = cand.shape
    div_names = _feature_columns(diversity, ["qid", "docno_a", "docno_b"], "features/diversity.parquet")
    div = (diversity.merge(d_pos.rename(columns={"docno": "docno_a", "d": "a"}), on=["qid", "docno_a"])
           .merge(d_pos.rename(columns={"docno": "docno_b", "d": "b"}), on=["qid", "docno_b"]))
    div_feat = np.zeros((n_q, n_d, n_d, len(div_names)), dtype=np.float32)
    q_idx = pd.Index(qids).get_indexer(div["qid"])
    div_values = div[div_names].to_numpy(dtype=np.float32)
    div_feat[q_idx, div["a"], div["b"]] = div_values
    div_feat[q_idx, div["b"], div["a"]] = div_values
    have = np.zeros((n_q, n_d, n_d), bool)
    have[q_idx, div["a"], div["b"]] = have[q_idx, div["b"], div["a"]] = True
    pairs = doc_mask[:, :, None] & doc_mask[:, None, :] & np.triu(np.ones((n_d, n_d), bool), 1)
    lacking = (pairs & ~have).ravel()
    gap(lacking, int(pairs.sum()), "candidate pairs have no diversity features", "diversity",
        lambda i: f"documents '{cand.ravel()[i // n_d]}' and '{cand[i // (n_d * n_d), i % n_d]}' (candidates of "
                  f"topic '{qids[i // (n_d * n_d)]}') have no diversity features")
    return div_names, div_feat


def _labels(coll: Collection, qids: list[str], d_pos: pd.DataFrame,
            shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """``labels [Q, D, S]`` against the official subtopics, and ``label_mask [Q, S]``."""
    n_q, n_d = shape
    subtopics = _slots(coll.subtopics, qids, np.iinfo(np.int64).max)
    n_s = max(int(subtopics["slot"].max()) + 1 if len(subtopics) else 0, 1)
    label_mask = np.zeros((n_q, n_s), dtype=bool)
    label_mask[subtopics["q"], subtopics["slot"]] = True
    judged = (coll.qrels[coll.qrels["rel"] > 0]
              .merge(subtopics[["qid", "sid", "q", "slot"]], on=["qid", "sid"])
              .merge(d_pos, on=["qid", "docno"]))
    labels = np.zeros((n_q, n_d, n_s), dtype=np.float32)
    labels[judged["q"], judged["d"], judged["slot"]] = 1.0
    return labels, label_mask
