"""``debian-facets`` documents: the archive indexes read and checked, one document per source package."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from srdiv.collection.debian_config import DebianFacetsConfig
from srdiv.collection.debian_files import (
    Release,
    Vocabulary,
    index_file,
    read_packages,
    read_release,
    read_translations,
    read_vocabulary,
    sha256,
    verify,
)
from srdiv.collection.graph import anchor_texts, pagerank
from srdiv.io import InputError


@dataclass(frozen=True)
class Indexes:
    """The archive indexes a build reads, with the snapshot they come from."""

    packages: pd.DataFrame
    translations: dict[tuple[str, str], str]
    vocabulary: Vocabulary
    release: Release
    checksums: dict[str, str] = field(default_factory=dict)   # file name -> SHA-256 as read


def read_indexes(directory: str | Path, architecture: str = "amd64") -> Indexes:
    """``Packages``, ``Translation-en`` (each plain or .xz/.gz/.bz2), ``vocabulary`` and ``InRelease`` of ``directory``.

    The two archive indexes must match the checksums ``InRelease`` lists for them.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(directory, "index directory not found (workflow/scripts/fetch_debian_indexes.sh fetches it)")
    release_file = directory / "InRelease"
    if not release_file.exists():
        raise InputError(release_file, "InRelease not found: it records the snapshot the indexes come from")
    release = read_release(release_file)
    packages, translations = index_file(directory, "Packages"), index_file(directory, "Translation-en")
    vocabulary = index_file(directory, "vocabulary")
    checksums = {
        f"main/binary-{architecture}/{packages.name}":
            verify(release, packages, f"main/binary-{architecture}/Packages", release_file),
        f"main/i18n/{translations.name}": verify(release, translations, "main/i18n/Translation-en", release_file),
    }
    checksums[f"debtags/{vocabulary.name}"] = sha256(vocabulary)
    return Indexes(read_packages(packages), read_translations(translations), read_vocabulary(vocabulary),
                   release, checksums)


@dataclass(frozen=True)
class Documents:
    """The documents with what the build needs beside the ``docs`` table."""

    docs: pd.DataFrame                  # the docs table
    tags: list[list[str]]               # per document, its sorted tags
    untagged_sources: int               # untagged sources left out (0 when kept)


def _paragraphs(texts: list[str]) -> str:
    """The distinct paragraphs of ``texts``, in order, joined by blank lines."""
    seen: dict[str, None] = {}
    for text in texts:
        for para in text.split("\n\n"):
            if para.strip():
                seen.setdefault(para.strip(), None)
    return "\n\n".join(seen)


def _body(binaries: pd.DataFrame) -> str:
    """A source's body: its main binary's long description, then each other binary's synopsis and long one."""
    texts = [binaries["long"].iloc[0]]
    for synopsis, long in zip(binaries["synopsis"].iloc[1:], binaries["long"].iloc[1:]):
        texts += [synopsis, long]
    return _paragraphs(texts)


def dependency_graph(pk: pd.DataFrame, sources: pd.Index) -> sp.csr_matrix:
    """Boolean ``[sources, sources]``: a binary of the row source depends on one of the column source (no self-loops).

    A name that is a real package stands for its source; a virtual name for the sources of
    every package providing it.
    """
    real = pd.Series(pk["source"].to_numpy(), index=pk["package"].to_numpy())
    provided = pk[["source", "provides"]].explode("provides").dropna()
    provided = provided[~provided["provides"].isin(real.index)]
    target = pd.concat([pd.DataFrame({"name": real.index, "target": real.to_numpy()}),
                        provided.rename(columns={"provides": "name", "source": "target"})])
    deps = pk[["source", "depends"]].explode("depends").dropna().rename(columns={"depends": "name"})
    edges = deps.merge(target, on="name")[["source", "target"]]
    edges = edges[edges["source"] != edges["target"]].drop_duplicates()
    src, dst = sources.get_indexer(edges["source"]), sources.get_indexer(edges["target"])
    keep = (src >= 0) & (dst >= 0)
    n = len(sources)
    adj = sp.csr_matrix((np.ones(int(keep.sum()), dtype=bool), (src[keep], dst[keep])), shape=(n, n))
    adj.sum_duplicates()
    return adj


def build_docs(ix: Indexes, cfg: DebianFacetsConfig) -> Documents:
    """One document per source package (``Documents.docs`` in source-name order)."""
    pk = ix.packages.copy()
    pk["long"] = [ix.translations.get(key, "") for key in zip(pk["package"], pk["md5"])]
    pk["main"] = pk["package"] != pk["source"]
    pk["length"] = pk["package"].str.len()
    pk = pk.sort_values(["source", "main", "length", "package"]).reset_index(drop=True)
    groups = pk.groupby("source", sort=True)
    first = groups.head(1).set_index("source")
    tags = groups["tags"].agg(lambda ts: sorted(set(itertools.chain.from_iterable(ts))))
    homepage = pk[pk["homepage"] != ""].groupby("source")["homepage"].first()
    docs = pd.DataFrame({
        "docno": "deb-" + first.index.to_series(),
        "title": first.index + ": " + first["synopsis"],
        "body": groups[["synopsis", "long", "main"]].apply(_body),
        "url": homepage.reindex(first.index, fill_value="").to_numpy(),
    }).reset_index(drop=True)
    keep = np.ones(len(docs), dtype=bool)
    if cfg.untagged == "leave-out":
        keep = tags.str.len().to_numpy() > 0
    sources = first.index[keep]
    docs = docs[keep].reset_index(drop=True)
    adj = dependency_graph(pk[pk["source"].isin(sources)], sources)
    rank = pagerank(adj, cfg.pagerank_damping)
    docs["anchor"] = anchor_texts(adj, sources.to_numpy(), rank, cfg.anchor_links)   # sources are sorted by name
    docs["pagerank"] = rank
    docs["inlinks"] = np.asarray(adj.sum(axis=0)).ravel().astype(np.int64)
    docs["outlinks"] = np.asarray(adj.sum(axis=1)).ravel().astype(np.int64)
    docs = docs[["docno", "title", "body", "anchor", "url", "pagerank", "inlinks", "outlinks"]]
    return Documents(docs, tags[keep].tolist(), int((~keep).sum()))
