"""Reader of the WordNet 3.0 database files (``data.<pos>``, ``index.noun``).

Format (WordNet's ``wndb(5WN)``): in ``data.<pos>`` every line not starting
with a space is one synset::

    offset lex_filenum ss_type w_cnt(hex) [word lex_id(hex)]... p_cnt [ptr_symbol offset pos src_tgt]... [frames] | gloss

and in ``index.noun`` every such line is one lemma::

    lemma pos synset_cnt p_cnt [ptr_symbol]... sense_cnt tagsense_cnt [synset_offset]...   (offsets in sense order)

Adjective words may carry a syntactic marker (``(a)``, ``(p)``, ``(ip)``),
removed here. Satellite adjectives (``ss_type`` ``s``) live in ``data.adj``
and are addressed with pos ``a`` like the other adjectives.
"""  # noqa: E501 (the literal block above is one line of the file format)

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from srdiv.io import InputError

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
"""Synset order of the collection: nouns, verbs, adjectives, adverbs, each in file order."""

_MARKER = re.compile(r"\([a-z]+\)$")


@dataclass
class WordNet:
    """All synsets and their pointers, synsets indexed ``0..n-1`` in :data:`POS_FILES` order.

    ``synsets``: ``pos, offset, lexfile, lemmas`` (list of word forms with
    underscores, original case), ``gloss``; ``pointers``: ``src, dst`` (synset
    indices) and ``symbol`` (e.g. ``@`` hypernym, ``~`` hyponym, ``%p`` part
    meronym), one row per pointer of the files (lexical pointers included).
    ``noun_senses``: lemma -> synset indices of its noun senses, in sense order.
    """

    synsets: pd.DataFrame
    pointers: pd.DataFrame
    noun_senses: dict[str, np.ndarray]


def _data_lines(path: Path) -> list[str]:
    if not path.exists():
        raise InputError(path, "WordNet data file not found")
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and line[0] != " "]


def _parse_synset(line: str) -> tuple[str, int, list[str], list[tuple[str, str, str]], str]:
    """``(offset, lexfile, words, [(symbol, offset, pos)], gloss)`` of one data line."""
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    n_words = int(fields[3], 16)
    words = [_MARKER.sub("", w) for w in fields[4:4 + 2 * n_words:2]]
    at = 4 + 2 * n_words
    n_ptrs = int(fields[at])
    ptrs = fields[at + 1:at + 1 + 4 * n_ptrs]
    return fields[0], int(fields[1]), words, list(zip(ptrs[0::4], ptrs[1::4], ptrs[2::4])), gloss.strip()


def read_wordnet(wordnet_dir: str | Path) -> WordNet:
    """Parse ``data.{noun,verb,adj,adv}`` and ``index.noun`` under ``wordnet_dir``."""
    wordnet_dir = Path(wordnet_dir)
    rows: list[tuple] = []
    ptr_rows: list[tuple[int, str, str]] = []
    for pos, name in POS_FILES.items():
        path = wordnet_dir / f"data.{name}"
        for lineno, line in enumerate(_data_lines(path), start=1):
            try:
                offset, lexfile, words, ptrs, gloss = _parse_synset(line)
            except (ValueError, IndexError):
                raise InputError(path, "malformed synset line", lineno) from None
            src = len(rows)
            rows.append((pos, offset, lexfile, words, gloss))
            ptr_rows.extend((src, symbol, f"{p}:{o}") for symbol, o, p in ptrs)
    synsets = pd.DataFrame(rows, columns=["pos", "offset", "lexfile", "lemmas", "gloss"])
    key = synsets["pos"] + ":" + synsets["offset"]
    index_of = pd.Series(np.arange(len(synsets)), index=key.to_numpy())
    pointers = pd.DataFrame(ptr_rows, columns=["src", "symbol", "target"])
    dst = index_of.reindex(pointers["target"].to_numpy())
    if dst.isna().any():
        raise InputError(wordnet_dir, f"pointer to unknown synset {pointers['target'][dst.isna().to_numpy()].iloc[0]}")
    pointers = pd.DataFrame({"src": pointers["src"].to_numpy(), "dst": dst.to_numpy().astype(np.int64),
                             "symbol": pointers["symbol"].to_numpy()})
    nouns = synsets["pos"] == "n"
    noun_index = dict(zip(synsets["offset"][nouns], np.flatnonzero(nouns)))
    return WordNet(synsets, pointers, _noun_senses(wordnet_dir / "index.noun", noun_index))


def _noun_senses(path: Path, noun_index: dict[str, int]) -> dict[str, np.ndarray]:
    """lemma -> noun synset indices in sense order, from ``index.noun``."""
    senses = {}
    for lineno, line in enumerate(_data_lines(path), start=1):
        fields = line.split()
        try:
            n_synsets, n_ptrs = int(fields[2]), int(fields[3])
            offsets = fields[6 + n_ptrs:6 + n_ptrs + n_synsets]
            senses[fields[0]] = np.array([noun_index[o] for o in offsets], dtype=np.int64)
        except (ValueError, IndexError, KeyError):
            raise InputError(path, "malformed index line", lineno) from None
    return senses
