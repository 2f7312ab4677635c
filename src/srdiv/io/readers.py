"""The one reader of text files: UTF-8 checked, byte-order mark dropped, lines split alike, topic ids kept alike."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from srdiv.io.errors import InputError

if TYPE_CHECKING:
    import pandas as pd


BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte-order mark: dropped from the start of every text file srdiv reads."""


def check_utf8(path: str | os.PathLike, data: bytes) -> None:
    """One :class:`InputError` naming the line, the byte and its offset of the first byte of ``data`` (a
    file's content) that is not UTF-8; lines end at ``\\n``, ``\\r\\n`` or ``\\r``."""
    if data.isascii():
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        head = data[:err.start]
        line = len(LINE_END.findall(head.decode("utf-8"))) + 1
        raise InputError(path, f"not UTF-8 text (byte {data[err.start]:#04x} at byte offset {err.start})", line) \
            from None


def text_bytes(path: str | os.PathLike) -> bytes:
    """A text file's bytes, its byte-order mark dropped, once they are known to be UTF-8 (:func:`check_utf8`);
    a missing file is an :class:`InputError` too. The one way every TREC-style text file is opened."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found")
    data = path.read_bytes()
    data = data[len(BOM):] if data.startswith(BOM) else data
    check_utf8(path, data)
    return data


def read_text(path: str | os.PathLike) -> str:
    """A UTF-8 text file's content (:func:`text_bytes`: no byte-order mark; a byte that is not UTF-8 is one
    :class:`InputError` naming its line)."""
    return text_bytes(path).decode("utf-8")


LINE_END = re.compile(r"\r\n|\r|\n")
"""Where a line of a text file ends: ``\\n``, ``\\r\\n`` or a lone ``\\r``, in every file srdiv reads."""
TRAILING = " \t\v\f"
"""The blanks stripped from the end of every line of a TREC-style text file."""


def text_lines(path: str | os.PathLike, trailing: str = TRAILING) -> list[tuple[int, str]]:
    """``(1-based line number, line)`` of each line of a text file that is not blank: read by
    :func:`text_bytes`, split at :data:`LINE_END`, trailing blanks (:data:`TRAILING`, or ``trailing``: a
    TSV reader keeps the tabs, its separator) removed."""
    lines = LINE_END.split(text_bytes(path).decode("utf-8"))
    return [(number, line.rstrip(trailing)) for number, line in enumerate(lines, start=1) if line.strip()]


HEADER_WORDS = frozenset({"qid", "query_id", "queryid", "topic", "topic_id", "topicid", "qno", "query", "id"})
"""A first field that makes a line a header line (case ignored): never a topic id srdiv reads as data."""


def refuse_header(path: str | os.PathLike, first: str, line: int, names: tuple[str, ...]) -> None:
    """The first line of a file of whitespace-separated fields ``names`` (qrels, runs, folds: formats without
    a header) must not be a header line (its first field one of :data:`HEADER_WORDS`)."""
    if first.lower() in HEADER_WORDS:
        raise InputError(path, f"a header line ('{first} ...'): this format has none, its lines are "
                               f"'{' '.join(names)}'; remove the line", line)


def normal_id(text: str) -> str:
    """A topic id as srdiv keeps it: an id of digits only loses its leading zeros (``01`` -> ``1``, ``00`` ->
    ``0``), as ndeval reads topic numbers as integers; any other id is kept as it is."""
    return text.lstrip("0") or "0" if text.isascii() and text.isdigit() else text


def normal_ids(values: pd.Series) -> pd.Series:
    """:func:`normal_id` of every text of ``values`` (vectorised; unchanged when no id starts with ``0``)."""
    zero = values.str.startswith("0").fillna(False).to_numpy(bool)
    if not zero.any():
        return values
    values = values.copy()
    values[zero] = values[zero].str.replace(r"^0+([0-9]+)$", r"\1", regex=True)
    return values


def integer_misfit(values: pd.Series) -> int | None:
    """Position of the first text of ``values`` that is not written as a C ``int`` is (``[+-]`` then
    digits), or None: ``1e3``, ``1.0`` or `` 3`` would be read otherwise by ndeval's ``atoi`` than by a
    float parser, so they are refused, not converted."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pa.array(values.astype(str), pa.large_string())
    ok = pc.ascii_is_decimal(text).to_numpy(zero_copy_only=False)     # digits only: most files, no regex
    if not ok.all():
        ok |= values.str.fullmatch(r"[+-][0-9]+").fillna(False).to_numpy(bool)
    return None if ok.all() else int(np.argmin(ok))
