"""Readers of Debian's archive indexes: ``Packages``, ``Translation-en``, ``InRelease`` and the Debtags vocabulary.

Every index is a deb822 file (stanzas of ``Field: value`` lines, continuation lines
starting with a space, stanzas separated by blank lines), read as the archive
serves it (``.xz``, ``.gz`` or ``.bz2``, recognised by their magic bytes) or
decompressed. A line that breaks the format is an :class:`InputError` naming the
file and line.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from srdiv.io import InputError

COMPRESSED = (".xz", ".gz", ".bz2")
"""Suffixes tried after an index's plain name, in this order after the plain file."""
_MAGIC = ((b"\xfd7zXZ\x00", lzma.open), (b"\x1f\x8b", gzip.open), (b"BZh", bz2.open))
_LZ4 = b"\x04\x22\x4d\x18"
_FIELD = re.compile(r"([!-9;-~]+):[ \t]*(.*)")
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]*")


def index_file(directory: Path, name: str) -> Path:
    """``directory/name`` or its first existing compressed form (``.xz``, ``.gz``, ``.bz2``)."""
    for suffix in ("",) + COMPRESSED:
        path = directory / f"{name}{suffix}"
        if path.exists():
            return path
    raise InputError(directory / name, f"index not found (also tried {', '.join(name + s for s in COMPRESSED)})")


def read_text(path: Path) -> str:
    """The file's text, decompressed when it starts with xz, gzip or bzip2 magic bytes."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head.startswith(_LZ4):
        raise InputError(path, "lz4 (apt's local copy of an index): decompress it first "
                               "(/usr/lib/apt/apt-helper cat-file FILE > PLAIN) or use the archive's .xz file")
    opener = next((op for magic, op in _MAGIC if head.startswith(magic)), open)
    try:
        with opener(path, "rb") as fh:
            return fh.read().decode("utf-8")
    except (OSError, EOFError, lzma.LZMAError) as err:
        raise InputError(path, f"not a readable compressed index ({err})") from None
    except UnicodeDecodeError as err:
        raise InputError(path, f"not UTF-8 text (byte {err.start})") from None


def sha256(path: Path) -> str:
    """Hex SHA-256 of the file's bytes (as stored, compressed or not)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stanzas(path: Path, text: str | None = None) -> Iterator[tuple[int, dict[str, str]]]:
    """``(first line number, {field: value})`` of every stanza; continuation lines keep their newline."""
    text = read_text(path) if text is None else text
    fields: dict[str, str] = {}
    start, last = 0, None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            if fields:
                yield start, fields
            fields, last = {}, None
        elif line[0] in " \t":
            if last is None:
                raise InputError(path, "continuation line outside a field", number)
            fields[last] += "\n" + line[1:]
        else:
            match = _FIELD.fullmatch(line)
            if not match:
                raise InputError(path, f"not a 'Field: value' line: {line[:60]!r}", number)
            if not fields:
                start = number
            last = match.group(1)
            fields[last] = match.group(2)
    if fields:
        yield start, fields


def _required(path: Path, line: int, fields: dict[str, str], *names: str) -> list[str]:
    missing = [n for n in names if n not in fields]
    if missing:
        raise InputError(path, f"stanza lacks {', '.join(missing)}", line)
    return [fields[n] for n in names]


def relation_names(value: str) -> list[str]:
    """Package names of a relation field (``a (>= 1) | b:any, c [amd64]`` -> ``a, b, c``), every alternative."""
    names = []
    for alternative in re.split(r"[,|]", value):
        name = alternative.strip().split(" ", 1)[0].split(":", 1)[0].split("(", 1)[0].strip()
        if name:
            names.append(name)
    return names


def read_packages(path: Path) -> pd.DataFrame:
    """The binary packages: ``package, source, synopsis, md5, tags, depends, provides, homepage, line``.

    ``source`` defaults to the package name (a ``Source: name (version)`` loses its
    version); ``tags`` are the Debtags of ``Tag:``; ``depends`` the names in
    ``Pre-Depends``, ``Depends`` and ``Recommends``; ``provides`` the virtual names
    of ``Provides``. A package listed twice keeps its first stanza.
    """
    rows = []
    for line, fields in stanzas(path):
        name, synopsis = _required(path, line, fields, "Package", "Description")
        if not _PACKAGE.fullmatch(name):
            raise InputError(path, f"package name {name!r} is not a Debian package name", line)
        source = fields.get("Source", name).split(" ", 1)[0]
        rows.append((
            name, source, synopsis.strip(), fields.get("Description-md5", ""),
            [t.strip() for t in fields.get("Tag", "").replace("\n", " ").split(",") if t.strip()],
            [d for f in ("Pre-Depends", "Depends", "Recommends") for d in relation_names(fields.get(f, ""))],
            relation_names(fields.get("Provides", "")), fields.get("Homepage", "").strip(), line,
        ))
    if not rows:
        raise InputError(path, "no package stanza")
    frame = pd.DataFrame(rows, columns=["package", "source", "synopsis", "md5", "tags", "depends", "provides",
                                        "homepage", "line"])
    return frame.drop_duplicates("package").reset_index(drop=True)


def long_description(value: str) -> str:
    """The extended description of a ``Description`` value: paragraphs (``.`` lines) joined by blank lines."""
    lines = value.split("\n")[1:]
    return "\n".join("" if ln.strip() == "." else ln.rstrip() for ln in lines).strip()


def read_translations(path: Path) -> dict[tuple[str, str], str]:
    """``{(package, description md5): long description}`` of a ``Translation-en`` index."""
    out: dict[tuple[str, str], str] = {}
    for line, fields in stanzas(path):
        name, md5, text = _required(path, line, fields, "Package", "Description-md5", "Description-en")
        out.setdefault((name, md5), long_description(text))
    return out


@dataclass(frozen=True)
class Vocabulary:
    """The Debtags vocabulary: facets (``facet, name``) and tags (``tag, facet, name, text``)."""

    facets: pd.DataFrame
    tags: pd.DataFrame


def read_vocabulary(path: Path) -> Vocabulary:
    """Facet and tag stanzas of the ``debtags`` package's vocabulary (``Description``: a name line, then text)."""
    facets, tags = [], []
    for line, fields in stanzas(path):
        (description,) = _required(path, line, fields, "Description")
        name, text = description.split("\n", 1)[0].strip(), long_description(description)
        if "Facet" in fields:
            facets.append((fields["Facet"].strip(), name))
        elif "Tag" in fields:
            tag = fields["Tag"].strip()
            if "::" not in tag:
                raise InputError(path, f"tag {tag!r} is not 'facet::name'", line)
            tags.append((tag, tag.split("::", 1)[0], name, text))
        else:
            raise InputError(path, "stanza is neither a Facet nor a Tag", line)
    if not tags:
        raise InputError(path, "no Tag stanza")
    return Vocabulary(pd.DataFrame(facets, columns=["facet", "name"]),
                      pd.DataFrame(tags, columns=["tag", "facet", "name", "text"]))


@dataclass(frozen=True)
class Release:
    """What an ``InRelease`` file says of the snapshot: release fields and ``{path: sha256}``."""

    version: str
    codename: str
    date: str
    sha256: dict[str, str]


def read_release(path: Path) -> Release:
    """The release fields and SHA256 list of an ``InRelease`` (or ``Release``) file; the signature is not checked."""
    text = read_text(path)
    body = text.split("\n\n", 1)[1] if text.startswith("-----BEGIN PGP SIGNED MESSAGE-----") else text
    body = body.split("\n-----BEGIN PGP SIGNATURE-----", 1)[0]
    _, fields = next(stanzas(path, body), (0, {}))
    version, codename, date, listing = _required(path, 1, fields, "Version", "Codename", "Date", "SHA256")
    sums = {}
    for entry in listing.strip().split("\n"):
        parts = entry.split()
        if len(parts) != 3:
            raise InputError(path, f"SHA256 entry {entry!r} is not 'sum size path'")
        sums[parts[2]] = parts[0]
    return Release(version.strip(), codename.strip(), date.strip(), sums)


def verify(release: Release, path: Path, archive_path: str, release_file: Path) -> str:
    """SHA-256 of ``path``, checked against the release's entry for ``archive_path`` (plus the file's suffix)."""
    suffix = next((s for s in COMPRESSED if path.name.endswith(s)), "")
    expected = release.sha256.get(archive_path + suffix)
    if expected is None:
        raise InputError(release_file, f"lists no checksum for {archive_path + suffix}")
    found = sha256(path)
    if found != expected:
        raise InputError(path, f"SHA-256 {found[:16]}... differs from {archive_path + suffix} in {release_file.name} "
                               f"({expected[:16]}...): the index is not of this release")
    return found
