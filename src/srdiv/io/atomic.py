"""All-or-nothing outputs: a file, a directory, or a set of them replaced together only on success."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from srdiv.io.errors import InputError
from srdiv.io.manifest import _STAGING, _fresh_temp, _record, claim

if TYPE_CHECKING:
    import pandas as pd


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, legacy: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` only on success.

    A failure (exception, including KeyboardInterrupt) removes the temporary file,
    so no half-written output is ever left under the final name. An existing ``path`` that srdiv
    did not write is refused first (:func:`claim`); the new one is recorded in the manifest.
    """
    path = Path(path)
    claim(path, legacy)
    tmp_path = _fresh_temp(path)
    try:
        yield tmp_path
        undo = _record(path, tmp_path)
        try:
            os.replace(tmp_path, path)
        except BaseException:
            undo()
            raise
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_set(paths: list[str | os.PathLike], legacy: Callable[[Path], bool] | None = None) -> Iterator[list[Path]]:
    """Yield a new path for each of ``paths`` (files or directories, each in a temporary directory
    beside its own); they replace ``paths`` together, only on success.

    Once every new one is made, the old ones are renamed aside in the order given, then the new
    ones renamed into place in the reverse order; one the caller did not make leaves its path
    absent. An error or an interrupt on the way puts the old ones back: ``paths`` are all old or
    all new, and while the first of them exists, all that exist are of one set. Only SIGKILL during
    those renames (a few system calls, which it gives no clean-up) can leave a mix, or none of them.
    An existing path that srdiv did not write is refused before anything is made (:func:`claim`, with
    ``legacy``); each new one is recorded, as a whole, in its directory's manifest. A path that is a
    symbolic link to a directory stands for that directory (the link stays; what it points to is replaced).
    """
    targets = [Path(os.path.realpath(p)) if os.path.islink(p) and os.path.isdir(p) else Path(p) for p in paths]
    twice = [p for i, p in enumerate(targets) if p.resolve() in {q.resolve() for q in targets[:i]}]
    if twice:
        raise InputError(twice[0], "the same output is given twice; choose one path per output")
    for path in targets:
        claim(path, legacy)
    temps = []
    try:
        for path in targets:
            temps.append(_fresh_temp(path, directory=True))
            _STAGING.append(temps[-1].resolve())
        news = [tmp / path.name for tmp, path in zip(temps, targets)]
        olds = [tmp / f"{path.name}.old" for tmp, path in zip(temps, targets)]
        yield news
        existed = [os.path.lexists(path) for path in targets]
        for new, path, there in zip(news, targets, existed):
            if there and os.path.lexists(new) and path.is_dir() != new.is_dir():
                raise InputError(path, f"output exists and is {'' if path.is_dir() else 'not '}a directory")
        undos = []
        try:
            for new, path in zip(news, targets):
                if os.path.lexists(new):
                    undos.append(_record(path, new))
            for old, path, there in zip(olds, targets, existed):
                if there:
                    os.replace(path, old)
            for new, path in reversed(list(zip(news, targets))):
                if os.path.lexists(new):
                    os.replace(new, path)
        except BaseException:      # judged by what lies where: an interrupt may fall right after a rename
            for new, old, path, there in zip(news, olds, targets, existed):
                if os.path.lexists(path) and not os.path.lexists(new) and (os.path.lexists(old) or not there):
                    os.replace(path, new)        # a new one that had arrived leaves, the first first
            for old, path in reversed(list(zip(olds, targets))):
                if os.path.lexists(old):
                    os.replace(old, path)        # the old ones come back, the first last
            for undo in reversed(undos):
                undo()
            raise
    finally:
        for tmp in temps:
            _STAGING.remove(tmp.resolve())
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, marker: str) -> Iterator[Path]:
    """Yield a temporary directory beside ``path``; it replaces ``path`` as a whole only on success.

    For outputs of several files (a collection, ``srdiv embed``'s vectors and models): an
    interrupt or an error leaves the old directory or the new one, never a mix (:func:`atomic_set`).
    An existing ``path`` that is not a directory, or one holding a file srdiv did not write (recorded
    in the manifest beside it; unrecorded, a committed output of the same kind holds the file ``marker``:
    :func:`_claim_dir`), is refused rather than replaced.
    """
    path = Path(path)
    if os.path.lexists(path) and not path.is_dir():
        raise InputError(path, "output directory exists and is not a directory")
    with atomic_set([path], legacy=lambda p: (p / marker).exists()) as (tmp,):
        tmp.mkdir()
        yield tmp


def check_output(out: str | os.PathLike, inputs: list[str | os.PathLike], whole_dir: bool = False) -> None:
    """Refuse an output that would overwrite or replace a command's own input.

    Refused: ``out`` is an input file; ``out`` lies inside an input directory (it could be, or
    replace, a file the command reads there: ``--out COLLECTION/qrels.parquet``); and for a command
    that replaces ``out`` as a whole directory (``whole_dir``), ``out`` is or contains an input. (A
    command may write new files into a directory given as an input, as ``srdiv rank --out DIR``
    writes ``run.txt`` beside the ``model.pt`` it reads.) An input that does not exist is left to
    the command, which reports it missing.
    """
    target = Path(out).resolve()
    for given in inputs:
        source = Path(given).resolve()
        if not source.exists():
            continue
        if target == source and (whole_dir or not source.is_dir()):
            raise InputError(out, "the output is also an input of this command; choose another output path")
        if whole_dir and source != target and target in source.parents:
            raise InputError(out, f"the output contains the input {given}; choose another output path")
        if source.is_dir() and source in target.parents:
            raise InputError(out, f"the output lies inside the input directory {given}; choose another path")


def save_torch(obj, path: str | os.PathLike, legacy: Callable[[Path], bool] | None = None) -> None:
    """``torch.save`` atomically, the same bytes for the same object (``legacy``: :func:`claim`).

    Saved to a file name, torch names the archive's records after that (temporary, random) name;
    through a file object they are always ``archive/...``.
    """
    import torch

    with atomic_path(path, legacy) as tmp, open(tmp, "wb") as fh:
        torch.save(obj, fh)


def write_parquet(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a frame as zstd-compressed Parquet, atomically."""
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False, compression="zstd")


def write_text(text: str, path: str | os.PathLike, legacy: Callable[[Path], bool] | None = None) -> None:
    """Write a text file atomically (``legacy``: :func:`claim`)."""
    with atomic_path(path, legacy) as tmp:
        tmp.write_text(text)
