"""The cross-validation protocol over the collection's ``folds`` table.

With folds ``f_0 < f_1 < ... < f_{n-1}`` (the distinct values of
``folds.fold``), trial ``k`` tests on fold ``f_i = k``, validates on the next
fold ``f_{(i+1) mod n}`` and trains on the others; over the n trials every
query is tested exactly once (reported numbers are the union of the test
folds). With 5 folds: 3 train, 1 validation, 1 test. With fewer than 3 folds
there is no fold left for validation, so the training folds double as the
validation set (2 folds: train on the other fold, validate on it too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from srdiv.features.bundle import Bundle
from srdiv.io import InputError


@dataclass(frozen=True)
class FoldSplit:
    """Query ids of one trial (each list in ``folds`` table order)."""

    fold: int
    train: list[str]
    valid: list[str]
    test: list[str]


def fold_split(folds: pd.DataFrame, fold: int, where: str = "folds table") -> FoldSplit:
    """Train / validation / test queries of the trial that tests on ``fold``; a fold the table
    (``where``: its file) lacks is an :class:`InputError`."""
    ids = sorted(int(f) for f in folds["fold"].unique())
    if fold not in ids:
        raise InputError(where, f"fold {fold} is not in the folds table (folds: {ids})")
    if len(ids) < 2:
        raise InputError(where, "cross-validation needs at least 2 folds")
    valid_fold = ids[(ids.index(fold) + 1) % len(ids)]
    qids = folds["qid"].astype(str)
    of = folds["fold"].astype(int)
    test = list(qids[of == fold])
    train_folds = [f for f in ids if f != fold and (f != valid_fold or len(ids) < 3)]
    train = list(qids[of.isin(train_folds)])
    valid = train if len(ids) < 3 else list(qids[of == valid_fold])
    return FoldSplit(fold, train, valid, test)



def folds_file(collection) -> str:
    """What an error about a collection's folds names: its ``folds.parquet``, or the folds table of a
    collection held in memory (:class:`srdiv.collection.schema.Collection`)."""
    return str(collection.path / "folds.parquet") if collection.path else "folds table"


def query_rows(bundle: Bundle, qids: list[str], where: str = "bundle") -> np.ndarray:
    """The bundle's rows of the queries ``qids`` (in that order); a fold query missing from the bundle is
    an error."""
    missing = sorted(set(qids) - set(bundle.qids))
    if missing:
        raise InputError(where, f"{len(missing)} queries of the folds table are missing from the bundle: "
                                f"{missing[:5]}")
    return bundle.rows(qids)


def select_queries(bundle: Bundle, qids: list[str], where: str = "bundle") -> Bundle:
    """The bundle's queries ``qids`` (in that order), copied; a missing one is an error."""
    return bundle.select(query_rows(bundle, qids, where))


def fold_queries(bundle: Bundle, qids: list[str], n_docs: int, where: str = "bundle") -> Bundle:
    """The queries ``qids`` with their top ``n_docs`` candidates, copying only those candidates."""
    return select_queries(bundle.truncate(n_docs), qids, where)
