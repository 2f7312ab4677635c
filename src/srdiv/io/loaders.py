"""Structured files read with one clear error: JSON, CSV/TSV and Parquet tables, torch and ``.npz`` archives."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from srdiv.io.errors import InputError
from srdiv.io.readers import read_text

if TYPE_CHECKING:
    import pandas as pd


def read_json(path: str | os.PathLike, what: str = "JSON file", kind: type = dict):
    """A JSON file's value (of type ``kind``); one :class:`InputError` naming the line when it is
    missing, not UTF-8, malformed, or not a ``kind``, and the key that appears twice in one object, or
    the NaN or Infinity (not JSON numbers, though Python writes them) it holds."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, f"{what} not found")
    def pairs(items: list) -> dict:
        keys = [k for k, _ in items]
        twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
        if twice is not None:
            raise InputError(path, f"key {twice!r} appears twice in one object")
        return dict(items)

    def constant(name: str):
        raise InputError(path, f"{name} is not a JSON number")

    try:
        value = json.loads(read_text(path), object_pairs_hook=pairs, parse_constant=constant)
    except json.JSONDecodeError as err:
        raise InputError(path, f"malformed JSON: {err.msg}", err.lineno) from None
    if not isinstance(value, kind):
        raise InputError(path, f"{what} must hold a JSON {'object' if kind is dict else kind.__name__}")
    return value


def read_tsv(path: str | os.PathLike, columns: list[str], **options) -> pd.DataFrame:
    """A CSV/TSV table with at least ``columns``; one :class:`InputError` when it cannot be parsed."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found")
    try:
        frame = pd.read_csv(path, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as err:
        raise InputError(path, f"not a readable table ({str(err).splitlines()[0][:200]})") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(path, f"table lacks columns {missing}", 1)
    return frame


def load_torch(path: str | os.PathLike, what: str, map_location="cpu"):
    """``torch.load(..., weights_only=True)`` of a file srdiv wrote; one :class:`InputError` when it is
    missing, cut short, not a torch archive, or holds anything but tensors and plain values."""
    import pickle

    import torch

    path = Path(path)
    if not path.is_file():
        raise InputError(path, f"{what} not found")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, EOFError, OSError, ValueError, AttributeError) as err:
        reason = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(path, f"not a readable {what} ({reason[:200]})") from None


def load_npz(path: str | os.PathLike, what: str, keys, mmap: bool = False) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of an ``.npz`` file, without pickles; one :class:`InputError` when the file
    is missing, cut short, not an ``.npz`` archive, holds objects, or lacks one of ``keys``.

    ``mmap``: the arrays stored uncompressed (``np.savez``) are read-only memory maps of the file
    (:func:`_mapped_member`), so only the pages a job touches are read and jobs reading one file share
    them in the page cache; compressed ones are read as usual."""
    import zipfile

    path = Path(path)
    if not path.is_file():
        raise InputError(path, f"{what} not found")
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise InputError(path, f"not a {what} (an .npz archive)")
        with z:
            missing = [k for k in keys if k not in z.files]
            if missing:
                raise InputError(path, f"{what} lacks arrays {missing}")
            if not mmap:
                return {k: z[k] for k in keys}
            members = {k: cast(zipfile.ZipFile, z.zip).getinfo(f"{k}.npy") for k in keys}
            return {k: _mapped_member(path, info) if info.compress_type == zipfile.ZIP_STORED else z[k]
                    for k, info in members.items()}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        reason = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(path, f"not a readable {what} ({reason[:200]})") from None


def _mapped_member(path: Path, info) -> np.ndarray:
    """A read-only memory map of the uncompressed ``.npy`` member ``info`` (a ``zipfile.ZipInfo``) of the
    archive ``path``: its data start after the member's local header (30 bytes, the name and the extra
    field, whose lengths are at bytes 26 and 28) and the array's own ``.npy`` header."""
    import struct

    with open(path, "rb") as fh:
        fh.seek(info.header_offset + 26)
        name_len, extra_len = struct.unpack("<HH", fh.read(4))
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        version = np.lib.format.read_magic(fh)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0(fh) if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0(fh))
        offset = fh.tell()
    if dtype.hasobject:
        raise ValueError(f"member {info.filename} holds Python objects")
    if not np.prod(shape, dtype=np.int64):      # an empty array has nothing to map
        return np.empty(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C")


def read_parquet(path: str | os.PathLike, columns: list[str] | None = None) -> pd.DataFrame:
    """Read a Parquet table, failing with one clear error when it is missing or not a readable table."""
    import pandas as pd
    import pyarrow as pa

    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    try:
        return pd.read_parquet(path, columns=columns)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(path, f"not a readable Parquet table ({str(err).splitlines()[0]})") from None


def existing_file(path: str | os.PathLike, default_name: str, what: str) -> Path:
    """``path`` itself, or ``path / default_name`` when it is a directory; one clear error if missing."""
    path = Path(path)
    path = path / default_name if path.is_dir() else path
    if not path.exists():
        raise InputError(path, f"{what} not found")
    return path
