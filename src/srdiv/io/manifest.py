"""What srdiv wrote: the manifest in each output directory, and the refusal to replace anything else."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from srdiv.io.errors import InputError


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
    never replaced, unless git holds the changed file as it is: a pull changed it); for a directory,
    every file in it (:func:`_claim_dir`). ``legacy``: whether an unrecorded ``path`` is an output of an
    srdiv without manifests, recognised by its content (a results README, a ``dvc.yaml``; for a
    directory, see :func:`_claim_dir`).
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
    manifest beside it (``NAME/REL``) with its present digest, or changed since and held by git as it is
    (a pull brought it: ``git checkout`` brings it back). A file removed since is no loss. An
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
                                               "wrote every file in it: move it away or choose another output "
                                               "directory")
        return
    changed = []
    for name in files:
        recorded = record.get(prefix + name)
        if recorded is None:
            raise InputError(folder / name, "srdiv did not write this file, and replaces a directory only when it "
                                            "wrote every file in it: move it away or choose another output "
                                            "directory")
        if digest(folder / name) not in recorded:
            changed.append(name)
    edited = _uncommitted(folder, changed) if changed else None     # changed by git (a pull): git brings it back
    if edited is not None:
        raise InputError(folder / edited, "was changed since srdiv wrote it; srdiv replaces a directory only when "
                                          "it wrote every file in it: move it away or choose another output "
                                          "directory")


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
    blobs: dict[str, str] = {}
    for item in filter(None, listing.split(b"\0")):
        meta, raw_name = item.split(b"\t", 1)
        blobs[os.fsdecode(raw_name)] = meta.split()[1].decode()
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
