"""wordnet-div: the WordNet reader, the build rules on a hand-made database, and the shipped copy."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from srdiv.cli.main import main
from srdiv.collection.schema import TABLES, conform, load_collection
from srdiv.collection.wordnet import (
    DEFAULT_WORDNET_DIR,
    WordnetDivConfig,
    build_wordnet_div,
    sample_and_fold,
)
from srdiv.collection.wordnet_card import ORACLE_FILE, data_card
from srdiv.collection.wordnet_files import read_wordnet
from srdiv.io import InputError
from srdiv.params import load_params
from helpers import FIXTURES, ROOT

MINI = FIXTURES / "wordnet-mini"
SHIPPED = ROOT / "data" / "collections" / "wordnet-div"

# The mini database (tests/fixtures/wordnet-mini): "bass" has three noun senses
#   S1 10000001 noun.animal   ~ sea_bass ~ striped_bass (depth 2); @ fish
#   S2 10000003 noun.artifact ~ bass_fiddle %p fingerboard (depth 2)
#   S3 10000005 noun.communication (bass, basso) ~ basso_profundo
# plus fish and drum (mention "bass" without being under a sense), the verb
# fiddle (pointed to by bass_fiddle) and the adjective bass(a) (an own entry).


@pytest.fixture(scope="module")
def mini():
    return build_wordnet_div(MINI, WordnetDivConfig())


def test_reader_parses_words_markers_pointers_and_senses():
    wn = read_wordnet(MINI)
    assert len(wn.synsets) == 12
    syn = wn.synsets.set_index(wn.synsets["pos"] + ":" + wn.synsets["offset"])
    assert syn.loc["n:10000004", "lemmas"] == ["bass_fiddle", "double_bass"]
    assert syn.loc["a:30000001", "lemmas"] == ["bass"]  # "(a)" marker removed
    assert syn.loc["v:20000001", "gloss"] == "play the fiddle"  # verb frames skipped
    assert syn.loc["n:10000002", "gloss"] == 'marine fish; "grilled sea bass"'
    fiddle = wn.pointers[wn.pointers["src"] == syn.index.get_loc("n:10000004")]
    assert fiddle["symbol"].tolist() == ["@", "%p", "+"]
    assert fiddle["dst"].tolist() == [syn.index.get_loc(k) for k in ("n:10000003", "n:10000008", "v:20000001")]
    assert [syn.index[i] for i in wn.noun_senses["bass"]] == ["n:10000001", "n:10000003", "n:10000005"]


def test_reader_names_the_missing_file(tmp_path):
    with pytest.raises(InputError, match="data.noun"):
        read_wordnet(tmp_path)


def test_documents_fields_and_graph(mini):
    docs = mini.docs.set_index("docno")
    fiddle = docs.loc["wn-n-10000004"]
    assert fiddle["title"] == "bass fiddle, double bass"
    assert fiddle["body"] == "largest bowed stringed instrument"
    assert fiddle["url"] == "bass_fiddle"   # no lexicographer file (noun.artifact)
    # Links come from glosses naming a noun lemma (its first sense), never from pointers:
    # S1, sea bass and striped bass name "fish"; sea bass ("grilled sea bass": sea_bass is not in
    # the mini index.noun), basso profundo ("deep bass voice") and drum ("the bass drum") name
    # "bass", whose first sense is S1. The pointers (sense -> hyponym, fiddle -> fingerboard) give none.
    assert docs.loc["wn-n-10000010", "inlinks"] == 3
    assert set(docs.loc["wn-n-10000010", "anchor"].split("; ")) == {"bass", "sea bass", "striped bass"}
    assert set(docs.loc["wn-n-10000001", "anchor"].split("; ")) == {"sea bass", "basso profundo", "drum"}
    assert (fiddle["anchor"], fiddle["inlinks"], fiddle["outlinks"]) == ("", 0, 0)
    assert docs.loc["wn-n-10000002", "outlinks"] == 2
    assert docs["inlinks"].sum() == docs["outlinks"].sum() == 6
    assert docs.loc["wn-a-30000001", "url"] == "bass"
    assert not docs["url"].str.contains("/").any()   # no lexicographer file: relevant senses share theirs
    assert docs["pagerank"].sum() == pytest.approx(1.0)
    assert docs["pagerank"].idxmax() == "wn-n-10000010"   # fish: three links in, one of them from S1


def test_links_and_suggestions_ignore_the_relevance_structure():
    """Shuffling every pointer (so every sense subtree, every judgment) leaves docs and suggestions unchanged."""
    from dataclasses import replace

    from srdiv.collection.wordnet import build_docs

    wn = read_wordnet(MINI)
    rng = np.random.default_rng(0)
    shuffled = replace(wn, pointers=wn.pointers.assign(dst=rng.permutation(wn.pointers["dst"].to_numpy())))
    cfg = WordnetDivConfig(suggestion_min_docs=1)
    pd.testing.assert_frame_equal(build_docs(shuffled, cfg), build_docs(wn, cfg))
    built, other = build_wordnet_div(wn, cfg), build_wordnet_div(shuffled, replace(cfg, min_subtopics=1))
    assert not other.qrels.equals(built.qrels)
    pd.testing.assert_frame_equal(other.suggestions, built.suggestions)


def test_run_pool_relevance_and_subtopics(mini):
    assert mini.topics.to_dict("records") == [
        {"qid": "1", "query": "bass", "description": "WordNet noun 'bass'", "type": "ambiguous"}]
    assert mini.subtopics["sid"].tolist() == ["1", "2", "3"]
    assert mini.subtopics["text"].tolist()[0] == "edible spiny-finned fish"
    # hits: every document holding "bass" in title, body, anchor or url, except the
    # own entries S1, S2, S3 and the adjective; fish matches through its anchor
    assert set(mini.run["docno"]) == {f"wn-n-1000000{i}" for i in (2, 4, 6, 7)} | {"wn-n-10000010", "wn-n-10000011"}
    assert mini.run["rank"].tolist() == list(range(1, 7))
    assert (np.diff(mini.run["score"]) <= 0).all()
    # basso profundo and drum tie (one "bass" in texts of the same length): lower synset index first
    assert mini.run["docno"].tolist()[-2:] == ["wn-n-10000006", "wn-n-10000011"]
    assert len(mini.qrels) == 3 * 6
    relevant = mini.qrels[mini.qrels["rel"] == 1].groupby("sid")["docno"].apply(sorted).to_dict()
    assert relevant == {"1": ["wn-n-10000002", "wn-n-10000007"],   # depth 1 and 2 hyponyms
                        "2": ["wn-n-10000004"],                    # hyponym (its part meronym is not pooled)
                        "3": ["wn-n-10000006"]}
    assert (mini.qrels["grade"] == mini.qrels["rel"]).all()


def test_fewer_official_subtopics_drops_the_query():
    coll = build_wordnet_div(MINI, WordnetDivConfig(relevance_depth=1, max_subtopics=2))
    assert coll.topics.empty and coll.qrels.empty and coll.suggestions.empty


def test_suggestions():
    coll = build_wordnet_div(MINI, WordnetDivConfig(suggestion_min_docs=1))
    sugg = coll.suggestions
    level1 = sugg[sugg["level"] == 1]
    # Two-word phrases with "bass" within one segment of a title or gloss, each held by one
    # document, so alphabetical: "bass, basso" is two segments, "the bass" has a stopword.
    assert level1["text"].tolist() == [
        "bass drum", "bass fiddle", "bass voice", "deep bass", "double bass", "sea bass", "striped bass"]
    assert level1["sugg_id"].tolist() == [str(i) for i in range(1, 8)]
    assert (level1["parent"] == "").all() and (sugg["weight"] == 1.0).all()
    level2 = sugg[sugg["level"] == 2]
    assert level2.groupby("parent")["text"].apply(list).to_dict() == {
        "3": ["deep bass voice"], "4": ["deep bass voice"], "6": ["grilled sea bass"]}  # "very" is a stopword
    assert level2["sugg_id"].tolist() == ["3.1", "4.1", "6.1"]
    # the popularity floor: no phrase is in two documents
    assert build_wordnet_div(MINI, WordnetDivConfig()).suggestions.empty


def test_oracle_aspects_read_the_sense_structure(mini):
    from srdiv.collection.wordnet_oracle import oracle_suggestions

    oracle = oracle_suggestions(read_wordnet(MINI), mini, WordnetDivConfig())
    level1 = oracle[oracle["level"] == 1]
    # Senses take turns (S1, S2, S3, S1, ...). S3's profile: "bass, basso" + its gloss +
    # basso_profundo's title and gloss = 12 tokens; basso and voice (2/12, in no other
    # profile, df 2) tie and go alphabetically; then adult (1/12, df 1).
    assert level1["text"].tolist() == [
        "bass sea", "bass stringed", "bass basso", "bass fish", "bass instrument", "bass voice",
        "bass marine", "bass bowed", "bass adult", "bass atlantic"]
    by_parent = oracle[oracle["level"] == 2].groupby("parent")["text"].apply(list).to_dict()
    assert by_parent["1"] == ["bass sea striped"]  # "sea bass" minus words already there; then striped bass
    assert by_parent["3"] == ["bass basso profundo"]
    assert by_parent["4"] == ["bass fish sea", "bass fish striped"]  # nearest hyponym first


def test_sample_and_fold_is_seeded_and_balanced():
    chosen, fold = sample_and_fold(20, WordnetDivConfig(max_queries=12, seed=3))
    assert len(chosen) == 12 and (np.diff(chosen) > 0).all() and chosen.max() < 20
    assert sorted(np.bincount(fold)[1:]) == [2, 2, 2, 3, 3]
    again = sample_and_fold(20, WordnetDivConfig(max_queries=12, seed=3))
    other = sample_and_fold(20, WordnetDivConfig(max_queries=12, seed=4))
    assert np.array_equal(chosen, again[0]) and np.array_equal(fold, again[1])
    assert not np.array_equal(chosen, other[0])
    all_of, _ = sample_and_fold(7, WordnetDivConfig())
    assert all_of.tolist() == list(range(7))


def test_config_from_params():
    cfg = WordnetDivConfig.from_params(
        {"collections": {"wordnet-div": {"max_queries": 12, "run_fields": ["title", "body"]}}})
    assert cfg.max_queries == 12 and cfg.run_fields == ("title", "body") and cfg.mu == 2000.0
    assert WordnetDivConfig.from_params({}) == WordnetDivConfig()
    with pytest.raises(InputError, match="unknown keys"):
        WordnetDivConfig.from_params({"collections": {"wordnet-div": {"max_query": 12}}})
    with pytest.raises(InputError, match="run_fields"):
        WordnetDivConfig.from_params({"collections": {"wordnet-div": {"run_fields": ["text"]}}})


def test_cli_builds_with_params_and_card(tmp_path, monkeypatch, capsys):
    params = tmp_path / "params.yaml"
    params.write_text("collections:\n  wordnet-div:\n    n_folds: 2\n    suggestions: 4\n")
    monkeypatch.setattr(sys, "argv", ["srdiv", "collection", "wordnet-div", "--wordnet-dir", str(MINI),
                                      "--out", str(tmp_path / "coll"), "--params", str(params)])
    main()
    assert "1 queries, 3 subtopics, 12 documents" in capsys.readouterr().out
    coll = load_collection(tmp_path / "coll", with_docs=True)
    assert (coll.suggestions["level"] == 1).sum() == 0   # the popularity floor of 2 documents
    assert (conform("suggestions", pd.read_parquet(tmp_path / "coll" / ORACLE_FILE))["level"] == 1).sum() == 4
    card = (tmp_path / "coll" / "README.md").read_text()
    assert "| `n_folds` | `2` |" in card and "| queries | 1 |" in card and "WordNet 3.0 Copyright 2006" in card


def test_with_suggestions_swaps_only_the_suggestions(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["srdiv", "collection", "wordnet-div", "--wordnet-dir", str(MINI),
                                      "--out", str(tmp_path / "coll")])
    main()
    oracle = tmp_path / "coll" / ORACLE_FILE
    monkeypatch.setattr(sys, "argv", ["srdiv", "collection", "with-suggestions", "--source", str(tmp_path / "coll"),
                                      "--suggestions", str(oracle), "--out", str(tmp_path / "oracle")])
    main()
    before, after = (load_collection(tmp_path / d, with_docs=True) for d in ("coll", "oracle"))
    pd.testing.assert_frame_equal(after.suggestions, conform("suggestions", pd.read_parquet(oracle)))
    for name in set(TABLES) - {"suggestions"}:
        pd.testing.assert_frame_equal(getattr(after, name), getattr(before, name))
    stray = pd.read_parquet(oracle).assign(qid="99")
    stray.to_parquet(tmp_path / "stray.parquet")
    monkeypatch.setattr(sys, "argv", ["srdiv", "collection", "with-suggestions", "--source", str(tmp_path / "coll"),
                                      "--suggestions", str(tmp_path / "stray.parquet"), "--out", str(tmp_path / "bad")])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2 and "'99'" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_cli_missing_wordnet_exits_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "wordnet").mkdir()
    monkeypatch.setattr(sys, "argv", ["srdiv", "collection", "wordnet-div", "--wordnet-dir", str(tmp_path / "wordnet"),
                                      "--out", str(tmp_path / "coll")])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2 and "data.noun" in capsys.readouterr().err
    assert not (tmp_path / "coll").exists()


# ------------------------------------------------------------- the shipped copy
def _shipped_config() -> WordnetDivConfig:
    params = ROOT / "params.yaml"
    return WordnetDivConfig.from_params(load_params(params) if params.exists() else {})


@pytest.fixture(scope="module")
def shipped():
    return load_collection(SHIPPED, with_docs=True)


def test_data_card_matches_the_shipped_tables(shipped):
    assert data_card(shipped, _shipped_config()) == (SHIPPED / "README.md").read_text()


def test_shipped_copy_is_consistent(shipped):
    assert set(shipped.folds["fold"]) == {1, 2, 3, 4, 5}
    assert set(shipped.qrels["docno"]) <= set(shipped.docs["docno"])
    pooled = shipped.run[["qid", "docno"]].merge(shipped.subtopics[["qid", "sid"]])
    judged = shipped.qrels[["qid", "sid", "docno"]]
    assert len(pooled) == len(judged) == len(pooled.merge(judged))  # every (subtopic, pooled doc) judged once
    assert shipped.qrels.groupby(["qid", "sid"])["rel"].max().min() == 1
    assert shipped.subtopics.groupby("qid").size().between(3, 8).all()
    level1 = shipped.suggestions[shipped.suggestions["level"] == 1]
    assert level1.groupby("qid").size().max() <= 10
    query = level1["qid"].map(shipped.topics.set_index("qid")["query"])
    assert all(q in text.split() for q, text in zip(query, level1["text"]))
    oracle = conform("suggestions", pd.read_parquet(SHIPPED / ORACLE_FILE))
    assert set(oracle["qid"]) <= set(shipped.qids) and (oracle["level"] == 1).sum() == 10 * len(shipped.topics)
    assert sum(p.stat().st_size for p in SHIPPED.iterdir()) < 30e6


@pytest.mark.slow  # about 20 s of CPU: the whole build
@pytest.mark.skipif(not (DEFAULT_WORDNET_DIR / "data.noun").exists(),
                    reason=f"WordNet 3.0 not installed at {DEFAULT_WORDNET_DIR} (Debian package wordnet-base)")
def test_rebuild_equals_the_shipped_copy(shipped):
    built = build_wordnet_div(DEFAULT_WORDNET_DIR, _shipped_config())
    for name in TABLES:
        pd.testing.assert_frame_equal(conform(name, getattr(built, name)), getattr(shipped, name),
                                      check_exact=False, rtol=1e-12, obj=name)
