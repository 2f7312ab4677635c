"""``srdiv collection import`` / ``export``: standard TREC-style files to a collection and back, every malformed
line one error naming the file and the line, nothing half-written."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import COMMITTED_COLLECTIONS as COMMITTED, FIXTURES, ROOT, cli
from srdiv.collection.schema import TABLES, load_collection
from srdiv.collection.trec_files import deal_folds, escape, unescape

MINI = FIXTURES / "trec-web-mini"


def import_args(d: Path, docs: bool = False) -> list:
    args = ["collection", "import", "--topics", d / "topics.tsv", "--subtopics", d / "subtopics.tsv",
            "--suggestions", d / "suggestions.tsv", "--qrels", d / "qrels.txt", "--run", d / "run.txt",
            "--folds", d / "folds.txt"]
    return args + (["--docs", d / "docs.parquet"] if docs else [])


def assert_same_collection(a, b):
    for name in TABLES:
        left, right = getattr(a, name), getattr(b, name)
        assert (left is None) == (right is None), name
        if left is not None:
            pd.testing.assert_frame_equal(left, right, obj=name)


@pytest.mark.parametrize("source", COMMITTED, ids=[p.name for p in COMMITTED])
def test_a_committed_collection_round_trips_through_trec_files(source, tmp_path, monkeypatch, capsys):
    """Exported to topics, subtopics, suggestions (TSV), qrels, run, folds and documents, then imported:
    identical tables."""
    code, err = cli(monkeypatch, capsys, "collection", "export", "--collection", source, "--out", tmp_path / "files")
    assert code == 0, err
    code, err = cli(monkeypatch, capsys, *import_args(tmp_path / "files", docs=True), "--out", tmp_path / "back")
    assert code == 0, err
    assert_same_collection(load_collection(source, with_docs=True), load_collection(tmp_path / "back", with_docs=True))


def test_a_collection_of_ones_own_in_data_collections_is_not_read_by_the_tests(tmp_path, monkeypatch, capsys):
    """A collection imported where the README puts it (``data/collections/<name>``, without documents, with a
    file of one's own that ends without a newline) beside the shipped ones: the tests that read collections
    collect the shipped two by name and pass. The repository's tests run in a copy whose ``data/`` links
    to the real one's folders."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "tests", copy / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy)
    (copy / "data" / "collections").mkdir(parents=True)
    (copy / "data" / "external").symlink_to(ROOT / "data" / "external")
    for shipped in COMMITTED:
        (copy / "data" / "collections" / shipped.name).symlink_to(shipped)
    mine = copy / "data" / "collections" / "my-task"
    for file, content in GOOD.items():
        (tmp_path / file).write_text(content)
    code, err = cli(monkeypatch, capsys, *import_args(tmp_path), "--out", mine)
    assert code == 0, err
    (mine / "notes.txt").write_text("my own notes, no newline at the end")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    tests = ["tests/test_collection_import.py::test_a_committed_collection_round_trips_through_trec_files",
             "tests/test_trec_web.py::test_vendored_text_files_end_with_a_newline"]
    # the round trip collects the shipped two only ("-k task" would select one for my-task: it deselects both),
    # and the newline check, which reads every shipped text file, passes beside my notes
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "newline or task",
                          *tests], cwd=copy, env=env, capture_output=True, text=True)
    assert ran.returncode == 0 and "1 passed, 2 deselected" in ran.stdout, ran.stdout[-3000:]


def test_the_named_collections_are_the_ones_the_repository_ships():
    """``COMMITTED_COLLECTIONS`` names every collection folder git tracks (a collection added to the
    repository is added there too)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "data/collections"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert sorted({Path(p).parts[2] for p in tracked}) == sorted(p.name for p in COMMITTED)


def test_the_web_track_files_import_as_the_web_track_builder_reads_them(tmp_path, monkeypatch, capsys):
    """Web Track topics XML (subtopics inside), suggestions XML, qrels and runs, a file per year, and k folds
    dealt at random: the tables the Web Track builder reads from the same files."""
    from srdiv.collection.trec_web import YEARS, build_trec_web

    years = [["--topics", MINI / "topics" / f"wt{y}.topics.xml", "--qrels", MINI / "qrels" / f"{y}.diversity.qrels",
              "--run", MINI / "runs" / f"wt{y}.txt"] for y in YEARS]
    code, err = cli(monkeypatch, capsys, "collection", "import", *sum(years, []), "--suggestions",
                    MINI / "query_suggestion.xml", "--k-folds", 2, "--seed", 5, "--out", tmp_path / "coll")
    assert code == 0, err
    mine, theirs = load_collection(tmp_path / "coll"), build_trec_web(MINI)[0]
    for name in ("topics", "subtopics", "suggestions", "qrels", "run"):
        pd.testing.assert_frame_equal(getattr(mine, name), load_collection_table(theirs, name), obj=name)
    judged = list(pd.unique(mine.qrels["qid"]))
    assert sorted(mine.folds["qid"]) == sorted(judged) and set(mine.folds["fold"]) == {1, 2}


def load_collection_table(coll, name):
    from srdiv.collection.schema import conform

    return conform(name, getattr(coll, name))


def test_folds_are_dealt_evenly_and_by_seed():
    judged = [str(i) for i in range(11)]
    folds = deal_folds(judged, 3, seed=1)
    assert list(folds["qid"]) == judged and sorted(np.bincount(folds["fold"])[1:]) == [3, 4, 4]
    assert folds.equals(deal_folds(judged, 3, seed=1)) and not folds.equals(deal_folds(judged, 3, seed=2))
    with pytest.raises(ValueError, match="between 2 and the number of judged topics"):
        deal_folds(judged, 12, seed=1)


def test_tsv_without_headers_assigns_suggestion_ids_and_reads_escapes(tmp_path, monkeypatch, capsys):
    d = tmp_path
    (d / "topics.tsv").write_text("7\tjaguar\tthe cat or the car\n8\tpython\n")
    (d / "subtopics.tsv").write_text("7\t1\tthe animal\n7\t2\tthe car\\tmaker\n8\t1\n")
    (d / "suggestions.tsv").write_text("7\t1\t\tjaguar cat\n7\t2\t1\tjaguar cat size\n7\t1\t\tjaguar xk\n"
                                       "7\t2\t2\tjaguar xk price\n7\t2\t1\tjaguar cat habitat\n")
    (d / "qrels.txt").write_text("7 1 d1 1\n7 2 d2 2\n8 1 d3 1\n7 1 d4 0\n")
    (d / "run.txt").write_text("7 Q0 d1 1 3.0 r\n7 Q0 d2 2 2.5 r\n8 Q0 d3 1 1.0 r\n")
    (d / "folds.txt").write_text("7 1\n8 2\n")
    code, err = cli(monkeypatch, capsys, *import_args(d), "--out", d / "coll")
    assert code == 0, err
    coll = load_collection(d / "coll")
    assert list(coll.topics["description"]) == ["the cat or the car", ""]
    assert coll.subtopics["text"].tolist() == ["the animal", "the car\tmaker", ""]
    sugg = coll.suggestions
    assert sugg["sugg_id"].tolist() == ["1", "1.1", "2", "2.1", "1.2"]
    assert sugg["parent"].tolist() == ["", "1", "", "2", "1"]
    assert sugg["weight"].tolist() == [0.5, 1 / 3, 0.5, 1 / 3, 1 / 3]
    assert coll.qrels["rel"].tolist() == [1, 1, 1, 0] and coll.qrels["grade"].tolist() == [1, 2, 1, 0]


def test_escapes_round_trip():
    for text in ["plain", "a\tb", "line\nbreak\r", "back\\slash", "\\t literally", "\\\\n"]:
        assert unescape(escape(text)) == text
    assert unescape("C:\\data") == "C:\\data"           # any other backslash stays


GOOD = {
    "topics.tsv": "qid\tquery\tdescription\n7\tjaguar\tcat or car\n8\tpython\t\n",
    "subtopics.tsv": "7\t1\tanimal\n7\t2\tcar\n8\t1\tsnake\n",
    "suggestions.tsv": "qid\tlevel\tparent\ttext\n7\t1\t\tjaguar cat\n7\t2\t1\tjaguar cat size\n",
    "qrels.txt": "7 1 d1 1\n7 2 d2 1\n8 1 d3 1\n",
    "run.txt": "7 Q0 d1 1 3.0 r\n7 Q0 d2 2 2.5 r\n8 Q0 d3 1 1.0 r\n",
    "folds.txt": "7 1\n8 2\n",
}


@pytest.mark.parametrize("name, text, where, why", [
    ("topics.tsv", "qid\tquery\n7\tjaguar\n7\tcar\n", "topics.tsv:3", "topic '7' appears twice"),
    ("topics.tsv", "qid\tquery\n7\t \n", "topics.tsv:2", "topic '7' has no query"),
    ("topics.tsv", "qid\tquery\tcolour\n7\tjaguar\tred\n", "topics.tsv:1", "header: columns must be qid, query"),
    ("topics.tsv", "7\n", "topics.tsv:1", "expected 2 to 4 tab-separated fields"),
    ("subtopics.tsv", "7\t1\tanimal\n9\t1\tx\n", "subtopics.tsv:2", "qid '9' is not a topic of the topics file"),
    ("subtopics.tsv", "7\t1\tanimal\n7\t1\tagain\n", "subtopics.tsv:2", "subtopic '1' of topic '7' appears twice"),
    ("subtopics.tsv", "7\t1\tanimal\n7\tb\tagain\n", "subtopics.tsv:2", "sid 'b' is not an integer"),
    ("subtopics.tsv", "7\t1\tanimal\n7\t01\tagain\n", "subtopics.tsv:2", "subtopic '1' of topic '7' appears twice"),
    ("topics.tsv", "qid\tquery\n7\tjaguar\n\tpython\n", "topics.tsv:3", "qid '' is empty or holds spaces"),
    ("suggestions.tsv", "7\t3\t\tjaguar\n", "suggestions.tsv:1", "level '3' is not an integer in [1, 2]"),
    ("suggestions.tsv", "7\t1\t\tjaguar cat\n7\t2\t5\tjaguar x\n", "suggestions.tsv:2",
     "parent '5' is not a level-1 suggestion of topic '7'"),
    ("suggestions.tsv", "7\t1\t2\tjaguar\n", "suggestions.tsv:1", "a level-1 suggestion has no parent"),
    ("suggestions.tsv", "7\t1\t\t \n", "suggestions.tsv:1", "empty suggestion text"),
    ("suggestions.tsv", "qid\tsugg_id\tlevel\tparent\ttext\tweight\n7\ta\t1\t\tjaguar\t-1\n", "suggestions.tsv:2",
     "weight -1.0 is negative"),
    ("qrels.txt", "7 1 d1 1\n7 1 d2\n", "qrels.txt:2", "expected 4 fields"),
    ("qrels.txt", "7 1 d1 1\n9 1 d2 1\n", "qrels.txt:2", "unknown topic"),
    ("qrels.txt", "7 1 d1 1\n7 3 d2 1\n", "qrels.txt:2", "judged relevant to subtopic '3' of topic '7', which the "
                                                         "subtopics lack"),
    ("run.txt", "7 Q0 d1 1 3.0 r\n9 Q0 d2 1 1.0 r\n", "run.txt:2", "qid '9' is not a topic"),
    ("run.txt", "7 Q0 d1 1 3.0 r\n7 Q0 d1 2 1.0 r\n", "run.txt:2", "docno 'd1' appears twice"),
    ("folds.txt", "7 1\n8 x\n", "folds.txt:2", "fold 'x' is not an integer"),
    ("folds.txt", "7 1\n7 2\n", "folds.txt:2", "topic '7' is listed twice"),
    ("folds.txt", "7 1\n9 2\n", "folds.txt:2", "qid '9' is not a topic"),
    # a header line is recognised (TSV: its first column named qid) or refused, never read as data
    ("topics.tsv", "topic\tquery\n7\tjaguar\n", "topics.tsv:1", "header line: its first column must be named qid"),
    ("qrels.txt", "qid sid docno grade\n7 1 d1 1\n", "qrels.txt:1", "a header line ('qid ...'): this format has none"),
    ("run.txt", "\ufeffquery_id Q0 docno rank score tag\n7 Q0 d1 1 3.0 r\n", "run.txt:1", "a header line"),
    ("folds.txt", "QID fold\n7 1\n", "folds.txt:1", "a header line"),
    # a number ndeval would read otherwise (atoi) is refused, not converted
    ("run.txt", "7 Q0 d1 1e0 3.0 r\n", "run.txt:1", "rank '1e0' is not an integer"),
    ("qrels.txt", "7 1 d1 1.0\n", "qrels.txt:1", "grade '1.0' is not an integer"),
    ("qrels.txt", "7 1e0 d1 1\n", "qrels.txt:1", "sid '1e0' is not an integer"),
    ("folds.txt", "7 1\n8 2.0\n", "folds.txt:2", "fold '2.0' is not an integer"),
    ("suggestions.tsv", "7\t1.0\t\tjaguar\n", "suggestions.tsv:1", "level '1.0' is not an integer"),
])
def test_a_malformed_line_is_one_error(tmp_path, monkeypatch, capsys, name, text, where, why):
    for file, content in GOOD.items():
        (tmp_path / file).write_text(text if file == name else content)
    code, err = cli(monkeypatch, capsys, *import_args(tmp_path), "--out", tmp_path / "coll")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and where in lines[0] and why in lines[0], err
    assert not (tmp_path / "coll").exists()


def test_the_good_files_import(tmp_path, monkeypatch, capsys):
    for file, content in GOOD.items():
        (tmp_path / file).write_text(content)
    code, err = cli(monkeypatch, capsys, *import_args(tmp_path), "--out", tmp_path / "coll")
    assert code == 0, err
    assert len(load_collection(tmp_path / "coll").qrels) == 3


def _import_good(d: Path, monkeypatch, capsys, change=lambda data: data, name: str = "coll"):
    for file, content in GOOD.items():
        (d / file).write_bytes(change(content.encode()))
    code, err = cli(monkeypatch, capsys, *import_args(d), "--out", d / name)
    assert code == 0, err
    return load_collection(d / name)


@pytest.mark.parametrize("change", [
    lambda data: b"\xef\xbb\xbf" + data,                     # a UTF-8 byte-order mark
    lambda data: data.replace(b"\n", b"\r\n"),                 # Windows line ends
    lambda data: data.replace(b"\n", b"\r"),                    # old Mac line ends
    lambda data: data.replace(b"\n", b" \t \n"),                # trailing blanks
    lambda data: data.replace(b"\n", b"\n\n  \n"),              # blank lines
], ids=["bom", "crlf", "cr", "trailing-blanks", "blank-lines"])
def test_every_text_file_reads_its_line_ends_and_blanks_one_way(tmp_path, monkeypatch, capsys, change):
    """A byte-order mark, CRLF or CR line ends, trailing blanks and blank lines: the same collection as the
    plain files give, from every TSV and whitespace-separated file alike (one reader: ``srdiv.io.text_bytes``)."""
    plain = _import_good(tmp_path, monkeypatch, capsys, name="plain")
    changed = _import_good(tmp_path, monkeypatch, capsys, change, name="changed")
    assert_same_collection(plain, changed)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_a_byte_that_is_not_utf8_names_file_line_and_byte(tmp_path, monkeypatch, capsys, name):
    for file, content in GOOD.items():
        data = content.encode()
        (tmp_path / file).write_bytes(data.replace(b"\n", b"\xff\n", 2).replace(b"\xff\n", b"\n", 1)
                                      if file == name else data)     # the 0xff ends the second line
    code, err = cli(monkeypatch, capsys, *import_args(tmp_path), "--out", tmp_path / "coll")
    offset = GOOD[name].encode().index(b"\n", GOOD[name].index("\n") + 1)
    assert code == 2 and err.strip() == f"error: {tmp_path / name}:2: not UTF-8 text (byte 0xff at byte offset {offset})"
    assert not (tmp_path / "coll").exists()


def test_topic_ids_are_normalised_alike_in_tsv_and_xml(tmp_path, monkeypatch, capsys):
    """``07``, ``007`` and ``7`` are one topic in every file, TSV or XML (ndeval reads topic numbers as
    integers); ids that are not all digits are kept as they are."""
    plain = _import_good(tmp_path, monkeypatch, capsys, name="plain")
    zeros = {"topics.tsv": [b"\n7\t", b"\n07\t"], "subtopics.tsv": [b"7\t2", b"007\t2"],
             "suggestions.tsv": [b"\n7\t2", b"\n07\t2"], "qrels.txt": [b"8 1", b"08 1"],
             "run.txt": [b"\n7 Q0 d2", b"\n0007 Q0 d2"], "folds.txt": [b"7 1", b"07 1"]}
    padded = _import_good(tmp_path, monkeypatch, capsys, name="padded",
                          change=lambda data: next((data.replace(*pair) for pair in zeros.values() if pair[0] in data),
                                                   data))
    assert_same_collection(plain, padded)
    (tmp_path / "topics.xml").write_text('<topics><topic number="07"><query>jaguar</query><description>cat or car'
                                         '</description><subtopic number="01">animal</subtopic><subtopic number="2">'
                                         'car</subtopic></topic><topic number="8"><query>python</query><subtopic '
                                         'number="1">snake</subtopic></topic></topics>')
    (tmp_path / "suggestions.xml").write_text('<topics><topic number="007"><subtopic1 number="1"><suggestion>'
                                              'jaguar cat</suggestion><subtopic2 number="1">jaguar cat size'
                                              '</subtopic2></subtopic1></topic></topics>')
    args = [a if a not in (tmp_path / "topics.tsv", tmp_path / "suggestions.tsv") else a.with_suffix(".xml")
            for a in import_args(tmp_path) if a not in ("--subtopics", tmp_path / "subtopics.tsv")]
    code, err = cli(monkeypatch, capsys, *args, "--out", tmp_path / "xml")
    assert code == 0, err
    xml = load_collection(tmp_path / "xml")
    assert list(xml.topics["qid"]) == ["7", "8"] and set(xml.suggestions["qid"]) == {"7"}
    assert list(xml.subtopics["sid"]) == ["1", "2", "1"]             # subtopic numbers too, as the qrels' are
    assert set(xml.qrels["qid"]) == set(plain.qrels["qid"]) and list(xml.folds["qid"]) == list(plain.folds["qid"])


def test_folds_are_a_file_or_a_number(tmp_path, monkeypatch, capsys):
    for file, content in GOOD.items():
        (tmp_path / file).write_text(content)
    both = import_args(tmp_path) + ["--k-folds", 2]
    neither = [a for a in import_args(tmp_path) if a not in ("--folds", tmp_path / "folds.txt")]
    for args in (both, neither):
        code, err = cli(monkeypatch, capsys, *args, "--out", tmp_path / "coll")
        assert code == 2 and "give --folds FILE or --k-folds K" in " ".join(err.split()), err
        assert not (tmp_path / "coll").exists()


def tree(d: Path) -> dict:
    """Every entry under ``d`` (links not followed): bytes of files, targets of links."""
    return {p.relative_to(d): (os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else None)
            for p in sorted(d.rglob("*"))}


def _imported(d: Path) -> list:
    for file, content in GOOD.items():
        (d / file).write_text(content)
    return import_args(d)


@pytest.mark.parametrize("name, make, foreign", [
    # a folder that merely looks like a collection: a file with one of its names, none recorded
    ("a file named as the marker", lambda d: (d / "coll").mkdir() or (d / "coll/topics.parquet").write_text("mine"),
     "coll/topics.parquet"),
    # a collection copied in (no record beside it) with the user's notes
    ("a copied collection with notes", lambda d: (shutil.copytree(d / "made", d / "coll"),
                                                  (d / "coll/notes.txt").write_text("mine")), "coll/folds.parquet"),
    # srdiv's own collection (recorded) with a file of the user's added, hidden or not
    ("notes added to srdiv's collection", lambda d: (d / "made/notes.txt").write_text("mine"), "made/notes.txt"),
    ("hidden notes in srdiv's collection", lambda d: (d / "made/.notes").write_text("mine"), "made/.notes"),
    ("a table of srdiv's collection edited", lambda d: (d / "made/topics.parquet").write_bytes(b"x"),
     "made/topics.parquet"),
])
def test_a_folder_is_replaced_only_when_the_record_lists_every_file(tmp_path, monkeypatch, capsys, name, make,
                                                                    foreign):
    """import and export replace an ``--out`` directory only when its manifest records every file in it
    with its digest; otherwise one line names the first foreign file and nothing is touched."""
    args = _imported(tmp_path)
    assert cli(monkeypatch, capsys, *args, "--out", tmp_path / "made")[0] == 0
    make(tmp_path)
    out = "made" if foreign.startswith("made/") else "coll"
    for command in (args, ["collection", "export", "--collection", tmp_path / "made" if out == "coll" else
                           tmp_path / "coll-src"]):
        if command[1] == "export" and out == "made":
            assert cli(monkeypatch, capsys, *args, "--out", tmp_path / "coll-src")[0] == 0
        before = tree(tmp_path)
        code, err = cli(monkeypatch, capsys, *command, "--out", tmp_path / out)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and f"{tmp_path / foreign}: " in lines[0], err
        assert "did not write this file" in lines[0] or "was changed since srdiv wrote it" in lines[0], err
        assert tree(tmp_path) == before


def test_srdivs_own_folder_is_replaced_even_with_a_file_removed(tmp_path, monkeypatch, capsys):
    """A recorded collection is replaced again; so is one that lost a file (Snakemake removes declared
    outputs), and an empty directory (nothing of the user's in it)."""
    args = _imported(tmp_path)
    for _ in range(2):
        assert cli(monkeypatch, capsys, *args, "--out", tmp_path / "coll")[0] == 0
    (tmp_path / "coll/run.parquet").unlink()
    assert cli(monkeypatch, capsys, *args, "--out", tmp_path / "coll")[0] == 0
    assert (tmp_path / "coll/run.parquet").is_file()
    (tmp_path / "empty").mkdir()
    assert cli(monkeypatch, capsys, "collection", "export", "--collection", tmp_path / "coll", "--out",
               tmp_path / "empty")[0] == 0


def test_a_symlinked_out_is_followed_never_replaced(tmp_path, monkeypatch, capsys):
    """``--out LINK`` to a directory writes into what the link points to; the link stays a link. A link
    to a folder of the user's is refused like that folder, one pointing nowhere or to a file too."""
    args = _imported(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for _ in range(2):
        code, err = cli(monkeypatch, capsys, *args, "--out", tmp_path / "link")
        assert code == 0, err
        assert (tmp_path / "link").is_symlink() and (tmp_path / "real/topics.parquet").is_file()
    (tmp_path / "real/notes.txt").write_text("mine")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "to-file").symlink_to(tmp_path / "topics.tsv")
    for out, where in (("link", "real/notes.txt"), ("dangling", "dangling"), ("to-file", "to-file")):
        before = tree(tmp_path)
        code, err = cli(monkeypatch, capsys, *args, "--out", tmp_path / out)
        assert code == 2 and len(err.strip().splitlines()) == 1 and str(tmp_path / where) in err, err
        assert tree(tmp_path) == before
