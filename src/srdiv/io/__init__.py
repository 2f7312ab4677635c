"""Input errors and all-or-nothing output files shared by every stage."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

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
                   pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(np.float64, na_value=np.nan))
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(numbers) & (numbers >= low) & (numbers <= high)
            if integer:
                ok &= numbers == np.round(numbers)
    return None if ok.all() else int(np.argmin(ok))


def _fresh_temp(path: Path, directory: bool = False) -> Path:
    """A new hidden ``.NAME.XXXXXXXX.tmp`` file (readable as outputs are, not ``mkstemp``'s 0600) or
    directory beside ``path``, after removing those a killed run (SIGKILL) left for ``path``.

    Only srdiv's own names for this ``path`` are removed: ``.NAME.`` + ``tempfile``'s random part,
    which has no dot, + ``.tmp``; two runs writing the same output at once are not supported.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}."
    for entry in os.scandir(path.parent):
        middle = entry.name[len(prefix):-len(".tmp")]
        if entry.name.startswith(prefix) and entry.name.endswith(".tmp") and middle and "." not in middle:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                Path(entry.path).unlink(missing_ok=True)
    if directory:
        return Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=path.parent))
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return Path(tmp)


MANIFEST = ".srdiv-outputs.json"
"""The record, in each directory srdiv writes into, of the outputs it wrote there: ``{name: [SHA-256, ...]}``."""

TOOL_MARKS = {".snakemake_timestamp"}
"""Files a workflow tool leaves at the top of an output directory it ran a command for (not the user's)."""

_STAGING: list[Path] = []
"""Temporary directories of :func:`atomic_set` being filled: their content is recorded as a whole."""


def digest(path: Path) -> str:
    """SHA-256 of a file's bytes, or of a directory's relative names and their files' bytes (hidden
    entries left out: the marks tools leave in an output directory, as Snakemake's ``.snakemake_timestamp``)."""
    h = hashlib.sha256()
    if path.is_symlink():
        h.update(b"link:" + os.readlink(path).encode())
    elif path.is_dir():
        for entry in sorted(path.rglob("*")):
            if any(part.startswith(".") for part in entry.relative_to(path).parts):
                continue
            h.update(str(entry.relative_to(path)).encode() + b"\0")
            if entry.is_file() and not entry.is_symlink():
                h.update(digest(entry).encode())
    else:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _staged(path: Path) -> bool:
    target = path.resolve()
    return any(tmp == target or tmp in target.parents for tmp in _STAGING)


def _manifest(folder: Path) -> dict[str, list[str]]:
    try:
        record = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` (its manifest is read, changed and written by one process at a time)."""
    import fcntl

    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def claim(path: str | os.PathLike, legacy: Callable[[Path], bool] | None = None) -> None:
    """Refuse to replace ``path`` unless srdiv wrote what lies there: its directory's manifest records
    ``path`` with the digest of its present content (so a file a user wrote, or changed since, is
    never replaced, unless git holds the changed file as it is: a pull changed it); for a directory, every file in it (:func:`_claim_dir`). ``legacy``: whether an
    unrecorded ``path`` is an output of an srdiv without manifests, recognised by its content (a
    results README, a ``dvc.yaml``; for a directory, see :func:`_claim_dir`).
    """
    path = Path(path)
    if not os.path.lexists(path) or _staged(path):
        return
    if path.is_dir() and not path.is_symlink():
        return _claim_dir(path, legacy)
    recorded = _manifest(path.parent).get(path.name)
    if recorded is None and legacy is not None and legacy(path):
        return
    if recorded is None:
        raise InputError(path, "exists and srdiv did not write it; srdiv never replaces a file it did not write: "
                               "move it away or choose another output path")
    if digest(path) not in recorded and not committed(path):     # changed by git (a pull): git brings it back
        raise InputError(path, "was changed since srdiv wrote it; srdiv never replaces a file it did not write: "
                               "move it away or choose another output path")


def _contents(folder: Path) -> list[str]:
    """Every file under ``folder`` (hidden ones and symbolic links included, not followed; the
    :data:`TOOL_MARKS` at its top left out), as sorted relative names."""
    names = []
    for root, dirs, files in os.walk(folder):
        rel = Path(root).relative_to(folder)
        names += [str(rel / n) for n in files] + [str(rel / n) for n in dirs if os.path.islink(os.path.join(root, n))]
    return sorted(n for n in names if n not in TOOL_MARKS)


def _claim_dir(folder: Path, legacy: Callable[[Path], bool] | None) -> None:
    """Refuse to replace the directory ``folder`` unless every file in it is srdiv's: recorded in the
    manifest beside it (``NAME/REL``) with its present digest. A file removed since is no loss. An
    unrecorded directory is srdiv's only when empty, or (a fresh clone's committed output, which no
    manifest records) when ``legacy`` accepts it and git holds every file in it as it is
    (:func:`_uncommitted`). The one line names the first file that is not srdiv's."""
    files = _contents(folder)
    record = _manifest(folder.parent)
    prefix = f"{folder.name}/"
    if not any(key.startswith(prefix) for key in record):
        if folder.name in record and digest(folder) in record[folder.name] and \
                not any(part.startswith(".") for name in files for part in Path(name).parts):
            return      # recorded as a whole by an srdiv that kept no file list (hidden files not covered)
        foreign = files[0] if files else None
        if foreign is not None and legacy is not None and legacy(folder):
            foreign = _uncommitted(folder, files)
        if foreign is not None:
            raise InputError(folder / foreign, "srdiv did not write this file, and replaces a directory only when it "
                                               "wrote every file in it: move it away or choose another output directory")
        return
    for name in files:
        recorded = record.get(prefix + name)
        if recorded is None:
            raise InputError(folder / name, "srdiv did not write this file, and replaces a directory only when it "
                                            "wrote every file in it: move it away or choose another output directory")
        if digest(folder / name) not in recorded:
            raise InputError(folder / name, "was changed since srdiv wrote it; srdiv replaces a directory only when "
                                            "it wrote every file in it: move it away or choose another output directory")


def committed(path: Path) -> bool:
    """Whether git holds the file ``path`` as it is (so ``git checkout`` would bring it back)."""
    return _uncommitted(path.parent, [path.name]) is None


def _uncommitted(folder: Path, files: list[str]) -> str | None:
    """The first of ``files`` (names under ``folder``) that git does not hold as it is there (so
    ``git checkout`` would not bring it back), or None; the first of them all when git cannot tell."""
    try:
        listing = subprocess.run(["git", "-C", str(folder), "ls-files", "-s", "-z", "--", "."],
                                 capture_output=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return files[0]
    blobs = {}
    for item in filter(None, listing.split(b"\0")):
        meta, name = item.split(b"\t", 1)
        blobs[os.fsdecode(name)] = meta.split()[1].decode()
    for name in files:
        path = folder / name
        data = os.fsencode(os.readlink(path)) if path.is_symlink() else path.read_bytes()
        if blobs.get(name) != hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest():
            return name
    return None


def _entries(path: Path, name: str) -> dict[str, str]:
    """The manifest's entries for ``path`` recorded as ``name``: its digest, and for a directory each
    file's in it (``name/REL``)."""
    entries = {name: digest(path)}
    if path.is_dir() and not path.is_symlink():
        entries.update({f"{name}/{rel}": digest(path / rel) for rel in _contents(path)})
    return entries


def _write_manifest(folder: Path, text: str | None) -> None:
    if text is None:
        (folder / MANIFEST).unlink(missing_ok=True)
        return
    tmp = _fresh_temp(folder / MANIFEST)
    try:
        tmp.write_text(text)
        os.replace(tmp, folder / MANIFEST)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def verify(path: str | os.PathLike, what: str, required: bool = False) -> None:
    """Before ``path`` (a file or directory srdiv wrote) is used: its content is what srdiv recorded in
    the manifest beside it, else one :class:`InputError` (a file damaged, edited or replaced since). An
    unrecorded ``path`` is an error only when ``required`` (for what is loaded with pickle: only what
    srdiv itself wrote, and recorded, is trusted)."""
    path = Path(path).resolve()
    recorded = _manifest(path.parent).get(path.name)
    if recorded is None and required:
        raise InputError(path, f"{what} that srdiv did not record writing (no entry in {path.parent / MANIFEST}); "
                               "only what srdiv wrote is loaded: make it again")
    if recorded is not None and digest(path) not in recorded:
        raise InputError(path, f"{what} was changed since srdiv wrote it (its content is not the one recorded in "
                               f"{MANIFEST}): make it again")


def _record(path: Path, new: Path) -> Callable[[], None]:
    """Record in ``path``'s directory that ``new`` (about to be renamed to ``path``) is srdiv's; the
    present content stays recorded too until the next write. Returns what puts the manifest back
    (for a rename that does not happen)."""
    if _staged(path):
        return lambda: None
    folder = path.parent
    with _locked(folder):
        before = (folder / MANIFEST).read_text() if (folder / MANIFEST).is_file() else None
        record = _manifest(folder)
        present = _entries(path, path.name) if os.path.lexists(path) and path.name in record else {}
        for key in [k for k in record if k == path.name or k.startswith(f"{path.name}/")]:
            record[key] = [d for d in record[key] if d == present.get(key)]
        for key, value in _entries(new, path.name).items():
            record[key] = sorted(set(record.get(key, [])) | {value})
        record = {key: value for key, value in record.items() if value}
        _write_manifest(folder, json.dumps(record, indent=1, sort_keys=True) + "\n")

    def undo() -> None:
        with _locked(folder):
            _write_manifest(folder, before)
    return undo


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
    paths = [Path(os.path.realpath(p)) if os.path.islink(p) and os.path.isdir(p) else Path(p) for p in paths]
    twice = [p for i, p in enumerate(paths) if p.resolve() in {q.resolve() for q in paths[:i]}]
    if twice:
        raise InputError(twice[0], "the same output is given twice; choose one path per output")
    for path in paths:
        claim(path, legacy)
    temps = []
    try:
        for path in paths:
            temps.append(_fresh_temp(path, directory=True))
            _STAGING.append(temps[-1].resolve())
        news = [tmp / path.name for tmp, path in zip(temps, paths)]
        olds = [tmp / f"{path.name}.old" for tmp, path in zip(temps, paths)]
        yield news
        existed = [os.path.lexists(path) for path in paths]
        for new, path, there in zip(news, paths, existed):
            if there and os.path.lexists(new) and path.is_dir() != new.is_dir():
                raise InputError(path, f"output exists and is {'' if path.is_dir() else 'not '}a directory")
        undos = []
        try:
            for new, path in zip(news, paths):
                if os.path.lexists(new):
                    undos.append(_record(path, new))
            for old, path, there in zip(olds, paths, existed):
                if there:
                    os.replace(path, old)
            for new, path in reversed(list(zip(news, paths))):
                if os.path.lexists(new):
                    os.replace(new, path)
        except BaseException:      # judged by what lies where: an interrupt may fall right after a rename
            for new, old, path, there in zip(news, olds, paths, existed):
                if os.path.lexists(path) and not os.path.lexists(new) and (os.path.lexists(old) or not there):
                    os.replace(path, new)        # a new one that had arrived leaves, the first first
            for old, path in reversed(list(zip(olds, paths))):
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
            members = {k: z.zip.getinfo(f"{k}.npy") for k in keys}
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
