"""``srdiv evaluate QRELS RUN [MEASURES...]``: a TREC diversity qrels file and a run file evaluated with numpy
alone, printed as trec_eval and ir_measures print.

The program starts this module without typer, pandas or pyarrow (:func:`srdiv.launch.main` hands it the
command line, :func:`main`), so the command costs what numpy's import and the evaluation cost. The files
are read in a quick pass (:func:`quick_qrels`, :func:`quick_run`: ``bytes.split`` per block of lines, the
fields coded with dictionaries); a file that pass declines (another layout, a number it cannot read, a
repeated judgment, docno or rank) is read by :mod:`srdiv.metrics.runs` instead, which reads every layout
ndeval reads and names the first bad line. Either way the same checks hold and the values are those of
:class:`srdiv.metrics.evaluate.DiversityEvaluator`.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from srdiv.metrics.diversity import distinct
from srdiv.metrics.evaluate import MEASURES, DiversityEvaluator, QrelsLabels, coded_labels
from srdiv.metrics.names import TIES, Measure, parse_measure

OUT_FORMATS = (".tsv", ".parquet", ".json")
"""``--out``'s formats, by the file's extension; a device or pipe (``/dev/stdout``) gets TSV."""
BLOCK_BYTES = 1 << 20
"""Bytes of a file read and split at a time (whole lines): the fields of one block are Python objects at once."""
_BLANK = bytes(chr(c) in " \t\n\v\f\r" for c in range(256))
INT32 = 2**31
MIX = np.int64(0x9E3779B97F4A7C15 - 2**64)
"""An odd multiplier that spreads a docno's hash before its topic is added (:func:`quick_run`)."""


class Declined(Exception):
    """The quick reader does not read this file; :mod:`srdiv.metrics.runs` reads it (or names its bad line)."""


def _blocks(path: Path, n_fields: int):
    """``[fields]`` of each block of whole lines of a plain-ASCII file whose every non-blank line has
    ``n_fields`` blank-separated fields (lines end at ``\\n`` or ``\\r\\n``), read :data:`BLOCK_BYTES` at a
    time; :class:`Declined` otherwise (after the blocks before the first it declines)."""
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
            if not block.isascii() or (b"\r" in block and block.count(b"\r") != block.count(b"\r\n")):
                raise Declined                          # (\r alone ends a line)
            blank = np.frombuffer(block.translate(_BLANK), bool)
            first = np.flatnonzero(blank[:-1] & ~blank[1:]) + 1             # each field's first byte
            if not blank[0]:
                first = np.r_[0, first]
            ends = np.r_[np.flatnonzero(np.frombuffer(block, np.uint8) == 10), len(block)]
            per_line = np.diff(np.searchsorted(first, ends), prepend=0)
            if ((per_line != 0) & (per_line != n_fields)).any():
                raise Declined
            seen = seen or len(first) > 0
            yield block.split()
    if not seen:
        raise Declined                                  # an empty file


def _integers(tokens: list[bytes], low: int, high: int) -> np.ndarray:
    """Whole numbers in ``[low, high]`` as Arrow reads them (no ``_``); :class:`Declined` otherwise."""
    try:
        values = np.fromiter(map(int, tokens), np.int64, len(tokens))
    except (ValueError, OverflowError):
        raise Declined from None
    if b"_" in b"".join(tokens) or (len(values) and (values.min() < low or values.max() > high)):
        raise Declined
    return values


def _floats(tokens: list[bytes]) -> np.ndarray:
    """Finite numbers as Arrow reads them (no ``_``); :class:`Declined` otherwise."""
    try:
        values = np.fromiter(map(float, tokens), np.float64, len(tokens))
    except ValueError:
        raise Declined from None
    if b"_" in b"".join(tokens) or not np.isfinite(values).all():
        raise Declined
    return values


def _codes(tokens: list[bytes], table: dict, dtype=np.int64) -> np.ndarray:
    """``[tokens]`` each token's code in ``table``, new tokens numbered on by first appearance."""
    if not table:
        table.update(zip(dict.fromkeys(tokens), itertools.count()))
    for token in dict.fromkeys(tokens):
        if token not in table:
            table[token] = len(table)
    return np.fromiter(map(table.__getitem__, tokens), dtype, len(tokens))


def _repeats(*codes: np.ndarray) -> bool:
    """Whether two rows of the non-negative integer ``codes`` are equal."""
    key = np.zeros(len(codes[0]), np.int64)
    for column in codes:
        span = int(column.max(initial=0)) + 1
        if int(key.max(initial=0)) >= 2**62 // span:
            raise Declined
        key = key * span + column
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
    read it otherwise than this pass (then it reads it). Only the relevant lines' docnos are kept."""
    qids, parts, docs = {}, [], []
    for tokens in _blocks(path, 4):
        grade = _integers(tokens[3::4], -128, 127)
        docs += itertools.compress(tokens[2::4], (grade > 0).tolist())
        parts.append((_codes(tokens[0::4], qids), _integers(tokens[1::4], 0, INT32 - 1), grade,
                      np.fromiter(map(hash, tokens[2::4]), np.int64, len(tokens) // 4)))
    _plain_ids(qids)
    topic, sid, grade, docno_hash = (np.concatenate(column) for column in zip(*parts))
    if _repeats(topic, sid, distinct(docno_hash)[1]):
        raise Declined                                  # a (qid, subtopic, docno) judged twice (or two hashes alike)
    relevant = grade > 0
    sids = distinct(sid[relevant])[0]
    by_text = np.argsort(np.array([str(s) for s in sids.tolist()]), kind="stable")   # as text, as read_qrels keeps them
    sid_code = np.empty(len(sids), np.int64)
    sid_code[by_text] = np.arange(len(sids))
    doc = _codes(docs, {})
    docnos = np.array(list(dict.fromkeys(docs))) if docs else np.zeros(0, "S1")     # the relevant ones, by code
    by_bytes = np.argsort(docnos, kind="stable")
    doc_code = np.empty(len(docnos), np.int64)
    doc_code[by_bytes] = np.arange(len(docnos))
    return coded_labels([q.decode() for q in qids], topic[relevant], sid_code[np.searchsorted(sids, sid[relevant])],
                        doc_code[doc], [d.decode() for d in docnos[by_bytes].tolist()])


class Coded(NamedTuple):
    """A run in ndeval's order, coded for :meth:`DiversityEvaluator.values`; every array ``[rows]``."""

    topic: np.ndarray    # index in the evaluator's qids, -1 for a topic without judgments
    doc: np.ndarray      # index in the evaluator's docnos, -1 for a document relevant to nothing
    rank: np.ndarray     # rank from 1 within the topic
    tied: int            # judged topics where equal scores lie next to each other in that order


def quick_run(path: Path, evaluator: DiversityEvaluator, by_score: bool, ties: str) -> Coded:
    """A TREC run file (``qid Q0 docno rank score tag``) coded and ordered as :func:`srdiv.metrics.runs.rank_run`
    orders it (by rank; ``by_score``: by score, equal scores by docno as ``ties`` says), with its checks;
    :class:`Declined` where it would refuse the file or read it otherwise than this pass."""
    qids = {q.encode(): i for i, q in enumerate(evaluator.qids)}
    relevant = {d.encode(): i for i, d in enumerate(evaluator.docnos)}
    topics, parts = {}, []
    for tokens in _blocks(path, 6):
        docnos = tokens[2::6]
        parts.append((_codes(tokens[0::6], topics, np.int32), np.fromiter(map(hash, docnos), np.int64, len(docnos)),
                      np.fromiter(map(relevant.get, docnos, itertools.repeat(-1)), np.int32, len(docnos)),
                      _integers(tokens[3::6], -INT32, INT32 - 1).astype(np.int32), _floats(tokens[4::6]),
                      np.array(docnos) if by_score else np.zeros(len(docnos), "S1")))   # docnos order ties
    _plain_ids(topics)
    columns = [list(column) for column in zip(*parts)]
    del parts
    run_topic, docno_hash, doc, rank, score, docno = (np.concatenate(columns.pop(0)) for _ in range(6))
    docno_hash *= MIX                                   # (qid, docno) as one number, wrapping around
    docno_hash += run_topic
    docno_hash.sort()
    if (docno_hash[1:] == docno_hash[:-1]).any():
        raise Declined                                  # a docno twice for a qid (or two pairs alike)
    del docno_hash
    topic = np.array([qids.get(q, -1) for q in topics], np.int32)[run_topic]
    order = np.lexsort((-score, run_topic) if by_score else (rank, run_topic))
    in_order = run_topic[order]
    same_topic = in_order[1:] == in_order[:-1]
    if not by_score:
        in_order = rank[order]
        if (same_topic & (in_order[1:] == in_order[:-1])).any():
            raise Declined                              # a rank twice for a qid
    in_order = score[order]
    tied = same_topic & (in_order[1:] == in_order[:-1])
    del in_order
    if by_score and tied.any():                         # equal scores by docno, in byte order
        within = np.zeros(len(order), bool)
        within[1:] |= tied
        within[:-1] |= tied
        rows = order[within]
        key = np.zeros(len(order), np.int64)
        key[rows[np.argsort(docno[rows], kind="stable")]] = np.arange(1, len(rows) + 1)
        order = np.lexsort((key if ties == "pyndeval" else -key, -score, run_topic))
    starts = np.flatnonzero(np.r_[True, ~same_topic])   # each topic's first row in the order
    within_topic = np.arange(1, len(order) + 1)
    within_topic -= np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    ranks = np.empty(len(order), np.int64)
    ranks[order] = within_topic
    del within_topic
    tied_topic = topic[order[1:][tied]]
    tied_topics = len(distinct(tied_topic[tied_topic >= 0])[0])
    return Coded(topic, doc, ranks, tied_topics)


def full_run(path: Path, evaluator: DiversityEvaluator, by_score: bool, ties: str) -> Coded:
    """:func:`quick_run`'s result by :mod:`srdiv.metrics.runs` (any layout ndeval reads, and Parquet run
    tables); errors name the file and line."""
    from srdiv.metrics.runs import load_run, rank_run

    run = load_run(path, by_score)
    ranking = rank_run(run, path, None, ties)
    topic, doc = evaluator.codes(ranking)
    tied = 0
    if "score" in run:
        score, order = run["score"].to_numpy(np.float64)[ranking.order], ranking.order
        same = (ranking.topic[order][1:] == ranking.topic[order][:-1]) & (score[1:] == score[:-1])
        tied = len(distinct(topic[order][1:][same & (topic[order][1:] >= 0)])[0])
    return Coded(topic, doc, ranking.rank, tied)


class Result(NamedTuple):
    """Per-query values of one run: ``values [topics, measures]``, topics as ``qids`` (the judged ones,
    in qrels order), measures as ``measures`` (ir_measures' names, in the order asked)."""

    qids: list[str]
    measures: list[str]
    values: np.ndarray
    tied: int


def evaluate_files(qrels: Path, run: Path, measures: list[Measure], by_score: bool = False,
                   ties: str = "ndeval") -> Result:
    """The per-query values of ``measures`` of a run file (TREC, or a Parquet run table) against a TREC
    diversity qrels file; one evaluator per (α, β) among the measures."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    try:
        labels = quick_qrels(qrels)
    except Declined:
        from srdiv.metrics.evaluate import qrels_labels
        from srdiv.metrics.runs import read_qrels

        labels = qrels_labels(read_qrels(qrels))
        labels = labels._replace(docnos=labels.docnos.to_pylist())
    groups: dict[tuple[float, float], list[Measure]] = {}
    for measure in measures:
        groups.setdefault((measure.alpha, measure.beta), []).append(measure)
    values, tied = {}, 0
    for (alpha, beta), group in groups.items():
        evaluator = DiversityEvaluator(labels, list(dict.fromkeys(m.base for m in group)), alpha, beta)
        try:
            coded = quick_run(run, evaluator, by_score, ties) if run.suffix != ".parquet" else None
        except Declined:
            coded = None
        if coded is None:
            coded = full_run(run, evaluator, by_score, ties)
        table = evaluator.values(coded.topic, coded.doc, coded.rank)
        tied = coded.tied
        for measure in group:
            values[measure.name] = table[:, evaluator.measures.index(measure.base)]
    names = list(dict.fromkeys(m.name for m in measures))
    return Result(labels.qids, names, np.stack([values[n] for n in names], axis=1), tied)


def tie_note(tied: int, by_score: bool, ties: str) -> str | None:
    """The line telling the user that equal scores were ordered, and by which rule (None without any)."""
    if not tied:
        return None
    topics = f"{tied} topic{'s' if tied > 1 else ''}"
    if not by_score:
        return (f"note: equal scores in {topics} were ordered by the run's ranks (ndeval's default); ir_measures "
                f"orders them by docno ascending (--by-score --ties pyndeval)")
    other = "" if ties == "pyndeval" else "; ir_measures orders them by docno ascending (--ties pyndeval)"
    return f"note: equal scores in {topics} were ordered by {TIES[ties]} (--ties {ties}){other}"


def number(value: float, places: int) -> str:
    """A value as trec_eval prints it (``places`` decimals), or every digit (``places`` < 0)."""
    return repr(float(value)) if places < 0 else f"{value:.{places}f}"


def lines(result: Result, per_query: bool, places: int = 4) -> list[str]:
    """trec_eval's lines ``measure<TAB>qid<TAB>value``: with ``per_query`` each topic's (topics in qrels
    order, measures in the order asked), then the means over the judged topics (qid ``all``)."""
    out = []
    if per_query:
        for qid, row in zip(result.qids, result.values):
            out += [f"{m}\t{qid}\t{number(v, places)}" for m, v in zip(result.measures, row)]
    means = result.values.mean(axis=0) if len(result.qids) else np.zeros(len(result.measures))
    return out + [f"{m}\tall\t{number(v, places)}" for m, v in zip(result.measures, means)]


def is_stream(path: Path) -> bool:
    """Whether ``path`` is an existing device or pipe (``/dev/stdout``), written as it is, in TSV."""
    return path.exists() and not (path.is_file() or path.is_dir())


def is_stdout(path: Path) -> bool:
    """Whether ``path`` is this process's standard output (``/dev/stdout``, ``/dev/fd/1``)."""
    try:
        here, there = os.stat(path), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def out_format(path: Path) -> str:
    """``--out``'s format: its extension (:data:`OUT_FORMATS`), TSV for a device or pipe; InputError otherwise."""
    from srdiv.io import InputError

    if is_stream(path):
        return ".tsv"
    if path.suffix not in OUT_FORMATS:
        raise InputError(path, f"unknown output format '{path.suffix}': name the file .tsv, .parquet or .json")
    return path.suffix


def write_values(columns: dict[str, list], path: Path) -> None:
    """Long-form values (``run, qid, measure, value``) as ``path``'s format says: a TSV table with a header
    row, a JSON array of records, or Parquet; every digit kept; a file is written whole or not at all."""
    import json

    from srdiv.io import atomic_path

    kind = out_format(path)
    if kind == ".parquet":
        import pandas as pd

        from srdiv.io import write_parquet

        write_parquet(pd.DataFrame(columns), path)
        return
    rows = zip(*columns.values())
    if kind == ".json":
        text = "[\n" + ",\n".join(json.dumps(dict(zip(columns, row))) for row in rows) + "\n]\n"
    else:
        text = "".join("\t".join(map(str, row)) + "\n" for row in [columns, *rows])
    if is_stream(path):
        sys.stdout.flush()
        with open(path, "w") as stream:
            stream.write(text)
        return
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def long_form(result: Result, run_name: str) -> dict[str, list]:
    """``run, qid, measure, value`` columns of a :class:`Result`."""
    n_topics, n_measures = result.values.shape
    return {"run": [run_name] * result.values.size, "qid": [q for q in result.qids for _ in range(n_measures)],
            "measure": result.measures * n_topics, "value": result.values.ravel().tolist()}


def run_command(qrels: Path, run: Path, measures: list[str], per_query: bool = False, by_score: bool = False,
                ties: str = "ndeval", places: int = 4, out: Path | None = None) -> None:
    """``srdiv evaluate QRELS RUN [MEASURES...]``: trec_eval's lines on standard output (unless ``out`` is
    standard output itself), the tie note on standard error, ``out`` in its format (:func:`write_values`)."""
    problem = None
    if ties not in TIES:
        problem = ("--ties", f"'{ties}' is not one of {', '.join(TIES)}")
    elif ties != "ndeval" and not by_score:
        problem = ("--ties", "orders equal scores of a run ordered by score: add --by-score")
    try:
        parsed = [parse_measure(m) for m in measures or MEASURES]
    except ValueError as err:
        problem = problem or ("measure", str(err))
    problem = problem or next(((path, "file not found") for path in (qrels, run) if not path.is_file()), None)
    if problem or out is not None:
        from srdiv.io import InputError, check_output   # (here: its imports cost 10 ms of a 150 ms command)

        if problem:
            raise InputError(*problem)
        out_format(out)
        check_output(out, [qrels, run])
    result = evaluate_files(qrels, run, parsed, by_score, ties)
    if out is not None:
        write_values(long_form(result, run.stem), out)
    note = tie_note(result.tied, by_score, ties)
    if note:
        print(note, file=sys.stderr)
    if out is None or not is_stdout(out):
        sys.stdout.write("\n".join(lines(result, per_query, places)) + "\n")


def quick_parser() -> argparse.ArgumentParser:
    """The options of ``srdiv evaluate QRELS RUN [MEASURES...]`` (``srdiv evaluate --help`` describes them)."""
    parser = argparse.ArgumentParser(prog="srdiv evaluate", add_help=False, allow_abbrev=False, exit_on_error=False)
    parser.add_argument("files", nargs="*")
    parser.add_argument("-q", "--per-query", action="store_true")
    parser.add_argument("--by-score", action="store_true")
    parser.add_argument("--ties", default="ndeval")
    parser.add_argument("-p", "--places", type=int, default=4)
    parser.add_argument("--out", type=Path)
    return parser


def main(argv: list[str]) -> bool:
    """Run ``srdiv evaluate`` from ``argv`` (the words after ``evaluate``) when it is the plain form
    ``QRELS RUN [MEASURES...]`` with only :func:`quick_parser`'s options; False, doing nothing, for any
    other (the full command line, :mod:`srdiv.metrics.commands`, takes those). Bad input: one line, exit 2."""
    try:
        args, rest = quick_parser().parse_known_intermixed_args(argv)
    except (argparse.ArgumentError, SystemExit):
        return False
    if rest or len(args.files) < 2 or any(a.startswith("-") for a in args.files):
        return False
    qrels, run, *measures = args.files
    try:
        run_command(Path(qrels), Path(run), measures, args.per_query, args.by_score, args.ties, args.places, args.out)
    except Exception as err:
        from srdiv.io import InputError

        if not isinstance(err, InputError):
            raise
        line = f"error: {err}".encode("utf-8", "backslashreplace").decode("utf-8")
        print(" ".join(line.split()), file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:
        sys.stderr.close()
    return True
