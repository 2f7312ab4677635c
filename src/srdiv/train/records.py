"""The records a training job leaves beside its model (``hparams.json``, ``timings.json``, ``rank.json``,
``curve.parquet``), read and checked by every command that uses them.

Each JSON record has its fields with their types and ranges (:data:`FIELDS`); a record that lacks one,
holds one of another type, a number that is not finite or out of range, or a key twice, is one
:class:`~srdiv.io.InputError` naming the file: a damaged or hand-edited record never becomes a number
in a table.

Every artifact of a job says what it is (:data:`IDENTITY`): ``model.pt`` and ``hparams.json`` record
the row, the fold, the fingerprint of the row's settings and seed (``params``), of the bundle
(``bundle``) and of all the data the training read (``data``); ``rank.json`` records the model its run
came from. :func:`check_job` holds a job directory's records to the row and fold it stands for, and
:func:`check_job_dir` keeps a job from writing into another's directory.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from srdiv.io import InputError, check_keys, claim, digest, first_misfit, read_json, read_parquet, verify
from srdiv.metrics.runs import RUN_FILE

_INT, _NUM, _STR, _DICT, _LIST = int, float, str, dict, list

IDENTITY = {"row": (_STR, None), "fold": (_INT, 1), "params": (_STR, None), "bundle": (_STR, None),
            "data": (_STR, None)}
"""What a trained model is: its row, fold, and the fingerprints of its settings, bundle and training data."""

FIELDS: dict[str, dict[str, tuple[type, float | None]]] = {
    "hparams.json": {**IDENTITY, "seed": (_INT, 0), "chosen": (_DICT, None),
                     "valid_measure": (_STR, None), "valid": (_NUM, None), "grid": (_LIST, None),
                     "spec": (_DICT, None)},
    "timings.json": {"train_seconds": (_NUM, 0), "restored_epochs": (_INT, 0), "tune_points": (_INT, 1),
                     "device": (_STR, None), "commit": (_STR, None)},
    "rank.json": {"rank_ms_per_query": (_NUM, 0), "test_queries": (_INT, 1), "device": (_STR, None),
                  "model": (_DICT, None)},
}
"""The fields of each record: type, and the least value of a number (None: any finite one)."""

GRID_FIELDS = {"point": (_DICT, None), "valid": (_NUM, None), "best_epoch": (_INT, 0), "epochs": (_INT, 0)}
"""The fields of each tuning point in ``hparams.json``'s ``grid``; a point that diverged also has
``diverged`` (the epoch, >= 1), and ``valid`` null if that was its first epoch."""


def _check(path: Path, record: dict, fields: dict, where: str = "") -> None:
    for name, (kind, low) in fields.items():
        if name not in record:
            article = "an" if path.name[0] in "aeiouh" else "a"
            raise InputError(path, f"not {article} {path.name} of srdiv train (no '{where}{name}')")
        value = record[name]
        if kind is _NUM:
            fits = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        else:
            fits = isinstance(value, kind) and not (kind is _INT and isinstance(value, bool))
        if not fits or (low is not None and value < low):
            span = f" >= {low}" if low is not None else ""
            raise InputError(path, f"'{where}{name}' must be {'a finite number' if kind is _NUM else kind.__name__}"
                                   f"{span}, got {value!r}")


def read_record(path: str | Path) -> dict:
    """A job record (``hparams.json``, ``timings.json`` or ``rank.json``, by its name), checked."""
    path = Path(path)
    record = read_json(path, path.name)
    _check(path, record, FIELDS[path.name])
    if path.name == "hparams.json":
        for i, point in enumerate(record["grid"]):
            if not isinstance(point, dict):
                raise InputError(path, f"'grid[{i}]' must be a mapping")
            fields = GRID_FIELDS
            if "diverged" in point:
                _check(path, point, {"diverged": (_INT, 1)}, f"grid[{i}].")
                if point.get("valid", 0) is None and point.get("best_epoch") == 0:
                    fields = {name: kind for name, kind in GRID_FIELDS.items() if name != "valid"}
            _check(path, point, fields, f"grid[{i}].")
    if path.name == "rank.json":
        _check(path, record["model"], IDENTITY, "model.")
        if "run" in record and not (isinstance(record["run"], str) and re.fullmatch(r"[0-9a-f]{64}", record["run"])):
            raise InputError(path, f"'run' must be the SHA-256 of the run (64 hex digits), got {record['run']!r}")
    return record


def check_run_file(directory: Path, rank: dict) -> None:
    """The job's run (``run.txt``) is the one its ``rank.json`` records (``run``, its SHA-256): a run cut
    short, edited or replaced since it was ranked is one error naming it, never another table or plot. A
    ``rank.json`` of an srdiv that recorded no digest: the run's entry in its directory's manifest, if any
    (:func:`srdiv.io.verify`)."""
    run = directory / RUN_FILE
    if "run" not in rank:
        if run.is_file():
            verify(run, "run")
        return
    if not run.is_file():
        raise InputError(run, "missing: the job's rank.json records a run (rank it again)")
    if digest(run) != rank["run"]:
        raise InputError(run, "is not the run its rank.json records (cut short or changed since it was ranked): "
                              "rank it again")


def check_identity(where: str | Path, record: dict | None) -> dict:
    """A model's record (:data:`IDENTITY`) is there and whole (returned); else one error naming ``where``."""
    if not isinstance(record, dict):
        raise InputError(where, "the model records no row, fold and fingerprints (trained by an earlier srdiv): "
                                "train it again")
    _check(Path(str(where)), record, IDENTITY, "record.")
    return record


def identity(record: dict) -> dict:
    """The :data:`IDENTITY` fields of a record."""
    return {key: record[key] for key in IDENTITY}


def fingerprint(value) -> str:
    """SHA-256 of a JSON-able value (keys sorted)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def check_job(directory: str | Path, row: str, fold: int, files: tuple[str, ...] = ("hparams.json", "rank.json")) \
        -> dict:
    """The records of the job directory ``directory`` (``hparams.json``, and ``rank.json`` of its run) are
    those of ``row`` on ``fold``, and the run was ranked with the model those records describe; returns
    ``hparams.json``. A run, model or record placed under another row or fold is one error."""
    directory = Path(directory)
    hparams = read_record(directory / "hparams.json")
    if (hparams["row"], hparams["fold"]) != (row, fold):
        raise InputError(directory / "hparams.json", f"records row {hparams['row']} fold {hparams['fold']}, but "
                                                     f"lies where row {row} fold {fold} belongs")
    if "rank.json" in files:
        rank = read_record(directory / "rank.json")
        check_run_file(directory, rank)
        ranked = rank["model"]
        if identity(ranked) != identity(hparams):
            raise InputError(directory / "rank.json", f"the run was ranked with a model of row {ranked['row']} fold "
                                                      f"{ranked['fold']} other than the one trained here (its "
                                                      "settings or data differ): rank again")
    return hparams


def check_job_dir(out: Path, row: str, fold: int, names: Sequence[str]) -> None:
    """Before any work: ``out`` is no other job's directory (its ``hparams.json`` names another row or
    fold), and none of the files ``names`` there is one srdiv did not write (:func:`srdiv.io.claim`)."""
    if (out / "hparams.json").is_file():
        theirs = read_json(out / "hparams.json", "hparams.json")
        if (theirs.get("row"), theirs.get("fold")) != (row, fold):
            raise InputError(out, f"holds the model of row {theirs.get('row')} fold {theirs.get('fold')}, not of "
                                  f"row {row} fold {fold}; give this job its own directory")
    for name in names:
        claim(out / name)


def read_curve(path: str | Path) -> pd.DataFrame:
    """A learning curve (``epoch, loss, valid, seconds``), checked: whole epochs >= 1, each once, numeric
    columns (``loss`` may be NaN where an epoch diverged; ``valid`` and ``seconds`` finite)."""
    curve = read_parquet(path)
    missing = [c for c in ("epoch", "loss", "valid", "seconds") if c not in curve.columns]
    if missing:
        raise InputError(path, f"learning curve lacks columns {missing}")
    for col, integer, low, finite in (("epoch", True, 1, True), ("valid", False, -math.inf, True),
                                      ("seconds", False, 0, True), ("loss", False, -math.inf, False)):
        values = curve[col]
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            raise InputError(path, f"learning curve column '{col}' is not numeric ({values.dtype})")
        bad = first_misfit(values.to_numpy() if finite else values.fillna(0).to_numpy(), integer, low)
        if bad is not None:
            raise InputError(path, f"learning curve: {col} {values.iloc[bad]!r} in row {bad + 1} is not "
                                   f"{'a whole number' if integer else 'a finite number'} >= {low}")
    check_keys(path, curve, ["epoch"], "learning curve")
    return curve
