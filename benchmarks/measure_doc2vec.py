"""What the document vectors carry on a collection: doc2vec settings against each other (and LDA, SVD).

For every doc2vec setting it trains PV-DBOW on all documents, infers the queries' pseudo-document
vectors (top-Z BM25 documents, as ``srdiv pseudo-docs``) and ranks each query's top-50 candidates by
cos(e_q, e_d). It prints, over all queries of the collection: alpha-nDCG@20 of that cosine order
(official metrics), the mean per-query AUC of the cosine for relevant vs non-relevant candidates (a
candidate is relevant when it is judged relevant to any subtopic; queries with both kinds only), and
the seconds to train and infer. The initial run and a seeded random order are printed for reference;
``--tables DIR`` adds the vector tables of a finished ``srdiv embed`` / ``srdiv pseudo-docs`` run
(``DIR/embed/<repr>.parquet``, ``DIR/pseudo_docs/<repr>.parquet``).

    python benchmarks/measure_doc2vec.py --collection data/collections/wordnet-div --tables work/wordnet-div
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from srdiv.collection.schema import load_collection
from srdiv.index.analysis import tokenize_many
from srdiv.metrics import evaluate_run
from srdiv.params import REPRESENTATIONS
from srdiv.text.defaults import stage_params
from srdiv.text.documents import TEXT_COLUMNS, join_columns, load_docs
from srdiv.text.embed import doc2vec_vectors, infer_doc2vec, read_vectors, train_doc2vec
from srdiv.text.pseudo_docs import concat_tokens, query_strings, retrieve

SETTINGS = {   # name -> overrides of embed.doc2vec; NTN and MDP-DIV state window 8 with word training
    "DBOW, 10 epochs": {"dbow_words": 0, "window": 5},
    "DBOW, 30 epochs": {"dbow_words": 0, "window": 5, "epochs": 30},
    "DBOW + words, window 8, 10 epochs (default)": {"dbow_words": 1, "window": 8},
    "DBOW + words, window 8, 30 epochs": {"dbow_words": 1, "window": 8, "epochs": 30},
}


def candidates(coll, depth: int) -> pd.DataFrame:
    """The top ``depth`` of the initial run: ``qid, docno, rank``, relevant (any subtopic) marked."""
    run = coll.run.sort_values(["qid", "rank"]).groupby("qid").head(depth)[["qid", "docno", "rank"]]
    relevant = coll.qrels.loc[coll.qrels["rel"] > 0, ["qid", "docno"]].drop_duplicates().assign(relevant=True)
    out = run.merge(relevant, on=["qid", "docno"], how="left")
    return out.assign(relevant=out["relevant"].notna())


def scores_of(cands: pd.DataFrame, docnos: pd.Series, doc_vec: np.ndarray, qids: pd.Series,
              query_vec: np.ndarray) -> np.ndarray:
    """cos(e_q, e_d) of every candidate row (0 where a vector is zero)."""
    def unit(v):
        norm = np.linalg.norm(v, axis=1, keepdims=True)
        return np.divide(v, norm, out=np.zeros_like(v), where=norm > 0)

    d = unit(doc_vec)[pd.Index(docnos).get_indexer(cands["docno"])]
    q = unit(query_vec)[pd.Index(qids).get_indexer(cands["qid"])]
    return (d * q).sum(1)


def measure(cands: pd.DataFrame, score: np.ndarray, qrels: pd.DataFrame) -> dict[str, float]:
    """alpha-nDCG@20 of the order by ``score`` and the mean per-query AUC (relevant vs not)."""
    run = cands.assign(score=score).drop(columns="rank")
    values = evaluate_run(run, qrels[qrels["qid"].isin(set(run["qid"]))], ["alpha_nDCG@20"])
    aucs = []
    for _, group in run.groupby("qid"):
        rel = group["relevant"].to_numpy()
        if rel.all() or not rel.any():
            continue
        ranks = rankdata(group["score"].to_numpy())           # ties share their mean rank: AUC counts them 1/2
        n_pos, n_neg = rel.sum(), (~rel).sum()
        aucs.append((ranks[rel].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    return {"alpha_nDCG@20": values["value"].mean(), "AUC": float(np.mean(aucs)), "AUC queries": len(aucs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, default=Path("data/collections/wordnet-div"))
    parser.add_argument("--tables", type=Path, default=None, help="work/<dataset> with embed/ and pseudo_docs/")
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS)[:3],
                        help="names of SETTINGS to train (default: all but the slowest, words for 30 epochs)")
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    coll = load_collection(args.collection)
    cands = candidates(coll, args.depth)
    rows = [{"vectors": "initial run (reference)", **measure(cands, -cands["rank"].to_numpy(float), coll.qrels)},
            {"vectors": "random order (reference)",
             **measure(cands, np.random.default_rng(args.seed).random(len(cands)), coll.qrels)}]
    if args.tables is not None:
        for rep in REPRESENTATIONS:
            doc_path, pd_path = args.tables / "embed" / f"{rep}.parquet", args.tables / "pseudo_docs" / f"{rep}.parquet"
            if doc_path.exists() and pd_path.exists():
                doc_keys, doc_vec = read_vectors(doc_path)
                keys, vec = read_vectors(pd_path)
                queries = (keys["sugg_id"] == "").to_numpy()
                score = scores_of(cands, doc_keys["docno"], doc_vec, keys.loc[queries, "qid"], vec[queries])
                rows.append({"vectors": f"{rep} (pipeline tables)", **measure(cands, score, coll.qrels)})
                print(rows[-1], flush=True)

    params = stage_params({"seed": args.seed}, "embed")["doc2vec"]
    features = stage_params({}, "features")
    pd_params = {**stage_params({}, "pseudo_docs"), "k1": features["k1"], "b": features["b"]}
    docs = load_docs(args.collection)
    tokens = tokenize_many(join_columns(docs, TEXT_COLUMNS))
    strings = query_strings(coll)
    strings = strings[strings["sugg_id"] == ""]
    pseudo = concat_tokens(tokens, retrieve(docs, strings["text"].tolist(), pd_params))
    for name in args.settings:
        setting = {**params, **SETTINGS[name]}
        tic = time.perf_counter()
        model = train_doc2vec(tokens, setting, args.seed)
        doc_vec = doc2vec_vectors(model, tokens)
        trained = time.perf_counter() - tic
        query_vec = infer_doc2vec(model, pseudo, args.seed)
        inferred = time.perf_counter() - tic - trained
        score = scores_of(cands, docs["docno"], doc_vec, strings["qid"], query_vec)
        rows.append({"vectors": f"doc2vec: {name}", **measure(cands, score, coll.qrels),
                     "train s": trained, "infer s (queries)": inferred})
        print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3f"))


if __name__ == "__main__":
    main()
