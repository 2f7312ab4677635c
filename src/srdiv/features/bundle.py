"""The training-ready structure every model reads: one padded array set per query list.

Shapes use these names: ``Q`` queries, ``D`` candidate documents (in initial-run
order, best first), ``K`` level-1 suggestions, ``K2`` level-2 suggestions,
``S`` official subtopics, ``E`` vector size (doc2vec or LDA), ``F`` relevance
features (18, DSSA Table 5), ``R`` pairwise diversity features (DSSA Table 6).

Padding is marked by the masks (``doc_mask``, ``sub_mask``, ``sub2_mask``,
``label_mask``); padded entries hold zeros. ``labels`` come from the qrels and
are used only for training targets and model selection, never as model input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

ARRAY_FIELDS = (
    "docnos", "doc_mask", "doc_vec", "query_vec", "rel_feat", "init_score",
    "sub_vec", "sub_feat", "sub_mask", "sub_weight",
    "sub2_vec", "sub2_feat", "sub2_mask", "sub2_parent",
    "div_feat", "labels", "label_mask",
)
"""Per-query arrays (first axis = query) in a fixed order."""

TENSOR_FIELDS = tuple(f for f in ARRAY_FIELDS if f != "docnos")
FILL_KEY = "filled"
"""The bundle file's record of the rows ``srdiv bundle --fill zero`` filled with zeros (absent: none)."""

TRANSFORM_QUERIES = 32
"""Queries :meth:`FeatureScaler.transform` standardises at once (bounds its float64 temporaries)."""


@dataclass
class Bundle:
    """Candidate lists with vectors, features and labels for ``Q`` queries.

    Attributes (shapes):
        qids: ``[Q]`` str.
        docnos: ``[Q, D]`` str, ``""`` for padding.
        doc_mask: ``[Q, D]`` bool, True for a real candidate.
        doc_vec: ``[Q, D, E]`` float32 document vectors e_d.
        query_vec: ``[Q, E]`` float32 query pseudo-document vector e_q.
        rel_feat: ``[Q, D, F]`` float32 query-document relevance features x_{d,q}.
        init_score: ``[Q, D]`` float32 initial-run score.
        sub_vec: ``[Q, K, E]`` level-1 suggestion pseudo-document vectors e_{i_k}.
        sub_feat: ``[Q, K, D, F]`` suggestion-document features x_{d,i_k}.
        sub_mask: ``[Q, K]`` bool; sub_weight: ``[Q, K]`` float32 (sums to 1 over real ones).
        sub2_vec, sub2_feat, sub2_mask: the same for level-2 suggestions (``K2``).
        sub2_parent: ``[Q, K2]`` int64 index of the level-1 parent in ``K`` (-1 padding).
        div_feat: ``[Q, D, D, R]`` float32 pairwise diversity features (symmetric).
        labels: ``[Q, D, S]`` float32 0/1 relevance of a candidate to an official subtopic.
        label_mask: ``[Q, S]`` bool.
        feature_names: the F relevance feature names; div_feature_names: the R names.
    """

    qids: np.ndarray
    docnos: np.ndarray
    doc_mask: np.ndarray
    doc_vec: np.ndarray
    query_vec: np.ndarray
    rel_feat: np.ndarray
    init_score: np.ndarray
    sub_vec: np.ndarray
    sub_feat: np.ndarray
    sub_mask: np.ndarray
    sub_weight: np.ndarray
    sub2_vec: np.ndarray
    sub2_feat: np.ndarray
    sub2_mask: np.ndarray
    sub2_parent: np.ndarray
    div_feat: np.ndarray
    labels: np.ndarray
    label_mask: np.ndarray
    feature_names: list[str] = field(default_factory=list)
    div_feature_names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.filled: tuple[str, ...] = ()
        """What ``srdiv bundle --fill zero`` filled with zeros (``"3 of 120 candidates have no document vector:
        zero"``): saved in the file (:data:`FILL_KEY`) as the record of it, not part of the arrays (nor a field)."""

    def __len__(self) -> int:
        return len(self.qids)

    @property
    def dims(self) -> BundleDims:
        """Sizes a model needs to build its layers."""
        return BundleDims(
            docs=self.doc_mask.shape[1], emb=self.doc_vec.shape[2], feats=self.rel_feat.shape[2],
            div_feats=self.div_feat.shape[3], subs=self.sub_mask.shape[1],
            subs2=self.sub2_mask.shape[1], subtopics=self.labels.shape[2],
        )

    def select(self, rows: np.ndarray | list[int]) -> Bundle:
        """The queries at ``rows`` (indices into axis 0)."""
        rows = np.asarray(rows, dtype=np.int64)
        return replace(self, qids=self.qids[rows], **{f: getattr(self, f)[rows] for f in ARRAY_FIELDS})

    def rows(self, qids) -> np.ndarray:
        """The rows (indices into axis 0) of the queries named in ``qids``, in that order."""
        pos = {q: i for i, q in enumerate(self.qids)}
        return np.array([pos[q] for q in qids], dtype=np.int64)

    def select_qids(self, qids) -> Bundle:
        """The queries named in ``qids`` (in that order)."""
        return self.select(self.rows(qids))

    def truncate(self, n_docs: int) -> Bundle:
        """Keep the top ``n_docs`` candidates of the initial run (e.g. 20 for training)."""
        n = min(n_docs, self.doc_mask.shape[1])
        return replace(
            self, docnos=self.docnos[:, :n], doc_mask=self.doc_mask[:, :n], doc_vec=self.doc_vec[:, :n],
            rel_feat=self.rel_feat[:, :n], init_score=self.init_score[:, :n],
            sub_feat=self.sub_feat[:, :, :n], sub2_feat=self.sub2_feat[:, :, :n],
            div_feat=self.div_feat[:, :n, :n], labels=self.labels[:, :n],
        )

    def to_torch(self, device=None) -> dict:
        """The arrays as torch tensors on ``device`` (``docnos`` stays out)."""
        import torch

        return {f: torch.as_tensor(getattr(self, f), device=device) for f in TENSOR_FIELDS}

    def save(self, path: str | Path) -> None:
        """Save as an uncompressed ``.npz`` (written atomically)."""
        from srdiv.io import atomic_path

        arrays: dict[str, Any] = {   # the names of the file's arrays (Any: not np.savez's allow_pickle)
            "qids": self.qids.astype(str), "feature_names": np.array(self.feature_names, dtype=str),
            "div_feature_names": np.array(self.div_feature_names, dtype=str),
            **({FILL_KEY: np.array(self.filled, dtype=str)} if self.filled else {}),
            **{f: getattr(self, f).astype(str) if f == "docnos" else getattr(self, f) for f in ARRAY_FIELDS},
        }
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Bundle:
        """Load a bundle saved with :meth:`save` (no pickles are read); every numeric array must be
        finite and every array must have one row per query (:class:`~srdiv.io.InputError` otherwise).
        The arrays are read-only memory maps of the file: :meth:`select` copies the queries a job uses."""
        from srdiv.io import InputError, check_finite, load_npz

        arrays = load_npz(path, "bundle file", [f.name for f in fields(cls)], mmap=True)
        n = len(arrays["qids"])
        for name in TENSOR_FIELDS:
            check_finite(path, name, arrays[name])
            if arrays[name].ndim == 0 or len(arrays[name]) != n:
                raise InputError(path, f"array '{name}' does not have one row per query ({n})")
        values: dict[str, Any] = {**arrays, "feature_names": list(arrays["feature_names"]),
                                  "div_feature_names": list(arrays["div_feature_names"])}
        bundle = cls(**values)
        bundle.filled = filled_in(path)
        return bundle


def filled_in(path: str | os.PathLike) -> tuple[str, ...]:
    """The record of what the bundle file ``path`` holds as zeros for missing rows (:attr:`Bundle.filled`)."""
    with np.load(path, allow_pickle=False) as z:
        return tuple(str(note) for note in z[FILL_KEY]) if FILL_KEY in z.files else ()


@dataclass(frozen=True)
class BundleDims:
    """Sizes of a bundle's axes: D, E, F, R, K, K2, S."""

    docs: int
    emb: int
    feats: int
    div_feats: int
    subs: int
    subs2: int
    subtopics: int


@dataclass
class FeatureScaler:
    """Z-score standardisation of the feature arrays, fitted on training queries only."""

    rel_mean: np.ndarray
    rel_std: np.ndarray
    div_mean: np.ndarray
    div_std: np.ndarray

    @classmethod
    def fit(cls, bundle: Bundle, rows: np.ndarray | None = None) -> FeatureScaler:
        """Mean and std over real candidates (query and suggestion features share one scaler), of the
        queries at ``rows`` (default: all); only the arrays it reads are copied."""
        def take(x):
            return x if rows is None else x[rows]

        docs = take(bundle.doc_mask)
        rel = np.concatenate([
            take(bundle.rel_feat)[docs],
            take(bundle.sub_feat)[take(bundle.sub_mask)[:, :, None] & docs[:, None, :]],
        ])
        pairs = docs[:, :, None] & docs[:, None, :]
        div = take(bundle.div_feat)[pairs]
        return cls(rel.mean(0), _safe_std(rel), div.mean(0), _safe_std(div))

    def transform(self, bundle: Bundle, inplace: bool = False) -> Bundle:
        """Standardised copy of ``bundle``; padded entries stay zero. With ``inplace`` the bundle's own
        feature arrays are overwritten (for a fresh copy, such as :meth:`Bundle.select` returns)."""
        def z(x, mean, std, mask):  # a few queries at a time: float64 temporaries stay small
            out = x if inplace else np.empty(x.shape, np.float32)
            for start in range(0, len(x), TRANSFORM_QUERIES):
                rows = slice(start, start + TRANSFORM_QUERIES)
                out[rows] = np.where(mask[rows][..., None], (x[rows] - mean) / std, 0.0)
            return out

        docs = bundle.doc_mask
        return replace(
            bundle,
            rel_feat=z(bundle.rel_feat, self.rel_mean, self.rel_std, docs),
            sub_feat=z(bundle.sub_feat, self.rel_mean, self.rel_std, bundle.sub_mask[:, :, None] & docs[:, None]),
            sub2_feat=z(bundle.sub2_feat, self.rel_mean, self.rel_std, bundle.sub2_mask[:, :, None] & docs[:, None]),
            div_feat=z(bundle.div_feat, self.div_mean, self.div_std, docs[:, :, None] & docs[:, None, :]),
        )


def _safe_std(x: np.ndarray) -> np.ndarray:
    std = x.std(0) if len(x) else np.ones(x.shape[1:])
    return np.where(std > 1e-12, std, 1.0)


def random_bundle(
    queries: int = 4, docs: int = 8, subs: int = 3, subs2: int = 4, subtopics: int = 3,
    emb: int = 6, feats: int = 18, div_feats: int = 4, seed: int = 0, pad: bool = True,
) -> Bundle:
    """A small random bundle for tests; with ``pad`` the last query has fewer docs and subs."""
    rng = np.random.default_rng(seed)
    doc_mask = np.ones((queries, docs), bool)
    sub_mask = np.ones((queries, subs), bool)
    sub2_mask = np.ones((queries, subs2), bool)
    label_mask = np.ones((queries, subtopics), bool)
    if pad and queries > 1:
        doc_mask[-1, docs // 2 + 1:] = False
        sub_mask[-1, subs - 1:] = False
        sub2_mask[-1, subs2 // 2:] = False
        label_mask[-1, subtopics - 1:] = False
    f32 = np.float32
    labels = (rng.random((queries, docs, subtopics)) < 0.35).astype(f32)
    labels *= doc_mask[:, :, None] * label_mask[:, None, :]
    raw = rng.random((queries, docs, docs, div_feats)).astype(f32)
    div = (raw + raw.transpose(0, 2, 1, 3)) / 2
    pair = doc_mask[:, :, None] & doc_mask[:, None, :]
    sub_w = sub_mask / sub_mask.sum(1, keepdims=True)
    parent = np.where(sub2_mask, np.arange(subs2)[None] % subs, -1)
    parent = np.where(sub2_mask & (parent < sub_mask.sum(1, keepdims=True)), parent, -1)
    sub2_mask &= parent >= 0
    return Bundle(
        qids=np.array([f"q{i}" for i in range(queries)]),
        docnos=np.where(doc_mask, np.array([[f"d{i}-{j}" for j in range(docs)] for i in range(queries)]), ""),
        doc_mask=doc_mask,
        doc_vec=(rng.standard_normal((queries, docs, emb)) * doc_mask[..., None]).astype(f32),
        query_vec=rng.standard_normal((queries, emb)).astype(f32),
        rel_feat=(rng.standard_normal((queries, docs, feats)) * doc_mask[..., None]).astype(f32),
        init_score=np.where(doc_mask, -np.arange(docs, dtype=f32)[None], 0).astype(f32),
        sub_vec=(rng.standard_normal((queries, subs, emb)) * sub_mask[..., None]).astype(f32),
        sub_feat=(rng.standard_normal((queries, subs, docs, feats))
                  * (sub_mask[:, :, None] & doc_mask[:, None])[..., None]).astype(f32),
        sub_mask=sub_mask,
        sub_weight=sub_w.astype(f32),
        sub2_vec=(rng.standard_normal((queries, subs2, emb)) * sub2_mask[..., None]).astype(f32),
        sub2_feat=(rng.standard_normal((queries, subs2, docs, feats))
                   * (sub2_mask[:, :, None] & doc_mask[:, None])[..., None]).astype(f32),
        sub2_mask=sub2_mask,
        sub2_parent=parent.astype(np.int64),
        div_feat=(div * pair[..., None]).astype(f32),
        labels=labels,
        label_mask=label_mask,
        feature_names=[f"f{i}" for i in range(feats)],
        div_feature_names=[f"r{i}" for i in range(div_feats)],
    )
