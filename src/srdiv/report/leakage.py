"""What a collection's suggestions and features give away about its judgments, beside TREC.

A benchmark is only as honest as its construction: the inputs a model reads
must know no more of the judgments than the TREC Web Track's do. Five figures,
each computed the same way for an open collection and for TREC (the vendored
Web Track 2009-2012 files and the DSSA feature release's slice):

1. **Suggestions match subtopics.** A level-1 suggestion *matches* a subtopic
   when a word it adds to its query is a word of the subtopic's text (words
   as the shared analyser makes them: lowercase, no stopwords, S-stemmed). Reported: the share of subtopics matched
   by a suggestion of their query, the share of suggestions matching a
   subtopic of their query, and each against another query's subtopics (the
   next topic in topic order), the level chance gives.
2. **Suggestions name a relevant document.** A suggestion *names* the
   candidate (top ``depth`` of the initial run) with the highest title BM25 for
   its text, when that score is positive; the share of suggestions naming a
   document judged relevant to any subtopic, beside the share of relevant
   candidates (what naming a random candidate gives).
3. **Feature AUC.** For each relevance feature (DSSA Table 5) of the query and
   each topic whose top ``depth`` holds relevant and non-relevant documents,
   the AUC of the feature for relevance; the mean over those topics.
4. **xQuAD's share of the oracle gain**: ``(xQuAD(suggestions) - initial) /
   (xQuAD(official subtopics) - initial)`` in alpha-nDCG@20 over the top
   ``depth``, with a fixed relevance function for every list: ``P(d|.)`` the
   softmax of the text-field LMIR over the candidates, lambda 0.5, uniform
   aspect weights (Santos et al. 2010, Eq. 3-5). The subtopics enter as
   aspects through their text.
5. **Relevant documents of one subtopic share a site.** Every pair of
   distinct candidates (top ``depth``) of a topic judged relevant, once for
   each pair of subtopics ``(s, t)`` they are relevant to: do the two share a
   *site unit*, the host of their url (of a url without a scheme, its first
   path segment: the lexicographer file in wordnet-div's earlier urls), or where no url is public
   (TREC) the ClueWeb09 file the docno names (``clueweb09-en0003-55``: a crawl
   file holds pages fetched together, the closest the docno comes to a site)? Reported: the share
   of same-subtopic pairs (``s = t``) and of cross-subtopic pairs (``s != t``)
   sharing one; the gap is what the unit (read by the URL features, doc2vec
   and LDA) tells a model about the subtopics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy.stats import rankdata

from srdiv.collection.schema import Collection
from srdiv.features.relevance import FEATURE_NAMES, candidates, relevance_features
from srdiv.index.analysis import tokenize
from srdiv.metrics import evaluate_run, mean_measures
from srdiv.metrics.names import HEADLINE
from srdiv.models.base import greedy_rank
from srdiv.models.unsupervised import Layer, list_probs
from srdiv.models.xquad import xquad_scores
from srdiv.text.pseudo_docs import query_strings

LAMBDA = 0.5


@dataclass(frozen=True)
class Strings:
    """Texts whose features are computed: ``qid, sugg_id, text`` with ``kind`` query, level1, level2 or subtopic."""

    frame: pd.DataFrame

    @classmethod
    def of(cls, coll: Collection) -> Strings:
        """The strings the text stages score (:func:`srdiv.text.pseudo_docs.query_strings`), then the subtopics."""
        strings = query_strings(coll)
        level = strings[["qid", "sugg_id"]].merge(coll.suggestions[["qid", "sugg_id", "level"]], how="left")["level"]
        kind = np.select([strings["sugg_id"] == "", level == 1], ["query", "level1"], "level2")
        subtopics = pd.DataFrame({"qid": coll.subtopics["qid"], "sugg_id": "subtopic:" + coll.subtopics["sid"],
                                  "text": coll.subtopics["text"], "kind": "subtopic"})
        return cls(pd.concat([strings.assign(kind=kind), subtopics], ignore_index=True))


# ------------------------------------------------------------------ figure 1
def added_words(text: str, query: str) -> set[str]:
    """Analysed words of a suggestion that its query lacks."""
    return set(tokenize(text)) - set(tokenize(query))


def subtopic_matches(coll: Collection) -> dict[str, float]:
    """Figure 1: shares of subtopics matched and of level-1 suggestions matching, own query vs the next one."""
    query = coll.topics.set_index("qid")["query"]
    level1 = coll.suggestions[coll.suggestions["level"] == 1]
    added = {qid: [added_words(t, query[qid]) for t in group["text"]] for qid, group in level1.groupby("qid")}
    words = {qid: [set(tokenize(t)) for t in group["text"]] for qid, group in coll.subtopics.groupby("qid")}
    qids = [q for q in coll.qids if q in words]
    out = {}
    for label, shift in (("", 0), (" (chance)", 1)):
        covered, matching = [], []
        for i, qid in enumerate(qids):
            subs, sugg = words[qids[(i + shift) % len(qids)]], added.get(qid, [])
            covered += [any(s & a for a in sugg) for s in subs]
            matching += [any(s & a for s in subs) for a in sugg]
        out[f"subtopics matched by a level-1 suggestion{label}"] = float(np.mean(covered))
        out[f"level-1 suggestions matching a subtopic{label}"] = float(np.mean(matching)) if matching else np.nan
    return out


# ---------------------------------------------------------------- figures 2-3
def relevant_candidates(coll: Collection, depth: int) -> pd.DataFrame:
    """The top ``depth`` per topic with ``rel`` = judged relevant to any subtopic: ``qid, docno, rank, rel``."""
    relevant = coll.qrels.loc[coll.qrels["rel"] > 0, ["qid", "docno"]].drop_duplicates().assign(rel=1)
    top = candidates(coll, depth)[["qid", "docno", "rank"]]
    return top.merge(relevant, on=["qid", "docno"], how="left").fillna({"rel": 0}).astype({"rel": int})


def named_relevant(feats: pd.DataFrame, strings: Strings, cands: pd.DataFrame) -> dict[str, float]:
    """Figure 2 per suggestion level present in ``feats`` (``qid, sugg_id, docno, title-bm25``)."""
    kinds = strings.frame.set_index(["qid", "sugg_id"])["kind"]
    f = feats.merge(cands[["qid", "docno", "rel"]], on=["qid", "docno"])
    f = f.assign(kind=kinds.reindex(pd.MultiIndex.from_frame(f[["qid", "sugg_id"]])).to_numpy())
    out = {}
    for kind in ("level1", "level2"):
        part = f[f["kind"] == kind]
        if part.empty:
            continue
        best = part.loc[part.groupby(["qid", "sugg_id"])["title-bm25"].idxmax()]
        named = best[best["title-bm25"] > 0]
        n = part.groupby(["qid", "sugg_id"]).ngroups
        out[f"{kind[:5]}-{kind[5:]} suggestions naming a relevant candidate"] = named["rel"].sum() / n
    out["relevant share of the candidates (chance)"] = float(cands["rel"].mean())
    return out


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for binary ``labels`` (ties count one half)."""
    ranks = rankdata(scores)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def feature_auc(query_feats: pd.DataFrame, cands: pd.DataFrame, features: list[str]) -> dict[str, float]:
    """Figure 3: mean per-topic AUC of each feature of the query (``qid, docno`` + ``features``)."""
    f = cands.merge(query_feats, on=["qid", "docno"])
    topics = [g for _, g in f.groupby("qid") if 0 < g["rel"].sum() < len(g)]
    return {name: float(np.mean([auc(g[name].to_numpy(), g["rel"].to_numpy()) for g in topics]))
            for name in features} | {"topics with both classes": len(topics)}


# ------------------------------------------------------------------ figure 4
class _FixedXQuAD:
    """xQuAD over fixed probabilities, for :func:`srdiv.models.base.greedy_rank`."""

    def __init__(self, p_query: torch.Tensor, layer: Layer) -> None:
        self.p_query, self.layer = p_query, layer

    def context_scores(self, batch, context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        return xquad_scores(self.p_query, [self.layer], [1.0], LAMBDA, context, candidates)


def xquad_run(feats: pd.DataFrame, strings: Strings, cands: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The candidates re-ranked by xQuAD with the ``kind`` strings as aspects: ``qid, docno, rank``."""
    qids = list(pd.unique(cands["qid"]))
    slot = cands.groupby("qid", sort=False).cumcount().to_numpy()
    n_docs = int(slot.max()) + 1
    row = pd.Index(qids).get_indexer(cands["qid"])
    docnos = np.full((len(qids), n_docs), "", dtype=object)
    docnos[row, slot] = cands["docno"].to_numpy()
    key = cands.assign(row=row, slot=slot)[["qid", "docno", "row", "slot"]]
    f = feats.merge(key, on=["qid", "docno"])
    aspects = strings.frame[strings.frame["kind"] == kind]
    k_of = aspects.assign(k=aspects.groupby("qid").cumcount()).set_index(["qid", "sugg_id"])["k"]
    n_aspects = max(int(k_of.max()) + 1 if len(k_of) else 1, 1)
    mask = torch.zeros(len(qids), n_docs, dtype=torch.bool)
    mask[torch.tensor(row), torch.tensor(slot)] = True
    query = f[f["sugg_id"] == ""]
    scores_q = torch.zeros(len(qids), n_docs, dtype=torch.float64)
    scores_q[torch.tensor(query["row"].to_numpy()), torch.tensor(query["slot"].to_numpy())] = torch.tensor(
        query["text-lmir"].to_numpy(np.float64))
    scores_a = torch.zeros(len(qids), n_aspects, n_docs, dtype=torch.float64)
    weight = torch.zeros(len(qids), n_aspects, dtype=torch.float64)
    a = f.merge(k_of.reset_index(), on=["qid", "sugg_id"])
    scores_a[torch.tensor(a["row"].to_numpy()), torch.tensor(a["k"].to_numpy()),
             torch.tensor(a["slot"].to_numpy())] = torch.tensor(a["text-lmir"].to_numpy(np.float64))
    ak = pd.Index(qids).get_indexer(k_of.index.get_level_values("qid"))
    weight[torch.tensor(ak[ak >= 0]), torch.tensor(k_of.to_numpy()[ak >= 0])] = 1.0
    weight = weight / weight.sum(1, keepdim=True).clamp(min=1.0)
    probs = list_probs(scores_a, mask[:, None, :], "softmax") * (weight > 0)[..., None]
    model = _FixedXQuAD(list_probs(scores_q, mask, "softmax"), Layer(probs, weight))
    order = greedy_rank(model, {"doc_mask": mask}).numpy()
    ranked = np.take_along_axis(docnos, np.maximum(order, 0), axis=1)
    q, r = np.nonzero((order >= 0) & (ranked != ""))
    return pd.DataFrame({"qid": np.array(qids, dtype=object)[q], "docno": ranked[q, r], "rank": r + 1})


def oracle_gain_share(coll: Collection, feats: pd.DataFrame, strings: Strings, cands: pd.DataFrame) -> dict[str, float]:
    """Figure 4 and the three alpha-nDCG@20 values it is made of."""
    value = lambda run: mean_measures(evaluate_run(run, coll.qrels, [HEADLINE]))[HEADLINE]  # noqa: E731
    initial = value(cands[["qid", "docno", "rank"]])
    with_sugg = value(xquad_run(feats, strings, cands, "level1"))
    with_subs = value(xquad_run(feats, strings, cands, "subtopic"))
    return {f"initial run: {HEADLINE}": initial, f"xQuAD with the suggestions: {HEADLINE}": with_sugg,
            f"xQuAD with the official subtopics: {HEADLINE}": with_subs,
            "xQuAD's share of the oracle gain": (with_sugg - initial) / (with_subs - initial)}


# ------------------------------------------------------------------ figure 5
def url_sites(docs: pd.DataFrame) -> pd.Series:
    """Each document's site unit from its url (index ``docno``): the host, or the first path segment of a url
    without a scheme (``noun.animal/bass`` -> ``noun.animal``); an empty url has none (``""``)."""
    url = docs["url"].fillna("").astype(str).str.lower()
    host = url.str.extract(r"^[a-z][a-z0-9+.-]*://(?:[^/?#]*@)?([^/?#:]*)", expand=False)
    return pd.Series(host.fillna(url.str.split("/", n=1).str[0]).to_numpy(), index=docs["docno"].to_numpy())


def docno_files(docnos: pd.Series) -> pd.Series:
    """Each docno's crawl file (index ``docno``): the docno without its last ``-`` part
    (``clueweb09-en0003-55-31884`` -> ``clueweb09-en0003-55``)."""
    docnos = pd.Series(pd.unique(docnos))
    return pd.Series(docnos.str.rsplit("-", n=1).str[0].to_numpy(), index=docnos.to_numpy())


def shared_sites(coll: Collection, sites: pd.Series, depth: int) -> dict[str, float]:
    """Figure 5: shares of same- and cross-subtopic pairs of relevant candidates sharing a site
    (``sites``: a unit per docno, ``""`` for none)."""
    top = candidates(coll, depth)[["qid", "docno"]]
    rel = coll.qrels.loc[coll.qrels["rel"] > 0, ["qid", "sid", "docno"]].drop_duplicates().merge(top)
    rel = rel.assign(site=sites.reindex(rel["docno"]).fillna("").to_numpy())
    pairs = rel.merge(rel, on="qid", suffixes=("", "_2"))
    pairs = pairs[pairs["docno"] < pairs["docno_2"]]
    shared = ((pairs["site"] == pairs["site_2"]) & (pairs["site"] != "")).to_numpy()
    same = (pairs["sid"] == pairs["sid_2"]).to_numpy()
    share = lambda hits: float(hits.mean()) if len(hits) else np.nan  # noqa: E731
    return {"same-subtopic relevant pairs sharing a site unit": share(shared[same]),
            "cross-subtopic relevant pairs sharing a site unit": share(shared[~same])}


# -------------------------------------------------------------------- entries
def measure_collection(coll: Collection, docs: pd.DataFrame, params: dict) -> dict[str, float]:
    """All five figures of a collection with documents (``params``: the ``features`` section)."""
    depth = int(params["rank_docs"])
    strings = Strings.of(coll)
    feats = relevance_features(coll, docs, strings.frame[["qid", "sugg_id", "text"]], params)
    cands = relevant_candidates(coll, depth)
    query = feats[feats["sugg_id"] == ""]
    return (subtopic_matches(coll) | named_relevant(feats, strings, cands)
            | feature_auc(query, cands, FEATURE_NAMES) | oracle_gain_share(coll, feats, strings, cands)
            | shared_sites(coll, url_sites(docs), depth))


def measure_trec(coll: Collection, release: Collection, rel_feat: pd.DataFrame, depth: int) -> dict[str, float]:
    """The figures TREC's public files allow: figure 1 over ``coll`` (every topic with subtopics);
    figures 2 (level 1: the release has no level-2 strings) and 3 from ``rel_feat`` of the release
    slice (``release``: its topics, suggestions, qrels and run). Figure 4 needs the documents' text;
    figure 5 over ``coll`` reads the docnos' crawl files (the public files hold no url)."""
    from srdiv.features.dssa_import import match_strings, normalise

    matched = match_strings(release, rel_feat["query"])
    feats = matched.merge(rel_feat.assign(norm=normalise(rel_feat["query"])), on="norm")
    feats = feats.drop(columns=["norm", "query"])
    strings = Strings.of(release)
    cands = relevant_candidates(release, depth)
    query = feats[feats["sugg_id"] == ""]
    return (subtopic_matches(coll) | named_relevant(feats, strings, cands) | feature_auc(query, cands, FEATURE_NAMES)
            | shared_sites(coll, docno_files(coll.qrels["docno"]), depth))


def leakage_table(columns: dict[str, dict[str, float]]) -> str:
    """A Markdown table: one row per figure, one column per source (empty cell where not measured)."""
    names = list(dict.fromkeys(name for col in columns.values() for name in col))
    head = "| figure | " + " | ".join(columns) + " |\n|---|" + "---:|" * len(columns)
    cell = lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else (  # noqa: E731
        str(int(v)) if float(v).is_integer() and abs(v) > 1 else f"{v:.3f}")
    rows = [f"| {name} | " + " | ".join(cell(col.get(name)) for col in columns.values()) + " |" for name in names]
    return "\n".join([head, *rows])


def leakage_page(columns: dict[str, dict[str, float]], command: str) -> str:
    """``docs/leakage.md``: the figures' definitions (this module's docstring) and their table."""
    method = __doc__.split("\n\n", 1)[1].strip()
    return f"""\
# What the inputs give away about the judgments, beside TREC

Generated by `{command}`; do not edit by hand.

{method}

Figure 1 on TREC covers every Web Track 2009-2012 topic with subtopics; figures
2 and 3 on TREC come from the 13-topic slice of the DSSA feature release
(`tests/fixtures/dssa-sample`), whose strings include no level-2 suggestion.
Figure 4 needs the documents' text, which TREC's public files lack. Figure 5 on
TREC covers every judged topic; its unit is the ClueWeb09 file, the nearest
analogue of a site the public files give (they hold no url).

A column `<collection>, oracle aspects` measures the suggestions table given
with `--oracle` in place of the collection's own: for wordnet-div, the oracle
study's aspects, drawn from the sense structure that defines relevance, not
from the official subtopics' texts.

{leakage_table(columns)}
"""
