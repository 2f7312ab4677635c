"""Text analysis and the sparse field index, checked against hand-computed scores."""

from math import log

import numpy as np
import pytest

from srdiv.index.analysis import s_stem, tokenize, tokenize_many
from srdiv.index.sparse import FieldIndex

# Three documents: lengths 3, 2, 4; N = 3; df: apple 1, banana 2, cherry 2, date 1;
# collection counts: apple 2, banana 2, cherry 4, date 1 (9 tokens).
DOCS = ["Apple banana apples", "the banana and a cherry", "Cherries, cherry; CHERRY date"]


def test_tokenize_lowercases_splits_drops_stopwords_and_stems():
    assert tokenize("The Bass_fiddle's strings (2 of them)!") == ["bass", "fiddle", "string"]
    assert tokenize_many(["ponies", "", "glass bases"]) == [["pony"], [], ["glass", "base"]]


@pytest.mark.parametrize(
    "word, stem",
    [("ponies", "pony"), ("bees", "bee"), ("bases", "base"), ("toes", "toe"),
     ("cats", "cat"), ("glass", "glass"), ("virus", "virus"), ("bass", "bass")],
)
def test_s_stemmer_rules(word, stem):
    assert s_stem(word) == stem


@pytest.fixture(scope="module")
def index():
    return FieldIndex.from_texts(DOCS, k1=1.2, b=0.75, mu=2.0)


def test_index_counts(index):
    assert index.n_docs == 3
    assert index.terms == ["apple", "banana", "cherry", "date"]
    assert index.doc_len.tolist() == [3, 2, 4]
    assert index.df.tolist() == [1, 2, 2, 1]


def test_tfidf_by_hand(index):
    got = index.score(["apple cherry"], "tfidf")
    want = [2 * log(3 / 1), 1 * log(3 / 2), 3 * log(3 / 2)]
    np.testing.assert_allclose(got, [want])


def test_bm25_by_hand(index):
    idf_apple, idf_cherry = log(1 + 2.5 / 1.5), log(1 + 1.5 / 2.5)
    avgdl = 3.0

    def part(tf, dl):
        return tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    want = [idf_apple * part(2, 3), idf_cherry * part(1, 2), idf_cherry * part(3, 4)]
    np.testing.assert_allclose(index.score(["apple cherry"], "bm25"), [want])


def test_lmir_by_hand_including_docs_without_query_terms(index):
    mu, p_apple, p_cherry, p_date = 2.0, 2 / 9, 4 / 9, 1 / 9
    want_ac = [
        log((2 + mu * p_apple) / (3 + mu)) + log((0 + mu * p_cherry) / (3 + mu)),
        log((0 + mu * p_apple) / (2 + mu)) + log((1 + mu * p_cherry) / (2 + mu)),
        log((0 + mu * p_apple) / (4 + mu)) + log((3 + mu * p_cherry) / (4 + mu)),
    ]
    want_date = [log(mu * p_date / (3 + mu)), log(mu * p_date / (2 + mu)), log((1 + mu * p_date) / (4 + mu))]
    np.testing.assert_allclose(index.score(["apple cherry", "date"], "lmir"), [want_ac, want_date])


def test_repeated_and_unknown_query_terms(index):
    # a repeated term counts twice; "zebra" occurs nowhere and is dropped
    np.testing.assert_allclose(
        index.score(["cherry cherry zebra"], "lmir"), 2 * index.score(["cherry"], "lmir")
    )
    assert index.score(["zebra"], "bm25").tolist() == [[0.0, 0.0, 0.0]]


@pytest.mark.parametrize("model", ["bm25", "tfidf", "lmir"])
def test_score_on_doc_subsets_matches_full_scores_and_pads_with_zero(index, model):
    queries = ["apple cherry", "banana date"]
    full = index.score(queries, model)
    doc_idx = np.array([[2, 0, -1], [1, -1, -1]])
    got = index.score(queries, model, doc_idx)
    want = np.array([[full[0, 2], full[0, 0], 0.0], [full[1, 1], 0.0, 0.0]])
    np.testing.assert_allclose(got, want)


def test_top_k_orders_hits_pads_and_excludes(index):
    idx, scores = index.top_k(["apple cherry", "banana", "zebra"], k=3, model="tfidf")
    # query 0: d0 (2 log 3) > d2 (3 log 1.5) > d1 (log 1.5)
    assert idx.tolist() == [[0, 2, 1], [0, 1, -1], [-1, -1, -1]]
    np.testing.assert_allclose(scores[0], [2 * log(3), 3 * log(1.5), log(1.5)])
    assert np.isneginf(scores[1, 2]) and np.isneginf(scores[2]).all()
    # banana: tie between d0 and d1 (tf 1 each, tfidf) -> lower index first
    assert scores[1, 0] == scores[1, 1]
    idx, _ = index.top_k(["apple cherry", "banana"], k=2, model="lmir",
                         exclude=[np.array([0]), np.array([], dtype=int)])
    assert idx.tolist() == [[1, 2], [1, 0]]  # lmir: d1 -2.95 > d2 -3.04; shorter d1 wins "banana"


def test_top_k_agrees_with_full_scores(index):
    for model in ("bm25", "tfidf", "lmir"):
        idx, scores = index.top_k(["apple cherry"], k=3, model=model)
        full = index.score(["apple cherry"], model)[0]
        np.testing.assert_allclose(scores[0], full[idx[0]])
        assert (np.diff(scores[0]) <= 0).all()


def test_persistence_round_trip(index, tmp_path):
    index.to_dir(tmp_path / "idx")
    back = FieldIndex.from_dir(tmp_path / "idx")
    assert (back.k1, back.b, back.mu) == (1.2, 0.75, 2.0)
    for model in ("bm25", "tfidf", "lmir"):
        np.testing.assert_array_equal(back.score(["apple date"], model), index.score(["apple date"], model))


def test_top_k_keeps_zero_weight_hits_and_is_batch_independent(index):
    # "xx" is in every document: tfidf weight log(3/3) = 0, yet all three are hits
    idx, scores = FieldIndex.from_texts(["xx yy", "xx", "xx zz"]).top_k(["xx"], k=4, model="tfidf")
    assert idx.tolist() == [[0, 1, 2, -1]] and scores[0, :3].tolist() == [0.0, 0.0, 0.0]
    queries = ["apple cherry", "banana", "date cherry", "zebra"]
    exclude = [np.array([1]), np.array([0]), np.array([], dtype=int), np.array([2])]
    for model in ("bm25", "lmir"):
        one = index.top_k(queries, k=2, model=model, exclude=exclude, batch=1)
        many = index.top_k(queries, k=2, model=model, exclude=exclude)
        np.testing.assert_array_equal(one[0], many[0])
        np.testing.assert_array_equal(one[1], many[1])
