"""Rank a trial's test queries with its trained model (:func:`rank_job`): the run file ``srdiv evaluate --fold``
scores."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from srdiv.collection.schema import Collection
from srdiv.features.bundle import Bundle, BundleDims
from srdiv.features.folds import fold_queries, fold_split, folds_file
from srdiv.io import InputError, digest, write_text
from srdiv.metrics.runs import RUN_FILE, write_trec_run
from srdiv.models.ranking import rank_bundle, resolve_device, run_frame
from srdiv.train.device import row_device
from srdiv.train.digests import bundle_digest
from srdiv.train.records import check_identity, check_job_dir
from srdiv.train.trained import Trained


def rank_job(trained: Trained, bundle: Bundle, collection: Collection, fold: int, out: str | Path) -> dict[str, Any]:
    """Rank the test queries of trial ``fold`` with a trained model; write ``run.txt`` and ``rank.json``.

    The test candidates are standardised with the model's own (training-fold)
    scaler. ``rank.json`` holds ``rank_ms_per_query``, ``test_queries``,
    ``device``, the model's record and the run's SHA-256 (``run``). Evaluation is a separate step
    (``srdiv evaluate --fold``).
    """
    out = Path(out)
    record = check_identity("--model-dir", trained.record)
    if record["fold"] != fold:
        raise InputError("--model-dir", f"the model was trained for trial {record['fold']}, whose training "
                                        f"queries include the test queries of trial {fold}: rank it on its own fold")
    _check_dims(trained, bundle.dims, "--bundle")
    if bundle_digest(bundle) != record["bundle"]:
        raise InputError("--bundle", f"the model of row {trained.spec.row} was trained on another bundle")
    check_job_dir(out, trained.spec.row, fold, (RUN_FILE, "rank.json"))
    settings = trained.spec.train
    device = resolve_device(row_device(trained.spec), f"--model-dir (row {trained.spec.row}'s recorded settings)")
    split = fold_split(collection.folds, fold, folds_file(collection))
    test = trained.scaler.transform(fold_queries(bundle, split.test, settings.rank_docs), inplace=True)
    model = trained.build(device)
    start = time.perf_counter()
    orders = rank_bundle(model, test, device, settings.rank_batch)
    rank_ms = 1000 * (time.perf_counter() - start) / max(len(test), 1)
    timings = {"rank_ms_per_query": rank_ms, "test_queries": len(test), "device": str(device),
               "model": trained.record}
    write_trec_run(run_frame(test, orders), out / RUN_FILE, tag=trained.spec.row)
    timings["run"] = digest(out / RUN_FILE)       # what gather and report check the run against
    write_text(json.dumps(timings, indent=2) + "\n", out / "rank.json")
    return timings


def _check_dims(trained: Trained, dims: BundleDims, where: str) -> None:
    """The model was trained on a bundle with the vector and feature sizes of this one."""
    for name in ("emb", "feats", "div_feats"):
        if getattr(trained.dims, name) != getattr(dims, name):
            raise InputError(where, f"the model of row {trained.spec.row} was trained on a bundle with {name} = "
                                    f"{getattr(trained.dims, name)}, this bundle has {getattr(dims, name)}")
