"""The training samples of one fold: list-pairwise samples and PAMM rankings in one ``.npz``.

File ``<out>/samples.npz`` (compressed, no pickles), arrays indexed as below (``Q``
training queries, ``D = train_docs`` candidates, indices into the bundle's D axis):

==================  ============  ==================================================
key                 shape         meaning
==================  ============  ==================================================
qids                [Q] str       training queries; ``sequence_query`` indexes them
sequences           [S, L] int16  rankings whose prefixes are the contexts, -1 padding
sequence_query      [S] int32     query of each sequence
context_sequence    [C] int32     context c = sequences[context_sequence[c], :context_length[c]]
context_length      [C] int16     (the shared prefix of a pair of rankings)
pairs               [P, 2] int16  (d1, d2): the last documents of r1 = [C, d1], r2 = [C, d2]
pair_context        [P] int32     context of each pair (sorted, so contiguous)
weight              [P] float32   ``|M(r1) - M(r2)|``
label               [P] int8      ``M(r1) > M(r2)``
pamm_pos            [Q, T+, D]    positive rankings (-1 padding)
pamm_pos_metric     [Q, T+]       their E(Y) (``pamm_metric``)
pamm_neg            [Q, T-, D]    negative rankings
pamm_neg_metric     [Q, T-]       their E(Y)
meta                JSON str      the settings, ``n_docs`` and the seed
==================  ============  ==================================================
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from srdiv.features.bundle import Bundle
from srdiv.io import InputError, atomic_path, check_finite, existing_file, load_npz
from srdiv.metrics.diversity import ALPHA
from srdiv.metrics.targets import ranking_metric
from srdiv.params import model_row
from srdiv.sampling.list_pairwise_samples import ListPairwiseSamples, list_pairwise_samples
from srdiv.sampling.pamm_samples import pamm_rankings

SAMPLES_FILE = "samples.npz"
PAMM_KEYS = ("pamm_pos", "pamm_pos_metric", "pamm_neg", "pamm_neg_metric")


@dataclass(frozen=True)
class SampleSettings:
    """The ``samples`` section of ``params.yaml`` (defaults equal the file's, ``tests/test_defaults.py``)."""

    permutations: int = 10
    draw: str = "prefixes"
    metric: str = "alpha_nDCG_cand@20"
    alpha: float = ALPHA
    pamm_positive: int = 5
    pamm_negative: int = 20
    pamm_metric: str = "alpha_nDCG_cand@20"

    @classmethod
    def from_params(cls, params: dict, row: str | None = None) -> SampleSettings:
        """The ``samples`` section, with the ``samples`` overrides of ``models.<row>`` merged in."""
        return cls(**{**(params.get("samples") or {}), **row_overrides(params, row)})


def row_overrides(params: dict, row: str | None) -> dict:
    """A row's own ``samples`` settings (e.g. ``{permutations: 5}`` for DSSA Figure 7), ``{}`` for none."""
    if row is None:
        return {}
    entry = model_row(params, row)      # one row resolved: the DAG asks this of every job
    if entry is None:
        raise InputError("--row", f"no params file gives the row models.{row}")
    overrides = entry.get("samples") or {}
    unknown = set(overrides) - {f.name for f in fields(SampleSettings)}
    if unknown:
        raise ValueError(f"models.{row}.samples: unknown keys {sorted(unknown)}")
    return overrides


def samples_key(params: dict, row: str) -> str:
    """The directory under ``samples/`` of a row's samples: ``""`` (the shared ones) or e.g. ``permutations5``."""
    return "-".join(f"{k}{v}" for k, v in sorted(row_overrides(params, row).items()))


@dataclass
class Samples:
    """List-pairwise samples and PAMM rankings of the training queries of one fold."""

    qids: np.ndarray
    list_pairwise: ListPairwiseSamples
    pamm: dict[str, np.ndarray]
    meta: dict

    def query_rows(self, bundle: Bundle) -> np.ndarray:
        """``[Q]`` row in ``bundle`` of each sample query (checks the bundle matches the samples)."""
        pos = {q: i for i, q in enumerate(bundle.qids)}
        missing = [q for q in self.qids if q not in pos]
        if missing or bundle.doc_mask.shape[1] != self.meta["n_docs"]:
            raise InputError("--samples", f"samples do not match the training bundle (queries missing: {missing[:3]}, "
                             f"docs {bundle.doc_mask.shape[1]} vs {self.meta['n_docs']})")
        return np.array([pos[q] for q in self.qids], dtype=np.int64)

    def save(self, path: str | Path) -> None:
        """Write ``path`` (compressed ``.npz``, about 3 MB for a TREC fold) atomically."""
        arrays: dict[str, Any] = {   # the names of the file's arrays (Any: not np.savez's allow_pickle)
            "qids": self.qids.astype(str), "meta": np.array(json.dumps(self.meta)),
            **asdict(self.list_pairwise), **self.pamm}
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> Samples:
        """Read a file written by :meth:`save`; a directory means its ``samples.npz``."""
        path = existing_file(path, SAMPLES_FILE, "samples file")
        lp_keys = [f.name for f in fields(ListPairwiseSamples)]
        z = load_npz(path, "samples file", ["qids", "meta", *lp_keys, *PAMM_KEYS])
        for key in [*lp_keys, *PAMM_KEYS]:
            check_finite(path, key, z[key])
        try:
            meta = json.loads(str(z["meta"]))
        except ValueError:
            raise InputError(path, "samples file: 'meta' is not JSON") from None
        if not isinstance(meta, dict) or "n_docs" not in meta:
            raise InputError(path, "samples file: 'meta' lacks n_docs")
        lp = ListPairwiseSamples(**{k: z[k] for k in lp_keys})
        return cls(qids=z["qids"], list_pairwise=lp, pamm={k: z[k] for k in PAMM_KEYS}, meta=meta)


def make_samples(bundle: Bundle, settings: SampleSettings, seed: int | list[int]) -> Samples:
    """Samples for every query of ``bundle`` (already the fold's training queries, top ``train_docs``)."""
    rng = np.random.default_rng(seed)
    labels, mask = bundle.labels, bundle.doc_mask
    lp = list_pairwise_samples(labels, mask, settings.permutations, ranking_metric(settings.metric, settings.alpha),
                               rng, settings.alpha, settings.draw)
    pamm = pamm_rankings(labels, mask, settings.pamm_positive, settings.pamm_negative,
                         ranking_metric(settings.pamm_metric, settings.alpha), rng, settings.alpha)
    meta = {**asdict(settings), "n_docs": int(mask.shape[1]), "seed": seed}
    return Samples(qids=np.asarray(bundle.qids).astype(str), list_pairwise=lp, pamm=pamm, meta=meta)
