"""What a training job's files are checked against: SHA-256 digests of the content it trains on (the bundle,
the collection's judgments and folds, the samples, the prior's weights) and the key of its checkpoints.

The digests go into the job's identity record (:data:`srdiv.train.records.IDENTITY`); :func:`checkpoint_key`
tells a resumed trial whether its checkpoint was trained for the same settings and inputs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from srdiv.collection.schema import Collection
from srdiv.experiment import ModelSpec
from srdiv.features.bundle import Bundle
from srdiv.sampling.samples import Samples

if TYPE_CHECKING:
    from srdiv.train.trained import Trained


def checkpoint_key(spec: ModelSpec, seed: int, fold: int, inputs: str) -> str:
    """Identifies what a checkpoint was trained for (settings and the content digest of its inputs),
    so a changed config or changed data never resumes a stale one."""
    text = json.dumps({"spec": spec.to_dict(), "seed": seed, "fold": fold, "inputs": inputs}, sort_keys=True,
                      default=jsonable)
    return hashlib.sha256(text.encode()).hexdigest()


def bundle_digest(bundle: Bundle) -> str:
    """SHA-256 of a bundle's arrays (what a model was trained on and is ranked with)."""
    return _content_digest([(f"bundle.{f.name}", getattr(bundle, f.name)) for f in fields(bundle)])


def inputs_digest(bundle: Bundle, collection: Collection, samples: Samples | None, prior: Trained | None) -> str:
    """SHA-256 of the content a training reads: the bundle's arrays, the collection's qrels and folds,
    the samples' arrays and the prior's weights (not file names or times)."""
    parts = [(f"bundle.{f.name}", getattr(bundle, f.name)) for f in fields(bundle)]
    parts += [("qrels", collection.qrels), ("folds", collection.folds)]
    if samples is not None:
        parts += [(f"samples.{f.name}", getattr(samples.list_pairwise, f.name)) for f in fields(samples.list_pairwise)]
        parts += [(f"samples.{key}", value) for key, value in sorted(samples.pamm.items())]
    while prior is not None:
        parts += [(f"prior.{key}", value) for key, value in sorted(prior.state.items())]
        prior = prior.prior
    return _content_digest(parts)


def _content_digest(parts: list[tuple[str, Any]]) -> str:
    """SHA-256 of named arrays, frames, tensors and plain values, in order."""
    digest = hashlib.sha256()

    def add(name: str, value: Any) -> None:
        digest.update(name.encode())
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
        if isinstance(value, pd.DataFrame):
            digest.update(pd.util.hash_pandas_object(value, index=False).to_numpy().tobytes())
        elif isinstance(value, np.ndarray):
            digest.update(str((value.dtype, value.shape)).encode())
            # the array's own bytes, viewed, not copied (the same bytes as .tobytes())
            digest.update(np.ascontiguousarray(value).reshape(-1).view(np.uint8).data if value.dtype != object
                          else str(list(value)).encode())
        else:
            digest.update(json.dumps(value, sort_keys=True, default=jsonable).encode())

    for name, value in parts:
        add(name, value)
    return digest.hexdigest()


def jsonable(value: Any) -> Any:
    """numpy scalars in tuning grids -> Python numbers."""
    return value.item() if isinstance(value, np.generic) else str(value)
