"""Text stages on a tiny collection: documents input, doc2vec/LDA, pseudo-documents, CLI."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import yaml
from typer.testing import CliRunner

from srdiv.cli.main import app, main
from srdiv.io import InputError
from srdiv.params import REPRESENTATIONS
from srdiv.text.defaults import DEFAULTS, stage_params
from srdiv.text.documents import doc_positions, join_columns, load_docs, read_docs
from srdiv.text.embed import (
    embed_documents, infer_doc2vec, lda_terms, lda_topics, load_model, prune_vocabulary, read_vectors,
    write_vectors,
)
from srdiv.text.pseudo_docs import concat_tokens, pseudo_document_vectors, query_strings, sum_rows

from tiny_text_collection import SMALL_EMBED, tiny_collection, write_tiny


def pseudo_params(params=SMALL_EMBED):
    features = stage_params(params, "features")
    return {**stage_params(params, "pseudo_docs"), "k1": features["k1"], "b": features["b"]}


@pytest.fixture(scope="module")
def coll():
    return tiny_collection()


@pytest.fixture(scope="module")
def embed_dir(tmp_path_factory, coll):
    out = tmp_path_factory.mktemp("embed")
    embed_documents(coll.docs, stage_params(SMALL_EMBED, "embed"), out)
    return out


# ------------------------------------------------------------------ params and documents
def test_stage_params_merge_file_over_defaults():
    p = stage_params({"seed": 3, "embed": {"doc2vec": {"window": 3}}}, "embed")
    assert p["seed"] == 3 and p["doc2vec"]["window"] == 3
    assert p["doc2vec"]["vector_size"] == 100 and p["lda"]["num_topics"] == 100
    assert DEFAULTS["embed"]["doc2vec"]["window"] == 8  # defaults untouched


def test_read_docs_jsonl_and_parquet_agree(tmp_path, coll):
    lines = [json.dumps({**row, "title": None} if i == 0 else row)
             for i, row in enumerate(coll.docs.to_dict("records"))]
    (tmp_path / "docs.jsonl").write_text("\n".join(lines) + "\n")
    coll.docs.to_parquet(tmp_path / "docs.parquet")
    from_json = read_docs(tmp_path / "docs.jsonl")
    from_parquet = read_docs(tmp_path / "docs.parquet")
    assert from_json.loc[0, "title"] == ""  # null text reads as empty
    pd.testing.assert_frame_equal(from_json.iloc[1:].reset_index(drop=True),
                                  from_parquet.iloc[1:].reset_index(drop=True))
    assert from_parquet["pagerank"].dtype == np.float64


def test_read_docs_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "docs.jsonl"
    bad.write_text('{"docno": "a", "title": "", "body": "", "anchor": "", "url": ""}\n{oops\n')
    with pytest.raises(InputError) as err:
        read_docs(bad)
    assert err.value.line == 2
    bad.write_text('{"docno": "a", "title": "", "body": ""}\n')
    with pytest.raises(InputError, match="lacks columns"):
        read_docs(bad)
    bad.write_text('{"docno": "a", "title": "", "body": "", "anchor": "", "url": ""}\n' * 2)
    with pytest.raises(InputError, match="docno 'a' appears twice"):
        read_docs(bad)
    with pytest.raises(InputError, match="not found"):
        read_docs(tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match="no document text"):
        load_docs(tmp_path)


def test_join_columns_and_positions(coll):
    docs = coll.docs.iloc[:2]
    assert join_columns(docs, ("title", "url"))[0] == "bass fish http://www.fish.example.org/page/0"
    assert doc_positions(docs, [["bass-fish-1", "nope"], ["", "bass-fish-0"]]).tolist() == [[1, -1], [-1, 0]]


# ------------------------------------------------------------------------ embedding
def test_vector_table_roundtrip(tmp_path):
    keys = pd.DataFrame({"qid": ["1", "1"], "sugg_id": ["", "2"]})
    vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
    write_vectors(keys, vectors, tmp_path / "v.parquet")
    back_keys, back = read_vectors(tmp_path / "v.parquet")
    pd.testing.assert_frame_equal(back_keys, keys)
    assert back.dtype == np.float32 and np.array_equal(back, vectors)
    with pytest.raises(InputError):
        read_vectors(tmp_path / "none.parquet")


def test_embed_writes_vectors_in_document_order(embed_dir, coll):
    keys, d2v = read_vectors(embed_dir / "doc2vec.parquet")
    assert keys["docno"].tolist() == coll.docs["docno"].tolist()
    assert d2v.shape == (30, 8) and np.abs(d2v).sum(1).min() > 0
    _, lda = read_vectors(embed_dir / "lda.parquet")
    assert lda.shape == (30, 4)
    np.testing.assert_allclose(lda.sum(1), 1.0, rtol=1e-5)
    assert (embed_dir / "doc2vec.model").exists() and (embed_dir / "lda.model").exists()
    _, svd = read_vectors(embed_dir / "svd.parquet")
    assert svd.shape == (30, 4) and np.abs(svd).sum(1).min() > 0
    assert sorted(p.stem for p in embed_dir.glob("*.parquet")) == sorted(REPRESENTATIONS)   # what a row may read


def test_svd_vectors_are_the_truncated_svd_of_the_tfidf_counts(coll, embed_dir):
    """Document coordinates A S of X = A S B^T (X: tf-idf rows, LDA's vocabulary), up to each
    component's sign."""
    from gensim.matutils import Sparse2Corpus, corpus2dense

    from srdiv.index.analysis import tokenize_many
    from srdiv.text.documents import TEXT_COLUMNS, join_columns
    from srdiv.index.sparse import count_matrix

    tfidf, lda = load_model(embed_dir, "tfidf"), load_model(embed_dir, "lda")
    bow = count_matrix(tokenize_many(join_columns(coll.docs, TEXT_COLUMNS)), lda_terms(lda))
    x = corpus2dense(tfidf[Sparse2Corpus(bow, documents_columns=False)], num_terms=bow.shape[1]).T
    u, sing, _ = np.linalg.svd(x, full_matrices=False)
    expected = u[:, :4] * sing[:4]
    _, svd = read_vectors(embed_dir / "svd.parquet")
    signs = np.sign((svd * expected).sum(0))
    np.testing.assert_allclose(svd * signs, expected, atol=1e-3)


def test_lda_topics_separate_senses(embed_dir):
    """Documents of one sense share a dominant topic more often than documents of different senses."""
    keys, lda = read_vectors(embed_dir / "lda.parquet")
    sense = keys["docno"].str.rsplit("-", n=1).str[0].to_numpy()
    top = lda.argmax(1)
    same = sense[:, None] == sense[None, :]
    agree = top[:, None] == top[None, :]
    assert agree[same].mean() > agree[~same].mean()


def test_doc2vec_training_is_reproducible(coll, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        embed_documents(coll.docs, stage_params(SMALL_EMBED, "embed"), out)
    assert np.array_equal(read_vectors(a / "doc2vec.parquet")[1], read_vectors(b / "doc2vec.parquet")[1])
    assert np.array_equal(read_vectors(a / "lda.parquet")[1], read_vectors(b / "lda.parquet")[1])
    assert np.array_equal(read_vectors(a / "svd.parquet")[1], read_vectors(b / "svd.parquet")[1])


EMBED_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from tiny_text_collection import SMALL_EMBED, tiny_collection
from srdiv.text.defaults import stage_params
from srdiv.text.embed import embed_documents
embed_documents(tiny_collection().docs, stage_params(SMALL_EMBED, "embed"), sys.argv[2])
"""


def test_embed_writes_the_same_bytes_in_another_process(tmp_path):
    """Every file of the stage's output, models included, is the same in two processes with different hash
    seeds and clocks: no date, timing or set order in what gensim saves (the output's hash in a lock)."""
    for name, hash_seed in (("a", "1"), ("b", "2")):
        subprocess.run([sys.executable, "-c", EMBED_SCRIPT, str(Path(__file__).parent), str(tmp_path / name)],
                       env={**os.environ, "PYTHONHASHSEED": hash_seed}, capture_output=True, check=True)
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert "doc2vec.model" in files and "lda.model" in files
    assert files == sorted(p.name for p in (tmp_path / "b").iterdir())
    assert [f for f in files if (tmp_path / "a" / f).read_bytes() != (tmp_path / "b" / f).read_bytes()] == []


def test_infer_is_order_and_process_independent_and_zero_without_known_words(embed_dir):
    model = load_model(embed_dir, "doc2vec")
    texts = [["bass", "fish", "lake"], ["java", "coffee"], ["unknownword"]]
    forward = infer_doc2vec(model, texts, seed=1)
    backward = infer_doc2vec(model, texts[::-1], seed=1)[::-1]
    parallel = infer_doc2vec(model, texts, seed=1, workers=2, chunk=1)
    assert np.array_equal(forward, backward) and np.array_equal(forward, parallel)
    assert np.abs(forward[0]).sum() > 0 and not forward[2].any()


INFER_SCRIPT = """
import sys, numpy as np
from srdiv.text.embed import infer_doc2vec, load_model
v = infer_doc2vec(load_model(sys.argv[1], "doc2vec"), [["bass", "fish", "lake"]], seed=1)
print(" ".join(f"{x:.9g}" for x in v[0]))
"""


def test_infer_does_not_depend_on_python_hash_seed(embed_dir):
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        run = subprocess.run([sys.executable, "-c", INFER_SCRIPT, str(embed_dir)], env=env,
                             capture_output=True, text=True, check=True)
        outs.append(run.stdout)
    assert outs[0] == outs[1]


def test_empty_document_gets_zero_vectors_with_warning(coll, tmp_path):
    docs = coll.docs.copy()
    docs.loc[0, ["title", "body", "anchor", "url"]] = ""
    with pytest.warns(UserWarning, match="1 of 30 documents have no word"):
        embed_documents(docs, stage_params(SMALL_EMBED, "embed"), tmp_path)
    assert not read_vectors(tmp_path / "doc2vec.parquet")[1][0].any()
    assert not read_vectors(tmp_path / "lda.parquet")[1][0].any()


def test_bag_of_words_helpers():
    bow = sp.csr_matrix(np.array([[1, 0, 2], [0, 3, 0], [1, 1, 1]]))
    assert prune_vocabulary(bow, no_below=2, no_above=1.0).tolist() == [0, 1, 2]
    assert prune_vocabulary(bow, no_below=1, no_above=0.5).tolist() == []
    assert prune_vocabulary(bow, no_below=1, no_above=0.7).tolist() == [0, 1, 2]
    pseudo = sum_rows(bow, np.array([[0, 2], [1, -1], [-1, -1]]))
    assert pseudo.toarray().tolist() == [[2, 1, 3], [0, 3, 0], [0, 0, 0]]
    assert concat_tokens([["a"], ["b", "c"]], np.array([[1, 0], [-1, -1]])) == [["b", "c", "a"], []]


def test_lda_topics_zero_for_empty_rows(embed_dir):
    model = load_model(embed_dir, "lda")
    bow = sp.csr_matrix(np.vstack([np.ones(model.num_terms), np.zeros(model.num_terms)]))
    theta = lda_topics(model, bow, seed=0)
    assert theta[0].sum() == pytest.approx(1.0, rel=1e-5) and not theta[1].any()


# ---------------------------------------------------------------------- pseudo-documents
def test_query_strings_order(coll):
    strings = query_strings(coll)
    assert strings.iloc[:2][["qid", "sugg_id", "text"]].values.tolist() == [["1", "", "bass"], ["2", "", "java"]]
    assert len(strings) == 2 + len(coll.suggestions)
    assert strings.iloc[2]["sugg_id"] == "1"


def test_pseudo_docs_follow_their_bm25_documents(coll, embed_dir, tmp_path):
    pseudo_document_vectors(coll, coll.docs, embed_dir, pseudo_params(), tmp_path)
    keys, lda = read_vectors(tmp_path / "lda.parquet")
    assert keys.values.tolist() == query_strings(coll)[["qid", "sugg_id"]].values.tolist()
    _, d2v = read_vectors(tmp_path / "doc2vec.parquet")
    assert d2v.shape == (len(keys), 8) and np.abs(d2v).sum(1).min() > 0
    doc_keys, doc_lda = read_vectors(embed_dir / "lda.parquet")
    # "bass fish" retrieves fish documents: its topic vector is closest to theirs
    row = int(np.flatnonzero((keys["qid"] == "1") & (keys["sugg_id"] == "1"))[0])
    senses = doc_keys["docno"].str.rsplit("-", n=1).str[0]
    centroids = {s: doc_lda[(senses == s).to_numpy()].mean(0) for s in ("bass-fish", "bass-music", "bass-voice")}
    assert min(centroids, key=lambda s: np.abs(centroids[s] - lda[row]).sum()) == "bass-fish"
    _, svd = read_vectors(tmp_path / "svd.parquet")                       # and in the SVD's space
    _, doc_svd = read_vectors(embed_dir / "svd.parquet")
    cosine = {s: doc_svd[(senses == s).to_numpy()].mean(0) @ svd[row]
              / np.linalg.norm(doc_svd[(senses == s).to_numpy()].mean(0)) for s in centroids}
    assert max(cosine, key=cosine.get) == "bass-fish"


def test_pseudo_docs_are_reproducible(coll, embed_dir, tmp_path):
    for out in (tmp_path / "a", tmp_path / "b"):
        pseudo_document_vectors(coll, coll.docs, embed_dir, pseudo_params(), out)
    for name in ("doc2vec.parquet", "lda.parquet", "svd.parquet"):
        assert np.array_equal(read_vectors(tmp_path / "a" / name)[1], read_vectors(tmp_path / "b" / name)[1])


def test_suggestion_without_hits_gets_zero_vectors(coll, embed_dir, tmp_path):
    odd = tiny_collection()
    odd.suggestions.loc[0, "text"] = "zebra xylophone"
    with pytest.warns(UserWarning, match="1 of 16 queries and suggestions have no BM25 hit"):
        pseudo_document_vectors(odd, odd.docs, embed_dir, pseudo_params(), tmp_path)
    keys, d2v = read_vectors(tmp_path / "doc2vec.parquet")
    _, lda = read_vectors(tmp_path / "lda.parquet")
    row = int(np.flatnonzero((keys["qid"] == "1") & (keys["sugg_id"] == "1"))[0])
    assert not d2v[row].any() and not lda[row].any()
    assert np.abs(lda).sum(1)[np.arange(len(keys)) != row].min() > 0


def test_pseudo_docs_need_trained_models(coll, tmp_path):
    with pytest.raises(InputError, match="run 'srdiv embed' first"):
        pseudo_document_vectors(coll, coll.docs, tmp_path, pseudo_params(), tmp_path / "out")


# ----------------------------------------------------------------------------- CLI
def test_cli_stages_with_user_documents(tmp_path, coll):
    """--docs replaces the collection's documents: same vectors as the collection's own table."""
    write_tiny(tmp_path / "coll")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(SMALL_EMBED))
    user = tmp_path / "user.jsonl"
    user.write_text("\n".join(json.dumps(r) for r in coll.docs.to_dict("records")))
    runner = CliRunner()
    common = ["--collection", str(tmp_path / "coll"), "--params", str(tmp_path / "params.yaml")]
    for name, docs in (("own", []), ("user", ["--docs", str(user)])):
        out = tmp_path / name
        for args in (["embed", "--out", str(out / "embed")],
                     ["pseudo-docs", "--embed-dir", str(out / "embed"), "--out", str(out / "pd")]):
            result = runner.invoke(app, args + common + docs)
            assert result.exit_code == 0, result.output
    for name in ("embed/doc2vec.parquet", "pd/doc2vec.parquet", "pd/lda.parquet"):
        assert np.array_equal(read_vectors(tmp_path / "own" / name)[1], read_vectors(tmp_path / "user" / name)[1])


def test_cli_missing_input_is_one_clear_error(tmp_path, monkeypatch, capsys):
    argv = ["srdiv", "embed", "--collection", str(tmp_path / "none"), "--out", str(tmp_path / "o")]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {tmp_path / 'none'}: collection directory not found"]
    assert not (tmp_path / "o").exists()
