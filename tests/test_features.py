"""Relevance (DSSA Table 5) and diversity (Table 6) features and the bundle assembly, by hand."""

from math import log, sqrt

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import yaml
from typer.testing import CliRunner

from srdiv.cli.main import app
from srdiv.features.assemble import build_bundle
from srdiv.features.bundle import Bundle
from srdiv.features.diversity import (
    cosine_diversity, diversity_features, euclidean, link_similarity, url_similarity,
)
from srdiv.features.relevance import FEATURE_NAMES, candidate_matrix, candidates, relevance_features
from srdiv.io import InputError
from srdiv.text.defaults import stage_params
from srdiv.text.pseudo_docs import query_strings

from tiny_text_collection import SMALL_EMBED, tiny_collection, write_tiny

FEATURES = stage_params(SMALL_EMBED, "features")  # rank_docs 6, k1 1.2, b 0.75, mu 2000


@pytest.fixture(scope="module")
def coll():
    return tiny_collection()


@pytest.fixture(scope="module")
def relevance(coll):
    return relevance_features(coll, coll.docs, query_strings(coll), FEATURES)


def doc_vectors(coll, dim=3, seed=0):
    rng = np.random.default_rng(seed)
    return coll.docs[["docno"]], rng.random((len(coll.docs), dim)).astype(np.float32)


def pseudo_vectors(coll, dim=3, seed=1):
    strings = query_strings(coll)
    return strings[["qid", "sugg_id"]], np.random.default_rng(seed).random((len(strings), dim)).astype(np.float32)


# ---------------------------------------------------------------------------- relevance
def test_feature_names_are_the_release_header():
    header = ("anchor_text-bm25,anchor_text-lmir,anchor_text-tfidf,body-bm25,body-lmir,body-tfidf,text-bm25,"
              "text-lmir,text-tfidf,title-bm25,title-lmir,title-tfidf,url_text-bm25,url_text-lmir,url_text-tfidf,"
              "pagerank,inlinks,outlinks")
    assert FEATURE_NAMES == header.split(",")


def test_candidates_in_rank_order(coll):
    cand = candidate_matrix(candidates(coll, 6), ["2", "1"])
    run = coll.run.sort_values(["qid", "rank"])
    assert cand.shape == (2, 6)
    assert cand[1].tolist() == run[run["qid"] == "1"]["docno"].tolist()[:6]


def test_relevance_rows_cover_every_string_and_candidate(coll, relevance):
    assert list(relevance.columns) == ["qid", "sugg_id", "docno"] + FEATURE_NAMES
    assert len(relevance) == len(query_strings(coll)) * 6
    first = relevance.iloc[:6]
    assert (first["qid"] == "1").all() and (first["sugg_id"] == "").all()
    assert first["docno"].tolist() == candidates(coll, 6).query("qid == '1'")["docno"].tolist()


def test_title_features_by_hand(relevance):
    """Titles are "bass <sense>" / "java <sense>" (30 docs, length 2, df(bass) = 15, df(bass fish) = 5)."""
    query = relevance[(relevance["qid"] == "1") & (relevance["sugg_id"] == "")]
    np.testing.assert_allclose(query["title-tfidf"], log(30 / 15), rtol=1e-6)
    np.testing.assert_allclose(query["title-bm25"], log(1 + 15.5 / 15.5), rtol=1e-6)  # |d| = avgdl
    np.testing.assert_allclose(query["title-lmir"], log((1 + 2000 * 15 / 60) / (2 + 2000)), rtol=1e-6)
    fish = relevance[(relevance["qid"] == "1") & (relevance["sugg_id"] == "1")]
    is_fish = fish["docno"].str.startswith("bass-fish").to_numpy()
    expected = np.where(is_fish, log(30 / 15) + log(30 / 5), log(30 / 15))
    np.testing.assert_allclose(fish["title-tfidf"], expected, rtol=1e-6)


def test_graph_features_copied(coll, relevance):
    merged = relevance.merge(coll.docs[["docno", "pagerank", "inlinks", "outlinks"]], on="docno",
                             suffixes=("", "_doc"))
    for col in ("pagerank", "inlinks", "outlinks"):
        np.testing.assert_allclose(merged[col], merged[f"{col}_doc"], rtol=1e-6)


def test_missing_candidate_and_empty_field_score_zero():
    coll = tiny_collection()
    coll.run.loc[coll.run.index[0], "docno"] = "ghost"
    docs = coll.docs.copy()
    target = coll.run.iloc[1]["docno"]
    docs.loc[docs["docno"] == target, "anchor"] = ""
    with pytest.warns(UserWarning) as record:
        rel = relevance_features(coll, docs, query_strings(coll), FEATURES)
    messages = " | ".join(str(w.message) for w in record)
    assert "1 of 12 candidates are missing from the documents" in messages
    assert "1 of 11 candidate documents have an empty anchor_text field" in messages
    assert not rel[rel["docno"] == "ghost"][FEATURE_NAMES].to_numpy().any()
    anchor = [c for c in FEATURE_NAMES if c.startswith("anchor_text")]
    assert not rel[rel["docno"] == target][anchor].to_numpy().any()
    other = rel[(rel["docno"] != target) & (rel["docno"] != "ghost")]
    assert (other["anchor_text-lmir"] != 0).all()  # LMIR is non-zero wherever the field has text


def test_graph_columns_absent_are_zero(coll):
    docs = coll.docs.drop(columns=["pagerank", "inlinks", "outlinks"])
    with pytest.warns(UserWarning, match="graph columns"):
        rel = relevance_features(coll, docs, query_strings(coll).iloc[:1], FEATURES)
    assert not rel[["pagerank", "inlinks", "outlinks"]].to_numpy().any()


# ---------------------------------------------------------------------------- diversity
def test_euclidean_by_hand():
    vectors = np.array([[[0.0, 0.0], [3.0, 4.0]]])
    np.testing.assert_allclose(euclidean(vectors)[0], [[0, 5], [5, 0]], atol=1e-12)


def test_cosine_diversity_by_hand():
    tf = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]))  # idf equal for both terms
    out = cosine_diversity(tf, np.array([[0, 1, -1]]))[0]
    np.testing.assert_allclose(out[0, 1], 1 - 1 / sqrt(2), rtol=1e-6)
    np.testing.assert_allclose(out[0, 0], 0.0, atol=1e-6)
    assert out[0, 2] == 1.0 and out[2, 2] == 1.0  # missing document: zero vector


def test_url_similarity_by_hand():
    urls = pd.Series(["http://a.com/x/y", "https://A.com/x/z/", "http://b.com/x/y", "noun.animal/bass",
                      "noun.animal/perch", ""])
    out = url_similarity(urls, np.array([[0, 1, 2, 3, 4, 5, -1]]))[0]
    assert out[0, 1] == pytest.approx(2 / 3) and out[0, 2] == 0.0
    assert out[3, 4] == pytest.approx(0.5) and out[0, 0] == 1.0
    assert out[5, 5] == 0.0 and out[6].sum() == 0.0  # empty URL, missing document


def test_link_similarity_by_hand():
    """a -> b, d -> b, c isolated: N(a) = {a, b}, N(b) = {a, b, d}, N(d) = {b, d}, N(c) = {c}."""
    docs = pd.DataFrame({"docno": ["a", "b", "c", "d"], "links": [["b", "nowhere"], [], None, ["b"]]})
    out = link_similarity(docs, np.array([[0, 1, 2, 3, -1]]))[0]
    assert out[0, 1] == pytest.approx(2 / 3)  # {a, b} / {a, b, d}
    assert out[0, 3] == pytest.approx(1 / 3)  # {b} / {a, b, d}
    assert out[0, 2] == 0.0 and out[2, 2] == 1.0 and out[4].sum() == 0.0


def test_diversity_table_pairs_and_features(coll):
    table = diversity_features(coll, coll.docs, doc_vectors(coll), rank_docs=6)
    assert list(table.columns) == ["qid", "docno_a", "docno_b", "subtopic_div", "text_div", "title_div",
                                   "anchor_div", "link_sim", "url_sim"]
    assert len(table) == 2 * 15  # 6 candidates: 15 unordered pairs per query
    cand = candidates(coll, 6)
    rank = dict(zip(zip(cand["qid"], cand["docno"]), cand["rank"]))
    assert all(rank[(q, a)] < rank[(q, b)] for q, a, b in table[["qid", "docno_a", "docno_b"]].values)
    same_title = table["docno_a"].str.rsplit("-", n=1).str[0] == table["docno_b"].str.rsplit("-", n=1).str[0]
    np.testing.assert_allclose(table.loc[same_title, "title_div"], 0.0, atol=1e-6)
    assert (table.loc[~same_title, "title_div"] > 0).all()
    number = table[["docno_a", "docno_b"]].apply(lambda c: c.str.rsplit("-", n=1).str[1].astype(int))
    linked = same_title & ((number["docno_a"] - number["docno_b"]).abs() == 1)
    assert (table.loc[linked, "link_sim"] > 0).all()


def test_diversity_without_text_or_links(coll):
    with pytest.warns(UserWarning, match="only the vector-based subtopic_div"):
        table = diversity_features(coll, None, doc_vectors(coll), rank_docs=6)
    assert list(table.columns) == ["qid", "docno_a", "docno_b", "subtopic_div"]
    with pytest.warns(UserWarning, match="no 'links' column"):
        table = diversity_features(coll, coll.docs.drop(columns="links"), doc_vectors(coll), rank_docs=6)
    assert "link_sim" not in table.columns


# ----------------------------------------------------------------------------- assembly
@pytest.fixture(scope="module")
def bundle(coll, relevance):
    diversity = diversity_features(coll, coll.docs, doc_vectors(coll), rank_docs=6)
    return build_bundle(coll, doc_vectors(coll), pseudo_vectors(coll), relevance, diversity,
                        rank_docs=6, max_subs=2, max_subs2=3)


def test_bundle_shapes_masks_and_suggestion_tree(bundle):
    assert bundle.dims.docs == 6 and bundle.dims.emb == 3 and bundle.dims.feats == 18
    assert bundle.dims.div_feats == 6 and bundle.dims.subtopics == 3
    assert bundle.sub_mask.tolist() == [[True, True], [True, True]]  # 3 level-1, max_subs 2
    np.testing.assert_allclose(bundle.sub_weight, 0.5)
    # level-2: 1.1, 1.2 (parent slot 0), 2.1 (parent slot 1); 2.2 beyond max_subs2
    assert bundle.sub2_parent.tolist() == [[0, 0, 1], [0, 0, 1]]
    assert bundle.sub2_mask.all()


def test_bundle_arrays_match_their_sources(coll, bundle, relevance):
    run = coll.run.sort_values(["qid", "rank"])
    first = run[run["qid"] == "1"].iloc[:6]
    assert bundle.docnos[0].tolist() == first["docno"].tolist()
    np.testing.assert_allclose(bundle.init_score[0], first["score"])
    keys, vecs = doc_vectors(coll)
    np.testing.assert_allclose(bundle.doc_vec[0, 2], vecs[keys["docno"].tolist().index(bundle.docnos[0, 2])])
    p_keys, p_vecs = pseudo_vectors(coll)
    np.testing.assert_allclose(bundle.query_vec[1], p_vecs[1])  # query "2" is the second string
    row = relevance[(relevance["qid"] == "2") & (relevance["sugg_id"] == "2")
                    & (relevance["docno"] == bundle.docnos[1, 4])]
    np.testing.assert_allclose(bundle.sub_feat[1, 1, 4], row[FEATURE_NAMES].to_numpy()[0])
    row = relevance[(relevance["qid"] == "1") & (relevance["sugg_id"] == "2.1")
                    & (relevance["docno"] == bundle.docnos[0, 0])]
    np.testing.assert_allclose(bundle.sub2_feat[0, 2, 0], row[FEATURE_NAMES].to_numpy()[0])


def test_bundle_labels_and_symmetric_diversity(bundle):
    sense = {"fish": 0, "music": 1, "voice": 2, "island": 0, "coffee": 1, "code": 2}
    for q in range(2):
        for d, docno in enumerate(bundle.docnos[q]):
            expected = np.eye(3)[sense[docno.split("-")[1]]]
            assert bundle.labels[q, d].tolist() == expected.tolist()
    assert bundle.label_mask.all()
    assert np.array_equal(bundle.div_feat, bundle.div_feat.transpose(0, 2, 1, 3))
    assert not bundle.div_feat[:, np.arange(6), np.arange(6)].any()


def test_bundle_drops_suggestions_without_vectors_and_zero_fills(coll, relevance):
    keys, vecs = pseudo_vectors(coll)
    keep = ~((keys["qid"] == "1") & keys["sugg_id"].isin(["1", ""]))
    rel = relevance.iloc[1:]  # one (query, candidate) pair lost
    with pytest.warns(UserWarning, match="only the vector-based"):
        diversity = diversity_features(coll, None, doc_vectors(coll), rank_docs=6)
    with pytest.warns(UserWarning) as record:
        b = build_bundle(coll, doc_vectors(coll), (keys[keep], vecs[keep.to_numpy()]), rel, diversity.iloc[1:],
                         rank_docs=6, max_subs=10, max_subs2=100, fill="zero")
    messages = " | ".join(str(w.message) for w in record)
    assert "1 of 2 queries have no pseudo-document vector" in messages
    assert "1 of 14 suggestions have no pseudo-document vector" in messages
    assert "have no relevance features" in messages and "1 of 30 candidate pairs" in messages
    assert b.filled == ("1 of 2 queries have no pseudo-document vector: zero",   # the record of the fill
                        "1 of 78 (query or suggestion, candidate) pairs have no relevance features: zero",
                        "1 of 30 candidate pairs have no diversity features: zero")
    assert not b.query_vec[0].any()
    # query 1 keeps level-1 "2", "3"; level-2 children of "1" lose their parent
    assert b.sub_mask[0].tolist() == [True, True, False] and b.sub2_mask[0].sum() == 2
    assert b.sub2_parent[0, :2].tolist() == [0, 0]
    assert not b.rel_feat[0, 0].any()


def test_a_missing_vector_or_feature_row_is_an_error_naming_it_unless_filled(coll, relevance, tmp_path):
    """Without ``fill="zero"`` a candidate or query without its vector or feature row is one error naming the
    first such document and the table it lacks from; with it, zeros, recorded in the saved bundle."""
    with pytest.warns(UserWarning, match="only the vector-based"):
        diversity = diversity_features(coll, None, doc_vectors(coll), rank_docs=6)
    keys, vecs = doc_vectors(coll)
    first = coll.run["docno"].iloc[0]                 # topic 1's first candidate
    kept = (keys["docno"] != first).to_numpy()
    docs = (keys[kept], vecs[kept])
    files = {"doc_vectors": "embed/lda.parquet", "relevance": "rel.parquet", "diversity": "div.parquet"}
    for args, where, what in [
        ((docs, pseudo_vectors(coll), relevance, diversity), "embed/lda.parquet",
         f"document '{first}' \\(candidate of topic '1'\\) has no vector \\(1 of"),
        ((doc_vectors(coll), pseudo_vectors(coll), relevance.iloc[1:], diversity), "rel.parquet",
         f"document '{relevance['docno'].iloc[0]}' has no relevance features for topic '{relevance['qid'].iloc[0]}'"),
        ((doc_vectors(coll), pseudo_vectors(coll), relevance, diversity.iloc[1:]), "div.parquet",
         f"documents '{diversity['docno_a'].iloc[0]}' and '{diversity['docno_b'].iloc[0]}'")]:
        with pytest.raises(InputError, match=f"^{where}: {what}.*give --fill zero"):
            build_bundle(coll, *args, rank_docs=6, files=files)
    with pytest.warns(UserWarning, match="candidates have no document vector"):
        b = build_bundle(coll, docs, pseudo_vectors(coll), relevance, diversity, rank_docs=6, fill="zero")
    assert b.filled and all(note.endswith(": zero") for note in b.filled)
    b.save(tmp_path / "b.npz")
    assert Bundle.load(tmp_path / "b.npz").filled == b.filled
    full = build_bundle(coll, doc_vectors(coll), pseudo_vectors(coll), relevance, diversity, rank_docs=6)
    full.save(tmp_path / "full.npz")
    assert full.filled == () and Bundle.load(tmp_path / "full.npz").filled == ()


def test_bundle_bad_inputs(coll, relevance):
    diversity = pd.DataFrame(columns=["qid", "docno_a", "docno_b", "subtopic_div"])
    bad = relevance.copy()
    bad.loc[3, "body-bm25"] = np.nan
    with pytest.raises(InputError, match="non-finite"):
        build_bundle(coll, doc_vectors(coll), pseudo_vectors(coll), bad, diversity, rank_docs=6)
    no_run = tiny_collection()
    no_run.run = no_run.run[no_run.run["qid"] == "1"]
    with pytest.raises(InputError, match="1 topics have no candidate"):
        build_bundle(no_run, doc_vectors(coll), pseudo_vectors(coll), relevance, diversity, rank_docs=6)


def test_feature_commands_end_to_end(tmp_path, coll):
    write_tiny(tmp_path / "coll")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(SMALL_EMBED))
    from srdiv.text.embed import write_vectors

    write_vectors(*doc_vectors(coll), tmp_path / "embed.parquet")
    write_vectors(*pseudo_vectors(coll), tmp_path / "pseudo.parquet")
    common = ["--collection", str(tmp_path / "coll"), "--params", str(tmp_path / "params.yaml")]
    runner = CliRunner()
    steps = [
        ["features", "relevance", "--out", str(tmp_path / "rel.parquet")],
        ["features", "diversity", "--vectors", str(tmp_path / "embed.parquet"), "--out", str(tmp_path / "div.parquet")],
        ["bundle", "--doc-vectors", str(tmp_path / "embed.parquet"), "--pseudo-vectors",
         str(tmp_path / "pseudo.parquet"), "--relevance", str(tmp_path / "rel.parquet"),
         "--diversity", str(tmp_path / "div.parquet"), "--out", str(tmp_path / "bundle" / "lda.npz")],
    ]
    for args in steps:
        result = runner.invoke(app, args + common)
        assert result.exit_code == 0, result.output
    loaded = Bundle.load(tmp_path / "bundle" / "lda.npz")
    assert loaded.dims.docs == 6 and loaded.dims.div_feats == 6 and loaded.feature_names == FEATURE_NAMES


def test_a_loaded_bundle_maps_its_arrays_and_holds_the_saved_values(tmp_path):
    """Bundle.load memory-maps the uncompressed arrays (read-only, values as saved, Fortran order and empty
    arrays included); load_npz reads compressed members as before; select() gives writable copies."""
    from srdiv.features.bundle import ARRAY_FIELDS, random_bundle
    from srdiv.io import load_npz

    data = random_bundle(queries=5, docs=7, subs=3, subs2=4, seed=2)
    data.save(tmp_path / "b.npz")
    loaded = Bundle.load(tmp_path / "b.npz")
    for name in ARRAY_FIELDS:
        saved, mapped = getattr(data, name), getattr(loaded, name)
        assert np.array_equal(mapped, saved.astype(str) if name == "docnos" else saved), name
    assert isinstance(loaded.div_feat, np.memmap) and not loaded.div_feat.flags.writeable
    picked = loaded.select([3, 1])
    assert picked.div_feat.flags.writeable and np.array_equal(picked.div_feat, data.div_feat[[3, 1]])

    arrays = {"f": np.asfortranarray(np.arange(12.0).reshape(3, 4)), "empty": np.zeros((0, 3), np.float32)}
    np.savez(tmp_path / "plain.npz", **arrays)
    np.savez_compressed(tmp_path / "packed.npz", **arrays)
    for name in ("plain", "packed"):
        read = load_npz(tmp_path / f"{name}.npz", "test file", ["f", "empty"], mmap=True)
        assert isinstance(read["f"], np.memmap) == (name == "plain")
        for key, values in arrays.items():
            assert np.array_equal(read[key], values) and read[key].shape == values.shape


def test_scaler_in_query_chunks_and_fold_queries_change_no_value(monkeypatch):
    """Standardising a few queries at a time, and cutting candidates before selecting queries, give the
    same arrays as one pass over everything (they only bound memory)."""
    import srdiv.features.bundle as bundle_module
    from srdiv.features.bundle import FeatureScaler, random_bundle
    from srdiv.features.folds import fold_queries

    data = random_bundle(queries=7, docs=9, subs=3, subs2=4, seed=5)
    qids = list(data.qids[[5, 0, 3]])
    cut = fold_queries(data, qids, 6)
    expected = data.select_qids(qids).truncate(6)
    for name in ("docnos", "doc_mask", "sub_feat", "sub2_feat", "div_feat", "labels"):
        assert np.array_equal(getattr(cut, name), getattr(expected, name))
    scaler = FeatureScaler.fit(data)
    whole = scaler.transform(data)
    monkeypatch.setattr(bundle_module, "TRANSFORM_QUERIES", 2)
    chunked = scaler.transform(data)
    for name in ("rel_feat", "sub_feat", "sub2_feat", "div_feat"):
        assert getattr(chunked, name).dtype == np.float32
        assert np.array_equal(getattr(chunked, name), getattr(whole, name))


def test_scaler_fitted_on_rows_and_in_place_transform_match_the_copies():
    """What a job without training reads (the scaler fitted on the training rows, no training copy) and
    the in-place standardisation of a fresh selection equal the copying versions bit for bit."""
    from dataclasses import asdict

    from srdiv.experiment import TrainSettings
    from srdiv.features.bundle import FeatureScaler, random_bundle
    from srdiv.features.folds import FoldSplit, fold_queries, query_rows
    from srdiv.train.tuning import FoldData

    data = random_bundle(queries=9, docs=8, subs=3, subs2=4, seed=7)
    split = FoldSplit(fold=1, train=list(data.qids[[6, 1, 4, 2]]), valid=list(data.qids[[0, 8]]), test=list(data.qids[[3]]))
    settings = TrainSettings(train_docs=5, rank_docs=8)
    full, lean = FoldData.make(data, split, settings), FoldData.make(data, split, settings, train=False)
    assert lean.train is None and full.train is not None
    for name, value in asdict(full.scaler).items():
        assert np.array_equal(value, getattr(lean.scaler, name))
    cut = data.truncate(5)
    assert np.array_equal(query_rows(cut, split.train), [6, 1, 4, 2])
    copied = full.scaler.transform(fold_queries(data, split.valid, 8))
    fresh = fold_queries(data, split.valid, 8)
    in_place = full.scaler.transform(fresh, inplace=True)
    for name in ("rel_feat", "sub_feat", "sub2_feat", "div_feat"):
        assert np.array_equal(getattr(in_place, name), getattr(copied, name))
        assert getattr(in_place, name) is getattr(fresh, name)                 # no copy made
        assert np.array_equal(getattr(lean.valid, name), getattr(copied, name))
    with pytest.raises(InputError, match="missing from the bundle"):
        query_rows(cut, ["nope"])
