"""The quick pass over TREC files that ``srdiv evaluate QRELS RUN`` reads (:mod:`srdiv.metrics.evaluate_files`):
a diversity qrels file (:func:`quick_qrels`) and a run (:func:`quick_run`) read with numpy alone, no Python
object per line or field.

A file is read :data:`BLOCK_BYTES` of whole lines at a time. The fields of a block are found from its blank
bytes (:func:`_split`), then read as little-endian 64-bit words taken at each field's first byte
(:meth:`Block.field`): whole numbers eight digits at once (:func:`_digits`), scores as their digits over a power
of ten (:func:`_floats`), topic ids coded once per run of equal ids (:func:`_codes`), docnos hashed
(:func:`_hash`) to find repeats and the relevant ones. A file this pass declines (:class:`Declined`: another
layout, a number it cannot read, a repeated judgment, docno or rank) is read by :mod:`srdiv.metrics.runs`
instead, which reads every layout ndeval reads and names the first bad line; either way the same checks hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from srdiv.metrics.diversity import distinct
from srdiv.metrics.evaluate import DiversityEvaluator, QrelsLabels, coded_labels

BLOCK_BYTES = 1 << 18
"""Bytes of a file read and parsed at a time (whole lines): the arrays of one block are held at once."""
WIDEST = 256
"""The longest field the quick pass reads (a longer one is read by :mod:`srdiv.metrics.runs`)."""
_BLANK = bytes(chr(c) in " \t\n\v\f\r" for c in range(256))
LOW = np.array([(1 << 8 * n) - 1 for n in range(9)], "<u8")
"""``LOW[n]``: the mask of a little-endian word's first ``n`` bytes."""
SPREAD = {byte: np.uint64(int(byte * 8, 16)) for byte in ("01", "06", "0F", "2E", "30", "80", "F0")}
"""A byte repeated in every byte of a word."""
POW10 = 10.0 ** np.arange(9)
"""The powers of ten a score's digits are divided by (exact doubles)."""
INT32 = 2**31
"""The range of a C ``int``, as ndeval reads a rank or subtopic."""
MIX = np.int64(0x9E3779B97F4A7C15 - 2**64)
"""An odd multiplier that spreads a hash before a code is added (:func:`quick_qrels`, :func:`quick_run`)."""


class Declined(Exception):
    """The quick reader does not read this file; :mod:`srdiv.metrics.runs` reads it (or names its bad line)."""


class Block(NamedTuple):
    """Whole lines of a file: ``first, end [fields, lines]`` where each field starts and ends in ``data``."""

    data: np.ndarray     # [bytes + WIDEST] uint8, zeros after the lines
    words: np.ndarray    # [bytes + WIDEST - 7] the little-endian word that starts at each byte
    first: np.ndarray
    end: np.ndarray

    def field(self, j: int, rows: np.ndarray | None = None) -> np.ndarray:
        """``[words, lines]`` field ``j``'s bytes (of ``rows`` only) as little-endian words, zeros past its end
        (:data:`WIDEST` bytes at most, else :class:`Declined`)."""
        first = self.first[j] if rows is None else self.first[j, rows]
        length = (self.end[j] if rows is None else self.end[j, rows]) - first
        out = np.empty((-(-int(length.max(initial=1)) // 8), len(length)), "<u8")
        if len(out) * 8 > WIDEST:
            raise Declined
        for i, word in enumerate(out):
            word[:] = self.words[first + 8 * i]
            if length.min(initial=8 * i + 8) < 8 * i + 8:
                word &= LOW[np.clip(length - 8 * i, 0, 8)]
        return out


def _split(data: bytes, n_fields: int) -> tuple[np.ndarray, np.ndarray]:
    """``first, end [n_fields, lines]`` of the fields of whole lines, each with ``n_fields`` fields separated by
    blanks (C's ``isspace``; blank lines skipped, lines end at ``\\n`` or ``\\r\\n``); :class:`Declined` otherwise."""
    byte = np.frombuffer(data, np.uint8)
    sep = np.flatnonzero(byte <= 32)                    # first the common layout: one space or tab between
    kind = byte[sep]                                    # fields, every line ending in \n or every one in \r\n
    per = n_fields + (b"\r" in data)                    # blanks a line
    if not data.endswith(b"\n"):                        # the last line's end
        ending = [13, 10] if per > n_fields else [10]
        sep, kind = np.append(sep, len(data) + np.arange(len(ending))), np.append(kind, ending)
    if len(sep) % per == 0:
        at, kind = sep.reshape(-1, per), kind.reshape(-1, per)
        first = np.empty((n_fields, len(at)), np.int64)
        first[0, :1] = 0
        first[0, 1:] = at[:-1, -1] + 1
        first[1:] = at[:, :n_fields - 1].T + 1
        end = at[:, :n_fields].T.copy()
        if ((end - first).min(initial=1) > 0 and (kind[:, -1] == 10).all()
                and ((kind[:, :n_fields - 1] == 32) | (kind[:, :n_fields - 1] == 9)).all()
                and (per == n_fields or ((kind[:, -2] == 13) & (at[:, -1] == at[:, -2] + 1)).all())):
            return first, end
    if b"\0" in data or (b"\r" in data and data.count(b"\r") != data.count(b"\r\n")):
        raise Declined                                  # (NUL ends a C string; \r alone ends a line)
    blank = np.ones(len(data) + 2, bool)                # any other layout: runs of blanks, blank lines
    blank[1:-1] = np.frombuffer(data.translate(_BLANK), bool)
    edges = np.flatnonzero(blank[1:] != blank[:-1])     # first byte, end, first byte, ...
    per_line = np.diff(np.searchsorted(edges[0::2], np.append(np.flatnonzero(byte == 10), len(data))), prepend=0)
    if ((per_line != 0) & (per_line != n_fields)).any():
        raise Declined
    return edges[0::2].reshape(-1, n_fields).T.copy(), edges[1::2].reshape(-1, n_fields).T.copy()


def _blocks(path: Path, n_fields: int):
    """The :class:`Block` of each :data:`BLOCK_BYTES` of whole lines of a plain-ASCII file whose every non-blank
    line has ``n_fields`` fields (:func:`_split`); :class:`Declined` otherwise (after the blocks before)."""
    try:
        stream = open(path, "rb")
    except OSError:
        raise Declined from None
    seen, rest = False, b""
    with stream:
        while True:
            chunk = stream.read(BLOCK_BYTES)
            block = rest + chunk
            cut = block.rfind(b"\n") + 1 if chunk else len(block)
            if chunk and not cut:
                rest = block                            # a line longer than a block: read on
                continue
            block, rest = block[:cut], block[cut:]
            if not block:
                break
            if not block.isascii():
                raise Declined
            first, end = _split(block, n_fields)
            seen = seen or first.size > 0
            data = np.frombuffer(block + bytes(WIDEST), np.uint8)
            yield Block(data, np.ndarray((len(data) - 7,), "<u8", data, 0, (1,)), first, end)
    if not seen:
        raise Declined                                  # an empty file


def _text(words: np.ndarray) -> np.ndarray:
    """``[rows]`` fixed-width bytes (``S``) of a :meth:`Block.field`."""
    return np.ascontiguousarray(words.T).view(f"S{8 * len(words)}")[:, 0]


def _digits(word: np.ndarray, digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``([rows] value, [rows] ok)`` of the decimal number written in the first ``digits`` (0 to 8) bytes of each
    little-endian ``word`` (its other bytes ignored), and whether those bytes are all digits: eight at once."""
    mask = LOW[digits]
    word = word & mask
    ok = (word & SPREAD["F0"]) == (SPREAD["30"] & mask)                              # 0x30 to 0x3F
    ok &= (((word & SPREAD["0F"]) + SPREAD["06"]) & SPREAD["F0"]) == 0                   # 0x30 to 0x39
    word = (word & SPREAD["0F"]) << (np.uint64(64) - np.uint64(8) * digits.astype(np.uint64))   # "00000123"
    word = (word * np.uint64(10) + (word >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)       # pairs of digits
    word = (word * np.uint64(100) + (word >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)     # fours
    return (word * np.uint64(10000) + (word >> np.uint64(32))) & np.uint64(0xFFFFFFFF), ok


def _integers(block: Block, j: int, low: int, high: int) -> np.ndarray:
    """``[lines]`` field ``j`` as a whole number (``[+-]`` then up to 8 digits, as ndeval's ``atoi`` and the full
    reader read them) in ``[low, high]``; :class:`Declined` otherwise."""
    lead = block.data[block.first[j]]
    signed = (lead == 43) | (lead == 45)
    digits = block.end[j] - block.first[j] - signed
    if not ((digits >= 1) & (digits <= 8)).all():
        raise Declined
    value, ok = _digits(block.words[block.first[j] + signed], digits)
    if not ok.all():
        raise Declined
    value = value.astype(np.int64)
    value[lead == 45] *= -1
    if len(value) and (value.min() < low or value.max() > high):
        raise Declined
    return value


def _found(word: np.ndarray, byte: str, n: np.ndarray) -> np.ndarray:
    """``[rows]`` where ``byte`` (two hex digits) first lies among the first ``n`` bytes of each little-endian
    ``word``, 8 where it does not: the lowest zero byte of ``word ^ byte``, eight bytes at once."""
    other = (word ^ SPREAD[byte]) | ~LOW[n]
    zero = (other - SPREAD["01"]) & ~other & SPREAD["80"]
    return np.bitwise_count((zero & (~zero + np.uint64(1))) - np.uint64(1)) >> 3


def _floats(block: Block, j: int) -> np.ndarray:
    """``[lines]`` field ``j`` as a finite number, as Arrow reads it (no ``_``); :class:`Declined` otherwise.
    ``[+-]D.D`` with up to 8 digits each side is the integer of its digits over a power of ten, one division of
    exact numbers, so rounded as a full parser rounds it (Clinger's fast path); numpy reads any other form."""
    lead = block.data[block.first[j]]
    start = block.first[j] + ((lead == 43) | (lead == 45))
    length = block.end[j] - start
    word = block.words[start]
    dot = _found(word, "2E", np.minimum(length, 8))
    dot = np.where(dot < 8, dot, 8 + _found(block.words[start + 8], "2E", np.clip(length - 8, 0, 8)))
    dot = np.where(dot < 16, dot, length)               # without a dot in 16 bytes: the whole field
    part = np.maximum(length - dot - 1, 0)
    whole, ok = _digits(word, np.minimum(dot, 8))
    fraction, digits = _digits(block.words[start + dot + 1], np.minimum(part, 8))
    value = whole * np.uint64(10) ** np.minimum(part, 8).astype(np.uint64) + fraction
    ok &= digits & (dot <= 8) & (part <= 8) & (length > (dot < length)) & (value <= 2**53)
    numbers = value.astype(np.float64) / POW10[np.minimum(part, 8)]
    numbers[lead == 45] *= -1
    other = np.flatnonzero(~ok)
    if len(other):
        words = block.field(j, other)
        try:
            numbers[other] = _text(words).astype(np.float64)
        except ValueError:
            raise Declined from None
        if (words.view(np.uint8) == 95).any() or not np.isfinite(numbers[other]).all():
            raise Declined
    return numbers


def _hash(words: np.ndarray) -> np.ndarray:
    """``[rows]`` a 64-bit hash of each row's text (:meth:`Block.field`), whatever the width it is padded to."""
    value = np.zeros(words.shape[1], np.uint64)
    for word in words:                                # a word of zeros lies past the text's end
        mixed = (value ^ word) * np.uint64(0xFF51AFD7ED558CCD)
        value = np.where(word != 0, mixed ^ (mixed >> np.uint64(29)), value)
    return value.view(np.int64)


def _codes(words: np.ndarray, table: dict, dtype=np.int64) -> np.ndarray:
    """``[rows]`` each text's code in ``table``, new texts numbered on by first appearance (one look-up
    per run of equal texts: a TREC file keeps a topic's lines together)."""
    starts = np.flatnonzero(_new(words))
    codes = [table.setdefault(t, len(table)) for t in _text(words[:, starts]).tolist()]
    return np.repeat(np.array(codes, dtype), np.diff(np.append(starts, words.shape[1])))


def _new(words: np.ndarray) -> np.ndarray:
    """``[rows]`` whether each row's text (:meth:`Block.field`) differs from the row before (the first does)."""
    new = np.zeros(words.shape[1], bool)
    new[:1] = True
    for word in words:
        new[1:] |= word[1:] != word[:-1]
    return new


def _repeats(key: np.ndarray) -> bool:
    """Whether two of ``key`` are equal (``key`` is sorted in place)."""
    key.sort()
    return bool((key[1:] == key[:-1]).any())


def _plain_ids(ids: dict) -> None:
    """:class:`Declined` when a topic id is digits with a leading zero (``01``): the readers of
    :mod:`srdiv.metrics.runs` read it as ``1`` (:func:`srdiv.io.normal_ids`)."""
    if any(q[:1] == b"0" and len(q) > 1 and q.isdigit() for q in ids):
        raise Declined


def quick_qrels(path: Path) -> QrelsLabels:
    """:class:`QrelsLabels` of a TREC diversity qrels file (``qid subtopic docno grade``), with
    :func:`srdiv.metrics.runs.read_qrels`' checks; :class:`Declined` where it would refuse the file or
    read it otherwise than this pass (then it reads it). Only the relevant lines are kept."""
    qids: dict[bytes, int] = {}
    keys, parts = [], []
    for block in _blocks(path, 4):
        topic, sid, docno = _codes(block.field(0), qids), _integers(block, 1, 0, INT32 - 1), block.field(2)
        relevant = _integers(block, 3, -128, 127) > 0
        keys.append((_hash(docno) * MIX + topic) * MIX + sid)
        parts.append((topic[relevant], sid[relevant], _text(docno[:, relevant])))
    _plain_ids(qids)
    if _repeats(np.concatenate(keys)):
        raise Declined                                  # a (qid, subtopic, docno) judged twice (or two keys alike)
    topic, sid, docno = (np.concatenate(column) for column in zip(*parts))
    sids, sid_code = distinct(sid)
    by_text = np.argsort(np.array([str(s) for s in sids.tolist()]), kind="stable")   # as text, as read_qrels keeps them
    as_text = np.empty(len(sids), np.int64)
    as_text[by_text] = np.arange(len(sids))
    words = docno.view("<u8").reshape(len(docno), docno.itemsize // 8).T
    by_bytes = np.lexsort(words[::-1].byteswap())       # the relevant documents in byte order
    new = _new(words[:, by_bytes])
    doc = np.empty(len(docno), np.int64)
    doc[by_bytes] = np.cumsum(new) - 1
    return coded_labels([q.decode() for q in qids], topic, as_text[sid_code], doc, docno[by_bytes[new]])


class Coded(NamedTuple):
    """A run in ndeval's order, coded for :meth:`DiversityEvaluator.values`; every array ``[rows]``."""

    topic: np.ndarray    # index in the evaluator's qids, -1 for a topic without judgments
    doc: np.ndarray      # index in the evaluator's docnos, -1 for a document relevant to nothing
    rank: np.ndarray     # rank from 1 within the topic
    tied: int            # judged topics where equal scores lie next to each other in that order


class Relevant(NamedTuple):
    """The evaluator's docnos as little-endian words ``[words, docs]``, ordered by their :func:`_hash`, to find
    a run's documents among them."""

    words: np.ndarray
    hash: np.ndarray
    position: np.ndarray   # each one's index in the evaluator's docnos
    seen: np.ndarray       # [2**bits] whether a relevant docno's hash ends in these bits: most run documents stop here

    @classmethod
    def of(cls, docnos) -> Relevant:
        text = np.asarray(docnos if isinstance(docnos, np.ndarray) else [str(d).encode() for d in docnos], "S")
        width = -(-max(text.itemsize, 1) // 8)
        words = text.astype(f"S{8 * width}").view("<u8").reshape(len(text), width).T
        value = _hash(words)
        order = np.argsort(value)
        value = value[order]
        if (value[1:] == value[:-1]).any():
            raise Declined                              # two relevant docnos hashed alike
        seen = np.zeros(1 << min(max(16, 5 + len(value).bit_length()), 24), bool)
        seen[value & (len(seen) - 1)] = True
        return cls(np.ascontiguousarray(words[:, order]), value, order, seen)

    def find(self, words: np.ndarray, value: np.ndarray) -> np.ndarray:
        """``[rows]`` index in the evaluator's docnos of each row's text (:meth:`Block.field`, its hash
        ``value``), or -1."""
        doc = np.full(len(value), -1, np.int32)
        maybe = np.flatnonzero(self.seen[value & (len(self.seen) - 1)])
        at = np.minimum(np.searchsorted(self.hash, value[maybe]), len(self.hash) - 1)
        hit = self.hash[at] == value[maybe]
        maybe, at = maybe[hit], at[hit]
        same = np.ones(len(maybe), bool)
        for i in range(max(len(words), len(self.words))):   # a missing word is zeros
            same &= (words[i, maybe] if i < len(words) else 0) == (self.words[i, at] if i < len(self.words) else 0)
        doc[maybe[same]] = self.position[at[same]]
        return doc


def quick_run(path: Path, evaluator: DiversityEvaluator, by_score: bool, ties: str) -> Coded:
    """A TREC run file (``qid Q0 docno rank score tag``) coded and ordered as :func:`srdiv.metrics.runs.rank_run`
    orders it (by rank; ``by_score``: by score, equal scores by docno as ``ties`` says), with its checks;
    :class:`Declined` where it would refuse the file or read it otherwise than this pass."""
    relevant = Relevant.of(evaluator.docnos)
    topics: dict[bytes, int] = {}
    parts = []
    for block in _blocks(path, 6):
        words = block.field(2)
        value, docno = _hash(words), _text(words)
        run_topic = _codes(block.field(0), topics, np.int32)
        parts.append((run_topic, value * MIX + run_topic, relevant.find(words, value),
                      _integers(block, 3, -INT32, INT32 - 1).astype(np.int32), _floats(block, 4),
                      docno if by_score else np.zeros(0, "S1")))   # docnos order ties
    _plain_ids(topics)
    columns = [list(column) for column in zip(*parts)]
    del parts
    run_topic, pair, doc, rank, score, docno = (np.concatenate(columns.pop(0)) for _ in range(6))
    if _repeats(pair):
        raise Declined                                  # a docno twice for a qid (or two pairs alike)
    del pair
    qids = {q: i for i, q in enumerate(evaluator.qids)}
    topic = np.array([qids.get(q.decode(), -1) for q in topics], np.int32)[run_topic]
    ranks, tied = _ranked(run_topic, rank, score, docno, by_score, ties)
    return Coded(topic, doc, ranks, len(distinct(topic[tied][topic[tied] >= 0])[0]))


def _ranked(topic: np.ndarray, rank: np.ndarray, score: np.ndarray, docno: np.ndarray, by_score: bool,
            ties: str) -> tuple[np.ndarray, np.ndarray]:
    """``([rows] rank from 1 within its topic, [tied] rows whose score equals the one before them)`` in ndeval's
    order of a run's rows ``topic, rank, score, docno [rows]`` (:func:`quick_run`); :class:`Declined` for a rank
    twice in a topic. A file already in that order (most are) is not sorted."""
    keys = (-score, topic) if by_score else (rank, topic)
    step = np.diff(topic)
    order = None if ((step > 0) | ((step == 0) & (np.diff(keys[0]) >= 0))).all() else np.lexsort(keys)
    del step
    in_order = topic if order is None else topic[order]
    same_topic = in_order[1:] == in_order[:-1]
    if not by_score:
        in_order = rank if order is None else rank[order]
        if (same_topic & (in_order[1:] == in_order[:-1])).any():
            raise Declined                              # a rank twice for a qid
    in_order = score if order is None else score[order]
    tied = np.flatnonzero(same_topic & (in_order[1:] == in_order[:-1])) + 1     # positions in the order
    del in_order
    if by_score and len(tied):                          # equal scores by docno, in byte order
        order = np.arange(len(topic)) if order is None else order
        within = np.zeros(len(order), bool)
        within[tied] = within[tied - 1] = True
        rows = order[within]
        key = np.zeros(len(order), np.int64)
        key[rows[np.argsort(docno[rows], kind="stable")]] = np.arange(1, len(rows) + 1)
        order = np.lexsort((key if ties == "pyndeval" else -key, -score, topic))
    starts = np.flatnonzero(np.append(True, ~same_topic))                     # each topic's first row in the order
    within = np.arange(1, len(topic) + 1) - np.repeat(starts, np.diff(np.append(starts, len(topic))))
    if order is None:
        return within, tied
    ranks = np.empty(len(order), np.int64)
    ranks[order] = within
    return ranks, order[tied]
