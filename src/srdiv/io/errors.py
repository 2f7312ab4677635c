"""The one error of bad input, and the checks of values read from a file that raise it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


class InputError(Exception):
    """Bad input: the message names the file and, when known, the line."""

    def __init__(self, path: str | os.PathLike, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.reason = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self):       # pickled as its parts (a process training tune points sends it back)
        return type(self), (self.path, self.reason, self.line)


def first_misfit(values, integer: bool, low: float = -np.inf, high: float = np.inf) -> int | None:
    """Position of the first value that is not a finite number (a whole one when ``integer``) in
    ``[low, high]``, or None: the check before a value is narrowed to a smaller type."""
    array = np.asarray(values)
    if array.dtype.kind in "iu":    # whole numbers already: only the range to check
        ok = (array >= low) & (array <= high)
    else:
        import pandas as pd

        numbers = (array.astype(np.float64, copy=False) if array.dtype.kind == "f" else   # no per-value parsing
                   pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
                   .to_numpy(np.float64, na_value=np.nan))
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(numbers) & (numbers >= low) & (numbers <= high)
            if integer:
                ok &= numbers == np.round(numbers)
    return None if ok.all() else int(np.argmin(ok))


def check_finite(path: str | os.PathLike, name: str, values: np.ndarray) -> None:
    """A numeric array read from a file holds only finite values; else one :class:`InputError`
    naming the array and the first row (first axis) with a value that is not."""
    if values.dtype.kind not in "fiub":
        raise InputError(path, f"array '{name}' is not numeric (dtype {values.dtype})")
    if values.dtype.kind == "f" and values.size and not np.isfinite(values).all():
        rows = np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1) if values.ndim else np.array([False])
        raise InputError(path, f"array '{name}' has a value that is not finite (row {int(np.argmin(rows)) + 1})")


def check_keys(path: str | os.PathLike, frame: pd.DataFrame, keys: list[str], what: str = "table") -> None:
    """Every row of ``frame`` has its key columns ``keys`` set (no null) and no two rows the same keys;
    else one :class:`InputError` naming the first row that breaks it (a duplicate would be read as one
    silently, a null as the text 'None')."""
    for col in keys:
        missing = frame[col].isna().to_numpy()
        if missing.any():
            raise InputError(path, f"{what}: key column '{col}' is null in row {int(np.argmax(missing)) + 1}")
    twice = frame.duplicated(keys).to_numpy()
    if twice.any():
        row = int(np.argmax(twice))
        key = ", ".join(f"{c} {frame[c].iloc[row]!r}" for c in keys)
        raise InputError(path, f"{what}: {key} appears twice (row {row + 1})")
