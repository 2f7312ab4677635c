"""Import of the DSSA feature release, on the real 13-topic sample."""

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from srdiv.cli.main import app
from srdiv.features.assemble import build_bundle
from srdiv.features.diversity import diversity_features
from srdiv.features.dssa_import import check_candidates, import_release, normalise, read_emb, read_rel_feat
from srdiv.features.relevance import FEATURE_NAMES
from srdiv.io import InputError
from srdiv.text.embed import read_vectors

SAMPLE = Path(__file__).parent / "fixtures" / "dssa-sample"
TOPICS = {"6", "16", "22", "41", "42", "45", "91", "106", "111", "120", "136", "175", "179"}


@pytest.fixture(scope="module")
def coll(dssa_sample):
    """The sample's collection, loaded once for the session (conftest)."""
    return dssa_sample


def test_release_files_read(coll):
    docnos, vectors = read_emb(SAMPLE / "doc.emb")
    assert len(docnos) == 605 and vectors.shape == (605, 25)
    assert docnos[0] == "clueweb09-en0129-71-18001"
    assert vectors[0, 1] == pytest.approx(0.0735568238121376)
    rel = read_rel_feat(SAMPLE / "rel_feat.csv")
    assert list(rel.columns) == ["query", "docno"] + FEATURE_NAMES and len(rel) == 10750


def test_strings_map_to_queries_and_suggestions(coll, dssa_release):
    with pytest.warns(UserWarning, match=r"are not in the release \(\d+ level-2\)"):
        import_release(coll, SAMPLE)  # every query and level-1 suggestion is found; only level-2 are lost
    docs, pseudo, rel = dssa_release
    keys, vectors = pseudo
    assert set(keys.loc[keys["sugg_id"] == "", "qid"]) == TOPICS
    level1 = coll.suggestions[coll.suggestions["level"] == 1]
    assert len(keys.merge(level1, on=["qid", "sugg_id"])) == len(level1)
    # topic 42 is "the music man"; its vector is the release's line for that string
    release_keys, release_vectors = read_emb(SAMPLE / "query.emb")
    row = int(np.flatnonzero((keys["qid"] == "42") & (keys["sugg_id"] == ""))[0])
    assert np.array_equal(vectors[row], release_vectors[release_keys.index("the music man")])
    assert docs[1].shape == (605, 25)


def test_relevance_rows_keep_release_values(coll, dssa_release):
    rel = dssa_release[2]
    assert list(rel.columns) == ["qid", "sugg_id", "docno"] + FEATURE_NAMES
    first = rel[(rel["qid"] == "42") & (rel["docno"] == "clueweb09-enwp02-28-05314")]
    suggestion = coll.suggestions.query("qid == '42' and text == 'the music man 1962'")["sugg_id"]
    row = first[first["sugg_id"].isin(suggestion)].iloc[0]
    assert row["anchor_text-bm25"] == pytest.approx(11.84235) and row["outlinks"] == 1.0


def test_bundle_from_the_release(coll, dssa_release):
    docs, pseudo, rel = dssa_release
    with pytest.warns(UserWarning, match="only the vector-based subtopic_div"):
        diversity = diversity_features(coll, None, docs, rank_docs=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # level-2 suggestions without vectors are reported above
        bundle = build_bundle(coll, docs, pseudo, rel, diversity, rank_docs=50)
    assert bundle.dims.emb == 25 and bundle.dims.feats == 18 and bundle.dims.div_feats == 1
    assert bundle.dims.docs == 50 and bundle.dims.subs == 10
    lists = json.loads((SAMPLE / "candidates.json").read_text())
    for qid, docnos in lists.items():
        assert bundle.select_qids([qid]).docnos[0].tolist() == docnos
    real = bundle.doc_mask
    assert np.abs(bundle.doc_vec[real]).sum(-1).min() > 0  # every candidate has a release vector
    assert np.abs(bundle.rel_feat[real]).sum(-1).min() > 0
    assert bundle.labels.sum() > 0


def test_check_candidates(coll, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_candidates(coll, SAMPLE / "candidates.json", 50)
    changed = tmp_path / "candidates.json"
    changed.write_text('{"16": ["clueweb09-en0000-00-00000"]}')
    with pytest.warns(UserWarning, match="1 of 1 release candidate lists differ"):
        check_candidates(coll, changed, 50)


def test_bad_release_files_name_file_and_line(coll, tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "release", ignore=shutil.ignore_patterns("collection"))
    doc_emb = tmp_path / "release" / "doc.emb"
    lines = doc_emb.read_text().splitlines()
    doc_emb.write_text("\n".join(lines[:2] + [lines[2].replace("\t0.", "\tx.", 1)] + lines[3:]) + "\n")
    with pytest.raises(InputError) as err:
        import_release(coll, tmp_path / "release")
    assert err.value.line == 3 and err.value.path.endswith("doc.emb")
    rel = tmp_path / "release" / "rel_feat.csv"
    rel.write_text("query,doc,bm25\n")
    with pytest.raises(InputError) as err:
        read_rel_feat(rel)
    assert err.value.line == 1
    with pytest.raises(InputError, match="not found"):
        read_emb(tmp_path / "release" / "missing.emb")


def test_normalise_matches_case_and_spacing():
    assert normalise(pd.Series(["  The  Music\tman "])).tolist() == ["the music man"]


def test_import_command(tmp_path):
    out = {name: tmp_path / name for name in ("embed.parquet", "pseudo.parquet", "rel.parquet")}
    with pytest.warns(UserWarning, match="566 level-2"):
        result = CliRunner().invoke(app, [
            "import-dssa", "--collection", str(SAMPLE / "collection"), "--release", str(SAMPLE),
            "--candidates", str(SAMPLE / "candidates.json"), "--embed-out", str(out["embed.parquet"]),
            "--pseudo-docs-out", str(out["pseudo.parquet"]), "--relevance-out", str(out["rel.parquet"]),
        ])
    assert result.exit_code == 0, result.output
    keys, vectors = read_vectors(out["embed.parquet"])
    assert vectors.shape == (605, 25) and keys.columns.tolist() == ["docno"]
    assert pd.read_parquet(out["rel.parquet"]).columns.tolist()[3:] == FEATURE_NAMES
    keys, vectors = read_vectors(out["pseudo.parquet"])
    assert keys.columns.tolist() == ["qid", "sugg_id"] and len(keys) == 932 - 566
