"""Input errors and all-or-nothing output files shared by every stage."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

import pandas as pd


class InputError(Exception):
    """Bad input: the message names the file and, when known, the line."""

    def __init__(self, path: str | os.PathLike, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.reason = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` only on success.

    A failure (exception, including KeyboardInterrupt) removes the temporary file,
    so no half-written output is ever left under the final name.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make outputs private to their writer
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def save_torch(obj, path: str | os.PathLike) -> None:
    """``torch.save`` atomically, the same bytes for the same object.

    Saved to a file name, torch names the archive's records after that (temporary, random) name;
    through a file object they are always ``archive/...``.
    """
    import torch

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        torch.save(obj, fh)


def write_parquet(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a frame as zstd-compressed Parquet, atomically."""
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False, compression="zstd")


def write_text(text: str, path: str | os.PathLike) -> None:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def read_parquet(path: str | os.PathLike, columns: list[str] | None = None) -> pd.DataFrame:
    """Read a Parquet table, failing with one clear error when it is missing."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    return pd.read_parquet(path, columns=columns)


def existing_file(path: str | os.PathLike, default_name: str, what: str) -> Path:
    """``path`` itself, or ``path / default_name`` when it is a directory; one clear error if missing."""
    path = Path(path)
    path = path / default_name if path.is_dir() else path
    if not path.exists():
        raise InputError(path, f"{what} not found")
    return path
