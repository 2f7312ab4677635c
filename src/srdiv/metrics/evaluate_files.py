"""``srdiv evaluate QRELS RUN [MEASURES...]``: a TREC diversity qrels file and a run file evaluated with numpy
alone, printed as trec_eval and ir_measures print.

The program starts this module without typer, pandas or pyarrow (:func:`srdiv.cli.launch.main` hands it the
command line, :func:`main`), so the command costs what numpy's import and the evaluation cost. The files
are read by numpy's quick pass (:mod:`srdiv.metrics.quick_read`); a file that pass declines is read by
:mod:`srdiv.metrics.runs` instead, which names the first bad line. Either way the same checks hold and the
values are those of :class:`srdiv.metrics.evaluate.DiversityEvaluator`, whatever the size of the run.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from srdiv.metrics.diversity import distinct
from srdiv.metrics.evaluate import MEASURES, DiversityEvaluator
from srdiv.metrics.names import TIES, Measure, parse_measure

if TYPE_CHECKING:
    import pyarrow as pa
from srdiv.metrics.quick_read import Coded, Declined, quick_qrels, quick_run

OUT_FORMATS = (".tsv", ".parquet", ".json")
"""``--out``'s formats, by the file's extension; a device or pipe (``/dev/stdout``) gets TSV."""


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
        arrow: pa.Array = labels.docnos    # qrels_labels gives them as Arrow text
        labels = labels._replace(docnos=arrow.to_pylist())
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
    problem: tuple[str | Path, str] | None = None
    if ties not in TIES:
        problem = ("--ties", f"'{ties}' is not one of {', '.join(TIES)}")
    elif ties != "ndeval" and not by_score:
        problem = ("--ties", "orders equal scores of a run ordered by score: add --by-score")
    try:
        parsed = [parse_measure(m) for m in measures or MEASURES]
    except ValueError as err:
        problem = problem or ("measure", str(err))
    problem = problem or next(((path, "file not found") for path in (qrels, run) if not path.is_file()), None)
    if problem:
        from srdiv.io import InputError  # (here: its imports cost 10 ms of a 150 ms command)

        raise InputError(*problem)
    if out is not None:
        from srdiv.io import check_output

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
    other (the full command line, :mod:`srdiv.cli.metrics`, takes those). Bad input: one line, exit 2."""
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
