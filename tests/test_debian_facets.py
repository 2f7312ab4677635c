"""debian-facets: the index readers, the build rules on a hand-made archive slice, and the shipped copy."""

import dataclasses
import hashlib
import lzma
import os
import re
import shutil
import string
import sys
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from srdiv.cli.main import main
from srdiv.collection.debian import DebianFacetsConfig, build_debian_facets, read_indexes
from srdiv.collection.debian_topics import adaptation, placeholder_tags
from srdiv.collection.debian_card import data_card, measure_choices, stats_table
from srdiv.collection.debian_files import read_packages, read_release, read_translations, read_vocabulary
from srdiv.collection.schema import TABLES, conform, load_collection
from srdiv.features.relevance import relevance_features
from srdiv.io import InputError
from srdiv.params import load_params
from srdiv.text.pseudo_docs import query_strings
from helpers import FIXTURES, ROOT

MINI = FIXTURES / "debian-mini"
SHIPPED = ROOT / "data" / "collections" / "debian-facets"
INDEXES = Path(os.environ.get("SRDIV_DEBIAN_INDEXES", ROOT / "work" / "debian-indexes"))
"""Where workflow/scripts/fetch_debian_indexes.sh puts the archive indexes the rebuild test reads."""

# The mini archive (tests/fixtures/debian-mini): "mail" is in the titles of mutt, postfix, exim4
# (three binaries), evolution and mail-notification; dovecot mentions mail only in its body;
# fetchmail is untagged; libc6 (source glibc) is what every other package depends on; exim4, mutt and
# postfix carry the placeholder network::TODO; the bodies of mutt and postfix say "mail" twice.
SMALL = DebianFacetsConfig(min_scope=3, min_tag_docs=2, min_subtopics=2, max_subtopics=3, n_folds=2)


@pytest.fixture(scope="module")
def mini():
    return build_debian_facets(MINI, SMALL)


def test_readers_parse_the_archive_formats():
    pk = read_packages(MINI / "Packages").set_index("package")
    assert pk.loc["exim4-daemon-light", "source"] == "exim4"          # "exim4 (version)" loses its version
    assert pk.loc["libc6", "source"] == "glibc" and pk.loc["mutt", "source"] == "mutt"
    assert pk.loc["evolution", "tags"][-1] == "uitoolkit::gtk"        # continuation line of Tag:
    assert pk.loc["mutt", "depends"] == ["libc6", "locales", "default-mta", "mail-transport-agent"]
    assert pk.loc["postfix", "provides"] == ["mail-transport-agent"]
    long = read_translations(MINI / "Translation-en")
    assert long[("dovecot", "00000000000000000000000000000001")] == (
        "Dovecot is a mail server whose major goals are security and reliability.\n\n"
        "It supports mbox and maildir mailboxes.")
    vocab = read_vocabulary(MINI / "vocabulary")
    tag = vocab.tags.set_index("tag").loc["protocol::imap"]
    assert (tag["facet"], tag["name"], tag["text"]) == ("protocol", "IMAP", "Internet Mail Access Protocol")
    release = read_release(MINI / "InRelease")
    assert (release.version, release.codename) == ("12.15", "bookworm")
    assert set(release.sha256) == {"main/binary-amd64/Packages", "main/i18n/Translation-en"}


def test_documents_fields_graph_and_untagged(mini):
    docs = mini.collection.docs.set_index("docno")
    assert "deb-fetchmail" not in docs.index and mini.documents.untagged_sources == 1
    exim = docs.loc["deb-exim4"]
    assert exim["title"] == "exim4: mail transport agent (metapackage)"        # the binary named as the source
    assert exim["body"].split("\n\n") == [                                    # shared paragraph once
        "Exim (v4) is a mail transport agent.", "This package depends on the default Exim daemon.",
        "support files for all Exim MTA (v4) packages", "This package contains the configuration files.",
        "lightweight Exim MTA (v4) daemon", "This package contains the daemon with basic features."]
    assert exim["url"] == "https://www.exim.org/"
    # mutt links to glibc (libc6) and, through the virtual mail-transport-agent, to exim4 and postfix
    assert (docs.loc["deb-mutt", "outlinks"], docs.loc["deb-glibc", "inlinks"]) == (3, 6)
    assert docs.loc["deb-exim4", "anchor"] == "mutt"                           # its own binaries are no link
    assert docs.loc["deb-glibc", "anchor"] == "exim4; postfix; dovecot; evolution; mail-notification; mutt"
    assert docs["pagerank"].sum() == pytest.approx(1.0)
    kept = build_debian_facets(MINI, dataclasses.replace(SMALL, untagged="non-relevant"))
    assert "deb-fetchmail" in set(kept.collection.docs["docno"])
    assert kept.collection.qrels.query("docno == 'deb-fetchmail'")["rel"].eq(0).all()


def test_relevance_is_scope_and_tag(mini):
    coll = mini.collection
    assert coll.topics.to_dict("records") == [
        {"qid": "1", "query": "mail", "description": "Debian packages about 'mail'", "type": "faceted"}]
    # dovecot is retrieved through its body, carries interface::daemon, but is not in the scope
    assert set(coll.run["docno"]) == {"deb-mail-notification", "deb-postfix", "deb-evolution", "deb-mutt",
                                      "deb-exim4", "deb-dovecot"}
    assert len(coll.qrels) == 3 * 6                                           # every (subtopic, pooled doc)
    relevant = coll.qrels[coll.qrels["rel"] == 1].groupby("sid")["docno"].apply(sorted).to_dict()
    assert relevant == {"1": ["deb-exim4", "deb-postfix"], "2": ["deb-evolution", "deb-mail-notification"],
                        "3": ["deb-evolution", "deb-mutt"]}
    # network::server, protocol::smtp, protocol::imap, uitoolkit::gtk repeat a chosen tag's documents;
    # works-with::mail names the query; role:: is not a subtopic facet
    assert mini.subtopic_tags["tag"].tolist() == ["interface::daemon", "interface::graphical", "network::client"]
    assert coll.subtopics["text"].tolist() == ["Daemon. Runs in background, only a daemon.",
                                              "Graphical User Interface", "Client"]


def test_placeholder_tags_are_never_subtopics(mini):
    assert placeholder_tags(read_vocabulary(MINI / "vocabulary")) == {"network::TODO"}
    assert "network::TODO" not in set(mini.subtopic_tags["tag"])
    # allowed, it is the most frequent eligible tag of the scope (exim4, mutt, postfix)
    allowed = build_debian_facets(MINI, dataclasses.replace(SMALL, placeholders=True))
    assert allowed.subtopic_tags["tag"].tolist()[0] == "network::TODO"


def test_generic_words_are_never_queries(mini):
    stems = pd.Index(["mail", "simpl", "absent"])
    bodies = ["Mail client: reads mail.", "A simple mail tool.", "simple"]
    assert adaptation(bodies, stems).tolist() == [0.5, 0.0, 0.0]
    assert mini.queries["adaptation"].tolist() == [0.4]                  # mutt, postfix of five bodies
    assert build_debian_facets(MINI, dataclasses.replace(SMALL, min_adaptation=0.41)).collection.topics.empty
    with pytest.raises(InputError, match="min_adaptation"):
        DebianFacetsConfig.from_params({"collections": {"debian-facets": {"min_adaptation": 1.5}}})


def _permuted_tags(seed: int) -> "Indexes":
    """The mini archive with the tag lists dealt at random among the tagged binaries (same documents)."""
    ix = read_indexes(MINI)
    packages = ix.packages.copy()
    tagged = np.flatnonzero(packages["tags"].str.len().to_numpy() > 0)
    packages.loc[tagged, "tags"] = packages.loc[np.random.default_rng(seed).permutation(tagged), "tags"].to_numpy()
    return dataclasses.replace(ix, packages=packages)


def test_nothing_the_models_read_depends_on_the_tags(mini):
    """Tags decide the subtopics and qrels only: docs, run and suggestions ignore them, query by query."""
    kept = moved = 0
    for seed in range(8):
        other = build_debian_facets(_permuted_tags(seed), SMALL)
        moved += not other.subtopic_tags.equals(mini.subtopic_tags)
        pd.testing.assert_frame_equal(other.collection.docs, mini.collection.docs, check_exact=True)
        both = other.collection.topics.merge(mini.collection.topics, on="query", suffixes=("", "_mini"))
        for qid, qid_mini in zip(both["qid"], both["qid_mini"]):
            kept += 1
            for table in ("suggestions", "run"):
                a, b = (getattr(c.collection, table).query("qid == @q").drop(columns="qid").reset_index(drop=True)
                        for c, q in ((other, qid), (mini, qid_mini)))
                pd.testing.assert_frame_equal(a, b, check_exact=True, obj=table)
    assert kept >= 4 and moved >= 4              # most permutations keep the query and change its subtopics


def test_relevance_features_ignore_the_judgments(mini):
    """Permuted qrels and shuffled subtopic texts leave every relevance feature byte-identical."""
    coll, params = mini.collection, load_params(ROOT / "params.yaml")["features"]
    rng = np.random.default_rng(0)
    shuffled = dataclasses.replace(
        coll, qrels=coll.qrels.assign(rel=rng.permutation(coll.qrels["rel"].to_numpy())),
        subtopics=coll.subtopics.assign(text=rng.permutation(coll.subtopics["text"].to_numpy())))
    assert not shuffled.qrels["rel"].equals(coll.qrels["rel"])
    features = [relevance_features(c, c.docs, query_strings(c), params) for c in (coll, shuffled)]
    pd.testing.assert_frame_equal(features[0], features[1], check_exact=True)
    numeric = [f.select_dtypes("number").to_numpy() for f in features]
    assert numeric[0].size and numeric[0].tobytes() == numeric[1].tobytes()


def test_subtopic_count_bounds():
    two = build_debian_facets(MINI, dataclasses.replace(SMALL, max_subtopics=2))
    assert two.collection.subtopics.groupby("qid").size().tolist() == [2]
    with_dups = build_debian_facets(MINI, dataclasses.replace(SMALL, near_duplicate=1.01, max_subtopics=8))
    assert with_dups.collection.subtopics.groupby("qid").size().tolist() == [7]
    none = build_debian_facets(MINI, dataclasses.replace(SMALL, min_subtopics=4))
    assert none.collection.topics.empty and none.collection.qrels.empty


def test_suggestions_come_from_titles_not_tags(mini):
    sugg = mini.collection.suggestions
    assert sugg[["sugg_id", "level", "parent", "text"]].values.tolist() == [
        ["1", 1, "", "mail agent"], ["1.1", 2, "1", "mail agent transport"],
        ["2", 1, "", "mail transport"], ["2.1", 2, "2", "mail transport agent"]]
    title_words = set(" ".join(mini.collection.docs["title"]).lower().replace(":", " ").split())
    assert set(" ".join(sugg["text"]).split()) <= title_words
    assert not {"daemon", "graphical", "client", "server"} & set(" ".join(sugg["text"]).split())


def test_cli_writes_a_valid_collection_with_its_card(tmp_path, monkeypatch, capsys):
    params = tmp_path / "params.yaml"
    params.write_text("collections:\n  debian-facets:\n    min_scope: 3\n    min_tag_docs: 2\n"
                      "    min_subtopics: 2\n    max_subtopics: 3\n    n_folds: 2\n")
    monkeypatch.setattr(sys, "argv", ["srdiv", "collection", "debian-facets", "--indexes", str(MINI),
                                      "--out", str(tmp_path / "coll"), "--params", str(params)])
    main()
    assert "1 queries, 3 subtopics, 7 documents" in capsys.readouterr().out
    coll = load_collection(tmp_path / "coll", with_docs=True)
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(coll, name), conform(name, getattr(coll, name)))
    card = (tmp_path / "coll" / "README.md").read_text()
    assert "Debian 12.15 (bookworm)" in card and "| queries | 1 |" in card and "| `min_scope` | `3` |" in card
    assert "| leave-out | 7 | 1 |" in card and "| non-relevant | 8 |" in card


def test_xz_indexes_give_the_same_build(tmp_path, mini):
    for name in ("Packages", "Translation-en"):
        (tmp_path / f"{name}.xz").write_bytes(lzma.compress((MINI / name).read_bytes()))
    shutil.copy(MINI / "vocabulary", tmp_path / "vocabulary")
    sums = "".join(f" {hashlib.sha256((tmp_path / f).read_bytes()).hexdigest()} 0 {p}\n" for f, p in
                   (("Packages.xz", "main/binary-amd64/Packages.xz"), ("Translation-en.xz", "main/i18n/Translation-en.xz")))
    (tmp_path / "InRelease").write_text(f"Version: 12.15\nCodename: bookworm\nDate: today\nSHA256:\n{sums}")
    built = build_debian_facets(tmp_path, SMALL).collection
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(built, name), getattr(mini.collection, name), obj=name)


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(MINI, tmp_path / "ix")
    return tmp_path / "ix"


@pytest.mark.parametrize("file,edit,message", [
    ("Packages", lambda t: t.replace("Section: gnome", "Section gnome"), r"Packages:20: not a 'Field: value' line"),
    ("Translation-en", lambda t: t.replace("Description-md5: 00000000000000000000000000000002\n", ""),
     r"Translation-en:8: stanza lacks Description-md5"),
    ("vocabulary", lambda t: t.replace("Tag: network::client", "Tag: network-client"),
     r"vocabulary:19: tag 'network-client' is not 'facet::name'"),
])
def test_bad_input_names_file_and_line(tmp_path, file, edit, message):
    ix = _copy(tmp_path)
    (ix / file).write_text(edit((ix / file).read_text()))
    reader = {"Packages": read_packages, "Translation-en": read_translations, "vocabulary": read_vocabulary}[file]
    with pytest.raises(InputError, match=message):
        reader(ix / file)


def test_indexes_must_match_their_release(tmp_path):
    ix = _copy(tmp_path)
    (ix / "Packages").write_text((ix / "Packages").read_text().replace("3.7.11", "3.7.12"))
    with pytest.raises(InputError, match=r"Packages: SHA-256 .* differs from main/binary-amd64/Packages"):
        read_indexes(ix)
    (ix / "Packages").write_bytes(b"\x04\x22\x4d\x18rest")           # apt's local copy, not the archive's
    with pytest.raises(InputError, match=r"Packages: lz4"):
        read_packages(ix / "Packages")
    (ix / "InRelease").unlink()
    with pytest.raises(InputError, match="InRelease not found"):
        read_indexes(ix)


def test_cli_bad_index_exits_2_with_file_and_line(tmp_path, monkeypatch, capsys):
    ix = _copy(tmp_path)
    (ix / "vocabulary").write_text((ix / "vocabulary").read_text().replace("Facet: network", "Facet network"))
    monkeypatch.setattr(sys, "argv", ["srdiv", "collection", "debian-facets", "--indexes", str(ix),
                                      "--out", str(tmp_path / "coll")])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2 and "vocabulary:15: not a 'Field: value' line" in capsys.readouterr().err
    assert not (tmp_path / "coll").exists()


def test_config_from_params():
    cfg = DebianFacetsConfig.from_params({"collections": {"debian-facets": {"subtopic_facets": ["use"]}}})
    assert cfg.subtopic_facets == ("use",) and DebianFacetsConfig.from_params({}) == DebianFacetsConfig()
    with pytest.raises(InputError, match="unknown keys in collections.debian-facets"):
        DebianFacetsConfig.from_params({"collections": {"debian-facets": {"min_scop": 3}}})
    with pytest.raises(InputError, match="untagged"):
        DebianFacetsConfig.from_params({"collections": {"debian-facets": {"untagged": "drop"}}})


# ------------------------------------------------------------- the shipped copy
def _shipped_config() -> DebianFacetsConfig:
    return DebianFacetsConfig.from_params(load_params(ROOT / "params.yaml"))


@pytest.fixture(scope="module")
def shipped():
    return load_collection(SHIPPED, with_docs=True)


def test_shipped_copy_meets_the_issue(shipped):
    assert len(shipped.topics) >= 250 and len(shipped.docs) >= 10_000   # 330 before the generic-word rule
    words = shipped.docs["title"].str.split().str.len() + shipped.docs["body"].str.split().str.len()
    assert words.mean() >= 100
    assert shipped.subtopics.groupby("qid").size().between(3, 8).all()
    assert set(shipped.folds["fold"]) == {1, 2, 3, 4, 5}
    pooled = shipped.run[["qid", "docno"]].merge(shipped.subtopics[["qid", "sid"]])
    assert len(pooled) == len(shipped.qrels) == len(pooled.merge(shipped.qrels[["qid", "sid", "docno"]]))
    assert sum(p.stat().st_size for p in SHIPPED.iterdir()) < 30e6


def test_shipped_card_statistics_match_the_tables(shipped):
    assert stats_table(shipped, _shipped_config()) in (SHIPPED / "README.md").read_text()


def test_shipped_card_is_its_template_filled():
    """Without the archive indexes (the rebuild below), the card's text outside its fields is the template's."""
    parts = string.Formatter().parse(files("srdiv.collection.templates").joinpath("debian_card.md").read_text())
    pattern = "".join(re.escape(text) + ("(.*?)" if field is not None else "") for text, field, _, _ in parts)
    assert re.fullmatch(pattern, (SHIPPED / "README.md").read_text(), re.DOTALL)


@pytest.mark.slow  # about two minutes of CPU: five builds of the whole collection
@pytest.mark.skipif(not (INDEXES / "InRelease").exists(),
                    reason=f"Debian's indexes not at {INDEXES} (workflow/scripts/fetch_debian_indexes.sh {INDEXES})")
def test_rebuild_equals_the_shipped_copy(shipped):
    cfg = _shipped_config()
    ix = read_indexes(INDEXES, cfg.architecture)
    build = build_debian_facets(ix, cfg)
    for name in TABLES:
        pd.testing.assert_frame_equal(conform(name, getattr(build.collection, name)), getattr(shipped, name),
                                      check_exact=False, rtol=1e-12, obj=name)
    assert data_card(build, cfg, measure_choices(ix, build, cfg)) == (SHIPPED / "README.md").read_text()
