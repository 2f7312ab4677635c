"""The leakage figures (srdiv.report.leakage) on hand-worked cases."""

import numpy as np
import pandas as pd
import pytest

from srdiv.collection.schema import Collection
from srdiv.report.leakage import (
    Strings,
    auc,
    docno_files,
    feature_auc,
    leakage_table,
    named_relevant,
    shared_sites,
    subtopic_matches,
    url_sites,
    xquad_run,
)


def test_auc_counts_ties_as_one_half():
    assert auc(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 0])) == 1.0
    assert auc(np.array([1.0, 2.0, 3.0]), np.array([1, 0, 0])) == 0.0
    assert auc(np.array([1.0, 1.0, 0.0, 2.0]), np.array([1, 0, 0, 1])) == pytest.approx((0.5 + 1 + 1 + 1) / 4)


def _coll() -> Collection:
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["bass", "jaguar"], "description": "", "type": ""})
    subtopics = pd.DataFrame({"qid": ["1", "1", "2"], "sid": ["1", "2", "1"],
                              "text": ["the fish", "a guitar with low strings", "a big cat"]})
    suggestions = pd.DataFrame({"qid": ["1", "1", "1", "2"], "sugg_id": ["1", "2", "1.1", "1"],
                                "level": [1, 1, 2, 1], "parent": ["", "", "1", ""],
                                "text": ["bass fishing", "bass guitar", "bass guitar amp", "jaguar car"],
                                "weight": 1.0})
    qrels = pd.DataFrame({"qid": ["1", "1", "2"], "sid": ["1", "2", "1"], "docno": ["a", "b", "x"],
                          "grade": 1, "rel": 1})
    run = pd.DataFrame({"qid": ["1", "1", "1", "2", "2"], "docno": ["a", "b", "c", "x", "y"],
                        "rank": [1, 2, 3, 1, 2], "score": 0.0})
    return Collection(topics, subtopics, suggestions, qrels, run, pd.DataFrame({"qid": ["1", "2"], "fold": [1, 2]}))


def test_subtopic_matches_against_own_and_next_query():
    figures = subtopic_matches(_coll())
    # own: "guitar" matches subtopic 1.2; "fishing" is not "fish" (no stemming of -ing); "car" is not "cat"
    assert figures["subtopics matched by a level-1 suggestion"] == pytest.approx(1 / 3)
    assert figures["level-1 suggestions matching a subtopic"] == pytest.approx(1 / 3)
    # chance: query 1's suggestions against query 2's subtopics and back: no word in common
    assert figures["subtopics matched by a level-1 suggestion (chance)"] == 0.0


def test_named_relevant_and_feature_auc():
    coll = _coll()
    cands = pd.DataFrame({"qid": ["1", "1", "1"], "docno": ["a", "b", "c"], "rel": [1, 1, 0]})
    feats = pd.DataFrame({"qid": "1", "sugg_id": ["1"] * 3 + ["2"] * 3 + ["1.1"] * 3 + [""] * 3,
                          "docno": ["a", "b", "c"] * 4,
                          "title-bm25": [0, 0, 0, 0, 1, 2, 0, 3, 1, 2, 1, 0.5]})
    figures = named_relevant(feats, Strings.of(coll), cands)
    # "bass fishing" names nothing (all 0), "bass guitar" names c (non-relevant): 0 of 2; "bass guitar amp" names b
    assert figures["level-1 suggestions naming a relevant candidate"] == 0.0
    assert figures["level-2 suggestions naming a relevant candidate"] == 1.0
    assert figures["relevant share of the candidates (chance)"] == pytest.approx(2 / 3)
    aucs = feature_auc(feats[feats["sugg_id"] == ""].drop(columns="sugg_id"), cands, ["title-bm25"])
    assert aucs == {"title-bm25": 1.0, "topics with both classes": 1}


def test_xquad_run_covers_a_second_aspect_before_a_second_relevant_document():
    coll = _coll()
    coll.subtopics = coll.subtopics[coll.subtopics["qid"] == "1"]
    cands = pd.DataFrame({"qid": "1", "docno": ["a", "b", "c"], "rank": [1, 2, 3]})
    strings = Strings.of(coll)
    # the query prefers a then c then b; aspect 1 is a's, aspect 2 is b's: xQuAD puts b second
    lmir = {"": [0.0, -3.0, -1.0], "subtopic:1": [0.0, -9.0, -9.0], "subtopic:2": [-9.0, 0.0, -9.0]}
    feats = pd.DataFrame([{"qid": "1", "sugg_id": s, "docno": d, "text-lmir": v}
                          for s, vals in lmir.items() for d, v in zip("abc", vals)])
    run = xquad_run(feats, strings, cands, "subtopic")
    assert run["docno"].tolist() == ["a", "b", "c"] and run["rank"].tolist() == [1, 2, 3]
    no_aspects = xquad_run(feats, strings, cands, "level2")   # no aspect of that kind: rank by the query
    assert no_aspects["docno"].tolist() == ["a", "c", "b"]


def test_leakage_table_leaves_unmeasured_cells_empty():
    table = leakage_table({"TREC": {"x": 0.5}, "open": {"x": 0.25, "n": 751.0}})
    assert table.splitlines()[2:] == ["| x | 0.500 | 0.250 |", "| n |  | 751 |"]


def test_site_units_from_urls_and_docnos():
    docs = pd.DataFrame({"docno": list("abcde"), "url": ["https://GitHub.com/x/y", "http://user@host.org:80/p",
                                                           "noun.animal/bass", "bass", ""]})
    assert url_sites(docs).to_dict() == {"a": "github.com", "b": "host.org", "c": "noun.animal", "d": "bass", "e": ""}
    assert docno_files(pd.Series(["clueweb09-en0003-55-31884", "clueweb09-enwp01-10-00001",
                                  "clueweb09-en0003-55-31884"])).to_dict() == {
        "clueweb09-en0003-55-31884": "clueweb09-en0003-55", "clueweb09-enwp01-10-00001": "clueweb09-enwp01-10"}


def test_shared_sites_counts_each_pair_of_subtopics_of_two_relevant_candidates():
    coll = _coll()
    # query 1: a (subtopics 1 and 2), b (1), c (2), d (2, ranked below the depth), e (not relevant)
    coll.qrels = pd.DataFrame({"qid": "1", "sid": ["1", "2", "1", "2", "2", "1"], "docno": list("aabcde"),
                               "grade": 1, "rel": [1, 1, 1, 1, 1, 0]})
    coll.run = pd.DataFrame({"qid": "1", "docno": list("abcde"), "rank": [1, 2, 3, 5, 4], "score": 0.0})
    sites = pd.Series({"a": "s", "b": "s", "c": "t", "d": "s", "e": "s"})
    # top 4: a, b, c, e. Pairs (docs, subtopics): a-b (1,1) same, shared; a-b (2,1) cross, shared;
    # a-c (1,2) cross, not; a-c (2,2) same, not; b-c (1,2) cross, not. d lies below the depth, e is not relevant.
    figures = shared_sites(coll, sites, depth=4)
    assert figures["same-subtopic relevant pairs sharing a site unit"] == pytest.approx(1 / 2)
    assert figures["cross-subtopic relevant pairs sharing a site unit"] == pytest.approx(1 / 3)
    # an empty unit is no site: nothing is shared
    figures = shared_sites(coll, pd.Series({"a": "", "b": "", "c": ""}), depth=4)
    assert figures["same-subtopic relevant pairs sharing a site unit"] == 0.0
